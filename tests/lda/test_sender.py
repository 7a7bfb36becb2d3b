"""The sender's view (#44 §2): its timeline, the LDAs defined on it, and the views LDAs declare.

Hand-computed cases pin the timeline's rules (the deciding ACK sample, a gap per detection
moment, undetected losses, spurious ones counted) and each sender LDA's boundary; generated
sender's views hold the timeline and the kernels to the plain twin (``naive_lda.sender_*``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze.errors import UsageError
from ldanalyze.lda import REGISTRY, Replay, classify, get_lda, lda_state, parse_ldas
from ldanalyze.packets import ACK_COLUMNS, Trace, empty_rtt, make_packet_table
from ldanalyze.testing import sample_packets, sample_timeline, sender_trace

from ..naive import lda as naive_lda
from ..support.strategies import packet_tables
from .test_lda_twins import REPLAYS

SENDER_LDAS = sorted(naive_lda.SENDER_DEFAULTS)


def trace(rows, acks, flow="f"):
    """A sender's Trace. rows: (seq, t_send, fate, t_detect or None, spurious); acks: (t,
    largest, rtt or None, in_flight, cwnd); segments of 1000 bytes, each ACK newly 1000."""
    packets = make_packet_table(
        flow=[flow] * len(rows),
        seq=[r[0] for r in rows],
        t_send=[r[1] for r in rows],
        t_recv=[math.nan] * len(rows),
        fate=[r[2] for r in rows],
        size=[1000] * len(rows),
        t_ack=[math.nan] * len(rows),
        t_detect=[math.nan if r[3] is None else r[3] for r in rows],
        loss_trigger=["dupack" if r[3] is not None else "" for r in rows],
        spurious=[r[4] for r in rows],
        chunk=[0] * len(rows),
        in_flight=[-1] * len(rows),
    )
    stream = pd.DataFrame(
        {
            "flow": [flow] * len(acks),
            "t": [a[0] for a in acks],
            "ack": [a[1] + 1 for a in acks],
            "largest": [a[1] for a in acks],
            "newly": [1000] * len(acks),
            "dupack": [False] * len(acks),
            "dsack": [False] * len(acks),
            "rtt": [math.nan if a[2] is None else a[2] for a in acks],
            "rtt_source": ["tsecr"] * len(acks),
            "delivery_rate": [math.nan] * len(acks),
            "in_flight": [a[3] for a in acks],
            "rwnd": [-1] * len(acks),
            "cwnd": [a[4] for a in acks],
        }
    ).astype(ACK_COLUMNS)
    return Trace(packets=packets, rtt=empty_rtt(), path="hand", format="hand", meta={"view": "sender"}, acks=stream)


def hand_trace():
    """Segments 0-5; 2 and 3 lost (congestion, wireless), both detected at 0.35; 5 lost, never
    detected; 4 declared lost at 0.3 but delivered (spurious). ACK samples at 0.1, 0.2, 0.3 and
    0.4 (the one at 0.25 has none: Karn)."""
    rows = [
        (0, 0.00, "delivered", None, ""),
        (1, 0.01, "delivered", None, ""),
        (2, 0.02, "congestion", 0.35, ""),
        (3, 0.03, "wireless", 0.35, ""),
        (4, 0.04, "delivered", 0.3, "dsack"),
        (5, 0.05, "wireless", None, ""),
    ]
    acks = [(0.1, 0, 0.1, 3000, -1), (0.2, 1, 0.19, 2000, -1), (0.25, 4, None, 2000, -1)]
    acks += [(0.3, 4, 0.26, 1000, 8000), (0.4, 4, 0.3, 0, -1)]
    return trace(rows, acks)


def test_hand_the_sender_timeline():
    tl = la.build_timeline(hand_trace())
    assert tl.view == "sender" and tl.meta["spurious_losses"] == {"f": 1}
    a = tl.arrivals
    assert a["t_recv"].tolist() == [0.1, 0.2, 0.3, 0.4]  # the ACK without a sample is no arrival
    assert np.allclose(a["owd"], [0.1, 0.19, 0.26, 0.3]) and np.allclose(a["t_send"], [0.0, 0.01, 0.04, 0.1])
    assert np.allclose(a["rott"], [0.0, 0.09, 0.16, 0.2]) and np.isclose(a["iat"].iloc[1], 0.1)
    assert np.isclose(a["jitter"].iloc[1], 0.1 - 0.01)  # eq. 7 over the samples
    assert np.allclose(a["window"], [4.0, 3.0, 8.0, 1.0])  # (in_flight + newly) / 1000, or cwnd / 1000
    g = tl.gaps
    assert g[["first_seq", "n", "arrival", "prev_arrival"]].values.tolist() == [[2, 2, 2, 1]]
    assert g["t_detect"].tolist() == [0.35]
    losses = tl.losses
    assert losses["seq"].tolist() == [2, 3, 5]
    assert losses["gap"].tolist() == [0, 0, -1] and losses["detected"].tolist() == [True, True, False]
    assert losses["n"].tolist() == [2, 2, 0]
    d = classify(tl, ["unaware", "omniscient"])
    assert d["decision"].astype(str).tolist() == ["congestion"] * 2 + ["undetected"] + [
        "congestion",
        "wireless",
        "undetected",
    ]
    assert d["t_decide"].iloc[0] == 0.35  # decided when detected, with the state of the ACK at 0.3
    summary = tl.summary().iloc[0]
    assert (summary["losses"], summary["gaps"], summary["undetected"]) == (3, 1, 1)
    assert tl.per_packet()["rott"].isna().all()  # no packet arrives at a sender


def test_hand_a_detection_before_any_sample_is_undetected_and_at_a_sample_takes_it():
    rows = [(0, 0.0, "congestion", 0.05, ""), (1, 0.01, "congestion", 0.1, ""), (2, 0.02, "delivered", None, "")]
    tl = la.build_timeline(trace(rows, [(0.1, 2, 0.08, 0, -1)]))
    assert tl.losses["detected"].tolist() == [False, True]
    assert tl.gaps["arrival"].tolist() == [0]  # the sample at exactly t_detect decides


def backlog_flow(rtts, window):
    """One lost segment, detected after the last ACK sample; ACK samples 0.5 s apart with these
    RTTs (dyadic: the RTT recomputed as t_recv − t_send is exact) and a logged cwnd of
    ``window`` segments."""
    acks = [(0.5 * (k + 1), k + 1, rtt, -1, int(window * 1000)) for k, rtt in enumerate(rtts)]
    rows = [(0, 0.0, "congestion", 0.5 * len(rtts) + 0.125, "")]
    rows += [(k + 1, 0.01 * (k + 1), "delivered", None, "") for k in range(len(rtts))]
    return la.build_timeline(trace(rows, acks))


def decision(tl, spec):
    return classify(tl, [spec])["decision"].astype(str).tolist()


def test_hand_veno_sender_boundary():
    # BaseRTT 1/8, RTT 1/4, W = 6: N = 6·(1/8)/(1/4) = 3 = β → congestion; W = 5.9 → wireless
    assert decision(backlog_flow([0.125, 0.25], 6), "veno_sender") == ["congestion"]
    assert decision(backlog_flow([0.125, 0.25], 5.9), "veno_sender") == ["wireless"]
    assert decision(backlog_flow([0.125, 0.25], 6), "veno_sender:beta=3.5") == ["wireless"]
    # the gap's RTT under gap_delay=previous: the sample before (1/8: N = 0)
    prev = classify(backlog_flow([0.125, 0.25], 6), ["veno_sender"], semantics=Replay(gap_delay="previous"))
    assert prev["decision"].astype(str).tolist() == ["wireless"]
    assert decision(backlog_flow([0.125, 0.25], -0.001), "veno_sender") == ["congestion"]  # cwnd unknown: no N


def test_hand_vegas_band_keeps_the_prediction():
    # W = 8, BaseRTT 1/8: Diff = 8·(1 − (1/8)/RTT); RTT 1/4 → 4 (> β: congestion),
    # 3/16 → 2.67 (in the band: kept), 9/64 → 0.89 (< α: none)
    assert decision(backlog_flow([0.125, 0.25, 0.1875], 8), "vegas") == ["congestion"]
    assert decision(backlog_flow([0.125, 0.25, 0.1875, 0.140625], 8), "vegas") == ["wireless"]
    assert decision(backlog_flow([0.125, 0.1875], 8), "vegas") == ["wireless"]  # never above β
    # Diff = β exactly is in the band: W = 6, RTT 1/4 → 3
    assert decision(backlog_flow([0.125, 0.25], 6), "vegas") == ["wireless"]
    assert decision(backlog_flow([0.125, 0.25], 6), "vegas:beta=2.9") == ["congestion"]
    with pytest.raises(UsageError, match="alpha"):
        get_lda("vegas", alpha=4.0)


def test_lda_views_refusals_and_all():
    sender = la.build_timeline(sender_trace(sample_packets()))
    receiver = sample_timeline()
    with pytest.raises(UsageError, match="spike is defined on the receiver's view.*use spike@rtt"):
        classify(sender, "spike")
    with pytest.raises(UsageError, match="veno_sender is defined on the sender's view.*use veno$"):
        classify(receiver, "veno_sender")
    with pytest.raises(UsageError, match="biaz is defined on the receiver's view, and this timeline is a sender's$"):
        lda_state(sender, "biaz")
    on_sender = set(classify(sender, "all")["lda"].astype(str))
    on_receiver = set(classify(receiver, "all")["lda"].astype(str))
    assert on_sender == {name for name in parse_ldas_names() if "sender" in REGISTRY[name].views}
    assert on_receiver == {name for name in parse_ldas_names() if "receiver" in REGISTRY[name].views}
    assert {"unaware", "omniscient", "adaptive_rtt"} <= on_sender & on_receiver
    assert not {"biaz", "mbiaz", "win_ldaplus", "zbs", "xrtp", "veno"} & on_sender


def parse_ldas_names():
    return [lda.name for lda in parse_ldas("all")]


def test_a_single_view_declared_the_old_way_is_read():
    @dataclasses.dataclass(frozen=True)
    class Mine(la.lda.LDA):
        name = "mine"
        view = "sender"

    assert Mine.views == ("sender",)


def test_every_lda_declares_views_and_a_variant_names_its_original():
    for name, cls in REGISTRY.items():
        assert cls.views and set(cls.views) <= {"receiver", "sender"}, name
        assert not cls.variant_of or cls.variant_of in REGISTRY, name
    assert {name: cls.variant_of for name, cls in REGISTRY.items() if cls.variant_of} == {
        "spike@rtt": "spike",
        "zigzag@rtt": "zigzag",
        "wro_ldaplus@rtt": "wro_ldaplus",
        "veno_sender": "veno",
    }


def test_a_modulus_and_an_unknown_view_are_refused():
    with pytest.raises(UsageError, match="without wrapping"):
        la.build_timeline(hand_trace(), seq_modulus=65536)
    odd = hand_trace()
    odd.meta["view"] = "satellite"
    with pytest.raises(UsageError, match="unknown view 'satellite'"):
        la.build_timeline(odd)
    odd.meta.update(view="mixed", flows={"f": {"view": "satellite"}})
    with pytest.raises(UsageError, match="flow view.s. satellite"):
        la.build_timeline(odd)


def mixed_trace():
    """The kit's sample with flow a read at its sender and flow b at its receiver, in one trace."""
    table = sample_packets()
    sender = sender_trace(table)
    packets = sender.packets.copy()
    b = (packets["flow"] == "b").to_numpy()
    packets.loc[b, "t_recv"] = table.loc[(table["flow"] == "b").to_numpy(), "t_recv"].to_numpy()
    meta = {"view": "mixed", "flows": {"a": {"view": "sender"}, "b": {"view": "receiver"}}, "clock": "common"}
    acks = sender.acks[(sender.acks["flow"] == "a").to_numpy()].reset_index(drop=True)
    return Trace(packets=packets, rtt=empty_rtt(), path="mixed", format="kit", meta=meta, acks=acks), table


def test_a_mixed_trace_reads_each_flow_in_its_view():
    mixed, table = mixed_trace()
    tl = la.build_timeline(mixed)
    assert tl.view == "mixed" and tl.flow_views == {"a": "sender", "b": "receiver"}
    alone = {
        "a": la.build_timeline(sender_trace(table[(table["flow"] == "a").to_numpy()].reset_index(drop=True))),
        "b": la.build_timeline(table[(table["flow"] == "b").to_numpy()].reset_index(drop=True)),
    }
    for flow, part in alone.items():  # the same arrivals, gaps and losses as the flow read alone
        a = tl.arrivals[(tl.arrivals["flow"] == flow).to_numpy()]
        assert np.array_equal(a["t_recv"], part.arrivals["t_recv"]) and np.array_equal(a["owd"], part.arrivals["owd"])
        g = tl.gaps[(tl.gaps["flow"] == flow).to_numpy()]
        assert np.array_equal(
            tl.arrivals["uid"].to_numpy()[g["arrival"]], part.arrivals["uid"].to_numpy()[part.gaps["arrival"]]
        )
        assert g["n"].tolist() == part.gaps["n"].tolist()
        losses = tl.losses[(tl.losses["flow"] == flow).to_numpy()]
        assert losses["uid"].tolist() == part.losses["uid"].tolist()
        assert (losses["gap"] >= 0).tolist() == (part.losses["gap"] >= 0).tolist()
    assert (np.diff(tl.gaps["arrival"]) > 0).all() and tl.gaps["gap"].tolist() == list(range(len(tl.gaps)))
    decisions = classify(tl, "all")
    by_flow = decisions.groupby("lda", observed=True)["flow"].agg(lambda f: set(f.astype(str)))
    assert by_flow["spike@rtt"] == {"a"} and by_flow["spike"] == {"b"} and by_flow["unaware"] == {"a", "b"}
    for flow, part in alone.items():  # each flow decided as alone, by the LDAs of its view
        mine = decisions[(decisions["flow"] == flow).to_numpy()]
        own = classify(part, sorted(set(mine["lda"].astype(str)))) if flow == "a" else classify(part, ["spike", "zbs"])
        both = mine.merge(own, on=["lda", "uid"])
        assert len(both) == len(own) and (both["decision_x"].astype(str) == both["decision_y"].astype(str)).all()
    with pytest.raises(UsageError, match="biaz is defined on the receiver's view"):
        classify(
            la.build_timeline(
                dataclasses.replace(
                    mixed, meta={**mixed.meta, "flows": {"a": {"view": "sender"}, "b": {"view": "sender"}}}
                )
            ),
            "biaz",
        )


# -- the timeline and the kernels against the twin ---------------------------------------------

VARIANTS = {
    "unaware": [{}],
    "omniscient": [{}],
    "spike@rtt": [{}, {"alpha": 0.75, "beta": 0.5}],
    "zigzag@rtt": [{}, {"alpha": 0.25}],
    "wro_ldaplus@rtt": [{}],
    "adaptive_rtt": [{}, {"k": 1}],
    "veno_sender": [{}, {"beta": 0.5}, {"beta": 20.0}],
    "vegas": [{}, {"alpha": 0.5, "beta": 0.5}, {"alpha": 2.0, "beta": 10.0}],
}


@st.composite
def sender_views(draw):
    """A sender's Trace of a generated PacketTable (``packet_tables``) through the kit's
    ``sender_trace``, with its ACK delay, RTO and duplicate threshold drawn, some ACKs without an
    RTT sample (Karn), some with the bytes in flight unknown and some with a logged cwnd."""
    rows = draw(packet_tables())
    table = make_packet_table(
        **{k: [p[k] for p in rows] for k in ("flow", "seq", "uid", "t_send", "t_recv", "fate")},
        size=[draw(st.sampled_from((500, 1000)))] * len(rows),
    )
    table = table[table["fate"] != "unobserved"].reset_index(drop=True)
    out = sender_trace(
        table,
        ack_delay=draw(st.sampled_from((0.0, 0.01, 2.0**-6))),
        rto=draw(st.sampled_from((0.05, 0.5, 2.0))),
        dupthresh=draw(st.integers(1, 3)),
    )
    acks = out.acks.copy()
    n = len(acks)
    if n:
        acks.loc[draw(st.lists(st.booleans(), min_size=n, max_size=n)), "rtt"] = np.nan
        acks.loc[draw(st.lists(st.booleans(), min_size=n, max_size=n)), "in_flight"] = -1
        logged = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        acks.loc[logged, "cwnd"] = draw(st.sampled_from((1000, 2500, 12000)))
    out.acks = acks
    return out


def twin_input(tr):
    packets = tr.packets.assign(flow=tr.packets["flow"].astype(str), fate=tr.packets["fate"].astype(str))
    acks = tr.acks.assign(flow=tr.acks["flow"].astype(str))
    return packets.to_dict("records"), acks.to_dict("records")


@settings(max_examples=60, deadline=None)
@given(tr=sender_views())
def test_twin_timeline_matches(tr):
    tl = la.build_timeline(tr)
    packets, acks = twin_input(tr)
    for label in dict.fromkeys(p["flow"] for p in packets):
        mine = [p for p in packets if p["flow"] == label]
        flow, gap_of = naive_lda.sender_flow_view(
            mine, [a for a in acks if a["flow"] == label], 1.0, detection=1, gap_delay="revealing", update_first=True
        )
        arrivals = tl.arrivals[tl.arrivals["flow"] == label]
        assert arrivals["t_recv"].tolist() == [a["t_recv"] for a in flow.arrivals]
        assert np.allclose(arrivals["owd"], flow.d) and np.allclose(arrivals["jitter"], flow.jitter, equal_nan=True)
        first = int(np.flatnonzero((tl.arrivals["flow"] == label).to_numpy())[0]) if len(arrivals) else 0
        losses = tl.losses[tl.losses["flow"] == label]
        for uid, gap, n, detected in zip(losses["uid"], losses["gap"], losses["n"], losses["detected"]):
            want = gap_of.get(uid)
            assert detected == (want is not None)
            if want is not None:
                row = tl.gaps.iloc[gap]
                assert (row["arrival"] - first, row["n"], n) == (want.r, want.n, want.n)


@pytest.mark.parametrize("name", SENDER_LDAS)
@settings(max_examples=30, deadline=None)
@given(tr=sender_views())
def test_twin_kernels_match(name, tr):
    tl = la.build_timeline(tr)
    packets, acks = twin_input(tr)
    for params, replay in itertools.product(VARIANTS[name], REPLAYS):
        want = naive_lda.sender_lda_decisions(name, params, packets, acks, **replay)
        d = classify(tl, [get_lda(name, **params)], semantics=Replay(**replay))
        got = dict(zip(d["uid"], d["decision"].astype(str)))
        wrong = {uid: (got.get(uid), twin) for uid, twin in want.items() if got.get(uid) != twin}
        assert got == want, (name, params, replay, "uid: (kernel, twin)", wrong)
