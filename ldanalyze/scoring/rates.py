"""The true loss rates of the scored flows, from a timeline summary (``congestion_rate``,
``wireless_rate``, ``weak_labels``), and the names of the flows each group pools
(``flows_scored``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..packets import CONGESTION, WIRELESS, natural_sorted
from .losses import Losses
from .metrics import ratio

SUMMARY_REQUIRED = ("flow", "sent", "unobserved", CONGESTION, WIRELESS)
SUMMARY_READ = (*SUMMARY_REQUIRED, "weak_labels")  # what scoring reads of a summary: the rest optional


def rate_columns(
    out: pd.DataFrame, group_codes: dict[str, np.ndarray], losses: Losses, summary: pd.DataFrame, by: str
) -> None:
    """congestion_rate and wireless_rate of the group's flows, from the timeline summary."""
    if not isinstance(summary, pd.DataFrame):
        raise UsageError(f"score: summary must be a DataFrame, not {type(summary).__name__}")
    missing = [c for c in SUMMARY_REQUIRED if c not in summary.columns]
    if missing:
        raise UsageError(
            f"score: the summary has no column {', '.join(map(repr, missing))} "
            f"(it needs {', '.join(SUMMARY_REQUIRED)}; trace is optional)"
        )
    traces = losses.labels["trace"]
    if "trace" in summary.columns:
        s_trace = summary["trace"].astype(str).to_numpy(object)
        if traces == [""] and len(set(s_trace)) == 1:
            s_trace = np.full(len(summary), "", dtype=object)  # decisions of one unnamed trace
    elif len(traces) == 1:
        s_trace = np.full(len(summary), traces[0], dtype=object)
    else:
        raise UsageError("score: the decisions cover several traces, so the summary needs a 'trace' column")
    try:
        numbers = {c: summary[c].to_numpy(np.float64) for c in ("sent", "unobserved", CONGESTION, WIRELESS)}
    except (TypeError, ValueError):
        raise UsageError("score: summary columns sent, unobserved, congestion, wireless must be numbers") from None
    numbers["known"] = numbers["sent"] - numbers["unobserved"]

    trace_pos = {label: i for i, label in enumerate(traces)}
    flow_pos = {label: i for i, label in enumerate(losses.labels["flow"])}
    t = np.array([trace_pos.get(x, -1) for x in s_trace], dtype=np.int64)
    f = np.array([flow_pos.get(str(x), -1) for x in summary["flow"]], dtype=np.int64)
    sizes = (len(traces), len(losses.labels["flow"]))
    known_pair = (t >= 0) & (f >= 0)
    have = np.ravel_multi_index((t[known_pair], f[known_pair]), sizes)
    absent = np.setdiff1d(np.ravel_multi_index((losses.trace, losses.flow), sizes), have)
    if len(absent):
        ti, fi = np.unravel_index(absent[0], sizes)
        where = f" of trace {traces[ti]!r}" if traces != [""] else ""
        raise UsageError(
            f"score: the summary has no row for flow {losses.labels['flow'][fi]!r}{where} "
            f"({len(absent)} flow(s) with losses missing)"
        )
    keep = t >= 0  # summary rows of traces that were scored
    if by == "flow":
        keep &= f >= 0
        row_key = np.ravel_multi_index((t[keep], f[keep]), sizes)
        out_key = np.ravel_multi_index((group_codes["trace"], group_codes["flow"]), sizes)
    elif by == "trace":
        row_key, out_key = t[keep], group_codes["trace"]
    else:
        row_key, out_key = np.zeros(int(keep.sum()), np.int64), np.zeros(len(out), np.int64)
    # every group has a flow with losses, and the summary has a row for each such flow
    uniq, inverse = np.unique(row_key, return_inverse=True)
    at = np.searchsorted(uniq, out_key)
    known = np.bincount(inverse, weights=numbers["known"][keep], minlength=len(uniq))[at]
    for name, cause in (("congestion_rate", CONGESTION), ("wireless_rate", WIRELESS)):
        lost = np.bincount(inverse, weights=numbers[cause][keep], minlength=len(uniq))[at]
        out[name] = ratio(lost, known)
    if "weak_labels" in summary.columns:  # losses whose cause came from a rule (io.labels)
        weak = pd.to_numeric(summary["weak_labels"], errors="coerce").fillna(0).to_numpy(np.float64)
        out["weak_labels"] = np.bincount(inverse, weights=weak[keep], minlength=len(uniq))[at].astype(np.int64)


def scored_flows_column(out: pd.DataFrame, summary: pd.DataFrame, width: int = 80) -> None:
    """``flows_scored``: the flows a group pools, named (by trace, as many as fit in ``width``
    characters, then a count) or counted (pooled), so that no table hides what it pooled."""
    traces = summary["trace"].astype(str) if "trace" in summary.columns else pd.Series("", index=summary.index)
    flows = summary["flow"].astype(str)
    if "trace" in out.columns:
        named = {}
        for trace, group in flows.groupby(traces.to_numpy(), sort=False):
            labels = natural_sorted(group.unique())
            shown = [label for k, label in enumerate(labels) if len(", ".join(labels[: k + 1])) <= width] or labels[:1]
            more = f" and {len(labels) - len(shown)} more" if len(shown) < len(labels) else ""
            named[trace] = ", ".join(shown) + more
        out["flows_scored"] = out["trace"].astype(str).map(named).fillna("")
    else:
        n_traces = traces.nunique()
        out["flows_scored"] = f"{len(set(zip(traces, flows)))} flows" + (
            f" of {n_traces} traces" if n_traces > 1 else ""
        )
