"""The sender's view of a TCP connection captured at its sender, both directions in the capture
(issue #44 §1): one row per transmission of a data segment, and one per ACK that came back.

Segments. Each data segment the host sent is a transmission; its bytes are relative to the
SYN's ISN + 1, else to the first data byte. A transmission that starts at or above every byte
sent before it is new data, numbered into segment indices as ``tcp.segment_index`` numbers
them (a hole in the bytes, which the capture missed, counts ceil(hole / MSS) indices); any other
is a retransmission of the segment that holds its first byte, whatever its length (a stack may
cut its retransmissions otherwise than the first sends: Linux after an MSS change, a middlebox
that clamps the MSS), so ``tx`` counts a segment's transmissions. A segment longer than the
MSS (the peer's SYN option, else this side's, else the most common length) was captured before
TCP segmentation offload cut it (TSO/GSO: a server's capture shows what the stack handed the
NIC): it is read as transmissions of the usual size (the most common length within the MSS:
the MSS less the options each segment carries), the last one the rest, all at its capture time,
each with the whole headers (as the NIC sends each piece); ``meta['flows']`` counts such
segments (``offload_segments``) and says so (``offload_note``).

Events are taken in capture order (the host's order: an ACK before the segments it released).
The rules, with their sources:

- **retransmission**: a transmission whose first byte was sent before (below the highest byte
  sent). It replaces the segment's previous transmission, whose ``t_detect`` is the
  retransmission's time and whose ``loss_trigger`` says why the sender took it for lost.
- **loss trigger**, at a retransmission that starts a recovery episode (none open: the
  cumulative ACK has passed the last episode's recovery point, the highest byte sent when it
  began; RFC 6675 §5, RFC 5681 §3.2):
  ``rto`` when nothing re-armed the retransmission timer for ``SLACK`` × the RTO estimate or
  longer (since the last ACK that advanced, the last retransmission or the first send after an
  idle time; RFC 6298 §2 and §5, the estimate SRTT + max(4·RTTVAR, 200 ms) as Linux bounds the
  variance term, 1 s before a sample; ``SLACK`` allows for Linux's estimator not being ours);
  else ``dupack`` with three or more duplicate ACKs since the last advance (RFC 5681 §2: no
  data, no SYN/FIN, the same ACK number and window, data outstanding); else ``sack`` when bytes
  above the segment were SACKed (RFC 6675 §5, IsLost; RFC 2018) or a transmission sent after
  the one it replaces was acknowledged (RACK, RFC 8985 §6.2: Linux's loss detection with SACK,
  which marks a segment lost when one sent later is delivered, cumulatively or by SACK); else ``tlp`` when it is the
  highest segment sent, re-sent after ``SLACK`` × 2·SRTT of silence (no ACK, no send) and before
  the RTO (RFC 8985 §7.2, the PTO); else ``other``. Every retransmission of an open episode
  inherits its trigger, except one sent after an RTO's silence, which opens an ``rto`` episode
  (RFC 6298 §5.4: a timeout in recovery); so the retransmissions that follow an RTO are ``rto``.
- **spurious** (the evidence on the transmission declared lost; RFC 3708 §2 defines the
  detection), in this order: ``acked``, its bytes were acknowledged (cumulatively or by SACK)
  before the retransmission; ``dsack``, a later ACK's first SACK block lies below its cumulative
  ACK or inside its second block (RFC 2883 §4) and covers the whole segment, which was sent
  twice or more (the transmission before the latest one is marked); at the first ACK that covers
  a retransmission, ``eifel`` when it echoes a TSecr older than the retransmission's TSval (RFC
  3522 §2: the original was acknowledged; tested on the segment whose hole an advancing ACK
  fills, as Eifel tests the oldest outstanding one: a SACK, or an ACK covering several
  retransmissions, echoes the TSval of another segment), else, on an ACK without timestamps,
  ``timing`` when it came sooner after the retransmission than the smallest RTT sample of the
  connection so far (RFC 3708 §3 allows any such evidence; F-RTO's reasoning, RFC 5682; where
  the ACK carries timestamps its TSecr decides, and jitter below the minimum RTT proves nothing). A spurious transmission is ``delivered``;
  its ``t_ack`` is the ACK that showed it.
- **fates**: ``delivered`` when its segment was acknowledged (reason ``acked``, ``sacked``)
  with this transmission the latest, or spurious (``spurious: dsack`` ...); ``lost`` when
  retransmitted and not spurious (``retransmitted: rto`` ...); ``unobserved`` otherwise (``not
  acknowledged``; ``already acknowledged`` for a retransmission of acknowledged bytes).
  ``t_ack``: the first ACK that covered the segment wholly (a partial ACK counts when the rest
  comes), on its latest transmission then.
- **ACKs** (``ACK_COLUMNS``): ``ack`` the first segment index not cumulatively acknowledged,
  ``largest`` the highest acknowledged (SACK blocks included), ``newly`` the payload bytes of the
  segments it acknowledged first; ``rtt`` from the TSecr where the ACK advances and echoes the
  TSval of a data segment (RFC 7323 §4.3: the time since that TSval was first sent), else Karn's
  (RFC 6298 §3): the newly acknowledged segment sent last among those sent once; SRTT and RTTVAR
  as RFC 6298 §2; ``delivery_rate`` the rate sample of draft-cheng-iccrg-delivery-rate-estimation
  §3 (the packet sent last among those newly delivered; invalid, NaN, under the minimum RTT);
  ``in_flight`` RFC 6675's pipe as snd_max − snd_una − SACKed bytes above snd_una;
  ``rwnd`` the window shifted by the scale the ACK direction's SYN announced when both SYNs
  carried the option (RFC 7323 §2.3; none when one did not; -1 unknown: its SYN not captured).
- **chunks**: a transmission of new data when nothing was outstanding, more than the RTO
  estimate after the sender's last transmission, starts a chunk (an ACK or a request from the
  receiver in between does not matter: a client asking for the next chunk sends one) (Flach et al., "An
  Internet-wide analysis of traffic policing", SIGCOMM 2016, §3: the flow cut at idle times).
- **one direction only**: a data flow whose ACKs are not in the capture keeps its rows,
  retransmissions counted (``t_detect``, trigger ``other``: how is unknown), every fate
  ``unobserved`` (reason ``no ACKs captured``) and a note in its ``meta``.

The kernel ``sender_kernel`` runs every connection in one pass; its plain twin is
``tests/naive/tcp_sender.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from ...packets import ACK_COLUMNS, DELIVERED, FATES, LOST, UNOBSERVED, flow_text, unwrap_sequence
from .record import F_TCP_MSS, F_TCP_SACK, F_TCP_TIMESTAMP, F_TCP_WSCALE, SACK_BLOCK_BYTES
from .sequences import NotThisKind, not_a_sequence
from .tcp import segment_index

SLACK = 0.8  # of a timer's estimate: what we estimate is not exactly what the sender's stack did
RTO_MIN = 0.2  # Linux's TCP_RTO_MIN, the bound on the variance term
RTO_INITIAL = 1.0  # RFC 6298 §2.1
RTO_MAX = 120.0  # Linux's TCP_RTO_MAX
DUPTHRESH = 3  # RFC 5681 §3.2
MAX_SACK_BLOCKS = 4  # RFC 2018 §3: at most 4 fit the options
SACK_HEAD_BYTES = MAX_SACK_BLOCKS * SACK_BLOCK_BYTES  # head bytes a record needs to keep them all
TCP_SYN, TCP_FIN, TCP_RST, TCP_ACK = 0x02, 0x01, 0x04, 0x10

TRIGGERS = ("", "dupack", "sack", "rto", "tlp", "other")
EVIDENCE = ("", "dsack", "eifel", "timing", "acked")
RTT_SOURCES = ("", "karn", "tsecr")
DUPACK, SACK, RTO, TLP, OTHER = range(1, 6)  # codes into TRIGGERS
DSACK, EIFEL, TIMING, ACKED = range(1, 5)  # into EVIDENCE
KARN, TSECR = 1, 2  # into RTT_SOURCES
# how a transmission was acknowledged (0: not): cumulatively, by SACK, or its bytes before it was sent
COVER_ACKED, COVER_SACKED, COVER_BEFORE = 1, 2, 3
NO_ACKS = "no ACKs captured"


@njit(cache=True)
def _latest(a, b):
    """The later of two times, NaN meaning none (-inf when both are none)."""
    a = a if a == a else -np.inf
    b = b if b == b else -np.inf
    return max(a, b)


@njit(cache=True)
def _first_open(skip, k):
    """The first segment at or after ``k`` that is still open (neither acknowledged nor empty):
    ``skip[k] == k`` for an open one, else a later segment to look at; the pointers passed are
    pointed at the answer (path compression), so a SACK block that grows ACK after ACK is walked
    once, not once an ACK (a recovery's duplicate ACKs each repeat the bytes SACKed before)."""
    found = k
    while skip[found] != found:
        found = skip[found]
    while k != found:
        after = skip[k]
        skip[k] = found
        k = after
    return found


@njit(cache=True)
def sender_kernel(
    events,
    conn_of_tx,
    t_tx,
    b0,
    b1,
    seg,
    tsval,
    conn_of_ack,
    t_ack_in,
    ack_byte,
    sack,
    n_sack,
    ts_ack,
    tsecr,
    win_raw,
    pure,
    seg_start,
    seg_end,
    seg_lo,
    tx_lo,
    tx_hi,
):
    """The sender's state machine over ``events`` (≥ 0: transmission i; < 0: ACK ~e), grouped by
    connection, each in capture order. Transmissions: connection, time, bytes [b0, b1), global
    segment index, TSval (unwrapped; -1 none). ACKs: connection, time, ACK byte, SACK edges
    (``sack[j, 2k]``, ``sack[j, 2k+1]``; ``n_sack[j]`` of them), TSecr
    (``ts_ack``: carries timestamps; unwrapped against the data's TSvals), raw window, ``pure``
    (no payload, no SYN/FIN/RST). Segments: global index → first and end byte, connection's
    first segment ``seg_lo[c]``; ``tx_lo``/``tx_hi``: the connection's transmissions. Returns
    the per-transmission and per-ACK columns (see the module docstring)."""
    n_tx, n_ack, n_seg = t_tx.shape[0], t_ack_in.shape[0], seg_start.shape[0]
    t_ackd = np.full(n_tx, np.nan)
    t_detect = np.full(n_tx, np.nan)
    trigger = np.zeros(n_tx, np.int8)
    spurious = np.zeros(n_tx, np.int8)
    cover = np.zeros(n_tx, np.int8)
    chunk = np.zeros(n_tx, np.int64)
    in_flight_tx = np.zeros(n_tx, np.int64)
    p_delivered = np.zeros(n_tx, np.int64)
    p_delivered_time = np.zeros(n_tx)
    p_first_sent = np.zeros(n_tx)
    a_ack = np.zeros(n_ack, np.int64)
    a_largest = np.zeros(n_ack, np.int64)
    a_newly = np.zeros(n_ack, np.int64)
    a_dupack = np.zeros(n_ack, np.bool_)
    a_dsack = np.zeros(n_ack, np.bool_)
    a_rtt = np.full(n_ack, np.nan)
    a_rtt_src = np.zeros(n_ack, np.int8)
    a_rtt_seq = np.full(n_ack, -1, np.int64)
    a_rate = np.full(n_ack, np.nan)
    a_flight = np.zeros(n_ack, np.int64)
    last_tx = np.full(n_seg, -1, np.int64)
    prev_tx = np.full(n_seg, -1, np.int64)
    n_sent = np.zeros(n_seg, np.int64)
    done = np.zeros(n_seg, np.bool_)  # acknowledged (cumulatively or by SACK)
    sacked = np.zeros(n_seg, np.bool_)
    fresh = np.empty(n_seg, np.int64)
    # open segments (see _first_open; n_seg: an end that is always open); empty ones never open
    skip = np.arange(n_seg + 1)
    for k in range(n_seg):
        if seg_end[k] <= seg_start[k]:
            skip[k] = k + 1
    ordered = True  # the connection's segments end in order: a SACK block's segments are a run
    conn = -1
    snd_una = snd_max = sacked_bytes = delivered = 0
    una_k = seg_hi = chunk_id = dupacks = 0
    srtt = rttvar = min_rtt = np.nan
    rto = RTO_INITIAL
    last_ack_t = last_send_t = last_rearm_t = delivered_time = first_sent_time = np.nan
    rec_point, rec_trigger, max_sacked, last_win = -1, 0, -1, -1
    rack_sent = -np.inf  # the latest send time of a transmission acknowledged (RFC 8985 §6.1, RACK.xmit_ts)
    for e in events:
        c = conn_of_tx[e] if e >= 0 else conn_of_ack[~e]
        if c != conn:  # a new connection: a fresh state
            conn = c
            snd_una = snd_max = sacked_bytes = delivered = chunk_id = dupacks = 0
            una_k = seg_lo[c]
            seg_hi = seg_lo[c + 1]
            srtt = rttvar = min_rtt = np.nan
            rto = RTO_INITIAL
            last_ack_t = last_send_t = last_rearm_t = delivered_time = first_sent_time = np.nan
            rec_point, rec_trigger, max_sacked, last_win = -1, 0, -1, -1
            rack_sent = -np.inf
            ordered = True
            for k in range(una_k + 1, seg_hi):
                if seg_end[k] < seg_end[k - 1]:
                    ordered = False
                    break
        if e >= 0:
            i = e
            t = t_tx[i]
            k = seg[i]
            if b0[i] < snd_max:  # a retransmission: the bytes were sent before
                p = last_tx[k]
                if p >= 0:
                    quiet = t - _latest(last_ack_t, last_send_t)  # no ACK, no send since
                    timed_out = t - last_rearm_t >= SLACK * rto  # set by the first send
                    if rec_point >= 0 and snd_una < rec_point and not timed_out:
                        why = rec_trigger
                    else:
                        if timed_out:
                            why = RTO
                        elif dupacks >= DUPTHRESH:
                            why = DUPACK
                        elif max_sacked > b1[i] or rack_sent > t_tx[p]:
                            why = SACK
                        elif b1[i] >= snd_max and srtt == srtt and quiet >= SLACK * 2 * srtt:
                            why = TLP
                        else:
                            why = OTHER
                        rec_point, rec_trigger = snd_max, why
                    t_detect[p] = t
                    trigger[p] = why
                    if done[k] and spurious[p] == 0:
                        spurious[p] = ACKED
                        if t_ackd[p] != t_ackd[p]:
                            t_ackd[p] = t
                    if done[k]:
                        cover[i] = COVER_BEFORE
                last_rearm_t = t
            else:
                if snd_max <= snd_una:  # nothing outstanding: an idle sender starts again
                    if last_send_t == last_send_t and t - last_send_t > rto:
                        chunk_id += 1
                    first_sent_time = t
                    delivered_time = t
                    last_rearm_t = t
            if b1[i] > snd_max:
                snd_max = b1[i]
            if last_tx[k] >= 0:
                prev_tx[k] = last_tx[k]
            last_tx[k] = i
            n_sent[k] += 1
            p_delivered[i] = delivered
            p_delivered_time[i] = delivered_time
            p_first_sent[i] = first_sent_time
            chunk[i] = chunk_id
            in_flight_tx[i] = snd_max - snd_una - sacked_bytes
            last_send_t = t
            continue
        j = ~e
        t = t_ack_in[j]
        a = ack_byte[j]
        if a > snd_max:
            a = snd_max  # an ACK of the FIN, or of bytes the capture missed
        newly = 0
        karn_sent = -np.inf
        karn_seg = -1
        newest = -1  # the transmission sent last among those newly delivered
        n_fresh = 0  # segments this ACK acknowledged first, in fresh[:n_fresh]
        largest = una_k - 1
        # D-SACK (RFC 2883 §4): the first block below the cumulative ACK, or inside the second
        dsack = n_sack[j] >= 1 and (
            sack[j, 1] <= a or (n_sack[j] >= 2 and sack[j, 0] >= sack[j, 2] and sack[j, 1] <= sack[j, 3])
        )
        a_dsack[j] = dsack
        for blk in range(max(n_sack[j], 0)):
            le, re = sack[j, 2 * blk], sack[j, 2 * blk + 1]
            if re <= le:
                continue
            k = seg_lo[conn] + np.searchsorted(seg_start[seg_lo[conn] : seg_hi], le)
            # the segments wholly inside the block, in order; where they end in order, only
            # the open ones (those a non-D-SACK block can change) are visited, ``largest``
            # taken at once as the last non-empty one
            skipping = ordered and not (blk == 0 and dsack)
            stop = seg_hi
            if skipping:
                stop = k + np.searchsorted(seg_end[k:seg_hi], re, side="right")
                last = stop - 1
                while last >= k and seg_end[last] <= seg_start[last]:
                    last -= 1
                if last >= k and last > largest:
                    largest = last
                k = _first_open(skip, k)
            while k < stop and seg_end[k] <= re:
                if seg_end[k] > seg_start[k]:
                    if blk == 0 and dsack:
                        p = prev_tx[k]
                        if n_sent[k] >= 2 and p >= 0 and spurious[p] == 0:
                            spurious[p] = DSACK
                            if t_ackd[p] != t_ackd[p]:
                                t_ackd[p] = t
                    elif not done[k] and seg_start[k] >= a and last_tx[k] >= 0:
                        done[k] = True
                        skip[k] = k + 1
                        sacked[k] = True
                        sacked_bytes += seg_end[k] - seg_start[k]
                        cover[last_tx[k]] = COVER_SACKED
                        fresh[n_fresh] = k
                        n_fresh += 1
                    if not (blk == 0 and dsack) and k > largest:
                        largest = k
                k = _first_open(skip, k + 1) if skipping else k + 1
            if not (blk == 0 and dsack) and re > max_sacked:
                max_sacked = re
        advanced = a > snd_una
        head = una_k if advanced else -1  # the hole an advancing ACK fills: Eifel's segment
        if advanced:
            while una_k < seg_hi and seg_end[una_k] <= a:
                if sacked[una_k]:
                    sacked_bytes -= seg_end[una_k] - seg_start[una_k]
                elif not done[una_k] and last_tx[una_k] >= 0:
                    done[una_k] = True
                    skip[una_k] = una_k + 1
                    cover[last_tx[una_k]] = COVER_ACKED
                    fresh[n_fresh] = una_k
                    n_fresh += 1
                una_k += 1
            snd_una = a
            if una_k - 1 > largest:
                largest = una_k - 1
        # what this ACK acknowledged first: t_ack, newly, the spurious checks, Karn's candidate
        for f in range(n_fresh):
            k = fresh[f]
            i = last_tx[k]
            if cover[i] == COVER_BEFORE:
                continue
            t_ackd[i] = t
            newly += seg_end[k] - seg_start[k]
            if newest < 0 or t_tx[i] > t_tx[newest]:
                newest = i
                if t_tx[i] > rack_sent:
                    rack_sent = t_tx[i]
            if n_sent[k] == 1:
                if t_tx[i] > karn_sent:
                    karn_sent, karn_seg = t_tx[i], k
                continue
            p = prev_tx[k]
            if p >= 0 and spurious[p] == 0:
                if k == head and ts_ack[j] and tsval[i] >= 0 and tsecr[j] < tsval[i]:
                    spurious[p] = EIFEL
                    t_ackd[p] = t
                elif not ts_ack[j] and min_rtt == min_rtt and t - t_tx[i] < min_rtt:
                    spurious[p] = TIMING
                    t_ackd[p] = t
        delivered += newly
        # duplicate ACKs (RFC 5681 §2)
        dup = (not advanced) and pure[j] and a == snd_una and snd_max > snd_una and win_raw[j] == last_win
        a_dupack[j] = dup
        if advanced:
            dupacks = 0
            last_rearm_t = t
        elif dup:
            dupacks += 1
        if rec_point >= 0 and snd_una >= rec_point:
            rec_point = -1
        # the RTT sample: TSecr (RFC 7323 §4.3) on an advancing ACK, else Karn's
        rtt = np.nan
        if advanced and ts_ack[j]:
            lo_tx, hi_tx = tx_lo[conn], tx_hi[conn]
            m = lo_tx + np.searchsorted(tsval[lo_tx:hi_tx], tsecr[j])
            if m < hi_tx and tsval[m] == tsecr[j] and t_tx[m] <= t:
                rtt = t - t_tx[m]
                a_rtt_src[j] = TSECR
                a_rtt_seq[j] = seg[m] - seg_lo[conn]
        if rtt != rtt and karn_seg >= 0:
            rtt = t - karn_sent
            a_rtt_src[j] = KARN
            a_rtt_seq[j] = karn_seg - seg_lo[conn]
        if rtt == rtt:
            a_rtt[j] = rtt
            if srtt != srtt:
                srtt, rttvar = rtt, rtt / 2
            else:
                rttvar = 0.75 * rttvar + 0.25 * abs(srtt - rtt)
                srtt = 0.875 * srtt + 0.125 * rtt
            rto = min(srtt + max(RTO_MIN, 4 * rttvar), RTO_MAX)
            if not (min_rtt <= rtt):
                min_rtt = rtt
        # the delivery rate sample (draft-cheng-iccrg-delivery-rate-estimation §3.3)
        if newest >= 0:
            delivered_time = t
            interval = max(t_tx[newest] - p_first_sent[newest], t - p_delivered_time[newest])
            first_sent_time = t_tx[newest]
            if interval > 0 and min_rtt == min_rtt and interval >= min_rtt:
                a_rate[j] = (delivered - p_delivered[newest]) / interval
        a_ack[j] = una_k - seg_lo[conn]
        a_largest[j] = largest - seg_lo[conn]
        a_newly[j] = newly
        a_flight[j] = snd_max - snd_una - sacked_bytes
        last_ack_t = t
        last_win = win_raw[j]
    return (
        t_ackd,
        t_detect,
        trigger,
        spurious,
        cover,
        chunk,
        in_flight_tx,
        a_ack,
        a_largest,
        a_newly,
        a_dupack,
        a_dsack,
        a_rtt,
        a_rtt_src,
        a_rtt_seq,
        a_rate,
        a_flight,
    )


# -- from records to the kernel's arrays, and back -----------------------------------------------
def _signed32(d: np.ndarray) -> np.ndarray:
    """A 32-bit difference as the signed step closest to zero."""
    d = np.asarray(d, np.int64) % (1 << 32)
    return np.where(d >= 1 << 31, d - (1 << 32), d)


def _aligned(values: np.ndarray, near: int) -> np.ndarray:
    """32-bit numbers unwrapped, shifted by whole turns so that the first is near ``near``."""
    out = unwrap_sequence(values.astype(np.int64), 1 << 32)
    return out + (near + _signed32(out[0] - near) - out[0]) if out.shape[0] else out


class Connection:
    """One data flow of the capture host and its ACK flow (None: not captured), as the kernel
    takes them: transmissions (after offload's split) and ACKs, bytes relative to the data's
    first byte. ``info`` gathers what ``meta['flows']`` tells of the flow. NotThisKind when its
    segment numbers are no sequence (two connections on the same ports), as the receiver's."""

    def __init__(self, label: str, rows: np.ndarray, records, ack_rows, ack_records, times: np.ndarray) -> None:
        self.label = label
        tcp_flags = records["tcp_flags"]
        syn = (tcp_flags & TCP_SYN) != 0
        data = records["payload_len"] > 0
        raw_seq = records["tcp_seq"].astype(np.int64)
        byte = unwrap_sequence(raw_seq, 1 << 32)
        base = int(byte[syn][0] + 1) if syn.any() else int(byte[data].min())
        length = records["payload_len"][data].astype(np.int64)
        own_mss = records["tcp_mss"][syn & ((records["flags"] & F_TCP_MSS) != 0)]
        ack_syn = None if ack_records is None else (ack_records["tcp_flags"] & TCP_SYN) != 0
        peer_mss = (
            ack_records["tcp_mss"][ack_syn & ((ack_records["flags"] & F_TCP_MSS) != 0)] if ack_syn is not None else []
        )
        limit = int(peer_mss[0]) if len(peer_mss) else int(own_mss[0]) if len(own_mss) else 0
        fitting = length[length <= limit] if limit else length  # the sizes the stack sends, offload aside
        usual = int(np.bincount(fitting).argmax()) if fitting.size else limit or 1
        if not limit:
            limit = usual
        piece = max(usual, 1)
        # TSO/GSO: a segment longer than the MSS leaves the host as pieces of the usual size
        n_pieces = np.where(length > limit, -(-length // piece), 1)
        first = np.repeat(np.cumsum(n_pieces) - n_pieces, n_pieces)
        part = np.arange(first.shape[0]) - first
        record_of = np.repeat(np.arange(length.shape[0]), n_pieces)
        start = byte[data][record_of] - base + part * piece
        end = np.minimum(start + piece, (byte[data] - base + length)[record_of])
        end = np.where(n_pieces[record_of] == 1, start + length[record_of], end)
        headers = (records["ip_len"][data] - records["payload_len"][data]).astype(np.int64)
        self.offload = int((n_pieces > 1).sum())
        self.rows = rows[data][record_of]
        self.part = part
        self.t = times[self.rows]
        self.b0, self.b1 = start, end
        self.size = end - start + headers[record_of]
        # new data: a transmission starting at or above every byte sent before it; the others
        # are retransmissions, of the segment that holds their first byte
        sent_before = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min], end[:-1])))
        new = start >= sent_before
        mss = int(own_mss[0]) if len(own_mss) else usual
        new_start = start[new]
        order = np.argsort(new_start, kind="stable")
        first_index = np.empty(new_start.shape[0], np.int64)
        first_index[order] = segment_index(new_start[order], (end - start)[new][order], max(mss, 1))
        self.seq = np.empty(start.shape[0], np.int64)
        self.seq[new] = first_index
        holder = np.searchsorted(new_start[order], start[~new], side="right") - 1
        self.seq[~new] = first_index[order][np.maximum(holder, 0)]
        problem = not_a_sequence(self.seq)  # e.g. a second connection on the same ports
        if problem:
            raise NotThisKind(f"segment numbers: {problem}")
        n_seg = int(self.seq.max()) + 1 if self.seq.size else 0
        seg_start = np.full(n_seg, np.iinfo(np.int64).max)
        seg_end = np.zeros(n_seg, np.int64)
        np.minimum.at(seg_start, self.seq, start)
        np.maximum.at(seg_end, self.seq, end)
        hole = seg_start == np.iinfo(np.int64).max  # numbers counted for bytes never captured
        filled = np.minimum.accumulate(np.where(hole, np.iinfo(np.int64).max, seg_start)[::-1])[::-1]
        self.seg_start = np.where(hole, filled, seg_start)
        self.seg_end = np.where(hole, filled, seg_end)
        stamped = (records["flags"][data] & F_TCP_TIMESTAMP) != 0
        self.timestamps = bool(stamped.size) and bool(stamped.all())
        raw_tsval = records["tcp_tsval"][data]
        tsval = unwrap_sequence(raw_tsval.astype(np.int64), 1 << 32) if self.timestamps else None
        self.tsval = np.maximum.accumulate(tsval[record_of]) if tsval is not None else np.full(start.shape[0], -1)
        self.info = {"kind": "tcp", "mss": mss, "view": "sender", "timestamps": self.timestamps}
        if self.offload:
            self.info["offload_segments"] = self.offload
            self.info["offload_note"] = (
                f"{self.offload} segments longer than the MSS ({limit} bytes): captured before TCP "
                f"segmentation offload, each read as transmissions of {piece} bytes at its capture time"
            )
        self._acks(ack_rows, ack_records, times, byte[0], base, raw_seq[0], syn.any(), records, syn)

    def _acks(self, rows, records, times, first_byte, base, first_raw, own_syn, own_records, own_syn_mask):
        """The ACK flow's arrays (all empty when it was not captured)."""
        if records is None:
            rows = np.empty(0, np.int64)
            self.info["note"] = (
                "the capture holds no ACKs of this flow (one direction only): its transmissions are "
                "counted, retransmissions included, but no fate, trigger or RTT can be read"
            )
            records = np.empty(0, own_records.dtype)
        acked = (records["tcp_flags"] & TCP_ACK) != 0
        every = bool(acked.all())

        def field(name: str) -> np.ndarray:  # the ACKs' values (the flow's own when all are ACKs: no copy)
            return records[name] if every else records[name][acked]

        self.ack_rows = rows if every else rows[acked]
        self.t_ack = times[self.ack_rows]
        tcp_flags = field("tcp_flags")
        raw_ack = field("tcp_ack")
        self.ack_byte = _aligned(raw_ack, first_byte) - base
        flags = field("flags")
        payload = field("payload_len")
        head = field("head")
        kept = np.where(
            ((flags & F_TCP_SACK) != 0) & (payload == 0),
            np.minimum(field("tcp_sack_n"), head.shape[1] // SACK_BLOCK_BYTES),
            0,
        ).astype(np.int64)
        # the SACK edges as steps from the ACK number (sender_view adds the ACK's byte): 32-bit
        # differences, wrapped as the signed step closest to zero
        words = min(2 * MAX_SACK_BLOCKS, head.shape[1] // 4)
        raw = head[:, : 4 * words].view(">u4").astype(np.uint32)
        self.sack_steps = (raw - raw_ack.astype(np.uint32)[:, None]).view(np.int32)
        self.n_sack = np.minimum(kept, MAX_SACK_BLOCKS)
        syn = (tcp_flags & TCP_SYN) != 0
        self.ts_ack = ((flags & F_TCP_TIMESTAMP) != 0) & ~syn & self.timestamps
        self.tsecr = np.full(kept.shape[0], -1, np.int64)
        if self.ts_ack.any():
            self.tsecr[self.ts_ack] = _aligned(field("tcp_tsecr")[self.ts_ack], int(self.tsval[0]))
        self.win_raw = field("tcp_win").astype(np.int64)
        self.pure = (payload == 0) & ((tcp_flags & (TCP_SYN | TCP_FIN | TCP_RST)) == 0)
        # the window scale (RFC 7323 §2.3): in force when both SYNs carried it
        all_syn = (records["tcp_flags"] & TCP_SYN) != 0
        shift = -1
        if all_syn.any():
            peer_ws = (records["flags"][all_syn][0] & F_TCP_WSCALE) != 0
            own_ws = own_syn and bool((own_records["flags"][own_syn_mask][0] & F_TCP_WSCALE) != 0)
            if not peer_ws or own_syn:
                shift = int(records["tcp_wscale"][all_syn][0]) if peer_ws and own_ws else 0
        self.rwnd = (
            np.where(syn, self.win_raw, self.win_raw << max(shift, 0))
            if shift >= 0
            else np.where(syn, self.win_raw, -1)
        )
        self.info["window_scale"] = shift


def sender_view(connections: list[Connection]) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """Run the kernel over ``connections``: the transmissions' columns (each a list of one
    array a connection, in their order), the ACK stream (``ACK_COLUMNS``) and the RTT samples."""
    n_tx = np.array([c.b0.shape[0] for c in connections], np.int64)
    n_ack = np.array([c.ack_byte.shape[0] for c in connections], np.int64)
    n_seg = np.array([c.seg_start.shape[0] for c in connections], np.int64)
    tx_lo = np.concatenate(([0], np.cumsum(n_tx)))
    ack_lo = np.concatenate(([0], np.cumsum(n_ack)))
    seg_lo = np.concatenate(([0], np.cumsum(n_seg)))
    events = []
    for c, conn in enumerate(connections):
        rows = np.concatenate((conn.rows, conn.ack_rows))
        part = np.concatenate((conn.part, np.zeros(conn.ack_rows.shape[0], np.int64)))
        ids = np.concatenate((tx_lo[c] + np.arange(n_tx[c]), ~(ack_lo[c] + np.arange(n_ack[c]))))
        events.append(ids[np.lexsort((part, rows))])

    def joined(name, dtype=None):
        return np.concatenate([np.asarray(getattr(c, name), dtype) for c in connections])

    sack = np.zeros((ack_lo[-1], 2 * MAX_SACK_BLOCKS), np.int64)
    for c, conn in enumerate(connections):
        steps = conn.sack_steps
        np.add(conn.ack_byte[:, None], steps, out=sack[ack_lo[c] : ack_lo[c + 1], : steps.shape[1]])
    conn_of_tx = np.repeat(np.arange(len(connections)), n_tx)
    conn_of_ack = np.repeat(np.arange(len(connections)), n_ack)
    out = sender_kernel(
        np.concatenate(events),
        conn_of_tx,
        joined("t", np.float64),
        joined("b0", np.int64),
        joined("b1", np.int64),
        joined("seq", np.int64) + np.repeat(seg_lo[:-1], n_tx),
        joined("tsval", np.int64),
        conn_of_ack,
        joined("t_ack", np.float64),
        joined("ack_byte", np.int64),
        sack,
        joined("n_sack", np.int64),
        joined("ts_ack", np.bool_),
        joined("tsecr", np.int64),
        joined("win_raw", np.int64),
        joined("pure", np.bool_),
        joined("seg_start", np.int64),
        joined("seg_end", np.int64),
        seg_lo,
        tx_lo[:-1],
        tx_lo[1:],
    )
    t_ackd, t_detect, trigger, spurious, cover, chunk, in_flight = out[:7]
    a_ack, a_largest, a_newly, a_dupack, a_dsack, a_rtt, a_rtt_src, a_rtt_seq, a_rate, a_flight = out[7:]
    blind = np.repeat(np.array([c.ack_rows.shape[0] == 0 and "note" in c.info for c in connections]), n_tx)
    trigger = np.where(blind & np.isfinite(t_detect), OTHER, trigger)
    spurious = np.where(blind, 0, spurious)
    fate, reason = _fates(t_detect, trigger, spurious, cover, blind)
    flows = np.repeat(np.arange(len(connections)), n_tx)
    tx = {
        "flow": flows,
        "rows": joined("rows", np.int64),
        "part": joined("part", np.int64),
        "seq": joined("seq", np.int64),
        "size": joined("size", np.int64),
        "t_send": joined("t", np.float64),
        "fate": fate,
        "reason": reason,
        "t_ack": np.where(blind, np.nan, t_ackd),
        "t_detect": t_detect,
        "loss_trigger": pd.Categorical.from_codes(trigger, categories=list(TRIGGERS)),
        "spurious": pd.Categorical.from_codes(spurious, categories=list(EVIDENCE)),
        "chunk": chunk,
        "in_flight": in_flight,
    }
    labels = [c.label for c in connections]
    acks = pd.DataFrame(
        {
            "flow": pd.Categorical.from_codes(conn_of_ack, categories=labels),
            "t": joined("t_ack", np.float64),
            "ack": a_ack,
            "largest": a_largest,
            "newly": a_newly,
            "dupack": a_dupack,
            "dsack": a_dsack,
            "rtt": a_rtt,
            "rtt_source": pd.Categorical.from_codes(a_rtt_src, categories=list(RTT_SOURCES)),
            "delivery_rate": a_rate,
            "in_flight": a_flight,
            "rwnd": joined("rwnd", np.int64),
            "cwnd": np.full(int(n_ack.sum()), -1, np.int64),
        }
    )
    acks = acks.astype({name: dtype for name, dtype in ACK_COLUMNS.items() if name not in ("flow", "rtt_source")})
    sampled = np.isfinite(a_rtt)
    rtt = pd.DataFrame(
        {"flow": flow_text(acks["flow"][sampled]), "t": acks["t"].to_numpy()[sampled], "seq": a_rtt_seq[sampled]}
    ).assign(rtt=a_rtt[sampled])
    return tx, acks, rtt


FATE_REASONS = (
    "acked",
    "sacked",
    "not acknowledged",
    "already acknowledged",
    NO_ACKS,
    *(f"retransmitted: {t}" for t in TRIGGERS[1:]),
    *(f"spurious: {e}" for e in EVIDENCE[1:]),
)


def _fates(t_detect, trigger, spurious, cover, blind) -> tuple[np.ndarray, np.ndarray]:
    """Each transmission's fate (a code into ``packets.FATES``: delivered, lost, unobserved)
    and reason (a code into ``FATE_REASONS``), by the module docstring's rules."""
    retransmitted = np.isfinite(t_detect)
    reason = np.select(
        [blind, spurious > 0, retransmitted, cover == COVER_ACKED, cover == COVER_SACKED, cover == COVER_BEFORE],
        [
            FATE_REASONS.index(NO_ACKS),
            FATE_REASONS.index("spurious: dsack") - 1 + spurious,
            FATE_REASONS.index("retransmitted: dupack") - 1 + trigger,
            FATE_REASONS.index("acked"),
            FATE_REASONS.index("sacked"),
            FATE_REASONS.index("already acknowledged"),
        ],
        FATE_REASONS.index("not acknowledged"),
    ).astype(np.int8)
    delivered, lost, unobserved = (FATES.index(f) for f in (DELIVERED, LOST, UNOBSERVED))
    fate = np.select(
        [blind, spurious > 0, retransmitted, (cover == COVER_ACKED) | (cover == COVER_SACKED)],
        [unobserved, delivered, lost, delivered],
        unobserved,
    ).astype(np.int8)
    return fate, reason
