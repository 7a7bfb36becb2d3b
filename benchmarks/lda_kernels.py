"""LDA replay speed on a synthetic 10 M-packet timeline, against the same LDAs with their kernels interpreted.

Prints, per LDA of ``all``: arrivals per second of its decision (kernel + vectorised rule, on
the shared Features), the rate of the very same decision with its numba kernels run by CPython
(``LDANALYZE_KERNELS=interpreted``, ldanalyze/tiering.py) on a prefix of the same trace, and
their ratio: what compiling buys (about 1 for an LDA whose rule is vectorised numpy with no
kernel); then the wall time of ``classify(timeline, "all")`` end to end. Both sides are timed
with the shared per-arrival state (delay range and EWMA, T_min) already computed. Targets
(issue 3): ≥ 20 M arrivals/s per LDA and all LDAs < 10 s (its ≥ 50× was set against the
per-arrival plain twins of tests/naive/lda.py, which the tests hold the kernels to, not timed
here). The machine is noisy: each figure is the best of ``--repeat`` runs, baseline and subject
measured in the same run.

    python benchmarks/lda_kernels.py [--packets 10000000] [--interpreted-packets 100000]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.baselines import kernels  # noqa: E402
from benchmarks.synthetic import best_of, synthetic_packets  # noqa: E402
from ldanalyze.lda import Features, Replay, classify, parse_ldas  # noqa: E402
from ldanalyze.timeline import build_timeline  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=10_000_000)
    ap.add_argument("--interpreted-packets", type=int, default=100_000)
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
    small = build_timeline(
        packets[packets["t_send"] <= packets["t_send"].sort_values().iloc[args.interpreted_packets - 1]]
    )
    small.meta["clock"] = "common"

    semantics = Replay()
    f, f_small = Features.of(tl, semantics), Features.of(small, semantics)
    warm = build_timeline(packets.iloc[:2000])
    warm.meta["clock"] = "common"
    classify(warm, "all")  # numba compiles (or loads its cache) outside the timings
    n = len(tl.arrivals)
    print(f"{'lda':<14}{'M arrivals/s':>14}{'interpreted':>13}{'ratio':>9}")
    for lda in parse_ldas("all"):  # the learned LDA: benchmarks/learned_speed.py
        fast = best_of(args.repeat, lambda: lda.decide(f))
        lda.decide(f_small)  # the shared state, as the subject has it after its first run
        with kernels("interpreted"):
            slow = best_of(1, lambda: lda.decide(f_small))
        fast_rate, slow_rate = n / fast, len(small.arrivals) / slow
        print(f"{lda.name:<14}{fast_rate / 1e6:>14.1f}{slow_rate / 1e6:>13.2f}{fast_rate / slow_rate:>8.1f}×")
    features = best_of(args.repeat, lambda: Features.of(tl, semantics))
    total = best_of(args.repeat, lambda: classify(tl, "all"))
    in_all = len(parse_ldas("all"))
    print(f"Features.of (shared arrays): {features:.2f} s; classify(all {in_all} LDAs) end to end: {total:.2f} s")


if __name__ == "__main__":
    main()
