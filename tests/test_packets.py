"""PacketTable construction: labels, dtypes, order, tx numbering."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.packets import FATES, make_packet_table, natural_sorted, validate_packets


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["1", "2", "10", "a:0.1>2.1", "b"]),
            st.integers(0, 5),
            st.floats(0, 10),
            st.sampled_from(FATES),
        ),
        max_size=40,
    )
)
def test_rows_keep_their_flow_and_are_sorted(rows):
    if not rows:
        return
    flow, seq, t_send, fate = map(list, zip(*rows))
    t_recv = [t + 0.1 if f == "delivered" else np.nan for t, f in zip(t_send, fate)]
    p = make_packet_table(flow=flow, seq=seq, size=[1] * len(rows), t_send=t_send, t_recv=t_recv, fate=fate)
    validate_packets(p)
    # every row keeps its own flow label (uid = input position)
    assert [flow[u] for u in p["uid"]] == p["flow"].astype(str).tolist()
    assert list(p["flow"].cat.categories) == natural_sorted(set(flow))
    key = list(zip(p["flow"].cat.codes, p["t_send"], p["uid"]))
    assert key == sorted(key)
    for _, grp in p.groupby(["flow", "seq"]):
        assert grp["tx"].tolist() == list(range(len(grp)))


def test_natural_order():
    assert natural_sorted(["10", "2", "1", "100:4.0>1.0", "b", "a"]) == ["1", "2", "10", "100:4.0>1.0", "a", "b"]


def test_validation_catches_inconsistent_rows():
    p = make_packet_table(flow=["1"], seq=[0], size=[1], t_send=[0.0], t_recv=[np.nan], fate=["delivered"])
    with pytest.raises(ValueError, match="inconsistent"):
        validate_packets(p)


# -- the array kernels against plain loops -----------------------------------------------------
def _tx_naive(flows, seqs):
    seen: dict = {}
    out = []
    for key in zip(flows, seqs):
        out.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6)), max_size=40), st.booleans())
def test_transmission_index_counts_earlier_rows_of_the_same_number(rows, ordered):
    """Against a counting loop, on tables whose flows are in turn and rising (the shortcut)
    and on arbitrary ones (the sort)."""
    from ldanalyze.packets import transmission_index

    if ordered:
        rows = sorted(set(rows))
    flows = np.array([f for f, _ in rows], np.int64)
    seqs = np.array([s for _, s in rows], np.int64)
    assert transmission_index(flows, seqs).tolist() == _tx_naive(flows.tolist(), seqs.tolist())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0.0, 1.0, 2.5, np.nan]), st.integers(0, 3)), max_size=30),
    st.booleans(),
)
def test_sorting_order_is_a_stable_sort_by_the_keys(rows, presorted):
    """The row order of Python's stable sort on the key tuples (NaN last, as numpy sorts)."""
    from ldanalyze.packets import sorting_order

    if presorted:
        rows = sorted(rows, key=lambda r: (r[0], np.isnan(r[1]), 0 if np.isnan(r[1]) else r[1], r[2]))
    keys = [np.array([r[k] for r in rows]) for k in range(3)]
    expect = sorted(
        range(len(rows)),
        key=lambda i: (rows[i][0], np.isnan(rows[i][1]), 0 if np.isnan(rows[i][1]) else rows[i][1], rows[i][2]),
    )
    order = sorting_order(*keys)
    assert (list(range(len(rows))) if order is None else order.tolist()) == expect
    if presorted and not np.isnan(keys[1]).any():  # NaN never compares in order: it takes the sort
        assert order is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["1", "2", "10"]), st.integers(0, 6), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
        max_size=30,
    ),
    st.lists(
        st.tuples(
            st.sampled_from(["1", "2", "10", "x"]), st.sampled_from([0.0, 0.5, 1.0, 1.5, 3.0]), st.integers(-1, 7)
        ),
        max_size=30,
    ),
    st.booleans(),
)
def test_rtt_from_feedback_matches_naive_twin(packets, feedback, categorical):
    """Retransmitted seqnos (Karn), feedback before the send, repeated and lower seqnos, ties in
    time, a flow with no packets, flow labels whose string and natural orders differ."""
    from ldanalyze.packets import rtt_from_feedback

    from .naive import packets as naive_packets

    table = pd.DataFrame(
        {
            "flow": pd.Categorical([p[0] for p in packets], categories=["1", "2", "10"]),
            "seq": np.array([p[1] for p in packets], np.int64),
            "t_send": np.array([p[2] for p in packets], np.float64),
        }
    )
    fb = pd.DataFrame(
        {
            "flow": [f[0] for f in feedback],
            "t": np.array([f[1] for f in feedback], np.float64),
            "seq": np.array([f[2] for f in feedback], np.int64),
        }
    )
    if categorical:
        fb["flow"] = fb["flow"].astype("category")
    got = rtt_from_feedback(table, fb)
    assert list(got.columns) == ["flow", "t", "seq", "rtt"]
    assert list(zip(got["flow"], got["t"], got["seq"], got["rtt"])) == naive_packets.rtt_from_feedback(
        packets, feedback
    )
    assert got["seq"].dtype == np.int64 and got["t"].dtype == got["rtt"].dtype == np.float64


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["1", "2", "10", "x", None]), max_size=20),
    st.lists(st.sampled_from(["1", "2", "10", "y"]), unique=True, max_size=4),
    st.booleans(),
    st.booleans(),
)
def test_label_positions_match_a_lookup_row_by_row(rows, labels, categorical, unused_category):
    """Each row's position in ``labels`` as strings, -1 for a missing label or none; from a
    categorical (with a category no row uses) or from plain values."""
    from ldanalyze.packets import label_positions

    column = pd.Series(rows, dtype=object)
    if categorical:
        categories = sorted({r for r in rows if r is not None} | ({"unused"} if unused_category else set()))
        column = column.astype(pd.CategoricalDtype(categories))
    want = [labels.index(r) if r is not None and r in labels else -1 for r in rows]
    assert label_positions(column, labels).tolist() == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["1", "2", "10", "x", None]), max_size=20), st.booleans(), st.booleans())
def test_flow_text_is_the_column_pandas_makes_of_the_rows(rows, categorical, unused_category):
    """``flow_text`` of a column, in a DataFrame, is the column ``to_numpy()`` gives, dtype and
    values: a categorical's (with a category no row uses; rows without a label; none), plain values."""
    from ldanalyze.packets import flow_text

    column = pd.Series(rows, dtype=object)
    if categorical:
        categories = sorted({r for r in rows if r is not None} | ({"unused"} if unused_category else set()))
        column = column.astype(pd.CategoricalDtype(pd.Index(categories)))
    want = pd.DataFrame({"flow": column.to_numpy()})
    pd.testing.assert_frame_equal(pd.DataFrame({"flow": flow_text(column)}), want, check_exact=True)
