"""A learned LDA: a classifier trained on the losses of labelled traces, replayed causally like
every other LDA.

The data flow, one module each: ``features`` describes each gap by what the receiver knew at
its decision (and labels it for training); ``models`` makes, saves and loads the classifiers
and caches a loaded file's trees; ``trees`` walks gradient-boosted trees in a compiled kernel;
here, ``Learned`` turns the model's probability into a call, its confidence, or no call.
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import numpy as np

from ...errors import UsageError
from ...timeline import Timeline
from ..base import LDA, Features, Verdict
from .features import feature_matrix
from .models import BUNDLED_MODEL, cached_model


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
    ``abstain_below`` (no call). The live LDA and the offline evaluation both call by it."""
    confidence = np.maximum(probability, 1.0 - probability)
    return probability > 0.5, confidence, confidence < abstain_below


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
        """Each decided gap's call, the probability the model gives it (``confidence``) and,
        below ``abstain_below``, no call (``abstained``)."""
        x = feature_matrix(f)
        probability = np.full(x.shape[0], np.nan)
        rows = f.decided
        if rows.any():
            probability[rows] = wireless_probability(self.bundle(), x[rows])
        wireless, confidence, abstained = calls(probability, self.abstain_below)
        return Verdict(wireless, confidence=confidence, abstained=abstained)
