"""Hand-computed cases that pin every rule boundary of the LDAs (docs/ldas.md).

Times are dyadic (multiples of 1/64 s and the like) so that the boundaries are hit exactly in
floating point.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ldanalyze.errors import UsageError
from ldanalyze.lda import Replay, classify, get_lda, lda_state
from ldanalyze.packets import make_packet_table
from ldanalyze.timeline import build_timeline


def flow(*packets, clock="common"):
    """Timeline of one flow from (seq, t_send, t_recv or cause) tuples."""
    seq, t_send, t_recv, fate = [], [], [], []
    for s, ts, tr in packets:
        seq.append(s)
        t_send.append(ts)
        if isinstance(tr, str):
            t_recv.append(np.nan)
            fate.append(tr)
        else:
            t_recv.append(tr)
            fate.append("delivered")
    table = make_packet_table(
        flow=["1"] * len(seq), seq=seq, t_send=t_send, t_recv=t_recv, fate=fate, size=[1000] * len(seq)
    )
    tl = build_timeline(table)
    tl.meta["clock"] = clock
    return tl


def decisions(tl, lda, **replay) -> list[str]:
    d = classify(tl, [lda], semantics=Replay(**replay))
    return d.sort_values("seq")["decision"].astype(str).tolist()


def spaced(t_gap, *, before=3, spacing=0.25, lost=1, cause="wireless", delay=1.0):
    """``before`` packets arriving ``spacing`` apart (T_min = spacing), then ``lost`` lost and
    the next arriving ``t_gap`` after the last one; sends are spacing apart too."""
    pk = [(i, i * spacing, i * spacing + delay) for i in range(before)]
    pk += [(before + i, (before + i) * spacing, cause) for i in range(lost)]
    last_recv = (before - 1) * spacing + delay
    k = before + lost
    pk.append((k, k * spacing, last_recv + t_gap))
    return flow(*pk)


# --- Biaz, mBiaz ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3])
def test_biaz_lower_bound_is_inclusive_upper_exclusive(n):
    biaz = get_lda("biaz")
    assert decisions(spaced((n + 1) * 0.25, lost=n), biaz) == ["wireless"] * n
    assert decisions(spaced((n + 2) * 0.25, lost=n), biaz) == ["congestion"] * n
    assert decisions(spaced((n + 1) * 0.25 - 2**-10, lost=n), biaz) == ["congestion"] * n
    assert decisions(spaced((n + 2) * 0.25 - 2**-10, lost=n), biaz) == ["wireless"] * n


def test_mbiaz_upper_limit_is_n_plus_1_25():
    mbiaz = get_lda("mbiaz")
    assert decisions(spaced(2.25 * 0.25), mbiaz) == ["congestion"]
    assert decisions(spaced(2.25 * 0.25 - 2**-10), mbiaz) == ["wireless"]
    assert decisions(spaced(2 * 0.25), mbiaz) == ["wireless"]
    assert decisions(spaced(2.25 * 0.25 - 2**-10), get_lda("mbiaz", upper=1.1)) == ["congestion"]


def test_biaz_is_congestion_before_any_tmin():
    # the gap comes at the second arrival: no two consecutive in-sequence arrivals yet
    assert decisions(spaced(0.5, before=1), get_lda("biaz")) == ["congestion"]


def test_biaz_tmin_is_updated_on_every_arrival_and_only_from_consecutive_sequence():
    # spacing 0.5 until seq 3; then one lost, the gap is revealed 1.0 later (= 2·0.5: wireless)
    pk = [(0, 0, 1), (1, 0.5, 1.5), (2, 1.0, 2.0), (3, 1.5, "wireless"), (4, 2.0, 3.0)]
    assert decisions(flow(*pk), get_lda("biaz")) == ["wireless"]
    # a non-consecutive pair 0.25 apart (seq 0 → 2) must not lower T_min
    pk2 = [
        (0, 0, 1),
        (2, 0.25, 1.25),
        (1, 0.3, "congestion"),
        (3, 0.75, 1.75),
        (4, 1.25, 2.25),
        (5, 1.5, "wireless"),
        (6, 2.0, 3.25),
    ]
    assert decisions(flow(*pk2), get_lda("biaz"))[-1] == "wireless"


# --- WIN-LDA+ ---------------------------------------------------------------------------------


def test_win_ldaplus_bounds_both_inclusive_and_observation_period():
    win = get_lda("win_ldaplus", T_obs=0.5)
    assert decisions(spaced(3 * 0.25), win) == ["wireless"]  # (n+2)·T_min is in
    assert decisions(spaced(3 * 0.25 + 2**-10), win) == ["congestion"]
    assert decisions(spaced(2 * 0.25), win) == ["wireless"]
    # the same gap decided inside the observation period is congestion
    assert decisions(spaced(2 * 0.25), get_lda("win_ldaplus", T_obs=5.0)) == ["congestion"]


def test_win_ldaplus_freezes_tmin_after_observation():
    # T_min 0.5 learnt in the first second; later a 0.25 pair does not lower it
    pk = [(0, 0, 1), (1, 0.5, 1.5), (2, 1.0, 2.0), (3, 2.0, 2.75), (4, 2.25, 3.0), (5, 2.5, "wireless"), (6, 3.0, 4.0)]
    # T_i = 1.0 = 2·T_min(0.5) → wireless; with an unfrozen T_min 0.25 it would be 4·T_min → congestion
    assert decisions(flow(*pk), get_lda("win_ldaplus", T_obs=1.5)) == ["wireless"]
    assert decisions(flow(*pk), get_lda("biaz")) == ["congestion"]


# --- Spike, WRO-LDA+ --------------------------------------------------------------------------


def delays(*ds, lost_after=None, cause="congestion"):
    """Arrivals 1 s apart with the given one-way delays; one packet lost after index ``lost_after``."""
    pk, seq = [], 0
    for i, d in enumerate(ds):
        pk.append((seq, float(i), i + d))
        seq += 1
        if lost_after == i:
            pk.append((seq, i + 0.5, cause))
            seq += 1
    return flow(*pk)


def test_spike_enters_strictly_above_start_and_leaves_strictly_below_end():
    spike = get_lda("spike")  # alpha 1/2, beta 1/3; range 0..0.75 → start 0.375, end 0.25
    # the revealing packet's delay equals start: not entered → wireless
    assert decisions(delays(0.0, 0.75, 0.0, 0.375, lost_after=2), spike) == ["wireless"]
    assert decisions(delays(0.0, 0.75, 0.0, 0.375 + 2**-10, lost_after=2), spike) == ["congestion"]
    # in spike (0.75 entered it); a delay equal to end keeps it, below leaves it
    assert decisions(delays(0.0, 0.75, 0.25, lost_after=1), spike) == ["congestion"]
    assert decisions(delays(0.0, 0.75, 0.25 - 2**-10, lost_after=1), spike) == ["wireless"]


def test_wro_ldaplus_is_inclusive_and_keeps_state_in_between():
    wro = get_lda("wro_ldaplus")
    assert decisions(delays(0.0, 0.75, 0.0, 0.375, lost_after=2), wro) == ["congestion"]  # = start → C
    assert decisions(delays(0.0, 0.75, 0.25, lost_after=1), wro) == ["wireless"]  # = end → U
    assert decisions(delays(0.0, 0.75, 0.3, lost_after=1), wro) == ["congestion"]  # between: keep C
    assert decisions(delays(0.0, 0.75, 0.0, 0.3, lost_after=2), wro) == ["wireless"]  # between: keep U


def test_spike_state_trace():
    st = lda_state(delays(0.0, 0.75, 0.5, 0.2, 0.3), "spike")
    assert st["congested"].tolist() == [False, True, True, False, False]
    assert st["start_threshold"].tolist()[1] == 0.375


# --- ZigZag -----------------------------------------------------------------------------------


@pytest.mark.parametrize("n, threshold", [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (6, 0.75)])
def test_zigzag_threshold_per_burst_length(n, threshold):
    # alpha 1/2: after delays 0, 1 → mean 0.5, dev 0.5 (dev with the updated mean, gain 2·alpha)
    zz = get_lda("zigzag", alpha=0.5)

    def case(d_rev):
        pk = [(0, 0.0, 0.0), (1, 1.0, 2.0)] + [(2 + i, 1.5, "wireless") for i in range(n)]
        pk.append((2 + n, 3.0, 3.0 + d_rev))
        return decisions(flow(*pk), zz, update_first=False)

    assert case(threshold) == ["congestion"] * n
    assert case(threshold - 2**-10) == ["wireless"] * n


def test_zigzag_dev_factors_parameter_and_update_first():
    pk = [(0, 0.0, 0.0), (1, 1.0, 2.0), (2, 1.5, "wireless"), (3, 3.0, 3.25)]
    # update first: delays 0, 1, 0.25 → mean 0.375, dev 0.25 → n=1 threshold 0.125 → congestion
    assert decisions(flow(*pk), get_lda("zigzag", alpha=0.5)) == ["congestion"]
    assert decisions(flow(*pk), get_lda("zigzag", alpha=0.5, dev_factors=(0.0, 0, 0, 0))) == ["wireless"]
    st = lda_state(flow(*pk), "zigzag:alpha=0.5")
    assert st["mean"].tolist() == [0.0, 0.5, 0.375] and st["dev"].tolist() == [0.0, 0.5, 0.125]


def test_gap_delay_previous_uses_p_i():
    pk = [(0, 0.0, 0.0), (1, 1.0, 2.0)] + [(s, 1.5, "wireless") for s in (2, 3, 4, 5)] + [(6, 3.0, 3.0)]
    zz = get_lda("zigzag", alpha=0.5)
    # delays 0, 1, 0 → mean 0.25, dev 0.25; n = 4: threshold mean + dev/2 = 0.375
    assert decisions(flow(*pk), zz) == ["wireless"] * 4  # the revealing packet's delay 0
    assert decisions(flow(*pk), zz, gap_delay="previous") == ["congestion"] * 4  # P_i's delay 1


# --- ZBS --------------------------------------------------------------------------------------


def steady(count, spacing, extra_delay=2**-6):
    """One flow, sent and received every ``spacing`` s; the first packet is the fastest."""
    return [(i, i * spacing, i * spacing + 0.5 + (extra_delay if i else 0.0)) for i in range(count)]


def test_zbs_locks_50_packets_then_uses_mbiaz_when_tnarr_is_1():
    st = lda_state(flow(*steady(60, 2**-5)), "zbs")
    scheme = st["scheme"].astype(str).tolist()
    assert scheme[:50] == ["zigzag"] * 50  # 49 arrivals in < 3 s: still locked
    assert scheme[50:] == ["mbiaz"] * 10
    assert st["T_narr"].iloc[-1] == pytest.approx(1.0, abs=1e-3)  # the EWMA forgets the first 1.5


def test_zbs_lock_expires_after_3_seconds_and_spike_near_minimum_delay():
    pk = [(i, i * 0.25, i * 0.25 + 0.5) for i in range(20)]  # constant delay: rott at its minimum
    scheme = lda_state(flow(*pk), "zbs")["scheme"].astype(str).tolist()
    assert scheme[:12] == ["zigzag"] * 12 and scheme[12:] == ["spike"] * 8  # t = 3.0 at index 12


def test_zbs_reports_scheme_and_usage():
    pk = steady(60, 2**-5) + [(60, 60 * 2**-5, "wireless"), (61, 61 * 2**-5, 61 * 2**-5 + 0.5 + 2**-6)]
    tl = flow(*pk)
    d = classify(tl, ["zbs", "mbiaz"])
    assert d["scheme"].tolist() == ["mbiaz", ""]
    assert d["decision"].astype(str).tolist() == ["wireless", "wireless"]
    usage = get_lda("zbs").usage(tl)
    assert usage[["zigzag", "mbiaz", "spike"]].sum(axis=1).iloc[0] == pytest.approx(1.0)
    # mBiaz from arrival 50 to the last: 11 spacings of 2^-5 out of 61·2^-5 + 2^-6
    assert usage["mbiaz"].iloc[0] == pytest.approx(11 / 61.5, abs=1e-12)


# --- adaptive RTT -----------------------------------------------------------------------------


def test_adaptive_rtt_equation_2_boundary():
    # classify-first: one sample x = 1 → Tbar 1, Tdev 0.5, T_p 1 → threshold 1 + 0.5·(2·1 − 1) = 1.5
    lda = get_lda("adaptive_rtt", delay="owd")

    def case(d):
        return decisions(flow((0, 0.0, 1.0), (1, 0.5, "congestion"), (2, 1.0, 1.0 + d)), lda, update_first=False)

    assert case(1.5) == ["wireless"]
    assert case(1.5 + 2**-10) == ["congestion"]


def test_adaptive_rtt_needs_absolute_delay():
    tl = flow((0, 0.0, 1.0), (1, 0.5, "congestion"), (2, 1.0, 2.0), clock="separate")
    with pytest.raises(UsageError, match="propagation_delay"):
        classify(tl, ["adaptive_rtt"])
    with pytest.raises(UsageError, match="one clock"):
        classify(tl, ['adaptive_rtt:delay="owd"'])
    d = classify(tl, [get_lda("adaptive_rtt", propagation_delay=0.5)])
    # x = 0.5 then 0.5 + 0 (the min moved to... no: delays 1, 1) → T = 0.5 ≤ threshold → wireless
    assert d["decision"].astype(str).tolist() == ["wireless"]


def test_adaptive_rtt_uses_rtt_samples_before_the_loss():
    tl = flow((0, 0.0, 1.0), (1, 0.5, "congestion"), (2, 1.0, 2.0))
    tl.rtt = pd.DataFrame({"flow": ["1", "1", "1"], "t": [0.5, 1.5, 2.5], "seq": [0, 0, 2], "rtt": [1.0, 4.0, 1.0]})
    # at t = 2.0 the samples are 1 then 4: Tdev = 0.375 + 0.75 = 1.125, Tbar = 1.375, T_p = 1;
    # threshold = 1.375 + 1.125·(2·(1/1.375)² − 1) < 4 → congestion
    assert decisions(tl, get_lda("adaptive_rtt")) == ["congestion"]
    tl.rtt = tl.rtt.assign(rtt=[1.0, 1.0, 4.0])  # the 4 comes after the loss: not seen
    assert decisions(tl, get_lda("adaptive_rtt")) == ["wireless"]


# --- XRTP -------------------------------------------------------------------------------------


def test_xrtp_positive_then_negative_jitter_is_congestion():
    # delays rise 0 → 0.25 → 0.5 (two positive jitters), then the revealing packet 0.25: negative
    tl = delays(0.0, 0.25, 0.5, 0.25, lost_after=2)
    assert decisions(tl, get_lda("xrtp")) == ["congestion"]
    # with three positive jitters required the jitter test fails; the position test then decides
    assert decisions(tl, get_lda("xrtp", positive_jitters=3, l1=8)) == ["wireless"]
    assert decisions(tl, get_lda("xrtp", positive_jitters=3, l1=2)) == ["congestion"]
    # one positive jitter only, low position → transmission loss
    tl2 = delays(0.5, 0.0, 0.25, 0.0, lost_after=2)
    assert decisions(tl2, get_lda("xrtp")) == ["wireless"]


def test_xrtp_position_test_needs_l1_over_deviation():
    # flat at 0 then a jump to 1 (over deviation), the gap revealed at 1 with jitter 0:
    # p = 1 ≥ 1/3; one over-deviation arrival → l1 = 1 says congestion, l1 = 2 wireless
    tl = delays(0.0, 0.0, 0.0, 1.0, 1.0, lost_after=3)
    assert decisions(tl, get_lda("xrtp", l1=1)) == ["congestion"]
    assert decisions(tl, get_lda("xrtp", l1=3)) == ["wireless"]
    assert decisions(tl, get_lda("xrtp", l1=1, threshold=1.0)) == ["congestion"]  # p = 1 ≥ 1


# --- shared semantics -------------------------------------------------------------------------


def test_detection_after_three_arrivals_and_undetected_at_the_end():
    pk = [
        (0, 0.0, 1.0),
        (1, 0.25, "congestion"),
        (2, 0.5, 1.5),
        (3, 0.75, 1.75),
        (4, 1.0, 2.0),
        (5, 1.25, "wireless"),
        (6, 1.5, 2.5),
        (7, 1.75, 2.75),
    ]
    d = classify(flow(*pk), ["unaware"], semantics=Replay(detection=3)).sort_values("seq")
    assert d["decision"].astype(str).tolist() == ["congestion", "undetected"]
    assert d["t_decide"].iloc[0] == 2.0


def test_classify_first_before_any_arrival_is_congestion():
    pk = [(0, 0.0, "wireless"), (1, 0.25, 1.25), (2, 0.5, 1.5)]
    for name in ("spike", "zigzag", "xrtp", "biaz"):
        assert decisions(flow(*pk), get_lda(name), update_first=False) == ["congestion"], name


def test_bad_replay_and_parameters_are_usage_errors():
    with pytest.raises(UsageError, match="gap_delay"):
        Replay(gap_delay="next")
    with pytest.raises(UsageError, match="detection"):
        Replay(detection=0)
    with pytest.raises(UsageError, match="unknown LDA"):
        get_lda("bias")
    with pytest.raises(UsageError, match="unknown parameter"):
        get_lda("spike", gamma=1)
    with pytest.raises(UsageError, match="alpha"):
        get_lda("spike", alpha=1 / 4, beta=1 / 3)


def test_the_old_keyword_replay_still_works_with_a_warning():
    """``classify(..., replay=)`` was renamed ``semantics=`` (it shadowed ``control.replay``):
    the old name gives the same table and says what to write; both names at once are refused."""
    pk = [(1, 0.0, 1.0), (2, 0.25, 1.25), (4, 0.75, 1.75), (5, 1.0, 2.0)]
    tl = flow(*pk)
    with pytest.warns(FutureWarning, match=r"classify\(replay=...\) is now classify\(semantics=...\)"):
        old = classify(tl, ["spike"], replay=Replay(detection=3))
    pd.testing.assert_frame_equal(old, classify(tl, ["spike"], semantics=Replay(detection=3)))
    with pytest.raises(UsageError, match="give semantics= only"):
        classify(tl, ["spike"], replay=Replay(), semantics=Replay())
