"""The learned LDA's deferral (``lda/learned/__init__.py``): a model kept with one model per
training family fitted without it calls with the median of their probabilities of its call, and
defers to mBiaz with a coin's confidence where one of them gives the call less than
``DEFER_BELOW`` or a feature is far outside the training data; the live LDA, the offline
evaluation and the user's cache agree on it."""

from __future__ import annotations

import numpy as np
import pytest

import ldanalyze as la
from ldanalyze import learn
from ldanalyze.errors import UsageError
from ldanalyze.lda import classify, get_lda
from ldanalyze.lda.learned import DEFER_BELOW, DISAGREE_CODE, FALLBACK, OUT_OF_RANGE_CODE, REASON_CODE, REASONS, judge
from ldanalyze.lda.learned import models as learned_models
from ldanalyze.lda.learned.features import FEATURES
from ldanalyze.lda.learned.models import load_model, save_model
from ldanalyze.timeline import build_timeline

from ..conftest import TRACES

TRAINING = [
    str(TRACES / f"{name}.tr.gz")
    for name in (
        "wlh_tfrc_1flow_high",
        "wb_tfrc_2flow_medium",
        "wlh_mix_4flow_high",
        "wlh_cbr_1flow_bursty",
        "wlh_tcp_1flow_high",
    )
]
FAMILIES = ["tfrc", "tfrc", "mix", "cbr", "tcp"]  # each family with both causes or beside one that has them
N = FEATURES.index("n")


@pytest.fixture(scope="module")
def corpus():
    """The labelled traces, the trees of every family, their gaps, and per family the trees
    without it."""
    labelled = [learn.analyse(path) for path in TRAINING]
    return labelled, *learn.fit(labelled, "gbt", 0, balance=FAMILIES), learn.fit_held_out(labelled, FAMILIES)


def test_hand_computed_deferral_boundaries():
    """Three held-out sets. A call whose lowest set probability is exactly ``DEFER_BELOW`` stands,
    at the median; just below, or most sets against it, mBiaz calls instead at 0.5; an undecided
    gap stays NaN; a feature out of range defers whatever the sets say, naming the feature."""
    assert DEFER_BELOW == 0.7
    x = np.zeros((6, len(FEATURES)))
    x[:, FALLBACK] = [0, 0, 1, 0, 1, 1]  # mBiaz: congestion, congestion, wireless, ...
    probability = np.array([0.9, 0.9, 0.2, np.nan, 0.9, 0.9])
    held_out = np.array(
        [
            [0.7, 0.6999, 0.3, np.nan, 0.4, 0.95],
            [0.8, 0.9, 0.1, np.nan, 0.45, 0.95],
            [0.95, 0.9, 0.2, np.nan, 0.9, 0.95],
        ]
    )
    bounds = np.full((2, len(FEATURES)), np.nan)
    bounds[:, N] = 0.0, 1.0
    x[:, N] = [0, 0, 0, 0, 0, 5.0]  # the last gap's n is beyond 1 + 1 x the width
    wireless, confidence, abstained, reason = judge(probability, x, {"ranges": bounds}, 0.8, held_out)
    assert wireless.tolist() == [True, False, False, False, True, True]
    assert np.allclose(confidence[[0, 1, 2, 4, 5]], [0.8, 0.5, 0.8, 0.5, 0.5]) and np.isnan(confidence[3])
    assert abstained.tolist() == [False, True, False, False, True, True]
    codes = [-1, DISAGREE_CODE, -1, -1, DISAGREE_CODE, OUT_OF_RANGE_CODE + N]
    assert reason.tolist() == codes
    assert [REASONS[c - REASON_CODE] for c in codes if c >= 0] == [
        "mbiaz (families disagree)",
        "mbiaz (families disagree)",
        "mbiaz (n out of range)",
    ]
    # a threshold of the call's own: at 0.6999 the second gap stands; at 0 only the range defers
    assert judge(probability, x, {"ranges": bounds}, 0.8, held_out, 0.6999)[3].tolist()[:2] == [-1, -1]
    never = judge(probability, x, {"ranges": bounds}, 0.5, held_out, 0.0)
    assert never[0].tolist() == [True, True, False, False, True, True]
    assert never[3].tolist() == [-1, -1, -1, -1, -1, OUT_OF_RANGE_CODE + N]
    trees_alone = judge(probability, x, {}, 0.5)
    assert trees_alone[0].tolist() == [True, True, False, False, True, True]
    assert np.allclose(trees_alone[1][[0, 2]], [0.9, 0.8]) and (trees_alone[3] == -1).all()


def test_each_held_out_model_is_the_model_without_its_family(corpus):
    """``fit_held_out``: per family, what ``fit`` makes of the others, weighing them alike; with
    fewer than three families, none."""
    labelled, _, _, held_out = corpus
    assert sorted(held_out) == sorted(set(FAMILIES))
    x, _, _ = learn.rows(labelled)
    for family in set(FAMILIES):
        others = [i for i, f in enumerate(FAMILIES) if f != family]
        alone, _ = learn.fit([labelled[i] for i in others], "gbt", 0, [FAMILIES[i] for i in others])
        assert np.array_equal(held_out[family].predict_proba(x), alone.predict_proba(x))
    assert learn.fit_held_out(labelled[:3], FAMILIES[:3]) == {}
    with pytest.raises(UsageError, match="the model without the traces of mix: every one of the .* same cause"):
        learn.fit_held_out(labelled[:3], ["tfrc", "other", "mix"])


def test_the_live_lda_defers_as_the_evaluation_does_from_the_file_and_the_cache(tmp_path, corpus, monkeypatch):
    """A model saved with its held-out models: ``classify`` (from the file, then from the
    user's cache alone) calls what ``learned_decisions`` calls, defers on some gaps, and there
    calls what ``--lda mbiaz`` calls, at a confidence of 0.5."""
    labelled, model, gaps, held_out = corpus
    path = tmp_path / "families.skops"
    save_model(model, path, kind="gbt", trained_on=TRAINING, gaps=gaps, held_out=held_out)
    bundle = load_model(path)
    assert bundle["version"] == 6 and bundle["held_out_families"] == sorted(set(FAMILIES))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    timeline = build_timeline(la.read_trace(TRAINING[2]))
    offline = learn.learned_decisions(labelled[2], model, held_out=[held_out[f] for f in sorted(held_out)])
    mbiaz = classify(timeline, ["mbiaz"])["decision"].astype(str).to_numpy()
    for source in ("file", "cache"):
        learned_models.cached_model.cache_clear()
        live = classify(timeline, [get_lda("learned", model=str(path))])
        learned_models.cached_model.cache_clear()
        assert (live["decision"].astype(str).to_numpy() == offline["decision"].astype(str).to_numpy()).all()
        deferred = (live["scheme"] == "mbiaz (families disagree)").to_numpy()
        assert deferred.any() and (~deferred).any(), source
        assert (live["decision"].astype(str).to_numpy()[deferred] == mbiaz[deferred]).all()
        assert np.allclose(live.loc[deferred, "confidence"], 0.5)
        assert (live.loc[~deferred & live["decision"].ne("undetected").to_numpy(), "confidence"] >= 0.5).all()
    trusting = classify(timeline, [get_lda("learned", model=str(path), defer_below=0)])
    assert not (trusting["scheme"] == "mbiaz (families disagree)").any()
    for bad in (1.0, -0.1, True):
        with pytest.raises(UsageError, match="learned: defer_below must be a probability below 1"):
            get_lda("learned", defer_below=bad)
    plain = tmp_path / "plain.skops"
    save_model(model, plain, kind="gbt", trained_on=TRAINING, gaps=gaps)
    alone = classify(timeline, [get_lda("learned", model=str(plain))])
    assert not (alone["scheme"] == "mbiaz (families disagree)").any()  # no held-out models: no deferral


def test_the_calibration_of_a_model_with_families_leaves_the_deferred_calls_out(corpus):
    """``held_out_probabilities(sets=True)`` gives each trace its trees' probability and their
    held-out models'; ``calibration`` fits the median confidence and gives deferred gaps no
    weight: with every set against every call, no gap is left and no map is fitted."""
    labelled = corpus[0]
    stacked = learn.held_out_probabilities(labelled, FAMILIES, sets=True)
    for item, p in zip(labelled, stacked):
        assert p.shape == (4, len(item.features))  # the trees, and their three held-out models
    against = [np.vstack([p[:1], 1.0 - np.nan_to_num(p[:1], nan=0.5).repeat(3, axis=0)]) for p in stacked]
    assert learn.calibration(labelled, FAMILIES, against) == {}
