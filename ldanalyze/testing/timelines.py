"""The small timelines the conformance kit generates: two flows over a queue that fills and drains
in episodes, dropping packets when full (congestion, at high delay), and a radio that drops
packets at random (wireless, at any delay). Clocks are common, and every arrival carries an RTT
sample and the radio's evidence of a receiver's monitor-mode capture (``packets.AIR_COLUMNS``),
so an LDA that needs any of them finds it; ``view`` can leave the evidence or the truth out.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..lda import LDA
from ..packets import AIR_COLUMNS, CONGESTION, DELIVERED, LOST, WIRELESS, make_packet_table
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


def view(lda: LDA, table: pd.DataFrame, *, radio: bool = True, truth: bool = True) -> Timeline:
    """The view of ``table`` that ``lda`` declares it reads (``LDA.view``), the one the kit
    checks it in: a receiver's (``_receiver_view``), the only view the kit builds so far."""
    if lda.view != "receiver":
        raise UsageError(f"{lda.spec} reads the {lda.view}'s view; the conformance kit builds a receiver's only")
    return _receiver_view(table, radio=radio, truth=truth)


def _receiver_view(table: pd.DataFrame, *, radio: bool = True, truth: bool = True) -> Timeline:
    """A receiver's Timeline of a PacketTable on common clocks, with an RTT sample per arrival
    (fed back 20 ms after it); ``radio``: with the radio's evidence (``radio_evidence``);
    ``truth``: with the losses' true causes (else every loss's cause is unknown, ``lost``)."""
    delivered = table["fate"] == DELIVERED
    shown = table.assign(**radio_evidence(table)) if radio else table
    tl = build_timeline(shown if truth else shown.assign(fate=shown["fate"].where(delivered, LOST)))
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
