"""How close a replayed rate comes to what the trace's real sender sent (``replay --compare-sent``).

When a trace was made by the very controller under study (an ns-2 TFRC flow replayed with
``tfrc`` fed the unaware decisions, say), the replay should track the real sending rate; these
functions measure how closely, over fixed time bins on the sender's clock.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..timeline import Timeline


def sent_rates(timeline: Timeline, bin_s: float = 1.0) -> pd.DataFrame:
    """Bits per second each flow's sender put on the wire per ``bin_s`` bin of send time
    (every transmission, lost or not): columns ``flow, t`` (bin start) and ``sent_bps``."""
    if not bin_s > 0:
        raise UsageError(f"bin must be a positive number of seconds, not {bin_s!r}")
    p = timeline.packets
    bins = np.floor(p["t_send"].to_numpy() / bin_s).astype(np.int64)
    frame = pd.DataFrame({"flow": p["flow"].astype(str).to_numpy(), "bin": bins, "bits": p["size"].to_numpy() * 8.0})
    out = frame.groupby(["flow", "bin"], sort=True)["bits"].sum().reset_index()
    out["t"] = out["bin"] * bin_s
    out["sent_bps"] = out["bits"] / bin_s
    return out[["flow", "t", "sent_bps"]]


def binned_rate(t: np.ndarray, rate: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time average per bin of a step function (``rate[i]`` holds from ``t[i]`` to ``t[i+1]``)
    over the time it is defined; ``edges`` must lie within ``[t[0], t[-1]]``."""
    hold = np.diff(t)
    ok = np.isfinite(rate[:-1])
    # area and defined time grow linearly between change points: interpolation is exact
    area = np.concatenate(([0.0], np.cumsum(np.where(ok, rate[:-1] * hold, 0.0))))
    span = np.concatenate(([0.0], np.cumsum(np.where(ok, hold, 0.0))))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.diff(np.interp(edges, t, area)) / np.diff(np.interp(edges, t, span))


def compare_sent(
    rates: pd.DataFrame, timeline: Timeline, bin_s: float = 1.0, capacity_bps: pd.Series | None = None
) -> pd.DataFrame:
    """Per (lda, controller, flow) of a replay's ``rates``: the allowed rate against the rate the
    trace's sender sent, over the ``bin_s`` bins that lie wholly within the flow's replay.

    Columns: ``bins``, ``allowed_bps`` and ``sent_bps`` (means over those bins), ``ratio``
    (allowed / sent), ``capped_ratio`` (the allowed rate capped at the flow's capacity first,
    when ``capacity_bps``, indexed by flow, gives it: a sender cannot push more than the
    bottleneck carries for long) and ``correlation`` (Pearson, over the bins).
    """
    capacity_bps = capacity_bps if capacity_bps is not None else pd.Series(dtype=float)
    sent = sent_rates(timeline, bin_s)
    sent_by_flow = {flow: g.set_index("t")["sent_bps"] for flow, g in sent.groupby("flow")}
    rows = []
    for (lda, ctl, flow), g in rates.groupby(["lda", "controller", "flow"], observed=True, sort=False):
        t = g["t"].to_numpy(np.float64)
        first, last = np.ceil(t[0] / bin_s), np.floor(t[-1] / bin_s)
        edges = np.arange(first, last + 1) * bin_s
        rate = g["rate_bps"].to_numpy(np.float64)
        cap = float(capacity_bps.get(flow, np.nan))
        capped = np.minimum(rate, cap) if np.isfinite(cap) else np.full_like(rate, np.nan)
        allowed = binned_rate(t, rate, edges) if edges.size > 1 else np.empty(0)
        allowed_capped = binned_rate(t, capped, edges) if edges.size > 1 else np.empty(0)
        real = sent_by_flow.get(str(flow), pd.Series(dtype=float)).reindex(edges[:-1], fill_value=0.0).to_numpy()
        ok = np.isfinite(allowed)
        a, r, c = allowed[ok], real[ok], allowed_capped[ok]
        corr = float(np.corrcoef(a, r)[0, 1]) if a.size > 2 and a.std() > 0 and r.std() > 0 else np.nan
        mean_a, mean_r = (float(a.mean()), float(r.mean())) if a.size else (np.nan, np.nan)
        rows.append(
            {
                "lda": lda,
                "controller": ctl,
                "flow": flow,
                "bins": int(a.size),
                "allowed_bps": mean_a,
                "sent_bps": mean_r,
                "ratio": mean_a / mean_r if mean_r > 0 else np.nan,
                "capped_ratio": float(c.mean()) / mean_r if mean_r > 0 and c.size else np.nan,
                "correlation": corr,
            }
        )
    return pd.DataFrame(rows)
