"""The RTP streams of a UDP flow, assembled from the header fields ``rtp.py`` reads.

One stream per SSRC, or one per flow in transport-wide order (``transport-cc``): one-off SSRCs
counted as noise, padding probes left out, retransmission (RTX) streams joined to their media
stream, FEC payload types counted, send times from abs-send-time or from the media clock (its
rate given, from the RTCP sender reports found anywhere in the capture,
``capture_sender_reports``, or ``clockrate.py``'s), taken per frame. A stream that cannot be
read is skipped with its reason, never failing its flow. ``payload.py`` tells the rules.
"""

from __future__ import annotations

import numpy as np

from ...packets import unwrap_sequence
from ...tiering import call
from . import rtp
from .clockrate import PLAUSIBLE_RTP_RATES, USUAL_RTP_RATES, nearest_usual, send_seconds
from .fields import RTP, RTP_SEQ, RTP_SSRC, RTP_TIMESTAMP, UDP
from .flows import SSRC
from .record import S_DECODED
from .sequences import MIN_AUTO_PACKETS, NotThisKind, Stream, first_reasons, not_a_sequence

TRANSPORT_CC = "transport-cc"


def sender_report_candidates(records: np.ndarray) -> np.ndarray:
    """Records that may be RTCP sender reports: decoded UDP, version 2, packet type 200.
    The rare second byte 200 is looked for first, the other fields only where it is."""
    out = records["head"][:, 1] == 200  # a strided view: one column is read
    rows = np.flatnonzero(out)
    some = records[rows]
    out[rows] = (
        (some["status"] == S_DECODED)
        & (some["proto"] == UDP)
        & (some["head_len"] >= 20)
        & (some["head"][:, 0] >> 6 == 2)
    )
    return out


def capture_sender_reports(capture) -> dict[int, tuple[float, int]]:
    """The media clock rates that RTCP sender reports anywhere in the capture give, by SSRC:
    RTCP travels on the RTP port (muxed) or on the next one (a flow of its own)."""
    records = capture.records
    reports = sender_report_candidates(records)
    if not reports.any():
        return {}
    head = np.ascontiguousarray(records["head"][reports])
    head_len = records["head_len"][reports].astype(np.int64)
    kinds = call(rtp.header_fields, head, head_len, records["payload_len"][reports].astype(np.int64))[0]
    return rtp.sender_report_rates(head, head_len, kinds == rtp.RTCP)


def no_rtp_reason(kinds: np.ndarray) -> str:
    """Why a flow is not RTP: its packets' kinds (RFC 7983, ``rtp.header_fields``), counted."""
    return f"no RTP packets ({', '.join(f'{k} {n}' for k, n in rtp.kind_counts(kinds).items())})"


class NoRTPPackets(NotThisKind):
    """A flow none of whose packets opens with an RTP version 2 header. The message counts its
    packets' kinds (``rtp.header_fields``, a pass over every packet), made only when it is
    shown: most such flows are another kind's, which ``payload.flow_streams`` tries next."""

    def __init__(self, head: np.ndarray, head_len: np.ndarray, payload_len: np.ndarray):
        super().__init__()
        self._packets = (head, head_len, payload_len)

    def __str__(self) -> str:
        return no_rtp_reason(call(rtp.header_fields, *self._packets, us_per_item=2.0)[0])

    def __reduce__(self):  # crosses a process boundary as its message
        return NotThisKind, (str(self),)


def flow_rtp_streams(
    label, rows, records, times, clock_rate, send_times, rtp_sequence="ssrc", abs_send_time_id=None, reports=None
) -> list[Stream]:
    """The RTP streams of one UDP flow (``rtp.py``: demultiplexing, noise, padding probes,
    retransmission streams); a stream that cannot be read is skipped with its reason, which
    the first stream's ``info['skipped_streams']`` carries. NotThisKind when none is left."""
    head = records["head"]  # a capture of one flow: the records' own bytes, read in place
    head_len = records["head_len"].astype(np.int64)
    payload_len = records["payload_len"].astype(np.int64)
    if not (((head[:, 0] & 0xC0) == 0x80) & (head_len >= 12) & (payload_len >= 12)).any():
        raise NoRTPPackets(head, head_len, payload_len)  # no RTP version 2 header anywhere
    kinds, _, padding, osn, fec = call(rtp.header_fields, head, head_len, payload_len, us_per_item=2.0)
    demux = rtp.kind_counts(kinds)
    is_rtp = (kinds == rtp.RTP) & (payload_len >= 12)
    excluded = {
        "short_payload": int((payload_len < 12).sum()),
        "cut_by_snaplen": int(((payload_len >= 12) & (head_len < 12)).sum()),
        "not_rtp": int(((kinds != rtp.RTP) & (head_len >= 12)).sum()),
    }
    excluded = {k: v for k, v in excluded.items() if v}  # of the whole flow
    if not is_rtp.any():
        raise NotThisKind(no_rtp_reason(kinds))
    if rtp_sequence == TRANSPORT_CC:
        return [_transport_wide_stream(label, rows, head, head_len, is_rtp, times, send_times, demux)]
    probe = is_rtp & padding
    ssrc = RTP_SSRC.read(head)
    seq16 = RTP_SEQ.read(head)
    skipped: dict[str, str] = {}
    candidates, small = [], []
    keys, counts = _ssrc_counts(ssrc[is_rtp])
    for key, count in zip(keys, counts):
        name = f"{label}{SSRC}0x{int(key):08x}"
        mine = is_rtp & (ssrc == key)
        media = mine & ~probe
        if int(count) <= rtp.NOISE_PACKETS:  # noise, unless it is a short retransmission stream
            small.append(
                {
                    "name": name,
                    "ssrc": f"0x{int(key):08x}",
                    "small": True,
                    "packets": int(count),
                    "pt": int(head[mine, 1][0] & 0x7F),
                    "osn": osn[mine],
                    "seq16": np.empty(0, np.int64),
                }
            )
            continue
        if int(media.sum()) < MIN_AUTO_PACKETS:
            skipped[name] = f"{int(media.sum())} media packets ({int((mine & probe).sum())} padding-only probes)"
            continue
        padded = (head[media, 0] & 0x20) != 0
        if padded.all() and np.ptp(RTP_TIMESTAMP.read(head[media])) == 0:
            skipped[name] = f"padding probes: every packet padded, the timestamp never advances ({int(count)} packets)"
            continue
        keep = _selection(media)  # views, not copies, when the stream is the whole flow
        own = unwrap_sequence(seq16[keep], 1 << 16)
        problem = not_a_sequence(own)
        if problem:
            skipped[name] = f"{problem} ({int(count)} packets)"
            continue
        candidates.append(
            {
                "name": name,
                "ssrc": f"0x{int(key):08x}",
                "mask": media,
                "seq": own,
                "probes": int((mine & probe).sum()),
                "pt": int(np.bincount(head[keep, 1] & 0x7F).argmax()),
                "packets": int(media.sum()),
                "osn": osn[keep],
            }
        )
    if reports is None:  # this flow's own RTCP
        reports = rtp.sender_report_rates(head, head_len, kinds == rtp.RTCP)
    if len(candidates) + len(small) > 1:  # what a retransmission stream would refer to
        for c in candidates:
            seen = np.unique(c["seq"])
            c["holes"] = np.setdiff1d(np.arange(seen[0], seen[-1] + 1), seen, assume_unique=True)
            c["seq16"] = np.concatenate((seen, c["holes"])) % (1 << 16)
    pairs = rtp.rtx_pairs(candidates + small)
    noise = [c for k, c in enumerate(small, start=len(candidates)) if k not in pairs]
    noise_ssrcs, noise_packets = len(noise), sum(c["packets"] for c in noise)
    candidates += small
    if len(candidates) - len(small) == 1 and not skipped and not noise_ssrcs and not pairs:
        candidates[0]["name"] = label  # one SSRC on the flow: the flow's own label, as before
    streams = []
    for i, c in enumerate(candidates):
        if i in pairs or c.get("small"):
            continue
        pick = _selection(c["mask"])
        mine_head, mine_len, mine_rows = head[pick], head_len[pick], rows[pick]
        info = {
            "kind": "rtp",
            "ssrc": c["ssrc"],
            "excluded": excluded,
            "payload_type": c["pt"],
            "padding_only": c["probes"],
            **_fec_report(mine_head, fec[pick], c["pt"]),
        }
        repaired = np.empty(0, np.int64)
        for r, m in pairs.items():
            if m == i:
                carried = candidates[r]["osn"][candidates[r]["osn"] >= 0]
                repaired = c["holes"][np.isin(c["holes"] % (1 << 16), carried)]
                info.update(
                    rtx_stream=candidates[r]["name"],
                    rtx_packets=candidates[r]["packets"],
                    rtx_payload_type=candidates[r]["pt"],
                    rtx_repaired=int(repaired.size),
                )
        sent = np.full(c["packets"], np.nan)
        given = clock_rate.of(c["name"], ssrc=int(c["ssrc"], 16), payload_type=int(c["pt"]))
        rate = given
        report = reports.get(int(c["ssrc"], 16))
        if given is None and report is not None:  # the sender said how fast its media clock runs
            measured, count = report
            info.update(sender_reports=count, sender_report_rate=measured)
            if PLAUSIBLE_RTP_RATES[0] <= measured <= PLAUSIBLE_RTP_RATES[1]:
                rate = nearest_usual(measured, USUAL_RTP_RATES, 0.01) or measured
            else:  # reports whose NTP and RTP times do not belong together: not a clock to use
                report = None
                info["sender_report_refused"] = (
                    f"{measured:.3g} Hz is no media clock rate "
                    f"({PLAUSIBLE_RTP_RATES[0]:g}-{PLAUSIBLE_RTP_RATES[1]:g} Hz)"
                )
        extension = None
        if send_times:
            mine_times = times[mine_rows]
            extension = rtp.abs_send_time_id(mine_head, mine_len, mine_times, abs_send_time_id)
        if extension is not None:  # the sender's own send time, better than the media clock
            stamps = rtp.extension_values(mine_head, mine_len, 3, extension)
            sent = unwrap_sequence(stamps, 1 << 24) * rtp.ABS_SEND_TIME_UNITS
            info.update(send_time="abs-send-time", abs_send_time_id=extension)
        elif send_times:
            try:
                sent = send_seconds(
                    RTP, mine_head, mine_times, rate, info, c["name"], given=given is not None, key=c["ssrc"]
                )
                if given is None and report is not None:
                    info["clock_source"] = "RTCP sender reports"
                sent = _per_frame(sent, mine_times, info)
            except NotThisKind as why:
                skipped[c["name"]] = f"{why} ({c['packets']} packets)"
                continue
        streams.append(Stream(c["name"], "rtp", mine_rows, c["seq"], sent, info, repaired))
    if not streams:
        raise NotThisKind(
            "no readable RTP stream"
            + (f" ({first_reasons(skipped)})" if skipped else "")
            + (f"; {noise_ssrcs} one-off SSRCs" if noise_ssrcs else "")
        )
    streams[0].info.update(demux=demux, noise_ssrcs=noise_ssrcs, noise_packets=noise_packets, skipped_streams=skipped)
    return streams


def _ssrc_counts(ssrc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct SSRCs, ascending, and their packet counts; a flow of one SSRC (the usual
    case) without sorting its packets' SSRCs."""
    if (ssrc == ssrc[0]).all():
        return ssrc[:1], np.array([ssrc.shape[0]])
    return np.unique(ssrc, return_counts=True)


def _selection(mask: np.ndarray) -> slice | np.ndarray:
    """What indexes the rows ``mask`` keeps: a slice (views, no copy) when it keeps them all,
    as it does on a flow of one stream, else their indices."""
    return slice(None) if mask.all() else np.flatnonzero(mask)


def _fec_report(head, fec, media_pt: int) -> dict:
    """The stream's payload types other than its media's that carry RFC 5109 FEC headers
    (``fec``: ``rtp.header_fields``): ``fec_payload_type`` and ``fec_packets``. FEC packets sent in the
    media stream take sequence numbers of it, so they stay in its sequence space (a lost one
    is a loss on the path like any other); they are counted here, not hidden."""
    pt = (head[:, 1] & 0x7F).astype(np.int64)
    for other in np.unique(pt[pt != media_pt]):
        mine = pt == other
        if fec[mine].mean() >= rtp.FEC_SHARE:
            return {"fec_payload_type": int(other), "fec_packets": int(mine.sum())}
    return {}


def _per_frame(sent: np.ndarray, arrivals: np.ndarray, info: dict) -> np.ndarray:
    """Send times from the media clock, per frame: all packets of a video frame carry its one
    timestamp, and the sender (or its pacer) spreads them over time, so each packet's delay
    against that timestamp grows through the frame with sending, not with the path. The ROTT
    of a frame is taken from its first arrival, and its other packets keep that ROTT (their
    send time moves with their arrival). Streams with a timestamp per packet are unchanged;
    ``info['frames']`` counts the frames when some span several packets."""
    stamps, first = np.unique(sent, return_inverse=True)
    if stamps.shape[0] == sent.shape[0]:
        return sent
    earliest = np.full(stamps.shape[0], np.inf)
    np.minimum.at(earliest, first, arrivals)
    info.update(frames=int(stamps.shape[0]), rott="per frame (its first arrival)")
    return sent + (arrivals - earliest[first])


def _transport_wide_stream(label, rows, head, head_len, is_rtp, times, send_times, demux) -> Stream:
    """Every RTP packet of the flow in one sequence space: the transport-wide sequence number
    (the transport-cc header extension, 2 bytes, one counter across all SSRCs, padding probes
    and retransmissions included), the loss signal a WebRTC receiver itself uses. Its send
    times come from abs-send-time, the one clock all those packets share."""
    rtp_head, rtp_len = head[is_rtp], head_len[is_rtp]
    counts = rtp.extension_counts(rtp_head, rtp_len, 2)
    chosen = seq = None
    for ident in np.flatnonzero(counts >= max(MIN_AUTO_PACKETS, 0.99 * rtp_head.shape[0])):
        values = rtp.extension_values(rtp_head, rtp_len, 2, int(ident))
        candidate = unwrap_sequence(values[values >= 0], 1 << 16)
        if not_a_sequence(candidate) is None and np.mean(np.diff(candidate) == 1) >= 0.5:
            chosen, present, seq = int(ident), values >= 0, candidate
            break
    if seq is None:  # (chosen, present and seq are found together)
        raise NotThisKind("no transport-wide sequence number (a 2-byte header extension counting every packet)")
    keep = np.flatnonzero(is_rtp)[present]
    info = {"kind": "rtp", "sequence": TRANSPORT_CC, "transport_cc_id": chosen, "demux": demux}
    sent = np.full(keep.size, np.nan)
    if send_times:
        extension = rtp.abs_send_time_id(head[keep], head_len[keep], times[rows[keep]])
        if extension is None:
            raise NotThisKind("transport-wide sequence numbers, but no abs-send-time to time them")
        clocks = rtp.extension_values(head[keep], head_len[keep], 3, extension)
        sent = unwrap_sequence(clocks, 1 << 24) * rtp.ABS_SEND_TIME_UNITS
        info.update(send_time="abs-send-time", abs_send_time_id=extension)
    return Stream(f"{label}/{TRANSPORT_CC}", "rtp", rows[keep], seq, sent, info)
