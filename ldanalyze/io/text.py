"""Reading text traces in bounded memory: plain or gzip (detected by content), in blocks.

A block always ends at a line boundary, so a block can be parsed on its own. The fast path
never counts lines; when something is wrong, ``locate_row`` finds the line number again.
"""

from __future__ import annotations

import gzip
import io
import mmap
import os
import zlib
from collections.abc import Iterator

import pyarrow as pa

from ..errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_binary(path: str | os.PathLike) -> gzip.GzipFile | io.BufferedReader:
    """Open a file for reading bytes, decompressing gzip when its magic says so."""
    try:
        gz = is_gzip(path)
    except OSError as exc:
        raise TraceError(path, f"cannot open: {exc.strerror or exc}") from None
    return gzip.open(path, "rb") if gz else open(path, "rb")


def iter_blocks(path: str | os.PathLike, block_bytes: int) -> Iterator[tuple[pa.Buffer | bytes, int]]:
    """Yield ``(block, offset)``: buffers that end at a line boundary, and where they start.

    ``offset`` counts bytes of the (decompressed) text. Plain files are memory-mapped and
    blocks are zero-copy views; gzip files are decompressed one block at a time. A final
    line without a newline is yielded as it is. A truncated or corrupt gzip stream raises a
    TraceError giving the offset where the damage starts.
    """
    if is_gzip(path):
        yield from _gzip_blocks(path, block_bytes)
        return
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mm)
    start = 0
    done = (0, 0)  # the block before the last one: parsed by the time the next is asked for
    while start < size:
        end = min(start + block_bytes, size)
        if end < size:
            cut = mm.rfind(b"\n", max(start, end - (1 << 16)), end)
            if cut < 0:
                cut = mm.rfind(b"\n", start, end)
            end = cut + 1 if cut >= 0 else _next_newline(mm, end, size)
        yield pa.py_buffer(view[start:end]), start
        # let the kernel drop the file pages of a parsed block from this process's resident set
        lo = done[0] - done[0] % mmap.PAGESIZE
        if done[1] > lo:
            mm.madvise(mmap.MADV_DONTNEED, lo, done[1] - lo)
        done = (start, end)
        start = end
    # the map closes when the last view of it is gone (a caller may still hold a block)


def _next_newline(mm: mmap.mmap, start: int, size: int) -> int:
    cut = mm.find(b"\n", start)
    return size if cut < 0 else cut + 1


def _gzip_blocks(path, block_bytes):
    offset = 0
    carry = b""
    with gzip.open(path, "rb") as f:
        while True:
            try:
                chunk = f.read(block_bytes)
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise gzip_damage(path, exc) from None
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            yield data[:cut], offset
            offset += cut
            carry = data[cut:]
    if carry:
        yield carry, offset


def gzip_damage(path: str | os.PathLike, exc: Exception) -> TraceError:
    """The error for a damaged gzip file, saying where its text stops: after the last whole line
    that decompresses, at which compressed byte (the reads that fail are blocks of megabytes,
    whose own position said nothing). Error path only: it decompresses the file again."""
    size = os.path.getsize(path)
    lines, consumed, damage = _inflated_lines(path, size)
    if damage and "check" in damage:  # the trailer's CRC-32 or length: the text is whole but wrong somewhere
        lines = _inflated_lines(path, size - 8)[0]  # without the trailer, which zlib checks
        message = f"corrupt gzip data: its {lines} lines decompress, but its checksum does not match ({exc})"
        return TraceError(path, message)
    what = "corrupt gzip data" if damage else "the file is cut short"
    where = f"after line {lines}, at compressed byte {consumed:,} of {size:,}"
    return TraceError(path, f"{what}: its text stops {where} ({damage or exc})", line=lines + 1)


def _inflated_lines(path: str | os.PathLike, size: int) -> tuple[int, int, str | None]:
    """Lines of the first ``size`` bytes of a gzip file that decompress, the compressed bytes
    taken, and zlib's complaint, if any. Read in small pieces: a piece that fails loses its
    output."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    lines = consumed = 0
    with open(path, "rb") as f:
        while not inflate.eof and consumed < size:
            chunk = f.read(min(1 << 12, size - consumed))
            if not chunk:
                break
            try:
                lines += inflate.decompress(chunk).count(b"\n")
            except zlib.error as error:
                return lines, consumed, str(error)
            consumed += len(chunk) - len(inflate.unused_data)
    return lines, consumed, None


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line, decoded leniently; gzip damage is a TraceError."""
    line_no = 0
    with open_binary(path) as f:
        try:
            for line_no, raw in enumerate(f, 1):
                yield line_no, raw.decode("utf-8", "replace").rstrip("\r\n")
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise gzip_damage(path, exc) from None


def locate_row(path: str | os.PathLike, offset: int, row: int) -> tuple[int, str]:
    """Line number and text of the ``row``-th parsed row of the block starting at ``offset``.

    The CSV parser skips empty lines (and only those), so rows and lines differ once a trace
    has any. Used on the error path only: it re-reads the file from its start.
    """
    line_no = 1
    seen = -1
    position = 0
    with open_binary(path) as f:
        for raw in f:
            if position >= offset:
                body = raw.rstrip(b"\n")
                if body not in (b"", b"\r"):
                    seen += 1
                    if seen == row:
                        return line_no, body.decode("utf-8", "replace")
            position += len(raw)
            line_no += 1
    raise IndexError(row)


def first_lines(path: str | os.PathLike, n: int = 20, max_bytes: int = 1 << 16) -> list[str]:
    """The first ``n`` non-empty lines (decoded leniently), for format sniffing."""
    with open_binary(path) as f:
        try:
            head = f.read(max_bytes)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise gzip_damage(path, exc) from None
    lines = head.decode("utf-8", "replace").splitlines()
    if len(head) == max_bytes and lines:
        lines = lines[:-1]  # the last one may be cut
    return [ln for ln in lines if ln.strip()][:n]
