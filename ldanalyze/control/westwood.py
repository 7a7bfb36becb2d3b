"""TCP Westwood with the BE and ABSE eligible-rate estimators (paper 004:
``/work/shared/papers/004_0d01f72913ce52fc.txt`` §2-3), optionally steered by an LDA (paper 003:
``003_ed4f1228bcecc8d6.txt`` §3.2). Open-loop replay; the exact contract is
``docs/controllers.md``. (Paper 003 ran Westwood+, whose estimator samples once per RTT; the
estimators here are paper 004's, only the response to an LDA is paper 003's.)

**Eligible Rate Estimate** (paper 004 §3.1 eq. 1), per ACK k (ACK time t_k = the arrival's
sender-side time ``Signals.t``; d_k = the arrival's size in bytes, duplicates included: Westwood
counts every DUPACK as delivered data):

    ŝ_k = α_k·ŝ_{k−1} + (1 − α_k)·s_k,    α_k = max(0, (2τ_k − Δt_k) / (2τ_k + Δt_k)),
    Δt_k = t_k − t_{k−1}  (s),  ŝ, s in bytes/s.

- **BE** (§3.1.1): s_k = d_k / Δt_k, the last ACK pair; τ_k = ``tau`` fixed (1 s: paper 004
  gives no value; its authors' ns-2 TCPW module, tcp-westwood.cc v1.3 2002/06/21, uses
  tau_ = 1.0).
- **ABSE** (§3.1.2, §3.2), with RTT = SRTT and RTT_min the sender's minimum RTT sample, W the
  usable window (segments) and s the segment size (bytes):
  T_k = max(Δt_k, RTT·(W − ŝ_{k−1}·RTT_min/s)/W) when ŝ_{k−1}·RTT_min/s < W, else Δt_k (eqs. 2-3:
  T_min = the ACK inter-arrival time, T_max = RTT);
  s_k = (bytes of the ACKs with t_j > t_k − T_k, ACK k included) / T_k (eq. 4);
  U_k = β·U_{k−1} + (1 − β)·|s_k − s_{k−1}| (eq. 5, U = 0 at the first sample, bytes/s);
  τ_k = RTT + N·RTT·U_k/U_max (eq. 6), U_max = max of the last ``history`` U (U_k included;
  U_k/U_max = 0 when U_max = 0).

Choices where the papers are silent (documented in ``docs/controllers.md``):
- ACKs that reach the sender at the same instant are **one cumulative ACK** for the estimator:
  Δt_k > 0 always, and after the last of them the state is as if one ACK had carried all their
  bytes (after each of them the estimate is recomputed from the state before the group);
- the first sample initialises ŝ (no filter step); before it ŝ is undefined (NaN). ABSE takes
  no sample before the sender has an RTT estimate;
- α_k is clamped at 0: Tustin's coefficient turns negative when Δt_k > 2τ_k (a silence), which
  could drive ŝ negative; after such a silence ŝ is the sample itself.

**Window** (paper 004 §2; Reno growth and the timeout / once-per-window rules shared with
newreno, ``window.py``):
- a loss the LDA called congestion (the "3 DUPACKs"; one reduction per window of data):
  ssthresh = max(ŝ·RTT_min/s, 2), cwnd = min(cwnd, ssthresh);
- a timeout (silence longer than the RTO): ssthresh = max(ŝ·RTT_min/s, 2), cwnd = 1 (ŝ and
  RTT_min as at the previous arrival: the timer fired before this ACK);
- while ŝ·RTT_min is undefined (no sample or no RTT yet) both fall back to Reno's
  ssthresh = max(W/2, 2);
- the floor of 2 on the 3-DUPACK branch is the ns-2 module's "safety check" (paper 004 §2
  writes it only on the timeout branch);
- a loss called wireless keeps cwnd (paper 003 §3.2); fed the unaware decisions this is plain
  Westwood. Paper 003 consults its LDA only in congestion avoidance: ``lda_in_slow_start=False``
  makes every loss in slow start (cwnd < ssthresh) act as congestion.

Allowed rate: min(cwnd, max_window)·s / SRTT (bytes/s in the kernel, bits/s from ``run``).
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
from .window import MIN_SSTHRESH, reno_growth, starts_reduction, timed_out


@njit(cache=True)
def ere_alpha(tau, dt):
    """Paper 004 eq. 1's filter coefficient (2τ − Δt)/(2τ + Δt), clamped at 0."""
    return max(0.0, (2.0 * tau - dt) / (2.0 * tau + dt))


@njit(cache=True)
def abse_interval(dt, rtt, rtt_min, ere, window, s):
    """Paper 004 eqs. 2-3: the sampling interval T_k (s) after an ACK inter-arrival ``dt``, from
    the estimate before the ACK (``ere``, bytes/s; NaN: no congestion measure yet), the usable
    window (segments) and the segment size ``s`` (bytes)."""
    backlog = window - ere * rtt_min / s  # segments the estimate does not cover in RTT_min
    if backlog > 0.0:
        return max(dt, rtt * backlog / window)
    return dt


@njit(cache=True)
def first_after(t, th, lo, hi, guess):
    """The first index j in [lo, hi) with t[j] > th (hi if none), ``t`` sorted there. Walks a few
    steps from ``guess`` (the last answer: th moves about one ACK per call), then bisects."""
    j = min(max(guess, lo), hi)
    for _ in range(4):
        if j > lo and t[j - 1] > th:
            j -= 1
        elif j < hi and not t[j] > th:
            j += 1
        else:
            return j
    if j > lo and t[j - 1] > th:  # the answer is at most j − 1
        hi = j - 1
    else:  # t[j − 1] ≤ th: the answer is at least j
        lo = j
    while lo < hi:
        mid = (lo + hi) // 2
        if t[mid] > th:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def westwood_kernel(
    start,
    t,
    t_recv,
    size,
    new,
    s,
    srtt,
    rttvar,
    rtt_min,
    loss_at,
    loss_t,
    congestion,
    abse,
    tau,
    beta,
    N,
    history,
    initial_window,
    max_window,
    min_rto,
    lda_in_slow_start,
    keep_state,
):
    """Per arrival: the allowed rate (bytes/s) and, with ``keep_state`` (else empty arrays), the
    state after it: ERE ŝ and sample s_k (bytes/s), α_k, T_k (s), τ_k (s), U_k (bytes/s), cwnd
    and ssthresh (segments).

    ``abse`` False: BE (fixed ``tau``); True: ABSE (``beta``, ``N``, ``history``)."""
    n = t.shape[0]
    rate = np.empty(n)  # every output is written at every arrival
    m = n if keep_state else 0
    ere_out = np.empty(m)
    sample_out = np.empty(m)
    alpha_out = np.empty(m)
    T_out = np.empty(m)
    tau_out = np.empty(m)
    U_out = np.empty(m)
    cwnd_out = np.empty(m)
    ssthresh_out = np.empty(m)
    cum = np.zeros(n + 1 if abse else 1)  # cum[k]: bytes of arrivals 0..k−1 (ABSE's window sums)
    if abse:
        for i in range(n):
            cum[i + 1] = cum[i] + size[i]
    ring = np.zeros(max(history - 1, 1))  # the last history − 1 committed U values
    ring_n = 0
    ring_pos = 0
    cwnd = initial_window
    ssthresh = np.inf
    reduced_at = -np.inf
    flow0 = 0
    ptr = 0  # the last answer of first_after: where the next search starts
    # the estimator: "committed" = after the previous ACK group; "pending" = the current group
    have_c = False
    ere_c = np.nan
    smp_c = np.nan
    U_c = np.nan
    ere = np.nan
    smp = np.nan
    U = np.nan
    g_first = 0
    g_t = np.nan
    g_dt = np.nan
    g_bytes = 0.0
    g_window = initial_window
    li = 0
    L = loss_at.shape[0]
    for i in range(n):
        if start[i]:
            cwnd = initial_window
            ssthresh = np.inf
            reduced_at = -np.inf
            flow0 = i
            ptr = i
            have_c = False
            ere_c = np.nan
            smp_c = np.nan
            U_c = np.nan
            ere = np.nan
            smp = np.nan
            U = np.nan
            ring_n = 0
            ring_pos = 0
            g_dt = np.nan
        elif timed_out(i, t_recv, srtt, rttvar, min_rto):
            target = ere * rtt_min[i - 1] / s[i]
            if np.isnan(target):
                target = min(cwnd, max_window) / 2.0
            ssthresh = max(target, MIN_SSTHRESH)
            cwnd = 1.0
            reduced_at = t_recv[i]
        # --- the estimator (paper 004 §3) ---
        if start[i] or t[i] > g_t:  # a new ACK group: commit the previous one
            if not start[i]:
                if not np.isnan(smp):
                    if abse and history > 1:  # its U joins the window U_max is taken over
                        ring[ring_pos] = U
                        ring_pos = (ring_pos + 1) % (history - 1)
                        ring_n = min(ring_n + 1, history - 1)
                    have_c = True
                    ere_c = ere
                    smp_c = smp
                    U_c = U
                g_dt = t[i] - g_t
            g_first = i
            g_t = t[i]
            g_bytes = 0.0
            g_window = min(cwnd, max_window)
        g_bytes += size[i]
        ere = ere_c
        smp = np.nan
        U = np.nan
        alpha = np.nan
        T = np.nan
        tau_k = np.nan
        if not np.isnan(g_dt):
            if not abse:
                T = g_dt
                tau_k = tau
                smp = g_bytes / g_dt
            elif not np.isnan(srtt[i]):
                rtt = srtt[i]
                T = abse_interval(g_dt, rtt, rtt_min[i], ere_c if have_c else np.nan, g_window, s[i])
                D = g_bytes
                if T > g_dt:  # eq. 4: the flow's earlier ACKs with t_j > t_k − T_k
                    ptr = first_after(t, g_t - T, flow0, g_first, ptr)
                    D += cum[g_first] - cum[ptr]
                smp = D / T
                U = beta * U_c + (1.0 - beta) * abs(smp - smp_c) if have_c else 0.0
                U_max = U
                for r in range(ring_n):
                    U_max = max(U_max, ring[r])
                ratio = U / U_max if U_max > 0.0 else 0.0
                tau_k = rtt + N * rtt * ratio
            if not np.isnan(smp):
                if have_c:
                    alpha = ere_alpha(tau_k, g_dt)
                    ere = alpha * ere_c + (1.0 - alpha) * smp
                else:
                    ere = smp
        # --- the window (paper 004 §2, Reno growth) ---
        if new[i]:
            cwnd = reno_growth(cwnd, ssthresh)
        while li < L and loss_at[li] == i:
            acts = congestion[li] or (not lda_in_slow_start and cwnd < ssthresh)
            if acts and starts_reduction(loss_t[li], reduced_at, srtt[i]):
                target = ere * rtt_min[i] / s[i]
                if np.isnan(target):
                    target = min(cwnd, max_window) / 2.0
                ssthresh = max(target, MIN_SSTHRESH)
                cwnd = min(cwnd, ssthresh)
                reduced_at = loss_t[li]
            li += 1
        rate[i] = min(cwnd, max_window) * s[i] / srtt[i]
        if keep_state:
            ere_out[i] = ere
            sample_out[i] = smp
            alpha_out[i] = alpha
            T_out[i] = T
            tau_out[i] = tau_k
            U_out[i] = U
            cwnd_out[i] = cwnd
            ssthresh_out[i] = ssthresh
    return rate, ere_out, sample_out, alpha_out, T_out, tau_out, U_out, cwnd_out, ssthresh_out


@dataclasses.dataclass(frozen=True)
class _Westwood(Controller):
    """The window parameters both estimators share."""

    initial_window: float = 2.0
    max_window: float | None = None
    min_rto: float = 1.0
    lda_in_slow_start: bool = True

    def __post_init__(self) -> None:
        check_positive(self.name, initial_window=self.initial_window, min_rto=self.min_rto)
        if self.max_window is not None and not (isinstance(self.max_window, (int, float)) and self.max_window >= 1):
            raise UsageError(
                f"{self.name}: max_window must be a number of segments ≥ 1 (or None), not {self.max_window!r}"
            )
        if not isinstance(self.lda_in_slow_start, bool):
            raise UsageError(f"{self.name}: lda_in_slow_start must be true or false, not {self.lda_in_slow_start!r}")

    def _replay(
        self, sig: Signals, congestion: np.ndarray, abse: bool, tau: float, beta: float, N: float, history: int
    ):
        max_window = np.inf if self.max_window is None else float(self.max_window)
        args = (
            sig.start,
            sig.t,
            sig.t_recv,
            sig.size,
            sig.new,
            sig.s,
            sig.srtt,
            sig.rttvar,
            sig.rtt_min,
            sig.loss_at,
            sig.loss_t,
            np.asarray(congestion, dtype=np.bool_),
            abse,
            float(tau),
            float(beta),
            float(N),
            int(history),
            float(self.initial_window),
            max_window,
            float(self.min_rto),
            bool(self.lda_in_slow_start),
        )
        rate = call(westwood_kernel, *args, False, us_per_item=10)[0]
        keys = (
            ("ere_bps", "sample_bps", "alpha", "T_k", "tau_k")
            + (("U_k_bps",) if abse else ())
            + ("cwnd", "ssthresh", "srtt")
        )

        def state():
            _, ere, smp, alpha, T, tau_k, U, cwnd, ssthresh = call(westwood_kernel, *args, True, us_per_item=10)
            out = {
                "ere_bps": ere * 8.0,
                "sample_bps": smp * 8.0,
                "alpha": alpha,
                "T_k": T,
                "tau_k": tau_k,
                "U_k_bps": U * 8.0,
                "cwnd": cwnd,
                "ssthresh": ssthresh,
                "srtt": sig.srtt,
            }
            return {k: out[k] for k in keys}

        rate *= 8.0  # bytes/s → bits/s, in place
        return rate, LazyState(keys, state)


@dataclasses.dataclass(frozen=True)
class WestwoodBe(_Westwood):
    """TCP Westwood with the BE estimator (paper 004 §3.1.1): one sample per ACK pair, d_k/Δt_k,
    filtered with a fixed ``tau`` (s; 1.0 as the authors' ns-2 module). Window parameters as
    newreno's: ``initial_window`` (2 segments), ``max_window`` (None), ``min_rto`` (1 s);
    ``lda_in_slow_start`` (True; False: in slow start every loss counts as congestion, paper 003 §3.2)."""

    name: ClassVar[str] = "westwood_be"
    tau: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self.name, tau=self.tau)

    def run(self, sig: Signals, congestion: np.ndarray):
        return self._replay(sig, congestion, False, self.tau, 0.0, 0.0, 1)


@dataclasses.dataclass(frozen=True)
class WestwoodAbse(_Westwood):
    """TCP Westwood with the ABSE estimator (paper 004 §3.1.2, §3.2): adaptive sampling interval
    T_k (eqs. 2-4) and filter constant τ_k = RTT·(1 + N·U_k/U_max) (eqs. 5-6) with ``beta`` (0.6),
    ``N`` (10) and U_max over the last ``history`` (10) values. Window parameters as westwood_be's."""

    name: ClassVar[str] = "westwood_abse"
    beta: float = 0.6
    N: float = 10.0
    history: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        check_fraction(self.name, beta=self.beta)
        if not (isinstance(self.N, (int, float)) and not isinstance(self.N, bool) and self.N >= 0):
            raise UsageError(f"{self.name}: N must be a number ≥ 0, not {self.N!r}")
        if not (isinstance(self.history, int) and not isinstance(self.history, bool) and self.history >= 1):
            raise UsageError(f"{self.name}: history must be a whole number ≥ 1, not {self.history!r}")

    def run(self, sig: Signals, congestion: np.ndarray):
        return self._replay(sig, congestion, True, 0.0, self.beta, self.N, self.history)


CONTROLLERS = (WestwoodBe, WestwoodAbse)
