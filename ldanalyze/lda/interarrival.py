"""Inter-arrival LDAs: Biaz, mBiaz (paper 000 §III-A, Figs. 1-2) and WIN-LDA+ (paper 002 §2.2.1
eq. 9, §3 eq. 11).

All three compare the receive spacing T_i of the packets around a gap of n losses with the
minimum spacing T_min of consecutive in-sequence arrivals: if P_{i+n+1} arrived about n+1
packet times after P_i, the n missing packets most likely crossed the bottleneck and were lost
after it, on the radio. Exact semantics: ``docs/ldas.md``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from numba import njit

from ..specs import check_positive
from ..tiering import call
from .base import LDA, Features, Verdict, take


@njit(cache=True)
def running_tmin(spacing, start, t, t0, horizon):
    """T_min after each arrival: the minimum of the spacing samples (non-NaN) seen in the flow
    so far, learning only from arrivals with ``t < t0 + horizon``; NaN before the first."""
    out = np.empty(spacing.shape[0])
    tmin = np.nan
    for i in range(spacing.shape[0]):
        if start[i]:
            tmin = np.nan
        s = spacing[i]
        if s == s and t[i] < t0[i] + horizon and not (tmin <= s):
            tmin = s
        out[i] = tmin
    return out


def tmin_state(f: Features, horizon: float = math.inf) -> np.ndarray:
    """T_min after each arrival (``running_tmin``), once per Features and horizon."""
    return f.shared(("tmin", horizon), lambda: call(running_tmin, f.spacing, f.start, f.t, f.t0, horizon))


def biaz_window(f: Features, tmin: np.ndarray, upper: float, upper_inclusive: bool) -> np.ndarray:
    """Per gap: (n+1)·T_min ≤ T_i < (n+upper)·T_min (≤ when ``upper_inclusive``)."""
    tm = f.at_state(tmin)
    lower_ok = (f.n + 1) * tm <= f.Ti
    hi = (f.n + upper) * tm
    upper_ok = f.Ti <= hi if upper_inclusive else f.Ti < hi
    return f.decided & lower_ok & upper_ok


@dataclasses.dataclass(frozen=True)
class Biaz(LDA):
    """Biaz (paper 000 §III-A, Fig. 1): wireless iff (n+1)·T_min ≤ T_i < (n+upper)·T_min.

    ``upper`` is the upper window limit factor, 2 in Biaz and Vaidya's scheme. T_min is the
    minimum receive spacing of consecutive in-sequence arrivals so far, updated on every arrival;
    before it exists every loss is congestion.
    """

    name = "biaz"
    upper: float = 2.0

    def __post_init__(self) -> None:
        check_positive(self.name, upper=self.upper)

    def decide(self, f: Features) -> Verdict:
        return Verdict(biaz_window(f, tmin_state(f), self.upper, upper_inclusive=False))

    def state(self, f: Features) -> pd.DataFrame:
        return pd.DataFrame({"T_min": tmin_state(f)})


@dataclasses.dataclass(frozen=True)
class MBiaz(Biaz):
    """mBiaz (paper 000 §III-A, Fig. 2): Biaz with the upper limit lowered to (n+1.25)·T_min,
    which trades a little wireless accuracy for far fewer congestion losses called wireless."""

    name = "mbiaz"
    upper: float = 1.25


@dataclasses.dataclass(frozen=True)
class WinLdaPlus(LDA):
    """WIN-LDA+ (paper 002 §2.2.1 eq. 9, §3 eq. 11): Biaz's rule with both bounds inclusive and
    T_min learnt only during the observation period ``T_obs`` (seconds from the flow's first
    arrival), frozen after; losses decided during it count as congestion.

    Eq. 11 prints T_g = Tr_i − Tr_{i−1} − (Ts_i − Ts_{i−1}), a jitter, which can never reach
    eq. 9's (n+1)·T_min; we read T_g as the receive spacing T_i. The paper gives no T_obs;
    5 s is one LDA+ report interval (paper 002 §2.1).
    """

    name = "win_ldaplus"
    T_obs: float = 5.0

    def __post_init__(self) -> None:
        check_positive(self.name, T_obs=self.T_obs)

    def decide(self, f: Features) -> Verdict:
        tmin = tmin_state(f, self.T_obs)
        observing = ~(take(f.t, f.at, np.nan) >= take(f.t0, f.at, np.nan) + self.T_obs)  # at the decision
        return Verdict(biaz_window(f, tmin, 2.0, upper_inclusive=True) & ~observing)

    def state(self, f: Features) -> pd.DataFrame:
        return pd.DataFrame({"T_min": tmin_state(f, self.T_obs), "observing": f.t < f.t0 + self.T_obs})
