"""LDA+, the enhanced loss-delay based adaptation algorithm, with an LDA (WLDA+): paper 002 §2.1, §3.

Paper: ``../shared/papers/002_6e8034261046bac6.txt`` (Mujica, Sisalem, Popescu-Zeletin, Wolisz).
An RTP receiver sends an RTCP report every T seconds with the fraction ``l`` of the interval's
packets lost; the sender adjusts its rate ``r`` once per report. WLDA+ (§3) counts in ``l`` only
the losses its LDA called congestion. Exact replay contract: ``docs/controllers.md``.

Receiver, per flow (receiver time ``t_recv``):

- report intervals: the first starts at the flow's first arrival; the report goes out at the
  first arrival with ``t_recv ≥ start + T`` (an arrival exactly ``T`` after the start reports),
  after that arrival and the losses it decides have been counted, and the next interval starts
  at that arrival. Reports are therefore at least ``T`` apart, as RTCP's minimum interval
  between reports is (§2.1); a silence longer than ``T`` gives one late report, not several;
- ``n_c``: the losses decided (at their decision arrival) during the interval that the LDA
  called **congestion**; wireless ones are not counted (§3: ``l`` becomes ``l_cong``);
- packets expected in the interval, from the sequence numbers as RTCP counts them (RFC 3550
  §6.4.1, A.3): ``S_max − S_prev``, with ``S_max`` the highest sequence number received so far
  and ``S_prev`` its value at the previous report; for the first report ``S_prev`` is one below
  the lowest sequence number of the flow's first arrival and of the losses decided before that
  report (so the flow's first packets, when lost, are expected too);
- ``l = n_c / max(expected, n_c)`` (0 when ``n_c = 0``): the expected count is raised to
  ``n_c`` when fewer (a loss decided after the report that covered its sequence number, with
  ``--detection`` > 1), so that ``l ≤ 1``.

Sender, at each report (rates in bytes/s; ``M = s``, the flow's segment size in bytes;
``τ = R``, RFC 5348 §4.3's EWMA of the RTT samples the sender had at ``t``, the same estimate
the TFRC replay uses in the same equation; ``R_b`` the bottleneck bandwidth of the flow,
``Signals.capacity``: the user's capacity or the packet-pair estimate ``s / T_min``):

- ``l > 0`` (eq. 8): ``r ← max(r·(1 − sqrt(l)), r_TCP)``, with ``r_TCP`` from eq. 1 (PFTK,
  ``models.pftk_rate``): ``M / (τ·sqrt(2Dl/3) + t_out·min(1, 3·sqrt(3Dl/8))·l·(1 + 32l²))``,
  ``t_out = 4τ`` (paper 002 gives none; RFC 5348 §3.1's choice). A rate below ``r_TCP`` thus
  jumps up to it, as §2.1 allows ("the sender is allowed to further increase its transmission
  rate up to r_TCP"). ``A ← A_0``;
- ``l = 0`` (eqs. 2-7), with ``x = r/R_b``:
  ``A_add = A + (1 − x)·A`` (eq. 2), ``A_exp = (1 − exp(−(1 − x)))·r`` (eq. 3),
  ``A_TCP = M·(T/τ + 1)/(2τ)`` (eqs. 4-5, with the report interval parameter ``T`` as the
  paper's "average value of T seconds between the reception of two receiver reports"),
  ``A ← max(0, min(A_add, A_exp, A_TCP))`` (eq. 6), ``r ← r + A`` (eq. 7).

Choices where paper 002 is silent (also in ``docs/controllers.md``):

- start: ``r = r_0`` = 10 kb/s from the flow's first arrival (§4.1: "Senders ... start with a
  transmission rate of 10 kb/s"), held until the first report;
- ``A_0`` (the additive increase before the first report and after every report with loss):
  10 kb/s by default, the start rate: eq. 2 lets ``A`` at most double per report, so ``A``
  grows smoothly again after a cut, as §2.1 asks ("to allow for a smooth increase of A"). After
  a report with loss ``A`` restarts at ``A_0`` (eq. 2 defines ``A`` only across loss-free
  reports);
- ``A`` is clamped at 0: a report without loss never lowers the rate. Eq. 3 is negative when
  ``r > R_b`` (after eq. 8 raised ``r`` to an ``r_TCP`` above the bottleneck, or with an
  underestimated capacity), which would cut the rate on a loss-free report, and eq. 2 would keep
  a negative ``A`` negative. While ``r ≥ R_b`` the rate then holds until the next loss. The rate
  is never capped at ``R_b`` (the summary's ``thput`` caps it);
- unknown bottleneck (``R_b`` NaN: no packet pair in the flow and no capacity given): ``x = 0``,
  as for an unbounded bottleneck (``R_b → ∞``): ``A_add = 2A``, ``A_exp = (1 − 1/e)·r``;
- unknown RTT at a report (``R`` NaN, before the sender's first RTT sample): the report closes
  its interval but changes neither ``r`` nor ``A``;
- ``D`` (packets acknowledged per ACK in eq. 1): 1.

Units: the parameters ``r_0`` and ``A_0`` are bits/s (like every rate a controller gives);
``T`` seconds. The kernel works in bytes/s; ``run`` returns bits/s.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
from numba import njit

from ..specs import check_positive
from ..tiering import call
from .base import Controller, LazyState, Signals

#: codes of ``rule`` in the state: which rule set the rate at the last report
RULE_NONE, RULE_ADD, RULE_EXP, RULE_TCP, RULE_CUT, RULE_FLOOR = 0, 1, 2, 3, 4, 5
RULES = {
    RULE_NONE: "none",
    RULE_ADD: "A_add",
    RULE_EXP: "A_exp",
    RULE_TCP: "A_TCP",
    RULE_CUT: "r(1-sqrt(l))",
    RULE_FLOOR: "r_TCP",
}


@njit(cache=True)
def pftk(M, rtt, l, D):
    """r_TCP (bytes/s), paper 002 eq. 1 with t_out = 4·rtt: the kernel's ``models.pftk_rate``."""
    t_out = 4.0 * rtt
    return M / (
        rtt * np.sqrt(2.0 * D * l / 3.0) + t_out * min(1.0, 3.0 * np.sqrt(3.0 * D * l / 8.0)) * l * (1.0 + 32.0 * l * l)
    )


@njit(cache=True)
def ldaplus_kernel(start, t_recv, seq, s, tau, flow, capacity, loss_at, loss_seq, congestion, T, r0, A0, D):
    """Replay LDA+ (module docstring). Returns the rate r after every arrival (bytes/s) and, per
    report: the reporting arrival, l, A (bytes/s), r_TCP (bytes/s, NaN for a report without
    loss) and the rule that set r.

    Only report arrivals change anything, so the loop jumps from report to report: it scans
    for the first arrival at or after the interval's end, takes the highest sequence number
    and the congestion losses up to it, and fills the arrivals in between with the rate in
    force (per arrival: one comparison, one sequence-number maximum and one store)."""
    N = t_recv.shape[0]
    L = loss_at.shape[0]
    r_out = np.empty(N)
    # per report; at most one report per arrival (untouched pages of these cost nothing)
    rep_at = np.empty(N, np.int64)
    l_rep = np.empty(N)
    A_rep = np.empty(N)
    rtcp_rep = np.empty(N)
    rule_rep = np.empty(N, np.int8)
    n_rep = 0
    li = 0
    f0 = 0
    while f0 < N:
        f1 = f0 + 1
        while f1 < N and not start[f1]:
            f1 += 1
        r = r0
        A = A0
        t_start = t_recv[f0]
        s_max = seq[f0]
        s_prev = seq[f0] - 1
        reported = False
        held = f0  # the first arrival whose rate is not written yet
        cur = f0  # the first arrival of the current interval not yet looked at
        while True:
            end = t_start + T
            k = cur
            while k < f1 and not (t_recv[k] >= end):
                k += 1
            if k == f1:
                break
            # report at arrival k, after k and the losses it decides have been counted
            for m in range(cur, k + 1):
                s_max = max(s_max, seq[m])
            n_c = 0
            while li < L and loss_at[li] <= k:
                if congestion[li]:
                    n_c += 1
                if not reported and loss_seq[li] <= s_prev:
                    s_prev = loss_seq[li] - 1
                li += 1
            r_out[held:k] = r
            expected = s_max - s_prev
            if n_c == 0:
                l = 0.0
            else:
                l = n_c / max(expected, n_c)
            rt = tau[k]
            r_tcp = np.nan
            rule = RULE_NONE
            if rt > 0:
                M = s[k]
                if l > 0:
                    r_tcp = pftk(M, rt, l, D)
                    cut = r * (1.0 - np.sqrt(l))
                    if cut >= r_tcp:
                        r = cut
                        rule = RULE_CUT
                    else:
                        r = r_tcp
                        rule = RULE_FLOOR
                    A = A0
                else:
                    cap = capacity[flow[k]]
                    x = r / cap if cap > 0 else 0.0
                    a_add = A + (1.0 - x) * A
                    a_exp = (1.0 - np.exp(-(1.0 - x))) * r
                    a_tcp = M * (T / rt + 1.0) / (2.0 * rt)
                    A = a_add
                    rule = RULE_ADD
                    if a_exp < A:
                        A = a_exp
                        rule = RULE_EXP
                    if a_tcp < A:
                        A = a_tcp
                        rule = RULE_TCP
                    A = max(A, 0.0)
                    r = r + A
            rep_at[n_rep] = k
            l_rep[n_rep] = l
            A_rep[n_rep] = A
            rtcp_rep[n_rep] = r_tcp
            rule_rep[n_rep] = rule
            n_rep += 1
            held = k
            cur = k + 1
            t_start = t_recv[k]
            s_prev = s_max
            reported = True
        r_out[held:f1] = r
        while li < L and loss_at[li] < f1:
            li += 1
        f0 = f1
    return (
        r_out,
        rep_at[:n_rep].copy(),
        l_rep[:n_rep].copy(),
        A_rep[:n_rep].copy(),
        rtcp_rep[:n_rep].copy(),
        rule_rep[:n_rep].copy(),
    )


@dataclasses.dataclass(frozen=True)
class LdaPlus(Controller):
    """LDA+ (paper 002 §2.1) counting only the losses its LDA calls congestion (§3, WLDA+).

    ``T``: RTCP report interval (s, 5); ``r_0``: start rate (bits/s, 10 kb/s, §4.1); ``A_0``:
    the additive increase before the first report and after each report with loss (bits/s,
    10 kb/s: not in the paper); ``D``: packets acknowledged per ACK in eq. 1 (1).
    """

    name: ClassVar[str] = "ldaplus"
    T: float = 5.0
    r_0: float = 10_000.0
    A_0: float = 10_000.0
    D: float = 1.0

    def __post_init__(self) -> None:
        check_positive(self.name, T=self.T, r_0=self.r_0, A_0=self.A_0, D=self.D)

    def run(self, sig: Signals, congestion: np.ndarray):
        """The allowed rate after each arrival (bits/s) and the state for plots, per arrival:
        ``report`` (the arrival carried a report), and held from the flow's last report: ``l``,
        ``A_bps``, ``r_tcp_bps`` (NaN after a report without loss), ``rule`` (code in ``RULES``);
        before a flow's first report l and r_tcp_bps are NaN, A_bps is A_0 and rule 0."""
        rate, at, l, A, r_tcp, rule = call(
            ldaplus_kernel,
            sig.start,
            sig.t_recv,
            sig.seq,
            sig.s,
            sig.R,
            sig.flow,
            sig.capacity,
            sig.loss_at,
            sig.loss_seq,
            np.asarray(congestion, np.bool_),
            float(self.T),
            self.r_0 / 8.0,
            self.A_0 / 8.0,
            float(self.D),
            us_per_item=3,
        )
        rate *= 8.0
        keys = ("report", "l", "A_bps", "r_tcp_bps", "rule")
        held = (sig.start, at, l, A * 8.0, r_tcp * 8.0, rule, float(self.A_0))
        return rate, LazyState(keys, lambda: dict(zip(keys, held_state(*held), strict=True)))


@njit(cache=True)
def held_state(start, at, l, A, r_tcp, rule, A0):
    """Per arrival: did it report, and l, A, r_TCP, rule of the flow's last report (NaN, A0,
    NaN, RULE_NONE before the flow's first report)."""
    N = start.shape[0]
    report = np.zeros(N, np.bool_)
    l_out = np.empty(N)
    A_out = np.empty(N)
    rtcp_out = np.empty(N)
    rule_out = np.empty(N, np.int8)
    j = 0
    cl, cA, cr, cu = np.nan, A0, np.nan, RULE_NONE
    for i in range(N):
        if start[i]:
            cl, cA, cr, cu = np.nan, A0, np.nan, RULE_NONE
        if j < at.shape[0] and at[j] == i:
            report[i] = True
            cl, cA, cr, cu = l[j], A[j], r_tcp[j], rule[j]
            j += 1
        l_out[i] = cl
        A_out[i] = cA
        rtcp_out[i] = cr
        rule_out[i] = cu
    return report, l_out, A_out, rtcp_out, rule_out


CONTROLLERS = (LdaPlus,)
