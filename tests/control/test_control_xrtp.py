"""XRTP rate control (paper 001 §III-B/C): every rule boundary worked out by hand, the linear-time
KDE against the O(n²) estimator, and the kernel against its plain twin."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.control import Signals, controller_state, get_controller, parse_controllers
from ldanalyze.control.xrtp import KDE_RTOL, Xrtp, kde_estimate, kde_push, kde_reference
from ldanalyze.errors import UsageError
from ldanalyze.packets import make_packet_table
from ldanalyze.timeline import build_timeline

from ..lda.test_lda_twins import timeline
from ..naive import control as naive_control
from ..support.strategies import packet_tables, rtt_samples
from .test_control_twins import VARIANTS, twin_inputs

UNIT = 2.0**-6  # pacing (s); every time below is dyadic, so every sum is exact
OWD = 2.0**-4  # constant one-way delay: on the common clock R = 2·OWD = 2^-3 exactly
GAP = 2.0**-10  # the pair_gap used by the hand cases
S = 128  # every packet's size (bytes), hence the segment size s


def flow(rows, clock="common"):
    """rows: (seq, t_send, t_recv or None, fate); one flow of S-byte packets."""
    table = make_packet_table(
        flow=["1"] * len(rows),
        seq=[r[0] for r in rows],
        uid=np.arange(len(rows)),
        t_send=[r[1] for r in rows],
        t_recv=[np.nan if r[2] is None else r[2] for r in rows],
        fate=[r[3] for r in rows],
        size=[S] * len(rows),
    )
    return dataclasses.replace(build_timeline(table), meta={"clock": clock})


def paced(n, lost=None, *, pair=None):
    """``n`` packets every UNIT, constant OWD, so every jitter is 0; ``lost`` maps seq → cause.
    ``pair`` = (seq, receive spacing): that packet is sent GAP after the one before it and
    received ``spacing`` after it (a packet-pair sample S/spacing; its jitter is spacing − GAP)."""
    lost = lost or {}
    rows = []
    for q in range(n):
        t = q * UNIT
        r = t + OWD
        if pair is not None and q == pair[0]:
            t = (q - 1) * UNIT + GAP
            r = (q - 1) * UNIT + OWD + pair[1]
        fate = lost.get(q, "delivered")
        rows.append((q, t, r if fate == "delivered" else None, fate))
    return flow(rows)


def state(table, lda="omniscient", **params):
    return controller_state(table, get_controller("xrtp", **params), lda).set_index("seq")


def pairs(samples, *, tail=4, lost=None):
    """Packet pairs giving the samples (B/s, each S/spacing with dyadic spacing): pair k is
    seq 2k, 2k+1, sent together at k·2^-2 s, the second received S/B later than the first,
    whose delay is OWD. The jitter of each pair's second packet is positive (S/B); of its
    first, negative. Then ``tail`` packets paced UNIT apart at delay OWD."""
    rows = []
    for k, b in enumerate(samples):
        t = k * 0.25
        rows += [(2 * k, t, t + OWD, "delivered"), (2 * k + 1, t, t + OWD + S / b, "delivered")]
    t0 = len(samples) * 0.25
    lost = lost or {}
    for j in range(tail):
        q = 2 * len(samples) + j
        fate = lost.get(q, "delivered")
        rows.append((q, t0 + j * UNIT, t0 + j * UNIT + OWD if fate == "delivered" else None, fate))
    return flow(rows)


# -- packet pairs ------------------------------------------------------------------------------


def test_a_pair_is_sent_at_most_pair_gap_apart_boundary_included():
    # seq 1 is sent exactly GAP after seq 0 and received 2^-8 s after it: B = 128 / 2^-8
    at = state(paced(12, pair=(1, 2.0**-8)), pair_gap=GAP)
    assert at["sample_bps"][1] == 128 * 2**8 * 8
    assert at["sample_bps"].notna().sum() == 1  # the paced packets (UNIT > GAP apart) are no pairs
    assert np.isnan(at["rate_bps"][0])  # no estimate before the first sample
    assert at["rate_bps"][1] == 128 * 2**8 * 8  # the first sample sets the rate
    # the same spacing is over a smaller pair_gap: no sample, no rate at all
    apart = state(paced(12, pair=(1, 2.0**-8)), pair_gap=GAP - 2.0**-20)
    assert apart["sample_bps"].isna().all() and apart["rate_bps"].isna().all()


def test_the_default_pair_gap_takes_simultaneous_sends_and_not_the_pacing():
    assert Xrtp().pair_gap == 0.0005
    at = state(pairs([1024.0]))
    assert at["sample_bps"].notna().sum() == 1 and at["sample_bps"][1] == 1024 * 8
    assert state(paced(12))["rate_bps"].isna().all()  # UNIT = 15.6 ms apart: never a pair


def test_a_pair_needs_consecutive_sequence_numbers_and_a_positive_receive_spacing():
    # seq 0 and 2 sent together, seq 1 lost in between: the pair (0, 2) is not consecutive
    gap = flow([(0, 0.0, OWD, "delivered"), (1, 0.0, None, "wireless"), (2, 0.0, OWD + 0.125, "delivered")])
    assert state(gap)["sample_bps"].isna().all()
    # two packets received at the same instant give no (infinite) sample
    same = flow([(0, 0.0, OWD, "delivered"), (1, 0.0, OWD, "delivered")])
    assert state(same)["sample_bps"].isna().all()
    # sent in the other order, within pair_gap: |t1s − t0s| counts
    swapped = flow([(0, GAP, OWD + GAP, "delivered"), (1, 0.0, OWD + GAP + 0.125, "delivered")])
    assert state(swapped, pair_gap=GAP)["sample_bps"][1] == 1024 * 8


def test_pairs_never_span_two_flows():
    one = make_packet_table(
        flow=["1", "2"],
        seq=[0, 1],
        uid=[0, 1],
        t_send=[0.0, 0.0],
        t_recv=[OWD, OWD + 0.125],
        fate=["delivered"] * 2,
        size=[S, S],
    )
    table = dataclasses.replace(build_timeline(one), meta={"clock": "common"})
    assert state(table)["sample_bps"].isna().all()


# -- the KDE (Fig. 2) --------------------------------------------------------------------------


def test_kde_on_a_hand_worked_window():
    # window 1000, 1100, 1000, 2000 B/s, width 0.25 (h(x) = x/4), n = 4, K(u) = max(0, 1 − |u|):
    #   at 1000 (h = 250): K(0) + K(−0.4) + K(0) + K(−4) = 1 + 0.6 + 1 + 0 = 2.6 → 2.6/(4·250)
    #   at 1100 (h = 275): K(100/275)·2 + K(0) + K(−900/275) = 2·(7/11) + 1 = 25/11 → /(4·275)
    #   at 2000 (h = 500): only itself: 1 → 1/(4·500)
    pdf, est = kde_reference([1000.0, 1100.0, 1000.0, 2000.0], 0.25)
    want = [Fraction(26, 10) / 1000, Fraction(25, 11) / 1100, Fraction(26, 10) / 1000, Fraction(1, 2000)]
    assert pdf.tolist() == pytest.approx([float(w) for w in want], rel=1e-14)
    # estimate Σ f·x / Σ f; f·x = count/(n·0.25) = count, so
    #   (2.6 + 25/11 + 2.6 + 1) / (2·2.6/1000 + 25/12100 + 1/2000) = (466/55) / (37588/4840000)
    #   = 10252000/9397 ≈ 1090.9865
    x = [1000, 1100, 1000, 2000]
    exact = sum(w * v for w, v in zip(want, x, strict=True)) / sum(want)
    assert est == pytest.approx(float(exact), rel=1e-14)
    assert est == pytest.approx(10252000 / 9397, rel=1e-14)  # the plain mean, 1275, follows 2000
    # the same window through Fig. 2's linear updates (one sample at a time, capacity 4)
    obs, dens = np.zeros(4), np.zeros(4)
    m = 0
    for v in x:
        m = kde_push(obs, dens, m, float(v), 0.25)
    assert dens.tolist() == pytest.approx(pdf.tolist(), rel=KDE_RTOL)
    assert kde_estimate(obs, dens, m) == pytest.approx(est, rel=KDE_RTOL)
    # a fifth sample pushes 1000 out: window 1100, 1000, 2000, 2000
    m = kde_push(obs, dens, m, 2000.0, 0.25)
    pdf5, est5 = kde_reference([1100.0, 1000.0, 2000.0, 2000.0], 0.25)
    assert m == 4 and obs.tolist() == [1100.0, 1000.0, 2000.0, 2000.0]
    assert dens.tolist() == pytest.approx(pdf5.tolist(), rel=KDE_RTOL)
    # at 1100: K(0) + K(100/275) = 1 + 7/11 = 18/11 → /(4·275); at 2000: 2/(4·500)
    assert dens[0] == pytest.approx(18 / 11 / 1100, rel=1e-14)
    assert dens[2] == pytest.approx(2 / 2000, rel=1e-14)
    assert kde_estimate(obs, dens, m) == pytest.approx(est5, rel=KDE_RTOL)


def test_kde_estimate_of_separate_samples_is_their_harmonic_mean():
    # no sample within another's kernel: every density is K(0)/(n·c·x), so Σ f·x / Σ f is the
    # harmonic mean: S over the mean receive spacing
    _, est = kde_reference([1000.0, 2000.0, 4000.0], 0.25)
    assert est == pytest.approx(3 / (1 / 1000 + 1 / 2000 + 1 / 4000), rel=1e-14)


bandwidths = st.one_of(
    st.floats(1e2, 1e9, allow_nan=False, allow_infinity=False),
    st.sampled_from([1000.0, 1000.0, 1100.0, 1250.0, 2000.0, 1e6]),  # repeats and kernel edges
)


@settings(max_examples=300, deadline=None)
@given(samples=st.lists(bandwidths, min_size=1, max_size=40), n=st.integers(1, 12), width=st.floats(0.01, 3.0))
def test_linear_kde_agrees_with_the_quadratic_one(samples, n, width):
    """Fig. 2's O(n) update and the O(n²) estimator agree within KDE_RTOL after every sample."""
    obs, pdf = np.zeros(n), np.zeros(n)
    m = 0
    for k, x in enumerate(samples):
        m = kde_push(obs, pdf, m, x, width)
        window = samples[max(0, k + 1 - n) : k + 1]
        assert obs[:m].tolist() == window
        ref_pdf, ref_est = kde_reference(window, width, n)
        np.testing.assert_allclose(pdf[:m], ref_pdf, rtol=KDE_RTOL)
        assert kde_estimate(obs, pdf, m) == pytest.approx(ref_est, rel=KDE_RTOL)
        assert min(window) * (1 - 1e-12) <= kde_estimate(obs, pdf, m) <= max(window) * (1 + 1e-12)


# -- the rate: eq. 4, eq. 10, halving ----------------------------------------------------------


def test_eq4_ewma_of_the_kde_estimate():
    # samples 1024 then 2048 B/s: the second KDE estimate is their harmonic mean (no overlap),
    # 2/(1/1024 + 1/2048) = 4096/3; rate = 0.8·1024 + 0.2·4096/3
    at = state(pairs([1024.0, 2048.0]))
    rate = at["rate_bps"] / 8
    assert rate[1] == 1024.0
    assert at["estimate_bps"][3] / 8 == pytest.approx(4096 / 3)
    assert rate[3] == pytest.approx(0.8 * 1024 + 0.2 * 4096 / 3)
    assert rate[2] == 1024.0  # the first packet of the second pair changes nothing
    assert at["cut_bps"].isna().all()  # two positive jitters only: no eq. 10 yet


def test_ewma_only_estimator_takes_the_raw_samples():
    # Fig. 6's EWMA: rate = α·rate + (1 − α)·sample
    for alpha in (0.6, 0.8):
        at = state(pairs([1024.0, 2048.0]), estimator="ewma", alpha=alpha)
        assert at["rate_bps"][3] / 8 == pytest.approx(alpha * 1024 + (1 - alpha) * 2048)
    [ctl] = parse_controllers("xrtp:estimator=ewma:alpha=0.6")
    assert ctl == Xrtp(estimator="ewma", alpha=0.6)


def test_kde_filters_an_outlier_that_the_ewma_follows():
    # seven samples at 1024 B/s, then one at 4096 (a compressed pair); n = 8, width 0.25:
    #   the seven have density 7/(8·256), the outlier 1/(8·1024): the estimate is
    #   (7·7 + 1)/(7·7/1024 + 1/4096) = 50/(197/4096) = 204800/197 ≈ 1039.6
    samples = [1024.0] * 7 + [4096.0]
    kde = state(pairs(samples), jitters=100)  # no eq. 10 here
    assert kde["estimate_bps"][15] / 8 == pytest.approx(204800 / 197)
    assert kde["rate_bps"][15] / 8 == pytest.approx(0.8 * 1024 + 0.2 * 204800 / 197)
    ewma = state(pairs(samples), estimator="ewma", jitters=100)
    assert ewma["rate_bps"][15] / 8 == pytest.approx(0.8 * 1024 + 0.2 * 4096)


def test_eq10_cut_from_the_last_three_positive_jitters():
    # pairs at 1024, 2048, 512 B/s: the second packet of each has jitter S/B = 1/8, 1/16, 1/4 s
    # (the first of each is negative, the very first NaN). At the third pair the history is
    # full: cut = 3·s/(1/8 + 1/16 + 1/4) = 384/(7/16) = 877.71 B/s
    at = state(pairs([1024.0, 2048.0, 512.0]))
    assert np.isnan(at["cut_bps"][3])  # two positive jitters: no cut yet
    assert at["cut_bps"][5] / 8 == pytest.approx(384 * 16 / 7)
    # the rate before the cut: 0.8·(0.8·1024 + 0.2·4096/3) + 0.2·KDE(1024, 2048, 512), the KDE
    # being the samples' harmonic mean (no two within a factor 1.25), 877.71 = 1049.4 B/s
    kde3 = 3 / (1 / 1024 + 1 / 2048 + 1 / 512)
    before = 0.8 * (0.8 * 1024 + 0.2 * 4096 / 3) + 0.2 * kde3
    assert before > 384 * 16 / 7
    assert at["rate_bps"][5] / 8 == pytest.approx(384 * 16 / 7)  # the cut binds
    # ...and never raises: a larger cut leaves the rate alone (jitters in seconds: 3·s/Σ)
    fast = state(pairs([1024.0, 2048.0, 512.0]), jitters=1)
    # with one jitter the cut at each pair is s/jitter = the sample itself: 1024, 2048, 512
    assert fast["cut_bps"][1] / 8 == pytest.approx(1024.0)
    assert fast["rate_bps"][3] / 8 == pytest.approx(0.8 * 1024 + 0.2 * 4096 / 3)  # < 2048: kept


def test_eq10_keeps_only_the_last_three():
    # four pairs, jitters 1/8, 1/16, 1/4, 1/32: at the fourth the history is 1/16, 1/4, 1/32
    # (the first left): cut = 384/(11/32) = 1117.09 (the first three would give 877.71)
    at = state(pairs([1024.0, 2048.0, 512.0, 4096.0]))
    assert at["cut_bps"][7] / 8 == pytest.approx(384 * 32 / 11)
    # zero and negative jitters never enter it: the paced tail (jitter 0, one −) keeps the cut
    assert (at["cut_bps"].iloc[8:] == at["cut_bps"][7]).all()


def test_congestion_losses_halve_once_per_loss_event_and_wireless_ones_never():
    # the pair (0, 1) is sent and received GAP apart: sample S/GAP = 131072 B/s, and every
    # delay is OWD, so every jitter is 0 (no cut) and R = 2·OWD = 8·UNIT exactly
    b = S / GAP

    def run(lost, lda="omniscient", **params):
        return state(paced(40, lost, pair=(1, GAP)), lda, pair_gap=GAP, **params)["rate_bps"] / 8

    one = run({20: "congestion", 28: "congestion"})  # seq 28's nominal time is exactly R later
    assert one[19] == b
    assert one[21] == b / 2  # halved at the arrival that reveals seq 20
    assert one[39] == b / 2  # seq 28 joins the event (boundary included): no second halving
    assert run({20: "congestion", 29: "congestion"})[39] == b / 4  # 9·UNIT > R: a new event
    assert run({20: "congestion", 28: "congestion"}, halving="loss")[39] == b / 4
    burst = run({20: "congestion", 21: "congestion"}, halving="loss")
    assert burst[22] == b / 4  # one gap of two losses: two halvings per loss...
    assert run({20: "congestion", 21: "congestion"})[22] == b / 2  # ...one per event
    radio = run({20: "wireless", 29: "wireless"})
    assert (radio.iloc[1:] == b).all()  # wireless-decided losses never halve
    # the unaware LDA calls the radio losses congestion: they halve
    assert run({20: "wireless", 29: "wireless"}, "unaware")[39] == b / 4


def test_halving_before_the_first_sample_leaves_no_trace():
    # seq 3 lost (congestion) before the only pair (seq 8, 9): the rate starts at the sample
    rows = [(q, q * UNIT, q * UNIT + OWD, "delivered") for q in range(8) if q != 3]
    rows.insert(3, (3, 3 * UNIT, None, "congestion"))
    rows += [(8, 8 * UNIT, 8 * UNIT + OWD, "delivered"), (9, 8 * UNIT, 8 * UNIT + OWD + 0.125, "delivered")]
    at = state(flow(rows))
    assert at["rate_bps"].iloc[:-1].isna().all()
    assert at["rate_bps"][9] == 1024 * 8


def test_flows_start_afresh():
    a = make_packet_table(
        flow=["1", "1", "2", "2"],
        seq=[0, 1, 0, 1],
        uid=[0, 1, 2, 3],
        t_send=[0.0, 0.0, 0.0, 1.0],
        t_recv=[OWD, OWD + 0.125, OWD, 1 + OWD],
        fate=["delivered"] * 4,
        size=[S] * 4,
    )
    st_ = controller_state(
        dataclasses.replace(build_timeline(a), meta={"clock": "common"}), get_controller("xrtp"), "omniscient"
    )
    assert np.isnan(st_["rate_bps"].iloc[0]) and st_["rate_bps"].iloc[1] == 1024 * 8
    assert st_["rate_bps"].iloc[2:].isna().all()  # flow 2 has no pair: no rate


# -- contract: parameters, empty input, the twin ------------------------------------------------


def test_parameters_round_trip_and_bad_ones_are_refused():
    ctl = get_controller("xrtp")
    assert type(ctl)(**ctl.params()) == ctl
    assert parse_controllers(ctl.spec) == [ctl]
    numeric = get_controller("xrtp", alpha=0.6, n=4, width=0.5, pair_gap=0.001, jitters=2)
    assert parse_controllers(numeric.spec) == [numeric]
    assert parse_controllers("xrtp:estimator=ewma:halving=loss") == [Xrtp(estimator="ewma", halving="loss")]
    for bad, word in [
        ({"estimator": "mode"}, "estimator"),
        ({"halving": "rtt"}, "halving"),
        ({"alpha": 1.5}, "alpha"),
        ({"n": 0}, "n"),
        ({"n": 2.5}, "n"),
        ({"jitters": 0}, "jitters"),
        ({"width": 0}, "width"),
        ({"width": float("inf")}, "width"),
        ({"pair_gap": -1e-3}, "pair_gap"),
        ({"pair_gap": float("nan")}, "pair_gap"),
    ]:
        with pytest.raises(UsageError, match=word):
            get_controller("xrtp", **bad)


def test_empty_and_lossless_flows():
    nothing = flow([(0, 0.0, None, "unobserved")])  # no arrival at all
    sig = Signals.of(nothing)
    rate, extra = Xrtp().run(sig, np.zeros(len(sig.loss_at), bool))
    assert rate.shape == (0,) and all(v.shape == (0,) for v in extra.values())
    # no loss, zero jitter: the one sample's rate holds to the end
    at = state(paced(30, pair=(1, GAP)), pair_gap=GAP)
    assert (at["rate_bps"].iloc[1:] == S / GAP * 8).all()


def twin_inputs_with_send_times(sig, congestion):
    arrivals, losses = twin_inputs(sig, congestion)
    for a, t in zip(arrivals, sig.t_send.tolist(), strict=True):
        a["t_send"] = t
    return arrivals, losses


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_kernel_matches_the_twin(data):
    """As tests/control/test_control_twins.py, with the send times the twin needs for the pairs."""
    packets = data.draw(packet_tables(max_packets=120), label="packets")
    rtt = data.draw(rtt_samples(packets), label="rtt") if data.draw(st.booleans(), label="feedback") else ()
    sig = Signals.of(timeline(packets, rtt))
    congestion = np.array(
        data.draw(st.lists(st.booleans(), min_size=len(sig.loss_at), max_size=len(sig.loss_at))), dtype=bool
    )
    arrivals, losses = twin_inputs_with_send_times(sig, congestion)
    for params in VARIANTS["xrtp"]:
        want = np.asarray(naive_control.controller_xrtp(arrivals, losses, **params), dtype=float) * 8
        got, _ = get_controller("xrtp", **params).run(sig, congestion)
        np.testing.assert_allclose(got, want, rtol=1e-7, equal_nan=True, err_msg=str(params))
        again, _ = get_controller("xrtp", **params).run(sig, congestion)
        np.testing.assert_array_equal(got, again)  # deterministic
