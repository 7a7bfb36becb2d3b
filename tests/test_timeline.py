"""Timeline: ROTT, IAT, jitter, gaps and losses; hand cases and properties against naive twins."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.packets import LOSS_FATES, make_packet_table, unwrap_sequence, validate_packets
from ldanalyze.timeline import build_timeline, rfc3550_jitter

from .naive import packets as naive_packets
from .naive import timeline as naive_timeline


def pt(**columns):
    """make_packet_table with 762-byte packets unless sizes are given."""
    columns.setdefault("size", [762] * len(columns["seq"]))
    return make_packet_table(**columns)


def table(rows, flow="f"):
    """rows: (seq, t_send, t_recv or None, fate)."""
    seq, t_send, t_recv, fate = zip(*rows)
    return pt(
        flow=[flow] * len(rows),
        seq=list(seq),
        t_send=list(t_send),
        t_recv=[np.nan if r is None else r for r in t_recv],
        fate=list(fate),
    )


def test_reordered_packet_fills_its_gap_and_is_not_a_loss():
    p = table(
        [
            (0, 0.0, 0.10, "delivered"),
            (1, 0.1, 0.20, "delivered"),
            (2, 0.2, 0.45, "delivered"),
            (3, 0.3, 0.40, "delivered"),
            (4, 0.4, 0.50, "delivered"),
        ]
    )
    tl = build_timeline(p)
    assert tl.arrivals["seq"].tolist() == [0, 1, 3, 2, 4]
    assert tl.arrivals["kind"].astype(str).tolist() == ["in_order", "in_order", "in_order", "late", "in_order"]
    g = tl.gaps.iloc[0]
    assert (g["first_seq"], g["n"], g["n_lost"], g["prev_seq"], g["next_seq"]) == (2, 1, 0, 1, 3)
    assert g["t_prev_recv"] == 0.20 and g["t_next_recv"] == g["t_detect"] == 0.40
    assert tl.losses.empty


def test_burst_loss_gap_and_arrival_times():
    p = table(
        [
            (0, 0.0, 0.10, "delivered"),
            (1, 0.1, None, "wireless"),
            (2, 0.2, None, "congestion"),
            (3, 0.3, 0.42, "delivered"),
        ]
    )
    tl = build_timeline(p)
    assert len(tl.gaps) == 1
    g = tl.gaps.iloc[0]
    assert (g["first_seq"], g["n"], g["n_lost"]) == (1, 2, 2)
    assert tl.losses["cause"].tolist() == ["wireless", "congestion"]
    assert tl.losses["gap"].tolist() == [0, 0] and tl.losses["n"].tolist() == [2, 2]
    assert tl.losses["t_prev_recv"].tolist() == [0.10, 0.10]
    assert tl.losses["t_detect"].tolist() == [0.42, 0.42]


def test_duplicates_are_flagged_and_do_not_open_gaps():
    p = table(
        [
            (0, 0.0, 0.1, "delivered"),
            (1, 0.1, 0.2, "delivered"),
            (1, 0.15, 0.25, "delivered"),
            (2, 0.2, 0.3, "delivered"),
        ]
    )
    tl = build_timeline(p)
    assert tl.arrivals["kind"].astype(str).tolist() == ["in_order", "in_order", "duplicate", "in_order"]
    assert tl.gaps.empty


def test_leading_and_trailing_losses():
    p = table(
        [
            (0, 0.0, None, "congestion"),
            (1, 0.1, 0.2, "delivered"),
            (2, 0.2, None, "wireless"),
            (3, 0.3, None, "unobserved"),
        ]
    )
    tl = build_timeline(p)
    lead = tl.gaps.iloc[0]
    assert (lead["first_seq"], lead["n"]) == (0, 1) and math.isnan(lead["t_prev_recv"]) and math.isnan(lead["prev_seq"])
    assert tl.losses["detected"].tolist() == [True, False]
    assert tl.losses["gap"].tolist() == [0, -1]


def test_tcp_retransmission_fills_the_gap_it_left():
    p = pt(
        flow=["t"] * 4,
        seq=[5, 6, 7, 5],
        t_send=[0.0, 0.1, 0.2, 0.5],
        t_recv=[np.nan, 0.2, 0.3, 0.6],
        fate=["congestion", "delivered", "delivered", "delivered"],
    )
    assert p["tx"].tolist() == [0, 0, 0, 1]
    tl = build_timeline(p)
    assert tl.arrivals["kind"].astype(str).tolist() == ["in_order", "in_order", "late"]
    # 5 is the flow's first sequence number: the gap before 6 holds it
    assert tl.gaps[["first_seq", "n", "n_lost"]].values.tolist() == [[5, 1, 1]]


def test_rott_iat_and_jitter_definitions():
    p = table([(0, 0.00, 0.10, "delivered"), (1, 0.02, 0.13, "delivered"), (2, 0.04, 0.14, "delivered")])
    a = build_timeline(p).arrivals
    assert a["owd"].tolist() == pytest.approx([0.10, 0.11, 0.10])
    assert a["rott"].tolist() == pytest.approx([0.0, 0.01, 0.0])
    assert a["iat"].tolist()[1:] == pytest.approx([0.03, 0.01])
    assert a["jitter"].tolist()[1:] == pytest.approx([0.01, -0.01])  # paper 001 eq. 7
    assert a["jitter_rfc3550"].tolist() == pytest.approx([0.0, 0.01 / 16, 0.01 / 16 + (0.01 - 0.01 / 16) / 16])


@st.composite
def packet_tables(draw):
    rows = {"flow": [], "seq": [], "t_send": [], "t_recv": [], "fate": []}
    for flow in ("a", "b")[: draw(st.integers(1, 2))]:
        n = draw(st.integers(0, 60))
        t = 0.0
        seq = draw(st.integers(0, 5))
        sent = []
        for _ in range(n):
            t += draw(st.sampled_from([0.0, 0.01, 0.02, 0.05]))
            if sent and draw(st.integers(0, 7)) == 0:
                s = draw(st.sampled_from(sent))  # a retransmission
            else:
                s = seq
                seq += draw(st.sampled_from([1, 1, 1, 2]))  # an occasional never-sent number
            sent.append(s)
            fate = draw(st.sampled_from(["delivered"] * 5 + list(LOSS_FATES) + ["unobserved"]))
            delay = draw(st.sampled_from([0.05, 0.06, 0.1, 0.3]))
            rows["flow"].append(flow)
            rows["seq"].append(s)
            rows["t_send"].append(t)
            rows["t_recv"].append(t + delay if fate == "delivered" else np.nan)
            rows["fate"].append(fate)
    return pt(**rows)


@settings(max_examples=200, deadline=None)
@given(packet_tables())
def test_timeline_properties(packets):
    validate_packets(packets)
    tl = build_timeline(packets)
    s = tl.summary().set_index("flow") if len(packets) else None
    for flow, grp in packets.groupby("flow"):
        # every packet is delivered, lost, or unobserved
        assert s.loc[flow, "delivered"] + s.loc[flow, "losses"] + s.loc[flow, "unobserved"] == len(grp)
        a = tl.arrivals[tl.arrivals["flow"] == flow]
        gaps = tl.gaps[tl.gaps["flow"] == flow]
        losses = tl.losses[tl.losses["flow"] == flow]
        # gaps and arrival kinds agree with the naive receiver
        expect_gaps, expect_kinds = naive_timeline.receiver_gaps(a["seq"].tolist(), int(grp["seq"].min()))
        assert a["kind"].astype(str).tolist() == expect_kinds
        assert list(zip(gaps["arrival"] - (a.index[0] if len(a) else 0), gaps["first_seq"], gaps["n"])) == expect_gaps
        # the lost packets charged to gaps are exactly the gaps' n_lost; each gap holds at most n
        assert gaps["n_lost"].sum() == losses["detected"].sum()
        assert (gaps["n_lost"] <= gaps["n"]).all()
        assert len(losses) == s.loc[flow, "losses"]
        # a detected loss lies inside its gap's range
        merged = losses[losses["detected"]].merge(gaps, on=["flow", "gap"], suffixes=("", "_g"))
        assert ((merged["seq"] >= merged["first_seq"]) & (merged["seq"] < merged["next_seq"])).all()
        # ROTT is relative: its minimum is zero
        if len(a):
            assert a["rott"].min() == 0.0
            twin = naive_timeline.rfc3550_jitter(list(zip(a["t_send"], a["t_recv"])))
            assert a["jitter_rfc3550"].tolist() == pytest.approx(twin, rel=1e-12, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-30000, 30000), max_size=80), st.integers(0, 10**6), st.sampled_from([2**16, 2**15 + 1, 1000])
)
def test_unwrap_recovers_steps_smaller_than_half_the_space(steps, start, modulus):
    steps = [x % (modulus // 2) * (1 if x >= 0 else -1) for x in steps]
    true = np.cumsum([start] + steps)
    wrapped = true % modulus
    got = unwrap_sequence(wrapped, modulus)
    assert got.tolist() == naive_packets.unwrap(wrapped.tolist(), modulus)
    assert (got - got[0]).tolist() == (true - true[0]).tolist()


def test_unwrap_in_build_timeline():
    seqs = [65534, 65535, 0, 2]  # 1 is lost across the wrap
    p = pt(flow=["r"] * 4, seq=seqs, t_send=[0, 1, 2, 3], t_recv=[0.1, 1.1, 2.1, 3.1], fate=["delivered"] * 4)
    lost = pt(flow=["r"], seq=[1], t_send=[2.5], t_recv=[np.nan], fate=["wireless"])
    tl = build_timeline(pd.concat([p, lost]).sort_values("t_send", ignore_index=True), seq_modulus=65536)
    assert tl.arrivals["seq"].tolist() == [65534, 65535, 65536, 65538]
    assert tl.gaps[["first_seq", "n", "n_lost"]].values.tolist() == [[65537, 1, 1]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), max_size=50), st.integers(0, 3))
def test_rfc3550_kernel_matches_naive_twin(deltas, restart):
    t_send = np.cumsum([d[0] for d in deltas])
    t_recv = t_send + np.array([d[1] for d in deltas])
    d = np.abs(np.diff(t_recv, prepend=np.nan) - np.diff(t_send, prepend=np.nan))
    starts = np.zeros(len(deltas), bool)
    if len(deltas):
        starts[0] = True
        starts[min(restart, len(deltas) - 1)] = True
    got = rfc3550_jitter(d, starts)
    expect = []
    for a, b in zip(np.flatnonzero(starts), list(np.flatnonzero(starts)[1:]) + [len(deltas)]):
        expect += naive_timeline.rfc3550_jitter(list(zip(t_send[a:b], t_recv[a:b])))
    assert got.tolist() == pytest.approx(expect, rel=1e-12, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(packet_tables())
def test_summary_statistics_equal_pandas_describe(packets):
    """The per-flow ROTT and IAT figures against pandas' own describe() of the arrivals."""
    tl = build_timeline(packets)
    out = tl.summary().set_index("flow")
    a = tl.arrivals.assign(flow=tl.arrivals["flow"].astype(str))
    for col in ("rott", "iat"):
        stats = a.groupby("flow")[col].describe(percentiles=[0.5, 0.95])
        for stat, name in (("mean", "mean"), ("50%", "p50"), ("95%", "p95"), ("max", "max")):
            expect = (stats[stat].reindex(out.index) * 1e3).to_numpy()
            np.testing.assert_allclose(out[f"{col}_{name}_ms"].to_numpy(), expect, rtol=1e-12, atol=1e-12)


def test_lazily_read_timeline_reads_a_table_when_first_used():
    from ldanalyze.timeline import Timeline

    eager = build_timeline(
        table([(0, 0.0, 0.1, "delivered"), (1, 0.1, None, "congestion"), (2, 0.2, 0.3, "delivered")])
    )
    read = []

    def load(name):
        read.append(name)
        return getattr(eager, name)

    lazy = Timeline.read_lazily(load, flows=eager.flows, meta=dict(eager.meta))
    assert lazy.flows == ["f"] and read == []
    assert lazy.losses["seq"].tolist() == [1] and lazy.losses is lazy.losses
    assert read == ["losses"]
    assert lazy == eager and sorted(read) == sorted(Timeline.TABLES)  # comparing reads the rest, once each
    with pytest.raises(AttributeError, match="no attribute 'arivals'"):
        _ = lazy.arivals
