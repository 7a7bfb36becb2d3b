"""The learned LDA's models: the kinds a user may train (``make_model``), their files, and the
user's cache of the trees of the files loaded before.

Models are saved with skops (``save_model``), never pickle: ``load_model`` refuses a file that
holds any type outside ``TRUSTED``, so loading a model runs no code. Beside the model a file
keeps, as plain arrays, its calibration map and the training data's range per feature
(``calibration``). A model file loaded once has its flat trees (``trees.flat_trees``), map and
range kept as plain arrays (npz, no pickle) by the hash of its bytes (``cached_model``), so
later runs skip skops and scikit-learn (2 s).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib

import numpy as np

from ...errors import UsageError
from ...kernel_cache import user_cache
from ...output import atomic_write
from .calibration import check_calibration, training_range
from .features import FEATURES
from .trees import FlatTrees, flat_trees

MODELS = ("gbt", "rf", "logistic")
MODEL_FORMAT = "ldanalyze-learned-lda"
MODEL_VERSION = 5  # 2: the policing feature; 3: send_pace and compressed; 4: unseen_on_air; 5: calibration, range
READS = (4, 5)  # a version-4 file has the same features, no calibration map, and its range is read from its trees
BUNDLED_MODEL = pathlib.Path(__file__).resolve().parents[2] / "data" / "learned_lda.skops"
# the types the three model kinds hold beyond what skops trusts by default (measured with
# skops.io.get_untrusted_types); a file holding any other is refused
TRUSTED = (
    "numpy.dtype",  # rf, logistic
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",  # gbt
    "sklearn.tree._tree.Tree",  # rf
)


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


def save_model(
    model,
    path: str | os.PathLike,
    *,
    kind: str,
    trained_on: list[str],
    gaps: int,
    calibration: dict[str, np.ndarray] | None = None,
) -> None:
    """Write a fitted model with what it needs to be used and trusted again (skops format): its
    ``calibration`` map (``calibration.fit_calibration``; none: the trees' own confidence) and
    the training data's range per feature (``calibration.training_range``)."""
    skops = _skops()
    bundle = {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION,
        "features": list(FEATURES),
        "kind": kind,
        "trained_on": list(trained_on),
        "gaps": int(gaps),
        "model": model,
        "calibration": check_calibration(dict(calibration or {}), os.fspath(path)),
        "ranges": training_range(model),
    }
    skops.io.dump(bundle, os.fspath(path))


def load_model(path: str | os.PathLike) -> dict:
    """A model saved by ``save_model``: refused (UsageError) when the file is not one, holds a
    type outside ``TRUSTED``, was made for other features, or its calibration map or range is
    malformed (``calibration.check_calibration``). A file of an older version ldanalyze still
    ``READS`` is returned as the current one holds it."""
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
    version = bundle.get("version")
    if version not in READS or bundle.get("features") != list(FEATURES):
        raise UsageError(
            f"{path}: made for other features or in another format (version {version}; this ldanalyze reads "
            f"{' and '.join(map(str, READS))}); retrain it with `ldanalyze train`"
        )
    if version < 5:
        bundle = {**bundle, "version": MODEL_VERSION, "calibration": {}, "ranges": training_range(bundle["model"])}
    ranges = bundle.get("ranges")
    if ranges is not None and np.shape(ranges) != (2, len(FEATURES)):
        raise UsageError(f"{path}: the training range is not two values per feature")
    return {**bundle, "calibration": check_calibration(bundle.get("calibration"), path)}


@functools.lru_cache(maxsize=8)
def cached_model(path: str, mtime_ns: int, size: int) -> dict:
    """The model of ``path`` for prediction: its flat trees from the user's cache when this very
    file (by the hash of its bytes) was loaded before, which spares loading skops and
    scikit-learn (2 s); else the file itself, its trees then cached (``flat_trees``)."""
    with open(path, "rb") as f:
        digest = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
    cached = user_cache() / "learned" / f"{digest}.npz"
    known = _cached_trees(cached)
    if known is not None:
        return {"version": MODEL_VERSION, "features": list(FEATURES), **known}
    bundle = load_model(path)
    trees = flat_trees(bundle["model"])
    if trees is not None:
        _cache_trees(cached, trees, bundle["calibration"], bundle["ranges"])
    return {**bundle, "trees": trees}


CALIBRATION_PREFIX = "calibration_"  # the map's arrays in the cache (beside the trees' fields)


def _cached_trees(path: pathlib.Path) -> dict | None:
    """Flat trees, calibration map and range written by ``_cache_trees`` for this model format
    and features; None when there are none (or they are unreadable, or of other features: the
    model file then decides)."""
    try:
        with np.load(path, allow_pickle=False) as saved:  # arrays only: no code runs on load
            if int(saved["version"]) != MODEL_VERSION or saved["features"].tolist() != list(FEATURES):
                return None
            trees = FlatTrees(
                int(saved["depth"]),
                saved["feature"],
                saved["threshold"],
                saved["missing_left"],
                saved["leaves"],
                float(saved["baseline"]),
            )
            ranges = saved["ranges"]
            calibration = {
                k.removeprefix(CALIBRATION_PREFIX): saved[k] for k in saved.files if k.startswith(CALIBRATION_PREFIX)
            }
    except (OSError, KeyError, ValueError):
        return None
    return {"trees": trees, "calibration": calibration, "ranges": None if np.isnan(ranges).all() else ranges}


def _cache_trees(path: pathlib.Path, trees: FlatTrees, calibration: dict, ranges: np.ndarray | None) -> None:
    """Keep ``trees``, the ``calibration`` map and the ``ranges`` in the user's cache, whole or
    not at all (best effort: a read-only home only costs the next run the model file's load)."""
    arrays = {f.name: getattr(trees, f.name) for f in dataclasses.fields(trees)}
    arrays.update({f"{CALIBRATION_PREFIX}{k}": v for k, v in calibration.items()})
    arrays["ranges"] = np.full((2, len(FEATURES)), np.nan) if ranges is None else ranges
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda tmp: np.savez(tmp, version=MODEL_VERSION, features=np.array(FEATURES), **arrays))
    except OSError:
        return


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
