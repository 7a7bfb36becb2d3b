"""The throughput-model grid of issue #46 §3: its draw, its judging, and one real run of it."""

from __future__ import annotations

import collections
import shutil

import numpy as np
import pandas as pd
import pytest

from ldanalyze import closedloop
from ldanalyze.reproduce import model_grid as mg
from ldanalyze.reproduce.suite import LDAS
from ldanalyze.reproduce.tables import model_grid_page

from ..conftest import IN_CI


def test_the_grid_spreads_every_factor_evenly_and_pairs_the_seeds():
    scenarios = mg.grid_scenarios()
    assert scenarios == mg.grid_scenarios()  # a fixed draw: the traces stay cached
    seeds = mg.CHOOSE_SEEDS + mg.HELD_OUT_SEEDS
    assert len(seeds) == 4 and not set(mg.CHOOSE_SEEDS) & set(mg.HELD_OUT_SEEDS)
    by_seed = collections.Counter(s["seed"] for s in scenarios)
    assert [by_seed[seed] for seed in seeds] == [len(scenarios) // 4] * 4
    first = [s for s in scenarios if s["seed"] == seeds[0]]
    assert len({tuple(s[k] for k in mg.KEYS) for s in first}) == len(first)  # no draw twice
    assert all(s["flows"] >= 2 for s in first if s["traffic"] == "mix")
    for name, levels in mg.FACTORS.items():
        if name in ("traffic", "loss"):
            continue  # traffic is bent by one flow; loss is checked as (model, rate)
        counts = collections.Counter(s[name] for s in first)
        assert set(counts) == set(levels)
        # even before repeated draws were left out: at most one apart, less a few left out
        assert max(counts.values()) - min(counts.values()) <= 1 + mg.SCENARIOS - len(first)
    losses = collections.Counter((s["loss"], s["rate"]) for s in first)
    assert set(losses) == set(mg.FACTORS["loss"])


def _frame(truths, predictions, seed=mg.CHOOSE_SEEDS[0], scenario=0):
    """One scenario's rows: the LDAs' truths and one prediction column per candidate."""
    n = len(truths)
    rows = {
        "traffic": "tfrc",
        "topology": "wlh",
        "flows": 2,
        "loss": "uniform",
        "rate": 0.03,
        "shared_delay": 0.02 + scenario,
        "seed": seed,
        "lda": list(LDAS[:n]),
        "truth": truths,
    }
    for name in mg.CANDIDATES:
        rows[name] = predictions.get(name, truths)
    return pd.DataFrame(rows).assign(**{mg.OWN: truths, "decisions": 10, "decisions_equal": 10})


def test_a_scenario_differs_only_beyond_the_spread():
    at = _frame([0.5, 0.6], {})  # exactly 10 points: not beyond
    beyond = _frame([0.5, 0.6 + 1e-9], {}, scenario=1)
    both = pd.concat([at, beyond], ignore_index=True)
    assert mg.differing(both)["shared_delay"].unique().tolist() == [1.02]


def test_the_scores_by_hand():
    frame = _frame([0.2, 0.5, 0.9], {})
    got = mg.scores(frame, pd.Series([0.3, 0.4, 0.9]))  # errors 10, 10, 0; ranks 1 2 3 against 1 2 3
    assert got["median_abs_error"] == pytest.approx(10)
    assert got["p90_abs_error"] == pytest.approx(10)
    assert got["spearman_median"] == pytest.approx(1.0)
    reversed_ = mg.scores(frame, pd.Series([0.9, 0.5, 0.2]))
    assert reversed_["spearman_median"] == pytest.approx(-1.0)
    assert np.isnan(mg.scores(frame, pd.Series([1.0, 1.0, 1.0]))["spearman_median"])  # a constant ranks nothing


def test_the_model_is_chosen_on_the_choosing_seed_alone():
    good, bad = mg.CANDIDATES[1], mg.CANDIDATES[0]
    truths, wrong = [0.2, 0.5, 0.9], [0.5, 0.8, 0.6]
    others = {name: wrong for name in mg.CANDIDATES}
    chosen = _frame(truths, {**others, good: [0.21, 0.52, 0.88]})
    # on the held-out seed the roles are reversed: it must not sway the choice
    held = _frame(truths, {**others, bad: truths}, seed=mg.HELD_OUT_SEEDS[0])
    winner, table = mg.choose(pd.concat([chosen, held], ignore_index=True))
    assert winner == good
    assert table.set_index("model").loc[good, "median_abs_error"] == pytest.approx(2.0)  # errors 1, 2, 2
    report = mg.held_out(pd.concat([chosen, held], ignore_index=True), winner).set_index(["scope", "model"])
    assert report.loc[("LDAs differ", good), "median_abs_error"] == pytest.approx(30)
    assert report.loc[("LDAs differ", mg.CONSTANT), "median_abs_error"] == pytest.approx(50)
    assert report.loc[("LDAs differ", mg.OWN), "median_abs_error"] == pytest.approx(0)


def test_the_page_judges_the_targets(tmp_path):
    truths = [0.2, 0.5, 0.9]
    frames = [
        _frame(truths, {name: [0.22, 0.5, 0.85] for name in mg.CANDIDATES}, seed=seed, scenario=k)
        for seed in (mg.CHOOSE_SEEDS[0], mg.HELD_OUT_SEEDS[1])
        for k in range(3)
    ]
    page = model_grid_page(pd.concat(frames, ignore_index=True), "a test frame")
    assert "| Spearman (median over scenarios) ≥ 0.8 | 1.00 | yes |" in page
    assert "| median abs. error ≤ 5 points | 2.0 | yes |" in page
    assert "alike on 180 of 180" in page
    assert "3 scenarios, each with seeds 1 and 2 (choosing) and 3 and 4 (held out)" in page


def _packets(carried):
    """A trace's packets: per flow, (packets delivered, packets lost to congestion), one 1000-byte
    packet sent every 0.1 s from t = 0."""
    rows = []
    for flow, (delivered, dropped) in carried.items():
        fates = ["delivered"] * delivered + ["congestion"] * dropped
        rows += [{"flow": flow, "t_send": 0.1 * i, "size": 1000, "fate": f} for i, f in enumerate(fates)]
    return pd.DataFrame(rows)


def test_what_the_cross_traffic_leaves_by_hand():
    # 3 flows of a 240 kb/s bottleneck (share 80 kb/s); TCP (flow 3) delivered 11 packets of 8 kb
    # sent from 0 to 1.0 s: 88 kb/s. What it leaves each of the two TFRC flows: (240 - 88) / 2
    packets = _packets({"1": (5, 1), "2": (6, 0), "3": (11, 0)})
    mix = {"flows": 3, "traffic": "mix"}
    assert closedloop.left_share_bps(packets, mix, 80e3) == pytest.approx((240e3 - 88e3) / 2)
    # a dropped packet of the cross traffic carried nothing
    dropped = _packets({"1": (5, 1), "2": (6, 0), "3": (6, 5)})
    assert closedloop.left_share_bps(dropped, mix, 80e3) == pytest.approx((240e3 - 48e3) / 2)
    assert closedloop.left_share_bps(packets, {"flows": 3, "traffic": "tfrc"}, 80e3) == 80e3


def test_the_left_normaliser_caps_at_the_left_share_and_divides_by_the_fair_share(monkeypatch):
    """``modeled``'s three normalisers on one replayed rate: 50 kb/s for 1 s, then 150 kb/s for 1 s."""
    from ldanalyze import control

    class Result:
        summary = pd.DataFrame({"lda": ["unaware"], "flow": ["1"], "capacity_bps": [200e3]})
        rates = pd.DataFrame({"lda": "unaware", "flow": "1", "t": [0.0, 1.0, 2.0], "rate_bps": [50e3, 150e3, np.nan]})

    monkeypatch.setattr(control, "replay", lambda timeline, spec, ldas: Result)
    models = [("c", "tfrc", "capacity"), ("s", "tfrc", "share"), ("l", "tfrc", "left")]
    got = closedloop.modeled(None, ["unaware"], 100e3, models, left_bps=120e3).iloc[0]
    assert got["c"] == pytest.approx((50 + 150) / 2 / 200)  # capped at 200, over 200
    assert got["s"] == pytest.approx((50 + 100) / 2 / 100)  # capped at the share 100, over 100
    assert got["l"] == pytest.approx((50 + 120) / 2 / 100)  # capped at the left 120, over the share 100
    alone = closedloop.modeled(None, ["unaware"], 100e3, models).iloc[0]
    assert alone["l"] == pytest.approx(alone["s"])  # nothing left out: the fair share


@pytest.mark.ns2
@pytest.mark.skipif(shutil.which("g++") is None and not IN_CI, reason="building ns-2 needs g++ (CI installs it)")
def test_one_scenario_of_the_grid_closed_loop(tmp_path):
    """A real scenario, every LDA closed loop: the receivers decide as the replay does, and the
    unaware run's own trace is the trace every candidate reads (so the winner and its own-trace
    baseline agree there)."""
    scenario = {**mg.grid_scenarios()[0], "topology": "wb", "flows": 2, "traffic": "tfrc", "duration": 20}
    scenario.update(loss="uniform", rate=0.06, shared_delay=0.1)
    frame, simulated = mg.run_grid([scenario], tmp_path, 2, closedloop.patched_ns())
    assert simulated == len(LDAS) and list(frame["lda"]) == list(LDAS)
    assert (frame["decisions_equal"] == frame["decisions"]).all() and frame["decisions"].min() > 0
    unaware = frame[frame["lda"] == "unaware"].iloc[0]
    assert unaware[mg.choose(frame)[0]] == pytest.approx(unaware[mg.OWN], abs=1e-12)
    assert frame["truth"].between(0.05, 1.1).all()
    omniscient = frame.set_index("lda")["truth"]
    assert omniscient["omniscient"] > omniscient["unaware"] + 0.1  # 6 % radio loss slows the unaware
