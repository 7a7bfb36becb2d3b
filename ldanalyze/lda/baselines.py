"""The two reference points of paper 000 §III: the unaware receiver, which takes every loss for
congestion (plain TFRC), and the omniscient one, which knows each loss's true cause."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..packets import WIRELESS
from .base import LDA, VIEWS, Features, Verdict


@dataclasses.dataclass(frozen=True)
class Unaware(LDA):
    """Every loss is congestion (paper 000 §III, "unaware TFRC"): M_c = 0, M_w = 100 %."""

    name = "unaware"
    views = VIEWS

    def decide(self, f: Features) -> Verdict:
        return Verdict(np.zeros(f.n.shape[0], bool))


@dataclasses.dataclass(frozen=True)
class Omniscient(LDA):
    """Each lost packet gets its true cause (paper 000 §III, "omniscient TFRC"); a loss of
    unknown cause is taken as congestion. It decides per packet, not per gap."""

    name = "omniscient"
    views = VIEWS
    reads_truth = True

    def decide(self, f: Features) -> Verdict:
        cause = f.timeline.losses["cause"].to_numpy()
        return Verdict(cause == WIRELESS, per_loss=True)
