"""What a capture holds, for one whose flows carry no sequence numbers (``NoSequenceNumbers``):
the facts a capture tool gives before it says why it cannot read more.

``capture_description`` counts the decoded records (``pcap.decode_capture``): per link type,
the time span, the records the snap length cut (``caplen < wirelen``), the 802.11 frames by
type and those protected (encrypted: ``record.M_PROTECTED``), and a protocol hierarchy as
``tshark -z io,phs`` gives one: each record's layers, link → 802.11 frame type → tunnels →
network → transport, and where the decoder stopped (the record's status), counted per prefix.
``inspect`` shows it, ``score`` says from it why there was nothing to score.
"""

from __future__ import annotations

import numpy as np

from .air import AIR_LINKTYPES
from .record import M_DATA, M_PROTECTED, NO_MAC_SEQ, S_DECODED, S_WIFI_NOT_DATA, STATUS_NAMES

# the transport protocol numbers named in the hierarchy (others: "ip proto N")
TRANSPORT_NAMES = {1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 47: "gre", 50: "esp", 58: "icmpv6", 132: "sctp"}
# an 802.11 record's frame type, from its sequence number and flags (``linklayer.wifi_sequence``)
WIFI_KINDS = ("", "802.11 management", "802.11 data", "802.11 control", "802.11 unreadable")


def capture_description(capture, skipped: dict[str, str]) -> dict:
    """The facts of a decoded ``capture`` (``pcap.Capture``) as plain data: ``records``,
    ``format``, ``links`` (per interface: link type, snap length, records, records cut),
    ``first``/``last`` (capture times, s since the epoch; None without any) and ``seconds``,
    ``cut`` (records shorter than their frame) and ``cut_to`` (the most bytes kept of one),
    ``wifi`` (802.11 frames by type and ``protected``; None on other links), ``protocols``
    (the hierarchy: rows of ``layers``, a path of names, and ``records``, each prefix once,
    children after their parent, larger first), ``decode`` (records by decode status other
    than decoded), ``flows`` (flows decoded) and ``skipped_flows`` (flow label → why it
    carries no sequence numbers)."""
    records = capture.records
    times = capture.times()
    timed = times[~np.isnan(times)]
    cut = records["caplen"] < records["wirelen"]
    links = []
    for iface in capture.interfaces.itertuples():
        on = records["iface"] == iface.iface
        links.append(
            {
                "iface": int(iface.iface),
                "link": iface.link,
                "linktype": int(iface.linktype),
                "snaplen": int(iface.snaplen),
                "records": int(on.sum()),
                "cut": int((cut & on).sum()),
            }
        )
    air = np.isin(_linktypes(capture), AIR_LINKTYPES)
    wifi = np.where(air, _wifi_kinds(capture), 0)  # 0: not an 802.11 link
    return {
        "records": int(records.shape[0]),
        "format": capture.format,
        "links": links,
        "first": float(timed.min()) if timed.shape[0] else None,
        "last": float(timed.max()) if timed.shape[0] else None,
        "seconds": float(timed.max() - timed.min()) if timed.shape[0] else 0.0,
        "cut": int(cut.sum()),
        "cut_to": int(records["caplen"][cut].max()) if cut.any() else None,
        "wifi": {
            **{WIFI_KINDS[k]: int((wifi == k).sum()) for k in range(1, len(WIFI_KINDS))},
            "protected": int((((records["mac_flags"] & M_PROTECTED) != 0) & air).sum()),
        }
        if air.any()
        else None,
        "protocols": protocol_hierarchy(capture, wifi),
        "decode": {name: int(n) for name, n in capture.counts.items() if name in STATUS_NAMES[1:] and n},
        "flows": len(capture.flows),
        "skipped_flows": dict(skipped),
    }


def _linktypes(capture) -> np.ndarray:
    """Each record's link type (its interface's; -1 for an interface not described)."""
    interfaces = capture.interfaces
    table = np.full(int(interfaces["iface"].max()) + 1 if len(interfaces) else 1, -1, np.int64)
    table[interfaces["iface"].to_numpy(np.int64)] = interfaces["linktype"].to_numpy(np.int64)
    return table[capture.records["iface"]]


def _wifi_kinds(capture) -> np.ndarray:
    """Each record's 802.11 frame type as an index into ``WIFI_KINDS``: management and data
    frames carry a sequence number; of those without, control frames are the ones the decoder
    found no data in (``wifi_not_data``), the rest unreadable (bad FCS, another protocol
    version, cut short)."""
    records = capture.records
    numbered = records["mac_seq"] != NO_MAC_SEQ
    data = (records["mac_flags"] & M_DATA) != 0
    return np.where(numbered, np.where(data, 2, 1), np.where(records["status"] == S_WIFI_NOT_DATA, 3, 4)).astype(
        np.int64
    )


def protocol_hierarchy(capture, wifi: np.ndarray) -> list[dict]:
    """The records counted per path of layers (``capture_description``'s ``protocols``);
    ``wifi``: each record's index into ``WIFI_KINDS`` (0 off 802.11 links)."""
    records = capture.records
    status = records["status"].astype(np.int64)
    ip = records["ip_ver"] > 0
    columns = np.stack(
        [
            records["iface"].astype(np.int64),
            wifi,
            records["tunnel"].astype(np.int64) + 1,
            np.where(ip, records["ip_ver"].astype(np.int64), 0),
            np.where(ip, records["proto"].astype(np.int64) + 1, 0),
            # where the decoder stopped (-1: nothing to say: a management or control frame carries no data)
            np.where((status == S_WIFI_NOT_DATA) & (wifi != 2), -1, status),
        ],
        axis=1,
    )
    if not columns.shape[0]:
        return []
    links = dict(zip(capture.interfaces["iface"].astype(int), capture.interfaces["link"]))
    counts: dict[tuple, int] = {}
    for row, n in zip(*np.unique(columns, axis=0, return_counts=True)):
        iface, kind, tunnel, version, proto, stop = (int(x) for x in row)
        path = [links.get(iface, f"interface {iface}")]
        if kind:
            path.append(WIFI_KINDS[kind])
        if tunnel:
            path.append("tunnel " + _tunnel_kinds(capture.tunnels, tunnel - 1))
        if version:
            path.append(f"ipv{version}")
        if proto:
            path.append(TRANSPORT_NAMES.get(proto - 1, f"ip proto {proto - 1}"))
        if stop > S_DECODED:
            path.append(STATUS_NAMES[stop])
        for depth in range(1, len(path) + 1):
            counts[tuple(path[:depth])] = counts.get(tuple(path[:depth]), 0) + int(n)
    return [{"layers": list(path), "records": counts[path]} for path in _tree_order(counts)]


def _tunnel_kinds(tunnels, tunnel: int) -> str:
    """The kinds of a tunnel and of those it travels in, outermost first (``gre > gre``)."""
    kinds = []
    while tunnel >= 0:
        kinds.append(str(tunnels["kind"].iat[tunnel]))
        tunnel = int(tunnels["outer"].iat[tunnel])
    return " > ".join(reversed(kinds))


def _tree_order(counts: dict[tuple, int]) -> list[tuple]:
    """The paths depth first, each parent before its children, siblings by count (larger first)."""
    order: list[tuple] = []

    def visit(parent: tuple) -> None:
        children = [p for p in counts if len(p) == len(parent) + 1 and p[: len(parent)] == parent]
        for child in sorted(children, key=lambda p: (-counts[p], p)):
            order.append(child)
            visit(child)

    visit(())
    return order
