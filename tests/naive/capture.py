"""Plain twins of ldanalyze/io/capture: the capture reader, the receiver rules, fields, TCP segments, TTLs."""

from __future__ import annotations

import ipaddress as _ipaddress
import math
import struct as _struct

from . import twin_of

# --- captures ---------------------------------------------------------------------------------
# A readable, struct-based reader of pcap and pcapng captures, written from the file format
# specifications and the docstrings of ldanalyze/io/capture's frame.py, linklayer.py and
# tunnels.py: the twin of the numba kernels of ldanalyze.io.capture.walk (decode_capture), and of
# the one-point receiver rules of ldanalyze/io/capture/payload.py. One dict per record; flows are 5-tuples.


CAPTURE_HASH_BYTES = 32
_MASK64 = (1 << 64) - 1
_HASH_M1, _HASH_M2, _HASH_M3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def capture_mix64(h):
    """splitmix64's finaliser."""
    h = ((h ^ (h >> 30)) * _HASH_M2) & _MASK64
    h = ((h ^ (h >> 27)) * _HASH_M3) & _MASK64
    return h ^ (h >> 31)


@twin_of("ldanalyze.io.capture.record.payload_hash")
def capture_payload_hash(payload_len, data):
    """The payload length, then up to 32 payload bytes as little-endian 64-bit words."""
    h = (payload_len * _HASH_M1) & _MASK64
    data = data[: min(payload_len, CAPTURE_HASH_BYTES)]
    for k in range(0, len(data), 8):
        word = int.from_bytes(data[k : k + 8], "little")
        h = ((h ^ word) * _HASH_M2) & _MASK64
        h ^= h >> 29
    return capture_mix64(h)


class _TooShort(Exception):
    pass


def _need(frame, at, n):
    if len(frame) < at + n:
        raise _TooShort


@twin_of(
    "ldanalyze.io.capture.walk.walk_pcap",
    "ldanalyze.io.capture.walk.walk_pcapng",
    "ldanalyze.io.capture.frame.decode_frame",
)
def capture_records(data, head_bytes=16):
    """Every record of a pcap or pcapng capture (bytes), decoded: a list of dicts."""
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        return list(_pcapng_records(data, head_bytes))
    return list(_pcap_records(data, head_bytes))


def _pcap_records(data, head_bytes):
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    else:
        e = ">"
    nano = _struct.unpack(e + "I", magic)[0] == 0xA1B23C4D
    linktype = _struct.unpack(e + "I", data[20:24])[0] & 0xFFFF
    at = 24
    while at + 16 <= len(data):
        sec, frac, incl, orig = _struct.unpack(e + "IIII", data[at : at + 16])
        if at + 16 + incl > len(data):
            break  # a record cut by the end of the file
        frame = data[at + 16 : at + 16 + incl]
        ts = sec * 1_000_000_000 + frac * (1 if nano else 1000)
        yield decode_frame_naive(frame, max(orig, incl), linktype, head_bytes, ts_ns=ts, offset=at, iface=0)
        at += 16 + incl


def _pcapng_records(data, head_bytes):
    at, e, interfaces, first_iface = 0, "<", [], 0
    while at + 12 <= len(data):
        if data[at : at + 4] == b"\x0a\x0d\x0d\x0a":
            e = "<" if data[at + 8 : at + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            first_iface += len(interfaces)
            interfaces = []
        btype, blen = _struct.unpack(e + "II", data[at : at + 8])
        if at + blen > len(data):
            break
        body = data[at + 8 : at + blen - 4]
        if btype == 1:  # interface description
            linktype, _, snaplen = _struct.unpack(e + "HHI", body[:8])
            units, offset_s = 10**6, 0
            o = 8
            while o + 4 <= len(body):
                code, length = _struct.unpack(e + "HH", body[o : o + 4])
                value = body[o + 4 : o + 4 + length]
                if code == 0:
                    break
                if code == 9:
                    units = 2 ** (value[0] & 0x7F) if value[0] & 0x80 else 10 ** value[0]
                if code == 14:
                    offset_s = _struct.unpack(e + "q", value[:8])[0]
                o += 4 + (length + 3) // 4 * 4
            interfaces.append((linktype, snaplen, units, offset_s))
        elif btype in (6, 2):  # enhanced / obsolete packet block
            if btype == 6:
                iface, hi, lo, caplen, orig = _struct.unpack(e + "IIIII", body[:20])
            else:
                iface, _, hi, lo, caplen, orig = _struct.unpack(e + "HHIIII", body[:20])
            linktype, _, units, offset_s = interfaces[iface]
            ticks = (hi << 32) | lo
            ts = ticks * 1_000_000_000 // units + offset_s * 1_000_000_000
            yield decode_frame_naive(
                body[20 : 20 + caplen],
                max(orig, caplen),
                linktype,
                head_bytes,
                ts_ns=ts,
                offset=at,
                iface=first_iface + iface,
            )
        elif btype == 3:  # simple packet block: interface 0, its snap length, no time
            linktype, snaplen, _, _ = interfaces[0]
            orig = _struct.unpack(e + "I", body[:4])[0]
            caplen = min(orig, len(body) - 4)
            if snaplen:
                caplen = min(caplen, snaplen)
            yield decode_frame_naive(
                body[4 : 4 + caplen], max(orig, caplen), linktype, head_bytes, ts_ns=None, offset=at, iface=first_iface
            )
        at += blen


def decode_frame_naive(frame, wirelen, linktype, head_bytes=16, **record):
    """One frame → a dict of its decoded fields (see ldanalyze/io/capture/frame.py)."""
    rec = dict(
        record,
        caplen=len(frame),
        wirelen=wirelen,
        status="decoded",
        flow=None,
        first_fragment=False,
        ip_ver=0,
        proto=0,
        ttl=0,
        ip_len=0,
        ip_id=0,
        payload_len=0,
        head=b"",
        payload_hash=0,
        tcp_seq=0,
        tcp_ack=0,
        tcp_flags=0,
        tcp_tsval=None,
        tcp_tsecr=None,
        tcp_mss=None,
        tcp_win=0,
        tcp_wscale=None,
        tcp_sack=None,
        tunnels=(),
        tunnel_other=False,
        tunnel_too_deep=False,
        mac=wifi_sequence_naive(frame, linktype),
    )
    try:
        status = _decode_into(rec, frame, wirelen, linktype, head_bytes)
    except _TooShort:
        status = "too_short"
    rec["status"] = status
    if status != "decoded":
        rec["flow"] = None
    return rec


def _ip_start(frame, linktype):
    """(offset of the IP header, version) or (None, status)."""
    pad = False
    while True:
        if linktype == 1:  # Ethernet, VLAN tags
            _need(frame, 0, 14)
            at, ethertype = 14, _struct.unpack(">H", frame[12:14])[0]
            while ethertype in (0x8100, 0x88A8, 0x9100):
                _need(frame, at, 4)
                ethertype = _struct.unpack(">H", frame[at + 2 : at + 4])[0]
                at += 4
            return (at, {0x0800: 4, 0x86DD: 6}[ethertype]) if ethertype in (0x0800, 0x86DD) else (None, "not_ip")
        if linktype in (101, 228, 229):
            _need(frame, 0, 1)
            version = frame[0] >> 4
            if (linktype == 228 and version != 4) or (linktype == 229 and version != 6):
                return None, "malformed"
            return (0, version) if version in (4, 6) else (None, "not_ip")
        if linktype == 9:  # PPP
            at = 2 if frame[:2] == b"\xff\x03" else 0
            _need(frame, at, 1)
            if frame[at] % 2:  # one-byte protocol
                protocol, at = frame[at], at + 1
            else:
                _need(frame, at, 2)
                protocol, at = _struct.unpack(">H", frame[at : at + 2])[0], at + 2
            return (at, {0x21: 4, 0x57: 6}[protocol]) if protocol in (0x21, 0x57) else (None, "not_ip")
        if linktype in (0, 108):
            _need(frame, 0, 4)
            family = _struct.unpack("<I", frame[:4])[0]
            if family > 0xFFFF:
                family = _struct.unpack(">I", frame[:4])[0]
            if family == 2:
                return 4, 4
            return (4, 6) if family in (10, 24, 28, 30) else (None, "not_ip")
        if linktype in (113, 276):
            size = 16 if linktype == 113 else 20
            _need(frame, 0, size)
            ethertype = _struct.unpack(">H", frame[14:16] if linktype == 113 else frame[0:2])[0]
            at = size
            while ethertype in (0x8100, 0x88A8, 0x9100):
                _need(frame, at, 4)
                ethertype = _struct.unpack(">H", frame[at + 2 : at + 4])[0]
                at += 4
            return (at, {0x0800: 4, 0x86DD: 6}[ethertype]) if ethertype in (0x0800, 0x86DD) else (None, "not_ip")
        if linktype == 127:  # radiotap
            _need(frame, 0, 8)
            length, present = _struct.unpack("<HI", frame[2:8])
            _need(frame, 0, length)
            if length < 8:
                raise _TooShort
            flags = _radiotap_flags_naive(frame[:length], present)
            if flags & 0x40:
                return None, "bad_fcs"
            pad = bool(flags & 0x20)
            frame, linktype = frame[length:], 105
            offset_shift = length
            inner_at, result = _ip_start_80211(frame, pad)
            return (inner_at + offset_shift, result) if inner_at is not None else (None, result)
        if linktype == 192:  # PPI
            _need(frame, 0, 8)
            length, inner = _struct.unpack("<HI", frame[2:8])
            if length < 8:
                raise _TooShort
            _need(frame, 0, length)
            if inner in (192, 127):
                return None, "unsupported_link"
            at, result = _ip_start(frame[length:], inner)
            return (at + length, result) if at is not None else (None, result)
        if linktype == 105:
            return _ip_start_80211(frame, pad)
        return None, "unsupported_link"


def wifi_sequence_naive(frame, linktype):
    """(sequence number, retry, data, QoS, counter key, protected) of an 802.11 data or
    management frame under radiotap, PPI or nothing; None for control frames, a bad FCS, a protocol
    version other than 0 or too few bytes."""
    if linktype == 192:
        if len(frame) < 8:
            return None
        length, linktype = _struct.unpack("<HI", frame[2:8])
        frame = frame[length:]
    if linktype == 127:
        if len(frame) < 8:
            return None
        length, present = _struct.unpack("<HI", frame[2:8])
        if length < 8 or len(frame) < length or _radiotap_flags_naive(frame[:length], present) & 0x40:
            return None
        frame = frame[length:]
    elif linktype != 105:
        return None
    if len(frame) < 24:
        return None
    fc0, fc1 = frame[0], frame[1]
    kind = (fc0 >> 2) & 3
    if fc0 & 3 or kind not in (0, 2):  # protocol version other than 0, control frames
        return None
    receiver = int.from_bytes(frame[4:10], "little")
    transmitter = int.from_bytes(frame[10:16], "little")
    qos = kind == 2 and bool(fc0 & 0x80)
    key = (transmitter * _HASH_M1) & _MASK64
    if qos:
        at = 30 if fc1 & 3 == 3 else 24
        if len(frame) <= at:
            return None
        key ^= ((receiver + 1) * _HASH_M2 + (frame[at] & 0x0F) + 1) & _MASK64
    seq = _struct.unpack("<H", frame[22:24])[0] >> 4
    return seq, bool(fc1 & 0x08), kind == 2, qos, (capture_mix64(key) >> 32) | 1, bool(fc1 & 0x40)


def _radiotap_flags_naive(header, present):
    at, word = 8, present
    while word & 0x80000000:
        if at + 4 > len(header):
            return 0
        word = _struct.unpack("<I", header[at : at + 4])[0]
        at += 4
    if not present & 0x2:
        return 0
    if present & 0x1:  # TSFT, 8-byte aligned
        at = (at + 7) // 8 * 8 + 8
    return header[at] if at < len(header) else 0


def _ip_start_80211(frame, pad):
    _need(frame, 0, 2)
    fc0, fc1 = frame[0], frame[1]
    kind, subtype = (fc0 >> 2) & 3, fc0 >> 4
    if fc0 & 3:  # protocol version
        return None, "malformed"
    if kind != 2 or subtype & 4:
        return None, "wifi_not_data"
    if fc1 & 0x40:
        return None, "wifi_protected"
    header = 24 + (6 if fc1 & 3 == 3 else 0)
    if subtype & 8:
        header += 2 + (4 if fc1 & 0x80 else 0)
    if pad:
        header = (header + 3) // 4 * 4
    _need(frame, header, 8)
    llc = frame[header : header + 8]
    if llc[:3] != b"\xaa\xaa\x03":
        return None, "not_ip"
    ethertype = _struct.unpack(">H", llc[6:8])[0]
    return (header + 8, {0x0800: 4, 0x86DD: 6}[ethertype]) if ethertype in (0x0800, 0x86DD) else (None, "not_ip")


def _decode_into(rec, frame, wirelen, linktype, head_bytes):
    at, version = _ip_start(frame, linktype)
    if at is None:
        return version
    while True:
        header = _ip_header_naive(rec, frame, at, version, wirelen)
        if isinstance(header, str):
            return header
        proto, src, dst, l4, ip_end, later_fragment = header
        rec["proto"] = proto
        rec["ip_len"] = ip_end - at
        if later_fragment:
            return "ip_fragment"
        try:
            tunnel = _tunnel_naive(frame, l4, proto, version)
        except _TooShort:  # cut inside the tunnel's header: matters only if it is opened
            tunnel = (None, "too_short", None, None)
        if tunnel is None:
            break
        if len(rec["tunnels"]) == 4:
            rec["tunnel_too_deep"] = True
            break
        if tunnel == "other":
            rec["tunnel_other"] = True
            break
        inner_at, inner_version, kind, ident = tunnel
        if inner_at is None:
            return inner_version
        rec["tunnels"] += ((kind, ident, src, dst),)
        at, version = inner_at, inner_version
    return _transport_into(rec, frame, at, version, proto, src, dst, l4, ip_end, head_bytes)


_GTP_PORT, _VXLAN_PORT = 2152, 4789


def _tunnel_naive(frame, l4, proto, outer_version):
    """None (no tunnel), "other" (a tunnel message not opened), or (offset of the inner IP
    header or None, its version or the status, kind, id or None)."""
    if proto in (4, 41):
        inner = 4 if proto == 4 else 6
        return l4, inner, f"{inner}in{outer_version}", None
    if proto == 47:
        _need(frame, l4, 4)
        bits, ethertype = _struct.unpack(">HH", frame[l4 : l4 + 4])
        version, routing = bits & 7, bits >> 14 & 1
        if version or routing:
            return "other"
        checksum, has_key, has_seq = bits >> 15, bits >> 13 & 1, bits >> 12 & 1
        key_at = l4 + 4 + 4 * checksum
        key = None
        if has_key:
            _need(frame, key_at, 4)
            key = _struct.unpack(">I", frame[key_at : key_at + 4])[0]
        body = key_at + 4 * has_key + 4 * has_seq
        if ethertype == 0x6558:
            inner_at, inner = _ip_start(frame[body:], 1)
            return (body + inner_at if inner_at is not None else None), inner, "gre", key
        if ethertype in (0x88BE, 0x22EB):
            return _erspan_naive(frame, body, ethertype == 0x22EB, has_seq)
        if ethertype not in (0x0800, 0x86DD):
            return "other"
        return body, 4 if ethertype == 0x0800 else 6, "gre", key
    if proto != 17 or len(frame) < l4 + 8:
        return None
    sport, dport = _struct.unpack(">HH", frame[l4 : l4 + 4])
    body = l4 + 8
    if dport == _VXLAN_PORT or (sport == _VXLAN_PORT and dport != _GTP_PORT):
        _need(frame, body, 8)
        if not frame[body] & 0x08:
            return "other"
        vni = int.from_bytes(frame[body + 4 : body + 7], "big")
        inner_at, inner = _ip_start(frame[body + 8 :], 1)
        return (body + 8 + inner_at if inner_at is not None else None), inner, "vxlan", vni
    if _GTP_PORT not in (sport, dport):
        return None
    _need(frame, body, 8)
    flags, message, _, teid = _struct.unpack(">BBHI", frame[body : body + 8])
    if flags >> 5 != 1 or not flags & 0x10 or message != 0xFF:
        return "other"
    at = body + 8
    if flags & 0x07:
        _need(frame, at, 4)
        extension = frame[at + 3] if flags & 0x04 else 0
        at += 4
        while extension:
            _need(frame, at, 1)
            size = 4 * frame[at]
            if not size:
                return None, "malformed", "gtpu", teid
            _need(frame, at, size)
            extension = frame[at + size - 1]
            at += size
    _need(frame, at, 1)
    inner = frame[at] >> 4
    if inner not in (4, 6):
        return None, "not_ip", "gtpu", teid
    return at, inner, "gtpu", teid


def _erspan_naive(frame, body, type_3, has_seq):
    """The mirrored Ethernet frame in ERSPAN: type I (0x88BE without a GRE sequence number) has
    no header; II an 8-byte one (version 1); III (0x22EB) 12 bytes (version 2), 8 more with the
    O bit, Ethernet only (frame type 0). The id is the 10-bit session."""
    session = None
    if type_3 or has_seq:
        size = 12 if type_3 else 8
        _need(frame, body, size)
        if frame[body] >> 4 != (2 if type_3 else 1):
            return "other"
        session = int.from_bytes(frame[body + 2 : body + 4], "big") % 1024
        if type_3:
            last = int.from_bytes(frame[body + 10 : body + 12], "big")
            if last >> 10 & 31:
                return "other"
            size += 8 if last & 1 else 0
        body += size
    inner_at, inner = _ip_start(frame[body:], 1)
    return (body + inner_at if inner_at is not None else None), inner, "erspan", session


def _ip_header_naive(rec, frame, at, version, wirelen):
    """(protocol, src, dst, transport offset, datagram end, later fragment), or a status."""
    rec["ip_ver"] = version
    rec["ip_id"] = 0
    rec["first_fragment"] = False
    later_fragment = False
    if version == 4:
        _need(frame, at, 20)
        if frame[at] >> 4 != 4 or (frame[at] & 15) * 4 < 20:
            return "malformed"
        ihl = (frame[at] & 15) * 4
        _need(frame, at, ihl)
        total, ident, frag, ttl, proto = _struct.unpack(">HHHBB", frame[at + 2 : at + 10])
        if total == 0:
            total = wirelen - at
        if total < ihl:
            return "malformed"
        rec.update(ip_id=ident, ttl=ttl)
        src, dst = _ip4(frame[at + 12 : at + 16]), _ip4(frame[at + 16 : at + 20])
        l4, ip_end = at + ihl, at + total
        later_fragment = bool(frag & 0x1FFF)
        rec["first_fragment"] = not later_fragment and bool(frag & 0x2000)
    else:
        _need(frame, at, 40)
        if frame[at] >> 4 != 6:
            return "malformed"
        plen, proto, ttl = _struct.unpack(">HBB", frame[at + 4 : at + 8])
        if plen == 0:
            plen = wirelen - at - 40
        rec["ttl"] = ttl
        src, dst = _ip6(frame[at + 8 : at + 24]), _ip6(frame[at + 24 : at + 40])
        l4, ip_end = at + 40, at + 40 + plen
        while proto in (0, 43, 60, 44, 51, 135):
            _need(frame, l4, 8)
            following = frame[l4]
            if proto == 44:
                offset_m, ident = _struct.unpack(">HI", frame[l4 + 2 : l4 + 8])
                rec["ip_id"] = ident
                later_fragment = bool(offset_m >> 3)
                rec["first_fragment"] = not later_fragment and bool(offset_m & 1)
                size = 8
            elif proto == 51:
                size = (frame[l4 + 1] + 2) * 4
            else:
                size = (frame[l4 + 1] + 1) * 8
            proto, l4 = following, l4 + size
            if later_fragment:
                break
        if ip_end < l4:
            return "malformed"
    return proto, src, dst, l4, ip_end, later_fragment


def _transport_into(rec, frame, at, version, proto, src, dst, l4, ip_end, head_bytes):
    sport = dport = 0
    if proto == 17:
        _need(frame, l4, 8)
        sport, dport, length = _struct.unpack(">HHH", frame[l4 : l4 + 6])
        if length >= 8:
            payload_len = length - 8
            if rec["first_fragment"]:
                rec["ip_len"] = l4 - at + length
        else:
            payload_len = ip_end - l4 - 8
        payload_at = l4 + 8
    elif proto == 6:
        _need(frame, l4, 20)
        offset = (frame[l4 + 12] >> 4) * 4
        if offset < 20:
            return "malformed"
        _need(frame, l4, offset)
        sport, dport, seq, ack = _struct.unpack(">HHII", frame[l4 : l4 + 12])
        rec.update(tcp_seq=seq, tcp_ack=ack, tcp_flags=frame[l4 + 13])
        rec["tcp_win"] = _struct.unpack(">H", frame[l4 + 14 : l4 + 16])[0]
        options = frame[l4 + 20 : l4 + offset]
        o = 0
        while o < len(options):
            kind = options[o]
            if kind == 0:
                break
            if kind == 1:
                o += 1
                continue
            if o + 1 >= len(options) or options[o + 1] < 2 or o + options[o + 1] > len(options):
                break
            length = options[o + 1]
            if kind == 2 and length == 4:
                rec["tcp_mss"] = _struct.unpack(">H", options[o + 2 : o + 4])[0]
            if kind == 8 and length == 10:
                rec["tcp_tsval"], rec["tcp_tsecr"] = _struct.unpack(">II", options[o + 2 : o + 10])
            if kind == 3 and length == 3:
                rec["tcp_wscale"] = options[o + 2]
            if kind == 5 and length >= 10 and (length - 2) % 8 == 0:  # SACK: (left, right) edges
                edges = _struct.unpack(f">{(length - 2) // 4}I", options[o + 2 : o + length])
                rec["tcp_sack"] = tuple(zip(edges[::2], edges[1::2]))
            o += length
        payload_len = ip_end - l4 - offset
        payload_at = l4 + offset
    else:
        header = 4 if proto in (33, 132, 136) else 0
        _need(frame, l4, header)
        if header:
            sport, dport = _struct.unpack(">HH", frame[l4 : l4 + 4])
        payload_len = ip_end - l4 - header
        payload_at = l4 + header
    if payload_len < 0:
        return "malformed"
    captured = frame[payload_at : payload_at + payload_len]
    rec["payload_len"] = payload_len
    rec["head"] = captured[:head_bytes]
    if rec["tcp_sack"] is not None:  # the blocks' count, and those head keeps (a segment without payload)
        rec["tcp_sack"] = (len(rec["tcp_sack"]), rec["tcp_sack"][: head_bytes // 8] if payload_len == 0 else ())
    if len(captured) >= min(payload_len, CAPTURE_HASH_BYTES):
        rec["payload_hash"] = capture_payload_hash(payload_len, captured)
    rec["flow"] = (version, proto, src, sport, dst, dport, rec["tunnels"])
    return "decoded"


def _ip4(raw):
    return ".".join(str(b) for b in raw)


def _ip6(raw):
    return str(_ipaddress.IPv6Address(raw))


@twin_of("ldanalyze.io.capture.fields.Field.read")
def read_field(head_rows, offset, width, order="big", signed=False):
    """A payload field of each row (a sequence of bytes a packet), one row at a time."""
    return [int.from_bytes(bytes(row[offset : offset + width]), order, signed=signed) for row in head_rows]


@twin_of("ldanalyze.io.capture.pcap.read_capture")
def receiver_rows_naive(arrivals, gap_reason="seq-gap"):
    """The receiver-side rule for one sequence space, one packet at a time.

    ``arrivals``: (seq, t_send, t_recv, size) in arrival order, seq unwrapped. Returns the
    delivered rows, then one lost row per sequence number missing between the smallest and the
    largest seen, with t_send interpolated linearly between the in-order arrivals around it and
    the median size.
    """
    rows = [{"seq": s, "t_send": ts, "t_recv": tr, "size": size, "fate": "delivered"} for s, ts, tr, size in arrivals]
    in_order, best = [], None
    for s, ts, _, _ in arrivals:
        if best is None or s > best:
            in_order.append((s, ts))
            best = s
    seen = {s for s, _, _, _ in arrivals}
    sizes = sorted(size for _, _, _, size in arrivals)
    mid = len(sizes) // 2
    median = sizes[mid] if len(sizes) % 2 else (sizes[mid - 1] + sizes[mid]) / 2
    for s in range(min(seen), max(seen) + 1):
        if s in seen:
            continue
        below = max((p for p in in_order if p[0] < s), key=lambda p: p[0])
        above = min((p for p in in_order if p[0] > s), key=lambda p: p[0])
        t_send = below[1] + (above[1] - below[1]) * (s - below[0]) / (above[0] - below[0])
        rows.append(
            {"seq": s, "t_send": t_send, "t_recv": math.nan, "size": int(median), "fate": "lost", "reason": gap_reason}
        )
    return rows


@twin_of("ldanalyze.io.capture.tcp.segment_index")
def tcp_segment_numbers_naive(segments, mss):
    """Packet index of each (start byte, length) segment, following ldanalyze/io/capture/tcp.py:
    distinct starts in byte order; a hole of h bytes before a start adds ceil(h / mss); a start
    whose bytes were all covered before takes the index of the last start that was not."""
    starts = sorted({s for s, _ in segments})
    length = {s: max(n for t, n in segments if t == s) for s in starts}
    index, covered_to, current = {}, None, None
    for s in starts:
        end = s + length[s]
        if covered_to is None:
            current = -(-max(s, 0) // mss)
        elif end > covered_to:
            current += 1 + -(-max(s - covered_to, 0) // mss)
        index[s] = current
        covered_to = end if covered_to is None else max(covered_to, end)
    return [index[s] for s, _ in segments]


# --- records by tunnel (ldanalyze/io/capture/walk.py _count_tunnel, as the walks decode) ---
_F_TUNNEL_OTHER, _F_TUNNEL_DEEP = 8, 16  # the record's flags (io/capture/record.py)


@twin_of("ldanalyze.io.capture.walk._count_tunnel")
def tunnel_records(tunnels, flags, n_tunnels):
    """From the records' own columns: how many have each tunnel (``n_tunnels`` of them; -1:
    none) as their innermost, then how many are flagged not opened and too deep."""
    counted = [0] * (n_tunnels + 2)
    for tunnel, flag in zip(tunnels, flags):
        if tunnel >= 0:
            counted[tunnel] += 1
        counted[-2] += bool(flag & _F_TUNNEL_OTHER)
        counted[-1] += bool(flag & _F_TUNNEL_DEEP)
    return counted


# --- capture host (ldanalyze/io/capture/flows.py flow_ttls) ---


@twin_of("ldanalyze.io.capture.flows._count_ttls")
def flow_ttls(flows, statuses, ttls, n_flows, decoded):
    """Per flow, how many decoded packets came with each TTL."""
    table = [[0] * 256 for _ in range(n_flows)]
    for flow, status, ttl in zip(flows, statuses, ttls):
        if status == decoded and flow >= 0:
            table[flow][ttl] += 1
    return table


# --- the air vantage --------------------------------------------------------------------------
AIR_SEQUENCE_SPACE, AIR_WRAP_GUARD = 4096, 2048


@twin_of("ldanalyze.io.capture.air.never_transmitted")
def never_transmitted_naive(frames, record_at, flows, after_air, lost_before):
    """Row by row: a row lost before the air is proven never sent when, between the frames of
    the nearest seen rows of its flow on either side (same counter), every sequence number the
    counter skipped is a seen frame's or a row's that went on unseen. ``frames``: (sequence
    number or None, counter) per air record."""
    n = len(record_at)
    proven = [False] * n
    for i in range(n):
        if not lost_before[i] or record_at[i] >= 0:
            continue
        a = i - 1
        while a >= 0 and flows[a] == flows[i] and record_at[a] < 0:
            a -= 1
        b = i + 1
        while b < n and flows[b] == flows[i] and record_at[b] < 0:
            b += 1
        if a < 0 or b >= n or flows[a] != flows[i] or flows[b] != flows[i]:
            continue
        (first, space), (last, other_space) = frames[record_at[a]], frames[record_at[b]]
        if first is None or last is None or space != other_space:
            continue
        between = [s for s, c in frames[record_at[a] + 1 : record_at[b]] if c == space and s is not None]
        if len(between) + 1 > AIR_WRAP_GUARD or b - a - 1 >= AIR_WRAP_GUARD:
            continue
        span = (last - first) % AIR_SEQUENCE_SPACE
        numbers = {(s - first) % AIR_SEQUENCE_SPACE for s in between} & set(range(1, span))
        went_unseen = sum(1 for r in range(a + 1, b) if after_air[r] and record_at[r] < 0)
        proven[i] = span - 1 - len(numbers) == went_unseen
    return proven


@twin_of("ldanalyze.io.capture.air._numbers_unseen", "ldanalyze.io.capture.air.numbers_unseen")
def numbers_unseen_naive(frames, record_at, flows):
    """Per row seen (record ≥ 0): the numbers of its counter between its flow's seen frame
    numbered furthest on so far (in capture order) and its own that no frame of the capture
    carries; -1 unknown, and for a frame numbered behind that one (a block-ack retransmission)."""
    out = [-1] * len(record_at)
    lead = {}
    for row in sorted((r for r in range(len(record_at)) if record_at[r] >= 0), key=lambda r: record_at[r]):
        previous = lead.get(flows[row])
        lead[flows[row]] = row
        if previous is None:
            continue
        a, b = record_at[previous], record_at[row]
        (first, space), (last, other) = frames[a], frames[b]
        if first is None or last is None or space != other or b <= a:
            continue
        span = (last - first) % AIR_SEQUENCE_SPACE
        if span == 0:
            out[row] = 0
            continue
        if span > AIR_WRAP_GUARD:  # behind: the lead stays
            lead[flows[row]] = previous
            continue
        between = [s for s, c in frames[a + 1 : b] if c == space and s is not None]
        if len(between) >= AIR_WRAP_GUARD:
            continue
        seen = {(s - first) % AIR_SEQUENCE_SPACE for s in between} & set(range(1, span))
        out[row] = span - 1 - len(seen)
    return out
