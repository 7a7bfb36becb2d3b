"""The lab with a real video stack: GStreamer's rtpbin sends VP8 (frames over several packets)
with ULPFEC in the media stream and RFC 4588 retransmissions on the receiver's NACKs, through
r1's random drops and r2's tbf bottleneck (``LabConfig(traffic="rtp-video")``).

The chain recovers both kernel counters exactly; the receiver's capture alone finds the media
stream with tshark's packet count, the chain's losses, the retransmissions that repaired some
of them (checked against the RTX payloads read with dpkt), the FEC packets, and one ROTT per
video frame."""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings

import dpkt
import numpy as np
import pytest

import ldanalyze as la
from ldanalyze.io.capture.vantage import read_vantages
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab

from ..conftest import IN_CI

LAB_UNAVAILABLE = lab_unavailable() or next(
    (f"the video lab needs {tool}" for tool in ("gst-launch-1.0", "tshark") if not shutil.which(tool)), None
)
pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)"),
]
# about 1 Mbit/s of VP8, FEC and RTX on the wire into a 0.9 Mbit/s bucket
CONFIG = LabConfig(
    duration_s=6,
    traffic="rtp-video",
    port=5004,
    wireless_drop_percent=3,
    tbf_rate="900kbit",
    tbf_burst_bytes=4000,
    tbf_limit_bytes=12000,
    snaplen=200,
)
MEDIA_PT, RTX_PT, FEC_PT = 96, 97, 122


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the video lab must run in CI, but {LAB_UNAVAILABLE}")
    lab = run_lab(tmp_path_factory.mktemp("video"), CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = read_vantages(lab.chain(), clocks="common")
        every_packet = read_vantages(lab.chain(), clocks="common", payload="order")
        received = la.read_trace(lab.captures["receiver"], skew="keep")
    return lab, traced, every_packet, received


def rtp_packets(path) -> list[dict]:
    """Every RTP packet to the media port in a capture, read with dpkt: SSRC, PT, sequence
    number, timestamp and the first two payload bytes (an RTX packet's OSN)."""
    out = []
    with open(path, "rb") as f:
        for _, frame in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(frame).data
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.udp.UDP) or ip.data.dport != CONFIG.port:
                continue
            rtp = dpkt.rtp.RTP(ip.data.data)
            start = 12 + 4 * rtp.cc
            out.append(
                {
                    "ssrc": rtp.ssrc,
                    "pt": rtp.pt,
                    "seq": rtp.seq,
                    "ts": rtp.ts,
                    "osn": int.from_bytes(ip.data.data[start : start + 2], "big"),
                }
            )
    return out


def media_stream(received):
    (label,) = [k for k, v in received.meta["flows"].items() if v.get("payload_type") == MEDIA_PT]
    return label, received.meta["flows"][label]


def test_the_chain_recovers_both_counters_exactly(video):
    lab, traced, every_packet, _ = video
    every = every_packet.packets["fate"].value_counts()
    assert (every["wireless"], every["congestion"]) == (lab.wireless_drops, lab.bottleneck_drops)
    assert lab.wireless_drops > 0 and lab.bottleneck_drops > 0
    assert every["lost"] == every["unobserved"] == 0
    # read by RTP stream, the media stream holds every random drop (r1 drops only packets to the
    # media port) but those of retransmissions, which are joined to it, not packets of their own
    fates = traced.packets["fate"].value_counts()
    rtx_sent = {p["seq"] for p in rtp_packets(lab.captures["sender"]) if p["pt"] == RTX_PT}
    rtx_past_r1 = {p["seq"] for p in rtp_packets(lab.captures["r1"]) if p["pt"] == RTX_PT}
    assert fates["wireless"] + len(rtx_sent - rtx_past_r1) == lab.wireless_drops
    assert 0 < fates["congestion"] <= lab.bottleneck_drops
    assert dict(lab.capture_drops) == {"sender": 0, "r1": 0, "r2": 0, "receiver": 0}


def test_the_receiver_alone_finds_the_media_streams_losses_repairs_and_fec(video):
    lab, traced, _, received = video
    label, info = media_stream(received)
    # tshark's stream table: the same packet count for the media SSRC
    table = subprocess.run(
        ["tshark", "-r", str(lab.captures["receiver"]), "-o", "rtp.heuristic_rtp:TRUE", "-q", "-z", "rtp,streams"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [row for row in table.splitlines() if info["ssrc"].upper().replace("0X", "0x") in row]
    packets_lost = re.search(r"\s(\d+)\s+(-?\d+) \(-?[\d.]+%\)", line)  # Pkts, then Lost (share)
    assert (int(packets_lost.group(1)), int(packets_lost.group(2))) == (info["packets"], info["lost"])
    # the chain's truth: losses between the first and the last arrival
    truth = traced.packets[traced.packets["flow"] == label]
    seen = truth[truth["fate"] == "delivered"]
    inside = truth[(truth["seq"] > seen["seq"].min()) & (truth["seq"] < seen["seq"].max())]
    lost = inside.loc[inside["fate"].isin(["wireless", "congestion"]), "seq"].to_numpy()
    assert info["packets"] == len(seen) and info["lost"] == len(lost) > 0
    # RFC 4588: the OSNs of the retransmissions that arrived, of media packets that were lost
    packets = rtp_packets(lab.captures["receiver"])
    carried = {p["osn"] for p in packets if p["pt"] == RTX_PT}
    repaired = {int(s) for s in lost if int(s) % (1 << 16) in carried}
    assert info["rtx_payload_type"] == RTX_PT and info["rtx_repaired"] == len(repaired) > 0
    rx = received.packets[received.packets["flow"] == label]
    assert set(rx.loc[rx["reason"] == "rtx-repaired", "seq"].astype(int)) == repaired
    # ULPFEC in the media stream: counted, and kept in its sequence space
    mine = [p for p in packets if p["ssrc"] == int(info["ssrc"], 16)]
    assert (info["fec_payload_type"], info["fec_packets"]) == (FEC_PT, sum(p["pt"] == FEC_PT for p in mine))
    assert info["packets"] == len(mine)


def test_one_rott_per_video_frame(video):
    """Packets of one frame share its RTP timestamp; each takes the ROTT of the frame's first
    arrival, whatever the sender's burst and the queue did between them."""
    lab, _, _, received = video
    label, info = media_stream(received)
    assert info["frames"] < info["packets"] and received.meta["flows"][label]["rott"].startswith("per frame")
    stamps = {p["seq"]: p["ts"] for p in rtp_packets(lab.captures["receiver"]) if p["ssrc"] == int(info["ssrc"], 16)}
    rx = received.packets[(received.packets["flow"] == label) & (received.packets["fate"] == "delivered")]
    delay = (rx["t_recv"] - rx["t_send"]).to_numpy()
    frame = np.array([stamps[int(s) % (1 << 16)] for s in rx["seq"]])
    spread = [np.ptp(delay[frame == ts]) for ts in np.unique(frame)]
    assert max(spread) < 1e-6
    big = [ts for ts in np.unique(frame) if (frame == ts).sum() >= 3]
    assert len(big) > 10  # frames do span several packets


def test_ldas_score_on_the_video_lab(video):
    _, traced, _, _ = video
    timeline = la.build_timeline(traced)
    scores = la.score(la.classify(timeline, "all"), timeline.summary(), by="trace", bootstrap=0).set_index("lda")
    assert scores.loc["omniscient", "accuracy"] == 1.0
    assert scores.loc["unaware", "M_w"] == 1.0 and scores.loc["unaware", "M_c"] == 0.0
