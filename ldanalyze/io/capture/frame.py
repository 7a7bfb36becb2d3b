"""Decoding one captured frame: link layer → IPv4/IPv6 (→ tunnels) → UDP/TCP, into one record, in numba.

``decode_frame`` is called by the container walks of ``walk.py`` for every record. It writes
the record's fields (see ``record.record_dtype``) and returns the record's 5-tuple, which the walk
interns in the flow table (``record.intern_flow``). The link layers are ``linklayer``'s, the
tunnels ``tunnels``'.

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

from .linklayer import (
    LINKTYPE_ETHERNET,
    LINKTYPE_IEEE802_11,
    LINKTYPE_IEEE802_11_RADIOTAP,
    LINKTYPE_PPI,
    ethernet,
    network_start,
    wifi_sequence,
)
from .record import (
    F_FIRST_FRAGMENT,
    F_TCP_MSS,
    F_TCP_SACK,
    F_TCP_TIMESTAMP,
    F_TCP_WSCALE,
    F_TUNNEL_DEEP,
    F_TUNNEL_OTHER,
    HASH_BYTES,
    IPPROTO_TCP,
    IPPROTO_UDP,
    NO_MAC_SEQ,
    S_DECODED,
    S_FRAGMENT,
    S_MALFORMED,
    S_TOO_SHORT,
    SACK_BLOCK_BYTES,
    intern_flow,
    payload_hash,
    u16be,
    u32be,
    u64be,
)
from .tunnels import MAX_TUNNEL_DEPTH, TUNNEL_OTHER, may_tunnel, tunnel_inner

# decode_frame's answers: the record is finished without flow, or has its flow key
FRAME_DONE, FRAME_FLOW = 0, 1
_PORTED = (33, 132, 136)  # DCCP, SCTP, UDP-Lite: ports in the first 4 bytes


# -- network and transport ---------------------------------------------------------------------
@njit(cache=True, inline="always")
def _ip_header(b, p, q, end, wirelen, version):
    """Read the IP header at ``q``: (status, protocol, transport offset, end of the datagram,
    flags, TTL, IP ID, src hi, src lo, dst hi, dst lo); status 0 when the transport header may
    follow, else the record's (the fields up to the IP ID are set for ``S_FRAGMENT``). Inlined
    into ``decode_frame``, its one caller (see ``tunnel_inner``).
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
                hlen = (np.int64(b[l4 + 1]) + 2) * 4  # type: ignore[assignment]  # numba's int64, an int to mypy
            else:
                hlen = (np.int64(b[l4 + 1]) + 1) * 8  # type: ignore[assignment]  # numba's int64, an int to mypy
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
    r["tcp_win"] = 0
    r["tcp_wscale"] = 0
    r["tcp_sack_n"] = 0
    end = p + caplen
    if linktype == LINKTYPE_IEEE802_11_RADIOTAP or linktype == LINKTYPE_IEEE802_11 or linktype == LINKTYPE_PPI:
        r["mac_seq"], r["mac_flags"], r["mac_space"] = wifi_sequence(b, p, end, linktype)
    else:
        r["mac_seq"] = NO_MAC_SEQ
        r["mac_flags"] = 0
        r["mac_space"] = 0
    # Ethernet read here: network_start's reference counts would cost every packet
    q, version = ethernet(b, p, end) if linktype == LINKTYPE_ETHERNET else network_start(b, p, end, linktype)
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
        if not may_tunnel(b, l4, end, proto):
            break
        if depth == MAX_TUNNEL_DEPTH:
            flags = F_TUNNEL_DEEP
            break
        inner, inner_version, kind, ident, has_id = tunnel_inner(b, l4, end, proto, version)
        if inner == TUNNEL_OTHER:
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
    sack_at = 0  # where a TCP SACK option's blocks start (0: none)
    if proto == IPPROTO_UDP:
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
    elif proto == IPPROTO_TCP:
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
        r["tcp_win"] = u16be(b, l4 + 14)
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
            elif kind == 3 and olen == 3:
                r["tcp_wscale"] = b[o + 2]
                flags |= F_TCP_WSCALE
            elif kind == 5 and olen >= 10 and (olen - 2) % SACK_BLOCK_BYTES == 0:
                r["tcp_sack_n"] = (olen - 2) // SACK_BLOCK_BYTES
                sack_at = o + 2
                flags |= F_TCP_SACK
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
    if proto == IPPROTO_TCP and sack_at and payload_len == 0:  # its SACK edges, in the unused head
        kept = min(np.int64(r["tcp_sack_n"]), heads.shape[1] // SACK_BLOCK_BYTES) * SACK_BLOCK_BYTES
        for k in range(kept):
            heads[i, k] = b[sack_at + k]
    r["head_len"] = n_head
    if captured >= min(payload_len, HASH_BYTES):
        r["payload_hash"] = payload_hash(b, payload, payload_len)
    r["flags"] = flags
    r["status"] = S_DECODED
    w0 = np.uint64(version | (proto << 8) | (sport << 16) | (dport << 32))
    return FRAME_FLOW, w0, w1, w2, w3, w4, np.uint64(tunnel + 1), n_tunnels
