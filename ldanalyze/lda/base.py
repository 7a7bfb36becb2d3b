"""What every LDA shares: the replay semantics, the arrays it reads, and its base class.

The replay contract (which arrival's statistics decide which gap, what "the ROTT of a gap" is,
when a gap counts as detected) is written out in ``docs/ldas.md``; this module turns a Timeline
into the flat arrays that contract speaks of, once, so that every LDA reads the same ones.

An LDA's kernel folds the arrivals of all flows (contiguous, in arrival order, ``start`` marking
each flow's first) into per-arrival state arrays; its decision rule is then a vectorised
function of the state at each gap's decision arrival. The state arrays double as the state
trace for plots.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from ..errors import UsageError
from ..specs import Parameterized
from ..tiering import call
from ..timeline import RECEIVER, SENDER, Timeline
from .kernels import ewma_mean_dev, running_min_max

GAP_DELAYS = ("revealing", "previous")
VIEWS = (RECEIVER, SENDER)  # a timeline's view (``Timeline.view``) and what an LDA declares


@dataclasses.dataclass(frozen=True)
class Replay:
    """The shared replay semantics (``docs/ldas.md``).

    ``update_first``: the arriving packet is folded into the statistics before the gap it
    reveals is decided (False: decided with the state before it). ``gap_delay``: the delay a
    gap is judged by is that of the packet that reveals it, P_{i+n+1} (``"revealing"``), or of
    the last one before it, P_i (``"previous"``). ``detection``: a gap is decided at the
    ``detection``-th arrival at or above its revealing packet's sequence number (1: at once;
    3: RFC 5348 §5.1's rule).
    """

    update_first: bool = True
    gap_delay: str = "revealing"
    detection: int = 1

    def __post_init__(self) -> None:
        if self.gap_delay not in GAP_DELAYS:
            raise UsageError(f"gap_delay must be one of {', '.join(GAP_DELAYS)}, not {self.gap_delay!r}")
        if not (isinstance(self.detection, (int, np.integer)) and self.detection >= 1):
            raise UsageError(f"detection must be a whole number of arrivals ≥ 1, not {self.detection!r}")


@dataclasses.dataclass(frozen=True)
class Features:
    """The arrays of one timeline under one Replay, shared by all LDAs.

    Per arrival (all flows, each contiguous in arrival order): ``start`` (a flow's first
    arrival), ``t`` (receive time), ``d`` (one-way delay t_recv − t_send), ``jitter`` (paper 001
    eq. 7), ``spacing`` (receive spacing when the arrival is the sequence successor of the
    previous one, else NaN: the T_min samples), ``tavg_sample`` (receive spacing over the
    sequence numbers it spans, when it advances: ZBS's T_avg samples), ``t0`` (the flow's first
    arrival time).

    Per gap: ``n``, ``Ti`` (receive spacing of P_i and P_{i+n+1}), ``rev`` (revealing arrival),
    ``at`` (decision arrival, −1 when never detected), ``si`` (the arrival whose state decides:
    ``at``, or ``at − 1`` when not ``update_first``; −1 when no arrival precedes), ``gidx``
    (the arrival whose delay the gap is judged by, −1 if none) and ``gdelay`` (that delay).
    The verdicts decided over them are kept (``verdict``).
    """

    timeline: Timeline
    semantics: Replay
    start: np.ndarray
    t: np.ndarray
    d: np.ndarray
    jitter: np.ndarray
    spacing: np.ndarray
    tavg_sample: np.ndarray
    t0: np.ndarray
    n: np.ndarray
    Ti: np.ndarray
    rev: np.ndarray
    at: np.ndarray
    si: np.ndarray
    gidx: np.ndarray
    gdelay: np.ndarray
    # what LDAs decided over these arrays (``verdict``: the learned LDA and the policer detector
    # reuse the verdicts of the schemes they stack) and the state they share (``shared``)
    memo: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def shared(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per ``key``: per-arrival state several LDAs read (the delay's
        running range and EWMA, T_min). The arrays are shared: never modify them."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def delay_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Per arrival, the running minimum and maximum of its flow's one-way delay."""
        return self.shared(("delay_range",), lambda: call(running_min_max, self.d, self.start))

    def delay_ewma(self, gain: float) -> tuple[np.ndarray, np.ndarray]:
        """Per arrival, the EWMA of the one-way delay and of its mean deviation (gains ``gain``
        and 2·gain, the mean first: ZigZag's and XRTP's)."""
        return self.shared(("delay_ewma", gain), lambda: call(ewma_mean_dev, self.d, self.start, gain, 2 * gain, False))

    def verdict(self, lda: LDA) -> Verdict:
        """``lda.decide(self)``, once per LDA (equal parameters: the same verdict); an LDA that
        cannot be hashed (a user's, not frozen) decides each time."""
        try:
            hash(lda)
        except TypeError:
            return lda.decide(self)
        if lda not in self.memo:
            self.memo[lda] = lda.decide(self)
        return self.memo[lda]

    @functools.cached_property
    def first(self) -> np.ndarray:
        """Per arrival, the index of its flow's first arrival."""
        return flow_firsts(self.start)

    @property
    def decided(self) -> np.ndarray:
        """Gaps with a decision arrival and some state to decide with."""
        return self.si >= 0

    def at_state(self, state: np.ndarray, fill: Any = np.nan) -> np.ndarray:
        """``state`` (per arrival) at each gap's deciding arrival; ``fill`` where there is none."""
        return take(state, self.si, fill)

    @classmethod
    def of(cls, timeline: Timeline, semantics: Replay) -> Features:
        a, g = timeline.arrivals, timeline.gaps
        flow_codes = a["flow"].cat.codes.to_numpy()
        start = np.ones(len(a), bool)
        start[1:] = flow_codes[1:] != flow_codes[:-1]
        t = a["t_recv"].to_numpy(np.float64)
        t_send = a["t_send"].to_numpy(np.float64)
        d = t - t_send
        seq = a["seq"].to_numpy(np.int64)
        step = np.zeros(len(a), np.int64)
        step[1:] = seq[1:] - seq[:-1]
        step[start] = 0
        iat = np.full(len(a), np.nan)
        iat[1:] = t[1:] - t[:-1]
        iat[start] = np.nan
        spacing = np.where(step == 1, iat, np.nan)
        tavg_sample = np.where(step >= 1, iat / np.maximum(step, 1), np.nan)
        t0 = t[flow_firsts(start)]

        rev = g["arrival"].to_numpy(np.int64)
        prev = g["prev_arrival"].to_numpy(np.int64)
        at = rev if semantics.detection == 1 else call(_detection_arrivals, seq, start, rev, semantics.detection)
        if semantics.update_first:
            si = at.copy()
        else:
            si = np.where((at > 0) & ~start[np.maximum(at, 0)], at - 1, -1)
        gidx = rev if semantics.gap_delay == "revealing" else prev
        gdelay = take(d, gidx, np.nan)
        return cls(
            timeline=timeline,
            semantics=semantics,
            start=start,
            t=t,
            d=d,
            jitter=a["jitter"].to_numpy(np.float64),
            spacing=spacing,
            tavg_sample=tavg_sample,
            t0=t0,
            n=g["n"].to_numpy(np.int64),
            Ti=(g["t_next_recv"] - g["t_prev_recv"]).to_numpy(np.float64),
            rev=rev,
            at=at,
            si=si,
            gidx=gidx,
            gdelay=gdelay,
        )


def flow_firsts(start: np.ndarray) -> np.ndarray:
    """Per arrival, the index of its flow's first arrival (``start`` marks each flow's first)."""
    return np.maximum.accumulate(np.where(start, np.arange(start.shape[0]), 0))


def take(values: np.ndarray, index: np.ndarray, fill: Any) -> np.ndarray:
    """``values[index]`` where ``index ≥ 0``, ``fill`` where it is −1 (``values`` may be empty)."""
    if values.size == 0:
        return np.full(index.shape, fill)
    return np.where(index >= 0, values[np.maximum(index, 0)], fill)


@njit(cache=True)
def _detection_arrivals(seq, start, rev, k):
    """For each gap, the k-th arrival of its flow from ``rev`` on whose seq ≥ seq[rev]; −1 if none."""
    n = seq.shape[0]
    out = np.full(rev.shape[0], -1, np.int64)
    for g in range(rev.shape[0]):
        r = rev[g]
        count = 0
        j = r
        while j < n and (j == r or not start[j]):
            if seq[j] >= seq[r]:
                count += 1
                if count == k:
                    out[g] = j
                    break
            j += 1
    return out


@dataclasses.dataclass(frozen=True)
class Verdict:
    """An LDA's decision per gap (``wireless``), or per lost packet (``per_loss``, omniscient).

    ``scheme`` optionally names, per gap, which base algorithm decided (ZBS); ``confidence``
    the probability it gave its call (0.5-1), and ``abstained`` the gaps it makes no call on
    (the learned LDA).
    """

    wireless: np.ndarray
    per_loss: bool = False
    scheme: np.ndarray | None = None
    confidence: np.ndarray | None = None
    abstained: np.ndarray | None = None


class LDA(Parameterized):
    """Base of every LDA: a frozen dataclass of its parameters (see the subclasses).

    ``decide(features)`` returns a Verdict; ``state(features)`` the per-arrival internal state
    (a DataFrame aligned with ``timeline.arrivals``) for plots.

    What it reads and may do, declared as class attributes (a subclass sets those that differ),
    so that the conformance kit (``ldanalyze.testing``) holds it to the rules that fit, by what
    it declares and not by its name: ``views``, the views of a flow it is defined on (``VIEWS``:
    the receiver's arrivals and gaps, the sender's ACK samples and loss detections; ``classify``
    refuses it on another, ``all`` leaves it out there) and ``variant_of``, the LDA it is the
    other view's form of (``spike@rtt``: ``spike``; the refusal names it); ``reads_truth``, it reads each loss's true cause (omniscient:
    it may then decide per lost packet, not per gap); ``needs_radio_evidence``, it cannot run
    without ``packets.AIR_COLUMNS`` (a monitor-mode capture: macseq); ``may_abstain``, it may
    make no call on a detected loss (``Verdict.abstained``: the learned LDA); ``hindsight``, it
    decides a loss with what came after it (a verdict per chunk, Flach et al.'s policer detector):
    not what the endpoint could have known then, so the kit does not hold it to causality and
    its decisions carry that caveat.
    """

    name: ClassVar[str]
    views: ClassVar[tuple[str, ...]] = (RECEIVER,)
    variant_of: ClassVar[str] = ""
    reads_truth: ClassVar[bool] = False
    needs_radio_evidence: ClassVar[bool] = False
    may_abstain: ClassVar[bool] = False
    hindsight: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass that declares one view the 0.5.0 way (``view = "sender"``) declares it in
        ``views``."""
        super().__init_subclass__(**kwargs)
        view = cls.__dict__.get("view")
        if isinstance(view, str):
            cls.views = (view,)

    def prepare(self, timeline: Timeline) -> None:
        """Check that the timeline carries what this LDA needs; raise UsageError if not."""

    def decide(self, f: Features) -> Verdict:
        raise NotImplementedError

    def state(self, f: Features) -> pd.DataFrame:
        """Per-arrival internal state; LDAs without any return just the delay."""
        return pd.DataFrame({"d": f.d})
