"""Rebuild docs/learned.md: the learned LDA against every heuristic, held out by family.

The labelled corpus of ``traces/corpus.py``: ns-2 (paper 000's wlh and wb topologies), ns-3
Wi-Fi (a link layer that retransmits), ns-3 LTE (HARQ, RLC), ns-3 Wi-Fi behind a token-bucket
policer, and the network-namespace lab (real kernel; needs root). Each family is held out in
turn: a model is trained on the others and scored on the held-out family's losses next to
Biaz, mBiaz, Spike, ZigZag and ZBS (``ldanalyze.learn.evaluate``).

    python docs/make_learned_evaluation.py [--cache DIR] [--jobs N] [--families F,F] [--small]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "traces"))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402

from ldanalyze import learn  # noqa: E402


def percent(x: float) -> str:
    return f"{100 * x:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="folder for the ns-2 traces and lab runs (kept)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--families", default=",".join(corpus.FAMILIES))
    ap.add_argument("--small", action="store_true", help="a few cases per family (a quick look)")
    args = ap.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(args.cache or scratch)
        found = list(corpus.items(folder, args.families.split(","), small=args.small, jobs=args.jobs))
    groups = [family for family, _, _ in found]
    table, importance = learn.evaluate([item for _, _, item in found], groups)
    verdicts = learn.verdicts(table)
    seconds = time.perf_counter() - start
    counts = ", ".join(f"`{family}` {n}" for family, n in Counter(groups).items())
    lines = [
        "# The learned LDA against the heuristics, held out by family",
        "",
        f"Made by `python docs/make_learned_evaluation.py{' --small' if args.small else ''}` in {seconds:.0f} s "
        f"from the corpus of `traces/corpus.py` (its docstring says what each family varies); traces (ns-3: "
        f"receivers) per family: {counts}. Each family is held out in turn; gradient-boosted trees are "
        "trained on the gaps of the others and scored on the held-out family's losses, next to every "
        "heuristic on the same losses (a policer's drops scored as congestion). Accuracy in %, with 95 % "
        "Wilson intervals (losses taken as independent: they come in bursts, so the true intervals are wider).",
        "",
        "| held out | LDA | losses scored | M_c | M_w | accuracy | 95 % interval |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in table.itertuples():
        lines.append(
            f"| {row.held_out} | {row.lda} | {row.scored} | {percent(row.M_c)} | {percent(row.M_w)} | "
            f"{percent(row.accuracy)} | {percent(row.accuracy_lo)}-{percent(row.accuracy_hi)} |"
        )
    lines += [
        "",
        "| held out | best heuristic | its accuracy | learned | margin | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for row in verdicts.itertuples():
        lines.append(
            f"| {row.held_out} | {row.best_heuristic} | {percent(row.best_accuracy)} | "
            f"{percent(row.learned_accuracy)} | {percent(row.margin)} | {row.verdict} |"
        )
    pivot = importance.pivot(index="feature", columns="held_out", values="importance")
    lines += [
        "",
        "Permutation importance on the held-out gaps (mean drop of gap accuracy when the feature is "
        "shuffled, 3 repeats):",
        "",
        "| feature | " + " | ".join(pivot.columns) + " |",
        "|---|" + "---:|" * len(pivot.columns),
    ]
    for feature, values in pivot.iterrows():
        lines.append(f"| {feature} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    out = ROOT / "docs" / "learned.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


if __name__ == "__main__":
    main()
