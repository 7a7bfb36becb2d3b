"""The sender's own evidence per flow (sender_evidence), on a hand-made sender's view."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.packets import ACK_COLUMNS, Trace, empty_acks, empty_rtt, make_packet_table
from ldanalyze.sender_evidence import sender_evidence


def _sender_trace() -> Trace:
    # flow a: segments 0-4; 1 lost and resent on dupacks; 3 declared lost on a timeout but
    # delivered (D-SACK); flow b: one segment, never acknowledged
    nan = np.nan
    packets = make_packet_table(
        flow=["a"] * 7 + ["b"],
        seq=[0, 1, 2, 3, 4, 1, 3, 0],
        size=[1500] * 8,
        t_send=[0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 1.5, 0.0],
        t_recv=[nan] * 8,
        fate=["delivered", "lost", "delivered", "delivered", "delivered", "delivered", "delivered", "unobserved"],
        t_ack=[0.5, nan, 0.7, 1.6, 0.8, 0.9, nan, nan],
        t_detect=[nan, 0.6, nan, 1.5, nan, nan, nan, nan],
        loss_trigger=["", "dupack", "", "rto", "", "", "", ""],
        spurious=["", "", "", "dsack", "", "", "", ""],
        chunk=[0, 0, 0, 0, 0, 0, 1, 0],
        in_flight=[-1] * 8,
    )
    rows = {
        "flow": ["a", "a", "a"],
        "t": [0.5, 0.7, 0.9],
        "ack": [1, 1, 5],
        "largest": [0, 2, 4],
        "newly": [1500, 1500, 4500],
        "dupack": [False, True, False],
        "dsack": [False, False, False],
        "rtt": [0.5, 0.5, nan],
        "rtt_source": ["tsecr", "tsecr", ""],
        "delivery_rate": [3000.0, 3000.0, 1e6],
        "in_flight": [3000, 3000, 0],
        "rwnd": [-1] * 3,
        "cwnd": [-1] * 3,
    }
    acks = pd.DataFrame({name: pd.Series(rows[name], dtype=dtype) for name, dtype in ACK_COLUMNS.items()})
    return Trace(packets=packets, rtt=empty_rtt(), path="hand", format="test", meta={"view": "sender"}, acks=acks)


def test_counts_each_flows_retransmissions_triggers_spurious_and_real_losses():
    got = sender_evidence(_sender_trace())
    assert list(got.index) == ["a", "b"]
    a = got.loc["a"]
    assert (a["sent"], a["rtx"], a["declared_lost"], a["by_dupack"], a["by_rto"]) == (7, 2, 2, 1, 1)
    assert (a["spurious"], a["spurious_dsack"], a["lost"], a["chunks"]) == (1, 1, 1, 2)
    assert a["loss_rate"] == pytest.approx(1 / 7)
    assert a["rtt_p50_ms"] == pytest.approx(500.0)  # the ACK without a sample is left out
    assert a["delivery_rate_p50_mbit_s"] == pytest.approx(3000 * 8e-6)
    b = got.loc["b"]
    assert (b["sent"], b["lost"]) == (1, 0) and np.isnan(b["rtt_p50_ms"])


def test_a_receivers_view_has_no_sender_evidence():
    receiver = make_packet_table(flow=["a"], seq=[0], size=[1], t_send=[0.0], t_recv=[0.1], fate=["delivered"])
    trace = Trace(packets=receiver, rtt=empty_rtt(), path="r", format="test", acks=empty_acks())
    assert sender_evidence(trace).empty


def test_only_the_flows_read_in_the_senders_view_of_a_mixed_trace():
    trace = _sender_trace()
    trace.meta = {"view": "mixed", "flows": {"a": {"view": "sender"}, "b": {"view": "receiver"}}}
    assert list(sender_evidence(trace).index) == ["a"]


def test_inspect_shows_the_evidence_with_the_loss_rate_as_a_percentage():
    from ldanalyze.report.inspect_text import sender_evidence_lines

    text = "\n".join(sender_evidence_lines(sender_evidence(_sender_trace())))
    assert "by_dupack" in text and "spurious_dsack" in text and "14.3 %" in text
    assert sender_evidence_lines(sender_evidence(_sender_trace()).iloc[:0]) == []


def test_the_senders_figure_draws_each_panel(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from ldanalyze.report.plots import sender

    chunks = pd.DataFrame({"flow": ["a"], "chunk": [0], "verdict": ["policed"], "rate_bps": [1e6]})
    fig = sender(_sender_trace(), chunks=chunks)
    seq, rtt, rate = fig.axes
    labels = seq.get_legend_handles_labels()[1]
    assert "lost (cause unknown), resent on dupack" in labels and "declared lost, spurious" in labels
    assert rate.get_legend_handles_labels()[1] == ["delivery rate", "token rate (policed chunk)"]
    fig.savefig(tmp_path / "sender.png")


def test_score_and_classify_say_when_an_lda_decides_with_hindsight():
    from ldanalyze.report.text import hindsight_note

    decisions = pd.DataFrame({"lda": ["flach_pd_lab", "vegas", "flach_pd:min_losses=10"]})
    note = hindsight_note(decisions)
    assert note.count("decides with hindsight") == 2 and "vegas" not in note
    assert hindsight_note(pd.DataFrame({"lda": ["spike"]})) == ""


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.integers(0, 3),
            st.sampled_from(["", "dupack", "rto", "pto"]),
            st.sampled_from(["", "dsack", "acked"]),
            st.sampled_from(["delivered", "lost", "congestion", "unobserved"]),
            st.integers(-1, 3),
        ),
        min_size=1,
        max_size=30,
    ),
    st.lists(st.tuples(st.sampled_from(["a", "b", "z"]), st.none() | st.floats(0.001, 1.0)), max_size=20),
)
def test_the_evidence_is_a_count_row_by_row(rows, samples):
    """Every column against a plain count of the rows (and the ACKs' samples) of each flow."""
    flow, seq, trigger, evidence, fate, chunk = map(list, zip(*rows))
    n = len(rows)
    packets = make_packet_table(
        flow=flow, seq=seq, size=[100] * n, t_send=[float(i) for i in range(n)], t_recv=[np.nan] * n, fate=fate,
        t_ack=[np.nan] * n, t_detect=[np.nan] * n, loss_trigger=trigger, spurious=evidence, chunk=chunk,
        in_flight=[-1] * n,
    )  # fmt: skip
    acks = empty_acks().reindex(range(len(samples)))
    acks["flow"] = pd.Categorical([f for f, _ in samples])
    acks["rtt"] = [np.nan if r is None else r for _, r in samples]
    acks["delivery_rate"] = [np.nan if r is None else 1e6 / r for _, r in samples]
    trace = Trace(packets=packets, rtt=empty_rtt(), path="h", format="test", meta={"view": "sender"}, acks=acks)
    got = sender_evidence(trace)
    table = packets.assign(flow=packets["flow"].astype(str)).to_dict("records")
    for name in sorted(set(flow)):
        mine = [r for r in table if r["flow"] == name]
        row = got.loc[name]
        assert row["sent"] == len(mine) and row["rtx"] == sum(r["tx"] > 0 for r in mine)
        assert row["declared_lost"] == sum(r["loss_trigger"] != "" for r in mine)
        assert row["spurious"] == sum(r["spurious"] != "" for r in mine)
        for word in ("dupack", "rto", "pto"):
            hits = sum(r["loss_trigger"] == word for r in mine)
            assert row.get(f"by_{word}", 0) == hits and (f"by_{word}" in got) == any(t == word for t in trigger)
        for word in ("dsack", "acked"):
            hits = sum(r["spurious"] == word for r in mine)
            assert row.get(f"spurious_{word}", 0) == hits and (f"spurious_{word}" in got) == (word in evidence)
        assert row["lost"] == sum(r["fate"] in ("lost", "congestion") for r in mine)
        assert row["chunks"] == len({r["chunk"] for r in mine})
        rtts = sorted(r for f, r in samples if f == name and r is not None)
        if rtts:
            assert row["rtt_p50_ms"] == pytest.approx(float(np.quantile(rtts, 0.5)) * 1e3, rel=1e-12)
        else:
            assert np.isnan(row["rtt_p50_ms"]) and np.isnan(row["delivery_rate_p90_mbit_s"])
