"""The record of one captured frame, and what the frame decoder builds it with: the record's
layout (``record_dtype``) and codes (status, flags, 802.11 and transport numbers), byte readers,
the payload hash and the open-addressing flow table.

The flow table interns each record's 5-tuple (and tunnel), so that memory holds one small flow
id per packet instead of its addresses; the tunnel table (``tunnels``) is one more table of the
same kind. ``frame.decode_frame`` fills the records; ``walk.py`` walks the containers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# -- record status (what the decoder could make of a frame) ----------------------------------
S_DECODED = 0
S_TOO_SHORT = 1
S_NOT_IP = 2
S_FRAGMENT = 3
S_WIFI_NOT_DATA = 4
S_WIFI_PROTECTED = 5
S_BAD_FCS = 6
S_UNSUPPORTED_LINK = 7
S_MALFORMED = 8
STATUS_NAMES = (
    "decoded",
    "too_short",
    "not_ip",
    "ip_fragment",
    "wifi_not_data",
    "wifi_protected",
    "bad_fcs",
    "unsupported_link",
    "malformed",
)

# -- record flags ------------------------------------------------------------------------------
F_FIRST_FRAGMENT = 1  # the first fragment of a fragmented datagram
F_TCP_TIMESTAMP = 2  # tcp_tsval / tcp_tsecr hold the timestamps option
F_TCP_MSS = 4  # tcp_mss holds the MSS option (SYN segments)
F_TUNNEL_OTHER = 8  # a tunnel message not decapsulated (GTP signalling, GRE v1...): the outer packet
F_TUNNEL_DEEP = 16  # a tunnel deeper than MAX_TUNNEL_DEPTH: the record is the deepest one opened
F_TCP_WSCALE = 32  # tcp_wscale holds the window-scale option's shift (SYN segments; RFC 7323 §2)
F_TCP_SACK = 64  # a SACK option (RFC 2018): tcp_sack_n blocks; the edges of a segment without payload in head
# A TCP segment without payload keeps the edges of its SACK option's blocks in ``head`` (bytes a
# payload would fill): each block its left and right edge, 32-bit big-endian, as on the wire, as
# many blocks as ``head`` holds (8 bytes a block: four need 32, which the sender's view asks for;
# ``tcp_sack_n`` counts the option's blocks, the kept ones are min(tcp_sack_n, head bytes // 8)).
# A segment with payload keeps its payload there and no edges (``tcp_sack_n`` still counts them):
# a data segment's SACK blocks say what the other direction's data received, which the sender's
# view of this direction does not read. No field of its own, so no byte more a record.
SACK_BLOCK_BYTES = 8

# -- 802.11 (monitor-mode captures: radiotap, PPI, bare 802.11) ---------------------------
NO_MAC_SEQ = 0xFFFF  # mac_seq of a record with no 802.11 sequence number
M_RETRY = 1  # the retry bit: a retransmission of a frame sent before
M_QOS = 2  # QoS data: numbered per receiver and traffic identifier, not per transmitter
M_DATA = 4  # a data frame (else management)
M_PROTECTED = 8  # the Protected Frame bit: the body is encrypted (WEP, WPA), unreadable without the keys

# -- transport protocol numbers (the record's proto) the decoder reads or opens ------------------
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_IPIP = 4
IPPROTO_IPV6 = 41
IPPROTO_GRE = 47

# -- hashing and time --------------------------------------------------------------------------
# Bytes of payload the payload hash covers (after the payload length is mixed in).
HASH_BYTES = 32
NO_TIME = np.iinfo(np.int64).min  # ts_ns of a record without a timestamp (pcapng SPB)
# splitmix64's multipliers: the payload hash, the flow table and the 802.11 sequence spaces
MUL1 = np.uint64(0x9E3779B97F4A7C15)
MUL2 = np.uint64(0xBF58476D1CE4E5B9)
MUL3 = np.uint64(0x94D049BB133111EB)


def record_dtype(head_bytes: int) -> np.dtype:
    """The packed per-record layout; ``head`` holds the first ``head_bytes`` payload bytes."""
    return np.dtype(
        [
            ("ts_ns", "<i8"),  # capture time, ns since the epoch (NO_TIME: none)
            ("offset", "<u8"),  # byte offset of the record (its pcap header / pcapng block)
            ("flow", "<i4"),  # index into the flow table; -1 when the frame has no flow
            ("tunnel", "<i4"),  # the innermost tunnel opened (index into the tunnel table), or -1
            ("iface", "<u4"),  # interface (pcapng: across sections; pcap: 0)
            ("status", "u1"),  # S_*
            ("flags", "u1"),  # F_*
            ("caplen", "<u4"),  # bytes captured
            ("wirelen", "<u4"),  # bytes of the frame on its link
            ("ip_ver", "u1"),  # 4, 6, or 0 before the IP header
            ("proto", "u1"),  # transport protocol number
            ("ttl", "u1"),  # IPv4 TTL / IPv6 hop limit
            ("ip_len", "<u4"),  # bytes of the IP datagram (the packet's size on the path)
            ("ip_id", "<u4"),  # IPv4 identification; IPv6 fragment id (else 0)
            ("payload_len", "<u4"),  # transport payload bytes, as the headers say
            ("head_len", "u1"),  # payload bytes captured into head
            ("payload_hash", "<u8"),  # see payload_hash(); 0 when the bytes were not captured
            ("tcp_seq", "<u4"),
            ("tcp_ack", "<u4"),
            ("tcp_flags", "u1"),
            ("tcp_tsval", "<u4"),
            ("tcp_tsecr", "<u4"),
            ("tcp_mss", "<u2"),
            ("tcp_win", "<u2"),  # the window field, unscaled (RFC 9293 §3.1)
            ("tcp_wscale", "u1"),  # window-scale shift (F_TCP_WSCALE)
            ("tcp_sack_n", "u1"),  # SACK blocks in the option (F_TCP_SACK), 0 without
            ("mac_seq", "<u2"),  # 802.11 sequence number (NO_MAC_SEQ: not an 802.11 data or management frame)
            ("mac_flags", "u1"),  # M_*: what the 802.11 header says of the frame
            ("mac_space", "<u4"),  # the transmitter's sequence counter it numbers (mac_sequence_space)
            ("head", "u1", (head_bytes,)),
        ],
        align=False,
    )


# -- byte readers ------------------------------------------------------------------------------
@njit(cache=True)
def u16be(b, i):
    return (np.int64(b[i]) << 8) | np.int64(b[i + 1])


@njit(cache=True)
def u16le(b, i):
    return (np.int64(b[i + 1]) << 8) | np.int64(b[i])


@njit(cache=True)
def u32be(b, i):
    return (np.int64(b[i]) << 24) | (np.int64(b[i + 1]) << 16) | (np.int64(b[i + 2]) << 8) | np.int64(b[i + 3])


@njit(cache=True)
def u32le(b, i):
    return (np.int64(b[i + 3]) << 24) | (np.int64(b[i + 2]) << 16) | (np.int64(b[i + 1]) << 8) | np.int64(b[i])


@njit(cache=True)
def u32(b, i, big):
    return u32be(b, i) if big else u32le(b, i)


@njit(cache=True)
def u16(b, i, big):
    return u16be(b, i) if big else u16le(b, i)


@njit(cache=True)
def u64be(b, i):
    return (np.uint64(u32be(b, i)) << np.uint64(32)) | np.uint64(u32be(b, i + 4))


# -- hashing -----------------------------------------------------------------------------------
@njit(cache=True)
def mix64(h):
    """splitmix64's finaliser: every input bit reaches every output bit."""
    h = (h ^ (h >> np.uint64(30))) * MUL2
    h = (h ^ (h >> np.uint64(27))) * MUL3
    return h ^ (h >> np.uint64(31))


@njit(cache=True)
def u64le(b, i):
    """Eight bytes as a little-endian word, written so that LLVM makes it one load."""
    return (
        np.uint64(b[i])
        | (np.uint64(b[i + 1]) << np.uint64(8))
        | (np.uint64(b[i + 2]) << np.uint64(16))
        | (np.uint64(b[i + 3]) << np.uint64(24))
        | (np.uint64(b[i + 4]) << np.uint64(32))
        | (np.uint64(b[i + 5]) << np.uint64(40))
        | (np.uint64(b[i + 6]) << np.uint64(48))
        | (np.uint64(b[i + 7]) << np.uint64(56))
    )


@njit(cache=True)
def payload_hash(b, q, length):
    """Hash of a payload for matching packets across captures.

    Starts from the payload length, folds in the first ``HASH_BYTES`` payload bytes (fewer
    when the payload is shorter) as little-endian 64-bit words, the last one zero-padded,
    each by xor and multiply, and ends with ``mix64``. The caller guarantees those bytes
    were captured.
    """
    h = np.uint64(length) * MUL1
    n = min(length, HASH_BYTES)
    k = 0
    while k < n:
        if n - k >= 8:
            w = u64le(b, q + k)
        else:
            w = np.uint64(0)
            for j in range(n - k):
                w |= np.uint64(b[q + k + j]) << np.uint64(8 * j)
        h = (h ^ w) * MUL2
        h ^= h >> np.uint64(29)
        k += 8
    return mix64(h)


# -- flow table --------------------------------------------------------------------------------
@njit(cache=True)
def flow_slot_hash(w0, w1, w2, w3, w4, w5):
    """The slot hash of a key. ``w5`` (a tunnel + 1, mostly 0) is mixed in beside the first
    words rather than in one more round: a key without tunnel hashes as a 5-word one."""
    h = (w0 ^ w1 ^ (w5 * MUL3)) * MUL1
    h = (h ^ w2 ^ (h >> np.uint64(31))) * MUL2
    h = (h ^ w3 ^ (h >> np.uint64(31))) * MUL3
    h = (h ^ w4 ^ (h >> np.uint64(31))) * MUL1
    return h ^ (h >> np.uint64(32))


@njit(cache=True)
def intern_flow(keys, slots, n_flows, w0, w1, w2, w3, w4, w5):
    """Index of the row with key (w0..w5), added when new. Returns (row, n_flows).

    Flow rows are (ver | proto << 8 | sport << 16 | dport << 32, src hi, src lo, dst hi,
    dst lo, tunnel + 1); tunnel rows (kind | has id << 8 | outer ver << 16 | id << 32, outer
    src hi, src lo, dst hi, dst lo, enclosing tunnel + 1). ``slots`` (a power of two, -1 = empty) maps hashes
    to rows. The caller keeps the table at most half full.
    """
    mask = np.uint64(slots.shape[0] - 1)
    s = flow_slot_hash(w0, w1, w2, w3, w4, w5) & mask
    while True:
        f = slots[s]
        if f < 0:
            keys[n_flows, 0] = w0
            keys[n_flows, 1] = w1
            keys[n_flows, 2] = w2
            keys[n_flows, 3] = w3
            keys[n_flows, 4] = w4
            keys[n_flows, 5] = w5
            slots[s] = n_flows
            return n_flows, n_flows + 1
        if (
            keys[f, 0] == w0
            and keys[f, 1] == w1
            and keys[f, 2] == w2
            and keys[f, 3] == w3
            and keys[f, 4] == w4
            and keys[f, 5] == w5
        ):
            return f, n_flows
        s = (s + np.uint64(1)) & mask


@njit(cache=True)
def rehash_flows(keys, n_flows, slots):
    """Fill a fresh (all -1) slot array from the first ``n_flows`` keys."""
    mask = np.uint64(slots.shape[0] - 1)
    for f in range(n_flows):
        s = flow_slot_hash(keys[f, 0], keys[f, 1], keys[f, 2], keys[f, 3], keys[f, 4], keys[f, 5]) & mask
        while slots[s] >= 0:
            s = (s + np.uint64(1)) & mask
        slots[s] = f
