"""The record walk of both containers: numba kernels decode a window's records into columns.

``walk_pcap`` and ``walk_pcapng`` walk the records of the window ``source.ByteWindow`` holds,
decoding every frame (``frame.decode_frame``) into a packed record array (``Output``, grown
as the kernels ask): capture time (integer ns), flow id, IP length and ID, TCP fields, a payload
hash and the first payload bytes. A kernel stops where the input, the output or the flow table
runs out, or (pcapng) at a block that is not a packet, which ``PcapngWalk`` reads in Python.

Containers:

* pcap: microsecond (0xa1b2c3d4) and nanosecond (0xa1b23c4d) magic, either byte order.
* pcapng: sections (SHB) in either byte order, one after another; interfaces (IDB) with their
  own link type, snap length, ``if_tsresol`` (a power of 10 or of 2) and ``if_tsoffset``;
  enhanced (EPB), simple (SPB) and obsolete (PB) packet blocks. A simple packet block has no
  timestamp and no interface: it belongs to the section's first interface, is cut to that
  interface's snap length, and its time is NaN (``ts_ns`` = ``NO_TIME``). Other blocks are
  skipped and counted; types that are not in the specification get a warning.
"""

from __future__ import annotations

import struct

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ...errors import TraceError
from ...tiering import pick
from .frame import FRAME_FLOW, decode_frame
from .linklayer import LINK_NAMES
from .record import F_TUNNEL_DEEP, F_TUNNEL_OTHER, NO_TIME, intern_flow, record_dtype, rehash_flows, u16, u32
from .source import PCAP_MAGIC_NS, PCAP_MAGIC_US, PCAPNG_SHB, ByteWindow
from .tunnels import MAX_TUNNEL_DEPTH

PCAPNG_BOM = 0x1A2B3C4D
BLOCK_PB, BLOCK_IDB, BLOCK_SPB, BLOCK_EPB, BLOCK_ISB = 2, 1, 3, 6, 5
# interface statistics options (pcapng spec 4.6): packets the interface received, and dropped by
# the interface and by the operating system, cumulative since the capture started
ISB_COUNTERS = {4: "ifrecv", 5: "ifdrop", 7: "osdrop"}
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


BLOCK_RECORDS = 1 << 22  # records per output block (np.empty: untouched pages cost nothing)
MAX_CAPLEN = 64 << 20  # a record claiming more is taken as corruption


# kernel stop codes and problems
STOP_INPUT, STOP_FULL, STOP_GROW, STOP_BLOCK, STOP_CORRUPT = 1, 2, 3, 4, 5
P_CAPLEN, P_BLOCK_LENGTH, P_TRAILER, P_IFACE, P_NO_IFACE, P_BLOCK_CAPLEN = 1, 2, 3, 4, 5, 6
# interface table columns for the pcapng kernel
I_LINKTYPE, I_SNAPLEN, I_RES_BASE, I_RES_EXP, I_OFFSET_NS = range(5)
_POW10 = np.array([10**k for k in range(19)], dtype=np.int64)


# -- borrowed arrays --------------------------------------------------------------------------
def borrowed(a: np.ndarray) -> np.ndarray:
    """``a`` itself, as a view that no reference count covers when compiled.

    numba passes an array to a kernel with the reference count of its memory: a callee takes a
    reference on entry and gives it back on each way out (an atomic increment and decrement)
    wherever a call that may raise sits between (numba cannot prune those pairs), which is on
    every frame for ``decode_frame``'s arrays. A borrowed view is the same array without its
    memory's record (null meminfo and parent): those updates find nothing to count and skip.
    Safe only while the array it borrows from lives and the view does not leave the kernel
    (never returned or stored): the walks take their arrays from their caller, which holds them
    for the call. The interpreted run (``tiering``) calls this function: the array itself.
    """
    return a


@intrinsic
def _borrowed_view(typingctx, a):
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, signature, args):
        view = context.make_array(a)(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return a(a), codegen


@overload(borrowed)
def _borrowed_compiled(a):
    if isinstance(a, types.Array):
        return lambda a: _borrowed_view(a)  # type: ignore[call-arg]  # an intrinsic: numba passes its typing context
    return None


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
def _count_tunnel(out, n, by_tunnel):
    """Count record ``out[n]`` in ``by_tunnel`` by its innermost tunnel, and in its last two
    entries when it is flagged ``F_TUNNEL_OTHER`` or ``F_TUNNEL_DEEP`` (``Output.by_tunnel``)."""
    r = out[n]
    tunnel = r["tunnel"]
    if tunnel >= 0:
        by_tunnel[tunnel] += 1
    marked = r["flags"] & (F_TUNNEL_OTHER | F_TUNNEL_DEEP)
    if marked:
        last = by_tunnel.shape[0] - 1
        if marked & F_TUNNEL_OTHER:
            by_tunnel[last - 1] += 1
        if marked & F_TUNNEL_DEEP:
            by_tunnel[last] += 1


@njit(cache=True)
def _no_room(n, records, n_flows, flow_slots, n_tunnels, tunnel_slots):
    """STOP_FULL or STOP_GROW when one more record, flow or frame's tunnels would not fit, else 0.

    Takes the sizes (``records``: of the output, ``*_slots``: of the slot arrays), not the
    arrays: arrays would cost reference-count updates on every record.
    """
    if n >= records:
        return STOP_FULL
    if 2 * (n_flows + 1) > flow_slots or 2 * (n_tunnels + MAX_TUNNEL_DEPTH) > tunnel_slots:
        return STOP_GROW
    return 0


@njit(cache=True)
def walk_pcap(
    b,
    pos,
    end,
    base,
    big,
    frac_ns,
    linktype,
    max_caplen,
    out,
    heads,
    n,
    keys,
    slots,
    n_flows,
    tunnels,
    tunnel_slots,
    n_tunnels,
    by_tunnel,
):
    """Decode pcap records from ``b[pos:end]`` until input, output or flow table runs out,
    counting them by innermost tunnel in ``by_tunnel`` (``Output.by_tunnel``).

    Returns ``(pos, n, n_flows, n_tunnels, stop, detail)``: where it stopped and why (``STOP_*``);
    ``detail`` is the bytes the next record needs (``STOP_INPUT``) or a ``P_*`` problem.
    """
    b, out, heads, keys, slots = borrowed(b), borrowed(out), borrowed(heads), borrowed(keys), borrowed(slots)
    tunnels, tunnel_slots = borrowed(tunnels), borrowed(tunnel_slots)  # (the callees count no references)
    while True:
        full = _no_room(n, out.shape[0], n_flows, slots.shape[0], n_tunnels, tunnel_slots.shape[0])
        if full:
            return pos, n, n_flows, n_tunnels, full, 0
        if end - pos < 16:
            return pos, n, n_flows, n_tunnels, STOP_INPUT, 16
        caplen = u32(b, pos + 8, big)
        if caplen > max_caplen:
            return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_CAPLEN
        if end - pos - 16 < caplen:
            return pos, n, n_flows, n_tunnels, STOP_INPUT, 16 + caplen
        ts = u32(b, pos, big) * 1_000_000_000 + u32(b, pos + 4, big) * frac_ns
        wirelen = u32(b, pos + 12, big)
        _start_record(out, n, ts, base + pos, 0, caplen, wirelen)
        # the flow is interned here: decode_frame has no need of the flow table
        state, w0, w1, w2, w3, w4, w5, n_tunnels = decode_frame(
            b, pos + 16, caplen, wirelen, linktype, out, heads, n, tunnels, tunnel_slots, n_tunnels
        )
        if state == FRAME_FLOW:
            flow, n_flows = intern_flow(keys, slots, n_flows, w0, w1, w2, w3, w4, w5)
            out[n]["flow"] = flow
        _count_tunnel(out, n, by_tunnel)
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
def walk_pcapng(
    b,
    pos,
    end,
    base,
    big,
    ifaces,
    iface_base,
    out,
    heads,
    n,
    keys,
    slots,
    n_flows,
    tunnels,
    tunnel_slots,
    n_tunnels,
    by_tunnel,
):
    """Decode pcapng packet blocks (EPB, SPB, PB) from ``b[pos:end]``.

    Stops (``STOP_BLOCK``) at any other block, which the caller handles; otherwise as
    ``walk_pcap``. ``ifaces`` holds the section's interfaces (``I_*`` columns).
    """
    b, out, heads, keys, slots = borrowed(b), borrowed(out), borrowed(heads), borrowed(keys), borrowed(slots)
    tunnels, tunnel_slots = borrowed(tunnels), borrowed(tunnel_slots)  # (the callees count no references)
    n_ifaces = ifaces.shape[0]
    while True:
        full = _no_room(n, out.shape[0], n_flows, slots.shape[0], n_tunnels, tunnel_slots.shape[0])
        if full:
            return pos, n, n_flows, n_tunnels, full, 0
        if end - pos < 12:
            return pos, n, n_flows, n_tunnels, STOP_INPUT, 12
        btype = u32(b, pos, big)
        if btype == PCAPNG_SHB:  # its byte order may differ: the caller reads it
            return pos, n, n_flows, n_tunnels, STOP_BLOCK, 0
        blen = u32(b, pos + 4, big)
        if blen < 12 or blen & 3:
            return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_BLOCK_LENGTH
        if end - pos < blen:
            return pos, n, n_flows, n_tunnels, STOP_INPUT, blen
        if u32(b, pos + blen - 4, big) != blen:
            return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_TRAILER
        if btype == BLOCK_EPB or btype == BLOCK_PB:
            if blen < 32:
                return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_BLOCK_LENGTH
            iface = u32(b, pos + 8, big) if btype == BLOCK_EPB else u16(b, pos + 8, big)
            if iface >= n_ifaces:
                return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_IFACE
            caplen = u32(b, pos + 20, big)
            if 32 + caplen > blen:
                return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_BLOCK_CAPLEN
            wirelen = u32(b, pos + 24, big)
            ticks = (np.uint64(u32(b, pos + 12, big)) << np.uint64(32)) | np.uint64(u32(b, pos + 16, big))
            ts = ticks_to_ns(ticks, ifaces[iface, I_RES_BASE], ifaces[iface, I_RES_EXP]) + ifaces[iface, I_OFFSET_NS]
            data = pos + 28
        elif btype == BLOCK_SPB:
            if n_ifaces == 0:
                return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_NO_IFACE
            if blen < 16:
                return pos, n, n_flows, n_tunnels, STOP_CORRUPT, P_BLOCK_LENGTH
            iface = 0
            wirelen = u32(b, pos + 8, big)
            caplen = min(wirelen, blen - 16)
            if ifaces[0, I_SNAPLEN] > 0:
                caplen = min(caplen, ifaces[0, I_SNAPLEN])
            ts = NO_TIME
            data = pos + 12
        else:
            return pos, n, n_flows, n_tunnels, STOP_BLOCK, 0
        _start_record(out, n, ts, base + pos, iface_base + iface, caplen, wirelen)
        # the flow is interned here: decode_frame has no need of the flow table
        state, w0, w1, w2, w3, w4, w5, n_tunnels = decode_frame(
            b, data, caplen, wirelen, ifaces[iface, I_LINKTYPE], out, heads, n, tunnels, tunnel_slots, n_tunnels
        )
        if state == FRAME_FLOW:
            flow, n_flows = intern_flow(keys, slots, n_flows, w0, w1, w2, w3, w4, w5)
            out[n]["flow"] = flow
        _count_tunnel(out, n, by_tunnel)
        n += 1
        pos += blen


class Output:
    """Record blocks, the flow table and the tunnel table, grown as the kernels ask."""

    def __init__(self, head_bytes: int) -> None:
        self.dtype = record_dtype(head_bytes)
        self.blocks: list[np.ndarray] = []
        self.out = np.empty(BLOCK_RECORDS, self.dtype)
        self.heads = self.out["head"]
        self.n = 0
        self.keys = np.zeros((512, 6), np.uint64)
        self.slots = np.full(1024, -1, np.int32)
        self.n_flows = 0
        self.tunnels = np.zeros((16, 6), np.uint64)
        self.tunnel_slots = np.full(32, -1, np.int32)
        self.n_tunnels = 0
        # records by innermost tunnel (a row of the tunnel table each), then those flagged
        # F_TUNNEL_OTHER and F_TUNNEL_DEEP: counted as they are decoded (a pass over the records
        # afterwards reads every cache line of them again)
        self.by_tunnel = np.zeros(self.tunnels.shape[0] + 2, np.int64)

    def new_block(self) -> None:
        self.blocks.append(self.out[: self.n])
        self.out = np.empty(BLOCK_RECORDS, self.dtype)
        self.heads = self.out["head"]
        self.n = 0

    def grow_flows(self) -> None:
        """Double the flow table, or the tunnel table, whichever is full (``walk._no_room``)."""
        if 2 * (self.n_flows + 1) > self.slots.shape[0]:
            self.keys, self.slots = _doubled(self.keys, self.n_flows)
        else:
            self.tunnels, self.tunnel_slots = _doubled(self.tunnels, self.n_tunnels)
            by_tunnel = np.zeros(self.tunnels.shape[0] + 2, np.int64)
            by_tunnel[: self.n_tunnels] = self.by_tunnel[: self.n_tunnels]
            by_tunnel[-2:] = self.by_tunnel[-2:]
            self.by_tunnel = by_tunnel

    def tunnel_records(self) -> np.ndarray:
        """The records decoded by innermost tunnel (one entry per row of the tunnel table), then
        those not opened (``F_TUNNEL_OTHER``) and too deep (``F_TUNNEL_DEEP``): the two last."""
        return np.append(self.by_tunnel[: self.n_tunnels], self.by_tunnel[-2:])

    def records(self) -> np.ndarray:
        """All records in one array (each block released once copied)."""
        self.blocks.append(self.out[: self.n])
        self.out = self.heads = None  # type: ignore[assignment]  # released: never None while the walk writes
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


def _doubled(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A table twice the size holding the first ``n`` keys, and its slots."""
    bigger = np.zeros((keys.shape[0] * 2, keys.shape[1]), np.uint64)
    bigger[:n] = keys[:n]
    slots = np.full(bigger.shape[0] * 2, -1, np.int32)
    rehash_flows(bigger, n, slots)
    return bigger, slots


class PcapWalk:
    """Header and records of a classic pcap file."""

    def __init__(self, stream: ByteWindow) -> None:
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

    def run(self, output: Output) -> None:
        stream, pos = self.stream, 24
        max_caplen = min(max(self.snaplen, 262144), MAX_CAPLEN)
        walk = pick(walk_pcap, stream.interpreted_decode_s())
        while True:
            pos, output.n, output.n_flows, output.n_tunnels, stop, detail = walk(
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
                output.tunnels,
                output.tunnel_slots,
                output.n_tunnels,
                output.by_tunnel,
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


class PcapngWalk:
    """Sections, interfaces and packet blocks of a pcapng file."""

    def __init__(self, stream: ByteWindow) -> None:
        self.stream = stream
        self.counts: dict = {"sections": 0}
        self.truncated: tuple[int, int, int] | None = None
        self.big = False
        self.section: list[list[int]] = []  # the current section's interfaces (I_* columns)
        self.interfaces: list[dict] = []  # every interface of every section
        self.skipped: dict[int, list[int]] = {}  # block type -> [count, first offset]

    def run(self, output: Output) -> None:
        stream, pos = self.stream, 0
        ifaces = np.zeros((0, 5), np.int64)
        walk = pick(walk_pcapng, stream.interpreted_decode_s())
        while True:
            pos, output.n, output.n_flows, output.n_tunnels, stop, detail = walk(
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
                output.tunnels,
                output.tunnel_slots,
                output.n_tunnels,
                output.by_tunnel,
            )
            if stop == STOP_FULL:
                output.new_block()
            elif stop == STOP_GROW:
                output.grow_flows()
            elif stop == STOP_BLOCK:
                after = self._block(pos)
                if after is None:
                    return
                pos = after
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
        at = self._available(pos, 12)
        if at is None:
            return None
        pos = at
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
        at = self._available(pos, blen)
        if at is None:
            return None
        pos = at
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
        elif btype == BLOCK_ISB and self._statistics(body):
            pass
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

    def _statistics(self, body: bytes) -> bool:
        """Keep an interface statistics block's counters on its interface (the last block of an
        interface holds the totals); False when the block names no interface of its section."""
        end = ">" if self.big else "<"
        if len(body) < 12:
            return False
        local = struct.unpack(end + "I", body[:4])[0]
        if local >= len(self.section):
            return False
        row = self.interfaces[len(self.interfaces) - len(self.section) + local]
        for code, value, _ in _options(body, 12, end):
            if code in ISB_COUNTERS and len(value) >= 8:
                row[ISB_COUNTERS[code]] = struct.unpack(end + "Q", value[:8])[0]
        return True

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


def _cut_record(stream: ByteWindow, pos: int, needed: int) -> tuple[int, int, int] | None:
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
        **dict.fromkeys(ISB_COUNTERS.values()),  # interface statistics: None until a block gives them
    }
