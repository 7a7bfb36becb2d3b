"""A learned LDA: a classifier trained on the losses of labelled traces, replayed causally like
every other LDA.

The data flow, one module each: ``features`` describes each gap by what the receiver knew at
its decision (and labels it for training); ``models`` makes, saves and loads the classifiers
and caches a loaded file's trees; ``trees`` walks gradient-boosted trees in a compiled kernel;
``calibration`` maps the trees' probability to one fitted on held-out data and tells a gap far
outside the training data; here, ``judge`` turns them into a call, its confidence, or no call,
and why (``REASONS``, in ``classify``'s ``scheme`` column).

A model trained with its families named (``traces/train_learned``, format 6) also keeps one set
of trees per family, each trained without that family (``held_out``). Where the call rests on a
single family (one of those sets gives it a probability below ``DEFER_BELOW``), or a feature is
far outside the training data, the LDA does not vouch for its call: it defers to mBiaz (paper 000
§III-A; §VI-C, Fig. 8: the base scheme with the lowest M_c, whose mistakes keep a sender
TCP-friendly), with a coin's confidence, 0.5. Elsewhere its confidence is the
median of the held-out sets' probabilities of its call: what the call is worth had any one
family been missing, the situation of a link the corpus lacks. Held out by family, over the
calls it does not defer, its expected calibration error was below the trees' own on five families
of six, and deferring kept the accuracy within 2 points of the best heuristic's on all six, at a
cost where the trees were right (``docs/learned.md``).
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

# why the learned LDA made no call (``unsure``: below ``abstain_below``) or deferred to mBiaz (the
# families' trees disagree; a feature far outside the training data: ``calibration.out_of_range``)
REASONS = ("unsure", "mbiaz (families disagree)", *(f"mbiaz ({name} out of range)" for name in FEATURES))
REASON_CODE = POLICING_CODE + 1  # the first reason's code among the decisions' schemes (after the policer's)
DISAGREE_CODE = REASON_CODE + 1
OUT_OF_RANGE_CODE = REASON_CODE + 2  # plus the feature's index
DEFER_BELOW = 0.7  # a held-out family's trees give the call a probability below this: it rests on that family
FALLBACK = FEATURES.index("mbiaz")  # the deferred call: mBiaz's decision, stacked among the features


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


def family_confidence(
    wireless: np.ndarray, confidence: np.ndarray, held_out: np.ndarray | None, defer_below: float = DEFER_BELOW
) -> tuple[np.ndarray, np.ndarray]:
    """Per gap, the confidence of the call ``wireless`` (the median of the ``held_out`` sets'
    probabilities of it, at least 0.5; none: ``confidence``, the trees' own) and whether some set gives it
    less than ``defer_below`` (the module docstring). NaN confidence (an undecided gap) stays."""
    if held_out is None or not held_out.shape[0]:
        return confidence, np.zeros(wireless.shape[0], np.bool_)
    theirs = np.where(wireless, held_out, 1.0 - held_out)  # each set's probability of the call
    with np.errstate(invalid="ignore"):
        median = np.maximum(np.median(theirs, axis=0), 0.5)  # a call is not said to be worse than a coin's
        return np.where(np.isfinite(confidence), median, np.nan), theirs.min(axis=0) < defer_below


def judge(
    probability: np.ndarray,
    x: np.ndarray,
    bundle: dict,
    abstain_below: float,
    held_out: np.ndarray | None = None,
    defer_below: float = DEFER_BELOW,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per gap, from the trees' probability of the radio, the gap's features and (``held_out``,
    K × gaps) each family-held-out set's probability of the radio: the call, its confidence and
    whether it is abstained, and the reason's code among the decisions' schemes (−1: none), by
    the module docstring's rules (the confidence through the bundle's calibration map, if any;
    ``defer_below`` 0: the trees' call wherever the features are in range). The live LDA and the
    offline evaluation both call by it."""
    wireless, confidence, _ = calls(probability, abstain_below)
    confidence, disagree = family_confidence(wireless, confidence, held_out, defer_below)
    confidence = calibrate(confidence, group_of(x), bundle.get("calibration") or {})
    off = out_of_range(x, bundle.get("ranges"))
    defer = (off >= 0) | disagree
    wireless = np.where(defer, x[:, FALLBACK] > 0.5, wireless)
    confidence = np.where(defer, 0.5, confidence)
    abstained = confidence < abstain_below
    reason = np.where(
        off >= 0, OUT_OF_RANGE_CODE + off, np.where(disagree, DISAGREE_CODE, np.where(abstained, REASON_CODE, -1))
    )
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
    defer_below: float = DEFER_BELOW  # mBiaz calls where a held-out family's trees give the call less (0: never)

    def __post_init__(self) -> None:
        for name, what in (
            ("abstain_below", "0.5 or less: always call; every call's is at least 0.5"),
            ("defer_below", "0: never defer to mBiaz for the families' disagreement"),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 <= value < 1.0):
                raise UsageError(f"learned: {name} must be a probability below 1 ({what}), not {value!r}")

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
        """Each decided gap's call, its confidence (0.5 where it defers to mBiaz) and, below
        ``abstain_below``, no call (``abstained``), with the reason (``scheme``: ``REASONS``),
        by ``judge``."""
        x = feature_matrix(f)
        probability = np.full(x.shape[0], np.nan)
        rows = f.decided
        bundle = self.bundle()
        sets = bundle.get("held_out") or ()
        held_out = np.full((len(sets), x.shape[0]), np.nan)
        if rows.any():
            probability[rows] = wireless_probability(bundle, x[rows])
            for k, held in enumerate(sets):
                held_out[k, rows] = wireless_probability(held, x[rows])
        wireless, confidence, abstained, reason = judge(
            probability, x, bundle, self.abstain_below, held_out, self.defer_below
        )
        return Verdict(wireless, confidence=confidence, abstained=abstained, scheme=reason)
