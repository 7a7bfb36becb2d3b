"""TCP Westwood BE / ABSE (paper 004, with an LDA per paper 003 §3.2): every rule on ACK series
worked out by hand, the window rules at their boundaries, and the filter's convergence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.control import REGISTRY, controller_state, get_controller, parse_controllers
from ldanalyze.control.westwood import abse_interval, ere_alpha, first_after, westwood_kernel
from ldanalyze.errors import UsageError

from .test_control_newreno import UNIT, paced_flow

KEYS = ("rate", "ere", "sample", "alpha", "T", "tau", "U", "cwnd", "ssthresh")


def kernel(
    t,
    size=100.0,
    *,
    abse=False,
    new=False,
    s=100.0,
    srtt=0.1,
    rttvar=0.0,
    rtt_min=0.05,
    losses=(),
    tau=0.1,
    beta=0.6,
    N=10.0,
    history=10,
    initial_window=4.0,
    max_window=math.inf,
    min_rto=1.0,
    lda_in_slow_start=True,
):
    """One flow's ACKs at sender times ``t`` through the kernel; per-arrival values may be
    scalars. ``new=False`` (duplicates) keeps the window still: their bytes still count.
    ``losses``: (arrival index, nominal time, congestion?) triples. Rates in bytes/s."""
    t = np.asarray(t, dtype=float)
    n = t.shape[0]

    def column(v, dtype=float):
        return np.broadcast_to(np.asarray(v, dtype=dtype), (n,)).copy()

    start = np.zeros(n, bool)
    start[:1] = True
    loss_at = np.array([a for a, _, _ in losses], np.int64)
    loss_t = np.array([x for _, x, _ in losses], float)
    congestion = np.array([c for _, _, c in losses], bool)
    out = westwood_kernel(
        start,
        t,
        t,
        column(size),
        column(new, bool),
        column(s),
        column(srtt),
        column(rttvar),
        column(rtt_min),
        loss_at,
        loss_t,
        congestion,
        abse,
        tau,
        beta,
        N,
        history,
        initial_window,
        max_window,
        min_rto,
        lda_in_slow_start,
        True,
    )
    return dict(zip(KEYS, out, strict=True))


# --- the ERE filter (paper 004 eq. 1) ---


def test_alpha_is_tustins_coefficient_clamped_at_zero():
    assert ere_alpha(1.0, 0.5) == pytest.approx(1.5 / 2.5)  # (2τ − Δt)/(2τ + Δt)
    assert ere_alpha(0.1, 0.05) == pytest.approx(0.6)
    assert ere_alpha(1.0, 1e-9) == pytest.approx(1.0)  # a short interval keeps the estimate
    assert ere_alpha(1.0, 2.0) == 0.0  # Δt = 2τ: the sample alone
    assert ere_alpha(1.0, 3.0) == 0.0  # Tustin would give −0.2: clamped, no negative ERE


def test_be_samples_and_filter_on_a_hand_worked_ack_series():
    # τ = 0.1 s; ACKs at 0, 0.05, 0.1, 0.2, 0.2 (the same instant), 0.5 s
    r = kernel([0.0, 0.05, 0.1, 0.2, 0.2, 0.5], [100, 100, 200, 100, 100, 300], tau=0.1)
    assert np.isnan(r["ere"][0]) and np.isnan(r["sample"][0])  # no ACK pair yet
    # d/Δt = 100/0.05 = 2000 B/s; the first sample is the estimate (no filter step)
    assert r["sample"][1] == pytest.approx(2000) and r["ere"][1] == pytest.approx(2000)
    assert np.isnan(r["alpha"][1])
    # 200/0.05 = 4000; α = (0.2 − 0.05)/(0.2 + 0.05) = 0.6; 0.6·2000 + 0.4·4000 = 2800
    assert r["sample"][2] == pytest.approx(4000)
    assert r["alpha"][2] == pytest.approx(0.6)
    assert r["ere"][2] == pytest.approx(2800)
    # 100/0.1 = 1000; α = 0.1/0.3 = 1/3; 2800/3 + 2/3·1000 = 1600
    assert r["alpha"][3] == pytest.approx(1 / 3)
    assert r["ere"][3] == pytest.approx(1600)
    # the second ACK at 0.2 s joins the first: one cumulative ACK of 200 B over Δt = 0.1,
    # filtered from the state before the group: 2800/3 + 2/3·2000 = 6800/3
    assert r["sample"][4] == pytest.approx(2000)
    assert r["ere"][4] == pytest.approx(6800 / 3)
    assert r["T"][4] == pytest.approx(0.1) and r["tau"][4] == 0.1
    # Δt = 0.3 > 2τ: α clamps at 0 and the estimate is the sample 300/0.3 = 1000
    assert r["alpha"][5] == 0.0 and r["ere"][5] == pytest.approx(1000)


def test_duplicates_count_as_delivered_bytes_and_do_not_grow_the_window():
    grow = kernel([0.0, 0.05, 0.1], new=True, initial_window=2.0)
    still = kernel([0.0, 0.05, 0.1], new=False, initial_window=2.0)
    np.testing.assert_array_equal(grow["ere"], still["ere"])  # 100 B per ACK either way
    assert grow["cwnd"].tolist() == [3, 4, 5] and still["cwnd"].tolist() == [2, 2, 2]


# --- ABSE: adaptive sampling interval (eqs. 2-4) and adaptive τ (eqs. 5-6) ---


def test_abse_interval_eqs_2_and_3():
    # ŝ·RTT_min/s = 5000·0.05/100 = 2.5 segments < cwin = 4: T = RTT·(4 − 2.5)/4 = 0.0375
    assert abse_interval(0.02, 0.1, 0.05, 5000.0, 4.0, 100.0) == pytest.approx(0.0375)
    # eq. 3's form gives the same: RTT·(cwin/RTT_min − ŝ/s)/(cwin/RTT_min) = 0.1·(80 − 50)/80
    assert abse_interval(0.02, 0.1, 0.05, 5000.0, 4.0, 100.0) == pytest.approx(0.1 * (80 - 50) / 80)
    # ŝ·RTT_min ≥ cwin (8000·0.05/100 = 4): no congestion, T_min = the ACK inter-arrival
    assert abse_interval(0.02, 0.1, 0.05, 8000.0, 4.0, 100.0) == 0.02
    # T never falls below the ACK inter-arrival; no estimate yet: T_min
    assert abse_interval(0.05, 0.1, 0.05, 5000.0, 4.0, 100.0) == 0.05
    assert abse_interval(0.02, 0.1, 0.05, math.nan, 4.0, 100.0) == 0.02


def test_abse_sampling_and_tau_adaptation_by_hand():
    # s = 100 B, cwin = 4 (duplicates: it stays), RTT = 0.1, RTT_min = 0.05, β = 0.6, N = 10
    r = kernel([0.0, 0.02, 0.04, 0.06], abse=True)
    # k = 1: no estimate before it → T = Δt = 0.02, s = 100/0.02 = 5000, U = 0, τ = RTT
    assert r["T"][1] == pytest.approx(0.02) and r["sample"][1] == pytest.approx(5000)
    assert r["U"][1] == 0.0 and r["tau"][1] == pytest.approx(0.1) and r["ere"][1] == pytest.approx(5000)
    # k = 2: 5000·0.05/100 = 2.5 < 4 → T = 0.1·1.5/4 = 0.0375; ACKs in (0.0025, 0.04]: 2 → 200 B
    s2 = 200 / 0.0375
    assert r["T"][2] == pytest.approx(0.0375) and r["sample"][2] == pytest.approx(s2)
    u2 = 0.4 * (s2 - 5000)  # eq. 5 from U = 0
    assert r["U"][2] == pytest.approx(u2)
    assert r["tau"][2] == pytest.approx(0.1 + 10 * 0.1 * 1.0)  # U_2 is the largest: τ = 11·RTT
    a2 = (2 * 1.1 - 0.02) / (2 * 1.1 + 0.02)
    e2 = a2 * 5000 + (1 - a2) * s2
    assert r["alpha"][2] == pytest.approx(a2) and r["ere"][2] == pytest.approx(e2)
    # k = 3: T = 0.1·(4 − e2·0.05/100)/4; ACKs in (0.06 − T, 0.06]: 0.04 and 0.06 → 200 B
    T3 = 0.1 * (4 - e2 * 0.05 / 100) / 4
    s3 = 200 / T3
    u3 = 0.6 * u2 + 0.4 * abs(s3 - s2)
    tau3 = 0.1 + 10 * 0.1 * u3 / max(u3, u2)
    a3 = (2 * tau3 - 0.02) / (2 * tau3 + 0.02)
    assert r["T"][3] == pytest.approx(T3) and r["sample"][3] == pytest.approx(s3)
    assert r["U"][3] == pytest.approx(u3) and u3 < u2 and r["tau"][3] == pytest.approx(tau3)
    assert r["ere"][3] == pytest.approx(a3 * e2 + (1 - a3) * s3)


def test_abse_sampling_window_excludes_its_left_edge():
    # dyadic: s = 100, cwin = 4, RTT = 0.5, RTT_min = 0.25; ACKs every 0.125 s
    r = kernel([0.0, 0.125, 0.25, 0.375], abse=True, srtt=0.5, rtt_min=0.25)
    assert r["ere"][1] == 800.0  # 100/0.125
    # k = 2: 800·0.25/100 = 2 → T = 0.5·(4 − 2)/4 = 0.25; (0, 0.25] holds the ACKs at 0.125 and
    # 0.25 but not the one at 0 exactly: 200/0.25 = 800
    assert r["T"][2] == 0.25 and r["sample"][2] == 800.0
    assert r["U"][2] == 0.0 and r["tau"][2] == 0.5  # stable: τ = RTT
    assert r["alpha"][2] == pytest.approx((1.0 - 0.125) / (1.0 + 0.125)) and r["ere"][2] == 800.0


def test_abse_u_max_is_over_the_last_history_values():
    # steady ACKs every 0.01 s with one 0.0001 s spacing (k = 2): samples 1e4, 1e6, 1e4, 1e4, ...
    t = [0.0, 0.01, 0.0101, 0.0201, 0.0301, 0.0401, 0.0501, 0.0601]
    runs = {h: kernel(t, abse=True, rtt_min=1.0, history=h) for h in (10, 3, 2)}  # ŝ·RTT_min ≥ cwin
    r = runs[10]
    U = r["U"]
    assert (r["T"][1:] == np.diff(t)).all()  # no congestion: T_k = Δt_k
    assert r["sample"][2] == pytest.approx(1e6) and r["sample"][3] == pytest.approx(1e4)
    assert U[2] == pytest.approx(0.4 * (1e6 - 1e4))  # eq. 5, U_1 = 0
    assert U[3] == pytest.approx(0.6 * U[2] + 0.4 * (1e6 - 1e4))  # the way back counts too
    for k in range(4, 8):  # then U decays by β per ACK
        assert U[k] == pytest.approx(0.6 * U[k - 1], rel=1e-6) and U[k] < U[k - 1]
    # τ_k = RTT + N·RTT·U_k/U_max with U_max over the last `history` values (U_k included)
    for k in range(4, 8):
        assert r["tau"][k] == pytest.approx(0.1 + 1.0 * U[k] / U[3])  # U_3 is in all ten
        assert runs[2]["tau"][k] == pytest.approx(0.1 + 1.0 * U[k] / U[k - 1])
    assert runs[3]["tau"][5] == pytest.approx(0.1 + 1.0 * U[5] / U[3])  # U_3, U_4, U_5
    assert runs[3]["tau"][6] == pytest.approx(0.1 + 1.0 * U[6] / U[4])  # U_4, U_5, U_6
    assert r["tau"][1] == pytest.approx(0.1)  # U = U_max = 0: τ = RTT


def test_abse_takes_no_sample_before_the_sender_has_an_rtt():
    r = kernel([0.0, 0.02, 0.04, 0.06], abse=True, srtt=[math.nan, math.nan, 0.1, 0.1])
    assert np.isnan(r["ere"][:2]).all() and np.isnan(r["rate"][:2]).all()
    # the first sample once the RTT is known initialises the estimate: 100/0.02
    assert r["ere"][2] == pytest.approx(5000) and np.isnan(r["alpha"][2])
    # BE needs no RTT for its samples
    assert kernel([0.0, 0.02], srtt=math.nan)["ere"][1] == pytest.approx(5000)


# --- the window (paper 004 §2; paper 003 §3.2 with an LDA) ---

STEADY = [k / 20 for k in range(6)]  # 100 B every 0.05 s: ERE = 2000 B/s; STEADY[5] = 0.25


def test_congestion_loss_sets_ssthresh_from_the_estimate():
    # ssthresh = ERE·RTT_min/seg = 2000·0.25/100 = 5; cwin = min(10, 5)
    r = kernel(STEADY, rtt_min=0.25, initial_window=10.0, losses=[(5, 0.24, True)])
    assert r["ere"][5] == pytest.approx(2000)
    assert r["ssthresh"][5] == pytest.approx(5.0) and r["cwnd"][5] == pytest.approx(5.0)
    assert r["cwnd"][4] == 10.0 and np.isinf(r["ssthresh"][4])
    # cwin below ssthresh stays (it is not raised)
    low = kernel(STEADY, rtt_min=0.25, initial_window=3.0, losses=[(5, 0.24, True)])
    assert low["ssthresh"][5] == pytest.approx(5.0) and low["cwnd"][5] == 3.0
    # the floor of 2 segments: 2000·0.05/100 = 1
    floor = kernel(STEADY, rtt_min=0.05, initial_window=10.0, losses=[(5, 0.24, True)])
    assert floor["ssthresh"][5] == 2.0 and floor["cwnd"][5] == 2.0
    # rate = usable window · s / srtt: 5·100/0.1
    assert r["rate"][5] == pytest.approx(5000.0)
    capped = kernel(STEADY, rtt_min=0.25, initial_window=10.0, max_window=3.0)
    assert capped["rate"][5] == pytest.approx(3000.0)


def test_a_loss_called_wireless_keeps_the_window():
    r = kernel(STEADY, rtt_min=0.25, initial_window=10.0, losses=[(5, 0.24, False)])
    assert r["cwnd"][5] == 10.0 and np.isinf(r["ssthresh"][5])


def test_paper_003_consults_the_lda_only_in_congestion_avoidance():
    # slow start (cwnd < ssthresh = ∞): with lda_in_slow_start=False a wireless call still acts
    ss = kernel(STEADY, rtt_min=0.25, initial_window=10.0, losses=[(5, 0.24, False)], lda_in_slow_start=False)
    assert ss["cwnd"][5] == pytest.approx(5.0)
    # in congestion avoidance (after a first reduction, cwnd = ssthresh) it keeps the window
    losses = [(3, 0.14, True), (5, 0.24 + 0.2, False)]  # 0.3 s apart: more than srtt
    ca = kernel(STEADY, rtt_min=0.25, initial_window=10.0, losses=losses, lda_in_slow_start=False)
    assert ca["cwnd"][3] == pytest.approx(5.0) and ca["cwnd"][5] == pytest.approx(5.0)
    assert ca["ssthresh"][5] == pytest.approx(5.0)


def test_one_reduction_per_window_of_data():
    # the first loss at nominal time 0.1 reduces; one at 0.1 + srtt joins it; a later one acts
    big = {"rtt_min": 0.25, "initial_window": 10.0, "new": True}
    same = kernel(STEADY, losses=[(2, 0.1, True), (5, 0.2, True)], **big)
    # at arrival 2: cwnd 10 + 3 slow-start ACKs = 13 → ssthresh 2000·0.25/100 = 5
    assert same["cwnd"][2] == pytest.approx(5.0)
    assert same["cwnd"][5] == pytest.approx(5 + 1 / 5 + 1 / (5 + 1 / 5) + 1 / (5 + 1 / 5 + 1 / (5 + 1 / 5)))
    later = kernel(STEADY, losses=[(2, 0.1, True), (5, 0.2 + 1e-9, True)], **big)
    assert later["cwnd"][5] == pytest.approx(5.0)


def test_a_silence_longer_than_the_rto_is_a_timeout():
    # RTO = max(min_rto, srtt + 4·rttvar) = 0.5; the estimate before the silence is 2000 B/s
    t = STEADY + [0.25 + 0.5]
    quiet = kernel(t, rtt_min=0.25, min_rto=0.5, initial_window=10.0)
    assert quiet["cwnd"][6] == 10.0 and np.isinf(quiet["ssthresh"][6])
    t = STEADY + [0.25 + 0.5 + 2**-20]
    out = kernel(t, rtt_min=0.25, min_rto=0.5, initial_window=10.0)
    # ssthresh = ERE·RTT_min/seg from the estimate when the timer fired: 2000·0.25/100 = 5;
    # cwin = 1 (a duplicate: no growth)
    assert out["cwnd"][6] == 1.0 and out["ssthresh"][6] == pytest.approx(5.0)
    grown = kernel(t, rtt_min=0.25, min_rto=0.5, initial_window=10.0, new=True)
    assert grown["cwnd"][6] == 2.0  # then this ACK: slow start again
    floor = kernel(t, rtt_min=0.05, min_rto=0.5, initial_window=10.0)
    assert floor["ssthresh"][6] == 2.0  # 2000·0.05/100 = 1 → the paper's floor of 2


def test_without_an_estimate_the_reductions_fall_back_to_halving():
    # the flow's first ACK decides a congestion loss: no ACK pair, no ERE → max(W/2, 2)
    r = kernel([0.0, 0.05], initial_window=10.0, losses=[(0, -0.01, True)])
    assert np.isnan(r["ere"][0]) and r["ssthresh"][0] == 5.0 and r["cwnd"][0] == 5.0
    # a timeout at the second ACK, still without an estimate: max(10/2, 2); cwin = 1
    t = kernel([0.0, 1.5], initial_window=10.0)
    assert t["ssthresh"][1] == 5.0 and t["cwnd"][1] == 1.0


# --- properties ---


@settings(max_examples=40, deadline=None)
@given(
    d=st.sampled_from([40.0, 100.0, 1500.0]),
    gap=st.floats(1e-4, 0.05),
    before=st.floats(0.1, 10.0),
    abse=st.booleans(),
    window=st.sampled_from([1.0, 4.0, 40.0, 400.0]),
)
def test_a_constant_rate_ack_stream_drives_the_estimate_to_its_rate(d, gap, before, abse, window):
    """After 40 ACKs at another rate (``before`` × the final one), ACKs of d bytes every ``gap``
    seconds for 40 filter time constants (τ = 0.1 s; ABSE's τ_k ≤ (1 + N)·RTT = 1.1 s): ERE
    converges to d/gap. BE's samples are d/gap exactly; ABSE's count ⌈T_k/gap⌉ ACKs over T_k
    (cwin ≤ ŝ·RTT_min/s: T_k = gap, exact; else up to RTT), so they exceed d/gap by < gap/T_k."""
    rate = d / gap
    first = np.arange(40) * gap / before
    span = 40 * (1.1 if abse else 0.1)
    t = np.concatenate([first, first[-1] + gap * np.arange(1, int(span / gap) + 2)])
    r = kernel(t, d, abse=abse, s=d, srtt=0.1, rtt_min=0.1, initial_window=window, tau=0.1)
    ere = r["ere"][-1]
    if abse and window > 0.1 / gap:  # congested: ⌈T_k/gap⌉ ACKs in each sample
        slack = gap / np.min(r["T"][40:])
        assert rate * (1 - 1e-6) <= ere <= rate * (1 + slack + 1e-6)
    else:
        assert ere == pytest.approx(rate, rel=1e-6)


@settings(max_examples=200, deadline=None)
@given(
    t=st.lists(st.integers(0, 8), max_size=25).map(sorted),
    th=st.integers(-1, 9).map(lambda x: x + 0.5) | st.integers(-1, 9).map(float),
    bounds=st.tuples(st.integers(0, 25), st.integers(0, 25)),
    guess=st.integers(-3, 30),
)
def test_first_after_is_a_plain_scan(t, th, bounds, guess):
    t = np.asarray(t, dtype=float)
    lo, hi = sorted(min(b, len(t)) for b in bounds)
    want = next((j for j in range(lo, hi) if t[j] > th), hi)
    assert first_after(t, th, lo, hi, guess) == want


# --- through the public API ---


def westwood(table, name, lda="omniscient", **params):
    return controller_state(table, get_controller(name, **params), lda).set_index("seq")


@pytest.mark.parametrize("name", ["westwood_be", "westwood_abse"])
def test_replay_on_a_paced_flow_by_hand(name):
    # 100 B every UNIT = 2^-6 s, RTT 2^-3 s: every ACK-pair sample is 6400 B/s
    st_ = westwood(paced_flow(60, {20: "wireless", 40: "congestion"}), name)
    if name == "westwood_be":
        assert st_["ere_bps"][19] == pytest.approx(6400 * 8)
    else:  # slow start has cwin (21) above ŝ·RTT_min/s (8): T_k > Δt and ⌈T_k/Δt⌉ ACKs per sample
        assert (st_["T_k"].loc[10:19] > UNIT).all() and (st_["ere_bps"].loc[10:19] > 6400 * 8).all()
    # the wireless loss (decided at seq 21) keeps the slow-start window: 2 + 20 + 1
    assert st_["cwnd"][21] == 23.0 and np.isinf(st_["ssthresh"][21])
    # the congestion loss (at seq 41): ssthresh = ERE·RTT_min/seg with the estimate at seq 41
    ere = st_["ere_bps"][41] / 8
    assert st_["ssthresh"][41] == pytest.approx(max(ere * 0.125 / 100, 2.0))
    assert st_["cwnd"][41] == pytest.approx(min(st_["cwnd"][39] + 1, st_["ssthresh"][41]))
    assert st_["rate_bps"][41] == pytest.approx(st_["cwnd"][41] * 100 / 0.125 * 8)
    # fed the unaware decisions, the radio loss reduces too: plain Westwood
    plain = westwood(paced_flow(60, {20: "wireless"}), name, "unaware")
    assert plain["cwnd"][21] == pytest.approx(plain["ssthresh"][21]) and plain["cwnd"][21] < 23


def test_be_reduction_on_a_paced_flow_worked_by_hand():
    # at seq 21 the last ACK pair spans seq 19 → 21: 100 B over 2^-5 s = 3200 B/s;
    # α = (2 − 2^-5)/(2 + 2^-5) = 63/65 → ERE = 6400·63/65 + 3200·2/65 = 6400·64/65;
    # ssthresh = ERE·0.125/100 = 512/65 segments; cwin = min(23, 512/65)
    st_ = westwood(paced_flow(60, {20: "congestion"}), "westwood_be")
    assert st_["ere_bps"][21] == pytest.approx(6400 * 64 / 65 * 8)
    assert st_["ssthresh"][21] == pytest.approx(512 / 65) and st_["cwnd"][21] == pytest.approx(512 / 65)


def test_the_timeout_through_the_public_api():
    quiet = westwood(paced_flow(40, pause_after=19, pause=0.5 - UNIT), "westwood_be", min_rto=0.5)
    assert np.isinf(quiet["ssthresh"]).all()
    out = westwood(paced_flow(40, pause_after=19, pause=0.5), "westwood_be", min_rto=0.5)
    assert out["cwnd"][20] == 2.0  # cwnd 1, then this arrival's ACK
    assert out["ssthresh"][20] == pytest.approx(6400 * 0.125 / 100)  # the estimate before the silence


def test_run_gives_bits_per_second_and_lazy_state():
    from ldanalyze.control import Signals

    sig = Signals.of(paced_flow(30, {10: "congestion"}))
    congestion = np.ones(len(sig.loss_at), bool)
    for name, extra in (("westwood_be", ()), ("westwood_abse", ("U_k_bps",))):
        rate, state = get_controller(name).run(sig, congestion)
        assert list(state) == ["ere_bps", "sample_bps", "alpha", "T_k", "tau_k", *extra, "cwnd", "ssthresh", "srtt"]
        np.testing.assert_allclose(rate, state["cwnd"] * sig.s / sig.srtt * 8)
        assert len(state["tau_k"]) == len(rate)
        with pytest.raises(KeyError):
            state["nope"]
        again, _ = get_controller(name).run(sig, congestion)
        np.testing.assert_array_equal(rate, again)  # deterministic


def test_empty_input():
    r = kernel([])
    assert all(len(v) == 0 for v in r.values())


def test_registry_specs_and_parameter_checks():
    assert REGISTRY["westwood_be"]().tau == 1.0
    abse = REGISTRY["westwood_abse"]()
    assert (abse.beta, abse.N, abse.history) == (0.6, 10.0, 10)
    [c] = parse_controllers("westwood_abse:N=5:history=3:lda_in_slow_start=false")
    assert (c.N, c.history, c.lda_in_slow_start) == (5, 3, False)
    assert parse_controllers(c.spec) == [c] and type(c)(**c.params()) == c
    for name, bad in (
        ("westwood_be", {"tau": 0}),
        ("westwood_abse", {"beta": 1.5}),
        ("westwood_abse", {"N": -1}),
        ("westwood_abse", {"history": 0}),
        ("westwood_abse", {"history": 2.5}),
        ("westwood_be", {"max_window": 0.5}),
        ("westwood_be", {"lda_in_slow_start": "yes"}),
        ("westwood_be", {"min_rto": 0}),
    ):
        with pytest.raises(UsageError, match=next(iter(bad))):
            get_controller(name, **bad)
