"""ns-2 wired reader: every labelling case by hand, generated traces against the naive twin."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from ldanalyze import read_trace
from ldanalyze.io.ns2.wired import read_ns2_wired
from ldanalyze.packets import validate_packets

from ...naive import ns2 as naive_ns2
from ...support.strategies import wired_traces

# a packet crossing 0 -> 1 -> 2 (flow 1, cbr, 0.1 -> 2.1)
ENQ0 = "+ 1.000 0 1 cbr 762 ------- 1 0.1 2.1 {seq} {uid}"
DEQ0 = "- 1.000 0 1 cbr 762 ------- 1 0.1 2.1 {seq} {uid}"
RCV0 = "r 1.010 0 1 cbr 762 ------- 1 0.1 2.1 {seq} {uid}"
ENQ1 = "+ 1.010 1 2 cbr 762 ------- 1 0.1 2.1 {seq} {uid}"
DEQ1 = "- 1.020 1 2 cbr 762 ------- 1 0.1 2.1 {seq} {uid}"
RCV1 = "r 1.050 1 2 cbr 762 ------- 1 0.1 2.1 {seq} {uid}"
DRP1 = "d {t} 1 2 cbr 762 ------- 1 0.1 2.1 {seq} {uid}"


def hop0(seq, uid):
    return [x.format(seq=seq, uid=uid) for x in (ENQ0, DEQ0, RCV0)]


def delivered(seq, uid, shift=0.0):
    lines = hop0(seq, uid) + [x.format(seq=seq, uid=uid) for x in (ENQ1, DEQ1, RCV1)]
    return [_shift(line, shift) for line in lines]


def _shift(line, dt):
    f = line.split()
    f[1] = f"{float(f[1]) + dt:.6f}"
    return " ".join(f)


def fates(trace):
    p = trace.packets.sort_values("uid")
    return list(zip(p["uid"], p["fate"].astype(str), p["reason"]))


def test_queue_drop_is_congestion(write_trace):
    lines = hop0(0, 0) + [ENQ1.format(seq=0, uid=0), DRP1.format(t="1.010", seq=0, uid=0)]
    lines += delivered(1, 1, shift=0.1)
    tr = read_ns2_wired(write_trace(lines))
    assert fates(tr) == [(0, "congestion", "queue"), (1, "delivered", "")]
    row = tr.packets.set_index("uid").loc[0]
    assert row["t_send"] == 1.0 and math.isnan(row["t_recv"]) and row["t_drop"] == 1.010


def test_error_model_after_link_is_wireless(write_trace):
    lines = hop0(0, 0) + [ENQ1.format(seq=0, uid=0), DEQ1.format(seq=0, uid=0), DRP1.format(t="1.050", seq=0, uid=0)]
    lines += delivered(1, 1, shift=0.1)
    assert fates(read_ns2_wired(write_trace(lines)))[0] == (0, "wireless", "link-error")


def test_error_model_before_queue_is_wireless(write_trace):
    lines = hop0(0, 0) + [DRP1.format(t="1.010", seq=0, uid=0)] + delivered(1, 1, shift=0.1)
    assert fates(read_ns2_wired(write_trace(lines)))[0] == (0, "wireless", "ingress-error")


def test_drop_at_source_link_before_queue(write_trace):
    lines = ["d 1.000 0 1 cbr 762 ------- 1 0.1 2.1 0 0"] + delivered(1, 1, shift=0.1)
    p = read_ns2_wired(write_trace(lines)).packets.set_index("uid")
    assert p.loc[0, "fate"] == "wireless" and p.loc[0, "t_send"] == 1.0


def test_explicit_error_letter(write_trace):
    lines = hop0(0, 0) + ["e 1.010 1 2 cbr 762 ------- 1 0.1 2.1 0 0"] + delivered(1, 1, shift=0.1)
    assert fates(read_ns2_wired(write_trace(lines)))[0] == (0, "wireless", "error-event")
    with pytest.raises(Exception, match="unknown event letter 'e'"):
        read_ns2_wired(write_trace(lines), error_events=())


def test_in_flight_at_end_is_unobserved_not_lost(write_trace):
    lines = delivered(0, 0) + [_shift(x, 0.1) for x in hop0(1, 1) + [ENQ1.format(seq=1, uid=1)]]
    p = read_ns2_wired(write_trace(lines)).packets.set_index("uid")
    assert p.loc[1, "fate"] == "unobserved"
    assert p.loc[1, "t_send"] == pytest.approx(1.1)


def test_vanished_packet_before_a_delivered_one_is_lost(write_trace):
    # uid 0 stops after its first hop without a drop record; uid 1 is delivered later
    lines = hop0(0, 0) + delivered(1, 1, shift=0.1)
    p = read_ns2_wired(write_trace(lines)).packets.set_index("uid")
    assert (p.loc[0, "fate"], p.loc[0, "reason"]) == ("lost", "vanished")


def test_tcp_retransmission_is_one_row_per_transmission(write_trace):
    tcp = lambda line: line.replace("cbr", "tcp")  # noqa: E731
    first = hop0(5, 10) + [ENQ1.format(seq=5, uid=10), DRP1.format(t="1.010", seq=5, uid=10)]
    later = delivered(6, 11, shift=0.05)
    retx = delivered(5, 12, shift=0.5)
    tr = read_ns2_wired(write_trace([tcp(x) for x in first + later] + [tcp(x) for x in retx]))
    p = tr.packets.sort_values("uid")
    assert p[["seq", "tx", "fate"]].astype(str).values.tolist() == [
        ["5", "0", "congestion"],
        ["6", "0", "delivered"],
        ["5", "1", "delivered"],
    ]


def test_address_with_port_10_is_not_a_float(write_trace):
    lines = [x.replace("0.1 2.1", "0.10 2.10") for x in delivered(0, 0)]
    p = read_ns2_wired(write_trace(lines), flow_by="addr").packets
    assert p["flow"].tolist() == ["0.10>2.10"]


def test_flow_by_modes(write_trace):
    a = delivered(0, 0)
    b = [_shift(x.replace("0.1 2.1", "0.2 2.2"), 0.1) for x in delivered(0, 1)]
    path = write_trace(a + b)  # two address pairs share fid 1
    assert sorted(read_ns2_wired(path).packets["flow"]) == ["1:0.1>2.1", "1:0.2>2.2"]
    assert sorted(read_ns2_wired(path, flow_by="fid").packets["flow"]) == ["1", "1"]
    assert sorted(read_ns2_wired(path, flow_by="addr").packets["flow"]) == ["0.1>2.1", "0.2>2.2"]


def test_feedback_is_kept_apart_and_gives_rtt(write_trace):
    data = [x.replace("cbr", "tcpFriend") for x in delivered(0, 0)]
    fb = [
        "+ 1.050 2 1 tcpFriendCtl 40 ------- 0 2.1 0.1 0 1",
        "- 1.050 2 1 tcpFriendCtl 40 ------- 0 2.1 0.1 0 1",
        "r 1.060 2 1 tcpFriendCtl 40 ------- 0 2.1 0.1 0 1",
        "+ 1.060 1 0 tcpFriendCtl 40 ------- 0 2.1 0.1 0 1",
        "- 1.060 1 0 tcpFriendCtl 40 ------- 0 2.1 0.1 0 1",
        "r 1.075 1 0 tcpFriendCtl 40 ------- 0 2.1 0.1 0 1",
    ]
    tr = read_ns2_wired(write_trace(data + fb))
    assert len(tr.packets) == 1
    assert tr.rtt[["flow", "seq"]].values.tolist() == [["1", 0]]
    assert tr.rtt["rtt"].iloc[0] == pytest.approx(0.075)


def test_rtt_karn_rule_skips_retransmitted_and_repeated_acks(write_trace):
    tcp = lambda line: line.replace("cbr", "tcp")  # noqa: E731
    lines = [tcp(x) for x in delivered(0, 0)]
    lines += [tcp(x) for x in hop0(1, 1)] + [tcp(ENQ1.format(seq=1, uid=1)), tcp(DRP1.format(t="1.010", seq=1, uid=1))]

    def ack(t, seq, uid):
        return f"r {t:.6f} 1 0 ack 40 ------- 1 2.1 0.1 {seq} {uid}"

    lines += [ack(1.08, 0, 2), ack(1.09, 0, 3)]  # second one repeats: no sample
    lines += [_shift(tcp(x), 0.3) for x in delivered(1, 4)]  # retransmission of seq 1
    lines += [ack(1.40, 1, 5)]  # acknowledges a retransmitted seq: ambiguous, no sample
    tr = read_ns2_wired(write_trace(sorted(lines, key=lambda line: float(line.split()[1]))))
    assert tr.rtt["seq"].tolist() == [0]
    assert tr.rtt["rtt"].iloc[0] == pytest.approx(0.08)


def test_gzip_and_small_blocks_give_the_same_table(write_trace):
    lines = []
    for k in range(30):
        lines += (
            delivered(k, k, shift=0.1 * k)
            if k % 7
            else [
                _shift(x, 0.1 * k)
                for x in hop0(k, k) + [ENQ1.format(seq=k, uid=k), DRP1.format(t="1.010", seq=k, uid=k)]
            ]
        )
    plain = read_ns2_wired(write_trace(lines)).packets
    gz = read_ns2_wired(write_trace(lines, gz=True)).packets
    small = read_ns2_wired(write_trace(lines), block_bytes=97).packets
    assert plain.equals(gz) and plain.equals(small)
    assert (plain["fate"] == "congestion").sum() == 5


def test_a_pool_worker_reads_on_one_thread_with_the_same_result(write_trace, monkeypatch):
    """In a batch worker (threads.one_per_worker) the reader parses its blocks inline, and
    the table is the pipelined read's, error rows' line numbers included."""
    from ldanalyze import threads
    from ldanalyze.io.ns2 import wired

    lines = []
    for k in range(30):
        lines += (
            delivered(k, k, shift=0.1 * k)
            if k % 7
            else [
                _shift(x, 0.1 * k)
                for x in hop0(k, k) + [ENQ1.format(seq=k, uid=k), DRP1.format(t="1.010", seq=k, uid=k)]
            ]
        )
    path = write_trace(lines)
    pipelined = read_ns2_wired(path, block_bytes=97).packets

    def no_thread(*args, **kwargs):
        raise AssertionError("a worker's read started a thread")

    monkeypatch.setattr(threads, "_alone", False)
    monkeypatch.setattr(wired, "ThreadPoolExecutor", no_thread)
    assert read_ns2_wired(path, block_bytes=97).packets.equals(pipelined)
    bad = write_trace(lines[:40] + ["x 1.2 0 1 cbr 762 ------- 1 0.1 2.1 1 1"] + lines[40:])
    with pytest.raises(Exception, match=":41:.*unknown event letter 'x'"):
        read_ns2_wired(bad, block_bytes=97)


def test_empty_lines_are_skipped_and_line_numbers_stay_right(write_trace):
    lines = delivered(0, 0) + [""] + delivered(1, 1, shift=0.1)[:2] + ["x 1.2 0 1 cbr 762 ------- 1 0.1 2.1 1 1"]
    with pytest.raises(Exception) as info:
        read_ns2_wired(write_trace(lines))
    assert ":10:" in str(info.value) and "unknown event letter 'x'" in str(info.value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wired_traces())
def test_generated_traces_match_truth_and_naive_twin(tmp_path_factory, synth):
    if not synth.lines:
        return
    path = tmp_path_factory.mktemp("gen") / "t.tr"
    path.write_text("\n".join(synth.lines) + "\n")
    tr = read_ns2_wired(path, block_bytes=256)
    validate_packets(tr.packets)
    got = {int(u): (str(f), r) for u, f, r in zip(tr.packets["uid"], tr.packets["fate"], tr.packets["reason"])}
    assert got == synth.truth
    twin = naive_ns2.wired_labels(synth.lines)
    p = tr.packets.set_index("uid")
    for uid, (fate, reason, t_send, t_recv) in twin.items():
        if fate is not None:
            assert (str(p.loc[uid, "fate"]), p.loc[uid, "reason"]) == (fate, reason)
        assert p.loc[uid, "t_send"] == t_send
        assert (math.isnan(t_recv) and math.isnan(p.loc[uid, "t_recv"])) or p.loc[uid, "t_recv"] == t_recv
    # tx counts transmissions of a (flow, seq) in send order
    for _, grp in tr.packets.groupby(["flow", "seq"]):
        assert sorted(grp["tx"]) == list(range(len(grp)))
        assert np.all(np.diff(grp.sort_values(["t_send", "uid"])["tx"]) == 1)


def test_read_trace_detects_wired_by_content(write_trace):
    path = write_trace(delivered(0, 0), name="looks_like.pcap")
    assert read_trace(path).format == "ns2-wired"
