"""A trace's events walked once, into plain lists: the packets its endpoint sent, the ACK ranges
and packets it received, the losses it declared, the metrics it logged (the hot path of the
reader: an event of no interest costs a dictionary look-up), and its clock and vantage."""

from __future__ import annotations

import datetime

import msgspec

from ...errors import TraceError
from .parse import ANY_JSON, Event, QTrace

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


class Collected:
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


def collect(path, trace: QTrace, index: int) -> Collected:
    """One trace's events into lists: its packets sent, ACK ranges, losses and metrics."""
    c = Collected(index)
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
        total += number(when) or 0.0
        clock.append(total)
    return clock


def _walk(c: Collected, events: list, layout: tuple | None, clock: list | None) -> None:
    """The event loop, the hot path: an event of no interest costs a dictionary look-up; the
    metrics are only gathered here (carried forward in ``_metrics_at``)."""
    decode = ANY_JSON.decode
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
            if type(ev) is not Event:
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
    c.epoch = True


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
