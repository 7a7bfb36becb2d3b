"""What the window controllers (newreno, westwood_be, westwood_abse) share, as small numba helpers.

- the **timeout** rule: a silence longer than the RTO of that moment (RFC 6298's
  max(min_rto, SRTT + 4·RTTVAR) at the previous arrival, 1 s before the first RTT sample);
- Reno **growth**: +1 segment per new ACK in slow start (cwnd < ssthresh), else +1/cwnd;
- the **once-per-window** rule: a loss starts a new reduction only when its nominal time is
  more than SRTT after the current reduction's time (NewReno's recovery).

Each controller decides what a timeout or a reduction does to its window. Exact contract:
``docs/controllers.md`` (newreno section).
"""

from __future__ import annotations

import numpy as np
from numba import njit

INITIAL_RTO = 1.0  # RFC 6298 §2.1: the RTO before the first RTT sample (s)
MIN_SSTHRESH = 2.0  # segments: RFC 5681 eq. 4's floor of 2·SMSS


@njit(cache=True)
def timed_out(i, t_recv, srtt, rttvar, min_rto):
    """Arrival ``i`` (not a flow's first): was the silence before it longer than the RTO in
    force at the previous arrival?"""
    if np.isnan(srtt[i - 1]):
        rto = INITIAL_RTO
    else:
        rto = max(min_rto, srtt[i - 1] + 4.0 * rttvar[i - 1])
    return t_recv[i] - t_recv[i - 1] > rto


@njit(cache=True)
def reno_growth(cwnd, ssthresh):
    """The window after one new ACK (segments): slow start below ssthresh, else +1/cwnd."""
    if cwnd < ssthresh:
        return cwnd + 1.0
    return cwnd + 1.0 / cwnd


@njit(cache=True)
def starts_reduction(loss_t, reduced_at, srtt):
    """Does a congestion loss at nominal time ``loss_t`` start a new reduction, rather than join
    the one made at ``reduced_at`` (within SRTT of it)? Always when SRTT is unknown."""
    return not (loss_t <= reduced_at + srtt)
