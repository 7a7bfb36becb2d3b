"""The flows of a decoded capture: their table and labels, what each holds, its records, and
the host the capture was taken on.

A flow is a 5-tuple, a direction and the tunnels it travels in, interned as the walk decodes
(``record.intern_flow``). ``flow_table`` labels each (``10.0.0.1:5004>10.0.0.2:6000/udp``; a flow inside
tunnels adds each, innermost first, ``/gtpu=0x1234@192.0.2.1>192.0.2.2``, see ``tunnel_table``;
an RTP stream of a flow adds ``/ssrc=0x...``), ``flow_extents`` and ``flow_listing`` give ``list_flows``'s table,
``flow_groups`` hands the payload readers each flow's decoded records a field at a time
(``FlowRecords``), and ``capture_host`` tells the address the capture was taken at from the
flows' ends and TTLs (``host_of``).
"""

from __future__ import annotations

import ipaddress

import numpy as np
import pandas as pd
from numba import njit

from ...errors import UsageError
from ...packets import named_flows
from ...tiering import call
from .record import NO_TIME, S_DECODED
from .tunnels import T_ERSPAN, T_VXLAN, TUNNEL_NAMES


def _address(v, hi, lo) -> str:
    return str(ipaddress.IPv4Address(int(lo)) if v == 4 else ipaddress.IPv6Address((int(hi) << 64) | int(lo)))


def _ends(ver, keys: np.ndarray) -> tuple[list[str], list[str]]:
    """Source and destination addresses of key rows, as text."""
    src = [_address(v, h, lo) for v, h, lo in zip(ver, keys[:, 1], keys[:, 2])]
    dst = [_address(v, h, lo) for v, h, lo in zip(ver, keys[:, 3], keys[:, 4])]
    return src, dst


_DECIMAL_IDS = (TUNNEL_NAMES[T_VXLAN], TUNNEL_NAMES[T_ERSPAN])


def tunnel_table(keys: np.ndarray) -> pd.DataFrame:
    """One row per interned tunnel (``record.intern_flow``): kind, id (TEID, VNI, GRE key or
    ERSPAN session; -1 when it has none), outer addresses, the tunnel it travels in (-1: none),
    and its text (``gtpu=0x1234@192.0.2.1>192.0.2.2``, ``vxlan=42@...``, ``gre=0x5@...``,
    ``erspan=100@...``, ``6in4@...``): VNIs and sessions in decimal, as tshark shows them."""
    w0 = keys[:, 0]
    kind = [TUNNEL_NAMES[k] for k in (w0 & np.uint64(0xFF)).astype(np.int64)]
    ident = np.where(w0 & np.uint64(0x100), (w0 >> np.uint64(32)).astype(np.int64), -1)
    ver = ((w0 >> np.uint64(16)) & np.uint64(0xFF)).astype(np.int64)
    src, dst = _ends(ver, keys)
    text = []
    for k, i, v, s, d in zip(kind, ident, ver, src, dst):
        if v == 6:
            s, d = f"[{s}]", f"[{d}]"
        shown = "" if i < 0 else f"={i}" if k in _DECIMAL_IDS else f"={i:#x}"
        text.append(f"{k}{shown}@{s}>{d}")
    return pd.DataFrame(
        {"kind": kind, "id": ident, "src": src, "dst": dst, "outer": keys[:, 5].astype(np.int64) - 1, "text": text}
    )


def tunnel_path(tunnels: pd.DataFrame, tunnel: int) -> str:
    """The texts of a tunnel and of those it travels in, innermost first, each after a ``/``."""
    parts = []
    while tunnel >= 0:
        parts.append("/" + tunnels["text"].iat[tunnel])
        tunnel = int(tunnels["outer"].iat[tunnel])
    return "".join(parts)


def flow_table(keys: np.ndarray, tunnels: pd.DataFrame) -> pd.DataFrame:
    """One row per interned flow: versions, protocols, addresses as text, ports, its innermost
    tunnel (an index into ``tunnels``, -1: none), label."""
    w0 = keys[:, 0]
    ver = (w0 & 0xFF).astype(np.int64)
    proto = ((w0 >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int64)
    sport = ((w0 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64)
    dport = ((w0 >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64)
    tunnel = keys[:, 5].astype(np.int64) - 1
    src, dst = _ends(ver, keys)
    labels = [
        flow_label(*row) + tunnel_path(tunnels, t) for row, t in zip(zip(ver, proto, src, sport, dst, dport), tunnel)
    ]
    return pd.DataFrame(
        {
            "label": labels,
            "ip_ver": ver,
            "proto": proto,
            "src": src,
            "sport": sport,
            "dst": dst,
            "dport": dport,
            "tunnel": tunnel,
        }
    )


def tunnel_counts(counted: np.ndarray, tunnels: pd.DataFrame) -> dict:
    """The capture's counts of its records by tunnel (``walk.Output.tunnel_records``): records
    opened out of each kind of tunnel, once per kind a record's tunnels hold (GRE in VXLAN counts
    for both; ``tunnels``), those not opened (``tunnel_other``) and those too deep
    (``tunnel_too_deep``)."""
    counts: dict[str, int] = {}
    for t, n in enumerate(counted[:-2]):
        kinds = set()
        while n and t >= 0:
            kinds.add(tunnels["kind"].iat[t])
            t = int(tunnels["outer"].iat[t])
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + int(n)
    return {"tunnels": counts, "tunnel_other": int(counted[-2]), "tunnel_too_deep": int(counted[-1])}


PROTO_NAMES = {
    1: "icmp",
    6: "tcp",
    17: "udp",
    33: "dccp",
    47: "gre",
    50: "esp",
    58: "icmpv6",
    132: "sctp",
    136: "udplite",
}
_PORTED = {6, 17, 33, 132, 136}
SSRC = "/ssrc="  # joins a flow label and an RTP stream's SSRC


def flow_label(ip_ver: int, proto: int, src: str, sport: int, dst: str, dport: int) -> str:
    """``10.0.0.1:5004>10.0.0.2:6000/udp``; IPv6 addresses in brackets; no ports when the
    protocol has none."""
    name = PROTO_NAMES.get(int(proto), str(int(proto)))
    if ip_ver == 6:
        src, dst = f"[{src}]", f"[{dst}]"
    if int(proto) in _PORTED:
        return f"{src}:{int(sport)}>{dst}:{int(dport)}/{name}"
    return f"{src}>{dst}/{name}"


def flow_listing(flows: pd.DataFrame, extents: tuple, kinds: dict[int, str]) -> pd.DataFrame:
    """``list_flows``'s table from a flow table, each flow's ``flow_extents`` and kind."""
    packets, size, first, last = extents
    n = len(flows)
    table = flows[["label", "src", "sport", "dst", "dport"]].rename(columns={"label": "flow"})
    table.insert(1, "proto", [PROTO_NAMES.get(p, str(p)) for p in flows["proto"]])
    table["packets"] = packets
    table["bytes"] = size
    table["first"] = np.where(last == NO_TIME, np.nan, first / 1e9)  # NaN: no packet with a time
    table["last"] = np.where(last == NO_TIME, np.nan, last / 1e9)
    table["payload"] = [kinds.get(f, "") for f in range(n)]
    return table


@njit(cache=True)
def flow_extents(flow, ts_ns, ip_len, n_flows):
    """Per flow, in one pass over the records: packets, IP bytes, and the first and last
    capture time (ns; ``NO_TIME`` when none of its records has one). Twin: pandas groupby
    (``tests/io/capture/test_pcap_read.py``)."""
    packets = np.zeros(n_flows, np.int64)
    size = np.zeros(n_flows, np.int64)
    first = np.full(n_flows, np.iinfo(np.int64).max)
    last = np.full(n_flows, NO_TIME)
    for i in range(flow.shape[0]):
        f = flow[i]
        if f < 0:
            continue
        packets[f] += 1
        size[f] += ip_len[i]
        if ts_ns[i] != NO_TIME:
            first[f] = min(first[f], ts_ns[i])
            last[f] = max(last[f], ts_ns[i])
    return packets, size, first, last


HOST_SHARE = 0.98  # the capture host is an end of the flows carrying this share of the packets
INITIAL_TTLS = (64, 128, 255)  # what hosts send with; a packet routed on has less


def capture_host(capture) -> tuple[str | None, str]:
    """The address of the host the capture was taken on, and how it was told (``host_of``)."""
    return host_of(capture.flows, flow_ttls(capture.records, len(capture.flows)))


def flow_ttls(records: np.ndarray, n_flows: int) -> np.ndarray:
    """Decoded packets by flow (rows, ``n_flows`` of them) and TTL (256 columns)."""
    return call(_count_ttls, records["flow"], records["status"], records["ttl"], n_flows, S_DECODED)


@njit(cache=True)
def _count_ttls(flow, status, ttl, n_flows, decoded):
    """One pass over the records' fields (a numpy mask and gathers read them three times).
    Twin: ``tests.naive.capture.flow_ttls``."""
    out = np.zeros((n_flows, 256), np.int64)
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= 0:
            out[flow[i], ttl[i]] += 1
    return out


def host_of(flows: pd.DataFrame, ttls: np.ndarray) -> tuple[str | None, str]:
    """The capture host's address from the flow table and each flow's packets by TTL (a row
    per flow, a column per TTL), and how it was told (or why not).

    It is the one address at an end of the flows carrying ``HOST_SHARE`` of the packets whose
    own packets (if any) mostly leave with an initial TTL (``INITIAL_TTLS``), not one lowered
    by a router. When every flow joins the same two addresses, both must have sent and exactly
    one with an initial TTL; otherwise there is no telling (a one-hop LAN keeps TTLs whole).
    """
    packets = ttls.sum(axis=1)
    if packets.sum() == 0:
        return None, "no decoded packet"
    src, dst = flows["src"].to_numpy(), flows["dst"].to_numpy()
    share = {a: packets[(src == a) | (dst == a)].sum() / packets.sum() for a in set(src) | set(dst)}
    ends = [a for a in share if share[a] >= HOST_SHARE]
    sent_ttl = {}
    for a in ends:
        mine = ttls[src == a].sum(axis=0)
        sent_ttl[a] = int(mine.argmax()) if mine.sum() else None
    unrouted = [a for a in ends if sent_ttl[a] is None or sent_ttl[a] in INITIAL_TTLS]
    if len(ends) == 2 and None not in sent_ttl.values() and len(unrouted) == 1:
        a = unrouted[0]
        b = ends[1] if ends[0] == a else ends[0]
        return a, f"every flow joins {a} and {b}; {a} sends with TTL {sent_ttl[a]}, {b}'s arrive with {sent_ttl[b]}"
    if len(ends) == 1 and unrouted:
        a = ends[0]
        ttl = f"; it sends with TTL {sent_ttl[a]}" if sent_ttl[a] is not None else "; it sends nothing"
        return a, f"an end of the flows carrying {share[a]:.1%} of the packets{ttl}"
    if len(ends) == 2:
        return None, f"every flow joins {' and '.join(sorted(ends))}, and their TTLs do not tell which one captured"
    return None, "no address is an end of (nearly) every flow, or its packets were routed"


def flow_groups(records: np.ndarray):
    """(flow id, record indices, those records as :class:`FlowRecords`) of each flow,
    decoded records only, in capture order within a flow."""
    order, starts = call(_rows_by_flow, records["flow"], records["status"], S_DECODED)
    for flow in range(starts.shape[0] - 1):
        if starts[flow + 1] > starts[flow]:
            rows = order[starts[flow] : starts[flow + 1]]
            yield flow, rows, FlowRecords(records, rows)


class FlowRecords:
    """One flow's records, a field at a time: ``flow["ip_len"]`` is the field's values in the
    flow's rows, gathered on first use (contiguous) and kept. A flow reader uses a handful of
    the record's 20-odd fields, and gathering whole records copied them all into fresh pages,
    which cost most here (``inspect`` of a 2 M-packet capture of 8 flows: 20,000 page faults
    and 22 MB of peak more). A flow that is every record (a capture of one flow; a flow file
    of ``split``) gives the records' own fields, not copies."""

    def __init__(self, records: np.ndarray, rows: np.ndarray) -> None:
        self.records = records
        self.rows = None if rows.shape[0] == records.shape[0] else rows  # else rows is 0, 1, ..., n - 1
        self.dtype = records.dtype
        self.shape = (rows.shape[0],)
        self._fields: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, field: str) -> np.ndarray:
        values = self._fields.get(field)
        if values is None:
            values = self.records[field] if self.rows is None else gather_rows(self.records[field], self.rows)
            self._fields[field] = values
        return values


def gather_rows(column: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``column[rows]``, contiguous. A field of several values a record (the payload head's
    bytes) is moved as one opaque item a row, not value by value (docs/design.md)."""
    if column.ndim != 2 or column.strides[1] != column.itemsize:
        return column[rows]
    whole = np.dtype((np.void, column.shape[1] * column.itemsize))
    return column.view(whole)[rows].view(column.dtype).reshape(-1, column.shape[1])


@njit(cache=True)
def _rows_by_flow(flow, status, decoded):
    """The indices of the decoded records that have a flow, grouped by flow, in record order
    within a flow, and where each flow's run starts (one more: the end): a counting sort,
    one pass to count and one to place. Twin: a stable argsort (``tests/io/capture/test_pcap_payload.py``)."""
    n_flows = 0
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= n_flows:
            n_flows = flow[i] + 1
    starts = np.zeros(n_flows + 1, np.int64)
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= 0:
            starts[flow[i] + 1] += 1
    for f in range(n_flows):
        starts[f + 1] += starts[f]
    order = np.empty(starts[n_flows], np.int64)
    at = starts[:n_flows].copy()
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= 0:
            order[at[flow[i]]] = i
            at[flow[i]] += 1
    return order, starts


def chosen_flows(capture, flows) -> tuple[set[int] | None, set[str] | None]:
    """The flow ids and the labels (flows or RTP streams) asked for; (None, None): all."""
    wanted = named_flows(flows)
    if wanted is None:
        return None, None
    index = {label: i for i, label in enumerate(capture.flows["label"])}
    unknown = sorted(f for f in wanted if f.partition(SSRC)[0] not in index)
    if unknown:
        shown = ", ".join(list(index)[:5]) + (" ..." if len(index) > 5 else "")
        raise UsageError(f"{capture.path} has no flow {unknown[0]!r} (flows: {shown or 'none'})")
    return {index[f.partition(SSRC)[0]] for f in wanted}, wanted
