"""TFRC (RFC 5348), the base rate controller of paper 000 (§III: "unaware TFRC" and its LDA variants).

The receiver turns the losses its LDA called congestion into loss events (RFC 5348 §5.2: a
loss more than one RTT after the start of the current event starts a new one), measures the
loss intervals between event starts (§5.3), averages the last n = 8 with weights
1,1,1,1,0.8,0.6,0.4,0.2, counting the open interval only when that lowers p (§5.4), optionally
discounts old history after a long loss-free stretch (§5.5), and seeds the first interval from
the receive rate with the inverse throughput equation (§6.3.1). Feedback goes out once per RTT
and at once on a new loss event (§6.2). The sender (§4.3) sets
X = max(min(X_Bps, 2·X_recv), s/t_mbi) with the throughput equation (§3.1, b = 1,
t_RTO = 4R), and before the first loss doubles once per RTT from W_init/R (§4.2-4.3). Losses
the LDA called wireless never enter the loss history. Open loop, the receive rate X_recv that
limits the sender is, by default (``receive="model"``), the modelled rate X capped at the flow's
capacity: what the network would have carried of the modelled sender's rate. With
``receive="trace"`` it is the trace's own receive rate, at most X: the faithful replay of the
sender that made the trace, but one that holds any other LDA's sender near twice what that
sender got (the closed loop, ``docs/controllers.md``, measured both).
Exact replay contract: ``docs/controllers.md``.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
from numba import njit

from ..errors import UsageError
from ..specs import check_positive
from ..tiering import call
from .base import Controller, LazyState, Signals


def interval_weights(n: int) -> np.ndarray:
    """w_i = 1 for i < n/2, else 1 − (i − (n/2 − 1))/(n/2 + 1) (RFC 5348 §5.4)."""
    i = np.arange(n, dtype=np.float64)
    half = n / 2.0
    return np.where(i < half, 1.0, 1.0 - (i - (half - 1.0)) / (half + 1.0))


@njit(cache=True)
def throughput_equation(s, R, p, b, rto_factor):
    """X_Bps = s / (R·sqrt(2bp/3) + t_RTO·3·sqrt(3bp/8)·p·(1 + 32p²)), t_RTO = rto_factor·R
    (RFC 5348 §3.1 recommends 4), in bytes/s."""
    t_rto = rto_factor * R
    return s / (R * np.sqrt(2.0 * b * p / 3.0) + t_rto * 3.0 * np.sqrt(3.0 * b * p / 8.0) * p * (1.0 + 32.0 * p * p))


@njit(cache=True)
def loss_rate_for(x_target, s, R, b, rto_factor):
    """The p in [1e-12, 1] at which the throughput equation gives ``x_target`` (bisection on
    log p, 100 steps: the equation is decreasing in p); RFC 5348 §6.3.1."""
    lo, hi = np.log(1e-12), 0.0
    if throughput_equation(s, R, 1.0, b, rto_factor) >= x_target:
        return 1.0
    if throughput_equation(s, R, 1e-12, b, rto_factor) <= x_target:
        return 1e-12
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if throughput_equation(s, R, np.exp(mid), b, rto_factor) > x_target:
            lo = mid
        else:
            hi = mid
    return np.exp(0.5 * (lo + hi))


@njit(cache=True)
def mean_loss_interval(hist, disc, k, i0, w, discounting):
    """I_mean from the closed intervals hist[0..k-1] (I_1..I_k, with their discount factors)
    and the open interval I_0 (RFC 5348 §5.4-5.5); also the current discount factor DF."""
    n = w.shape[0]
    tot1 = 0.0
    wt1 = 0.0
    for j in range(k):
        tot1 += hist[j] * w[j] * disc[j]
        wt1 += w[j] * disc[j]
    df = 1.0
    if discounting and k > 0:
        closed_mean = tot1 / wt1
        if i0 > 2.0 * closed_mean:
            df = max(0.5, 2.0 * closed_mean / i0)
    tot0 = w[0] * i0
    wt0 = w[0]
    for j in range(min(k, n) - 1):
        tot0 += hist[j] * w[j + 1] * disc[j] * df
        wt0 += w[j + 1] * disc[j] * df
    return max(tot0 / wt0, tot1 / wt1), df


@njit(cache=True)
def tfrc_kernel(
    start,
    t_recv,
    t,
    seq,
    size,
    s,
    R,
    capacity,
    loss_at,
    loss_seq,
    loss_t,
    congestion,
    w,
    discounting,
    b,
    rto_factor,
    t_mbi,
    model_receive,
    keep_state,
):
    """Replay TFRC: per arrival the allowed rate X (bytes/s) after it, the loss event rate p
    the receiver last reported, X_recv, and the number of loss events so far (these three only
    with ``keep_state``; else empty arrays). ``model_receive``: X_recv is the modelled rate X
    capped at the flow's ``capacity`` (bytes/s per arrival; NaN: unknown, no cap), not the
    trace's receive rate capped at X."""
    N = t.shape[0]
    n = w.shape[0]
    X_out = np.full(N, np.nan)
    m = N if keep_state else 0
    p_out = np.zeros(m)
    xr_out = np.full(m, np.nan)
    events_out = np.zeros(m, np.int64)
    events = 0
    hist = np.zeros(n)
    disc = np.ones(n)
    k = 0
    li = 0
    L = loss_at.shape[0]
    X = np.nan
    p = 0.0
    x_recv = np.nan
    t_fb = 0.0
    got = 0.0
    s_max = 0
    ev_t = np.nan
    ev_seq = 0
    have_event = False
    tld = -np.inf
    rate_init = False
    for i in range(N):
        if start[i]:
            k = 0
            hist[:] = 0.0
            disc[:] = 1.0
            X = s[i]  # one packet per second before the first RTT is known (§4.2)
            p = 0.0
            x_recv = np.nan
            t_fb = t_recv[i]
            got = 0.0
            s_max = seq[i]
            have_event = False
            tld = -np.inf
            rate_init = False
            events = 0
            first = True
        else:
            first = False
        got += size[i]
        if seq[i] > s_max:
            s_max = seq[i]
        r = R[i]
        new_event = False
        while li < L and loss_at[li] == i:
            if congestion[li]:
                if not have_event:
                    elapsed = t_recv[i] - t_fb
                    if model_receive:
                        target = min(X, capacity[i]) if capacity[i] > 0 else X
                    else:
                        target = min(got / elapsed, X) if elapsed > 0 else X
                    p_first = loss_rate_for(target, s[i], r, b, rto_factor) if (r > 0 and target > 0) else 1.0
                    hist[0] = 1.0 / p_first
                    disc[0] = 1.0
                    k = 1
                    have_event = True
                    ev_t = loss_t[li]
                    ev_seq = loss_seq[li]
                    new_event = True
                    events += 1
                elif not (loss_t[li] <= ev_t + r):
                    i0 = s_max - ev_seq + 1.0
                    _, df = mean_loss_interval(hist, disc, k, i0, w, discounting)
                    for j in range(n - 1, 0, -1):
                        hist[j] = hist[j - 1]
                        disc[j] = disc[j - 1] * df
                    hist[0] = loss_seq[li] - ev_seq
                    disc[0] = 1.0
                    k = min(k + 1, n)
                    ev_t = loss_t[li]
                    ev_seq = loss_seq[li]
                    new_event = True
                    events += 1
            li += 1
        if first or new_event or not (t_recv[i] - t_fb < r):
            elapsed = t_recv[i] - t_fb
            if model_receive:
                x_recv = min(X, capacity[i]) if capacity[i] > 0 else X
            else:
                x_recv = min(got / elapsed, X) if elapsed > 0 else np.nan
            if have_event:
                i_mean, _ = mean_loss_interval(hist, disc, k, s_max - ev_seq + 1.0, w, discounting)
                p = 1.0 / i_mean
            t_fb = t_recv[i]
            got = 0.0
            if r > 0:
                limit = 2.0 * x_recv if x_recv > 0 else np.inf
                floor_init = min(4.0 * s[i], max(2.0 * s[i], 4380.0)) / r
                if p > 0:
                    X = max(min(throughput_equation(s[i], r, p, b, rto_factor), limit), s[i] / t_mbi)
                elif not rate_init:
                    X = floor_init
                    tld = t[i]
                elif t[i] - tld >= r:
                    X = max(min(2.0 * X, limit), floor_init)
                    tld = t[i]
                rate_init = True
        X_out[i] = X
        if keep_state:
            p_out[i] = p
            xr_out[i] = x_recv
            events_out[i] = events
    return X_out, p_out, xr_out, events_out


@dataclasses.dataclass(frozen=True)
class Tfrc(Controller):
    """TFRC, RFC 5348 (sender §4, receiver §5-6). ``n``: loss intervals averaged (8);
    ``discounting``: §5.5 history discounting (off by default; ns-2 turns it on); ``b``: packets
    per ACK in the equation (1); ``rto_factor``: t_RTO = rto_factor·R in the equation (4, RFC 5348
    §3.1; ns-2 uses its own TCP-style estimate, 2.5-3·R at its tick of 0.1 s); ``t_mbi``: the
    longest interval between packets (64 s); ``receive``: the X_recv the sender is limited by
    (twice it), ``"model"``: X itself, at most the flow's capacity, or ``"trace"``: the trace's
    receive rate, at most X (module docstring)."""

    name: ClassVar[str] = "tfrc"
    n: int = 8
    discounting: bool = False
    b: float = 1.0
    rto_factor: float = 4.0
    t_mbi: float = 64.0
    receive: str = "model"

    def __post_init__(self) -> None:
        check_positive(self.name, b=self.b, rto_factor=self.rto_factor, t_mbi=self.t_mbi)
        if self.receive not in ("trace", "model"):
            raise UsageError(f"{self.name}: receive must be trace or model, not {self.receive!r}")
        if not isinstance(self.n, (int, np.integer)) or self.n < 2:
            raise UsageError(f"{self.name}: n must be a whole number of intervals ≥ 2, not {self.n!r}")

    def run(self, sig: Signals, congestion: np.ndarray):
        args = (
            sig.start,
            sig.t_recv,
            sig.t,
            sig.seq,
            sig.size,
            sig.s,
            sig.R,
            sig.capacity[sig.flow],
            sig.loss_at,
            sig.loss_seq,
            sig.loss_t,
            np.asarray(congestion, dtype=np.bool_),
            interval_weights(self.n),
            bool(self.discounting),
            float(self.b),
            float(self.rto_factor),
            float(self.t_mbi),
            self.receive == "model",
        )
        rate = call(tfrc_kernel, *args, False, us_per_item=12)[0]
        rate *= 8.0  # bytes/s → bits/s, in place: no second array of this size
        keys = ("p", "x_recv_bps", "R", "loss_events")

        def state():
            _, p, x_recv, events = call(tfrc_kernel, *args, True, us_per_item=12)
            return {"p": p, "x_recv_bps": x_recv * 8.0, "R": sig.R, "loss_events": events}

        return rate, LazyState(keys, state)


CONTROLLERS = (Tfrc,)
