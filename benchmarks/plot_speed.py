"""Figure speed, in one run: the timeline plot of a 1 M-arrival flow (decimated lines, every
loss drawn) against saving the same figure with the lines undecimated, and ``ldanalyze report``
on the bundled ns-2 traces as a whole process. The explore issue targets < 3 s and < 20 s.
Usage: ``python benchmarks/plot_speed.py [--arrivals 1000000]``.
"""

from __future__ import annotations

import argparse
import io
import pathlib
import subprocess
import sys
import tempfile
import time

import matplotlib

matplotlib.use("Agg")

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import synthetic_packets  # noqa: E402
from ldanalyze import plot  # noqa: E402
from ldanalyze.packets import Trace, empty_rtt  # noqa: E402
from ldanalyze.report.plots import style  # noqa: E402
from ldanalyze.timeline import build_timeline  # noqa: E402


def draw(tl, flow: str) -> float:
    t0 = time.perf_counter()
    fig = plot.timeline(tl, flow, ["spike"])
    fig.savefig(io.BytesIO(), format="png", dpi=72)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arrivals", type=int, default=1_000_000)
    args = parser.parse_args()
    packets = synthetic_packets(int(args.arrivals * 1.03), flows=1)
    tl = build_timeline(
        Trace(packets=packets, rtt=empty_rtt(), path="synthetic", format="synthetic", meta={"clock": "common"})
    )
    flow = tl.flows[0]
    draw(tl, flow)  # numba's compile and matplotlib's font cache
    decimated = draw(tl, flow)
    style.MAX_POINTS = 10**9  # the same figure with every vertex
    full = draw(tl, flow)
    style.MAX_POINTS = 4000
    traces = sorted(str(p) for p in (ROOT / "traces").glob("*.tr.gz"))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ldanalyze.cli", "report", *traces, "-o", f"{tmp}/r.html"],
            check=True,
            capture_output=True,
        )
        report = time.perf_counter() - t0
    print(f"timeline, {len(tl.arrivals):,} arrivals, {len(tl.losses):,} losses: {decimated:.2f} s (target < 3 s)")
    print(f"  the same figure undecimated: {full:.2f} s ({full / decimated:.1f}x slower)")
    print(f"ldanalyze report on {len(traces)} bundled traces (process): {report:.2f} s (target < 20 s)")


if __name__ == "__main__":
    main()
