"""Closed-form throughput models and fairness measures: hand-computed values, limits, inverses."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.control.models import (
    aimd_throughput,
    congestion_decision_probability,
    fairness_by_group,
    jain_fairness_index,
    lim_throughput,
    model_throughputs,
    normalized_throughput,
    pftk_rate,
    tfrc_loss_event_rate,
    tfrc_rate,
    throughput_deviation,
    westwood_plus_throughput,
)
from ldanalyze.errors import UsageError

loss = st.floats(1e-6, 0.5)
fraction = st.floats(0.0, 1.0)
rtts = st.floats(1e-3, 10.0)
sizes = st.floats(40.0, 9000.0)


# --- RFC 5348 §3.1 and PFTK (paper 002 eq. 1) ---------------------------------------------------


def test_tfrc_rate_by_hand():
    # p = 1/6: sqrt(2p/3) = 1/3, 3·sqrt(3p/8) = 3·(1/4) = 3/4, p(1 + 32p²) = (1/6)(68/36) = 17/54.
    # R = 0.3, t_RTO = 4R = 1.2: 0.3/3 + 1.2·(3/4)·(17/54) = 0.1 + 0.28333... = 23/60.
    # s = 230 bytes: X = 230·60/23 = 600 bytes/s.
    assert tfrc_rate(230, 0.3, 1 / 6) == pytest.approx(600.0, rel=1e-12)
    # Same with t_RTO given as 0: only the first term, 0.1, is left: 2300 bytes/s.
    assert tfrc_rate(230, 0.3, 1 / 6, rto=0.0) == pytest.approx(2300.0, rel=1e-12)
    # b = 2, p = 1/12: bp = 1/6 as above, p(1 + 32p²) = (1/12)(176/144) = 11/108;
    # 0.1 + 1.2·(3/4)·(11/108) = 0.1 + 0.091666... = 23/120, so X = 230·120/23 = 1200.
    assert tfrc_rate(230, 0.3, 1 / 12, acked_per_ack=2) == pytest.approx(1200.0, rel=1e-12)
    # p = 3/800: sqrt(2p/3) = 1/20, 3·sqrt(3p/8) = 9/80, p(1 + 32p²) = 0.00375·1.00045
    # = 0.0037516875; R = 0.1, t_RTO = 0.4: 0.005 + 0.4·0.1125·0.0037516875 = 0.005168825938,
    # s = 1000: X = 193467.53 bytes/s.
    assert tfrc_rate(1000, 0.1, 3 / 800) == pytest.approx(193467.53, rel=1e-7)


def test_pftk_caps_the_timeout_factor():
    # p = 2/3, R = t_out = 1, D = 1: sqrt(2p/3) = 2/3; 3·sqrt(3p/8) = 3/2, which PFTK caps at 1;
    # p(1 + 32p²) = (2/3)(137/9) = 274/27. PFTK: 2/3 + 274/27 = 292/27, so s = 292 gives 27.
    # RFC 5348: 2/3 + (3/2)(274/27) = 429/27, so 292·27/429 = 18.3776...
    assert pftk_rate(292, 1.0, 2 / 3, rto=1.0) == pytest.approx(27.0, rel=1e-12)
    assert tfrc_rate(292, 1.0, 2 / 3, rto=1.0) == pytest.approx(292 * 27 / 429, rel=1e-12)


def test_pftk_equals_tfrc_below_the_cap():
    p = np.linspace(0.0, 8 / 27, 50)  # 3·sqrt(3p/8) ≤ 1
    np.testing.assert_allclose(pftk_rate(1000, 0.2, p), tfrc_rate(1000, 0.2, p), rtol=1e-14)
    p = np.linspace(0.31, 1.0, 20)
    assert np.all(pftk_rate(1000, 0.2, p) > tfrc_rate(1000, 0.2, p))


def test_rate_limits_and_monotony():
    assert tfrc_rate(1000, 0.1, 0.0) == math.inf
    assert pftk_rate(1000, 0.1, 0.0) == math.inf
    assert tfrc_rate(1000, 0.1, 1e-12) > 1e9
    p = np.geomspace(1e-8, 1.0, 400)
    assert np.all(np.diff(tfrc_rate(1000, 0.1, p)) < 0)
    assert np.all(np.diff(pftk_rate(1000, 0.1, p)) < 0)
    rtt = np.geomspace(1e-4, 10.0, 400)
    assert np.all(np.diff(tfrc_rate(1000, rtt, 0.01)) < 0)
    assert np.all(np.diff(pftk_rate(1000, rtt, 0.01)) < 0)


def test_rates_broadcast():
    out = tfrc_rate(1000, np.array([[0.1], [0.2]]), np.array([0.01, 0.02, 0.05]))
    assert out.shape == (2, 3)
    assert out[1, 2] == tfrc_rate(1000, 0.2, 0.05)
    assert isinstance(tfrc_rate(1000, 0.1, 0.01), np.floating)


def test_inverse_by_hand():
    # From test_tfrc_rate_by_hand: s = 230, R = 0.3 and 600 bytes/s need p = 1/6.
    assert tfrc_loss_event_rate(230, 0.3, 600.0) == pytest.approx(1 / 6, rel=1e-14)
    assert tfrc_loss_event_rate(230, 0.3, 1200.0, acked_per_ack=2) == pytest.approx(1 / 12, rel=1e-14)


def test_inverse_ends():
    floor = tfrc_rate(1000, 0.1, 1.0)
    assert tfrc_loss_event_rate(1000, 0.1, floor / 2) == 1.0  # below the equation's lowest rate
    assert tfrc_loss_event_rate(1000, 0.1, math.inf) == 0.0
    # Huge rates: the first term dominates, p ≈ (3/2)(s/(X·R))² = 1.5·(1e-6)² = 1.5e-12
    # (the second term is 9p = 1.4e-11 times the first).
    assert tfrc_loss_event_rate(1000, 0.1, 1e10) == pytest.approx(1.5e-12, rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(loss, rtts, sizes, st.one_of(st.none(), st.floats(0.0, 60.0)), st.sampled_from([1.0, 2.0]))
def test_inverse_round_trips(p, rtt, size, rto, b):
    rate = tfrc_rate(size, rtt, p, rto=rto, acked_per_ack=b)
    assert tfrc_loss_event_rate(size, rtt, rate, rto=rto, acked_per_ack=b) == pytest.approx(p, rel=1e-12)


def test_inverse_is_vectorised():
    p = np.geomspace(1e-6, 0.5, 200).reshape(20, 10)
    rtt = np.linspace(0.01, 1.0, 10)
    back = tfrc_loss_event_rate(1000, rtt, tfrc_rate(1000, rtt, p))
    assert back.shape == p.shape
    np.testing.assert_allclose(back, p, rtol=1e-12)


# --- Lim et al., paper 003 §3.3 ---------------------------------------------------------------


def test_aimd_by_hand():
    # Eq. 3, a = 1, b = 1/2, T = 0.1, p = 0.02: sqrt(0.98 / (0.5·0.02)) = sqrt(98) = 9.899495;
    # /T = 98.99495 packets/s; S = 1000 bytes: 98994.95 bytes/s.
    assert aimd_throughput(1000, 0.1, 0.02) == pytest.approx(98994.949, rel=1e-7)
    # a = 2, b = 0.75, T = 0.5, p = 0.5: sqrt(2·0.5 / (0.25·0.5)) = sqrt(8); /0.5 = 5.656854.
    assert aimd_throughput(1, 0.5, 0.5, increase=2.0, decrease=0.75) == pytest.approx(5.656854, rel=1e-6)
    assert aimd_throughput(1000, 0.1, 0.0) == math.inf
    assert aimd_throughput(1000, 0.1, 0.02, decrease=1.0) == math.inf  # never cuts
    assert aimd_throughput(1000, 0.1, 1.0) == 0.0


def test_congestion_decision_probability_by_hand():
    # Eq. 4: p_c = 0.01, p_w = 0.03, A_c = 0.9, A_w = 0.8: (0.009 + 0.03·0.2) / 0.04 = 0.375.
    assert congestion_decision_probability(0.01, 0.03, 0.9, 0.8) == pytest.approx(0.375, rel=1e-12)
    # A perfect LDA calls exactly the congestion share of the losses: 0.01 / 0.04.
    assert congestion_decision_probability(0.01, 0.03, 1.0, 1.0) == pytest.approx(0.25, rel=1e-12)
    # A cause that never occurred does not need an accuracy (scores leave it NaN).
    assert congestion_decision_probability(0.0, 0.03, math.nan, 0.8) == pytest.approx(0.2, rel=1e-12)
    assert math.isnan(congestion_decision_probability(0.0, 0.0, 1.0, 1.0))


def test_lim_by_hand():
    # Eq. 8: T = 0.2, p_c = 0.01, p_w = 0.03, A_c = 0.9, A_w = 0.8: Pr(c|l)·p = 0.015, p = 0.04:
    # (1/0.2)·sqrt(2·0.96/0.015) = 5·sqrt(128) = 40·sqrt(2) = 56.5685 packets/s (S = 1).
    assert lim_throughput(1, 0.2, 0.01, 0.03, 0.9, 0.8) == pytest.approx(40 * math.sqrt(2), rel=1e-12)
    # Omniscient (A_c = A_w = 1): only p_c cuts; (1/0.2)·sqrt(2·0.96/0.01) = 5·sqrt(192) = 69.282.
    assert lim_throughput(1, 0.2, 0.01, 0.03, 1.0, 1.0) == pytest.approx(69.282032, rel=1e-7)
    assert lim_throughput(1, 0.2, 0.0, 0.03, math.nan, 1.0) == math.inf  # no loss called congestion


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 0.4), st.floats(0.0, 0.4), fraction, fraction, rtts)
def test_lim_against_newreno(p_c, p_w, a_c, a_w, rtt):
    p = p_c + p_w
    newreno = aimd_throughput(1500, rtt, p)  # eq. 3 with a = 1, b = 1/2
    # Never below NewReno: Pr(c|l) ≤ 1.
    assert lim_throughput(1500, rtt, p_c, p_w, a_c, a_w) >= newreno * (1 - 1e-12)
    # An LDA that calls every loss congestion (A_c = 1, A_w = 0) is NewReno.
    assert lim_throughput(1500, rtt, p_c, p_w, 1.0, 0.0) == pytest.approx(newreno, rel=1e-12)
    called = congestion_decision_probability(p_c, p_w, a_c, a_w) if p > 0 else 0.0
    if called > 1e-6:  # else 1 − b_prd is lost to rounding (relative error about 1e-16 / called)
        # Eq. 9: eq. 8 is eq. 3 with b_prd = 1 − Pr(c|l)/2.
        b_prd = 1 - called / 2
        assert lim_throughput(1500, rtt, p_c, p_w, a_c, a_w) == pytest.approx(
            aimd_throughput(1500, rtt, p, decrease=b_prd), rel=1e-9
        )


def test_lim_without_wireless_loss_is_newreno():
    # p_w = 0 and A_c = 1: Pr(c|l) = 1, eq. 8 = (1/T)·sqrt(2(1 − p)/p), eq. 3 with b = 1/2.
    p_c = np.array([1e-4, 0.01, 0.1, 0.5])
    np.testing.assert_allclose(lim_throughput(1000, 0.1, p_c, 0.0, 1.0, math.nan), aimd_throughput(1000, 0.1, p_c))


def test_lim_rises_with_wireless_accuracy():
    a_w = np.linspace(0.0, 1.0, 11)
    assert np.all(np.diff(lim_throughput(1000, 0.1, 0.01, 0.05, 0.9, a_w)) > 0)
    a_c = np.linspace(0.0, 1.0, 11)
    assert np.all(np.diff(lim_throughput(1000, 0.1, 0.01, 0.05, a_c, 0.9)) < 0)


def test_westwood_by_hand():
    # Eq. 10: T = 0.2, T_p = 0.15, p = 0.2: sqrt(0.2·0.05) = 0.1, sqrt(0.8/0.2) = 2: 20 packets/s.
    assert westwood_plus_throughput(1, 0.2, 0.15, 0.2) == pytest.approx(20.0, rel=1e-12)
    assert westwood_plus_throughput(1000, 0.2, 0.2, 0.01) == math.inf  # empty queue: b_ww+ = 1
    assert westwood_plus_throughput(1000, 0.2, 0.1, 0.0) == math.inf


@settings(max_examples=100, deadline=None)
@given(rtts, fraction, loss)
def test_westwood_is_aimd_with_b_equal_tp_over_t(rtt, share, p):
    t_p = share * rtt * 0.999  # T_p < T
    # Eq. 11: b_ww+ = T_p / T.
    assert westwood_plus_throughput(1000, rtt, t_p, p) == pytest.approx(
        aimd_throughput(1000, rtt, p, decrease=t_p / rtt), rel=1e-9
    )


# --- Fairness and normalized throughput: paper 000 §VI, §VIII; paper 003 eq. 12 -------------


PAPER_000_ZBS_WB_4_FLOWS = [13303, 13826, 13123, 11955]  # packets, paper 000 §VIII-A


def test_paper_000_worked_example_gives_6_percent():
    x = np.array(PAPER_000_ZBS_WB_4_FLOWS, dtype=float)
    # Mean 52207/4 = 13051.75 ("13052"); normalized: 1.0193, 1.0593, 1.0055, 0.9160, which the
    # paper prints as 1.02, 1.06, 1.006 (1.005 rounded right) and 0.92.
    assert x.mean() == pytest.approx(13052, abs=0.5)
    np.testing.assert_allclose(x / x.mean(), [1.02, 1.06, 1.006, 0.92], atol=0.005)
    # σ = sqrt((0.01925² + 0.05932² + 0.00546² + 0.08403²) / 3) = sqrt(0.0109815 / 3) = 0.0605.
    sigma = throughput_deviation(x)
    assert sigma == pytest.approx(0.0605, abs=5e-5)
    assert round(100 * sigma) == 6
    # The paper's own rounded figures: sqrt((0.02² + 0.06² + 0.006² + 0.08²) / 3) = 0.0590, 6 % too.
    assert round(100 * throughput_deviation([1.02, 1.06, 1.006, 0.92])) == 6


def test_throughput_deviation_cases():
    assert throughput_deviation([5.0, 5.0, 5.0]) == 0.0
    # [1, 3]: mean 2, normalized 0.5 and 1.5, σ = sqrt((0.25 + 0.25)/1) = 0.7071.
    assert throughput_deviation([1.0, 3.0]) == pytest.approx(math.sqrt(0.5), rel=1e-12)
    assert throughput_deviation([2.0, 6.0]) == pytest.approx(math.sqrt(0.5), rel=1e-12)  # scale-free
    assert math.isnan(throughput_deviation([7.0]))  # n − 1 = 0
    assert math.isnan(throughput_deviation([0.0, 0.0]))
    trials = np.array([[1.0, 3.0], [4.0, 4.0], [2.0, 6.0]])  # one trial per row
    np.testing.assert_allclose(throughput_deviation(trials), [math.sqrt(0.5), 0.0, math.sqrt(0.5)])
    np.testing.assert_allclose(throughput_deviation(trials.T, axis=0), throughput_deviation(trials))
    assert throughput_deviation(trials[:, :1]).shape == (3,)


def test_jain_index():
    assert jain_fairness_index([3.0, 3.0, 3.0, 3.0]) == pytest.approx(1.0, rel=1e-12)
    assert jain_fairness_index([10.0, 0.0, 0.0, 0.0]) == pytest.approx(1 / 4, rel=1e-12)
    # (1 + 2 + 3)² / (3·(1 + 4 + 9)) = 36/42 = 6/7.
    assert jain_fairness_index([1.0, 2.0, 3.0]) == pytest.approx(6 / 7, rel=1e-12)
    assert jain_fairness_index([4.0]) == 1.0
    assert math.isnan(jain_fairness_index([0.0, 0.0]))
    np.testing.assert_allclose(jain_fairness_index([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]), [6 / 7, 1.0])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.001, 1e6), min_size=2, max_size=32))
def test_jain_and_deviation_agree(x):
    # F = 1/(1 + CV²) with the population CV; the sample σ has CV² = σ²·(n − 1)/n.
    n = len(x)
    sigma = throughput_deviation(x)
    jain = jain_fairness_index(x)
    assert 1 / n - 1e-12 <= jain <= 1 + 1e-12
    assert jain == pytest.approx(1 / (1 + sigma**2 * (n - 1) / n), rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.floats(0.0, 1e9), st.sampled_from([0.0, 1.0, 1e6])), min_size=1, max_size=8),
        min_size=1,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_fairness_by_group_is_the_per_group_functions(groups, random):
    """All groups at once (the rows shuffled) give what the functions give group by group, to
    rounding; NaN where they give NaN (a single flow, every flow at 0)."""
    rows = [(g, x) for g, flows in enumerate(groups) for x in flows]
    random.shuffle(rows)
    ids, values = (np.array(column) for column in zip(*rows))
    deviation, jain = fairness_by_group(values, ids, len(groups))
    for g, flows in enumerate(groups):
        for got, want in ((deviation[g], throughput_deviation(flows)), (jain[g], jain_fairness_index(flows))):
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_fairness_by_group_refuses_a_negative_throughput():
    with pytest.raises(UsageError, match="≥ 0"):
        fairness_by_group([1.0, -2.0], [0, 0], 1)


def test_normalized_throughput():
    # Table II: 148.5 kb/s through the 150 kb/s wireless last hop is 99 %.
    assert normalized_throughput(148.5, 150.0) == pytest.approx(0.99, rel=1e-12)
    # Fig. 15: 4 flows sharing 520 kb/s; a TCP flow at 117 kb/s has 90 % of its 130 kb/s share.
    assert normalized_throughput(117.0, 520.0, n_flows=4) == pytest.approx(0.9, rel=1e-12)
    np.testing.assert_allclose(normalized_throughput(np.array([75.0, 150.0]), 150.0), [0.5, 1.0])


# --- Bad arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tfrc_rate(1000, -0.1, 0.01), r"rtt must be > 0, not -0\.1"),
        (lambda: tfrc_rate(1000, 0.1, 1.5), r"loss_event_rate must be between 0 and 1, not 1\.5"),
        (lambda: pftk_rate(1000, 0.1, -0.01), r"loss_rate must be between 0 and 1"),
        (lambda: pftk_rate(0, 0.1, 0.01), r"packet_size must be > 0"),
        (lambda: tfrc_rate(1000, 0.1, 0.01, rto=-1.0), r"rto must be ≥ 0"),
        (lambda: tfrc_rate(1000, [0.1, -0.2], 0.01), r"rtt must be > 0, not -0\.2"),
        (lambda: tfrc_rate("fast", 0.1, 0.01), r"packet_size must be a number"),
        (lambda: tfrc_loss_event_rate(1000, 0.1, 0.0), r"rate must be > 0"),
        (lambda: aimd_throughput(1000, 0.1, 0.01, decrease=1.5), r"decrease must be between 0 and 1"),
        (lambda: aimd_throughput(1000, -1.0, 0.01), r"rtt must be > 0"),
        (lambda: lim_throughput(1000, 0.1, 0.6, 0.6, 1.0, 1.0), r"total loss rate p\) must be ≤ 1"),
        (lambda: lim_throughput(1000, 0.1, 0.01, 0.01, 1.2, 1.0), r"accuracy_congestion must be between"),
        (lambda: congestion_decision_probability(-0.1, 0.0, 1.0, 1.0), r"congestion_loss_rate must be"),
        (lambda: westwood_plus_throughput(1000, 0.1, 0.2, 0.01), r"propagation_delay \(T_p\) must be ≤ rtt"),
        (lambda: throughput_deviation([]), r"throughputs is empty"),
        (lambda: jain_fairness_index(np.empty((3, 0))), r"throughputs is empty"),
        (lambda: jain_fairness_index(5.0), r"one throughput per flow"),
        (lambda: jain_fairness_index([1.0, -1.0]), r"throughputs must be ≥ 0"),
        (lambda: normalized_throughput(1.0, 0.0), r"capacity must be > 0"),
    ],
)
def test_bad_arguments(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def test_model_throughputs_on_score_rows_by_hand():
    scores = pd.DataFrame(
        {
            "lda": ["unaware", "perfect"],
            "congestion_rate": [0.01, 0.01],
            "wireless_rate": [0.03, 0.03],
            "A_c": [1.0, 1.0],
            "A_w": [0.0, 1.0],
        }
    )
    out = model_throughputs(scores, 1000, 0.1, propagation_delay=0.05)
    # eq. 3, NewReno, p = 0.04: (1/0.1)·sqrt(0.96/(0.5·0.04)) = 10·sqrt(48) = 69.282 pkt/s
    assert out["aimd_bps"].tolist() == pytest.approx([69.282032 * 8000] * 2)
    # eq. 8: the unaware LDA calls all 0.04 congestion: 10·sqrt(2·0.96/0.04) = the same as eq. 3;
    # the perfect one only 0.01: 10·sqrt(192) = 138.564 pkt/s
    assert out["lim_bps"].tolist() == pytest.approx([69.282032 * 8000, 138.564065 * 8000])
    # eq. 10: sqrt(0.96/0.04) / sqrt(0.1·0.05) = 4.898979/0.0707107 = 69.282 pkt/s, for both
    assert out["westwood_plus_bps"].tolist() == pytest.approx([69.282032 * 8000] * 2)
    assert out["pftk_bps"][1] > out["pftk_bps"][0]
    with pytest.raises(UsageError, match="A_w"):
        model_throughputs(scores.drop(columns="A_w"), 1000, 0.1)
