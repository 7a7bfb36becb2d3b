"""Real kernel tunnels in the lab: the sender's traffic to the receiver travels in a Linux
VXLAN, GRE (key 42), GRE-TAP, IP-in-IP or 6in4 (sit) tunnel between them, through r1 (random
drops of the outer packets) and r2 (a tbf bottleneck): ``LabConfig.tunnel``.

What the decoder makes of the kernel's own encapsulation is checked against tshark, flow by flow
(the inner 5-tuple, the tunnel and its id, the outer addresses, the packet count), on the four
underlay captures; the chain over those captures must recover the kernel's drop counters, and the
chain over the tunnel's two ends (the inner packets) the same losses, packet for packet.

A kind of tunnel the kernel was built without (``tunnel_unavailable``: its option "is not set"
in /proc/config.gz) is not run here: it is found when the tests are collected, and
``test_only_kinds_the_kernel_was_built_without_are_left_out`` names them. Any other kind the lab
cannot make fails, like any missing part of the lab.
"""

from __future__ import annotations

import os
import re
import subprocess
import warnings

import pandas as pd
import pytest

from ldanalyze.cli import main
from ldanalyze.io.capture.pcap import decode_capture, list_flows
from ldanalyze.io.capture.vantage import read_vantages
from ldanalyze.io.labels import apply_labels, write_labels
from ldanalyze.lab import TUNNEL_KEY, TUNNELS, LabConfig, lab_unavailable, run_lab, tunnel_unavailable

from ..conftest import IN_CI, needs_binary, require_binary

LAB_UNAVAILABLE = lab_unavailable()
pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)"),
]
# the tunnel as a flow label shows it (flows.tunnel_table): the VNI in decimal, a GRE key in hex
SHOWN = {"vxlan": f"vxlan={TUNNEL_KEY}", "gre": f"gre={TUNNEL_KEY:#x}", "gretap": f"gre={TUNNEL_KEY:#x}"}
SHOWN |= {"ipip": "4in4", "sit": "6in4"}
NAMES = {"vxlan": "vxlan", "gre": "gre", "gretap": "gre", "ipip": "4in4", "sit": "6in4"}  # counts["tunnels"]
UNDERLAY = ("sender", "r1", "r2", "receiver")


# what the kernel cannot make, asked once when the tests are collected (where the lab can run)
WHY = {} if LAB_UNAVAILABLE else {kind: tunnel_unavailable(kind) for kind in TUNNELS}
ABSENT = {kind: why.reason for kind, why in WHY.items() if why is not None and why.absent}
KINDS = [kind for kind in TUNNELS if kind not in ABSENT]


def test_only_kinds_the_kernel_was_built_without_are_left_out():
    """VXLAN always runs; a kind left out is one whose driver the kernel's build options leave
    out (on this machine's 6.18 kernel: GRE, GRE-TAP, IP-in-IP and sit)."""
    assert "vxlan" in KINDS
    for kind, reason in ABSENT.items():
        assert "is not set, in /proc/config.gz" in reason, (kind, reason)


@pytest.fixture(scope="module", params=KINDS)
def lab(request, tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the network namespace lab must run in CI, but {LAB_UNAVAILABLE}")
    kind = request.param
    why = WHY[kind]
    if why is not None:
        pytest.fail(f"the lab must make {kind} tunnels, but {why.reason}")
    return run_lab(tmp_path_factory.mktemp(kind), LabConfig(duration_s=3, tunnel=kind))


def data_flow(lab) -> str:
    """The iperf3 flow's label inside the tunnel (an IPv6 address in brackets)."""
    ends = [f"[{a}]" if ":" in a else a for a in (lab.sender_ip, lab.receiver_ip)]
    return f"{ends[0]}:{lab.sender_port}>{ends[1]}:{lab.port}/udp"


def in_tunnel(lab, label: str) -> str:
    outer = "{}>{}".format(*lab.underlay)
    return f"{label}/{SHOWN[lab.tunnel]}@{outer}"


def inner(label: str) -> str:
    """A flow label without its tunnels: ``a:1>b:2/udp/vxlan=42@x>y`` → ``a:1>b:2/udp``."""
    return "/".join(label.split("/")[:2])


@pytest.fixture(scope="module")
def underlay(lab):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean lab gives no warning at all
        return read_vantages(lab.chain(), clocks="common")


@pytest.fixture(scope="module")
def overlay(lab):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_vantages(lab.overlay_chain(), clocks="common")


def tshark_flows(path) -> dict[str, int]:
    """Packets by flow label, as ldanalyze writes labels, from tshark's reading of the tunnel:
    the innermost IP and transport headers, the VXLAN VNI or GRE key, the outermost addresses."""
    fields = ("frame.protocols", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "udp.srcport", "udp.dstport")
    fields += ("tcp.srcport", "tcp.dstport", "vxlan.vni", "gre.key")
    cmd = [require_binary("tshark"), "-n", "-r", str(path), "-T", "fields", "-E", "separator=;"]
    out = subprocess.run(cmd + [a for f in fields for a in ("-e", f)], check=True, capture_output=True, text=True)
    flows: dict[str, int] = {}
    for line in out.stdout.splitlines():
        protocols, src4, dst4, src6, dst6, usport, udport, tsport, tdport, vni, key = line.split(";")
        layers = protocols.split(":")
        ips = [p for p in layers if p in ("ip", "ipv6")]
        proto = [p for p in layers if p in ("udp", "tcp")][-1]
        sport, dport = (usport, udport) if proto == "udp" else (tsport, tdport)
        if ips[-1] == "ip":
            src, dst = src4.split(",")[-1], dst4.split(",")[-1]
        else:
            src, dst = f"[{src6.split(',')[-1]}]", f"[{dst6.split(',')[-1]}]"
        label = f"{src}:{sport.split(',')[-1]}>{dst}:{dport.split(',')[-1]}/{proto}"
        if len(ips) > 1:  # tunnelled: the outer addresses are the first IPv4 ones
            tunnel = (
                f"vxlan={int(vni)}"
                if vni
                else f"gre={int(key, 0):#x}"
                if key
                else ("4in4" if ips[-1] == "ip" else "6in4")
            )
            label += f"/{tunnel}@{src4.split(',')[0]}>{dst4.split(',')[0]}"
        flows[label] = flows.get(label, 0) + 1
    return flows


def test_the_lab_left_nothing_behind(lab):
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert f"ldlab-{os.getpid()}-" not in names
    assert set(lab.capture_drops.values()) == {0}
    assert len(lab.capture_drops) == 6
    assert lab.wireless_drops > 0 and lab.bottleneck_drops > 0  # both kinds of loss happened


@needs_binary("tshark")
def test_underlay_captures_hold_the_inner_flows_as_tshark_reads_them(lab):
    flow = in_tunnel(lab, data_flow(lab))
    for name in UNDERLAY:
        path = lab.captures[name]
        capture = decode_capture(path)
        listed = list_flows(capture).set_index("flow")
        assert listed.loc[flow, "payload"] == "iperf3", name
        assert all(label.endswith(in_tunnel(lab, "")) for label in listed.index), name  # nothing outside it
        assert listed["packets"].to_dict() == tshark_flows(path), name
        assert capture.counts["tunnels"] == {NAMES[lab.tunnel]: len(capture.records)}, name
    # the tunnel's ends hold the same flows, without tunnel
    for name, path in lab.overlay.items():
        listed = list_flows(path).set_index("flow")
        assert listed.loc[data_flow(lab), "payload"] == "iperf3", name
        assert listed["packets"].to_dict() == tshark_flows(path), name
    sent = list_flows(lab.overlay["sender-overlay"]).set_index("flow")["packets"]
    assert {in_tunnel(lab, k): v for k, v in sent.items()} == tshark_flows(lab.captures["sender"])


def test_inspect_says_which_tunnel_it_opened(lab, capsys):
    path = lab.captures["r1"]
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    opened = re.search(r"tunnels opened \(packets by kind\): (\S+) (\d+);", out)
    assert opened, out
    assert (opened[1], int(opened[2])) == (NAMES[lab.tunnel], len(decode_capture(path).records))
    assert in_tunnel(lab, data_flow(lab)) in out


def test_underlay_chain_recovers_the_kernel_drop_counters(lab, underlay):
    fates = underlay.packets.groupby("fate", observed=False).size()
    assert fates["wireless"] == lab.wireless_drops
    assert fates["congestion"] == lab.bottleneck_drops
    assert fates["lost"] == 0 and fates["unobserved"] == 0
    udp = underlay.packets[underlay.packets["flow"] == in_tunnel(lab, data_flow(lab))]
    assert len(udp) == lab.iperf3["end"]["sum_sent"]["packets"] and udp["seq"].min() == 1
    # iperf3's server counts the gaps below the highest sequence number it read ("packets"): not
    # always the last that arrived, as the test's end (on the control connection, 0.5 ms behind
    # the last datagram) can be read first, the last datagrams then never
    read = lab.iperf3["end"]["sum_received"]
    counted = udp[udp["seq"] <= read["packets"]]
    assert counted["fate"].isin(["wireless", "congestion"]).sum() == read["lost_packets"]
    assert (counted["fate"] == "delivered").sum() * LabConfig().length == read["bytes"]
    segments = {s["segment"]: (s["cause"], s["lost"], s["unobserved"]) for s in underlay.meta["segments"]}
    assert segments == {
        "sender.pcap>r1.pcap": ("wireless", lab.wireless_drops, 0),
        "r1.pcap>r2.pcap": ("congestion", lab.bottleneck_drops, 0),
        "r2.pcap>receiver.pcap": ("lost", 0, 0),
    }
    assert [v["unmatched"] for v in underlay.meta["vantages"]] == [0, 0, 0, 0]


def test_overlay_chain_finds_the_same_losses(lab, underlay, overlay, tmp_path):
    """The tunnel's ends see every loss inside it (one segment, cause unknown); the underlay
    chain's labels, their tunnel taken off, give each its cause, and the counts are the
    kernel's again."""
    segments = [(s["cause"], s["lost"], s["unobserved"]) for s in overlay.meta["segments"]]
    assert segments == [("lost", lab.wireless_drops + lab.bottleneck_drops, 0)]
    fates = {}
    for trace, label in ((underlay, in_tunnel(lab, data_flow(lab))), (overlay, data_flow(lab))):
        udp = trace.packets[trace.packets["flow"] == label]
        fates[trace is overlay] = udp.set_index("seq")["fate"].astype(str)
    assert fates[True].index.equals(fates[False].index)
    assert ((fates[True] == "lost") == fates[False].isin(["wireless", "congestion"])).all()
    labels = tmp_path / "labels.csv"
    assert write_labels(underlay, labels) == lab.wireless_drops + lab.bottleneck_drops
    table = pd.read_csv(labels)
    table.assign(flow=table["flow"].map(inner)).to_csv(labels, index=False)
    labelled = apply_labels(overlay, labels)  # strict: a label on a packet the overlay has delivered fails
    counts = labelled.packets.groupby("fate", observed=False).size()
    assert (counts["wireless"], counts["congestion"], counts["lost"]) == (lab.wireless_drops, lab.bottleneck_drops, 0)
