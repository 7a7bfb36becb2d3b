"""The conformance suite every LDA is held to, shipped for yours (as scikit-learn ships
``check_estimator``): ``check_lda(MyLDA())`` replays it over synthetic timelines and raises an
AssertionError naming the first rule it breaks. The rules are the replay contract of
``docs/ldas.md``:

- **one decision per lost packet**, and the same decisions on a second run (deterministic);
- **no loss, no decision**: a flow without losses gets none, and its state one row per arrival;
- **nothing arrives, nothing decided**: losses that no arrival reveals stay ``undetected``;
- **causal**: a decision made by time t does not change when packets sent later are added;
- **one decision per gap**: every loss of a burst gets the burst's decision;
- **parameters round trip**: ``type(lda)(**lda.params()) == lda``, frozen, and, if registered,
  ``parse_ldas(lda.spec) == [lda]``.

The synthetic timelines: two flows over a queue that fills and drains in episodes, dropping
packets when full (congestion, at high delay), and a radio that drops packets at random
(wireless, at any delay); clocks are common, every arrival carries an RTT sample and the radio's
evidence of a receiver's monitor-mode capture (``packets.AIR_COLUMNS``), so an LDA that needs
any of them finds it.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd

from .lda import LDA, REGISTRY, Replay, classify, lda_state, parse_ldas
from .packets import AIR_COLUMNS, CONGESTION, DELIVERED, WIRELESS, make_packet_table
from .timeline import Timeline, build_timeline

REPLAYS = (Replay(), Replay(update_first=False, gap_delay="previous"), Replay(detection=3))


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
    """``sample_packets`` as a Timeline on common clocks, with an RTT sample per arrival and the
    radio's evidence."""
    return _timeline(sample_packets(seed, packets))


def _timeline(table: pd.DataFrame) -> Timeline:
    tl = build_timeline(table.assign(**radio_evidence(table)))
    got = table[table["fate"] == DELIVERED]
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


def check_lda(lda: LDA) -> None:
    """Hold ``lda`` (an instance of an LDA subclass) to the replay contract (module docstring);
    an AssertionError names the rule broken."""
    if not isinstance(lda, LDA):
        raise TypeError(f"check_lda takes an LDA instance, not {type(lda).__name__}")
    for rule in (
        _one_decision_per_lost_packet,
        _no_loss_no_decision,
        _nothing_arrives_nothing_decided,
        _causal,
        _one_decision_per_gap,
        _parameters_round_trip,
    ):
        try:
            rule(lda)
        except AssertionError as broken:
            raise AssertionError(
                f"check_lda({lda.spec}): {rule.__name__.strip('_').replace('_', ' ')}: {broken}"
            ) from None


def _one_decision_per_lost_packet(lda: LDA) -> None:
    tl = sample_timeline()
    first, second = classify(tl, [lda]), classify(sample_timeline(), [lda])
    pd.testing.assert_frame_equal(first, second, obj="a second run's decisions")
    assert len(first) == len(tl.losses), f"{len(first)} decisions for {len(tl.losses)} lost packets"
    assert first["uid"].tolist() == tl.losses["uid"].tolist(), "the decisions are not the losses, in order"
    undetected = (first["decision"] == "undetected").to_numpy()
    assert (undetected == ~tl.losses["detected"].to_numpy(bool)).all(), "undetected where a loss was detected"
    decided = first.loc[~undetected, "decision"].astype(str)
    assert decided.isin(["congestion", "wireless"]).all(), f"decisions {sorted(set(decided))}"


def _no_loss_no_decision(lda: LDA) -> None:
    t = np.arange(40) * 0.01
    clean = make_packet_table(
        flow=["a"] * 40,
        seq=np.arange(40),
        t_send=t,
        t_recv=t + 0.05 + (t % 0.03),
        fate=[DELIVERED] * 40,
        size=[500] * 40,
    )
    tl = _timeline(clean)
    assert classify(tl, [lda]).empty, "decisions on a flow that lost nothing"
    assert len(lda_state(tl, lda)) == 40, "the state has not one row per arrival"
    assert classify(_timeline(clean.iloc[:0]), [lda]).empty, "decisions on an empty trace"


def _nothing_arrives_nothing_decided(lda: LDA) -> None:
    lost = make_packet_table(
        flow=["a"] * 5,
        seq=np.arange(5),
        t_send=np.arange(5.0),
        t_recv=[np.nan] * 5,
        fate=[WIRELESS] * 5,
        size=[500] * 5,
    )
    decisions = classify(_timeline(lost), [lda])["decision"].astype(str).tolist()
    assert decisions == ["undetected"] * 5, f"decisions {decisions} where nothing arrived"


def _causal(lda: LDA) -> None:
    full_tl = sample_timeline()
    packets = full_tl.packets
    span = float(packets["t_send"].max())
    for semantics in REPLAYS:
        full = classify(full_tl, [lda], semantics=semantics)
        for share in (0.2, 0.55, 0.9):
            keep = packets["t_send"] <= share * span
            later = packets.loc[~keep, "t_recv"].min()
            view_ends = later if later == later else np.inf  # the views agree until a later packet arrives
            part = classify(_timeline(packets[keep].reset_index(drop=True)), [lda], semantics=semantics)
            early = full[full["t_decide"] < view_ends].merge(part, on=["uid"], how="left", suffixes=("", "_part"))
            changed = early["decision"].astype(str) != early["decision_part"].astype(str)
            assert not changed.any(), (
                f"{int(changed.sum())} decision(s) made before {view_ends:.3f} s change when "
                f"later packets are added ({semantics})"
            )


def _one_decision_per_gap(lda: LDA) -> None:
    d = classify(sample_timeline(), [lda])
    if getattr(lda, "name", "") == "omniscient":  # the truth, per lost packet
        return
    gaps = d[d["gap"] >= 0]
    split = gaps.groupby(["flow", "gap"], observed=True)["decision"].nunique()
    assert (split <= 1).all(), f"{int((split > 1).sum())} gap(s) whose losses got different decisions"


def _parameters_round_trip(lda: LDA) -> None:
    assert dataclasses.is_dataclass(lda), "an LDA is a dataclass of its parameters"
    assert type(lda)(**lda.params()) == lda, "type(lda)(**lda.params()) is another LDA"
    try:
        copy.copy(lda).name = "other"  # a copy: a mutable LDA given is not changed
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("the LDA is not frozen (a dataclass(frozen=True))")
    if REGISTRY.get(lda.name) is type(lda):
        assert parse_ldas(lda.spec) == [lda], f"parse_ldas({lda.spec!r}) gives another LDA"
