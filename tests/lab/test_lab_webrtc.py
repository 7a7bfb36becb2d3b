"""The lab with a WebRTC peer pair (aiortc, ldanalyze/lab/webrtc_peer.py): video over STUN/DTLS/SRTP/RTCP
muxed on one port, through r1's random drops (RTP packets only) and r2's tbf bottleneck. The
chain of captures gives each SSRC's losses by cause and recovers r1's counter exactly; the
receiver's capture alone finds the same losses per stream, and reads the send times from the
abs-send-time header extension."""

from __future__ import annotations

import importlib.util
import warnings

import pytest

import ldanalyze as la
from ldanalyze.io.capture.vantage import read_vantages
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab

from ..conftest import IN_CI

LAB_UNAVAILABLE = lab_unavailable() or (
    None if importlib.util.find_spec("aiortc") else "the WebRTC lab needs aiortc (pip install '.[test]')"
)
pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)"),
]
CONFIG = LabConfig(
    duration_s=6,
    traffic="webrtc",
    wireless_drop_percent=3,
    tbf_rate="2500kbit",
    tbf_limit_bytes=20000,
    tbf_burst_bytes=4000,
)


@pytest.fixture(scope="module")
def webrtc(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the WebRTC lab must run in CI, but {LAB_UNAVAILABLE}")
    lab = run_lab(tmp_path_factory.mktemp("webrtc"), CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = read_vantages(lab.chain(), clocks="common")
        received = la.read_trace(lab.captures["receiver"], skew="keep")
        every_packet = read_vantages(lab.chain(), clocks="common", payload="order")
    return lab, traced, received, every_packet


def test_the_chain_recovers_the_random_drops_and_sees_the_bottleneck(webrtc):
    lab, traced, _, every_packet = webrtc
    fates = traced.packets["fate"].value_counts()
    assert fates["wireless"] == lab.wireless_drops > 0
    # the tbf also drops STUN, DTLS and RTCP packets, which belong to no RTP stream ...
    assert 0 < fates["congestion"] <= lab.bottleneck_drops
    # ... and read in capture order, every packet of the 5-tuple counts: both counters exactly
    every = every_packet.packets["fate"].value_counts()
    assert (every["wireless"], every["congestion"]) == (lab.wireless_drops, lab.bottleneck_drops)
    assert every["lost"] == every["unobserved"] == 0
    assert dict(lab.capture_drops) == {"sender": 0, "r1": 0, "r2": 0, "receiver": 0}


def test_the_receiver_alone_finds_each_streams_losses(webrtc):
    lab, traced, received, _ = webrtc
    streams = received.meta["flows"]
    assert len(streams) >= 1
    assert any(info.get("send_time") == "abs-send-time" for info in streams.values())
    for label, info in streams.items():
        truth = traced.packets[traced.packets["flow"] == label]
        seen = truth[truth["fate"] == "delivered"]
        inside = truth[(truth["seq"] > seen["seq"].min()) & (truth["seq"] < seen["seq"].max())]
        assert info["packets"] == len(seen)
        assert info["lost"] == int(inside["fate"].isin(["wireless", "congestion"]).sum()), label
