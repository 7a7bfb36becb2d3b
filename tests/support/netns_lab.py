"""A real four-host network lab in Linux network namespaces, for end-to-end capture tests.

``run_lab`` builds the chain ``sender -- r1 -- r2 -- receiver`` out of four namespaces joined by
veth pairs, sends one iperf3 UDP flow from sender to receiver, and captures it at every hop:

* **r1** plays the lossy wireless link: an nftables rule in its forward chain drops a random
  share of the flow's data datagrams (``numgen random``), counting what it drops;
* **r2** is the bottleneck (``LabConfig.limiter``): a tbf qdisc on its egress toward the receiver,
  slower than the flow, with a short queue, so it drops by tail drop and counts what it drops
  (``"tbf"``: a shaper, its drops congestion); or a token-bucket **policer** that drops what
  exceeds its rate without queueing, on what arrives from r1: an nftables ``limit rate over ...
  drop`` in r2's forward chain (``"nft-limit"``), counting what it drops (cause ``policing``).

The result holds the four pcap files and the kernel's own counts of both kinds of loss, so a
test can check what the analyzer says against ground truth: packets(sender) - packets(r1) is
the wireless loss, packets(r1) - packets(r2) the congestion loss, and packets(r2) ==
packets(receiver).

With ``LabConfig.tunnel`` the sender's and the receiver's traffic to each other travels in a
kernel tunnel between them (``ip link add ovl type vxlan``, ``gre``, ``gretap``, ``ipip`` or
``sit``: see ``TUNNELS``), carried by r1 and r2 as any IP packet: the four captures hold the
kernel's encapsulated packets (the underlay), and two more, on the tunnel device at the sender
(egress) and at the receiver (ingress), the inner packets (the overlay). r1's rule and r2's
limiter act on the outer packets as before: the rule matches the data datagrams inside them.

The lab is quiet apart from the experiment: IPv6 is off before any link comes up (no router or
neighbour solicitations), neighbours are static (no ARP), and the veths are created directly
inside the namespaces, so the host's own network namespace is never touched apart from the
namespace names themselves. Every namespace is deleted again, whatever happens.

Needs root and ``ip``, ``ss``, ``tc`` (iproute2), ``nft``, ``sysctl``, ``iperf3`` and ``tcpdump``:
see ``lab_unavailable``; a tunnel, its kernel driver: see ``tunnel_unavailable``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import re
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

COMMANDS = ("ip", "ss", "tc", "nft", "sysctl", "iperf3", "tcpdump")
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
STEP_TIMEOUT_S = 10  # any single setup or query command
DRAIN_S = 1.0  # after the traffic: the tbf queue (10 kB) empties at any of the lab's rates
RTP_SENDER_PORT = 5006  # the GStreamer sender's source port (RTCP from the next one)
START_TIMEOUT_S = 5  # tcpdump until "listening on", iperf3 server until its socket listens
# r2's rate limiter: a shaper, or a policer. (tc's police action would be a second policer; the
# kernels this lab runs on lack act_police and every classifier but basic ones, so it is not here.)
LIMITERS = ("tbf", "nft-limit")


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
    # "webrtc": two aiortc peers (tests/support/webrtc_peer.py), video from sender to receiver; r1 then
    # drops at random only the RTP packets toward the receiver (version 2, not an RTCP type), or
    # "rtp-video": a GStreamer rtpbin sender of VP8 (frames over several packets) with ULPFEC
    # and RFC 4588 retransmission on the receiver's NACKs (see send_rtp_video), or "iperf3-tcp":
    # one iperf3 TCP transfer (``rate`` caps it); r1 then drops data segments at random
    traffic: str = "iperf3"
    # the sender's and the receiver's captures take both directions (a two-sided capture: the
    # acknowledgements travelling back too), not only the forward one
    both_ways: bool = False
    # r2's rate limiter: "tbf" (a shaper: tbf_rate, tbf_burst_bytes, tbf_limit_bytes), or
    # "nft-limit", a policer at tbf_rate with a bucket of tbf_burst_bytes that queues nothing
    # (nftables limit in r2's forward chain, on the data flow only: the control connection passes)
    limiter: str = "tbf"
    # a kind of TUNNELS: the traffic between the sender and the receiver travels in it (iperf3
    # UDP only); the underlay captures take ``snaplen`` plus the tunnel's header, so that they
    # hold the same inner bytes as a plain capture would
    tunnel: str | None = None


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
    ``iperf3`` is the client's ``-J`` report; its ``end.sum`` holds the server's loss count.

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
    overlay: Mapping[str, Path] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    underlay: tuple[str, str] = (SENDER_IP, RECEIVER_IP)

    @property
    def bottleneck_cause(self) -> str:
        """The cause of r2's drops: a shaper's queue (congestion) or a policer's."""
        return "congestion" if self.limiter == "tbf" else "policing"

    def chain(self) -> list:
        """The captures as a vantage chain: r1's drops are the wireless segment's, r2's limiter's
        the bottleneck's (congestion or policing)."""
        from ldanalyze.io.capture.vantage import Vantage

        c = self.captures
        return [
            Vantage(str(c["sender"])),
            Vantage(str(c["r1"]), "wireless"),
            Vantage(str(c["r2"]), self.bottleneck_cause),
            Vantage(str(c["receiver"])),
        ]

    def overlay_chain(self) -> list:
        """The tunnel's two end captures as a chain: its one segment holds every loss, of
        unknown cause (r1's and r2's drops both happen inside the tunnel)."""
        from ldanalyze.io.capture.vantage import Vantage

        return [Vantage(str(self.overlay["sender-overlay"])), Vantage(str(self.overlay["receiver-overlay"]))]


def lab_unavailable() -> str | None:
    """Why the lab cannot run here (not root, a command missing, no namespaces), else None."""
    if os.geteuid() != 0:
        return "the network namespace lab needs root"
    missing = [name for name in COMMANDS if shutil.which(name) is None]
    if missing:
        return f"the network namespace lab needs {', '.join(missing)}"
    probe = f"ldlab-probe-{os.getpid()}-{secrets.token_hex(3)}"
    added = subprocess.run(["ip", "netns", "add", probe], check=False, capture_output=True, text=True)
    if added.returncode != 0:
        return f"`ip netns add` fails: {added.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], check=False, capture_output=True)
    return None


@dataclasses.dataclass(frozen=True)
class TunnelUnavailable:
    """Why a kind of tunnel cannot be made here; ``absent`` when the kernel was built without
    its driver (its option "is not set" in /proc/config.gz), rather than a module missing."""

    reason: str
    absent: bool


def tunnel_unavailable(kind: str) -> TunnelUnavailable | None:
    """Whether ``ip link add ... type {kind}`` works in a namespace (after ``modprobe`` of its
    module where there is one), else why not; the lab must be available (``lab_unavailable``)."""
    tunnel = TUNNELS[kind]
    probe = f"ldlab-probe-{os.getpid()}-{secrets.token_hex(3)}"
    add = ["ip", "-n", probe, "link", "add", "probe", "type", tunnel.link_type]
    add += ["local", "10.0.0.1", "remote", "10.0.0.2", *tunnel.options]
    _run(["ip", "netns", "add", probe])
    try:
        failed = subprocess.run(add, check=False, capture_output=True, text=True)
        if failed.returncode != 0 and shutil.which("modprobe"):
            subprocess.run(["modprobe", tunnel.module], check=False, capture_output=True)
            failed = subprocess.run(add, check=False, capture_output=True, text=True)
    finally:
        subprocess.run(["ip", "netns", "delete", probe], check=False, capture_output=True)
    if failed.returncode == 0:
        return None
    said = f"`{' '.join(add[3:])}` fails: {failed.stderr.strip()}"
    options = {name: _kernel_option(name) for name in tunnel.kernel_options}
    unset = [name for name, value in options.items() if value == "is not set"]
    if unset:
        built = f"# {unset[0]} is not set, in /proc/config.gz"
        return TunnelUnavailable(f"{said}; the kernel was built without the {kind} driver ({built})", True)
    found = ", ".join(
        f"{name}={value}" if value else f"{name}: no line in /proc/config.gz" for name, value in options.items()
    )
    return TunnelUnavailable(f"{said} ({found}; module {tunnel.module})", False)


def _kernel_option(name: str) -> str | None:
    """A kernel build option's value in /proc/config.gz ("y", "m", "is not set"), or None when
    the file or the option's line is missing."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            for line in f:
                if line.startswith(f"{name}="):
                    return line.strip().partition("=")[2]
                if line.strip() == f"# {name} is not set":
                    return "is not set"
    except OSError:
        return None
    return None


def run_lab(workdir: Path, config: LabConfig = LabConfig()) -> LabRun:
    """Build the lab, send one UDP flow through it, and return the captures and counters.

    The pcap files go to ``workdir`` (sender.pcap, r1.pcap, r2.pcap, receiver.pcap). Raises
    RuntimeError, naming the command and its error output, if any step fails; the namespaces and
    every process started in them are gone when this returns or raises.
    """
    lab = _Lab(Path(workdir), config)
    try:
        lab.build()
        return lab.run()
    finally:
        lab.teardown()


def _run(cmd: list[str], *, input: str | None = None, timeout: float = STEP_TIMEOUT_S) -> str:
    """Run a command to completion and return its output; RuntimeError if it fails."""
    try:
        done = subprocess.run(cmd, check=False, input=input, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"`{' '.join(cmd)}` did not finish in {timeout} s") from e
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def _finish(proc: subprocess.Popen, seconds: float) -> str:
    """Wait for a sender that should end by itself after ``seconds``; stop it if it does not.

    gst-launch's ``-e`` sometimes waits forever for an end-of-stream that rtpbin's RTCP branch
    never passes on (about one run in five here), after every frame was sent. Ctrl-C, then a
    kill, ends it; the captures, not the sender, are what the tests count. Returns how it ended.
    """
    for signal_, how, grace in (
        (None, "by itself", seconds),
        (signal.SIGINT, "interrupted", 3),
        (signal.SIGKILL, "killed", STEP_TIMEOUT_S),
    ):
        if signal_ is not None:
            proc.send_signal(signal_)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        if signal_ is None and proc.returncode != 0:
            raise RuntimeError(f"the sender failed ({proc.returncode}): {proc.stderr.read().decode().strip()}")
        return how
    raise RuntimeError("the sender could not be stopped")


def _bits_per_second(rate: str) -> int:
    """A tc rate (``1800kbit``, ``2mbit``, ``500000bit``) in bits per second."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(k|m|g)?bit", rate.lower())
    if match is None:
        raise ValueError(f"rate {rate!r}: give bits per second as tc writes them, e.g. 1800kbit")
    return int(float(match.group(1)) * {None: 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2)])


def _nft_drops(command: list[str]) -> int:
    """The packets the counters of a namespace's ldlab table counted (its drop rules')."""
    listing = json.loads(_run(command))
    return sum(
        expr["counter"]["packets"]
        for item in listing["nftables"]
        if "rule" in item
        for expr in item["rule"]["expr"]
        if "counter" in expr
    )


def _mac(subnet: str, host: int) -> str:
    """A locally administered MAC address made from a link's subnet and the host's number."""
    return "02:00:" + ":".join(f"{int(octet):02x}" for octet in subnet.split(".")) + f":{host:02x}"


def rtpbin_to_receiver(port: int) -> list[str]:
    """The end of a GStreamer sender pipeline: rtpbin ``rb``'s RTP to the receiver's ``port`` and
    its RTCP to the next one, from the lab's fixed sender ports."""
    return [
        "rb.send_rtp_sink_0",
        "rb.send_rtp_src_0",
        "!",
        "udpsink",
        f"host={RECEIVER_IP}",
        f"port={port}",
        f"bind-port={RTP_SENDER_PORT}",
        "rb.send_rtcp_src_0",
        "!",
        "udpsink",
        f"host={RECEIVER_IP}",
        f"port={port + 1}",
        f"bind-port={RTP_SENDER_PORT + 1}",
        "sync=false",
        "async=false",
    ]


class _Lab:
    """The namespaces and processes of one run, and the steps that build, use and remove them."""

    def __init__(self, workdir: Path, config: LabConfig):
        self.workdir = workdir
        self.config = config
        tag = f"ldlab-{os.getpid()}-{secrets.token_hex(3)}"
        self.ns = {host: f"{tag}-{host}" for host in HOSTS}
        self.created: list[str] = []
        self.procs: list[subprocess.Popen] = []
        self.tunnel = None if config.tunnel is None else TUNNELS.get(config.tunnel)
        # the ends of the traffic: the tunnel's inner addresses, or the underlay's
        if self.tunnel is None:
            self.sender_ip, self.receiver_ip = SENDER_IP, RECEIVER_IP
        elif self.tunnel.inner_version == 6:
            self.sender_ip, self.receiver_ip = f"{OVERLAY_SUBNET6}::1", f"{OVERLAY_SUBNET6}::2"
        else:
            self.sender_ip, self.receiver_ip = f"{OVERLAY_SUBNET}.1", f"{OVERLAY_SUBNET}.2"

    def exec(self, host: str, *cmd: str) -> list[str]:
        """A command line that runs ``cmd`` inside a host's namespace."""
        return ["ip", "netns", "exec", self.ns[host], *cmd]

    # -- build -------------------------------------------------------------------------------
    def build(self) -> None:
        self.check_tunnel()
        for host in HOSTS:
            self.created.append(self.ns[host])  # first: an interrupt may come before `ip` returns
            _run(["ip", "netns", "add", self.ns[host]])
            # Before any interface exists, so no link ever sends an IPv6 packet.
            _run(
                self.exec(
                    host,
                    "sysctl",
                    "-q",
                    "-w",
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                )
            )
            _run(["ip", "-n", self.ns[host], "link", "set", "lo", "up"])
        for left, right, subnet in LINKS:
            _run(
                [
                    "ip",
                    "-n",
                    self.ns[left],
                    "link",
                    "add",
                    f"to-{right}",
                    "address",
                    _mac(subnet, 1),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"to-{left}",
                    "netns",
                    self.ns[right],
                    "address",
                    _mac(subnet, 2),
                ]
            )
            for host, peer, me, other in ((left, right, 1, 2), (right, left, 2, 1)):
                dev = f"to-{peer}"
                _run(["ip", "-n", self.ns[host], "addr", "add", f"{subnet}.{me}/24", "dev", dev])
                _run(
                    [
                        "ip",
                        "-n",
                        self.ns[host],
                        "neigh",
                        "replace",
                        f"{subnet}.{other}",
                        "lladdr",
                        _mac(subnet, other),
                        "dev",
                        dev,
                        "nud",
                        "permanent",
                    ]
                )
                # one wire packet per skb: no TCP segmentation offload, so each capture sees the
                # segments as they travel (not 64 KB super-packets cut up further on)
                _run(["ip", "-n", self.ns[host], "link", "set", dev, "gso_max_segs", "1", "up"])
        _run(["ip", "-n", self.ns["sender"], "route", "add", "default", "via", "10.231.1.2"])
        _run(["ip", "-n", self.ns["r1"], "route", "add", "10.231.3.0/24", "via", "10.231.2.2"])
        _run(["ip", "-n", self.ns["r2"], "route", "add", "10.231.1.0/24", "via", "10.231.2.1"])
        _run(["ip", "-n", self.ns["receiver"], "route", "add", "default", "via", "10.231.3.1"])
        for router in ("r1", "r2"):
            _run(self.exec(router, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"))
        if self.tunnel is not None:
            self.add_tunnel()
        self.add_wireless_loss()
        self.add_bottleneck()

    def check_tunnel(self) -> None:
        c = self.config
        if c.tunnel is None:
            return
        if self.tunnel is None:
            raise ValueError(f"tunnel {c.tunnel!r}: one of {', '.join(TUNNELS)}")
        if c.traffic != "iperf3":
            raise ValueError(f"a tunnel carries iperf3 UDP traffic, not {c.traffic!r}")
        inner = c.length + 8 + (20 if self.tunnel.inner_version == 4 else 40)
        if inner > self.tunnel.mtu:
            raise ValueError(f"{inner}-byte datagrams do not fit the {c.tunnel} tunnel's MTU ({self.tunnel.mtu})")

    def add_tunnel(self) -> None:
        """The tunnel's device ``ovl`` at the sender and at the receiver, between their underlay
        addresses, with the inner addresses, an MTU that no outer packet exceeds 1500 bytes with
        and, for Ethernet tunnels, fixed MACs and static neighbours.

        A 6in4 (sit) end has IPv6 on that device alone, without link-local address (no DAD, no
        router solicitation); its inner address is added without DAD too, and a sit device
        (NOARP) joins no solicited-node group, so it sends no MLD report either (an Ethernet
        tunnel would: an IPv6 overlay on VXLAN sent one, to ff02::16)."""
        t = self.tunnel
        inner = {1: self.sender_ip, 2: self.receiver_ip}
        for host, me, other, local, remote in (
            ("sender", 1, 2, SENDER_IP, RECEIVER_IP),
            ("receiver", 2, 1, RECEIVER_IP, SENDER_IP),
        ):
            ip = ["ip", "-n", self.ns[host]]
            mac = ["address", _mac(OVERLAY_SUBNET, me)] if t.ethernet else []
            _run(
                [*ip, "link", "add", OVERLAY, *mac, "mtu", str(t.mtu), "type", t.link_type]
                + ["local", local, "remote", remote, *t.options]
            )
            if t.inner_version == 6:
                _run([*ip, "link", "set", OVERLAY, "addrgenmode", "none"])
                conf = f"net.ipv6.conf.{OVERLAY}"
                _run(
                    self.exec(
                        host,
                        "sysctl",
                        "-q",
                        "-w",
                        f"{conf}.accept_ra=0",
                        f"{conf}.router_solicitations=0",
                        f"{conf}.disable_ipv6=0",
                    )
                )
                _run([*ip, "-6", "addr", "add", f"{inner[me]}/64", "dev", OVERLAY, "nodad"])
            else:
                _run([*ip, "addr", "add", f"{inner[me]}/24", "dev", OVERLAY])
            if t.ethernet:
                _run(
                    [*ip, "neigh", "replace", inner[other], "lladdr", _mac(OVERLAY_SUBNET, other)]
                    + ["dev", OVERLAY, "nud", "permanent"]
                )
            _run([*ip, "link", "set", OVERLAY, "gso_max_segs", "1", "up"])

    def add_wireless_loss(self) -> None:
        """r1 drops a random share of the flow's data datagrams, and only those.

        The rule matches the data datagrams' exact UDP length, so it spares the 4-byte datagram
        that opens the UDP test: iperf3 3.12 never resends it, and fails 30 s later if it is lost.
        """
        c = self.config
        ruleset = f"""
            table ip ldlab {{
                chain wireless {{
                    type filter hook forward priority 0; policy accept;
                    ip daddr {RECEIVER_IP} {self.media()} \
                        numgen random mod 100 < {c.wireless_drop_percent} counter drop
                }}
            }}
        """
        _run(self.exec("r1", "nft", "-f", "-"), input=ruleset)

    def media(self) -> str:
        """The nftables match of the flow's data packets (not the test's control traffic); in a
        tunnel, of the outer packets that carry them: the inner UDP header's port and length,
        read at their offsets from the outer IP header."""
        c = self.config
        t = self.tunnel
        if t is not None:
            inner_ip = t.header * 8  # bits from the outer IP header
            proto, udp = (inner_ip + 72, inner_ip + 160) if t.inner_version == 4 else (inner_ip + 48, inner_ip + 320)
            return f"{t.outer} @nh,{proto},8 17 @nh,{udp + 16},16 {c.port} @nh,{udp + 32},16 {c.length + 8}"
        return (
            "meta l4proto udp @th,64,2 2 @th,72,8 != 192-223"
            if c.traffic == "webrtc"  # RTP, not RTCP
            else f"udp dport {c.port}"
            if c.traffic == "rtp-video"  # media, FEC and RTX (RTCP: next port)
            else f"tcp dport {c.port} ip length > {c.length}"
            if c.traffic == "iperf3-tcp"  # data segments
            else f"udp dport {c.port} udp length {c.length + 8}"
        )

    def add_bottleneck(self) -> None:
        c = self.config
        if c.limiter not in LIMITERS:
            raise ValueError(f"limiter {c.limiter!r}: one of {', '.join(LIMITERS)}")
        if c.limiter != "tbf" and c.tbf_steps:
            raise ValueError("tbf_steps step a shaper's rate: give them with limiter='tbf'")
        if c.limiter == "nft-limit":
            ruleset = f"""
                table ip ldlab {{
                    chain policer {{
                        type filter hook forward priority 0; policy accept;
                        ip daddr {RECEIVER_IP} {self.media()} \
                            limit rate over {_bits_per_second(c.tbf_rate) // 8} bytes/second \
                            burst {c.tbf_burst_bytes} bytes counter drop
                    }}
                }}
            """
            _run(self.exec("r2", "nft", "-f", "-"), input=ruleset)
            return
        _run(
            [
                "tc",
                "-n",
                self.ns["r2"],
                "qdisc",
                "add",
                "dev",
                "to-receiver",
                "root",
                "tbf",
                "rate",
                c.tbf_rate,
                "burst",
                str(c.tbf_burst_bytes),
                "limit",
                str(c.tbf_limit_bytes),
            ]
        )

    def send_iperf3(self, steps) -> dict:
        c = self.config
        server = self.spawn("receiver", "iperf3", "-s", "-1", "-J", "-p", str(c.port))
        self.wait_listening(server)
        for step in steps:
            step.start()
        try:
            udp = ["-u", "-l", str(c.length)] if c.traffic == "iperf3" else []
            client = _run(
                self.exec(
                    "sender",
                    "iperf3",
                    "-c",
                    self.receiver_ip,
                    "-p",
                    str(c.port),
                    *udp,
                    "-b",
                    c.rate,
                    "-t",
                    str(c.duration_s),
                    "-J",
                ),
                timeout=c.duration_s + 30,
            )
        finally:
            for step in steps:
                step.cancel()
        try:
            server.communicate(timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise RuntimeError("the iperf3 server did not exit after the test") from e
        report = json.loads(client)
        if "error" in report:
            raise RuntimeError(f"iperf3 client: {report['error']}")
        return report

    def send_rtp_audio(self, steps) -> dict:
        """A real RTP stack: GStreamer's rtpbin sends 20 ms G.711 frames (RTP to ``port``, RTCP
        sender reports to ``port + 1``, from fixed ports) to sinks in the receiver namespace."""
        c = self.config
        for port in (c.port, c.port + 1):
            self.spawn("receiver", "gst-launch-1.0", "-q", "udpsrc", f"port={port}", "!", "fakesink")
        time.sleep(0.3)
        frames = c.duration_s * 50
        pipeline = [
            "rtpbin",
            "name=rb",
            "audiotestsrc",
            "is-live=true",
            f"num-buffers={frames}",
            "samplesperbuffer=160",
            "!",
            "audio/x-raw,rate=8000,channels=1",
            "!",
            "alawenc",
            "!",
            "rtppcmapay",
            "!",
            *rtpbin_to_receiver(c.port),
        ]
        for step in steps:
            step.start()
        try:
            ended = _finish(self.spawn("sender", "gst-launch-1.0", "-q", "-e", *pipeline), c.duration_s + 5)
        finally:
            for step in steps:
                step.cancel()
        return {"frames": frames, "sender_ended": ended}

    def send_rtp_video(self, steps) -> dict:
        """A real video stack: GStreamer's rtpbin sends VP8 (25 frames/s, each over several
        packets of at most 600 bytes, PT 96) with ULPFEC (RFC 5109, PT 122, in the media stream)
        and RFC 4588 retransmission (PT 97, its own SSRC) of what the receiver's rtpbin asks for
        in RTCP NACKs (AVPF); RTCP goes to ``port + 1`` and comes back to the sender's
        ``RTP_SENDER_PORT + 2``."""
        c = self.config
        back = RTP_SENDER_PORT + 2
        receiver = [
            "rtpbin",
            "name=rb",
            "rtp-profile=avpf",
            "do-retransmission=true",
            "latency=200",
            "udpsrc",
            f"port={c.port}",
            "caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96",
            "!",
            "rb.recv_rtp_sink_0",
            "udpsrc",
            f"port={c.port + 1}",
            "!",
            "rb.recv_rtcp_sink_0",
            "rb.send_rtcp_src_0",
            "!",
            "udpsink",
            f"host={SENDER_IP}",
            f"port={back}",
            "sync=false",
            "async=false",
            "rb.",
            "!",
            "rtpvp8depay",
            "!",
            "fakesink",
        ]
        self.spawn("receiver", "gst-launch-1.0", "-q", *receiver)
        time.sleep(0.5)
        frames = c.duration_s * 25
        sender = [
            "rtpbin",
            "name=rb",
            "rtp-profile=avpf",
            "videotestsrc",
            "is-live=true",
            f"num-buffers={frames}",
            "pattern=smpte",
            "horizontal-speed=4",
            "!",
            "video/x-raw,width=320,height=240,framerate=25/1",
            "!",
            "vp8enc",
            "deadline=1",
            "target-bitrate=800000",
            "keyframe-max-dist=50",
            "!",
            "rtpvp8pay",
            "mtu=600",
            "pt=96",
            "!",
            "rtpulpfecenc",
            "pt=122",
            "percentage=20",
            "!",
            "rtprtxsend",
            "payload-type-map=application/x-rtp-pt-map,96=(uint)97",
            "max-size-packets=1000",
            "!",
            *rtpbin_to_receiver(c.port),
            "udpsrc",
            f"port={back}",
            "!",
            "rb.recv_rtcp_sink_0",
        ]
        for step in steps:
            step.start()
        try:  # its RTCP source (udpsrc) never ends, so neither does the pipeline: stopped once sent
            ended = _finish(self.spawn("sender", "gst-launch-1.0", "-q", "-e", *sender), c.duration_s + 1.5)
        finally:
            for step in steps:
                step.cancel()
        return {"frames": frames, "sender_ended": ended}

    def send_webrtc(self, steps) -> dict:
        """Two aiortc peers, signalling through files in the work folder."""
        c = self.config
        peer = str(Path(__file__).parent / "webrtc_peer.py")
        signals = self.workdir / "signals"
        signals.mkdir(exist_ok=True)
        receiver = self.spawn("receiver", sys.executable, peer, "answer", str(signals), str(c.duration_s))
        for step in steps:
            step.start()
        try:
            _run(
                self.exec("sender", sys.executable, peer, "offer", str(signals), str(c.duration_s)),
                timeout=c.duration_s + 40,
            )
            receiver.communicate(timeout=STEP_TIMEOUT_S)
        finally:
            for step in steps:
                step.cancel()
        return {"webrtc": True}

    def set_bottleneck_rate(self, rate: str) -> None:
        c = self.config
        _run(
            [
                "tc",
                "-n",
                self.ns["r2"],
                "qdisc",
                "change",
                "dev",
                "to-receiver",
                "root",
                "tbf",
                "rate",
                rate,
                "burst",
                str(c.tbf_burst_bytes),
                "limit",
                str(c.tbf_limit_bytes),
            ]
        )

    # -- run ---------------------------------------------------------------------------------
    def run(self) -> LabRun:
        c = self.config
        overlay = OVERLAY_POINTS if self.tunnel is not None else {}
        captures = {name: self.workdir / f"{name}.pcap" for name in [*CAPTURE_POINTS, *overlay]}
        points = {
            name: (host, dev, "inout" if c.both_ways and name in ("sender", "receiver") else way)
            for name, (host, dev, way) in {**CAPTURE_POINTS, **overlay}.items()
        }
        # the outer packets' captures take the tunnel's header more: the same inner bytes
        underlay = c.snaplen + (self.tunnel.header if self.tunnel is not None else 0)
        tcpdumps = {
            name: self.start_capture(*points[name], captures[name], underlay if name in CAPTURE_POINTS else c.snaplen)
            for name in captures
        }
        self.mark_capture("start")
        steps = [threading.Timer(at, self.set_bottleneck_rate, (rate,)) for at, rate in c.tbf_steps]
        if c.traffic == "rtp-audio":
            report, sender_port = self.send_rtp_audio(steps), RTP_SENDER_PORT
        elif c.traffic == "rtp-video":
            report, sender_port = self.send_rtp_video(steps), RTP_SENDER_PORT
        elif c.traffic == "webrtc":
            report, sender_port = self.send_webrtc(steps), 0  # ICE picks the ports
        else:
            report = self.send_iperf3(steps)
            sender_port = report["start"]["connected"][0]["local_port"]
        time.sleep(DRAIN_S)  # the bottleneck's queue empties
        self.mark_capture("end")
        capture_drops = {name: self.stop_capture(proc) for name, proc in tcpdumps.items()}
        return LabRun(
            captures=MappingProxyType({name: captures[name] for name in CAPTURE_POINTS}),
            wireless_drops=self.wireless_drops(),
            bottleneck_drops=self.bottleneck_drops(),
            capture_drops=MappingProxyType(capture_drops),
            iperf3=report,
            limiter=c.limiter,
            sender_ip=self.sender_ip,
            sender_port=sender_port,
            receiver_ip=self.receiver_ip,
            port=c.port,
            tunnel=c.tunnel,
            overlay=MappingProxyType({name: captures[name] for name in overlay}),
        )

    def spawn(self, host: str, *cmd: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            self.exec(host, *cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.procs.append(proc)
        return proc

    def mark_capture(self, text: str) -> None:
        """One datagram through every hop, before the traffic and after it has drained, so that
        every capture's first and last records show it was running: a chain reader cannot
        otherwise tell a flow's first or last packet dropped upstream of a capture from one that
        passed while the capture was not running (``vantage.py`` calls such a packet unobserved;
        gst's RTCP BYE, sent last, was one). Both go from port 9 to port 9: one flow (in the
        tunnel, when there is one)."""
        family = "AF_INET6" if ":" in self.receiver_ip else "AF_INET"
        _run(
            self.exec(
                "sender",
                sys.executable,
                "-c",
                f"import socket; s = socket.socket(socket.{family}, "
                f"socket.SOCK_DGRAM); s.bind(('', 9)); s.sendto(b'{text}', ('{self.receiver_ip}', 9))",
            )
        )
        time.sleep(0.05)

    def start_capture(self, host: str, dev: str, direction: str, path: Path, snaplen: int) -> subprocess.Popen:
        """Start tcpdump and return once it says it is listening.

        Immediate mode hands every packet to tcpdump at once (libpcap then uses TPACKET_V2 rather
        than V3's block timeout), so nothing is left in the ring when it is stopped; ``-Z root``
        keeps tcpdump from switching to the tcpdump user, who may not write to ``workdir``.
        """
        proc = self.spawn(
            host,
            "tcpdump",
            "-i",
            dev,
            "-Q",
            direction,
            "-w",
            str(path),
            "-U",
            "-B",
            "8192",
            "-n",
            "-s",
            str(snaplen),
            "--immediate-mode",
            "-Z",
            "root",
        )
        stderr = b""
        deadline = time.monotonic() + START_TIMEOUT_S
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            while b"listening on" not in stderr:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(remaining):
                    raise RuntimeError(f"tcpdump on {host}/{dev} did not start: {stderr.decode()}")
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    proc.wait()
                    raise RuntimeError(f"tcpdump on {host}/{dev} exited: {stderr.decode().strip()}")
                stderr += chunk
        return proc

    def stop_capture(self, proc: subprocess.Popen) -> int:
        """Stop tcpdump as Ctrl-C would and return the packets it says the kernel dropped."""
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise RuntimeError("tcpdump did not stop on SIGINT") from e
        found = re.search(rb"(\d+) packets? dropped by kernel", stderr)
        if found is None:
            raise RuntimeError(f"tcpdump reported no statistics: {stderr.decode().strip()}")
        return int(found.group(1))

    def wait_listening(self, server: subprocess.Popen) -> None:
        """Wait until the iperf3 server's control socket listens (``-J`` prints nothing until then)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _run(self.exec("receiver", "ss", "-H", "-l", "-t", "-n", f"sport = :{self.config.port}")):
            if server.poll() is not None:
                raise RuntimeError(f"iperf3 server exited: {server.communicate()[0].decode().strip()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"iperf3 server did not listen within {START_TIMEOUT_S} s")
            time.sleep(0.05)

    def wireless_drops(self) -> int:
        return _nft_drops(self.exec("r1", "nft", "-j", "list", "table", "ip", "ldlab"))

    def bottleneck_drops(self) -> int:
        limiter = self.config.limiter
        if limiter == "nft-limit":
            return _nft_drops(self.exec("r2", "nft", "-j", "list", "table", "ip", "ldlab"))
        qdiscs = json.loads(_run(["tc", "-n", self.ns["r2"], "-s", "-j", "qdisc", "show", "dev", "to-receiver"]))
        (tbf,) = [q for q in qdiscs if q["kind"] == "tbf"]
        return tbf["drops"]

    # -- teardown ----------------------------------------------------------------------------
    def teardown(self) -> None:
        """Kill what is still running and delete the namespaces; never raises.

        Any process left inside a namespace (``ip netns pids``) is killed too, since a namespace
        lives on, nameless, as long as a process is in it.
        """
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()
        for ns in self.created:
            pids = subprocess.run(["ip", "netns", "pids", ns], check=False, capture_output=True, text=True).stdout
            for pid in pids.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            subprocess.run(["ip", "netns", "delete", ns], check=False, capture_output=True)
