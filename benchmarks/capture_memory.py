"""Peak memory of reading a big capture whole (``read_capture``) against one flow at a time
(``read_capture_flows``), each in a fresh process, on the 2 M-packet, 8-flow pcap of
``benchmarks/inspect_whole.py`` (built here if missing). The batch issue asks that a capture
larger than memory be read with bounded RSS. Usage: ``python benchmarks/capture_memory.py``."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import pcap_ingest  # noqa: E402

PEAK = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
WHOLE = ("import sys, warnings; warnings.simplefilter('ignore'); import ldanalyze as la; "
         "t = la.read_trace(sys.argv[1]); print(len(t.packets)); " + PEAK)
SPLIT = ("import sys, warnings; warnings.simplefilter('ignore'); "
         "from ldanalyze.io.capture.split import read_capture_flows; "
         "print(sum(len(t.packets) for t in read_capture_flows(sys.argv[1]))); " + PEAK)


def run(code: str, path: pathlib.Path) -> tuple[int, float, float]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True,
                         cwd=ROOT).stdout.split()
    return int(out[0]), float(out[1]) / 1e3, time.perf_counter() - t0


def baseline() -> float:
    code = "import ldanalyze, ldanalyze.io.capture.split; " + PEAK
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                cwd=ROOT).stdout) / 1e3


def main() -> None:
    path = pcap_ingest.build("inspect_udp.pcap", pcap_ingest.write_pcap, 2_000_000, 172)
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB, 8 flows")
    base = baseline()
    rows_whole, whole, t_whole = run(WHOLE, path)
    rows_split, split, t_split = run(SPLIT, path)
    assert rows_whole == rows_split
    print(f"imports alone                 : {base:6.0f} MB")
    print(f"read_capture (whole)          : {whole:6.0f} MB peak, {t_whole:5.1f} s, {rows_whole:,} rows")
    print(f"read_capture_flows (per flow) : {split:6.0f} MB peak, {t_split:5.1f} s")
    print(f"above the imports             : {(split - base) / (whole - base):.2f} of the whole read's")


if __name__ == "__main__":
    main()
