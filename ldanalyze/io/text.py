"""Reading text traces in bounded memory: plain or gzip (detected by content), in blocks.

A block always ends at a line boundary, so a block can be parsed on its own; the caller is
told which line number each block starts at, so errors can name the line.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from ..errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_BLOCK_BYTES = 64 << 20


def is_gzip(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """Open a file for reading bytes, decompressing gzip when its magic says so."""
    try:
        gz = is_gzip(path)
    except OSError as exc:
        raise TraceError(path, f"cannot open: {exc.strerror or exc}") from None
    return gzip.open(path, "rb") if gz else open(path, "rb")


def iter_blocks(
    path: str | os.PathLike, block_bytes: int = DEFAULT_BLOCK_BYTES
) -> Iterator[tuple[bytes, int]]:
    """Yield ``(block, first_line_number)``; every block ends with a newline.

    A final line without a newline gets one. A truncated or corrupt gzip stream raises a
    TraceError naming the last complete line that was read.
    """
    line_no = 1
    carry = b""
    with open_binary(path) as f:
        while True:
            try:
                chunk = f.read(block_bytes)
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                complete = line_no + carry.count(b"\n") - 1
                raise TraceError(
                    path,
                    f"corrupt or truncated gzip stream after line {complete} ({exc})",
                    line=complete + 1,
                ) from None
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            block, carry = data[:cut], data[cut:]
            yield block, line_no
            line_no += block.count(b"\n")
    if carry:
        yield carry + b"\n", line_no


def first_lines(path: str | os.PathLike, n: int = 20, max_bytes: int = 1 << 16) -> list[str]:
    """The first ``n`` non-empty lines (decoded leniently), for format sniffing."""
    with open_binary(path) as f:
        try:
            head = f.read(max_bytes)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise TraceError(path, f"corrupt or truncated gzip stream ({exc})", line=1) from None
    lines = head.decode("utf-8", "replace").splitlines()
    if len(head) == max_bytes and lines:
        lines = lines[:-1]  # the last one may be cut
    return [ln for ln in lines if ln.strip()][:n]


def line_of_row(block: bytes, first_line: int, row: int) -> tuple[int, str]:
    """Line number and text of the ``row``-th non-empty line of a block.

    The CSV parser skips empty lines (and only those), so row numbers and line numbers
    differ once a trace has any.
    """
    seen = -1
    for i, raw in enumerate(block.split(b"\n")):
        if raw not in (b"", b"\r"):
            seen += 1
            if seen == row:
                return first_line + i, raw.decode("utf-8", "replace")
    raise IndexError(row)
