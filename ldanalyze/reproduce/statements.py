"""Paper 000's statements checked on the suite's numbers: the orderings and trends of §VI, Table
VI's (§IX-B), the sweeps' (§III), and the throughput and congestion of Tables II and III, open
and closed loop side by side. Each row: the claim, where the paper says it, whether it holds
here ("untestable" when a number it needs is undefined) and the numbers it rests on."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..formatting import percent
from .suite import BASE, LDAS, SWEEPS, mean_over_seeds


def _verdict(holds: bool, values) -> str:
    """yes or no, or "untestable" when a number in ``values`` is undefined."""
    return ("yes" if holds else "no") if all(np.isfinite(v) for v in values) else "untestable"


def paper_checks(results: pd.DataFrame, usage: pd.DataFrame | None = None) -> pd.DataFrame:
    """The orderings and trends paper 000 §VI states that the suite can test, with whether each
    holds on these results and the numbers it rests on."""
    rows = []

    def check(claim: str, where: str, holds, evidence: str, values=()) -> None:
        """``holds`` is "untestable" when a number it needs is undefined here (no congestion
        loss, say): a statement is never taken as holding on missing numbers."""
        rows.append({"claim": claim, "paper": where, "holds": _verdict(holds, values), "evidence": evidence})

    wlh, wb = mean_over_seeds(results, "wlh"), mean_over_seeds(results, "wb")

    def value(stats, flows, lda, metric):
        try:
            return float(stats.loc[(flows, lda), (metric, "mean")])
        except KeyError:
            return float("nan")

    one = {lda: value(wlh, 1, lda, "M_c") for lda in BASE}
    check(
        "WLH, one flow: every base scheme keeps M_c near 0 (below 5 %)",
        "Table II",
        all(v < 0.05 for v in one.values()),
        ", ".join(f"{k} {percent(v)}" for k, v in one.items()),
        one.values(),
    )
    mw = {lda: value(wlh, 1, lda, "M_w") for lda in BASE}
    lowest = sorted(mw, key=lambda k: mw[k])[:2]
    check(
        "WLH, one flow: Biaz and mBiaz have the lowest M_w of the base schemes",
        "Table II",
        set(lowest) == {"biaz", "mbiaz"},
        ", ".join(f"{k} {percent(v)}" for k, v in mw.items()),
        mw.values(),
    )
    flows = sorted(wlh.index.get_level_values("flows").unique())
    biaz_mc = [value(wlh, n, "biaz", "M_c") for n in flows]
    known = [(n, v) for n, v in zip(flows, biaz_mc) if np.isfinite(v)]
    check(
        "WLH: Biaz's M_c rises with the number of flows (over the N where it is defined)",
        "§VI-C, Fig. 8",
        len(known) > 1
        and known[-1][1] > known[0][1]
        and pd.Series([v for _, v in known]).corr(pd.Series([n for n, _ in known]), method="spearman") > 0,
        ", ".join(f"N={n}: {percent(v)}" for n, v in zip(flows, biaz_mc)),
        [len(known) - 1.0 if len(known) > 1 else np.nan],
    )
    wb_flows = [n for n in sorted(wb.index.get_level_values("flows").unique()) if n >= 2]
    biaz_mw = [value(wb, n, "biaz", "M_w") for n in wb_flows]
    check(
        "WB, two flows or more: Biaz's M_w is near 100 % (above 90 %)",
        "§VI-C, Fig. 9",
        bool(wb_flows) and min(biaz_mw) > 0.9,
        ", ".join(f"N={n}: {percent(v)}" for n, v in zip(wb_flows, biaz_mw)),
        biaz_mw or [np.nan],
    )
    for topology, stats in (("WLH", wlh), ("WB", wb)):
        accuracy = stats.xs("accuracy", axis=1, level=0)["mean"].groupby(level="lda").mean()
        best = accuracy[list(BASE)].idxmax()
        check(
            f"{topology}: ZBS stays close to the best base scheme (accuracy within 10 points, mean over N)",
            "§VI-D, Figs. 11-12",
            accuracy["zbs"] >= accuracy[best] - 0.10,
            f"zbs {percent(accuracy['zbs'])}, best base {best} {percent(accuracy[best])}",
            [accuracy["zbs"], accuracy[best]],
        )
    if usage is not None:
        one = usage[usage["flows"] == 1].set_index("topology")
        shares = {t: float(one.loc[t, "mbiaz"]) if t in one.index else np.nan for t in ("wlh", "wb")}
        check(
            "One flow, both topologies: ZBS uses mBiaz more than 98 % of the time",
            "§VI-D, Fig. 13",
            all(v > 0.98 for v in shares.values()),
            ", ".join(f"{t.upper()} {percent(v)}" for t, v in shares.items()),
            shares.values(),
        )
    return pd.DataFrame(rows)


def scale_checks(scaled: pd.DataFrame, tfrc: pd.DataFrame, flows: int) -> pd.DataFrame:
    """Paper 000 §IX-B on Table VI: the schemes match their figures' values at 128 flows, except
    Spike, which does better (a lower M_c)."""
    rows = []
    big = mean_over_seeds(tfrc, "wlh")
    most = max(big.index.get_level_values("flows"))
    ours = scaled.set_index("lda")
    spike = (float(ours.loc["spike", "M_c"]), float(big.loc[(most, "spike"), ("M_c", "mean")]))
    rows.append(
        {
            "claim": f"WLH, {flows} flows: Spike's M_c is lower than with {most} flows",
            "paper": "§IX-B, Table VI",
            "holds": _verdict(spike[0] < spike[1], spike),
            "evidence": f"{flows} flows {percent(spike[0])}, {most} flows {percent(spike[1])}",
        }
    )
    moved = {
        lda: max(abs(float(ours.loc[lda, m]) - float(big.loc[(most, lda), (m, "mean")])) for m in ("M_c", "M_w"))
        for lda in ("biaz", "mbiaz", "zigzag", "zbs")
    }
    rows.append(
        {
            "claim": f"WLH, {flows} flows: the other schemes' M_c and M_w stay within 15 points of their "
            f"values with {most} flows",
            "paper": "§IX-B, Table VI",
            "holds": _verdict(max(moved.values()) <= 0.15, moved.values()),
            "evidence": ", ".join(f"{k} moved {v * 100:.1f}" for k, v in moved.items()),
        }
    )
    return pd.DataFrame(rows)


def sweep_checks(sweeps: dict) -> pd.DataFrame:
    """What paper 000 §III says of its sweeps: the defaults are good trade-offs in WLH (here: on
    the frontier), and mBiaz and Spike are insensitive to their parameters in WB."""
    rows = []
    for lda in SWEEPS:
        table = sweeps.get((lda, "wlh"))
        if table is None:
            continue
        default = table[table["default"]].iloc[0]
        values = [default["M_c"], default["M_w"]]
        names = table.attrs.get("params", [])
        params = ", ".join(f"{p}={default[p]:.3g}" for p in names)
        evidence = (
            f"default M_c {percent(default['M_c'])}, M_w {percent(default['M_w'])}; "
            f"{int(table['pareto'].sum())} of {len(table)} points on the frontier"
        )
        better = table[table["pareto"] & (table["M_c"] <= default["M_c"])].sort_values("M_w")
        if not default["pareto"] and len(better):  # the frontier point that beats it with no more M_c
            b = better.iloc[0]
            evidence += (
                f"; {', '.join(f'{p}={b[p]:.3g}' for p in names)} has M_c {percent(b['M_c'])}, M_w {percent(b['M_w'])}"
            )
        rows.append(
            {
                "claim": f"WLH: {lda}'s default ({params}) is on the M_c-M_w frontier of its sweep",
                "paper": {"mbiaz": "§III-A", "spike": "§III-B", "zigzag": "§III-C"}[lda],
                "holds": _verdict(bool(default["pareto"]), values),
                "evidence": evidence,
            }
        )
    for lda, limit, where in (("mbiaz", 0.10, "§III-A"), ("spike", 0.20, "§III-B")):
        table = sweeps.get((lda, "wb"))
        if table is None:
            continue
        spans = {m: float(table[m].max() - table[m].min()) for m in ("M_c", "M_w")}
        rows.append(
            {
                "claim": f"WB: {lda} is insensitive to its parameters (M_c and M_w each span under "
                f"{limit:.0%} over the sweep)",
                "paper": where,
                "holds": _verdict(max(spans.values()) < limit, spans.values()),
                "evidence": ", ".join(f"{m} spans {v * 100:.1f} points" for m, v in spans.items()),
            }
        )
    return pd.DataFrame(rows)


def loop_checks(opened: pd.DataFrame, closed: pd.DataFrame) -> pd.DataFrame:
    """Paper 000's statements checked on the open-loop and the closed-loop numbers side by side:
    those of :func:`paper_checks` and the throughput and congestion statements of Tables II and
    III, with a sentence on why a verdict moved."""
    both = {}
    for loop, frame in (("open", opened), ("closed", closed)):
        both[loop] = pd.concat([paper_checks(frame), throughput_checks(frame, loop)], ignore_index=True)
    merged = both["open"].merge(both["closed"], on=["claim", "paper"], suffixes=("_open", "_closed"))
    merged["why"] = [_why(r) for r in merged.itertuples()]
    return merged


def throughput_checks(results: pd.DataFrame, loop: str) -> pd.DataFrame:
    """The throughput and congestion statements of paper 000 Tables II and III (§VI-A, B), one
    flow at high loss. Congestion statements are untestable open loop, where every LDA is judged
    on the same trace and so has the same congestion."""
    rows = []
    wlh, wb = mean_over_seeds(results, "wlh"), mean_over_seeds(results, "wb")

    def value(stats, lda, metric):
        try:
            return float(stats.loc[(1, lda), (metric, "mean")])
        except KeyError:
            return float("nan")

    def check(claim, where, holds, evidence, values):
        rows.append({"claim": claim, "paper": where, "holds": _verdict(holds, values), "evidence": evidence})

    for topology, stats, paper in (("WLH", wlh, "Table II"), ("WB", wb, "Table III")):
        thput = {lda: value(stats, lda, "thput") for lda in LDAS}
        text = ", ".join(f"{k} {v:.0%}" for k, v in thput.items())
        schemes = ["omniscient", "biaz", "spike"] if topology == "WB" else ["omniscient", *BASE]
        check(
            f"{topology}, one flow: {', '.join(schemes)} use at least 90 % of the bottleneck",
            paper,
            all(thput[s] >= 0.9 for s in schemes),
            text,
            [thput[s] for s in schemes],
        )
        check(
            f"{topology}, one flow: unaware TFRC's throughput is below every LDA's",
            paper,
            all(thput["unaware"] < thput[s] for s in ("omniscient", *BASE)),
            text,
            thput.values(),
        )
    check(
        "WB, one flow: ZigZag's throughput is the lowest of the base schemes (paper: 53 against 91-99 %)",
        "Table III",
        value(wb, "zigzag", "thput") <= min(value(wb, s, "thput") for s in BASE),
        ", ".join(f"{s} {value(wb, s, 'thput'):.0%}" for s in BASE),
        [value(wb, s, "thput") for s in BASE],
    )
    cong = {lda: value(wlh, lda, "congestion_rate") for lda in LDAS}
    text = ", ".join(f"{k} {v:.2%}" for k, v in cong.items())
    less = max(cong["spike"], cong["zigzag"]) < min(cong["omniscient"], cong["biaz"], cong["mbiaz"])
    check(
        "WLH, one flow: Spike and ZigZag cause less congestion loss than omniscient, Biaz and mBiaz "
        "(paper: 0.3-0.4 against 2.3 %)",
        "Table II, §VI-A",
        less,
        text,
        cong.values() if loop == "closed" else [np.nan],
    )
    return pd.DataFrame(rows)


def _why(r) -> str:
    """A sentence on why a statement's verdict did or did not move between the loops."""
    if r.holds_open == "untestable" and r.holds_closed != "untestable":
        return (
            "open loop every LDA is judged on one trace, so its congestion is the same for all; "
            "only the closed loop tells the schemes' congestion apart"
        )
    if r.holds_open == r.holds_closed:
        return "the same verdict both ways"
    if "throughput" in r.claim or "bottleneck" in r.claim:
        return (
            "the throughput moved: closed loop each LDA's sender fills the queue its decisions allow, where "
            "the open-loop model replays rates over the unaware sender's timing and caps them at the "
            "packet-pair capacity of that trace"
        )
    return (
        "the decisions moved: closed loop each LDA's own sender shapes the queue, and so the delays and "
        "spacings the LDA judges; open loop they are the unaware sender's"
    )
