"""Rate-controller replay speed on a synthetic 10 M-packet timeline, against the same controllers interpreted.

Prints, per controller: packets per second of its replay (``Controller.run`` on the shared
Signals), the rate of the very same replay with its numba kernels run by CPython
(``LDANALYZE_KERNELS=interpreted``, ldanalyze/tiering.py) on a prefix of the same trace, and
their ratio: what compiling buys; then the time to build the shared Signals and of
``replay(timeline, "all", "omniscient")`` end to end. Targets (issue 4): ≥ 5 M packets/s per
controller (its ≥ 30× was set against the plain twins of tests/naive/control.py, which the
tests hold the kernels to, not timed here). The machine is noisy: each figure is the best of
``--repeat`` runs, baseline and subject measured in the same run.

    python benchmarks/control_kernels.py [--packets 10000000] [--interpreted-packets 100000]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.baselines import kernels  # noqa: E402
from benchmarks.synthetic import best_of, synthetic_packets  # noqa: E402
from ldanalyze.control import REGISTRY, Signals, get_controller, replay  # noqa: E402
from ldanalyze.timeline import build_timeline  # noqa: E402


def signals_of(packets):
    tl = build_timeline(packets)
    tl.meta["clock"] = "common"
    sig = Signals.of(tl)
    # the true causes as the decisions: every controller sees both kinds of loss
    cause = tl.losses["cause"].to_numpy()
    return tl, sig, sig.congestion(np.where(cause == "congestion", "congestion", "wireless"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=10_000_000)
    ap.add_argument("--interpreted-packets", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    packets = synthetic_packets(args.packets)
    tl, sig, congestion = signals_of(packets)
    print(
        f"synthetic timeline: {len(packets):,} packets, {len(sig.t):,} arrivals, "
        f"{len(sig.loss_at):,} detected losses ({int(congestion.sum()):,} congestion)"
    )
    small_packets = packets[packets["t_send"] <= packets["t_send"].sort_values().iloc[args.interpreted_packets - 1]]
    _, small, small_congestion = signals_of(small_packets)

    print(f"{'controller':<15}{'M packets/s':>13}{'interpreted k/s':>17}{'ratio':>9}")
    for name in REGISTRY:
        ctl = get_controller(name)
        ctl.run(small, small_congestion)  # numba compiles (or loads its cache) outside the timings
        fast = best_of(args.repeat, lambda: ctl.run(sig, congestion))
        with kernels("interpreted"):
            slow = best_of(1, lambda: ctl.run(small, small_congestion))
        fast_rate, slow_rate = len(packets) / fast, len(small_packets) / slow
        print(f"{name:<15}{fast_rate / 1e6:>13.1f}{slow_rate / 1e3:>17.1f}{fast_rate / slow_rate:>8.0f}×")
    shared = best_of(args.repeat, lambda: Signals.of(tl))
    total = best_of(1, lambda: replay(tl, "all", "omniscient", rates=False))
    print(
        f"Signals.of (shared arrays): {shared:.2f} s; "
        f"replay(all {len(REGISTRY)} controllers, omniscient + the two baselines) end to end: {total:.2f} s"
    )


if __name__ == "__main__":
    main()
