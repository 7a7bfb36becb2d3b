"""Figures: each holds what it should (points per LDA, a marker per loss, labelled axes), stays
legible on long flows (decimation keeps the extremes), and refuses what it cannot draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze.errors import UsageError
from ldanalyze.report.plots.style import MAX_POINTS, decimate, decimate_broken

from ..conftest import ROOT, TRACES


@pytest.fixture(scope="module")
def mix():
    tl = la.build_timeline(la.read_trace(TRACES / "wlh_mix_4flow_high.tr.gz"))
    decisions = la.classify(tl, "all")
    return tl, decisions


def test_timeline_marks_every_detected_loss_and_each_decision(mix):
    tl, _ = mix
    fig = la.plot.timeline(tl, "4", ["zbs", "spike"], window=(20, 60))
    rott, iat, strip, state = fig.axes[:4]
    losses = tl.losses[
        (tl.losses["flow"].astype(str) == "4") & tl.losses["detected"] & tl.losses["t_detect"].between(20, 60)
    ]
    marked = sum(len(c.get_offsets()) for c in rott.collections)
    assert marked == len(losses) > 0
    assert sum(len(c.get_offsets()) for c in strip.collections) == 2 * len(losses)
    assert [t.get_text() for t in strip.get_yticklabels()] == ["zbs", "spike"]
    assert rott.get_ylabel() == "ROTT (ms)" and iat.get_ylabel() == "inter-arrival (ms)"
    assert state.get_xlabel() == "receive time (s)" and "zbs" in state.get_ylabel()
    with pytest.raises(UsageError, match="no flow"):
        la.plot.timeline(tl, "nope")


def test_mc_mw_has_one_point_per_lda_and_the_ideal_corner(mix):
    tl, decisions = mix
    scores = la.score(decisions, tl.summary(), by="trace")
    per_flow = la.score(decisions, tl.summary(), by="flow", bootstrap=0)
    ax = la.plot.mc_mw(scores, per_flow).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["ideal"] + [str(x) for x in scores["lda"]]
    assert "M_c" in ax.get_xlabel() and "M_w" in ax.get_ylabel()


def test_confusion_and_rates_and_across(mix):
    tl, decisions = mix
    scores = la.score(decisions, tl.summary(), by="trace")
    fig = la.plot.confusion(scores)
    assert sum(1 for ax in fig.axes if ax.images) == len(scores)
    result = la.replay(tl, "tfrc", "zbs,omniscient,unaware")
    ax = la.plot.rates(result, flow="1").axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["zbs", "omniscient", "unaware"]
    assert "open-loop" in ax.get_title()
    with pytest.raises(UsageError, match="rates=True"):
        la.plot.rates(la.replay(tl, "tfrc", "zbs", rates=False))
    two = pd.concat([scores.assign(trace="a"), scores.assign(trace="b", congestion_rate=scores["congestion_rate"] * 2)])
    ax = la.plot.across(two, x="congestion_rate").axes[0]
    assert len(ax.get_lines()) == len(scores) and ax.get_xlabel() == "congestion_rate (%)"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=3000), st.integers(8, 400))
def test_decimation_keeps_every_extreme_in_time_order(values, points):
    y = np.asarray(values)
    t = np.arange(y.size, dtype=np.float64)
    td, yd = decimate(t, y, points)
    assert np.all(np.diff(td) > 0) and yd.min() == y.min() and yd.max() == y.max()
    assert td[0] == t[0] and td[-1] == t[-1]
    if y.size > points:
        assert td.size <= points


def test_zbs_usage_stacks_every_scheme_per_flow(mix):
    tl, _ = mix
    usage = la.get_lda("zbs").usage(tl)
    ax = la.plot.zbs_usage(usage).axes[0]
    assert len(ax.patches) == len(usage) * 3
    tops = np.zeros(len(usage))
    for patch in ax.patches:
        tops[round(patch.get_x() + patch.get_width() / 2)] += patch.get_height()
    assert np.allclose(tops, 100)


def test_what_the_ldas_called_kappa_and_over_time(mix):
    """One point per LDA (baselines aside) at its share called wireless, the true share as a
    line; kappa one cell per pair; over time one row per LDA and the truth."""
    from ldanalyze import consensus

    tl, decisions = mix
    scores = la.score(decisions, tl.summary(), by="pooled", bootstrap=50)
    fig = la.plot.called_wireless(scores)
    ax = fig.axes[0]
    voters = consensus.voters(decisions)
    assert [t.get_text() for t in ax.get_yticklabels()] == voters[::-1]
    truth = scores.set_index("lda").loc["omniscient", "wireless_share"] * 100
    assert [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"] == [pytest.approx(truth)]
    k = consensus.kappa_matrix(decisions)
    fig = la.plot.kappa(k)
    assert fig.axes[0].get_images()[0].get_array().shape == (len(voters), len(voters))
    over = consensus.shares_over_time(decisions, windows=10)
    fig = la.plot.shares_over_time(over)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["truth", *voters]
    with pytest.raises(UsageError, match="only baselines"):
        la.plot.called_wireless(scores[scores["lda"].isin(["unaware", "omniscient"])])
    with pytest.raises(UsageError, match="no decided loss"):
        la.plot.shares_over_time(over.iloc[0:0])


def test_a_capture_outage_is_a_gap_in_the_timeline():
    """gtp-iphone.pcap: the capture recorded nothing from 80.92 to 91.16 s. The flow's ROTT and
    inter-arrival lines have no segment across it, its arrivals on both sides are drawn, and a
    band labelled as the outage covers it; the inter-arrival across it (the capture's silence)
    is not drawn."""
    with pytest.warns(la.io.capture.pcap.CaptureWarning):
        tl = la.build_timeline(la.read_trace(ROOT / "tests/data/real/tunnels/gtp-iphone.pcap"))
    flow = "[fd00:183:1:1:1886:9040:8605:32b8]:49120>[fd01::183]:19956/udp/gtpu=0x7e10b56d@127.0.1.1>127.0.1.100"
    (outage,) = tl.meta["capture_outages"]
    t = tl.arrivals.loc[tl.arrivals["flow"].astype(str) == flow, "t_recv"].to_numpy()
    start, end = outage["start"] - t[0], outage["end"] - t[0]
    assert (t < outage["start"] + 0.01).sum() == 3 and (t > outage["end"] - 0.01).sum() == 10  # arrivals both sides
    fig = la.plot.timeline(tl, flow, ())
    for ax in fig.axes[:2]:
        (line,) = ax.get_lines()
        x, y = line.get_xdata(), line.get_ydata()
        drawn = np.isfinite(y[:-1]) & np.isfinite(y[1:])
        assert not (drawn & (x[:-1] < start + 0.5) & (x[1:] > end - 0.5)).any()  # no segment spans it
        assert x[np.isfinite(y)].max() > end and x[np.isfinite(y)].min() < start  # both sides shown
        (band,) = ax.patches
        assert band.get_x() == pytest.approx(start) and band.get_width() == pytest.approx(end - start)
    assert np.nanmax(fig.axes[1].get_lines()[0].get_ydata()) < 1e3  # not the 10 s silence as an inter-arrival
    assert "capture outage: not observed" in [text.get_text() for text in fig.axes[0].get_legend().get_texts()]


def test_a_line_broken_and_decimated_keeps_its_breaks():
    t = np.arange(20_000, dtype=float)
    x, y = decimate_broken(t, np.sin(t), np.array([5_000, 15_000]))
    assert np.isnan(y).sum() == 2 and len(x) <= MAX_POINTS + 2
    assert (x[np.flatnonzero(np.isnan(y)) + 1] == [5_000, 15_000]).all() and (np.diff(x) >= 0).all()
