"""ns-2 wireless ingest speed, whole process: ``ldanalyze inspect`` and a bare ``read_trace`` in
fresh processes, against a plain Python line loop, in one run.

Builds a large, valid old-format wireless trace by repeating the bundled ``wlan_old`` (times and
uids shifted, so every copy is a new stretch of the run), then measures on that one file:

* ``inspect``: ``ldanalyze inspect FILE`` as a user runs it (start-up, imports, read, timeline,
  summary printed);
* ``read``: ``python -c 'read_trace(FILE)'`` (start-up, imports, read);
* ``python loop``: a fresh process that splits every line into fields and keeps the AGT ones
  (``benchmarks/baselines.py``), the least any line-by-line Python reader does.

Prints lines/s (the simulated-wireless issue targets >= 1 M lines/s, whole process) and the
ratio to the loop. (The reader's scanner is always compiled, so there is no interpreted run of
it to time; its plain twin, tests/naive/ns2.py, is the tests' reference, not timed here.)
Usage: ``python benchmarks/ns2_wireless_ingest.py [--lines N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

SAMPLE = ROOT / "traces" / "wireless" / "wlan_old.tr.gz"
DATA = ROOT / "benchmarks" / "_data"


def build(lines_wanted: int) -> pathlib.Path:
    path = DATA / f"ns2_wireless_{lines_wanted}.tr"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    with gzip.open(SAMPLE, "rt") as f:
        rows = [line.split() for line in f if line.strip() and line[0] in "srfD"]
    span = float(rows[-1][1]) + 1.0
    uid_span = max(int(r[5]) for r in rows) + 1
    tmp = path.with_suffix(".tmp")
    written, copy = 0, 0
    with open(tmp, "w") as out:
        while written < lines_wanted:
            dt, du = copy * span, copy * uid_span
            chunk = [
                f"{r[0]} {float(r[1]) + dt:.9f} {r[2]} {r[3]} {r[4]} {int(r[5]) + du} {' '.join(r[6:])}\n"
                for r in rows[: lines_wanted - written]
            ]
            out.write("".join(chunk))
            written += len(chunk)
            copy += 1
    os.replace(tmp, path)
    return path


def wall(command: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    path = build(args.lines)
    print(f"file: {path.name}, {args.lines:,} lines, {path.stat().st_size / 1e6:.0f} MB")
    env_python = [sys.executable]
    read = env_python + ["-c", "import sys; from ldanalyze import read_trace; read_trace(sys.argv[1])", str(path)]
    inspect = env_python + ["-m", "ldanalyze.cli", "inspect", str(path)]
    subprocess.run(read, check=True, capture_output=True)  # warm the numba cache and the page cache
    t_inspect = wall(inspect, args.repeat)
    t_read = wall(read, args.repeat)
    t_loop = wall(env_python + [str(ROOT / "benchmarks" / "baselines.py"), str(path), "3", "AGT"], args.repeat)

    n = args.lines
    print(f"ldanalyze inspect (process) : {n / t_inspect / 1e6:6.2f} M lines/s  ({t_inspect:.2f} s)")
    print(f"read_trace (process)        : {n / t_read / 1e6:6.2f} M lines/s  ({t_read:.2f} s)   target >= 1")
    print(f"plain Python loop (process) : {n / t_loop / 1e6:6.2f} M lines/s  ({t_loop:.2f} s)")
    print(f"read_trace vs Python loop   : {t_loop / t_read:6.2f}x")


if __name__ == "__main__":
    main()
