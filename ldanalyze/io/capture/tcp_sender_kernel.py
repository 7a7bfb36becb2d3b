"""What a TCP sender did, read from a capture at the sender with both directions (issue #44
§1): the kernel that walks every connection's transmissions and ACKs in one pass and decides
each retransmission's trigger, the spurious ones, RTT and delivery-rate samples, pipe and
chunks. ``tcp_sender`` turns records into its arrays and its output into the sender's view.

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
from numba import njit

from .record import SACK_BLOCK_BYTES

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
