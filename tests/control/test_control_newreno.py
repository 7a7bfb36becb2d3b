"""The NewReno baseline: window rules and their boundaries, worked out by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ldanalyze.control import controller_state, get_controller
from ldanalyze.errors import UsageError
from ldanalyze.packets import make_packet_table
from ldanalyze.timeline import build_timeline

UNIT = 2.0**-6  # send spacing (s); dyadic, so every sum below is exact


def paced_flow(n, lost=None, *, owd=2.0**-4, pause_after=None, pause=0.0, size=100):
    """One flow of ``n`` packets sent every UNIT with a constant one-way delay (so, on the
    common clock, every RTT sample is 2·owd). ``lost`` maps seq → cause. After seq
    ``pause_after`` the sender pauses ``pause`` seconds."""
    lost = lost or {}
    t = np.arange(n) * UNIT
    if pause_after is not None:
        t[pause_after + 1 :] += pause
    fate = [lost.get(i, "delivered") for i in range(n)]
    t_recv = np.where([f == "delivered" for f in fate], t + owd, np.nan)
    table = make_packet_table(
        flow=["1"] * n, seq=np.arange(n), uid=np.arange(n), t_send=t, t_recv=t_recv, fate=fate, size=[size] * n
    )
    return dataclasses.replace(build_timeline(table), meta={"clock": "common"})


def newreno(table, lda="omniscient", **params):
    return controller_state(table, get_controller("newreno", **params), lda)


def test_slow_start_then_linear_growth():
    st = newreno(paced_flow(40), max_window=None)
    cwnd = st["cwnd"].to_numpy()
    assert cwnd[:5].tolist() == [3, 4, 5, 6, 7]  # +1 per ACK from 2
    assert np.isinf(st["ssthresh"]).all()
    # rate = cwnd·s/srtt with srtt = 2^-3: 3·100/0.125 = 2400 B/s
    assert st["rate_bps"].iloc[0] == pytest.approx(2400 * 8)


def test_congestion_halves_once_per_window_and_wireless_leaves_it():
    # seq 20 lost (revealed by 21); seq 28 is exactly srtt = 8·UNIT later → same window;
    # seq 29 is later → a second halving
    one = newreno(paced_flow(60, {20: "congestion", 28: "congestion"}))
    two = newreno(paced_flow(60, {20: "congestion", 29: "congestion"}))
    # at the arrival of seq 21: cwnd 2 + 20 ACKs + 1 = 23 → halved to 11.5
    at21 = one.set_index("seq")["cwnd"]
    assert at21[21] == pytest.approx(11.5)
    assert one.set_index("seq")["ssthresh"][59] == pytest.approx(11.5)
    assert two.set_index("seq")["ssthresh"][59] < 11.5
    radio = newreno(paced_flow(60, {20: "wireless", 29: "wireless"}))
    assert np.isinf(radio["ssthresh"]).all()
    # the unaware LDA calls the radio losses congestion: plain NewReno halves
    assert newreno(paced_flow(60, {20: "wireless"}), lda="unaware")["ssthresh"].iloc[-1] == pytest.approx(11.5)


def test_usable_window_caps_the_rate_and_the_halving():
    st = newreno(paced_flow(60, {30: "congestion"}), max_window=10)
    assert st["rate_bps"].max() == pytest.approx(10 * 100 / 0.125 * 8)
    assert st.set_index("seq")["ssthresh"][31] == pytest.approx(5.0)  # W = min(cwnd, 10) halved


def test_a_silence_longer_than_the_rto_is_a_timeout():
    # srtt stays 0.125 and rttvar decays toward 0: RTO = max(min_rto, ...) = min_rto
    quiet = newreno(paced_flow(40, pause_after=19, pause=0.5 - UNIT), min_rto=0.5)  # gap exactly 0.5
    assert np.isinf(quiet["ssthresh"]).all()
    timeout = newreno(paced_flow(40, pause_after=19, pause=0.5), min_rto=0.5)  # gap 0.5 + UNIT
    cw = timeout.set_index("seq")["cwnd"]
    assert cw[20] == 2.0  # cwnd 1, then this arrival's ACK: slow start again
    assert timeout.set_index("seq")["ssthresh"][20] == pytest.approx(cw[19] / 2)


def test_bad_parameters_are_refused():
    with pytest.raises(UsageError, match="max_window"):
        get_controller("newreno", max_window=0.5)
    with pytest.raises(UsageError, match="initial_window"):
        get_controller("newreno", initial_window=0)
