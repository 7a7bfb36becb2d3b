"""What the learned LDA's confidence means off its corpus: a calibration map fitted on data
held out from training (``fit_calibration``, ``calibrate``) and the training data's range per
feature, beyond which the model does not vouch for its call (``training_range``,
``out_of_range``).

The map takes the confidence of the trees' call (the probability they give it, 0.5-1) to the
share of such calls that were right on families the trees had not seen, and leaves the call as
it is. A map of the probability of the radio instead, tried first, carried the base rate of the
families it was fitted on into the one held out: the corpus varies the congestion-to-radio
ratio on purpose, and the map turned calls around (ns2-wlh held out: 88.2 % accuracy to 64.5 %,
ECE 0.081 to 0.229), where the confidence of a call pools both causes. Isotonic regression
(Zadrozny and Elkan, KDD 2002) rather than Platt's sigmoid: the held-out calls number hundreds
of thousands, enough for a non-decreasing map with no shape imposed, and off its corpus the
trees are over-confident over some ranges and not others (``docs/learned.md``), which a
two-parameter sigmoid cannot follow. Its values are bounded below by 0.5: a call is not said
to be worse than a coin's. The map is kept as its breakpoints (two plain arrays, linear between
them, as scikit-learn's IsotonicRegression predicts), one per *group* of gaps that the features
alone tell apart: ``radio`` where the radio's evidence (``unseen_on_air``) is there, ``timing``
where only the timing of the packets that arrive is. A group without held-out data keeps the
trees' own confidence.

The range is the trees' own binning of the training data (scikit-learn's histogram gradient
boosting bins each feature at its 1/256 ... 255/256 quantiles, or between its distinct values
where it has fewer than 256): the lowest and highest bin edges per feature. Beyond the last
edge every tree sees the same bin, so far beyond it the model extrapolates a constant from
data unlike the gap. A gap is *out of range* where a feature lies further outside those edges
than ``RANGE_MARGIN`` times their distance: far from every training gap on that feature, not in
the tails (the in-corpus rate is measured in ``docs/learned.md``). Two other detectors were
weighed: the trees' disagreement needs independent voters, which boosted trees (each fitting
the others' residual) are not; a distance in a robust scaled space over all features needs the
training rows or their covariance, which the model file does not keep (and, with stacked 0/1
decisions and features missing by design, is not a meaningful metric). Per-feature ranges need
nothing beyond the trees, and name the feature that is off.
"""

from __future__ import annotations

import numpy as np

from ...errors import UsageError
from .features import FEATURES

GROUPS = ("timing", "radio")  # by whether the radio's evidence is there (``group_of``)
RADIO = FEATURES.index("unseen_on_air")
RANGE_MARGIN = 1.0  # out of range: beyond the training data's outer bin edges by this many times their distance
MIN_GROUP_GAPS = 1000  # fewer held-out gaps with a known cause than this: the group is not calibrated


def group_of(x: np.ndarray) -> np.ndarray:
    """Per row of features, its calibration group's index in ``GROUPS``: 1 (radio) where
    ``unseen_on_air`` is known, 0 (timing) elsewhere."""
    return np.isfinite(x[:, RADIO]).astype(np.int64)


def fit_calibration(
    confidence: np.ndarray, right: np.ndarray, weight: np.ndarray, group: np.ndarray
) -> dict[str, np.ndarray]:
    """Isotonic maps from the confidence of the trees' call to the share of its losses the call
    got right, fitted per group (``GROUPS``) on held-out predictions: ``confidence`` per gap,
    ``right`` the share of its labelled losses whose cause its call named (0-1), ``weight`` its
    weight (e.g. its losses, each family weighing the same). Returns ``{"<group>_x": breakpoints,
    "<group>_y": values}`` (values 0.5-1) for each group with ``MIN_GROUP_GAPS`` gaps or more."""
    from sklearn.isotonic import IsotonicRegression

    out: dict[str, np.ndarray] = {}
    keep = np.isfinite(confidence) & np.isfinite(right) & (weight > 0)
    for k, name in enumerate(GROUPS):
        mine = keep & (group == k)
        if mine.sum() < MIN_GROUP_GAPS:
            continue
        fitted = IsotonicRegression(y_min=0.5, y_max=1.0, out_of_bounds="clip", increasing=True)
        fitted.fit(confidence[mine], right[mine], sample_weight=weight[mine])
        out[f"{name}_x"] = np.asarray(fitted.X_thresholds_, np.float64)
        out[f"{name}_y"] = np.asarray(fitted.y_thresholds_, np.float64)
    return out


def check_calibration(calibration: object, where: str) -> dict[str, np.ndarray]:
    """``calibration`` as ``fit_calibration`` makes it, or a UsageError naming ``where`` (a model
    file) and what is wrong: known groups, breakpoints increasing, values within [0.5, 1] and not
    decreasing."""
    if not isinstance(calibration, dict):
        raise UsageError(f"{where}: the calibration map is not a table of arrays")
    names = {f"{g}_{axis}" for g in GROUPS for axis in "xy"}
    unknown = sorted(set(calibration) - names)
    if unknown:
        raise UsageError(f"{where}: the calibration map has unknown parts: {', '.join(map(str, unknown))}")
    out = {}
    for group in GROUPS:
        if f"{group}_x" not in calibration and f"{group}_y" not in calibration:
            continue
        x = np.asarray(calibration.get(f"{group}_x", ()), np.float64)
        y = np.asarray(calibration.get(f"{group}_y", ()), np.float64)
        if x.ndim != 1 or x.shape != y.shape or x.shape[0] < 1:
            raise UsageError(f"{where}: the {group} calibration map's breakpoints and values differ in shape")
        if not (np.isfinite(x).all() and (np.diff(x) > 0).all()):
            raise UsageError(f"{where}: the {group} calibration map's breakpoints do not increase")
        if not ((y >= 0.5) & (y <= 1)).all() or (np.diff(y) < 0).any():
            raise UsageError(f"{where}: the {group} calibration map is not a non-decreasing confidence (0.5-1)")
        out[f"{group}_x"], out[f"{group}_y"] = x, y
    return out


def calibrate(confidence: np.ndarray, group: np.ndarray, calibration: dict[str, np.ndarray]) -> np.ndarray:
    """The calibrated confidence of each gap's call: its group's map (linear between the
    breakpoints, constant beyond them), or the trees' own where the group has none; NaN stays."""
    out = confidence.copy()
    for k, name in enumerate(GROUPS):
        x = calibration.get(f"{name}_x")
        if x is None:
            continue
        mine = (group == k) & np.isfinite(confidence)
        out[mine] = np.interp(confidence[mine], x, calibration[f"{name}_y"])
    return out


def training_range(model) -> np.ndarray | None:
    """Per feature, the lowest and highest bin edge the trees drew on the training data (a 2 × F
    array; NaN for a feature with fewer than two edges, as the 0/1 stacked decisions, whose range
    says nothing); None for a model that does not bin (random forest, logistic)."""
    mapper = getattr(model, "_bin_mapper", None)
    thresholds = getattr(mapper, "bin_thresholds_", None)
    if thresholds is None or len(thresholds) != len(FEATURES):
        return None
    out = np.full((2, len(FEATURES)), np.nan)
    for k, edges in enumerate(thresholds):
        edges = np.asarray(edges, np.float64)
        if edges.shape[0] >= 2 and np.isfinite(edges[[0, -1]]).all():
            out[:, k] = edges[0], edges[-1]
    return out


def out_of_range(x: np.ndarray, bounds: np.ndarray | None, margin: float = RANGE_MARGIN) -> np.ndarray:
    """Per row of features, the index of the first feature far outside the training range
    (module docstring: beyond the outer bin edges by ``margin`` times their distance), −1 where
    none is (a missing value is never out of range; no ``bounds``: none ever)."""
    out = np.full(x.shape[0], -1, np.int64)
    if bounds is None:
        return out
    lo, hi = bounds
    width = hi - lo
    with np.errstate(invalid="ignore"):
        far = (x < lo - margin * width) | (x > hi + margin * width)
    far &= np.isfinite(width)
    anywhere = far.any(axis=1)
    out[anywhere] = far[anywhere].argmax(axis=1)
    return out
