"""Peak memory of reading a big capture whole against one flow at a time, each in a fresh
process, on two 2 M-packet pcaps of ``benchmarks/inspect_whole.py``'s kind (built here if
missing): 8 flows taking turns, and one flow. The batch issue asks that a capture larger than
memory be read with bounded RSS; reading flow by flow bounds it by the largest flow, which the
one-flow capture shows. Measured twice: the readers alone (``read_capture`` against
``read_capture_flows``), and whole commands as a CI job runs them (``ldanalyze batch FILE``
with ``--flow-at-a-time-above never`` and ``0``; ``ldanalyze inspect`` with and without
``--flow-at-a-time``), whose results must be the same; and ``batch`` flow at a time with its
cache, cold and then re-run with an LDA added. Each peak is given twice: RSS, and the
anonymous memory within it (what the system cannot drop under pressure).
Usage: ``python benchmarks/capture_memory.py``."""

from __future__ import annotations

import functools
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import pcap_ingest  # noqa: E402

# every child reports its peak RSS (VmHWM) and its peak anonymous memory (RssAnon, sampled every
# 5 ms): a flow's records read flow by flow are a mapped file, pages the system can drop and read
# again, which RSS counts while they are resident; anonymous memory is what cannot go.
PEAKS = (
    "import atexit, sys, threading, time\n"
    "def _status(key):\n"
    "    with open('/proc/self/status') as f:\n"
    "        return next(int(l.split()[1]) for l in f if l.startswith(key))\n"
    "_anon = [0]\n"
    "def _sample():\n"
    "    while True:\n"
    "        _anon[0] = max(_anon[0], _status('RssAnon')); time.sleep(0.005)\n"
    "threading.Thread(target=_sample, daemon=True).start()\n"
    "atexit.register(lambda: print('PEAKS', _status('VmHWM'), max(_anon[0], _status('RssAnon')), file=sys.stderr))\n"
)
WHOLE = PEAKS + (
    "import sys, warnings; warnings.simplefilter('ignore'); import ldanalyze as la; "
    "t = la.read_trace(sys.argv[1]); print(len(t.packets))"
)
SPLIT = PEAKS + (
    "import sys, warnings; warnings.simplefilter('ignore'); "
    "from ldanalyze.io.capture.split import read_capture_flows; "
    "print(sum(len(t.packets) for t in read_capture_flows(sys.argv[1])))"
)
BATCH = PEAKS + "from ldanalyze.cli import main; sys.exit(main(sys.argv[1:]))"


def run(code: str, *args: str) -> tuple[list[str], tuple[float, float], float]:
    """(stdout words, (peak RSS MB, peak anonymous MB), seconds) of a fresh interpreter running ``code``."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("PEAKS ")][-1].split()
    return done.stdout.split(), (float(line[1]) / 1e3, float(line[2]) / 1e3), seconds


def shown(peaks: tuple[float, float]) -> str:
    return f"{peaks[0]:6.0f} MB peak ({peaks[1]:4.0f} MB anonymous)"


def baseline() -> tuple[float, float]:
    return run(PEAKS + "import ldanalyze, ldanalyze.io.capture.split")[1]


def main() -> None:
    base = baseline()
    print(f"imports alone: {shown(base)}")
    for flows, name in ((8, "memory_8_flows.pcap"), (1, "memory_1_flow.pcap")):
        writer = functools.partial(pcap_ingest.write_pcap, flows=flows, hop=pcap_ingest.lossy)
        path = pcap_ingest.build(name, writer, 2_000_000, 172)
        print(f"\n{path.name}: {path.stat().st_size / 1e6:.0f} MB, {flows} flow(s), 2,000,000 packets less 1 % lost")
        (rows_whole, *_), whole, t_whole = run(WHOLE, str(path))
        (rows_split, *_), split, t_split = run(SPLIT, str(path))
        assert rows_whole == rows_split
        print(f"  read_capture (whole)          : {shown(whole)}, {t_whole:5.1f} s")
        print(
            f"  read_capture_flows (per flow) : {shown(split)}, {t_split:5.1f} s   "
            f"{(split[0] - base[0]) / (whole[0] - base[0]):.2f} of the whole read's RSS above the imports, "
            f"{(split[1] - base[1]) / (whole[1] - base[1]):.2f} of its anonymous memory"
        )
        with tempfile.TemporaryDirectory() as out:
            tables = {}
            for above in ("never", "0"):
                table = pathlib.Path(out) / f"{above}.csv"
                _, peak, seconds = run(
                    BATCH,
                    "batch",
                    str(path),
                    "--no-cache",
                    "--jobs",
                    "1",
                    "--controller",
                    "tfrc",
                    "--flow-at-a-time-above",
                    above,
                    "-o",
                    str(table),
                )
                tables[above] = pd.read_csv(table)
                print(f"  ldanalyze batch, flow at a time above {above:5s}: {shown(peak)}, {seconds:5.1f} s")
            for state, lda in (("cold", "all"), ("warm, LDA added", "all,biaz:upper=1.4")):  # the default: cached
                _, peak, seconds = run(
                    BATCH,
                    "batch",
                    str(path),
                    "--cache-dir",
                    out,
                    "--jobs",
                    "1",
                    "--controller",
                    "tfrc",
                    "--lda",
                    lda,
                    "--flow-at-a-time-above",
                    "0",
                    "-o",
                    str(pathlib.Path(out) / "cached.csv"),
                )
                print(f"  ldanalyze batch, flow at a time, cache {state:15s}: {shown(peak)}, {seconds:5.1f} s")
            pd.testing.assert_frame_equal(tables["never"], tables["0"])
            print(
                f"  batch results identical: True ({len(tables['0'])} rows, "
                f"{int(tables['0'].loc[tables['0']['scope'] == 'pooled', 'losses'].max())} losses)"
            )
        reports = {}
        for flag in ([], ["--flow-at-a-time"]):
            report, peak, seconds = run(BATCH, "inspect", "--json", str(path), *flag)
            reports[bool(flag)] = json.loads(" ".join(report))["flows"]
            print(
                f"  ldanalyze inspect{' --flow-at-a-time' if flag else ' (whole)':18s}: {shown(peak)}, {seconds:5.1f} s"
            )
        assert reports[False] == reports[True]
        print("  inspect reports identical: True")


if __name__ == "__main__":
    main()
