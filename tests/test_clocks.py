"""Clock offset and skew (``ldanalyze/clocks.py``): the lower-envelope fit against its
brute-force LP twin, hand-computed cases, and the removal from traces."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.clocks import ClockWarning, fit_lower_envelope, remove_skew
from ldanalyze.errors import UsageError
from ldanalyze.io.capture.pcap import read_capture
from ldanalyze.packets import Trace, empty_rtt, make_packet_table

from .naive import clocks as naive_clocks
from .support.captures import T0, Endpoints, Record, ip_packet, link_frame, rtp_payload, write_pcap


def total_distance(t, d, fit):
    return float(np.sum(np.asarray(d) - fit.envelope(np.asarray(t))))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 50)), min_size=1, max_size=14))
def test_fit_is_the_lp_optimum(points):
    """Same optimum as the brute-force LP, and no point below the fitted line (integer grid
    points make collinear and tied cases common)."""
    epoch = np.array([0.1 * a for a, _ in points]) + 1.7e9  # epoch seconds, as captures give them
    d = [0.001 * b for _, b in points]
    fit = fit_lower_envelope(epoch, np.array(d))
    line = fit.envelope(epoch)
    assert np.all(np.array(d) >= line - 1e-9)
    best, _ = naive_clocks.lower_envelope_naive(list(epoch - epoch.min()), d)  # the times the fit sees
    # epoch seconds near 1.7e9 carry 2.4e-7 s steps: up to 14 points' distances, each off by
    # ~1e-9 after the subtraction, add up to a few 1e-8
    assert total_distance(epoch, d, fit) == pytest.approx(best, abs=5e-8)
    assert fit.excess == pytest.approx(max(np.array(d) - line), abs=1e-9)


def test_hand_computed_envelope():
    """Points (0, 1), (1, 0), (2, 0.5), (3, 3), (4, 1). (2, 0.5) lies above the chord from
    (1, 0) to (4, 1) (1/3 at t = 2), so the lower hull is (0, 1), (1, 0), (4, 1). The mean
    t = 2 lies on the edge (1, 0)-(4, 1): slope 1/3, intercept -1/3."""
    fit = fit_lower_envelope(np.array([0.0, 1, 2, 3, 4]), np.array([1.0, 0, 0.5, 3, 1]))
    assert fit.skew == pytest.approx(1 / 3)
    assert fit.offset == pytest.approx(-1 / 3)
    assert fit.t0 == 0.0 and fit.samples == 5 and fit.span == 4.0
    assert fit.excess == pytest.approx(3 - (-1 / 3 + 1))  # (3, 3) sits 7/3 above the line


def test_mean_on_a_hull_vertex_takes_the_edge_on_its_left():
    """Points (0, 0), (1, -1), (2, 0): the mean t = 1 is a hull vertex, so both edges are
    optimal (total distance 0 + 0 + 2 either way); the fit takes the left one, slope -1."""
    fit = fit_lower_envelope(np.array([0.0, 1, 2]), np.array([0.0, -1, 0]))
    assert fit.skew == pytest.approx(-1.0) and fit.offset == pytest.approx(0.0)


def test_degenerate_inputs():
    one = fit_lower_envelope(np.array([5.0]), np.array([0.25]))
    assert (one.offset, one.skew, one.excess, one.samples, one.span) == (0.25, 0.0, 0.0, 1, 0.0)
    same_time = fit_lower_envelope(np.array([5.0, 5.0, 5.0]), np.array([0.3, 0.1, 0.2]))
    assert same_time.offset == pytest.approx(0.1) and same_time.skew == 0.0
    assert same_time.excess == pytest.approx(0.2)
    unsorted = fit_lower_envelope(np.array([2.0, 0.0, 1.0, np.nan]), np.array([0.2, 0.0, 0.5, 0.0]))
    assert unsorted.skew == pytest.approx(0.1) and unsorted.samples == 3
    with pytest.raises(UsageError, match="no delay samples"):
        fit_lower_envelope(np.array([np.nan]), np.array([1.0]))


def test_recovers_a_skew_under_queueing():
    """50 ppm skew, 3 ms offset, exponential queueing that empties a third of the time."""
    rng = np.random.default_rng(7)
    t = 1.7e9 + np.sort(rng.uniform(0, 600, 20_000))
    queue = np.where(rng.random(t.size) < 0.3, 0.0, rng.exponential(0.02, t.size))
    d = 0.003 + 50e-6 * (t - t[0]) + queue
    fit = fit_lower_envelope(t, d)
    assert fit.skew * 1e6 == pytest.approx(50, abs=0.01)
    assert fit.offset == pytest.approx(0.003, abs=1e-6)
    # a least-squares fit would be pulled up by the queue: the envelope is not
    assert np.min(d - fit.envelope(t)) == pytest.approx(0.0, abs=1e-12)


def separate_trace(t_send, t_recv, flows=None) -> Trace:
    n = len(t_send)
    delivered = np.isfinite(t_recv)
    packets = make_packet_table(
        flow=flows if flows is not None else ["f"] * n,
        seq=np.arange(n),
        size=np.full(n, 100),
        t_send=t_send,
        t_recv=t_recv,
        fate=pd.Categorical(
            np.where(delivered, "delivered", "lost"),
            categories=["delivered", "congestion", "wireless", "lost", "unobserved"],
        ),
    )
    return Trace(packets=packets, rtt=empty_rtt(), path="mem.pcap", format="pcap", meta={"clock": "separate"})


def test_remove_skew_per_flow_keeps_or_removes_the_offset():
    t = np.arange(0.0, 100.0, 0.5)
    recv = t + 10.0 + 100e-6 * t + np.where(np.arange(t.size) % 3 == 0, 0.0, 0.004)
    recv[7] = np.nan  # a loss: untouched
    trace = separate_trace(t, recv)
    before = trace.packets.copy()
    kept = remove_skew(trace)
    moved = remove_skew(trace, offset=True)
    pd.testing.assert_frame_equal(trace.packets, before)  # the input is not modified
    fit = kept.meta["clock_fit"].iloc[0]
    assert fit["skew_ppm"] == pytest.approx(100, abs=1e-6) and fit["offset_s"] == pytest.approx(10.0)
    assert fit["samples"] == t.size - 1 and fit["excess_s"] == pytest.approx(0.004)
    owd_kept = (kept.packets["t_recv"] - kept.packets["t_send"]).to_numpy()
    owd_moved = (moved.packets["t_recv"] - moved.packets["t_send"]).to_numpy()
    assert np.nanmin(owd_kept) == pytest.approx(10.0) and np.nanmax(owd_kept) == pytest.approx(10.004)
    assert np.nanmin(owd_moved) == pytest.approx(0.0, abs=1e-9) and np.nanmax(owd_moved) == pytest.approx(0.004)
    assert kept.packets["t_recv"].iloc[0] == recv[0]  # at t0 the receive time is the capture time
    assert np.isnan(kept.packets["t_recv"].iloc[7])
    assert kept.meta["clock"] == "skew-removed" and moved.meta["offset_removed"] is True


def test_remove_skew_fits_each_flow_alone():
    t = np.tile(np.arange(0.0, 10.0, 0.1), 2)
    flows = ["a"] * 100 + ["b"] * 100
    recv = t + np.where(np.array(flows) == "a", 20e-6 * t, -30e-6 * t + 1.0)
    fits = remove_skew(separate_trace(t, recv, flows)).meta["clock_fit"].set_index("flow")
    assert fits.loc["a", "skew_ppm"] == pytest.approx(20) and fits.loc["b", "skew_ppm"] == pytest.approx(-30)


def test_remove_skew_warns_on_implausible_skew_and_lone_packets():
    t = np.arange(0.0, 10.0, 0.1)
    with pytest.warns(ClockWarning, match=r"\+1000 ppm is more than clocks drift"):
        remove_skew(separate_trace(t, t + 1e-3 * t))
    with pytest.warns(ClockWarning, match="1 delivered packet"):
        remove_skew(separate_trace(np.array([0.0, 1.0]), np.array([0.5, np.nan])))


def test_remove_skew_refuses_a_common_clock():
    trace = separate_trace(np.array([0.0, 1.0]), np.array([0.1, 1.1]))
    common = dataclasses.replace(trace, meta={"clock": "common"})
    with pytest.raises(UsageError, match="only separate clocks"):
        remove_skew(common)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        remove_skew(trace)


def test_receiver_capture_with_in_band_timestamps_loses_its_skew(tmp_path):
    """An RTP flow (8000 Hz timestamps) captured by a receiver whose clock runs 60 ppm fast,
    with queueing on two packets in three: the reader reports the skew and takes it out, and
    ``skew="keep"`` leaves the capture times alone."""
    ends = Endpoints(proto="udp", src="10.0.0.1", dst="10.0.0.2", sport=5004, dport=6000)
    records = []
    for k in range(3000):  # 60 s of 20 ms packets
        sent = k * 0.02
        arrival = T0 + sent * (1 + 60e-6) + 0.03 + (0.008 if k % 3 else 0.0)
        records.append(
            Record(int(round(arrival * 1e9)), link_frame(1, ip_packet(ends, rtp_payload(k, 160 * k, 7), ip_id=k)))
        )
    write_pcap(tmp_path / "rx.pcap", records, 1)
    trace = read_capture(tmp_path / "rx.pcap")
    fit = trace.meta["clock_fit"].iloc[0]
    assert fit["skew_ppm"] == pytest.approx(60, abs=0.01) and fit["samples"] == 3000
    rott = trace.packets["t_recv"] - trace.packets["t_send"]
    assert rott.max() - rott.min() == pytest.approx(0.008, abs=2e-6)  # only the queue is left
    kept = read_capture(tmp_path / "rx.pcap", skew="keep")
    raw = kept.packets["t_recv"] - kept.packets["t_send"]
    assert raw.max() - raw.min() == pytest.approx(0.008 + 60e-6 * 59.98, abs=2e-6)
    assert "clock_fit" not in kept.meta and kept.meta["clock"] == "separate"
    with pytest.raises(UsageError, match="skew must be one of"):
        read_capture(tmp_path / "rx.pcap", skew="fit")


# --- one skew per pair of clocks, a limit, an uncertainty ------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 1000), st.floats(0, 0.05)), min_size=2, max_size=12), min_size=1, max_size=3
    ),
    st.floats(-500e-6, 500e-6),
)
def test_common_skew_reaches_the_least_joint_objective(flows, skew):
    from ldanalyze.clocks import common_skew

    from .naive import clocks as naive_clocks

    groups = [(np.array([k * 0.1 for k, _ in pts]), np.array([q + skew * k * 0.1 for k, q in pts])) for pts in flows]
    if any(np.unique(t).size < 2 for t, _ in groups):
        return
    best = naive_clocks.common_skew_naive([(list(t), list(d)) for t, d in groups])
    found = naive_clocks.joint_objective_naive([(list(t), list(d)) for t, d in groups], common_skew(groups))
    assert found <= best + 1e-9 * max(1.0, abs(best)) + 1e-9


def test_flows_of_one_pair_of_hosts_share_one_skew():
    t = np.tile(np.arange(0.0, 60.0, 0.1), 2)
    flows = np.array(["10.0.0.1:1>10.0.0.2:2/udp"] * 600 + ["10.0.0.1:3>10.0.0.2:4/udp/ssrc=0x5"] * 600)
    queue = np.where(np.arange(t.size) % 4 == 0, 0.0, 0.01)
    recv = t + 40e-6 * t + np.where(flows == flows[0], 1.0, 7.0) + queue
    fit = remove_skew(separate_trace(t, recv, list(flows))).meta["clock_fit"]
    assert fit["pair"].unique().tolist() == ["10.0.0.1>10.0.0.2"]
    assert fit["skew_ppm"].to_numpy() == pytest.approx([40, 40], abs=0.01)
    assert fit["offset_s"].to_numpy() == pytest.approx([1.0, 7.0], abs=1e-6)
    assert (fit["status"] == "applied").all() and (fit["uncertainty_ppm"] < 0.1).all()


def test_a_skew_beyond_the_limit_is_reported_not_applied():
    t = np.arange(0.0, 10.0, 0.01)
    recv = t + 3000e-6 * t + 0.02  # a queue that builds all along reads as 3000 ppm
    trace = separate_trace(t, recv)
    with pytest.warns(ClockWarning, match=r"\+3000 ppm .* so it is not applied"):
        out = remove_skew(trace)
    np.testing.assert_array_equal(out.packets["t_recv"].to_numpy(), recv)
    fit = out.meta["clock_fit"].iloc[0]
    assert fit["status"] == "not applied: beyond 200 ppm" and fit["skew_ppm"] == pytest.approx(3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        applied = remove_skew(trace, skew_limit_ppm=5000)
    assert applied.meta["clock_fit"]["status"].tolist() == ["applied"]
    with pytest.raises(UsageError, match="skew limit"):
        remove_skew(trace, skew_limit_ppm=0)


def test_the_lab_capture_keeps_its_times():
    """The bundled lab receiver capture: the full tbf queue ramps the delay by 26 ms a second;
    the fit reads that as 26,000 ppm and leaves the capture times alone."""
    from ldanalyze import read_trace

    from .conftest import TRACES

    with pytest.warns(ClockWarning, match="not applied"):
        removed = read_trace(TRACES / "captures" / "lab_receiver.pcap")
    kept = read_trace(TRACES / "captures" / "lab_receiver.pcap", skew="keep")
    assert (removed.meta["clock_fit"]["status"] == "not applied: beyond 200 ppm").all()
    np.testing.assert_array_equal(removed.packets["t_recv"].to_numpy(), kept.packets["t_recv"].to_numpy())


def test_both_directions_agree_and_their_mean_is_applied():
    """Paxson 1998 §4: reverse delays (first clock minus second) fall as forward ones rise."""
    t = np.arange(0.0, 60.0, 0.1)
    queue = np.where(np.arange(t.size) % 4 == 0, 0.0, 0.01)
    recv = t + 1.0 + 40e-6 * t + queue
    back_t = np.arange(0.05, 60.0, 0.2)
    back_d = 0.5 - 1.0 - 36e-6 * back_t + np.where(np.arange(back_t.size) % 3 == 0, 0.0, 0.002)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = remove_skew(separate_trace(t, recv), pairs="all", reverse=[(back_t, back_d)])
    fit = out.meta["clock_fit"].iloc[0]
    assert (fit["forward_ppm"], fit["reverse_ppm"]) == (pytest.approx(40, abs=0.01), pytest.approx(36, abs=0.01))
    assert fit["skew_ppm"] == pytest.approx(38, abs=0.01) and fit["uncertainty_ppm"] == pytest.approx(2, abs=0.01)
    assert fit["reverse_samples"] == back_t.size and fit["status"] == "applied"
    owd = (out.packets["t_recv"] - out.packets["t_send"]).to_numpy()
    assert owd.max() - owd.min() == pytest.approx(0.01 + 2e-6 * 60, abs=1e-5)  # 2 ppm left over 60 s


def test_a_queue_trending_in_one_direction_is_not_taken_for_skew():
    """Forward delays rise by 100 ppm (40 of skew, 60 of a queue filling slowly), reverse ones
    fall by 40: the directions disagree, so nothing is applied, though 100 ppm is plausible."""
    t = np.arange(0.0, 60.0, 0.1)
    recv = t + 1.0 + 100e-6 * t
    back_t = np.arange(0.05, 60.0, 0.2)
    back_d = -0.5 - 40e-6 * back_t
    trace = separate_trace(t, recv)
    assert remove_skew(trace, pairs="all").meta["clock_fit"]["status"].tolist() == ["applied"]  # one direction
    with pytest.warns(ClockWarning, match=r"forward packets \(\+100.0 ppm\) and on the reverse ones \(\+40.0 ppm\)"):
        out = remove_skew(trace, pairs="all", reverse=[(back_t, back_d)])
    fit = out.meta["clock_fit"].iloc[0]
    assert fit["status"] == "not applied: the directions disagree (forward +100.0 ppm, reverse +40.0 ppm)"
    np.testing.assert_array_equal(out.packets["t_recv"].to_numpy(), recv)
    with pytest.raises(UsageError, match="pairs='all'"):
        remove_skew(trace, reverse=[(back_t, back_d)])


def test_a_weak_fit_is_reported_not_applied():
    """Nine samples are too few for a skew (``MIN_APPLIED_SAMPLES``, 10, are enough); a fit
    whose halves differ by more than the limit is too uncertain: a delay that rises by 1 ms a
    second in the first half and falls as fast in the second looks like 0 ppm overall, ± 1000."""
    t = np.arange(9.0)
    recv = t + 0.5 + 50e-6 * t
    out = remove_skew(separate_trace(t, recv))
    assert out.meta["clock_fit"]["status"].tolist() == ["not applied: 9 samples, too few"]
    np.testing.assert_array_equal(out.packets["t_recv"].to_numpy(), recv)
    ten = remove_skew(separate_trace(np.arange(10.0), np.arange(10.0) + 0.5 + 50e-6 * np.arange(10.0)))
    assert ten.meta["clock_fit"]["status"].tolist() == ["applied"]
    t = np.arange(0.0, 20.0, 0.1)
    tent = np.where(t < 10, 1e-3 * t, 1e-3 * (20 - t))
    fit = remove_skew(separate_trace(t, t + 0.5 + tent)).meta["clock_fit"].iloc[0]
    assert fit["uncertainty_ppm"] > 200 and fit["status"].startswith("not applied: uncertain")
    assert fit["pair_samples"] == fit["samples"] == t.size
