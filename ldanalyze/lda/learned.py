"""A learned LDA: a classifier trained on the losses of labelled traces, replayed causally like
every other LDA.

Loss classifiers learned from labelled data have been reported to beat hand-set thresholds
(Geurts, El Khayat and Leduc, ICDM 2004: boosted decision trees over delay and inter-arrival
features). ``gap_features`` describes each gap by what the receiver knew at its decision
arrival (the state arrival ``si`` of ``docs/ldas.md``, the same contract as every LDA):

``n``            the gap's length (packets);
``ti_tmin``      T_i / T_min: the receive spacing across the gap over the flow's smallest
                 spacing so far (Biaz's statistic);
``rott_position`` the gap's delay between the flow's running minimum (0) and maximum (1) of
                 the one-way delay (Spike's statistic);
``rott_z``       the gap's delay against an EWMA mean, in EWMA mean deviations (gain 1/32 and
                 1/16: ZigZag's statistic);
``jitter_tmin``  the RFC 3550 jitter at ``si`` over T_min;
``trend``        the least-squares slope of the delay over the flow's last ``TREND_ARRIVALS``
                 arrivals, times their count, over the delay range: the rise of the queue;
``since_loss``   the time since the flow's previous gap was revealed, over T_min (NaN for a
                 flow's first gap);
``recent_lost``  packets lost in the flow's gaps revealed within the last ``RECENT_ARRIVALS``
                 arrivals;
``biaz``, ``mbiaz``, ``spike``, ``zigzag``: the four base schemes' decisions (1 wireless,
                 0 congestion; stacking);
``policing``     1 where the policer detector (``lda/policer.py``, its defaults) calls the gap a
                 token-bucket policer's: the drops no delay rise precedes that are not the radio's;
``send_pace``    the send-time spacing of P_i and P_{i+n+1} over (n + 1) times the flow's usual
                 send spacing (the median of the ``PACE_ARRIVALS`` spacings of consecutive
                 arrivals up to P_i): below 1 when the lost packets left in a burst (which
                 overflows a queue), 1 at the flow's usual pace;
``compressed``   the share of the flow's last ``PACE_ARRIVALS`` receive spacings up to ``si``
                 that are under half their send spacing: packets that waited behind a stalled
                 link layer (ARQ retries, a HARQ or RLC reordering wait) and then left its queue
                 back to back (``docs/ldas.md`` shows the ns-3 LTE and Wi-Fi excerpts).

``unseen_on_air`` the 802.11 sequence numbers that went by unseen across the gap (``air_unseen``
                 of the revealing arrival: ``lda/radio.py``) over its losses: 0 when the gap
                 never went on the air, about 1 when the radio lost it; missing without a
                 monitor-mode capture, as on every link but Wi-Fi, where the count is unknown,
                 and where the frame was not QoS data (``air_qos``: its counter also numbered
                 frames to other stations, which a station's radio does not all hear). The
                 radio's own evidence, which no end-to-end LDA had.

These two timing features were kept among eight candidates (delay steps across and before the gap, the delay
before the gap, T_i over the send spacing, ...): each of the others cost some held-out family
several points, these two at most about one (``docs/learned.md`` leaves each feature out in
turn). Both need the packets' own send times, which every input of ldanalyze carries (in-band
timestamps, a chain's first vantage, the simulator).

Only differences of the one-way delay enter, so clock offsets do not matter. The classifier
(``train``) is fitted on gaps whose lost packets have a known cause, labelled wireless when
most of them are (a policer's drops count as congestion: like a full queue's, they ask the
sender to slow down). Models are saved with skops (``save_model``), never pickle: ``load_model``
refuses a file that holds any type outside ``TRUSTED``, so loading a model runs no code.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib
from typing import ClassVar

import numpy as np
import pandas as pd
from numba import njit

from ..errors import UsageError
from ..kernel_cache import user_cache
from ..tiering import call
from ..timeline import Timeline
from .base import LDA, Features, Verdict, take
from .interarrival import Biaz, MBiaz, tmin_state
from .kernels import network_size, small_median, sorting_network
from .policer import Policer
from .rott import Spike, ZigZag

FEATURES = (
    "n",
    "ti_tmin",
    "rott_position",
    "rott_z",
    "jitter_tmin",
    "trend",
    "since_loss",
    "recent_lost",
    "biaz",
    "mbiaz",
    "spike",
    "zigzag",
    "policing",
    "send_pace",
    "compressed",
    "unseen_on_air",
)
STACKED = {"biaz": Biaz(), "mbiaz": MBiaz(), "spike": Spike(), "zigzag": ZigZag()}
EWMA_GAIN = 1 / 32
TREND_ARRIVALS = 8
RECENT_ARRIVALS = 64
PACE_ARRIVALS = 16
MODELS = ("gbt", "rf", "logistic")
MODEL_FORMAT = "ldanalyze-learned-lda"
MODEL_VERSION = 4  # 2: the policing feature; 3: send_pace and compressed; 4: unseen_on_air
BUNDLED_MODEL = pathlib.Path(__file__).resolve().parent.parent / "data" / "learned_lda.skops"
# the types the three model kinds hold beyond what skops trusts by default (measured with
# skops.io.get_untrusted_types); a file holding any other is refused
TRUSTED = (
    "numpy.dtype",  # rf, logistic
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",  # gbt
    "sklearn.tree._tree.Tree",  # rf
)


@njit(cache=True)
def rolling_slope(x, first, at, k):
    """Per index of ``at`` (−1: none), the least-squares slope of ``x`` against the arrival
    index over the flow's last ``k`` arrivals up to it (fewer at a flow's start: ``first`` is
    each arrival's flow's first); NaN with fewer than 3 or no index."""
    out = np.full(at.shape[0], np.nan)
    for g in range(at.shape[0]):
        i = at[g]
        if i < 0:
            continue
        lo = max(first[i], i - k + 1)
        m = i - lo + 1
        if m < 3:
            continue
        mean_j = (m - 1) / 2.0
        mean_x = 0.0
        for j in range(m):
            mean_x += x[lo + j]
        mean_x /= m
        num = 0.0
        den = 0.0
        for j in range(m):
            num += (j - mean_j) * (x[lo + j] - mean_x)
            den += (j - mean_j) * (j - mean_j)
        out[g] = num / den
    return out


@njit(cache=True)
def pace_state(t, t_send, first, n, prev, rev, si, k, lo, hi):
    """Per gap, ``send_pace`` and ``compressed`` (module docstring) over each flow's last ``k``
    spacings of consecutive arrivals (``first``: each arrival's flow's first arrival); NaN
    where there are fewer than 3 of them, or no positive usual spacing. ``lo``, ``hi``: the
    sorting network over ``k`` values (``kernels.sorting_network``)."""
    pace = np.full(n.shape[0], np.nan)
    share = np.full(n.shape[0], np.nan)
    spacings = np.empty(k)
    window = np.empty(network_size(k))
    for g in range(n.shape[0]):
        p = prev[g]
        if p >= 0 and rev[g] >= 0 and si[g] >= 0:
            start = max(first[p] + 1, p - k + 1)
            m = p - start + 1
            if m >= 3:
                for j in range(m):
                    spacings[j] = t_send[start + j] - t_send[start + j - 1]
                usual = small_median(spacings, m, window, lo, hi)
                if usual > 0:
                    pace[g] = (t_send[rev[g]] - t_send[p]) / ((n[g] + 1) * usual)
        s = si[g]
        if s < 0:
            continue
        start = max(first[s] + 1, s - k + 1)
        counted = 0
        compressed = 0
        for j in range(start, s + 1):
            sent = t_send[j] - t_send[j - 1]
            if sent > 0:
                counted += 1
                if t[j] - t[j - 1] < 0.5 * sent:
                    compressed += 1
        if counted >= 3:
            share[g] = compressed / counted
    return pace, share


def gap_features(f: Features) -> pd.DataFrame:
    """The ``FEATURES`` of every gap of ``f.timeline`` (rows in gap order), from what the
    receiver knew at the gap's decision; NaN where no arrival decides it (module docstring)."""
    return pd.DataFrame(feature_matrix(f), columns=list(FEATURES))


def feature_matrix(f: Features) -> np.ndarray:
    """``gap_features`` as one array, a row per gap (what the trees read)."""
    tmin = take(tmin_state(f), f.si, np.nan)
    lo, hi = (take(state, f.si, np.nan) for state in f.delay_range())
    span = np.where(hi > lo, hi - lo, np.nan)
    mean, dev = (take(state, f.si, np.nan) for state in f.delay_ewma(EWMA_GAIN))
    jitter = f.timeline.arrivals["jitter_rfc3550"].to_numpy(np.float64)
    slope = call(rolling_slope, f.d, f.first, f.si, TREND_ARRIVALS, us_per_item=2)
    out = np.empty((f.n.shape[0], len(FEATURES)))
    with np.errstate(divide="ignore", invalid="ignore"):
        columns = {
            "n": f.n,
            "ti_tmin": f.Ti / tmin,
            "rott_position": (f.gdelay - lo) / span,
            "rott_z": (f.gdelay - mean) / np.where(dev > 0, dev, np.nan),
            "jitter_tmin": take(jitter, f.si, np.nan) / tmin,
            "trend": slope * TREND_ARRIVALS / span,
            **_loss_history(f, tmin),
            **{name: f.verdict(lda).wireless for name, lda in STACKED.items()},
            "policing": Policer().policed(f)[0],
        }
    columns["send_pace"], columns["compressed"] = _pace(f)
    columns["unseen_on_air"] = _unseen_on_air(f)
    for k, name in enumerate(FEATURES):
        out[:, k] = columns[name]
    out[~f.decided] = np.nan
    out[~np.isfinite(out)] = np.nan
    return out


def _loss_history(f: Features, tmin: np.ndarray) -> dict[str, np.ndarray]:
    """``since_loss`` and ``recent_lost``: each gap against the earlier gaps of its flow (all
    revealed at or before its deciding arrival, since they come earlier in the flow)."""
    rev = f.rev
    order = np.argsort(rev, kind="stable")  # arrivals of a flow are contiguous: by flow, then time
    r = rev[order]
    first_gap = np.searchsorted(r, f.first[r])  # the flow's first gap, in sorted order
    k = np.arange(r.shape[0])
    since = np.full(r.shape[0], np.nan)
    earlier = k > first_gap
    t_dec = take(f.t, f.si[order], np.nan)
    since[earlier] = t_dec[earlier] - f.t[r[np.maximum(k - 1, 0)][earlier]]
    lost = np.concatenate([[0], np.cumsum(f.n[order])])
    window_start = np.maximum(np.searchsorted(r, f.si[order] - RECENT_ARRIVALS + 1), first_gap)
    window_start = np.minimum(window_start, k)
    recent = (lost[k] - lost[window_start]).astype(np.float64)
    out_since = np.empty_like(since)
    out_recent = np.empty_like(recent)
    out_since[order], out_recent[order] = since, recent
    return {"since_loss": out_since / tmin, "recent_lost": out_recent}


def _pace(f: Features) -> tuple[np.ndarray, np.ndarray]:
    t_send = f.timeline.arrivals["t_send"].to_numpy(np.float64)
    prev = f.timeline.gaps["prev_arrival"].to_numpy(np.int64)
    lo, hi = sorting_network(PACE_ARRIVALS)
    return call(pace_state, f.t, t_send, f.first, f.n, prev, f.rev, f.si, PACE_ARRIVALS, lo, hi, us_per_item=3)


def _unseen_on_air(f: Features) -> np.ndarray:
    arrivals = f.timeline.arrivals
    if "air_unseen" not in arrivals.columns:
        return np.full(f.n.shape[0], np.nan)
    unseen = take(arrivals["air_unseen"].to_numpy(np.int64), f.rev, -1)
    own_counter = take(arrivals["air_qos"].to_numpy(bool), f.rev, False)
    return np.where((unseen >= 0) & own_counter, unseen / f.n, np.nan)


def gap_labels(timeline: Timeline) -> np.ndarray:
    """Per gap: 1 when most of its lost packets were lost to the radio, 0 when most to
    congestion or a policer, NaN when the causes of most are unknown (or it has none)."""
    losses = timeline.losses
    gap = losses["gap"].to_numpy(np.int64)
    cause = losses["cause"].astype(str).to_numpy()
    n = len(timeline.gaps)
    keep = gap >= 0
    wireless = np.bincount(gap[keep], weights=(cause[keep] == "wireless"), minlength=n)
    congestion = np.bincount(gap[keep], weights=np.isin(cause[keep], ("congestion", "policing")), minlength=n)
    total = np.bincount(gap[keep], minlength=n)
    label = np.where(wireless > congestion, 1.0, 0.0)
    return np.where((wireless + congestion) * 2 > total, label, np.nan)


# -- models --------------------------------------------------------------------------------------
def make_model(kind: str = "gbt", seed: int = 0):
    """An unfitted scikit-learn classifier over ``FEATURES``: gradient-boosted trees (NaN
    handled natively), a random forest or a logistic regression (NaN imputed by the median)."""
    sklearn = _sklearn()
    if kind == "gbt":  # small trees: predicting 190k gaps takes 0.09 s (200 deep trees: 0.6 s, 1-2 points better)
        # the L2 penalty on the leaves: a family held out fares better (docs/learned.md)
        return sklearn.ensemble.HistGradientBoostingClassifier(
            max_iter=30, max_depth=4, max_leaf_nodes=15, l2_regularization=10.0, early_stopping=False, random_state=seed
        )
    if kind == "rf":
        return sklearn.pipeline.Pipeline(
            [
                ("impute", sklearn.impute.SimpleImputer(strategy="median")),
                (
                    "forest",
                    sklearn.ensemble.RandomForestClassifier(n_estimators=200, min_samples_leaf=5, random_state=seed),
                ),
            ]
        )
    if kind == "logistic":
        return sklearn.pipeline.Pipeline(
            [
                ("impute", sklearn.impute.SimpleImputer(strategy="median")),
                ("scale", sklearn.preprocessing.StandardScaler()),
                ("logistic", sklearn.linear_model.LogisticRegression(max_iter=2000)),
            ]
        )
    raise UsageError(f"model must be one of {', '.join(MODELS)}, not {kind!r}")


def save_model(model, path: str | os.PathLike, *, kind: str, trained_on: list[str], gaps: int) -> None:
    """Write a fitted model with what it needs to be used and trusted again (skops format)."""
    skops = _skops()
    bundle = {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION,
        "features": list(FEATURES),
        "kind": kind,
        "trained_on": list(trained_on),
        "gaps": int(gaps),
        "model": model,
    }
    skops.io.dump(bundle, os.fspath(path))


def load_model(path: str | os.PathLike) -> dict:
    """A model saved by ``save_model``: refused (UsageError) when the file is not one, holds a
    type outside ``TRUSTED``, or was made for other features."""
    skops = _skops()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such model file")
    try:
        untrusted = skops.io.get_untrusted_types(file=path)
    except Exception as exc:  # skops reads a zip archive; anything else is not a model
        raise UsageError(f"{path}: not a skops model file ({type(exc).__name__}: {exc})") from None
    unknown = sorted(set(untrusted) - set(TRUSTED))
    if unknown:
        raise UsageError(f"{path}: refused: the model holds types ldanalyze does not trust: {', '.join(unknown)}")
    try:
        bundle = skops.io.load(path, trusted=sorted(set(untrusted)))
    except Exception as exc:
        raise UsageError(f"{path}: the model could not be read ({type(exc).__name__}: {exc})") from None
    if not isinstance(bundle, dict) or bundle.get("format") != MODEL_FORMAT:
        raise UsageError(f"{path}: not an ldanalyze learned-LDA model")
    if bundle.get("version") != MODEL_VERSION or bundle.get("features") != list(FEATURES):
        raise UsageError(
            f"{path}: made for other features (version {bundle.get('version')}); retrain it with `ldanalyze train`"
        )
    return bundle


@functools.lru_cache(maxsize=8)
def _cached_model(path: str, mtime_ns: int, size: int) -> dict:
    """The model of ``path`` for prediction: its flat trees from the user's cache when this very
    file (by the hash of its bytes) was loaded before, which spares loading skops and
    scikit-learn (2 s); else the file itself, its trees then cached (``flat_trees``)."""
    with open(path, "rb") as f:
        digest = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
    cached = user_cache() / "learned" / f"{digest}.npz"
    known = _cached_trees(cached)
    if known is not None:
        return {"version": MODEL_VERSION, "features": list(FEATURES), "trees": known}
    bundle = load_model(path)
    trees = flat_trees(bundle["model"])
    if trees is not None:
        _cache_trees(cached, trees)
    return {**bundle, "trees": trees}


def _cached_trees(path: pathlib.Path) -> FlatTrees | None:
    """Flat trees written by ``_cache_trees`` for this model format and features; None when
    there are none (or they are unreadable, or of other features: the model file then decides)."""
    try:
        with np.load(path, allow_pickle=False) as saved:  # arrays only: no code runs on load
            if int(saved["version"]) != MODEL_VERSION or saved["features"].tolist() != list(FEATURES):
                return None
            return FlatTrees(
                int(saved["depth"]),
                saved["feature"],
                saved["threshold"],
                saved["missing_left"],
                saved["leaves"],
                float(saved["baseline"]),
            )
    except (OSError, KeyError, ValueError):
        return None


def _cache_trees(path: pathlib.Path, trees: FlatTrees) -> None:
    """Keep ``trees`` in the user's cache, whole or not at all (best effort: a read-only home
    only costs the next run the model file's load)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
        arrays = {f.name: getattr(trees, f.name) for f in dataclasses.fields(trees)}
        np.savez(partial, version=MODEL_VERSION, features=np.array(FEATURES), **arrays)
        os.replace(partial, path)
    except OSError:
        return


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


MAX_FLAT_DEPTH = 12  # deeper trees (a user's model) predict through scikit-learn


def flat_trees(model) -> FlatTrees | None:
    """The trees of a scikit-learn HistGradientBoostingClassifier fitted on labels 0 and 1 over
    numerical features, for ``gbt_decision`` (scikit-learn's own predict spent most of the
    learned LDA's time); None for any other model, or trees deeper than ``MAX_FLAT_DEPTH``,
    which predict by themselves."""
    predictors = getattr(model, "_predictors", None)
    if predictors is None or list(getattr(model, "classes_", ())) != [0, 1] or any(len(p) != 1 for p in predictors):
        return None
    nodes = [p.nodes for (p,) in predictors]
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
    baseline = float(np.ravel(model._baseline_prediction)[0])
    return FlatTrees(depth, feature, threshold, missing_left, leaves, baseline)


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


def wireless_probability(bundle: dict, x: np.ndarray) -> np.ndarray:
    """Per row of features, the bundle's model's probability that the gap is wireless (label
    1): the trees' raw score through the logistic function, as scikit-learn's predict_proba;
    a model that is not such trees gives its own. A call is wireless where it passes 1/2,
    as scikit-learn's predict."""
    trees = bundle.get("trees")
    if trees is None:
        return bundle["model"].predict_proba(x)[:, list(bundle["model"].classes_).index(1)]
    t = trees
    x = np.ascontiguousarray(x, np.float64)
    raw = call(gbt_decision, x, t.depth, t.feature, t.threshold, t.missing_left, t.leaves, t.baseline,
               us_per_item=0.5 * t.depth * t.leaves.shape[0])  # fmt: skip
    with np.errstate(over="ignore"):  # a raw score far below 0: exp overflows, the probability is 0
        return 1.0 / (1.0 + np.exp(-raw))


def calls(probability: np.ndarray, abstain_below: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per gap's probability of the radio (NaN: undecided): the call (wireless past 1/2, as
    scikit-learn's predict), the probability of that call, and whether it falls below
    ``abstain_below`` (no call). The live LDA and the offline evaluation both call by it."""
    confidence = np.maximum(probability, 1.0 - probability)
    return probability > 0.5, confidence, confidence < abstain_below


def _sklearn():
    try:
        import sklearn.ensemble
        import sklearn.impute
        import sklearn.linear_model
        import sklearn.pipeline
        import sklearn.preprocessing
    except ImportError:
        raise UsageError("the learned LDA needs scikit-learn and skops: pip install 'ldanalyze[learn]'") from None
    return sklearn


def _skops():
    try:
        import skops.io
    except ImportError:
        raise UsageError("the learned LDA needs scikit-learn and skops: pip install 'ldanalyze[learn]'") from None
    return skops


@dataclasses.dataclass(frozen=True)
class Learned(LDA):
    """A classifier trained by ``ldanalyze train`` (module docstring), from the file ``model``
    (default: the bundled model, trained on the generated suite by ``traces/train_learned``).
    Not part of ``--lda all``: name it, ``--lda learned`` or ``learned:model=FILE``."""

    name = "learned"
    in_all: ClassVar[bool] = False
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
        return _cached_model(path, stat.st_mtime_ns, stat.st_size)

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
