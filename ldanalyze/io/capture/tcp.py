"""One direction of a TCP connection as a sequence space: its byte sequence numbers turned into
segment indices (``segment_index``), its timestamps option's TSval as the sender's clock.
``payload.py`` tells the rules.
"""

from __future__ import annotations

import numpy as np

from ...packets import unwrap_sequence
from .clockrate import USUAL_TSVAL_RATES, infer_clock_rate, use_given_rate
from .record import F_TCP_MSS, F_TCP_TIMESTAMP
from .sequences import NotThisKind, Stream, distinct, not_a_sequence

ACKS_ONLY = "no TCP payload (acknowledgements only)"


def tcp_stream(label, rows, records, times, clock_rate, send_times) -> Stream:
    """Segment indices (and TSval send times) of one direction of a TCP connection."""
    data = records["payload_len"] > 0
    if not data.any():
        raise NotThisKind(ACKS_ONLY)
    flags = records["flags"]
    syn = (records["tcp_flags"] & 0x02) != 0
    byte = unwrap_sequence(records["tcp_seq"].astype(np.int64), 1 << 32)
    base = byte[syn][0] + 1 if syn.any() else byte[data].min()
    lengths = records["payload_len"][data].astype(np.int64)
    with_mss = syn & ((flags & F_TCP_MSS) != 0)
    mss = int(records["tcp_mss"][with_mss][0]) if with_mss.any() else int(np.bincount(lengths).argmax())
    start, inverse = distinct(byte[data] - base)
    seg_len = np.zeros(start.shape[0], np.int64)
    np.maximum.at(seg_len, inverse, lengths)
    seq = segment_index(start, seg_len, max(mss, 1))[inverse]
    problem = not_a_sequence(seq)  # e.g. a second connection on the same ports
    if problem:
        raise NotThisKind(f"segment numbers: {problem}")
    info = {"kind": "tcp", "mss": mss}
    sent = np.full(seq.shape[0], np.nan)
    if send_times:
        stamped = (flags[data] & F_TCP_TIMESTAMP) != 0
        if not stamped.all():
            raise NotThisKind(
                f"{int((~stamped).sum())} of {stamped.shape[0]} data segments carry no TCP "
                "timestamps option: no sender clock"
            )
        ticks = unwrap_sequence(records["tcp_tsval"][data].astype(np.int64), 1 << 32)
        if clock_rate is None:
            rate, source = infer_clock_rate(ticks, times[rows[data]], USUAL_TSVAL_RATES, 0.1, label)
        else:
            rate, source = float(clock_rate), "given"
            use_given_rate(rate, ticks, times[rows[data]], label, info)
        info.update(clock_rate=rate, clock_source=source)
        sent = ticks / rate
    return Stream(label, "tcp", rows[data], seq, sent, info)


def segment_index(start: np.ndarray, length: np.ndarray, mss: int) -> np.ndarray:
    """Packet index of each distinct segment start (sorted, relative to the first data byte).

    A new start is one more than the previous new start, plus ceil(hole / mss) for a hole in
    the bytes before it; a start whose bytes were all covered before takes the index of the
    last new start.
    """
    end = start + length
    covered_to = np.maximum.accumulate(np.concatenate(([start[0]], end[:-1])))
    new = end > covered_to
    new[0] = True
    hole = np.maximum(start - covered_to, 0)
    step = np.where(new, 1 + -(-hole // mss), 0)
    step[0] = -(-max(int(start[0]), 0) // mss)
    index = np.cumsum(step)
    last_new = np.maximum.accumulate(np.where(new, np.arange(start.shape[0]), 0))
    return index[last_new]
