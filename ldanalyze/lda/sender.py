"""LDAs on the sender's view (issue #44 §2): the backlog tests of Veno and of the Vegas predictor,
and the receiver's delay schemes replayed on the sender's RTT samples as named variants.

On a sender's timeline (``sender_timeline``) an arrival is an ACK sample: its delay ``d`` is the
RTT and its ``window`` the sender's window in segments. Both backlog tests read the same
estimate of the flow's own packets queued on the path,

    N = W·(RTT − BaseRTT)/RTT = (Expected − Actual)·BaseRTT,  Expected = W/BaseRTT, Actual = W/RTT,

with BaseRTT the least RTT so far: Veno's N (Fu and Liew, "TCP Veno", IEEE JSAC 21(2), 2003, §II
eq. (1)) and Vegas's Diff (Brakmo and Peterson, IEEE JSAC 13(8), 1995), which Biaz and Vaidya
turned into a loss predictor ("Distinguishing congestion losses from wireless transmission
losses: a negative result", IC3N 1998). Exact semantics: ``docs/ldas.md``, "The sender's view".

The variants (``spike@rtt``, ``zigzag@rtt``, ``wro_ldaplus@rtt``) are the receiver's schemes with
their rule and parameters unchanged, judging the RTT where their papers (000 §III-B and §III-C,
002 §2.2.2) judge the forward one-way delay: the reverse path's queueing (the ACKs') is added to
what they see, and nothing in the papers says how they fare with it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from numba import njit

from ..errors import UsageError
from ..specs import check_positive
from ..tiering import call
from ..timeline import Timeline
from .base import LDA, SENDER, Features, Verdict
from .rott import Spike, WroLdaPlus, ZigZag


@dataclasses.dataclass(frozen=True)
class SpikeRtt(Spike):
    """Spike (paper 000 §III-B) on the sender's RTT samples: the spike state over the RTT's range."""

    name = "spike@rtt"
    views = (SENDER,)
    variant_of = Spike.name


@dataclasses.dataclass(frozen=True)
class ZigZagRtt(ZigZag):
    """ZigZag (paper 000 §III-C) on the sender's RTT samples; ``n`` is the losses the sender
    detected at once."""

    name = "zigzag@rtt"
    views = (SENDER,)
    variant_of = ZigZag.name


@dataclasses.dataclass(frozen=True)
class WroLdaPlusRtt(WroLdaPlus):
    """WRO-LDA+ (paper 002 eqs. 10 and 12) on the sender's RTT samples."""

    name = "wro_ldaplus@rtt"
    views = (SENDER,)
    variant_of = WroLdaPlus.name


def backlog(window: np.ndarray, rtt: np.ndarray, base: np.ndarray) -> np.ndarray:
    """N = W·(RTT − BaseRTT)/RTT (module docstring); NaN where the window is unknown."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return window * (rtt - base) / rtt


def sample_backlog(f: Features) -> np.ndarray:
    """Per ACK sample, its N: its window and RTT, BaseRTT the least RTT of its flow so far."""
    lo, _ = f.delay_range()
    return backlog(f.timeline.arrivals["window"].to_numpy(np.float64), f.d, lo)


class BacklogLDA(LDA):
    """An LDA on the sender's backlog estimate: needs the ACK samples' ``window``."""

    views = (SENDER,)

    def prepare(self, timeline: Timeline) -> None:
        if "window" not in timeline.arrivals.columns:
            raise UsageError(f"{self.name}: the timeline's arrivals have no sender's window (column 'window')")


@dataclasses.dataclass(frozen=True)
class VenoSender(BacklogLDA):
    """Veno's test at the sender (Fu and Liew 2003, eq. (1)): wireless iff N < ``beta`` segments,
    N from the window at the deciding ACK sample and the gap's RTT (its ``gap_delay``); an
    unknown N (no window known) is congestion. The receiver's estimate of the same N is ``veno``."""

    name = "veno_sender"
    variant_of = "veno"
    beta: float = 3.0

    def __post_init__(self) -> None:
        check_positive(self.name, beta=self.beta)

    def decide(self, f: Features) -> Verdict:
        lo, _ = f.delay_range()
        window = f.at_state(f.timeline.arrivals["window"].to_numpy(np.float64))
        return Verdict(f.decided & (backlog(window, f.gdelay, f.at_state(lo)) < self.beta))

    def state(self, f: Features) -> pd.DataFrame:
        return pd.DataFrame(
            {"d": f.d, "window": f.timeline.arrivals["window"].to_numpy(np.float64), "N": sample_backlog(f)}
        )


@njit(cache=True)
def band_state(x, start, lower, upper):
    """Per arrival: 1 once x > ``upper``, 0 once x < ``lower``, else (or x NaN) the state before;
    each flow starts at 0."""
    out = np.empty(x.shape[0], np.int8)
    state = 0
    for i in range(x.shape[0]):
        if start[i]:
            state = 0
        if x[i] > upper:
            state = 1
        elif x[i] < lower:
            state = 0
        out[i] = state
    return out


@dataclasses.dataclass(frozen=True)
class Vegas(BacklogLDA):
    """The Vegas loss predictor (Biaz and Vaidya, IC3N 1998): Diff = (Expected − Actual)·BaseRTT
    per ACK sample; the prediction is congestion once Diff > ``beta``, no congestion once Diff <
    ``alpha`` and unchanged in between (Vegas's band, whose α = 1 and β = 3 segments are the
    defaults); a loss is wireless where no congestion is predicted at its deciding ACK sample."""

    name = "vegas"
    alpha: float = 1.0
    beta: float = 3.0

    def __post_init__(self) -> None:
        check_positive(self.name, alpha=self.alpha, beta=self.beta)
        if self.alpha > self.beta:
            raise UsageError(f"{self.name}: alpha ({self.alpha}) must be ≤ beta ({self.beta})")

    def predicted(self, f: Features) -> np.ndarray:
        """Per ACK sample, 1 where congestion is predicted."""
        return call(band_state, sample_backlog(f), f.start, self.alpha, self.beta)

    def decide(self, f: Features) -> Verdict:
        return Verdict(f.decided & (f.at_state(self.predicted(f), 1) == 0))

    def state(self, f: Features) -> pd.DataFrame:
        return pd.DataFrame({"d": f.d, "diff": sample_backlog(f), "congestion": self.predicted(f).astype(bool)})
