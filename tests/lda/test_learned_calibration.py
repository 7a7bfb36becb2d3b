"""The learned LDA's calibration map and training range (``lda/learned/calibration.py``): the map
is a non-decreasing probability, the range check fires far outside the training data and not
inside it, both survive the model file and the user's cache, and ``classify`` says why a call was
abstained or given a coin's confidence."""

from __future__ import annotations

import numpy as np
import pytest
import skops.io
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze import learn
from ldanalyze.errors import UsageError
from ldanalyze.lda import classify, get_lda
from ldanalyze.lda.learned import REASONS
from ldanalyze.lda.learned import models as learned_models
from ldanalyze.lda.learned.calibration import (
    GROUPS,
    RADIO,
    calibrate,
    check_calibration,
    fit_calibration,
    out_of_range,
    training_range,
)
from ldanalyze.lda.learned.features import FEATURES
from ldanalyze.lda.learned.models import load_model, save_model
from ldanalyze.timeline import build_timeline

from ..conftest import TRACES

TRAINING = [str(TRACES / name) for name in ("wlh_tfrc_1flow_high.tr.gz", "wlh_mix_4flow_high.tr.gz")]
N = FEATURES.index("n")


@pytest.fixture(scope="module")
def labelled():
    return [learn.analyse(path) for path in TRAINING]


@pytest.fixture(scope="module")
def model(labelled):
    return learn.fit(labelled, "gbt", 0)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**32 - 1), st.integers(1000, 3000), st.floats(0.0, 1.0))
def test_the_map_is_a_non_decreasing_confidence(seed, rows, noise):
    """Whatever the held-out calls and how often they were right, each group's map has
    increasing breakpoints and non-decreasing values within [0.5, 1], and what it gives is so
    too, beyond the breakpoints as well."""
    rng = np.random.default_rng(seed)
    confidence = 0.5 + rng.random(rows) / 2
    right = np.where(rng.random(rows) < noise, rng.random(rows), rng.random(rows) < confidence)
    group = rng.integers(0, 2, rows)
    mapping = fit_calibration(confidence, right, rng.random(rows) + 0.01, group)
    assert check_calibration(mapping, "here").keys() == mapping.keys()
    probe = np.linspace(0.0, 1.5, 301)
    for k, name in enumerate(GROUPS):
        if f"{name}_x" not in mapping:
            assert (group == k).sum() < 1000
            continue
        assert (np.diff(mapping[f"{name}_x"]) > 0).all()
        out = calibrate(probe, np.full(probe.shape, k), mapping)
        assert ((out >= 0.5) & (out <= 1)).all() and (np.diff(out) >= 0).all()


def test_a_group_without_data_keeps_the_trees_confidence():
    """Held-out calls of the timing group alone, right only above 0.7: there the map gives 1,
    below it a coin's 0.5 (never less); the radio group's confidences pass unchanged, and NaN
    (an undecided gap) stays NaN."""
    confidence = np.linspace(0.5, 1, 2000)
    mapping = fit_calibration(confidence, (confidence > 0.7).astype(float), np.ones(2000), np.zeros(2000, np.int64))
    assert set(mapping) == {"timing_x", "timing_y"}
    probe = np.array([0.6, 0.9, np.nan])
    assert np.array_equal(calibrate(probe, np.ones(3, np.int64), mapping), probe, equal_nan=True)
    assert calibrate(probe, np.zeros(3, np.int64), mapping)[:2].tolist() == [0.5, 1.0]


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"timing_x": [0.5, 1.0], "timing_y": [0.9, 0.6]}, "not a non-decreasing confidence"),
        ({"timing_x": [0.5, 1.0], "timing_y": [0.6, 1.5]}, "not a non-decreasing confidence"),
        ({"timing_x": [0.5, 1.0], "timing_y": [0.4, 0.6]}, "not a non-decreasing confidence"),
        ({"timing_x": [1.0, 0.0], "timing_y": [0.1, 0.2]}, "breakpoints do not increase"),
        ({"timing_x": [0.0, 1.0], "timing_y": [0.1]}, "differ in shape"),
        ({"lte_x": [0.0], "lte_y": [0.0]}, "unknown parts: lte_x, lte_y"),
        ([0.1, 0.2], "not a table of arrays"),
    ],
)
def test_a_malformed_map_is_refused_with_what_is_wrong(bad, message):
    with pytest.raises(UsageError, match=f"model.skops: .*{message}"):
        check_calibration(bad, "model.skops")


def test_hand_computed_range_boundaries():
    """Bin edges 10 and 20 for ``n`` (distance 10, margin 1): 0 and 30 are the last values in
    range, just beyond them out; a missing value never is; a feature without a range never is."""
    bounds = np.full((2, len(FEATURES)), np.nan)
    bounds[:, N] = 10.0, 20.0
    x = np.full((6, len(FEATURES)), 5.0)
    x[:, N] = [0.0, 30.0, -1e-9, 30.000001, np.nan, 15.0]
    x[0, RADIO] = 1e12  # no range known for it: never out of range
    assert out_of_range(x, bounds, margin=1.0).tolist() == [-1, -1, N, N, -1, -1]
    assert (out_of_range(x, None) == -1).all()


def test_the_range_check_fires_far_outside_the_training_data_and_not_inside(labelled, model):
    """The trees' own bin edges: every training gap is in range; the same gaps with ``n`` or
    ``ti_tmin`` a thousand times larger than any training gap's are not, and the first such
    feature is named."""
    fitted, _ = model
    bounds = training_range(fitted)
    x, _, _ = learn.rows(labelled)
    assert (out_of_range(x, bounds) == -1).mean() > 0.999
    far = x.copy()
    far[:, N] = 1000 * np.nanmax(x[:, N])
    assert (out_of_range(far, bounds) == N).all()
    ti = FEATURES.index("ti_tmin")
    far[:, ti] = 1000 * np.nanmax(x[:, ti])
    assert (out_of_range(far, bounds) == N).all()  # the first feature out of range
    assert training_range(make_logistic(labelled)) is None


def make_logistic(labelled):
    return learn.fit(labelled, "logistic", 0)[0]


def test_the_model_file_round_trips_its_map_and_range(tmp_path, labelled, model, monkeypatch):
    """What ``save_model`` writes, ``load_model`` and the user's cache (npz, no skops) give
    back; a version-4 file (no map) is still read, its range from its trees; a file whose map is
    malformed is refused with the reason."""
    fitted, gaps = model
    mapping = {"timing_x": np.array([0.5, 0.75, 1.0]), "timing_y": np.array([0.5, 0.6, 0.8])}
    path = tmp_path / "m.skops"
    save_model(fitted, path, kind="gbt", trained_on=TRAINING, gaps=gaps, calibration=mapping)
    bundle = load_model(path)
    assert bundle["version"] == learned_models.MODEL_VERSION
    assert {k: v.tolist() for k, v in bundle["calibration"].items()} == {k: v.tolist() for k, v in mapping.items()}
    assert np.array_equal(bundle["ranges"], training_range(fitted), equal_nan=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    learned_models.cached_model.cache_clear()
    stat = path.stat()
    first = learned_models.cached_model(str(path), stat.st_mtime_ns, stat.st_size)
    learned_models.cached_model.cache_clear()
    again = learned_models.cached_model(str(path), stat.st_mtime_ns, stat.st_size)
    learned_models.cached_model.cache_clear()
    assert "model" in first and "model" not in again  # the second from the cache alone
    for key in mapping:
        assert np.array_equal(again["calibration"][key], mapping[key])
    assert np.array_equal(again["ranges"], bundle["ranges"], equal_nan=True)
    old = tmp_path / "v4.skops"
    skops.io.dump({**{k: bundle[k] for k in ("format", "features", "model")}, "version": 4}, old)
    assert load_model(old)["calibration"] == {} and load_model(old)["ranges"] is not None
    bad = tmp_path / "bad.skops"
    skops.io.dump({**bundle, "calibration": {"timing_x": np.array([0.0, 1.0]), "timing_y": np.array([1.0, 0.6])}}, bad)
    with pytest.raises(UsageError, match="bad.skops: the timing calibration map is not a non-decreasing"):
        load_model(bad)
    three = tmp_path / "v3.skops"
    skops.io.dump({**{k: bundle[k] for k in ("format", "features", "model")}, "version": 3}, three)
    with pytest.raises(UsageError, match=r"in another format \(version 3; this ldanalyze reads 4, 5 and 6\)"):
        load_model(three)


def test_classify_carries_the_calibrated_confidence_and_the_reason(tmp_path, labelled, model, monkeypatch):
    """A map that says 0.6 whatever the trees' confidence: every call as the trees make it, at
    confidence 0.6, and below ``abstain_below=0.8`` abstained as ``unsure``; a training range
    that ``n`` = 1 alone fills: every gap of more than one loss gets a coin's confidence and the
    reason ``n out of range``, abstained below 0.8 too."""
    fitted, gaps = model
    flat = {"timing_x": np.array([0.5, 1.0]), "timing_y": np.array([0.6, 0.6])}
    path = tmp_path / "flat.skops"
    save_model(fitted, path, kind="gbt", trained_on=TRAINING, gaps=gaps, calibration=flat)
    timeline = build_timeline(la.read_trace(TRAINING[1]))
    plain = classify(timeline, [get_lda("learned", model=str(path))])
    unmapped = tmp_path / "unmapped.skops"
    save_model(fitted, unmapped, kind="gbt", trained_on=TRAINING, gaps=gaps)
    trees = classify(timeline, [get_lda("learned", model=str(unmapped))])
    called = plain["decision"].isin(["congestion", "wireless"])
    assert called.any() and plain["decision"].tolist() == trees["decision"].tolist()
    assert set(trees.loc[called, "decision"]) == {"congestion", "wireless"}
    assert (trees.loc[called, "confidence"] > 0.6).any()
    assert np.allclose(plain.loc[called, "confidence"], 0.6) and (plain.loc[called, "scheme"] == "").all()
    strict = classify(timeline, [get_lda("learned", model=str(path), abstain_below=0.8)])
    assert (strict.loc[called.to_numpy(), "decision"] == "abstained").all()
    assert (strict.loc[called.to_numpy(), "scheme"] == "unsure").all()

    narrow = np.full((2, len(FEATURES)), np.nan)
    narrow[:, N] = 1.0, 1.0  # n = 1 only; width 0, so any longer gap is out of range
    monkeypatch.setattr(learned_models, "training_range", lambda m: narrow)
    odd = tmp_path / "narrow.skops"
    save_model(fitted, odd, kind="gbt", trained_on=TRAINING, gaps=gaps)
    for below, decision in ((0.5, None), (0.8, "abstained")):
        table = classify(timeline, [get_lda("learned", model=str(odd), abstain_below=below)])
        long = table["decision"].ne("undetected").to_numpy() & (table["n"].to_numpy() > 1)
        assert long.any() and (table.loc[long, "scheme"] == "mbiaz (n out of range)").all()
        assert np.allclose(table.loc[long, "confidence"], 0.5)
        assert decision is None or (table.loc[long, "decision"] == decision).all()
        short = table["decision"].ne("undetected").to_numpy() & (table["n"].to_numpy() == 1)
        assert not table.loc[short, "scheme"].isin(["mbiaz (n out of range)"]).any()
    assert set(REASONS) <= set(table["scheme"].cat.categories)
