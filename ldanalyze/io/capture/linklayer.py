"""Decoding one captured frame: link layer → IPv4/IPv6 (→ tunnels) → UDP/TCP, into one record, in numba.

``decode_frame`` is called by the container walks of ``walk.py`` for every record. It writes
the record's fields (see ``record_dtype``) and interns the record's 5-tuple in an open-addressing
flow table, so that memory holds one small flow id per packet instead of its addresses.

Link types (LINKTYPE_* values of the pcap/pcapng specifications):

=====  =====================  ==============================================================
0/108  BSD null / loopback    4-byte address family, in either byte order (2 = IPv4;
                              10, 24, 28, 30 = IPv6 on Linux, NetBSD/OpenBSD, FreeBSD, macOS)
1      Ethernet               with any stack of 802.1Q / 802.1ad / QinQ tags (0x8100, 0x88a8,
                              0x9100)
9      PPP                    HDLC address and control (0xFF 0x03) when present, then the
                              protocol (0x0021 IPv4, 0x0057 IPv6; one byte when compressed):
                              ns-3's point-to-point links write it
101    raw IP                 version from the first nibble; 228 = IPv4 only, 229 = IPv6 only
105    802.11                 data and QoS data frames with LLC/SNAP; management, control and
                              null-data frames are counted (``wifi_not_data``), protected
                              (encrypted) frames too (``wifi_protected``); an A-MSDU
                              aggregate is not split (``not_ip``); a protocol version other
                              than 0 (a frame received corrupt where the driver checked no
                              FCS, or 802.11ah's PV1) is ``malformed``, with no sequence number
113    Linux cooked (SLL)     16-byte header, protocol at byte 14
127    radiotap + 802.11      radiotap length skipped; frames flagged "bad FCS" are counted
                              (``bad_fcs``), the "data pad" flag is honoured
192    PPI                    PPI length skipped, then the PPI header's own link type
276    Linux cooked v2 (SLL2) 20-byte header, protocol at byte 0 (``tcpdump -i any``)
=====  =====================  ==============================================================

Network layer: IPv4 with options (IHL); IPv6 with hop-by-hop, routing, destination-options,
fragment, AH and mobility extension headers. A non-first fragment has no transport header: it is
counted (``ip_fragment``) and gets no flow, never guessed ports. A first fragment keeps its
ports; its ``ip_len`` is the size of the whole datagram when the transport header says it (UDP).

Tunnels, opened after an IP header (``_tunnel_inner``), up to ``MAX_TUNNEL_DEPTH`` (4) deep:

======  ======================  ============================================================
kind    carried in              read
======  ======================  ============================================================
gtpu    UDP, port 2152 (either  GTPv1-U G-PDU (type 0xFF): TEID, the optional sequence/N-PDU
        end)                    word and the chain of extension headers; other messages
                                (echo, end marker, GTP') are counted (``tunnel_other``)
vxlan   UDP, port 4789 (either  VNI (I flag set), then an Ethernet frame with its VLAN tags;
        end, as tshark)         a source port 4789 to GTP-U's port is GTP-U
gre     IP protocol 47          version 0: checksum, key, sequence options; IPv4, IPv6 or
                                transparent Ethernet (0x6558); version 1, routing or another
                                protocol type are counted (``tunnel_other``)
erspan  GRE, type 0x88BE or     ERSPAN I, II and III (``_erspan``): the mirrored Ethernet
        0x22EB                  frame; the session ID
4in4..  IP protocols 4 and 41   IP-in-IP, 6in4, 4in6, 6in6
======  ======================  ============================================================

A tunnel is interned (kind, TEID / VNI / GRE key, outer addresses, enclosing tunnel) in a
tunnel table, and the innermost one is part of the flow key: two bearers carrying the same
inner 5-tuple are two flows. Everything of the record (``ip_len``, ``ttl``, ``ip_id``,
ports, payload) is the innermost packet's; one not opened stays the outer packet, flagged
(``F_TUNNEL_OTHER``; ``F_TUNNEL_DEEP`` past the depth limit). A tunnel in an outer IP first
fragment is opened, as tshark does without reassembly: the fragment holds the headers, the
carried packet's length is its own header's, its payload is cut where the fragment ends (the
rest, in other frames, is ``ip_fragment``). A tunnel whose
header or carried packet is cut is ``too_short``; a carried frame without IP ``not_ip``.

Truncation: a frame whose captured bytes end before the headers needed for its flow (link,
IP, and the UDP header, or the TCP header with its options) is ``too_short`` and gets no flow.
A frame that decodes but whose payload was cut keeps its flow; ``head_len`` says how many
payload bytes were captured into ``head``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# -- link types ------------------------------------------------------------------------------
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_PPP = 9
LINKTYPE_RAW = 101
LINKTYPE_IEEE802_11 = 105
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IEEE802_11_RADIOTAP = 127
LINKTYPE_PPI = 192
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

LINK_NAMES = {
    LINKTYPE_NULL: "null",
    LINKTYPE_ETHERNET: "ethernet",
    LINKTYPE_PPP: "ppp",
    LINKTYPE_RAW: "raw",
    LINKTYPE_IEEE802_11: "802.11",
    LINKTYPE_LOOP: "loop",
    LINKTYPE_LINUX_SLL: "linux-sll",
    LINKTYPE_IEEE802_11_RADIOTAP: "radiotap",
    LINKTYPE_PPI: "ppi",
    LINKTYPE_IPV4: "ipv4",
    LINKTYPE_IPV6: "ipv6",
    LINKTYPE_LINUX_SLL2: "linux-sll2",
}

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

# -- 802.11 (monitor-mode captures: radiotap, PPI, bare 802.11) ---------------------------
NO_MAC_SEQ = 0xFFFF  # mac_seq of a record with no 802.11 sequence number
M_RETRY = 1  # the retry bit: a retransmission of a frame sent before
M_QOS = 2  # QoS data: numbered per receiver and traffic identifier, not per transmitter
M_DATA = 4  # a data frame (else management)

# -- tunnels (kinds of the tunnel table's rows) ------------------------------------------------
T_GTPU, T_VXLAN, T_GRE, T_4IN4, T_6IN4, T_4IN6, T_6IN6, T_ERSPAN = 1, 2, 3, 4, 5, 6, 7, 8
TUNNEL_NAMES = ("", "gtpu", "vxlan", "gre", "4in4", "6in4", "4in6", "6in6", "erspan")
TUNNEL_ID_NAMES = ("", "teid", "vni", "key", "", "", "", "", "session")
MAX_TUNNEL_DEPTH = 4
GTPU_PORT = 2152
VXLAN_PORT = 4789
_TUNNEL_OTHER = -2  # _tunnel_inner's answer besides an offset and a failure (-1)
# decode_frame's answers: the record is finished without flow, or has its flow key
FRAME_DONE, FRAME_FLOW = 0, 1

# Bytes of payload the payload hash covers (after the payload length is mixed in).
HASH_BYTES = 32
NO_TIME = np.iinfo(np.int64).min  # ts_ns of a record without a timestamp (pcapng SPB)

_ETHERTYPE_IPV4 = 0x0800
_ETHERTYPE_IPV6 = 0x86DD
_ETHERTYPE_TEB = 0x6558  # transparent Ethernet bridging (GRE)
_ETHERTYPE_ERSPAN = 0x88BE  # ERSPAN type I (no GRE sequence number) or II (GRE)
_ETHERTYPE_ERSPAN3 = 0x22EB  # ERSPAN type III (GRE)
_AF_INET6 = (10, 24, 28, 30)
_IPPROTO_TCP = 6
_IPPROTO_UDP = 17
_IPPROTO_IPIP = 4
_IPPROTO_IPV6 = 41
_IPPROTO_GRE = 47
_PORTED = (33, 132, 136)  # DCCP, SCTP, UDP-Lite: ports in the first 4 bytes
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


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
    h = (h ^ (h >> np.uint64(30))) * _M2
    h = (h ^ (h >> np.uint64(27))) * _M3
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
    h = np.uint64(length) * _M1
    n = min(length, HASH_BYTES)
    k = 0
    while k < n:
        if n - k >= 8:
            w = u64le(b, q + k)
        else:
            w = np.uint64(0)
            for j in range(n - k):
                w |= np.uint64(b[q + k + j]) << np.uint64(8 * j)
        h = (h ^ w) * _M2
        h ^= h >> np.uint64(29)
        k += 8
    return mix64(h)


# -- flow table --------------------------------------------------------------------------------
@njit(cache=True)
def flow_slot_hash(w0, w1, w2, w3, w4, w5):
    """The slot hash of a key. ``w5`` (a tunnel + 1, mostly 0) is mixed in beside the first
    words rather than in one more round: a key without tunnel hashes as a 5-word one."""
    h = (w0 ^ w1 ^ (w5 * _M3)) * _M1
    h = (h ^ w2 ^ (h >> np.uint64(31))) * _M2
    h = (h ^ w3 ^ (h >> np.uint64(31))) * _M3
    h = (h ^ w4 ^ (h >> np.uint64(31))) * _M1
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


# -- link layer --------------------------------------------------------------------------------
@njit(cache=True)
def _ethertype_kind(et):
    if et == _ETHERTYPE_IPV4:
        return 4
    if et == _ETHERTYPE_IPV6:
        return 6
    return 0


@njit(cache=True)
def _skip_vlan_tags(b, q, end, et):
    """Skip 802.1Q/802.1ad/QinQ tags. Returns (offset after the tags, inner ethertype), or
    offset -1 when a tag is cut."""
    while et == 0x8100 or et == 0x88A8 or et == 0x9100:
        if end - q < 4:
            return -1, 0
        et = u16be(b, q + 2)
        q += 4
    return q, et


@njit(cache=True)
def _radiotap_flags(b, p, hlen):
    """The radiotap Flags field (0 when absent): bit 0x20 data pad, 0x40 bad FCS."""
    present = u32le(b, p + 4)
    q = p + 8
    word = present
    while word & 0x80000000:  # extended presence bitmaps
        if q + 4 > p + hlen:
            return 0
        word = u32le(b, q)
        q += 4
    if present & 0x2 == 0:
        return 0
    if present & 0x1:  # TSFT: 8 bytes, 8-aligned from the header start
        q = p + ((q - p + 7) // 8) * 8 + 8
    if q >= p + hlen:
        return 0
    return np.int64(b[q])


@njit(cache=True)
def u48le(b, i):
    """Six bytes (a MAC address) as a little-endian word."""
    return np.uint64(u32le(b, i)) | (np.uint64(u16le(b, i + 4)) << np.uint64(32))


@njit(cache=True)
def mac_sequence_space(transmitter, receiver, tid):
    """The sequence counter an 802.11 frame is numbered from, as a nonzero 32-bit key: the
    transmitter's one counter for management and non-QoS data frames (``tid`` -1), one per
    receiver and traffic identifier for QoS data (IEEE 802.11-2020 §10.3.2.14)."""
    h = transmitter * _M1
    if tid >= 0:
        h ^= (receiver + np.uint64(1)) * _M2 + np.uint64(tid + 1)
    return np.uint32(mix64(h) >> np.uint64(32)) | np.uint32(1)


@njit(cache=True)
def wifi_sequence(b, p, end, linktype):
    """``(mac_seq, mac_flags, mac_space)`` of the 802.11 frame a radiotap, PPI or bare 802.11
    record carries; ``(NO_MAC_SEQ, 0, 0)`` for control frames, frames with a bad FCS or a
    protocol version other than 0, and records too short to say. What lets a monitor-mode
    capture fold a frame's retries into one packet and count the frames its sniffer missed
    (``io.capture.air``)."""
    none = (NO_MAC_SEQ, 0, np.uint32(0))
    if linktype == LINKTYPE_PPI:
        if end - p < 8:
            return none
        hlen = u16le(b, p + 2)
        linktype = u32le(b, p + 4)
        p += hlen
    if linktype == LINKTYPE_IEEE802_11_RADIOTAP:
        if end - p < 8:
            return none
        hlen = u16le(b, p + 2)
        if hlen < 8 or end - p < hlen or _radiotap_flags(b, p, hlen) & 0x40:
            return none
        p += hlen
    elif linktype != LINKTYPE_IEEE802_11:
        return none
    if end - p < 24:
        return none
    fc0 = np.int64(b[p])
    fc1 = np.int64(b[p + 1])
    kind = (fc0 >> 2) & 3
    if fc0 & 3 or kind != 0 and kind != 2:  # a version not 0 (not a frame read here), or a control frame
        return none
    flags = M_RETRY if fc1 & 0x08 else 0
    tid = -1
    if kind == 2:
        flags |= M_DATA
        if fc0 & 0x80:  # QoS data: the TID is in QoS control, after a fourth address if any
            at = p + (30 if fc1 & 3 == 3 else 24)
            if end - at < 1:
                return none
            tid = np.int64(b[at]) & 0x0F
            flags |= M_QOS
    space = mac_sequence_space(u48le(b, p + 10), u48le(b, p + 4), tid)
    return u16le(b, p + 22) >> 4, flags, space


@njit(cache=True)
def _ethernet(b, q, end):
    """The IP header of the Ethernet frame at ``q`` (a capture's link, or carried in a tunnel):
    (offset, 4 or 6), or (-1, status)."""
    if end - q < 14:
        return -1, S_TOO_SHORT
    q, et = _skip_vlan_tags(b, q + 14, end, u16be(b, q + 12))
    if q < 0:
        return -1, S_TOO_SHORT
    kind = _ethertype_kind(et)
    return (q, kind) if kind else (-1, S_NOT_IP)


@njit(cache=True)
def network_start(b, p, end, linktype):
    """Where the IP header starts and its version: (offset, 4 or 6), or (-1, status)."""
    data_pad = False
    while True:
        if linktype == LINKTYPE_ETHERNET:
            return _ethernet(b, p, end)
        if linktype == LINKTYPE_RAW or linktype == LINKTYPE_IPV4 or linktype == LINKTYPE_IPV6:
            if end - p < 1:
                return -1, S_TOO_SHORT
            version = np.int64(b[p]) >> 4
            if linktype == LINKTYPE_IPV4 and version != 4 or linktype == LINKTYPE_IPV6 and version != 6:
                return -1, S_MALFORMED
            return (p, version) if version == 4 or version == 6 else (-1, S_NOT_IP)
        if linktype == LINKTYPE_PPP:
            if end - p >= 2 and b[p] == 0xFF and b[p + 1] == 0x03:  # HDLC address and control, when present
                p += 2
            if end - p < 1:
                return -1, S_TOO_SHORT
            if b[p] & 1:  # a protocol field compressed to one byte (RFC 1661 §6.5)
                protocol = np.int64(b[p])
                p += 1
            else:
                if end - p < 2:
                    return -1, S_TOO_SHORT
                protocol = u16be(b, p)
                p += 2
            if protocol == 0x21:
                return p, 4
            return (p, 6) if protocol == 0x57 else (-1, S_NOT_IP)
        if linktype == LINKTYPE_NULL or linktype == LINKTYPE_LOOP:
            if end - p < 4:
                return -1, S_TOO_SHORT
            af = u32le(b, p)
            if af > 0xFFFF:  # written in the other byte order
                af = u32be(b, p)
            if af == 2:
                return p + 4, 4
            for v6 in _AF_INET6:
                if af == v6:
                    return p + 4, 6
            return -1, S_NOT_IP
        if linktype == LINKTYPE_LINUX_SLL or linktype == LINKTYPE_LINUX_SLL2:
            hlen = 16 if linktype == LINKTYPE_LINUX_SLL else 20
            if end - p < hlen:
                return -1, S_TOO_SHORT
            et = u16be(b, p + 14) if linktype == LINKTYPE_LINUX_SLL else u16be(b, p)
            q, et = _skip_vlan_tags(b, p + hlen, end, et)
            if q < 0:
                return -1, S_TOO_SHORT
            kind = _ethertype_kind(et)
            return (q, kind) if kind else (-1, S_NOT_IP)
        if linktype == LINKTYPE_IEEE802_11_RADIOTAP:
            if end - p < 8:
                return -1, S_TOO_SHORT
            hlen = u16le(b, p + 2)
            if hlen < 8 or end - p < hlen:
                return -1, S_TOO_SHORT
            flags = _radiotap_flags(b, p, hlen)
            if flags & 0x40:
                return -1, S_BAD_FCS
            data_pad = (flags & 0x20) != 0
            p += hlen
            linktype = LINKTYPE_IEEE802_11
            continue
        if linktype == LINKTYPE_PPI:
            if end - p < 8:
                return -1, S_TOO_SHORT
            hlen = u16le(b, p + 2)
            inner = u32le(b, p + 4)
            if hlen < 8 or end - p < hlen:
                return -1, S_TOO_SHORT
            if inner == LINKTYPE_PPI or inner == LINKTYPE_IEEE802_11_RADIOTAP:
                return -1, S_UNSUPPORTED_LINK
            p += hlen
            linktype = inner
            continue
        if linktype == LINKTYPE_IEEE802_11:
            if end - p < 2:
                return -1, S_TOO_SHORT
            fc0 = np.int64(b[p])
            fc1 = np.int64(b[p + 1])
            subtype = fc0 >> 4
            if fc0 & 3:  # protocol version 0 is the only one this layout holds for
                return -1, S_MALFORMED
            if (fc0 >> 2) & 3 != 2 or subtype & 4:  # not a data frame, or a null-data one
                return -1, S_WIFI_NOT_DATA
            if fc1 & 0x40:
                return -1, S_WIFI_PROTECTED
            hlen = 24
            if fc1 & 3 == 3:  # to-DS and from-DS: a fourth address
                hlen += 6
            if subtype & 8:  # QoS data: QoS control, and HT control when "order" is set
                hlen += 2
                if fc1 & 0x80:
                    hlen += 4
            if data_pad:
                hlen = (hlen + 3) // 4 * 4
            q = p + hlen
            if end - q < 8:
                return -1, S_TOO_SHORT
            if b[q] != 0xAA or b[q + 1] != 0xAA or b[q + 2] != 0x03:
                return -1, S_NOT_IP
            kind = _ethertype_kind(u16be(b, q + 6))
            return (q + 8, kind) if kind else (-1, S_NOT_IP)
        return -1, S_UNSUPPORTED_LINK


# -- tunnels ----------------------------------------------------------------------------------
@njit(cache=True)
def _may_tunnel(b, l4, end, proto):
    """Whether ``_tunnel_inner`` may find a tunnel: the common case, a packet that is not one,
    told in a few instructions."""
    if proto == _IPPROTO_UDP:
        if end - l4 < 8:
            return False
        sport = u16be(b, l4)
        dport = u16be(b, l4 + 2)
        return dport == VXLAN_PORT or dport == GTPU_PORT or sport == GTPU_PORT or sport == VXLAN_PORT
    return proto == _IPPROTO_IPIP or proto == _IPPROTO_IPV6 or proto == _IPPROTO_GRE


@njit(cache=True)
def _erspan(b, g, end, et, sequenced):
    """The mirrored frame an ERSPAN header at ``g`` (after GRE's) carries, as ``_tunnel_inner``
    answers. Type I (0x88BE, no GRE sequence number, as Wireshark tells it): the Ethernet frame
    at once, no session. Type II (0x88BE with one): an 8-byte header of version 1. Type III
    (0x22EB): a 12-byte header of version 2, 8 bytes more when its O bit says a platform
    sub-header follows; a frame type other than Ethernet (FT 0) is not opened. The session ID
    (10 bits) is the tunnel's id."""
    if et == _ETHERTYPE_ERSPAN and not sequenced:
        q, inner = _ethernet(b, g, end)
        return q, inner, T_ERSPAN, 0, 0
    size = 8 if et == _ETHERTYPE_ERSPAN else 12
    if end - g < size:
        return -1, S_TOO_SHORT, 0, 0, 0
    if np.int64(b[g]) >> 4 != (1 if size == 8 else 2):
        return _TUNNEL_OTHER, 0, 0, 0, 0
    session = u16be(b, g + 2) & 0x3FF
    if size == 12:
        word = u16be(b, g + 10)
        if (word >> 10) & 0x1F:  # a frame type other than Ethernet
            return _TUNNEL_OTHER, 0, 0, 0, 0
        size += 8 * (word & 1)
    q, inner = _ethernet(b, g + size, end)
    return q, inner, T_ERSPAN, session, 1


@njit(cache=True, inline="always")
def _tunnel_inner(b, l4, end, proto, version):
    """The packet a tunnel header at ``l4`` carries: (offset, 4 or 6, kind, id, has id).

    Called where ``_may_tunnel`` says so. The offset is -1 (and the version a status) when the
    tunnel is cut or carries no IP, ``_TUNNEL_OTHER`` when the header is a tunnel's but not one
    that carries a packet ldanalyze opens. Inlined into ``decode_frame`` (its one caller), as
    ``_ip_header`` is: a call costs a tunnelled packet a tenth of its decoding (the call, the
    reference counts of ``b`` and the answer passed through memory).
    """
    if proto == _IPPROTO_IPIP or proto == _IPPROTO_IPV6:
        inner = 4 if proto == _IPPROTO_IPIP else 6
        kind = (T_4IN4 if version == 4 else T_4IN6) if inner == 4 else (T_6IN4 if version == 4 else T_6IN6)
        return l4, inner, kind, 0, 0
    if proto == _IPPROTO_GRE:
        if end - l4 < 4:
            return -1, S_TOO_SHORT, 0, 0, 0
        bits = u16be(b, l4)
        if bits & 0x4007:  # a routing field (RFC 1701) or a version other than 0 (PPTP's is 1)
            return _TUNNEL_OTHER, 0, 0, 0, 0
        g = l4 + 4
        if bits & 0x8000:  # checksum and reserved word
            g += 4
        key = 0
        has_key = 0
        if bits & 0x2000:
            if end - g < 4:
                return -1, S_TOO_SHORT, 0, 0, 0
            key = u32be(b, g)
            has_key = 1
            g += 4
        if bits & 0x1000:  # sequence number
            g += 4
        et = u16be(b, l4 + 2)
        if et == _ETHERTYPE_TEB:
            g, inner = _ethernet(b, g, end)
        elif et == _ETHERTYPE_ERSPAN or et == _ETHERTYPE_ERSPAN3:
            return _erspan(b, g, end, et, bits & 0x1000)
        else:
            inner = _ethertype_kind(et)
            if inner == 0:
                return _TUNNEL_OTHER, 0, 0, 0, 0
        return g, inner, T_GRE, key, has_key
    g = l4 + 8  # UDP, with a port of a tunnel (_may_tunnel)
    if u16be(b, l4 + 2) == VXLAN_PORT or (u16be(b, l4) == VXLAN_PORT and u16be(b, l4 + 2) != GTPU_PORT):
        if end - g < 8:
            return -1, S_TOO_SHORT, 0, 0, 0
        if b[g] & 0x08 == 0:  # no valid VNI
            return _TUNNEL_OTHER, 0, 0, 0, 0
        q, inner = _ethernet(b, g + 8, end)
        return q, inner, T_VXLAN, u32be(b, g + 4) >> 8, 1
    if end - g < 8:
        return -1, S_TOO_SHORT, 0, 0, 0
    bits = np.int64(b[g])
    if bits >> 4 != 3 or b[g + 1] != 0xFF:  # not GTPv1 (version 1, PT 1), or not a G-PDU
        return _TUNNEL_OTHER, 0, 0, 0, 0
    teid = u32be(b, g + 4)
    q = g + 8
    if bits & 7:  # E, S or PN: sequence number, N-PDU number, next extension type
        if end - q < 4:
            return -1, S_TOO_SHORT, 0, 0, 0
        following = np.int64(b[q + 3]) if bits & 4 else 0
        q += 4
        while following:
            if end - q < 1:
                return -1, S_TOO_SHORT, 0, 0, 0
            size = np.int64(b[q]) * 4
            if size == 0:
                return -1, S_MALFORMED, 0, 0, 0
            if end - q < size:
                return -1, S_TOO_SHORT, 0, 0, 0
            following = np.int64(b[q + size - 1])
            q += size
    if end - q < 1:
        return -1, S_TOO_SHORT, 0, 0, 0
    inner = np.int64(b[q]) >> 4
    if inner != 4 and inner != 6:
        return -1, S_NOT_IP, 0, 0, 0
    return q, inner, T_GTPU, teid, 1


# -- network and transport ---------------------------------------------------------------------
@njit(cache=True, inline="always")
def _ip_header(b, p, q, end, wirelen, version):
    """Read the IP header at ``q``: (status, protocol, transport offset, end of the datagram,
    flags, TTL, IP ID, src hi, src lo, dst hi, dst lo); status 0 when the transport header may
    follow, else the record's (the fields up to the IP ID are set for ``S_FRAGMENT``). Inlined
    into ``decode_frame``, its one caller (see ``_tunnel_inner``).
    """
    ip_id = 0
    flags = 0
    fragment_rest = False
    zero = np.uint64(0)
    if version == 4:
        if end - q < 20:
            return S_TOO_SHORT, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
        vihl = np.int64(b[q])
        ihl = (vihl & 15) * 4
        if vihl >> 4 != 4 or ihl < 20:
            return S_MALFORMED, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
        if end - q < ihl:
            return S_TOO_SHORT, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
        total = u16be(b, q + 2)
        if total == 0:  # segmentation offload: the length was left to the NIC
            total = wirelen - (q - p)
        if total < ihl:
            return S_MALFORMED, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
        frag = u16be(b, q + 6)
        proto = np.int64(b[q + 9])
        ip_id = u16be(b, q + 4)
        ttl = np.int64(b[q + 8])
        w1 = zero
        w2 = np.uint64(u32be(b, q + 12))
        w3 = zero
        w4 = np.uint64(u32be(b, q + 16))
        l4 = q + ihl
        if frag & 0x1FFF:
            fragment_rest = True
        elif frag & 0x2000:
            flags |= F_FIRST_FRAGMENT
        ip_end = q + total
    else:
        if end - q < 40:
            return S_TOO_SHORT, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
        if np.int64(b[q]) >> 4 != 6:
            return S_MALFORMED, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
        plen = u16be(b, q + 4)
        if plen == 0:  # jumbogram or offload: take the frame's length
            plen = wirelen - (q - p) - 40
        proto = np.int64(b[q + 6])
        ttl = np.int64(b[q + 7])
        w1 = u64be(b, q + 8)
        w2 = u64be(b, q + 16)
        w3 = u64be(b, q + 24)
        w4 = u64be(b, q + 32)
        l4 = q + 40
        ip_end = l4 + plen
        while proto == 0 or proto == 43 or proto == 60 or proto == 44 or proto == 51 or proto == 135:
            if end - l4 < 8:
                return S_TOO_SHORT, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
            nxt = np.int64(b[l4])
            if proto == 44:
                fo = u16be(b, l4 + 2)
                ip_id = u32be(b, l4 + 4)
                if fo >> 3:
                    fragment_rest = True
                elif fo & 1:
                    flags |= F_FIRST_FRAGMENT
                hlen = 8
            elif proto == 51:
                hlen = (np.int64(b[l4 + 1]) + 2) * 4
            else:
                hlen = (np.int64(b[l4 + 1]) + 1) * 8
            proto = nxt
            l4 += hlen
            if fragment_rest:
                break
        if ip_end < l4:
            return S_MALFORMED, 0, 0, 0, 0, 0, 0, zero, zero, zero, zero
    status = S_FRAGMENT if fragment_rest else 0
    return status, proto, l4, ip_end, flags, ttl, ip_id, w1, w2, w3, w4


@njit(cache=True)
def decode_frame(b, p, caplen, wirelen, linktype, out, heads, i, tunnels, tunnel_slots, n_tunnels):
    """Decode the frame ``b[p:p+caplen]`` into record ``out[i]``, all but its flow id, opening
    its tunnels on the way (up to ``MAX_TUNNEL_DEPTH``, each interned in ``tunnels``: rows as
    ``intern_flow`` says; the caller leaves room for ``MAX_TUNNEL_DEPTH`` more).

    Returns ``(state, w0, .., w5, n_tunnels)``: ``FRAME_FLOW`` with the flow key
    (``intern_flow``'s, which the caller interns and writes to ``flow``), or ``FRAME_DONE`` for
    a record without flow. Each header is read once: a tunnel's carried packet is decoded from
    where its header ends. A tunnel cut, or carrying no IP, leaves the record the fields of the
    header around it and the status; one not opened (``F_TUNNEL_OTHER``, ``F_TUNNEL_DEEP``)
    leaves it the packet that carries it.

    Every array a kernel takes costs two reference-count updates on each call (numba cannot
    prune those past a call that may raise): the walks pass borrowed views (``walk.borrowed``),
    whose updates are a test of a null pointer, not atomic. ``heads`` is ``out["head"]`` (a
    view: writing through a nested array view of the record would cost a reference count per
    packet). The caller has set ``ts_ns``, ``offset``, ``iface``, ``caplen`` and ``wirelen``.
    """
    zero = np.uint64(0)
    r = out[i]
    r["flow"] = -1
    r["tunnel"] = -1
    r["flags"] = 0
    r["ip_ver"] = 0
    r["proto"] = 0
    r["ttl"] = 0
    r["ip_len"] = 0
    r["ip_id"] = 0
    r["payload_len"] = 0
    r["head_len"] = 0
    r["payload_hash"] = 0
    r["tcp_seq"] = 0
    r["tcp_ack"] = 0
    r["tcp_flags"] = 0
    r["tcp_tsval"] = 0
    r["tcp_tsecr"] = 0
    r["tcp_mss"] = 0
    end = p + caplen
    if linktype == LINKTYPE_IEEE802_11_RADIOTAP or linktype == LINKTYPE_IEEE802_11 or linktype == LINKTYPE_PPI:
        r["mac_seq"], r["mac_flags"], r["mac_space"] = wifi_sequence(b, p, end, linktype)
    else:
        r["mac_seq"] = NO_MAC_SEQ
        r["mac_flags"] = 0
        r["mac_space"] = 0
    # Ethernet read here: network_start's reference counts would cost every packet
    q, version = _ethernet(b, p, end) if linktype == LINKTYPE_ETHERNET else network_start(b, p, end, linktype)
    if q < 0:
        r["status"] = version
        return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
    tunnel = -1
    depth = 0
    flags = 0
    while True:  # an IP header, and the tunnel it may start
        status, proto, l4, ip_end, header_flags, ttl, ip_id, w1, w2, w3, w4 = _ip_header(b, p, q, end, wirelen, version)
        r["ip_ver"] = version
        if status == S_TOO_SHORT or status == S_MALFORMED:  # (the enclosing header's fields stay)
            r["status"] = status
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        r["ttl"] = ttl
        r["ip_id"] = ip_id
        r["proto"] = proto
        r["ip_len"] = ip_end - q
        if status:
            r["status"] = status
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        if not _may_tunnel(b, l4, end, proto):
            break
        if depth == MAX_TUNNEL_DEPTH:
            flags = F_TUNNEL_DEEP
            break
        inner, inner_version, kind, ident, has_id = _tunnel_inner(b, l4, end, proto, version)
        if inner == _TUNNEL_OTHER:
            flags = F_TUNNEL_OTHER
            break
        if inner < 0:
            r["status"] = inner_version
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        tw0 = np.uint64(kind | (has_id << 8) | (version << 16)) | (np.uint64(ident) << np.uint64(32))
        tunnel, n_tunnels = intern_flow(tunnels, tunnel_slots, n_tunnels, tw0, w1, w2, w3, w4, np.uint64(tunnel + 1))
        r["tunnel"] = tunnel
        depth += 1
        q = inner
        version = inner_version
    flags |= header_flags
    l4_len = ip_end - l4
    sport = 0
    dport = 0
    if proto == _IPPROTO_UDP:
        if end - l4 < 8:
            r["status"] = S_TOO_SHORT
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        sport = u16be(b, l4)
        dport = u16be(b, l4 + 2)
        ulen = u16be(b, l4 + 4)
        if ulen >= 8:
            payload_len = ulen - 8
            if flags & F_FIRST_FRAGMENT:
                r["ip_len"] = l4 - q + ulen
        else:
            payload_len = l4_len - 8
        payload = l4 + 8
    elif proto == _IPPROTO_TCP:
        if end - l4 < 20:
            r["status"] = S_TOO_SHORT
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        doff = (np.int64(b[l4 + 12]) >> 4) * 4
        if doff < 20:
            r["status"] = S_MALFORMED
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        if end - l4 < doff:
            r["status"] = S_TOO_SHORT
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        sport = u16be(b, l4)
        dport = u16be(b, l4 + 2)
        r["tcp_seq"] = u32be(b, l4 + 4)
        r["tcp_ack"] = u32be(b, l4 + 8)
        r["tcp_flags"] = b[l4 + 13]
        o = l4 + 20
        while o < l4 + doff:
            kind = b[o]
            if kind == 0:
                break
            if kind == 1:
                o += 1
                continue
            if o + 1 >= l4 + doff:
                break
            olen = np.int64(b[o + 1])
            if olen < 2 or o + olen > l4 + doff:
                break
            if kind == 2 and olen == 4:
                r["tcp_mss"] = u16be(b, o + 2)
                flags |= F_TCP_MSS
            elif kind == 8 and olen == 10:
                r["tcp_tsval"] = u32be(b, o + 2)
                r["tcp_tsecr"] = u32be(b, o + 6)
                flags |= F_TCP_TIMESTAMP
            o += olen
        payload_len = l4_len - doff
        payload = l4 + doff
    else:
        hlen = 0
        for ported in _PORTED:
            if proto == ported:
                hlen = 4
        if end - l4 < hlen:
            r["status"] = S_TOO_SHORT
            return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
        if hlen:
            sport = u16be(b, l4)
            dport = u16be(b, l4 + 2)
        payload_len = l4_len - hlen
        payload = l4 + hlen
    if payload_len < 0:
        r["status"] = S_MALFORMED
        return FRAME_DONE, zero, zero, zero, zero, zero, zero, n_tunnels
    r["payload_len"] = payload_len
    captured = max(0, min(payload_len, end - payload))
    n_head = min(captured, heads.shape[1])
    for k in range(n_head):
        heads[i, k] = b[payload + k]
    for k in range(n_head, heads.shape[1]):
        heads[i, k] = 0
    r["head_len"] = n_head
    if captured >= min(payload_len, HASH_BYTES):
        r["payload_hash"] = payload_hash(b, payload, payload_len)
    r["flags"] = flags
    r["status"] = S_DECODED
    w0 = np.uint64(version | (proto << 8) | (sport << 16) | (dport << 32))
    return FRAME_FLOW, w0, w1, w2, w3, w4, np.uint64(tunnel + 1), n_tunnels
