"""Test captures: frames built with scapy, written by scapy or by a small pcapng block writer.

scapy builds every frame (link layer, IPv4/IPv6, UDP/TCP, RTP) and writes the pcap files and
plain pcapng files; ``pcapng_bytes`` writes what scapy's writer cannot: interface options
(``if_tsresol`` as a power of 10 or 2, ``if_tsoffset``), simple and obsolete packet blocks,
several sections in either byte order, and unknown blocks.

The hypothesis strategies draw whole captures with known contents: ``frame_lists`` (frames of
every supported link type, with VLAN stacks, IPv4 options, IPv6 extension headers, fragments,
truncation, non-IP and non-data frames) for the decoder, and ``media_flows`` (RTP, iperf3,
iperf2 or TCP flows with loss, reordering, duplicates and wrap-around) for the payload rules.
"""

from __future__ import annotations

import dataclasses
import struct

from hypothesis import strategies as st
from scapy.layers.dot11 import Dot11, Dot11QoS, RadioTap
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR, fragment
from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.l2 import ARP, LLC, SNAP, CookedLinux, CookedLinuxV2, Dot1Q, Ether
from scapy.layers.ppi import PPI
from scapy.layers.rtp import RTP
from scapy.packet import Raw
from scapy.utils import RawPcapNgWriter, RawPcapWriter

T0 = 1_700_000_000  # seconds: capture times start here
LINKTYPES = (0, 1, 9, 101, 105, 108, 113, 127, 192, 228, 229, 276)
ETHERTYPE = {4: 0x0800, 6: 0x86DD}
AF_INET6 = (10, 24, 28, 30)


# -- payloads ----------------------------------------------------------------------------------
def rtp_payload(seq: int, timestamp: int, ssrc: int, size: int = 160, pt: int = 0, marker: int = 0) -> bytes:
    return bytes(
        RTP(sequence=seq % 65536, timestamp=timestamp % 2**32, sourcesync=ssrc, payload_type=pt, marker=marker)
        / Raw(bytes(size))
    )


def iperf3_payload(seq: int, t_send: float, size: int = 100, counters64: bool = False) -> bytes:
    sec, usec = int(t_send), round((t_send - int(t_send)) * 1e6)
    head = struct.pack(">IIQ" if counters64 else ">III", sec, usec, seq)
    return head + b"0123456789" * (size // 10)


def iperf2_payload(seq: int, t_send: float, size: int = 100, counters64: bool = False) -> bytes:
    sec, usec = int(t_send), round((t_send - int(t_send)) * 1e6)
    low, high = (seq & 0xFFFFFFFF, (seq >> 32) & 0xFFFFFFFF) if counters64 else (seq & 0xFFFFFFFF, 0)
    return struct.pack(">IIII", low, sec, usec, high) + bytes(size)


# -- frames ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Endpoints:
    """One direction of a flow."""

    ip_ver: int = 4
    proto: str = "udp"
    src: str = "10.0.0.1"
    dst: str = "10.0.0.2"
    sport: int = 5004
    dport: int = 6000

    def key(self) -> tuple:
        """The twin's flow key."""
        number = {"udp": 17, "tcp": 6, "icmp": 1 if self.ip_ver == 4 else 58}[self.proto]
        ported = self.proto in ("udp", "tcp")
        return (self.ip_ver, number, self.src, self.sport if ported else 0, self.dst, self.dport if ported else 0)


def ip_packet(
    ends: Endpoints,
    payload: bytes,
    *,
    ip_id: int = 0,
    ttl: int = 64,
    ip_options: bool = False,
    ext: tuple[str, ...] = (),
    tcp_seq: int = 0,
    tcp_flags: str = "PA",
    tcp_ack: int = 0,
    tsval: int | None = None,
    tsecr: int = 0,
    mss: int | None = None,
    window: int = 8192,
    wscale: int | None = None,
    sack: tuple[tuple[int, int], ...] = (),
):
    """A scapy IPv4/IPv6 packet of the flow carrying ``payload``. ``ext`` lists IPv6 extension
    headers (hbh, routing, dest, frag: an atomic fragment header with id ``ip_id``); ``sack``
    the (left, right) edges of a TCP SACK option's blocks."""
    if ends.proto == "udp":
        upper = UDP(sport=ends.sport, dport=ends.dport) / Raw(payload)
    elif ends.proto == "tcp":
        options = ([("MSS", mss)] if mss else []) + ([("Timestamp", (tsval, tsecr))] if tsval is not None else [])
        options += ([("WScale", wscale)] if wscale is not None else []) + ([("SAck", sum(sack, ()))] if sack else [])
        upper = TCP(
            sport=ends.sport,
            dport=ends.dport,
            seq=tcp_seq,
            ack=tcp_ack,
            flags=tcp_flags,
            window=window,
            options=options,
        ) / Raw(payload)
    else:
        upper = (ICMP() if ends.ip_ver == 4 else ICMPv6EchoRequest()) / Raw(payload)
    if ends.ip_ver == 4:
        options = [IPOption_NOP(), IPOption_RR(routers=["10.9.9.9"])] if ip_options else []
        return IP(src=ends.src, dst=ends.dst, id=ip_id, ttl=ttl, options=options) / upper
    chain = IPv6(src=ends.src, dst=ends.dst, hlim=ttl)
    for name in ext:
        chain = (
            chain
            / {
                "hbh": lambda: IPv6ExtHdrHopByHop(),
                "routing": lambda: IPv6ExtHdrRouting(addresses=["2001:db8::99"]),
                "dest": lambda: IPv6ExtHdrDestOpt(),
                "frag": lambda: IPv6ExtHdrFragment(id=ip_id, offset=0, m=0),
            }[name]()
        )
    return chain / upper


def ipv6_fragments(packet, size: int = 32) -> list:
    """An IPv6 packet with a fragment header cut into two fragments: ``size`` bytes of what
    follows the fragment header, then the rest (scapy's fragment6 draws from ``random``)."""
    built = IPv6(bytes(packet))
    rest = bytes(built[IPv6ExtHdrFragment].payload)
    pieces = []
    for offset, data, more in ((0, rest[:size], 1), (size // 8, rest[size:], 0)):
        piece = built.copy()
        piece[IPv6ExtHdrFragment].offset, piece[IPv6ExtHdrFragment].m = offset, more
        piece[IPv6ExtHdrFragment].remove_payload()
        piece[IPv6].plen = None
        pieces.append(piece / Raw(data))
    return pieces


def link_frame(
    linktype: int,
    packet,
    *,
    vlans: tuple[int, ...] = (),
    af_order: str = "<",
    af6: int = 10,
    wifi: str = "data",
    radiotap: str = "",
    ppp: str = "hdlc",
    wifi_seq: int = 0,
    wifi_retry: bool = False,
    wifi_tid: int = 5,
    wifi_version: int = 0,
) -> bytes:
    """``packet`` (scapy IP/IPv6 or raw bytes starting with an IP header) in a link-layer frame.

    ``vlans``: TPIDs of the tags to stack (Ethernet, SLL, SLL2). ``wifi``: ``data``, ``qos``,
    ``qos-4addr`` (to-DS and from-DS), ``beacon``, ``null``, ``protected``. ``radiotap``:
    flag names (``badFCS``, ``pad``) and ``TSFT`` to add a TSFT field. ``wifi_seq``,
    ``wifi_retry``, ``wifi_tid``, ``wifi_version``: the 802.11 sequence number, retry bit, QoS TID
    and protocol version (0; another is what a corrupt frame may show). ``ppp``: ``hdlc``
    (address and control, then the protocol), ``plain`` (the protocol only, as ns-3 writes) or
    ``compressed`` (a one-byte protocol).
    """
    raw = bytes(packet)
    version = raw[0] >> 4
    ethertype = ETHERTYPE.get(version, 0x0800)
    if linktype in (101, 228, 229):
        return raw
    if linktype == 9:
        protocol = 0x21 if version == 4 else 0x57
        field = bytes([protocol]) if ppp == "compressed" else struct.pack(">H", protocol)
        return (b"\xff\x03" if ppp == "hdlc" else b"") + field + raw
    if linktype in (0, 108):
        return struct.pack(af_order + "I", 2 if version == 4 else af6) + raw
    if linktype in (1, 113, 276):
        types = list(vlans) + [ethertype]
        inner = Raw(raw)
        for k in range(len(vlans) - 1, -1, -1):
            inner = Dot1Q(vlan=k + 5, type=types[k + 1]) / inner
        if linktype == 1:
            return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=types[0]) / inner)
        if linktype == 113:
            return bytes(
                CookedLinux(pkttype=0, lladdrtype=1, lladdrlen=6, src=b"\x02\0\0\0\0\x01\0\0", proto=types[0]) / inner
            )
        return bytes(
            CookedLinuxV2(proto=types[0], ifindex=3, lladdrtype=1, pkttype=0, lladdrlen=6, src=b"\x02\0\0\0\0\x01\0\0")
            / inner
        )
    dot11 = wifi_frame(raw, ethertype, wifi, pad="pad" in radiotap, seq=wifi_seq, retry=wifi_retry, tid=wifi_tid)
    if wifi_version:
        dot11 = bytes([dot11[0] & 0xFC | wifi_version]) + dot11[1:]
    if linktype == 105:
        return dot11
    if linktype == 127:
        flags = [f for f in radiotap.split("+") if f and f != "TSFT"]
        present = "+".join((["TSFT"] if "TSFT" in radiotap else []) + ["Flags"])
        header = RadioTap(present=present, Flags="+".join(flags) or 0, mac_timestamp=123456789)
        return bytes(header) + dot11
    if linktype == 192:
        return bytes(PPI(dlt=105)) + dot11
    raise ValueError(linktype)


def wifi_frame(
    raw: bytes, ethertype: int, kind: str, pad: bool = False, seq: int = 0, retry: bool = False, tid: int = 5
) -> bytes:
    sc = seq << 4
    retried = "+retry" if retry else ""
    if kind == "beacon":
        return bytes(
            Dot11(
                type=0,
                subtype=8,
                SC=sc,
                FCfield=retried.lstrip("+") or 0,
                addr1="ff:ff:ff:ff:ff:ff",
                addr2="02:00:00:00:00:01",
                addr3="02:00:00:00:00:01",
            )
        ) + bytes(12)
    if kind == "null":
        return bytes(
            Dot11(
                type=2,
                subtype=4,
                SC=sc,
                FCfield="to_DS" + retried,
                addr1="02:00:00:00:00:01",
                addr2="02:00:00:00:00:02",
                addr3="02:00:00:00:00:01",
            )
        )
    qos = kind.startswith("qos")
    fc = {"data": "to_DS", "qos": "from_DS", "qos-4addr": "to_DS+from_DS", "protected": "to_DS+protected"}[kind]
    header = Dot11(
        type=2,
        subtype=8 if qos else 0,
        SC=sc,
        FCfield=fc + retried,
        addr1="02:00:00:00:00:01",
        addr2="02:00:00:00:00:02",
        addr3="02:00:00:00:00:03",
        addr4="02:00:00:00:00:04",
    )
    head = bytes(header / Dot11QoS(TID=tid)) if qos else bytes(header)
    if pad and len(head) % 4:
        head += bytes(4 - len(head) % 4)
    return head + bytes(LLC(dsap=0xAA, ssap=0xAA, ctrl=3) / SNAP(OUI=0, code=ethertype)) + raw


# -- containers --------------------------------------------------------------------------------
@dataclasses.dataclass
class Record:
    """One frame to write: capture time (ns), bytes on the link, bytes kept (snap length)."""

    ts_ns: int
    frame: bytes
    snaplen: int | None = None

    @property
    def kept(self) -> bytes:
        return self.frame if self.snaplen is None else self.frame[: self.snaplen]


def write_pcap(path, records: list[Record], linktype: int, *, nano: bool = True, big: bool = False) -> None:
    """A pcap file written by scapy (µs or ns magic, either byte order)."""
    writer = RawPcapWriter(str(path), linktype=linktype, nano=nano, endianness=">" if big else "<", snaplen=262144)
    writer.linktype = linktype  # scapy takes a link type of 0 for "guess"
    writer._write_header(None)
    for r in records:
        frac = r.ts_ns % 10**9 if nano else r.ts_ns % 10**9 // 1000
        writer.write_packet(r.kept, sec=r.ts_ns // 10**9, usec=frac, caplen=len(r.kept), wirelen=len(r.frame))
    writer.close()


def write_scapy_pcapng(path, records: list[tuple[int, Record]]) -> None:
    """A pcapng file written by scapy: (link type, record) pairs; one interface per link type,
    in order of first use (microsecond times)."""
    writer = RawPcapNgWriter(str(path))
    writer.linktype = records[0][0]  # interface 0, described with the section header
    writer._write_header(None)
    for linktype, r in records:
        name = None if linktype == records[0][0] else f"link{linktype}".encode()
        writer._write_packet(
            r.kept, linktype=linktype, sec=r.ts_ns / 1e9, caplen=len(r.kept), wirelen=len(r.frame), ifname=name
        )
    writer.close()


@dataclasses.dataclass
class Iface:
    """An interface description: ``tsresol`` is the raw if_tsresol byte (None: absent = µs)."""

    linktype: int
    snaplen: int = 262144
    tsresol: int | None = None
    tsoffset: int = 0

    @property
    def units(self) -> int:
        if self.tsresol is None:
            return 10**6
        return 2 ** (self.tsresol & 0x7F) if self.tsresol & 0x80 else 10**self.tsresol

    def ticks(self, ts_ns: int) -> int:
        """The timestamp to write for a capture time (exact when the resolution allows)."""
        return (ts_ns - self.tsoffset * 10**9) * self.units // 10**9

    def ns(self, ticks: int) -> int:
        """What a reader must make of ``ticks`` (integer nanoseconds, rounded down)."""
        return ticks * 10**9 // self.units + self.tsoffset * 10**9


def pcapng_bytes(sections: list[tuple[list[Iface], list[tuple]]], big: bool = False) -> bytes:
    """A pcapng file: sections of (interfaces, items). Items: ``("epb", iface, ticks, Record)``,
    ``("pb", iface, ticks, Record)``, ``("spb", Record)``, ``("block", type, body)``."""
    e = ">" if big else "<"

    def block(btype: int, body: bytes) -> bytes:
        body += bytes(-len(body) % 4)
        return struct.pack(e + "II", btype, len(body) + 12) + body + struct.pack(e + "I", len(body) + 12)

    def option(code: int, value: bytes) -> bytes:
        return struct.pack(e + "HH", code, len(value)) + value + bytes(-len(value) % 4)

    out = []
    for ifaces, items in sections:
        out.append(block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
        for i in ifaces:
            options = option(2, b"eth0")
            if i.tsresol is not None:
                options += option(9, bytes([i.tsresol]))
            if i.tsoffset:
                options += option(14, struct.pack(e + "q", i.tsoffset))
            out.append(block(1, struct.pack(e + "HHI", i.linktype, 0, i.snaplen) + options + option(0, b"")))
        for item in items:
            if item[0] in ("epb", "pb"):
                kind, iface, ticks, r = item
                fixed = struct.pack(e + "I", iface) if kind == "epb" else struct.pack(e + "HH", iface, 0)
                fixed += struct.pack(e + "IIII", ticks >> 32, ticks & 0xFFFFFFFF, len(r.kept), len(r.frame))
                out.append(block(6 if kind == "epb" else 2, fixed + r.kept + bytes(-len(r.kept) % 4)))
            elif item[0] == "spb":
                r = item[1]
                out.append(block(3, struct.pack(e + "I", len(r.frame)) + r.frame))
            else:
                out.append(block(item[1], item[2]))
    return b"".join(out)


# -- strategies: frames for the decoder --------------------------------------------------------
addresses4 = st.sampled_from(["10.0.0.1", "10.0.0.2", "192.168.1.7", "172.16.0.9"])
addresses6 = st.sampled_from(["2001:db8::1", "2001:db8::2", "fe80::1", "2001:db8:1::42"])


@st.composite
def endpoints(draw, protos=("udp", "udp", "tcp", "icmp")) -> Endpoints:
    ip_ver = draw(st.sampled_from([4, 4, 6]))
    address = addresses4 if ip_ver == 4 else addresses6
    return Endpoints(
        ip_ver,
        draw(st.sampled_from(protos)),
        draw(address),
        draw(address),
        draw(st.sampled_from([53, 5004, 5201, 40000, 65535])),
        draw(st.sampled_from([80, 6000, 5001])),
    )


@st.composite
def frames(draw, linktype: int, tpids=(0x8100, 0x88A8, 0x9100)) -> list[bytes]:
    """One to three frames of one packet on a link of ``linktype`` (three: a fragmented one),
    with VLAN tags of the given ``tpids``."""
    ends = draw(endpoints())
    payload = draw(st.binary(min_size=0, max_size=60))
    ip_options = ends.ip_ver == 4 and draw(st.booleans())
    ext = (
        tuple(draw(st.lists(st.sampled_from(["hbh", "routing", "dest", "frag"]), max_size=3, unique=True)))
        if ends.ip_ver == 6
        else ()
    )
    packet = ip_packet(
        ends,
        payload,
        ip_id=draw(st.integers(0, 65535)),
        ttl=draw(st.integers(1, 255)),
        ip_options=ip_options,
        ext=ext,
        tcp_seq=draw(st.integers(0, 2**32 - 1)),
        tsval=(tsval := draw(st.none() | st.integers(0, 2**32 - 1))),
        mss=(mss := draw(st.none() | st.just(1460))),
        window=draw(st.integers(0, 65535)),
        wscale=(wscale := draw(st.none() | st.integers(0, 14))),
        sack=tuple(
            draw(
                st.lists(
                    st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
                    max_size=(
                        38 - (4 if mss else 0) - (10 if tsval is not None else 0) - (3 if wscale is not None else 0)
                    )
                    // 8,
                )
            )
        ),
    )
    packets = [packet]
    if ends.proto == "udp" and (ends.ip_ver == 4 or "frag" in ext) and draw(st.booleans()):
        packet = packet.copy()
        packet[Raw].load = payload + bytes(40)
        packets = fragment(packet, fragsize=24) if ends.ip_ver == 4 else ipv6_fragments(packet)
    options = {}
    if linktype in (1, 113, 276):
        options["vlans"] = tuple(draw(st.lists(st.sampled_from(tpids), max_size=2)))
    if linktype in (0, 108):
        options["af_order"] = draw(st.sampled_from("<>"))
        options["af6"] = draw(st.sampled_from(AF_INET6))
    if linktype in (105, 127, 192):
        options["wifi"] = draw(st.sampled_from(["data", "qos", "qos-4addr", "data", "beacon", "null", "protected"]))
        options["wifi_seq"] = draw(st.integers(0, 4095))
        options["wifi_retry"] = draw(st.booleans())
        options["wifi_tid"] = draw(st.integers(0, 15))
        options["wifi_version"] = draw(st.sampled_from((0, 0, 0, 0, 0, 1, 2, 3)))
    if linktype == 127:
        options["radiotap"] = draw(st.sampled_from(["", "TSFT", "pad", "TSFT+pad", "badFCS"]))
    if linktype == 9:
        options["ppp"] = draw(st.sampled_from(["hdlc", "plain", "compressed"]))
    if linktype in (228, 229):
        wanted = 4 if linktype == 228 else 6
        if ends.ip_ver != wanted:
            return [bytes(p) for p in packets]  # a mismatch: "malformed"
    if linktype == 1 and draw(st.integers(0, 9)) == 0:
        return [bytes(Ether() / ARP())]
    return [link_frame(linktype, p, **options) for p in packets]


@st.composite
def frame_lists(draw, linktypes=LINKTYPES, tpids=(0x8100, 0x88A8, 0x9100)) -> tuple[int, list[Record]]:
    """A link type and records of frames on it; some cut by a snap length."""
    linktype = draw(st.sampled_from(linktypes))
    records, t = [], T0 * 10**9
    for _ in range(draw(st.integers(1, 6))):
        for frame in draw(frames(linktype, tpids)):
            t += draw(st.integers(0, 3_000_000))
            snaplen = draw(st.none() | st.integers(0, len(frame)))
            records.append(Record(t, frame, snaplen))
    return linktype, records


CONTAINERS = ["pcap-us", "pcap-ns-be", "pcapng", "pcapng-be-2^-16"]


def write_container(path, container: str, linktype: int, records: list[Record]) -> None:
    """Write records in one of ``CONTAINERS``: pcap (µs or big-endian ns) or pcapng (native µs
    or big-endian with 2^-16 s ticks and a time offset)."""
    if container.startswith("pcap-"):
        write_pcap(path, records, linktype, nano="ns" in container, big="be" in container)
    else:
        iface = Iface(linktype, tsresol=0x80 | 16 if "2^" in container else None, tsoffset=7)
        items = [("epb", 0, iface.ticks(r.ts_ns), r) for r in records]
        path.write_bytes(pcapng_bytes([([iface], items)], big="be" in container))


# -- strategies: flows for the payload rules ---------------------------------------------------
@dataclasses.dataclass
class MediaFlow:
    """A flow as sent, and which packets a receiver saw in which order."""

    ends: Endpoints
    kind: str
    seqs: list[int]  # sequence numbers sent, in send order (unwrapped)
    sent: list[float]  # send times on the sender's clock, s
    arrivals: list[int]  # indices into seqs, in arrival order (lost ones absent, duplicates twice)
    recv_ns: list[int]  # capture time of each arrival
    first_ticks: int = 0  # RTP timestamp of seq index 0
    rate: int = 8000

    def payload(self, i: int) -> bytes:
        seq, t = self.seqs[i], self.sent[i]
        if self.kind == "rtp":
            return rtp_payload(seq, self.first_ticks + round((t - self.sent[0]) * self.rate), 0xC0FFEE)
        if self.kind.startswith("iperf3"):
            return iperf3_payload(seq, t, counters64=self.kind == "iperf3-64")
        return iperf2_payload(seq, t, counters64=self.kind == "iperf2-64")

    def records(self, linktype: int = 1) -> list[Record]:
        return [
            Record(ns, link_frame(linktype, ip_packet(self.ends, self.payload(i), ip_id=i & 0xFFFF)))
            for i, ns in zip(self.arrivals, self.recv_ns)
        ]


@st.composite
def media_flows(draw, kinds=("rtp", "iperf3", "iperf3-64", "iperf2", "iperf2-64")) -> MediaFlow:
    """A UDP media flow with loss, reordering, duplicates and (RTP) wrap-around."""
    kind = draw(st.sampled_from(kinds))
    n = draw(st.integers(4, 60))
    if kind == "rtp":
        first = draw(st.sampled_from([0, 1000, 65530, 65535 - n // 2]))
    elif kind.endswith("-64"):
        first = draw(st.sampled_from([2**32 - 3, 2**33 + 5]))
    else:
        first = draw(st.integers(1, 1000))
    period = draw(st.sampled_from([0.01, 0.02, 0.03]))
    t0 = T0 + draw(st.integers(0, 1000))
    sent = [t0 + k * period for k in range(n)]
    delays = [0.03 + draw(st.floats(0, 0.004)) for _ in range(n)]
    lost = draw(st.sets(st.integers(1, n - 2), max_size=n // 4))
    order = [k for k in range(n) if k not in lost]
    if draw(st.booleans()) and len(order) > 3:  # one reordering: swap two neighbours
        j = draw(st.integers(1, len(order) - 3))
        order[j], order[j + 1] = order[j + 1], order[j]
    recv = []
    for k in order:
        recv.append(sent[k] + delays[k] if not recv else max(recv[-1] + 1e-5, sent[k] + delays[k]))
    arrivals, recv_ns = list(order), [round(t * 1e9) for t in recv]
    if draw(st.booleans()):  # one duplicate, right after the original
        j = draw(st.integers(0, len(arrivals) - 1))
        arrivals.insert(j + 1, arrivals[j])
        recv_ns.insert(j + 1, recv_ns[j] + 2000)
    first_ticks = draw(st.sampled_from([0, 2**32 - 4000, 123456]))
    return MediaFlow(
        Endpoints(sport=draw(st.sampled_from([5004, 40000])), dport=6000),
        kind,
        [first + k for k in range(n)],
        sent,
        arrivals,
        recv_ns,
        first_ticks=first_ticks,
    )


def expected_lost(flow: MediaFlow) -> list[int]:
    """Sequence numbers a receiver can tell were lost: missing between the first and last seen."""
    seen = {flow.seqs[i] for i in flow.arrivals}
    return [s for s in range(min(seen), max(seen) + 1) if s not in seen]
