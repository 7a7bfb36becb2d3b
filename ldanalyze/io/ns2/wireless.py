"""ns-2 wireless traces (CMU trace): the old, the new (``$ns use-newtrace``) and the tagged
(``$ns use-taggedtrace``) formats, with any routing agent ns-2.35 runs (DSDV, AODV, DSR).

Old::

    s 1.000000000 _0_ AGT  --- 0 cbr 512 [0 0 0 0] ------- [0:0 1:0 32 0] [0] 0 0
    D 1.52 _1_ IFQ  --- 57 cbr 532 [...] ------- [0:0 1:0 30 1] [57] 0 0

``event time _node_ level reason uid type size [mac] flags [src:port dst:port ttl hop] [seq...]``

New::

    s -t 1.0 -Hs 0 ... -Nl AGT -Nw --- ... -Ii 0 ... -Is 0.0 -Id 1.0 -It cbr -Il 512 -If 1 ... -Pi 0

Tagged (``+`` send, ``h`` forward, ``r`` receive, ``d`` drop; braced values such as
``-N:loc {x y z}``; **no drop reason**, only the level ``-k``)::

    + 1.02 -s 0 -d -1 -p cbr -k AGT -i 4 ... -IP:s 0 -IP:sp 0 -IP:d 5 -IP:dp 0 -p cbr -e 512 -c 1 -i 4 ... -cbr:s 1

Data packets are the ones sent at the agent level (``AGT``); a packet is delivered when an
``AGT`` receive happens at its destination node. One uid follows the packet end to end, drops
included (control frames and routing packets share uid 0 with the first data packet, so
only drop lines of data packet types count). Lines that are not packet events (movement
``M``, energy ``N``, DSR's own log lines ``Sconfig``, ``SFs``, ``SFf``, ``SFESTs``, ``Ssb``,
``Ssalv``, ``SSendFailure`` ...) are skipped and counted by their first word in
``meta['skipped_lines']``; a trace where no line is a packet event is refused.

Ground truth: the packet's last drop line, read by its trace level and reason (ns-2.35
``cmu-trace.h``; ``DROP_CAUSES``, which ``causes=`` amends):

=========  ==========  ===================================================================  ===========
level      reason      what dropped it                                                      cause
=========  ==========  ===================================================================  ===========
IFQ        ``---``     DropTail/PriQueue interface queue full (``Queue::drop`` logs no      congestion
                       reason)
IFQ        IFQ         ``DROP_IFQ_QFULL``: CMUPriQueue (DSR's interface queue) full         congestion
MAC        ERR         ``DROP_MAC_PACKET_ERROR``: frame corrupted (error model)              wireless
MAC        COL         ``DROP_MAC_COLLISION``: collided frame                               wireless
MAC        RET         ``DROP_MAC_RETRY_COUNT_EXCEEDED``: retry limit                       wireless
RTR        IFQ         ``DROP_RTR_QFULL``: the routing agent's buffer of packets **waiting  route
                       for a route** is full (AODV, DSDV), despite the reason code
RTR        NRTE        ``DROP_RTR_NO_ROUTE``                                                route
RTR        TOUT        ``DROP_RTR_QTIMEOUT``: waited too long for a route                  route
RTR        CBK         ``DROP_RTR_MAC_CALLBACK``: the MAC reported the next hop             route
                       unreachable; a CBK at the time of a MAC RET of the same packet only
                       echoes the RET, and the RET decides (wireless)
RTR        LOOP, TTL   ``DROP_RTR_ROUTE_LOOP``, ``DROP_RTR_TTL``                            route
RTR        SAL         ``DROP_RTR_SALVAGE``: DSR gave up salvaging                          route
IFQ        ARP         ``DROP_IFQ_ARP_FULL``: ARP's hold buffer for an unresolved neighbour  route
any        END         ``DROP_END_OF_SIMULATION``: still queued when the run stopped        unobserved
=========  ==========  ===================================================================  ===========

Any other level and reason gives ``lost`` (cause unknown); ``reason`` keeps ``"LEVEL REASON"``
as logged. The tagged format prints no reason, so there the level decides (``IFQ ?``:
congestion, ``MAC ?``: wireless, ``RTR ?``: route) and ARP's drops count as congestion. The
run's end (``$node reset``) flushes every queue at one instant: there, ``IFQ`` drops at or
after ``end_time`` are taken as ``END``; without ``end_time``, those at the last instant that
holds two or more ``IFQ`` drops, when it lies within the trace's last second (a queue overflow
drops one packet at a time). ``meta['causes']`` is the table used. A delivered packet is delivered whatever drop lines it has (a MAC ``DUP`` is a
discarded copy; a ``COL`` at one receiver may be followed by a successful retry). The size is
the agent-level size as sent. Flows are address pairs (``src.port>dst.port``): the old format
has no flow id.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from ...errors import TraceError, UsageError
from ...packets import (
    CONGESTION,
    DELIVERED,
    FATES,
    LOST,
    ROUTE,
    UNOBSERVED,
    WIRELESS,
    Trace,
    empty_rtt,
    make_packet_table,
    mark_vanished,
    rtt_from_feedback,
)
from ..detect import NS2_WIRED, NS2_WIRELESS_NEW, NS2_WIRELESS_OLD, NS2_WIRELESS_TAGGED, line_format
from ..text import iter_lines
from .wired import DATA_TYPES, FEEDBACK_TYPES

NO_REASON = "?"  # the tagged format prints the level only
DROP_CAUSES = {
    "IFQ ---": CONGESTION,
    "IFQ IFQ": CONGESTION,
    "MAC ERR": WIRELESS,
    "MAC COL": WIRELESS,
    "MAC RET": WIRELESS,
    "PHY ERR": WIRELESS,
    "RTR IFQ": ROUTE,
    "RTR NRTE": ROUTE,
    "RTR TOUT": ROUTE,
    "RTR CBK": ROUTE,
    "RTR LOOP": ROUTE,
    "RTR TTL": ROUTE,
    "RTR SAL": ROUTE,
    "IFQ ARP": ROUTE,
    "IFQ ?": CONGESTION,
    "MAC ?": WIRELESS,
    "RTR ?": ROUTE,
}
END = "END"
_PACKET_EVENTS = {"s", "r", "f", "D", "d"}
_TAGGED_EVENTS = {"+": "s", "h": "f", "r": "r", "d": "D"}


class _Line:
    """The fields of one packet event that the reader needs."""

    __slots__ = ("ev", "time", "node", "level", "reason", "uid", "ptype", "size", "src", "dst", "seq")
    # ``seq`` stays text until the packet turns out to be one we keep: routing packets put
    # other things (hex flags) where a data packet has its sequence number


def _int(text: str) -> int:
    """An integer field, refused beyond int64 (where the PacketTable's columns end)."""
    value = int(text)
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"{text} is out of range")
    return value


def _parse_old(fields: list[str]) -> _Line:
    rec = _Line()
    rec.ev = fields[0]
    rec.time = float(fields[1])
    rec.node = _int(fields[2].strip("_"))
    rec.level = fields[3]
    rec.reason = fields[4]
    rec.uid = _int(fields[5])
    rec.ptype = fields[6]
    rec.size = _int(fields[7])
    rec.src = rec.dst = None
    rec.seq = None
    # the IP header bracket [src:port dst:port ttl nexthop] follows the MAC bracket (and the
    # energy bracket, when the trace has one); ARP and MAC control frames have none
    for j in range(8, len(fields) - 3):
        tok = fields[j]
        if tok.startswith("[") and ":" in tok and ":" in fields[j + 1]:
            rec.src = tok[1:].replace(":", ".")
            rec.dst = fields[j + 1].replace(":", ".")
            if j + 4 < len(fields) and fields[j + 4].startswith("["):
                rec.seq = fields[j + 4].strip("[]")
            break
    return rec


def _parse_new(fields: list[str]) -> _Line:
    kv = dict(zip(fields[1::2], fields[2::2]))
    rec = _Line()
    rec.ev = "D" if fields[0] == "d" else fields[0]
    rec.time = float(kv["-t"])
    node = kv.get("-Ni", kv.get("-Hs"))
    if node is None:
        raise ValueError("no node (-Ni or -Hs)")
    rec.node = _int(node)
    rec.level = kv.get("-Nl", "")
    rec.reason = kv.get("-Nw", "---")
    rec.uid = _int(kv["-Ii"]) if "-Ii" in kv else -1
    rec.ptype = kv.get("-It", "")
    rec.size = _int(kv["-Il"]) if "-Il" in kv else 0
    rec.src, rec.dst = kv.get("-Is"), kv.get("-Id")
    rec.seq = kv.get("-Pi", kv.get("-Ps"))
    return rec


def _parse_tagged(fields: list[str]) -> _Line:
    kv: dict[str, str] = {}
    j, n = 2, len(fields)
    while j < n - 1:
        key, value = fields[j], fields[j + 1]
        j += 2
        if value.startswith("{"):  # a braced value spans tokens up to the closing brace
            while not fields[j - 1].endswith("}") and j < n:
                j += 1
        kv.setdefault(key, value)
    rec = _Line()
    rec.ev = _TAGGED_EVENTS[fields[0]]
    rec.time = float(fields[1])
    rec.node = _int(kv["-s"])
    rec.level = kv.get("-k", "")
    rec.reason = NO_REASON
    rec.uid = _int(kv["-i"]) if "-i" in kv else -1
    rec.ptype = kv.get("-p", "")
    rec.size = _int(kv["-e"]) if "-e" in kv else 0
    if "-IP:s" in kv and "-IP:d" in kv:
        rec.src = f"{kv['-IP:s']}.{kv.get('-IP:sp', '0')}"
        rec.dst = f"{kv['-IP:d']}.{kv.get('-IP:dp', '0')}"
    else:
        rec.src = rec.dst = None
    rec.seq = kv.get(f"-{rec.ptype}:s", kv.get("-tcp:s"))
    return rec


_PARSERS = {NS2_WIRELESS_OLD: _parse_old, NS2_WIRELESS_NEW: _parse_new, NS2_WIRELESS_TAGGED: _parse_tagged}


def drop_causes(causes: Mapping[str, str] | None = None) -> dict[str, str]:
    """``DROP_CAUSES`` amended by ``causes`` (``{"LEVEL REASON": fate}``), checked."""
    table = dict(DROP_CAUSES)
    for key, fate in (causes or {}).items():
        if len(str(key).split()) != 2 or fate not in FATES or fate == DELIVERED:
            raise UsageError(f"causes: {key!r}: {fate!r}; keys are 'LEVEL REASON' (e.g. 'RTR CBK') and causes "
                             f"one of {', '.join(f for f in FATES if f != DELIVERED)}")
        table[" ".join(str(key).split())] = fate
    return table


def read_ns2_wireless(
    path: str | os.PathLike,
    *,
    data_types: Iterable[str] = DATA_TYPES,
    feedback_types: Iterable[str] = FEEDBACK_TYPES,
    causes: Mapping[str, str] | None = None,
    end_time: float | None = None,
) -> Trace:
    """Read an ns-2 wireless trace (old, new or tagged format, detected per line).

    ``causes`` amends the drop table (see the module docstring), e.g. ``{"RTR CBK":
    "wireless"}`` where routes break only because the radio failed. ``end_time``: when the run
    stopped (tagged format only: it tells the queues' flush from their overflows).
    """
    table = drop_causes(causes)
    path = os.fspath(path)
    data_types, feedback_types = set(data_types), set(feedback_types)
    sends: dict[int, tuple] = {}
    recvs: dict[int, float] = {}
    drops: dict[int, tuple[float, str, str]] = {}
    feedback: list[tuple] = []
    fmt_seen: set[str] = set()
    skipped: Counter[str] = Counter()
    last_time = -np.inf
    for line_no, text in iter_lines(path):
        fields = text.split()
        if not fields:
            continue
        fmt = line_format(text)
        if fmt not in _PARSERS or fields[0] not in _PACKET_EVENTS | set(_TAGGED_EVENTS):
            if fmt == NS2_WIRED:
                raise TraceError(path, "not an ns-2 wireless trace line (this looks like an ns-2 wired trace)",
                                 line=line_no, text=text)
            skipped[fields[0][:16]] += 1
            continue
        fmt_seen.add(fmt)
        try:
            rec = _PARSERS[fmt](fields)
        except (ValueError, KeyError, IndexError) as exc:
            raise TraceError(path, f"malformed ns-2 wireless line ({exc})", line=line_no, text=text) from None
        if not np.isfinite(rec.time):
            raise TraceError(path, f"time {rec.time} is not a finite number", line=line_no, text=text)
        last_time = max(last_time, rec.time)
        if rec.ev == "D":
            # MAC control frames, ARP and routing packets share uid 0 with the first data
            # packet: only drops of data packets count. A CBK at the time of the packet's
            # MAC RET echoes it: the RET stays the packet's last drop.
            if rec.ptype in data_types:
                before = drops.get(rec.uid)
                echo = (before is not None and rec.level == "RTR" and rec.reason == "CBK"
                        and before[1:] == ("MAC", "RET") and before[0] == rec.time)
                if not echo:
                    drops[rec.uid] = (rec.time, rec.level, rec.reason)
            continue
        if rec.level != "AGT":
            continue
        if rec.ptype in data_types:
            if rec.src is None or rec.seq is None:
                raise TraceError(path, "agent-level data packet without IP addresses or sequence number",
                                 line=line_no, text=text)
            if rec.ev == "s" and rec.uid not in sends:
                sends[rec.uid] = (rec.time, rec.src, rec.dst, _seq(rec, path, line_no, text), rec.size)
            elif rec.ev == "r" and rec.uid not in recvs and _node(rec.dst, path, line_no, text) == rec.node:
                recvs[rec.uid] = rec.time
        elif rec.ptype in feedback_types and rec.ev == "r" and rec.src is not None and rec.seq is not None:
            if _node(rec.dst, path, line_no, text) == rec.node:
                feedback.append((rec.time, rec.src, rec.dst, _seq(rec, path, line_no, text)))
    if not fmt_seen:
        if skipped:
            kinds = ", ".join(f"{k} ({n})" for k, n in skipped.most_common(5))
            raise TraceError(path, f"no ns-2 wireless packet line in the trace (only {kinds})")
        raise TraceError(path, "the trace is empty")
    if not sends:
        raise TraceError(path, f"no data packets sent at the agent level (types {sorted(data_types)})")
    if end_time is None:
        end_time = _flush_time(drops, last_time)
    return _build(path, sends, recvs, drops, feedback, fmt_seen, table, skipped, end_time)


def _seq(rec: _Line, path: str, line: int, text: str) -> int:
    try:
        return _int(rec.seq)
    except ValueError:
        raise TraceError(path, f"sequence number {rec.seq!r} is not an integer", line=line, text=text) from None


def _node(address: str, path: str, line: int, text: str) -> int:
    try:
        return _int(address.split(".")[0])
    except ValueError:
        raise TraceError(path, f"address {address!r} has no node number", line=line, text=text) from None


def _flush_time(drops: dict[int, tuple[float, str, str]], last_time: float) -> float:
    """The last instant at which two or more queue drops of the tagged format happened, when it
    lies within the trace's last second (the run's end flushing the queues), or NaN."""
    times = Counter(t for t, level, why in drops.values() if level == "IFQ" and why == NO_REASON)
    flushes = [t for t, n in times.items() if n >= 2]
    return max(flushes) if flushes and max(flushes) >= last_time - 1.0 else np.nan


def _build(path, sends, recvs, drops, feedback, fmt_seen, table, skipped, end_time) -> Trace:
    uids = np.fromiter(sends.keys(), np.int64, len(sends))
    t_send, src, dst, seq, size = zip(*sends.values())
    src, dst = np.asarray(src, dtype=object), np.asarray(dst, dtype=object)
    flow = (src + ">" + dst).astype(object)
    t_recv = np.array([recvs.get(u, np.nan) for u in uids.tolist()])
    t_drop = np.full(uids.size, np.nan)
    fate = np.full(uids.size, UNOBSERVED, dtype=object)
    reason = np.full(uids.size, "", dtype=object)
    for k, u in enumerate(uids.tolist()):
        if np.isfinite(t_recv[k]):
            fate[k] = DELIVERED
        elif u in drops:
            t, level, why = drops[u]
            t_drop[k] = t
            reason[k] = f"{level} {why}"
            flushed = why == END or (why == NO_REASON and level == "IFQ" and t >= end_time)
            fate[k] = UNOBSERVED if flushed else table.get(f"{level} {why}", LOST)
    packets = make_packet_table(
        flow=flow, seq=np.asarray(seq, np.int64), uid=uids, size=np.asarray(size, np.int64),
        t_send=np.asarray(t_send, np.float64), t_recv=t_recv, t_drop=t_drop, fate=fate, reason=reason,
    )
    packets = mark_vanished(packets)
    if feedback:
        fb = pd.DataFrame(feedback, columns=["t", "fsrc", "fdst", "seq"])
        fb["flow"] = (fb["fdst"] + ">" + fb["fsrc"]).astype(object)
        rtt = rtt_from_feedback(packets, fb[fb["flow"].isin(set(flow))][["flow", "t", "seq"]])
    else:
        rtt = empty_rtt()
    fmt = next(iter(fmt_seen)) if len(fmt_seen) == 1 else NS2_WIRELESS_OLD
    meta = {"clock": "common", "flow_by": "addr", "formats": sorted(fmt_seen), "causes": table,
            "skipped_lines": dict(skipped)}
    return Trace(packets=packets, rtt=rtt, path=path, format=fmt, meta=meta)
