"""Plain, line-by-line twins of the fast kernels, written for reading, not for speed.

Tests compare every numba kernel and vectorised routine against these on generated input.
"""

from __future__ import annotations

import bisect
import dataclasses
import math


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

LOSS_CAUSES = ("congestion", "wireless", "lost")

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
            gaps.append(Gap(
                first=hi + 1, last=p["seq"] - 1, n=p["seq"] - hi - 1, r=r, prev=prev,
                T=math.nan if prev is None else p["t_recv"] - arrivals[prev]["t_recv"],
                at=at, delay=math.nan if at is None else d[at],
                a=a, s=None if a is None else (a if update_first else a - 1),
            ))
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
        recent = sum(over[max(0, g.s - n + 1): g.s + 1])
        return "congestion" if p >= threshold and recent >= l1 else "wireless"

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
}  # adaptive_rtt also needs the RTT samples and the clock: lda_decisions calls it itself


def lda_decisions(name, params, packets, rtt=(), *, update_first=True, gap_delay="revealing",
                  detection=1, clock_common=True) -> dict[int, str]:
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
        flow = flow_view(mine, min(p["seq"] for p in mine), detection=detection, gap_delay=gap_delay,
                         update_first=update_first)
        if name == "adaptive_rtt":
            samples = [(t, x) for f, t, x in rtt if f == label]
            rule = lda_adaptive_rtt(flow, **options, rtt=samples, clock_common=clock_common,
                                    update_first=update_first)
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


# ---------------------------------------------------------------------------------------------
# --- rate controllers: plain twins of ldanalyze/control (docs/controllers.md) ---
# Input: ``arrivals``, a list of dicts per arrival (all flows, each contiguous, arrival order)
# with keys start, t_recv, t, seq, size, s, R, srtt, rttvar, rtt_min, rtt, jitter, new, capacity
# (bytes/s of its flow, NaN when unknown); and
# ``losses``, a list of dicts with keys at (arrival index), seq, t (nominal receive time),
# congestion (bool), sorted by at then seq. Output: the allowed rate in bytes/s per arrival.
# ---------------------------------------------------------------------------------------------


def tfrc_weights(n):
    """RFC 5348 §5.4: the newer half weighs 1, the older half falls linearly."""
    return [1.0 if i < n / 2 else 1.0 - (i - (n / 2 - 1)) / (n / 2 + 1) for i in range(n)]


def tfrc_equation(s, R, p, b=1.0):
    """RFC 5348 §3.1 with t_RTO = 4R, in bytes/s."""
    return s / (R * math.sqrt(2 * b * p / 3) + 4 * R * 3 * math.sqrt(3 * b * p / 8) * p * (1 + 32 * p * p))


def tfrc_p_for_rate(target, s, R, b=1.0):
    """The loss event rate at which the equation gives ``target`` (plain bisection on p)."""
    if tfrc_equation(s, R, 1.0, b) >= target:
        return 1.0
    if tfrc_equation(s, R, 1e-12, b) <= target:
        return 1e-12
    lo, hi = 1e-12, 1.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)  # bisect in log space: p spans twelve decades
        if tfrc_equation(s, R, mid, b) > target:
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


def controller_tfrc(arrivals, losses, n=8, discounting=False, b=1.0, t_mbi=64.0):
    """TFRC replay (RFC 5348 receiver §5-6, sender §4.3) as docs/controllers.md states it."""
    out = []
    by_arrival = {}
    for loss in losses:
        by_arrival.setdefault(loss["at"], []).append(loss)
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
                target = received / elapsed if elapsed > 0 else X
                if not target > 0:
                    target = X
                p_first = tfrc_p_for_rate(target, s, R, b) if known_R and target > 0 else 1.0
                history.closed = [[1.0 / p_first, 1.0]]
                event, new_event = (loss["t"], loss["seq"]), True
            elif not (known_R and loss["t"] <= event[0] + R):
                history.close(loss["seq"] - event[1], s_max - event[1] + 1)
                event, new_event = (loss["t"], loss["seq"]), True
        report = a["start"] or new_event or not known_R or a["t_recv"] - last_report >= R
        if report:
            elapsed = a["t_recv"] - last_report
            x_recv = received / elapsed if elapsed > 0 else None
            if event is not None:
                p = 1.0 / history.mean_interval(s_max - event[1] + 1)
            last_report, received = a["t_recv"], 0.0
            if known_R:
                limit = 2 * x_recv if x_recv else math.inf
                initial = min(4 * s, max(2 * s, 4380)) / R
                if p > 0:
                    X = max(min(tfrc_equation(s, R, p, b), limit), s / t_mbi)
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
    by_arrival = {}
    for loss in losses:
        by_arrival.setdefault(loss["at"], []).append(loss)
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
