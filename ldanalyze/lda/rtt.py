"""Lim et al.'s adaptive RTT threshold (paper 003 §3.1, eq. 2).

A loss is congestion when the delay measured just before it exceeds
Tbar + Tdev·(2·(T_p/Tbar)^k − 1): near an empty queue (Tbar ≈ T_p) the threshold is
Tbar + Tdev, hard to exceed, so losses are called wireless; as the queue fills (Tbar ≫ T_p) it
falls towards Tbar − Tdev, so congestion losses are not missed. Unlike the ROTT schemes it needs
absolute delays. Exact semantics and the delay sources: ``docs/ldas.md``.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..packets import label_positions
from ..specs import check_positive
from ..tiering import call
from .base import LDA, VIEWS, Features, Verdict, take
from .kernels import ewma_mean_dev, running_min_max

DELAY_MODES = ("auto", "rtt", "owd", "propagation")


@dataclasses.dataclass(frozen=True)
class AdaptiveRtt(LDA):
    """Adaptive RTT threshold (paper 003 §3.1 eq. 2), k = 2.

    ``delay`` picks the delay samples: ``"rtt"`` (the trace's RTT samples from feedback),
    ``"owd"`` (absolute one-way delay; needs one clock at both ends, as in ns-2),
    ``"propagation"`` (ROTT plus the given ``propagation_delay``, for separate clocks) or
    ``"auto"`` (per flow, the first of these the trace supports). The EWMAs are RFC 6298's
    (gains 1/8 and 1/4, as the paper's "as in most TCP implementations" says).
    """

    name = "adaptive_rtt"
    views = VIEWS  # defined on the sender's RTT (paper 003 §3.1); at a receiver, on its feedback's
    k: float = 2.0
    delay: str = "auto"
    propagation_delay: float | None = None

    def __post_init__(self) -> None:
        if self.delay not in DELAY_MODES:
            raise UsageError(f"{self.name}: delay must be one of {', '.join(DELAY_MODES)}, not {self.delay!r}")
        if self.propagation_delay is not None:
            check_positive(self.name, propagation_delay=self.propagation_delay)
        if self.delay == "propagation" and self.propagation_delay is None:
            raise UsageError(f"{self.name}: delay='propagation' needs propagation_delay (seconds)")

    def modes(self, timeline) -> pd.Series:
        """The delay source of each flow; UsageError if a flow with losses to decide has none."""
        flows = pd.Index(timeline.flows)
        deciding = {str(flow) for flow in pd.unique(timeline.gaps["flow"])}
        with_rtt = {str(flow) for flow in pd.unique(timeline.rtt["flow"])}
        if self.delay == "auto":

            def pick(flow: str) -> str:
                if flow in with_rtt:
                    return "rtt"
                if timeline.clock_common:
                    return "owd"
                if self.propagation_delay is not None:
                    return "propagation"
                if flow not in deciding:
                    return "none"
                raise UsageError(
                    f"{self.name}: flow {flow} has no RTT samples and the trace's clocks are not "
                    "common, so its absolute delay is unknown; give its propagation delay (command line: "
                    "--lda adaptive_rtt:propagation_delay=SECONDS; Python: propagation_delay=...)"
                )

            return pd.Series([pick(flow) for flow in flows], index=flows, dtype=object)
        if self.delay == "owd" and not timeline.clock_common and deciding:
            raise UsageError(
                f"{self.name}: delay='owd' needs sender and receiver on one clock, "
                "which this trace does not declare; use 'propagation' or 'rtt'"
            )
        if self.delay == "rtt":
            missing = [flow for flow in flows if flow not in with_rtt and flow in deciding]
            if missing:
                raise UsageError(f"{self.name}: delay='rtt' but flow(s) {', '.join(missing)} have no RTT samples")
        return pd.Series(self.delay, index=flows, dtype=object)

    def prepare(self, timeline) -> None:
        self.modes(timeline)

    def _arrival_delays(self, f: Features, modes: pd.Series) -> np.ndarray:
        """x per arrival: the owd, or (propagation mode) owd − its minimum so far + propagation_delay."""
        propagation = list(modes.index[modes == "propagation"])
        if not propagation:
            return f.d
        flows = f.timeline.arrivals["flow"]
        shifted = flows.isin(propagation).to_numpy()
        lo, _ = f.delay_range()
        return np.where(shifted, f.d - lo + self.propagation_delay, f.d)

    def decide(self, f: Features) -> Verdict:
        modes = self.modes(f.timeline)
        flows = f.timeline.gaps["flow"].astype(str).to_numpy()
        x = self._arrival_delays(f, modes)
        mean, dev = call(ewma_mean_dev, x, f.start, 1 / 8, 1 / 4, True)
        lo, _ = call(running_min_max, x, f.start)  # T_p; in propagation mode it is propagation_delay
        T = take(x, f.gidx, np.nan)
        congestion = self._congested(T, f.at_state(mean), f.at_state(dev), f.at_state(lo))
        rtt_flows = list(modes.index[modes == "rtt"])
        if rtt_flows:
            use = np.isin(flows, rtt_flows)
            congestion[use] = self._congested(*self._rtt_state(f, flows, rtt_flows))[use]
        return Verdict(f.decided & ~congestion)

    def _congested(self, T, mean, dev, Tp) -> np.ndarray:
        """Eq. 2: T > Tbar + Tdev·(2·(T_p/Tbar)^k − 1); True before any sample (no Tbar)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            threshold = mean + dev * (2 * (Tp / mean) ** self.k - 1)
        return (T > threshold) | np.isnan(mean)

    def _rtt_state(self, f: Features, flows: np.ndarray, rtt_flows: list[str]):
        """Per gap: the last RTT sample at the decision time and the EWMAs/minimum up to it."""
        r = f.timeline.rtt
        position = label_positions(r["flow"], rtt_flows)  # each sample's flow among rtt_flows, or -1
        t_all = r["t"].to_numpy(np.float64)
        mine = np.flatnonzero(position >= 0)
        order = mine[np.lexsort((t_all[mine], position[mine]))]  # by flow, then time; stable
        x, rt, rflow = r["rtt"].to_numpy(np.float64)[order], t_all[order], position[order]
        start = np.ones(len(order), bool)
        start[1:] = rflow[1:] != rflow[:-1]
        mean, dev = call(ewma_mean_dev, x, start, 1 / 8, 1 / 4, True)
        lo, _ = call(running_min_max, x, start)
        t_decide = take(f.t, f.at, np.nan)  # the decision time, whatever arrival holds the state
        side: Literal["left", "right"] = "right" if f.semantics.update_first else "left"
        idx = np.full(len(flows), -1, np.int64)
        for j, flow in enumerate(rtt_flows):
            rows = np.flatnonzero(rflow == j)  # contiguous: sorted by flow
            if rows.size == 0:  # no samples, and (checked by modes) no gap to decide
                continue
            g = np.flatnonzero(flows == flow)
            k = np.searchsorted(rt[rows], t_decide[g], side=side) - 1
            idx[g] = np.where((k >= 0) & ~np.isnan(t_decide[g]), rows[0] + k, -1)

        return take(x, idx, np.nan), take(mean, idx, np.nan), take(dev, idx, np.nan), take(lo, idx, np.nan)

    def state(self, f: Features) -> pd.DataFrame:
        """Per arrival: the delay sample x and the EWMAs over x (flows judged by RTT samples
        have theirs in ``timeline.rtt``)."""
        x = self._arrival_delays(f, self.modes(f.timeline))
        mean, dev = call(ewma_mean_dev, x, f.start, 1 / 8, 1 / 4, True)
        lo, _ = call(running_min_max, x, f.start)
        return pd.DataFrame({"x": x, "T_bar": mean, "T_dev": dev, "T_p": lo})
