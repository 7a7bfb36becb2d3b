"""A plain AIMD window controller in the manner of TCP NewReno (RFC 5681, RFC 6582), as a baseline.

Every new arrival is one ACK that opens the window (slow start +1, congestion avoidance
+1/cwnd); a loss the LDA called congestion halves it, once per window of data (losses within
one SRTT of the loss that started the reduction join it, as NewReno's recovery does); a silence
longer than the RTO is a timeout (cwnd = 1), whatever the LDA says, since no ACK tells the
sender anything. The allowed rate is min(cwnd, max_window)·s / SRTT. Fed the unaware decisions
it is NewReno; fed an LDA's, it halves only on losses called congestion (paper 003 §3.2's
rule). Exact contract: ``docs/controllers.md``.
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
from .window import MIN_SSTHRESH, reno_growth, starts_reduction, timed_out


@njit(cache=True)
def newreno_kernel(
    start, t_recv, new, s, srtt, rttvar, loss_at, loss_t, congestion, initial_window, max_window, min_rto, keep_state
):
    """Per arrival: the allowed rate (bytes/s) and, with ``keep_state`` (else empty arrays),
    cwnd and ssthresh after it (segments)."""
    N = t_recv.shape[0]
    rate = np.full(N, np.nan)
    m = N if keep_state else 0
    cwnd_out = np.empty(m)
    ssthresh_out = np.empty(m)
    cwnd = initial_window
    ssthresh = np.inf
    event_t = -np.inf
    li = 0
    L = loss_at.shape[0]
    for i in range(N):
        if start[i]:
            cwnd = initial_window
            ssthresh = np.inf
            event_t = -np.inf
        elif timed_out(i, t_recv, srtt, rttvar, min_rto):
            ssthresh = max(min(cwnd, max_window) / 2.0, MIN_SSTHRESH)
            cwnd = 1.0
            event_t = t_recv[i]
        if new[i]:
            cwnd = reno_growth(cwnd, ssthresh)
        while li < L and loss_at[li] == i:
            if congestion[li] and starts_reduction(loss_t[li], event_t, srtt[i]):
                ssthresh = max(min(cwnd, max_window) / 2.0, MIN_SSTHRESH)
                cwnd = ssthresh
                event_t = loss_t[li]
            li += 1
        rate[i] = min(cwnd, max_window) * s[i] / srtt[i]
        if keep_state:
            cwnd_out[i] = cwnd
            ssthresh_out[i] = ssthresh
    return rate, cwnd_out, ssthresh_out


@dataclasses.dataclass(frozen=True)
class NewReno(Controller):
    """AIMD window baseline. ``initial_window`` (segments, 2: RFC 5681 and ns-2's windowInit_),
    ``max_window`` (segments; the receiver window, None for none; ns-2's window_), ``min_rto``
    (s; RFC 6298's 1 s; ns-2 uses 0.2)."""

    name: ClassVar[str] = "newreno"
    initial_window: float = 2.0
    max_window: float | None = None
    min_rto: float = 1.0

    def __post_init__(self) -> None:
        check_positive(self.name, initial_window=self.initial_window, min_rto=self.min_rto)
        if self.max_window is not None and not (isinstance(self.max_window, (int, float)) and self.max_window >= 1):
            raise UsageError(
                f"{self.name}: max_window must be a number of segments ≥ 1 (or None), not {self.max_window!r}"
            )

    def run(self, sig: Signals, congestion: np.ndarray):
        max_window = np.inf if self.max_window is None else float(self.max_window)
        args = (
            sig.start,
            sig.t_recv,
            sig.new,
            sig.s,
            sig.srtt,
            sig.rttvar,
            sig.loss_at,
            sig.loss_t,
            congestion,
            float(self.initial_window),
            max_window,
            float(self.min_rto),
        )
        rate = call(newreno_kernel, *args, False, us_per_item=8)[0]
        rate *= 8.0  # bytes/s → bits/s, in place
        keys = ("cwnd", "ssthresh", "srtt")

        def state():
            _, cwnd, ssthresh = call(newreno_kernel, *args, True, us_per_item=8)
            return {"cwnd": cwnd, "ssthresh": ssthresh, "srtt": sig.srtt}

        return rate, LazyState(keys, state)


CONTROLLERS = (NewReno,)
