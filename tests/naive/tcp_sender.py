"""The plain twin of the TCP sender's state machine (ldanalyze/io/capture/tcp_sender.py): one
event at a time, a dict a segment and a small object a connection, the rules of the module
docstring spelt out one by one."""

from __future__ import annotations

import bisect
import dataclasses
import math

from . import twin_of

SLACK, RTO_MIN, RTO_INITIAL, RTO_MAX, DUPTHRESH = 0.8, 0.2, 1.0, 120.0, 3
TRIGGER = {"dupack": 1, "sack": 2, "rto": 3, "tlp": 4, "other": 5}
EVIDENCE = {"dsack": 1, "eifel": 2, "timing": 3, "acked": 4}
ACKED, SACKED, BEFORE = 1, 2, 3


@twin_of("ldanalyze.io.capture.tcp_sender_kernel._latest")
def latest(*times):
    """The latest of some times, None or NaN meaning none; -inf when there is none."""
    known = [t for t in times if t is not None and not math.isnan(t)]
    return max(known) if known else -math.inf


@dataclasses.dataclass
class Sender:
    """What the sender knows of one connection."""

    first_seg: int
    end_seg: int
    snd_una: int = 0
    snd_max: int = 0
    una_k: int = 0
    sacked_bytes: int = 0
    delivered: int = 0
    dupacks: int = 0
    chunk: int = 0
    srtt: float | None = None
    rttvar: float | None = None
    min_rtt: float | None = None
    rto: float = RTO_INITIAL
    last_ack: float | None = None
    last_send: float | None = None
    last_rearm: float | None = None
    delivered_time: float = math.nan
    first_sent_time: float = math.nan
    recovery_point: int | None = None
    recovery_trigger: int = 0
    max_sacked: int = -1
    last_win: int = -1
    rack_sent: float = -math.inf


@twin_of("ldanalyze.io.capture.tcp_sender_kernel.sender_kernel")
def sender_kernel_naive(
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
    """The kernel's outputs, as lists (see ``sender_kernel``)."""
    n_tx, n_ack = len(t_tx), len(t_ack_in)
    tx = [
        {"t_ack": math.nan, "t_detect": math.nan, "trigger": 0, "spurious": 0, "cover": 0, "chunk": 0, "flight": 0}
        for _ in range(n_tx)
    ]
    at_send = [None] * n_tx  # (delivered, delivered_time, first_sent_time) when sent
    ack = [None] * n_ack
    segs = [{"txs": [], "done": False, "sacked": False} for _ in range(len(seg_start))]
    s = None
    conn = None
    for e in events:
        c = conn_of_tx[e] if e >= 0 else conn_of_ack[~e]
        if c != conn:
            conn = c
            s = Sender(first_seg=seg_lo[c], end_seg=seg_lo[c + 1], una_k=seg_lo[c])
        if e >= 0:
            _send(s, e, t_tx, b0, b1, seg, segs, tx, at_send)
        else:
            ack[~e] = _receive(
                s, ~e, t_ack_in, ack_byte, sack, n_sack, ts_ack, tsecr, win_raw, pure, seg_start, seg_end,
                segs, tx, at_send, t_tx, tsval, seg, tx_lo[c], tx_hi[c],
            )  # fmt: skip
    columns = [[row[name] for row in tx] for name in ("t_ack", "t_detect", "trigger", "spurious", "cover", "chunk")]
    columns.append([row["flight"] for row in tx])
    names = ("ack", "largest", "newly", "dupack", "dsack", "rtt", "rtt_src", "rtt_seq", "rate", "flight")
    return (*columns, *([row[name] for row in ack] for name in names))


def _send(s, i, t_tx, b0, b1, seg, segs, tx, at_send):
    t, k = t_tx[i], seg[i]
    segment = segs[k]
    if b0[i] < s.snd_max:  # a retransmission
        if segment["txs"]:
            p = segment["txs"][-1]
            timed_out = t - latest(s.last_rearm) >= SLACK * s.rto
            in_episode = s.recovery_point is not None and s.snd_una < s.recovery_point
            if in_episode and not timed_out:
                why = s.recovery_trigger
            else:
                if timed_out:
                    why = TRIGGER["rto"]
                elif s.dupacks >= DUPTHRESH:
                    why = TRIGGER["dupack"]
                elif s.max_sacked > b1[i] or s.rack_sent > t_tx[p]:
                    why = TRIGGER["sack"]
                elif (
                    b1[i] >= s.snd_max
                    and s.srtt is not None
                    and t - latest(s.last_ack, s.last_send) >= SLACK * 2 * s.srtt
                ):
                    why = TRIGGER["tlp"]
                else:
                    why = TRIGGER["other"]
                s.recovery_point, s.recovery_trigger = s.snd_max, why
            tx[p]["t_detect"], tx[p]["trigger"] = t, why
            if segment["done"]:
                if tx[p]["spurious"] == 0:
                    tx[p]["spurious"] = EVIDENCE["acked"]
                    if math.isnan(tx[p]["t_ack"]):
                        tx[p]["t_ack"] = t
                tx[i]["cover"] = BEFORE
        s.last_rearm = t
    elif s.snd_max <= s.snd_una:  # new data after an idle time
        if s.last_send is not None and t - s.last_send > s.rto:
            s.chunk += 1
        s.first_sent_time = s.delivered_time = t
        s.last_rearm = t
    s.snd_max = max(s.snd_max, b1[i])
    segment["txs"].append(i)
    at_send[i] = (s.delivered, s.delivered_time, s.first_sent_time)
    tx[i]["chunk"] = s.chunk
    tx[i]["flight"] = s.snd_max - s.snd_una - s.sacked_bytes
    s.last_send = t


def _length(k, seg_start, seg_end):
    return seg_end[k] - seg_start[k]


def _receive(
    s, j, t_ack_in, ack_byte, sack, n_sack, ts_ack, tsecr, win_raw, pure, seg_start, seg_end,
    segs, tx, at_send, t_tx, tsval, seg, tx_first, tx_end,
):  # fmt: skip
    t = t_ack_in[j]
    a = min(ack_byte[j], s.snd_max)
    blocks = [(sack[j][2 * b], sack[j][2 * b + 1]) for b in range(n_sack[j])]
    dsack = bool(blocks) and (
        blocks[0][1] <= a or (len(blocks) >= 2 and blocks[1][0] <= blocks[0][0] and blocks[0][1] <= blocks[1][1])
    )
    fresh = []
    largest = s.una_k - 1
    for b, (le, re) in enumerate(blocks):
        if re <= le:
            continue
        reports_duplicate = b == 0 and dsack
        inside = [
            k
            for k in range(s.first_seg, s.end_seg)
            if seg_start[k] >= le and seg_end[k] <= re and _length(k, seg_start, seg_end) > 0
        ]
        for k in inside:
            if reports_duplicate:
                txs = segs[k]["txs"]
                if len(txs) >= 2 and tx[txs[-2]]["spurious"] == 0:
                    tx[txs[-2]]["spurious"] = EVIDENCE["dsack"]
                    if math.isnan(tx[txs[-2]]["t_ack"]):
                        tx[txs[-2]]["t_ack"] = t
                continue
            if not segs[k]["done"] and seg_start[k] >= a and segs[k]["txs"]:
                segs[k]["done"] = segs[k]["sacked"] = True
                s.sacked_bytes += _length(k, seg_start, seg_end)
                tx[segs[k]["txs"][-1]]["cover"] = SACKED
                fresh.append(k)
            largest = max(largest, k)
        if not reports_duplicate:
            s.max_sacked = max(s.max_sacked, re)
    advanced = a > s.snd_una
    head = s.una_k if advanced else None
    if advanced:
        while s.una_k < s.end_seg and seg_end[s.una_k] <= a:
            k = s.una_k
            if segs[k]["sacked"]:
                s.sacked_bytes -= _length(k, seg_start, seg_end)
            elif not segs[k]["done"] and segs[k]["txs"]:
                segs[k]["done"] = True
                tx[segs[k]["txs"][-1]]["cover"] = ACKED
                fresh.append(k)
            s.una_k += 1
        s.snd_una = a
        largest = max(largest, s.una_k - 1)
    newly, newest, karn = 0, None, None
    for k in fresh:
        i = segs[k]["txs"][-1]
        if tx[i]["cover"] == BEFORE:
            continue
        tx[i]["t_ack"] = t
        newly += _length(k, seg_start, seg_end)
        if newest is None or t_tx[i] > t_tx[newest]:
            newest = i
            s.rack_sent = max(s.rack_sent, t_tx[i])
        if len(segs[k]["txs"]) == 1:
            if karn is None or t_tx[i] > karn[0]:
                karn = (t_tx[i], k)
            continue
        p = segs[k]["txs"][-2]
        if tx[p]["spurious"]:
            continue
        if k == head and ts_ack[j] and tsval[i] >= 0 and tsecr[j] < tsval[i]:
            tx[p]["spurious"], tx[p]["t_ack"] = EVIDENCE["eifel"], t
        elif not ts_ack[j] and s.min_rtt is not None and t - t_tx[i] < s.min_rtt:
            tx[p]["spurious"], tx[p]["t_ack"] = EVIDENCE["timing"], t
    s.delivered += newly
    dup = not advanced and pure[j] and a == s.snd_una and s.snd_max > s.snd_una and win_raw[j] == s.last_win
    if advanced:
        s.dupacks, s.last_rearm = 0, t
    elif dup:
        s.dupacks += 1
    if s.recovery_point is not None and s.snd_una >= s.recovery_point:
        s.recovery_point = None
    rtt, source, rtt_seg = math.nan, 0, -1
    if advanced and ts_ack[j]:
        stamps = list(tsval[tx_first:tx_end])
        m = tx_first + bisect.bisect_left(stamps, tsecr[j])
        if m < tx_end and tsval[m] == tsecr[j] and t_tx[m] <= t:
            rtt, source, rtt_seg = t - t_tx[m], 2, seg[m] - s.first_seg
    if math.isnan(rtt) and karn is not None:
        rtt, source, rtt_seg = t - karn[0], 1, karn[1] - s.first_seg
    if not math.isnan(rtt):
        if s.srtt is None:
            s.srtt, s.rttvar = rtt, rtt / 2
        else:
            s.rttvar = 0.75 * s.rttvar + 0.25 * abs(s.srtt - rtt)
            s.srtt = 0.875 * s.srtt + 0.125 * rtt
        s.rto = min(s.srtt + max(RTO_MIN, 4 * s.rttvar), RTO_MAX)
        s.min_rtt = rtt if s.min_rtt is None else min(s.min_rtt, rtt)
    rate = math.nan
    if newest is not None:
        s.delivered_time = t
        delivered_then, delivered_time_then, first_sent_then = at_send[newest]
        interval = max(t_tx[newest] - first_sent_then, t - delivered_time_then)
        s.first_sent_time = t_tx[newest]
        if interval > 0 and s.min_rtt is not None and interval >= s.min_rtt:
            rate = (s.delivered - delivered_then) / interval
    s.last_ack, s.last_win = t, win_raw[j]
    return {
        "ack": s.una_k - s.first_seg,
        "largest": largest - s.first_seg,
        "newly": newly,
        "dupack": bool(dup),
        "dsack": bool(dsack),
        "rtt": rtt,
        "rtt_src": source,
        "rtt_seq": rtt_seg,
        "rate": rate,
        "flight": s.snd_max - s.snd_una - s.sacked_bytes,
    }
