"""A qlog file's bytes into its header and traces: JSON (draft-00/01/02, 0.3/0.4), JSON-SEQ
(RFC 7464) and NDJSON, told apart by content; msgspec decodes them typed, so that an event's data
stays undecoded bytes until its name says it is wanted. Bad input is a TraceError naming the
byte, line or record."""

from __future__ import annotations

import gzip
import re
import zlib
from typing import Any

import msgspec

from ...errors import TraceError
from ..text import gzip_damage, open_binary

RS = b"\x1e"
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


def documents(path, raw: bytes) -> tuple[Document, list[QTrace], str]:
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


def _sequence(path, raw: bytes, separator: bytes) -> tuple[Document, list]:
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
    if isinstance(header, Document) and header.qlog_version is header.file_schema is header.qlog_format is None:
        header = any_or_none(text)
    if isinstance(header, Document):
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
