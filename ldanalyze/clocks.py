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
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from numba import njit

from .errors import UsageError
from .packets import DELIVERED, Trace, sorting_order
from .tiering import pick

MIN_FIT_SAMPLES = 2  # fewer delivered packets: no slope can be told, the skew is taken as 0
PLAUSIBLE_SKEW_PPM = 200  # quartz clocks drift by tens of ppm; more suggests a queue that never drained
AGREEMENT_PPM = 10  # forward and reverse skew fits further apart than this disagree
# A pair's fit on fewer delivered packets than this is too weak to apply: a slope through a
# handful of points is whatever their delays happen to do.
MIN_APPLIED_SAMPLES = 10


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
def _envelope_line(t, d, hull):
    """(intercept at t = 0, slope) of the LP-optimal line below the points (t sorted; ``hull``
    their ``_lower_hull``)."""
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
    t, d = _sorted_samples(t_send, delay)
    t0 = float(t[0])
    rel = t - t0  # epoch seconds lose digits in the hull's cross products
    if t.shape[0] >= MIN_FIT_SAMPLES:
        intercept, slope = _line_below(rel, d, _hull_of(rel, d))
    else:
        intercept, slope = float(d.min()), 0.0
    excess = float(np.max(d - (intercept + slope * rel)))
    return ClockFit(
        offset=float(intercept),
        skew=float(slope),
        t0=t0,
        excess=max(excess, 0.0),
        samples=int(t.shape[0]),
        span=float(rel[-1]),
    )


def _sorted_samples(t_send: np.ndarray, delay: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The finite (send time, delay) samples in send-time order (ties: least delay first)."""
    t = np.asarray(t_send, np.float64)
    d = np.asarray(delay, np.float64)
    keep = np.isfinite(t) & np.isfinite(d)
    t, d = t[keep], d[keep]
    if t.shape[0] == 0:
        raise UsageError("no delay samples to fit a clock to")
    order = sorting_order(t, d)
    return (t, d) if order is None else (t[order], d[order])


def _hull_of(t: np.ndarray, d: np.ndarray) -> np.ndarray:
    return pick(_lower_hull, t.shape[0] * 2e-6)(t, d)  # ~2 us a point interpreted


def _line_below(t: np.ndarray, d: np.ndarray, hull: np.ndarray) -> tuple[float, float]:
    return pick(_envelope_line, t.shape[0] * 1e-6)(t, d, hull)


def pair_of(flow: str) -> str:
    """The pair of clocks a capture flow's delays measure: its two hosts (``10.0.0.1>10.0.0.2``
    from ``10.0.0.1:5004>10.0.0.2:6000/udp[/ssrc=...]``); a label of another shape is its own."""
    src, sep, rest = str(flow).partition(">")
    if not sep:
        return str(flow)
    dst = rest.split("/", 1)[0]
    return f"{_host(src)}>{_host(dst)}"


def _host(endpoint: str) -> str:
    """``10.0.0.1:5004`` → ``10.0.0.1``; ``[::1]:5004`` → ``[::1]``; ``10.0.0.1`` (no port) as is."""
    if endpoint.startswith("["):
        return endpoint[: endpoint.index("]") + 1] if "]" in endpoint else endpoint
    return endpoint.rsplit(":", 1)[0] if ":" in endpoint else endpoint


@dataclasses.dataclass(frozen=True)
class DelaySummary:
    """What a pair's joint skew fit needs of one flow's delay samples: the flow's own skew (the
    search's bracket), and Σ t, Σ d, the count and the lower hull's points, from which the
    flow's term of the joint objective follows for any skew (``_flow_term``). A few dozen
    numbers for millions of samples: the flows of a pair need not be in memory together."""

    skew: float
    samples: int
    sum_t: float
    sum_d: float
    hull_t: np.ndarray
    hull_d: np.ndarray


def delay_summary(t_send: np.ndarray, delay: np.ndarray) -> DelaySummary:
    """The ``DelaySummary`` of one flow's (send time, delay) samples. Times count from the
    flow's first and delays from its least (a constant shift of either changes no minimiser),
    so the sums keep their digits."""
    t, d = _sorted_samples(t_send, delay)
    t, d = t - t[0], d - d.min()
    hull = _hull_of(t, d)
    skew = _line_below(t, d, hull)[1] if t.shape[0] >= MIN_FIT_SAMPLES else 0.0  # fit_lower_envelope's
    return DelaySummary(skew, t.shape[0], float(t.sum()), float(d.sum()), t[hull], d[hull])


def _flow_term(s: DelaySummary, b: float) -> float:
    """Σ_i (d_i − b·t_i) − n·min_i (d_i − b·t_i): the minimum is reached on the hull for every b."""
    return s.sum_d - b * s.sum_t - s.samples * float(np.min(s.hull_d - b * s.hull_t))


def joint_skew(summaries: list[DelaySummary]) -> float:
    """The skew b minimising Σ_f Σ_i (d_fi − a_f − b·t_fi) with every point on or above its
    flow's line a_f + b·t: the Moon-Skelly-Towsley LP with one intercept per flow and one slope
    for the pair of clocks they share. For a given b the best a_f is min_i (d_fi − b·t_fi), so
    the objective is a convex function of b alone; its minimum lies between the flows' own fits
    and is found there by golden-section search."""
    if len(summaries) == 1:
        return summaries[0].skew
    lo, hi = min(s.skew for s in summaries), max(s.skew for s in summaries)
    if hi - lo < 1e-12:
        return lo

    def objective(b: float) -> float:
        return sum(_flow_term(s, b) for s in summaries)

    ratio = (5**0.5 - 1) / 2
    x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    f1, f2 = objective(x1), objective(x2)
    for _ in range(80):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - ratio * (hi - lo)
            f1 = objective(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + ratio * (hi - lo)
            f2 = objective(x2)
    return (lo + hi) / 2


def common_skew(groups: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """``joint_skew`` of the flows' (send time, delay) samples."""
    return joint_skew([delay_summary(t, d) for t, d in groups])


@dataclasses.dataclass(frozen=True)
class PairSkew:
    """One pair of clocks' skew fitted on all its flows (``fit_pair``), its ``uncertainty``
    (half the difference between the fits of the first and the second half of the pair's time
    span; NaN when a half has too few samples) and the delivered ``samples`` it rests on."""

    skew: float
    uncertainty: float
    samples: int


def halves_summaries(t_send: np.ndarray, delay: np.ndarray, middle: float) -> tuple:
    """One flow's ``DelaySummary`` before and after ``middle`` (the middle of its pair's time
    span), None for a half with too few samples."""
    t, d = np.asarray(t_send, np.float64), np.asarray(delay, np.float64)
    early = t <= middle
    return tuple(
        delay_summary(t[part], d[part]) if np.count_nonzero(part) >= MIN_FIT_SAMPLES else None
        for part in (early, ~early)
    )


def fit_pair(whole: list[DelaySummary], first: list[DelaySummary], second: list[DelaySummary]) -> PairSkew:
    """The pair's skew from its flows' summaries over the whole span and over each half."""
    samples = sum(s.samples for s in whole)
    skew = joint_skew(whole) if samples >= MIN_FIT_SAMPLES else 0.0
    uncertainty = abs(joint_skew(first) - joint_skew(second)) / 2 if first and second else float("nan")
    return PairSkew(skew, uncertainty, samples)


def pair_skew(groups: list[tuple[np.ndarray, np.ndarray]]) -> PairSkew:
    """``fit_pair`` of the flows' (send time, delay) samples, all in memory."""
    start = min(float(np.min(t)) for t, _ in groups)
    end = max(float(np.max(t)) for t, _ in groups)
    halves = [halves_summaries(t, d, (start + end) / 2) for t, d in groups]
    return fit_pair(
        [delay_summary(t, d) for t, d in groups],
        [h[0] for h in halves if h[0] is not None],
        [h[1] for h in halves if h[1] is not None],
    )


def delivered_rows(packets: pd.DataFrame) -> dict[str, np.ndarray]:
    """The rows of each flow's delivered packets (flows with none left out): the delay samples
    (those received: a sender's view's delivered rows were acknowledged, not timed here)."""
    delivered = (packets["fate"] == DELIVERED).to_numpy() & np.isfinite(packets["t_recv"].to_numpy())
    rows = {}
    for flow, index in packets.groupby("flow", observed=True).indices.items():
        got = index[delivered[index]]
        if got.shape[0]:
            rows[flow] = got
    return rows


def remove_skew(
    trace: Trace,
    *,
    offset: bool = False,
    pairs: str = "hosts",
    skew_limit_ppm: float = PLAUSIBLE_SKEW_PPM,
    reverse: Sequence[tuple[np.ndarray, np.ndarray]] = (),
    fitted: Mapping[str, PairSkew] | None = None,
) -> Trace:
    """Take the clock skew (and with ``offset``, each flow's offset) out of the receive times:
    t_recv −= skew·(t_send − t0) [+ offset] (see the module docstring).

    Skew belongs to a pair of clocks, not to a flow: the flows of one pair (``pairs="hosts"``:
    the same sender and receiver hosts, :func:`pair_of`; ``"all"``: every flow, as between two
    captures; ``"flow"``: each flow alone) share one skew, fitted jointly
    (:func:`common_skew`), each with its own offset. A skew beyond ``skew_limit_ppm`` is **not
    applied**: the times are kept and the report says why (a queue that never drains looks like
    skew to the fit; oscillators drift by tens of ppm). Nor is a weak fit: on fewer than
    ``MIN_APPLIED_SAMPLES`` packets, or less certain than that limit (its two halves' fits
    further apart than twice the limit), or of unknown certainty.

    ``reverse`` (with ``pairs="all"``): (time, delay) samples of packets that crossed the same
    two clocks the other way, delay = the first clock's time minus the second's. Their envelope
    falls as the forward one rises with skew; a queue trends in one direction only. Following
    Paxson ("On calibrating measurements of packet transit times", SIGMETRICS 1998, §4), the
    skew is fitted in each direction: when the two agree (within ``AGREEMENT_PPM``) their mean
    is the skew, otherwise it is **not applied** and the status gives both (a fit that moves
    with a queue is no estimate of the clocks, however wide its own uncertainty).

    Only for traces whose clocks are separate (``meta['clock'] == 'separate'``); the result's
    ``meta['clock']`` says ``'skew-removed'`` and ``meta['clock_fit']`` holds one row per flow:
    ``pair``, ``offset_s`` (the minimal delay across the two clocks at the flow's first send),
    ``skew_ppm`` (the pair's; positive: the receiver's clock runs fast), ``uncertainty_ppm``
    (half the difference between the fits of the first and the second half of the pair's
    time span: how stable the estimate is), ``samples`` (the flow's delivered packets),
    ``pair_samples`` (the pair's, which the skew rests on), ``span_s``, ``excess_s`` (the deepest
    queue above the envelope), ``forward_ppm`` and ``reverse_ppm`` (each direction's own fit;
    NaN without reverse samples), ``reverse_samples`` and ``status`` (``applied``,
    ``not applied: ...``). The input trace is not modified.

    ``fitted``: pairs (by :func:`pair_of`) whose skew was fitted already, on more flows than
    the trace holds (``fit_pair``: a capture read one flow at a time); their flows take it.
    """
    if trace.meta.get("clock") != "separate":
        raise UsageError(
            f"{trace.path}: the trace's clocks are {trace.meta.get('clock', 'common')!r}; "
            "only separate clocks have a skew to remove"
        )
    if pairs not in ("hosts", "all", "flow"):
        raise UsageError(f"pairs={pairs!r}: hosts, all or flow")
    if not skew_limit_ppm > 0:
        raise UsageError(f"the skew limit must be a positive number of ppm, not {skew_limit_ppm!r}")
    if len(reverse) and pairs != "all":
        raise UsageError("reverse samples belong to the one pair of clocks of pairs='all'")
    fitted = fitted or {}
    packets = trace.packets.copy(deep=False)  # t_recv is replaced below, not written into
    t_recv = packets["t_recv"].to_numpy(copy=True)
    t_send = packets["t_send"].to_numpy()
    members: dict[str, list[tuple[str, np.ndarray]]] = {}
    for flow, got in delivered_rows(packets).items():
        key = {"hosts": pair_of(flow), "all": "all", "flow": str(flow)}[pairs]
        members.setdefault(key, []).append((flow, got))
    back = [(np.asarray(t, np.float64), np.asarray(d, np.float64)) for t, d in reverse if np.size(t)]
    rows = []
    for pair, flows in members.items():
        groups = [(t_send[got], t_recv[got] - t_send[got]) for _, got in flows]
        skew, uncertainty, samples = dataclasses.astuple(fitted[pair] if pair in fitted else pair_skew(groups))
        forward, backward, back_samples = skew, float("nan"), sum(t.size for t, _ in back)
        status = "applied"
        if samples < MIN_FIT_SAMPLES:
            status = "not applied: too few samples"
            warnings.warn(
                f"{trace.path}: {pair}: {samples} delivered packet(s), too few to estimate a clock "
                "skew; it is taken as 0",
                ClockWarning,
                stacklevel=2,
            )
        elif back_samples >= MIN_FIT_SAMPLES:
            backward = -common_skew(back)
            skew, uncertainty = (forward + backward) / 2, max(np.nan_to_num(uncertainty), abs(forward - backward) / 2)
            if abs(forward - backward) * 1e6 > AGREEMENT_PPM:
                status = (
                    f"not applied: the directions disagree (forward {forward * 1e6:+.1f} ppm, reverse "
                    f"{backward * 1e6:+.1f} ppm)"
                )
                warnings.warn(
                    f"{trace.path}: {pair}: the clock skew fitted on the forward packets "
                    f"({forward * 1e6:+.1f} ppm) and on the reverse ones ({backward * 1e6:+.1f} ppm) "
                    "disagree, so none is applied: a queue or a route change trends in one direction",
                    ClockWarning,
                    stacklevel=2,
                )
        if status == "applied" and samples < MIN_APPLIED_SAMPLES:
            status = f"not applied: {samples} samples, too few"
        if status == "applied" and abs(skew) * 1e6 > skew_limit_ppm:
            status = f"not applied: beyond {skew_limit_ppm:g} ppm"
            warnings.warn(
                f"{trace.path}: {pair}: estimated clock skew {skew * 1e6:+.0f} ppm is more than clocks "
                f"drift (limit {skew_limit_ppm:g} ppm), so it is not applied: a queue that builds up "
                "over the trace looks like skew to the fit",
                ClockWarning,
                stacklevel=2,
            )
        if status == "applied" and not uncertainty * 1e6 <= skew_limit_ppm:
            status = (
                "not applied: uncertain (its halves' fits differ by more than the limit)"
                if uncertainty == uncertainty
                else "not applied: uncertainty unknown (a half has too few samples)"
            )
        applied = skew if status == "applied" else 0.0
        for (flow, got), (t, d) in zip(flows, groups):
            t0 = float(np.min(t))
            envelope_offset = float(np.min(d - skew * (t - t0)))
            if status == "applied" or offset:
                base = envelope_offset if status == "applied" else float(np.min(d))
                t_recv[got] -= applied * (t - t0) + (base if offset else 0.0)
            excess = float(np.max(d - skew * (t - t0) - envelope_offset))
            rows.append(
                {
                    "flow": str(flow),
                    "pair": pair,
                    "offset_s": envelope_offset,
                    "skew_ppm": skew * 1e6,
                    "uncertainty_ppm": uncertainty * 1e6,
                    "samples": int(t.size),
                    "pair_samples": int(samples),
                    "span_s": float(np.max(t) - t0),
                    "excess_s": excess,
                    "forward_ppm": forward * 1e6,
                    "reverse_ppm": backward * 1e6,
                    "reverse_samples": int(back_samples),
                    "status": status,
                }
            )
    packets["t_recv"] = t_recv
    meta = {**trace.meta, "clock": "skew-removed", "clock_fit": fit_table(rows), "offset_removed": offset}
    return dataclasses.replace(trace, packets=packets, meta=meta)


def fit_table(rows: list[dict]) -> pd.DataFrame:
    """The per-flow clock fits as a table (columns as in :func:`remove_skew`)."""
    columns = [
        "flow",
        "pair",
        "offset_s",
        "skew_ppm",
        "uncertainty_ppm",
        "samples",
        "pair_samples",
        "span_s",
        "excess_s",
        "forward_ppm",
        "reverse_ppm",
        "reverse_samples",
        "status",
    ]
    return pd.DataFrame(rows, columns=columns)
