"""ns-2 wireless traces (CMU trace): the old format and the new (``$ns use-newtrace``) one.

Old::

    s 1.000000000 _0_ AGT  --- 0 cbr 512 [0 0 0 0] ------- [0:0 1:0 32 0] [0] 0 0
    D 1.52 _1_ IFQ  --- 57 cbr 532 [...] ------- [0:0 1:0 30 1] [57] 0 0

``event time _node_ level reason uid type size [mac] flags [src:port dst:port ttl hop] [seq...]``

New::

    s -t 1.0 -Hs 0 ... -Nl AGT -Nw --- ... -Ii 0 ... -Is 0.0 -Id 1.0 -It cbr -Il 512 -If 1 ... -Pi 0

Data packets are the ones sent at the agent level (``AGT``); a packet is delivered when an
``AGT`` receive happens at its destination node. One uid follows the packet end to end, drops
included (control frames and routing packets share uid 0 with the first data packet, so
only drop lines of data packet types count).

Ground truth comes from the packet's last drop line (ns-2's ``cmu-trace.h`` codes), read as
the reason, or the trace level when the reason is ``---``: an overflowing interface queue
logs level ``IFQ`` with reason ``---``, and AODV's full route-wait buffer logs ``RTR IFQ``;
both are queue overflows → **congestion**. ``ERR``, ``COL``, ``RET`` → **wireless**. Any other
reason (ARP, NRTE, TTL, END, CBK, ...) → **lost**. ``reason`` keeps ``"LEVEL REASON"`` as
logged. A delivered packet is delivered whatever drop lines it has (a MAC ``DUP`` is a
discarded copy; a ``COL`` at one receiver may be followed by a successful retry). The size is
the agent-level size as sent. Flows are address pairs (``src.port>dst.port``): the old format
has no flow id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...errors import TraceError
from ...packets import (
    CONGESTION,
    DELIVERED,
    LOST,
    UNOBSERVED,
    WIRELESS,
    Trace,
    empty_rtt,
    make_packet_table,
    mark_vanished,
    rtt_from_feedback,
)
from ..detect import NS2_WIRED, NS2_WIRELESS_NEW, NS2_WIRELESS_OLD, line_format
from .wired import DATA_TYPES, FEEDBACK_TYPES
from ..text import iter_lines

CONGESTION_REASONS = ("IFQ",)
WIRELESS_REASONS = ("ERR", "COL", "RET")
_PACKET_EVENTS = {"s", "r", "f", "D", "d"}
_OTHER_EVENTS = {"M", "N", "V", "H"}  # movement, energy, version and header lines


class _Line:
    """The fields of one packet event that the reader needs."""

    __slots__ = ("ev", "time", "node", "level", "reason", "uid", "ptype", "size", "src", "dst", "seq")
    # ``seq`` stays text until the packet turns out to be one we keep: routing packets put
    # other things (hex flags) where a data packet has its sequence number


def _parse_old(fields: list[str]) -> _Line:
    rec = _Line()
    rec.ev = fields[0]
    rec.time = float(fields[1])
    rec.node = int(fields[2].strip("_"))
    rec.level = fields[3]
    rec.reason = fields[4]
    rec.uid = int(fields[5])
    rec.ptype = fields[6]
    rec.size = int(fields[7])
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
    rec.node = int(kv.get("-Ni", kv.get("-Hs")))
    rec.level = kv.get("-Nl", "")
    rec.reason = kv.get("-Nw", "---")
    rec.uid = int(kv["-Ii"]) if "-Ii" in kv else -1
    rec.ptype = kv.get("-It", "")
    rec.size = int(kv["-Il"]) if "-Il" in kv else 0
    rec.src, rec.dst = kv.get("-Is"), kv.get("-Id")
    rec.seq = kv.get("-Pi", kv.get("-Ps"))
    return rec


def read_ns2_wireless(
    path: str | os.PathLike,
    *,
    data_types: Iterable[str] = DATA_TYPES,
    feedback_types: Iterable[str] = FEEDBACK_TYPES,
    congestion_reasons: Iterable[str] = CONGESTION_REASONS,
    wireless_reasons: Iterable[str] = WIRELESS_REASONS,
) -> Trace:
    """Read an ns-2 wireless trace (old or new format, detected per line).

    ``congestion_reasons``/``wireless_reasons`` map drop reasons to causes; e.g. add ``CBK``
    (the routing agent's drop after the MAC reported a link failure, usually after the
    retry limit) to the wireless ones when routes do not break for other reasons.
    """
    causes = {r: CONGESTION for r in congestion_reasons} | {r: WIRELESS for r in wireless_reasons}
    path = os.fspath(path)
    data_types, feedback_types = set(data_types), set(feedback_types)
    sends: dict[int, tuple] = {}
    recvs: dict[int, float] = {}
    drops: dict[int, tuple[float, str, str]] = {}
    feedback: list[tuple] = []
    fmt_seen: set[str] = set()
    lines = 0
    for line_no, text in iter_lines(path):
        if not text.strip():
            continue
        lines += 1
        fields = text.split()
        if fields[0] in _OTHER_EVENTS:
            continue
        fmt = line_format(text)
        if fields[0] not in _PACKET_EVENTS or fmt not in (NS2_WIRELESS_OLD, NS2_WIRELESS_NEW):
            hint = " (this looks like an ns-2 wired trace)" if fmt == NS2_WIRED else ""
            raise TraceError(path, f"not an ns-2 wireless trace line{hint}", line=line_no, text=text)
        fmt_seen.add(fmt)
        try:
            rec = _parse_old(fields) if fmt == NS2_WIRELESS_OLD else _parse_new(fields)
        except (ValueError, KeyError, IndexError) as exc:
            raise TraceError(path, f"malformed ns-2 wireless line ({exc})", line=line_no, text=text) from None
        if rec.ev == "D":
            # MAC control frames, ARP and routing packets share uid 0 with the first data
            # packet: only drops of data packets count
            if rec.ptype in data_types:
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
            elif rec.ev == "r" and rec.uid not in recvs and _node(rec.dst) == rec.node:
                recvs[rec.uid] = rec.time
        elif rec.ptype in feedback_types and rec.ev == "r" and rec.src is not None and rec.seq is not None:
            if _node(rec.dst) == rec.node:
                feedback.append((rec.time, rec.src, rec.dst, _seq(rec, path, line_no, text)))
    if lines == 0:
        raise TraceError(path, "the trace is empty")
    if not sends:
        raise TraceError(path, f"no data packets sent at the agent level (types {sorted(data_types)})")
    return _build(path, sends, recvs, drops, feedback, fmt_seen, causes)


def _seq(rec: _Line, path: str, line: int, text: str) -> int:
    try:
        return int(rec.seq)
    except ValueError:
        raise TraceError(path, f"sequence number {rec.seq!r} is not an integer", line=line, text=text) from None


def _node(address: str) -> int:
    return int(address.split(".")[0])


def _build(path, sends, recvs, drops, feedback, fmt_seen, causes) -> Trace:
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
            code = why if why != "---" else level
            reason[k] = f"{level} {why}"
            fate[k] = causes.get(code, LOST)
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
    fmt = NS2_WIRELESS_NEW if fmt_seen == {NS2_WIRELESS_NEW} else NS2_WIRELESS_OLD
    meta = {"clock": "common", "flow_by": "addr", "formats": sorted(fmt_seen)}
    return Trace(packets=packets, rtt=rtt, path=path, format=fmt, meta=meta)
