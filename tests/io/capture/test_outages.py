"""Capture outages (issue 45): a silence of the capture itself is not a loss.

On a real capture with one (``gtp-iphone.pcap``: the silence tshark shows), and on generated
cuts of a real WhatsApp call (``stun_wa_call.pcapng``): every frame of a window removed is an
outage and its holes are not observed; one direction's frames removed is the path's loss.
"""

from __future__ import annotations

import struct
import subprocess
import warnings

import dpkt
import numpy as np
import pytest

from ldanalyze.io.capture.outages import CAPTURE_GAP, OUTAGE_MIN, capture_outages, mark_outages
from ldanalyze.io.capture.pcap import CaptureWarning, decode_capture, read_capture

from ...conftest import require_binary
from ...support.captures import Endpoints, Iface, Record, ip_packet, link_frame, pcapng_bytes, rtp_payload

REAL = "tests/data/real"
GTP = f"{REAL}/tunnels/gtp-iphone.pcap"
CALL = f"{REAL}/stun_wa_call.pcapng"
PEER = "93.57.123.227"  # the call's relay: both RTP directions of the call go through it


def fates(trace) -> dict:
    return trace.packets["fate"].value_counts().to_dict()


def test_a_real_capture_outage_is_not_observed_not_lost():
    with pytest.warns(CaptureWarning, match=r"recorded nothing of its streams in either direction at 80\.92-91\.16 s"):
        trace = read_capture(GTP)
    counts = fates(trace)
    assert (counts["lost"], counts["unobserved"], counts["delivered"]) == (0, 911, 35)
    (outage,) = trace.meta["capture_outages"]
    assert outage["start_s"] == pytest.approx(80.92, abs=0.005) and outage["seconds"] == pytest.approx(10.24, abs=0.01)
    assert outage["not_observed"] == 911
    hidden = trace.packets[trace.packets["fate"] == "unobserved"]
    assert set(hidden["reason"].astype(str)) == {CAPTURE_GAP}
    assert sorted(info.get("capture_gap", 0) for info in trace.meta["flows"].values())[-2:] == [402, 509]


def test_the_outage_is_the_silence_tshark_shows():
    """tshark's frame times of the call's two RTP directions (UDP 49120 and 19956 inside GTP):
    its largest silence is the outage found, to the microsecond."""
    out = subprocess.run(
        [require_binary("tshark"), "-r", GTP, "-Y", "udp.port == 19956", "-T", "fields", "-e", "frame.time_epoch"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    times = np.array(sorted(float(t) for t in out))
    k = int(np.argmax(np.diff(times)))
    (outage,) = read_capture(GTP).meta["capture_outages"]
    assert (outage["start"], outage["end"]) == (
        pytest.approx(times[k], abs=1e-6),
        pytest.approx(times[k + 1], abs=1e-6),
    )


def cut(source, target, start, end, only_from=None):
    """A copy of a real capture without its frames from ``start`` to ``end`` seconds after its
    first (only those sent by ``only_from``, when given), as a pcap of the same link type; and
    how many frames the call's relay sent in the window (the incoming stream's packets cut)."""
    with open(source, "rb") as f:
        reader = dpkt.pcapng.Reader(f) if str(source).endswith(".pcapng") else dpkt.pcap.Reader(f)
        linktype, frames = reader.datalink(), list(reader)
    t0, from_peer = frames[0][0], 0
    with open(target, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=linktype, nano=True)
        for ts, frame in frames:
            ip = dpkt.ethernet.Ethernet(frame).data
            sender = dpkt.utils.inet_to_str(ip.src) if isinstance(ip, dpkt.ip.IP) else None
            inside = start <= ts - t0 < end and (only_from is None or sender == only_from)
            if not inside:
                writer.writepkt(frame, ts)
            elif sender == PEER and isinstance(ip.data, dpkt.udp.UDP) and ip.data.sport == 3478:
                from_peer += 1
    return target, from_peer


def incoming(trace) -> dict:
    """The call's stream from the relay to the capture host (the other direction is the host's
    own sending, whose fates a receiver does not know)."""
    (info,) = [info for label, info in trace.meta["flows"].items() if label.startswith(f"{PEER}:3478>")]
    return info


def test_a_window_cut_from_a_real_call_is_an_outage_one_direction_cut_is_loss(tmp_path):
    """The same window cut twice: every frame (an outage: the incoming stream's holes there
    are not observed), and the relay's frames alone (the host still sends: the path's loss,
    the same sequence numbers lost)."""
    assert incoming(read_capture(CALL, skew="keep"))["lost"] == 0
    path, removed = cut(CALL, tmp_path / "cut.pcap", 10.0, 12.5)
    with pytest.warns(CaptureWarning, match="capture outage"):
        trace = read_capture(path, skew="keep")
    (outage,) = trace.meta["capture_outages"]
    assert 2.5 <= outage["seconds"] < 2.5 + 0.5  # the window, and the call's own spacing at its edges
    info = incoming(trace)
    assert info["lost"] == 0 and 10 <= info["capture_gap"] <= removed  # the RTP among the relay's frames
    assert trace.packets["fate"].eq("lost").sum() == 0

    path, removed_again = cut(CALL, tmp_path / "one.pcap", 10.0, 12.5, only_from=PEER)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        one = read_capture(path, skew="keep")
    assert not [w for w in said if "outage" in str(w.message)]
    assert one.meta["capture_outages"] == [] and removed_again == removed
    assert (incoming(one)["lost"], incoming(one).get("capture_gap", 0)) == (info["capture_gap"], 0)


def test_records_out_of_time_order_give_the_same_outages():
    """The real call's records as written (in time order: the fast path) and shuffled (a
    capture whose timestamps step back: sorted by flow and time first) find the same outage."""
    capture = decode_capture(GTP)
    records = capture.records
    assert np.all(np.diff(records["ts_ns"]) >= 0)
    found = capture_outages(records, capture.flows)
    assert found.shape == (1, 2)
    shuffled = records[np.random.default_rng(4).permutation(records.shape[0])]
    assert np.array_equal(capture_outages(shuffled, capture.flows), found)


def test_a_single_flow_silent_is_no_outage(tmp_path):
    """One direction only (the lab's iperf3 receiver capture, cut): nothing tells the capture's
    silence from the path's, so its holes stay losses."""
    source = "traces/captures/lab_receiver.pcap"
    capture = decode_capture(cut(source, tmp_path / "lab.pcap", 2.0, 2.0 + 2 * OUTAGE_MIN)[0])
    assert capture_outages(capture.records, capture.flows).shape == (0, 2)


def test_the_capture_s_own_drop_counters_are_read_and_warned_of(tmp_path):
    """pcapng interface statistics (spec 4.6: isb_ifrecv 4, isb_ifdrop 5, isb_osdrop 7): the last
    block of an interface holds its totals. A real capture's (Wireshark's dumpcap: 7,958 received,
    none dropped) reads quietly; a generated one that dropped 3 + 2 warns."""
    (real,) = decode_capture(CALL).interfaces.to_dict("records")
    assert (real["ifrecv"], real["ifdrop"], real["osdrop"]) == (7958, 0, None)
    assert read_capture(CALL, skew="keep").meta["capture_dropped"] == 0

    def statistics(recv, ifdrop, osdrop):
        options = b"".join(struct.pack("<HHQ", code, 8, value) for code, value in ((4, recv), (5, ifdrop), (7, osdrop)))
        return struct.pack("<III", 0, 0, 0) + options + struct.pack("<HH", 0, 0)

    ends = Endpoints()
    records = [
        ("epb", 0, 10**6 * (k + 1), Record(0, link_frame(1, ip_packet(ends, rtp_payload(k, 160 * k, 7), ip_id=k))))
        for k in range(20)
        if k != 9
    ]
    path = tmp_path / "dropped.pcapng"
    items = [*records, ("block", 5, statistics(10, 1, 0)), ("block", 5, statistics(20, 3, 2))]
    path.write_bytes(pcapng_bytes([([Iface(1)], items)]))
    with pytest.warns(CaptureWarning, match=r"dropped 5 packet\(s\) \(ifdrop 3, osdrop 2\)"):
        trace = read_capture(path, skew="keep", clock_rate=8000)
    assert trace.meta["capture_dropped"] == 5 and trace.packets["fate"].eq("lost").sum() == 1
    shown = trace._repr_html_()  # the notebook's display and the report's head say it, once
    assert "statistics say it dropped 5 packets" in shown and shown.count("statistics say") == 1
    assert "20 data packets," in shown  # no outage: no count of packets not observed


def test_a_hole_the_outage_fills_less_than_half_of_is_a_loss():
    """mark_outages by hand: arrivals at 0 and 10 s around a hole, an outage of 4 s inside it
    (less than half the hole's time): lost; an outage of 6 s: not observed."""
    import pandas as pd

    from ldanalyze.packets import FATE_DTYPE

    packets = pd.DataFrame(
        {
            "flow": pd.Categorical(["f"] * 3),
            "seq": [0, 1, 2],
            "t_recv": [0.0, np.nan, 10.0],
            "fate": pd.Categorical(["delivered", "lost", "delivered"], dtype=FATE_DTYPE),
            "reason": pd.Categorical(["", "seq-gap", ""]),
        }
    )
    kept, hidden, _ = mark_outages(packets, np.array([[3.0, 7.0]]))
    assert hidden == {} and kept["fate"].tolist() == ["delivered", "lost", "delivered"]
    gone, hidden, hid = mark_outages(packets, np.array([[2.0, 8.0]]))
    assert (
        hidden == {"f": 1}
        and hid.tolist() == [1]
        and gone["fate"].tolist()[1] == "unobserved"
        and gone["reason"].tolist()[1] == CAPTURE_GAP
    )
    assert packets["fate"].tolist()[1] == "lost"  # the caller's table is not modified
