"""The README of a ``reproduce`` run: how the numbers were made, and per traffic the tables,
figures and the paper's statements with whether each holds; the closed loop's section."""

from __future__ import annotations

import pathlib

import pandas as pd

from .suite import SPIKE_SPREAD, SWEEPS, TRAFFIC_NAMES, Suite


def _tfrc_extras(suite: Suite) -> list[str]:
    """What only the TFRC traffic has: Table VI and the sweeps, with the grids swept."""
    grids = "; ".join(
        f"{lda}: " + ", ".join(f"{p} {min(v):.3g}-{max(v):.3g} ({len(v)} values)" for p, v in g.items())
        for lda, g in SWEEPS.items()
    )
    return [
        f"Table VI (`table_VI_wlh.md`): one run of {suite.scale} TFRC flows in WLH, high uniform loss, "
        f"{suite.duration} s.",
        "",
        f"Sweeps (`sweep_*.csv`), pooled over this traffic's traces at high uniform loss (every N and seed) "
        f"per topology, as §III swept: {grids}; Spike's points with alpha - beta above {SPIKE_SPREAD} left out. "
        "The star is the paper's default.",
        "",
        "![sweeps in WLH](figure_sweeps_wlh.png)",
        "",
        "![sweeps in WB](figure_sweeps_wb.png)",
        "",
    ]


def readme(suite: Suite, name: str, results, checks: pd.DataFrame, made: str, headline: str) -> str:
    """The README: its headline (``headline``: Tables II and III cell by cell against the paper's),
    the suite, how its numbers were ``made``, then per traffic its tables, figures and the
    registry's statements (``checks``, :func:`..statements.judge`) with whether each holds."""
    sections = []
    for traffic in suite.traffics:
        mine = checks[checks["traffic"] == traffic]
        suffix = "" if traffic == "tfrc" else f"_{traffic}"
        holds = int((mine["holds"] == "yes").sum())
        untestable = int((mine["holds"] == "untestable").sum())
        sections += [
            f"## {TRAFFIC_NAMES[traffic]}",
            "",
            f"Tables: `table_II_wlh{suffix}.md`, `table_III_wb{suffix}.md`.",
            "",
            f"![WLH](figure_wlh{suffix}.png)",
            "",
            f"![WB](figure_wb{suffix}.png)",
            "",
            f"![ZBS scheme usage](figure_13_zbs{suffix}.png)",
            "",
            *(_tfrc_extras(suite) if traffic == "tfrc" else []),
            f"The paper's statements (the registry, `ldanalyze/reproduce/paper000_statements.toml`, each word's "
            f"test defined there) on these numbers: {holds} of {len(mine)} hold, {untestable} cannot be tested.",
            "",
            "| id | statement | where | paper | holds | numbers |",
            "|---|---|---|---|---|---|",
            *[
                f"| {r.id} | {r.statement} | {r.where} | {r.paper} | {_verdict(r.holds)} | {r.evidence} |"
                for r in mine.itertuples()
            ],
            "",
        ]
    return "\n".join(
        [
            "# Paper 000, reproduced by `ldanalyze reproduce paper000`",
            "",
            headline,
            "",
            f"Suite `{name}`: topologies {', '.join(suite.topologies)}; {', '.join(map(str, suite.flows))} flows of "
            f"{', '.join(TRAFFIC_NAMES[t] for t in suite.traffics)}; wireless loss "
            f"{', '.join(f'{m} {r:g}' for m, r in suite.losses)}; seeds {', '.join(map(str, suite.seeds))}; "
            f"{suite.duration} s after a {suite.warmup} s warm-up. {made}",
            "",
            "Scores: every LDA replayed causally over each trace with the default replay semantics "
            "(`docs/ldas.md`); M_c, M_w and accuracy pooled per trace, then averaged over seeds. Throughput: TFRC "
            "replayed open loop, fed each LDA's decisions on the trace's arrivals, as a share of the bottleneck "
            "(`docs/controllers.md`). The traces were recorded with ns-2's own senders (unaware TFRC, TCP, or "
            "constant-rate UDP), so the queue dynamics are theirs, not those of a closed-loop LDA sender as in the "
            "paper. The constant-rate traffic is the one whose timing does not depend on the losses being judged, "
            "and at 110 % of its share it keeps the queue busy, as the paper's LDA senders did.",
            "",
            *sections,
            "Where a statement does not hold, the reasons to look at first are the open-loop replay over traces "
            "recorded by other senders (the paper's LDA senders pushed their queues differently), the loss model "
            "(independent per-packet loss here, Jakes-model error traces there), ns-2's TFRC version, and our "
            "readings of rules the paper leaves open (`docs/ldas.md`).",
            "",
        ]
    )


def _verdict(holds: str) -> str:
    return "**no**" if holds == "no" else holds


def _receiver(closed: pd.DataFrame) -> str:
    """Which reading of §IV the receivers ran (``closed_loop.csv``'s ``wireless_as_received``;
    a run older than the option ran the default)."""
    faithful = closed.get("wireless_as_received", pd.Series(0, index=closed.index)).fillna(0).astype(int)
    if faithful.all():
        return (
            "A loss called wireless also counted as received in TFRC's receive rate X_recv (§IV, \"in the same "
            'way as received packets"; `--wireless-as-received`).'
        )
    if not faithful.any():
        return (
            "TFRC's receive rate X_recv counted the packets that arrived only, as ns-2's receiver does (the "
            "default; `--wireless-as-received` counts a loss called wireless there too)."
        )
    return "The runs mix both receivers (`wireless_as_received` in `closed_loop.csv`)."


def closed_section(loop: dict) -> str:
    """The README's closed-loop section: its tables and figures, the in-simulator decisions against
    the replay, the statements open and closed loop, the throughput models' errors, and (if made)
    the page of both receivers, ``receiver.md``."""
    checks = loop["checks"]
    counts = {
        side: f"{int((checks[f'holds_{side}'] == 'yes').sum())} hold, {int((checks[f'holds_{side}'] == 'no').sum())} "
        f"do not, {int((checks[f'holds_{side}'] == 'untestable').sum())} cannot be tested"
        for side in ("open", "closed")
    }
    return "\n".join(
        [
            "## Closed loop: each LDA inside ns-2's TFRC receiver",
            "",
            f"Every TFRC scenario above was run again once per LDA ({loop['runs']} runs), with every TFRC receiver "
            "steered by that LDA (paper 000 §I and §IV: a loss it calls wireless stays out of the loss event rate; the "
            f"patched ns-2 of `ldanalyze/data/ns2`). {_receiver(loop['closed'])} Scores and throughput are over the "
            "TFRC flows only; throughput is measured (what crossed the bottleneck) as a share of each flow's fair "
            "share of the bottleneck. The open-loop numbers beside them are every LDA replayed over the unaware "
            "run, which is ns-2's own TFRC.",
            "",
            "Tables: `table_II_wlh_closed.md`, `table_III_wb_closed.md`; all numbers: `closed_loop.csv`.",
            "",
            "![WLH closed loop](figure_wlh_closed.png)",
            "",
            "![WB closed loop](figure_wb_closed.png)",
            "",
            f"The in-simulator decisions against the offline replay of each run's trace (every LDA the receiver "
            f"runs): {loop['crosscheck'][0]:,} of {loop['crosscheck'][1]:,} alike.",
            "",
            f"The paper's {len(checks)} statements (the registry, each judged both ways; open: the TFRC suite above): "
            f"open loop {counts['open']}; closed loop {counts['closed']}.",
            "",
            "| id | statement | where | paper | open | closed | numbers open | numbers closed | why |",
            "|---|---|---|---|---|---|---|---|---|",
            *[
                f"| {r.id} | {r.statement} | {r.where} | {r.paper} | {_verdict(r.holds_open)} | "
                f"{_verdict(r.holds_closed)} | {r.evidence_open} | {r.evidence_closed} | {r.why} |"
                for r in checks.itertuples()
            ],
            "",
            "### The modeled throughput against the closed loop (`model_vs_truth.csv`)",
            "",
            (pathlib.Path(loop["written"]["model_error.md"]).read_text()),
            "",
            *([loop["receiver"], ""] if loop.get("receiver") else []),
        ]
    )
