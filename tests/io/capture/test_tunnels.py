"""Tunnelled captures (GTP-U, VXLAN, GRE, ERSPAN, IP-in-IP, nested): the kernel against its plain twin
on generated stacks, and against tshark on flows with known losses; what is not opened."""

from __future__ import annotations

import re
import subprocess
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III
from scapy.contrib.gtp import GTPEchoRequest, GTPHeader
from scapy.layers.inet import GRE, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw

from ldanalyze.cli import main
from ldanalyze.io.capture.fields import FieldSpec
from ldanalyze.io.capture.flows import tunnel_counts
from ldanalyze.io.capture.pcap import decode_capture, read_capture
from ldanalyze.io.capture.record import F_TUNNEL_DEEP, F_TUNNEL_OTHER

from ...conftest import needs_binary, require_binary
from ...naive import capture as naive_capture
from ...support.captures import T0, Record, write_pcap
from ...support.tunnels import FLOWS, KINDS, SENT, link, outer_ip, seq_payload, tunnel_capture, wrap
from .test_pcap_read import same_as_twin

NS = T0 * 10**9
SEQ_TS = FieldSpec.parse("seq=0:4,time=4:8:ns")


def decode(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return decode_capture(path)


def counted_as_the_twin(capture) -> None:
    """The counts by tunnel the walks keep as they decode are the records' own."""
    records = capture.records
    counted = naive_capture.tunnel_records(records["tunnel"].tolist(), records["flags"].tolist(), len(capture.tunnels))
    expected = tunnel_counts(np.array(counted), capture.tunnels)
    assert {k: capture.counts[k] for k in expected} == expected


@st.composite
def tunnelled(draw):
    """A frame of 0-6 nested tunnels around a UDP or TCP packet, maybe cut short, maybe a tunnel
    message that is not a carried packet; and the tunnel kinds, innermost first."""
    version = draw(st.sampled_from((4, 6)))
    packet = IP(src="10.0.0.1", dst="10.0.0.2") if version == 4 else IPv6(src="fd00::1", dst="fd00::2")
    body = draw(st.binary(min_size=0, max_size=40))
    packet = packet / (UDP(sport=5000, dport=6000) if draw(st.booleans()) else TCP(seq=7)) / Raw(body)
    kinds = draw(st.lists(st.sampled_from(KINDS), max_size=6))
    for depth, kind in enumerate(kinds):
        packet = wrap(kind, packet, draw(st.integers(0, 2**32 - 1)), depth)
    if draw(st.integers(0, 9)) == 0:  # a GTP message that carries no packet
        packet = outer_ip(4, 9) / UDP(sport=2152, dport=2152) / GTPHeader(gtp_type=1) / GTPEchoRequest()
        kinds = ["echo"]
    frame = link(packet)
    cut = draw(st.none() | st.integers(14, len(frame)))
    return Record(NS, frame, cut), kinds


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(frames=st.lists(tunnelled(), min_size=1, max_size=8))
def test_tunnels_as_the_twin_opens_them(tmp_path_factory, frames):
    path = tmp_path_factory.mktemp("tun") / "t.pcap"
    write_pcap(path, [r for r, _ in frames], 1)
    capture = same_as_twin(path)
    counted_as_the_twin(capture)
    for (record, kinds), r in zip(frames, capture.records):
        if kinds == ["echo"] and record.snaplen is None:
            assert r["flags"] & F_TUNNEL_OTHER and r["tunnel"] == -1
        elif record.snaplen is None and 0 < len(kinds) <= 4 and kinds != ["echo"]:
            assert r["status"] == 0 and r["tunnel"] >= 0
            depth, t = 0, int(r["tunnel"])
            while t >= 0:
                depth, t = depth + 1, int(capture.tunnels["outer"].iat[t])
            assert depth == len(kinds)


# -- tshark ------------------------------------------------------------------------------------
def tshark_flows(path) -> dict:
    """(inner src, inner dst, tunnel ids outermost first) → sequence numbers, as tshark reads them."""
    fields = ("frame.protocols", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "udp.payload")
    fields += ("gtp.teid", "vxlan.vni", "gre.key", "erspan.spanid")
    cmd = [require_binary("tshark"), "-n", "-r", str(path), "-T", "fields", "-E", "separator=;"]
    out = subprocess.run(cmd + [a for f in fields for a in ("-e", f)], check=True, capture_output=True, text=True)
    flows: dict = {}
    for line in out.stdout.splitlines():
        protocols, src4, dst4, src6, dst6, payload, teid, vni, key, session = line.split(";")
        layers = [p for p in protocols.split(":") if p in ("ip", "ipv6")]
        src, dst = (src4, dst4) if layers[-1] == "ip" else (src6, dst6)
        ids = tuple(int(x, 0) for x in (teid, vni, key, session) if x for x in x.split(","))
        seq = int(payload.split(",")[-1][:8], 16)
        flows.setdefault((src.split(",")[-1], dst.split(",")[-1], tuple(sorted(ids))), []).append(seq)
    return flows


@needs_binary("tshark")
def test_tshark_reads_the_same_flows_and_sequence_numbers_inside_tunnels(tmp_path):
    path = tmp_path / "tunnels.pcap"
    tunnel_capture(path)
    capture = decode(path)
    tunnels = capture.tunnels
    mine = {}
    for f in capture.flows.itertuples():
        ids, t = [], int(f.tunnel)
        while t >= 0:
            if tunnels["id"].iat[t] >= 0:
                ids.append(int(tunnels["id"].iat[t]))
            t = int(tunnels["outer"].iat[t])
        rows = capture.records["flow"] == f.Index
        seqs = capture.records["head"][rows, :4].copy().view(">u4")[:, 0].tolist()
        mine[(f.src, f.dst, tuple(sorted(ids)))] = seqs
    assert mine == tshark_flows(path)
    assert len(mine) == len(FLOWS)
    assert capture.counts["tunnels"] == {
        "gtpu": 3 * SENT - 3,  # the last flow's 4in4 travels in GTP-U
        "vxlan": 3 * SENT - 5,  # a flow's ERSPAN III travels in VXLAN
        "gre": 3 * SENT - 1,  # a flow's ERSPAN I travels in GRE
        "erspan": 3 * SENT - 3,
        "6in4": SENT - 2,
        "4in6": SENT - 1,
        "4in4": SENT,
    }

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_capture(path, payload=SEQ_TS, skew="keep", capture_host="none")
    lost = trace.packets[trace.packets["fate"] == "lost"]
    assert sorted(trace.meta["flows"]) == sorted(capture.flows["label"])
    for f in capture.flows.itertuples():
        # the k-th flow's innermost tunnel has the outer addresses of level 10 k (192.0.10k.1, 2001:db8:10k::1)
        level = int(re.split("[.:]", tunnels["src"].iat[f.tunnel])[2])
        dropped = FLOWS[level // 10][3]
        # a receiver knows the gaps between arrivals, not a loss before the first or after the last
        gaps = {s for s in dropped if 0 < s < SENT - 1}
        label = f.label
        assert set(lost.loc[lost["flow"] == label, "seq"]) == gaps, label


def test_what_is_not_opened_is_counted(tmp_path):
    inner = IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5000, dport=6000) / Raw(seq_payload(1))
    deep = inner
    for depth in range(5):
        deep = wrap("ip-in-4", deep, 0, depth)
    arp = wrap("vxlan", IP(), 5)
    arp[VXLAN].remove_payload()
    arp = arp / Ether(src="02:00:00:00:00:03", dst="ff:ff:ff:ff:ff:ff") / ARP()
    ext = link(wrap("gtpu-ext", inner, 3))
    echo = outer_ip(4, 0) / UDP(sport=2152, dport=2152) / GTPHeader(gtp_type=1) / GTPEchoRequest()
    records = [Record(NS, link(deep)), Record(NS, link(arp)), Record(NS, ext, 14 + 20 + 8 + 12 + 2)]
    path = tmp_path / "edges.pcap"
    write_pcap(path, records + [Record(NS, link(echo))], 1)
    capture = same_as_twin(path)
    counted_as_the_twin(capture)
    status = capture.records["status"].tolist()
    assert status == [0, 2, 1, 0]  # decoded, not_ip, too_short (cut in the extension header), decoded
    assert capture.counts["tunnel_too_deep"] == 1 and capture.counts["tunnel_other"] == 1
    assert capture.records["flags"][0] & F_TUNNEL_DEEP
    # the deepest packet opened is the fifth tunnel's: IP-in-IP between level 0's ends
    assert capture.flows["label"].iat[0].startswith("192.0.0.1>192.0.0.2/4/4in4@192.0.1.1>192.0.1.2/")
    assert capture.flows["label"].iat[1] == "192.0.0.1:2152>192.0.0.2:2152/udp"
    # opened: the four of the deep one, counted once; the cut GTP-U and the ARP in VXLAN gave no packet
    assert capture.counts["tunnels"] == {"4in4": 1}


def test_records_are_counted_by_tunnel_as_the_table_grows(tmp_path):
    """Past 12 tunnels the table doubles (``walk.Output.grow_flows``), and the counts with it."""
    inner = IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5000, dport=6000)
    records = [Record(NS + k, link(wrap("gtpu", inner / Raw(seq_payload(k)), k % 40))) for k in range(200)]
    deep = inner / Raw(seq_payload(0))
    for depth in range(5):
        deep = wrap("ip-in-4", deep, 0, depth)
    records.insert(150, Record(NS + 150, link(deep)))
    path = tmp_path / "many.pcap"
    write_pcap(path, records, 1)
    capture = same_as_twin(path)
    counted_as_the_twin(capture)
    assert len(capture.tunnels) == 44  # 40 TEIDs and the deep packet's 4 opened
    assert capture.counts["tunnels"] == {"gtpu": 200, "4in4": 1} and capture.counts["tunnel_too_deep"] == 1


@pytest.mark.parametrize("whole", [True, False])
def test_inspect_says_what_was_opened(tmp_path, capsys, whole):
    path = tmp_path / "tunnels.pcap"
    tunnel_capture(path)
    args = ["inspect", str(path), "--field", "seq=0:4,time=4:8:ns"] + ([] if whole else ["--flow-at-a-time"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
    out = capsys.readouterr().out
    opened = re.search(r"tunnels opened \(packets by kind\): (.*?); not opened: (\d+)", out)
    assert opened, out
    counts = dict(item.split() for item in opened[1].split(", "))
    assert {k: int(v) for k, v in counts.items()} == decode(path).counts["tunnels"]
    assert "/gtpu=0x5678@192.0.10.1>192.0.10.2" in out


def test_erspan_types_and_what_is_not_opened(tmp_path):
    """ERSPAN I (no GRE sequence number) has no header and no session; II and III carry the
    session; a III frame type other than Ethernet, or a header of another version, is not
    opened; a header cut short is ``too_short``. VXLAN is found from its source port too."""
    inner = IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5000, dport=6000) / Raw(seq_payload(1))
    ether = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    ip_frame = outer_ip(4, 0) / GRE(proto=0x22EB) / ERSPAN_III(session_id=9, ft=2) / inner
    bad_version = outer_ip(4, 0) / GRE(proto=0x88BE, seqnum_present=1) / ERSPAN_II(ver=2) / ether / inner
    from_port = outer_ip(4, 0) / UDP(sport=4789, dport=4790) / VXLAN(vni=3) / ether / inner
    frames = [
        link(wrap("erspan1", inner)),
        link(wrap("erspan2", inner, 1023 + 1024 * 5)),  # the session is 10 bits
        link(wrap("erspan3-o", inner, 77)),
        link(ip_frame),
        link(bad_version),
        link(wrap("erspan3", inner, 5)),
        link(from_port),
    ]
    records = [Record(NS + k, f) for k, f in enumerate(frames)]
    records[5] = Record(NS + 5, frames[5], 14 + 20 + 4 + 10)  # cut in the ERSPAN III header
    path = tmp_path / "erspan.pcap"
    write_pcap(path, records, 1)
    capture = same_as_twin(path)
    r = capture.records
    assert r["status"].tolist() == [0, 0, 0, 0, 0, 1, 0]
    assert [capture.tunnels["id"].iat[t] if t >= 0 else None for t in r["tunnel"]] == [
        -1,
        1023,
        77,
        None,
        None,
        None,
        3,
    ]
    assert (r["flags"][3:5] & F_TUNNEL_OTHER).all() and capture.counts["tunnel_other"] == 2
    assert capture.counts["tunnels"] == {"erspan": 3, "vxlan": 1}
    assert capture.flows["label"].iat[r["flow"][2]].endswith("/erspan=77@192.0.0.1>192.0.0.2")
