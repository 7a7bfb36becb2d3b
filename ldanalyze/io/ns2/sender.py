"""The sender's view of ns-2 TCP flows, read at their source node (#44 §2: a data source with truth).

The wired reader (``wired``) finds every transmission of a data packet (one uid each: a TCP
retransmission repeats its seqno with a new uid) with its true fate, and the ACKs that reach the
data sender's node (``r`` of a feedback packet at its destination). From these alone, as the
source's TCP agent saw them (``packets``, "A sender's view"):

* ``t_send``: the transmission's enqueue at the source (``+``); ``t_recv`` NaN; the fate stays the
  truth's (its drop's cause), which a sender's capture would not know.
* ``t_detect``: when the segment was sent again (the next transmission of its seqno), NaN if
  never; ``loss_trigger``: ``dupack`` when an ACK asking for that segment (cumulative ACK = seqno)
  reached the source at that very instant (ns-2's agents retransmit on the ACK's arrival: a fast
  retransmit on the third duplicate ACK, or NewReno's on a partial ACK in fast recovery),
  ``rto`` when none did (the retransmission timer); a transmission retransmitted though it was
  delivered is a spurious retransmission, evidence ``truth`` (the trace saw it arrive).
* ``t_ack``: the first ACK at or after the send whose cumulative acknowledgement covers it.
* ``in_flight``: the segments sent (up to the highest seqno so far, this one included) not
  cumulatively acknowledged when it was sent, in bytes (segments × the flow's median size).
* ``chunk``: the flow cut where it sent nothing for longer than ``IDLE_CHUNK`` seconds.

ACKs (``Trace.acks``): ns-2's TCP ACK carries the highest seqno received in order, so ``ack`` is
that + 1 and ``largest`` that (the trace shows no SACK blocks); ``rtt`` is Karn's sample
(``packets.rtt_from_feedback``: the first ACK of a seqno above all before, sent once);
``in_flight`` the segments sent by then not acknowledged, in bytes; no window, receive window
or delivery rate (-1, NaN).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...packets import (
    ACK_COLUMNS,
    DELIVERED,
    SENDER_COLUMNS,
    Trace,
    empty_acks,
    flow_codes,
    make_packet_table,
    rtt_from_feedback,
)

IDLE_CHUNK = 1.0  # seconds: RFC 6298's least RTO, the idle period that starts a new chunk


def sender_view(trace: Trace, feedback: pd.DataFrame) -> Trace:
    """``trace`` (the wired reader's, every flow's transmissions with their truth) as its TCP
    sources saw it, given the ACKs that reached them (``feedback``: flow, t, seq)."""
    packets = trace.packets.reset_index(drop=True)
    columns = {name: np.empty(len(packets), dtype) for name, dtype in SENDER_COLUMNS.items() if dtype != "category"}
    trigger = np.full(len(packets), "", dtype=object)
    spurious = np.full(len(packets), "", dtype=object)
    acks = []
    codes = flow_codes(packets["flow"])
    labels = packets["flow"].cat.categories
    feedback_flow = feedback["flow"].astype(str).to_numpy()
    samples = rtt_from_feedback(packets, feedback)
    for code in np.unique(codes):
        rows = np.flatnonzero(codes == code)
        label = str(labels[code])
        mine = np.flatnonzero(feedback_flow == label)
        mine = mine[np.argsort(feedback["t"].to_numpy()[mine], kind="stable")]
        stream = _ack_stream(
            feedback["t"].to_numpy(np.float64)[mine], feedback["seq"].to_numpy(np.int64)[mine], packets.iloc[rows]
        )
        per_row = _transmissions(packets.iloc[rows], stream)
        for name in columns:
            columns[name][rows] = per_row[name]
        trigger[rows], spurious[rows] = per_row["loss_trigger"], per_row["spurious"]
        karn = samples[samples["flow"].astype(str) == label]
        acks.append(_with_samples(stream.assign(flow=label), karn))
    stream = pd.concat([empty_acks(), *acks], ignore_index=True).astype(ACK_COLUMNS)
    table = make_packet_table(
        **{name: packets[name] for name in ("flow", "seq", "tx", "uid", "size", "t_send", "t_drop", "fate", "reason")},
        t_recv=np.full(len(packets), np.nan),
        **columns,
        loss_trigger=trigger,
        spurious=spurious,
    )
    rtt = stream.loc[stream["rtt"].notna(), ["flow", "t", "largest", "rtt"]].rename(columns={"largest": "seq"})
    meta = {**trace.meta, "view": "sender", "vantage": "the TCP sources' nodes"}
    return dataclasses.replace(trace, packets=table, rtt=rtt.reset_index(drop=True), acks=stream, meta=meta)


def _ack_stream(t: np.ndarray, seq: np.ndarray, sent: pd.DataFrame) -> pd.DataFrame:
    """One flow's ACK rows (``ACK_COLUMNS`` but flow and the RTT) from its ACKs' arrival times
    and seqnos, and its transmissions (for the bytes in flight)."""
    segment = float(np.median(sent["size"])) if len(sent) else 0.0
    ack = seq + 1
    top = np.maximum.accumulate(ack) if ack.size else ack
    before = np.concatenate([[-1], top[:-1]]) if ack.size else ack
    highest_sent = _highest_sent_by(sent, t)
    return pd.DataFrame(
        {
            "t": t,
            "ack": ack,
            "largest": seq,
            "newly": (np.maximum(ack - np.maximum(before, 0), 0) * segment).astype(np.int64),
            "dupack": ack == before,
            "dsack": np.zeros(t.size, bool),
            "delivery_rate": np.full(t.size, np.nan),
            "in_flight": (np.maximum(highest_sent + 1 - top, 0) * segment).astype(np.int64),
            "rwnd": np.full(t.size, -1, np.int64),
            "cwnd": np.full(t.size, -1, np.int64),
        }
    )


def _highest_sent_by(sent: pd.DataFrame, t: np.ndarray) -> np.ndarray:
    """The highest seqno sent at or before each of the times ``t`` (-1: none yet)."""
    t_send = sent["t_send"].to_numpy(np.float64)
    highest = np.maximum.accumulate(sent["seq"].to_numpy(np.int64)) if len(sent) else np.zeros(0, np.int64)
    at = np.searchsorted(t_send, t, side="right") - 1  # transmissions in send order
    return np.where(at >= 0, highest[np.maximum(at, 0)] if highest.size else -1, -1)


def _transmissions(sent: pd.DataFrame, stream: pd.DataFrame) -> dict[str, np.ndarray]:
    """One flow's ``SENDER_COLUMNS`` per transmission (module docstring), in its rows' order."""
    n = len(sent)
    seq = sent["seq"].to_numpy(np.int64)
    t_send = sent["t_send"].to_numpy(np.float64)
    t, ack = stream["t"].to_numpy(), stream["ack"].to_numpy()
    top = np.maximum.accumulate(ack) if ack.size else ack
    # covered: the first ACK at or after the send whose cumulative acknowledgement passes it
    first = np.maximum(np.searchsorted(top, seq, side="right"), np.searchsorted(t, t_send, side="left"))
    t_ack = np.where(first < t.size, t[np.minimum(first, max(t.size - 1, 0))] if t.size else np.nan, np.nan)
    # sent again: the next transmission of the seqno (rows are in send order)
    again = np.full(n, np.nan)
    order = np.lexsort((np.arange(n), seq))
    same = seq[order][1:] == seq[order][:-1]
    again[order[:-1][same]] = t_send[order[1:][same]]
    asked = pd.MultiIndex.from_arrays([t, ack]).unique()  # an ACK asking for seqno s at time t
    on_ack = asked.get_indexer(pd.MultiIndex.from_arrays([again, seq])) >= 0
    retransmitted = np.isfinite(again)
    delivered = (sent["fate"] == DELIVERED).to_numpy()
    acked_by_then = np.searchsorted(t, t_send, side="right") - 1
    cumulative = np.where(acked_by_then >= 0, top[np.maximum(acked_by_then, 0)] if top.size else 0, 0)
    highest = np.maximum.accumulate(seq) if n else seq
    segment = float(np.median(sent["size"])) if n else 0.0
    idle = np.diff(t_send, prepend=t_send[:1]) > IDLE_CHUNK if n else np.zeros(0, bool)
    return {
        "t_ack": t_ack,
        "t_detect": again,
        "loss_trigger": np.where(retransmitted, np.where(on_ack, "dupack", "rto"), ""),
        "spurious": np.where(retransmitted & delivered, "truth", ""),
        "chunk": np.cumsum(idle).astype(np.int64),
        "in_flight": (np.maximum(highest + 1 - cumulative, 0) * segment).astype(np.int64),
    }


def _with_samples(stream: pd.DataFrame, karn: pd.DataFrame) -> pd.DataFrame:
    """The ACK rows with Karn's RTT samples: each sample on the first ACK of its time and seqno."""
    key = pd.MultiIndex.from_arrays([stream["t"].to_numpy(), stream["largest"].to_numpy()])
    first = np.flatnonzero(~key.duplicated())
    at = key[first].get_indexer(pd.MultiIndex.from_arrays([karn["t"].to_numpy(), karn["seq"].to_numpy()]))
    rtt = np.full(len(stream), np.nan)
    rtt[first[at[at >= 0]]] = karn["rtt"].to_numpy()[at >= 0]
    return stream.assign(rtt=rtt, rtt_source=np.where(np.isnan(rtt), "", "karn"))
