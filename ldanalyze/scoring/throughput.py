"""Modeled throughput joined onto the score rows: a controller's open-loop replay per flow,
its means per group and the fairness of the flows' throughputs (module docstring of
``ldanalyze.scoring``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..control.models import fairness_by_group
from ..errors import UsageError
from .losses import BY

THROUGHPUT_COLUMNS = ("thput", "vs_omniscient", "vs_unaware")
THROUGHPUT_REQUIRED = ("lda", "controller", "flow", "capacity_bps", *THROUGHPUT_COLUMNS)  # trace is optional
FAIRNESS_COLUMNS = ("fairness_std", "jain")


def throughput_columns(out: pd.DataFrame, throughput: pd.DataFrame, by: str) -> pd.DataFrame:
    """Join a controller replay's per-flow summary onto the score rows (module docstring)."""
    if not isinstance(throughput, pd.DataFrame):
        raise UsageError(f"score: throughput must be a DataFrame, not {type(throughput).__name__}")
    missing = [c for c in THROUGHPUT_REQUIRED if c not in throughput]
    if missing:
        raise UsageError(
            f"score: the throughput table has no column {', '.join(map(repr, missing))} (pass ReplayResult.summary)"
        )
    controllers = pd.unique(throughput["controller"].astype(str))
    if len(controllers) != 1:
        raise UsageError(f"score: throughput must come from one controller, not {', '.join(controllers)}")
    t = throughput.astype({"lda": str, "flow": str}).copy()
    traces = sorted(set(out["trace"].astype(str))) if "trace" in out else [""]
    if "trace" not in t:
        if len(traces) > 1:
            raise UsageError("score: several traces are scored, so the throughput table needs a 'trace' column")
        t["trace"] = traces[0]
    t["trace"] = t["trace"].astype(str)
    t["bps"] = t["thput"] * t["capacity_bps"]
    t["share_unknown"] = share_unknown(t)
    keys = list(BY[by])
    grouped = t.groupby(keys, sort=False)
    table = grouped[list(THROUGHPUT_COLUMNS)].mean()  # by flow: each flow's own
    table["share_unknown"] = grouped["share_unknown"].any()
    if by != "flow":
        for base in ("omniscient", "unaware"):
            table[f"vs_{base}"] = ratios_of_means(t, keys, base)
    if by != "flow":
        per_trace = t.groupby(["trace", "lda"], sort=False)
        sizes = per_trace.size()  # the groups, in the order ngroup numbers them
        deviation, jain = fairness_by_group(t["bps"].to_numpy(), per_trace.ngroup().to_numpy(), len(sizes))
        fair = pd.DataFrame({"fairness_std": deviation, "jain": jain}, index=sizes.index)
        fair = fair if by == "trace" else fair.groupby("lda").mean()
        table = table.join(fair)
    key_frame = out[keys].astype(str)
    joined = key_frame.join(table, on=keys)
    result = out.copy()
    result.insert(len(keys), "controller", controllers[0])
    for column in joined.columns.difference(keys, sort=False):
        result[column] = joined[column].to_numpy()
    result["ignored_congestion"] = rests_on_ignored_congestion(result["M_c"], result["vs_omniscient"])
    return result


def share_unknown(t: pd.DataFrame) -> pd.Series:
    """Per row of a replay summary: whether its ``thput`` is outside where the model was
    validated against the closed loop (``docs/paper000/model_grid.md``): two or more flows of
    one trace, each normalised by its own packet-pair capacity (no ``capacity`` given). If they
    share a bottleneck, that capacity is the link's, not the flow's share of it, and the model
    then errs by tens of points. A summary without ``capacity_given`` counts as estimated."""
    given = t["capacity_given"].astype(bool) if "capacity_given" in t else pd.Series(False, index=t.index)
    flows = t.groupby([k for k in ("trace", "lda") if k in t], sort=False)["flow"].transform("nunique")
    return (~given & (flows > 1)).rename("share_unknown")


def ratios_of_means(t: pd.DataFrame, keys: list[str], base: str) -> pd.Series:
    """Per group of flows: its mean ``thput`` over the baseline's mean thput on the same flows
    (the baseline's thput per flow is the flow's thput over its ``vs_<base>``).

    The ratio of the means, not the mean of the flows' ratios, because it is what a reader
    checks against the thput row above it (zbs pooled over the bundled traces: 78.8 % against
    omniscient's 80.1 % is 0.98, where the flows' ratios averaged to 1.00 and flagged it "above
    the omniscient receiver's"; unaware's 50.4 % against omniscient's is 1.59, not their 1.84),
    and because a flow where the baseline crawls (unaware at a few % of its capacity) would
    weigh tens of times the others in a mean of ratios. Flows whose baseline thput cannot be
    recovered (an LDA with thput 0 there) are left out of both means.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        reference = t["thput"] / t[f"vs_{base}"]
    known = reference.notna()
    sums = (
        t[keys]
        .assign(own=t["thput"].where(known, 0.0), theirs=reference.where(known, 0.0))
        .groupby(keys, sort=False)[["own", "theirs"]]
        .sum()
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums["own"] / sums["theirs"]


def rests_on_ignored_congestion(m_c, vs_omniscient) -> np.ndarray:
    """Whether a modeled throughput rests on congestion the LDA ignored: above the omniscient
    receiver's, which counts exactly the congestion losses, while calling some congestion losses
    wireless (M_c > 0). Open loop the trace's queue stays as it was; closed loop such a sender
    fills the queue and loses more (``docs/controllers.md``, the closed loop). By trace or pooled
    ``vs_omniscient`` is the ratio of the mean thputs, so the flag follows the thput shown."""
    m_c = np.asarray(m_c, dtype=float)
    gain = np.asarray(vs_omniscient, dtype=float)
    return (m_c > 0) & (gain > 1.0)
