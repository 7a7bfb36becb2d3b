"""Reading captures (issue 5, sections 1 and 7): containers, link types, flows, bad input.

Hand-built captures pin what each container, link type and header must give; captures drawn
by hypothesis hold the numba kernels to the plain twin (``naive_capture.capture_records``); bad input
must raise a TraceError, or warn (CaptureWarning), naming the file and the byte offset.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import struct
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldanalyze.errors import TraceError
from ldanalyze.io.capture.pcap import CaptureWarning, decode_capture, list_flows, read_capture
from ldanalyze.io.capture.record import (
    F_FIRST_FRAGMENT,
    F_TCP_MSS,
    F_TCP_SACK,
    F_TCP_TIMESTAMP,
    F_TCP_WSCALE,
    F_TUNNEL_DEEP,
    F_TUNNEL_OTHER,
    M_DATA,
    M_PROTECTED,
    M_QOS,
    M_RETRY,
    NO_MAC_SEQ,
    NO_TIME,
    STATUS_NAMES,
)
from ldanalyze.io.capture.source import capture_format

from ...naive import capture as naive_capture
from ...support.captures import (
    CONTAINERS,
    T0,
    Endpoints,
    Iface,
    Record,
    frame_lists,
    ip_packet,
    link_frame,
    pcapng_bytes,
    rtp_payload,
    write_container,
    write_pcap,
    write_scapy_pcapng,
)

NS = T0 * 10**9
UDP = Endpoints()


def decode(path, **options):
    """decode_capture, and the messages of the CaptureWarnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capture = decode_capture(path, **options)
    return capture, [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]


def udp_frame(linktype=1, payload=b"hello world, this is a payload", ends=UDP, **options):
    return link_frame(linktype, ip_packet(ends, payload, ip_id=77), **options)


def as_twin(capture):
    """The kernel's records in the twin's dict format."""
    out = []
    for r in capture.records:
        flags = int(r["flags"])
        rec = {
            "ts_ns": None if r["ts_ns"] == NO_TIME else int(r["ts_ns"]),
            "offset": int(r["offset"]),
            "iface": int(r["iface"]),
            "caplen": int(r["caplen"]),
            "wirelen": int(r["wirelen"]),
            "status": STATUS_NAMES[r["status"]],
            "flow": None,
            "first_fragment": bool(flags & F_FIRST_FRAGMENT),
            "ip_ver": int(r["ip_ver"]),
            "proto": int(r["proto"]),
            "ttl": int(r["ttl"]),
            "ip_len": int(r["ip_len"]),
            "ip_id": int(r["ip_id"]),
            "payload_len": int(r["payload_len"]),
            "head": bytes(r["head"][: r["head_len"]]),
            "payload_hash": int(r["payload_hash"]),
            "tcp_seq": int(r["tcp_seq"]),
            "tcp_ack": int(r["tcp_ack"]),
            "tcp_flags": int(r["tcp_flags"]),
            "tcp_tsval": int(r["tcp_tsval"]) if flags & F_TCP_TIMESTAMP else None,
            "tcp_tsecr": int(r["tcp_tsecr"]) if flags & F_TCP_TIMESTAMP else None,
            "tcp_mss": int(r["tcp_mss"]) if flags & F_TCP_MSS else None,
            "tcp_win": int(r["tcp_win"]),
            "tcp_wscale": int(r["tcp_wscale"]) if flags & F_TCP_WSCALE else None,
            "tcp_sack": _sack_blocks(r) if flags & F_TCP_SACK else None,
            "tunnels": tunnel_chain(capture.tunnels, int(r["tunnel"])),
            "tunnel_other": bool(flags & F_TUNNEL_OTHER),
            "tunnel_too_deep": bool(flags & F_TUNNEL_DEEP),
            "mac": None
            if r["mac_seq"] == NO_MAC_SEQ
            else (
                int(r["mac_seq"]),
                bool(r["mac_flags"] & M_RETRY),
                bool(r["mac_flags"] & M_DATA),
                bool(r["mac_flags"] & M_QOS),
                int(r["mac_space"]),
                bool(r["mac_flags"] & M_PROTECTED),
            ),
        }
        if r["flow"] >= 0:
            f = capture.flows.iloc[int(r["flow"])]
            chain = tunnel_chain(capture.tunnels, int(f.tunnel))
            rec["flow"] = (int(f.ip_ver), int(f.proto), f.src, int(f.sport), f.dst, int(f.dport), chain)
        out.append(rec)
    return out


def _sack_blocks(r):
    """(blocks in the option, the (left, right) edges head keeps) of a record, as the twin gives them."""
    kept = min(int(r["tcp_sack_n"]), r["head"].shape[0] // 8) if r["payload_len"] == 0 else 0
    edges = np.frombuffer(bytes(r["head"][: 8 * kept]), ">u4").tolist()
    return int(r["tcp_sack_n"]), tuple(zip(edges[::2], edges[1::2]))


def tunnel_chain(tunnels, tunnel):
    """(kind, id or None, outer src, outer dst) of a record's tunnels, outermost first (the twin's)."""
    chain = []
    while tunnel >= 0:
        t = tunnels.iloc[tunnel]
        chain.append((t.kind, None if t.id < 0 else int(t.id), t.src, t.dst))
        tunnel = int(t.outer)
    return tuple(reversed(chain))


def same_as_twin(path, **options):
    capture, _ = decode(path, **options)
    twin = naive_capture.capture_records(path.read_bytes())
    got = as_twin(capture)
    assert len(got) == len(twin)
    for g, t in zip(got, twin):
        if t["status"] not in ("decoded", "ip_fragment"):  # fields after the failure are not defined
            g = {k: g[k] for k in ("ts_ns", "offset", "iface", "caplen", "wirelen", "status")}
            t = {k: t[k] for k in g}
        elif t["status"] == "ip_fragment":
            keys = ("ts_ns", "offset", "iface", "caplen", "status", "ip_ver", "proto", "ttl", "ip_len", "ip_id")
            g, t = {k: g[k] for k in keys}, {k: t[k] for k in keys}
        assert g == t
    return capture


# -- containers --------------------------------------------------------------------------------
@pytest.mark.parametrize("nano", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_pcap_microseconds_nanoseconds_both_byte_orders(tmp_path, nano, big):
    path = tmp_path / "c.pcap"
    times = [NS + 123_456_789, NS + 1_000_000_001, NS + 2_999_999_999]
    write_pcap(path, [Record(t, udp_frame()) for t in times], 1, nano=nano, big=big)
    capture, notes = decode(path)
    expected = times if nano else [t // 1000 * 1000 for t in times]  # µs files keep whole µs
    assert capture.records["ts_ns"].tolist() == expected
    assert capture.format == "pcap" and capture_format(path) == "pcap" and notes == []
    assert capture.times()[0] == pytest.approx(expected[0] / 1e9, abs=1e-9)


@pytest.mark.parametrize(
    "tsresol, tsoffset, ticks, ns",
    [
        (None, 0, 1_700_000_000_123_456, NS + 123_456_000),  # default: microseconds
        (9, 0, NS + 7, NS + 7),
        (3, 0, T0 * 1000 + 250, NS + 250_000_000),
        (12, 0, 123_456_789_012, 123_456_789),  # picoseconds: sub-ns truncated
        (0x80 | 10, 0, (T0 << 10) + 512, NS + 500_000_000),  # 2^-10 s
        (0x80 | 30, 0, (T0 << 30) + 3, NS + 2),  # 3 · 2^-30 s = 2.79 ns
        (0x80 | 40, 0, (5 << 40) + (1 << 39), 5_500_000_000),  # 2^-40: beyond 64-bit fixed point
        (None, 100, 5_000_000, 105_000_000_000),  # if_tsoffset adds seconds
        (6, -10, 20_000_001, 10_000_001_000),
    ],
)
def test_pcapng_timestamp_resolution_and_offset(tmp_path, tsresol, tsoffset, ticks, ns):
    iface = Iface(1, tsresol=tsresol, tsoffset=tsoffset)
    assert iface.ns(ticks) == ns  # the hand-computed value agrees with the fixture's rule
    path = tmp_path / "c.pcapng"
    path.write_bytes(pcapng_bytes([([iface], [("epb", 0, ticks, Record(0, udp_frame()))])]))
    capture, notes = decode(path)
    assert capture.records["ts_ns"].tolist() == [ns] and notes == []
    assert capture.interfaces["tsoffset"].tolist() == [tsoffset]


def sections_capture(tmp_path):
    """Two sections (little- then big-endian), three interfaces with different link types,
    every packet block type, a name resolution block and a block of unknown type."""
    e1, e2, e3 = Iface(1, tsresol=9), Iface(101), Iface(276, tsresol=0x80 | 20, tsoffset=3)
    frame = {lt: udp_frame(lt) for lt in (1, 101, 276)}
    first = pcapng_bytes(
        [
            (
                [e1, e2],
                [
                    ("epb", 0, e1.ticks(NS + 1), Record(0, frame[1])),
                    ("block", 4, b"\x00\x00\x00\x00"),  # name resolution: skipped quietly
                    ("epb", 1, e2.ticks(NS + 2000), Record(0, frame[101])),
                    ("spb", Record(0, frame[1])),
                    ("block", 0x1234, b"abcd"),  # not in the specification
                ],
            )
        ]
    )
    second = pcapng_bytes([([e3], [("pb", 0, e3.ticks(NS + 5 * 10**9), Record(0, frame[276]))])], big=True)
    path = tmp_path / "s.pcapng"
    path.write_bytes(first + second)
    return path, len(first) - len(pcapng_bytes([([], [("block", 0x1234, b"abcd")])])) + 28


def test_pcapng_sections_interfaces_and_blocks(tmp_path):
    path, unknown_at = sections_capture(tmp_path)
    capture, notes = decode(path)
    r = capture.records
    assert r["iface"].tolist() == [0, 1, 0, 2]
    assert capture.interfaces["link"].tolist() == ["ethernet", "raw", "linux-sll2"]
    assert capture.interfaces["section"].tolist() == [0, 0, 1]
    assert capture.counts["sections"] == 2 and capture.counts["decoded"] == 4
    assert r["ts_ns"][[0, 1]].tolist() == [NS + 1, NS + 2000]
    assert r["ts_ns"][2] == NO_TIME and math.isnan(capture.times()[2])
    assert r["ts_ns"][3] == Iface(276, tsresol=0x80 | 20, tsoffset=3).ns(
        Iface(276, tsresol=0x80 | 20, tsoffset=3).ticks(NS + 5 * 10**9)
    )
    assert len(capture.flows) == 1  # the same 5-tuple on every interface
    assert capture.counts["blocks_skipped"] == {"0x4": 1, "0x1234": 1}
    assert any("1 packets from simple packet blocks carry no timestamp" in n for n in notes)
    unknown = [n for n in notes if "unknown type 0x1234" in n]
    assert len(unknown) == 1 and str(path) in unknown[0] and f"first at byte {unknown_at}" in unknown[0]
    same_as_twin(path)


def test_simple_packet_block_takes_interface_zero_snaplen(tmp_path):
    frame = udp_frame(payload=bytes(100))
    path = tmp_path / "spb.pcapng"
    path.write_bytes(pcapng_bytes([([Iface(1, snaplen=60)], [("spb", Record(0, frame))])]))
    capture, _ = decode(path)
    assert capture.records["caplen"].tolist() == [60] and capture.records["wirelen"].tolist() == [len(frame)]
    assert capture.counts["decoded"] == 1 and capture.records["head_len"][0] == 16


def test_scapy_pcapng_with_several_link_types(tmp_path):
    path = tmp_path / "scapy.pcapng"
    items = [(lt, Record(NS + k * 1000, udp_frame(lt))) for k, lt in enumerate((1, 101, 113, 1))]
    write_scapy_pcapng(path, items)
    capture = same_as_twin(path)
    assert capture.counts["decoded"] == 4 and capture.records["iface"].tolist() == [0, 1, 2, 0]
    assert capture.format == "pcapng" and capture_format(path) == "pcapng"


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_gzip_and_small_chunks_read_the_same(tmp_path, kind):
    records = [Record(NS + k, udp_frame(payload=bytes(k * 37 % 300))) for k in range(40)]
    plain = tmp_path / f"c.{kind}"
    if kind == "pcap":
        write_pcap(plain, records, 1)
    else:
        iface = Iface(1, tsresol=9)
        body = [("epb", 0, r.ts_ns, r) for r in records]
        plain.write_bytes(pcapng_bytes([([iface], body[:20]), ([iface], body[20:])], big=True))
    packed = tmp_path / f"c.{kind}.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    reference, _ = decode(plain)
    for other in (decode(packed)[0], decode(plain, chunk_bytes=64)[0], decode(packed, chunk_bytes=100)[0]):
        assert np.array_equal(other.records, reference.records)
    assert capture_format(packed) == kind


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=frame_lists(), container=st.sampled_from(CONTAINERS))
def test_kernel_agrees_with_the_twin(tmp_path_factory, data, container):
    """... and so does the kernel run interpreted (ldanalyze/tiering.py), byte for byte."""
    linktype, records = data
    path = tmp_path_factory.mktemp("twin") / "c"
    write_container(path, container, linktype, records)
    capture = same_as_twin(path)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("LDANALYZE_KERNELS", "interpreted")
        interpreted, _ = decode(path)
    assert interpreted.records.tobytes() == capture.records.tobytes() and interpreted.flows.equals(capture.flows)


# -- link types and headers --------------------------------------------------------------------
@pytest.mark.parametrize("linktype", [0, 1, 101, 105, 108, 113, 127, 192, 228, 276])
def test_every_link_type_gives_the_same_packet(tmp_path, linktype):
    path = tmp_path / "c.pcap"
    write_pcap(path, [Record(NS, udp_frame(linktype))], linktype)
    capture = same_as_twin(path)
    r = capture.records[0]
    assert STATUS_NAMES[r["status"]] == "decoded"
    assert capture.flows["label"].tolist() == ["10.0.0.1:5004>10.0.0.2:6000/udp"]
    assert (r["ip_len"], r["ip_id"], r["payload_len"]) == (20 + 8 + 30, 77, 30)
    assert bytes(r["head"]) == b"hello world, thi"


def test_ipv6_on_linktype_229_and_on_null_with_every_address_family(tmp_path):
    six = Endpoints(6, "udp", "2001:db8::1", "2001:db8::2", 5004, 6000)
    frames = [(229, udp_frame(229, ends=six))] + [
        (0, udp_frame(0, ends=six, af_order=order, af6=af)) for order in "<>" for af in (10, 24, 28, 30)
    ]
    for linktype, frame in frames:
        path = tmp_path / f"{linktype}.pcap"
        write_pcap(path, [Record(NS, frame)], linktype)
        capture, _ = decode(path)
        assert capture.flows["label"].tolist() == ["[2001:db8::1]:5004>[2001:db8::2]:6000/udp"]
        assert capture.records["ip_len"][0] == 40 + 8 + 30


@pytest.mark.parametrize("vlans", [(0x8100,), (0x88A8, 0x8100), (0x9100, 0x8100), (0x8100, 0x8100)])
@pytest.mark.parametrize("linktype", [1, 113, 276])
def test_vlan_and_qinq_tags(tmp_path, vlans, linktype):
    path = tmp_path / "v.pcap"
    write_pcap(path, [Record(NS, udp_frame(linktype, vlans=vlans))], linktype)
    capture = same_as_twin(path)
    assert capture.counts["decoded"] == 1 and capture.records["payload_len"][0] == 30


def test_wifi_frames_that_carry_no_ip_are_counted(tmp_path):
    kinds = ["data", "qos", "qos-4addr", "beacon", "null", "protected"]
    path = tmp_path / "w.pcap"
    write_pcap(path, [Record(NS + k, udp_frame(105, wifi=w)) for k, w in enumerate(kinds)], 105)
    capture = same_as_twin(path)
    assert [STATUS_NAMES[s] for s in capture.records["status"]] == [
        "decoded",
        "decoded",
        "decoded",
        "wifi_not_data",
        "wifi_not_data",
        "wifi_protected",
    ]
    assert capture.counts["wifi_not_data"] == 2 and capture.counts["wifi_protected"] == 1
    assert [bool(f & M_PROTECTED) for f in capture.records["mac_flags"]] == [False] * 5 + [True]


@pytest.mark.parametrize("linktype", [105, 127, 192])
def test_an_80211_frame_of_another_protocol_version_is_malformed_and_unnumbered(tmp_path, linktype):
    """Version 0 is the only 802.11 header layout; a frame showing another is one received
    corrupt by a driver that checked no FCS (Wireshark's wpa-Induction.pcap has seven, some with
    the retry bit set): tshark reads no sequence number or retry bit in it, nor do we."""
    path = tmp_path / "v.pcap"
    kinds = [(k, v) for k in ("data", "qos", "beacon") for v in (0, 1, 2, 3)]
    frames = [
        udp_frame(linktype, wifi=k, wifi_version=v, wifi_seq=100 + i, wifi_retry=True) for i, (k, v) in enumerate(kinds)
    ]
    write_pcap(path, [Record(NS + i, f) for i, f in enumerate(frames)], linktype)
    capture = same_as_twin(path)
    r = capture.records
    for i, (kind, version) in enumerate(kinds):
        status = STATUS_NAMES[r["status"][i]]
        if version:
            assert (status, r["mac_seq"][i], r["mac_flags"][i]) == ("malformed", NO_MAC_SEQ, 0), (kind, version)
        else:
            assert status == ("wifi_not_data" if kind == "beacon" else "decoded")
            assert (r["mac_seq"][i], r["mac_flags"][i] & M_RETRY) == (100 + i, M_RETRY)
    assert capture.counts["malformed"] == 9


@pytest.mark.parametrize(
    "flags, status",
    [("", "decoded"), ("TSFT", "decoded"), ("pad", "decoded"), ("TSFT+pad", "decoded"), ("badFCS", "bad_fcs")],
)
def test_radiotap_length_and_flags(tmp_path, flags, status):
    path = tmp_path / "r.pcap"
    write_pcap(path, [Record(NS, udp_frame(127, wifi="qos", radiotap=flags))], 127)
    capture = same_as_twin(path)
    assert STATUS_NAMES[capture.records["status"][0]] == status


def test_ipv4_options_and_ipv6_extension_headers(tmp_path):
    six = Endpoints(6, "udp", "2001:db8::1", "2001:db8::2", 5004, 6000)
    packets = [
        ip_packet(UDP, b"x" * 20, ip_options=True, ip_id=5),
        ip_packet(six, b"x" * 20, ext=("hbh", "routing", "frag", "dest"), ip_id=99),
    ]
    path = tmp_path / "o.pcap"
    write_pcap(path, [Record(NS + k, link_frame(1, p)) for k, p in enumerate(packets)], 1)
    capture = same_as_twin(path)
    r = capture.records
    assert r["payload_len"].tolist() == [20, 20] and r["ip_len"].tolist() == [len(bytes(p)) for p in packets]
    assert r["ip_id"].tolist() == [5, 99]  # the IPv6 id comes from its fragment header
    assert capture.flows["sport"].tolist() == [5004, 5004]


def test_fragments_first_keeps_ports_rest_counted(tmp_path):
    from scapy.layers.inet import fragment

    packet = ip_packet(UDP, bytes(100), ip_id=4242)
    pieces = fragment(packet, fragsize=40)
    path = tmp_path / "f.pcap"
    write_pcap(path, [Record(NS + k, link_frame(1, p)) for k, p in enumerate(pieces)], 1)
    capture = same_as_twin(path)
    r = capture.records
    assert [STATUS_NAMES[s] for s in r["status"]] == ["decoded", "ip_fragment", "ip_fragment"]
    assert r["flow"].tolist() == [0, -1, -1] and r["flags"][0] & F_FIRST_FRAGMENT
    assert r["ip_len"][0] == 20 + 8 + 100  # the whole datagram, from the UDP length
    assert r["ip_id"].tolist() == [4242] * 3 and capture.counts["ip_fragment"] == 2


def test_records_cut_before_their_headers_are_counted_not_guessed(tmp_path):
    frame = udp_frame()
    path = tmp_path / "t.pcap"
    cuts = [len(frame), 14 + 19, 14 + 20 + 7, 14 + 20 + 8, 10]
    write_pcap(path, [Record(NS + k, frame, snaplen=c) for k, c in enumerate(cuts)], 1)
    capture, notes = decode(path)
    r = capture.records
    assert [STATUS_NAMES[s] for s in r["status"]] == ["decoded", "too_short", "too_short", "decoded", "too_short"]
    assert r["flow"].tolist() == [0, -1, -1, 0, -1]
    assert r["head_len"][3] == 0 and r["payload_hash"][3] == 0  # payload cut: flow, but no hash
    assert capture.counts["too_short"] == 3
    offset = 24 + (16 + len(frame))
    assert notes == [
        (
            f"{path}: 3 packets too short to decode (cut by the snap length before the headers their "
            f"flow needs; first at byte {offset}): they have no flow"
        )
    ]


def test_tcp_options(tmp_path):
    tcp = Endpoints(proto="tcp", sport=40000, dport=80)
    packet = ip_packet(tcp, b"data", tcp_seq=2**32 - 5, tcp_flags="S", tsval=123456, mss=1400)
    path = tmp_path / "tcp.pcap"
    write_pcap(path, [Record(NS, link_frame(1, packet))], 1)
    r = same_as_twin(path).records[0]
    assert (r["tcp_seq"], r["tcp_tsval"], r["tcp_mss"], r["tcp_flags"]) == (2**32 - 5, 123456, 1400, 0x02)


# -- flows -------------------------------------------------------------------------------------
def test_list_flows(tmp_path):
    back = Endpoints(src="10.0.0.2", dst="10.0.0.1", sport=6000, dport=5004)
    ping = Endpoints(proto="icmp")
    records = [Record(NS + 20_000_000 * k, link_frame(1, ip_packet(UDP, rtp_payload(k, 160 * k, 7)))) for k in range(5)]
    records += [Record(NS + 1, udp_frame(ends=back)), Record(NS + 2, udp_frame(ends=ping))]
    path = tmp_path / "f.pcap"
    write_pcap(path, sorted(records, key=lambda r: r.ts_ns), 1)
    flows = list_flows(path)
    assert flows["flow"].tolist() == [
        "10.0.0.1:5004>10.0.0.2:6000/udp",
        "10.0.0.2:6000>10.0.0.1:5004/udp",
        "10.0.0.1>10.0.0.2/icmp",
    ]
    rtp = flows.iloc[0]
    assert (rtp.packets, rtp.bytes, rtp.payload, rtp.proto) == (5, 5 * (20 + 8 + 172), "rtp", "udp")
    assert (rtp["first"], rtp["last"]) == (pytest.approx(T0), pytest.approx(T0 + 0.08))
    assert flows["payload"].tolist()[1:] == ["", ""]


def test_many_flows_grow_the_flow_table(tmp_path):
    ends = [Endpoints(sport=1000 + k, dport=2000 + k % 7) for k in range(1500)]
    path = tmp_path / "m.pcap"
    write_pcap(path, [Record(NS + k, udp_frame(ends=e)) for k, e in enumerate(ends + ends[::-1])], 1)
    capture, _ = decode(path)
    assert len(capture.flows) == 1500
    labels = capture.flows["label"].to_numpy()[capture.records["flow"]]
    assert labels.tolist() == [f"10.0.0.1:{e.sport}>10.0.0.2:{e.dport}/udp" for e in ends + ends[::-1]]


# -- bad input ---------------------------------------------------------------------------------
def expect_error(path, *fragments, offset=None, reader=decode_capture, **options):
    with pytest.raises(TraceError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader(path, **options)
    message = str(info.value)
    assert str(path) in message
    if offset is not None:
        assert info.value.offset == offset and f": byte {offset}:" in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def one_record_pcap(tmp_path, name="c.pcap", **options):
    path = tmp_path / name
    write_pcap(path, [Record(NS, udp_frame(**options)), Record(NS + 1, udp_frame(**options))], 1)
    return path


def test_empty_and_too_short_files(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    expect_error(tmp_path / "empty", "the capture is empty")
    (tmp_path / "tiny").write_bytes(b"\xd4\xc3")
    expect_error(tmp_path / "tiny", "not a capture: only 2 bytes", offset=0)
    (tmp_path / "header").write_bytes(one_record_pcap(tmp_path).read_bytes()[:20])
    expect_error(tmp_path / "header", "truncated pcap file header (20 of 24 bytes)", offset=0)
    expect_error(tmp_path / "missing", "cannot open")


def test_bad_magic(tmp_path):
    path = tmp_path / "text.tr"
    path.write_text("r 1.0 0 1 cbr 100 ------- 1 0.1 1.1 0 0\n")
    expect_error(path, "not a pcap or pcapng capture: bad magic number 0x7220312e", offset=0)
    assert capture_format(path) is None
    path.write_bytes(struct.pack("<I", 0xA1B2CD34) + bytes(40))
    expect_error(path, "Kuznetzov", offset=0)
    data = bytearray(one_record_pcap(tmp_path).read_bytes())
    data[4:6] = struct.pack("<H", 3)
    path.write_bytes(bytes(data))
    expect_error(path, "unsupported pcap version 3.4", offset=4)


def test_truncated_last_record_warns_and_keeps_the_rest(tmp_path):
    good = one_record_pcap(tmp_path).read_bytes()
    path = tmp_path / "cut.pcap"
    path.write_bytes(good[:-10])
    capture, notes = decode(path)
    second = 24 + 16 + len(udp_frame())
    assert len(capture.records) == 1 and capture.counts["truncated_records"] == 1
    assert notes == [
        (
            f"{path}: the capture ends inside a record at byte {second} "
            f"({16 + len(udp_frame()) - 10} of {16 + len(udp_frame())} bytes): that record is ignored"
        )
    ]
    path.write_bytes(good[: second + 7])  # cut inside the record header
    capture, notes = decode(path)
    assert len(capture.records) == 1 and f"at byte {second} (7 of 16 bytes)" in notes[0]


def test_corrupt_record_length(tmp_path):
    data = bytearray(one_record_pcap(tmp_path).read_bytes())
    second = 24 + 16 + len(udp_frame())
    data[second + 8 : second + 12] = struct.pack("<I", 10**8)
    path = tmp_path / "bad.pcap"
    path.write_bytes(bytes(data))
    expect_error(path, "record claims 100000000 captured bytes", "corrupt", offset=second)


def test_unsupported_link_type(tmp_path):
    path = tmp_path / "lt.pcap"
    write_pcap(path, [Record(NS, b"\x00" * 40)], 147)
    expect_error(path, "unsupported link type 147", "1 ethernet", offset=20)
    ng = tmp_path / "lt.pcapng"
    ng.write_bytes(
        pcapng_bytes(
            [
                (
                    [Iface(1), Iface(147)],
                    [
                        ("epb", 0, 0, Record(0, udp_frame())),
                        ("epb", 1, 0, Record(0, b"\x00" * 40)),
                        ("epb", 1, 0, Record(0, b"\x00" * 40)),
                    ],
                )
            ]
        )
    )
    capture, notes = decode(ng)
    assert capture.counts["unsupported_link"] == 2 and capture.counts["decoded"] == 1
    second_idb = len(pcapng_bytes([([Iface(1)], [])]))
    assert notes == [
        (
            f"{ng}: 2 packets on interface 1 (link type 147, described at byte {second_idb}) skipped: "
            "link type not supported"
        )
    ]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b[:32] + struct.pack("<I", 30) + b[36:], "has length 30 (a multiple of 4"),
        (lambda b: b[:-4] + struct.pack("<I", 12), "does not end with its length"),
        (lambda b: b[:24] + struct.pack("<I", 32) + b[28:], "block of type 0xa0d0d0a and length 28 does not end"),
    ],
)
def test_pcapng_corrupt_blocks(tmp_path, damage, message):
    body = pcapng_bytes([([Iface(1)], [("epb", 0, 0, Record(0, udp_frame()))])])
    path = tmp_path / "bad.pcapng"
    path.write_bytes(damage(body))
    expect_error(path, message, "corrupt")


def test_pcapng_structural_errors(tmp_path):
    path = tmp_path / "bad.pcapng"
    shb_idb = len(pcapng_bytes([([Iface(1)], [])]))
    path.write_bytes(pcapng_bytes([([Iface(1)], [("epb", 3, 0, Record(0, udp_frame()))])]))
    expect_error(path, "packet block names interface 3, but the section has 1 interface(s)", offset=shb_idb)
    path.write_bytes(pcapng_bytes([([], [("spb", Record(0, udp_frame()))])]))
    expect_error(path, "simple packet block before any interface description block", offset=28)
    good = pcapng_bytes([([Iface(1)], [("epb", 0, 0, Record(0, udp_frame()))])])
    path.write_bytes(good[:8] + b"\x01\x02\x03\x04" + good[12:])
    expect_error(path, "bad byte-order magic 0x04030201", offset=8)
    path.write_bytes(good[:-20])
    capture, notes = decode(path)
    assert len(capture.records) == 0 and f"ends inside a block at byte {shb_idb}" in notes[0]
    path.write_bytes(good[:12] + struct.pack("<H", 2) + good[14:])
    expect_error(path, "unsupported pcapng version 2.0", offset=12)


def test_capture_cut_inside_a_trailing_statistics_block(tmp_path):
    path = tmp_path / "isb.pcapng"
    items = [("epb", 0, 0, Record(0, udp_frame())), ("block", 5, bytes(40))]
    whole = pcapng_bytes([([Iface(1)], items)])
    path.write_bytes(whole[:-20])
    capture, notes = decode(path)
    isb_at = len(whole) - 52
    assert len(capture.records) == 1 and capture.counts["truncated_records"] == 1
    assert notes == [
        f"{path}: the capture ends inside a block at byte {isb_at} (32 of 52 bytes): that block is ignored"
    ]


def test_gzip_damage(tmp_path):
    packed = gzip.compress(one_record_pcap(tmp_path).read_bytes())
    path = tmp_path / "cut.pcap.gz"
    path.write_bytes(packed[: len(packed) - 30])
    _, notes = decode(path)
    assert any("the gzip stream ends early" in n for n in notes) and str(path) in notes[-1]
    path.write_bytes(packed[:12] + bytes(b ^ 0x55 for b in packed[12:40]) + packed[40:])
    expect_error(path, "corrupt gzip stream")


def test_input_is_never_modified(tmp_path):
    path = tmp_path / "ro.pcap.gz"
    records = [Record(NS + k * 20_000_000, link_frame(1, ip_packet(UDP, rtp_payload(k, 160 * k, 1)))) for k in range(9)]
    write_pcap(tmp_path / "ro.pcap", records, 1)
    path.write_bytes(gzip.compress((tmp_path / "ro.pcap").read_bytes()))
    os.chmod(path, 0o444)
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    decode(path)
    list_flows(path)
    assert len(read_capture(path).packets) == 9
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before


def test_no_decodable_flow(tmp_path):
    path = tmp_path / "arp.pcap"
    from scapy.layers.l2 import ARP, Ether

    write_pcap(path, [Record(NS + k, bytes(Ether() / ARP())) for k in range(3)], 1)
    expect_error(
        path, "no decodable flow with sequence numbers: 3 records, 0 decoded into 0 flows", reader=read_capture
    )


def test_flow_without_sequence_numbers(tmp_path):
    dns = Endpoints(sport=53, dport=40000)
    path = tmp_path / "dns.pcap"
    records = [Record(NS + k * 10**6, link_frame(1, ip_packet(UDP, rtp_payload(k, 160 * k, 1)))) for k in range(5)]
    records += [Record(NS + 10**7 + k, udp_frame(ends=dns, payload=bytes([k * 37 % 256]) * 40)) for k in range(4)]
    write_pcap(path, records, 1)
    with pytest.warns(CaptureWarning, match=r"1 flow\(s\) without sequence numbers skipped \(10\.0\.0\.1:53>"):
        trace = read_capture(path, skew="keep")  # 20 ms of RTP ticks 1 ms apart: no clock to fit
    first_dns = 24 + 5 * (16 + len(records[0].frame))
    assert trace.meta["skipped_flows"]["10.0.0.1:53>10.0.0.2:40000/udp"].endswith(f"(first packet at byte {first_dns})")
    expect_error(
        path,
        "flow 10.0.0.1:53>10.0.0.2:40000/udp: no sequence numbers found",
        offset=first_dns,
        reader=read_capture,
        flows=["10.0.0.1:53>10.0.0.2:40000/udp"],
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-1, 4), st.one_of(st.just(NO_TIME), st.integers(0, 10**12)), st.integers(0, 65535)),
        max_size=60,
    )
)
def test_flow_extents_match_pandas(rows):
    """Packets, bytes, first and last time per flow (records without a flow or a time left out)."""
    import pandas as pd

    from ldanalyze.io.capture.flows import flow_extents

    flow = np.array([r[0] for r in rows], np.int32)
    ts = np.array([r[1] for r in rows], np.int64)
    size = np.array([r[2] for r in rows], np.uint32)
    packets, total, first, last = flow_extents(flow, ts, size, 5)
    frame = pd.DataFrame({"flow": flow, "ts": ts, "size": size.astype(np.int64)})
    frame = frame[frame["flow"] >= 0]
    grouped = frame.groupby("flow")
    timed = frame[frame["ts"] != NO_TIME].groupby("flow")["ts"]
    assert packets.tolist() == grouped.size().reindex(range(5), fill_value=0).tolist()
    assert total.tolist() == grouped["size"].sum().reindex(range(5), fill_value=0).tolist()
    assert first.tolist() == timed.min().reindex(range(5), fill_value=np.iinfo(np.int64).max).tolist()
    assert last.tolist() == timed.max().reindex(range(5), fill_value=NO_TIME).tolist()
