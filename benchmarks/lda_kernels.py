"""LDA replay speed on a synthetic 10 M-packet timeline, against the plain twins of tests/naive/lda.py.

Prints, per LDA: arrivals per second of its decision (kernel + vectorised rule, on the shared
Features), the naive twin's rate on a prefix of the same trace, and their ratio; then the wall
time of ``classify(timeline, "all")`` end to end. Targets (issue 3): ≥ 20 M arrivals/s per
LDA, ≥ 50× the naive twin, all LDAs < 10 s. The machine is noisy: each figure is the best of
``--repeat`` runs, baseline and subject measured in the same run.

    python benchmarks/lda_kernels.py [--packets 10000000] [--naive-packets 100000]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import best_of, synthetic_packets  # noqa: E402
from ldanalyze.lda import REGISTRY, Features, Replay, classify, get_lda, parse_ldas  # noqa: E402
from ldanalyze.timeline import build_timeline  # noqa: E402
from tests.naive import lda as naive_lda  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=10_000_000)
    ap.add_argument("--naive-packets", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    t = time.perf_counter()
    packets = synthetic_packets(args.packets)
    tl = build_timeline(packets)
    tl.meta["clock"] = "common"
    print(
        f"synthetic timeline: {len(packets):,} packets, {len(tl.arrivals):,} arrivals, "
        f"{len(tl.gaps):,} gaps, {len(tl.losses):,} losses (built in {time.perf_counter() - t:.1f} s)"
    )
    small = packets[packets["t_send"] <= packets["t_send"].sort_values().iloc[args.naive_packets - 1]]
    rows = small.assign(flow=small["flow"].astype(str), fate=small["fate"].astype(str)).to_dict("records")
    small_arrivals = int((small["fate"] == "delivered").sum())

    semantics = Replay()
    f = Features.of(tl, semantics)
    warm = build_timeline(packets.iloc[:2000])
    warm.meta["clock"] = "common"
    classify(warm, "all")  # numba compiles (or loads its cache) outside the timings
    n = len(tl.arrivals)
    print(f"{'lda':<14}{'M arrivals/s':>14}{'naive k/s':>12}{'ratio':>9}")
    for name in REGISTRY:
        if name not in naive_lda.LDA_DEFAULTS:
            continue  # the learned LDA: benchmarks/learned_speed.py
        lda = get_lda(name)
        fast = best_of(args.repeat, lambda: lda.decide(f))
        slow = best_of(1, lambda: naive_lda.lda_decisions(name, {}, rows))
        fast_rate, slow_rate = n / fast, small_arrivals / slow
        print(f"{name:<14}{fast_rate / 1e6:>14.1f}{slow_rate / 1e3:>12.1f}{fast_rate / slow_rate:>8.0f}×")
    features = best_of(args.repeat, lambda: Features.of(tl, semantics))
    total = best_of(args.repeat, lambda: classify(tl, "all"))
    in_all = len(parse_ldas("all"))
    print(f"Features.of (shared arrays): {features:.2f} s; classify(all {in_all} LDAs) end to end: {total:.2f} s")


if __name__ == "__main__":
    main()
