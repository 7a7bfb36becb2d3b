"""The small timelines the conformance kit generates: two flows over a queue that fills and drains
in episodes, dropping packets when full (congestion, at high delay), and a radio that drops
packets at random (wireless, at any delay). Clocks are common, and every arrival carries an RTT
sample and the radio's evidence of a receiver's monitor-mode capture (``packets.AIR_COLUMNS``),
so an LDA that needs any of them finds it; ``view`` can leave the evidence or the truth out.
The same table seen by its sender (``sender_trace``) is the sender's view an LDA defined there is
checked in.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..lda import LDA
from ..lda.base import SENDER
from ..packets import (
    ACK_COLUMNS,
    AIR_COLUMNS,
    CONGESTION,
    DELIVERED,
    LOST,
    SENDER_COLUMNS,
    WIRELESS,
    Trace,
    empty_acks,
    make_packet_table,
)
from ..timeline import Timeline, build_timeline


def sample_packets(seed: int = 0, packets: int = 1500) -> pd.DataFrame:
    """A PacketTable of two flows, 10 ms apart, over a 30-packet queue that fills in episodes
    and drops when full, and a radio that loses 3 % at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for flow, offset in (("a", 0.0), ("b", 0.004)):
        t_send = offset + 0.01 * np.arange(packets)
        queue = 0.0
        for k, t in enumerate(t_send):
            filling = (k // 150) % 2 == 1  # episodes of 1.5 s: filling, then draining
            queue = queue + rng.uniform(0.0, 0.6) if filling else max(queue - 1.0, 0.0)
            if queue >= 30.0:  # full: this packet is dropped, which makes a little room
                fate, queue = CONGESTION, 30.0 - rng.uniform(0.0, 1.5)
            elif rng.random() < 0.03:
                fate = WIRELESS
            else:
                fate = DELIVERED
            delay = 0.02 + 0.004 * queue + rng.uniform(0, 0.001)
            rows.append((flow, k, t, t + delay if fate == DELIVERED else np.nan, fate))
    flows, seqs, sent, received, fates = (list(column) for column in zip(*rows))
    return make_packet_table(flow=flows, seq=seqs, t_send=sent, t_recv=received, fate=fates, size=[1000] * len(flows))


def radio_evidence(table: pd.DataFrame, qos: bool = True) -> dict[str, np.ndarray]:
    """``packets.AIR_COLUMNS`` of a PacketTable as a monitor-mode capture at the receiver would give them: the
    radio numbers what it sends (the queue's drops take no number) and the receiver's capture
    holds the frames delivered, so an arrival's ``air_unseen`` counts the radio's losses since its
    flow's previous arrival: of its own flow with QoS data (one counter per receiver: each flow
    its own here), of every flow without (``qos`` False: one counter for the sender)."""
    n = len(table)
    order = np.argsort(table["t_send"].to_numpy(), kind="stable")
    fate = table["fate"].astype(str).to_numpy()
    flows = table["flow"].astype(str).to_numpy()
    unseen = np.full(n, -1, np.int64)
    lost_on_air: dict[str, int] = {}
    since: dict[str, int] = {}
    for row in order:
        counter = flows[row] if qos else ""
        if fate[row] == WIRELESS:
            lost_on_air[counter] = lost_on_air.get(counter, 0) + 1
        elif fate[row] == DELIVERED:
            if flows[row] in since:
                unseen[row] = lost_on_air.get(counter, 0) - since[flows[row]]
            since[flows[row]] = lost_on_air.get(counter, 0)
    got = fate == DELIVERED
    t_air = np.where(got, table["t_recv"].to_numpy(), np.nan)
    values = (got.astype(np.int64), np.zeros(n, bool), t_air, t_air, unseen, got & qos)
    return dict(zip(AIR_COLUMNS, values, strict=True))


def sample_timeline(seed: int = 0, packets: int = 1500) -> Timeline:
    """``sample_packets`` as a receiver's Timeline on common clocks, with an RTT sample per
    arrival and the radio's evidence."""
    return _receiver_view(sample_packets(seed, packets))


def view(lda: LDA, table: pd.DataFrame, *, radio: bool = True, truth: bool = True, as_: str | None = None) -> Timeline:
    """The view ``as_`` (default: the first ``lda`` declares, ``LDA.views``) of ``table``, in which
    the kit checks it: a receiver's (``_receiver_view``) or its sender's (``sender_trace``).
    ``radio``: with the radio's evidence (a receiver's only); ``truth``: with the losses' causes."""
    name = as_ or lda.views[0]
    if name not in lda.views:
        raise UsageError(f"{lda.spec} is not defined on the {name}'s view (it declares {', '.join(lda.views)})")
    if name == SENDER:
        return build_timeline(sender_trace(table if truth else _hidden(table)))
    return _receiver_view(table, radio=radio, truth=truth)


def view_ends(name: str, table: pd.DataFrame, keep: pd.Series) -> float:
    """The time up to which the ``name`` view of ``table[keep]`` (its packets sent up to some
    time) is that of the whole ``table``: a receiver's until a packet left out arrives, a
    sender's until it sends one (its bytes in flight change then)."""
    column = "t_send" if name == SENDER else "t_recv"
    first = table.loc[~keep, column].min()
    return first if first == first else np.inf


def _hidden(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every loss's cause unknown (``lost``)."""
    return table.assign(fate=table["fate"].where(table["fate"] == DELIVERED, LOST))


def sender_trace(table: pd.DataFrame, *, ack_delay: float = 0.02, rto: float = 0.5, dupthresh: int = 3) -> Trace:
    """A PacketTable on common clocks (``sample_packets``) as its sender saw it (``packets``, "A
    sender's view"): each delivered transmission acknowledged ``ack_delay`` after it arrived, by
    an ACK with an RTT sample (as timestamps give one per ACK) that acknowledges it selectively;
    each lost one declared lost once ``dupthresh`` transmissions sent after it were acknowledged
    (RFC 6675's IsLost), or ``rto`` seconds after it was sent if that comes first; the bytes in
    flight after each ACK. Nothing is sent again: the losses' detections are what the LDAs read."""
    packets, acks = [], []
    for flow, rows in table.groupby("flow", observed=True, sort=False):
        rows = rows.sort_values(["t_send", "uid"], kind="stable")
        sent, size = rows["t_send"].to_numpy(np.float64), rows["size"].to_numpy(np.int64)
        delivered = (rows["fate"] == DELIVERED).to_numpy()
        t_ack = np.where(delivered, rows["t_recv"].to_numpy(np.float64) + ack_delay, np.nan)
        t_detect = np.full(len(rows), np.nan)
        for i in np.flatnonzero(~delivered):
            later = np.sort(t_ack[i + 1 :][delivered[i + 1 :]])
            t_detect[i] = min(later[dupthresh - 1] if later.size >= dupthresh else np.inf, sent[i] + rto)
        trigger = np.where(delivered, "", np.where(t_detect < sent + rto, "dupack", "rto"))
        packets.append(
            rows.assign(
                t_recv=np.nan, t_ack=t_ack, t_detect=t_detect, loss_trigger=trigger, spurious="", chunk=0, in_flight=-1
            )
        )
        by_ack = np.flatnonzero(delivered)[np.argsort(t_ack[delivered], kind="stable")]
        t = t_ack[by_ack]

        def bytes_by(times: np.ndarray) -> np.ndarray:
            """Per ACK, the bytes of the transmissions whose ``times`` (NaN: never) came at or before it."""
            times = np.nan_to_num(times, nan=np.inf)
            order = np.argsort(times, kind="stable")
            total = np.concatenate([[0], np.cumsum(size[order])])
            return total[np.searchsorted(times[order], t, side="right")]

        in_flight = bytes_by(sent) - bytes_by(t_ack) - bytes_by(t_detect)
        seq = rows["seq"].to_numpy(np.int64)[by_ack]
        acked: set[int] = set()
        cumulative, lowest = [], int(rows["seq"].min())
        for number in seq:
            acked.add(int(number))
            while lowest in acked:
                lowest += 1
            cumulative.append(lowest)
        ack = np.array(cumulative, np.int64)
        acks.append(
            pd.DataFrame(
                {
                    "flow": str(flow),
                    "t": t,
                    "ack": ack,
                    "largest": np.maximum.accumulate(seq) if seq.size else seq,
                    "newly": size[by_ack],
                    "dupack": np.diff(ack, prepend=-1) == 0,
                    "dsack": False,
                    "rtt": t - sent[by_ack],
                    "rtt_source": "tsecr",
                    "delivery_rate": np.nan,
                    "in_flight": in_flight,
                    "rwnd": -1,
                    "cwnd": -1,
                }
            )
        )
    stream = pd.concat([empty_acks(), *acks], ignore_index=True) if acks else empty_acks()
    stream = stream.astype({name: dtype for name, dtype in ACK_COLUMNS.items()})
    nothing_sent = {"t_recv": np.nan, "t_ack": np.nan, "t_detect": np.nan, "loss_trigger": "", "spurious": ""}
    sent_rows = (
        pd.concat(packets, ignore_index=True) if packets else table.assign(**nothing_sent, chunk=0, in_flight=-1)
    )
    columns = {name: sent_rows[name].to_numpy() for name in ("flow", "seq", "uid", "size", "t_send", "t_recv", "fate")}
    senders = {name: sent_rows[name].to_numpy() for name in SENDER_COLUMNS if name in sent_rows.columns}
    shown = make_packet_table(**columns, **senders)
    rtt = stream.loc[:, ["flow", "t", "largest", "rtt"]].rename(columns={"largest": "seq"})
    return Trace(packets=shown, rtt=rtt, path="<conformance kit>", format="kit", meta={"view": SENDER}, acks=stream)


def _receiver_view(table: pd.DataFrame, *, radio: bool = True, truth: bool = True) -> Timeline:
    """A receiver's Timeline of a PacketTable on common clocks, with an RTT sample per arrival
    (fed back 20 ms after it); ``radio``: with the radio's evidence (``radio_evidence``);
    ``truth``: with the losses' true causes (else every loss's cause is unknown, ``lost``)."""
    delivered = table["fate"] == DELIVERED
    shown = table.assign(**radio_evidence(table)) if radio else table
    tl = build_timeline(shown if truth else _hidden(shown))
    got = table[delivered]
    rtt = pd.DataFrame(
        {
            "flow": got["flow"].astype(str).to_numpy(),
            "t": got["t_recv"].to_numpy() + 0.02,
            "seq": got["seq"].to_numpy(),
            "rtt": 2 * (got["t_recv"] - got["t_send"]).to_numpy(),
        }
    )
    rtt["flow"] = rtt["flow"].astype(tl.packets["flow"].dtype)
    return dataclasses.replace(tl, rtt=rtt, meta={**tl.meta, "clock": "common"})
