"""The four namespaces of one run and what happens to them: built (veths, addresses, static
neighbours and routes, the tunnel), r1's random drop and r2's limiter added, a command run or
started inside a host, the drop counters read, and everything removed again."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
from pathlib import Path

from .commands import run
from .config import (
    CROSS_PORT_OFFSET,
    HOSTS,
    LIMITERS,
    LINKS,
    OVERLAY,
    OVERLAY_SUBNET,
    OVERLAY_SUBNET6,
    RECEIVER_IP,
    SENDER_IP,
    TUNNELS,
    LabConfig,
    Tunnel,
    bits_per_second,
)

# The longest IPv4 TCP segment without payload: 20 + 60 bytes of headers (TCP's options at most:
# timestamps and SACK blocks). A longer one carries data.
PURE_ACK_MAX = 80


class Lab:
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

    def sysctl(self, host: str, *settings: str) -> None:
        """Set kernel parameters (``name=value``) in a host's namespace."""
        run(self.exec(host, "sysctl", "-q", "-w", *settings))

    # -- build -------------------------------------------------------------------------------
    def build(self) -> None:
        self.check_tunnel()
        self.check_chunks()
        for host in HOSTS:
            self.created.append(self.ns[host])  # first: an interrupt may come before `ip` returns
            run(["ip", "netns", "add", self.ns[host]])
            # Before any interface exists, so no link ever sends an IPv6 packet.
            self.sysctl(host, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
            run(["ip", "-n", self.ns[host], "link", "set", "lo", "up"])
        for left, right, subnet in LINKS:
            run(
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
                run(["ip", "-n", self.ns[host], "addr", "add", f"{subnet}.{me}/24", "dev", dev])
                run(
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
                run(["ip", "-n", self.ns[host], "link", "set", dev, "gso_max_segs", "1", "up"])
        run(["ip", "-n", self.ns["sender"], "route", "add", "default", "via", "10.231.1.2"])
        run(["ip", "-n", self.ns["r1"], "route", "add", "10.231.3.0/24", "via", "10.231.2.2"])
        run(["ip", "-n", self.ns["r2"], "route", "add", "10.231.1.0/24", "via", "10.231.2.1"])
        run(["ip", "-n", self.ns["receiver"], "route", "add", "default", "via", "10.231.3.1"])
        for router in ("r1", "r2"):
            self.sysctl(router, "net.ipv4.ip_forward=1")
        if self.tunnel is not None:
            self.add_tunnel(self.tunnel)
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

    def check_chunks(self) -> None:
        c = self.config
        if c.cross is not None and (c.traffic != "chunks" or c.cross not in ("tcp", "udp")):
            raise ValueError(f"cross traffic {c.cross!r}: 'tcp' or 'udp', beside traffic='chunks'")
        if c.traffic == "chunks" and (c.chunk_bytes <= 0 or c.chunk_bytes % 8):
            raise ValueError(f"chunk_bytes {c.chunk_bytes}: a positive multiple of 8")

    def add_tunnel(self, t: Tunnel) -> None:
        """The tunnel's device ``ovl`` at the sender and at the receiver, between their underlay
        addresses, with the inner addresses, an MTU that no outer packet exceeds 1500 bytes with
        and, for Ethernet tunnels, fixed MACs and static neighbours.

        A 6in4 (sit) end has IPv6 on that device alone, without link-local address (no DAD, no
        router solicitation); its inner address is added without DAD too, and a sit device
        (NOARP) joins no solicited-node group, so it sends no MLD report either (an Ethernet
        tunnel would: an IPv6 overlay on VXLAN sent one, to ff02::16)."""
        inner = {1: self.sender_ip, 2: self.receiver_ip}
        for host, me, other, local, remote in (
            ("sender", 1, 2, SENDER_IP, RECEIVER_IP),
            ("receiver", 2, 1, RECEIVER_IP, SENDER_IP),
        ):
            ip = ["ip", "-n", self.ns[host]]
            mac = ["address", _mac(OVERLAY_SUBNET, me)] if t.ethernet else []
            run(
                [*ip, "link", "add", OVERLAY, *mac, "mtu", str(t.mtu), "type", t.link_type]
                + ["local", local, "remote", remote, *t.options]
            )
            if t.inner_version == 6:
                run([*ip, "link", "set", OVERLAY, "addrgenmode", "none"])
                conf = f"net.ipv6.conf.{OVERLAY}"
                self.sysctl(host, f"{conf}.accept_ra=0", f"{conf}.router_solicitations=0", f"{conf}.disable_ipv6=0")
                run([*ip, "-6", "addr", "add", f"{inner[me]}/64", "dev", OVERLAY, "nodad"])
            else:
                run([*ip, "addr", "add", f"{inner[me]}/24", "dev", OVERLAY])
            if t.ethernet:
                run(
                    [*ip, "neigh", "replace", inner[other], "lladdr", _mac(OVERLAY_SUBNET, other)]
                    + ["dev", OVERLAY, "nud", "permanent"]
                )
            run([*ip, "link", "set", OVERLAY, "gso_max_segs", "1", "up"])

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
        run(self.exec("r1", "nft", "-f", "-"), input=ruleset)

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
            else f"tcp sport {c.port} ip length > {PURE_ACK_MAX}"
            if c.traffic == "chunks"  # the server's data segments, not its ACKs (D-SACKs of a request sent twice)
            else f"udp dport {c.port} udp length {c.length + 8}"
        )

    def cross_match(self) -> str:
        """The nftables match of the cross traffic's data packets (not iperf3's small ones)."""
        c = self.config
        port = c.port + CROSS_PORT_OFFSET
        return (
            f"tcp dport {port} ip length > {PURE_ACK_MAX}" if c.cross == "tcp" else f"udp dport {port} udp length > 100"
        )

    def add_bottleneck(self) -> None:
        c = self.config
        if c.limiter not in LIMITERS:
            raise ValueError(f"limiter {c.limiter!r}: one of {', '.join(LIMITERS)}")
        if c.limiter != "tbf" and c.tbf_steps:
            raise ValueError("tbf_steps step a shaper's rate: give them with limiter='tbf'")
        if c.cross is not None and c.limiter == "nft-limit":
            raise ValueError("cross traffic shares a policer's bucket with limiter='nft-policer', not 'nft-limit'")
        if c.limiter == "none":
            return
        if c.limiter == "nft-policer":
            self.add_policer()
            return
        if c.limiter == "nft-limit":
            ruleset = f"""
                table ip ldlab {{
                    chain policer {{
                        type filter hook forward priority 0; policy accept;
                        ip daddr {RECEIVER_IP} {self.media()} \
                            limit rate over {bits_per_second(c.tbf_rate) // 8} bytes/second \
                            burst {c.tbf_burst_bytes} bytes counter drop comment "data"
                    }}
                }}
            """
            run(self.exec("r2", "nft", "-f", "-"), input=ruleset)
            return
        run(
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

    def add_policer(self) -> None:
        """A token bucket counting packets (``LIMITERS``), at ``tbf_rate`` with a bucket of
        ``tbf_burst_bytes``, both in packets of POLICER_PACKET_BYTES (the rate per minute, so
        that it is exact to 1/60 of a packet a second); one named bucket that the data flow's
        rule and the cross traffic's share, each rule counting its own drops."""
        c = self.config
        per_minute, burst = c.policer_bucket()
        cross = (
            f'ip daddr {RECEIVER_IP} {self.cross_match()} limit name "bucket" counter drop comment "cross"'
            if c.cross is not None
            else ""
        )
        ruleset = f"""
            table ip ldlab {{
                limit bucket {{ rate over {per_minute}/minute burst {burst} packets }}
                chain policer {{
                    type filter hook forward priority 0; policy accept;
                    ip daddr {RECEIVER_IP} {self.media()} limit name "bucket" counter drop comment "data"
                    {cross}
                }}
            }}
        """
        run(self.exec("r2", "nft", "-f", "-"), input=ruleset)

    def set_bottleneck_rate(self, rate: str) -> None:
        c = self.config
        run(
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

    def spawn(self, host: str, *cmd: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            self.exec(host, *cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.procs.append(proc)
        return proc

    def wireless_drops(self) -> int:
        return _nft_drops(self.exec("r1", "nft", "-j", "list", "table", "ip", "ldlab"))

    def bottleneck_drops(self) -> int:
        limiter = self.config.limiter
        if limiter == "none":
            return 0
        if limiter.startswith("nft-"):
            return _nft_drops(self.exec("r2", "nft", "-j", "list", "table", "ip", "ldlab"), "data")
        qdiscs = json.loads(run(["tc", "-n", self.ns["r2"], "-s", "-j", "qdisc", "show", "dev", "to-receiver"]))
        (tbf,) = [q for q in qdiscs if q["kind"] == "tbf"]
        return tbf["drops"]

    def cross_drops(self) -> int | None:
        """The policer's drops of the cross traffic (None: no cross traffic, or a limiter
        that does not count them apart)."""
        if self.config.cross is None or self.config.limiter != "nft-policer":
            return None
        return _nft_drops(self.exec("r2", "nft", "-j", "list", "table", "ip", "ldlab"), "cross")

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
                if pipe is not None:
                    pipe.close()
        for ns in self.created:
            pids = subprocess.run(["ip", "netns", "pids", ns], check=False, capture_output=True, text=True).stdout
            for pid in pids.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            subprocess.run(["ip", "netns", "delete", ns], check=False, capture_output=True)


def _nft_drops(command: list[str], comment: str | None = None) -> int:
    """The packets the counters of a namespace's ldlab table counted (its drop rules'; only the
    rules with ``comment``, when given)."""
    listing = json.loads(run(command))
    return sum(
        expr["counter"]["packets"]
        for item in listing["nftables"]
        if "rule" in item and (comment is None or item["rule"].get("comment") == comment)
        for expr in item["rule"]["expr"]
        if "counter" in expr
    )


def _mac(subnet: str, host: int) -> str:
    """A locally administered MAC address made from a link's subnet and the host's number."""
    return "02:00:" + ":".join(f"{int(octet):02x}" for octet in subnet.split(".")) + f":{host:02x}"
