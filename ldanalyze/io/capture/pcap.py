"""pcap and pcapng captures: a numba walk over the file into per-record columns, and Traces.

``decode_capture`` reads a capture (plain or gzip, detected by content) a window at a time
(a memory map of a plain file whose pages behind the window are given back; one reusable
buffer for a gzip stream, inflated as it goes), and a numba kernel walks the records of each
window, decoding every frame (``linklayer.decode_frame``) into a packed record array: capture
time (integer ns), flow id, IP length and ID, TCP fields, a payload hash and the first payload
bytes. Memory grows with the packets (about 90 bytes each), not with the file. That array is the
base for everything else: ``list_flows`` summarises it per flow, ``read_capture`` turns
one-point captures into a :class:`~ldanalyze.packets.Trace` (see ``payload.py`` for where
sequence numbers and send times come from), and matching across captures can join on its
columns (flow 5-tuple, ``ip_id``, ``payload_hash``).

Containers:

* pcap: microsecond (0xa1b2c3d4) and nanosecond (0xa1b23c4d) magic, either byte order.
* pcapng: sections (SHB) in either byte order, one after another; interfaces (IDB) with their
  own link type, snap length, ``if_tsresol`` (a power of 10 or of 2) and ``if_tsoffset``;
  enhanced (EPB), simple (SPB) and obsolete (PB) packet blocks. A simple packet block has no
  timestamp and no interface: it belongs to the section's first interface, is cut to that
  interface's snap length, and its time is NaN (``ts_ns`` = ``NO_TIME``). Other blocks are
  skipped and counted; types that are not in the specification get a warning.

Bad input raises :class:`~ldanalyze.errors.TraceError` naming the file and the byte offset
(of the decompressed stream for gzip files). A capture that ends inside a record (a capture
program killed mid-write) or a gzip stream cut short keeps the records before it, with a
:class:`CaptureWarning` saying where. Frames that cannot be decoded are counted by cause in
``Capture.counts``; those too short for their headers are also warned about.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import mmap
import os
import struct
import warnings
import zlib
from collections.abc import Iterable

import numpy as np
import pandas as pd
from numba import njit

from ...clocks import PLAUSIBLE_SKEW_PPM, remove_skew
from ...errors import TraceError, UsageError
from ...packets import Trace, empty_rtt
from ...tiering import pick
from . import payload as payloads
from .linklayer import (
    LINK_NAMES,
    NO_TIME,
    S_TOO_SHORT,
    S_UNSUPPORTED_LINK,
    STATUS_NAMES,
    decode_frame,
    record_dtype,
    rehash_flows,
    u16,
    u32,
)

PCAP = "pcap"
PCAPNG = "pcapng"
CAPTURE_FORMATS = (PCAP, PCAPNG)

GZIP_MAGIC = b"\x1f\x8b"
PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_KUZNETZOV = 0xA1B2CD34
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D
BLOCK_PB, BLOCK_IDB, BLOCK_SPB, BLOCK_EPB = 2, 1, 3, 6
# block types the pcapng specification defines that carry no packets: skipped quietly
KNOWN_BLOCKS = {
    4: "name resolution",
    5: "interface statistics",
    7: "IRIG timestamp",
    8: "ARINC 429",
    9: "systemd journal export",
    10: "decryption secrets",
    0x101: "hone project machine info",
    0x102: "hone project connection event",
    0x201: "sysdig machine info",
    0x80000001: "sysdig event",
    0x00000BAD: "custom",
    0x40000BAD: "custom",
}

CHUNK_BYTES = 16 << 20  # input window: memory does not grow with the file
BLOCK_RECORDS = 1 << 22  # records per output block (np.empty: untouched pages cost nothing)
MAX_CAPLEN = 64 << 20  # a record claiming more is taken as corruption
DEFAULT_HEAD_BYTES = 16
RTP_HEAD_BYTES = 48  # an RTP header, its CSRCs and extensions, and the first payload words (RTX)
SKEW_CHOICES = ("remove", "keep")

# kernel stop codes and problems
STOP_INPUT, STOP_FULL, STOP_GROW, STOP_BLOCK, STOP_CORRUPT = 1, 2, 3, 4, 5
P_CAPLEN, P_BLOCK_LENGTH, P_TRAILER, P_IFACE, P_NO_IFACE, P_BLOCK_CAPLEN = 1, 2, 3, 4, 5, 6
# interface table columns for the pcapng kernel
I_LINKTYPE, I_SNAPLEN, I_RES_BASE, I_RES_EXP, I_OFFSET_NS = range(5)
_POW10 = np.array([10**k for k in range(19)], dtype=np.int64)


class CaptureWarning(UserWarning):
    """Something in a capture was skipped or is doubtful; the message names file and byte."""


@dataclasses.dataclass
class Capture:
    """A decoded capture: one record per captured frame, the flow table, what was skipped.

    ``records`` is a packed array (``linklayer.record_dtype``): ``records["flow"]`` indexes
    ``flows`` (one row per 5-tuple and direction: ``label, ip_ver, proto, src, sport, dst,
    dport``), -1 for frames without a flow. ``counts`` holds records by decode status (see
    ``linklayer.STATUS_NAMES``) and skipped pcapng blocks; ``notes`` the warnings issued.
    """

    path: str
    format: str
    records: np.ndarray
    flows: pd.DataFrame
    interfaces: pd.DataFrame
    counts: dict
    notes: list[str]

    def times(self) -> np.ndarray:
        """Capture times in seconds since the epoch; NaN for records without one (SPB)."""
        ts = self.records["ts_ns"]
        seconds = ts / 1e9
        seconds[ts == NO_TIME] = np.nan  # in place: np.where's second array took three times as long
        return seconds


# -- kernels -----------------------------------------------------------------------------------
@njit(cache=True)
def _start_record(out, n, ts_ns, offset, iface, caplen, wirelen):
    r = out[n]
    r["ts_ns"] = ts_ns
    r["offset"] = offset
    r["iface"] = iface
    r["caplen"] = caplen
    r["wirelen"] = max(wirelen, caplen)


@njit(cache=True)
def _no_room(out, n, slots, n_flows):
    """STOP_FULL or STOP_GROW when one more record or flow would not fit, else 0."""
    if n >= out.shape[0]:
        return STOP_FULL
    if 2 * (n_flows + 1) > slots.shape[0]:
        return STOP_GROW
    return 0


@njit(cache=True)
def walk_pcap(b, pos, end, base, big, frac_ns, linktype, max_caplen, out, heads, n, keys, slots, n_flows):
    """Decode pcap records from ``b[pos:end]`` until input, output or flow table runs out.

    Returns ``(pos, n, n_flows, stop, detail)``: where it stopped and why (``STOP_*``);
    ``detail`` is the bytes the next record needs (``STOP_INPUT``) or a ``P_*`` problem.
    """
    while True:
        full = _no_room(out, n, slots, n_flows)
        if full:
            return pos, n, n_flows, full, 0
        if end - pos < 16:
            return pos, n, n_flows, STOP_INPUT, 16
        caplen = u32(b, pos + 8, big)
        if caplen > max_caplen:
            return pos, n, n_flows, STOP_CORRUPT, P_CAPLEN
        if end - pos - 16 < caplen:
            return pos, n, n_flows, STOP_INPUT, 16 + caplen
        ts = u32(b, pos, big) * 1_000_000_000 + u32(b, pos + 4, big) * frac_ns
        wirelen = u32(b, pos + 12, big)
        _start_record(out, n, ts, base + pos, 0, caplen, wirelen)
        n_flows = decode_frame(b, pos + 16, caplen, wirelen, linktype, out, heads, n, keys, slots, n_flows)
        n += 1
        pos += 16 + caplen


@njit(cache=True)
def ticks_to_ns(ticks, base, exp):
    """A pcapng timestamp in units of base**-exp seconds, as integer nanoseconds."""
    if base == 10:
        if exp <= 9:
            return np.int64(ticks) * _POW10[9 - exp]
        return np.int64(ticks // np.uint64(_POW10[exp - 9]))
    whole = np.int64(ticks >> np.uint64(exp))
    frac = ticks & ((np.uint64(1) << np.uint64(exp)) - np.uint64(1))
    if exp <= 34:
        return whole * 1_000_000_000 + np.int64((frac * np.uint64(1_000_000_000)) >> np.uint64(exp))
    return whole * 1_000_000_000 + np.int64(np.float64(frac) * 1e9 / 2.0**exp)


@njit(cache=True)
def walk_pcapng(b, pos, end, base, big, ifaces, iface_base, out, heads, n, keys, slots, n_flows):
    """Decode pcapng packet blocks (EPB, SPB, PB) from ``b[pos:end]``.

    Stops (``STOP_BLOCK``) at any other block, which the caller handles; otherwise as
    ``walk_pcap``. ``ifaces`` holds the section's interfaces (``I_*`` columns).
    """
    n_ifaces = ifaces.shape[0]
    while True:
        full = _no_room(out, n, slots, n_flows)
        if full:
            return pos, n, n_flows, full, 0
        if end - pos < 12:
            return pos, n, n_flows, STOP_INPUT, 12
        btype = u32(b, pos, big)
        if btype == PCAPNG_SHB:  # its byte order may differ: the caller reads it
            return pos, n, n_flows, STOP_BLOCK, 0
        blen = u32(b, pos + 4, big)
        if blen < 12 or blen & 3:
            return pos, n, n_flows, STOP_CORRUPT, P_BLOCK_LENGTH
        if end - pos < blen:
            return pos, n, n_flows, STOP_INPUT, blen
        if u32(b, pos + blen - 4, big) != blen:
            return pos, n, n_flows, STOP_CORRUPT, P_TRAILER
        if btype == BLOCK_EPB or btype == BLOCK_PB:
            if blen < 32:
                return pos, n, n_flows, STOP_CORRUPT, P_BLOCK_LENGTH
            iface = u32(b, pos + 8, big) if btype == BLOCK_EPB else u16(b, pos + 8, big)
            if iface >= n_ifaces:
                return pos, n, n_flows, STOP_CORRUPT, P_IFACE
            caplen = u32(b, pos + 20, big)
            if 32 + caplen > blen:
                return pos, n, n_flows, STOP_CORRUPT, P_BLOCK_CAPLEN
            wirelen = u32(b, pos + 24, big)
            ticks = (np.uint64(u32(b, pos + 12, big)) << np.uint64(32)) | np.uint64(u32(b, pos + 16, big))
            ts = ticks_to_ns(ticks, ifaces[iface, I_RES_BASE], ifaces[iface, I_RES_EXP]) + ifaces[iface, I_OFFSET_NS]
            data = pos + 28
        elif btype == BLOCK_SPB:
            if n_ifaces == 0:
                return pos, n, n_flows, STOP_CORRUPT, P_NO_IFACE
            if blen < 16:
                return pos, n, n_flows, STOP_CORRUPT, P_BLOCK_LENGTH
            iface = 0
            wirelen = u32(b, pos + 8, big)
            caplen = min(wirelen, blen - 16)
            if ifaces[0, I_SNAPLEN] > 0:
                caplen = min(caplen, ifaces[0, I_SNAPLEN])
            ts = NO_TIME
            data = pos + 12
        else:
            return pos, n, n_flows, STOP_BLOCK, 0
        _start_record(out, n, ts, base + pos, iface_base + iface, caplen, wirelen)
        n_flows = decode_frame(b, data, caplen, wirelen, ifaces[iface, I_LINKTYPE], out, heads, n, keys, slots, n_flows)
        n += 1
        pos += blen


# -- reading -----------------------------------------------------------------------------------
class _ByteWindow:
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

    def __enter__(self) -> _ByteWindow:
        return self

    def __exit__(self, *exc) -> None:
        self.data = self.buf = None
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
        view = memoryview(self.buf)
        got = 0
        while self.filled < self.buf.shape[0]:
            try:
                k = self.file.readinto(view[self.filled :])
            except zlib.error as exc:
                raise TraceError(self.path, f"corrupt gzip stream ({exc})", offset=self.start + self.filled) from None
            if not k:
                if self.gzip and self.file.cut:
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


class _Output:
    """Record blocks and the flow table, grown as the kernels ask."""

    def __init__(self, head_bytes: int) -> None:
        self.dtype = record_dtype(head_bytes)
        self.blocks: list[np.ndarray] = []
        self.out = np.empty(BLOCK_RECORDS, self.dtype)
        self.heads = self.out["head"]
        self.n = 0
        self.keys = np.zeros((512, 5), np.uint64)
        self.slots = np.full(1024, -1, np.int32)
        self.n_flows = 0

    def new_block(self) -> None:
        self.blocks.append(self.out[: self.n])
        self.out = np.empty(BLOCK_RECORDS, self.dtype)
        self.heads = self.out["head"]
        self.n = 0

    def grow_flows(self) -> None:
        keys = np.zeros((self.keys.shape[0] * 2, 5), np.uint64)
        keys[: self.n_flows] = self.keys[: self.n_flows]
        self.keys = keys
        self.slots = np.full(self.slots.shape[0] * 2, -1, np.int32)
        rehash_flows(self.keys, self.n_flows, self.slots)

    def records(self) -> np.ndarray:
        """All records in one array (each block released once copied)."""
        self.blocks.append(self.out[: self.n])
        self.out = self.heads = None
        if len(self.blocks) == 1:
            return self.blocks.pop()
        total = sum(len(b) for b in self.blocks)
        records = np.empty(total, self.dtype)
        at = 0
        while self.blocks:
            block = self.blocks.pop(0)
            records[at : at + len(block)] = block
            at += len(block)
        return records


def capture_format(path: str | os.PathLike) -> str | None:
    """``"pcap"`` or ``"pcapng"`` when the file (plain or gzip) starts like one, else None.
    Of a gzip file, only its first bytes are inflated (through the reader's 4 MB pieces, telling
    a thousand ns-2 traces from captures took 1.4 s of a batch)."""
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


def head_bytes_for(payload) -> int:
    """Payload bytes to keep per record for reading ``payload`` (RTP: its header and extensions)."""
    return max(
        DEFAULT_HEAD_BYTES,
        payload.needed_bytes if isinstance(payload, payloads.FieldSpec) else 0,
        RTP_HEAD_BYTES if payload in ("auto", "rtp") else 0,
    )


def decode_capture(
    path: str | os.PathLike, *, head_bytes: int = DEFAULT_HEAD_BYTES, chunk_bytes: int = CHUNK_BYTES
) -> Capture:
    """Decode every record of a pcap or pcapng capture (plain or gzip) into columns.

    ``head_bytes`` payload bytes of each packet are kept (enough for RTP, iperf2 and iperf3
    headers by default). Memory holds one ``chunk_bytes`` buffer of the file plus the records.
    """
    if not 1 <= head_bytes <= 255:
        raise UsageError(f"head_bytes must be between 1 and 255, not {head_bytes}")
    return decode_into(path, _Output(head_bytes), chunk_bytes)


def decode_into(path: str | os.PathLike, output: _Output, chunk_bytes: int = CHUNK_BYTES) -> Capture:
    """Decode a capture into ``output`` (its record blocks and flow table); the Capture holds
    the records ``output.records()`` keeps (all of them, unless the output spills them)."""
    path = os.fspath(path)
    with _ByteWindow(path, chunk_bytes) as stream:
        stream.refill(0, 64)
        if stream.filled == 0:
            raise TraceError(path, "the capture is empty")
        if stream.filled < 4:
            raise TraceError(path, f"not a capture: only {stream.filled} bytes", offset=0)
        fmt = _container(path, stream)
        walk = _PcapWalk(stream) if fmt == PCAP else _PcapngWalk(stream)
        walk.run(output)
        records = output.records()
        capture = Capture(
            path=path,
            format=fmt,
            records=records,
            flows=_flow_table(output.keys[: output.n_flows]),
            interfaces=pd.DataFrame(walk.interfaces),
            counts=walk.counts,
            notes=[],
        )
        _account(capture, walk, stream)
    return capture


def _container(path: str, stream: _ByteWindow) -> str:
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


class _PcapWalk:
    """Header and records of a classic pcap file."""

    def __init__(self, stream: _ByteWindow) -> None:
        self.stream = stream
        self.counts: dict = {}
        self.truncated: tuple[int, int, int] | None = None  # (offset, bytes present, needed)
        path = stream.path
        if stream.filled < 24:
            raise TraceError(path, f"truncated pcap file header ({stream.filled} of 24 bytes)", offset=0)
        self.big = stream.uint(0, 4, True) in (PCAP_MAGIC_US, PCAP_MAGIC_NS)
        self.frac_ns = 1 if stream.uint(0, 4, self.big) == PCAP_MAGIC_NS else 1000
        major = stream.uint(4, 2, self.big)
        if major != 2:
            raise TraceError(
                path, f"unsupported pcap version {major}.{stream.uint(6, 2, self.big)} (expected 2.4)", offset=4
            )
        self.snaplen = stream.uint(16, 4, self.big)
        self.linktype = stream.uint(20, 4, self.big) & 0xFFFF  # upper bits: FCS information
        if self.linktype not in LINK_NAMES:
            raise TraceError(
                path,
                f"unsupported link type {self.linktype} (supported: "
                + ", ".join(f"{k} {v}" for k, v in LINK_NAMES.items())
                + ")",
                offset=20,
            )
        self.interfaces = [
            _interface_row(0, 0, self.linktype, self.snaplen, "1e-9" if self.frac_ns == 1 else "1e-6", 0, "")
        ]

    def run(self, output: _Output) -> None:
        stream, pos = self.stream, 24
        max_caplen = min(max(self.snaplen, 262144), MAX_CAPLEN)
        walk = pick(walk_pcap, stream.interpreted_decode_s())
        while True:
            pos, output.n, output.n_flows, stop, detail = walk(
                stream.data,
                pos,
                stream.filled,
                stream.start,
                self.big,
                self.frac_ns,
                self.linktype,
                max_caplen,
                output.out,
                output.heads,
                output.n,
                output.keys,
                output.slots,
                output.n_flows,
            )
            if stop == STOP_FULL:
                output.new_block()
            elif stop == STOP_GROW:
                output.grow_flows()
            elif stop == STOP_CORRUPT:
                caplen = stream.uint(pos + 8, 4, self.big)
                raise TraceError(
                    stream.path,
                    f"record claims {caplen} captured bytes, more than the snap "
                    f"length allows ({max_caplen}): the file is corrupt here",
                    offset=stream.start + pos,
                )
            else:
                pos = stream.refill(pos, detail)
                if stream.ended:
                    self.truncated = _cut_record(stream, pos, detail)
                    return


class _PcapngWalk:
    """Sections, interfaces and packet blocks of a pcapng file."""

    def __init__(self, stream: _ByteWindow) -> None:
        self.stream = stream
        self.counts: dict = {"sections": 0}
        self.truncated: tuple[int, int, int] | None = None
        self.big = False
        self.section: list[list[int]] = []  # the current section's interfaces (I_* columns)
        self.interfaces: list[dict] = []  # every interface of every section
        self.skipped: dict[int, list[int]] = {}  # block type -> [count, first offset]

    def run(self, output: _Output) -> None:
        stream, pos = self.stream, 0
        ifaces = np.zeros((0, 5), np.int64)
        walk = pick(walk_pcapng, stream.interpreted_decode_s())
        while True:
            pos, output.n, output.n_flows, stop, detail = walk(
                stream.data,
                pos,
                stream.filled,
                stream.start,
                self.big,
                ifaces,
                len(self.interfaces) - len(self.section),
                output.out,
                output.heads,
                output.n,
                output.keys,
                output.slots,
                output.n_flows,
            )
            if stop == STOP_FULL:
                output.new_block()
            elif stop == STOP_GROW:
                output.grow_flows()
            elif stop == STOP_BLOCK:
                pos = self._block(pos)
                if pos is None:
                    return
                ifaces = np.array(self.section, dtype=np.int64).reshape(-1, 5)
            elif stop == STOP_CORRUPT:
                self._corrupt(pos, detail)
            else:
                pos = stream.refill(pos, detail)
                if stream.ended:
                    self.truncated = _cut_record(stream, pos, detail)
                    return

    def _corrupt(self, pos: int, problem: int) -> None:
        stream, big = self.stream, self.big
        btype, blen = stream.uint(pos, 4, big), stream.uint(pos + 4, 4, big)
        what = {
            P_BLOCK_LENGTH: f"block of type 0x{btype:x} has length {blen} (a multiple of 4, at least "
            "12, and 32 for packet blocks)",
            P_TRAILER: f"block of type 0x{btype:x} and length {blen} does not end with its length",
            P_IFACE: f"packet block names interface {stream.uint(pos + 8, 4 if btype == BLOCK_EPB else 2, big)}, "
            f"but the section has {len(self.section)} interface(s)",
            P_NO_IFACE: "simple packet block before any interface description block",
            P_BLOCK_CAPLEN: f"packet block of length {blen} claims {stream.uint(pos + 20, 4, big)} captured bytes",
        }[problem]
        raise TraceError(stream.path, what + ": the file is corrupt here", offset=stream.start + pos)

    def _available(self, pos: int, need: int) -> int | None:
        """Make ``need`` bytes from ``pos`` available: their new position, or None (and the
        truncation noted) when the input ends first."""
        stream = self.stream
        if stream.filled - pos < need:
            pos = stream.refill(pos, need)
            if stream.filled - pos < need:
                self.truncated = _cut_record(stream, pos, need)
                return None
        return pos

    def _block(self, pos: int) -> int | None:
        """Handle a non-packet block at ``pos``: the position after it, or None when the
        input ends inside it."""
        stream = self.stream
        pos = self._available(pos, 12)
        if pos is None:
            return None
        btype = stream.uint(pos, 4, self.big)
        if btype == PCAPNG_SHB:
            bom = stream.uint(pos + 8, 4, False)
            if bom not in (PCAPNG_BOM, 0x4D3C2B1A):
                raise TraceError(
                    stream.path, f"section header with bad byte-order magic 0x{bom:08x}", offset=stream.start + pos + 8
                )
            self.big = bom != PCAPNG_BOM
        blen = stream.uint(pos + 4, 4, self.big)
        if blen < 12 or blen % 4 or blen > MAX_CAPLEN:
            raise TraceError(
                stream.path,
                f"block of type 0x{btype:x} has length {blen}: the file is corrupt here",
                offset=stream.start + pos,
            )
        pos = self._available(pos, blen)
        if pos is None:
            return None
        offset = stream.start + pos
        if stream.uint(pos + blen - 4, 4, self.big) != blen:
            raise TraceError(
                stream.path,
                f"block of type 0x{btype:x} and length {blen} does not end with its length: the file is corrupt here",
                offset=offset,
            )
        body = stream.data[pos + 8 : pos + blen - 4].tobytes()
        if btype == PCAPNG_SHB:
            self._section(body, offset)
        elif btype == BLOCK_IDB:
            self._interface(body, offset)
        else:
            seen = self.skipped.setdefault(btype, [0, offset])
            seen[0] += 1
        return pos + blen

    def _section(self, body: bytes, offset: int) -> None:
        end = ">" if self.big else "<"
        if len(body) < 16:
            raise TraceError(self.stream.path, "section header block too short", offset=offset)
        major, minor = struct.unpack(end + "HH", body[4:8])
        if major != 1:
            raise TraceError(
                self.stream.path, f"unsupported pcapng version {major}.{minor} (expected 1.0)", offset=offset + 12
            )
        self.counts["sections"] += 1
        self.section = []

    def _interface(self, body: bytes, offset: int) -> None:
        end = ">" if self.big else "<"
        path = self.stream.path
        if len(body) < 8:
            raise TraceError(path, "interface description block too short", offset=offset)
        linktype, _, snaplen = struct.unpack(end + "HHI", body[:8])
        base, exp, tsoffset, name = 10, 6, 0, ""
        for code, value, at in _options(body, 8, end):
            if code == 9 and len(value) >= 1:  # if_tsresol
                base, exp = (2, value[0] & 0x7F) if value[0] & 0x80 else (10, value[0])
                if (base == 10 and exp > 18) or (base == 2 and exp > 63):
                    raise TraceError(path, f"unsupported if_tsresol {base}^-{exp}", offset=offset + 8 + at)
            elif code == 14 and len(value) >= 8:  # if_tsoffset, seconds
                tsoffset = struct.unpack(end + "q", value[:8])[0]
            elif code == 2:
                name = value.split(b"\0")[0].decode("utf-8", "replace")
        self.section.append([linktype, snaplen, base, exp, tsoffset * 1_000_000_000])
        resol = f"1e-{exp}" if base == 10 else f"2^-{exp}"
        self.interfaces.append(
            _interface_row(
                len(self.interfaces), self.counts["sections"] - 1, linktype, snaplen, resol, tsoffset, name, offset
            )
        )


def _cut_record(stream: _ByteWindow, pos: int, needed: int) -> tuple[int, int, int] | None:
    """(offset, bytes present, bytes needed) of a record the input ends inside, if any."""
    present = stream.filled - pos
    return (stream.start + pos, present, needed) if present else None


def _options(body: bytes, at: int, end: str):
    """(code, value, offset in body) of each option of a block body, from ``at``."""
    while at + 4 <= len(body):
        code, length = struct.unpack(end + "HH", body[at : at + 4])
        if code == 0:
            return
        yield code, body[at + 4 : at + 4 + length], at
        at += 4 + (length + 3) // 4 * 4


def _interface_row(iface, section, linktype, snaplen, tsresol, tsoffset, name, offset=None) -> dict:
    return {
        "iface": iface,
        "section": section,
        "linktype": linktype,
        "link": LINK_NAMES.get(linktype, "unsupported"),
        "snaplen": snaplen,
        "tsresol": tsresol,
        "tsoffset": tsoffset,
        "name": name,
        "offset": offset,
    }


def _account(capture: Capture, walk, stream: _ByteWindow) -> None:
    """Counts of what was decoded and skipped, and a warning for each problem found."""
    path, records, counts = capture.path, capture.records, capture.counts
    status = records["status"]
    counts["records"] = len(records)
    by_status = np.bincount(status, minlength=len(STATUS_NAMES))
    counts.update({name: int(c) for name, c in zip(STATUS_NAMES, by_status)})

    def note(message: str) -> None:
        capture.notes.append(f"{path}: {message}")
        warnings.warn(f"{path}: {message}", CaptureWarning, stacklevel=3)

    def first_offset(mask) -> int:
        return int(records["offset"][np.argmax(mask)])

    if counts["too_short"]:
        note(
            f"{counts['too_short']} packets too short to decode (cut by the snap length before the headers "
            f"their flow needs; first at byte {first_offset(status == S_TOO_SHORT)}): they have no flow"
        )
    if counts["unsupported_link"]:
        for iface in capture.interfaces.itertuples():
            mask = (status == S_UNSUPPORTED_LINK) & (records["iface"] == iface.iface)
            if mask.any():
                note(
                    f"{int(mask.sum())} packets on interface {iface.iface} (link type {iface.linktype}, "
                    f"described at byte {iface.offset}) skipped: link type not supported"
                )
    no_time = int((records["ts_ns"] == NO_TIME).sum())
    counts["no_timestamp"] = no_time
    if no_time:
        note(
            f"{no_time} packets from simple packet blocks carry no timestamp: their time is NaN "
            f"(first at byte {first_offset(records['ts_ns'] == NO_TIME)})"
        )
    if capture.format == PCAPNG:
        counts["blocks_skipped"] = {f"0x{t:x}": c for t, (c, _) in sorted(walk.skipped.items())}
        for btype, (count, offset) in sorted(walk.skipped.items()):
            if btype not in KNOWN_BLOCKS:
                note(f"skipped {count} pcapng block(s) of unknown type 0x{btype:x} (first at byte {offset})")
    counts["truncated_records"] = 0
    if walk.truncated is not None:
        offset, present, needed = walk.truncated
        counts["truncated_records"] = 1
        unit = "block" if capture.format == PCAPNG else "record"
        note(f"the capture ends inside a {unit} at byte {offset} ({present} of {needed} bytes): that {unit} is ignored")
    if stream.gzip_cut_at is not None:
        note(
            f"the gzip stream ends early, at byte {stream.gzip_cut_at} of the decompressed capture: "
            "records after it are missing"
        )


def _flow_table(keys: np.ndarray) -> pd.DataFrame:
    """One row per interned 5-tuple: versions, protocols, addresses as text, ports, label."""
    w0 = keys[:, 0]
    ver = (w0 & 0xFF).astype(np.int64)
    proto = ((w0 >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int64)
    sport = ((w0 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64)
    dport = ((w0 >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64)

    def address(v, hi, lo):
        return str(ipaddress.IPv4Address(int(lo)) if v == 4 else ipaddress.IPv6Address((int(hi) << 64) | int(lo)))

    src = [address(v, h, lo) for v, h, lo in zip(ver, keys[:, 1], keys[:, 2])]
    dst = [address(v, h, lo) for v, h, lo in zip(ver, keys[:, 3], keys[:, 4])]
    labels = [flow_label(*row) for row in zip(ver, proto, src, sport, dst, dport)]
    return pd.DataFrame(
        {"label": labels, "ip_ver": ver, "proto": proto, "src": src, "sport": sport, "dst": dst, "dport": dport}
    )


PROTO_NAMES = {
    1: "icmp",
    6: "tcp",
    17: "udp",
    33: "dccp",
    47: "gre",
    50: "esp",
    58: "icmpv6",
    132: "sctp",
    136: "udplite",
}
_PORTED = {6, 17, 33, 132, 136}


def flow_label(ip_ver: int, proto: int, src: str, sport: int, dst: str, dport: int) -> str:
    """``10.0.0.1:5004>10.0.0.2:6000/udp``; IPv6 addresses in brackets; no ports when the
    protocol has none."""
    name = PROTO_NAMES.get(int(proto), str(int(proto)))
    if ip_ver == 6:
        src, dst = f"[{src}]", f"[{dst}]"
    if int(proto) in _PORTED:
        return f"{src}:{int(sport)}>{dst}:{int(dport)}/{name}"
    return f"{src}>{dst}/{name}"


# -- flows and traces --------------------------------------------------------------------------
def list_flows(
    source: Capture | str | os.PathLike, *, kinds: dict[int, str] | None = None, **decode_options
) -> pd.DataFrame:
    """One row per flow (5-tuple and direction), in order of first appearance.

    Columns: ``flow`` (the label ``read_capture(flows=...)`` takes), ``proto``, ``src``,
    ``sport``, ``dst``, ``dport``, ``packets``, ``bytes`` (IP bytes), ``first``/``last``
    (capture times, s), ``payload`` (the kind ``read_capture`` would read: ``rtp``,
    ``iperf3``, ``iperf3-64``, ``iperf2``, ``iperf2-64``, ``tcp``, or empty; ``kinds`` (flow
    id → kind) when the caller read the flows already). ``read_capture`` keeps this table in
    ``meta['capture_flows']``.
    """
    capture = source if isinstance(source, Capture) else decode_capture(source, **decode_options)
    records = capture.records
    extents = flow_extents(records["flow"], records["ts_ns"], records["ip_len"], len(capture.flows))
    return flow_listing(capture.flows, extents, payloads.detect_kinds(capture) if kinds is None else kinds)


def flow_listing(flows: pd.DataFrame, extents: tuple, kinds: dict[int, str]) -> pd.DataFrame:
    """``list_flows``'s table from a flow table, each flow's ``flow_extents`` and kind."""
    packets, size, first, last = extents
    n = len(flows)
    table = flows[["label", "src", "sport", "dst", "dport"]].rename(columns={"label": "flow"})
    table.insert(1, "proto", [PROTO_NAMES.get(p, str(p)) for p in flows["proto"]])
    table["packets"] = packets
    table["bytes"] = size
    table["first"] = np.where(last == NO_TIME, np.nan, first / 1e9)  # NaN: no packet with a time
    table["last"] = np.where(last == NO_TIME, np.nan, last / 1e9)
    table["payload"] = [kinds.get(f, "") for f in range(n)]
    return table


@njit(cache=True)
def flow_extents(flow, ts_ns, ip_len, n_flows):
    """Per flow, in one pass over the records: packets, IP bytes, and the first and last
    capture time (ns; ``NO_TIME`` when none of its records has one). Twin: pandas groupby
    (``tests/test_pcap_read.py``)."""
    packets = np.zeros(n_flows, np.int64)
    size = np.zeros(n_flows, np.int64)
    first = np.full(n_flows, np.iinfo(np.int64).max)
    last = np.full(n_flows, NO_TIME)
    for i in range(flow.shape[0]):
        f = flow[i]
        if f < 0:
            continue
        packets[f] += 1
        size[f] += ip_len[i]
        if ts_ns[i] != NO_TIME:
            first[f] = min(first[f], ts_ns[i])
            last[f] = max(last[f], ts_ns[i])
    return packets, size, first, last


def _kinds_read(capture: Capture, streams: dict[str, dict]) -> dict[int, str]:
    """Flow id → the kind its streams were read as (flows not read: absent)."""
    index = {label: i for i, label in enumerate(capture.flows["label"])}
    kinds = {}
    for label, info in streams.items():
        flow = index.get(label.partition(payloads.SSRC)[0])
        if flow is not None:
            kinds[flow] = info.get("kind", "")
    return kinds


def read_capture(
    path: str | os.PathLike,
    *,
    payload: str | payloads.FieldSpec = "auto",
    vantage: str = "receiver",
    flows: Iterable[str] | str | None = None,
    ssrc: Iterable[str | int] | str | int | None = None,
    rtp_sequence: str = "ssrc",
    clock_rate: float | None = None,
    skew: str = "remove",
    skew_limit_ppm: float = PLAUSIBLE_SKEW_PPM,
    capture_host: str | None = "auto",
    chunk_bytes: int = CHUNK_BYTES,
) -> Trace:
    """Read a one-point capture (pcap or pcapng, plain or gzip) into a Trace.

    ``payload`` says where sequence numbers and send times come from (``auto``, ``rtp``,
    ``iperf3``, ``iperf2``, ``tcp`` or a :class:`~ldanalyze.io.capture.payload.FieldSpec`);
    ``vantage`` whether the capture was taken at the ``receiver`` (arrivals; gaps in the
    sequence become lost rows) or at the ``sender`` (transmissions, fate ``unobserved``);
    ``flows`` picks flows by label (see :func:`list_flows`), all that fit otherwise; ``ssrc``
    picks RTP streams by SSRC; ``rtp_sequence="transport-cc"`` reads each WebRTC flow as one
    stream in transport-wide sequence order (timed by abs-send-time) instead of one per SSRC;
    ``clock_rate`` is the rate (Hz) of the in-band clock (RTP timestamp, TSval) when known.
    The two ends' clocks are separate: only relative delays (ROTT) mean something, and at the
    receiver ``skew="remove"`` (the default) fits each flow's delays with
    :func:`~ldanalyze.clocks.remove_skew` and takes the skew out of the receive times, which
    stay the capture times at the flow's first packet (``meta['clock_fit']`` reports offset
    and skew; ``meta['clock']`` becomes ``skew-removed``); ``skew="keep"`` leaves them as
    they are; a fitted skew beyond ``skew_limit_ppm`` is reported and not applied.
    ``capture_host`` is the address of the host the capture was taken on (``auto``: found
    from the flows' ends and TTLs, see ``payload.host_of``; ``"none"``: no host): at a
    receiver, the flows it sends are read as sent (fate ``unobserved``), not as arrivals;
    ``meta['capture_host']`` says which address and how. Capture times are float seconds
    since the epoch (a resolution of about 0.24 µs today; ``decode_capture`` keeps the integer
    nanoseconds); RTP and TSval send times count from their own clock's origin. ``size`` is the
    IP datagram's length. ``meta`` also holds
    per-flow kinds, clock rates and exclusions, the skipped flows, the record counts by
    decode status and the warnings issued.
    """
    if skew not in SKEW_CHOICES:
        raise UsageError(f"skew must be one of {SKEW_CHOICES}, not {skew!r}")
    capture = decode_capture(path, head_bytes=head_bytes_for(payload), chunk_bytes=chunk_bytes)
    packets, taken = payloads.capture_packets(
        capture,
        payload=payload,
        vantage=vantage,
        flows=flows,
        clock_rate=clock_rate,
        ssrc=ssrc,
        rtp_sequence=rtp_sequence,
        host=_host_option(capture_host),
    )
    return capture_trace(
        capture, packets, taken, payload=payload, vantage=vantage, skew=skew, skew_limit_ppm=skew_limit_ppm
    )


def _host_option(capture_host: str | None) -> str | None:
    """``capture_host`` as ``capture_packets`` takes it: ``auto``, None, or a checked address."""
    if capture_host in (None, "none"):
        return None
    if capture_host == "auto":
        return "auto"
    try:
        return str(ipaddress.ip_address(capture_host))
    except ValueError:
        raise UsageError(f"capture host must be an IP address, auto or none, not {capture_host!r}") from None


def capture_trace(
    capture: Capture,
    packets: pd.DataFrame,
    taken: dict,
    *,
    payload,
    vantage: str,
    skew: str,
    skew_limit_ppm: float,
    pairs: str = "hosts",
) -> Trace:
    """The Trace of what ``capture_packets`` took from a capture: warnings for what it skipped,
    the meta ``read_capture`` documents, and the clock skew removed (per ``pairs``)."""
    # the acknowledgements of a TCP connection carry no data by nature: no need to warn
    skipped = {k: v for k, v in taken["skipped_flows"].items() if not v.startswith(payloads.ACKS_ONLY)}
    if skipped:
        message = (
            f"{capture.path}: {len(skipped)} flow(s) without sequence numbers skipped "
            f"({payloads.reasons_in_brief(skipped)})"
        )
        capture.notes.append(message)
        warnings.warn(message, CaptureWarning, stacklevel=3)
    if taken["skipped_streams"]:
        message = (
            f"{capture.path}: {len(taken['skipped_streams'])} RTP stream(s) skipped "
            f"({payloads.reasons_in_brief(taken['skipped_streams'])})"
        )
        capture.notes.append(message)
        warnings.warn(message, CaptureWarning, stacklevel=3)
    meta = {
        "format": capture.format,
        "vantage": vantage,
        "clock": "separate",
        "payload": payloads.payload_name(payload),
        "flows": taken["flows"],
        "skipped_flows": taken["skipped_flows"],
        "skipped_streams": taken["skipped_streams"],
        "capture_host": taken["capture_host"],
        "records": capture.counts,
        "interfaces": capture.interfaces.to_dict("records"),
        "notes": capture.notes,
        "capture_flows": list_flows(capture, kinds=_kinds_read(capture, taken["flows"])),
    }
    trace = Trace(packets=packets, rtt=empty_rtt(), path=capture.path, format=capture.format, meta=meta)
    if skew == "remove" and vantage == "receiver":
        return remove_skew(trace, skew_limit_ppm=skew_limit_ppm, pairs=pairs)
    return trace
