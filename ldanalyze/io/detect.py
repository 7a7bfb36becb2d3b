"""Which format a trace file is in, decided by its content (never by its name)."""

from __future__ import annotations

import gzip
import os
import zlib

from ..errors import TraceError
from .capture.source import PCAP, PCAPNG, capture_format
from .text import first_lines, open_binary

NS2_WIRED = "ns2-wired"
NS2_WIRELESS_OLD = "ns2-wireless-old"
NS2_WIRELESS_NEW = "ns2-wireless-new"
NS2_WIRELESS_TAGGED = "ns2-wireless-tagged"
NS2_WIRELESS = (NS2_WIRELESS_OLD, NS2_WIRELESS_NEW, NS2_WIRELESS_TAGGED)
QLOG = "qlog"
FORMATS = (NS2_WIRED, *NS2_WIRELESS, PCAP, PCAPNG, QLOG)

_WIRED_EVENTS = {"+", "-", "r", "d"}
_WIRELESS_EVENTS = {"s", "r", "f", "D", "d"}
_TAGGED_EVENTS = {"+", "h", "r", "d"}


def line_format(line: str) -> str | None:
    """The format one trace line belongs to, or None when it fits none."""
    fields = line.split()
    if len(fields) < 3:
        return None
    if fields[1] == "-t" and fields[0] in _WIRELESS_EVENTS | {"M", "N"}:
        return NS2_WIRELESS_NEW
    if fields[0] in _WIRELESS_EVENTS | {"M", "N"} and fields[2].startswith("_") and fields[2].endswith("_"):
        return NS2_WIRELESS_OLD
    if fields[0] in _TAGGED_EVENTS and fields[2] == "-s" and "-k" in fields:
        return NS2_WIRELESS_TAGGED
    if fields[0] in _WIRED_EVENTS and len(fields) == 12:
        return NS2_WIRED
    return None


def old_movement(line: str) -> bool:
    """An old-format wireless trace's node movement line (``M time node (x, y, z), (dx, dy),
    speed``), which ns-2 writes for every node at each ``setdest``: with 20 nodes or more such
    lines can fill the head of a trace. Not a packet event, so ``line_format`` leaves it out."""
    fields = line.split()
    return len(fields) >= 4 and fields[0] == "M" and fields[2].isdigit() and fields[3].startswith("(")


def json_text(line: str) -> bool:
    """A JSON document, JSON text sequence (RFC 7464: a record separator 0x1E first) or NDJSON:
    the first non-blank character opens an object (no trace line of ns-2 does)."""
    return line.lstrip("\ufeff\x1e \t").startswith("{")


def _head(path: str | os.PathLike) -> str:
    """The first bytes of the (decompressed) file; "" where they do not decompress (first_lines
    then says why)."""
    with open_binary(path) as f:
        try:
            return f.read(256).decode("utf-8", "replace")
        except (EOFError, zlib.error, gzip.BadGzipFile):
            return ""


def detect_format(path: str | os.PathLike) -> str:
    """A capture by its magic number, else sniff the first lines; raise a TraceError when no
    known format fits."""
    capture = capture_format(path)
    if capture is not None:
        return capture
    if json_text(_head(path)):
        return QLOG  # io/qlog tells a qlog from other JSON, and says what a JSON file lacks
    lines = first_lines(path)
    if not lines:
        raise TraceError(path, "the trace is empty")
    votes: dict[str, int] = {}
    for line in lines:
        fmt = line_format(line) or (NS2_WIRELESS_OLD if old_movement(line) else None)
        if fmt is not None:
            votes[fmt] = votes.get(fmt, 0) + 1
    if not votes:
        if "\x00" in lines[0] or "\ufffd" in lines[0]:  # binary: a capture whose header is damaged, say
            with open_binary(path) as f:
                first = f.read(4)
            raise TraceError(
                path,
                f"unknown trace format: binary, but not a pcap or pcapng capture (it starts "
                f"with {first.hex()}, no capture's magic number: a1b2c3d4 or a1b23c4d in either "
                "byte order, or 0a0d0d0a)",
                offset=0,
            )
        raise TraceError(
            path,
            "unknown trace format: neither an ns-2 wired trace (ev time from to type size flags "
            "fid src dst seq uid) nor an ns-2 wireless trace (old, new or tagged format)",
            line=1,
            text=lines[0],
        )
    return max(votes, key=votes.__getitem__)
