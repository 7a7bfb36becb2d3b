"""XRTP's loss discrimination heuristic (paper 001 §III-D, Fig. 4).

A buffer that overflows squeezes the packets around the drop together, so positive jitters
(a growing queue) followed by a negative jitter at the packet after the gap mean congestion.
Because cross traffic can fill the slot a drop leaves, XRTP then double-checks the cases that
look like transmission losses against the delay level: a ROTT high in its observed range,
with several recent ROTTs above their running deviation, is still called congestion.
Exact semantics: ``docs/ldas.md``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from numba import njit

from ..errors import UsageError
from ..specs import check_fraction, check_positive
from ..tiering import call
from .base import LDA, Features, Verdict, take


@njit(cache=True)
def xrtp_state(d, jitter, mean, dev, start, window):
    """Per arrival: the run of consecutive positive jitters ending there, and how many of the
    flow's last ``window`` arrivals (including it) were over deviation (d > mean + dev)."""
    size = d.shape[0]
    run = np.empty(size, np.int64)
    count = np.empty(size, np.int64)
    over = np.zeros(size, np.int8)
    r = c = 0
    first = 0
    for i in range(size):
        if start[i]:
            r = c = 0
            first = i
        r = r + 1 if jitter[i] > 0 else 0
        over[i] = 1 if d[i] > mean[i] + dev[i] else 0
        c += over[i]
        if i - window >= first:
            c -= over[i - window]
        run[i] = r
        count[i] = c
    return run, count


@dataclasses.dataclass(frozen=True)
class Xrtp(LDA):
    """XRTP (paper 001 Fig. 4).

    1. The ``positive_jitters`` arrivals before the gap had positive jitter and the packet that
       reveals it has a negative one → congestion.
    2. Else congestion iff p = (ROTT − ROTT_min)/(ROTT_max − ROTT_min) ≥ ``threshold`` and at
       least ``l1`` of the last ``n`` ROTTs were over deviation (ROTT > mean + dev, EWMA gains
       ``alpha`` and 2·alpha); otherwise a transmission (wireless) loss.

    The paper leaves threshold, l1 and n open, and calls its own choices conservative. Ours:
    threshold 1/3 (the buffer level at which Spike leaves its spike state, paper 000 §III-B),
    n = 8 (XRTP's own filter window, §III-B), l1 = 2 (more than one delayed packet). The deviation
    is taken from Barman and Matta [20], who work with TCP's RTT statistics, hence TCP's gain
    1/8. "A history of positive jitters" is read as at least two.
    """

    name = "xrtp"
    positive_jitters: int = 2
    threshold: float = 1 / 3
    n: int = 8
    l1: int = 2
    alpha: float = 1 / 8

    def __post_init__(self) -> None:
        check_fraction(self.name, threshold=self.threshold, alpha=self.alpha)
        check_positive(self.name, positive_jitters=self.positive_jitters, n=self.n, alpha=self.alpha)
        if not (isinstance(self.l1, int) and 0 <= self.l1 <= self.n):
            raise UsageError(f"{self.name}: l1 must be a whole number between 0 and n={self.n}, not {self.l1!r}")

    def _state(self, f: Features):
        mean, dev = f.delay_ewma(self.alpha)
        run, count = call(xrtp_state, f.d, f.jitter, mean, dev, f.start, self.n)
        lo, hi = f.delay_range()
        return mean, dev, run, count, lo, hi

    def decide(self, f: Features) -> Verdict:
        _, _, run, count, lo, hi = self._state(f)
        before = np.where((f.rev > 0) & ~take(f.start, f.rev, True), f.rev - 1, -1)
        squeezed = (take(f.jitter, f.rev, np.nan) < 0) & (take(run, before, 0) >= self.positive_jitters)
        low, high = f.at_state(lo), f.at_state(hi)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(high > low, (f.gdelay - low) / (high - low), np.nan)
        loaded = (p >= self.threshold) & (f.at_state(count, 0) >= self.l1)
        return Verdict(f.decided & ~squeezed & ~loaded)

    def state(self, f: Features) -> pd.DataFrame:
        mean, dev, run, count, lo, hi = self._state(f)
        return pd.DataFrame(
            {
                "d": f.d,
                "mean": mean,
                "dev": dev,
                "positive_run": run,
                "over_deviation": count,
                "position": (f.d - lo) / np.where(hi > lo, hi - lo, np.nan),
            }
        )
