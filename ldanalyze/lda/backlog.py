"""Backlog LDAs: Veno's test (Fu and Liew, "TCP Veno", IEEE JSAC 21(2), 2003, §II eq. (1)),
replayed at the receiver.

Veno estimates how many of the flow's own packets wait in the bottleneck queue,
N = Actual·(RTT − BaseRTT) with Actual = cwnd/RTT, and takes a loss for random (wireless) when
N < β = 3 packets: a flow whose backlog is that small cannot have overflowed the buffer. We did
not find the paper's own text here; the rule and β are read from two implementations that
restate eq. (1) with the paper as their source (ns-3's ``tcp-veno.h``, Linux's ``tcp_veno.c``).

A receiver knows neither cwnd nor the RTT, but N is Little's law over the flow's share of the
queue: its packets' arrival rate times the queueing delay they see. We read RTT − BaseRTT as the
one-way delay above its running minimum (the forward queue, where the flow's data waits; clock
offset cancels, so no common clock is needed) and Actual as the receive rate over the flow's last
``window`` arrivals. Exact semantics: ``docs/ldas.md``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..specs import check_positive
from .base import LDA, Features, Verdict


def receive_rate(f: Features, window: int) -> np.ndarray:
    """Per arrival: m / (t_j − t_{j−m}) packets/s with m = min(window, arrivals before j in the
    flow); NaN when m = 0 or the m arrivals took no time."""
    index = np.arange(f.t.shape[0])
    m = np.minimum(window, index - f.first)
    span = f.t - f.t[index - m]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((m > 0) & (span > 0), m / span, np.nan)


@dataclasses.dataclass(frozen=True)
class Veno(LDA):
    """Veno (Fu and Liew 2003, eq. (1)): wireless iff N = rate·(gap delay − d_min) < ``beta``.

    ``rate`` is the flow's receive rate over its last ``window`` arrivals (packets/s) and d_min
    the minimum one-way delay so far, both at the state arrival; β = 3 packets as in Veno. An
    undefined N (no rate yet) is congestion.
    """

    name = "veno"
    beta: float = 3.0
    window: int = 8

    def __post_init__(self) -> None:
        check_positive(self.name, beta=self.beta)
        if not (isinstance(self.window, int) and not isinstance(self.window, bool) and self.window >= 1):
            raise UsageError(f"{self.name}: window must be a whole number of arrivals ≥ 1, not {self.window!r}")

    def _backlog(self, f: Features) -> tuple[np.ndarray, np.ndarray]:
        """(rate per arrival, d_min per arrival)."""
        lo, _ = f.delay_range()
        return receive_rate(f, self.window), lo

    def decide(self, f: Features) -> Verdict:
        rate, lo = self._backlog(f)
        backlog = f.at_state(rate) * (f.gdelay - f.at_state(lo))
        return Verdict(f.decided & (backlog < self.beta))

    def state(self, f: Features) -> pd.DataFrame:
        rate, lo = self._backlog(f)
        return pd.DataFrame({"d": f.d, "rate": rate, "queueing": f.d - lo, "N": rate * (f.d - lo)})
