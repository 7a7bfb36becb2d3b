"""RTP streams of one UDP flow: demultiplexing, noise, retransmissions, padding probes.

One port of a real call carries more than one RTP stream: the main media SSRC, small secondary
SSRCs (retransmission, FEC, probing), RTCP, STUN and DTLS (WebRTC muxes them all, RFC 7983),
and, on proprietary apps, packets whose first byte happens to read as RTP version 2. So the
flow is taken apart packet by packet and stream by stream, and a stream that cannot be read is
left out with its reason, never taking the flow with it:

1. **Kind of packet** by its first byte (RFC 7983 §7): 0-3 STUN, 16-19 ZRTP, 20-63 DTLS,
   64-79 TURN channel, 128-191 RTP or RTCP; RTCP when the second byte (marker bit and payload
   type) is 192-223 (RFC 5761 §4). Counted in the stream's ``info['demux']``.
2. **Streams** by SSRC. An SSRC with one or two packets is **noise** (packets that only look
   like RTP), counted, not a stream. A stream whose numbers do not read as a sequence, or
   whose media clock rate cannot be told, is **skipped with its reason** (``skipped``).
3. **Padding-only packets** (the P bit set and nothing but zero bytes between the header and the
   padding count, at most 255 bytes: the bandwidth probes of WebRTC senders) carry no media:
   counted as ``padding_only`` and left out of their stream. With SRTP the padding is
   encrypted and cannot be told from media packet by packet; a stream whose every packet is
   padded and whose timestamp never advances is a **probe stream**, skipped as such.
4. **Retransmission streams** (RFC 4588): a stream whose payload type differs from a media
   stream's and whose payloads start with that stream's sequence numbers (the original
   sequence number, OSN) is its RTX stream. Its packets are not arrivals of the media stream;
   a sequence number the media stream never received but the RTX stream carried is a loss that
   was **repaired**: it stays a loss of the original transmission (the receiver saw the hole),
   with reason ``rtx-repaired``, and is counted in ``rtx_repaired``.

5. **The media clock's rate** from the stream's RTCP sender reports, on the same port or
   anywhere else in the capture (NTP time against RTP timestamp, RFC 3550 §6.4.1), snapped to the usual rate within 1 %, before the
   payload type's static rate or a rate inferred from arrivals (``clockrate.py``).

The header length (12 bytes, 4 per CSRC, and the extension block when the X bit is set) needs
that many payload bytes in the decoded record (``read_capture`` keeps 48, ``RTP_HEAD_BYTES``);
an OSN beyond them is not read, and such a stream is taken as media.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...clocks import fit_lower_envelope
from ...packets import unwrap_sequence

KIND_NAMES = ("other", "stun", "zrtp", "dtls", "turn", "rtp", "rtcp")
OTHER, STUN, ZRTP, DTLS, TURN, RTP, RTCP = range(len(KIND_NAMES))
NOISE_PACKETS = 2  # an SSRC with this many packets or fewer is noise, not a stream
RTX_SHARE = 0.9  # share of a stream's OSNs that must be the media stream's numbers


def kind_counts(kinds: np.ndarray) -> dict[str, int]:
    counts = np.bincount(kinds, minlength=len(KIND_NAMES))
    return {KIND_NAMES[k]: int(n) for k, n in enumerate(counts) if n}


FEC_SPAN = 48  # packets an RFC 5109 FEC packet protects at most (its long mask), counted back from it
FEC_SHARE = 0.9  # share of a payload type's packets whose FEC header must fit


@njit(cache=True)
def header_fields(head, head_len, payload_len):
    """Each packet's header, read in one pass (``head``: its first payload bytes, ``head_len``
    of them kept, ``payload_len`` in all): its RFC 7983 kind (module docstring, step 1); its
    RTP header length (12 bytes, 4 per CSRC, the extension block when the X bit is set; -1
    when the extension's length lies beyond the bytes kept); whether it is padding only (the
    P bit set, at most 255 bytes after the header, and every kept byte after the header but
    the last, the padding count, zero); its first two payload bytes (an RTX packet's OSN; -1
    where not kept); and whether its payload opens with an RFC 5109 FEC header that protects
    packets just before it in its own stream (ULPFEC sent in the media stream, as GStreamer's
    ``rtpulpfecenc`` does: the E bit clear and the SN base, payload bytes 2-3, 1 to
    ``FEC_SPAN`` sequence numbers below the packet's own). Twin: ``tests.naive.rtp.rtp_header``."""
    n, width = head.shape
    kinds = np.full(n, OTHER, np.int8)
    hlen = np.empty(n, np.int64)
    padding = np.zeros(n, np.bool_)
    osn = np.full(n, -1, np.int64)
    fec = np.zeros(n, np.bool_)
    for i in range(n):
        kept = np.int64(head_len[i])
        first = np.int64(head[i, 0])
        second = np.int64(head[i, 1]) if kept >= 2 else 0
        if first <= 3:
            kinds[i] = STUN
        elif 16 <= first <= 19:
            kinds[i] = ZRTP
        elif 20 <= first <= 63:
            kinds[i] = DTLS
        elif 64 <= first <= 79:
            kinds[i] = TURN
        elif 128 <= first <= 191 and kept >= 12:
            kinds[i] = RTCP if 192 <= second <= 223 else RTP
        length = 12 + 4 * (first & 0x0F)
        if first & 0x10:
            at = length + 2  # the extension's length in 32-bit words: bytes 2-3 of its header
            if at + 2 <= kept and at + 2 <= width:
                length += 4 + 4 * ((np.int64(head[i, at]) << 8) | head[i, at + 1])
            else:
                length = -1  # type: ignore[assignment]  # numba's int64, an int to mypy
        hlen[i] = length
        if length < 12:
            continue
        rest = np.int64(payload_len[i]) - length
        if first & 0x20 and 1 <= rest <= 255:
            padding[i] = True
            for k in range(length, min(kept, np.int64(payload_len[i]) - 1)):
                if head[i, k] != 0:
                    padding[i] = False
                    break
        if length + 2 <= kept:
            osn[i] = (np.int64(head[i, length]) << 8) | head[i, length + 1]
        if length + 10 <= kept and head[i, length] & 0x80 == 0:
            seq16 = (np.int64(head[i, 2]) << 8) | head[i, 3]
            base = (np.int64(head[i, length + 2]) << 8) | head[i, length + 3]
            fec[i] = (seq16 - base) % (1 << 16) <= FEC_SPAN
    return kinds, hlen, padding, osn, fec


def rtx_pairs(streams: list[dict]) -> dict[int, int]:
    """RTX stream index → media stream index. Each stream is a dict with ``pt`` (its most
    common payload type), ``seq16`` (its media sequence numbers mod 2^16, the holes included),
    ``osn`` (its packets' first payload words, -1 unknown), ``packets``, and ``small`` when it
    is too small to be a media stream (it can only be an RTX stream)."""
    pairs = {}
    for i, s in enumerate(streams):
        osn = s["osn"][s["osn"] >= 0]
        if osn.size == 0:
            continue
        best, share = None, RTX_SHARE
        for j, m in enumerate(streams):
            if j == i or m["pt"] == s["pt"] or j in pairs or m.get("small"):
                continue
            hit = float(np.isin(osn, m["seq16"]).mean())
            if hit >= share and (best is None or m["packets"] > streams[best]["packets"]):
                best, share = j, hit
        if best is not None and s["packets"] <= streams[best]["packets"]:
            pairs[i] = best
    return pairs


def sender_report_rates(head: np.ndarray, head_len: np.ndarray, rtcp: np.ndarray) -> dict[int, tuple[float, int]]:
    """Per SSRC, the media clock rate that its RTCP sender reports (RFC 3550 §6.4.1) give:
    the RTP timestamps of the first and last report over the NTP time between them; and how
    many reports there were. Only the first packet of a compound RTCP packet is read (a
    sender report comes first, RFC 3550 §6.1), and only from reports 0.5 s or more apart."""
    chosen = rtcp & (head_len >= 20) & (head[:, 1] == 200)
    if not chosen.any():
        return {}
    h = head[chosen].astype(np.uint64)
    ssrc = (h[:, 4] << 24) | (h[:, 5] << 16) | (h[:, 6] << 8) | h[:, 7]
    ntp_sec = (h[:, 8] << 24) | (h[:, 9] << 16) | (h[:, 10] << 8) | h[:, 11]
    ntp_frac = (h[:, 12] << 24) | (h[:, 13] << 16) | (h[:, 14] << 8) | h[:, 15]
    rtp_ts = ((h[:, 16] << 24) | (h[:, 17] << 16) | (h[:, 18] << 8) | h[:, 19]).astype(np.int64)
    ntp = ntp_sec.astype(np.float64) + ntp_frac.astype(np.float64) / 2**32
    rates = {}
    for key in np.unique(ssrc):
        mine = ssrc == key
        t, ts = ntp[mine], rtp_ts[mine]
        order = np.argsort(t, kind="stable")
        t, ts = t[order], ts[order]
        if t.size < 2 or t[-1] - t[0] < 0.5:
            continue
        ticks = (ts[-1] - ts[0]) % (1 << 32)  # the RTP timestamp wraps at 2^32
        rates[int(key)] = (float(ticks / (t[-1] - t[0])), int(t.size))
    return rates


@njit(cache=True)
def _elements(head, head_len, i, width, want, out_counts, last_counted, out_values):
    """Walk packet ``i``'s header extension (RFC 8285 one-byte form, profile 0xBEDE, ids 1-14;
    two-byte form, profile 0x1000-0x100F, ids 1-255): count the packet once for each id it
    carries with ``width`` bytes in ``out_counts`` (``last_counted``: the last packet counted
    per id), and store the value of id ``want`` in ``out_values[i]`` (the last, if repeated)."""
    if (head[i, 0] >> 6) != 2 or (head[i, 0] & 0x10) == 0:
        return
    start = 12 + 4 * (head[i, 0] & 0x0F)
    if start + 4 > head_len[i]:
        return
    profile = (np.int64(head[i, start]) << 8) | head[i, start + 1]
    words = (np.int64(head[i, start + 2]) << 8) | head[i, start + 3]
    end = min(start + 4 + 4 * words, np.int64(head_len[i]))
    p = start + 4
    one_byte = profile == 0xBEDE
    if not one_byte and (profile >> 4) != 0x100:
        return
    while p < end:
        if head[i, p] == 0:  # padding
            p += 1
            continue
        if one_byte:
            ident = np.int64(head[i, p] >> 4)
            size = np.int64(head[i, p] & 0x0F) + 1
            if ident == 15:
                return
            at = p + 1
        else:
            if p + 1 >= end:
                return
            ident = np.int64(head[i, p])
            size = np.int64(head[i, p + 1])
            at = p + 2
        if size == width and at + size <= end:
            if last_counted[ident] != i:
                out_counts[ident] += 1
                last_counted[ident] = i
            if ident == want:
                value = np.int64(0)
                for k in range(size):
                    value = (value << 8) | head[i, at + k]
                out_values[i] = value
        p = at + size


@njit(cache=True)
def extension_counts(head, head_len, width):
    """How many packets carry each header extension id (0-255) with ``width`` bytes."""
    counts = np.zeros(256, np.int64)
    last = np.full(256, -1, np.int64)
    values = np.empty(0, np.int64)
    for i in range(head.shape[0]):
        if head[i, 0] & 0x10:  # the X bit: most packets of most streams carry no extension
            _elements(head, head_len, i, width, -1, counts, last, values)
    return counts


@njit(cache=True)
def extension_values(head, head_len, width, ident):
    """The value of header extension ``ident`` (``width`` bytes) in each packet; -1 where absent
    or not kept."""
    counts = np.zeros(256, np.int64)
    last = np.full(256, -1, np.int64)
    values = np.full(head.shape[0], -1, np.int64)
    for i in range(head.shape[0]):
        if head[i, 0] & 0x10:
            _elements(head, head_len, i, width, ident, counts, last, values)
    return values


ABS_SEND_TIME_UNITS = 2.0**-18  # seconds per unit: 6.18 fixed point, wrapping every 64 s


def abs_send_time_id(head, head_len, times: np.ndarray, given: int | None = None) -> int | None:
    """The header extension id that carries abs-send-time in every packet of a stream: ``given``,
    or the 3-byte element whose values, read as 6.18 fixed-point seconds, advance with capture
    time: over 0.1 s or more, the lower envelope of capture time minus send time (the
    Moon-Skelly-Towsley fit of ``clocks.py``) drifts by no more than 2 % (a clock, not a
    counter or a level)."""

    n = head.shape[0]
    if n < 3 or np.ptp(times) < 0.1:
        return None
    counts = extension_counts(head, head_len, 3)
    candidates = [given] if given is not None else [int(i) for i in np.flatnonzero(counts == n)]
    for ident in candidates:
        values = extension_values(head, head_len, 3, ident)
        if (values < 0).any():
            continue
        if given is not None:
            return ident
        seconds = unwrap_sequence(values, 1 << 24) * ABS_SEND_TIME_UNITS
        fit = fit_lower_envelope(seconds, times - seconds)
        if abs(fit.skew) <= 0.02:
            return ident
    return None
