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
congestion, ``MAC ?``: wireless, ``RTR ?``: route) and ARP's drops count as congestion, which the
reader says with their count (a ``TraceWarning``, kept in ``meta['notes']``). The
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
import warnings
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from ...errors import TraceError, TraceWarning, UsageError
from ...packets import (
    CONGESTION,
    DELIVERED,
    FATE_DTYPE,
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
from ..detect import NS2_WIRELESS_NEW, NS2_WIRELESS_OLD, NS2_WIRELESS_TAGGED
from ..text import iter_blocks, iter_lines
from . import LAST_TIME_S, TIME_RANGE, cmu_scan, select_flows, types_per_flow
from .wired import DATA_TYPES, FEEDBACK_TYPES

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
NO_REASON = "?"  # the tagged format prints the level only
BLOCK_BYTES = 1 << 24
_FORMATS = (NS2_WIRELESS_OLD, NS2_WIRELESS_NEW, NS2_WIRELESS_TAGGED)
_EV = {name: ord(name) for name in "srD"}
_AGT = cmu_scan.pack(b"AGT")
_CBK, _RET, _RTR, _MAC = (cmu_scan.pack(x) for x in (b"CBK", b"RET", b"RTR", b"MAC"))


def drop_causes(causes: Mapping[str, str] | None = None) -> dict[str, str]:
    """``DROP_CAUSES`` amended by ``causes`` (``{"LEVEL REASON": fate}``), checked."""
    table = dict(DROP_CAUSES)
    for key, fate in (causes or {}).items():
        if len(str(key).split()) != 2 or fate not in FATES or fate == DELIVERED:
            raise UsageError(
                f"causes: {key!r}: {fate!r}; keys are 'LEVEL REASON' (e.g. 'RTR CBK') and causes "
                f"one of {', '.join(f for f in FATES if f != DELIVERED)}"
            )
        table[" ".join(str(key).split())] = fate
    return table


def read_ns2_wireless(
    path: str | os.PathLike,
    *,
    data_types: Iterable[str] = DATA_TYPES,
    feedback_types: Iterable[str] = FEEDBACK_TYPES,
    causes: Mapping[str, str] | None = None,
    end_time: float | None = None,
    flows: Iterable[str] | str | None = None,
) -> Trace:
    """Read an ns-2 wireless trace (old, new or tagged format, detected per line).

    ``causes`` amends the drop table (see the module docstring), e.g. ``{"RTR CBK":
    "wireless"}`` where routes break only because the radio failed. ``end_time``: when the run
    stopped (tagged format only: it tells the queues' flush from their overflows). ``flows``
    picks the flows read (:func:`select_flows`: by default those under study, not background
    traffic).
    """
    table = drop_causes(causes)
    path = os.fspath(path)
    data_types = list(dict.fromkeys(data_types))
    feedback_types = [t for t in dict.fromkeys(feedback_types) if t not in data_types]
    rec, skipped, packet_lines = _scan(path, data_types + feedback_types, len(data_types))
    if not packet_lines:
        if skipped:
            kinds = ", ".join(f"{k} ({n})" for k, n in sorted(skipped.items(), key=lambda kv: -kv[1])[:5])
            raise TraceError(path, f"no ns-2 wireless packet line in the trace (only {kinds})")
        raise TraceError(path, "the trace is empty")
    if not np.any((rec["ev"] == _EV["s"]) & (rec["level"] == _AGT) & (rec["ptype"] < len(data_types))):
        raise TraceError(path, f"no data packets sent at the agent level (types {sorted(data_types)})")
    trace = select_flows(*_build(path, rec, skipped, data_types, table, end_time), flows)
    _note_ambiguous_queue_drops(trace)
    return trace


def _note_ambiguous_queue_drops(trace: Trace) -> None:
    """Warn, and keep in ``meta['notes']``, when a tagged trace's losses include interface-queue
    drops: the format logs no reason, so ARP's hold-buffer drops (a route cause) are among them,
    counted as congestion (module docstring)."""
    if trace.format != NS2_WIRELESS_TAGGED:
        return
    unclear = int(((trace.packets["reason"] == "IFQ ?") & (trace.packets["fate"] == CONGESTION)).sum())
    if not unclear:
        return
    message = (
        f"{trace.path}: {unclear} loss(es) counted as congestion were dropped at an interface queue, and the "
        "tagged trace format logs no drop reason: ARP's hold buffer for a neighbour not yet resolved (a route "
        "cause) drops there too, so some may be route losses; the old or new format ($ns use-newtrace) logs it"
    )
    trace.meta.setdefault("notes", []).append(message)
    warnings.warn(message, TraceWarning, stacklevel=3)


def _scan(path: str, types: list[str], n_data: int) -> tuple[np.ndarray, dict[str, int], int]:
    """The kept records of every block, the counts of lines that are no packet event (by their
    first word), and the number of packet lines."""
    type_codes = cmu_scan.type_table(types)
    parts, words = [], []
    line, packet_lines = 1, 0
    for block, _offset in iter_blocks(path, BLOCK_BYTES):
        b = np.frombuffer(block, np.uint8)
        # room for every record the block can hold: a kept line has 8 or more fields (16 bytes
        # or more), any line 2 bytes or more; pages are touched only as rows are written
        out = np.empty(b.size // 16 + 1, cmu_scan.RECORD)
        skipped = np.empty((b.size // 2 + 1, 2), np.int64)
        where = np.zeros(2, np.int64)
        n, k, packets, error, last = cmu_scan.scan(b, line, type_codes, n_data, out, skipped, where)
        packet_lines += packets
        if error:
            token = bytes(b[where[0] : where[1]]).decode("utf-8", "replace").strip("[]")
            raise TraceError(path, cmu_scan.MESSAGES[error].format(repr(token)), line=last, text=_line_text(path, last))
        kept = out[:n].copy()
        for r in np.flatnonzero(kept["time_at"] >= 0):  # numbers the scanner leaves to Python
            at, size = kept["time_at"][r], kept["time_len"][r]
            kept["time"][r] = float(bytes(b[at : at + size]))
        outside = ~((kept["time"] >= 0.0) & (kept["time"] <= LAST_TIME_S))  # NaN too
        if outside.any():
            bad = int(kept["line"][outside][0])
            raise TraceError(path, f"a time is not {TIME_RANGE}", line=bad, text=_line_text(path, bad))
        parts.append(kept)
        words.append(skipped[:k].copy())
        line = last + 1
    rec = np.concatenate(parts) if parts else np.empty(0, cmu_scan.RECORD)
    counts: dict[str, int] = {}
    if words:
        keys, n = np.unique(np.concatenate(words), axis=0, return_counts=True)
        counts = {cmu_scan.unpack(int(a)) + cmu_scan.unpack(int(b)): int(c) for (a, b), c in zip(keys, n)}
    return rec, counts, packet_lines


def _line_text(path: str, number: int) -> str | None:
    for line_no, text in iter_lines(path):
        if line_no == number:
            return text
    return None


def _first(uid: np.ndarray) -> np.ndarray:
    """Positions of the first row of each uid (rows in file order)."""
    _, first = np.unique(uid, return_index=True)
    return np.sort(first)


def _last_drops(drops: np.ndarray) -> np.ndarray:
    """Per uid, the row of its last drop line, except that a CBK at the time of the MAC RET
    just before it (the routing agent echoing the MAC's give-up) leaves the RET last."""
    order = np.argsort(drops["uid"], kind="stable")
    uid = drops["uid"][order]
    last = np.flatnonzero(np.r_[uid[1:] != uid[:-1], True])
    rows = order[last]
    prev = order[np.maximum(last - 1, 0)]
    echo = (
        (last > 0)
        & (uid[np.maximum(last - 1, 0)] == uid[last])
        & (drops["level"][rows] == _RTR)
        & (drops["reason"][rows] == _CBK)
        & (drops["level"][prev] == _MAC)
        & (drops["reason"][prev] == _RET)
        & (drops["time"][prev] == drops["time"][rows])
    )
    return np.where(echo, prev, rows)


def _flush_time(drops: np.ndarray, last_time: float) -> float:
    """The last instant at which two or more queue drops of the tagged format happened, when it
    lies within the trace's last second (the run's end flushing the queues), or NaN."""
    tagged = drops[(drops["level"] == cmu_scan.pack(b"IFQ")) & (drops["reason"] == cmu_scan.NO_REASON)]
    times, counts = np.unique(tagged["time"], return_counts=True)
    flushes = times[counts >= 2]
    return float(flushes[-1]) if flushes.size and flushes[-1] >= last_time - 1.0 else np.nan


def _flow_labels(src, sport, dst, dport) -> np.ndarray:
    """'src.sport>dst.dport' per row, formatted once per distinct flow."""
    key = np.zeros(len(src), np.int64)
    columns = []
    for values in (src, sport, dst, dport):
        codes, uniques = pd.factorize(values)
        key = key * len(uniques) + codes  # distinct (src, sport, dst, dport) → distinct key
        columns.append((codes, uniques))
    codes, first = _factorize_first(key)
    parts = [uniques[c[first]] for c, uniques in columns]
    labels = np.array([f"{a}.{b}>{c}.{d}" for a, b, c, d in zip(*(p.tolist() for p in parts))], dtype=object)
    return labels[codes]


def _factorize_first(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``key`` and the row where each code first occurs."""
    codes, uniques = pd.factorize(key)
    first = np.full(len(uniques), len(key), np.int64)
    np.minimum.at(first, codes, np.arange(len(key)))
    return codes, first


def _build(path, rec, skipped, data_types, table, end_time) -> tuple[Trace, dict[str, set[str]]]:
    """The trace of every flow, and each flow's packet types."""
    agent = rec["level"] == _AGT
    data = rec["ptype"] < len(data_types)
    sends = rec[agent & data & (rec["ev"] == _EV["s"])]
    sends = sends[_first(sends["uid"])]
    at_dst = rec["node"] == rec["dst"]
    recvs = rec[agent & data & (rec["ev"] == _EV["r"]) & at_dst]
    recvs = recvs[_first(recvs["uid"])]
    drops = rec[(rec["ev"] == _EV["D"]) & data]
    if end_time is None:
        end_time = _flush_time(drops, float(rec["time"].max()))
    drops = drops[_last_drops(drops)] if drops.size else drops

    uid = sends["uid"]
    flow = _flow_labels(sends["src"], sends["sport"], sends["dst"], sends["dport"])
    t_recv = np.full(uid.size, np.nan)
    got = np.isin(uid, recvs["uid"])
    t_recv[got] = _lookup(recvs["uid"], recvs["time"], uid[got])
    dropped = np.isin(uid, drops["uid"]) & ~got
    t_drop = np.full(uid.size, np.nan)
    t_drop[dropped] = _lookup(drops["uid"], drops["time"], uid[dropped])
    level = _lookup(drops["uid"], drops["level"], uid[dropped])
    why = _lookup(drops["uid"], drops["reason"], uid[dropped])
    # fate and reason as categorical codes, named once per distinct (level, reason)
    fate = np.full(uid.size, FATES.index(UNOBSERVED), np.int8)
    fate[got] = FATES.index(DELIVERED)
    reason = np.zeros(uid.size, np.int64)  # 0: ""
    pairs, inverse = np.unique(np.stack([level, why], axis=1).reshape(-1, 2), axis=0, return_inverse=True)
    names = [f"{cmu_scan.unpack(int(a))} {cmu_scan.unpack(int(b))}" for a, b in pairs.tolist()]
    pair_fate = np.array(
        [FATES.index(UNOBSERVED if n.split()[1] == END else table.get(n, LOST)) for n in names], np.int8
    )
    inverse = inverse.ravel()
    reason[dropped] = inverse + 1
    flushed = (why == cmu_scan.NO_REASON) & (level == cmu_scan.pack(b"IFQ")) & (t_drop[dropped] >= end_time)
    fate[dropped] = np.where(flushed, FATES.index(UNOBSERVED), pair_fate[inverse])
    fate = pd.Categorical.from_codes(fate, dtype=FATE_DTYPE)
    reason = pd.Categorical.from_codes(reason, categories=[""] + names)

    packets = make_packet_table(
        flow=flow,
        seq=sends["seq"],
        uid=uid,
        size=sends["size"],
        t_send=sends["time"],
        t_recv=t_recv,
        t_drop=t_drop,
        fate=fate,
        reason=reason,
    )
    packets = mark_vanished(packets)
    feedback = rec[agent & ~data & (rec["ev"] == _EV["r"]) & at_dst & rec["has_ip"] & rec["has_seq"]]
    if feedback.size:
        fb_flow = _flow_labels(feedback["dst"], feedback["dport"], feedback["src"], feedback["sport"])
        fb = pd.DataFrame({"flow": fb_flow, "t": feedback["time"], "seq": feedback["seq"]})
        rtt = rtt_from_feedback(packets, fb[fb["flow"].isin(set(flow))])
    else:
        rtt = empty_rtt()
    seen = sorted(set(rec["fmt"].tolist()))
    fmt = _FORMATS[seen[0]] if len(seen) == 1 else NS2_WIRELESS_OLD
    meta = {
        "clock": "common",
        "flow_by": "addr",
        "formats": [_FORMATS[f] for f in seen],
        "causes": table,
        "skipped_lines": skipped,
    }
    flow_types = types_per_flow(flow, sends["ptype"], data_types)
    return Trace(packets=packets, rtt=rtt, path=path, format=fmt, meta=meta), flow_types


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """values[k] where keys[k] == wanted (keys distinct, every wanted one present)."""
    order = np.argsort(keys, kind="stable")
    return values[order[np.searchsorted(keys, wanted, sorter=order)]]
