"""A qlog file's bytes into its header and traces: JSON (draft-00/01/02, 0.3/0.4), JSON-SEQ
(RFC 7464) and NDJSON, told apart by content. Bad input is a TraceError naming the byte, line or
record.

Two decodings, both msgspec's, typed:

* ``typed_documents``, the fast one, for events that are objects: each event decoded by its
  name (a tagged union, the tag ``name``), so that the data of the four kinds read becomes
  structs of the few fields read and every other event is scanned, never turned into Python
  objects, its data and time skipped. The names are learned from the file itself (msgspec
  names the value it did not expect; one scan of the text finds the rest where a new name turns
  up late). Anything it does not foresee (arrays, a value of another shape, deltas of time,
  damage) returns None;
* ``documents``, the general one and its error messages: an event's data stays undecoded bytes
  (``msgspec.Raw``) until its name says it is wanted; draft-00/01/02's arrays as Python lists.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import re
import zlib
from collections.abc import Iterator
from typing import Any, Union

import msgspec
from msgspec import UNSET

from ...errors import TraceError
from ..text import gzip_damage, open_binary

RS = b"\x1e"
_BLANK = b" \t\r\n\xef\xbb\xbf"  # JSON's whitespace, and a byte order mark
_BLANK_RS = b" \t\r\n\x1e"
_BLANK_COMMA = b" \t\r\n,"
KNOWN_VERSIONS = ("draft-00", "draft-01", "draft-02", "draft-03", "0.3", "0.4")
_VERSION = re.compile(r"^(draft-0[0-3](-wip)?|0\.[34](\.\d+)?)$", re.IGNORECASE)
_FILE_SCHEMA = re.compile(r"^urn:ietf:params:qlog:file:(sequential|contained)$")


class NotUtf8(Exception):
    def __init__(self, path, raw: bytes) -> None:
        self.path, self.raw = path, raw


def not_utf8(path, raw: bytes) -> TraceError:
    """JSON is UTF-8 text (RFC 8259 §8.1): where this file is not."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return TraceError(
            path, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}): not a qlog, or a damaged one", offset=exc.start
        )
    return TraceError(path, "not UTF-8 text: not a qlog, or a damaged one")


def event_name(ev, trace: QTrace) -> str | None:
    """An event's "category:event" (the error path's account of what a trace holds)."""
    if isinstance(ev, Event):
        return str(ev.name)
    if isinstance(ev, msgspec.Struct):  # typed_documents' event: its name is its tag
        return str(ev.__struct_config__.tag)
    fields = [str(f).lower() for f in trace.event_fields or ()]
    if isinstance(ev, list) and "category" in fields and len(ev) == len(fields):
        event_at = fields.index("event_type") if "event_type" in fields else fields.index("event")
        return f"{ev[fields.index('category')]}:{ev[event_at]}".lower()
    return None


def read_bytes(path) -> bytes:
    with open_binary(path) as f:
        try:
            return f.read()
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise gzip_damage(path, exc) from None


class Event(msgspec.Struct):
    """An event object; its data stays undecoded bytes until its name says it is wanted (most
    events are not: decoding only theirs is what makes the reader fast)."""

    time: Any = None
    name: Any = None
    data: msgspec.Raw = msgspec.Raw(b"null")


class QTrace(msgspec.Struct):
    """A trace: its events (objects, or the arrays of draft-00/01/02) and what says how to read them."""

    events: list[Event | list[Any]] = []
    vantage_point: Any = None
    common_fields: Any = None
    configuration: Any = None
    event_fields: Any = None


class Document(msgspec.Struct):
    """A qlog's top: its version and its traces (JSON), or its one trace (a JSON-SEQ header)."""

    qlog_version: Any = None
    qlog_format: Any = None
    file_schema: Any = None
    traces: list[QTrace] | None = None
    trace: QTrace | None = None


_DOCUMENT = msgspec.json.Decoder(Document)
_EVENTS = msgspec.json.Decoder(list[Event])
_EVENT = msgspec.json.Decoder(Event)
ANY_JSON = msgspec.json.Decoder()

# ------------------------------------------------------------------ the data of the events read

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


class Header(msgspec.Struct, gc=False):
    """A packet event's header: the fields read, any JSON value each (UNSET: absent)."""

    packet_number: Any = UNSET
    packet_type: Any = UNSET
    dcid: Any = UNSET
    packet_size: Any = UNSET


NO_HEADER = Header()  # a header with none of the fields read: the data's own are read (draft-00/01 have none)


class Length(msgspec.Struct, gc=False):
    """A packet's ``raw`` (qlog 0.3): its length on the wire."""

    length: Any = None


class Frame(msgspec.Struct, gc=False):
    """A frame of a packet received: its type, and the ranges an ACK frame acknowledges."""

    frame_type: Any = None
    acked_ranges: list[list[Any]] | None = None


class PacketData(msgspec.Struct, gc=False):
    """What a packet event's data says of the packet (the header's fields where it has no header)."""

    header: Header | None = None
    packet_type: Any = None
    type: Any = None
    packet_number: Any = UNSET
    dcid: Any = UNSET
    packet_size: Any = UNSET


class SentData(PacketData, gc=False):
    raw: Length | None = None


class ReceivedData(PacketData, gc=False):
    frames: list[Frame] | None = None


class LostData(PacketData, gc=False):
    trigger: Any = None


class MetricsData(msgspec.Struct, gc=False):
    bytes_in_flight: Any = None
    cwnd: Any = UNSET
    congestion_window: Any = None
    smoothed_rtt: Any = None
    rtt_variance: Any = None


DATA = {SENT: SentData, RECEIVED: ReceivedData, LOST_EVENT: LostData, METRICS: MetricsData}
DATA_DECODERS = {kind: msgspec.json.Decoder(data | None) for kind, data in DATA.items()}

# ------------------------------------------------------------------ the fast decoding


@functools.lru_cache(maxsize=16)
def _typed_decoders(names: frozenset[str]) -> tuple[msgspec.json.Decoder, msgspec.json.Decoder]:
    """Decoders of a JSON document and of a list of events, an event's type chosen by its name
    among ``names``: those read decode their data (and time: not the metrics', never read); the
    others nothing (``kind`` 0)."""
    variants = []
    for number, name in enumerate(sorted(names)):
        kind = KIND_BY_NAME.get(name, 0)
        fields: list[tuple[str, Any, Any]] = [("time", Any, None)] if kind in (SENT, RECEIVED, LOST_EVENT) else []
        fields += [("data", DATA[kind] | None, None)] if kind else []
        variants.append(
            msgspec.defstruct(
                f"Event{number}",
                fields,
                tag_field="name",
                tag=name,
                namespace={"kind": kind, "trigger": None},
                gc=False,
            )
        )
    event: Any = Union[tuple(variants)]  # noqa: UP007 (a union of types made at run time)
    trace: Any = msgspec.defstruct(
        "TypedTrace", [("events", list[event], [])] + [(field, Any, None) for field in _TRACE_FIELDS]
    )
    document = msgspec.defstruct(
        "TypedDocument",
        [("qlog_version", Any, None), ("qlog_format", Any, None), ("file_schema", Any, None)]
        + [("traces", list[trace] | None, None), ("trace", trace | None, None)],
    )
    return msgspec.json.Decoder(document), msgspec.json.Decoder(list[event])


_TRACE_FIELDS = ("vantage_point", "common_fields", "configuration", "event_fields")
_UNKNOWN_NAME = re.compile(
    r"Invalid value '(.*)' - at `\$(?:\.traces\[\d+\]\.events|\.trace\.events)?\[(\d+)\]\.name`", re.S
)
_EARLY = 1000  # events: a name first met this early costs little to learn by decoding again
_MOST_NAMES = 1000


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: decoding a qlog makes millions of objects, none in a
    cycle (structs without gc support, lists of numbers), and each collection on the way walks
    them all again (a third of the time of a decoding; gc.disable's own advice for such bursts)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def typed_documents(raw: bytes) -> tuple[Any, list, str] | None:
    """The file's header, its traces with their events typed by name, and its shape; None where
    the fast decoding does not apply (``documents`` then reads the file, and names what is wrong)."""
    body = raw.lstrip(_BLANK)
    if body.startswith(RS):
        return _typed_sequence(raw, RS, "JSON-SEQ")
    doc = _learning(body, 0)
    if doc is None:
        first = body.split(b"\n", 1)[0]
        if len(first) < len(body.rstrip()) and _is_json_object(first):
            return _typed_sequence(raw, b"\n", "NDJSON")
        return None
    traces = doc.traces if doc.traces is not None else [doc.trace] if doc.trace is not None else None
    if traces is None or not _typed_header(doc) or not all(map(_typed_trace, traces)):
        return None
    return doc, traces, "JSON"


def _typed_sequence(raw: bytes, separator: bytes, shape: str) -> tuple[Any, list, str] | None:
    head, body = _sequence_parts(raw, separator)
    try:
        header = _DOCUMENT.decode(head)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    events = None if body is None else _learning(body, 1)
    trace = header.trace or QTrace()
    if events is None or not _typed_header(header) or not _typed_trace(trace):
        return None
    return header, [msgspec.structs.replace(trace, events=events)], shape


def _typed_header(header: Document) -> bool:
    try:
        _check_header(None, header, b"")
    except TraceError:
        return False
    return True


def _typed_trace(trace) -> bool:
    """A trace the fast decoding reads: events as objects, times not deltas (their sum needs every event's)."""
    common = trace.common_fields if isinstance(trace.common_fields, dict) else {}
    return not trace.event_fields and str(common.get("time_format") or "").lower() != "delta"


def _learning(text: bytes, which: int) -> Any:
    """``text`` decoded by ``_typed_decoders`` (``which``: 0 a document, 1 a list of events),
    the event names learned on the way: one met among the first events costs a decoding of
    those again; the first met later, one scan of the text for every name left; one met after
    that (a name the scan cannot see: spelled with escapes), the general decoding. None where
    it does not decode so."""
    names = frozenset(KIND_BY_NAME)
    scanned = False
    for _ in range(_MOST_NAMES):
        try:
            return _typed_decoders(names)[which].decode(text)
        except msgspec.ValidationError as exc:
            found = _UNKNOWN_NAME.fullmatch(str(exc))
            if found is None or found[1] in names:
                return None
            late = int(found[2]) > _EARLY
            if late and scanned:
                return None
            names |= {found[1]}
            if late:
                names, scanned = _names_in(text, names), True
        except (msgspec.DecodeError, UnicodeDecodeError):
            return None
    return None


def _names_in(text: bytes, known: frozenset[str]) -> frozenset[str]:
    """``known`` and every other string value of a key "name" in ``text`` (a superset of its
    event names): a scan that stops only at a name not yet known."""
    names = set(known)
    at = 0
    while len(names) < _MOST_NAMES:
        spelled = b"|".join(re.escape(name.encode()) for name in sorted(names, key=len, reverse=True))
        found = re.compile(rb'"name"\s*:\s*"(?!(?:' + spelled + rb')")([^"\\]*)"').search(text, at)
        if found is None:
            break
        names.add(found[1].decode("utf-8", "replace"))
        at = found.end()
    return frozenset(names)


def documents(path, raw: bytes) -> tuple[Document, list[QTrace], str]:
    """The file's header and its traces, and its shape (JSON, JSON-SEQ, NDJSON)."""
    body = raw.lstrip(_BLANK)
    if body.startswith(RS):
        header, events = _sequence(path, raw, RS)
        shape = "JSON-SEQ"
    else:
        try:
            doc = _DOCUMENT.decode(body)
        except msgspec.ValidationError as exc:  # read as far as a value of a wrong type: the rest is unread
            try:
                whole = ANY_JSON.decode(body)
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
    trace = msgspec.structs.replace(header.trace or QTrace(), events=events)
    return header, [trace], shape


def _is_json_object(text: bytes) -> bool:
    try:
        return isinstance(ANY_JSON.decode(text), dict)
    except msgspec.DecodeError:
        return False


def _error_at(exc: msgspec.DecodeError, end: int) -> int:
    """Where msgspec says the JSON went wrong: its "(byte N)", or the end of a text cut short."""
    found = re.search(r"\(byte (\d+)\)", str(exc))
    return int(found.group(1)) if found else end


def _sequence_parts(raw: bytes, separator: bytes) -> tuple[bytes, bytes | None]:
    """A JSON text sequence's (RFC 7464; ``separator`` 0x1E) or NDJSON's (a newline) first
    record, its header, and the records after it as one JSON array (None: there are none)."""
    first = raw.index(separator) if separator == RS else 0
    second = raw.find(separator, first + 1)
    while second >= 0 and not raw[first:second].strip(_BLANK_RS):  # blank records before the header
        first, second = second, raw.find(separator, second + 1)
    head = raw[first : second if second >= 0 else len(raw)].strip(_BLANK_RS)
    if second < 0:
        return head, None
    end = len(raw)
    while end > second + 1 and raw[end - 1] in _BLANK_COMMA + separator:  # no blank record at the end
        end -= 1
    body = b"".join((b"[", memoryview(raw)[second + 1 : end], b"]"))
    return head, body.replace(separator, b",")


def _sequence(path, raw: bytes, separator: bytes) -> tuple[Document, list]:
    """The header and the events of a JSON text sequence or of NDJSON: the events parsed as one
    JSON array; where that fails, record by record, to name the bad one."""
    head, body = _sequence_parts(raw, separator)
    try:
        header = _DOCUMENT.decode(head)
    except msgspec.DecodeError:
        header = None
    if header is not None and body is not None:
        _check_header(path, header, head)
        try:
            return header, _EVENTS.decode(body)
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
                _check_header(path, any_or_none(text), b"")
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


def any_or_none(text: bytes) -> Any:
    try:
        return ANY_JSON.decode(text)
    except msgspec.DecodeError:
        return None


def _records(raw: bytes, separator: bytes) -> list[tuple[int, bytes]]:
    """The non-blank records of a sequence, each with the offset of its separator (NDJSON: of its line)."""
    out = []
    start = raw.index(separator) if separator == RS else 0
    while start < len(raw):
        end = raw.find(separator, start + 1)
        end = len(raw) if end < 0 else end
        text = raw[start:end].strip(_BLANK_RS)
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
    if isinstance(header, msgspec.Struct) and header.qlog_version is header.file_schema is header.qlog_format is None:  # type: ignore[attr-defined]
        header = any_or_none(text)
    if isinstance(header, msgspec.Struct):  # a Document, or typed_documents' own
        version, schema, named = header.qlog_version, header.file_schema, header.qlog_format  # type: ignore[attr-defined]
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
