"""Plain twins of ldanalyze/io/capture/rtp.py: RTP headers and header extensions."""

from __future__ import annotations

from . import twin_of

# --- RTP header extensions (ldanalyze/io/capture/rtp.py extension_values) ---


@twin_of("ldanalyze.io.capture.rtp.extension_values", "ldanalyze.io.capture.rtp.extension_counts")
def rtp_extension_values_naive(packet: bytes, width: int) -> dict:
    """{id: value} of the header extension elements of ``width`` bytes of one RTP packet (RFC
    8285), read one element at a time."""
    if len(packet) < 12 or packet[0] >> 6 != 2 or not packet[0] & 0x10:
        return {}
    start = 12 + 4 * (packet[0] & 0x0F)
    if start + 4 > len(packet):
        return {}
    profile = int.from_bytes(packet[start : start + 2], "big")
    words = int.from_bytes(packet[start + 2 : start + 4], "big")
    body = packet[start + 4 : min(start + 4 + 4 * words, len(packet))]
    found, p = {}, 0
    if profile == 0xBEDE:
        while p < len(body):
            if body[p] == 0:
                p += 1
                continue
            ident, size = body[p] >> 4, (body[p] & 0x0F) + 1
            if ident == 15:
                break
            if size == width and p + 1 + size <= len(body):
                found[ident] = int.from_bytes(body[p + 1 : p + 1 + size], "big")
            p += 1 + size
    elif profile >> 4 == 0x100:
        while p + 1 < len(body):
            if body[p] == 0:
                p += 1
                continue
            ident, size = body[p], body[p + 1]
            if size == width and p + 2 + size <= len(body):
                found[ident] = int.from_bytes(body[p + 2 : p + 2 + size], "big")
            p += 2 + size
    return found


# --- RTP headers (ldanalyze/io/capture/rtp.py header_fields) ---


@twin_of("ldanalyze.io.capture.rtp.header_fields")
def rtp_header(kept: bytes, payload_len: int, fec_span: int = 48) -> tuple[str, int, bool, int, bool]:
    """One UDP payload's (first bytes ``kept`` of ``payload_len``) kind by RFC 7983 §7 and RFC
    5761 §4, RTP header length (-1: extension length not kept), padding-only flag, first payload
    word (-1: not kept) and RFC 5109 FEC-header flag, read byte by byte."""
    first = kept[0]
    second = kept[1] if len(kept) >= 2 else 0
    if first <= 3:
        kind = "stun"
    elif 16 <= first <= 19:
        kind = "zrtp"
    elif 20 <= first <= 63:
        kind = "dtls"
    elif 64 <= first <= 79:
        kind = "turn"
    elif 128 <= first <= 191 and len(kept) >= 12:
        kind = "rtcp" if 192 <= second <= 223 else "rtp"
    else:
        kind = "other"
    csrcs = first & 0x0F
    length = 12 + 4 * csrcs
    if first & 0x10:  # the X bit: an extension header, its length in words at bytes 2-3
        if length + 4 <= len(kept):
            length += 4 + 4 * int.from_bytes(kept[length + 2 : length + 4], "big")
        else:
            length = -1
    if length < 12:
        return kind, length, False, -1, False
    after = payload_len - length
    padded = bool(first & 0x20)
    padding = padded and 1 <= after <= 255 and all(b == 0 for b in kept[length : payload_len - 1])
    osn = int.from_bytes(kept[length : length + 2], "big") if length + 2 <= len(kept) else -1
    fec = False
    if length + 10 <= len(kept) and not kept[length] & 0x80:  # E bit clear
        own = int.from_bytes(kept[2:4], "big")
        base = int.from_bytes(kept[length + 2 : length + 4], "big")
        fec = (own - base) % 65536 <= fec_span
    return kind, length, padding, osn, fec
