"""ns-2 wired ingest speed: ldanalyze's reader against a bare pyarrow read and a plain Python loop.

Builds a large, valid wired trace by repeating a bundled sample (times and uids shifted so that
every copy is a new stretch of the same run), then measures, in one run on one file:

* ``ldanalyze``: ``read_ns2_wired`` (parse + ground truth + PacketTable + RTT samples),
* ``pyarrow``: ``pyarrow.csv.read_csv`` of the same file with the same delimiter and type
  inference: the floor for any pyarrow-based reader,
* ``python``: the least any line-by-line Python reader does (``benchmarks/baselines.py``:
  split every line, keep those of a data packet type; no number parsed, no packet labelled), on
  a prefix, scaled per line.

Prints lines/s and the ratios the foundation issue targets (≥ 4 M lines/s, ≥ 4× the Python
loop, ≥ 0.7× pyarrow). The 4× was set against the plain labelling loop of tests/naive/ns2.py,
which does more per line than this floor: the ratio printed here is the smaller, a lower bound
of the reader's lead over any Python reader. Usage:
``python benchmarks/ns2_ingest.py [--lines N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import pathlib
import subprocess
import sys
import time

import pyarrow.csv as pacsv

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.baselines import kept_lines  # noqa: E402
from ldanalyze.io.ns2.wired import DATA_TYPES, read_ns2_wired  # noqa: E402

SAMPLE = ROOT / "traces" / "wlh_mix_4flow_high.tr.gz"
DATA = ROOT / "benchmarks" / "_data"


def build(lines_wanted: int) -> pathlib.Path:
    path = DATA / f"ns2_wired_{lines_wanted}.tr"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    with gzip.open(SAMPLE, "rt") as f:
        rows = [line.split() for line in f if line.strip()]
    span = float(rows[-1][1]) + 1.0
    uid_span = max(int(r[11]) for r in rows) + 1
    written = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        copy = 0
        while written < lines_wanted:
            dt, du = copy * span, copy * uid_span
            chunk = []
            for r in rows[: lines_wanted - written]:
                chunk.append(f"{r[0]} {float(r[1]) + dt:.6f} {' '.join(r[2:11])} {int(r[11]) + du}\n")
            out.write("".join(chunk))
            written += len(chunk)
            copy += 1
    os.replace(tmp, path)
    return path


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def peak_rss_of_reader(path: pathlib.Path, block_mb: int) -> float:
    """Peak RSS (MB) of a fresh process that only runs the reader.

    Read from /proc (VmHWM): getrusage's ru_maxrss survives exec and would report this
    parent's peak instead.
    """
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from ldanalyze.io.ns2.wired import read_ns2_wired;"
        "read_ns2_wired(sys.argv[2], block_bytes=int(sys.argv[3]) << 20);"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(path), str(block_mb)], check=True, capture_output=True, text=True
    )
    return float(out.stdout) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=4_000_000)
    parser.add_argument("--python-lines", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    path = build(args.lines)
    size_mb = path.stat().st_size / 1e6
    print(f"file: {path.name}, {args.lines:,} lines, {size_mb:.0f} MB")

    def bare():
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter=" "),
        )

    read_ns2_wired(path)  # warm the numba cache and the page cache
    # alternate the two so that both see the same machine load; keep the best of each
    ours_times, arrow_times = [], []
    for _ in range(args.repeat):
        t, trace = timed(lambda: read_ns2_wired(path))
        ours_times.append(t)
        t, table = timed(bare)
        arrow_times.append(t)
        assert table.num_rows == args.lines
        del table
    t_ours, t_arrow = min(ours_times), min(arrow_times)
    with open(path) as f:
        prefix = [next(f) for _ in range(min(args.python_lines, args.lines))]
    t_py, _ = timed(lambda: kept_lines(prefix, 4, DATA_TYPES))
    py_rate = len(prefix) / t_py

    ours, arrow = args.lines / t_ours, args.lines / t_arrow
    print(f"ldanalyze read_ns2_wired : {ours / 1e6:6.2f} M lines/s  ({t_ours:.2f} s, {len(trace.packets):,} packets)")
    print(f"bare pyarrow read_csv    : {arrow / 1e6:6.2f} M lines/s  ({t_arrow:.2f} s)")
    print(f"plain Python line loop   : {py_rate / 1e6:6.2f} M lines/s  (on {len(prefix):,} lines)")
    print(f"ratio vs Python loop     : {ours / py_rate:6.1f}x   (target >= 4x)")
    print(f"ratio vs bare pyarrow    : {ours / arrow:6.2f}x   (target >= 0.7x)")
    for block_mb in (32, 128):
        rss = peak_rss_of_reader(path, block_mb)
        print(f"reader peak RSS, {block_mb:3d} MB blocks: {rss:.0f} MB (file {size_mb:.0f} MB)")


if __name__ == "__main__":
    main()
