"""Tunnelled frames for the capture tests, built with scapy: GTP-U (with and without extension
headers), VXLAN, GRE (key, sequence, transparent Ethernet), ERSPAN I, II and III (with and
without the platform sub-header), IP-in-IP, 6in4, 4in6 and 6in6, nested as a test asks."""

from __future__ import annotations

from scapy.contrib.erspan import ERSPAN_I, ERSPAN_II, ERSPAN_III, ERSPAN_PlatformSpecific
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.layers.inet import GRE, IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw

from .captures import T0, Record, write_pcap

KINDS = (
    "gtpu",
    "gtpu-ext",
    "vxlan",
    "gre",
    "gre-eth",
    "erspan1",
    "erspan2",
    "erspan3",
    "erspan3-o",
    "ip-in-4",
    "ip-in-6",
)
OUTER_VERSION = {"ip-in-6": 6}  # IP in IP carries what it is given: 4in4, 6in4, 4in6, 6in6


def outer_ip(version: int, depth: int):
    """The outer header of the tunnel ``depth`` levels out (distinct addresses per level)."""
    if version == 6:
        return IPv6(src=f"2001:db8:{depth}::1", dst=f"2001:db8:{depth}::2")
    return IP(src=f"192.0.{depth}.1", dst=f"192.0.{depth}.2")


def wrap(kind: str, inner, ident: int = 1, depth: int = 0):
    """``inner`` (a scapy IP or IPv6 packet) inside a tunnel of ``kind`` with id ``ident`` (TEID,
    VNI, GRE key, or ERSPAN session: its low 10 bits; GRE carries a sequence number too)."""
    ether = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    outer = outer_ip(OUTER_VERSION.get(kind, 4), depth)
    if kind == "gtpu":
        return outer / UDP(sport=2152, dport=2152) / GTP_U_Header(teid=ident) / inner
    if kind == "gtpu-ext":
        session = GTPPDUSessionContainer(type=1, QFI=ident % 64)
        return outer / UDP(sport=2152, dport=2152) / GTP_U_Header(teid=ident, E=1, next_ex=0x85) / session / inner
    if kind == "vxlan":
        return outer / UDP(sport=40000 + depth, dport=4789) / VXLAN(vni=ident & 0xFFFFFF) / ether / inner
    if kind in ("gre", "gre-eth"):
        gre = GRE(key_present=1, key=ident, seqnum_present=1, sequence_number=ident * 7 % 1000)
        return outer / gre / ether / inner if kind == "gre-eth" else outer / gre / inner
    if kind == "erspan1":
        return outer / GRE(proto=0x88BE) / ERSPAN_I() / ether / inner
    if kind == "erspan2":
        gre = GRE(proto=0x88BE, seqnum_present=1, sequence_number=ident % 1000)
        return outer / gre / ERSPAN_II(session_id=ident % 1024, vlan=ident % 4096) / ether / inner
    if kind in ("erspan3", "erspan3-o"):
        erspan = ERSPAN_III(session_id=ident % 1024, timestamp=ident, o=int(kind == "erspan3-o"))
        if kind == "erspan3-o":
            erspan = erspan / ERSPAN_PlatformSpecific(platf_id=3, info2=ident)
        return outer / GRE(proto=0x22EB) / erspan / ether / inner
    return outer / inner


def link(packet) -> bytes:
    """An Ethernet frame of an outermost IP packet."""
    return bytes(Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / packet)


NS = T0 * 10**9


def seq_payload(seq: int) -> bytes:
    return seq.to_bytes(4, "big") + (NS + seq * 10**6).to_bytes(8, "big") + bytes(20)


FLOWS = [  # (tunnel kinds, innermost first; ids; inner IP version; sequence numbers lost)
    (("gtpu",), (0x1234,), 4, {5, 17}),
    (("gtpu-ext",), (0x5678,), 4, {3}),  # the same inner 5-tuple in another bearer
    (("vxlan",), (42,), 4, {10, 11}),
    (("gre",), (7,), 6, set()),
    (("ip-in-4",), (0,), 6, {0, 29}),  # 6in4
    (("ip-in-6",), (0,), 4, {14}),  # 4in6
    (("gre-eth", "vxlan"), (9, 77), 4, {1}),
    (("ip-in-4", "gtpu"), (0, 0xABCDEF), 4, set()),
    (("erspan2",), (301,), 4, {8}),
    (("erspan3-o", "vxlan"), (302, 78), 6, {20, 21}),
    (("erspan1", "gre"), (0, 303), 4, set()),  # (a bare ERSPAN I flow would have no id to tell it by)
]
SENT = 30


def tunnel_capture(path):
    """A pcap of ``FLOWS``: UDP packets carrying their sequence number and send time (ns)."""
    records = []
    for k, (kinds, ids, version, lost) in enumerate(FLOWS):
        for seq in range(SENT):
            if seq in lost:
                continue
            ip = IP(src="10.0.0.1", dst="10.0.0.2") if version == 4 else IPv6(src="fd00::1", dst="fd00::2")
            packet = ip / UDP(sport=5000, dport=6000) / Raw(seq_payload(seq))
            for depth, (kind, ident) in enumerate(zip(kinds, ids)):
                packet = wrap(kind, packet, ident, depth + 10 * k)
            records.append(Record(NS + seq * 10**6 + k * 1000, link(packet)))
    write_pcap(path, sorted(records, key=lambda r: r.ts_ns), 1)
