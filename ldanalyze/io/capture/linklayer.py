"""The link layer of a captured frame, in numba: where its IP header starts (``network_start``,
``ethernet``) and, for monitor-mode captures, the 802.11 sequence number (``wifi_sequence``).

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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .record import (
    M_DATA,
    M_PROTECTED,
    M_QOS,
    M_RETRY,
    MUL1,
    MUL2,
    NO_MAC_SEQ,
    S_BAD_FCS,
    S_MALFORMED,
    S_NOT_IP,
    S_TOO_SHORT,
    S_UNSUPPORTED_LINK,
    S_WIFI_NOT_DATA,
    S_WIFI_PROTECTED,
    mix64,
    u16be,
    u16le,
    u32be,
    u32le,
)

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

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_TEB = 0x6558  # transparent Ethernet bridging (GRE)
ETHERTYPE_ERSPAN = 0x88BE  # ERSPAN type I (no GRE sequence number) or II (GRE)
ETHERTYPE_ERSPAN3 = 0x22EB  # ERSPAN type III (GRE)
_AF_INET6 = (10, 24, 28, 30)


@njit(cache=True)
def ethertype_kind(et):
    if et == ETHERTYPE_IPV4:
        return 4
    if et == ETHERTYPE_IPV6:
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
    h = transmitter * MUL1
    if tid >= 0:
        h ^= (receiver + np.uint64(1)) * MUL2 + np.uint64(tid + 1)
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
    if fc1 & 0x40:
        flags |= M_PROTECTED
    tid = -1
    if kind == 2:
        flags |= M_DATA
        if fc0 & 0x80:  # QoS data: the TID is in QoS control, after a fourth address if any
            at = p + (30 if fc1 & 3 == 3 else 24)
            if end - at < 1:
                return none
            tid = np.int64(b[at]) & 0x0F  # type: ignore[assignment]  # numba's int64, an int to mypy
            flags |= M_QOS
    space = mac_sequence_space(u48le(b, p + 10), u48le(b, p + 4), tid)
    return u16le(b, p + 22) >> 4, flags, space


@njit(cache=True)
def ethernet(b, q, end):
    """The IP header of the Ethernet frame at ``q`` (a capture's link, or carried in a tunnel):
    (offset, 4 or 6), or (-1, status)."""
    if end - q < 14:
        return -1, S_TOO_SHORT
    q, et = _skip_vlan_tags(b, q + 14, end, u16be(b, q + 12))
    if q < 0:
        return -1, S_TOO_SHORT
    kind = ethertype_kind(et)
    return (q, kind) if kind else (-1, S_NOT_IP)


@njit(cache=True)
def network_start(b, p, end, linktype):
    """Where the IP header starts and its version: (offset, 4 or 6), or (-1, status)."""
    data_pad = False
    while True:
        if linktype == LINKTYPE_ETHERNET:
            return ethernet(b, p, end)
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
            kind = ethertype_kind(et)
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
            kind = ethertype_kind(u16be(b, q + 6))
            return (q + 8, kind) if kind else (-1, S_NOT_IP)
        return -1, S_UNSUPPORTED_LINK
