"""The lab with a real RTP stack: GStreamer's rtpbin sends G.711 audio (50 packets/s, RTCP
sender reports on the next port) through r1's random drops and r2's tbf bottleneck. The chain
of captures recovers the kernel's counters per cause, and the receiver's capture alone gives the
same losses for the RTP stream."""

from __future__ import annotations

import shutil
import warnings

import pytest

import ldanalyze as la
from ldanalyze.io.capture.vantage import read_vantages
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab

from ..conftest import IN_CI

LAB_UNAVAILABLE = lab_unavailable() or (
    None if shutil.which("gst-launch-1.0") else "the RTP lab needs gst-launch-1.0 (gstreamer1.0-tools)"
)
pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)"),
]
# 85.6 kbit/s of frames on the wire into a 70 kbit/s bucket of nine frames' room: tail drops
CONFIG = LabConfig(
    duration_s=6,
    traffic="rtp-audio",
    port=5004,
    length=172,
    wireless_drop_percent=4,
    tbf_rate="70kbit",
    tbf_burst_bytes=1600,
    tbf_limit_bytes=2000,
)


@pytest.fixture(scope="module")
def rtp_lab(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the RTP lab must run in CI, but {LAB_UNAVAILABLE}")
    lab = run_lab(tmp_path_factory.mktemp("rtp"), CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = read_vantages(lab.chain(), clocks="common")
        received = la.read_trace(lab.captures["receiver"], payload="rtp", skew="keep")
    return lab, traced, received


def udp_packets(path, label: str) -> int:
    """Datagrams of the UDP flow ``label`` (``src:sport>dst:dport/udp``) in a capture, read
    with dpkt."""
    import socket

    import dpkt

    src, dst = label.removesuffix("/udp").split(">")
    (src_ip, sport), (dst_ip, dport) = src.rsplit(":", 1), dst.rsplit(":", 1)
    count = 0
    with open(path, "rb") as f:
        for _, frame in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(frame).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP):
                count += (socket.inet_ntoa(ip.src), ip.data.sport, socket.inet_ntoa(ip.dst), ip.data.dport) == (
                    src_ip,
                    int(sport),
                    dst_ip,
                    int(dport),
                )
    return count


def rtp_label(lab) -> str:
    return f"{lab.sender_ip}:{lab.sender_port}>{lab.receiver_ip}:{lab.port}/udp"


def test_the_chain_recovers_the_kernel_counters(rtp_lab):
    lab, traced, _ = rtp_lab
    p = traced.packets
    rtp = p[p["flow"] == rtp_label(lab)]
    assert (rtp["fate"] == "wireless").sum() == lab.wireless_drops > 0  # r1's rule drops RTP alone
    # the tbf counts every packet it dropped: the RTCP reports pass it too. A flow the tbf took
    # whole (two sender reports, one CI run) never reaches the receiver, so the chain leaves it
    # out: its drops are counted from the captures on either side of the tbf
    never = [label for label, why in traced.meta["skipped_flows"].items() if "never reaches" in why]
    whole = sum(udp_packets(lab.captures["r1"], label) - udp_packets(lab.captures["r2"], label) for label in never)
    assert (p["fate"] == "congestion").sum() + whole == lab.bottleneck_drops > 0
    assert (rtp["fate"] == "congestion").sum() > 0
    assert dict(lab.capture_drops) == {"sender": 0, "r1": 0, "r2": 0, "receiver": 0}


def test_the_receiver_alone_finds_the_same_losses_in_the_rtp_stream(rtp_lab):
    lab, traced, received = rtp_lab
    streams = received.meta["flows"]
    (label,) = [k for k in streams if k.startswith(rtp_label(lab))]
    info = streams[label]
    # rtpbin's sender reports (to the next port, every 5 s or so, through the bottleneck) say
    # the media clock's rate before PT 8 does, when two of them reached the receiver 0.5 s apart
    from ldanalyze.io.capture.pcap import decode_capture
    from ldanalyze.io.capture.rtp_streams import capture_sender_reports

    reports = capture_sender_reports(decode_capture(lab.captures["receiver"], head_bytes=48))
    source = "RTCP sender reports" if int(info["ssrc"], 16) in reports else "payload type"
    assert (info["kind"], info["payload_type"], info["clock_rate"], info["clock_source"]) == ("rtp", 8, 8000, source)
    if source == "RTCP sender reports":
        assert info["sender_reports"] >= 2 and abs(info["sender_report_rate"] / 8000 - 1) < 0.01
    truth = traced.packets[traced.packets["flow"] == rtp_label(lab)]
    rx = received.packets[received.packets["flow"] == label]
    # losses the receiver can see: between its first and its last arrival
    seen = truth[truth["fate"] == "delivered"]
    first, last = seen["t_send"].min(), seen["t_send"].max()
    inside = truth[(truth["t_send"] > first) & (truth["t_send"] < last)]
    lost_truth = int(inside["fate"].isin(["wireless", "congestion"]).sum())
    assert int((rx["fate"] == "lost").sum()) == lost_truth > 0
    assert int((rx["fate"] == "delivered").sum()) == len(seen)
