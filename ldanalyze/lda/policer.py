"""Policer: tells a token-bucket policer's drops apart, and leaves the other losses to Spike.

A policer (Linux ``tc ... action police``, nftables ``limit rate over ... drop``, an operator's
rate plan) drops what exceeds its token rate at once, where a shaper or a router queues it
first. Its drops therefore come with **no delay rise**, which every delay-based LDA reads as the
radio's doing (Flach et al., "An Internet-wide analysis of traffic policing", SIGCOMM 2016, §2:
policing drops without the RTT inflation a queue gives). What a receiver can see of the policing
signature (the paper's detector works from the sender's side, with its retransmissions and RTT,
which a receiver of a UDP flow does not have):

* the **delivery rate is pinned** at the token rate whenever packets are lost: the bytes that
  arrived of the last ``span`` sequence numbers before a loss, per second of their sending
  (the in-band send times), stay within ``rate_tolerance`` of their median over the flow's last
  ``history`` loss events;
* **no queue** before the loss: the gap's one-way delay is less than ``max_delay_rise`` seconds
  above the flow's lowest so far;
* **regular losses** where the sender is steady: a sender offering a constant rate above the
  token rate loses one packet in every few, like clockwork, so the spacing of the last
  ``history`` losses (in sequence numbers) varies little (coefficient of variation at most
  ``regularity``) where random radio loss spaces them geometrically (about 1), and the loss
  comes **in step**: no sooner after the previous loss than ``in_step`` times their median
  spacing (a bucket that just ran dry needs about that long to run dry again; a radio loss
  between two of the policer's comes early); or, where the sender bursts (video frames), it
  offered at least ``burst`` times the plateau when it lost: the bucket ran dry in a burst.

A loss with all three (the last in one of its two forms) (after ``min_losses`` loss events of its flow, so that there is a plateau
to be pinned at) is a policer's: decided **congestion** (a policer limits the rate as a full
queue does, and a sender should back off alike) and marked ``policing`` in the decisions'
``scheme`` column: the three-way view. Every other loss is decided by Spike (paper 000 §III-B,
its default thresholds). What the receiver cannot see: a policer on a path whose sender never
exceeds the token rate drops nothing and is invisible; one whose token rate equals the
bottleneck's capacity looks like that bottleneck with no buffer; and a radio loss that falls
where the policer would have dropped anyway (in step) is the policer's as far as any receiver can
tell.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pandas as pd
from numba import njit

from .. import packets
from ..errors import UsageError
from ..specs import check_fraction, check_positive
from ..tiering import call
from .base import LDA, Features, Verdict
from .kernels import network_size, small_median, sorting_network
from .rott import Spike
from .zbs import SCHEMES as ZBS_SCHEMES

POLICING = packets.POLICING  # the scheme of a loss the detector called a policer's: the cause's name
POLICING_CODE = len(ZBS_SCHEMES)  # its code among the decisions' schemes (after ZBS's)


@njit(cache=True)
def policed_gaps(start, t_send, d, size, seq, first_seq, si, gdelay, span, tolerance, history, min_losses, max_rise,
                 regularity, in_step, burst, lo, hi):  # fmt: skip
    """Per gap, whether it shows the policing signature (module docstring), and the delivery
    rate each gap was judged by (NaN where none); ``lo``, ``hi``: the sorting network over
    ``history`` values (``kernels.sorting_network``) that takes the medians."""
    n = t_send.shape[0]
    low = np.empty(n)  # the flow's lowest one-way delay so far
    flow_of = np.empty(n, np.int64)  # each arrival's flow: the index of its first arrival
    for i in range(n):
        if start[i]:
            low[i], flow_of[i] = d[i], i
        else:
            low[i], flow_of[i] = min(low[i - 1], d[i]), flow_of[i - 1]
    out = np.zeros(first_seq.shape[0], np.bool_)
    judged = np.full(first_seq.shape[0], np.nan)
    rates = np.empty(history)
    spacing = np.empty(history)
    window = np.empty(network_size(history))
    current, count, last_seq = -1, 0, 0
    for g in range(first_seq.shape[0]):
        s = si[g]
        if s < 0:
            continue
        if flow_of[s] != current:
            current, count = flow_of[s], 0
        # the arrivals among the last ``span`` sequence numbers up to the deciding arrival
        j, delivered, arrived = s, 0.0, 0
        while j > flow_of[s] and seq[j - 1] > seq[s] - span and seq[j - 1] < seq[s]:
            j -= 1
            delivered += size[j + 1]
            arrived += 1
        elapsed = t_send[s] - t_send[j]
        if arrived < 2 or not elapsed > 0:
            continue
        rate = delivered / elapsed  # bytes delivered per second of sending, past the first arrival
        offered = (seq[s] - seq[j]) * delivered / arrived / elapsed  # lost packets the arrivals' mean size
        judged[g] = rate
        if count > 0:  # the spacing from the flow's previous loss event, into a ring of ``history``
            spacing[(count - 1) % history] = first_seq[g] - last_seq
        rates[count % history] = rate
        last_seq = first_seq[g]
        count += 1
        if count < min_losses or not gdelay[g] - low[s] <= max_rise:  # a delay rise: a queue's, not a policer's
            continue
        plateau = small_median(rates, min(count, history), window, lo, hi)
        if not abs(rate - plateau) <= tolerance * plateau:  # the delivery rate is not pinned
            continue
        bursting = offered >= burst * plateau  # a sender far above the plateau: a burst the bucket cut
        if bursting:
            out[g] = True
            continue
        steps = spacing[: min(count - 1, history)]
        mean = steps.mean()
        regular = mean > 0 and steps.std() / mean <= regularity
        this_step = steps[(count - 2) % history]  # this loss's own step
        out[g] = regular and this_step >= in_step * small_median(steps, steps.shape[0], window, lo, hi)
    return out, judged


@dataclasses.dataclass(frozen=True)
class Policer(LDA):
    """A policer's drops (the module docstring's signature) called congestion and marked
    ``policing``; the other losses decided by Spike."""

    name = "policer"
    in_all: ClassVar[bool] = False  # named, not brought in by "all", until measured on a corpus
    span: int = 16
    rate_tolerance: float = 0.1
    history: int = 16
    min_losses: int = 5
    max_delay_rise: float = 0.005
    regularity: float = 0.4
    in_step: float = 0.75
    burst: float = 1.5

    def __post_init__(self) -> None:
        check_positive(self.name, max_delay_rise=self.max_delay_rise, regularity=self.regularity, burst=self.burst)
        check_fraction(self.name, rate_tolerance=self.rate_tolerance, in_step=self.in_step)
        for key in ("span", "history", "min_losses"):
            value = getattr(self, key)
            if not (isinstance(value, (int, np.integer)) and value >= 2):
                raise UsageError(f"{self.name}: {key} must be a whole number ≥ 2, not {value!r}")
            object.__setattr__(self, key, int(value))

    def policed(self, f: Features) -> tuple[np.ndarray, np.ndarray]:
        """Per gap, whether the detector calls it a policer's, and the delivery rate (bytes/s)
        it was judged by."""
        arrivals = f.timeline.arrivals
        return call(
            policed_gaps,
            f.start,
            arrivals["t_send"].to_numpy(np.float64),  # not f.t - f.d, whose rounding made 0 s of sending > 0
            f.d,
            arrivals["size"].to_numpy(np.float64),
            arrivals["seq"].to_numpy(np.int64),
            f.timeline.gaps["first_seq"].to_numpy(np.int64),
            f.si,
            f.gdelay,
            self.span,
            float(self.rate_tolerance),
            self.history,
            self.min_losses,
            float(self.max_delay_rise),
            float(self.regularity),
            float(self.in_step),
            float(self.burst),
            *sorting_network(self.history),
        )

    def decide(self, f: Features) -> Verdict:
        policed, _ = self.policed(f)
        spike = f.verdict(Spike()).wireless
        return Verdict(wireless=spike & ~policed, scheme=np.where(policed, POLICING_CODE, -1).astype(np.int8))

    def state(self, f: Features) -> pd.DataFrame:
        """Per arrival the delay and, at each gap's deciding arrival, the delivery rate it was
        judged by and whether it was called a policer's."""
        policed, rate = self.policed(f)
        judged = np.full(len(f.t), np.nan)
        called = np.zeros(len(f.t), bool)
        decided = f.si >= 0
        judged[f.si[decided]] = rate[decided]
        called[f.si[decided]] = policed[decided]
        return pd.DataFrame({"d": f.d, "delivery_rate": judged, "policing": called})
