"""TFRC (RFC 5348): the equation, the loss-interval arithmetic and the replay's rule boundaries,
each against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldanalyze.control import controller_state, get_controller
from ldanalyze.control.models import tfrc_loss_event_rate, tfrc_rate
from ldanalyze.control.tfrc import interval_weights, loss_rate_for, mean_loss_interval, throughput_equation
from ldanalyze.errors import UsageError

from .test_control_newreno import paced_flow


def test_weights_are_rfc5348s():
    assert interval_weights(8).tolist() == pytest.approx([1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2], abs=1e-15)
    assert interval_weights(4).tolist() == pytest.approx([1, 1, 2 / 3, 1 / 3])


def test_throughput_equation_by_hand():
    # s = 1000 B, R = 0.1 s, p = 0.01, b = 1, t_RTO = 0.4 s:
    # R·sqrt(2p/3) = 0.1·0.0816497 = 0.00816497
    # t_RTO·3·sqrt(3p/8)·p·(1 + 32p²) = 0.4·0.1837117·0.01·1.0032 = 0.00073720
    # X = 1000 / 0.00890217 = 112332.3 B/s
    assert throughput_equation(1000.0, 0.1, 0.01, 1.0, 4.0) == pytest.approx(112332.3, rel=1e-6)
    # p = 0.1: 0.1·0.2581989 = 0.02581989; 0.4·0.5809475·0.1·1.32 = 0.03067403; X = 1000/0.05649392
    assert throughput_equation(1000.0, 0.1, 0.1, 1.0, 4.0) == pytest.approx(17701.02, rel=1e-6)
    # the kernel's copy agrees with the reference model everywhere
    for p in (1e-6, 1e-3, 0.05, 0.3, 1.0):
        assert throughput_equation(762.0, 0.13, p, 1.0, 4.0) == pytest.approx(
            float(tfrc_rate(762.0, 0.13, p)), rel=1e-12
        )
        assert throughput_equation(762.0, 0.13, p, 1.0, 2.5) == pytest.approx(
            float(tfrc_rate(762.0, 0.13, p, rto=0.325)), rel=1e-12
        )


@pytest.mark.parametrize("target", [50.0, 1e3, 2e4, 1e6])
def test_inverse_equation_agrees_with_the_models_inverse(target):
    p = loss_rate_for(target, 762.0, 0.13, 1.0, 4.0)
    assert p == pytest.approx(float(tfrc_loss_event_rate(762.0, 0.13, target)), rel=1e-9)
    assert throughput_equation(762.0, 0.13, p, 1.0, 4.0) == pytest.approx(target, rel=1e-9)


def mean_interval(closed, open_interval, discounting=False, discounts=None):
    hist = np.zeros(8)
    disc = np.ones(8)
    hist[: len(closed)] = closed
    if discounts is not None:
        disc[: len(discounts)] = discounts
    return mean_loss_interval(hist, disc, len(closed), float(open_interval), interval_weights(8), discounting)


def test_loss_interval_average_by_hand():
    closed = [10, 20, 30, 40, 50, 60, 70, 80]  # I_1 .. I_8; the weights sum to 6
    # without I_0: 10+20+30+40 + 0.8·50 + 0.6·60 + 0.4·70 + 0.2·80 = 220, / 6 = 36.667
    # with I_0 = 5: 5+10+20+30 + 0.8·40 + 0.6·50 + 0.4·60 + 0.2·70 = 165, / 6 = 27.5 → the larger
    assert mean_interval(closed, 5) == (pytest.approx(220 / 6), 1.0)
    # I_0 = 100 lowers p: 100+60 + 32+30+24+14 = 260, / 6 = 43.333
    assert mean_interval(closed, 100)[0] == pytest.approx(260 / 6)
    # two closed intervals: without I_0 (10+20)/2 = 15; with I_0 = 3: (3+10)/2 = 6.5
    assert mean_interval([10, 20], 3)[0] == pytest.approx(15.0)
    assert mean_interval([10, 20], 40)[0] == pytest.approx(25.0)  # (40+10)/2


def test_history_discounting_by_hand():
    closed = [10, 20, 30, 40, 50, 60, 70, 80]  # mean of the closed intervals: 220/6
    # I_0 = 100 > 2·36.667: DF = 73.333/100 on I_1..I_7 (their weights sum to 5) with I_0:
    # (100 + DF·(10+20+30+32+30+24+14)) / (1 + DF·5) = (100 + DF·160) / (1 + 5·DF); without: 36.667
    i_mean, df = mean_interval(closed, 100, discounting=True)
    assert df == pytest.approx(440 / 600)
    assert i_mean == pytest.approx((100 + df * 160) / (1 + 5 * df))
    # the boundary: closed intervals all 30, I_0 = 60 = 2·30 exactly → no discount; 61 → 60/61
    assert mean_interval([30] * 8, 60, discounting=True)[1] == 1.0
    assert mean_interval([30] * 8, 61, discounting=True)[1] == pytest.approx(60 / 61)
    # DF floors at 0.5: I_0 = 1000 → (1000 + 0.5·160) / (1 + 0.5·5) = 1080/3.5
    assert mean_interval(closed, 1000, discounting=True) == (pytest.approx(1080 / 3.5), 0.5)
    # stored discounts scale the old intervals in both averages: I_1 weighs 1, I_2 half
    i_mean, _ = mean_interval([10, 20], 3, discounting=True, discounts=[1.0, 0.5])
    assert i_mean == pytest.approx((10 + 0.5 * 20) / 1.5)


def tfrc_state(table, **params):
    return controller_state(table, get_controller("tfrc", **params), "omniscient")


def test_slow_start_doubles_once_per_rtt_up_to_twice_the_receive_rate():
    # 100-byte packets every 2^-6 s (6400 B/s received), R = 2^-3 s exactly (owd 2^-4 both ways)
    st = tfrc_state(paced_flow(400))
    rate = st["rate_bps"].to_numpy() / 8
    # W_init = min(4s, max(2s, 4380)) = 400 B → W_init/R = 3200 B/s at the first feedback
    assert rate[0] == pytest.approx(3200.0)
    # then 6400, then min(12800, 2·X_recv = 12800): doubling stops at twice the receive rate
    assert sorted(set(np.round(rate, 6))) == [3200.0, 6400.0, 12800.0]
    assert rate[-1] == pytest.approx(12800.0)
    assert (st["p"] == 0).all()


def test_loss_event_boundary_is_one_rtt_inclusive():
    # losses at seq 100 (first event), 108: nominal time exactly 8·2^-6 = R later → joins it,
    # 109: 9·2^-6 > R later → a new event
    joined = tfrc_state(paced_flow(400, lost={100: "congestion", 108: "congestion"}))
    assert joined["loss_events"].iloc[-1] == 1
    split = tfrc_state(paced_flow(400, lost={100: "congestion", 109: "congestion"}))
    assert split["loss_events"].iloc[-1] == 2


def test_first_interval_comes_from_the_receive_rate_and_the_open_interval_counts_when_longer():
    st = tfrc_state(paced_flow(400, lost={100: "congestion"}), receive="trace")
    at = int(np.flatnonzero(st["loss_events"].to_numpy() == 1)[0])
    assert st["seq"].iloc[at] == 101  # the arrival that reveals the loss
    # R = 2^-3 = 8 arrivals: feedback went out at seq 0, 8, ..., 96. Since then seq 97, 98, 99
    # and 101 arrived, 400 B in 5·2^-6 s: X_recv = 5120 B/s, from which I_1 = 1/p_first
    p_first = float(tfrc_loss_event_rate(100.0, 0.125, 5120.0))
    assert st["p"].iloc[at] == pytest.approx(p_first, rel=1e-9)
    # feedback then every 8 arrivals from seq 101: the last at seq 397, where I_0 = 397−100+1 =
    # 298 is longer than I_1, so it counts. With one closed interval (k = 1) the two averages
    # are I_0 alone and I_1 alone: I_mean = max(298, I_1) = 298
    assert 1 / p_first < 298
    assert 1 / st["p"].iloc[-1] == pytest.approx(298.0)


def test_the_modelled_receive_rate_is_the_modelled_rate_at_most_the_capacity():
    """receive="model" (the default): X_recv is what the network could have carried of the
    modelled sender's rate, X capped at the flow's capacity, not the trace's receive rate."""
    flow = paced_flow(400, lost={100: "congestion"})
    st = tfrc_state(flow)
    at = int(np.flatnonzero(st["loss_events"].to_numpy() == 1)[0])
    # 100-byte packets every 2^-6 s: packet-pair capacity 6400 B/s. Slow start held X at twice
    # that, 12800 B/s, so X_recv = min(X, 6400) = 6400 B/s seeds I_1 (the trace's own receive
    # rate since the last feedback was 5120 B/s, see above)
    assert st["x_recv_bps"].iloc[at] / 8 == pytest.approx(6400.0)
    p_first = float(tfrc_loss_event_rate(100.0, 0.125, 6400.0))
    assert st["p"].iloc[at] == pytest.approx(p_first, rel=1e-9)
    # from the trace's lower receive rate, receive="trace" seeds a higher first p
    trace_mode = tfrc_state(flow, receive="trace")
    assert trace_mode["p"].iloc[at] > st["p"].iloc[at]


def test_wireless_losses_never_enter_the_history():
    clean = tfrc_state(paced_flow(300))
    radio = tfrc_state(paced_flow(300, lost={50: "wireless", 51: "wireless", 120: "wireless"}))
    # omniscient calls them wireless: the rate is that of a loss-free flow, arrival for arrival
    # (the arrivals differ: the lost packets never arrive; compare at the common seqs)
    both = clean.merge(radio, on="seq", suffixes=("_clean", "_radio"))
    assert (radio["p"] == 0).all()
    np.testing.assert_allclose(both["rate_bps_radio"].to_numpy()[-50:], both["rate_bps_clean"].to_numpy()[-50:])


def test_bad_parameters_are_refused():
    with pytest.raises(UsageError, match="n must be"):
        get_controller("tfrc", n=1)
    with pytest.raises(UsageError, match="t_mbi"):
        get_controller("tfrc", t_mbi=0)
    assert get_controller("tfrc", discounting=True).spec == "tfrc:discounting=true"
    assert math.isfinite(get_controller("tfrc").t_mbi)
