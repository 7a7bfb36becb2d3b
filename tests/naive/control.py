"""Plain twins of ldanalyze/control: the rate controllers."""

from __future__ import annotations

import math

from . import twin_of

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


@twin_of("ldanalyze.control.tfrc.tfrc_kernel")
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


@twin_of("ldanalyze.control.newreno.newreno_kernel")
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


@twin_of("ldanalyze.control.ldaplus.ldaplus_kernel")
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


@twin_of("ldanalyze.control.xrtp.xrtp_kernel")
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


@twin_of("ldanalyze.control.westwood.westwood_kernel")
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


@twin_of("ldanalyze.control.base.rate_averages")
def rate_averages(t, start, flow, n_flows, rate, cap):
    """Per flow: the time average of the rate (each value held until the flow's next arrival)
    over the time it is finite, the same of min(rate, cap) (none where the cap is NaN), and the
    first one's time: sums over the intervals one by one."""
    sums = [[0.0, 0.0, 0.0, 0.0] for _ in range(n_flows)]  # area, span, capped area, capped span
    for i in range(len(t) - 1):
        dt = t[i + 1] - t[i]
        if start[i + 1] or not dt > 0:
            continue
        own = sums[flow[i]]
        if math.isfinite(rate[i]):
            own[0] += rate[i] * dt
            own[1] += dt
        limit = cap[flow[i]]
        if not (math.isnan(rate[i]) or math.isnan(limit)) and math.isfinite(min(rate[i], limit)):
            own[2] += min(rate[i], limit) * dt
            own[3] += dt

    def ratio(a, b):
        return a / b if b else math.nan

    return [ratio(a, s) for a, s, _, _ in sums], [ratio(a, s) for _, _, a, s in sums], [s for _, s, _, _ in sums]
