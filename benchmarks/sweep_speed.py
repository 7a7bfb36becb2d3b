"""Sweep speed: 100 grid points of Spike (β × α) over a 1 M-arrival timeline (the shared
synthetic trace), against one plain ``classify`` + ``score`` of the default Spike on the same
timeline in the same run. The reproduction issue targets < 10 s for the sweep.
Usage: ``python benchmarks/sweep_speed.py [--packets 1050000]``."""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from synthetic import synthetic_packets  # noqa: E402

import ldanalyze as la  # noqa: E402
from ldanalyze.packets import Trace, empty_rtt  # noqa: E402
from ldanalyze.sweep import sweep  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packets", type=int, default=1_050_000)
    args = parser.parse_args()
    trace = Trace(
        packets=synthetic_packets(args.packets),
        rtt=empty_rtt(),
        path="synthetic",
        format="synthetic",
        meta={"clock": "common"},
    )
    timeline = la.build_timeline(trace)
    arrivals = len(timeline.arrivals)
    grid = {"beta": [round(0.05 * k, 2) for k in range(1, 11)], "alpha": [round(0.5 + 0.05 * k, 2) for k in range(10)]}
    sweep([trace], "spike", {"beta": [0.1], "alpha": [0.5]})  # numba's cache
    t0 = time.perf_counter()
    la.score(la.classify(la.build_timeline(trace), "spike"), timeline.summary(), by="pooled", bootstrap=0)
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = sweep([trace], "spike", grid)
    many = time.perf_counter() - t0
    points = len(table)
    print(f"timeline: {arrivals:,} arrivals, {len(timeline.losses):,} losses")
    print(f"one point (timeline + classify + score): {one:6.2f} s")
    print(f"sweep of {points} points ({table.attrs['refused']} refused): {many:6.2f} s   (target < 10 s for 100)")
    print(f"sweep / one point                       : {many / one:6.1f}x for {points} points")


if __name__ == "__main__":
    main()
