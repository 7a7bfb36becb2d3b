"""Score tables laid out like paper 000 Table II: one row per metric, one column per LDA.

One block per group of the score table (a trace's flow, a trace, or everything pooled), as
plain text for terminals or as Markdown for reports and CI summaries.
"""

from __future__ import annotations

import pandas as pd

from ..consensus import BASELINES
from ..formatting import MISSING, number, percent

KEYS = ("trace", "flow")

# (row label, column, kind): kind "count", "pct" (fraction shown in %), "ratio", "ci" (prefix)
ROWS = (
    ("losses", "losses", "count"),
    ("  undetected", "undetected", "count"),
    ("  abstained", "abstained", "count"),
    ("  unknown cause", "unknown", "count"),
    ("  route", "route", "count"),
    ("  policing", "policing", "count"),
    ("  scored", "scored", "count"),
    ("    congestion", "congestion", "count"),
    ("    wireless", "wireless", "count"),
    ("M_c %", "M_c", "pct"),
    ("  95% CI", "M_c", "ci"),
    ("M_w %", "M_w", "pct"),
    ("  95% CI", "M_w", "ci"),
    ("accuracy %", "accuracy", "pct"),
    ("  95% CI", "accuracy", "ci"),
    ("accuracy ratio", "accuracy_ratio", "ratio"),
    # paper 001 Table I: shares of all scored losses (not conditional rates), by decision and cause
    ("called C, was C % of scored", "CC", "pct"),
    ("called C, was W % of scored", "CW", "pct"),
    ("called W, was C % of scored", "WC", "pct"),
    ("called W, was W % of scored", "WW", "pct"),
    ("M_p % (policer drops called W)", "M_p", "pct"),
    # what each LDA said, whatever the truth: the view of a trace without ground truth
    ("called", "called", "count"),
    ("called W %", "wireless_share", "pct"),
    ("  95% CI", "wireless_share", "ci"),
    ("called policing %", "policing_share", "pct"),
    ("agrees w/ others %", "agrees_with_others", "pct"),
    ("mean kappa w/ others", "mean_kappa", "ratio"),
    ("thput %", "thput", "pct"),
    ("  vs omniscient", "vs_omniscient", "ratio"),
    ("  vs unaware", "vs_unaware", "ratio"),
    ("fairness std %", "fairness_std", "pct"),
    ("Jain index", "jain", "ratio"),
)
#: the throughput rows of a group of flows (by trace, pooled) say which mean they show: the
#: flows' thput averaged, and its ratio to the baseline's on the same flows (``scoring`` module
#: docstring; ``scoring.throughput.ratios_of_means`` says why not the mean of the flows' ratios)
GROUP_LABELS = {
    "thput": "thput % (mean over flows)",
    "vs_omniscient": "  vs omniscient (ratio of means)",
    "vs_unaware": "  vs unaware (ratio of means)",
}
#: pooled over traces, the fairness of each trace's flows is averaged
POOLED_LABELS = {"fairness_std": "fairness std % (mean over traces)", "jain": "Jain index (mean over traces)"}
#: rows shown only when the scores carry them (a controller replay, the LDAs' agreement joined)
OPTIONAL = ("thput", "vs_omniscient", "vs_unaware", "fairness_std", "jain", "agrees_with_others", "mean_kappa")
#: rows shown only where the group has policer drops
POLICING_ROWS = ("policing", "M_p")
#: rows of what the truth says, left out of a block without any
TRUTH = ("scored", "congestion", "wireless", "M_c", "M_w", "accuracy", "accuracy_ratio", "CC", "CW", "WC", "WW")
IGNORED_MARK = " †"
IGNORED_NOTE = (
    "† above the omniscient receiver's while calling congestion losses wireless (M_c > 0): that "
    "throughput rests on ignored congestion; closed loop such a sender fills the queue and loses more "
    "(docs/controllers.md)"
)
SHARE_MARK = " ‡"
SHARE_NOTE = (
    "‡ several flows of one trace, each normalised by its own packet-pair capacity: if they share a "
    "bottleneck, that is the link's capacity, not a flow's share, and the model is outside where it "
    "was validated against the closed loop (docs/paper000/model_grid.md); --capacity sets a flow's share"
)


def _cell(row: pd.Series, column: str, kind: str) -> str:
    if kind == "ci":
        for lo, hi in ((f"{column}_boot_lo", f"{column}_boot_hi"), (f"{column}_lo", f"{column}_hi")):
            if lo in row.index:
                a, b = row[lo], row[hi]
                return MISSING if pd.isna(a) else f"{number(a * 100, 1)}–{number(b * 100, 1)}"
        return ""
    value = row.get(column)
    if pd.isna(value):
        return MISSING
    if kind == "count":
        return f"{int(value)}"
    if kind == "pct":
        flag = IGNORED_MARK if column == "thput" and bool(row.get("ignored_congestion", False)) else ""
        return number(value * 100, 1) + flag
    return number(round(value, 2) + 0.0, 2)  # a value that rounds to zero shows as 0.00, never -0.00


def _ci_label(scores: pd.DataFrame) -> str:
    if "M_c_boot_lo" in scores.columns:
        return "  95% CI (bursts)"
    if "M_c_lo" in scores.columns:
        return "  95% CI (Wilson)"
    return ""


def blocks(scores: pd.DataFrame):
    """(title, DataFrame rows × LDAs, footnote) per group."""
    keys = [k for k in KEYS if k in scores.columns]
    groups = scores.groupby(keys, sort=False) if keys else [((), scores)]
    ci_label = _ci_label(scores)
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        parts = [f"{k} {v}" for k, v in zip(keys, key) if v != ""]
        title = ", ".join(parts) or "all traces pooled"
        first = group.iloc[0]
        if "flows_scored" in group.columns and first["flows_scored"]:
            title += f", flows scored: {first['flows_scored']}"
        unknown = int(first["unknown"]) if "unknown" in group.columns else 0
        uncalled = int(first.get("undetected", 0)) + int(first.get("abstained", 0))
        truthless = bool(unknown) and unknown == int(first["losses"]) - uncalled
        if truthless:
            title += (
                f" (no ground truth: the cause of each of its {unknown} losses is unknown, so what each LDA "
                "called is shown, not scored; --labels or a --vantage chain give the truth"
                + (
                    "; agreeing with the other LDAs is no sign of being right: LDAs of one family share their "
                    "blind spots)"
                    if "agrees_with_others" in group.columns
                    else ")"
                )
            )
        elif "congestion_rate" in group.columns and not pd.isna(first["congestion_rate"]):
            weak = "weak_labels" in group.columns and int(first["weak_labels"]) > 0
            title += (
                f" ({'labelled' if weak else 'true'} loss rates of the flows scored: congestion "
                f"{percent(first['congestion_rate'], 2)}, wireless {percent(first['wireless_rate'], 2)}"
                + (f"; {unknown} losses of unknown cause left out)" if unknown else ")")
            )
        if "weak_labels" in group.columns and int(first["weak_labels"]) > 0:
            title += (
                f" (WEAK LABELS: the causes of {int(first['weak_labels'])} losses come from rules, not "
                "per-packet truth; the scores are only as good as the rules)"
            )
        if "route_as" in group.columns and first["route"] > 0:
            mapping = first["route_as"]
            title += (
                " (route losses left out of M_c/M_w)"
                if mapping == "excluded"
                else f" (route losses scored as {mapping})"
            )
        if "policing_as" in group.columns and first.get("policing", 0) > 0:
            mapping = first["policing_as"]
            title += (
                " (policer drops left out of M_c/M_w; M_p: the share of them called wireless)"
                if mapping == "excluded"
                else f" (policer drops scored as {mapping}; M_p: the share of them called wireless)"
            )
        if "flows" in group.columns:
            title += f" (metrics averaged over {int(first['flows'])} flows)"
        if "controller" in group.columns:
            title += f" (thput: the modeled throughput of {first['controller']}, open-loop replay)"
        named = {} if "flow" in keys else GROUP_LABELS | ({} if keys else POOLED_LABELS)
        rows = [
            (named.get(column, label) if kind != "ci" else ci_label, column, kind)
            for label, column, kind in ROWS
            if (kind != "ci" or ci_label)
            and (column not in OPTIONAL or column in group.columns)
            and not (truthless and column in TRUTH)
            and not (column in POLICING_ROWS and not int(first.get("policing", 0)))
            and not (column == "policing_share" and not group.get("called_policing", pd.Series([0])).any())
            and not (column == "abstained" and not group.get("abstained", pd.Series([0])).any())
        ]
        unsure = "share_unknown" in group.columns and bool(group["share_unknown"].fillna(False).any())
        if unsure:  # the whole block's flows are outside the model's validated range: its thput row is marked
            rows = [(label + SHARE_MARK if column == "thput" else label, column, kind) for label, column, kind in rows]
        body = {
            str(row["lda"]): [_cell(row, column, kind) for _, column, kind in rows]
            for _, row in group.iterrows()
            if not (truthless and str(row["lda"]) in BASELINES)  # without truth their calls say nothing
        }
        flagged = "ignored_congestion" in group.columns and bool(group["ignored_congestion"].fillna(False).any())
        notes = [note for note, shown in ((IGNORED_NOTE, flagged), (SHARE_NOTE, unsure)) if shown]
        yield title, pd.DataFrame(body, index=[label for label, _, _ in rows]), "\n".join(notes)


def text_table(scores: pd.DataFrame) -> str:
    """Aligned text blocks, one per group."""
    out = []
    for title, block, note in blocks(scores):
        out.append(title)
        out.append(block.to_string())
        if note:
            out.append(note)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def markdown_table(scores: pd.DataFrame) -> str:
    """Markdown: a heading and a pipe table per group."""
    out = []
    for title, block, note in blocks(scores):
        out.append(f"#### {title}")
        out.append("")
        out.append("| metric | " + " | ".join(block.columns) + " |")
        out.append("|---|" + "---:|" * len(block.columns))
        for label, values in block.iterrows():
            label = label.strip().replace("|", "\\|")  # a | would split the cell
            out.append(f"| {label} | " + " | ".join(values) + " |")
        out.append("")
        if note:
            out += [note, ""]
    return "\n".join(out)
