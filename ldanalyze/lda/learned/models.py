"""The learned LDA's models: the kinds a user may train (``make_model``), their files, and the
user's cache of the trees of the files loaded before.

Models are saved with skops (``save_model``), never pickle: ``load_model`` refuses a file that
holds any type outside ``TRUSTED``, so loading a model runs no code. Beside the model a file
keeps, as plain arrays, its calibration map and the training data's range per feature
(``calibration``), and (format 6) one model per training family fitted without it, by which
the LDA tells a call that rests on one family (the package docstring). A model file loaded once
has its flat trees (``trees.flat_trees``), those of its held-out models, map and range kept as
plain arrays (npz, no pickle) by the hash of its bytes (``cached_model``), so later runs skip
skops and scikit-learn (2 s).
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
# 2: the policing feature; 3: send_pace and compressed; 4: unseen_on_air; 5: calibration, range; 6: held-out models
MODEL_VERSION = 6
READS = (4, 5, 6)  # an older file has the same features and no held-out models; a version-4 file no map, and
# its range is read from its trees
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
    held_out: dict[str, object] | None = None,
) -> None:
    """Write a fitted model with what it needs to be used and trusted again (skops format): its
    ``calibration`` map (``calibration.fit_calibration``; none: the trees' own confidence), the
    training data's range per feature (``calibration.training_range``) and ``held_out``, per
    training family, the same kind of model fitted without that family (none: the LDA judges by
    the model alone)."""
    skops = _skops()
    families = dict(held_out or {})
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
        "held_out_families": sorted(families),
        "held_out": [families[name] for name in sorted(families)],
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
            f"{', '.join(map(str, READS[:-1]))} and {READS[-1]}); retrain it with `ldanalyze train`"
        )
    if version < 5:
        bundle = {**bundle, "calibration": {}, "ranges": training_range(bundle["model"])}
    if version < 6:
        bundle = {**bundle, "version": MODEL_VERSION, "held_out_families": [], "held_out": []}
    if not isinstance(bundle.get("held_out"), list) or len(bundle["held_out"]) != len(
        bundle.get("held_out_families", ())
    ):
        raise UsageError(f"{path}: the held-out models do not match their families")
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
    held_out = [{"model": model, "trees": flat_trees(model)} for model in bundle["held_out"]]
    if trees is not None and all(h["trees"] is not None for h in held_out):
        _cache_trees(cached, trees, bundle["calibration"], bundle["ranges"], [h["trees"] for h in held_out])
    return {**bundle, "trees": trees, "held_out": held_out}


CALIBRATION_PREFIX = "calibration_"  # the map's arrays in the cache (beside the trees' fields)
HELD_OUT_PREFIX = "held_out{}_"  # the k-th held-out model's trees' fields in the cache


def _cached_trees(path: pathlib.Path) -> dict | None:
    """Flat trees, calibration map and range written by ``_cache_trees`` for this model format
    and features; None when there are none (or they are unreadable, or of other features: the
    model file then decides)."""
    try:
        with np.load(path, allow_pickle=False) as saved:  # arrays only: no code runs on load
            if int(saved["version"]) != MODEL_VERSION or saved["features"].tolist() != list(FEATURES):
                return None
            trees = _saved_trees(saved, "")
            held_out = [
                {"trees": _saved_trees(saved, HELD_OUT_PREFIX.format(k))} for k in range(int(saved["held_out_count"]))
            ]
            ranges = saved["ranges"]
            calibration = {
                k.removeprefix(CALIBRATION_PREFIX): saved[k] for k in saved.files if k.startswith(CALIBRATION_PREFIX)
            }
    except (OSError, KeyError, ValueError):
        return None
    return {
        "trees": trees,
        "held_out": held_out,
        "calibration": calibration,
        "ranges": None if np.isnan(ranges).all() else ranges,
    }


def _saved_trees(saved, prefix: str) -> FlatTrees:
    return FlatTrees(
        int(saved[f"{prefix}depth"]),
        saved[f"{prefix}feature"],
        saved[f"{prefix}threshold"],
        saved[f"{prefix}missing_left"],
        saved[f"{prefix}leaves"],
        float(saved[f"{prefix}baseline"]),
    )


def _cache_trees(
    path: pathlib.Path, trees: FlatTrees, calibration: dict, ranges: np.ndarray | None, held_out: list[FlatTrees]
) -> None:
    """Keep ``trees``, those of the ``held_out`` models, the ``calibration`` map and the
    ``ranges`` in the user's cache, whole or not at all (best effort: a read-only home only costs
    the next run the model file's load)."""
    arrays = {}
    for prefix, each in (("", trees), *((HELD_OUT_PREFIX.format(k), t) for k, t in enumerate(held_out))):
        arrays.update({f"{prefix}{f.name}": getattr(each, f.name) for f in dataclasses.fields(each)})
    arrays["held_out_count"] = np.int64(len(held_out))
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
