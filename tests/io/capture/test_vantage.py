"""Vantage chains (``ldanalyze/io/capture/vantage.py``): matching packets across captures, the cause of
each loss from where it was last seen, capture windows, flow direction, clocks.

Captures are written with scapy; a plain dictionary matcher in this file is the twin of the
pandas join the reader uses.
"""

from __future__ import annotations

import os
import warnings
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldanalyze.cli import main
from ldanalyze.errors import TraceError, UsageError
from ldanalyze.io.capture.pcap import CaptureWarning
from ldanalyze.io.capture.vantage import Vantage, parse_vantage, read_vantages
from ldanalyze.packets import validate_packets

from ...support.captures import T0, Endpoints, Record, ip_packet, iperf3_payload, link_frame, write_pcap

FLOW = Endpoints(proto="udp", src="10.0.0.1", dst="10.0.0.2", sport=40000, dport=5201)
LABEL = "10.0.0.1:40000>10.0.0.2:5201/udp"
NAMES = ("s.pcap", "r1.pcap", "d.pcap")


class Packet:
    """One packet of a synthetic chain: what it carries and when each vantage saw it (None:
    not there)."""

    def __init__(self, payload: bytes, ip_id: int, t_send: float, ends: Endpoints = FLOW, ttls=(64, 63, 62)):
        self.payload, self.ip_id, self.ends, self.ttls = payload, ip_id, ends, ttls
        self.times = [t_send, None, None]


def write_chain(tmp_path, packets: list[Packet], extra=()) -> list[str]:
    """One pcap per vantage; ``extra`` adds (vantage, Record) pairs (other traffic)."""
    records = defaultdict(list)
    for p in packets:
        for k, t in enumerate(p.times):
            if t is not None:
                frame = link_frame(1, ip_packet(p.ends, p.payload, ip_id=p.ip_id, ttl=p.ttls[k]))
                records[k].append(Record(int(round(t * 1e9)), frame))
    for k, record in extra:
        records[k].append(record)
    paths = []
    for k, name in enumerate(NAMES):
        path = tmp_path / name
        write_pcap(path, sorted(records[k], key=lambda r: r.ts_ns), 1)
        paths.append(str(path))
    return paths


def iperf_chain(n: int, *, lost1=(), lost2=(), delay=0.002, spacing=0.01) -> list[Packet]:
    """n iperf3 packets; those in lost1 never reach r1, those in lost2 never reach d."""
    packets = []
    for i in range(n):
        t = T0 + i * spacing
        p = Packet(iperf3_payload(i, t, size=120), ip_id=i, t_send=t)
        if i not in lost1:
            p.times[1] = t + delay
            if i not in lost2:
                p.times[2] = t + 2 * delay
        packets.append(p)
    return packets


def read(paths, causes=("wireless", "congestion"), **options):
    chain = [Vantage(paths[0])] + [Vantage(p, c) for p, c in zip(paths[1:], causes)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_vantages(chain, **options)
    validate_packets(trace.packets)
    return trace


def fates_by_seq(trace, flow=LABEL) -> dict[int, str]:
    rows = trace.packets[trace.packets["flow"] == flow]
    return dict(zip(rows["seq"].tolist(), rows["fate"].astype(str).tolist()))


# -- the twin ----------------------------------------------------------------------------------
def chain_fates_naive(packets: list[Packet], causes=("wireless", "congestion")) -> list[str]:
    """Per sender packet: delivered, or the cause of the segment after the furthest vantage
    that has a packet with its flow, IP ID and payload (k-th repeat matched to k-th repeat)."""
    index = [defaultdict(list) for _ in NAMES]
    for k in range(len(NAMES)):
        for p in sorted((p for p in packets if p.times[k] is not None), key=lambda p: p.times[k]):
            index[k][(p.ends, p.ip_id, p.payload)].append(p)
    fates = []
    for p in packets:
        key = (p.ends, p.ip_id, p.payload)
        rank = index[0][key].index(p)
        furthest = max(k for k in range(len(NAMES)) if len(index[k][key]) > rank)
        fates.append("delivered" if furthest == len(NAMES) - 1 else causes[furthest])
    return fates


@st.composite
def chains(draw):
    """Flows with loss on either segment, reordering (random delays), repeated IP IDs (zero,
    or wrapping modulo a small number) and, sometimes, repeated payloads."""
    n = draw(st.integers(5, 60))
    id_mode = draw(st.sampled_from(["distinct", "zero", "wrap"]))
    repeat_payloads = draw(st.booleans()) and id_mode == "distinct"
    packets = []
    for i in range(n):
        t = T0 + i * 0.01
        payload = iperf3_payload(i % 4 if repeat_payloads else i, T0, size=64)
        ip_id = {"distinct": i, "zero": 0, "wrap": i % 7}[id_mode]
        p = Packet(payload, ip_id, t)
        fate = draw(st.sampled_from(["delivered"] * 4 + ["r1", "d"]))
        if fate != "r1":
            p.times[1] = t + draw(st.floats(0.001, 0.03))
            if fate != "d":
                p.times[2] = p.times[1] + draw(st.floats(0.001, 0.03))
        packets.append(p)
    packets[-1].times[1:] = [packets[-1].times[0] + 0.001, packets[-1].times[0] + 0.002]  # the flow gets through
    packets[0].times[1:] = [packets[0].times[0] + 0.001, packets[0].times[0] + 0.002]
    return packets


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(packets=chains())
def test_fates_match_the_dictionary_twin(tmp_path, packets):
    trace = read(write_chain(tmp_path, packets), payload="order")
    assert fates_by_seq(trace) == dict(enumerate(chain_fates_naive(packets)))
    delivered = trace.packets[trace.packets["fate"] == "delivered"]
    assert len(delivered) == sum(p.times[2] is not None for p in packets)


# -- hand-built chains ------------------------------------------------------------------------
def test_losses_take_the_cause_of_their_segment(tmp_path):
    trace = read(write_chain(tmp_path, iperf_chain(50, lost1={3, 4, 20}, lost2={10, 30, 31})))
    fates = fates_by_seq(trace)
    assert [s for s, f in fates.items() if f == "wireless"] == [3, 4, 20]
    assert [s for s, f in fates.items() if f == "congestion"] == [10, 30, 31]
    assert trace.meta["segments"] == [
        {"segment": "s.pcap>r1.pcap", "cause": "wireless", "lost": 3, "unobserved": 0, "cause_unknown": 0},
        {"segment": "r1.pcap>d.pcap", "cause": "congestion", "lost": 3, "unobserved": 0, "cause_unknown": 0},
    ]
    lost = trace.packets[trace.packets["fate"] != "delivered"]
    assert sorted(lost["reason"].astype(str).unique()) == ["r1.pcap>d.pcap", "s.pcap>r1.pcap"]
    assert trace.meta["flows"][LABEL]["kind"] == "iperf3" and trace.format == "vantages"
    assert trace.path == "+".join(str(tmp_path / n) for n in NAMES)


def test_send_times_from_the_sender_and_receive_times_from_the_receiver(tmp_path):
    paths = write_chain(tmp_path, iperf_chain(20, delay=0.004))
    common = read(paths, clocks="common")
    p = common.packets
    assert (p["t_send"] == T0 + p["seq"] * 0.01).all()  # exact: ns capture times
    assert np.allclose(p["t_recv"] - p["t_send"], 0.008, atol=1e-6)  # float epoch seconds: 0.24 µs steps
    assert common.meta["clock"] == "common" and "clock_fit" not in common.meta
    separate = read(paths)
    assert np.allclose(separate.packets["t_recv"] - separate.packets["t_send"], 0.0, atol=1e-6)
    assert separate.meta["clock_fit"]["offset_s"].iloc[0] == pytest.approx(0.008, abs=1e-6)


def test_receiver_clock_skew_is_estimated_and_removed(tmp_path):
    packets = iperf_chain(400, spacing=0.05)
    for i, p in enumerate(packets):  # receiver clock: +2 s, 40 ppm fast; queueing on 2 in 3 packets
        t = p.times[0]
        p.times[2] = t + 2.0 + 40e-6 * (t - T0) + 0.003 + (0.01 if i % 3 else 0.0)
    trace = read(write_chain(tmp_path, packets))
    fit = trace.meta["clock_fit"].iloc[0]
    assert fit["skew_ppm"] == pytest.approx(40, abs=0.05) and fit["offset_s"] == pytest.approx(2.003, abs=1e-6)
    owd = trace.packets["t_recv"] - trace.packets["t_send"]
    assert owd.min() == pytest.approx(0, abs=2e-6) and owd.max() == pytest.approx(0.01, abs=2e-6)
    assert trace.meta["vantages"][2]["skew_ppm"] == pytest.approx(40, abs=0.05)
    statuses = [v["skew_status"] for v in trace.meta["vantages"]]
    assert statuses == ["the reference clock", "not applied: only the receiver's clock is corrected", "applied"]


def test_every_printed_clock_fit_says_whether_it_was_applied(tmp_path, capsys):
    """A queue filling over the trace tilts the receiver's fit beyond drift: the capture table
    must say that its fitted skew was not applied, as the per-flow table does."""
    packets = iperf_chain(200, spacing=0.01)
    for i, p in enumerate(packets):
        p.times[2] = p.times[0] + 0.003 + 0.0004 * i  # 40 ms per second of queue growth
    paths = write_chain(tmp_path, packets)
    trace = read(paths)
    assert trace.meta["vantages"][2]["skew_status"] == trace.meta["clock_fit"]["status"].iloc[0]
    assert trace.meta["vantages"][2]["skew_status"].startswith("not applied: beyond")
    assert read(paths, clocks="common").meta["vantages"][2]["skew_status"] == "not applied: one common clock"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["inspect", *(arg for path in paths for arg in ("--vantage", str(path)))]) == 0
    table = capsys.readouterr().out.split("captures along the path")[1].split("losses per segment")[0]
    assert "skew_status" in table and "not applied: beyond" in table


def test_acknowledgements_travelling_back_check_the_skew_both_ways(tmp_path):
    """The receiver's clock runs 40 ppm fast: forward delays rise and the acknowledgements'
    delays (sender's capture minus receiver's) fall by as much, so both directions agree;
    with a queue filling slowly on the forward path only, they disagree and nothing is applied."""
    back = Endpoints(proto="udp", src="10.0.0.2", dst="10.0.0.1", sport=5201, dport=40000)

    def chain(forward_trend):
        packets = iperf_chain(400, spacing=0.05)
        for i, p in enumerate(packets):
            t = p.times[0]
            p.times[2] = t + 2.0 + (40e-6 + forward_trend) * (t - T0) + 0.003 + (0.01 if i % 3 else 0.0)
        for i in range(200):
            t = T0 + 0.01 + i * 0.1
            p = Packet(iperf3_payload(i, t, size=64), 2000 + i, t, back, ttls=(62, 63, 64))
            p.times = [t + 0.003 + (0.004 if i % 2 else 0.0), None, t + 2.0 + 40e-6 * (t - T0)]
            packets.append(p)
        return write_chain(tmp_path, packets)

    fit = read(chain(0.0)).meta["clock_fit"].iloc[0]
    assert (fit["forward_ppm"], fit["reverse_ppm"]) == (pytest.approx(40, abs=0.1), pytest.approx(40, abs=0.1))
    assert fit["reverse_samples"] == 200 and fit["status"] == "applied"
    fit = read(chain(60e-6)).meta["clock_fit"].iloc[0]
    assert fit["forward_ppm"] == pytest.approx(100, abs=0.1) and fit["status"].startswith("not applied: the directions")


def test_packets_outside_a_capture_window_are_unobserved(tmp_path):
    """d stops capturing after packet 39's arrival: later packets missing there are
    unobserved, not lost; r1 starts capturing at packet 5: earlier packets missing there too.
    A packet missing at r1 inside its window (20) is lost; one missing at r1 but seen at d
    (packet 2, before r1's window) is delivered, and r1's miss is counted."""
    packets = iperf_chain(50, lost1={20})
    for p in packets[40:]:
        p.times[2] = None
    for p in packets[:5]:
        p.times[1] = None
    packets[3].times[2] = None
    packets[4].times[2] = None
    with pytest.warns(CaptureWarning, match="r1.pcap: 3 packet\\(s\\) seen further down the path are missing"):
        trace = read_vantages(
            write_chain(tmp_path, packets)[:1]
            + [Vantage(str(tmp_path / "r1.pcap"), "wireless"), Vantage(str(tmp_path / "d.pcap"), "congestion")]
        )
    fates = fates_by_seq(trace)
    assert [s for s, f in fates.items() if f == "unobserved"] == [3, 4, *range(40, 50)]
    assert [s for s, f in fates.items() if f in ("wireless", "congestion", "lost")] == [20]
    assert fates[2] == "delivered" and trace.meta["vantages"][1]["missed"] == 3


def test_acknowledgements_travelling_back_are_left_out(tmp_path):
    back = Endpoints(proto="udp", src="10.0.0.2", dst="10.0.0.1", sport=5201, dport=40000)
    packets = iperf_chain(20)
    for i in range(10):  # seen at d first (TTL 64 there), then r1, then s
        t = T0 + 0.005 + i * 0.02
        p = Packet(iperf3_payload(i, t, size=64), 1000 + i, t, back, ttls=(62, 63, 64))
        p.times = [t + 0.004, t + 0.002, t]
        packets.append(p)
    paths = write_chain(tmp_path, packets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_vantages(paths)
    assert trace.flows == [LABEL]
    assert "TTL grows" in trace.meta["skipped_flows"]["10.0.0.2:5201>10.0.0.1:40000/udp"]
    with pytest.raises(UsageError, match="travels from .* towards"):
        read_vantages(paths, flows=["10.0.0.2:5201>10.0.0.1:40000/udp"])


def test_vantages_in_reverse_order_are_refused(tmp_path):
    with pytest.raises(UsageError, match="give the vantages in path order"):
        read_vantages(write_chain(tmp_path, iperf_chain(10))[::-1])


def test_other_traffic_at_the_sender_is_left_out(tmp_path):
    dns = Endpoints(proto="udp", src="10.0.0.1", dst="10.9.9.9", sport=5353, dport=53)
    packets = iperf_chain(20)
    for i in range(5):
        p = Packet(b"query %d" % i, 500 + i, T0 + i * 0.03, dns)
        packets.append(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_vantages(write_chain(tmp_path, packets))
    assert trace.flows == [LABEL]
    assert trace.meta["skipped_flows"]["10.0.0.1:5353>10.9.9.9:53/udp"] == "never reaches " + str(tmp_path / "d.pcap")


def test_repeated_packets_are_matched_in_order_and_counted(tmp_path):
    """IP ID 0 and one payload for every packet of a flow: nothing tells them apart but their
    order, so the two lost copies (1 and 2) are charged to the last two (4 and 5). A later
    packet of another flow keeps the captures' windows open."""
    same = Endpoints(proto="udp", src="10.0.0.1", dst="10.0.0.2", sport=7, dport=7)
    packets = [Packet(b"same", 0, T0 + i * 0.01, same) for i in range(6)] + iperf_chain(1)
    packets[-1].times = [T0 + 1.0, T0 + 1.001, T0 + 1.002]
    for p in packets[:6]:
        if p not in packets[1:3]:
            p.times[1:] = [p.times[0] + 0.001, p.times[0] + 0.002]
    with pytest.warns(CaptureWarning, match="6 packets share flow, IP ID and payload"):
        trace = read_vantages(write_chain(tmp_path, packets), payload="order", clocks="common")
    assert trace.meta["vantages"][0]["ambiguous"] == 6
    assert list(fates_by_seq(trace, "10.0.0.1:7>10.0.0.2:7/udp").values()) == ["delivered"] * 4 + ["lost"] * 2


def test_duplicated_packets_downstream_are_unmatched(tmp_path):
    packets = iperf_chain(10)
    extra = [(2, Record(int((T0 + 0.5) * 1e9), link_frame(1, ip_packet(FLOW, packets[4].payload, ip_id=4, ttl=62))))]
    with pytest.warns(CaptureWarning, match="d.pcap: 1 packet\\(s\\) of the sender's flows were never seen"):
        trace = read_vantages(write_chain(tmp_path, packets, extra=extra))
    assert [v["unmatched"] for v in trace.meta["vantages"]] == [0, 0, 1]
    assert (trace.packets["fate"] == "delivered").all()


def test_ipv6_flows_match_by_payload(tmp_path):
    ends = Endpoints(ip_ver=6, proto="udp", src="2001:db8::1", dst="2001:db8::2", sport=40000, dport=5201)
    packets = [Packet(iperf3_payload(i, T0 + i * 0.01, size=64), 0, T0 + i * 0.01, ends) for i in range(12)]
    for i, p in enumerate(packets):
        if i != 5:
            p.times[1:] = [p.times[0] + 0.001, None if i == 8 else p.times[0] + 0.002]
    trace = read(write_chain(tmp_path, packets))
    assert fates_by_seq(trace, "[2001:db8::1]:40000>[2001:db8::2]:5201/udp") == {
        i: {5: "wireless", 8: "congestion"}.get(i, "delivered") for i in range(12)
    }


def test_tcp_retransmissions_are_transmissions_of_their_segment(tmp_path):
    tcp = Endpoints(proto="tcp", src="10.0.0.1", dst="10.0.0.2", sport=40000, dport=80)
    packets = []
    for k, (seq, ip_id) in enumerate([(0, 1), (1000, 2), (2000, 3), (1000, 4)]):  # segment 1 resent
        t = T0 + k * 0.01
        p = Packet(bytes([k]) * 1000, ip_id, t, tcp)
        p.times[1:] = [t + 0.001, t + 0.002]
        p.tcp_seq = seq
        packets.append(p)
    packets[1].times[1:] = [None, None]
    records = defaultdict(list)
    for p in packets:
        for k, t in enumerate(p.times):
            if t is not None:
                frame = link_frame(1, ip_packet(tcp, p.payload, ip_id=p.ip_id, ttl=64 - k, tcp_seq=p.tcp_seq))
                records[k].append(Record(int(round(t * 1e9)), frame))
    paths = []
    for k, name in enumerate(NAMES):
        write_pcap(tmp_path / name, records[k], 1)
        paths.append(str(tmp_path / name))
    trace = read(paths)
    rows = trace.packets[["seq", "tx", "fate"]].astype({"fate": str}).values.tolist()
    assert rows == [[0, 0, "delivered"], [1, 0, "wireless"], [2, 0, "delivered"], [1, 1, "delivered"]]


def test_a_capture_of_other_packets_is_an_error(tmp_path):
    paths = write_chain(tmp_path, iperf_chain(10))
    other = Endpoints(proto="udp", src="10.1.0.1", dst="10.1.0.2", sport=1, dport=2)
    write_pcap(tmp_path / "other.pcap", [Record(int(T0 * 1e9), link_frame(1, ip_packet(other, b"x")))], 1)
    for chain in ([paths[0], str(tmp_path / "other.pcap"), paths[2]], [paths[0], str(tmp_path / "other.pcap")]):
        with pytest.raises(TraceError, match=r"other.pcap: none of the 10 packets of .*s.pcap's flows appear in it"):
            read_vantages(chain)


def test_vantage_syntax(tmp_path):
    assert parse_vantage("a.pcap") == Vantage("a.pcap", "lost")
    assert parse_vantage("a.pcap:wireless") == Vantage("a.pcap", "wireless")
    assert parse_vantage("a.pcap:congestion") == Vantage("a.pcap", "congestion")
    assert parse_vantage("a.pcap:unknown") == Vantage("a.pcap", "lost")
    assert parse_vantage("a.pcap:Wireless") == Vantage("a.pcap", "wireless")
    odd = tmp_path / "at:10h.pcap"
    odd.write_bytes(b"")
    assert parse_vantage(str(odd)) == Vantage(str(odd), "lost")
    with pytest.raises(UsageError, match="unknown cause 'wirless'"):
        parse_vantage("r1.pcap:wirless")
    with pytest.raises(UsageError, match="cause must be"):
        Vantage("a.pcap", "radio")
    with pytest.raises(UsageError, match="at least two captures"):
        read_vantages(["a.pcap"])
    with pytest.raises(UsageError, match="is the sender's capture: no segment ends there"):
        read_vantages(["s.pcap:wireless", "d.pcap"])
    with pytest.raises(UsageError, match="clocks must be"):
        read_vantages(["a.pcap", "b.pcap"], clocks="ntp")
    with pytest.raises(TraceError, match=os.path.basename("missing.pcap")):
        read_vantages([str(tmp_path / "missing.pcap"), str(tmp_path / "missing2.pcap")])
