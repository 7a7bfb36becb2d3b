"""Paper 000's tables in markdown: Tables II and III (one flow) open loop, Table VI (128 flows)
beside the paper's, Tables II and III closed loop beside the open loop and the paper, and the
open-loop throughput models' errors against the closed loop."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..formatting import number
from .closed_suite import MODEL_NAMES, SPREAD, model_errors
from .suite import LDAS, TRAFFIC_NAMES, mean_over_seeds

# paper 000 Tables II (WLH) and III (WB): one flow, high loss, in %; "unaware" is the paper's TFRC
PAPER_TABLES: dict[str, dict[str, dict[str, float]]] = {
    "wlh": {
        "thput": dict(unaware=84, omniscient=99, biaz=99, mbiaz=99, spike=99, zigzag=98),
        "cong.": dict(unaware=0.2, omniscient=2.3, biaz=2.3, mbiaz=2.3, spike=0.4, zigzag=0.3),
        "M_c": dict(unaware=0, omniscient=0, biaz=0, mbiaz=0, spike=0, zigzag=0),
        "M_w": dict(unaware=100, omniscient=0, biaz=6.3, mbiaz=6.6, spike=58, zigzag=66),
    },
    "wb": {
        "thput": dict(unaware=37, omniscient=99, biaz=97, mbiaz=91, spike=99, zigzag=53),
        "cong.": dict(unaware=0.0, omniscient=0.4, biaz=0.4, mbiaz=0.4, spike=0.0, zigzag=0.0),
        "M_c": dict(unaware=0, omniscient=0, biaz=0, mbiaz=0, spike=0, zigzag=0),
        "M_w": dict(unaware=100, omniscient=0, biaz=2.4, mbiaz=7.0, spike=29, zigzag=60),
    },
}
# Table VI of paper 000 (§IX-B): 128 flows in WLH, in %
PAPER_TABLE_VI = {
    "thput": (99, 99, 99, 99, 99, 99),
    "cong.": (5.3, 8.5, 3.3, 1.9, 0.7, 4.2),
    "M_c": (0, 32, 4.4, 29, 11, 14),
    "M_w": (0, 17, 23, 64, 68, 25),
}
TABLE_VI_LDAS = ("omniscient", "biaz", "mbiaz", "spike", "zigzag", "zbs")


def one_flow_table(results: pd.DataFrame, topology: str, traffic: str = "tfrc") -> str:
    """Paper 000 Table II/III: one flow, high loss, in %: modeled throughput, M_c, M_w per LDA."""
    stats = mean_over_seeds(results, topology).xs(1, level="flows")
    name = {"wlh": "II, wireless last hop", "wb": "III, wireless backbone"}[topology]
    cong = stats[("congestion_rate", "mean")].iloc[0] * 100
    lines = [
        f"Table {name}: 1 flow of {TRAFFIC_NAMES[traffic]}, high uniform wireless loss (7.8 %), mean over "
        "seeds, in %. Throughput is TFRC's modeled rate fed by each LDA (open loop) as a share of the "
        f"bottleneck; the trace's congestion loss rate (its own sender's) is {cong:.2f} %.",
        "",
        "| | " + " | ".join(LDAS) + " |",
        "|---|" + "---:|" * len(LDAS),
    ]
    for metric, label in (("thput", "thput"), ("M_c", "M_c"), ("M_w", "M_w")):
        cells = [stats.loc[lda, (metric, "mean")] * 100 if lda in stats.index else np.nan for lda in LDAS]
        lines.append(f"| {label} | " + " | ".join(number(c, 1) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def table_vi(scaled: pd.DataFrame, flows: int) -> str:
    """Paper 000 Table VI: WLH, ``flows`` TFRC flows, high loss; ours beside the paper's, in %."""
    stats = scaled.set_index("lda")
    cong = float(scaled["congestion_rate"].iloc[0]) * 100
    lines = [
        f"Table VI, wireless last hop: {flows} flows of TFRC (the paper's), high uniform wireless loss "
        f"(7.8 %), one seed, in %. Ours, then the paper's. Throughput is TFRC's modeled rate fed by each "
        f"LDA (open loop) as a share of the bottleneck; cong. is the trace's congestion loss rate "
        f"({cong:.2f} %, its own senders'), the same for every scheme here, where the paper's closed loop "
        "gave each scheme its own.",
        "",
        "| | " + " | ".join(TABLE_VI_LDAS) + " |",
        "|---|" + "---:|" * len(TABLE_VI_LDAS),
    ]
    for metric in ("thput", "cong.", "M_c", "M_w"):
        column = "congestion_rate" if metric == "cong." else metric
        cells = [stats.loc[lda, column] * 100 if lda in stats.index else np.nan for lda in TABLE_VI_LDAS]
        lines.append(f"| {metric} | " + " | ".join(number(c, 1) for c in cells) + " |")
        lines.append(f"| {metric} (paper) | " + " | ".join(f"{v:g}" for v in PAPER_TABLE_VI[metric]) + " |")
    return "\n".join(lines) + "\n"


def closed_table(opened: pd.DataFrame, closed: pd.DataFrame, topology: str) -> str:
    """Tables II/III three ways: the closed loop (each LDA's own run), the open-loop replay over
    the unaware run, and the paper, in %."""
    name = {"wlh": "II, wireless last hop", "wb": "III, wireless backbone"}[topology]
    loops = {
        "closed": mean_over_seeds(closed, topology).xs(1, level="flows"),
        "open": mean_over_seeds(opened, topology).xs(1, level="flows"),
    }
    lines = [
        f"Table {name}: 1 TFRC flow, high uniform wireless loss (7.8 %), mean over seeds, in %. closed: each "
        "LDA steers its own TFRC receiver inside ns-2 (paper 000 §II), throughput measured as a share of the "
        "bottleneck; open: every LDA replayed over the unaware run's trace, throughput modeled (a share of the "
        "packet-pair capacity, as `score` shows it) and congestion that of the unaware run; paper: Table "
        f"{name.split(',')[0]} (its TFRC column under unaware).",
        "",
        "| | " + " | ".join(LDAS) + " |",
        "|---|" + "---:|" * len(LDAS),
    ]
    paper = PAPER_TABLES[topology]
    for metric, label in (("thput", "thput"), ("congestion_rate", "cong."), ("M_c", "M_c"), ("M_w", "M_w")):
        for loop, stats in loops.items():
            cells = [stats.loc[lda, (metric, "mean")] * 100 if lda in stats.index else np.nan for lda in LDAS]
            lines.append(f"| {label} ({loop}) | " + " | ".join(number(c, 1) for c in cells) + " |")
        lines.append(
            f"| {label} (paper) | "
            + " | ".join(f"{paper[label][lda]:g}" if lda in paper[label] else "-" for lda in LDAS)
            + " |"
        )
    return "\n".join(lines) + "\n"


def model_error_table(both: pd.DataFrame) -> str:
    """The open-loop models' errors against the closed loop (:func:`model_errors` of
    :func:`model_vs_truth`'s frame), overall and per topology and number of flows, in points."""
    errors = model_errors(both)
    lines = [
        "Open-loop modeled TFRC throughput (replay over ns-2's own TFRC trace, fed each LDA's decisions) "
        "against the throughput each LDA's closed-loop run measured, over every scenario and LDA; errors "
        "in points of the bottleneck share, Spearman over the LDAs of each scenario.",
        "",
        "| model | TFRC's X_recv | normalised by | median abs. error | 90th pct abs. error | Spearman (median) "
        f"| scenarios | Spearman where the LDAs differ by > {SPREAD:.0%} | scenarios |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in errors.itertuples():
        lines.append(
            f"| {r.model} | {r.X_recv} | {r._3} | {r.median_abs_error:.1f} | {r.p90_abs_error:.1f} | "
            f"{r.spearman_median:.2f} | {r.scenarios} | {r.spearman_differ:.2f} | {r.scenarios_differ} |"
        )
    per = both.groupby(["topology", "flows"])[[f"error_{name}" for name in MODEL_NAMES]].agg(lambda e: e.abs().median())
    lines += [
        "",
        "Median abs. error per topology and number of flows (points):",
        "",
        "| topology | flows | " + " | ".join(MODEL_NAMES) + " |",
        "|---|---:|" + "---:|" * len(MODEL_NAMES),
    ]
    lines += [f"| {t} | {n} | " + " | ".join(f"{v:.1f}" for v in row) + " |" for (t, n), row in per.iterrows()]
    return "\n".join(lines) + "\n"
