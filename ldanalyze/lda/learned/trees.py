"""The learned LDA's gradient-boosted trees, compiled: ``flat_trees`` pads a fitted model's
trees to complete binary trees held in plain arrays, and ``gbt_decision`` walks them in a numba
kernel (scikit-learn's own predict spent most of the learned LDA's time). The arrays are what
the user's cache keeps of a model file (``models.cached_model``), so a later run needs neither
skops nor scikit-learn.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from ...tiering import call


@dataclasses.dataclass(frozen=True)
class FlatTrees:
    """The trees of a fitted binary gradient-boosted model, each padded to a complete binary
    tree of ``depth`` levels: row t of ``feature``, ``threshold`` and ``missing_left`` holds
    tree t's split nodes in breadth-first order (node c's children are 2c + 1 and 2c + 2), row
    t of ``leaves`` its 2^depth leaves. A leaf above the last level is repeated below it, so
    every row takes exactly ``depth`` steps down every tree."""

    depth: int
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    leaves: np.ndarray
    baseline: float

    def probability(self, x: np.ndarray) -> np.ndarray:
        """Per row of ``x``, the probability of label 1: the raw score (``gbt_decision``)
        through the logistic function, as scikit-learn's predict_proba."""
        x = np.ascontiguousarray(x, np.float64)
        steps = self.depth * self.leaves.shape[0]
        walk = (self.depth, self.feature, self.threshold, self.missing_left, self.leaves, self.baseline)
        raw = call(gbt_decision, x, *walk, us_per_item=0.5 * steps)
        with np.errstate(over="ignore"):  # a raw score far below 0: exp overflows, the probability is 0
            return 1.0 / (1.0 + np.exp(-raw))


MAX_FLAT_DEPTH = 12  # deeper trees (a user's model) predict through scikit-learn


def flat_trees(model) -> FlatTrees | None:
    """The trees of a scikit-learn HistGradientBoostingClassifier fitted on labels 0 and 1 over
    numerical features, for ``gbt_decision``; None for any other model, or trees deeper than
    ``MAX_FLAT_DEPTH``, which predict by themselves."""
    parts = _fitted_parts(model)
    if parts is None or list(getattr(model, "classes_", ())) != [0, 1]:
        return None
    nodes, baseline = parts
    if any(n["is_categorical"].any() for n in nodes):
        return None
    depth = max(_depth(n, 0) for n in nodes)
    if depth > MAX_FLAT_DEPTH:
        return None
    inner, width = 2**depth - 1, 2**depth
    feature = np.zeros((len(nodes), inner), np.int64)
    threshold = np.full((len(nodes), inner), np.inf)
    missing_left = np.ones((len(nodes), inner), np.bool_)
    leaves = np.zeros((len(nodes), width))
    for t, n in enumerate(nodes):
        for leaf in range(width):  # the path to each leaf of the complete tree, bit by bit from the top
            node, slot = 0, 0
            for level in range(depth):
                right = (leaf >> (depth - 1 - level)) & 1
                if not n["is_leaf"][node]:
                    feature[t, slot] = n["feature_idx"][node]
                    threshold[t, slot] = n["num_threshold"][node]
                    missing_left[t, slot] = n["missing_go_to_left"][node]
                    node = n["right"][node] if right else n["left"][node]
                slot = 2 * slot + 1 + right
            leaves[t, leaf] = n["value"][node]
    return FlatTrees(depth, feature, threshold, missing_left, leaves, baseline)


def _fitted_parts(model) -> tuple[list[np.ndarray], float] | None:
    """A fitted HistGradientBoostingClassifier's trees (a node array each, one tree per
    iteration as a binary model has) and the raw score their sum starts from. scikit-learn keeps
    both private (``_predictors``, ``_baseline_prediction``, and the node arrays' fields), and
    no public score gives the baseline exactly (each adds the leaves to it, rounded): read here
    alone, so that ``tests/lda/test_learned.py`` names the scikit-learn version when an upgrade
    moves them. None for any other model, or where they are not: it then predicts by itself."""
    predictors = getattr(model, "_predictors", None)
    baseline = getattr(model, "_baseline_prediction", None)
    if predictors is None or baseline is None or np.size(baseline) != 1 or any(len(p) != 1 for p in predictors):
        return None
    return [p.nodes for (p,) in predictors], float(np.ravel(baseline)[0])


def _depth(nodes, node: int) -> int:
    if nodes["is_leaf"][node]:
        return 0
    return 1 + max(_depth(nodes, nodes["left"][node]), _depth(nodes, nodes["right"][node]))


@njit(cache=True)
def gbt_decision(x, depth, feature, threshold, missing_left, leaves, baseline):
    """Per row of ``x``, the model's raw score (log-odds of label 1): the baseline plus the
    leaf each tree sends the row to (left when the value is at most the node's threshold; a
    missing value goes where the node learned missing values go)."""
    out = np.empty(x.shape[0])
    first_leaf = 2**depth - 1
    for i in range(x.shape[0]):
        total = baseline  # then each tree in turn, as scikit-learn adds them
        for t in range(leaves.shape[0]):
            c = 0
            for _ in range(depth):
                v = x[i, feature[t, c]]
                go_left = missing_left[t, c] if v != v else v <= threshold[t, c]
                c = 2 * c + (1 if go_left else 2)
            total += leaves[t, c - first_leaf]
        out[i] = total
    return out
