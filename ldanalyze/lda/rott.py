"""ROTT LDAs: Spike (paper 000 §III-B), WRO-LDA+ (paper 002 §2.2.2 eq. 10, §3 eq. 12) and
ZigZag (paper 000 §III-C).

They judge a loss by the relative one-way trip time: a queue that is filling delays packets,
so a loss during high delay is probably a buffer overflow. Only differences of the one-way
delay enter, so a constant clock offset between sender and receiver does not matter (skew
does). Exact semantics: ``docs/ldas.md``.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pandas as pd
from numba import njit

from ..errors import UsageError
from ..specs import check_fraction, check_positive
from ..tiering import call
from .base import LDA, Features, Verdict


@njit(cache=True)
def hysteresis(d, start, hi_frac, lo_frac, inclusive):
    """Two-threshold state per arrival (1 = spike / congestion, 0 = not).

    With lo, hi the flow's delay range so far (including the arrival), the state becomes 1 when
    d > lo + hi_frac·(hi − lo) and 0 when d < lo + lo_frac·(hi − lo), and otherwise keeps its
    value (≥ and ≤, with the first test winning, when ``inclusive``). Each flow starts at 0.
    """
    out = np.empty(d.shape[0], np.int8)
    a = b = 0.0
    state = 0
    for i in range(d.shape[0]):
        v = d[i]
        if start[i]:
            a = b = v
            state = 0
        elif v < a:
            a = v
        elif v > b:
            b = v
        upper = a + hi_frac * (b - a)
        lower = a + lo_frac * (b - a)
        if inclusive:
            if v >= upper:
                state = 1
            elif v <= lower:
                state = 0
        elif state == 0 and v > upper:
            state = 1
        elif state == 1 and v < lower:
            state = 0
        out[i] = state
    return out


class TwoThresholdLDA(LDA):
    """An LDA whose state is ``hysteresis`` of the delay between two fractions of its range."""

    inclusive: ClassVar[bool]

    @property
    def fractions(self) -> tuple[str, float, str, float]:
        """(upper name, upper fraction, lower name, lower fraction)."""
        raise NotImplementedError

    def __post_init__(self) -> None:
        hi_name, hi, lo_name, lo = self.fractions
        check_fraction(self.name, **{hi_name: hi, lo_name: lo})
        if hi < lo:
            raise UsageError(f"{self.name}: {hi_name} ({hi}) must be ≥ {lo_name} ({lo})")

    def decide(self, f: Features) -> Verdict:
        _, hi, _, lo = self.fractions
        congested = call(hysteresis, f.d, f.start, hi, lo, self.inclusive)
        return Verdict(f.decided & (f.at_state(congested, 1) == 0))

    def state(self, f: Features) -> pd.DataFrame:
        _, hi_frac, _, lo_frac = self.fractions
        lo, hi = f.delay_range()
        return pd.DataFrame(
            {
                "d": f.d,
                "start_threshold": lo + hi_frac * (hi - lo),
                "end_threshold": lo + lo_frac * (hi - lo),
                "congested": call(hysteresis, f.d, f.start, hi_frac, lo_frac, self.inclusive).astype(bool),
            }
        )


@dataclasses.dataclass(frozen=True)
class Spike(TwoThresholdLDA):
    """Spike (paper 000 §III-B, Fig. 3): congestion iff the flow is in the spike state.

    The state is entered when ROTT > rott_min + alpha·(rott_max − rott_min) and left when
    ROTT < rott_min + beta·(rott_max − rott_min), min/max over all arrivals so far.
    """

    name = "spike"
    inclusive = False
    alpha: float = 1 / 2
    beta: float = 1 / 3

    @property
    def fractions(self) -> tuple[str, float, str, float]:
        return "alpha", self.alpha, "beta", self.beta


@dataclasses.dataclass(frozen=True)
class WroLdaPlus(TwoThresholdLDA):
    """WRO-LDA+ (paper 002 eqs. 10 and 12): a three-way ROTT test per arrival.

    ROTT ≥ B_spike_start → Congestion; else ROTT ≤ B_spike_end → Underload; else keep the
    previous state. B_spike_start/end = ROTT_min + K/B·(ROTT_max − ROTT_min). A loss is
    congestion iff the state is Congestion.
    """

    name = "wro_ldaplus"
    inclusive = True
    K: float = 1 / 2
    B: float = 1 / 3

    @property
    def fractions(self) -> tuple[str, float, str, float]:
        return "K", self.K, "B", self.B


def zigzag_wireless(f: Features, mean: np.ndarray, dev: np.ndarray, dev_factors) -> np.ndarray:
    """ZigZag's rule per gap: gap delay < mean + dev_factors[min(n, 4) − 1]·dev."""
    factor = np.asarray(dev_factors, np.float64)[np.clip(f.n, 1, 4) - 1]
    return f.decided & (f.gdelay < f.at_state(mean) + factor * f.at_state(dev))


@dataclasses.dataclass(frozen=True)
class ZigZag(LDA):
    """ZigZag (paper 000 §III-C, Fig. 4): wireless iff the gap's ROTT is below a threshold that
    rises with the number n of packets lost: mean − dev (n = 1), mean − dev/2 (2), mean (3),
    mean + dev/2 (n > 3).

    mean and dev are EWMAs with gain alpha and 2·alpha. The extracted paper prints "− dev/2"
    for n > 3, but its reasoning (a larger loss needs a higher delay to be called congestion)
    needs the threshold to rise with n, so the default is + dev/2; ``dev_factors`` sets all four.
    """

    name = "zigzag"
    alpha: float = 1 / 32
    dev_factors: tuple[float, float, float, float] = (-1.0, -0.5, 0.0, 0.5)

    def __post_init__(self) -> None:
        check_fraction(self.name, alpha=self.alpha)
        check_positive(self.name, alpha=self.alpha)
        object.__setattr__(self, "dev_factors", tuple(float(v) for v in self.dev_factors))
        if len(self.dev_factors) != 4:
            raise UsageError(f"{self.name}: dev_factors needs 4 values (n = 1, 2, 3, > 3)")

    def mean_dev(self, f: Features) -> tuple[np.ndarray, np.ndarray]:
        return f.delay_ewma(self.alpha)

    def decide(self, f: Features) -> Verdict:
        return Verdict(zigzag_wireless(f, *self.mean_dev(f), self.dev_factors))

    def state(self, f: Features) -> pd.DataFrame:
        mean, dev = self.mean_dev(f)
        return pd.DataFrame({"d": f.d, "mean": mean, "dev": dev})
