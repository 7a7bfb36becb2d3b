"""ZBS, the hybrid of ZigZag, mBiaz and Spike (paper 000 §VII-A, Figs. 10 and 13).

ZBS guesses the topology from T_narr = T_avg / T_min: about 1 when the slowest (wireless) link
carries this flow alone, where mBiaz excels; about N when N flows share it, where Spike does
best; ZigZag covers the ambiguous ranges and the start. Exact semantics: ``docs/ldas.md``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from numba import njit

from ..errors import UsageError
from ..specs import check_positive
from ..tiering import call
from .base import LDA, Features, Replay, Verdict
from .interarrival import MBiaz, biaz_window, tmin_state
from .rott import Spike, ZigZag, hysteresis, zigzag_wireless

SCHEMES = ("zigzag", "mbiaz", "spike")
ZIGZAG, MBIAZ, SPIKE = 0, 1, 2


@njit(cache=True)
def zbs_schemes(t, d, tavg_sample, tmin, start, delay_frac, b1, b2, b3, gain, lock_time, lock_packets):
    """The base scheme in force after each arrival (0 ZigZag, 1 mBiaz, 2 Spike) and T_avg."""
    scheme = np.empty(t.shape[0], np.int8)
    tavg_out = np.empty(t.shape[0])
    tavg = dmin = t_lock = np.nan
    current = ZIGZAG
    j_lock = 0
    for i in range(t.shape[0]):
        x = tavg_sample[i]
        if start[i]:
            tavg = np.nan
            dmin = d[i]
            current = ZIGZAG
            j_lock = i
            t_lock = t[i]
        elif d[i] < dmin:
            dmin = d[i]
        if x == x:
            tavg = x if tavg != tavg else (1 - gain) * tavg + gain * x
        tm = tmin[i]
        if i - j_lock >= lock_packets or t[i] - t_lock >= lock_time:
            if tm != tm or tavg != tavg:
                candidate = ZIGZAG
            elif d[i] < dmin + delay_frac * tm:
                candidate = SPIKE
            else:
                narr = tavg / tm if tm > 0 else np.inf
                if narr < b1:
                    candidate = ZIGZAG
                elif narr < b2:
                    candidate = MBIAZ
                elif narr < b3:
                    candidate = ZIGZAG
                else:
                    candidate = SPIKE
            if candidate != current:
                current = candidate
                j_lock = i
                t_lock = t[i]
        scheme[i] = current
        tavg_out[i] = tavg
    return scheme, tavg_out


@dataclasses.dataclass(frozen=True)
class Zbs(LDA):
    """ZBS (paper 000 §VII-A): the switching predicate

    rott < rott_min + delay_frac·T_min → Spike; else T_narr < 0.875 → ZigZag, < 1.5 → mBiaz,
    < 2.0 → ZigZag, else Spike; T_avg is an EWMA (gain 1/8) of the receive spacing per packet
    spanned. It starts with ZigZag, keeps a scheme at least ``lock_time`` seconds or
    ``lock_packets`` arrivals (whichever first), and uses ZigZag until T_min and T_avg exist.
    The base schemes are its own, with their own parameters (§VII-A names them: modified Biaz,
    Spike, ZigZag; the defaults are theirs, §III): ``mbiaz_upper``, ``spike_alpha``/``spike_beta``,
    ``zigzag_alpha``/``zigzag_dev_factors``, independent of the stand-alone LDAs'. Besides the
    decision, it reports which base scheme decided each loss and (``usage``) the share of time
    each was in force.
    """

    name = "zbs"
    delay_frac: float = 0.05
    narr_bounds: tuple[float, float, float] = (0.875, 1.5, 2.0)
    gain: float = 0.125
    lock_time: float = 3.0
    lock_packets: int = 50
    mbiaz_upper: float = MBiaz.upper
    spike_alpha: float = Spike.alpha
    spike_beta: float = Spike.beta
    zigzag_alpha: float = ZigZag.alpha
    zigzag_dev_factors: tuple[float, float, float, float] = ZigZag.dev_factors

    def __post_init__(self) -> None:
        check_positive(self.name, gain=self.gain, lock_time=self.lock_time, lock_packets=self.lock_packets)
        object.__setattr__(self, "narr_bounds", tuple(float(v) for v in self.narr_bounds))
        b = self.narr_bounds
        if len(b) != 3 or not b[0] <= b[1] <= b[2]:
            raise UsageError(f"{self.name}: narr_bounds needs 3 increasing values, not {b!r}")
        try:  # the base schemes check their own parameters
            zigzag, _, _ = self.bases()
        except UsageError as exc:
            raise UsageError(f"{self.name}: {exc}") from None
        object.__setattr__(self, "zigzag_dev_factors", zigzag.dev_factors)

    def bases(self) -> tuple[ZigZag, MBiaz, Spike]:
        """ZBS's own base schemes, with its parameters (in the order of ``SCHEMES``)."""
        return (
            ZigZag(alpha=self.zigzag_alpha, dev_factors=self.zigzag_dev_factors),
            MBiaz(upper=self.mbiaz_upper),
            Spike(alpha=self.spike_alpha, beta=self.spike_beta),
        )

    def schemes(self, f: Features) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scheme per arrival, T_avg per arrival, T_min per arrival)."""
        tmin = tmin_state(f)
        b1, b2, b3 = self.narr_bounds
        scheme, tavg = call(
            zbs_schemes,
            f.t,
            f.d,
            f.tavg_sample,
            tmin,
            f.start,
            self.delay_frac,
            b1,
            b2,
            b3,
            self.gain,
            self.lock_time,
            self.lock_packets,
        )
        return scheme, tavg, tmin

    def decide(self, f: Features) -> Verdict:
        scheme, _, tmin = self.schemes(f)
        zz, mbiaz, spike = self.bases()
        by_zigzag = zigzag_wireless(f, *zz.mean_dev(f), zz.dev_factors)
        by_mbiaz = biaz_window(f, tmin, mbiaz.upper, upper_inclusive=False)
        by_spike = f.at_state(call(hysteresis, f.d, f.start, spike.alpha, spike.beta, False), 1) == 0
        chosen = f.at_state(scheme, ZIGZAG).astype(np.int8)
        wireless = np.choose(chosen, [by_zigzag, by_mbiaz, by_spike]) & f.decided
        return Verdict(wireless, scheme=chosen)

    def state(self, f: Features) -> pd.DataFrame:
        scheme, tavg, tmin = self.schemes(f)
        return pd.DataFrame(
            {
                "scheme": pd.Categorical.from_codes(scheme.astype(np.int64), categories=list(SCHEMES)),
                "T_avg": tavg,
                "T_min": tmin,
                "T_narr": tavg / tmin,
            }
        )

    def usage(self, timeline) -> pd.DataFrame:
        """Per flow, the share of time each base scheme was in force (paper 000 Fig. 13).

        The scheme chosen at an arrival holds until the flow's next arrival.
        """
        f = Features.of(timeline, Replay())  # the scheme per arrival does not depend on the replay
        scheme, _, _ = self.schemes(f)
        a = f.timeline.arrivals
        held = np.zeros(len(a))
        held[:-1] = f.t[1:] - f.t[:-1]
        last = np.ones(len(a), bool)
        last[:-1] = f.start[1:]
        held[last] = 0.0
        frame = pd.DataFrame({"flow": a["flow"].astype(str).to_numpy(), "scheme": scheme, "held": held})
        table = frame.pivot_table(index="flow", columns="scheme", values="held", aggfunc="sum", fill_value=0.0)
        table = table.reindex(columns=range(len(SCHEMES)), fill_value=0.0)
        table.columns = list(SCHEMES)
        total = table.sum(axis=1).where(lambda s: s > 0)
        return table.div(total, axis=0).reset_index()
