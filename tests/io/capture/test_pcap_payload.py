"""Where sequence numbers and send times come from (issue 5, section 2), for one-point captures.

Hand-computed cases pin RTP (wrap of the sequence number and of the timestamp, clock rates
given, static or inferred), iperf3 and iperf2 (32- and 64-bit counters), TCP (segment
numbering, retransmissions, TSval) and generic field specs, at the receiver and at the
sender. Flows drawn by hypothesis (loss, reordering, duplicates, wrap-around) are held to the
ground truth they were built from and to the plain receiver twin (``tests/naive/capture.py``).
"""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldanalyze.clocks import ClockWarning
from ldanalyze.errors import TraceError, UsageError
from ldanalyze.io.capture.clockrate import SPAN, ClockRates
from ldanalyze.io.capture.fields import Field, FieldSpec
from ldanalyze.io.capture.pcap import read_capture
from ldanalyze.io.capture.sequences import repeats
from ldanalyze.io.capture.tcp import segment_index
from ldanalyze.packets import validate_packets
from ldanalyze.report.inspect_text import send_time_source
from ldanalyze.timeline import build_timeline

from ...naive import capture as naive_capture
from ...support.captures import (
    T0,
    Endpoints,
    Iface,
    Record,
    expected_lost,
    ip_packet,
    iperf2_payload,
    iperf3_payload,
    link_frame,
    media_flows,
    pcapng_bytes,
    rtp_payload,
    write_pcap,
)

NS = T0 * 10**9
UDP = Endpoints()
LABEL = "10.0.0.1:5004>10.0.0.2:6000/udp"


def capture_of(tmp_path, payloads_at, ends=UDP, name="c.pcap", linktype=1):
    """A pcap of one flow: (capture time ns, payload) pairs."""
    path = tmp_path / name
    write_pcap(
        path,
        [Record(ns, link_frame(linktype, ip_packet(ends, p, ip_id=k))) for k, (ns, p) in enumerate(payloads_at)],
        linktype,
    )
    return path


def read(path, **options):
    """The capture as read, receive times as captured (these tests pin the raw decoding; the
    skew removal has tests of its own)."""
    options.setdefault("skew", "keep")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_capture(path, **options)
    validate_packets(trace.packets)
    return trace


def rows(trace, flow=LABEL):
    p = trace.packets
    return p[p["flow"] == flow].reset_index(drop=True)


# -- RTP ---------------------------------------------------------------------------------------
def test_rtp_sequence_and_timestamp_wrap(tmp_path):
    seqs = [65530, 65531, 65532, 65533, 65535, 0, 1, 3, 4]  # 65534 and 2 lost (65538 unwrapped)
    first_ts = 2**32 - 480  # wraps after three packets
    k_of = {s: (s - 65530) % 65536 for s in seqs}
    payloads = [(NS + 20_000_000 * k_of[s] + 5_000_000, rtp_payload(s, first_ts + 160 * k_of[s], 0xABC)) for s in seqs]
    trace = read(capture_of(tmp_path, payloads))
    r = rows(trace)
    delivered, lost = r[r["fate"] == "delivered"], r[r["fate"] == "lost"]
    assert delivered["seq"].tolist() == [65530, 65531, 65532, 65533, 65535, 65536, 65537, 65539, 65540]
    assert lost["seq"].tolist() == [65534, 65538] and lost["reason"].tolist() == ["seq-gap"] * 2
    assert lost["t_recv"].isna().all() and (lost["size"] == 20 + 8 + 172).all()
    # the sender clock: unwrapped timestamp / 8000 Hz (payload type 0)
    assert delivered["t_send"].iloc[0] == pytest.approx((2**32 - 480) / 8000, abs=1e-9)
    assert np.diff(r.sort_values("seq")["t_send"]).tolist() == pytest.approx([0.02] * 10, abs=1e-9)
    assert delivered["t_recv"].iloc[-1] == pytest.approx(T0 + 0.205, abs=1e-6)
    info = trace.meta["flows"][LABEL]
    assert (info["kind"], info["clock_rate"], info["clock_source"], info["lost"]) == ("rtp", 8000.0, "payload type", 2)
    assert trace.meta["clock"] == "separate" and trace.rtt.empty and trace.format == "pcap"


def video(tmp_path, rate, pt=96, frames=40, per_frame=3, name="v.pcap"):
    """RTP video: ``per_frame`` packets share each frame's timestamp; 25 frames/s."""
    payloads, seq = [], 100
    for f in range(frames):
        for _ in range(per_frame):
            at = NS + f * 40_000_000 + (seq % per_frame) * 1_000_000 + (seq * 7919) % 300_000
            payloads.append((at, rtp_payload(seq, 5000 + round(f * 0.04 * rate), 77, pt=pt, size=1000)))
            seq += 1
    return capture_of(tmp_path, payloads, name=name)


@pytest.mark.parametrize(
    "rate, pt, expected, source",
    [
        (90000, 96, 90000.0, "inferred"),
        (48000, 111, 48000.0, "inferred"),
        (90000, 26, 90000.0, "payload type"),  # JPEG: static 90 kHz
        (50000, 26, 90000.0, "payload type"),  # a static type's rate is the RFC's, whatever the data say
        (12345, 96, pytest.approx(12345, rel=2e-3), "inferred (not a usual rate)"),
    ],
)
def test_rtp_clock_rate_inferred_and_snapped(tmp_path, rate, pt, expected, source):
    trace = read(video(tmp_path, rate, pt))
    info = trace.meta["flows"][LABEL]
    assert info["clock_rate"] == expected and info["clock_source"] == source
    d = rows(trace)
    assert d["t_send"].max() - d["t_send"].min() == pytest.approx(39 * 0.04 * rate / info["clock_rate"], rel=3e-3)


def test_rtp_clock_rate_given_is_used_and_warned_of_where_the_stream_disagrees(tmp_path):
    """88 kHz given for a 90 kHz stream is taken silently (0.98 of what the stream shows); 45 kHz,
    half of it, is used too, with a warning that shows the stream's evidence (``CONTRADICTING``:
    0.8-1.25 of both its envelope's and its whole span's rate) and the rate it suggests."""
    path = video(tmp_path, 90000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClockWarning)
        trace = read_capture(path, clock_rate=88000, skew="keep")
    assert trace.meta["flows"][LABEL]["clock_source"] == "given"
    frame_sent = rows(trace).groupby((rows(trace)["seq"] - 100) // 3)["t_send"].min()  # per frame: its first
    assert frame_sent.max() - frame_sent.min() == pytest.approx(39 * 0.04 * 90000 / 88000)
    with pytest.warns(
        ClockWarning,
        match=r"clock rate 45000 Hz given for stream .* is used, but its clock advances (89,9\d\d|90,0\d\d) ticks"
        r".*--clock-rate 0x0000004d=90000",
    ):
        halved = read_capture(path, clock_rate=45000, skew="keep")
    info = halved.meta["flows"][LABEL]
    assert (info["clock_rate"], info["clock_source"]) == (45000, "given") and "is used" in info["clock_given_disagrees"]
    sent = rows(halved)["t_send"]
    assert sent.max() - sent.min() == pytest.approx(2 * (frame_sent.max() - frame_sent.min()) * 88000 / 90000, rel=0.01)


def limiter_call(tmp_path, rate=48000, seconds=60, depth=5.0):
    """A 20 ms audio stream at ``rate`` Hz through a limiter with a deep queue: the capture opens
    with ``depth`` seconds queued, the queue drains over 10 s, fills again over the next 20 s and
    stays full to the end. The lower envelope then runs from the emptiest moment to the last
    packet, 10 % steeper than the clock (read as 43.6 kHz, within 2 % of 44.1 kHz); the whole
    span, full queue to full queue, reads 48 kHz."""
    payloads = []
    for k in range(int(seconds / 0.02)):
        sent = k * 0.02
        delay = depth * (1 - sent / 10 if sent < 10 else min(1.0, (sent - 10) / 20))
        payloads.append(
            (NS + round((sent + 0.01 + delay) * 1e9), rtp_payload(k, 960 * k * rate // 48000, 0x4D, pt=111))
        )
    payloads.sort(key=lambda p: p[0])
    return capture_of(tmp_path, payloads)


def test_rtp_clock_rate_a_standard_media_clock_read_from_the_whole_span(tmp_path):
    """The envelope of a call whose limiter's queue fills and drains reads no usual rate; over
    the whole call the timestamps advance 48,000 a second, a standard media clock within
    ``SPAN_TOLERANCE``: that rate is taken, and the reading says which estimate it was."""
    info = read(limiter_call(tmp_path)).meta["flows"][LABEL]
    assert (info["clock_rate"], info["clock_source"]) == (48000, SPAN)
    assert info["clock_envelope_rate"] == pytest.approx(48000 / 1.1, rel=0.01)  # the envelope alone misleads
    assert "lower envelope read" in send_time_source(info)
    # a clock whose whole span is within no tolerance of a standard rate stays as the envelope read it
    odd = read(limiter_call(tmp_path, rate=37000, depth=0.001)).meta["flows"][LABEL]
    assert odd["clock_source"] == "inferred (not a usual rate)" and odd["clock_rate"] == pytest.approx(37000, rel=1e-3)


def test_a_given_rate_the_whole_span_supports_is_taken_without_a_warning(tmp_path):
    """The issue's call: 48 kHz given, the envelope reads otherwise, the span agrees: no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClockWarning)
        info = read_capture(limiter_call(tmp_path), clock_rate=48000, skew="keep").meta["flows"][LABEL]
    assert (info["clock_rate"], info["clock_source"]) == (48000, "given") and "clock_given_disagrees" not in info


def test_rtp_clock_rate_cannot_be_inferred_from_too_short_a_capture(tmp_path):
    path = capture_of(tmp_path, [(NS + k * 1000, rtp_payload(k, 3000 * k, 5, pt=96)) for k in range(4)])
    with pytest.raises(
        TraceError,
        match="too few packets over too short a time to infer the clock rate; "
        "give its clock rate \\(command line: --clock-rate HZ\\)",
    ):
        read(path, flows=[LABEL])
    assert read(path, clock_rate=90000).meta["flows"][LABEL]["clock_source"] == "given"
    # at the sender no send time is read from the payload: nothing to infer
    assert read(path, vantage="sender").meta["flows"][LABEL]["kind"] == "rtp"


def test_rtp_streams_split_by_ssrc_and_rtcp_left_out(tmp_path):
    payloads = []
    for k in range(6):
        payloads.append((NS + k * 20_000_000, rtp_payload(10 + k, 160 * k, 0x1111)))
        payloads.append((NS + k * 20_000_000 + 1000, rtp_payload(500 + k, 90 * k, 0x2222)))
    rtcp = bytes([0x80, 200]) + struct.pack(">HI", 6, 0x1111) + bytes(20)
    payloads.append((NS + 10**9, rtcp))
    trace = read(capture_of(tmp_path, payloads))
    flows = trace.meta["flows"]
    assert sorted(flows) == [f"{LABEL}/ssrc=0x00001111", f"{LABEL}/ssrc=0x00002222"]
    assert flows[f"{LABEL}/ssrc=0x00001111"]["excluded"] == {"not_rtp": 1}
    assert rows(trace, f"{LABEL}/ssrc=0x00002222")["seq"].tolist() == list(range(500, 506))
    one = read(trace.path, flows=[f"{LABEL}/ssrc=0x00002222"])  # one stream of the flow
    assert list(one.meta["flows"]) == [f"{LABEL}/ssrc=0x00002222"]


# -- iperf -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind, maker, counters64, first",
    [
        ("iperf3", iperf3_payload, False, 1),
        ("iperf3-64", iperf3_payload, True, 2**32 + 7),
        ("iperf2", iperf2_payload, False, 0),
        ("iperf2-64", iperf2_payload, True, 2**33 - 2),
    ],
)
def test_iperf_sequence_and_send_time(tmp_path, kind, maker, counters64, first):
    sent = [T0 + 10 + k * 0.001 for k in range(8)]
    keep = [0, 1, 2, 4, 5, 7]  # 3 and 6 lost
    payloads = [(NS - 10**9, struct.pack(">I", 0x36373839))]  # iperf3's UDP connect message
    payloads += [(round((sent[k] + 0.03) * 1e9), maker(first + k, sent[k], counters64=counters64)) for k in keep]
    if kind.startswith("iperf2"):  # the end-of-test datagram repeats the last id, negated
        payloads.append(
            (
                NS + 10**10,
                maker(
                    -(first + 7) & (2**64 - 1) if counters64 else -(first + 7) & 0xFFFFFFFF,
                    sent[7],
                    counters64=counters64,
                ),
            )
        )
    trace = read(capture_of(tmp_path, payloads))
    info = trace.meta["flows"][LABEL]
    assert info["kind"] == kind
    excluded = {"short_payload": 1} | ({"end_of_test": 1} if kind.startswith("iperf2") else {})
    assert info["excluded"] == excluded
    r = rows(trace).sort_values("seq")
    assert r["seq"].tolist() == [first + k for k in range(8)]
    assert r["fate"].tolist() == ["delivered"] * 3 + ["lost"] + ["delivered"] * 2 + ["lost", "delivered"]
    assert r["t_send"].tolist() == pytest.approx(sent, abs=1e-6)  # exact to the microsecond, lost ones too
    assert (r["t_recv"] - r["t_send"]).dropna().tolist() == pytest.approx([0.03] * 6, abs=1e-6)


def test_payload_kind_can_be_forced(tmp_path):
    path = capture_of(tmp_path, [(NS + k * 10**6, iperf3_payload(k + 1, T0 + k * 1e-3)) for k in range(5)])
    assert read(path, payload="iperf3").meta["flows"][LABEL]["kind"] == "iperf3"
    with pytest.raises(TraceError, match="not rtp"):
        read(path, payload="rtp", flows=[LABEL])
    with pytest.raises(TraceError, match=r"no decodable flow.* say where: --field seq=OFF:W,time=OFF:W:UNITS"):
        read(path, payload="tcp")


# -- TCP ---------------------------------------------------------------------------------------
TCP_FLOW = Endpoints(proto="tcp", sport=40000, dport=80)
TCP_LABEL = "10.0.0.1:40000>10.0.0.2:80/tcp"


def tcp_capture(tmp_path, segments, name="tcp.pcap", timestamps=True):
    """segments: (capture ms, relative byte seq, length, tsval ms); a SYN with MSS 1000 first."""
    isn = 2**32 - 1500  # the byte numbers wrap
    records = [
        Record(
            NS,
            link_frame(
                1, ip_packet(TCP_FLOW, b"", tcp_seq=isn, tcp_flags="S", mss=1000, tsval=5000 if timestamps else None)
            ),
        )
    ]
    for at, rel, length, tsval in segments:
        packet = ip_packet(
            TCP_FLOW, bytes(length), tcp_seq=(isn + 1 + rel) % 2**32, tsval=tsval if timestamps else None
        )
        records.append(Record(NS + at * 10**6, link_frame(1, packet)))
    path = tmp_path / name
    write_pcap(path, records, 1)
    return path


def test_tcp_receiver_holes_and_retransmissions(tmp_path):
    segments = [
        (10, 0, 1000, 5010),
        (11, 1000, 1000, 5011),
        (13, 3000, 1000, 5013),  # 2000 missing
        (14, 4000, 1000, 5014),
        (60, 2000, 1000, 5060),  # its retransmission, 47 ticks later
        (61, 7000, 500, 5061),  # 5000..7000 never arrives: two segments of MSS 1000
        (62, 7500, 1000, 5062),
        (63, 7500, 1000, 5062),
    ]  # a duplicate
    trace = read(tcp_capture(tmp_path, segments))
    info = trace.meta["flows"][TCP_LABEL]
    assert (info["kind"], info["mss"], info["clock_rate"], info["clock_source"]) == ("tcp", 1000, 1000.0, "inferred")
    r = rows(trace, TCP_LABEL).sort_values(["seq", "tx"])
    table = list(zip(r["seq"], r["tx"], r["fate"], r["reason"]))
    assert table == [
        (0, 0, "delivered", ""),
        (1, 0, "delivered", ""),
        (2, 0, "lost", "retransmitted"),
        (2, 1, "delivered", ""),
        (3, 0, "delivered", ""),
        (4, 0, "delivered", ""),
        (5, 0, "lost", "seq-gap"),
        (6, 0, "lost", "seq-gap"),
        (7, 0, "delivered", ""),
        (8, 0, "delivered", ""),
        (8, 1, "delivered", ""),
    ]
    lost = r[r["fate"] == "lost"].set_index("seq")["t_send"]
    assert lost.loc[2] == pytest.approx(5.012, abs=1e-9)  # between seq 1 and 3's TSval (5.011, 5.013 s)
    tl = build_timeline(trace)
    assert tl.losses.shape[0] == 3 and tl.summary()["lost"].tolist() == [3]


def test_tcp_sender_sees_retransmissions_as_transmissions(tmp_path):
    segments = [
        (10, 0, 1000, 5010),
        (11, 1000, 1000, 5011),
        (12, 2000, 1000, 5012),
        (50, 1000, 1000, 5050),
        (51, 2999, 1, 5051),
    ]  # a keep-alive: its byte was sent before
    trace = read(tcp_capture(tmp_path, segments, timestamps=False), vantage="sender")
    r = rows(trace, TCP_LABEL)
    assert list(zip(r["seq"], r["tx"])) == [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1)]
    assert (r["fate"] == "unobserved").all() and r["t_recv"].isna().all()
    # float seconds since the epoch resolve 0.24 µs; records["ts_ns"] keeps the nanoseconds
    assert r["t_send"].tolist() == pytest.approx([T0 + x / 1000 for x in (10, 11, 12, 50, 51)], abs=1e-6)


def test_tcp_acknowledgements_are_skipped_quietly(tmp_path):
    path = tcp_capture(tmp_path, [(10, 0, 1000, 5010), (40, 1000, 1000, 5040), (70, 2000, 1000, 5070)])
    back = Endpoints(proto="tcp", src="10.0.0.2", dst="10.0.0.1", sport=80, dport=40000)
    records = [Record(NS + k * 10**6, link_frame(1, ip_packet(back, b"", tcp_flags="A", tsval=k))) for k in range(3)]
    data = path.read_bytes() + b"".join(
        struct.pack("<IIII", r.ts_ns // 10**9, r.ts_ns % 10**9, len(r.frame), len(r.frame)) + r.frame for r in records
    )
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = read_capture(path)
    assert list(trace.meta["flows"]) == [TCP_LABEL]
    assert trace.meta["skipped_flows"] == {
        "10.0.0.2:80>10.0.0.1:40000/tcp": f"no TCP payload (acknowledgements only) (first packet at byte "
        f"{len(data) - 3 * (16 + len(records[0].frame))})"
    }


def test_tcp_ports_reused_by_a_second_connection(tmp_path):
    first = tcp_capture(tmp_path, [(10 + 30 * k, 1000 * k, 1000, 5010 + 30 * k) for k in range(4)], name="a.pcap")
    later = ip_packet(TCP_FLOW, bytes(1000), tcp_seq=2**31, tsval=9000)
    data = (
        first.read_bytes()
        + struct.pack("<IIII", T0 + 5, 0, len(bytes(link_frame(1, later))), len(bytes(link_frame(1, later))))
        + link_frame(1, later)
    )
    first.write_bytes(data)
    with pytest.raises(
        TraceError, match="segment numbers: only 75% of the steps between consecutive packets are small"
    ):
        read(first, flows=[TCP_LABEL])


def test_tcp_without_timestamps_has_no_sender_clock(tmp_path):
    path = tcp_capture(tmp_path, [(10, 0, 1000, 0), (11, 1000, 1000, 0)], timestamps=False)
    with pytest.raises(TraceError, match="2 of 2 data segments carry no TCP timestamps option: no sender clock"):
        read(path, flows=[TCP_LABEL])


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.integers(-5, 40), max_size=60), rising=st.booleans())
def test_repeats_counts_what_np_unique_drops(values, rising):
    seq = np.array(sorted(set(values)) if rising else values, np.int64)
    assert repeats(seq) == seq.shape[0] - np.unique(seq).shape[0]


def test_segment_index_by_hand():
    start = np.array([0, 1000, 2000, 5000, 5500, 6000, 9000])
    length = np.array([1000, 1000, 1000, 1000, 200, 1000, 1000])
    # 5000: 2000 bytes missing before it (2 segments); 5500 lies inside 5000's bytes; 9000: 2000 missing
    assert segment_index(start, length, 1000).tolist() == [0, 1, 2, 5, 5, 6, 9]
    assert segment_index(np.array([2500]), np.array([100]), 1000).tolist() == [3]  # capture began late


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from([100, 500, 1000, 1])), min_size=1, max_size=25),
    st.sampled_from([100, 500, 1000]),
)
def test_segment_index_agrees_with_the_twin(segments, mss):
    segments = [(s * 250, n) for s, n in segments]
    start = np.array(sorted({s for s, _ in segments}))
    length = np.array([max(n for t, n in segments if t == s) for s in start])
    got = dict(zip(start.tolist(), segment_index(start, length, mss).tolist()))
    assert [got[s] for s, _ in segments] == naive_capture.tcp_segment_numbers_naive(segments, mss)


# -- generic field specs -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "units, encode, scale",
    [
        ("ms", lambda t: struct.pack(">Q", round(t * 1e3)), 1e-3),
        ("ntp", lambda t: struct.pack(">II", int(t), round((t % 1) * 2**32)), None),
        ("sec+nsec", lambda t: struct.pack(">II", int(t), round((t % 1) * 1e9)), None),
        (1e5, lambda t: struct.pack(">Q", round(t * 1e5)), 1e-5),
    ],
)
def test_generic_field_spec(tmp_path, units, encode, scale):
    spec = FieldSpec(seq=Field(10, 2, "little"), send_time=Field(2, 8), time_units=units, name="mine")
    sent = [T0 + 1.25 + 0.01 * k for k in range(5)]
    payloads = [
        (NS + 2 * 10**9 + k * 10**7, b"\xee\xee" + encode(sent[k]) + struct.pack("<H", (65534 + k) % 65536) + bytes(8))
        for k in (0, 1, 3, 4)
    ]
    trace = read(capture_of(tmp_path, payloads), payload=spec)
    r = rows(trace).sort_values("seq")
    assert r["seq"].tolist() == [65534, 65535, 65536, 65537, 65538]  # 2-byte counter unwrapped
    assert r["fate"].tolist() == ["delivered", "delivered", "lost", "delivered", "delivered"]
    assert r["t_send"].tolist() == pytest.approx(sent, abs=1e-6)
    assert trace.meta["payload"] == "mine" and trace.meta["flows"][LABEL]["kind"] == "mine"


def test_field_spec_checks_its_arguments():
    with pytest.raises(UsageError, match="1, 2, 4 or 8 bytes wide"):
        Field(0, 3)
    with pytest.raises(UsageError, match="'big' or 'little'"):
        Field(0, 2, "middle")
    with pytest.raises(UsageError, match="unknown time units 'minutes'"):
        FieldSpec(Field(0, 4), Field(4, 4), "minutes")
    with pytest.raises(UsageError, match="need an 8-byte send_time field"):
        FieldSpec(Field(0, 4), Field(4, 4), "sec+usec")


def test_field_spec_reaching_past_the_default_head(tmp_path):
    spec = FieldSpec(seq=Field(30, 4), send_time=Field(34, 4), time_units="ms")
    payloads = [(NS + k * 10**6, bytes(30) + struct.pack(">II", k, 1000 + k)) for k in range(4)]
    assert rows(read(capture_of(tmp_path, payloads), payload=spec))["seq"].tolist() == [0, 1, 2, 3]


# -- vantage and options -----------------------------------------------------------------------
def test_sender_vantage(tmp_path):
    payloads = [(NS + k * 20_000_000, rtp_payload(k, 160 * k, 9)) for k in (0, 1, 2, 4, 5)]
    trace = read(capture_of(tmp_path, payloads), vantage="sender")
    r = rows(trace)
    assert r["seq"].tolist() == [0, 1, 2, 4, 5]  # what was not captured is not invented
    assert (r["fate"] == "unobserved").all() and r["t_recv"].isna().all()
    assert r["t_send"].tolist() == pytest.approx([T0 + 0.02 * k for k in (0, 1, 2, 4, 5)], abs=1e-6)
    assert trace.meta["vantage"] == "sender"


def test_bad_options(tmp_path):
    path = capture_of(tmp_path, [(NS + k, rtp_payload(k, 160 * k, 9)) for k in range(3)])
    with pytest.raises(UsageError, match="vantage must be one of"):
        read(path, vantage="middle")
    with pytest.raises(UsageError, match="payload must be a FieldSpec or one of"):
        read(path, payload="quic")
    with pytest.raises(UsageError, match=r"has no flow 'nope' \(flows: 10.0.0.1:5004>10.0.0.2:6000/udp\)"):
        read(path, flows=["nope"])
    with pytest.raises(UsageError, match="clock rate 0: give a positive number of Hz"):
        read(path, clock_rate=0)


def test_packets_without_timestamps_cannot_make_a_trace(tmp_path):
    frames = [link_frame(1, ip_packet(UDP, rtp_payload(k, 160 * k, 3))) for k in range(4)]
    path = tmp_path / "spb.pcapng"
    path.write_bytes(
        pcapng_bytes(
            [
                (
                    [Iface(1)],
                    [("epb", 0, 10**6 * T0 + k, Record(0, f)) for k, f in enumerate(frames[:3])]
                    + [("spb", Record(0, frames[3]))],
                )
            ]
        )
    )
    spb_at = len(pcapng_bytes([([Iface(1)], [("epb", 0, 0, Record(0, f)) for f in frames[:3]])]))
    with pytest.raises(TraceError, match="1 packets come from simple packet blocks, which carry no timestamp") as info:
        read(path, vantage="sender")
    assert info.value.offset == spb_at


def test_snaplen_cut_payloads_are_counted(tmp_path):
    records = [
        Record(
            NS + k * 20_000_000,
            link_frame(1, ip_packet(UDP, rtp_payload(k, 160 * k, 9))),
            snaplen=None if k != 2 else 14 + 28 + 6,
        )
        for k in range(5)
    ]
    path = tmp_path / "cut.pcap"
    write_pcap(path, records, 1)
    trace = read(path)
    assert trace.meta["flows"][LABEL]["excluded"] == {"cut_by_snaplen": 1}


# -- generated flows ---------------------------------------------------------------------------
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(flow=media_flows(), linktype=st.sampled_from([1, 113, 276, 101]))
def test_generated_flows_against_truth_and_twin(tmp_path_factory, flow, linktype):
    path = tmp_path_factory.mktemp("flow") / "f.pcap"
    write_pcap(path, flow.records(linktype), linktype)
    trace = read(path, clock_rate=flow.rate if flow.kind == "rtp" else None)
    label = f"10.0.0.1:{flow.ends.sport}>10.0.0.2:6000/udp"
    assert trace.meta["flows"][label]["kind"] == flow.kind
    r = rows(trace, label)
    delivered = r[r["fate"] == "delivered"].sort_values(["t_recv", "uid"])
    assert sorted(delivered["seq"]) == sorted(flow.seqs[i] for i in flow.arrivals)
    assert r.loc[r["fate"] == "lost", "seq"].tolist() == expected_lost(flow)
    # send times: exact for iperf (µs), RTP up to its own origin and one tick
    sent = {flow.seqs[i]: flow.sent[i] for i in flow.arrivals}
    offset = 0.0 if flow.kind != "rtp" else delivered["t_send"].min() - min(sent.values())
    for seq, t_send in zip(delivered["seq"], delivered["t_send"]):
        assert math.isclose(t_send - offset, sent[seq], abs_tol=1e-6 if flow.kind != "rtp" else 1.5 / flow.rate)
    # the receiver twin, from the arrivals as the reader saw them
    arrivals = list(zip(delivered["seq"], delivered["t_send"], delivered["t_recv"], delivered["size"]))
    twin = [x for x in naive_capture.receiver_rows_naive(arrivals) if x["fate"] == "lost"]
    lost = r[r["fate"] == "lost"]
    assert lost["seq"].tolist() == [x["seq"] for x in twin]
    assert lost["t_send"].tolist() == pytest.approx([x["t_send"] for x in twin], abs=1e-9)
    assert lost["size"].tolist() == [x["size"] for x in twin]
    tl = build_timeline(trace)
    assert int(tl.summary()["lost"].sum()) == len(expected_lost(flow))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 4), st.integers(0, 3), st.integers(0, 255)), max_size=60))
def test_flow_ttls_match_the_twin(rows):
    """Packets by flow and TTL, of the decoded records only."""
    from ldanalyze.io.capture.flows import flow_ttls
    from ldanalyze.io.capture.record import S_DECODED, record_dtype

    records = np.zeros(len(rows), record_dtype(16))
    statuses = [S_DECODED + r[1] for r in rows]
    records["flow"], records["status"], records["ttl"] = [r[0] for r in rows], statuses, [r[2] for r in rows]
    expected = naive_capture.flow_ttls([r[0] for r in rows], statuses, [r[2] for r in rows], 5, S_DECODED)
    assert flow_ttls(records, 5).tolist() == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 6), st.integers(0, 2)), max_size=80))
def test_rows_by_flow_match_a_stable_argsort(rows):
    """Decoded records with a flow (-1: none), grouped by flow in record order."""
    from ldanalyze.io.capture.flows import _rows_by_flow
    from ldanalyze.io.capture.record import S_DECODED

    flow = np.array([r[0] for r in rows], np.int32)
    status = np.array([S_DECODED + r[1] for r in rows], np.uint8)
    order, starts = _rows_by_flow(flow, status, S_DECODED)
    decoded = np.flatnonzero((status == S_DECODED) & (flow >= 0))
    expected = decoded[np.argsort(flow[decoded], kind="stable")]
    assert order.tolist() == expected.tolist()
    assert np.diff(starts).tolist() == np.bincount(flow[decoded], minlength=starts.shape[0] - 1).tolist()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.integers(1, 64), st.data())
def test_gather_rows_is_plain_indexing(n, head_bytes, data):
    """The head's bytes gathered as one item a row equal numpy's own fancy indexing, for any
    head width, empty selections and repeated rows; one-value fields are indexed as ever."""
    from ldanalyze.io.capture.flows import gather_rows
    from ldanalyze.io.capture.record import record_dtype

    records = np.zeros(n, record_dtype(head_bytes))
    records["head"] = np.arange(n * head_bytes, dtype=np.int64).reshape(n, head_bytes) % 251
    records["payload_len"] = np.arange(n)
    rows = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=20 if n else 0)), np.int64)
    for field in ("head", "payload_len"):
        got = gather_rows(records[field], rows)
        assert got.dtype == records[field].dtype and np.array_equal(got, records[field][rows])
        assert got.flags["C_CONTIGUOUS"]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 30),
    st.integers(1, 24),
    st.sampled_from((1, 2, 4, 8)),
    st.sampled_from(("big", "little")),
    st.booleans(),
    st.data(),
)
def test_field_read_is_the_plain_twin(n, head_bytes, width, order, signed, data):
    """A field read in place from the records' strided heads equals the plain one-row-at-a-time
    twin, for every width, byte order and sign (8 bytes unsigned: wrapped into int64, as the
    timeline's integers are); a field beyond the bytes kept is refused."""
    from ldanalyze.io.capture.record import record_dtype

    records = np.zeros(n, record_dtype(head_bytes))
    records["head"] = np.array(
        data.draw(st.lists(st.integers(0, 255), min_size=n * head_bytes, max_size=n * head_bytes)), np.uint8
    ).reshape(n, head_bytes)
    offset = data.draw(st.integers(0, head_bytes))
    field = Field(offset, width, order, signed)
    if offset + width > head_bytes:
        with pytest.raises(IndexError, match="beyond"):
            field.read(records["head"])
        return
    expected = [
        v - (1 << 64) if v >= 1 << 63 else v
        for v in naive_capture.read_field(records["head"].tolist(), offset, width, order, signed)
    ]
    for head in (records["head"], np.ascontiguousarray(records["head"])):
        got = field.read(head)
        assert got.dtype == np.int64 and got.tolist() == expected


def test_clock_rates_pick_a_stream_s_own_by_ssrc_then_payload_type_then_label():
    rates = ClockRates.parse("0x1=8000, 96=90000, a>b/udp=48000")
    assert rates.of("x", ssrc=1, payload_type=96) == 8000
    assert rates.of("x", ssrc=2, payload_type=96) == 90000
    assert rates.of("a>b/udp") == 48000 and rates.of("c", ssrc=2, payload_type=0) is None
    assert ClockRates.parse(90000).of("c", ssrc=5) == 90000 == ClockRates.parse("90000").every
    assert ClockRates.parse({"0xABC": 1000}).of("t", ssrc=0xABC) == 1000
    for bad in ("0", "-8000", "nan", "96=", "=8000", "90000,96=8000", "96=8000, 90000"):
        with pytest.raises(UsageError):
            ClockRates.parse(bad)
