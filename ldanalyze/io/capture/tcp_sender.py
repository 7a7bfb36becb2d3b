"""The sender's view of a TCP connection captured at its sender, both directions in the capture
(issue #44 §1): one row per transmission of a data segment, and one per ACK that came back.
``Connection`` takes a data flow's records and its ACK flow's to the arrays of
``tcp_sender_kernel`` (whose docstring has the rules, with their sources), ``sender_view`` runs
it over every connection and builds the tables, fates and ``meta['flows']`` from its output."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...packets import ACK_COLUMNS, DELIVERED, FATES, LOST, UNOBSERVED, flow_text, unwrap_sequence
from .record import F_TCP_MSS, F_TCP_SACK, F_TCP_TIMESTAMP, F_TCP_WSCALE, SACK_BLOCK_BYTES
from .sequences import NotThisKind, not_a_sequence
from .tcp import segment_index
from .tcp_sender_kernel import (
    COVER_ACKED,
    COVER_BEFORE,
    COVER_SACKED,
    EVIDENCE,
    MAX_SACK_BLOCKS,
    OTHER,
    RTT_SOURCES,
    TCP_ACK,
    TCP_FIN,
    TCP_RST,
    TCP_SYN,
    TRIGGERS,
    sender_kernel,
)

NO_ACKS = "no ACKs captured"


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
