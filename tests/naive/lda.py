"""Plain twins of ldanalyze/lda: the loss differentiation algorithms and the learned LDA's features."""

from __future__ import annotations

import bisect
import dataclasses
import math
import statistics

import numpy as np

from . import twin_of
from .timeline import rfc3550_jitter

# ---------------------------------------------------------------------------------------------
# Loss differentiation algorithms, replayed per flow exactly as docs/ldas.md describes.
# ---------------------------------------------------------------------------------------------

LOSS_CAUSES = ("congestion", "wireless", "route", "lost")

LDA_DEFAULTS = {
    "unaware": {},
    "omniscient": {},
    "biaz": {"upper": 2.0},
    "mbiaz": {"upper": 1.25},
    "spike": {"alpha": 1 / 2, "beta": 1 / 3},
    "zigzag": {"alpha": 1 / 32, "dev_factors": (-1, -1 / 2, 0, 1 / 2)},
    "zbs": {
        "mbiaz_upper": 1.25,
        "spike_alpha": 1 / 2,
        "spike_beta": 1 / 3,
        "zigzag_alpha": 1 / 32,
        "zigzag_dev_factors": (-1, -1 / 2, 0, 1 / 2),
    },
    "win_ldaplus": {"T_obs": 5.0},
    "wro_ldaplus": {"K": 1 / 2, "B": 1 / 3},
    "adaptive_rtt": {"k": 2, "delay": "auto", "propagation_delay": None},
    "xrtp": {"positive_jitters": 2, "threshold": 1 / 3, "n": 8, "l1": 2, "alpha": 1 / 8},
    "veno": {"beta": 3.0, "window": 8},
}


@dataclasses.dataclass
class Gap:
    """One hole a receiver detects; indices are arrival indices within the flow."""

    first: int  # first missing sequence number
    last: int  # seq_r - 1
    n: int  # missing packets
    r: int  # the revealing arrival
    prev: int | None  # P_i, the last in-order arrival before r (None: the flow's first packets)
    T: float  # T_i = t_recv_r - t_recv(P_i), NaN without P_i
    at: int | None  # the arrival whose delay is the gap delay (None: undefined)
    delay: float  # the gap delay, d[at]
    a: int | None  # the decision arrival; None: the flow ended first (undetected)
    s: int | None  # last arrival folded into the state deciding it (-1: none yet)


@dataclasses.dataclass
class Flow:
    """What the receiver of one flow saw: arrivals in arrival order and the gaps they reveal."""

    arrivals: list[dict]
    d: list[float]  # one-way delay of each arrival
    jitter: list[float]  # paper 001 eq. 7; NaN for the first arrival
    spacing: list[float]  # receive spacing of sequence-consecutive arrivals, else NaN
    gaps: list[Gap]


def flow_view(packets, first_seq, *, detection, gap_delay, update_first):
    """Arrivals (by t_recv, then uid), their per-arrival quantities, and the gaps with their
    decision arrival and state index, following the table of docs/ldas.md "What an LDA sees"."""
    arrivals = sorted((p for p in packets if p["fate"] == "delivered"), key=lambda p: (p["t_recv"], p["uid"]))
    d, jitter, spacing = per_arrival(arrivals)
    gaps, hi, prev = [], first_seq - 1, None
    for r, p in enumerate(arrivals):
        if p["seq"] <= hi:
            continue  # late or duplicate
        if p["seq"] > hi + 1:
            a, count = None, 0
            for j in range(r, len(arrivals)):  # the detection-th arrival at or above seq_r
                if arrivals[j]["seq"] >= p["seq"]:
                    count += 1
                    if count == detection:
                        a = j
                        break
            if gap_delay not in ("revealing", "previous"):
                raise ValueError(f"unknown gap_delay {gap_delay!r}")
            at = r if gap_delay == "revealing" else prev
            gaps.append(
                Gap(
                    first=hi + 1,
                    last=p["seq"] - 1,
                    n=p["seq"] - hi - 1,
                    r=r,
                    prev=prev,
                    T=math.nan if prev is None else p["t_recv"] - arrivals[prev]["t_recv"],
                    at=at,
                    delay=math.nan if at is None else d[at],
                    a=a,
                    s=None if a is None else (a if update_first else a - 1),
                )
            )
        hi, prev = p["seq"], r
    return Flow(arrivals=arrivals, d=d, jitter=jitter, spacing=spacing, gaps=gaps)


def per_arrival(arrivals):
    """Each arrival's one-way delay, jitter (paper 001 eq. 7; NaN at the first) and spacing
    sample (the receive spacing when it follows its sequence predecessor, else NaN)."""
    d, jitter, spacing = [], [], []
    for j, p in enumerate(arrivals):
        d.append(p["t_recv"] - p["t_send"])
        if j == 0:
            jitter.append(math.nan)
            spacing.append(math.nan)
            continue
        q = arrivals[j - 1]
        jitter.append((p["t_recv"] - q["t_recv"]) - (p["t_send"] - q["t_send"]))
        spacing.append(p["t_recv"] - q["t_recv"] if p["seq"] == q["seq"] + 1 else math.nan)
    return d, jitter, spacing


def running_min(values):
    """Minimum of the non-NaN values so far, after each element (NaN before the first)."""
    out, m = [], math.nan
    for v in values:
        if not math.isnan(v) and (math.isnan(m) or v < m):
            m = v
        out.append(m)
    return out


def zigzag_trace(d, alpha):
    """ZigZag's mean and deviation after each arrival (paper 000 §III-C): mean first, then dev
    with the updated mean."""
    means, devs = [], []
    for j, x in enumerate(d):
        if j == 0:
            mean, dev = x, 0.0
        else:
            mean = (1 - alpha) * mean + alpha * x
            dev = (1 - 2 * alpha) * dev + 2 * alpha * abs(x - mean)
        means.append(mean)
        devs.append(dev)
    return means, devs


def spike_trace(d, alpha, beta):
    """Spike's state after each arrival (paper 000 §III-B); one transition per arrival, judged
    from the state before it."""
    out, in_spike, lo, hi = [], False, math.inf, -math.inf
    for x in d:
        lo, hi = min(lo, x), max(hi, x)
        start = lo + alpha * (hi - lo)
        end = lo + beta * (hi - lo)
        if not in_spike and x > start:
            in_spike = True
        elif in_spike and x < end:
            in_spike = False
        out.append(in_spike)
    return out


def biaz_rule(g, tmin, upper):
    """Wireless iff (n+1)·T_min ≤ T_i < (n+upper)·T_min; NaN makes it false."""
    n, Ti = g.n, g.T
    return "wireless" if (n + 1) * tmin <= Ti < (n + upper) * tmin else "congestion"


def zigzag_rule(g, mean, dev, dev_factors):
    """Wireless iff the gap delay is below mean + f·dev, f chosen by min(n, 4)."""
    f = dev_factors[min(g.n, 4) - 1]
    return "wireless" if g.delay < mean + f * dev else "congestion"


def lda_unaware(flow):
    """Paper 000 §III: the baseline that takes every loss for congestion."""
    return lambda g: "congestion"


def lda_biaz(flow, upper):
    """Biaz (upper = 2) and mBiaz (upper = 1.25), paper 000 §III-A: T_min over all arrivals."""
    tmin = running_min(flow.spacing)
    return lambda g: biaz_rule(g, tmin[g.s], upper)


def lda_win_ldaplus(flow, T_obs):
    """T_min learns only during the observation period; gaps decided in it are congestion."""
    t0 = flow.arrivals[0]["t_recv"] if flow.arrivals else math.nan
    t_recv = [p["t_recv"] for p in flow.arrivals]
    tmin = running_min([x if t < t0 + T_obs else math.nan for x, t in zip(flow.spacing, t_recv)])

    def rule(g):
        if t_recv[g.a] < t0 + T_obs:
            return "congestion"
        n, Ti, m = g.n, g.T, tmin[g.s]
        return "wireless" if (n + 1) * m <= Ti <= (n + 2) * m else "congestion"

    return rule


def lda_spike(flow, alpha, beta):
    """Congestion iff the flow is in Spike's spike state."""
    in_spike = spike_trace(flow.d, alpha, beta)
    return lambda g: "congestion" if in_spike[g.s] else "wireless"


def lda_wro_ldaplus(flow, K, B):
    """Paper 002 eqs. 10, 12: Congestion at d ≥ start, else Underload at d ≤ end, else keep."""
    congested, state, lo, hi = [], "congestion", math.inf, -math.inf
    for x in flow.d:
        lo, hi = min(lo, x), max(hi, x)
        start = lo + K * (hi - lo)
        end = lo + B * (hi - lo)
        if x >= start:
            state = "congestion"
        elif x <= end:
            state = "underload"
        congested.append(state == "congestion")
    return lambda g: "congestion" if congested[g.s] else "wireless"


def lda_zigzag(flow, alpha, dev_factors):
    """Paper 000 §III-C: the gap delay against ZigZag's mean and deviation."""
    means, devs = zigzag_trace(flow.d, alpha)
    return lambda g: zigzag_rule(g, means[g.s], devs[g.s], dev_factors)


def lda_zbs(flow, mbiaz_upper, spike_alpha, spike_beta, zigzag_alpha, zigzag_dev_factors):
    """Paper 000 §VII-A: pick ZigZag, mBiaz or Spike from T_avg/T_min and the delay, with a lock
    of 50 arrivals or 3 s between switches; decide with the scheme in force, each base scheme
    with ZBS's own parameters."""
    d, t_recv = flow.d, [p["t_recv"] for p in flow.arrivals]
    seqs = [p["seq"] for p in flow.arrivals]
    tmin = running_min(flow.spacing)
    means, devs = zigzag_trace(d, zigzag_alpha)
    in_spike = spike_trace(d, spike_alpha, spike_beta)
    schemes, tavg, lo = [], math.nan, math.inf
    for j, x in enumerate(d):
        lo = min(lo, x)
        if j > 0 and seqs[j] > seqs[j - 1]:
            sample = (t_recv[j] - t_recv[j - 1]) / (seqs[j] - seqs[j - 1])
            tavg = sample if math.isnan(tavg) else 0.875 * tavg + 0.125 * sample
        m = tmin[j]
        if math.isnan(m) or math.isnan(tavg):
            candidate = "zigzag"
        elif x < lo + 0.05 * m:
            candidate = "spike"
        else:
            narr = tavg / m if m != 0 else math.inf
            if narr < 0.875:
                candidate = "zigzag"
            elif narr < 1.5:
                candidate = "mbiaz"
            elif narr < 2.0:
                candidate = "zigzag"
            else:
                candidate = "spike"
        if j == 0:
            scheme, j_lock, t_lock = "zigzag", 0, t_recv[0]
        elif (j - j_lock >= 50 or t_recv[j] - t_lock >= 3.0) and candidate != scheme:
            scheme, j_lock, t_lock = candidate, j, t_recv[j]
        schemes.append(scheme)

    def rule(g):
        s = g.s
        if schemes[s] == "zigzag":
            return zigzag_rule(g, means[s], devs[s], zigzag_dev_factors)
        if schemes[s] == "mbiaz":
            return biaz_rule(g, tmin[s], mbiaz_upper)
        return "congestion" if in_spike[s] else "wireless"

    return rule


def rfc6298_trace(samples):
    """(Tbar, Tdev) after each sample: first Tbar = x, Tdev = x/2; then Tdev with the old Tbar,
    then Tbar (RFC 6298 §2)."""
    out = []
    for i, x in enumerate(samples):
        if i == 0:
            tbar, tdev = x, x / 2
        else:
            tdev = 0.75 * tdev + 0.25 * abs(tbar - x)
            tbar = 0.875 * tbar + 0.125 * x
        out.append((tbar, tdev))
    return out


def adaptive_rtt_rule(T, tbar, tdev, tp, k):
    """Paper 003 eq. 2: congestion iff T > Tbar + Tdev·(2·(T_p/Tbar)^k − 1)."""
    return "congestion" if T > tbar + tdev * (2 * (tp / tbar) ** k - 1) else "wireless"


def lda_adaptive_rtt(flow, k, delay, propagation_delay, *, rtt, clock_common, update_first):
    """Delay samples from RTT feedback, absolute one-way delays, or relative ones plus a given
    propagation delay; ``auto`` picks the first the flow and trace allow."""
    if delay == "auto":
        if rtt:
            delay = "rtt"
        elif clock_common:
            delay = "owd"
        elif propagation_delay is not None:
            delay = "propagation"
        else:
            raise ValueError("adaptive_rtt: no RTT samples, separate clocks and no propagation_delay")
    if delay == "rtt":
        samples = sorted(rtt, key=lambda s: s[0])  # (t, rtt) in time order
        stats = rfc6298_trace([x for _, x in samples])

        def rule(g):
            t_a = flow.arrivals[g.a]["t_recv"]
            held = [i for i, (t, _) in enumerate(samples) if (t <= t_a if update_first else t < t_a)]
            if not held:
                return "congestion"
            last = held[-1]
            T = samples[last][1]
            tp = min(x for _, x in samples[: last + 1])
            return adaptive_rtt_rule(T, *stats[last], tp, k)

        return rule
    if delay == "owd":
        x = list(flow.d)
    elif delay == "propagation":
        x, lo = [], math.inf
        for dj in flow.d:
            lo = min(lo, dj)
            x.append(dj - lo + propagation_delay)
    else:
        raise ValueError(f"adaptive_rtt: unknown delay {delay!r}")
    stats = rfc6298_trace(x)
    tp = [propagation_delay] * len(x) if delay == "propagation" else running_min(x)

    def rule(g):
        T = math.nan if g.at is None else x[g.at]
        return adaptive_rtt_rule(T, *stats[g.s], tp[g.s], k)

    return rule


def lda_xrtp(flow, positive_jitters, threshold, n, l1, alpha):
    """Paper 001 Fig. 4: a negative jitter after a run of positive ones is congestion; otherwise
    congestion iff the gap delay sits high in the delay range and recent arrivals were over
    deviation."""
    d, jitter = flow.d, flow.jitter
    means, devs = zigzag_trace(d, alpha)
    over = [x > mean + dev for x, mean, dev in zip(d, means, devs)]

    def rule(g):
        r = g.r
        run = r >= positive_jitters and all(jitter[i] > 0 for i in range(r - positive_jitters, r))
        if jitter[r] < 0 and run:
            return "congestion"
        lo, hi, cur = min(d[: g.s + 1]), max(d[: g.s + 1]), g.delay
        p = math.nan if hi == lo else (cur - lo) / (hi - lo)
        recent = sum(over[max(0, g.s - n + 1) : g.s + 1])
        return "congestion" if p >= threshold and recent >= l1 else "wireless"

    return rule


def lda_veno(flow, beta, window):
    """Veno's eq. (1) at the receiver: backlog N = receive rate over the last ``window``
    arrivals × (gap delay − minimum delay so far); wireless iff N < beta."""
    t_recv = [p["t_recv"] for p in flow.arrivals]
    lowest = running_min(flow.d)

    def rule(g):
        m = min(window, g.s)
        span = t_recv[g.s] - t_recv[g.s - m]
        if m == 0 or span <= 0:
            return "congestion"
        backlog = m / span * (g.delay - lowest[g.s])
        return "wireless" if backlog < beta else "congestion"

    return rule


LDAS = {
    "unaware": lda_unaware,
    "biaz": lda_biaz,
    "mbiaz": lda_biaz,
    "spike": lda_spike,
    "zigzag": lda_zigzag,
    "zbs": lda_zbs,
    "win_ldaplus": lda_win_ldaplus,
    "wro_ldaplus": lda_wro_ldaplus,
    "xrtp": lda_xrtp,
    "veno": lda_veno,
}  # adaptive_rtt also needs the RTT samples and the clock: lda_decisions calls it itself


@twin_of(
    "ldanalyze.lda.base._detection_arrivals",
    "ldanalyze.lda.interarrival.running_tmin",
    "ldanalyze.lda.kernels.running_min_max",
    "ldanalyze.lda.kernels.ewma_mean_dev",
    "ldanalyze.lda.rott.hysteresis",
    "ldanalyze.lda.xrtp.xrtp_state",
    "ldanalyze.lda.zbs.zbs_schemes",
)
def lda_decisions(
    name, params, packets, rtt=(), *, update_first=True, gap_delay="revealing", detection=1, clock_common=True
) -> dict[int, str]:
    """{uid: congestion | wireless | undetected} for every lost transmission, replaying each flow
    as docs/ldas.md says: a gap's decision goes to every lost packet in its sequence range; a
    loss no detected gap contains is undetected; with no arrival in the state, congestion.

    ``rtt`` is a list of (flow, t, rtt) samples (adaptive_rtt); ``omniscient`` gives each
    detected loss its true cause (unknown cause: congestion).
    """
    unknown = set(params) - set(LDA_DEFAULTS[name])
    if unknown:
        raise TypeError(f"{name}: unknown parameters {sorted(unknown)}")
    options = {**LDA_DEFAULTS[name], **params}
    out = {}
    for label in dict.fromkeys(p["flow"] for p in packets):
        mine = [p for p in packets if p["flow"] == label]
        flow = flow_view(
            mine, min(p["seq"] for p in mine), detection=detection, gap_delay=gap_delay, update_first=update_first
        )
        rule = None  # omniscient: the truth decides
        if name == "adaptive_rtt":
            samples = [(t, x) for f, t, x in rtt if f == label]
            rule = lda_adaptive_rtt(flow, **options, rtt=samples, clock_common=clock_common, update_first=update_first)
        elif name != "omniscient":
            rule = LDAS[name](flow, **options)
        firsts = [g.first for g in flow.gaps]
        for p in mine:
            if p["fate"] not in LOSS_CAUSES:
                continue
            k = bisect.bisect_right(firsts, p["seq"]) - 1  # the last gap starting at or below seq
            gap = flow.gaps[k] if k >= 0 and p["seq"] <= flow.gaps[k].last else None
            out[p["uid"]] = decided(name, p, gap, rule)
    return out


def decided(name, p, gap, rule):
    """The decision on lost packet ``p`` of ``gap`` (None: no gap holds it): undetected without a
    decision arrival; omniscient: its cause; congestion with no state yet; else ``rule``'s."""
    if gap is None or gap.a is None:
        return "undetected"
    if name == "omniscient":
        return "wireless" if p["fate"] == "wireless" else "congestion"
    return "congestion" if gap.s < 0 else rule(gap)


def _ratio(a, b):
    """a / b, NaN when undefined or infinite."""
    if math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    out = a / b
    return out if math.isfinite(out) else math.nan


def _slope(ys):
    """Least-squares slope of ys against 0, 1, 2, ..."""
    m = len(ys)
    mean_j, mean_y = (m - 1) / 2, sum(ys) / m
    num = sum((j - mean_j) * (y - mean_y) for j, y in enumerate(ys))
    return num / sum((j - mean_j) ** 2 for j in range(m))


def _send_pace(sent, g):
    """The gap's send spacing over (n + 1) times the median of the last 16 send spacings of
    consecutive arrivals up to P_i (NaN with fewer than 3, or a median not above 0)."""
    if g.prev is None:
        return math.nan
    spacings = [sent[j] - sent[j - 1] for j in range(max(1, g.prev - 15), g.prev + 1)]
    if len(spacings) < 3 or statistics.median(spacings) <= 0:
        return math.nan
    return (sent[g.r] - sent[g.prev]) / ((g.n + 1) * statistics.median(spacings))


def _compressed(t, sent, s):
    """Of the last 16 spacings of consecutive arrivals up to s with a positive send spacing,
    the share received in under half of it (NaN with fewer than 3)."""
    pairs = [(t[j] - t[j - 1], sent[j] - sent[j - 1]) for j in range(max(1, s - 15), s + 1)]
    positive = [(received, gone) for received, gone in pairs if gone > 0]
    if len(positive) < 3:
        return math.nan
    return sum(received < 0.5 * gone for received, gone in positive) / len(positive)


@twin_of("ldanalyze.lda.learned.features.rolling_slope", "ldanalyze.lda.learned.features.pace_state")
def learned_features(packets, *, update_first=True, gap_delay="revealing", detection=1):
    """{(flow, first missing seq): feature dict} of every gap, as ldanalyze/lda/learned/features.py's
    docstring defines them, from the state arrival s of docs/ldas.md; NaN everywhere for a gap
    no arrival decides."""
    names = (
        "n",
        "ti_tmin",
        "rott_position",
        "rott_z",
        "jitter_tmin",
        "trend",
        "since_loss",
        "recent_lost",
        "biaz",
        "mbiaz",
        "spike",
        "zigzag",
        "policing",  # the detector's own twin (policed_gaps): filled in by the test
        "send_pace",
        "compressed",
        "unseen_on_air",
    )
    out = {}
    for label in dict.fromkeys(p["flow"] for p in packets):
        mine = [p for p in packets if p["flow"] == label]
        flow = flow_view(
            mine, min(p["seq"] for p in mine), detection=detection, gap_delay=gap_delay, update_first=update_first
        )
        t = [p["t_recv"] for p in flow.arrivals]
        sent = [p["t_send"] for p in flow.arrivals]
        tmin = running_min(flow.spacing)
        means, devs = zigzag_trace(flow.d, 1 / 32)
        jitter = rfc3550_jitter([(p["t_send"], p["t_recv"]) for p in flow.arrivals])
        rules = {
            "biaz": lda_biaz(flow, 2.0),
            "mbiaz": lda_biaz(flow, 1.25),
            "spike": lda_spike(flow, 1 / 2, 1 / 3),
            "zigzag": lda_zigzag(flow, 1 / 32, (-1, -1 / 2, 0, 1 / 2)),
        }
        for k, g in enumerate(flow.gaps):
            if g.a is None or g.s < 0:
                out[(label, g.first)] = dict.fromkeys(names, math.nan)
                continue
            s = g.s
            lo, hi = min(flow.d[: s + 1]), max(flow.d[: s + 1])
            span = hi - lo if hi > lo else math.nan
            window = flow.d[max(0, s - 7) : s + 1]
            trend = _slope(window) * 8 if len(window) >= 3 else math.nan
            earlier = flow.gaps[:k]
            row = {
                "n": float(g.n),
                "ti_tmin": _ratio(g.T, tmin[s]),
                "rott_position": _ratio(g.delay - lo, span),
                "rott_z": _ratio(g.delay - means[s], devs[s]),
                "jitter_tmin": _ratio(jitter[s], tmin[s]),
                "trend": _ratio(trend, span),
                "since_loss": _ratio(t[s] - t[earlier[-1].r], tmin[s]) if earlier else math.nan,
                "recent_lost": float(sum(e.n for e in earlier if e.r > s - 64)),
                "send_pace": _send_pace(sent, g),
                "compressed": _compressed(t, sent, s),
                "unseen_on_air": _unseen_on_air(flow.arrivals[g.r], g.n),
            }
            for name, rule in rules.items():
                row[name] = 1.0 if rule(g) == "wireless" else 0.0
            out[(label, g.first)] = row
    return out


def _unseen_on_air(revealing: dict, n: int) -> float:
    """The 802.11 numbers unseen across a gap over its losses, when its revealing frame was
    numbered from the receiver's own counter (QoS data) and the count is known."""
    unseen = revealing.get("air_unseen", -1)
    return unseen / n if unseen >= 0 and revealing.get("air_qos", False) else math.nan


@twin_of("ldanalyze.lda.policer.policed_gaps")
def policed_gaps(tl, lda, semantics=None) -> list[bool]:
    """The detector per gap, written plainly: for each decided gap of each flow, in order."""
    a = tl.arrivals.reset_index(drop=True)
    from ldanalyze.lda import Features, Replay  # the gaps' deciding arrivals and delays: shared input

    f = Features.of(tl, semantics or Replay())
    out = [False] * len(tl.gaps)
    history: dict[str, list] = {}
    for g, gap in tl.gaps.reset_index(drop=True).iterrows():
        s = int(f.si[g])
        if s < 0:
            continue
        flow = a.at[s, "flow"]
        mine = a[(a["flow"] == flow) & (a.index <= s)]
        window = mine[(mine["seq"] > a.at[s, "seq"] - lda.span) & (mine["seq"] < a.at[s, "seq"])]
        # the arrivals of the span, in arrival order back from the deciding one, stopping at the
        # first that falls outside it (reordering ends the span)
        chosen = []
        for i in range(s - 1, mine.index.min() - 1, -1):
            if i in window.index:
                chosen.append(i)
            else:
                break
        if not chosen:
            continue
        earliest = chosen[-1]
        arrived = len(chosen)
        delivered = float(a.loc[chosen[:-1], "size"].sum() + a.at[s, "size"])
        elapsed = a.at[s, "t_send"] - a.at[earliest, "t_send"]
        if arrived < 2 or not elapsed > 0:
            continue
        rate = delivered / elapsed
        offered = (a.at[s, "seq"] - a.at[earliest, "seq"]) * delivered / arrived / elapsed
        past = history.setdefault(flow, [])
        past.append((rate, int(gap["first_seq"])))
        if len(past) < lda.min_losses:
            continue
        recent = past[-lda.history :]
        plateau = statistics.median(r for r, _ in recent)
        pinned = abs(rate - plateau) <= lda.rate_tolerance * plateau
        low = (a.loc[mine.index, "t_recv"] - a.loc[mine.index, "t_send"]).min()
        quiet = f.gdelay[g] - low <= lda.max_delay_rise
        seqs = [q for _, q in past[-(lda.history + 1) :]]
        steps = np.diff(seqs)[-lda.history :]
        regular = steps.mean() > 0 and steps.std() / steps.mean() <= lda.regularity
        regular = regular and steps[-1] >= lda.in_step * np.median(steps)  # no sooner than the usual step
        out[g] = bool(pinned and quiet and (regular or offered >= lda.burst * plateau))
    return out


# ---------------------------------------------------------------------------------------------
# The sender's view (docs/ldas.md "The sender's view"): ACK samples for arrivals, the sender's
# loss detections for gaps, and the LDAs defined on it.
# ---------------------------------------------------------------------------------------------

SENDER_LOSS_CAUSES = (*LOSS_CAUSES, "policing")
SENDER_DEFAULTS = {
    "unaware": {},
    "omniscient": {},
    "spike@rtt": LDA_DEFAULTS["spike"],
    "zigzag@rtt": LDA_DEFAULTS["zigzag"],
    "wro_ldaplus@rtt": LDA_DEFAULTS["wro_ldaplus"],
    "adaptive_rtt": LDA_DEFAULTS["adaptive_rtt"],
    "veno_sender": {"beta": 3.0},
    "vegas": {"alpha": 1.0, "beta": 3.0},
}


def sender_flow_view(packets, acks, segment, *, detection, gap_delay, update_first):
    """One flow's sender's view: its ACKs with an RTT sample (in ACK order) as arrivals, with
    t_recv the ACK's time, t_send = t − rtt, seq its ``largest`` and ``window`` (segments: the
    logged cwnd, else in_flight + newly, over ``segment`` bytes); and per lost transmission with
    a detection time, the gap of the losses detected at that moment, decided at the last arrival
    at or before it. Returns the Flow and {uid: Gap or None (undetected)}."""
    arrivals = []
    for ack in sorted(acks, key=lambda a: a["t"]):  # stable: ties in the stream's order
        if math.isnan(ack["rtt"]):
            continue
        if ack["cwnd"] >= 0:
            window = ack["cwnd"] / segment
        elif ack["in_flight"] >= 0:
            window = (ack["in_flight"] + ack["newly"]) / segment
        else:
            window = math.nan
        arrivals.append({"t_recv": ack["t"], "t_send": ack["t"] - ack["rtt"], "seq": ack["largest"], "window": window})
    d, jitter, spacing = per_arrival(arrivals)
    moments: dict[float, list] = {}
    for p in packets:
        if p["fate"] in SENDER_LOSS_CAUSES and not math.isnan(p["t_detect"]):
            moments.setdefault(p["t_detect"], []).append(p)
    by_uid, gaps = {}, []
    for t_detect in sorted(moments):
        lost = moments[t_detect]
        before = [j for j, a in enumerate(arrivals) if a["t_recv"] <= t_detect]
        if not before:
            continue
        r = before[-1]
        prev = r - 1 if r > 0 else None
        a, count = None, 0
        for j in range(r, len(arrivals)):  # the detection-th ACK sample at or above seq_r
            if arrivals[j]["seq"] >= arrivals[r]["seq"]:
                count += 1
                if count == detection:
                    a = j
                    break
        at = r if gap_delay == "revealing" else prev
        gap = Gap(
            first=min(p["seq"] for p in lost),
            last=max(p["seq"] for p in lost),
            n=len(lost),
            r=r,
            prev=prev,
            T=math.nan if prev is None else arrivals[r]["t_recv"] - arrivals[prev]["t_recv"],
            at=at,
            delay=math.nan if at is None else d[at],
            a=a,
            s=None if a is None else (a if update_first else a - 1),
        )
        gaps.append(gap)
        for p in lost:
            by_uid[p["uid"]] = gap
    flow = Flow(arrivals=arrivals, d=d, jitter=jitter, spacing=spacing, gaps=gaps)
    return flow, by_uid


def sender_backlog(flow):
    """Per ACK sample, N = W·(RTT − BaseRTT)/RTT with BaseRTT the least RTT so far."""
    lowest = running_min(flow.d)
    return [a["window"] * (x - lo) / x for a, x, lo in zip(flow.arrivals, flow.d, lowest)]


def lda_veno_sender(flow, beta):
    """Veno's eq. (1) at the sender: N from the window at the state's ACK sample and the gap's
    RTT; wireless iff N < beta (an unknown N: congestion)."""
    lowest = running_min(flow.d)

    def rule(g):
        n = flow.arrivals[g.s]["window"] * (g.delay - lowest[g.s]) / g.delay
        return "wireless" if n < beta else "congestion"

    return rule


def lda_vegas(flow, alpha, beta):
    """Biaz and Vaidya's Vegas predictor: congestion predicted once Diff > beta, not once Diff <
    alpha, else as before; a loss is wireless where none is predicted."""
    predicted, state = [], False
    for diff in sender_backlog(flow):
        if diff > beta:
            state = True
        elif diff < alpha:
            state = False
        predicted.append(state)
    return lambda g: "congestion" if predicted[g.s] else "wireless"


SENDER_LDAS = {
    "unaware": lda_unaware,
    "spike@rtt": lda_spike,
    "zigzag@rtt": lda_zigzag,
    "wro_ldaplus@rtt": lda_wro_ldaplus,
    "veno_sender": lda_veno_sender,
    "vegas": lda_vegas,
}


@twin_of("ldanalyze.lda.sender.band_state", "ldanalyze.sender_timeline.detections")
def sender_lda_decisions(name, params, packets, acks, *, update_first=True, gap_delay="revealing", detection=1):
    """{uid: congestion | wireless | undetected} for every lost transmission of a sender's view
    (``packets``: dicts with flow, seq, uid, size, fate, t_detect; ``acks``: dicts of the ACK
    stream in its order), replaying each flow as docs/ldas.md "The sender's view" says."""
    unknown = set(params) - set(SENDER_DEFAULTS[name])
    if unknown:
        raise TypeError(f"{name}: unknown parameters {sorted(unknown)}")
    options = {**SENDER_DEFAULTS[name], **params}
    out = {}
    for label in dict.fromkeys(p["flow"] for p in packets):
        mine = [p for p in packets if p["flow"] == label]
        segment = statistics.median(p["size"] for p in mine)
        flow, gap_of = sender_flow_view(
            mine,
            [a for a in acks if a["flow"] == label],
            segment,
            detection=detection,
            gap_delay=gap_delay,
            update_first=update_first,
        )
        rule = None  # omniscient: the truth decides
        if name == "adaptive_rtt":
            # at a sender the arrivals are the RTT samples: "auto" is "rtt" (a flow without any
            # has no gap to decide)
            samples = [(a["t_recv"], x) for a, x in zip(flow.arrivals, flow.d)]
            mode = {**options, "delay": "rtt"} if options["delay"] == "auto" else options
            rule = lda_adaptive_rtt(flow, **mode, rtt=samples, clock_common=False, update_first=update_first)
        elif name != "omniscient":
            rule = SENDER_LDAS[name](flow, **options)
        for p in mine:
            if p["fate"] not in SENDER_LOSS_CAUSES:
                continue
            out[p["uid"]] = decided(name, p, gap_of.get(p["uid"]), rule)
    return out
