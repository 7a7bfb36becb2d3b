"""A trace's events into plain lists: the packets its endpoint sent, the ACK ranges and packets
it received, the losses it declared, the metrics it logged, and its clock and vantage.

The events of the four kinds read are first gathered by kind, each with its index, time and
data as parse's structs (``PacketData``, ``MetricsData``): from a typed decoding by picking them
out of the events at once, else by walking the events (arrays; objects whose data is decoded one
at a time). The rules below then read both alike."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np
from msgspec import UNSET

from ...errors import TraceError
from .parse import (
    DATA,
    DATA_DECODERS,
    KIND_BY_NAME,
    KIND_BY_PAIR,
    LOST_EVENT,
    METRICS,
    NO_HEADER,
    RECEIVED,
    SENT,
    Event,
    QTrace,
)

NOT_APPLICATION = {"initial", "handshake", "retry", "version_negotiation", "stateless_reset"}
ACK_FRAMES = {"ack", "ACK", "ack_ecn"}
TRIGGERS = {"reordering_threshold": "reordering", "time_threshold": "time", "pto_expired": "pto"}
INITIAL_RTT_MS = 333.0  # RFC 9002 §6.2.2
DEFAULT_MAX_ACK_DELAY_MS = 25.0  # RFC 9000 §18.2


class Collected:
    """What one trace's events say, in event order (plain lists, converted once at the end)."""

    def __init__(self, index: int) -> None:
        self.index = index
        no_int, no_float = np.zeros(0, np.int64), np.zeros(0)
        self.sent_t, self.sent_pn, self.sent_size = no_float, no_int, no_int
        self.sent_n = no_int  # the event index of each packet sent
        self.lost_t, self.lost_pn = no_float, no_int
        self.lost_trigger: list = []
        self.ack_t, self.ack_n = no_float, no_int
        self.recv_t, self.recv_pn = no_float, no_int  # 1-RTT packets received (a chain: the peer's packets' arrivals)
        self.packet_events: list[int] = []  # event indices of every packet sent or received, any space
        self.packet_n = no_int  # the same, in order
        self.metrics_n = no_int
        self.metrics: list = []  # the data of each metrics event (MetricsData; None: none readable)
        self.range_lo, self.range_hi, self.range_frame = no_int, no_int, no_int
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


class Read(msgspec.Struct, gc=False):
    """An event walked (``_walked``): its time as logged, its data as its kind's struct (None:
    unreadable), the trigger of draft-00/01's arrays; typed_documents' events read alike."""

    time: Any
    data: Any
    trigger: Any = None


# the events of one kind: their indices, and the events (Read, or typed_documents')
Gathered = tuple[list, list]


def collect(path, trace: QTrace, index: int, typed: bool = False) -> Collected:
    """One trace's events into lists: its packets sent, ACK ranges, losses and metrics
    (``typed``: its events are typed_documents', picked out by kind)."""
    c = Collected(index)
    _trace_context(path, trace, c)
    events = trace.events
    gathered = _picked(events) if typed else _walked(path, c, trace, index)
    _sent(c, *gathered[SENT])
    _received(c, *gathered[RECEIVED])
    _lost(c, *gathered[LOST_EVENT])
    c.packet_n = np.sort(np.array(c.packet_events, np.int64))
    c.metrics_n = np.array(gathered[METRICS][0], np.int64)
    c.metrics = list(map(_DATA, gathered[METRICS][1]))
    c.events = len(events)
    return c


_KIND, _DATA = attrgetter("kind"), attrgetter("data")


def _picked(events: list) -> dict[int, Gathered]:
    """The events of each kind read, out of typed_documents' events (each knows its kind)."""
    kinds = np.fromiter(map(_KIND, events), np.int8, len(events))
    gathered: dict[int, Gathered] = {}
    for kind in DATA:
        at = np.flatnonzero(kinds == kind).tolist()
        gathered[kind] = (at, list(map(events.__getitem__, at)))
    return gathered


def _walked(path, c: Collected, trace: QTrace, index: int) -> dict[int, Gathered]:
    """The events of each kind read, walked one by one: arrays (draft-00/01/02, by
    ``event_fields``) or objects, each one's data decoded into its kind's struct."""
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
    gathered: dict[int, Gathered] = {kind: ([], []) for kind in DATA}
    for n, ev in enumerate(events):
        if layout is None:
            if type(ev) is not Event:
                c.skipped += 1
                continue
            kind = KIND_BY_NAME.get(ev.name) if type(ev.name) is str else None
            if kind is None:
                continue
            when, data, trigger = ev.time, ev.data, None
        else:
            time_at, cat_at, event_at, data_at, trigger_at, width = layout
            if type(ev) is not list or len(ev) < width:
                c.skipped += 1
                continue
            pair = (ev[cat_at], ev[event_at])
            kind = KIND_BY_PAIR.get(pair) if type(pair[0]) is str and type(pair[1]) is str else None
            if kind is None:
                continue
            when, data = ev[time_at], ev[data_at]
            trigger = ev[trigger_at] if len(ev) > trigger_at else None
        gathered[kind][0].append(n)
        gathered[kind][1].append(Read(when if clock is None else clock[n], _as_data(kind, data), trigger))
    return gathered


def _as_data(kind: int, data) -> msgspec.Struct | None:
    """An event's data (JSON text, or Python values from an array) as its kind's struct; None
    where it is no object (or not one of the shape read: a header that is no object, say)."""
    try:
        if type(data) is msgspec.Raw:
            return DATA_DECODERS[kind].decode(data)
        return msgspec.convert(data, DATA[kind] | None)  # type: ignore[operator]
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return None


def _delta_clock(events: list, layout) -> list[float]:
    """Each event's time where times are deltas (time_format "delta"): the running sum over all
    events (one whose time does not read adds nothing)."""
    clock, total = [], 0.0
    for ev in events:
        when = ev.time if layout is None else (ev[layout[0]] if type(ev) is list and len(ev) > layout[0] else 0)
        total += number(when) or 0.0
        clock.append(total)
    return clock


# a packet's number space, by its type (RFC 9000 §12.3): 0-RTT and 1-RTT share the application
# data space, the rows; a packet whose type is not logged is taken as one of them
APPLICATION, UNTYPED, OTHER_SPACE, INITIAL, UNREADABLE = range(5)
_NOT_READ = (AttributeError, TypeError, ValueError, IndexError, OverflowError)


def _packet(when, d) -> tuple[float, Any, Any]:
    """A packet event's time, header (its data's own fields where it has none: draft-00/01; or
    one with none of the fields read) and packet type (the header's, else the data's
    ``packet_type`` or ``type``); AttributeError where it has no data."""
    header = d.header
    if header is None or header == NO_HEADER:
        header = d
    return float(when), header, header.packet_type or d.packet_type or d.type


def _space(ptype, known: dict) -> int:
    """A packet type's number space (``known``: those of the types met so far)."""
    if type(ptype) is str:
        space = known.get(ptype)
        if space is None:
            lower = ptype.lower()
            space = known[ptype] = (
                INITIAL if lower == "initial" else OTHER_SPACE if lower in NOT_APPLICATION else APPLICATION
            )
        return space
    return UNTYPED if ptype is None else UNREADABLE


def _application(c: Collected, kind: int, numbers: list, events: list) -> Iterator[tuple[int, float, Any, Any]]:
    """The packet events of ``kind`` of the application data space, each as its index, time,
    header and event; the others counted: unreadable (``c.skipped``), of another space
    (``c.other_spaces``: the packets sent). The index of every packet sent or received goes to
    ``c.packet_events``; where the trace names no ODCID, it is the destination connection ID of
    the client's first Initial (RFC 9000 §7.2), as the client sent it or the server received it."""
    first_initial = {SENT: "client", RECEIVED: "server"}.get(kind)
    known: dict = {}
    for n, ev in zip(numbers, events):
        d = ev.data
        try:
            t, header, ptype = _packet(ev.time, d)
        except _NOT_READ:
            c.skipped += 1
            continue
        if kind != LOST_EVENT:
            c.packet_events.append(n)
        space = _space(ptype, known)
        if space == UNREADABLE:
            c.skipped += 1
        elif space >= OTHER_SPACE:
            c.other_spaces += kind == SENT
            if space == INITIAL and c.vantage == first_initial and not c.odcid:
                c.odcid = str(header.dcid or "")
        else:
            c.untyped += kind == SENT and space == UNTYPED
            yield n, t, header, ev


def _sent(c: Collected, numbers: list, events: list) -> None:
    """The packets sent of the application data space, in event order (a packet number and a
    size below 2^62, RFC 9000 §17.1; else the event is unreadable)."""
    sent_t, sent_pn, sent_size, sent_n = [], [], [], []
    for n, t, header, ev in _application(c, SENT, numbers, events):
        d = ev.data
        raw = d.raw
        try:
            pn = int(header.packet_number)
            size = int((raw.length if raw is not None else None) or header.packet_size or d.packet_size or 0)
        except _NOT_READ:
            c.skipped += 1
            continue
        if pn >> 62 or size >> 62:
            c.skipped += 1
            continue
        sent_t.append(t)
        sent_pn.append(pn)
        sent_size.append(size)
        sent_n.append(n)
    c.sent_t, c.sent_pn, c.sent_size = (
        np.array(sent_t, np.float64),
        np.array(sent_pn, np.int64),
        np.array(sent_size, np.int64),
    )
    c.sent_n = np.array(sent_n, np.int64)


def _received(c: Collected, numbers: list, events: list) -> None:
    """The ACK frames (and their ranges) and the packet numbers of the packets received of the
    application data space (a range beyond 2^62 left out; a value that does not read makes the
    event unreadable)."""
    ack_t: list[float] = []
    ack_n: list[int] = []
    range_lo: list[int] = []
    range_hi: list[int] = []
    range_frame: list[int] = []
    recv_t: list[float] = []
    recv_pn: list[int] = []
    for n, t, header, ev in _application(c, RECEIVED, numbers, events):
        try:
            acks = [
                [(int(r[0]), int(r[-1])) for r in frame.acked_ranges or ()]
                for frame in ev.data.frames or ()
                if frame.frame_type in ACK_FRAMES
            ]
            pn = header.packet_number
            pn = -1 if pn is None or pn is UNSET else int(pn)
        except _NOT_READ:
            c.skipped += 1
            continue
        for ranges in acks:
            f = len(ack_t)
            ack_t.append(t)
            ack_n.append(n)
            for lo, hi in ranges:
                if not (lo >> 62 or hi >> 62):
                    range_lo.append(lo)
                    range_hi.append(hi)
                    range_frame.append(f)
        if not pn >> 62:  # a packet number (none logged: -1)
            recv_t.append(t)
            recv_pn.append(pn)
    c.ack_t, c.ack_n = np.array(ack_t, np.float64), np.array(ack_n, np.int64)
    c.range_lo, c.range_hi = np.array(range_lo, np.int64), np.array(range_hi, np.int64)
    c.range_frame = np.array(range_frame, np.int64)
    c.recv_t, c.recv_pn = np.array(recv_t, np.float64), np.array(recv_pn, np.int64)


def _lost(c: Collected, numbers: list, events: list) -> None:
    """The packets of the application data space declared lost, with their triggers (the data's,
    else the array's: draft-00/01)."""
    lost_t, lost_pn = [], []
    for _, t, header, ev in _application(c, LOST_EVENT, numbers, events):
        d = ev.data
        try:
            pn = int(d.packet_number if d.packet_number is not UNSET else header.packet_number)
        except _NOT_READ:
            c.skipped += 1
            continue
        if pn >> 62:
            c.skipped += 1
            continue
        lost_t.append(t)
        lost_pn.append(pn)
        c.lost_trigger.append(TRIGGERS.get(str(d.trigger or ev.trigger), "other"))
    c.lost_t, c.lost_pn = np.array(lost_t, np.float64), np.array(lost_pn, np.int64)


# a clock reading before 2000-01-01 is no time since 1970 but a clock of its own (picoquic's
# reference_time is CLOCK_MONOTONIC, picoquic_current_time in quicctx.c): kept as the origin
# (both endpoints of one host share it), not called the epoch's
EPOCH_FLOOR = 946684800.0


def _trace_context(path, trace: QTrace, c: Collected) -> None:
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
    offset = number(configuration.get("time_offset")) or 0.0
    if isinstance(reference, dict):  # draft-ietf-quic-qlog-main-schema: clock_type, epoch
        epoch = reference.get("epoch", "1970-01-01T00:00:00.000Z")
        try:
            start = datetime.datetime.fromisoformat(str(epoch).replace("Z", "+00:00")).timestamp()
        except ValueError:  # "unknown": a monotonic clock of its own
            start = None
        c.origin = (start or 0.0) + offset * c.scale
        c.epoch = start is not None
        return
    ref = number(reference)
    if ref is None or ref == 0:
        c.origin = offset * c.scale
        c.epoch = False
        return
    if c.scale == 1e-3 and 1e8 < ref < 1e11:  # pcap2qlog: seconds in a trace of milliseconds
        c.origin = ref + offset * c.scale
    else:
        c.origin = (ref + offset) * c.scale
    c.epoch = c.origin >= EPOCH_FLOOR  # picoquic's reference is its CLOCK_MONOTONIC: the host's uptime


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None
