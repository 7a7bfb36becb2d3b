"""Real monitor-mode 802.11 captures and real tunnelled captures (GTP-U, GRE, VXLAN) nobody on
the team made (tests/data/real/SOURCES.md), read against tshark record by record.

802.11 (``wifi/``): every record's sequence number, retry bit and QoS flag are tshark's ``wlan.seq``,
``wlan.fc.retry`` and ``wlan.fc.type_subtype`` (none where tshark reads none: control frames, a protocol version other than
0). Tunnels (``tunnels/``) and the 802.11 frames that carry IP: every record's flow (innermost
addresses, ports, transport, and the TEIDs / VNIs / GRE keys of its tunnels) is the one tshark
dissects, so every flow's packet count is tshark's.

tshark runs with IP reassembly off (``ip.defragment:FALSE``): ldanalyze reads each frame alone.
An outer first fragment is then, to both, the packet whose headers it holds, its tunnels opened
(``test_a_tunnel_in_an_outer_first_fragment_is_opened``).
"""

from __future__ import annotations

import collections
import pathlib
import subprocess
import warnings

import numpy as np
import pytest

from ldanalyze.io.capture.air import is_air_capture
from ldanalyze.io.capture.pcap import decode_capture, list_flows
from ldanalyze.io.capture.record import M_QOS, M_RETRY, NO_MAC_SEQ, STATUS_NAMES

from ...conftest import needs_binary, require_binary

REAL = pathlib.Path(__file__).parents[2] / "data" / "real"
WIFI = REAL / "wifi"
TUNNELS = REAL / "tunnels"
TUNNEL_LAYERS = ("gtp", "vxlan", "gre", "erspan")
FIELDS = (
    "frame.protocols",
    "wlan.seq",
    "wlan.fc.retry",
    "wlan.fc.type_subtype",
    "ip.src",
    "ip.dst",
    "ip.flags.mf",
    "ip.frag_offset",
    "ipv6.src",
    "ipv6.dst",
    "udp.srcport",
    "udp.dstport",
    "tcp.srcport",
    "tcp.dstport",
    "gtp.teid",
    "vxlan.vni",
    "gre.key",
    "erspan.spanid",
)

# file → (records, records with an 802.11 sequence number, of them retried, flows)
WIFI_FILES = {
    "80211http.pcap": (26, 26, 2, 2),  # an HTTP download over an open network, radiotap
    "radiotap.pcap": (3, 3, 0, 3),  # DNS and mDNS (IPv6), radiotap
    "ieee802.11_htc.pcap": (1, 1, 0, 1),  # QoS data with an HT control field, DHCP
    "wltrace_trace.pcap": (318, 265, 2, 0),  # 5 GHz, radiotap: management, EAPOL, protected data
    "wltrace_non_radiotap.pcap": (2001, 1014, 10, 0),  # bare 802.11 (105), cut at 60 bytes
    "wpa-Induction.pcap.gz": (1093, 727, 35, 0),  # WPA-PSK, radiotap: 10 frames of versions 1-3
}
# file → (records, flows, tunnels opened by kind)
TUNNEL_FILES = {
    "gtp-iphone.pcap": (106, 28, {"gtpu": 106}),  # VoLTE from a phone: IPv6 SIP, RTP, TCP (Linux SLL)
    "gtp6_gtp_0x32.pcap": (31, 2, {"gtpu": 31}),  # TLS over TCP; one direction with GTP sequence numbers
    "gre-sample.pcap": (40, 11, {"gre": 40}),  # TCP (SSH), UDP (DNS, NTP), ICMP in GRE
    "gre-within-gre.pcap": (628, 4, {"gre": 628}),  # ICMP and RIP in GRE in GRE
    "vxlan-encapsulated-http.pcap": (12, 2, {"vxlan": 12}),  # an HTTP exchange in VXLAN (VNI 1)
    "vxlan.pcap": (10, 2, {"vxlan": 8}),  # ICMP, and ARP (no IP: not_ip), in VXLAN (VNI 123)
    "gtp1_gn_normal_incl_fragmentation.pcap": (108, 2, {"gtpu": 72}),  # Gn HTTP, outer IPv4 fragmented
    "erspan.pcap": (287, 26, {"gre": 238}),  # GRE (key) bridging Ethernet: HTTP, ICMP; ARP (not_ip)
    "erspanI.pcap": (10, 2, {"erspan": 10}),  # ERSPAN I (no header): ICMP echo
    "erspanII.pcap": (4, 2, {"erspan": 4}),  # ERSPAN II, session 100: ICMP echo
    "erspanIII.pcap": (2, 2, {"erspan": 2}),  # ERSPAN III: ICMP echo
    "gre-erspan3-dot1q.pcap": (2, 2, {"erspan": 2}),  # ERSPAN III, platform sub-header, VLAN tag inside
    "gre-erspan.pcap": (6, 2, {"erspan": 4}),  # ERSPAN II, session 100: ICMP; CDP (no IP)
    "gre-erspan-vxlan.pcap": (7, 2, {"erspan": 7, "vxlan": 7}),  # HTTP in VXLAN (source port 4789) in ERSPAN II
}


def decode(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return decode_capture(path)


def tshark_rows(path) -> list[dict[str, list[str]]]:
    """Every frame's ``FIELDS``, each the list of its occurrences, outermost first."""
    cmd = [require_binary("tshark"), "-n", "-r", str(path), "-o", "ip.defragment:FALSE"]
    cmd += ["-o", "ipv6.defragment:FALSE", "-T", "fields", "-E", "separator=;", "-E", "occurrence=a"]
    cmd += ["-E", "aggregator=,"] + [a for f in FIELDS for a in ("-e", f)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [
        {f: value.split(",") if value else [] for f, value in zip(FIELDS, line.split(";"), strict=True)}
        for line in out.splitlines()
    ]


def tshark_flow(row: dict[str, list[str]]):
    """The flow of a frame as tshark dissects it: (src, sport, dst, dport, transport, tunnel ids)
    of its innermost IP packet, or None where ldanalyze reads no flow by its own rules (no IP
    address, a tunnel that carries no IP, a non-first fragment)."""
    layers = row["frame.protocols"][0].split(":")
    for icmp in ("icmp", "icmpv6"):  # an ICMP error quotes headers that are not a packet
        if icmp in layers:
            layers = layers[: layers.index(icmp) + 1]
    ips = [k for k, layer in enumerate(layers) if layer in ("ip", "ipv6")]
    if not ips:
        return None
    if layers[ips[0]] == "ip" and row["ip.frag_offset"] and int(row["ip.frag_offset"][0]):
        return None  # a non-first fragment of an outer IPv4 packet: no transport header
    tunnels = [k for k, layer in enumerate(layers) if layer in TUNNEL_LAYERS]
    at = ips[-1]
    if tunnels and at < tunnels[-1]:  # the innermost tunnel carries no IP (ARP in VXLAN)
        return None
    kind = layers[at]
    nth = layers[: at + 1].count(kind) - 1
    src, dst = row[f"{kind}.src"][nth : nth + 1], row[f"{kind}.dst"][nth : nth + 1]
    if not src:  # tshark found no address (a bogus IP version)
        return None
    after = layers[at + 1 : at + 2]
    if after in (["udp"], ["tcp"]):
        transport = after[0]
        j = layers[: at + 2].count(transport) - 1
        sport, dport = int(row[f"{transport}.srcport"][j]), int(row[f"{transport}.dstport"][j])
    else:
        transport, sport, dport = "other", 0, 0
    ids = [int(x, 0) for f in ("gtp.teid", "vxlan.vni", "gre.key", "erspan.spanid") for x in row[f]]
    return src[0], sport, dst[0], dport, transport, tuple(sorted(ids[: len(tunnels)] if tunnels else ()))


def our_flows(capture) -> list:
    """Each record's flow in ``tshark_flow``'s terms."""
    keys = []
    for f in capture.flows.itertuples():
        ids, t = [], int(f.tunnel)
        while t >= 0:
            if capture.tunnels["id"].iat[t] >= 0:
                ids.append(int(capture.tunnels["id"].iat[t]))
            t = int(capture.tunnels["outer"].iat[t])
        transport = {6: "tcp", 17: "udp"}.get(int(f.proto), "other")
        keys.append((f.src, int(f.sport), f.dst, int(f.dport), transport, tuple(sorted(ids))))
    return [keys[flow] if flow >= 0 else None for flow in capture.records["flow"]]


def same_flows_as_tshark(path, capture, rows) -> collections.Counter:
    ours, theirs = our_flows(capture), [tshark_flow(row) for row in rows]
    assert len(ours) == len(theirs) == len(capture.records)
    for number, (mine, tshark) in enumerate(zip(ours, theirs, strict=True), 1):
        assert mine == tshark, (path.name, number, STATUS_NAMES[capture.records["status"][number - 1]])
    counts = collections.Counter(k for k in ours if k is not None)
    assert counts == collections.Counter(k for k in theirs if k is not None)
    # list_flows counts the same packets per flow
    listed = list_flows(capture)
    assert listed["packets"].tolist() == [counts[k] for k in dict.fromkeys(k for k in ours if k is not None)]
    return counts


@pytest.mark.parametrize("name", sorted(WIFI_FILES))
@needs_binary("tshark")
def test_80211_sequence_numbers_retries_and_flows_as_tshark_reads_them(name):
    path = WIFI / name
    capture = decode(path)
    rows = tshark_rows(path)
    r = capture.records
    assert is_air_capture(capture)
    for number, (row, record) in enumerate(zip(rows, r, strict=True), 1):
        seq, retry = row["wlan.seq"], row["wlan.fc.retry"]
        want = (int(seq[0]), retry[0] in ("1", "True")) if seq else (NO_MAC_SEQ, False)
        assert (int(record["mac_seq"]), bool(record["mac_flags"] & M_RETRY)) == want, (name, number)
        kind = int(row["wlan.fc.type_subtype"][0], 0) if row["wlan.fc.type_subtype"] else -1
        qos_data = 0x28 <= kind <= 0x2F  # data frames whose subtype has the QoS bit
        assert bool(record["mac_flags"] & M_QOS) == (qos_data and bool(seq)), (name, number)
    numbered = r["mac_seq"] != NO_MAC_SEQ
    retried = (r["mac_flags"] & M_RETRY) != 0
    counts = same_flows_as_tshark(path, capture, rows)
    assert (len(r), int(numbered.sum()), int(retried.sum()), len(counts)) == WIFI_FILES[name]


def test_a_retried_frame_repeats_a_frame_the_sniffer_saw():
    """The HTTP download: each of its two retried frames carries the number and the bytes of
    the frame its transmitter sent just before (the sniffer heard the first try, the receiver
    did not acknowledge it)."""
    r = decode(WIFI / "80211http.pcap").records
    (retries,) = np.nonzero(r["mac_flags"] & M_RETRY)
    assert retries.tolist() == [13, 16]
    for i in retries:
        before = [j for j in range(i) if r["mac_space"][j] == r["mac_space"][i]][-1]
        assert r["mac_seq"][before] == r["mac_seq"][i]
        assert r["payload_hash"][before] == r["payload_hash"][i] and r["tcp_seq"][before] == r["tcp_seq"][i]


def test_frames_of_another_protocol_version_are_malformed():
    """wpa-Induction.pcap holds ten frames whose version field reads 1-3 (received corrupt: its
    driver checked no FCS); seven would be data or management frames read as version 0, five of
    them retried. tshark reads no number in them; nor do we."""
    capture = decode(WIFI / "wpa-Induction.pcap.gz")
    assert capture.counts["malformed"] == 10
    malformed = capture.records["status"] == STATUS_NAMES.index("malformed")
    assert (capture.records["mac_seq"][malformed] == NO_MAC_SEQ).all()
    assert capture.counts["wifi_protected"] == 280 and capture.counts["decoded"] == 0


@pytest.mark.parametrize("name", sorted(TUNNEL_FILES))
@needs_binary("tshark")
def test_flows_inside_tunnels_as_tshark_reads_them(name):
    path = TUNNELS / name
    capture = decode(path)
    counts = same_flows_as_tshark(path, capture, tshark_rows(path))
    records, flows, tunnels = TUNNEL_FILES[name]
    assert (len(capture.records), len(counts), capture.counts["tunnels"]) == (records, flows, tunnels)


@needs_binary("tshark")
def test_a_tunnel_in_an_outer_first_fragment_is_opened():
    """Gn traffic whose GTP-U packets were fragmented on the way (IPv4, 1500-byte MTU): 40 outer
    first fragments, each holding the GTP-U header and the TCP segment's headers, are opened as
    tshark opens them without reassembly; the 36 rests have no flow (``ip_fragment``). Each
    packet's length is its own IP header's, the whole segment's, not the fragment's."""
    path = TUNNELS / "gtp1_gn_normal_incl_fragmentation.pcap"
    capture = decode(path)
    listed = list_flows(capture)
    flows = dict(zip(listed["flow"], listed["packets"], strict=True))
    downlink = "79.101.110.141:80>10.131.47.185:1923/tcp/gtpu=0xb2b7@63.94.149.181>239.114.155.111"
    assert flows[downlink] == 45 and sum(flows.values()) == 72  # 6 came whole, 39 in fragments
    assert capture.counts["ip_fragment"] == 36
    cmd = [require_binary("tshark"), "-n", "-r", str(path), "-o", "ip.defragment:FALSE", "-Y", "tcp.srcport == 80"]
    out = subprocess.run(cmd + ["-T", "fields", "-e", "ip.len"], check=True, capture_output=True, text=True).stdout
    inner_lengths = [int(line.split(",")[-1]) for line in out.split()]
    rows = capture.records["flow"] == capture.flows.index[capture.flows["label"] == downlink][0]
    assert capture.records["ip_len"][rows].tolist() == inner_lengths
    assert max(inner_lengths) == 1480 and (capture.records["caplen"][rows] < 1480 + 14 + 20 + 8 + 8).all()
