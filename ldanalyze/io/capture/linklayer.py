"""Decoding one captured frame: link layer → IPv4/IPv6 → UDP/TCP, into one record, in numba.

``decode_frame`` is called by the container walks of ``walk.py`` for every record. It writes
the record's fields (see ``record_dtype``) and interns the record's 5-tuple in an open-addressing
flow table, so that memory holds one small flow id per packet instead of its addresses.

Link types (LINKTYPE_* values of the pcap/pcapng specifications):

=====  =====================  ==============================================================
0/108  BSD null / loopback    4-byte address family, in either byte order (2 = IPv4;
                              10, 24, 28, 30 = IPv6 on Linux, NetBSD/OpenBSD, FreeBSD, macOS)
1      Ethernet               with any stack of 802.1Q / 802.1ad / QinQ tags (0x8100, 0x88a8,
                              0x9100)
101    raw IP                 version from the first nibble; 228 = IPv4 only, 229 = IPv6 only
105    802.11                 data and QoS data frames with LLC/SNAP; management, control and
                              null-data frames are counted (``wifi_not_data``), protected
                              (encrypted) frames too (``wifi_protected``); an A-MSDU
                              aggregate is not split (``not_ip``)
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

# Bytes of payload the payload hash covers (after the payload length is mixed in).
HASH_BYTES = 32
NO_TIME = np.iinfo(np.int64).min  # ts_ns of a record without a timestamp (pcapng SPB)

_ETHERTYPE_IPV4 = 0x0800
_ETHERTYPE_IPV6 = 0x86DD
_AF_INET6 = (10, 24, 28, 30)
_IPPROTO_TCP = 6
_IPPROTO_UDP = 17
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
def flow_slot_hash(w0, w1, w2, w3, w4):
    h = (w0 ^ w1) * _M1
    h = (h ^ w2 ^ (h >> np.uint64(31))) * _M2
    h = (h ^ w3 ^ (h >> np.uint64(31))) * _M3
    h = (h ^ w4 ^ (h >> np.uint64(31))) * _M1
    return h ^ (h >> np.uint64(32))


@njit(cache=True)
def intern_flow(keys, slots, n_flows, w0, w1, w2, w3, w4):
    """Index of the flow with key (w0..w4), added when new. Returns (flow, n_flows).

    ``keys`` rows are (ver | proto << 8 | sport << 16 | dport << 32, src hi, src lo, dst hi,
    dst lo); ``slots`` (a power of two, -1 = empty) maps hashes to rows. The caller keeps the
    table at most half full.
    """
    mask = np.uint64(slots.shape[0] - 1)
    s = flow_slot_hash(w0, w1, w2, w3, w4) & mask
    while True:
        f = slots[s]
        if f < 0:
            keys[n_flows, 0] = w0
            keys[n_flows, 1] = w1
            keys[n_flows, 2] = w2
            keys[n_flows, 3] = w3
            keys[n_flows, 4] = w4
            slots[s] = n_flows
            return n_flows, n_flows + 1
        if keys[f, 0] == w0 and keys[f, 1] == w1 and keys[f, 2] == w2 and keys[f, 3] == w3 and keys[f, 4] == w4:
            return f, n_flows
        s = (s + np.uint64(1)) & mask


@njit(cache=True)
def rehash_flows(keys, n_flows, slots):
    """Fill a fresh (all -1) slot array from the first ``n_flows`` keys."""
    mask = np.uint64(slots.shape[0] - 1)
    for f in range(n_flows):
        s = flow_slot_hash(keys[f, 0], keys[f, 1], keys[f, 2], keys[f, 3], keys[f, 4]) & mask
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
def network_start(b, p, end, linktype):
    """Where the IP header starts and its version: (offset, 4 or 6), or (-1, status)."""
    data_pad = False
    while True:
        if linktype == LINKTYPE_ETHERNET:
            if end - p < 14:
                return -1, S_TOO_SHORT
            q, et = _skip_vlan_tags(b, p + 14, end, u16be(b, p + 12))
            if q < 0:
                return -1, S_TOO_SHORT
            kind = _ethertype_kind(et)
            return (q, kind) if kind else (-1, S_NOT_IP)
        if linktype == LINKTYPE_RAW or linktype == LINKTYPE_IPV4 or linktype == LINKTYPE_IPV6:
            if end - p < 1:
                return -1, S_TOO_SHORT
            version = np.int64(b[p]) >> 4
            if linktype == LINKTYPE_IPV4 and version != 4 or linktype == LINKTYPE_IPV6 and version != 6:
                return -1, S_MALFORMED
            return (p, version) if version == 4 or version == 6 else (-1, S_NOT_IP)
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


# -- network and transport ---------------------------------------------------------------------
@njit(cache=True)
def decode_frame(b, p, caplen, wirelen, linktype, out, heads, i, keys, slots, n_flows):
    """Decode the frame ``b[p:p+caplen]`` into record ``out[i]``; returns the new flow count.

    ``heads`` is ``out["head"]`` (a view: writing through a nested array view of the record
    would cost a reference count per packet). The caller has set ``ts_ns``, ``offset``,
    ``iface``, ``caplen`` and ``wirelen``. The flow table must have room for one more flow.
    """
    r = out[i]
    r["flow"] = -1
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
    q, version = network_start(b, p, end, linktype)
    if q < 0:
        r["status"] = version
        return n_flows
    r["ip_ver"] = version
    flags = 0
    fragment_rest = False
    if version == 4:
        if end - q < 20:
            r["status"] = S_TOO_SHORT
            return n_flows
        vihl = np.int64(b[q])
        ihl = (vihl & 15) * 4
        if vihl >> 4 != 4 or ihl < 20:
            r["status"] = S_MALFORMED
            return n_flows
        if end - q < ihl:
            r["status"] = S_TOO_SHORT
            return n_flows
        total = u16be(b, q + 2)
        if total == 0:  # segmentation offload: the length was left to the NIC
            total = wirelen - (q - p)
        if total < ihl:
            r["status"] = S_MALFORMED
            return n_flows
        frag = u16be(b, q + 6)
        proto = np.int64(b[q + 9])
        r["ip_id"] = u16be(b, q + 4)
        r["ttl"] = b[q + 8]
        w1 = np.uint64(0)
        w2 = np.uint64(u32be(b, q + 12))
        w3 = np.uint64(0)
        w4 = np.uint64(u32be(b, q + 16))
        l4 = q + ihl
        if frag & 0x1FFF:
            fragment_rest = True
        elif frag & 0x2000:
            flags |= F_FIRST_FRAGMENT
        ip_end = q + total
    else:
        if end - q < 40:
            r["status"] = S_TOO_SHORT
            return n_flows
        if np.int64(b[q]) >> 4 != 6:
            r["status"] = S_MALFORMED
            return n_flows
        plen = u16be(b, q + 4)
        if plen == 0:  # jumbogram or offload: take the frame's length
            plen = wirelen - (q - p) - 40
        proto = np.int64(b[q + 6])
        r["ttl"] = b[q + 7]
        w1 = u64be(b, q + 8)
        w2 = u64be(b, q + 16)
        w3 = u64be(b, q + 24)
        w4 = u64be(b, q + 32)
        l4 = q + 40
        ip_end = l4 + plen
        while proto == 0 or proto == 43 or proto == 60 or proto == 44 or proto == 51 or proto == 135:
            if end - l4 < 8:
                r["status"] = S_TOO_SHORT
                return n_flows
            nxt = np.int64(b[l4])
            if proto == 44:
                fo = u16be(b, l4 + 2)
                r["ip_id"] = u32be(b, l4 + 4)
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
            r["status"] = S_MALFORMED
            return n_flows
    r["proto"] = proto
    r["ip_len"] = ip_end - q
    if fragment_rest:
        r["status"] = S_FRAGMENT
        return n_flows
    l4_len = ip_end - l4
    sport = 0
    dport = 0
    if proto == _IPPROTO_UDP:
        if end - l4 < 8:
            r["status"] = S_TOO_SHORT
            return n_flows
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
            return n_flows
        doff = (np.int64(b[l4 + 12]) >> 4) * 4
        if doff < 20:
            r["status"] = S_MALFORMED
            return n_flows
        if end - l4 < doff:
            r["status"] = S_TOO_SHORT
            return n_flows
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
            return n_flows
        if hlen:
            sport = u16be(b, l4)
            dport = u16be(b, l4 + 2)
        payload_len = l4_len - hlen
        payload = l4 + hlen
    if payload_len < 0:
        r["status"] = S_MALFORMED
        return n_flows
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
    w0 = np.uint64(version | (proto << 8) | (sport << 16) | (dport << 32))
    flow, n_flows = intern_flow(keys, slots, n_flows, w0, w1, w2, w3, w4)
    r["flow"] = flow
    r["status"] = S_DECODED
    return n_flows
