"""Plain, line-by-line twins of the fast kernels, written for reading, not for speed.

Tests compare every numba kernel and vectorised routine against these on generated input.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re


def rfc3550_jitter(transit_pairs):
    """RFC 3550 §6.4.1 / A.8: J += (|D| - J) / 16 over consecutive packets of one flow.

    ``transit_pairs`` is a list of (t_send, t_recv) in arrival order; returns J after each
    packet (0 after the first).
    """
    out, j, prev = [], 0.0, None
    for t_send, t_recv in transit_pairs:
        if prev is not None:
            d = (t_recv - prev[1]) - (t_send - prev[0])
            j = j + (abs(d) - j) / 16.0
        out.append(j)
        prev = (t_send, t_recv)
    return out


def wired_labels(lines, data_types=("tcpFriend", "cbr", "udp", "tcp", "exp"), error_events=("e",)):
    """The ns-2 wired ground-truth rule, one line at a time.

    Returns {uid: (fate, reason, t_send, t_recv)} with fate delivered/congestion/wireless/
    lost/None (None: neither received nor dropped; the flow-level rule decides later).
    """
    packets = {}
    for line in lines:
        f = line.split()
        if not f:
            continue
        ev, t, frm, to, ptype = f[0], float(f[1]), int(f[2]), int(f[3]), f[4]
        src_node, dst_node, uid = int(f[8].split(".")[0]), int(f[9].split(".")[0]), int(f[11])
        if ptype not in data_types:
            continue
        p = packets.setdefault(uid, {"last": None, "fate": None, "reason": "", "t_send": None, "t_recv": None})
        if p["t_send"] is None and frm == src_node:
            p["t_send"] = t
        if ev == "r" and to == dst_node and p["t_recv"] is None:
            p["t_recv"] = t
        if ev == "d" or ev in error_events:
            last = p["last"]
            if ev in error_events:
                p["fate"], p["reason"] = "wireless", "error-event"
            elif last is None or (last[1], last[2]) != (frm, to):
                p["fate"], p["reason"] = "wireless", "ingress-error"
            elif last[0] == "+":
                p["fate"], p["reason"] = "congestion", "queue"
            elif last[0] == "-":
                p["fate"], p["reason"] = "wireless", "link-error"
            else:
                p["fate"], p["reason"] = "lost", "after-receive"
            if p["t_send"] is None:
                p["t_send"] = t
        p["last"] = (ev, frm, to)
    out = {}
    for uid, p in packets.items():
        if p["t_recv"] is not None:
            out[uid] = ("delivered", "", p["t_send"], p["t_recv"])
        else:
            out[uid] = (p["fate"], p["reason"], p["t_send"], math.nan)
    return out


def receiver_gaps(arrival_seqs, first_seq):
    """Gaps a receiver detects from sequence numbers in arrival order.

    Returns a list of (arrival index, first missing seq, n) and the kind of every arrival
    (in_order / late / duplicate).
    """
    gaps, kinds, received = [], [], set()
    hi = first_seq - 1
    for i, s in enumerate(arrival_seqs):
        if s in received:
            kinds.append("duplicate")
        elif s > hi:
            kinds.append("in_order")
            if s > hi + 1:
                gaps.append((i, hi + 1, s - hi - 1))
            hi = s
        else:
            kinds.append("late")
        received.add(s)
    return gaps, kinds


def unwrap(seqs, modulus):
    """RFC 3550 A.1 style: each step is the signed difference nearest zero."""
    out = []
    for s in seqs:
        if not out:
            out.append(s)
            continue
        step = (s - out[-1]) % modulus
        if step >= (modulus + 1) // 2:
            step -= modulus
        out.append(out[-1] + step)
    return out


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
    "zbs": {"mbiaz_upper": 1.25},
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


def lda_zbs(flow, mbiaz_upper):
    """Paper 000 §VII-A: pick ZigZag, mBiaz or Spike from T_avg/T_min and the delay, with a lock
    of 50 arrivals or 3 s between switches; decide with the scheme in force."""
    d, t_recv = flow.d, [p["t_recv"] for p in flow.arrivals]
    seqs = [p["seq"] for p in flow.arrivals]
    tmin = running_min(flow.spacing)
    means, devs = zigzag_trace(d, 1 / 32)
    in_spike = spike_trace(d, 1 / 2, 1 / 3)
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
            return zigzag_rule(g, means[s], devs[s], LDA_DEFAULTS["zigzag"]["dev_factors"])
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
            if gap is None or gap.a is None:
                out[p["uid"]] = "undetected"
            elif name == "omniscient":
                out[p["uid"]] = "wireless" if p["fate"] == "wireless" else "congestion"
            elif gap.s < 0:
                out[p["uid"]] = "congestion"
            else:
                out[p["uid"]] = rule(gap)
    return out


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


def learned_features(packets, *, update_first=True, gap_delay="revealing", detection=1):
    """{(flow, first missing seq): feature dict} of every gap, as ldanalyze/lda/learned.py's
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
    )
    out = {}
    for label in dict.fromkeys(p["flow"] for p in packets):
        mine = [p for p in packets if p["flow"] == label]
        flow = flow_view(
            mine, min(p["seq"] for p in mine), detection=detection, gap_delay=gap_delay, update_first=update_first
        )
        t = [p["t_recv"] for p in flow.arrivals]
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
            }
            for name, rule in rules.items():
                row[name] = 1.0 if rule(g) == "wireless" else 0.0
            out[(label, g.first)] = row
    return out


# ---------------------------------------------------------------------------------------------
# --- rate controllers: plain twins of ldanalyze/control (docs/controllers.md) ---
# Input: ``arrivals``, a list of dicts per arrival (all flows, each contiguous, arrival order)
# with keys start, t_recv, t_send, t, seq, size, s, R, srtt, rttvar, rtt_min, rtt, jitter, new, capacity
# (bytes/s of its flow, NaN when unknown); and
# ``losses``, a list of dicts with keys at (arrival index), seq, t (nominal receive time),
# congestion (bool), sorted by at then seq. Output: the allowed rate in bytes/s per arrival.
# ---------------------------------------------------------------------------------------------


def losses_by_arrival(losses):
    """The losses grouped by the arrival that decides them (in their given order)."""
    grouped = {}
    for loss in losses:
        grouped.setdefault(loss["at"], []).append(loss)
    return grouped


def tfrc_weights(n):
    """RFC 5348 §5.4: the newer half weighs 1, the older half falls linearly."""
    return [1.0 if i < n / 2 else 1.0 - (i - (n / 2 - 1)) / (n / 2 + 1) for i in range(n)]


def tfrc_equation(s, R, p, b=1.0, rto_factor=4.0):
    """RFC 5348 §3.1 with t_RTO = rto_factor·R, in bytes/s."""
    t_rto = rto_factor * R
    return s / (R * math.sqrt(2 * b * p / 3) + t_rto * 3 * math.sqrt(3 * b * p / 8) * p * (1 + 32 * p * p))


def tfrc_p_for_rate(target, s, R, b=1.0, rto_factor=4.0):
    """The loss event rate at which the equation gives ``target`` (plain bisection on p)."""
    if tfrc_equation(s, R, 1.0, b, rto_factor) >= target:
        return 1.0
    if tfrc_equation(s, R, 1e-12, b, rto_factor) <= target:
        return 1e-12
    lo, hi = 1e-12, 1.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)  # bisect in log space: p spans twelve decades
        if tfrc_equation(s, R, mid, b, rto_factor) > target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


class TfrcHistory:
    """The receiver's loss history: closed intervals newest first, each with its discount."""

    def __init__(self, n, discounting):
        self.w = tfrc_weights(n)
        self.n = n
        self.discounting = discounting
        self.closed = []  # [length, discount] pairs, I_1 first

    def discount_factor(self, open_interval):
        if not self.discounting or not self.closed:
            return 1.0
        num = sum(length * self.w[i] * d for i, (length, d) in enumerate(self.closed))
        den = sum(self.w[i] * d for i, (_, d) in enumerate(self.closed))
        mean = num / den
        return max(0.5, 2 * mean / open_interval) if open_interval > 2 * mean else 1.0

    def mean_interval(self, open_interval):
        df = self.discount_factor(open_interval)
        # with the open interval: I_0 .. I_{k-1}; the closed ones discounted
        with_open = [(open_interval, self.w[0])]
        older = self.closed[: len(self.closed) - 1]  # all but the oldest: both sums have k terms
        with_open += [(length, self.w[i + 1] * d * df) for i, (length, d) in enumerate(older)]
        without = [(length, self.w[i] * d) for i, (length, d) in enumerate(self.closed)]
        avg = lambda pairs: sum(x * wt for x, wt in pairs) / sum(wt for _, wt in pairs)  # noqa: E731
        return max(avg(with_open), avg(without))

    def close(self, length, open_interval):
        df = self.discount_factor(open_interval)
        self.closed = [[length, 1.0]] + [[x, d * df] for x, d in self.closed]
        self.closed = self.closed[: self.n]


def controller_tfrc(arrivals, losses, n=8, discounting=False, b=1.0, rto_factor=4.0, t_mbi=64.0, receive="model"):
    """TFRC replay (RFC 5348 receiver §5-6, sender §4.3) as docs/controllers.md states it;
    ``receive="model"``: the receiver reports the modelled rate, at most the capacity, as X_recv."""
    out = []
    by_arrival = losses_by_arrival(losses)
    for i, a in enumerate(arrivals):
        s, R, t = a["s"], a["R"], a["t"]
        known_R = R == R and R > 0
        if a["start"]:
            history = TfrcHistory(n, discounting)
            event = None  # (nominal time, seq) of the current loss event's first loss
            X = s  # one packet per second until an RTT is known
            p = 0.0
            last_report, received = a["t_recv"], 0.0
            s_max = a["seq"]
            last_double = None
        received += a["size"]
        s_max = max(s_max, a["seq"])
        new_event = False
        for loss in by_arrival.get(i, []):
            if not loss["congestion"]:
                continue
            if event is None:
                elapsed = a["t_recv"] - last_report
                # the receiver cannot get faster than the modelled sender sends (open loop)
                if receive == "model":
                    target = min(X, a["capacity"]) if a["capacity"] > 0 else X
                else:
                    target = min(received / elapsed, X) if elapsed > 0 else X
                p_first = tfrc_p_for_rate(target, s, R, b, rto_factor) if known_R and target > 0 else 1.0
                history.closed = [[1.0 / p_first, 1.0]]
                event, new_event = (loss["t"], loss["seq"]), True
            elif not (known_R and loss["t"] <= event[0] + R):
                history.close(loss["seq"] - event[1], s_max - event[1] + 1)
                event, new_event = (loss["t"], loss["seq"]), True
        report = a["start"] or new_event or not known_R or a["t_recv"] - last_report >= R
        if report:
            elapsed = a["t_recv"] - last_report
            if receive == "model":  # what the network could have carried of the modelled rate
                x_recv = min(X, a["capacity"]) if a["capacity"] > 0 else X
            else:
                x_recv = min(received / elapsed, X) if elapsed > 0 else None
            if event is not None:
                p = 1.0 / history.mean_interval(s_max - event[1] + 1)
            last_report, received = a["t_recv"], 0.0
            if known_R:
                limit = 2 * x_recv if x_recv else math.inf
                initial = min(4 * s, max(2 * s, 4380)) / R
                if p > 0:
                    X = max(min(tfrc_equation(s, R, p, b, rto_factor), limit), s / t_mbi)
                elif last_double is None:
                    X, last_double = initial, t
                elif t - last_double >= R:
                    X, last_double = max(min(2 * X, limit), initial), t
        out.append(X)
    return out


CONTROLLER_TWINS = {"tfrc": controller_tfrc}


def controller_newreno(arrivals, losses, initial_window=2.0, max_window=None, min_rto=1.0):
    """AIMD window replay as docs/controllers.md states it (rate = usable window · s / SRTT)."""
    limit = math.inf if max_window is None else max_window
    by_arrival = losses_by_arrival(losses)
    out = []
    for i, a in enumerate(arrivals):
        if a["start"]:
            cwnd, ssthresh, reduced_at = initial_window, math.inf, None
        else:
            before = arrivals[i - 1]
            known = before["srtt"] == before["srtt"]
            rto = max(min_rto, before["srtt"] + 4 * before["rttvar"]) if known else 1.0
            if a["t_recv"] - before["t_recv"] > rto:  # a timeout: nothing was heard for an RTO
                ssthresh, cwnd, reduced_at = max(min(cwnd, limit) / 2, 2.0), 1.0, a["t_recv"]
        if a["new"]:
            cwnd += 1.0 if cwnd < ssthresh else 1.0 / cwnd
        for loss in by_arrival.get(i, []):
            same_window = reduced_at is not None and loss["t"] <= reduced_at + a["srtt"]
            if loss["congestion"] and not same_window:
                ssthresh = max(min(cwnd, limit) / 2, 2.0)
                cwnd, reduced_at = ssthresh, loss["t"]
        out.append(min(cwnd, limit) * a["s"] / a["srtt"])
    return out


CONTROLLER_TWINS["newreno"] = controller_newreno


def ldaplus_pftk(M, rtt, l, D=1.0):
    """Paper 002 eq. 1 (PFTK) with t_out = 4·rtt, in bytes/s."""
    t_out = 4 * rtt
    return M / (rtt * math.sqrt(2 * D * l / 3) + t_out * min(1.0, 3 * math.sqrt(3 * D * l / 8)) * l * (1 + 32 * l * l))


def controller_ldaplus(arrivals, losses, T=5.0, r_0=10_000.0, A_0=10_000.0, D=1.0):
    """LDA+ replay (paper 002 §2.1 eqs. 1-8, WLDA+ §3) as docs/controllers.md states it.

    Each arrival dict also needs ``capacity``: the bottleneck bandwidth of its flow in bytes/s
    (NaN when unknown). ``r_0`` and ``A_0`` are bits/s; rates inside are bytes/s.
    """
    out = []
    by_arrival = losses_by_arrival(losses)
    for i, a in enumerate(arrivals):
        if a["start"]:
            rate, increase = r_0 / 8, A_0 / 8
            interval_start = a["t_recv"]
            highest = a["seq"]
            highest_at_last_report = a["seq"] - 1
            reported = False
            congestion_losses = 0
        highest = max(highest, a["seq"])
        for loss in by_arrival.get(i, []):
            if loss["congestion"]:
                congestion_losses += 1
            if not reported:  # the first interval also expects the flow's first packets if lost
                highest_at_last_report = min(highest_at_last_report, loss["seq"] - 1)
        if a["t_recv"] >= interval_start + T:
            expected = highest - highest_at_last_report
            l = congestion_losses / max(expected, congestion_losses) if congestion_losses else 0.0
            tau, M = a["R"], a["s"]
            if tau > 0:  # False for NaN: with no RTT known yet the report changes nothing
                if l > 0:
                    rate = max(rate * (1 - math.sqrt(l)), ldaplus_pftk(M, tau, l, D))
                    increase = A_0 / 8
                else:
                    capacity = a["capacity"]
                    share = 0.0 if math.isnan(capacity) else rate / capacity  # unknown: unbounded
                    a_add = increase + (1 - share) * increase
                    # far above the capacity e^(share-1) overflows a float: A_exp is then −∞ (numpy's)
                    a_exp = (1 - math.exp(share - 1)) * rate if share - 1 < 700 else -math.inf
                    a_tcp = M * (T / tau + 1) / (2 * tau)
                    increase = max(0.0, min(a_add, a_exp, a_tcp))
                    rate += increase
            interval_start = a["t_recv"]
            highest_at_last_report = highest
            reported = True
            congestion_losses = 0
        out.append(rate)
    return out


CONTROLLER_TWINS["ldaplus"] = controller_ldaplus


def xrtp_kde(window, width, n):
    """Paper 001 eq. 3 from scratch (O(n²)): the density at every sample of the window with the
    triangular kernel and width h(x) = width·x, normalised by the window's capacity n; returns
    the density-weighted mean of the samples (the KDE estimate)."""
    densities = []
    for x in window:
        h = width * x
        total = sum(max(0.0, 1.0 - abs(x - y) / h) for y in window)
        densities.append(total / (n * h))
    return sum(d * x for d, x in zip(densities, window)) / sum(densities)


def controller_xrtp(
    arrivals, losses, estimator="kde", alpha=0.8, n=8, width=0.25, pair_gap=0.0005, jitters=3, halving="event"
):
    """XRTP replay (paper 001 §III-B/C) as docs/controllers.md states it.

    Each arrival dict also needs ``t_send`` (the packet's send time, s): packet pairs are found
    from the send spacing.
    """
    out = []
    by_arrival = losses_by_arrival(losses)
    prev = None
    for i, a in enumerate(arrivals):
        if a["start"]:
            window = []  # the last n packet-pair samples, oldest first
            positive = []  # the last ``jitters`` positive jitters
            rate = None  # no rate before the first sample
            event_time = None  # nominal time of the current loss event's first loss
        else:
            pair = a["seq"] == prev["seq"] + 1 and abs(a["t_send"] - prev["t_send"]) <= pair_gap
            spacing = a["t_recv"] - prev["t_recv"]
            if pair and spacing > 0 and a["size"] > 0:
                sample = a["size"] / spacing  # eq. 2, bytes/s
                if estimator == "kde":
                    window = (window + [sample])[-n:]
                    new = xrtp_kde(window, width, n)
                else:
                    new = sample
                rate = new if rate is None else alpha * rate + (1 - alpha) * new  # eq. 4
        if a["jitter"] > 0:  # NaN (a flow's first arrival) is not positive
            positive = (positive + [a["jitter"]])[-jitters:]
            if len(positive) == jitters and rate is not None:
                rate = min(rate, jitters * a["s"] / sum(positive))  # eq. 10, jitters in seconds
        for loss in by_arrival.get(i, []):
            if not loss["congestion"]:
                continue
            joins = halving == "event" and event_time is not None and loss["t"] <= event_time + a["R"]
            if not joins:
                event_time = loss["t"]
                if rate is not None:
                    rate = rate / 2
        out.append(math.nan if rate is None else rate)
        prev = a
    return out


CONTROLLER_TWINS["xrtp"] = controller_xrtp


def westwood_estimate(group, earlier, last, past_U, a, abse, tau, beta, N, history):
    """Paper 004's estimator step for the current ACK group (ACKs that reached the sender at one
    instant count as one cumulative ACK). ``earlier``: the flow's arrivals before the group;
    ``last``: the result of the last group that gave a sample (None before the first);
    ``past_U``: the U of every group that gave a sample, oldest first. Returns the group's
    result {ere, sample, U} (bytes/s), or None when it gives no sample."""
    dt = group["dt"]
    if dt is None:  # a flow's first ACK: no pair yet
        return None
    acked = sum(ack["size"] for ack in group["acks"])
    if not abse:  # BE: the last ACK pair, fixed tau
        sample, tau_k, U = acked / dt, tau, None
    else:
        rtt = a["srtt"]
        if rtt != rtt:  # no RTT estimate yet: ABSE takes no sample
            return None
        T = dt  # eqs. 2-3: T_min (the ACK inter-arrival) unless the path is congested
        if last is not None:
            backlog = group["window"] - last["ere"] * a["rtt_min"] / a["s"]
            if backlog > 0:
                T = max(dt, rtt * backlog / group["window"])
        inside = acked
        if T > dt:  # eq. 4: the ACKs with t_j > t_k - T_k (earlier is in time order)
            for e in reversed(earlier):
                if not e["t"] > group["t"] - T:
                    break
                inside += e["size"]
        sample = inside / T
        U = beta * last["U"] + (1.0 - beta) * abs(sample - last["sample"]) if last is not None else 0.0  # eq. 5
        U_max = max([U] + past_U[max(0, len(past_U) - (history - 1)) :])  # the last `history` U
        tau_k = rtt + N * rtt * (U / U_max if U_max > 0 else 0.0)  # eq. 6
    if last is None:  # the first sample initialises the estimate
        return {"ere": sample, "sample": sample, "U": U}
    alpha = max(0.0, (2.0 * tau_k - dt) / (2.0 * tau_k + dt))  # eq. 1, clamped at 0
    return {"ere": alpha * last["ere"] + (1.0 - alpha) * sample, "sample": sample, "U": U}


def controller_westwood(
    arrivals,
    losses,
    abse,
    tau=1.0,
    beta=0.6,
    N=10.0,
    history=10,
    initial_window=2.0,
    max_window=None,
    min_rto=1.0,
    lda_in_slow_start=True,
):
    """TCP Westwood replay (paper 004 §2-3; paper 003 §3.2 with an LDA) as docs/controllers.md
    states it: rate = usable window · s / SRTT."""
    limit = math.inf if max_window is None else max_window
    by_arrival = losses_by_arrival(losses)
    out = []
    for i, a in enumerate(arrivals):
        if a["start"]:
            cwnd, ssthresh, reduced_at = initial_window, math.inf, None
            earlier, group, last, past_U, result = [], None, None, [], None
            ere = math.nan
        else:
            before = arrivals[i - 1]
            known = before["srtt"] == before["srtt"]
            rto = max(min_rto, before["srtt"] + 4 * before["rttvar"]) if known else 1.0
            if a["t_recv"] - before["t_recv"] > rto:  # a timeout: ssthresh from the estimate then
                target = ere * before["rtt_min"] / a["s"]
                ssthresh = max(target if target == target else min(cwnd, limit) / 2, 2.0)
                cwnd, reduced_at = 1.0, a["t_recv"]
        if group is None or a["t"] > group["t"]:  # a new ACK group: the previous one is final
            dt = None
            if group is not None:
                if result is not None:
                    last = result
                    past_U.append(result["U"])
                earlier += group["acks"]
                dt = a["t"] - group["t"]
            group = {"t": a["t"], "dt": dt, "acks": [], "window": min(cwnd, limit)}
        group["acks"].append(a)
        result = westwood_estimate(group, earlier, last, past_U, a, abse, tau, beta, N, history)
        ere = result["ere"] if result is not None else (last["ere"] if last is not None else math.nan)
        if a["new"]:
            cwnd += 1.0 if cwnd < ssthresh else 1.0 / cwnd
        for loss in by_arrival.get(i, []):
            acts = loss["congestion"] or (not lda_in_slow_start and cwnd < ssthresh)
            same_window = reduced_at is not None and loss["t"] <= reduced_at + a["srtt"]
            if acts and not same_window:  # "3 DUPACKs": ssthresh = ERE·RTT_min/seg
                target = ere * a["rtt_min"] / a["s"]
                ssthresh = max(target if target == target else min(cwnd, limit) / 2, 2.0)
                cwnd, reduced_at = min(cwnd, ssthresh), loss["t"]
        out.append(min(cwnd, limit) * a["s"] / a["srtt"])
    return out


def controller_westwood_be(arrivals, losses, tau=1.0, **window):
    """Westwood with the BE estimator: one sample per ACK pair, fixed tau."""
    return controller_westwood(arrivals, losses, False, tau=tau, **window)


def controller_westwood_abse(arrivals, losses, beta=0.6, N=10.0, history=10, **window):
    """Westwood with the ABSE estimator: adaptive T_k and tau_k."""
    return controller_westwood(arrivals, losses, True, beta=beta, N=N, history=history, **window)


CONTROLLER_TWINS["westwood_be"] = controller_westwood_be
CONTROLLER_TWINS["westwood_abse"] = controller_westwood_abse


# --- captures ---------------------------------------------------------------------------------
# A readable, struct-based reader of pcap and pcapng captures, written from the file format
# specifications and ldanalyze/io/capture/linklayer.py's docstring: the twin of the numba kernels of
# ldanalyze.io.capture.walk (decode_capture), and of the one-point receiver rules of
# ldanalyze/io/capture/payload.py. One dict per record; flows are 5-tuples.

import ipaddress as _ipaddress  # noqa: E402 - this section's own imports (tests/naive.py is sectioned)
import struct as _struct  # noqa: E402

CAPTURE_HASH_BYTES = 32
_MASK64 = (1 << 64) - 1
_HASH_M1, _HASH_M2, _HASH_M3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def capture_mix64(h):
    """splitmix64's finaliser."""
    h = ((h ^ (h >> 30)) * _HASH_M2) & _MASK64
    h = ((h ^ (h >> 27)) * _HASH_M3) & _MASK64
    return h ^ (h >> 31)


def capture_payload_hash(payload_len, data):
    """The payload length, then up to 32 payload bytes as little-endian 64-bit words."""
    h = (payload_len * _HASH_M1) & _MASK64
    data = data[: min(payload_len, CAPTURE_HASH_BYTES)]
    for k in range(0, len(data), 8):
        word = int.from_bytes(data[k : k + 8], "little")
        h = ((h ^ word) * _HASH_M2) & _MASK64
        h ^= h >> 29
    return capture_mix64(h)


class _TooShort(Exception):
    pass


def _need(frame, at, n):
    if len(frame) < at + n:
        raise _TooShort


def capture_records(data, head_bytes=16):
    """Every record of a pcap or pcapng capture (bytes), decoded: a list of dicts."""
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        return list(_pcapng_records(data, head_bytes))
    return list(_pcap_records(data, head_bytes))


def _pcap_records(data, head_bytes):
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    else:
        e = ">"
    nano = _struct.unpack(e + "I", magic)[0] == 0xA1B23C4D
    linktype = _struct.unpack(e + "I", data[20:24])[0] & 0xFFFF
    at = 24
    while at + 16 <= len(data):
        sec, frac, incl, orig = _struct.unpack(e + "IIII", data[at : at + 16])
        if at + 16 + incl > len(data):
            break  # a record cut by the end of the file
        frame = data[at + 16 : at + 16 + incl]
        ts = sec * 1_000_000_000 + frac * (1 if nano else 1000)
        yield decode_frame_naive(frame, max(orig, incl), linktype, head_bytes, ts_ns=ts, offset=at, iface=0)
        at += 16 + incl


def _pcapng_records(data, head_bytes):
    at, e, interfaces, first_iface = 0, "<", [], 0
    while at + 12 <= len(data):
        if data[at : at + 4] == b"\x0a\x0d\x0d\x0a":
            e = "<" if data[at + 8 : at + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            first_iface += len(interfaces)
            interfaces = []
        btype, blen = _struct.unpack(e + "II", data[at : at + 8])
        if at + blen > len(data):
            break
        body = data[at + 8 : at + blen - 4]
        if btype == 1:  # interface description
            linktype, _, snaplen = _struct.unpack(e + "HHI", body[:8])
            units, offset_s = 10**6, 0
            o = 8
            while o + 4 <= len(body):
                code, length = _struct.unpack(e + "HH", body[o : o + 4])
                value = body[o + 4 : o + 4 + length]
                if code == 0:
                    break
                if code == 9:
                    units = 2 ** (value[0] & 0x7F) if value[0] & 0x80 else 10 ** value[0]
                if code == 14:
                    offset_s = _struct.unpack(e + "q", value[:8])[0]
                o += 4 + (length + 3) // 4 * 4
            interfaces.append((linktype, snaplen, units, offset_s))
        elif btype in (6, 2):  # enhanced / obsolete packet block
            if btype == 6:
                iface, hi, lo, caplen, orig = _struct.unpack(e + "IIIII", body[:20])
            else:
                iface, _, hi, lo, caplen, orig = _struct.unpack(e + "HHIIII", body[:20])
            linktype, _, units, offset_s = interfaces[iface]
            ticks = (hi << 32) | lo
            ts = ticks * 1_000_000_000 // units + offset_s * 1_000_000_000
            yield decode_frame_naive(
                body[20 : 20 + caplen],
                max(orig, caplen),
                linktype,
                head_bytes,
                ts_ns=ts,
                offset=at,
                iface=first_iface + iface,
            )
        elif btype == 3:  # simple packet block: interface 0, its snap length, no time
            linktype, snaplen, _, _ = interfaces[0]
            orig = _struct.unpack(e + "I", body[:4])[0]
            caplen = min(orig, len(body) - 4)
            if snaplen:
                caplen = min(caplen, snaplen)
            yield decode_frame_naive(
                body[4 : 4 + caplen], max(orig, caplen), linktype, head_bytes, ts_ns=None, offset=at, iface=first_iface
            )
        at += blen


def decode_frame_naive(frame, wirelen, linktype, head_bytes=16, **record):
    """One frame → a dict of its decoded fields (see ldanalyze/io/capture/linklayer.py)."""
    rec = dict(
        record,
        caplen=len(frame),
        wirelen=wirelen,
        status="decoded",
        flow=None,
        first_fragment=False,
        ip_ver=0,
        proto=0,
        ttl=0,
        ip_len=0,
        ip_id=0,
        payload_len=0,
        head=b"",
        payload_hash=0,
        tcp_seq=0,
        tcp_ack=0,
        tcp_flags=0,
        tcp_tsval=None,
        tcp_tsecr=None,
        tcp_mss=None,
    )
    try:
        status = _decode_into(rec, frame, wirelen, linktype, head_bytes)
    except _TooShort:
        status = "too_short"
    rec["status"] = status
    if status != "decoded":
        rec["flow"] = None
    return rec


def _ip_start(frame, linktype):
    """(offset of the IP header, version) or (None, status)."""
    pad = False
    while True:
        if linktype == 1:  # Ethernet, VLAN tags
            _need(frame, 0, 14)
            at, ethertype = 14, _struct.unpack(">H", frame[12:14])[0]
            while ethertype in (0x8100, 0x88A8, 0x9100):
                _need(frame, at, 4)
                ethertype = _struct.unpack(">H", frame[at + 2 : at + 4])[0]
                at += 4
            return (at, {0x0800: 4, 0x86DD: 6}[ethertype]) if ethertype in (0x0800, 0x86DD) else (None, "not_ip")
        if linktype in (101, 228, 229):
            _need(frame, 0, 1)
            version = frame[0] >> 4
            if (linktype == 228 and version != 4) or (linktype == 229 and version != 6):
                return None, "malformed"
            return (0, version) if version in (4, 6) else (None, "not_ip")
        if linktype in (0, 108):
            _need(frame, 0, 4)
            family = _struct.unpack("<I", frame[:4])[0]
            if family > 0xFFFF:
                family = _struct.unpack(">I", frame[:4])[0]
            if family == 2:
                return 4, 4
            return (4, 6) if family in (10, 24, 28, 30) else (None, "not_ip")
        if linktype in (113, 276):
            size = 16 if linktype == 113 else 20
            _need(frame, 0, size)
            ethertype = _struct.unpack(">H", frame[14:16] if linktype == 113 else frame[0:2])[0]
            at = size
            while ethertype in (0x8100, 0x88A8, 0x9100):
                _need(frame, at, 4)
                ethertype = _struct.unpack(">H", frame[at + 2 : at + 4])[0]
                at += 4
            return (at, {0x0800: 4, 0x86DD: 6}[ethertype]) if ethertype in (0x0800, 0x86DD) else (None, "not_ip")
        if linktype == 127:  # radiotap
            _need(frame, 0, 8)
            length, present = _struct.unpack("<HI", frame[2:8])
            _need(frame, 0, length)
            if length < 8:
                raise _TooShort
            flags = _radiotap_flags_naive(frame[:length], present)
            if flags & 0x40:
                return None, "bad_fcs"
            pad = bool(flags & 0x20)
            frame, linktype = frame[length:], 105
            offset_shift = length
            inner_at, result = _ip_start_80211(frame, pad)
            return (inner_at + offset_shift, result) if inner_at is not None else (None, result)
        if linktype == 192:  # PPI
            _need(frame, 0, 8)
            length, inner = _struct.unpack("<HI", frame[2:8])
            if length < 8:
                raise _TooShort
            _need(frame, 0, length)
            if inner in (192, 127):
                return None, "unsupported_link"
            at, result = _ip_start(frame[length:], inner)
            return (at + length, result) if at is not None else (None, result)
        if linktype == 105:
            return _ip_start_80211(frame, pad)
        return None, "unsupported_link"


def _radiotap_flags_naive(header, present):
    at, word = 8, present
    while word & 0x80000000:
        if at + 4 > len(header):
            return 0
        word = _struct.unpack("<I", header[at : at + 4])[0]
        at += 4
    if not present & 0x2:
        return 0
    if present & 0x1:  # TSFT, 8-byte aligned
        at = (at + 7) // 8 * 8 + 8
    return header[at] if at < len(header) else 0


def _ip_start_80211(frame, pad):
    _need(frame, 0, 2)
    fc0, fc1 = frame[0], frame[1]
    kind, subtype = (fc0 >> 2) & 3, fc0 >> 4
    if kind != 2 or subtype & 4:
        return None, "wifi_not_data"
    if fc1 & 0x40:
        return None, "wifi_protected"
    header = 24 + (6 if fc1 & 3 == 3 else 0)
    if subtype & 8:
        header += 2 + (4 if fc1 & 0x80 else 0)
    if pad:
        header = (header + 3) // 4 * 4
    _need(frame, header, 8)
    llc = frame[header : header + 8]
    if llc[:3] != b"\xaa\xaa\x03":
        return None, "not_ip"
    ethertype = _struct.unpack(">H", llc[6:8])[0]
    return (header + 8, {0x0800: 4, 0x86DD: 6}[ethertype]) if ethertype in (0x0800, 0x86DD) else (None, "not_ip")


def _decode_into(rec, frame, wirelen, linktype, head_bytes):
    at, version = _ip_start(frame, linktype)
    if at is None:
        return version
    rec["ip_ver"] = version
    later_fragment = False
    if version == 4:
        _need(frame, at, 20)
        if frame[at] >> 4 != 4 or (frame[at] & 15) * 4 < 20:
            return "malformed"
        ihl = (frame[at] & 15) * 4
        _need(frame, at, ihl)
        total, ident, frag, ttl, proto = _struct.unpack(">HHHBB", frame[at + 2 : at + 10])
        if total == 0:
            total = wirelen - at
        if total < ihl:
            return "malformed"
        rec.update(ip_id=ident, ttl=ttl)
        src, dst = _ip4(frame[at + 12 : at + 16]), _ip4(frame[at + 16 : at + 20])
        l4, ip_end = at + ihl, at + total
        later_fragment = bool(frag & 0x1FFF)
        rec["first_fragment"] = not later_fragment and bool(frag & 0x2000)
    else:
        _need(frame, at, 40)
        if frame[at] >> 4 != 6:
            return "malformed"
        plen, proto, ttl = _struct.unpack(">HBB", frame[at + 4 : at + 8])
        if plen == 0:
            plen = wirelen - at - 40
        rec["ttl"] = ttl
        src, dst = _ip6(frame[at + 8 : at + 24]), _ip6(frame[at + 24 : at + 40])
        l4, ip_end = at + 40, at + 40 + plen
        while proto in (0, 43, 60, 44, 51, 135):
            _need(frame, l4, 8)
            following = frame[l4]
            if proto == 44:
                offset_m, ident = _struct.unpack(">HI", frame[l4 + 2 : l4 + 8])
                rec["ip_id"] = ident
                later_fragment = bool(offset_m >> 3)
                rec["first_fragment"] = not later_fragment and bool(offset_m & 1)
                size = 8
            elif proto == 51:
                size = (frame[l4 + 1] + 2) * 4
            else:
                size = (frame[l4 + 1] + 1) * 8
            proto, l4 = following, l4 + size
            if later_fragment:
                break
        if ip_end < l4:
            return "malformed"
    rec["proto"] = proto
    rec["ip_len"] = ip_end - at
    if later_fragment:
        return "ip_fragment"
    sport = dport = 0
    if proto == 17:
        _need(frame, l4, 8)
        sport, dport, length = _struct.unpack(">HHH", frame[l4 : l4 + 6])
        if length >= 8:
            payload_len = length - 8
            if rec["first_fragment"]:
                rec["ip_len"] = l4 - at + length
        else:
            payload_len = ip_end - l4 - 8
        payload_at = l4 + 8
    elif proto == 6:
        _need(frame, l4, 20)
        offset = (frame[l4 + 12] >> 4) * 4
        if offset < 20:
            return "malformed"
        _need(frame, l4, offset)
        sport, dport, seq, ack = _struct.unpack(">HHII", frame[l4 : l4 + 12])
        rec.update(tcp_seq=seq, tcp_ack=ack, tcp_flags=frame[l4 + 13])
        options = frame[l4 + 20 : l4 + offset]
        o = 0
        while o < len(options):
            kind = options[o]
            if kind == 0:
                break
            if kind == 1:
                o += 1
                continue
            if o + 1 >= len(options) or options[o + 1] < 2 or o + options[o + 1] > len(options):
                break
            length = options[o + 1]
            if kind == 2 and length == 4:
                rec["tcp_mss"] = _struct.unpack(">H", options[o + 2 : o + 4])[0]
            if kind == 8 and length == 10:
                rec["tcp_tsval"], rec["tcp_tsecr"] = _struct.unpack(">II", options[o + 2 : o + 10])
            o += length
        payload_len = ip_end - l4 - offset
        payload_at = l4 + offset
    else:
        header = 4 if proto in (33, 132, 136) else 0
        _need(frame, l4, header)
        if header:
            sport, dport = _struct.unpack(">HH", frame[l4 : l4 + 4])
        payload_len = ip_end - l4 - header
        payload_at = l4 + header
    if payload_len < 0:
        return "malformed"
    captured = frame[payload_at : payload_at + payload_len]
    rec["payload_len"] = payload_len
    rec["head"] = captured[:head_bytes]
    if len(captured) >= min(payload_len, CAPTURE_HASH_BYTES):
        rec["payload_hash"] = capture_payload_hash(payload_len, captured)
    rec["flow"] = (version, proto, src, sport, dst, dport)
    return "decoded"


def _ip4(raw):
    return ".".join(str(b) for b in raw)


def _ip6(raw):
    return str(_ipaddress.IPv6Address(raw))


def read_field(head_rows, offset, width, order="big", signed=False):
    """A payload field of each row (a sequence of bytes a packet), one row at a time."""
    return [int.from_bytes(bytes(row[offset : offset + width]), order, signed=signed) for row in head_rows]


def receiver_rows_naive(arrivals, gap_reason="seq-gap"):
    """The receiver-side rule for one sequence space, one packet at a time.

    ``arrivals``: (seq, t_send, t_recv, size) in arrival order, seq unwrapped. Returns the
    delivered rows, then one lost row per sequence number missing between the smallest and the
    largest seen, with t_send interpolated linearly between the in-order arrivals around it and
    the median size.
    """
    rows = [{"seq": s, "t_send": ts, "t_recv": tr, "size": size, "fate": "delivered"} for s, ts, tr, size in arrivals]
    in_order, best = [], None
    for s, ts, _, _ in arrivals:
        if best is None or s > best:
            in_order.append((s, ts))
            best = s
    seen = {s for s, _, _, _ in arrivals}
    sizes = sorted(size for _, _, _, size in arrivals)
    mid = len(sizes) // 2
    median = sizes[mid] if len(sizes) % 2 else (sizes[mid - 1] + sizes[mid]) / 2
    for s in range(min(seen), max(seen) + 1):
        if s in seen:
            continue
        below = max((p for p in in_order if p[0] < s), key=lambda p: p[0])
        above = min((p for p in in_order if p[0] > s), key=lambda p: p[0])
        t_send = below[1] + (above[1] - below[1]) * (s - below[0]) / (above[0] - below[0])
        rows.append(
            {"seq": s, "t_send": t_send, "t_recv": math.nan, "size": int(median), "fate": "lost", "reason": gap_reason}
        )
    return rows


def tcp_segment_numbers_naive(segments, mss):
    """Packet index of each (start byte, length) segment, following ldanalyze/io/capture/tcp.py:
    distinct starts in byte order; a hole of h bytes before a start adds ceil(h / mss); a start
    whose bytes were all covered before takes the index of the last start that was not."""
    starts = sorted({s for s, _ in segments})
    length = {s: max(n for t, n in segments if t == s) for s in starts}
    index, covered_to, current = {}, None, None
    for s in starts:
        end = s + length[s]
        if covered_to is None:
            current = -(-max(s, 0) // mss)
        elif end > covered_to:
            current += 1 + -(-max(s - covered_to, 0) // mss)
        index[s] = current
        covered_to = end if covered_to is None else max(covered_to, end)
    return [index[s] for s, _ in segments]


# --- clocks -----------------------------------------------------------------------------------
def lower_envelope_naive(t, d, tolerance=1e-9):
    """The Moon-Skelly-Towsley LP by brute force: among the lines through two points with
    different send times that no point lies below, the one with the smallest total distance
    to the points, as (total distance, slope). One distinct send time: slope 0 under the
    lowest point. ``tolerance`` (relative to the delays' range) absorbs rounding."""
    points = list(zip(t, d))
    slack = tolerance * (max(d) - min(d) + 1.0)
    best = (sum(y - min(d) for y in d), 0.0) if len(set(t)) == 1 else None
    for i, (ti, di) in enumerate(points):
        for tj, dj in points[i + 1 :]:
            if tj == ti:
                continue
            slope = (dj - di) / (tj - ti)
            line = [di + slope * (x - ti) for x in t]
            if all(y >= h - slack for y, h in zip(d, line)):
                total = sum(y - h for y, h in zip(d, line))
                if best is None or total < best[0]:
                    best = (total, slope)
    return best


# ---------------------------------------------------------------------------------------------
# --- ns-2 wireless: the plain twin of ldanalyze/io/ns2/cmu_scan.py + wireless.py's assembly ---
# One line at a time, fields split on white space (the rules: wireless.py's docstring).
# ---------------------------------------------------------------------------------------------

CMU_TAGGED_EVENTS = {"+": "s", "h": "f", "r": "r", "d": "D"}


def _cmu_int(text):
    """A signed decimal integer of at most 18 digits (ASCII only), as the scanner reads it."""
    if not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
        raise ValueError(text)
    return int(text)


def _cmu_float(text):
    if not re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text):
        raise ValueError(text)
    return float(text)


def _cmu_format(f):
    """io/detect.py's line_format, restated."""
    if len(f) < 3:
        return None
    wireless = {"s", "r", "f", "D", "d", "M", "N"}
    if f[1] == "-t" and f[0] in wireless:
        return "new"
    if f[0] in wireless and f[2].startswith("_") and f[2].endswith("_"):
        return "old"
    if f[0] in {"+", "h", "r", "d"} and f[2] == "-s" and "-k" in f[3:]:
        return "tagged"
    if f[0] in {"+", "-", "r", "d"} and len(f) == 12:
        return "wired"
    return None


def _cmu_pairs(f, first):
    """-key value pairs from token ``first`` on; a braced value spans to its closing brace;
    the first occurrence of a key wins."""
    kv, j = {}, first
    while j + 1 < len(f):
        key, value = f[j], f[j + 1]
        j += 2
        if value.startswith("{"):
            while not f[j - 1].endswith("}") and j < len(f):
                j += 1
        kv.setdefault(key, value)
    return kv


def cmu_line(text):
    """One line → "blank", None (no packet event: skipped), ("wired",), or a dict of its
    fields. Raises ValueError where a fixed field does not read."""
    f = text.split()
    if not f:
        return "blank"
    fmt = _cmu_format(f)
    if fmt == "wired":
        return ("wired",)
    packet = f[0] in {"s", "r", "f", "D", "d"} or (fmt == "tagged" and f[0] in {"+", "h"})
    if fmt is None or not packet:
        return None
    rec = {"src": None, "dst": None, "seq": None}
    if fmt == "old":
        rec["ev"] = "D" if f[0] == "d" else f[0]
        rec["time"] = _cmu_float(f[1])
        rec["node"] = _cmu_int(f[2][1:-1])
        rec["level"], rec["reason"] = f[3], f[4]
        rec["uid"], rec["ptype"], rec["size"] = _cmu_int(f[5]), f[6], _cmu_int(f[7])
        for j in range(8, len(f) - 3):
            if f[j].startswith("[") and ":" in f[j] and ":" in f[j + 1]:
                rec["src"] = f[j][1:].replace(":", ".", 1)
                rec["dst"] = f[j + 1].replace(":", ".", 1)
                if j + 4 < len(f) and f[j + 4].startswith("["):
                    rec["seq"] = f[j + 4]
                break
    elif fmt == "new":
        kv = _cmu_pairs(f, 1)
        rec["ev"] = "D" if f[0] == "d" else f[0]
        rec["time"] = _cmu_float(kv["-t"])
        node = kv.get("-Ni", kv.get("-Hs"))
        if node is None:
            raise ValueError("no node")
        rec["node"] = _cmu_int(node)
        rec["level"], rec["reason"] = kv.get("-Nl", ""), kv.get("-Nw", "---")
        rec["uid"] = _cmu_int(kv["-Ii"]) if "-Ii" in kv else -1
        rec["ptype"] = kv.get("-It", "")
        rec["size"] = _cmu_int(kv["-Il"]) if "-Il" in kv else 0
        rec["src"], rec["dst"] = kv.get("-Is"), kv.get("-Id")
        rec["seq"] = kv.get("-Pi", kv.get("-Ps"))
    else:
        kv = _cmu_pairs(f, 2)
        rec["ev"] = CMU_TAGGED_EVENTS[f[0]]
        rec["time"] = _cmu_float(f[1])
        rec["node"] = _cmu_int(kv["-s"])
        rec["level"], rec["reason"] = kv.get("-k", ""), "?"
        rec["uid"] = _cmu_int(kv["-i"]) if "-i" in kv else -1
        rec["ptype"] = kv.get("-p", "")
        rec["size"] = _cmu_int(kv["-e"]) if "-e" in kv else 0
        if "-IP:s" in kv and "-IP:d" in kv:
            try:
                src = f"{_cmu_int(kv['-IP:s'])}.{_cmu_int(kv.get('-IP:sp', '0'))}"
                dst = f"{_cmu_int(kv['-IP:d'])}.{_cmu_int(kv.get('-IP:dp', '0'))}"
                rec["src"], rec["dst"] = src, dst
            except ValueError:
                pass
        rec["seq"] = kv.get(f"-{rec['ptype']}:s", kv.get("-tcp:s"))
    return rec


def _cmu_address(text):
    """'node.port' → the same text with its parts as integers, or None."""
    try:
        node, port = text.lstrip("[").split(".", 1)
        return f"{_cmu_int(node)}.{_cmu_int(port)}"
    except ValueError:
        return None


def _cmu_seq(text):
    try:
        return _cmu_int(text.strip("[").rstrip("]")) if text is not None else None
    except ValueError:
        return None


def read_ns2_wireless_naive(lines, data_types, feedback_types, causes, end_time=None):
    """The wireless reader, plainly: returns (rows, skipped, feedback) where rows is one dict
    per data packet sent (uid, flow, seq, size, t_send, t_recv, t_drop, fate before the
    flow-level 'vanished' rule, reason), or raises ValueError("line N: ...")."""
    sends, recvs, drops, feedback, skipped = {}, {}, {}, [], {}
    last_time = None
    for number, text in enumerate(lines, 1):
        try:
            rec = cmu_line(text)
        except (ValueError, KeyError, IndexError) as exc:
            raise ValueError(f"line {number}: malformed ({exc})") from None
        if rec == "blank":
            continue
        if rec is None:
            word = text.split()[0][:14]
            skipped[word] = skipped.get(word, 0) + 1
            continue
        if rec == ("wired",):
            raise ValueError(f"line {number}: wired")
        if not math.isfinite(rec["time"]):
            raise ValueError(f"line {number}: time")
        last_time = rec["time"] if last_time is None else max(last_time, rec["time"])
        data = rec["ptype"] in data_types
        if rec["ev"] == "D":
            if data:
                before = drops.get(rec["uid"])
                echo = (
                    before is not None
                    and (rec["level"], rec["reason"]) == ("RTR", "CBK")
                    and before[1:] == ("MAC", "RET")
                    and before[0] == rec["time"]
                )
                if not echo:
                    drops[rec["uid"]] = (rec["time"], rec["level"], rec["reason"])
            continue
        if rec["level"] != "AGT" or rec["ev"] not in ("s", "r"):
            continue
        src = _cmu_address(rec["src"]) if rec["src"] is not None else None
        dst = _cmu_address(rec["dst"]) if rec["dst"] is not None else None
        seq = _cmu_seq(rec["seq"])
        if data:
            if src is None or dst is None or seq is None:
                raise ValueError(f"line {number}: address or seq")
            if rec["ev"] == "s" and rec["uid"] not in sends:
                sends[rec["uid"]] = (rec["time"], src, dst, seq, rec["size"])
            elif rec["ev"] == "r" and rec["uid"] not in recvs and int(dst.split(".")[0]) == rec["node"]:
                recvs[rec["uid"]] = rec["time"]
        elif rec["ptype"] in feedback_types and rec["ev"] == "r" and src and dst and seq is not None:
            if int(dst.split(".")[0]) == rec["node"]:
                feedback.append((rec["time"], src, dst, seq))
    if end_time is None:
        counts = {}
        for t, level, why in drops.values():
            if level == "IFQ" and why == "?":
                counts[t] = counts.get(t, 0) + 1
        flushes = [t for t, n in counts.items() if n >= 2]
        end_time = max(flushes) if flushes and max(flushes) >= last_time - 1.0 else math.inf
    rows = []
    for uid, (t, src, dst, seq, size) in sends.items():
        row = {
            "uid": uid,
            "flow": f"{src}>{dst}",
            "seq": seq,
            "size": size,
            "t_send": t,
            "t_recv": recvs.get(uid, math.nan),
            "t_drop": math.nan,
            "fate": "unobserved",
            "reason": "",
        }
        if uid in recvs:
            row["fate"] = "delivered"
        elif uid in drops:
            t_drop, level, why = drops[uid]
            row["t_drop"], row["reason"] = t_drop, f"{level} {why}"
            flushed = why == "END" or (why == "?" and level == "IFQ" and t_drop >= end_time)
            row["fate"] = "unobserved" if flushed else causes.get(f"{level} {why}", "lost")
        rows.append(row)
    return rows, skipped, feedback


# --- clocks: one skew for the flows of a pair of clocks (ldanalyze/clocks.py common_skew) ---


def joint_objective_naive(groups, b):
    """Σ over flows of the area between the flow's points and its lowest line of slope b."""
    total = 0.0
    for t, d in groups:
        t0 = min(t)
        r = [di - b * (ti - t0) for ti, di in zip(t, d)]
        total += sum(r) - len(r) * min(r)
    return total


def common_skew_naive(groups):
    """The convex piecewise-linear objective is least at a breakpoint: a slope between two
    points of one flow (or anywhere when it is flat); try them all."""
    candidates = [0.0]
    for t, d in groups:
        for i in range(len(t)):
            for j in range(i + 1, len(t)):
                if t[j] != t[i]:
                    candidates.append((d[j] - d[i]) / (t[j] - t[i]))
    return min(joint_objective_naive(groups, b) for b in candidates)


# --- RTP header extensions (ldanalyze/io/capture/rtp.py extension_values) ---


def rtp_extension_values_naive(packet: bytes, width: int) -> dict:
    """{id: value} of the header extension elements of ``width`` bytes of one RTP packet (RFC
    8285), read one element at a time."""
    if len(packet) < 12 or packet[0] >> 6 != 2 or not packet[0] & 0x10:
        return {}
    start = 12 + 4 * (packet[0] & 0x0F)
    if start + 4 > len(packet):
        return {}
    profile = int.from_bytes(packet[start : start + 2], "big")
    words = int.from_bytes(packet[start + 2 : start + 4], "big")
    body = packet[start + 4 : min(start + 4 + 4 * words, len(packet))]
    found, p = {}, 0
    if profile == 0xBEDE:
        while p < len(body):
            if body[p] == 0:
                p += 1
                continue
            ident, size = body[p] >> 4, (body[p] & 0x0F) + 1
            if ident == 15:
                break
            if size == width and p + 1 + size <= len(body):
                found[ident] = int.from_bytes(body[p + 1 : p + 1 + size], "big")
            p += 1 + size
    elif profile >> 4 == 0x100:
        while p + 1 < len(body):
            if body[p] == 0:
                p += 1
                continue
            ident, size = body[p], body[p + 1]
            if size == width and p + 2 + size <= len(body):
                found[ident] = int.from_bytes(body[p + 2 : p + 2 + size], "big")
            p += 2 + size
    return found


# --- RTP headers (ldanalyze/io/capture/rtp.py header_fields) ---


def rtp_header(kept: bytes, payload_len: int, fec_span: int = 48) -> tuple[str, int, bool, int, bool]:
    """One UDP payload's (first bytes ``kept`` of ``payload_len``) kind by RFC 7983 §7 and RFC
    5761 §4, RTP header length (-1: extension length not kept), padding-only flag, first payload
    word (-1: not kept) and RFC 5109 FEC-header flag, read byte by byte."""
    first = kept[0]
    second = kept[1] if len(kept) >= 2 else 0
    if first <= 3:
        kind = "stun"
    elif 16 <= first <= 19:
        kind = "zrtp"
    elif 20 <= first <= 63:
        kind = "dtls"
    elif 64 <= first <= 79:
        kind = "turn"
    elif 128 <= first <= 191 and len(kept) >= 12:
        kind = "rtcp" if 192 <= second <= 223 else "rtp"
    else:
        kind = "other"
    csrcs = first & 0x0F
    length = 12 + 4 * csrcs
    if first & 0x10:  # the X bit: an extension header, its length in words at bytes 2-3
        if length + 4 <= len(kept):
            length += 4 + 4 * int.from_bytes(kept[length + 2 : length + 4], "big")
        else:
            length = -1
    if length < 12:
        return kind, length, False, -1, False
    after = payload_len - length
    padded = bool(first & 0x20)
    padding = padded and 1 <= after <= 255 and all(b == 0 for b in kept[length : payload_len - 1])
    osn = int.from_bytes(kept[length : length + 2], "big") if length + 2 <= len(kept) else -1
    fec = False
    if length + 10 <= len(kept) and not kept[length] & 0x80:  # E bit clear
        own = int.from_bytes(kept[2:4], "big")
        base = int.from_bytes(kept[length + 2 : length + 4], "big")
        fec = (own - base) % 65536 <= fec_span
    return kind, length, padding, osn, fec


# --- capture host (ldanalyze/io/capture/flows.py flow_ttls) ---


def flow_ttls(flows, statuses, ttls, n_flows, decoded):
    """Per flow, how many decoded packets came with each TTL."""
    table = [[0] * 256 for _ in range(n_flows)]
    for flow, status, ttl in zip(flows, statuses, ttls):
        if status == decoded and flow >= 0:
            table[flow][ttl] += 1
    return table


def rtt_from_feedback(packets, feedback):
    """RTT samples as ``packets.rtt_from_feedback`` takes them: ``packets`` are (flow, seq,
    t_send) rows, ``feedback`` (flow, t, seq) rows; returns (flow, t, seq, rtt) tuples by flow
    label, then time (ties in row order)."""
    sends = {}
    for flow, seq, t_send in packets:
        sends.setdefault((str(flow), seq), []).append(t_send)
    highest, samples = {}, []
    for flow, t, seq in sorted(feedback, key=lambda row: (row[0], row[1])):
        if flow in highest and seq <= highest[flow]:
            continue  # names nothing new
        highest[flow] = seq
        tx = sends.get((str(flow), seq), [])
        if len(tx) == 1 and tx[0] <= t:  # Karn: one transmission, sent before the feedback came
            samples.append((flow, t, seq, t - tx[0]))
    return samples
