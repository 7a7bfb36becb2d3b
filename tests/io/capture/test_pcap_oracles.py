"""Oracles (issue 5, section 6): dpkt, scapy and tshark read the same captures as ldanalyze.

dpkt and scapy decode the same fixtures and must find, for every packet ldanalyze decoded,
the same capture time, addresses, ports, IP ID, IP length and payload bytes. tshark (installed
by CI; elsewhere these tests skip when it is missing) must count the same packets and, for
each RTP stream, the same lost packets and the same RFC 3550 jitter: tshark prints it in
milliseconds, ldanalyze's timeline (``arrivals.jitter_rfc3550``, from the RTP timestamps) in
seconds; tshark's min/mean/max are over every packet of the stream but the first.
"""

from __future__ import annotations

import re
import socket
import subprocess
import warnings

import dpkt
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting
from scapy.utils import PcapNgReader, PcapReader

from ldanalyze.io.capture.pcap import decode_capture, list_flows, read_capture
from ldanalyze.io.capture.record import F_FIRST_FRAGMENT, S_DECODED
from ldanalyze.timeline import build_timeline

from ...conftest import needs_binary, require_binary
from ...support.captures import (
    T0,
    Endpoints,
    Iface,
    Record,
    frame_lists,
    ip_packet,
    link_frame,
    media_flows,
    pcapng_bytes,
    rtp_payload,
    write_pcap,
)

NS = T0 * 10**9
IPV6_EXTENSIONS = (IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment)
SIX = Endpoints(6, "udp", "2001:db8::1", "2001:db8::2", 5004, 6000)
TCP6 = Endpoints(6, "tcp", "2001:db8::1", "2001:db8::2", 40000, 443)


def decode(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return decode_capture(path)


def ours(capture):
    """(time s, src, dst, sport, dport, ip_id, ip_len, head) of each decoded, unfragmented,
    uncut record, keyed by record index."""
    out = {}
    flows = capture.flows
    for i, r in enumerate(capture.records):
        if r["status"] != S_DECODED or r["flags"] & F_FIRST_FRAGMENT or r["caplen"] != r["wirelen"]:
            continue
        f = flows.iloc[int(r["flow"])]
        out[i] = (
            r["ts_ns"] / 1e9,
            f.src,
            f.dst,
            int(f.sport),
            int(f.dport),
            int(r["ip_id"]) if f.ip_ver == 4 else 0,
            int(r["ip_len"]),
            bytes(r["head"][: r["head_len"]]),
        )
    return out


def same_fields(mine, theirs, name):
    assert mine.keys() <= theirs.keys(), f"{name} found no IP packet in records {sorted(mine.keys() - theirs.keys())}"
    for i, fields in mine.items():
        assert fields[0] == pytest.approx(theirs[i][0], abs=1e-6), (name, i)
        assert fields[1:] == theirs[i][1:], (name, i, fields, theirs[i])


# -- dpkt --------------------------------------------------------------------------------------
def dpkt_ip(linktype, buf):
    """The IP/IPv6 object of a frame as dpkt decodes it, or None."""
    if linktype == 1:
        ip = dpkt.ethernet.Ethernet(buf).data
    elif linktype == 113:
        ip = dpkt.sll.SLL(buf).data
    elif linktype == 276:
        ip = dpkt.sll2.SLL2(buf).data
    elif linktype == 9:
        ip = dpkt.ppp.PPP(buf).data if buf[:2] == b"\xff\x03" else dpkt.ppp.PPP(b"\xff\x03" + buf).data
    elif linktype in (0, 108):
        ip = dpkt.loopback.Loopback(buf).data
    elif linktype in (101, 228, 229):
        ip = dpkt.ip.IP(buf) if buf[0] >> 4 == 4 else dpkt.ip6.IP6(buf)
    elif linktype in (105, 127):
        wifi = dpkt.radiotap.Radiotap(buf).data if linktype == 127 else dpkt.ieee80211.IEEE80211(buf)
        ip = dpkt.llc.LLC(wifi.data).data
    else:
        return None
    return ip if isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) else None


def dpkt_fields(path, linktype):
    out = {}
    with open(path, "rb") as f:
        for i, (ts, buf) in enumerate(dpkt.pcap.UniversalReader(f)):
            ip = dpkt_ip(linktype, buf)
            if ip is None:
                continue
            v4 = isinstance(ip, dpkt.ip.IP)
            family = socket.AF_INET if v4 else socket.AF_INET6
            upper = ip.data
            ported = isinstance(upper, (dpkt.udp.UDP, dpkt.tcp.TCP))
            out[i] = (
                float(ts),
                socket.inet_ntop(family, ip.src),
                socket.inet_ntop(family, ip.dst),
                upper.sport if ported else 0,
                upper.dport if ported else 0,
                ip.id if v4 else 0,
                ip.len if v4 else 40 + ip.plen,
                bytes(upper.data)[:16] if ported else bytes(upper)[:16],
            )
    return out


BOTH = ("dpkt", "scapy")
# Each oracle must decode every packet of the fixtures it is named for. Where one cannot: dpkt has
# no PPI decoder and knows no Linux AF_INET6 (10) in a null header; scapy knows no 0x9100 tag (nor
# 0x88a8 in Linux cooked headers) and reads the null/loop family in one byte order, with its own
# set of IPv6 families.
FIXTURE_LINKS = [
    (1, {}, BOTH),
    (1, {"vlans": (0x8100,)}, BOTH),
    (1, {"vlans": (0x88A8, 0x8100)}, BOTH),
    (1, {"vlans": (0x9100,)}, ("dpkt",)),
    (9, {"ppp": "hdlc"}, ("dpkt",)),
    (9, {"ppp": "plain"}, ("dpkt",)),
    (9, {"ppp": "compressed"}, ("dpkt",)),
    (113, {}, BOTH),
    (276, {}, BOTH),
    (0, {"af_order": "<", "af6": 30}, ("dpkt",)),
    (0, {"af_order": "<", "af6": 10}, ("scapy",)),
    (0, {"af_order": ">", "af6": 24}, ("dpkt",)),
    (108, {"af_order": ">", "af6": 24}, ("dpkt",)),
    (108, {"af_order": ">", "af6": 10}, ("scapy",)),
    (101, {}, BOTH),
    (228, {}, BOTH),
    (105, {"wifi": "data"}, BOTH),
    (105, {"wifi": "qos"}, BOTH),
    (127, {"wifi": "qos"}, BOTH),
    (192, {"wifi": "qos-4addr"}, ("scapy",)),
]


@pytest.mark.parametrize("linktype, options, oracles", FIXTURE_LINKS)
def test_dpkt_and_scapy_find_the_same_fields(tmp_path, linktype, options, oracles):
    flows = [Endpoints(), Endpoints(proto="tcp", sport=40000, dport=80), Endpoints(proto="icmp")]
    if linktype != 228:
        flows += [SIX, TCP6]
    records = [
        Record(
            NS + 1000 * k + 7,
            link_frame(linktype, ip_packet(e, bytes(range(k, k + 40)), ip_id=k, tsval=k, ip_options=k == 1), **options),
        )
        for k, e in enumerate(flows)
    ]
    path = tmp_path / "d.pcap"
    write_pcap(path, records, linktype)
    mine = ours(decode(path))
    assert len(mine) == len(records)
    if "dpkt" in oracles:
        same_fields(mine, dpkt_fields(path, linktype), "dpkt")
    if "scapy" in oracles:
        same_fields(mine, scapy_fields(path), "scapy")


# -- scapy -------------------------------------------------------------------------------------
def scapy_fields(path):
    out = {}
    reader = PcapNgReader if path.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a" else PcapReader
    with reader(str(path)) as packets:
        for i, p in enumerate(packets):
            ip = p[IP] if IP in p else p[IPv6] if IPv6 in p else None
            v4 = isinstance(ip, IP)
            if ip is None or ip.version != (4 if v4 else 6):  # none, or a header scapy took for the wrong one
                continue
            upper = p[UDP] if UDP in p else p[TCP] if TCP in p else None
            layer = ip.payload
            while isinstance(layer, IPV6_EXTENSIONS):
                layer = layer.payload
            body = bytes(upper.payload) if upper is not None else bytes(layer)
            out[i] = (
                float(p.time),
                ip.src,
                ip.dst,
                upper.sport if upper else 0,
                upper.dport if upper else 0,
                ip.id if v4 else 0,
                ip.len if v4 else 40 + ip.plen,
                body[:16],
            )
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    data=frame_lists(linktypes=(1, 101, 105, 113, 127, 192, 276), tpids=(0x8100,)),
    container=st.sampled_from(["pcap", "pcapng"]),
)
def test_scapy_finds_the_same_fields(tmp_path_factory, data, container):
    linktype, records = data
    records = [r for r in records if b"\x08\x06" not in r.frame[12:14]]  # ARP has no IP fields
    if linktype == 127:  # scapy ignores radiotap's "padded" flag; ours is checked by the twin
        records = [r for r in records if not radiotap_padded(r.frame)]
    path = tmp_path_factory.mktemp("scapy") / "c"
    if container == "pcap":
        write_pcap(path, records, linktype)
    else:
        iface = Iface(linktype, tsresol=9)
        path.write_bytes(pcapng_bytes([([iface], [("epb", 0, r.ts_ns, r) for r in records])]))
    same_fields(ours(decode(path)), scapy_fields(path), "scapy")


def radiotap_padded(frame: bytes) -> bool:
    """Does the radiotap header carry the Flags field with 0x20 (padding after the 802.11 header)?"""
    present = int.from_bytes(frame[4:8], "little")
    if not present & 0b10:
        return False
    flags_at = 16 if present & 0b1 else 8  # after the 8-byte TSFT (aligned at 8) when present
    return bool(frame[flags_at] & 0x20)


# -- tshark ------------------------------------------------------------------------------------
def tshark(*args) -> str:
    cmd = [require_binary("tshark"), "-n", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


STREAM = re.compile(
    r"^\s*[\d.]+\s+[\d.]+\s+(?P<src>\S+)\s+(?P<sport>\d+)\s+(?P<dst>\S+)\s+(?P<dport>\d+)\s+(?P<ssrc>0x[0-9a-fA-F]+)"
    r"\s+.+?\s+(?P<pkts>\d+)\s+(?P<lost>-?\d+) \([^)]*\)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(?P<jmin>[\d.]+)\s+"
    r"(?P<jmean>[\d.]+)\s+(?P<jmax>[\d.]+)"
)


def tshark_rtp_streams(path) -> dict:
    out = tshark("-r", str(path), "-q", "-o", "rtp.heuristic_rtp:TRUE", "-z", "rtp,streams")
    streams = {}
    for line in out.splitlines():
        m = STREAM.match(line)
        if m:
            streams[(m["src"], int(m["sport"]), m["dst"], int(m["dport"]), int(m["ssrc"], 16))] = m
    return streams


def rtp_capture(tmp_path, name, streams):
    """streams: (endpoints, ssrc, sequence numbers in arrival order, first timestamp)."""
    records = []
    for ends, ssrc, seqs, first_ts in streams:
        base = seqs[0]
        for k, seq in enumerate(seqs):
            ticks = first_ts + 160 * ((seq - base) % 65536)
            at = NS + 20_000_000 * k + (k * 7919) % 4_000_000 + 3_000 * ssrc % 1_000_000
            records.append(Record(at, link_frame(1, ip_packet(ends, rtp_payload(seq, ticks, ssrc), ip_id=k))))
    path = tmp_path / name
    write_pcap(path, sorted(records, key=lambda r: r.ts_ns), 1)
    return path


def compare_rtp(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_capture(path, skew="keep")  # tshark's jitter is on the capture's own times
    theirs = tshark_rtp_streams(path)
    assert len(theirs) == len(trace.meta["flows"])
    arrivals = build_timeline(trace).arrivals
    lost = trace.packets[trace.packets["fate"] == "lost"].groupby("flow", observed=False).size()
    for label, info in trace.meta["flows"].items():
        five, _, ssrc = label.partition("/ssrc=")
        m = re.match(r"\[?([^\]]+?)\]?:(\d+)>\[?([^\]]+?)\]?:(\d+)/udp", five)
        key = (m[1], int(m[2]), m[3], int(m[4]))
        row = [v for k, v in theirs.items() if k[:4] == key and (not ssrc or k[4] == int(ssrc, 16))]
        assert len(row) == 1, (label, list(theirs))
        row = row[0]
        assert int(row["pkts"]) == info["packets"]
        assert int(row["lost"]) == lost.get(label, 0)
        jitter_ms = arrivals.loc[arrivals["flow"] == label, "jitter_rfc3550"].to_numpy()[1:] * 1e3
        for ours_ms, theirs_ms in (
            (jitter_ms.min(), row["jmin"]),
            (jitter_ms.mean(), row["jmean"]),
            (jitter_ms.max(), row["jmax"]),
        ):
            assert ours_ms == pytest.approx(float(theirs_ms), abs=6e-4)  # tshark rounds to µs


@needs_binary("tshark")
def test_tshark_rtp_lost_and_jitter_with_wrap_and_reordering(tmp_path):
    voice = [s % 65536 for s in range(65500, 65600) if s not in (65534, 65540, 65541, 65580)]
    voice[10], voice[11] = voice[11], voice[10]
    voice[40], voice[43] = voice[43], voice[40]
    other = list(range(100, 160))
    path = rtp_capture(
        tmp_path,
        "rtp.pcap",
        [
            (Endpoints(), 0x1234, voice, 2**32 - 3200),
            (Endpoints(sport=5006, dport=6002), 0xBEEF, other, 77),
            (SIX, 0x42, [s for s in range(1, 70) if s % 9], 2**31),
        ],
    )
    compare_rtp(path)


def reordered_across_the_wrap(flow) -> bool:
    """Whether a packet of one sequence cycle arrives after one of the next: tshark's RTP
    analysis then counts 65536 lost packets (it bumps its cycle count on the first 0)."""
    seqs = [flow.seqs[i] for i in flow.arrivals]
    return any(b < a and b >> 16 != a >> 16 for a, b in zip(seqs, seqs[1:]))


@needs_binary("tshark")
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(flow=media_flows(kinds=("rtp",)))
def test_tshark_rtp_on_generated_flows(tmp_path_factory, flow):
    assume(not reordered_across_the_wrap(flow))
    arrivals = list(dict.fromkeys(flow.arrivals))  # tshark counts a duplicate as received: leave them out
    flow.recv_ns = [ns for i, ns in zip(flow.arrivals, flow.recv_ns) if i in arrivals][: len(arrivals)]
    flow.arrivals = arrivals
    path = tmp_path_factory.mktemp("tshark") / "f.pcap"
    write_pcap(path, flow.records(), 1)
    compare_rtp(path)


@needs_binary("tshark")
def test_tshark_counts_the_same_packets(tmp_path):
    frames = [
        link_frame(1, ip_packet(e, rtp_payload(k, 160 * k, 5), ip_id=k))
        for k, e in enumerate([Endpoints(), SIX, Endpoints(proto="tcp", sport=1, dport=2)] * 7)
    ]
    iface = Iface(1, tsresol=0x80 | 20)
    sections = [
        ([iface], [("epb", 0, iface.ticks(NS + k * 10**6), Record(0, f)) for k, f in enumerate(frames[:10])]),
        (
            [iface, Iface(101)],
            [("pb", 0, k, Record(0, f)) for k, f in enumerate(frames[10:])]
            + [("epb", 1, 5, Record(0, bytes(ip_packet(Endpoints(), b"raw"))))],
        ),
    ]
    ng = tmp_path / "c.pcapng"
    ng.write_bytes(pcapng_bytes(sections[:1]) + pcapng_bytes(sections[1:], big=True))
    plain = tmp_path / "c.pcap"
    write_pcap(plain, [Record(NS + k, f) for k, f in enumerate(frames)], 1)
    for path in (ng, plain):
        capture = decode(path)
        assert len(tshark("-r", str(path), "-T", "fields", "-e", "frame.number").split()) == len(capture.records)
        fields = tshark(
            "-r",
            str(path),
            "-T",
            "fields",
            "-E",
            "separator=,",
            "-e",
            "ip.src",
            "-e",
            "ipv6.src",
            "-e",
            "udp.srcport",
            "-e",
            "tcp.srcport",
        )
        theirs = {}
        for line in fields.splitlines():
            key = tuple(x for x in line.split(",") if x)
            theirs[key] = theirs.get(key, 0) + 1
        flows = list_flows(capture)
        mine = {(f.src, str(f.sport)): f.packets for f in flows.itertuples()}
        assert mine == theirs
