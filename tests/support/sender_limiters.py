"""A sender's view of one chunk through a token-bucket policer, a drop-tail shaper or random
loss: a sender offering a constant rate, each loss sent again one RTT later, with per-transmission
truth, ACK times and the sender's columns (``packets.SENDER_COLUMNS``)."""

from __future__ import annotations

import heapq

import numpy as np
import pandas as pd

from ldanalyze.packets import make_packet_table


def sender_chunk(kind: str, n: int = 1500, seed: int = 1, *, size: int = 1500, offered: float = 250_000.0,
                 rate: float = 200_000.0, bucket: float = 15_000.0, queue: float = 30_000.0, p: float = 0.02,
                 rtt: float = 0.05, jitter: float = 0.001, flow: str = "a", chunk: int = 0,
                 start: float = 0.0) -> pd.DataFrame:  # fmt: skip
    """``n`` new segments of ``size`` bytes offered at ``offered`` bytes/s from ``start``,
    through a policer (``rate`` bytes/s, ``bucket`` bytes), a shaper serving ``rate`` with a
    ``queue`` of bytes, or random loss ``p``; a loss is sent again ``rtt`` after it was sent
    in the sender's next slot (before new data). ``t_ack``: sent + ``rtt`` + jitter + the shaper's queueing."""
    rng = np.random.default_rng(seed)
    due: list[tuple[float, int, int]] = []  # the losses to send again: (when, seq, tx)
    tokens, last, backlog_until = bucket, start, start
    rows = []
    new_seq, slot = 0, 0
    while new_seq < n or due:
        t = start + slot * size / offered  # the sender's slots: a retransmission due first, else new data
        slot += 1
        if due and due[0][0] <= t:
            _, seq, tx = heapq.heappop(due)
        elif new_seq < n:
            seq, tx, new_seq = new_seq, 0, new_seq + 1
        else:
            continue
        delay = rtt + rng.random() * jitter
        passed = True
        if kind == "policing":
            tokens, last = min(bucket, tokens + (t - last) * rate), t
            passed = tokens >= size
            tokens -= size if passed else 0.0
        elif kind == "congestion":
            backlog = max(backlog_until - t, 0.0) * rate  # bytes queued ahead
            passed = backlog + size <= queue
            if passed:
                backlog_until = max(backlog_until, t) + size / rate
                delay += backlog_until - t
        else:
            passed = rng.random() >= p
        rows.append((seq, tx, t, t + delay if passed else np.nan, "delivered" if passed else kind))
        if not passed:
            heapq.heappush(due, (t + rtt, seq, tx + 1))
    seq, tx, t_send, t_ack, fate = (np.array(c) for c in zip(*rows))
    return make_packet_table(
        flow=np.full(len(seq), flow, dtype=object),
        seq=seq,
        tx=tx,
        size=np.full(len(seq), size),
        t_send=t_send,
        t_recv=np.full(len(seq), np.nan),
        fate=fate,
        t_ack=t_ack,
        chunk=np.full(len(seq), chunk),
    )
