"""Clock offset and skew between two endpoints, from one-way delays alone.

When a trace's send and receive times come from two clocks (a sender capture and a receiver
capture, or a receiver capture and the sender's in-band timestamps), the measured one-way delay
d = t_recv − t_send is the true delay plus the clocks' offset plus a term that grows with time
when one clock runs faster than the other (skew). Over a trace of minutes, a skew of 50 ppm adds
3 ms per minute: enough to fake a rising queue, which every ROTT-based LDA reads as congestion.

``fit_lower_envelope`` estimates offset and skew with the linear-programming fit of Moon, Skelly
and Towsley ("Estimation and removal of clock skew from network delay measurements",
INFOCOM 1999, §III): the line a + b·t below every point (t_send, d) that minimises the total
distance to the points. The minimal delay (no queueing) lies on that lower envelope, so queueing
episodes do not bend it as a least-squares fit would. The optimum is the edge of the lower
convex hull of the points that spans the mean send time (the objective is n times the line's
height at that mean): an O(n) walk over the points in send order, no LP solver.

``remove_skew`` applies the fit per flow to a Trace whose clocks are separate and takes the
skew out of the receive times, so that the delays' lower envelope is flat; the estimates are
reported in ``meta['clock_fit']``. The offset is reported too and, when asked, removed as well:
then receive times are on the sender's clock, up to the minimal one-way delay that no pair of
separate clocks can measure (the lower envelope becomes 0). That suits two wall clocks (sender
and receiver captures); with in-band timestamps, whose origin is arbitrary (RTP), keeping the
offset keeps the receive times the capture times they were, near the flow's start.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
from numba import njit

from .errors import UsageError
from .packets import DELIVERED, Trace

MIN_FIT_SAMPLES = 2  # fewer delivered packets: no slope can be told, the skew is taken as 0
PLAUSIBLE_SKEW_PPM = 200  # quartz clocks drift by tens of ppm; more suggests a queue that never drained


class ClockWarning(UserWarning):
    """A clock estimate is doubtful (too few samples, a suspiciously large skew)."""


@dataclasses.dataclass(frozen=True)
class ClockFit:
    """d ≈ offset + skew·(t − t0) on the lower envelope; ``excess`` is the largest delay seen
    above it (the deepest queue), ``samples`` the points fitted, ``span`` their time range."""

    offset: float
    skew: float
    t0: float
    excess: float
    samples: int
    span: float

    def envelope(self, t: np.ndarray | float) -> np.ndarray | float:
        """The fitted minimal delay at send time(s) ``t``."""
        return self.offset + self.skew * (np.asarray(t) - self.t0)


@njit(cache=True)
def _lower_hull(t, d):
    """Indices of the lower convex hull of points sorted by t (ties: lowest d first),
    monotone chain; collinear points are dropped."""
    n = t.shape[0]
    hull = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        if k > 0 and t[i] == t[hull[k - 1]]:
            continue  # same abscissa, higher or equal d: never on the lower hull
        while k >= 2:
            a, b = hull[k - 2], hull[k - 1]
            cross = (t[b] - t[a]) * (d[i] - d[a]) - (d[b] - d[a]) * (t[i] - t[a])
            if cross <= 0.0:
                k -= 1
            else:
                break
        hull[k] = i
        k += 1
    return hull[:k]


@njit(cache=True)
def _envelope_line(t, d):
    """(intercept at t = 0, slope) of the LP-optimal line below the points (t sorted)."""
    hull = _lower_hull(t, d)
    if hull.shape[0] == 1:
        return d[hull[0]], 0.0
    mean_t = t.mean()
    for j in range(hull.shape[0] - 1):
        a, b = hull[j], hull[j + 1]
        if t[b] >= mean_t or j == hull.shape[0] - 2:
            slope = (d[b] - d[a]) / (t[b] - t[a])
            return d[a] - slope * t[a], slope
    return d[hull[0]], 0.0  # not reached: the loop returns on its last edge


def fit_lower_envelope(t_send: np.ndarray, delay: np.ndarray) -> ClockFit:
    """The Moon-Skelly-Towsley fit of ``delay`` against ``t_send`` (see the module docstring).

    Points need not be sorted. With fewer than two distinct send times the skew is 0 and the
    offset the smallest delay.
    """
    t = np.asarray(t_send, np.float64)
    d = np.asarray(delay, np.float64)
    keep = np.isfinite(t) & np.isfinite(d)
    t, d = t[keep], d[keep]
    if t.shape[0] == 0:
        raise UsageError("no delay samples to fit a clock to")
    order = np.lexsort((d, t))
    t, d = t[order], d[order]
    t0 = float(t[0])
    rel = t - t0  # epoch seconds lose digits in the hull's cross products
    intercept, slope = _envelope_line(rel, d) if t.shape[0] >= MIN_FIT_SAMPLES else (float(d.min()), 0.0)
    excess = float(np.max(d - (intercept + slope * rel)))
    return ClockFit(offset=float(intercept), skew=float(slope), t0=t0, excess=max(excess, 0.0),
                    samples=int(t.shape[0]), span=float(rel[-1]))


def remove_skew(trace: Trace, *, offset: bool = False) -> Trace:
    """Take each flow's clock skew (and with ``offset``, its offset) out of its receive times:
    t_recv −= skew·(t_send − t0) [+ offset] (see the module docstring).

    Only for traces whose clocks are separate (``meta['clock'] == 'separate'``); the result's
    ``meta['clock']`` says ``'skew-removed'`` and ``meta['clock_fit']`` holds one row per flow:
    ``offset_s`` (the minimal delay as measured across the two clocks at the flow's first send),
    ``skew_ppm`` (positive: the receiver's clock runs fast), ``samples``, ``span_s``,
    ``excess_s`` (the deepest queue above the envelope). The input trace is not modified.
    """
    if trace.meta.get("clock") != "separate":
        raise UsageError(f"{trace.path}: the trace's clocks are {trace.meta.get('clock', 'common')!r}; "
                         "only separate clocks have a skew to remove")
    packets = trace.packets.copy()
    t_recv = packets["t_recv"].to_numpy(copy=True)
    t_send = packets["t_send"].to_numpy()
    delivered = (packets["fate"] == DELIVERED).to_numpy()
    rows = []
    for flow, index in packets.groupby("flow", observed=True).indices.items():
        got = index[delivered[index]]
        if got.shape[0] == 0:
            continue
        fit = fit_lower_envelope(t_send[got], t_recv[got] - t_send[got])
        t_recv[got] -= fit.envelope(t_send[got]) if offset else fit.skew * (t_send[got] - fit.t0)
        rows.append(_fit_row(flow, fit))
        if abs(fit.skew) * 1e6 > PLAUSIBLE_SKEW_PPM:
            warnings.warn(f"{trace.path}: flow {flow}: estimated clock skew {fit.skew * 1e6:+.0f} ppm is more than "
                          "clocks drift; a queue that stays full for the whole trace looks like skew to the fit "
                          "(keep the skew if the clocks are known to agree)", ClockWarning, stacklevel=2)
        if fit.samples < MIN_FIT_SAMPLES:
            warnings.warn(f"{trace.path}: flow {flow}: {fit.samples} delivered packet(s), too few to estimate "
                          "a clock skew; it is taken as 0", ClockWarning, stacklevel=2)
    packets["t_recv"] = t_recv
    meta = {**trace.meta, "clock": "skew-removed", "clock_fit": fit_table(rows), "offset_removed": offset}
    return dataclasses.replace(trace, packets=packets, meta=meta)


def _fit_row(flow: str, fit: ClockFit) -> dict:
    return {"flow": str(flow), "offset_s": fit.offset, "skew_ppm": fit.skew * 1e6, "samples": fit.samples,
            "span_s": fit.span, "excess_s": fit.excess}


def fit_table(rows: list[dict]) -> pd.DataFrame:
    """The per-flow clock fits as a table (columns as in :func:`remove_skew`)."""
    columns = ["flow", "offset_s", "skew_ppm", "samples", "span_s", "excess_s"]
    return pd.DataFrame(rows, columns=columns)
