"""The closed loop's two-implementation check, as a user runs it, against ``score`` on the same
trace (the issue's target: ``ldanalyze crosscheck`` within 2x of ``ldanalyze score``).

Simulates one closed-loop run with the patched ns-2 (``closedloop.patched_ns``: built the first
time), then times, each in its own process with the numba cache warm, alternating:
``ldanalyze crosscheck TRACE --log LOG`` (replay of the 11 LDAs the receiver runs and the
comparison) and ``ldanalyze score TRACE --lda <the same 11>`` (replay, scores and TFRC). Prints
the best of ``--repeat`` runs of each and their ratio. Usage:
``python benchmarks/closed_loop_check.py [--flows 8] [--duration 200] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

from ldanalyze import closedloop
from ldanalyze.simulation import decision_log, simulate


def seconds(command: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=8)
    parser.add_argument("--duration", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ns = closedloop.patched_ns()
    with tempfile.TemporaryDirectory() as folder:
        scenario = {
            "traffic": "tfrc",
            "topology": "wlh",
            "flows": args.flows,
            "loss": "uniform",
            "rate": 0.078,
            "seed": 1,
            "duration": args.duration,
            "warmup": 5,
            "lda": "zbs",
        }
        trace, _ = simulate(scenario, pathlib.Path(folder), ns)
        log = decision_log(trace)
        ldas = ",".join(closedloop.LOG_LDAS)
        command = str(pathlib.Path(sys.executable).with_name("ldanalyze"))  # the installed entry point
        ours = [command, "crosscheck", str(trace), "--log", str(log)]
        score = [command, "score", str(trace), "--lda", ldas]
        seconds(ours), seconds(score)  # warm the numba cache and the page cache
        times = {"crosscheck": [], "score": []}
        for _ in range(args.repeat):
            times["crosscheck"].append(seconds(ours))
            times["score"].append(seconds(score))
        lines = sum(1 for _ in open(log)) - 1
        best = {k: min(v) for k, v in times.items()}
        print(
            f"closed-loop trace: WLH, {args.flows} TFRC flows steered by zbs, {args.duration} s; {lines} logged losses"
        )
        for name, runs in times.items():
            print(f"  {name:9s} best {best[name]:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in runs)})")
        print(f"crosscheck / score: {best['crosscheck'] / best['score']:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
