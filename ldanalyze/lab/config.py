"""The lab's fixed shape (hosts, links, addresses, capture points), the tunnels and limiters it
can build, what a run is asked (``LabConfig``) and what it gives back (``LabRun``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from ..io.capture.vantage import Vantage

HOSTS = ("sender", "r1", "r2", "receiver")
# The three links, left to right: (left host, right host, subnet prefix). The left end of each
# link is .1, the right end .2; interfaces are named after the host at their other end.
LINKS = (("sender", "r1", "10.231.1"), ("r1", "r2", "10.231.2"), ("r2", "receiver", "10.231.3"))
SENDER_IP = "10.231.1.1"
RECEIVER_IP = "10.231.3.2"
# Capture points: name -> (host, interface, direction).
CAPTURE_POINTS = {
    "sender": ("sender", "to-r1", "out"),
    "r1": ("r1", "to-r2", "out"),
    "r2": ("r2", "to-receiver", "out"),
    "receiver": ("receiver", "to-r2", "in"),
}
# The tunnel (LabConfig.tunnel): its device at both ends, the inner addresses (.1 / ::1 the sender,
# .2 / ::2 the receiver), and the VNI or GRE key.
OVERLAY = "ovl"
OVERLAY_SUBNET = "10.231.9"
OVERLAY_SUBNET6 = "fd00:231:9"
TUNNEL_KEY = 42
# The tunnel captures: name -> (host, interface, direction).
OVERLAY_POINTS = {"sender-overlay": ("sender", OVERLAY, "out"), "receiver-overlay": ("receiver", OVERLAY, "in")}
RTP_SENDER_PORT = 5006  # the GStreamer sender's source port (RTCP from the next one)
# r2's rate limiter: a shaper, or a policer. (tc's police action would be a second policer; the
# kernels this lab runs on lack act_police and every classifier but basic ones, so it is not here.)
# "nft-limit" counts bytes; its bucket holds one second of its rate more than its burst (the
# kernel's nft_limit_init: tokens_max = unit * (rate + burst) / rate, the unit a second at least;
# measured: 500 kbit/s with an 8000-byte burst passed 100.7 kB in the first 0.5 s of a 10 Mbit/s
# flood, 62.5 kB + 8 kB + 31 kB). "nft-policer" counts packets of POLICER_PACKET_BYTES, whose
# bucket is exactly its burst (measured: the first drop of a chunk came after the bucket and the
# tokens since, to the packet, for buckets of 5 to 341 packets at 1.5-10 Mbit/s): the lab's data
# segments are all of that size but a chunk's last.
# "none": no limiter, r1's random drops alone.
LIMITERS = ("tbf", "nft-limit", "nft-policer", "none")
POLICER_PACKET_BYTES = 1500  # the IP length of a full TCP segment (MSS 1448, timestamps on)
# The chunked download (traffic "chunks", chunk_peer.py): the sender serves, the receiver
# fetches; cross traffic (LabConfig.cross) goes from r1 to the receiver, to CROSS_PORT.
CHUNK_PEER = "chunk_peer.py"
CROSS_PORT_OFFSET = 1  # the cross traffic's iperf3 server listens on port + 1
CROSS_SOURCE_IP = "10.231.2.1"  # r1's address toward r2, the cross traffic's source (past r1's drops)


@dataclasses.dataclass(frozen=True)
class Tunnel:
    """A kind of Linux tunnel: ``ip link add ovl type {link_type} local ... remote ... {options}``.

    ``header`` counts the bytes from the outer IPv4 header (20 bytes, no options) to the inner IP
    header: the tunnel's overhead, which sets the device's MTU (1500 - header, so that no outer
    packet is fragmented). ``outer`` is the nftables match of the outer packets.
    ``kernel_options`` build the driver (``=y``, or as ``module``): its own option last, after
    those it depends on (kconfig writes no line for an option whose dependency is not set)."""

    link_type: str
    options: tuple[str, ...]
    header: int
    ethernet: bool  # carries Ethernet frames (the ends then need static neighbours)
    inner_version: int
    outer: str
    kernel_options: tuple[str, ...]
    module: str

    @property
    def mtu(self) -> int:
        return 1500 - self.header


_GRE = ("CONFIG_NET_IPGRE_DEMUX", "CONFIG_NET_IPGRE")
TUNNELS = {
    # the IANA port: Linux's default, 8472, is not read as VXLAN (by ldanalyze or tshark); the
    # kernel picks the UDP source port from a hash of the inner flow
    "vxlan": Tunnel(
        "vxlan",
        ("id", str(TUNNEL_KEY), "dstport", "4789", "nolearning"),
        20 + 8 + 8 + 14,
        True,
        4,
        "udp dport 4789",
        ("CONFIG_VXLAN",),
        "vxlan",
    ),
    "gre": Tunnel("gre", ("key", str(TUNNEL_KEY)), 20 + 8, False, 4, "ip protocol 47", _GRE, "ip_gre"),
    "gretap": Tunnel("gretap", ("key", str(TUNNEL_KEY)), 20 + 8 + 14, True, 4, "ip protocol 47", _GRE, "ip_gre"),
    "ipip": Tunnel("ipip", (), 20, False, 4, "ip protocol 4", ("CONFIG_NET_IPIP",), "ipip"),
    "sit": Tunnel("sit", (), 20, False, 6, "ip protocol 41", ("CONFIG_IPV6", "CONFIG_IPV6_SIT"), "sit"),  # 6in4
}


@dataclasses.dataclass(frozen=True)
class LabConfig:
    """What the lab sends and how it loses it.

    With the defaults a 5 s run sends 1250 datagrams; r1 drops about 3 % of them (20-60) and
    r2's tbf about 10 % (110-135): the flow offers 2 Mbit/s of payload, 2.08 Mbit/s on the wire
    (1042-byte frames), to a 1.8 Mbit/s bucket. The burst is three frames, so the bottleneck
    paces at its rate from the start, and the queue overflows within the first second.

    r2 is saturated, so it forwards the same number of datagrams (about 1090) whatever r1 drops:
    each wireless drop means one congestion drop fewer, and their sum is nearly constant.

    ``tbf_limit_bytes`` holds nine frames (42 ms) plus 622 bytes of slack. A full queue of data
    frames still takes a small segment of iperf3's control connection (its TCP segment ending the
    test can arrive while the queue is full), so tbf's drop counter counts the UDP flow alone.
    """

    duration_s: int = 5
    rate: str = "2M"  # iperf3 -b: payload bits per second
    length: int = 1000  # iperf3 -l: UDP payload bytes per datagram
    wireless_drop_percent: int = 3
    tbf_rate: str = "1800kbit"
    tbf_burst_bytes: int = 3200
    tbf_limit_bytes: int = 10000
    port: int = 5201
    snaplen: int = 128  # Ethernet + IPv4 + UDP headers (42 bytes) and the payload's first 86 bytes
    # (seconds after the flow starts, new tbf rate): the bottleneck steps down and up, so that its
    # queue fills and drains within one run
    tbf_steps: tuple[tuple[float, str], ...] = ()
    # "iperf3", or "rtp-audio": a GStreamer rtpbin sender of G.711 A-law (PT 8, 20 ms frames:
    # set length=172, the RTP packet's UDP payload) with RTCP sender reports to port + 1, or
    # "webrtc": two aiortc peers (ldanalyze/lab/webrtc_peer.py), video from sender to receiver; r1 then
    # drops at random only the RTP packets toward the receiver (version 2, not an RTCP type), or
    # "rtp-video": a GStreamer rtpbin sender of VP8 (frames over several packets) with ULPFEC
    # and RFC 4588 retransmission on the receiver's NACKs (see send_rtp_video), or "iperf3-tcp":
    # one iperf3 TCP transfer (``rate`` caps it); r1 then drops data segments at random, or
    # "chunks": a TCP server in the sender (chunk_peer.py, TCP cubic) sends ``chunk_count``
    # chunks of ``chunk_bytes`` to a client in the receiver, which asks for each ``chunk_gap_s``
    # after the last has arrived; r1 and r2 then act on the server's data segments
    traffic: str = "iperf3"
    chunk_bytes: int = 2_000_000
    chunk_count: int = 3
    chunk_gap_s: float = 0.75
    # cross traffic through r2 while the chunks flow: None, "tcp" (a greedy iperf3 TCP cubic
    # flow) or "udp" (iperf3 UDP at ``cross_rate``, 1400-byte datagrams), from r1 to the
    # receiver's port + 1; a policer's bucket is shared with it (nft-policer only)
    cross: str | None = None
    cross_rate: str = "1M"
    # the sender's and the receiver's captures take both directions (a two-sided capture: the
    # acknowledgements travelling back too), not only the forward one
    both_ways: bool = False
    # r2's rate limiter: "tbf" (a shaper: tbf_rate, tbf_burst_bytes, tbf_limit_bytes), or
    # "nft-limit", a policer at tbf_rate with a bucket of tbf_burst_bytes that queues nothing
    # (nftables limit in r2's forward chain, on the data flow only: the control connection passes;
    # its bucket is a second of its rate larger: see LIMITERS), or "nft-policer", the same counting
    # packets (tbf_rate and tbf_burst_bytes in packets of POLICER_PACKET_BYTES), or "none"
    limiter: str = "tbf"
    # a kind of TUNNELS: the traffic between the sender and the receiver travels in it (iperf3
    # UDP only); the underlay captures take ``snaplen`` plus the tunnel's header, so that they
    # hold the same inner bytes as a plain capture would
    tunnel: str | None = None

    def policer_bucket(self) -> tuple[int, int]:
        """The nft-policer's rate in packets a minute and its bucket in packets (``LIMITERS``):
        ``tbf_rate`` and ``tbf_burst_bytes`` in packets of POLICER_PACKET_BYTES, rounded, the
        bucket one packet at least."""
        per_minute = round(bits_per_second(self.tbf_rate) * 60 / (8 * POLICER_PACKET_BYTES))
        return per_minute, max(1, round(self.tbf_burst_bytes / POLICER_PACKET_BYTES))


def bits_per_second(rate: str) -> int:
    """A tc rate (``1800kbit``, ``2mbit``, ``500000bit``) in bits per second."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(k|m|g)?bit", rate.lower())
    if match is None:
        raise ValueError(f"rate {rate!r}: give bits per second as tc writes them, e.g. 1800kbit")
    return int(float(match.group(1)) * {None: 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2)])


@dataclasses.dataclass(frozen=True)
class LabRun:
    """What one run produced: captures, the kernel's drop counters, and the flow's identity.

    ``captures`` maps "sender", "r1", "r2", "receiver" (in that order) to pcap files of, in turn,
    the sender's egress, r1's egress toward r2, r2's egress toward the receiver and the
    receiver's ingress. Besides the UDP data datagrams they hold the iperf3 control connection
    (TCP to ``port``) and one 4-byte UDP datagram each way that opens the UDP test.

    ``wireless_drops`` counts the data datagrams the nftables rule on r1 dropped.
    ``bottleneck_drops`` is r2's limiter's own drop counter: the tbf qdisc's, which counts every
    packet it dropped (so it would include a control-connection segment if one was dropped), or
    the nftables limit rule's, which sees the data flow only.
    ``capture_drops`` is what each tcpdump reported as "dropped by kernel".
    ``iperf3`` is the client's ``-J`` report; its ``end.sum`` holds the server's loss count (the
    chunked download's: the client's report, ``chunk_peer.py``).
    ``cross``: the cross traffic's kind (``LabConfig.cross``: None, "tcp" or "udp"; from r1's
    address 10.231.2.1 to the receiver's port + 1, so it is in every capture but the sender's).
    ``cross_drops``: what r2's policer dropped of the cross traffic (its own counter; None
    without cross traffic, or under tbf, whose one counter counts both flows' drops in
    ``bottleneck_drops``).

    With a ``tunnel``, ``captures`` hold its outer packets and ``overlay`` maps "sender-overlay"
    and "receiver-overlay" to the captures on the tunnel's two ends (the inner packets, sender's
    egress and receiver's ingress); ``sender_ip`` and ``receiver_ip`` are the inner addresses,
    ``underlay`` the outer ones (the tunnel's ends). ``capture_drops`` counts for all six.
    """

    captures: Mapping[str, Path]
    wireless_drops: int
    bottleneck_drops: int
    capture_drops: Mapping[str, int]
    iperf3: dict
    sender_ip: str
    sender_port: int
    receiver_ip: str
    port: int
    limiter: str = "tbf"
    tunnel: str | None = None
    cross: str | None = None
    cross_drops: int | None = None
    overlay: Mapping[str, Path] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    underlay: tuple[str, str] = (SENDER_IP, RECEIVER_IP)

    @property
    def bottleneck_cause(self) -> str:
        """The cause of r2's drops: a shaper's queue (congestion) or a policer's (none drops
        without a limiter: called congestion)."""
        return "policing" if self.limiter.startswith("nft-") else "congestion"

    def chain(self) -> list[Vantage]:
        """The captures as a vantage chain: r1's drops are the wireless segment's, r2's limiter's
        the bottleneck's (congestion or policing)."""
        c = self.captures
        return [
            Vantage(str(c["sender"])),
            Vantage(str(c["r1"]), "wireless"),
            Vantage(str(c["r2"]), self.bottleneck_cause),
            Vantage(str(c["receiver"])),
        ]

    def overlay_chain(self) -> list[Vantage]:
        """The tunnel's two end captures as a chain: its one segment holds every loss, of
        unknown cause (r1's and r2's drops both happen inside the tunnel)."""
        return [Vantage(str(self.overlay["sender-overlay"])), Vantage(str(self.overlay["receiver-overlay"]))]
