"""XRTP's rate control (paper 001 §III-B/C): KDE-filtered packet-pair bandwidth, an EWMA rate,
a jitter-based cut and halving on congestion losses.

Per arrival, in this order (exact contract: ``docs/controllers.md``, section "xrtp"):

1. **Packet pair** (§III-B.1, eqs. 1-2). The arrival and the one before it form a pair when they
   are of the same flow, consecutive in sequence (``seq = seq_prev + 1``) and were sent at most
   ``pair_gap`` seconds apart (``|t1s − t0s| ≤ pair_gap``). If their receive spacing is positive
   the pair gives the sample ``B = S / (t1r − t0r)`` (bytes/s), ``S`` the second packet's size.
2. **Bandwidth estimate** (§III-B.2, eq. 3, Fig. 2). ``estimator="kde"``: the sample enters a
   window of the last ``n`` samples; the density at each sample is eq. 3 with a triangular
   kernel ``K(u) = max(0, 1 − |u|)`` and the variable width ``h(x) = width·x``,
   ``f(X_i) = 1/(n·h(X_i)) · Σ_j K((X_i − X_j)/h(X_i))``, kept up to date in O(n) per sample by
   Fig. 2's finite differencing (:func:`kde_push`); the estimate is the density-weighted mean
   ``Σ f(X_i)·X_i / Σ f(X_i)`` (:func:`kde_estimate`). :func:`kde_reference` is the O(n²)
   estimator; the two agree to a relative 1e-9 (rounding only, see :func:`kde_push`).
3. **Rate** (§III-C, eq. 4): ``rate = α·rate + (1 − α)·est`` with ``est`` the KDE estimate, or,
   with ``estimator="ewma"`` (the EWMA-only estimator of §IV-A, Fig. 6), the raw sample. The
   first sample of a flow sets ``rate = est``; before it the rate is NaN.
4. **Jitter cut** (§III-C, eqs. 7 and 10): an arrival with a positive jitter (paper 001 eq. 7,
   ``Signals.jitter``, seconds) enters a history of the last ``jitters`` (3) positive jitters;
   once that history is full, ``rate = min(rate, jitters·s / Σ history)`` (bytes/s): eq. 10
   read with the jitters in seconds, which makes ``3/Σ`` one packet per mean positive jitter
   (packets/s), times the flow's segment size ``s``. It only ever lowers the rate.
5. **Congestion losses** (§III-C, last sentence): each loss the LDA called congestion halves the
   rate, once per loss event with ``halving="event"`` (the default: losses whose nominal time is
   within one ``R`` of the current event's first join it, RFC 5348 §5.2, as TFRC here) or once
   per loss with ``halving="loss"``. Losses called wireless change nothing.

The paper leaves open: what "back to back" means in a trace (``pair_gap``, default 0.5 ms, see
:class:`Xrtp`), the kernel, the width rule and what "estimate i.e., mean" (Fig. 2) averages;
the units of eq. 10 and whether it may raise the rate; whether "cutting its rate in half"
applies per lost packet; the start rate. Each choice is documented in ``docs/controllers.md``.
Only eq. 4 raises the rate, at a new sample: on a trace without back-to-back packets (a paced
sender) the replay has no rate, or after a few start-up pairs one that only falls.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
from numba import njit

from ..errors import UsageError
from ..specs import check_fraction, check_positive
from ..tiering import call
from .base import Controller, LazyState, Signals

ESTIMATORS = ("kde", "ewma")
HALVING = ("event", "loss")

#: the O(n) and O(n²) densities and estimates agree to this relative tolerance
KDE_RTOL = 1e-9


@njit(cache=True)
def triangle(u):
    """The triangular kernel K(u) = max(0, 1 − |u|): integrates to 1, support (−1, 1)."""
    a = abs(u)
    return 1.0 - a if a < 1.0 else 0.0


@njit(cache=True)
def kde_push(obs, pdf, m, new, width):
    """Fig. 2: add the sample ``new`` to the window ``obs[:m]`` (oldest first, capacity
    n = len(obs)) and keep ``pdf[i]`` = eq. 3's density at ``obs[i]`` in O(n); returns the new m.

    Entry i's width h(obs[i]) = width·obs[i] is fixed for as long as the entry lives, so the
    contribution ``K((X_i − X_j)/h_i)/(n·h_i)`` that X_j added is exactly what is subtracted
    when X_j leaves: finite differencing is exact up to rounding. Every entry holds at least
    its own term K(0)/(n·h_i) and no term exceeds it, so rounding stays within a few n·ulp.
    """
    n = obs.shape[0]
    if m == n:  # the oldest leaves: subtract its density from the others, shift
        old = obs[0]
        for i in range(1, n):
            h = width * obs[i]
            pdf[i] -= triangle((obs[i] - old) / h) / (n * h)
        for i in range(n - 1):
            obs[i] = obs[i + 1]
            pdf[i] = pdf[i + 1]
        m = n - 1
    for i in range(m):  # the new sample's density at every kept observation
        h = width * obs[i]
        pdf[i] += triangle((obs[i] - new) / h) / (n * h)
    obs[m] = new
    hn = width * new
    tot = 0.0
    for i in range(m + 1):  # the density at the new observation (its own term included)
        tot += triangle((new - obs[i]) / hn)
    pdf[m] = tot / (n * hn)
    return m + 1


@njit(cache=True)
def kde_estimate(obs, pdf, m):
    """The density-weighted mean Σ f(X_i)·X_i / Σ f(X_i) of the window (Fig. 2's "mean")."""
    num = 0.0
    den = 0.0
    for i in range(m):
        num += pdf[i] * obs[i]
        den += pdf[i]
    return num / den


def kde_reference(samples, width: float, n: int | None = None) -> tuple[np.ndarray, float]:
    """The O(n²) estimator: eq. 3's density at every sample of the window, from scratch, and
    the density-weighted mean. ``n`` is the normaliser (the window's capacity; by default the
    number of samples; it cancels in the estimate)."""
    x = np.asarray(samples, dtype=np.float64)
    n = len(x) if n is None else n
    h = width * x
    u = np.abs(x[:, None] - x[None, :]) / h[:, None]
    pdf = np.where(u < 1.0, 1.0 - u, 0.0).sum(axis=1) / (n * h)
    return pdf, float((pdf * x).sum() / pdf.sum())


@njit(cache=True)
def xrtp_kernel(
    start,
    t_recv,
    t_send,
    seq,
    size,
    s,
    R,
    jitter,
    loss_at,
    loss_t,
    congestion,
    use_kde,
    alpha,
    n,
    width,
    pair_gap,
    jitters,
    per_event,
    keep_state,
):
    """Replay XRTP (module docstring): per arrival the allowed rate (bytes/s), the packet-pair
    sample it gave (NaN if none), the bandwidth estimate (KDE, or the samples' EWMA) and the
    eq. 10 cut last computed (NaN before the history is full)."""
    N = t_recv.shape[0]
    rate_out = np.empty(N)  # every entry is written below
    kept = N if keep_state else 0  # the state arrays only when asked for
    sample_out = np.empty(kept)
    est_out = np.empty(kept)
    cut_out = np.empty(kept)
    obs = np.zeros(n)
    pdf = np.zeros(n)
    hist = np.zeros(jitters)
    m = 0
    hn = 0
    hpos = 0
    rate = np.nan
    est = np.nan
    cut = np.nan
    have_event = False
    ev_t = 0.0
    li = 0
    L = loss_at.shape[0]
    for i in range(N):
        if keep_state:
            sample_out[i] = np.nan
        if start[i]:
            m = 0
            hn = 0
            hpos = 0
            rate = np.nan
            est = np.nan
            cut = np.nan
            have_event = False
        elif seq[i] == seq[i - 1] + 1 and abs(t_send[i] - t_send[i - 1]) <= pair_gap:
            dr = t_recv[i] - t_recv[i - 1]
            if dr > 0.0 and size[i] > 0.0:
                x = size[i] / dr
                if keep_state:
                    sample_out[i] = x
                if use_kde:
                    m = kde_push(obs, pdf, m, x, width)
                    est = kde_estimate(obs, pdf, m)
                    bw = est
                else:
                    est = x if np.isnan(est) else alpha * est + (1.0 - alpha) * x
                    bw = x
                rate = bw if np.isnan(rate) else alpha * rate + (1.0 - alpha) * bw
        if jitter[i] > 0.0:
            hist[hpos] = jitter[i]
            hpos += 1
            if hpos == jitters:
                hpos = 0
            if hn < jitters:
                hn += 1
            if hn == jitters:
                total = 0.0
                for k in range(jitters):
                    total += hist[k]
                cut = jitters * s[i] / total
                if rate > cut:  # a NaN rate, before the first sample, stays NaN
                    rate = cut
        while li < L and loss_at[li] == i:
            # a congestion loss halves when it starts a loss event (or always, per loss); a NaN
            # R (no RTT yet) makes every congestion loss an event, as in tfrc_kernel
            if congestion[li] and (not per_event or not have_event or not (loss_t[li] <= ev_t + R[i])):
                rate *= 0.5
                have_event = True
                ev_t = loss_t[li]
            li += 1
        rate_out[i] = rate
        if keep_state:
            est_out[i] = est
            cut_out[i] = cut
    return rate_out, sample_out, est_out, cut_out


@dataclasses.dataclass(frozen=True)
class Xrtp(Controller):
    """XRTP rate control (paper 001 §III-B/C; rules in the module docstring).

    ``estimator``: ``"kde"`` (Fig. 2's linear-time KDE over the last ``n`` = 8 samples, §IV-A)
    or ``"ewma"`` (raw samples straight into eq. 4: the EWMA Fig. 6 compares against).
    ``alpha``: eq. 4's α (0.8, §V "Choice of parameters"; Fig. 6 also uses 0.6).
    ``width``: the kernel's relative width, h(x) = width·x (0.25: packet-pair modes from a cross
    packet squeezed in or a pair compressed downstream lie a factor ~2 apart, and any width
    < 1/2 keeps such modes out of each other's density; 0.25 leaves margin and still pools
    samples scattered ±25 % by timing noise).
    ``pair_gap``: the largest send spacing (s) of a back-to-back pair (0.5 ms: ns-2 stamps both
    packets of a burst at the same instant; a sender-side NIC of ≥ 24 Mb/s puts full-size
    packets ≤ 0.5 ms apart; and by eq. 1 a pair sent that close still measures any bottleneck
    with S/B_bn ≥ 0.5 ms: up to 12 Mb/s at 762 B, 24 Mb/s at 1500 B, above the paper's 2 Mb/s
    wireless hop and its 11 Mb/s testbed).
    ``jitters``: how many positive jitters eq. 10 averages (3, §III-C and §V).
    ``halving``: ``"event"`` (once per RFC 5348 loss event: one RTT) or ``"loss"`` (per loss).
    """

    name: ClassVar[str] = "xrtp"
    estimator: str = "kde"
    alpha: float = 0.8
    n: int = 8
    width: float = 0.25
    pair_gap: float = 0.0005
    jitters: int = 3
    halving: str = "event"

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise UsageError(f"{self.name}: estimator must be one of {', '.join(ESTIMATORS)}, not {self.estimator!r}")
        if self.halving not in HALVING:
            raise UsageError(f"{self.name}: halving must be one of {', '.join(HALVING)}, not {self.halving!r}")
        check_fraction(self.name, alpha=self.alpha)
        check_positive(self.name, width=self.width)
        if self.width == float("inf"):
            raise UsageError(f"{self.name}: width must be finite, not {self.width!r}")
        for key in ("n", "jitters"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise UsageError(f"{self.name}: {key} must be a whole number ≥ 1, not {value!r}")
        gap = self.pair_gap
        if isinstance(gap, bool) or not isinstance(gap, (int, float)) or not gap >= 0 or gap == float("inf"):
            raise UsageError(f"{self.name}: pair_gap must be a number of seconds ≥ 0, not {gap!r}")

    def run(self, sig: Signals, congestion: np.ndarray):
        args = (
            sig.start,
            sig.t_recv,
            sig.t_send,
            sig.seq,
            sig.size,
            sig.s,
            sig.R,
            sig.jitter,
            sig.loss_at,
            sig.loss_t,
            np.asarray(congestion, dtype=np.bool_),
            self.estimator == "kde",
            float(self.alpha),
            int(self.n),
            float(self.width),
            float(self.pair_gap),
            int(self.jitters),
            self.halving == "event",
        )
        rate = call(xrtp_kernel, *args, False, us_per_item=4)[0]
        rate *= 8.0  # bytes/s → bits/s, in place
        keys = ("sample_bps", "estimate_bps", "cut_bps")
        return rate, LazyState(
            keys,
            lambda: {k: v * 8.0 for k, v in zip(keys, call(xrtp_kernel, *args, True, us_per_item=4)[1:], strict=True)},
        )


CONTROLLERS = (Xrtp,)
