"""The real lab: four network namespaces, random drops on r1 (wireless), a tbf bottleneck on r2
(congestion), iperf3 UDP through both, tcpdump at every hop (``ldanalyze.lab``).

The vantage chain must recover, packet for packet, the drop counts the kernel itself kept (the
nftables rule's counter, the tbf qdisc's counter), and the LDAs are scored on the result. In
CI the lab must run: a missing prerequisite there is a failure, not a skip.
"""

from __future__ import annotations

import os
import subprocess
import warnings

import numpy as np
import pytest

import ldanalyze as la
from ldanalyze.cli import main
from ldanalyze.io.capture.vantage import read_vantages
from ldanalyze.io.labels import apply_labels, write_labels
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab

from ..conftest import IN_CI

LAB_UNAVAILABLE = lab_unavailable()
# skipped where the lab cannot be built, except in CI, where the tests run and fail
pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)"),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the network namespace lab must run in CI, but {LAB_UNAVAILABLE}")
    return run_lab(tmp_path_factory.mktemp("lab"), LabConfig())


@pytest.fixture(scope="module")
def traced(lab):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean lab gives no warning at all
        return read_vantages(lab.chain(), clocks="common")


def udp_label(lab) -> str:
    return f"{lab.sender_ip}:{lab.sender_port}>{lab.receiver_ip}:{lab.port}/udp"


def test_the_lab_left_nothing_behind(lab):
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert f"ldlab-{os.getpid()}-" not in names
    assert dict(lab.capture_drops) == {"sender": 0, "r1": 0, "r2": 0, "receiver": 0}
    assert lab.wireless_drops > 0 and lab.bottleneck_drops > 0  # both kinds of loss happened


def test_chain_recovers_the_kernel_drop_counters_exactly(lab, traced):
    fates = traced.packets.groupby("fate", observed=False).size()
    assert fates["wireless"] == lab.wireless_drops
    assert fates["congestion"] == lab.bottleneck_drops
    assert fates["lost"] == 0 and fates["unobserved"] == 0
    udp = traced.packets[traced.packets["flow"] == udp_label(lab)]
    # iperf3's server counts the gaps, from sequence number 1 on, below the highest sequence
    # number it read ("packets"): not always the last that arrived, as the test's end (on the
    # control connection, just behind the last datagram) can be read first
    assert udp["seq"].min() == 1
    assert len(udp) == lab.iperf3["end"]["sum_sent"]["packets"]
    read = lab.iperf3["end"]["sum_received"]
    counted = udp[udp["seq"] <= read["packets"]]
    assert counted["fate"].isin(["wireless", "congestion"]).sum() == read["lost_packets"]
    segments = {s["segment"]: (s["cause"], s["lost"], s["unobserved"]) for s in traced.meta["segments"]}
    assert segments == {
        "sender.pcap>r1.pcap": ("wireless", lab.wireless_drops, 0),
        "r1.pcap>r2.pcap": ("congestion", lab.bottleneck_drops, 0),
        "r2.pcap>receiver.pcap": ("lost", 0, 0),
    }
    assert [v["unmatched"] for v in traced.meta["vantages"]] == [0, 0, 0, 0]
    # sequence numbers are iperf3's own, so labels line up with a receiver-only read
    assert traced.meta["flows"][udp_label(lab)]["kind"] == "iperf3"


def test_one_kernel_clock_shows_no_skew_before_the_bottleneck(traced):
    r1 = traced.meta["vantages"][1]
    assert abs(r1["skew_ppm"]) < 5  # veth hops on one clock: the fit must find (almost) none
    # the fitted line's offset: a skew within the 5 ppm allowed tilts it by microseconds over the
    # run, so it may sit a few below zero (a clean-clone CI run read -3.7 us)
    assert -1e-5 <= r1["offset_s"] < 1e-3
    delivered = traced.packets[traced.packets["fate"] == "delivered"]
    owd = (delivered["t_recv"] - delivered["t_send"]).to_numpy()
    assert owd.min() > 0 and owd.max() < 0.2  # common clock: absolute one-way delays, tbf queue included


def test_receiver_capture_with_chain_labels(lab, traced, tmp_path):
    """A receiver-only read sees the losses between its first and its last arrival; the
    chain's labels give them their causes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the opening datagram and the control connection are skipped
        received = la.read_trace(lab.captures["receiver"], flows=[udp_label(lab)])
    udp = traced.packets[traced.packets["flow"] == udp_label(lab)]
    delivered = udp.loc[udp["fate"] == "delivered", "seq"]
    first, last = delivered.min(), delivered.max()
    visible = udp[(udp["seq"] > first) & (udp["seq"] < last)].groupby("fate", observed=False).size()
    assert (received.packets["fate"] == "lost").sum() == visible["wireless"] + visible["congestion"]
    labels = tmp_path / "labels.csv"
    assert write_labels(traced, labels) == lab.wireless_drops + lab.bottleneck_drops
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        labelled = apply_labels(received, labels)
    beyond = int(((udp["seq"] > last) | (udp["seq"] < first)).sum())
    assert labelled.meta["labels"]["outside"] == beyond
    assert any("outside the sequence range" in str(w.message) for w in caught) == (beyond > 0)
    fates = labelled.packets.groupby("fate", observed=False).size()
    assert (fates["wireless"], fates["congestion"], fates["lost"]) == (visible["wireless"], visible["congestion"], 0)


def test_ldas_scored_on_the_lab(traced):
    timeline = la.build_timeline(traced)
    decisions = la.classify(timeline, "all")
    scores = la.score(decisions, timeline.summary(), by="trace", bootstrap=0).set_index("lda")
    assert scores.loc["omniscient", "accuracy"] == 1.0
    assert scores.loc["unaware", "M_w"] == 1.0 and scores.loc["unaware", "M_c"] == 0.0
    for lda in ("biaz", "spike", "zigzag", "zbs", "mbiaz"):
        assert 0.0 <= scores.loc[lda, "accuracy"] <= 1.0
        assert scores.loc[lda, "scored"] > 0
    assert np.isfinite(scores["accuracy"]).all()


def test_cli_scores_the_vantage_chain(lab, capsys):
    c = lab.captures
    code = main(
        [
            "score",
            "--vantage",
            str(c["sender"]),
            "--vantage",
            f"{c['r1']}:wireless",
            "--vantage",
            f"{c['r2']}:congestion",
            "--vantage",
            str(c["receiver"]),
            "--clocks",
            "common",
            "--format",
            "json",
            "--bootstrap",
            "0",
            "--controller",
            "none",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert '"omniscient"' in out and '"spike"' in out
