"""Rebuild docs/learned.md: the learned LDA against every heuristic, held out by scenario family.

Three families of labelled traces:
* ``wlh`` and ``wb``: ns-2.35 runs of paper 000's topologies (ldanalyze/data/paper000.tcl) with
  1, 2, 4, 8, 16 flows of TFRC, TCP and constant-rate UDP at 110 %, 3.1 % and 7.8 % uniform and
  7.8 % bursty wireless loss, seeds 1 and 2, 120 s after a 10 s warm-up (the bundled model is
  trained on other seeds: traces/train_learned);
* ``lab``: the network-namespace lab (tests/support/netns_lab.py: real kernel, iperf3, nftables random
  drop as the radio, a tbf bottleneck), whose bottleneck steps down and up so that its queue
  fills and drains, read from the capture chain (every loss's cause known); needs root.

Each family is held out in turn: a model is trained on the other two and scored on the held-out
family's losses next to Biaz, mBiaz, Spike, ZigZag and ZBS (``ldanalyze.learn.evaluate``).

    python docs/make_learned_evaluation.py [--cache DIR] [--jobs N] [--lab-runs 6]
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ldanalyze import learn  # noqa: E402
from ldanalyze.io.capture.vantage import read_vantages  # noqa: E402
from ldanalyze.reproduce import CBR_SHARE  # noqa: E402
from ldanalyze.simulation import simulate  # noqa: E402
from tests.support.netns_lab import LabConfig, lab_unavailable, run_lab  # noqa: E402

SCENARIOS = [
    {
        "traffic": traffic,
        **({"cbr_share": CBR_SHARE} if traffic == "cbr" else {}),
        "topology": topology,
        "flows": flows,
        "loss": loss,
        "rate": rate,
        "seed": seed,
        "duration": 120,
        "warmup": 10,
    }
    for traffic, topology, flows, (loss, rate), seed in itertools.product(
        ("tfrc", "tcp", "cbr"),
        ("wlh", "wb"),
        (1, 2, 4, 8, 16),
        (("uniform", 0.031), ("uniform", 0.078), ("bursty", 0.078)),
        (1, 2),
    )
]
# the lab's bottleneck steps below the flow's rate and back up: its queue fills and drains
LAB = [
    LabConfig(
        duration_s=10,
        rate=rate,
        tbf_rate="3mbit",
        wireless_drop_percent=loss,
        tbf_steps=((2.0, low), (5.0, "3mbit"), (7.0, low), (8.5, "3mbit")),
    )
    for rate, low, loss in (
        ("1M", "700kbit", 3),
        ("1M", "800kbit", 5),
        ("1500k", "1mbit", 2),
        ("1500k", "1200kbit", 6),
        ("800k", "600kbit", 4),
        ("1200k", "900kbit", 3),
    )
]


def analysed(path: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return learn.analyse(path)


def lab_traces(folder: pathlib.Path, runs: int) -> list:
    why = lab_unavailable()
    if why:
        print(f"no lab family: {why}")
        return []
    items = []
    for k, config in enumerate(LAB[:runs]):
        workdir = folder / f"lab{k}"
        workdir.mkdir(parents=True, exist_ok=True)
        run = run_lab(workdir, config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = read_vantages(run.chain(), clocks="common")
        items.append(learn.analyse(trace))
        print(f"lab run {k}: {run.wireless_drops} wireless and {run.bottleneck_drops} congestion drops")
    return items


def percent(x: float) -> str:
    return f"{100 * x:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="folder for the ns-2 traces (kept)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--lab-runs", type=int, default=len(LAB))
    args = ap.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(args.cache or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        with ProcessPoolExecutor(args.jobs) as pool:
            paths = [str(p) for p, _ in pool.map(simulate, SCENARIOS, itertools.repeat(folder))]
            items = list(pool.map(analysed, paths, chunksize=4))
        groups = [s["topology"] for s in SCENARIOS]
        lab = lab_traces(pathlib.Path(scratch), args.lab_runs)
        items += lab
        groups += ["lab"] * len(lab)
        table, importance = learn.evaluate(items, groups)
    verdicts = learn.verdicts(table)
    seconds = time.perf_counter() - start
    lines = [
        "# The learned LDA against the heuristics, held out by scenario family",
        "",
        f"Made by `python docs/make_learned_evaluation.py` in {seconds:.0f} s. Families: `wlh` and `wb`, "
        f"{len(SCENARIOS) // 2} ns-2 traces each (paper 000's topologies: 1-16 flows of TFRC, TCP and "
        "constant-rate UDP, 3.1 % and 7.8 % uniform and 7.8 % bursty wireless loss, seeds 1-2, 120 s); "
        f"`lab`, {len(lab)} runs of the network-namespace lab (real kernel and iperf3, random drop on one "
        "router, a tbf bottleneck that steps down and up, every loss's cause read from the capture "
        "chain). Each family is held out in turn; gradient-boosted trees are trained on the gaps of the "
        "other two and scored on the held-out family's losses, next to every heuristic on the same "
        "losses. Accuracy in %, with 95 % Wilson intervals (losses taken as independent: they come in "
        "bursts, so the true intervals are wider).",
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
