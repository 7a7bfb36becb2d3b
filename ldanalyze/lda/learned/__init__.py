"""A learned LDA: a classifier trained on the losses of labelled traces, replayed causally like
every other LDA.

The data flow, one module each: ``features`` describes each gap by what the receiver knew at
its decision (and labels it for training); ``models`` makes, saves and loads the classifiers
and caches a loaded file's trees; ``trees`` walks gradient-boosted trees in a compiled kernel;
``calibration`` maps the trees' probability to one fitted on held-out data and tells a gap far
outside the training data; here, ``judge`` turns them into a call, its confidence, or no call,
and why (``REASONS``, in ``classify``'s ``scheme`` column).
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import numpy as np

from ...errors import UsageError
from ...timeline import Timeline
from ..base import LDA, Features, Verdict
from ..policer import POLICING_CODE
from .calibration import calibrate, group_of, out_of_range
from .features import FEATURES, feature_matrix
from .models import BUNDLED_MODEL, cached_model

# why the learned LDA made no call (``unsure``: below ``abstain_below``) or lowered its
# confidence to a coin's (a feature far outside the training data: ``calibration.out_of_range``)
REASONS = ("unsure", *(f"{name} out of range" for name in FEATURES))
REASON_CODE = POLICING_CODE + 1  # the first reason's code among the decisions' schemes (after the policer's)


def wireless_probability(bundle: dict, x: np.ndarray) -> np.ndarray:
    """Per row of features, the bundle's model's probability that the gap is wireless (label
    1): the trees' raw score through the logistic function, as scikit-learn's predict_proba;
    a model that is not such trees gives its own. A call is wireless where it passes 1/2,
    as scikit-learn's predict."""
    trees = bundle.get("trees")
    if trees is None:
        return bundle["model"].predict_proba(x)[:, list(bundle["model"].classes_).index(1)]
    return trees.probability(x)


def calls(probability: np.ndarray, abstain_below: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per gap's probability of the radio (NaN: undecided): the call (wireless past 1/2, as
    scikit-learn's predict), the probability of that call, and whether it falls below
    ``abstain_below`` (no call)."""
    confidence = np.maximum(probability, 1.0 - probability)
    return probability > 0.5, confidence, confidence < abstain_below


def judge(
    probability: np.ndarray, x: np.ndarray, bundle: dict, abstain_below: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per gap, from the trees' probability of the radio and the gap's features: the trees' call,
    its confidence and whether it is abstained (the confidence through the bundle's calibration
    map, or a coin's 0.5 where a feature is far outside the training data), and the reason's code
    among the decisions' schemes (−1: none). The live LDA and the offline evaluation both call
    by it."""
    wireless, confidence, _ = calls(probability, abstain_below)
    confidence = calibrate(confidence, group_of(x), bundle.get("calibration") or {})
    off = out_of_range(x, bundle.get("ranges"))
    confidence = np.where(off >= 0, np.minimum(confidence, 0.5), confidence)
    abstained = confidence < abstain_below
    reason = np.where(off >= 0, REASON_CODE + 1 + off, np.where(abstained, REASON_CODE, -1))
    return wireless, confidence, abstained, reason


@dataclasses.dataclass(frozen=True)
class Learned(LDA):
    """A classifier trained by ``ldanalyze train`` (``features``), from the file ``model``
    (default: the bundled model, trained on the generated suite by ``traces/train_learned``).
    Not part of ``--lda all``: name it, ``--lda learned`` or ``learned:model=FILE``."""

    name = "learned"
    in_all: ClassVar[bool] = False
    may_abstain = True
    model: str = ""
    abstain_below: float = 0.5  # no call where the probability of the call is below (0.5 or less: never)

    def __post_init__(self) -> None:
        if isinstance(self.abstain_below, bool) or not (
            isinstance(self.abstain_below, (int, float)) and 0.0 <= self.abstain_below < 1.0
        ):
            raise UsageError(
                "learned: abstain_below must be a probability below 1 (0.5 or less: always call; every "
                f"call's is at least 0.5), not {self.abstain_below!r}"
            )

    def bundle(self) -> dict:
        path = os.path.abspath(self.model or BUNDLED_MODEL)
        try:
            stat = os.stat(path)
        except OSError:
            raise UsageError(f"learned: no model file {path} (train one with `ldanalyze train`)") from None
        return cached_model(path, stat.st_mtime_ns, stat.st_size)

    def prepare(self, timeline: Timeline) -> None:
        self.bundle()

    def decide(self, f: Features) -> Verdict:
        """Each decided gap's call, its calibrated probability (``confidence``; 0.5 far outside
        the training data) and, below ``abstain_below``, no call (``abstained``), with
        the reason (``scheme``: ``REASONS``)."""
        x = feature_matrix(f)
        probability = np.full(x.shape[0], np.nan)
        rows = f.decided
        bundle = self.bundle()
        if rows.any():
            probability[rows] = wireless_probability(bundle, x[rows])
        wireless, confidence, abstained, reason = judge(probability, x, bundle, self.abstain_below)
        return Verdict(wireless, confidence=confidence, abstained=abstained, scheme=reason)
