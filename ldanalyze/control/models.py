"""Closed-form throughput models and fairness measures, computed from aggregate statistics.

Units throughout: packet sizes in bytes, times in seconds, loss rates as fractions in [0, 1];
every throughput model returns **bytes per second** (the papers' packets/s models are multiplied
by the packet size, so that all of them compare directly). Arguments are scalars or arrays and
broadcast like numpy ufuncs; a scalar call returns a numpy scalar. NaN passes through (a flow
with nothing measured stays NaN in a table); a value out of its domain raises UsageError.

Papers (``../shared/papers/``): 000 Cen et al. (fairness, normalized throughput), 002 Mujica et
al. (PFTK, eq. 1), 003 Lim et al. (TCP models with an LDA, eqs. 3-12); and RFC 5348 §3.1.
"""

from __future__ import annotations

import numpy as np

from ..errors import UsageError

_RULES = {
    "positive": (lambda a: a <= 0, "> 0"),
    "nonnegative": (lambda a: a < 0, "≥ 0"),
    "fraction": (lambda a: (a < 0) | (a > 1), "between 0 and 1"),
}


def _checked(name: str, value, rule: str) -> np.ndarray:
    """``value`` as a float array; UsageError naming the first element that breaks ``rule``."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number or an array of numbers, not {value!r}") from None
    is_bad, wanted = _RULES[rule]
    bad = is_bad(array)
    if np.any(bad):
        raise UsageError(f"{name} must be {wanted}, not {array[bad].flat[0]:g}")
    return array


def _timeout(rto, rtt: np.ndarray) -> np.ndarray:
    """t_RTO: the given value, or 4·R as RFC 5348 §3.1 recommends."""
    return 4.0 * rtt if rto is None else _checked("rto", rto, "nonnegative")


def _response_denominator(rtt, loss, rto, acked_per_ack, *, capped: bool):
    """R·sqrt(2bp/3) + t_RTO·f·p·(1 + 32p²), f = 3·sqrt(3bp/8) (PFTK caps f at 1, RFC 5348 not)."""
    timeout_factor = 3.0 * np.sqrt(3.0 * acked_per_ack * loss / 8.0)
    if capped:
        timeout_factor = np.minimum(1.0, timeout_factor)
    return rtt * np.sqrt(2.0 * acked_per_ack * loss / 3.0) + rto * timeout_factor * loss * (1.0 + 32.0 * loss**2)


def pftk_rate(packet_size, rtt, loss_rate, rto=None, acked_per_ack=1.0):
    """TCP-friendly rate r_TCP in bytes/s: Padhye et al.'s model as paper 002 eq. 1 gives it.

    r_TCP = M / (t_RTT·sqrt(2Dl/3) + t_out·min(1, 3·sqrt(3Dl/8))·l·(1 + 32l²)), with M the
    packet size (bytes), t_RTT the round-trip time and t_out the retransmission timeout
    (seconds; default 4·t_RTT, RFC 5348's choice: paper 002 gives none), l the loss fraction and
    D the packets acknowledged per ACK. LDA+ (paper 002 eq. 8) never cuts its rate below it.
    Same as ``tfrc_rate`` except for the min(1, ·), which matters only when 3·sqrt(3Dl/8) > 1
    (l > 8/27 with D = 1). l = 0 gives inf.
    """
    s = _checked("packet_size", packet_size, "positive")
    r = _checked("rtt", rtt, "positive")
    p = _checked("loss_rate", loss_rate, "fraction")
    b = _checked("acked_per_ack", acked_per_ack, "positive")
    with np.errstate(divide="ignore", over="ignore"):
        return s / _response_denominator(r, p, _timeout(rto, r), b, capped=True)


def tfrc_rate(packet_size, rtt, loss_event_rate, rto=None, acked_per_ack=1.0):
    """TFRC's allowed rate X_Bps in bytes/s, RFC 5348 §3.1 (the reference for the TFRC kernel).

    X_Bps = s / (R·sqrt(2bp/3) + t_RTO·(3·sqrt(3bp/8))·p·(1 + 32p²)), with s the segment size
    (bytes), R the round-trip time and t_RTO the retransmission timeout (seconds; default 4R),
    p the loss event rate and b the packets acknowledged per ACK (default 1), both as the RFC
    recommends. p = 0 gives inf (the RFC's sender is then in slow start, not on the equation).
    """
    s = _checked("packet_size", packet_size, "positive")
    r = _checked("rtt", rtt, "positive")
    p = _checked("loss_event_rate", loss_event_rate, "fraction")
    b = _checked("acked_per_ack", acked_per_ack, "positive")
    with np.errstate(divide="ignore", over="ignore"):
        return s / _response_denominator(r, p, _timeout(rto, r), b, capped=False)


def tfrc_loss_event_rate(packet_size, rtt, rate, rto=None, acked_per_ack=1.0):
    """The loss event rate p at which ``tfrc_rate`` equals ``rate`` (bytes/s): its inverse.

    RFC 5348 §6.3.1 seeds the first loss interval (1/p) with it, from X_recv. X_Bps falls
    strictly as p grows, so bisection over p finds it. It starts from the bracket
    [0, min(1, (3/2b)·(s/(X·R))²)], the upper end being where the first term alone reaches the
    rate, and stops when the bracket is two adjacent float64 values (about 60 steps): p is
    exact to a few units in the last place (round trips p → X → p agree to ~1e-15 for p from
    1e-300 to 1; the tests ask 1e-12). A rate the equation cannot get down to,
    rate ≤ X_Bps(p = 1), gives 1; rate = inf gives 0.
    """
    s = _checked("packet_size", packet_size, "positive")
    r = _checked("rtt", rtt, "positive")
    x = _checked("rate", rate, "positive")
    b = _checked("acked_per_ack", acked_per_ack, "positive")
    t_rto = _timeout(rto, r)
    target = s / x  # the denominator that gives X_Bps = rate

    def denominator(p):
        return _response_denominator(r, p, t_rto, b, capped=False)

    with np.errstate(over="ignore"):
        hi = np.minimum(1.0, 1.5 / b * (target / r) ** 2)
    lo = np.zeros_like(hi)
    while True:
        mid = 0.5 * (lo + hi)
        active = (mid > lo) & (mid < hi)
        if not active.any():
            break
        too_slow = denominator(mid) > target
        hi = np.where(active & too_slow, mid, hi)
        lo = np.where(active & ~too_slow, mid, lo)
    return np.where(denominator(1.0) <= target, 1.0, hi)[()]


def aimd_throughput(packet_size, rtt, loss_rate, increase=1.0, decrease=0.5):
    """Kelly's steady-state AIMD throughput in bytes/s: paper 003 §3.3 eq. 3, times S.

    x_TCP = (1/T)·sqrt(a(1 − p) / ((1 − b)p)) packets/s: the window grows by a per RTT T and is
    multiplied by b on each loss (a = 1, b = 1/2 is NewReno), p the total loss rate; paper 003
    leaves timeouts out. b = 1 (never cut) or p = 0 gives inf.
    """
    s = _checked("packet_size", packet_size, "positive")
    t = _checked("rtt", rtt, "positive")
    p = _checked("loss_rate", loss_rate, "fraction")
    a = _checked("increase", increase, "positive")
    b = _checked("decrease", decrease, "fraction")
    with np.errstate(divide="ignore", over="ignore"):
        return s / t * np.sqrt(a * (1.0 - p) / ((1.0 - b) * p))


def _lim_rates(congestion_loss_rate, wireless_loss_rate, accuracy_congestion, accuracy_wireless):
    """Checked p_c, p_w, and p_c·A_c + p_w·(1 − A_w): the rate of losses the LDA calls congestion.

    A cause that never occurred adds 0 even when its accuracy is NaN (the scores leave A_c
    undefined for a flow with no congestion loss, A_w with no wireless loss).
    """
    p_c = _checked("congestion_loss_rate", congestion_loss_rate, "fraction")
    p_w = _checked("wireless_loss_rate", wireless_loss_rate, "fraction")
    a_c = _checked("accuracy_congestion", accuracy_congestion, "fraction")
    a_w = _checked("accuracy_wireless", accuracy_wireless, "fraction")
    if np.any(p_c + p_w > 1):
        raise UsageError("congestion_loss_rate + wireless_loss_rate (the total loss rate p) must be ≤ 1")
    called_congestion = np.where(p_c == 0, 0.0, p_c * a_c) + np.where(p_w == 0, 0.0, p_w * (1.0 - a_w))
    return p_c, p_w, called_congestion


def congestion_decision_probability(congestion_loss_rate, wireless_loss_rate, accuracy_congestion, accuracy_wireless):
    """Pr(c|l), the chance that the LDA calls a loss congestion: paper 003 §3.3 eq. 4.

    Pr(c|l) = (1/p)·[p_c·A_c + p_w·(1 − A_w)], with A_c, A_w the LDA's accuracies on congestion
    and wireless losses (``score``'s A_c, A_w) and p = p_c + p_w. The paper's p_c/p and p_w/p are
    the shares of the losses, so p_c and p_w here are the fractions of the packets *sent* that
    are lost to each cause, which add up to p. (Its §2 p_w is the wireless link's own loss
    probability; of the packets sent, (1 − p_c) times it are lost there.) NaN when no loss.
    """
    p_c, p_w, called_congestion = _lim_rates(
        congestion_loss_rate, wireless_loss_rate, accuracy_congestion, accuracy_wireless
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return called_congestion / (p_c + p_w)


def lim_throughput(packet_size, rtt, congestion_loss_rate, wireless_loss_rate, accuracy_congestion, accuracy_wireless):
    """Steady-state throughput in bytes/s of TCP that halves cwnd only on losses its LDA calls
    congestion: paper 003 §3.3 eq. 8 (x_prd) with Pr(c|l) from eq. 4, times S.

    x_prd = (1/T)·sqrt(2(1 − p) / (Pr(c|l)·p)) = (1/T)·sqrt(2(1 − p) / (p_c·A_c + p_w·(1 − A_w)))
    packets/s, p = p_c + p_w (see ``congestion_decision_probability``). It is eq. 3 with a = 1
    and b_prd = 1 − Pr(c|l)/2 (eq. 9), so NewReno's value when every loss is called congestion
    and never below it. No loss called congestion gives inf. (The paper's transient solution
    of eq. 7 drops a factor 2·x_1 in its exponent; the steady state is unaffected.)
    """
    s = _checked("packet_size", packet_size, "positive")
    t = _checked("rtt", rtt, "positive")
    p_c, p_w, called_congestion = _lim_rates(
        congestion_loss_rate, wireless_loss_rate, accuracy_congestion, accuracy_wireless
    )
    with np.errstate(divide="ignore", over="ignore"):
        return s / t * np.sqrt(2.0 * (1.0 - p_c - p_w) / called_congestion)


def westwood_plus_throughput(packet_size, rtt, propagation_delay, loss_rate):
    """Westwood+'s steady-state throughput in bytes/s: paper 003 §3.3 eq. 10, times S.

    x_ww+ = sqrt((1 − p)/p) / sqrt(T·(T − T_p)) packets/s, with T the RTT, T_p the propagation
    delay (T_p ≤ T) and p the total loss rate: eq. 3 with a = 1 and b_ww+ = T_p/T (eq. 11),
    Westwood+ setting cwnd to bandwidth × RTT_min. An empty queue (T = T_p) or p = 0 gives inf.
    """
    s = _checked("packet_size", packet_size, "positive")
    t = _checked("rtt", rtt, "positive")
    t_p = _checked("propagation_delay", propagation_delay, "nonnegative")
    p = _checked("loss_rate", loss_rate, "fraction")
    if np.any(t_p > t):
        raise UsageError("propagation_delay (T_p) must be ≤ rtt (T): the RTT includes it")
    with np.errstate(divide="ignore", over="ignore"):
        return s * np.sqrt((1.0 - p) / p) / np.sqrt(t * (t - t_p))


def normalized_throughput(throughput, capacity, n_flows=1):
    """Paper 000's "thput": throughput over the bottleneck capacity, or over the fair share.

    n_flows = 1: one flow's throughput (§VI-A, Table II) or all flows' sum (§VI-C, Fig. 8) over
    the bottleneck bandwidth. n_flows = N: one flow's throughput over its fair share capacity/N
    (§VIII-B, Fig. 15). Throughput and capacity in the same units; a fraction (0.99 is 99 %).
    """
    x = _checked("throughput", throughput, "nonnegative")
    c = _checked("capacity", capacity, "positive")
    n = _checked("n_flows", n_flows, "positive")
    return x * n / c


def _flow_throughputs(throughputs, axis: int) -> np.ndarray:
    """Checked per-flow throughputs: an array with at least one flow along ``axis``."""
    x = _checked("throughputs", throughputs, "nonnegative")
    if x.ndim == 0:
        raise UsageError("throughputs must be an array with one throughput per flow, not a single number")
    if x.shape[axis] == 0:
        raise UsageError("throughputs is empty: fairness needs at least one flow")
    return x


def throughput_deviation(throughputs, axis=-1):
    """Paper 000's fairness among flows (§VIII-A, Fig. 14): the sample standard deviation of
    the flows' throughputs, each normalized by the mean of all of them.

    σ = sqrt(Σ(x_i/x̄ − 1)² / (n − 1)), a fraction (the paper prints 6 % for 0.06); 0 is fair.
    Reduces over ``axis`` (one row of flows per trial: the paper then averages the trials' σ).
    NaN for a single flow (n − 1 = 0) or when every throughput is 0.
    """
    x = _flow_throughputs(throughputs, axis)
    n = x.shape[axis]
    if n == 1:
        return np.full_like(x.sum(axis=axis), np.nan)[()]
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized = x / x.mean(axis=axis, keepdims=True)
    return np.std(normalized, axis=axis, ddof=1)[()]


def jain_fairness_index(throughputs, axis=-1):
    """Jain's fairness index, paper 003 eq. 12: F(x) = (Σ x_i)² / (n·Σ x_i²), over ``axis``.

    1 when all flows get the same, 1/n when one flow gets everything. NaN when all are 0.
    """
    x = _flow_throughputs(throughputs, axis)
    n = x.shape[axis]
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x.sum(axis=axis) ** 2 / (n * (x**2).sum(axis=axis)))[()]


def fairness_by_group(throughputs, groups, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """``throughput_deviation`` and ``jain_fairness_index`` of every group of flows at once:
    ``groups`` numbers each throughput's group (0 to ``n_groups`` − 1, each group non-empty).
    The same two passes as the per-group functions (the mean, then the deviations from it),
    summed per group; scoring a thousand traces called those 26,000 times."""
    x = _flow_throughputs(throughputs, -1)
    groups = np.asarray(groups, np.int64)
    n = np.bincount(groups, minlength=n_groups).astype(np.float64)
    total = np.bincount(groups, weights=x, minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized = x / (total / n)[groups]
        spread = normalized - (np.bincount(groups, weights=normalized, minlength=n_groups) / n)[groups]
        deviation = np.sqrt(np.bincount(groups, weights=spread**2, minlength=n_groups) / (n - 1))
        jain = total**2 / (n * np.bincount(groups, weights=x**2, minlength=n_groups))
    return deviation, jain  # a single flow: 0/0, NaN


def model_throughputs(scores, packet_size, rtt, propagation_delay=None):
    """The closed-form models evaluated on ``score``'s aggregate statistics, in bits/s.

    ``scores`` needs ``congestion_rate`` and ``wireless_rate`` (score with a summary) and ``A_c``,
    ``A_w``; ``packet_size`` (bytes), ``rtt`` and ``propagation_delay`` (s) are scalars or
    arrays aligned with its rows. Adds ``aimd_bps`` (paper 003 eq. 3 with every loss halving:
    NewReno), ``lim_bps`` (eq. 8: halving only on the losses the LDA calls congestion, from its
    measured A_c, A_w through eq. 4), ``pftk_bps`` (paper 002 eq. 1 at the rate of losses the
    LDA calls congestion: what LDA+ converges to) and, given ``propagation_delay``,
    ``westwood_plus_bps`` (eq. 10, which ignores the LDA: Westwood+ reacts to every loss).
    """
    missing = [c for c in ("congestion_rate", "wireless_rate", "A_c", "A_w") if c not in scores]
    if missing:
        raise UsageError(
            f"model_throughputs: the scores have no column {', '.join(missing)} "
            "(score the decisions with the timeline summary)"
        )
    out = scores.copy()
    p_c = scores["congestion_rate"].to_numpy(np.float64)
    p_w = scores["wireless_rate"].to_numpy(np.float64)
    a_c = scores["A_c"].to_numpy(np.float64)
    a_w = scores["A_w"].to_numpy(np.float64)
    _, _, called_congestion = _lim_rates(p_c, p_w, a_c, a_w)
    out["aimd_bps"] = 8.0 * aimd_throughput(packet_size, rtt, p_c + p_w)
    out["lim_bps"] = 8.0 * lim_throughput(packet_size, rtt, p_c, p_w, a_c, a_w)
    out["pftk_bps"] = 8.0 * pftk_rate(packet_size, rtt, called_congestion)
    if propagation_delay is not None:
        out["westwood_plus_bps"] = 8.0 * westwood_plus_throughput(packet_size, rtt, propagation_delay, p_c + p_w)
    return out
