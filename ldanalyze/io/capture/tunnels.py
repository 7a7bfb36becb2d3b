"""Tunnels opened after an IP header, in numba (``tunnel_inner``), up to ``MAX_TUNNEL_DEPTH`` (4) deep:

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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .linklayer import ETHERTYPE_ERSPAN, ETHERTYPE_ERSPAN3, ETHERTYPE_TEB, ethernet, ethertype_kind
from .record import (
    IPPROTO_GRE,
    IPPROTO_IPIP,
    IPPROTO_IPV6,
    IPPROTO_UDP,
    S_MALFORMED,
    S_NOT_IP,
    S_TOO_SHORT,
    u16be,
    u32be,
)

# -- tunnels (kinds of the tunnel table's rows) ------------------------------------------------
T_GTPU, T_VXLAN, T_GRE, T_4IN4, T_6IN4, T_4IN6, T_6IN6, T_ERSPAN = 1, 2, 3, 4, 5, 6, 7, 8
TUNNEL_NAMES = ("", "gtpu", "vxlan", "gre", "4in4", "6in4", "4in6", "6in6", "erspan")
MAX_TUNNEL_DEPTH = 4
GTPU_PORT = 2152
VXLAN_PORT = 4789
TUNNEL_OTHER = -2  # tunnel_inner's answer besides an offset and a failure (-1)


@njit(cache=True)
def may_tunnel(b, l4, end, proto):
    """Whether ``tunnel_inner`` may find a tunnel: the common case, a packet that is not one,
    told in a few instructions."""
    if proto == IPPROTO_UDP:
        if end - l4 < 8:
            return False
        sport = u16be(b, l4)
        dport = u16be(b, l4 + 2)
        return dport == VXLAN_PORT or dport == GTPU_PORT or sport == GTPU_PORT or sport == VXLAN_PORT
    return proto == IPPROTO_IPIP or proto == IPPROTO_IPV6 or proto == IPPROTO_GRE


@njit(cache=True)
def _erspan(b, g, end, et, sequenced):
    """The mirrored frame an ERSPAN header at ``g`` (after GRE's) carries, as ``tunnel_inner``
    answers. Type I (0x88BE, no GRE sequence number, as Wireshark tells it): the Ethernet frame
    at once, no session. Type II (0x88BE with one): an 8-byte header of version 1. Type III
    (0x22EB): a 12-byte header of version 2, 8 bytes more when its O bit says a platform
    sub-header follows; a frame type other than Ethernet (FT 0) is not opened. The session ID
    (10 bits) is the tunnel's id."""
    if et == ETHERTYPE_ERSPAN and not sequenced:
        q, inner = ethernet(b, g, end)
        return q, inner, T_ERSPAN, 0, 0
    size = 8 if et == ETHERTYPE_ERSPAN else 12
    if end - g < size:
        return -1, S_TOO_SHORT, 0, 0, 0
    if np.int64(b[g]) >> 4 != (1 if size == 8 else 2):
        return TUNNEL_OTHER, 0, 0, 0, 0
    session = u16be(b, g + 2) & 0x3FF
    if size == 12:
        word = u16be(b, g + 10)
        if (word >> 10) & 0x1F:  # a frame type other than Ethernet
            return TUNNEL_OTHER, 0, 0, 0, 0
        size += 8 * (word & 1)
    q, inner = ethernet(b, g + size, end)
    return q, inner, T_ERSPAN, session, 1


@njit(cache=True, inline="always")
def tunnel_inner(b, l4, end, proto, version):
    """The packet a tunnel header at ``l4`` carries: (offset, 4 or 6, kind, id, has id).

    Called where ``may_tunnel`` says so. The offset is -1 (and the version a status) when the
    tunnel is cut or carries no IP, ``TUNNEL_OTHER`` when the header is a tunnel's but not one
    that carries a packet ldanalyze opens. Inlined into ``decode_frame`` (its one caller), as
    ``_ip_header`` is: a call costs a tunnelled packet a tenth of its decoding (the call, the
    reference counts of ``b`` and the answer passed through memory).
    """
    if proto == IPPROTO_IPIP or proto == IPPROTO_IPV6:
        inner = 4 if proto == IPPROTO_IPIP else 6
        kind = (T_4IN4 if version == 4 else T_4IN6) if inner == 4 else (T_6IN4 if version == 4 else T_6IN6)
        return l4, inner, kind, 0, 0
    if proto == IPPROTO_GRE:
        if end - l4 < 4:
            return -1, S_TOO_SHORT, 0, 0, 0
        bits = u16be(b, l4)
        if bits & 0x4007:  # a routing field (RFC 1701) or a version other than 0 (PPTP's is 1)
            return TUNNEL_OTHER, 0, 0, 0, 0
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
        if et == ETHERTYPE_TEB:
            g, inner = ethernet(b, g, end)
        elif et == ETHERTYPE_ERSPAN or et == ETHERTYPE_ERSPAN3:
            return _erspan(b, g, end, et, bits & 0x1000)
        else:
            inner = ethertype_kind(et)
            if inner == 0:
                return TUNNEL_OTHER, 0, 0, 0, 0
        return g, inner, T_GRE, key, has_key
    g = l4 + 8  # UDP, with a port of a tunnel (may_tunnel)
    if u16be(b, l4 + 2) == VXLAN_PORT or (u16be(b, l4) == VXLAN_PORT and u16be(b, l4 + 2) != GTPU_PORT):
        if end - g < 8:
            return -1, S_TOO_SHORT, 0, 0, 0
        if b[g] & 0x08 == 0:  # no valid VNI
            return TUNNEL_OTHER, 0, 0, 0, 0
        q, inner = ethernet(b, g + 8, end)
        return q, inner, T_VXLAN, u32be(b, g + 4) >> 8, 1
    if end - g < 8:
        return -1, S_TOO_SHORT, 0, 0, 0
    bits = np.int64(b[g])
    if bits >> 4 != 3 or b[g + 1] != 0xFF:  # not GTPv1 (version 1, PT 1), or not a G-PDU
        return TUNNEL_OTHER, 0, 0, 0, 0
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
    inner = np.int64(b[q]) >> 4  # type: ignore[assignment]  # numba's int64, an int to mypy
    if inner != 4 and inner != 6:
        return -1, S_NOT_IP, 0, 0, 0
    return q, inner, T_GTPU, teid, 1
