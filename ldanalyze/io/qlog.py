"""QUIC qlogs read into the sender's view: one row per packet an endpoint sent, its fate by the
ACK frames and loss declarations the same endpoint logged.

Formats, told apart by content (gzip too): the JSON of draft-marx-qlog-main-schema-00/01/02
(``qlog_version`` "draft-0x", traces with ``event_fields`` and events as arrays, names and
numbers sometimes strings, upper case in draft-00), the JSON of qlog 0.3/0.4 (events as
objects, ``name`` "transport:packet_sent"), the JSON-SEQ of qlog 0.3+ (RFC 7464 records, each
after a record separator 0x1E, possibly pretty-printed across lines; ``.sqlog``), the NDJSON of
draft-02 (quic-go 2020: a record per line), and the IETF drafts' names
(draft-ietf-quic-qlog-quic-events: ``quic:packet_sent``, ``quic:packet_lost``,
``quic:recovery_metrics_updated``; ``file_schema`` instead of ``qlog_version``).

The rules (RFC 9000 §12.3, RFC 9002 §5-6):

* Rows: the vantage endpoint's ``packet_sent`` events of the application data packet number
  space (0-RTT and 1-RTT share it, RFC 9000 §12.3); Initial and Handshake packets, in spaces of
  their own and a handful per connection, are counted in ``meta`` and left out, so ``seq`` is
  the packet number, unique in the flow, and ``tx`` is 0 (QUIC never sends a number twice).
  A packet whose type is not logged (quic-trace's conversions) is taken as application data.
* Flow: ``quic <ODCID> server>client`` (or ``client>server``, by the trace's vantage point; a
  network vantage reads as its ``flow`` endpoint), one flow per trace.
* ``t_send``: seconds; since the epoch where the qlog anchors its times there (``reference_time``,
  ``time_format``; aioquic logs epoch milliseconds), else from the trace's own origin
  (``meta['time']`` says which). pcap2qlog's ``reference_time`` in seconds in a trace of
  milliseconds (a value between 1e8 and 1e11) is read as seconds.
* Fate: acknowledged by an ACK frame of a received 1-RTT packet -> ``delivered`` (``t_ack``: the
  first ACK that covered it); declared lost (``packet_lost``: ``t_detect``, ``loss_trigger``
  from its trigger: reordering_threshold -> reordering, time_threshold -> time, pto_expired ->
  pto, else other) and never acknowledged -> ``lost``; declared lost and acknowledged afterwards
  -> ``delivered``, ``spurious`` "acked"; neither -> ``unobserved``.
* ``in_flight``: the bytes in flight as last logged (``metrics_updated``) before the packet was
  sent; -1 before any. ``chunk``: a new chunk after an idle gap longer than the probe timeout of
  the time (RFC 9002 §6.2.1: smoothed_rtt + max(4 rttvar, 1 ms) + max_ack_delay, from the logged
  metrics, the initial 333 ms RTT before any).
* ``Trace.acks``: one row per ACK frame received in a 1-RTT packet: ``ack`` the lowest packet
  number sent and not yet acknowledged, ``largest`` its largest acknowledged, ``newly`` the
  bytes of the packets it acknowledged first; ``rtt`` the latest_rtt sample of RFC 9002 §5.1
  (ACK time minus the send time of the largest acknowledged, when that packet is newly
  acknowledged; not corrected by ack_delay), ``rtt_source`` "qlog"; ``in_flight`` and ``cwnd``
  as the endpoint logged them while processing that packet (-1: it logged none).

JSON is parsed with msgspec (README, dependencies): typed, so that an event's data is decoded only when
its name is one of the four read; the rest is scanned, never turned into Python objects.
"""

from __future__ import annotations

import datetime
import gzip
import os
import re
import zlib
from collections.abc import Iterable
from typing import Any

import msgspec
import numpy as np
import pandas as pd
from numba import njit

from ..errors import TraceError, UsageError
from ..packets import (
    ACK_COLUMNS,
    DELIVERED,
    FATE_DTYPE,
    LOST,
    UNOBSERVED,
    Trace,
    empty_rtt,
    make_packet_table,
    named_flows,
)
from .text import gzip_damage, open_binary

RS = b"\x1e"
KNOWN_VERSIONS = ("draft-00", "draft-01", "draft-02", "draft-03", "0.3", "0.4")
_VERSION = re.compile(r"^(draft-0[0-3](-wip)?|0\.[34](\.\d+)?)$", re.IGNORECASE)
_FILE_SCHEMA = re.compile(r"^urn:ietf:params:qlog:file:(sequential|contained)$")

SENT, RECEIVED, LOST_EVENT, METRICS = 1, 2, 3, 4
_NAMES = {
    "packet_sent": SENT,
    "packet_received": RECEIVED,
    "packet_lost": LOST_EVENT,
    "metrics_updated": METRICS,
    "metric_update": METRICS,  # draft-00/01
    "recovery_metrics_updated": METRICS,  # draft-ietf-quic-qlog-quic-events
}
# event name -> kind, as the formats spell them: "category:event" objects, (category, event) arrays
KIND_BY_NAME = {
    f"{category}:{event}": kind for event, kind in _NAMES.items() for category in ("transport", "recovery", "quic")
}
KIND_BY_PAIR = {
    (case(category), case(event)): kind
    for event, kind in _NAMES.items()
    for category in ("transport", "recovery")
    for case in (str.lower, str.upper)
}
NOT_APPLICATION = {"initial", "handshake", "retry", "version_negotiation", "stateless_reset"}
ACK_FRAMES = {"ack", "ACK", "ack_ecn"}
TRIGGERS = {"reordering_threshold": "reordering", "time_threshold": "time", "pto_expired": "pto"}
INITIAL_RTT_MS = 333.0  # RFC 9002 §6.2.2
DEFAULT_MAX_ACK_DELAY_MS = 25.0  # RFC 9000 §18.2


def read_qlog(
    path: str | os.PathLike, *, flows: Iterable[str] | str | None = None, peer: str | os.PathLike | None = None
) -> Trace:
    """Read a qlog (any of the formats above, plain or gzip) into a sender's-view Trace: every
    trace of the file is a flow, the packets its endpoint sent; ``flows`` keeps those named
    (None or "all": every one).

    A chain, as two captures make one: where the other endpoint's trace of the same connection
    (same ODCID, the other vantage) is in the file or in the qlog ``peer``, its
    ``packet_received`` of each packet number gives ``t_recv`` (its first receipt, on the
    receiver's clock). A packet received is delivered: one declared lost and never acknowledged
    that arrived is spurious by ``received`` (its ACK was lost, or came after the end)."""
    try:
        header, traces, shape, collected = _read_traces(path)
        peers = collected + (_read_traces(peer)[3] if peer is not None else [])
        read = []
        total = 0
        for c in collected:
            uid0 = total
            total += c.events
            if c.sent_t:
                read.append(_flow_tables(c, uid0, _peer_of(c, peers)))
            else:
                read.append((None, None, c.summary()))
    except _NotUtf8 as bad:
        raise _not_utf8(bad.path, bad.raw) from None
    version = str(header.qlog_version or header.file_schema)
    if not any(f[0] is not None for f in read):
        names = sorted({name for trace in traces for ev in trace.events if (name := _event_name(ev, trace))})
        raise TraceError(
            path,
            f"a qlog ({shape}, version {version}) without a packet_sent event of application data "
            f"in its {len(traces)} trace(s): nothing was sent to read ({total} events; "
            f"names: {', '.join(names[:12]) or 'none'})",
        )
    wanted = named_flows(flows)
    found = [f[2]["flow"] for f in read if f[0] is not None]
    if wanted is not None and not wanted <= set(found):
        raise UsageError(
            f"{os.fspath(path)} has no flow {sorted(wanted - set(found))[0]!r}; its flows: {', '.join(found)}"
        )
    kept = [f for f in read if f[0] is not None and (wanted is None or f[2]["flow"] in wanted)]
    packets = pd.concat([f[0] for f in kept], ignore_index=True)
    acks = pd.concat([f[1] for f in kept], ignore_index=True)
    table = make_packet_table(**{column: packets[column].to_numpy() for column in packets.columns})
    for column in ("loss_trigger", "spurious", "reason"):
        table[column] = table[column].astype("category")
    acks["flow"] = acks["flow"].astype("category")
    acks["rtt_source"] = acks["rtt_source"].astype("category")
    sampled = acks[np.isfinite(acks["rtt"].to_numpy())]
    rtt = (
        pd.DataFrame(
            {
                "flow": sampled["flow"].astype(str).to_numpy(object),
                "t": sampled["t"].to_numpy(),
                "seq": sampled["largest"].to_numpy(),
                "rtt": sampled["rtt"].to_numpy(),
            }
        )
        if len(sampled)
        else empty_rtt()
    )
    meta = {
        "view": "sender",
        "qlog_version": version,
        "qlog_format": shape,
        "events": total,
        "time": "epoch" if all(f[2]["epoch"] for f in read) else "relative",
        "traces": [f[2] for f in read],
    }
    return Trace(packets=table, rtt=rtt, path=os.fspath(path), format="qlog", meta=meta, acks=acks)


class _NotUtf8(Exception):
    def __init__(self, path, raw: bytes) -> None:
        self.path, self.raw = path, raw


def _read_traces(path) -> tuple[_Document, list[_QTrace], str, list[_Collected]]:
    """A qlog file's header, traces, shape, and what each trace's events say."""
    raw = _read_bytes(path)
    try:
        header, traces, shape = _documents(path, raw)
        return header, traces, shape, [_collect(path, trace, index) for index, trace in enumerate(traces)]
    except UnicodeDecodeError:
        raise _NotUtf8(path, raw) from None


def _peer_of(c: _Collected, candidates: list[_Collected]) -> _Collected | None:
    """The other endpoint's trace of ``c``'s connection: same ODCID, the opposite vantage."""
    other = {"server": "client", "client": "server"}.get(c.vantage)
    return next((p for p in candidates if c.odcid and p.odcid == c.odcid and p.vantage == other), None)


def _not_utf8(path, raw: bytes) -> TraceError:
    """JSON is UTF-8 text (RFC 8259 §8.1): where this file is not."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return TraceError(
            path, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}): not a qlog, or a damaged one", offset=exc.start
        )
    return TraceError(path, "not UTF-8 text: not a qlog, or a damaged one")


def _event_name(ev, trace: _QTrace) -> str | None:
    """An event's "category:event" (the error path's account of what a trace holds)."""
    if isinstance(ev, _Event):
        return str(ev.name)
    fields = [str(f).lower() for f in trace.event_fields or ()]
    if isinstance(ev, list) and "category" in fields and len(ev) == len(fields):
        event_at = fields.index("event_type") if "event_type" in fields else fields.index("event")
        return f"{ev[fields.index('category')]}:{ev[event_at]}".lower()
    return None


def _read_bytes(path) -> bytes:
    with open_binary(path) as f:
        try:
            return f.read()
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise gzip_damage(path, exc) from None


class _Event(msgspec.Struct):
    """An event object; its data stays undecoded bytes until its name says it is wanted (most
    events are not: decoding only theirs is what makes the reader fast)."""

    time: Any = None
    name: Any = None
    data: msgspec.Raw = msgspec.Raw(b"null")


class _QTrace(msgspec.Struct):
    """A trace: its events (objects, or the arrays of draft-00/01/02) and what says how to read them."""

    events: list[_Event | list[Any]] = []
    vantage_point: Any = None
    common_fields: Any = None
    configuration: Any = None
    event_fields: Any = None


class _Document(msgspec.Struct):
    """A qlog's top: its version and its traces (JSON), or its one trace (a JSON-SEQ header)."""

    qlog_version: Any = None
    qlog_format: Any = None
    file_schema: Any = None
    traces: list[_QTrace] | None = None
    trace: _QTrace | None = None


_DOCUMENT = msgspec.json.Decoder(_Document)
_EVENTS = msgspec.json.Decoder(list[_Event])
_EVENT = msgspec.json.Decoder(_Event)
_ANY = msgspec.json.Decoder()


def _documents(path, raw: bytes) -> tuple[_Document, list[_QTrace], str]:
    """The file's header and its traces, and its shape (JSON, JSON-SEQ, NDJSON)."""
    body = raw.lstrip(b" \t\r\n\xef\xbb\xbf")
    if body.startswith(RS):
        header, events = _sequence(path, raw, RS)
        shape = "JSON-SEQ"
    else:
        try:
            doc = _DOCUMENT.decode(body)
        except msgspec.ValidationError as exc:  # read as far as a value of a wrong type: the rest is unread
            try:
                whole = _ANY.decode(body)
            except msgspec.DecodeError as damage:
                raise _json_error(path, raw, len(raw) - len(body) + _error_at(damage, len(body)), damage) from None
            _check_header(path, whole, b"")
            raise TraceError(path, f"a qlog of an unexpected shape: {exc}", offset=0) from None
        except msgspec.DecodeError as exc:
            first = body.split(b"\n", 1)[0]
            if len(first) < len(body.rstrip()) and _is_json_object(first):  # a record per line: NDJSON
                header, events = _sequence(path, raw, b"\n")
                shape = "NDJSON"
            else:
                raise _json_error(path, raw, len(raw) - len(body) + _error_at(exc, len(body)), exc) from None
        else:
            _check_header(path, doc, body)
            if doc.traces is None and doc.trace is None:
                raise TraceError(path, "a qlog without traces", offset=0)
            return doc, doc.traces if doc.traces is not None else [doc.trace], "JSON"  # type: ignore[list-item]
    _check_header(path, header, b"")
    trace = msgspec.structs.replace(header.trace or _QTrace(), events=events)
    return header, [trace], shape


def _is_json_object(text: bytes) -> bool:
    try:
        return isinstance(_ANY.decode(text), dict)
    except msgspec.DecodeError:
        return False


def _error_at(exc: msgspec.DecodeError, end: int) -> int:
    """Where msgspec says the JSON went wrong: its "(byte N)", or the end of a text cut short."""
    found = re.search(r"\(byte (\d+)\)", str(exc))
    return int(found.group(1)) if found else end


def _sequence(path, raw: bytes, separator: bytes) -> tuple[_Document, list]:
    """The header and the events of a JSON text sequence (RFC 7464; ``separator`` 0x1E) or of
    NDJSON (a newline): the events parsed as one JSON array; where that fails, record by record,
    to name the bad one."""
    first = raw.index(separator) if separator == RS else 0
    second = raw.find(separator, first + 1)
    while second >= 0 and not raw[first:second].strip(b" \t\r\n\x1e"):  # blank records before the header
        first, second = second, raw.find(separator, second + 1)
    try:
        header = _DOCUMENT.decode(raw[first : second if second >= 0 else len(raw)].strip(b" \t\r\n\x1e"))
    except msgspec.DecodeError:
        header = None
    if header is not None and second >= 0:
        _check_header(path, header, raw[first:second].strip(b" \t\r\n\x1e"))
        try:
            return header, _EVENTS.decode(b"[" + raw[second + 1 :].replace(separator, b",").rstrip(b" \t\r\n,") + b"]")
        except msgspec.DecodeError:  # a ValidationError too: a record that is no event object
            pass
    records = _records(raw, separator)
    if not records:
        raise TraceError(path, "a JSON text sequence without a record", offset=0)
    events = []
    record: Any
    for number, (start, text) in enumerate(records, 1):
        try:
            record = _DOCUMENT.decode(text) if number == 1 else _EVENT.decode(text)
        except msgspec.DecodeError as exc:
            if number == 1:
                _check_header(path, _any_or_none(text), b"")
            last = number == len(records)
            hint = (
                ": the file ends inside it (the writer stopped mid-record?); the records before it read"
                " if the file is cut at this byte"
                if last
                else ""
            )
            kind = "JSON-SEQ" if separator == RS else "NDJSON"
            where = " of the decompressed text" if _gz(path) else ""
            raise TraceError(
                path,
                f"{kind} record {number} (starting at byte {start:,}{where}) is not a JSON object ({exc}){hint}",
                offset=start,
                text=text[:200].decode("utf-8", "replace"),
            ) from None
        if number > 1:
            events.append(record)
        else:
            header = record
    return header, events  # type: ignore[return-value]


def _any_or_none(text: bytes) -> Any:
    try:
        return _ANY.decode(text)
    except msgspec.DecodeError:
        return None


def _records(raw: bytes, separator: bytes) -> list[tuple[int, bytes]]:
    """The non-blank records of a sequence, each with the offset of its separator (NDJSON: of its line)."""
    out = []
    start = raw.index(separator) if separator == RS else 0
    while start < len(raw):
        end = raw.find(separator, start + 1)
        end = len(raw) if end < 0 else end
        text = raw[start:end].strip(b" \t\r\n\x1e")
        if text:
            out.append((start, text))
        start = end
    return out


def _gz(path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _json_error(path, raw: bytes, pos: int, exc: Exception) -> TraceError:
    line = raw.count(b"\n", 0, pos) + 1
    start = raw.rfind(b"\n", 0, pos) + 1
    stop = raw.find(b"\n", pos)
    text = raw[start : stop if stop >= 0 else len(raw)]
    cut = " (the file ends inside a JSON value: cut short?)" if pos >= len(raw.rstrip()) else ""
    return TraceError(
        path,
        f"not valid JSON: {exc} at column {pos - start + 1}{cut}",
        line=line,
        text=text[:200].decode("utf-8", "replace"),
    )


def _check_header(path, header: Any, text: bytes) -> None:
    """A qlog's version is one this reader knows; else a TraceError saying what the file is
    (``text``: the header's JSON, read again to name its keys when it is no qlog's)."""
    if isinstance(header, _Document) and header.qlog_version is header.file_schema is header.qlog_format is None:
        header = _any_or_none(text)
    if isinstance(header, _Document):
        version, schema, named = header.qlog_version, header.file_schema, header.qlog_format
    elif isinstance(header, dict):
        version, schema, named = header.get("qlog_version"), header.get("file_schema"), header.get("qlog_format")
    else:
        version = schema = named = None
    if version is None and schema is None and named is None:
        keys = ", ".join(list(header)[:8]) if isinstance(header, dict) else type(header).__name__
        raise TraceError(
            path, f"JSON, but not a qlog: no qlog_version or file_schema at its top (it has: {keys})", offset=0
        )
    if version is None and isinstance(schema, str) and _FILE_SCHEMA.match(schema):
        return
    if not isinstance(version, str) or not _VERSION.match(version):
        raise TraceError(
            path,
            f"a qlog of schema version {version if version is not None else schema!r}, which this reader does not "
            f"know (it reads {', '.join(KNOWN_VERSIONS)}, and the IETF drafts' file_schema "
            "urn:ietf:params:qlog:file:sequential or :contained)",
            offset=0,
        )


class _Collected:
    """What one trace's events say, in event order (plain lists, converted once at the end)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.sent_t: list = []
        self.sent_pn: list = []
        self.sent_size: list = []
        self.sent_n: list = []  # the event index of each packet sent
        self.lost_t: list = []
        self.lost_pn: list = []
        self.lost_trigger: list = []
        self.ack_t: list = []
        self.ack_n: list = []
        self.recv_t: list = []  # 1-RTT packets received (a chain: the peer's packets' arrivals)
        self.recv_pn: list = []
        self.packet_n: list = []  # event indices of every packet sent or received, any space
        self.metrics_n: list = []
        self.metrics: list = []  # the data of each metrics_updated, undecoded (objects) or not (arrays)
        self.range_lo: list = []
        self.range_hi: list = []
        self.range_frame: list = []
        self.other_spaces = 0
        self.untyped = 0
        self.events = 0
        self.skipped = 0
        self.vantage = "unknown"
        self.odcid = ""
        self.epoch = False
        self.scale = 1e-3  # event time units to seconds
        self.origin = 0.0  # seconds added to every time
        self.delta = False

    def summary(self) -> dict:
        return {
            "flow": None,
            "vantage": self.vantage,
            "odcid": self.odcid,
            "events": self.events,
            "packets_sent": len(self.sent_t),
            "other_spaces_sent": self.other_spaces,
            "untyped_packets": self.untyped,
            "events_unreadable": self.skipped,
            "declared_lost": len(self.lost_t),
            "ack_frames": len(self.ack_t),
            "epoch": self.epoch,
        }


def _collect(path, trace: _QTrace, index: int) -> _Collected:
    """One trace's events into lists: its packets sent, ACK ranges, losses and metrics."""
    c = _Collected(index)
    _trace_context(path, trace, c)
    events = trace.events
    fields = trace.event_fields
    layout = None
    if fields:
        names = [str(f).lower() for f in fields]
        time_at = next((names.index(n) for n in ("relative_time", "time", "delta_time") if n in names), None)
        if time_at is None or "category" not in names or "data" not in names:
            raise TraceError(path, f"trace {index}: event_fields {fields} name no time, category or data")
        c.delta = names[time_at] == "delta_time"
        cat_at, data_at = names.index("category"), names.index("data")
        event_at = names.index("event_type") if "event_type" in names else names.index("event")
        trigger_at = names.index("trigger") if "trigger" in names else len(names)
        layout = (time_at, cat_at, event_at, data_at, trigger_at, max(time_at, cat_at, event_at, data_at) + 1)
    clock = _delta_clock(events, layout) if c.delta else None
    _walk(c, events, layout, clock)
    return c


def _delta_clock(events: list, layout) -> list[float]:
    """Each event's time where times are deltas (time_format "delta"): the running sum over all
    events (one whose time does not read adds nothing)."""
    clock, total = [], 0.0
    for ev in events:
        when = ev.time if layout is None else (ev[layout[0]] if type(ev) is list and len(ev) > layout[0] else 0)
        total += _number(when) or 0.0
        clock.append(total)
    return clock


def _walk(c: _Collected, events: list, layout: tuple | None, clock: list | None) -> None:
    """The event loop, the hot path: an event of no interest costs a dictionary look-up; the
    metrics are only gathered here (carried forward in ``_metrics_at``)."""
    decode = _ANY.decode
    by_name, by_pair = KIND_BY_NAME, KIND_BY_PAIR
    if layout is not None:
        time_at, cat_at, event_at, data_at, trigger_at, width = layout
    metrics_n, metrics = c.metrics_n.append, c.metrics.append
    packet_n = c.packet_n.append
    sent_t, sent_pn, sent_size, sent_n = c.sent_t.append, c.sent_pn.append, c.sent_size.append, c.sent_n.append
    range_lo, range_hi, range_frame = c.range_lo.append, c.range_hi.append, c.range_frame.append
    n = -1
    for n, ev in enumerate(events):
        if layout is None:
            if type(ev) is not _Event:
                c.skipped += 1
                continue
            kind = by_name.get(ev.name)
            if kind is None:
                continue
            when, data, trigger = ev.time, ev.data, None
        else:
            if type(ev) is not list or len(ev) < width:
                c.skipped += 1
                continue
            kind = by_pair.get((ev[cat_at], ev[event_at]))
            if kind is None:
                continue
            when, data = ev[time_at], ev[data_at]
            trigger = ev[trigger_at] if len(ev) > trigger_at else None
        if kind == METRICS:  # decoded all at once (_metrics_state)
            metrics_n(n)
            metrics(data)
            continue
        try:
            if type(data) is msgspec.Raw:
                data = decode(data)
            t = float(when) if clock is None else clock[n]
            get = data.get
            header = get("header") or data
            ptype = header.get("packet_type") or get("packet_type") or get("type")
            if kind != LOST_EVENT:
                packet_n(n)
            if ptype is not None and ptype.lower() in NOT_APPLICATION:
                if kind == SENT:
                    c.other_spaces += 1
                if not c.odcid and ptype.lower() == "initial" and (kind, c.vantage) in _FIRST_INITIAL:
                    c.odcid = str(header.get("dcid") or "")
                continue
            if kind == SENT:
                if ptype is None:
                    c.untyped += 1
                raw = get("raw")
                size = (raw.get("length") if raw else None) or header.get("packet_size") or get("packet_size")
                pn = int(header["packet_number"])
                size = int(size or 0)
                if pn >> 62 or size >> 62:  # a packet number is below 2^62 (RFC 9000 §17.1); negative ones neither
                    raise ValueError(pn)
                sent_t(t)
                sent_pn(pn)
                sent_size(size)
                sent_n(n)
            elif kind == RECEIVED:
                for frame in get("frames") or ():
                    if frame.get("frame_type") in ACK_FRAMES:
                        f = len(c.ack_t)
                        c.ack_t.append(t)
                        c.ack_n.append(n)
                        for r in frame.get("acked_ranges") or ():
                            lo, hi = int(r[0]), int(r[-1])
                            if lo >> 62 or hi >> 62:
                                continue
                            range_lo(lo)
                            range_hi(hi)
                            range_frame(f)
                received = header.get("packet_number")
                if received is not None:
                    c.recv_t.append(t)
                    c.recv_pn.append(int(received))
            else:  # LOST_EVENT
                pn = int(get("packet_number", header.get("packet_number")))
                if pn >> 62:
                    raise ValueError(pn)
                c.lost_t.append(t)
                c.lost_pn.append(pn)
                c.lost_trigger.append(TRIGGERS.get(str(get("trigger") or trigger), "other"))
        except (AttributeError, KeyError, TypeError, ValueError, IndexError, msgspec.DecodeError):
            c.skipped += 1
    c.events = n + 1


# who logs the client's first Initial, whose destination connection ID is the ODCID
_FIRST_INITIAL = {(SENT, "client"), (RECEIVED, "server")}


def _metrics_state(c: _Collected) -> pd.DataFrame:
    """The metrics after each metrics event (bytes_in_flight, cwnd, smoothed_rtt, rtt_variance;
    each carried forward on its own, NaN before any): their data decoded in one call."""
    items = c.metrics
    if items and type(items[0]) is msgspec.Raw:
        try:
            items = _ANY.decode(b"[" + b",".join(items) + b"]")
        except msgspec.DecodeError:
            items = [_any_or_none(bytes(item)) for item in items]
    rows = [
        (
            d.get("bytes_in_flight"),
            d.get("cwnd", d.get("congestion_window")),
            d.get("smoothed_rtt"),
            d.get("rtt_variance"),
        )
        if type(d) is dict
        else (None, None, None, None)
        for d in items
    ]
    columns = ["bif", "cwnd", "srtt", "rttvar"]
    return pd.DataFrame(rows, columns=columns, dtype=object).apply(pd.to_numeric, errors="coerce").ffill()


def _metrics_at(
    c: _Collected, state: pd.DataFrame, at_n: np.ndarray, after_n: np.ndarray | None = None
) -> pd.DataFrame:
    """The metrics as last logged before each event index ``at_n`` (``state``: _metrics_state's).
    With ``after_n``: only a metrics event logged after ``after_n`` counts (else NaN): the metrics
    of the packet being processed, not those before it."""
    logged = np.asarray(c.metrics_n, np.int64)
    last = np.searchsorted(logged, at_n) - 1
    valid = last >= 0
    if after_n is not None and len(logged):
        valid &= logged[np.maximum(last, 0)] > after_n
    values = state.to_numpy(np.float64) if len(state) else np.full((1, 4), np.nan)
    out = np.where(valid[:, None], values[np.maximum(last, 0)], np.nan)
    return pd.DataFrame(out, columns=state.columns)


def _trace_context(path, trace: _QTrace, c: _Collected) -> None:
    """Vantage, ODCID and the clock of a trace: units, origin, whether it is the epoch's."""
    vantage = _mapping(trace.vantage_point)
    kind = str(vantage.get("type") or "unknown").lower()
    c.vantage = str(vantage.get("flow") or "unknown").lower() if kind == "network" else kind
    common = _mapping(trace.common_fields)
    configuration = _mapping(trace.configuration)
    c.odcid = str(common.get("ODCID") or common.get("odcid") or common.get("group_id") or "")
    units = str(configuration.get("time_units") or common.get("time_units") or "ms").lower()
    c.scale = 1e-6 if units == "us" else 1e-3
    c.delta = str(common.get("time_format") or "").lower() == "delta"
    reference = common.get("reference_time")
    offset = _number(configuration.get("time_offset")) or 0.0
    if isinstance(reference, dict):  # draft-ietf-quic-qlog-main-schema: clock_type, epoch
        epoch = reference.get("epoch", "1970-01-01T00:00:00.000Z")
        try:
            start = datetime.datetime.fromisoformat(str(epoch).replace("Z", "+00:00")).timestamp()
        except ValueError:  # "unknown": a monotonic clock of its own
            start = None
        c.origin = (start or 0.0) + offset * c.scale
        c.epoch = start is not None
        return
    ref = _number(reference)
    if ref is None or ref == 0:
        c.origin = offset * c.scale
        c.epoch = False
        return
    if c.scale == 1e-3 and 1e8 < ref < 1e11:  # pcap2qlog: seconds in a trace of milliseconds
        c.origin = ref + offset * c.scale
    else:
        c.origin = (ref + offset) * c.scale
    c.epoch = True


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _flow_tables(c: _Collected, uid0: int, peer: _Collected | None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """One trace's packets and ACK rows, fates decided (module docstring; ``peer``: the other
    endpoint's trace, whose receipts give ``t_recv``)."""
    scale = c.scale
    t_send = np.asarray(c.sent_t, np.float64) * scale + c.origin
    pn = np.asarray(c.sent_pn, np.int64)
    size = np.asarray(c.sent_size, np.int64)
    if not c.epoch and not c.delta and len(t_send) and t_send.min() > 1e8:  # epoch times without a reference
        c.epoch = True
    if c.vantage in ("server", "client"):
        other = "client" if c.vantage == "server" else "server"
        flow = f"quic {c.odcid or f'trace{c.index}'} {c.vantage}>{other}"
    else:
        flow = f"quic {c.odcid or f'trace{c.index}'} {c.vantage}"
    order = np.argsort(pn, kind="stable")
    sorted_pn = pn[order]
    # ACK ranges as half-open intervals of the sorted packets they cover
    lo = np.asarray(c.range_lo, np.int64)
    hi = np.asarray(c.range_hi, np.int64)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    frame_of_range = np.asarray(c.range_frame, np.int64)
    first = np.searchsorted(sorted_pn, lo, "left")
    stop = np.searchsorted(sorted_pn, hi, "right")
    n_frames = len(c.ack_t)
    acked_by_sorted, newly, lowest = ack_coverage(first, stop, frame_of_range, n_frames, size[order])
    acked_by = np.empty_like(acked_by_sorted)
    acked_by[order] = acked_by_sorted
    ack_t = np.asarray(c.ack_t, np.float64) * scale + c.origin
    t_ack = np.where(acked_by >= 0, ack_t[np.maximum(acked_by, 0)] if n_frames else np.nan, np.nan)
    # losses: the first declaration of each packet number sent
    t_detect = np.full(len(pn), np.nan)
    trigger = np.full(len(pn), "", dtype=object)
    if c.lost_pn:
        lost_pn = np.asarray(c.lost_pn, np.int64)
        lost_t = np.asarray(c.lost_t, np.float64) * scale + c.origin
        at = np.minimum(np.searchsorted(sorted_pn, lost_pn), len(sorted_pn) - 1)
        known = sorted_pn[at] == lost_pn
        rows = order[at[known]][::-1]  # reversed: the first declaration is written last
        t_detect[rows] = lost_t[known][::-1]
        trigger[rows] = np.asarray(c.lost_trigger, dtype=object)[known][::-1]
    acked = acked_by >= 0
    declared = np.isfinite(t_detect)
    t_recv = _receipts(peer, pn)
    received = np.isfinite(t_recv) & ~acked
    spurious_rows = acked & declared & (t_detect <= t_ack)
    fate = np.where(acked | received, DELIVERED, np.where(declared, LOST, UNOBSERVED))
    reason = np.select(
        [spurious_rows, acked, received, declared],
        ["acked after declared lost", "acked", "received, not acknowledged", "declared lost"],
        "not acknowledged",
    ).astype(object)
    spurious = np.select([spurious_rows, received & declared], ["acked", "received"], "").astype(object)
    sent_n = np.asarray(c.sent_n, np.int64)
    state = _metrics_state(c)
    before = _metrics_at(c, state, sent_n)
    one_ms = 1e-3 / scale  # the trace's time unit
    srtt = before["srtt"].fillna(INITIAL_RTT_MS * one_ms).to_numpy()
    rttvar = before["rttvar"].fillna(INITIAL_RTT_MS * one_ms / 2).to_numpy()
    pto = (srtt + np.maximum(4 * rttvar, one_ms) + DEFAULT_MAX_ACK_DELAY_MS * one_ms) * scale
    gaps = np.diff(t_send, prepend=t_send[0] if len(t_send) else 0.0)
    chunk = np.cumsum(gaps > pto)
    packets = pd.DataFrame(
        {
            "flow": np.full(len(pn), flow, dtype=object),
            "seq": pn,
            "tx": np.zeros(len(pn), np.int64),
            "uid": sent_n + uid0,
            "size": size,
            "t_send": t_send,
            "t_recv": t_recv,
            "fate": pd.Categorical(fate, dtype=FATE_DTYPE),
            "reason": reason,
            "t_ack": t_ack,
            "t_detect": t_detect,
            "loss_trigger": trigger,
            "spurious": spurious,
            "chunk": chunk.astype(np.int64),
            "in_flight": before["bif"].fillna(-1).to_numpy(np.int64),
        }
    )
    # the ACK stream; in flight and cwnd as logged while its packet was processed (until the next packet event)
    ack_n = np.asarray(c.ack_n, np.int64)
    packet_n = np.asarray(c.packet_n, np.int64)
    following = np.append(packet_n, np.iinfo(np.int64).max)[np.searchsorted(packet_n, ack_n, "right")]
    after = _metrics_at(c, state, following, ack_n)
    largest = np.full(n_frames, -1, np.int64)
    if len(hi):
        np.maximum.at(largest, frame_of_range, hi)
    rtt = np.full(n_frames, np.nan)
    at = np.minimum(np.searchsorted(sorted_pn, largest), max(len(sorted_pn) - 1, 0))
    hit = (sorted_pn[at] == largest) & (acked_by_sorted[at] == np.arange(n_frames))
    rtt[hit] = ack_t[hit] - t_send[order[at[hit]]]
    ack_pn = np.append(sorted_pn, sorted_pn[-1] + 1)[lowest]
    acks = pd.DataFrame(
        {
            "flow": np.full(n_frames, flow, dtype=object),
            "t": ack_t,
            "ack": ack_pn,
            "largest": largest,
            "newly": newly,
            "dupack": np.zeros(n_frames, bool),
            "dsack": np.zeros(n_frames, bool),
            "rtt": rtt,
            "rtt_source": np.where(hit, "qlog", "").astype(object),
            "delivery_rate": np.full(n_frames, np.nan),
            "in_flight": after["bif"].fillna(-1).to_numpy(np.int64),
            "rwnd": np.full(n_frames, -1, np.int64),
            "cwnd": after["cwnd"].fillna(-1).to_numpy(np.int64),
        }
    )
    acks = acks.astype({k: v for k, v in ACK_COLUMNS.items() if k not in ("flow", "rtt_source")})
    summary = c.summary()
    summary.update(
        flow=flow,
        epoch=c.epoch,
        delivered=int((acked | received).sum()),
        lost=int((declared & ~acked & ~received).sum()),
        spurious=int((spurious != "").sum()),
        unobserved=int((~acked & ~declared & ~received).sum()),
        peer=peer.vantage if peer is not None else None,
    )
    return packets, acks, summary


def _receipts(peer: _Collected | None, pn: np.ndarray) -> np.ndarray:
    """Each packet number's first receipt in the peer's trace, in seconds on its clock (NaN: none)."""
    t_recv = np.full(len(pn), np.nan)
    if peer is None or not peer.recv_pn:
        return t_recv
    got = np.asarray(peer.recv_pn, np.int64)
    when = np.asarray(peer.recv_t, np.float64) * peer.scale + peer.origin
    order = np.lexsort((when, got))
    got, when = got[order], when[order]
    first = np.ones(len(got), bool)
    first[1:] = got[1:] != got[:-1]
    got, when = got[first], when[first]
    at = np.minimum(np.searchsorted(got, pn), len(got) - 1)
    hit = got[at] == pn
    t_recv[hit] = when[at[hit]]
    return t_recv


@njit(cache=True)
def ack_coverage(first, stop, frame_of_range, n_frames, size):  # pragma: no cover - numba
    """Which ACK frame first acknowledged each packet (-1: none), the bytes each frame newly
    acknowledged, and after each frame the index of the lowest packet not yet acknowledged.

    Packets are indexed in packet number order; range ``r`` of frame ``frame_of_range[r]`` covers
    the packets ``first[r]`` to ``stop[r] - 1``; frames in the order they were received. Each
    packet is visited once: ``skip`` points past runs already acknowledged (a union-find with
    path halving), so the ranges repeated by every ACK frame cost nothing.
    tests/naive/qlog.py has the plain twin.
    """
    n = size.shape[0]
    acked_by = np.full(n, -1, np.int64)
    newly = np.zeros(n_frames, np.int64)
    lowest = np.zeros(n_frames, np.int64)
    skip = np.arange(n + 1)
    low = 0
    r = 0
    for f in range(n_frames):
        while r < frame_of_range.shape[0] and frame_of_range[r] == f:
            i = first[r]
            while True:
                while skip[i] != i:  # the first packet at or after i not yet acknowledged
                    skip[i] = skip[skip[i]]
                    i = skip[i]
                if i >= stop[r]:
                    break
                acked_by[i] = f
                newly[f] += size[i]
                skip[i] = i + 1
            r += 1
        while low < n and acked_by[low] >= 0:
            low += 1
        lowest[f] = low
    return acked_by, newly, lowest
