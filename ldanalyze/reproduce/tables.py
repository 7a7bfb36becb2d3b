"""Paper 000's tables in markdown: Tables II and III (one flow) open loop, Table VI (128 flows)
beside the paper's, Tables II and III closed loop beside the open loop and the paper (and with
each of the closed loop's two receivers), and the open-loop throughput models' errors against
the closed loop."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..formatting import number
from . import model_grid, registry
from .closed_suite import MODEL_NAMES, SPREAD, model_errors
from .suite import CELL_LOSSES, HIGH, LDAS, TRAFFIC_NAMES, mean_over_seeds

TABLE_VI_LDAS = ("omniscient", "biaz", "mbiaz", "spike", "zigzag", "zbs")
TABLE_NAMES = {"wlh": "II, wireless last hop", "wb": "III, wireless backbone"}


def one_flow_table(results: pd.DataFrame, topology: str, traffic: str = "tfrc") -> str:
    """Paper 000 Table II/III: one flow, high loss, in %: modeled throughput, M_c, M_w per LDA."""
    stats = mean_over_seeds(results, topology).xs(1, level="flows")
    name = TABLE_NAMES[topology]
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
        paper = registry.paper_table("vi")[metric]
        lines.append(f"| {metric} (paper) | " + " | ".join(f"{paper[lda]:g}" for lda in TABLE_VI_LDAS) + " |")
    return "\n".join(lines) + "\n"


def closed_table(opened: pd.DataFrame, closed: pd.DataFrame, topology: str) -> str:
    """Tables II/III three ways: the closed loop (each LDA's own run), the open-loop replay over
    the unaware run, and the paper, in %."""
    name = TABLE_NAMES[topology]
    caption = (
        f"Table {name}: 1 TFRC flow, high uniform wireless loss (7.8 %), mean over seeds, in %. closed: each "
        "LDA steers its own TFRC receiver inside ns-2 (paper 000 §I, §IV), throughput measured as a share of the "
        "bottleneck; open: every LDA replayed over the unaware run's trace, throughput modeled (a share of the "
        "packet-pair capacity, as `score` shows it) and congestion that of the unaware run; paper: Table "
        f"{name.split(',')[0]} (its TFRC column under unaware)."
    )
    return beside_the_paper(caption, {"closed": closed, "open": opened}, topology)


def beside_the_paper(caption: str, loops: dict[str, pd.DataFrame], topology: str, loss=HIGH) -> str:
    """Table II/III (one flow, ``loss``, mean over seeds, in %): per row thput, cong., M_c and M_w,
    one line per loop of ``loops`` (name: one row per trace and LDA), then the paper's."""
    means = {name: mean_over_seeds(frame, topology, loss).xs(1, level="flows") for name, frame in loops.items()}
    lines = [caption, "", "| | " + " | ".join(LDAS) + " |", "|---|" + "---:|" * len(LDAS)]
    paper = registry.paper_table(topology)
    for metric, label in (("thput", "thput"), ("congestion_rate", "cong."), ("M_c", "M_c"), ("M_w", "M_w")):
        for loop, stats in means.items():
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
        "in points of the bottleneck share, Spearman over the LDAs of each scenario. These are RFC 5348's TFRC "
        "(t_RTO = 4R); the one `score` uses by default was chosen on a grid built to make the LDAs differ, "
        "and is judged there (`model_grid.md`).",
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


# the rows of paper 000 Tables II and III and the results' column each is read from
CELL_ROWS = {"thput": "thput", "cong.": "congestion_rate", "M_c": "M_c", "M_w": "M_w"}
CELL_TABLES = {"wlh": "II", "wb": "III"}
WITHIN = 5.0  # points: a cell "within" the paper's


def table_cells(loops: dict[str, pd.DataFrame], loss: tuple[str, float] = HIGH) -> pd.DataFrame:
    """Paper 000 Tables II and III cell by cell (one TFRC flow, §VI-A's high wireless loss 7.8 %
    by default): per table, row and column, the paper's value (``registry``), whether it is a
    priori (TCP, TFRC and omniscient's M_c and M_w, §IV) and, per loop of ``loops`` (name: one row
    per trace and LDA), the reproduction's mean over seeds and its gap to the paper, in points.
    The TCP column has no reproduction (the suite runs no TCP sender beside the LDAs')."""
    means = {
        (name, topology): mean_over_seeds(frame, topology, loss).xs(1, level="flows")
        for name, frame in loops.items()
        for topology in CELL_TABLES
    }
    rows = []
    for topology, table in CELL_TABLES.items():
        for metric, columns in registry.paper_table(topology).items():
            for column, paper in columns.items():
                row = {"table": table, "row": metric, "column": column, "paper": float(paper)}
                row["a_priori"] = registry.a_priori(metric, column)
                for name in loops:
                    stats = means[(name, topology)]
                    ours = stats.loc[column, (CELL_ROWS[metric], "mean")] * 100 if column in stats.index else np.nan
                    row[name], row[f"gap_{name}"] = ours, ours - paper
                rows.append(row)
    return pd.DataFrame(rows)


def cell_summary(cells: pd.DataFrame, loop: str) -> dict:
    """How many of the paper's measured cells (not a priori, with a reproduction) ``loop`` puts
    within ``WITHIN`` points of the paper's; those whose value is undefined here (M_c with no
    congestion loss) count, as not within. The gaps, largest first."""
    counted = cells[~cells["a_priori"] & (cells["column"] != "tcp")]
    gaps = counted[f"gap_{loop}"]
    within = int((gaps.abs() <= WITHIN).sum())
    order = counted[gaps.notna()].assign(size=gaps.abs()).sort_values("size", ascending=False, kind="stable")
    return {"within": within, "cells": len(counted), "undefined": counted[gaps.isna()], "largest": order}


def _gap(r, loop: str) -> str:
    return f"Table {r.table} {r.row} {r.column} {getattr(r, loop):.1f} against {r.paper:g} ({getattr(r, f'gap_{loop}'):+.1f})"


def cells_headline(cells: pd.DataFrame, loops: tuple[str, ...], shown: int = 3) -> str:
    """The README's headline: per loop, how many of the paper's measured cells of Tables II and
    III are within 5 points, and the largest gaps named, their numbers as they are."""
    parts = []
    for loop in loops:
        s = cell_summary(cells, loop)
        largest = "; ".join(_gap(r, loop) for r in s["largest"].head(shown).itertuples())
        undefined = s["undefined"]
        where = ", ".join(f"Table {r.table} {r.row} {r.column}" for r in undefined.itertuples())
        parts.append(
            f"{loop} loop: **{s['within']} of {s['cells']} cells within {WITHIN:g} points**"
            + (f" ({len(undefined)} undefined here, counted as not within: {where})" if len(undefined) else "")
            + f"; largest gaps: {largest}"
        )
    return "\n".join(f"- {p}" for p in parts)


def cells_table(cells: pd.DataFrame, loops: tuple[str, ...], loss: tuple[str, float] = HIGH) -> str:
    """Tables II and III cell by cell in markdown: the paper's value, each loop's and its gap in
    points (two decimals: no gap rounded away), and why a cell is not counted."""
    lines = [
        f"Paper 000 Tables II (wireless last hop) and III (wireless backbone) cell by cell: one TFRC flow, "
        f"{loss[0]} wireless loss {loss[1] * 100:g} % (§VI-A's high loss), mean over seeds, in %; gap = ours − paper, "
        f"in points. Counted: the cells the paper measured that the suite reproduces; not counted: TCP, TFRC and "
        f"omniscient's M_c and M_w (a priori, §IV) and the TCP column (no TCP sender in the suite).",
        "",
        "| table | row | column | paper | " + " | ".join(f"{loop} | gap {loop}" for loop in loops) + " | counted |",
        "|---|---|---|---:|" + "---:|---:|" * len(loops) + "---|",
    ]
    for r in cells.itertuples():
        counted = "a priori" if r.a_priori else "no TCP run" if r.column == "tcp" else "yes"
        values = " | ".join(f"{number(getattr(r, loop), 1)} | {number(getattr(r, f'gap_{loop}'), 2)}" for loop in loops)
        lines.append(f"| {r.table} | {r.row} | {r.column} | {r.paper:g} | {values} | {counted} |")
    return "\n".join(lines) + "\n"


# the closed loop's two receivers (``closed_loop.csv``'s ``wireless_as_received``), as the tables name them
RECEIVERS = {"ns2": "X_recv counts arrivals (ns-2, the default)", "iv": "X_recv counts wireless calls too (§IV)"}


def receiver_page(default: pd.DataFrame, faithful: pd.DataFrame, made: str) -> str:
    """The closed loop's Tables II and III with each receiver (``default``: X_recv counts the
    packets that arrived; ``faithful``: a loss called wireless counts as received too, paper 000
    §IV) beside the paper's, per loss model of ``CELL_LOSSES`` present, with the count of cells
    within ``WITHIN`` points each way; ``made``: how the runs were made."""
    loops = {"ns2": default, "iv": faithful}
    score = {loop: [0, 0.0] for loop in loops}  # cells within, summed |gap|, over the loss models
    sections = []
    for loss in CELL_LOSSES:
        if not ((default["loss"] == loss[0]) & (default["rate"] == loss[1])).any():
            continue
        cells = table_cells(loops, loss)
        counted = cells[~cells["a_priori"] & (cells["column"] != "tcp")]
        total = {loop: counted[f"gap_{loop}"].abs().sum() for loop in loops}
        for loop in loops:
            score[loop][0] += cell_summary(cells, loop)["within"]
            score[loop][1] += total[loop]
        sections += [
            f"{loss[0].capitalize()} wireless loss {loss[1] * 100:g} %:",
            "",
            cells_headline(cells, ("ns2", "iv")),
            f"- the counted cells' gaps added up (absolute, points): ns2 {total['ns2']:.1f}, iv {total['iv']:.1f}",
            "",
        ]
        if loss == HIGH:
            mbiaz = counted[(counted["table"] == "III") & (counted["row"] == "thput") & (counted["column"] == "mbiaz")]
            sections[-1:-1] = [
                "- mBiaz's throughput in WB (Table III, the issue's question): "
                + ", ".join(f"{loop} {mbiaz[loop].iloc[0]:.1f} %" for loop in loops)
                + f", the paper's {mbiaz['paper'].iloc[0]:g} %"
            ]
        for topology in CELL_TABLES:
            caption = f"Table {TABLE_NAMES[topology]}, closed loop, {loss[0]} loss {loss[1] * 100:g} %, in %:"
            sections += [beside_the_paper(caption, loops, topology, loss), ""]
    best = min(loops, key=lambda loop: (-score[loop][0], score[loop][1]))
    lines = [
        "### The receiver of §IV both ways (`receiver.md`)",
        "",
        'Paper 000 §IV: "we treat all lost packets classified as wireless error in the same way as received '
        'packets". Both receivers keep a loss the LDA calls wireless out of the loss event rate (§I); they differ '
        f"in TFRC's receive rate X_recv (2·X_recv caps the sender; it seeds the first loss interval): "
        f"`ns2`: {RECEIVERS['ns2']}; `iv`: {RECEIVERS['iv']} (`--wireless-as-received`). {made}",
        "",
        f"Over these loss models, the reading closer to the paper (more cells within {WITHIN:g} points, then the "
        f"smaller summed gap) is **{best}**: "
        + "; ".join(
            f"{loop} {within} cells within, gaps adding up to {gap:.1f} points" for loop, (within, gap) in score.items()
        )
        + ".",
        "",
        *sections,
    ]
    return "\n".join(lines)


def _scores_row(label: str, s) -> str:
    return (
        f"| {label} | {number(s.median_abs_error, 1)} | {number(s.p90_abs_error, 1)} | "
        f"{number(s.spearman_median, 2) if np.isfinite(s.spearman_median) else '–'} | {s.rows} | {s.scenarios} |"
    )


def model_grid_page(frame: pd.DataFrame, made: str) -> str:
    """``docs/paper000/model_grid.md``: the grid (``model_grid``), the candidates on the choosing
    seeds, the winner and its baselines on the held-out seeds against the issue's targets, and
    where it misses, split into what the replay gets wrong on the LDA's own trace and what the
    LDA's decisions change once they steer the sender (``model_grid.breakdown``)."""
    mg = model_grid
    winner, chosen = mg.choose(frame)
    held = mg.held_out(frame, winner)
    differ = held[held["scope"] == "LDAs differ"].set_index("model")
    model, constant = differ.loc[winner], differ.loc[mg.CONSTANT]
    equal, total = int(frame["decisions_equal"].sum()), int(frame["decisions"].sum())
    choosing, held_seeds = (" and ".join(map(str, seeds)) for seeds in (mg.CHOOSE_SEEDS, mg.HELD_OUT_SEEDS))
    levels = "; ".join(
        f"{name}: {', '.join(str(v) if not isinstance(v, tuple) else f'{v[0]} {v[1]:g}' for v in values)}"
        for name, values in mg.FACTORS.items()
    )
    head = (
        "| model | median abs. error | 90th pct abs. error | Spearman (median over scenarios) | rows | scenario-seeds |"
    )
    rule = "|---|---:|---:|---:|---:|---:|"
    targets = [
        ("Spearman (median over scenarios) ≥ 0.8", model.spearman_median >= 0.8, number(model.spearman_median, 2)),
        ("median abs. error ≤ 5 points", model.median_abs_error <= 5, number(model.median_abs_error, 1)),
        (
            f"90th pct abs. error below the constant's ({number(constant.p90_abs_error, 1)})",
            model.p90_abs_error < constant.p90_abs_error,
            number(model.p90_abs_error, 1),
        ),
    ]
    lines = [
        "# The throughput model where the LDAs differ (issue #46 §3)",
        "",
        "Open loop, `score` models each LDA's TFRC throughput by replaying TFRC over one trace, fed "
        "the LDA's decisions. Here that model is held to the closed loop on a grid built to make the "
        "LDAs differ (`ldanalyze/reproduce/model_grid.py`), chosen among the candidates on two seeds' "
        "runs and reported on two others'. Errors are in points of the flow's fair share of the "
        "bottleneck; Spearman ranks the LDAs of one scenario.",
        "",
        f"- **The grid.** {mg.SCENARIOS} draws, each factor's levels spread evenly ({levels}); one flow "
        f"beside TCP runs alone, and repeated draws are left out: "
        f"{frame.drop(columns='seed').groupby([k for k in mg.KEYS if k != 'seed']).ngroups} "
        f"scenarios, each with seeds {choosing} (choosing) and {held_seeds} (held out), "
        f"{mg.DURATION} s after a {mg.WARMUP} s warm-up, closed loop once per LDA ({', '.join(LDAS)}): {made}.",
        f"- **The receivers' decisions** and the offline replay's are alike on {equal:,} of {total:,}.",
        f"- **LDAs differ** (closed-loop throughputs spanning more than {mg.DIFFER * 100:g} points) in "
        f"{mg.differing(frame[frame['seed'].isin(mg.CHOOSE_SEEDS)]).groupby(mg.KEYS).ngroups} scenario-seeds "
        f"of the choosing seeds and {int(differ.loc[winner, 'scenarios'])} of the held-out ones.",
        "- **Seed 2 was looked at.** It was the held-out seed of a first round with seed 1 choosing "
        "among the candidates without `left`; the winner then missed the median target by 0.1 point, "
        "and its misses beside TCP led to the `left` normaliser. So seeds 1 and 2 now choose, and 3 "
        "and 4, simulated after, are held out.",
        "",
        f"## Chosen on seeds {choosing}: the scenarios whose LDAs differ",
        "",
        "Each candidate is the replay over the unaware run's trace (`model_grid.MODELS`: X_recv from the "
        "model or the trace, t_RTO of 4, 2.75 or 2 R, loss history discounted or not; `capacity`: capped "
        "at and divided by the packet-pair capacity, `share`: capped at and divided by the fair share, "
        "`left`: capped at what the traffic not under study (the TCP flow of `mix`) left each TFRC flow "
        "in that trace, divided by the fair share); the smallest "
        f"median error wins: **{winner}**.",
        "",
        head,
        rule,
        *(_scores_row(r.model, r) for r in chosen.itertuples()),
        "",
        f"## Reported on seeds {held_seeds}",
        "",
        f"Baselines: `{mg.CONSTANT}` predicts 100 %; `{mg.OWN}` replays the winner over each "
        "LDA's own closed-loop trace, whose timing its decisions produced: the best any replay can do.",
        "",
        "| scope " + head,
        "|---" + rule,
        *(f"| {r.scope} " + _scores_row(r.model, r) for r in held.itertuples()),
        "",
        "Targets (issue #46 §3, the held-out scenarios whose LDAs differ):",
        "",
        "| target | the model | met |",
        "|---|---:|---|",
        *(f"| {what} | {value} | {'yes' if ok else '**no**'} |" for what, ok, value in targets),
        "",
        "## Where it misses",
        "",
        "Median absolute error (points) on the held-out scenarios whose LDAs differ. Where the "
        "own-trace replay is close and the model is not, the LDA's decisions change once they steer "
        "the sender (a trace at another rate, other gaps and delays); where both are far, the replay "
        "itself departs from ns-2's TFRC.",
    ]
    for by in (["lda"], ["topology"], ["flows"], ["traffic"], ["loss", "rate"], ["shared_delay"]):
        table = mg.breakdown(frame, winner, by)
        lines += [
            "",
            f"| {' / '.join(by)} | scenario-seeds | {winner} | {mg.OWN} | {mg.CONSTANT} |",
            "|---|---:|---:|---:|---:|",
            *(
                f"| {' '.join(f'{r[k]:g}' if isinstance(r[k], float) else str(r[k]) for k in by)} | "
                f"{int(r['scenarios'])} | {number(r['model'], 1)} | "
                f"{number(r[mg.OWN], 1)} | {number(r[mg.CONSTANT], 1)} |"
                for _, r in table.iterrows()
            ),
        ]
    return "\n".join(lines) + "\n"
