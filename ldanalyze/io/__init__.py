"""Readers: one module per trace format, all returning a :class:`~ldanalyze.packets.Trace`.

``read_trace`` picks the reader from the file's content; options that a reader does not
take are refused rather than ignored.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from ..errors import UsageError
from ..packets import Trace
from .capture.fields import Field, FieldSpec
from .capture.pcap import decode_capture, list_flows, read_capture
from .detect import FORMATS, NS2_WIRED, NS2_WIRELESS, PCAP, PCAPNG, QLOG, detect_format
from .ns2.wired import read_ns2_wired
from .ns2.wireless import read_ns2_wireless

READERS: dict[str, Callable[..., Trace]] = {
    NS2_WIRED: read_ns2_wired,
    **dict.fromkeys(NS2_WIRELESS, read_ns2_wireless),
    PCAP: read_capture,
    PCAPNG: read_capture,
}  # and QLOG's, read_qlog, imported on first use (__getattr__)


def __getattr__(name: str) -> Any:
    """``read_qlog``, imported when first asked for: msgspec and the qlog event schemas take
    10-25 ms to import, which a command that reads no qlog does not pay (tests/test_imports.py)."""
    if name == "read_qlog":
        from .qlog import read_qlog

        return read_qlog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_trace(path: str | os.PathLike, format: str = "auto", **options: Any) -> Trace:
    """Read any supported trace into a Trace (PacketTable + RTT samples + metadata)."""
    fmt = detect_format(path) if format == "auto" else format
    if fmt not in READERS and fmt != QLOG:
        raise UsageError(f"unknown format {format!r}; choose auto or one of {', '.join(FORMATS)}")
    reader = __getattr__("read_qlog") if fmt == QLOG else READERS[fmt]
    accepted = set(inspect.signature(reader).parameters) - {"path"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise UsageError(f"{os.fspath(path)} is {fmt}: that reader takes no option(s) {', '.join(unknown)}")
    return reader(path, **options)


__all__ = [
    "read_trace",
    "detect_format",
    "FORMATS",
    "read_capture",
    "read_qlog",
    "decode_capture",
    "list_flows",
    "Field",
    "FieldSpec",
]
