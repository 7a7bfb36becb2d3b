"""A capture's bytes, a window at a time, and which container they hold.

``ByteWindow`` hands the record walk (``walk.py``) a capture's bytes, plain or gzip (detected
by content), a window at a time: a memory map of a plain file whose pages behind the window are
given back, or one reusable buffer for a gzip stream, inflated as it goes (``_Gunzip`` hands out
every byte it could inflate before a stream cut short). Memory does not grow with the file.
``capture_format`` tells a pcap or pcapng file by its first bytes (of a gzip file, only those
are inflated); ``container`` tells the window's, refusing what the walk cannot read.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib

import numpy as np

from ...errors import TraceError

PCAP = "pcap"
PCAPNG = "pcapng"
CAPTURE_FORMATS = (PCAP, PCAPNG)

GZIP_MAGIC = b"\x1f\x8b"
PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_KUZNETZOV = 0xA1B2CD34
PCAPNG_SHB = 0x0A0D0D0A


class ByteWindow:
    """The capture's bytes, a window at a time: a memory map of a plain file, whose pages
    behind the window are released, or one reusable buffer refilled from a gzip stream.

    ``data[:filled]`` (read-only) holds the bytes from file offset ``start`` on.
    """

    def __init__(self, path: str, chunk_bytes: int) -> None:
        self.path = path
        self.chunk = chunk_bytes
        try:
            self.raw = open(path, "rb")
        except OSError as exc:
            raise TraceError(path, f"cannot open: {exc.strerror or exc}") from None
        self.gzip = self.raw.read(2) == GZIP_MAGIC
        self.raw.seek(0)
        self.size = os.fstat(self.raw.fileno()).st_size
        self.start = 0
        self.filled = 0
        self.released = 0  # memory map: pages before this offset were given back
        self.ended = False
        self.gzip_cut_at: int | None = None
        if self.gzip or self.size == 0:
            self.map = None
            self.file = _Gunzip(self.raw) if self.gzip else self.raw
            self._buffer(np.empty(chunk_bytes, np.uint8))
        else:
            self.map = mmap.mmap(self.raw.fileno(), 0, access=mmap.ACCESS_READ)
            self.data = np.frombuffer(self.map, np.uint8)

    def interpreted_decode_s(self) -> float:
        """What decoding the whole capture would take in the interpreter: about 100 us a
        record, counting a record per 100 bytes (gzip: per 30 compressed bytes)."""
        return self.size / (30 if self.gzip else 100) * 100e-6

    def _buffer(self, buf: np.ndarray) -> None:
        self.buf = buf
        self.data = buf.view()
        self.data.flags.writeable = False  # one kernel signature for buffers and maps

    def __enter__(self) -> ByteWindow:
        return self

    def __exit__(self, *exc) -> None:
        self.data = self.buf = None  # type: ignore[assignment]  # released: never None while open
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # a view is still alive: the map closes when it goes
                pass
        else:
            self.file.close()
        self.raw.close()

    def refill(self, pos: int, need: int = 0) -> int:
        """Make the bytes from ``pos`` on available, at least ``need`` of them (and a chunk
        more when there are); those before ``pos`` may go. Returns their new position;
        ``ended`` says whether the input had nothing more."""
        self.ended = False
        if self.map is not None:
            if self.filled == self.size:
                self.ended = True
                return pos
            behind = (pos - pos % mmap.PAGESIZE) - self.released
            if behind > 0:
                self.map.madvise(mmap.MADV_DONTNEED, self.released, behind)
                self.released += behind
            self.filled = min(self.size, max(pos + need, self.filled + self.chunk))
            return pos
        rest = self.filled - pos
        if need > self.buf.shape[0]:
            bigger = np.empty(max(need, 2 * self.buf.shape[0]), np.uint8)
            bigger[:rest] = self.buf[pos : self.filled]
            self._buffer(bigger)
        elif pos:
            self.buf[:rest] = self.buf[pos : self.filled]
        self.start += pos
        self.filled = rest
        view = self.buf.data  # a memoryview of it (numpy types ndarray as a buffer from Python 3.12 only)
        got = 0
        while self.filled < self.buf.shape[0]:
            try:
                k = self.file.readinto(view[self.filled :])
            except zlib.error as exc:
                raise TraceError(self.path, f"corrupt gzip stream ({exc})", offset=self.start + self.filled) from None
            if not k:
                if isinstance(self.file, _Gunzip) and self.file.cut:
                    self.gzip_cut_at = self.start + self.filled
                break
            self.filled += k
            got += k
        self.ended = got == 0
        return 0

    def uint(self, pos: int, size: int, big: bool) -> int:
        return int.from_bytes(self.data[pos : pos + size].tobytes(), "big" if big else "little")


class _Gunzip:
    """A gzip stream (one or more members), inflated on demand in bounded pieces.

    Unlike Python's gzip module, it hands out every byte it could inflate before a stream that was
    cut short ends; ``cut`` then says so.
    """

    PIECE = 1 << 22  # most bytes inflated at once

    def __init__(self, raw) -> None:
        self.raw = raw
        self.inflate = zlib.decompressobj(31)
        self.input = b""  # compressed bytes not yet inflated
        self.out = memoryview(b"")
        self.cut = False

    def readinto(self, view) -> int:
        while not self.out:
            if not self._inflate_more():
                return 0
        n = min(len(view), len(self.out))
        view[:n] = self.out[:n]
        self.out = self.out[n:]
        return n

    def _inflate_more(self) -> bool:
        if not self.input:
            self.input = self.raw.read(1 << 20)
            if not self.input:
                self.cut = not self.inflate.eof
                return False
        if self.inflate.eof:  # a member ended: another may follow; anything else is ignored
            if self.input[:2] != GZIP_MAGIC:
                self.input = b""
                return False
            self.inflate = zlib.decompressobj(31)
        self.out = memoryview(self.inflate.decompress(self.input, self.PIECE))
        self.input = self.inflate.unconsumed_tail or self.inflate.unused_data
        return True

    def close(self) -> None:
        pass


def capture_format(path: str | os.PathLike) -> str | None:
    """``"pcap"`` or ``"pcapng"`` when the file (plain or gzip) starts like one, else None.
    Of a gzip file, only its first bytes are inflated, not one of the reader's 4 MB pieces: a
    batch asks this of every file it is given."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
            if magic[:2] == GZIP_MAGIC:
                magic = zlib.decompressobj(31).decompress(magic + f.read(1 << 16), 4)
    except (OSError, zlib.error):
        return None
    if len(magic) < 4:
        return None
    little, big = struct.unpack("<I", magic)[0], struct.unpack(">I", magic)[0]
    if little in (PCAP_MAGIC_US, PCAP_MAGIC_NS) or big in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        return PCAP
    if little == PCAPNG_SHB:
        return PCAPNG
    return None


def container(path: str, stream: ByteWindow) -> str:
    magic = stream.uint(0, 4, False)
    if magic == PCAPNG_SHB:
        return PCAPNG
    if PCAP_MAGIC_KUZNETZOV in (magic, stream.uint(0, 4, True)):
        raise TraceError(path, "a Kuznetzov-patched pcap (magic 0xa1b2cd34) is not supported", offset=0)
    if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS) or stream.uint(0, 4, True) in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        return PCAP
    raise TraceError(
        path,
        f"not a pcap or pcapng capture: bad magic number 0x{stream.uint(0, 4, True):08x} "
        "(pcap starts with a1b2c3d4 or a1b23c4d in either byte order, pcapng with 0a0d0d0a)",
        offset=0,
    )
