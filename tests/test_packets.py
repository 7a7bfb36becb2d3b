"""PacketTable construction: labels, dtypes, order, tx numbering."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.packets import FATES, make_packet_table, natural_sorted, validate_packets


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1", "2", "10", "a:0.1>2.1", "b"]), st.integers(0, 5),
                          st.floats(0, 10), st.sampled_from(FATES)), max_size=40))
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
