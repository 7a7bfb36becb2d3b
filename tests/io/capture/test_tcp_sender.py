"""TCP read at its sender (issue #44 §1): the kernel of io/capture/tcp_sender.py against its plain
twin on generated connections, hand-computed cases pinning each rule at its boundary, and the
reading of whole captures (offload, one direction only, a mixed table, the window scale).

A script here is one connection in segments of 100 bytes: ``("tx", t, k)`` sends segment k (its
TSval the time in ms), ``("ack", t, k, blocks, tsecr)`` acknowledges below segment k with SACK
blocks ``[(first, end), ...]`` in segments and a TSecr (None: no timestamps option). With
``holes``, a segment never sent is empty, as ``Connection`` makes the bytes a capture missed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldanalyze.errors import TraceError
from ldanalyze.io.capture import tcp_sender
from ldanalyze.io.capture.pcap import decode_capture, read_capture
from ldanalyze.io.capture.tcp_sender_kernel import EVIDENCE, TRIGGERS, sender_kernel
from ldanalyze.packets import validate_packets

from ...naive import tcp_sender as naive
from ...support.captures import Endpoints, Record, ip_packet, link_frame, rtp_payload, write_pcap

SEG = 100
OUTPUTS = ("t_ack", "t_detect", "trigger", "spurious", "cover", "chunk", "in_flight")
ACK_OUTPUTS = ("ack", "largest", "newly", "dupack", "dsack", "rtt", "rtt_src", "rtt_seq", "rate", "flight")


def arrays(scripts, timestamps=True, holes=False):
    """The kernel's arguments for connections given as scripts (module docstring)."""
    tx, acks, seg_lo, tx_lo, unsent = [], [], [0], [0], []
    events = []
    for c, script in enumerate(scripts):
        n_seg = 1 + max([e[2] for e in script if e[0] == "tx"], default=0)
        for e in script:
            if e[0] == "tx":
                events.append(len(tx))
                tx.append((c, e[1], SEG * e[2], SEG * (e[2] + 1), seg_lo[-1] + e[2], round(e[1] * 1000)))
            else:
                _, t, k, blocks, tsecr = e
                events.append(~len(acks))
                acks.append((c, t, SEG * k, [(SEG * a, SEG * b) for a, b in blocks], tsecr))
        sent = {e[2] for e in script if e[0] == "tx"}
        unsent += [seg_lo[-1] + k for k in range(n_seg) if k not in sent]
        seg_lo.append(seg_lo[-1] + n_seg)
        tx_lo.append(len(tx))
    sack = np.zeros((len(acks), 8), np.int64)
    for j, (_, _, _, blocks, _) in enumerate(acks):
        for b, (le, re) in enumerate(blocks):
            sack[j, 2 * b : 2 * b + 2] = le, re
    col = np.array
    n_seg = seg_lo[-1]
    seg_start = SEG * (np.arange(n_seg) - np.repeat(seg_lo[:-1], np.diff(seg_lo)))
    seg_end = seg_start + SEG
    if holes:  # empty, at the next segment's first byte
        seg_start[unsent] = seg_end[unsent]
    return (
        col(events, np.int64),
        col([x[0] for x in tx], np.int64),
        col([x[1] for x in tx], np.float64),
        col([x[2] for x in tx], np.int64),
        col([x[3] for x in tx], np.int64),
        col([x[4] for x in tx], np.int64),
        np.maximum.accumulate(col([x[5] if timestamps else -1 for x in tx], np.int64)) if tx else col([], np.int64),
        col([a[0] for a in acks], np.int64),
        col([a[1] for a in acks], np.float64),
        col([a[2] for a in acks], np.int64),
        sack,
        col([len(a[3]) for a in acks], np.int64),
        col([a[4] is not None for a in acks], np.bool_),
        col([-1 if a[4] is None else a[4] for a in acks], np.int64),
        np.full(len(acks), 1000, np.int64),
        np.ones(len(acks), np.bool_),
        seg_start,
        seg_end,
        col(seg_lo, np.int64),
        col(tx_lo[:-1], np.int64),
        col(tx_lo[1:], np.int64),
    )


def run(scripts, timestamps=True):
    """The kernel's transmissions and ACKs as dicts of columns."""
    out = sender_kernel(*arrays(scripts, timestamps))
    return dict(zip(OUTPUTS, out[:7])), dict(zip(ACK_OUTPUTS, out[7:]))


@st.composite
def scripts(draw):
    """A connection: new segments in order (a few skipped: bytes the capture missed),
    retransmissions of segments sent, ACKs whose cumulative point and SACK blocks (some of them
    D-SACKs) lie in what was sent, gaps of every size (a timeout's included); and a recovery's
    duplicate ACKs, their SACK block growing from a hole as the segments after it arrive."""
    t, sent, high, ack = 0.0, [], 0, 0
    script = []
    for _ in range(draw(st.integers(1, 40))):
        t += draw(st.sampled_from([0.0, 0.001, 0.004, 0.02, 0.05, 0.15, 0.4, 1.5]))
        action = draw(st.sampled_from(["new", "new", "retx", "ack", "ack", "ack", "skip", "recovery"]))
        if action == "skip":
            high += 1
        elif action == "new" or not sent:
            script.append(("tx", t, high))
            sent.append(high)
            high += 1
        elif action == "recovery":  # a hole at the ACK, then new segments each SACKed as it arrives
            for _ in range(draw(st.integers(1, 6))):
                script.append(("tx", t, high))
                sent.append(high)
                high += 1
                t += 0.001
                script.append(("ack", t, ack, [(ack + 1, high)], None))
        elif action == "retx":
            script.append(("tx", t, draw(st.sampled_from(sent))))
        else:
            ack = draw(st.integers(ack, high))
            blocks = []
            for _ in range(draw(st.integers(0, 4))):
                a = draw(st.integers(0, high))
                blocks.append((a, draw(st.integers(a, high))))
            stamps = [round(e[1] * 1000) for e in script if e[0] == "tx"]
            tsecr = draw(st.none() | st.sampled_from(stamps))
            script.append(("ack", t, ack, blocks, tsecr))
    return script


def same(a, b):
    return (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=1e-12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(scripts(), min_size=1, max_size=3), st.booleans())
def test_the_kernel_is_its_twin(connections, timestamps):
    args = arrays(connections, timestamps, holes=True)
    fast = sender_kernel(*args)
    plain = naive.sender_kernel_naive(*[a.tolist() for a in args])
    for name, got, want in zip(OUTPUTS + ACK_OUTPUTS, fast, plain):
        assert len(got) == len(want), name
        for i, (g, w) in enumerate(zip(got.tolist(), want)):
            assert same(g, w), (name, i, g, w)


def trigger(tx, i):
    return TRIGGERS[tx["trigger"][i]]


def evidence(tx, i):
    return EVIDENCE[tx["spurious"][i]]


# -- the loss triggers, each at its boundary ---------------------------------------------------
def sent(n, t=0.0):
    return [("tx", t + 0.001 * k, k) for k in range(n)]


def test_three_duplicate_acks_make_a_fast_retransmission_and_two_do_not():
    base = [*sent(6), ("ack", 0.1, 1, [], None)]
    dups = [("ack", 0.101 + 0.001 * d, 1, [], None) for d in range(3)]
    tx, acks = run([[*base, *dups, ("tx", 0.105, 1)]], timestamps=False)
    assert trigger(tx, 1) == "dupack" and tx["t_detect"][1] == 0.105
    assert acks["dupack"].tolist() == [False, True, True, True]
    tx, _ = run([[*base, *dups[:2], ("tx", 0.105, 1)]], timestamps=False)
    assert trigger(tx, 1) == "other"


def test_sacked_bytes_above_a_segment_make_its_retransmission_a_sack_one():
    tx, acks = run([[*sent(6), ("ack", 0.1, 1, [(2, 4)], None), ("tx", 0.101, 1)]], timestamps=False)
    assert trigger(tx, 1) == "sack"
    assert (acks["ack"][0], acks["largest"][0], acks["newly"][0], acks["flight"][0]) == (1, 3, 300, 300)


def test_a_retransmission_after_an_rto_of_silence_is_rto_and_so_are_those_of_its_recovery():
    # one sample of 0.1 s: SRTT 0.1, RTTVAR 0.05, RTO 0.1 + max(0.2, 0.2) = 0.3; SLACK × RTO = 0.24
    base = [*sent(3), ("ack", 0.1, 1, [], None)]
    tx, _ = run([[*base, ("tx", 0.1 + 0.241, 1), ("tx", 0.1 + 0.242, 2)]], timestamps=False)
    assert trigger(tx, 1) == "rto" and trigger(tx, 2) == "rto"
    tx, _ = run([[*base, ("tx", 0.1 + 0.239, 1)]], timestamps=False)
    assert trigger(tx, 1) == "other"


def test_the_highest_segment_resent_after_two_srtt_of_silence_is_a_tail_loss_probe():
    # SRTT 0.1 (segment 1, sent at 0.001): the probe after SLACK × 2 × 0.1 = 0.16 s of silence,
    # before SLACK × RTO = 0.24 s
    base = [*sent(3), ("ack", 0.101, 2, [], None)]
    tx, _ = run([[*base, ("tx", 0.101 + 0.161, 2)]], timestamps=False)
    assert trigger(tx, 2) == "tlp"
    tx, _ = run([[*base, ("tx", 0.101 + 0.159, 2)]], timestamps=False)
    assert trigger(tx, 2) == "other"


def test_a_later_transmission_acknowledged_marks_an_earlier_one_lost_as_rack_does():
    # an episode (its recovery point: segment 2) retransmits segment 1 after segment 2's first
    # send; the ACK that ends it covers that retransmission: segment 2 was lost (no SACK needed)
    start = [*sent(2), ("tx", 0.05, 0), ("tx", 0.06, 2)]
    end = [("ack", 0.17, 2, [], None), ("tx", 0.171, 2)]
    tx, _ = run([[*start, ("tx", 0.07, 1), *end]], timestamps=False)
    assert trigger(tx, 0) == "other" and trigger(tx, 3) == "sack"
    tx, _ = run([[*start[:2], ("tx", 0.055, 1), start[3], *end]], timestamps=False)
    assert trigger(tx, 3) == "other"


# -- spurious retransmissions --------------------------------------------------------------------
def test_a_dsack_below_the_cumulative_ack_shows_the_first_transmission_delivered():
    script = [*sent(3), ("ack", 0.1, 1, [], None), ("tx", 0.11, 1), ("ack", 0.2, 3, [(1, 2)], None)]
    tx, acks = run([script], timestamps=False)
    assert evidence(tx, 1) == "dsack" and tx["t_ack"][1] == 0.2
    assert acks["dsack"].tolist() == [False, True]
    assert tx["cover"][3] == tcp_sender.COVER_ACKED  # the retransmission was acknowledged too


def test_a_dsack_inside_the_second_block_is_one_too():
    script = [*sent(5), ("ack", 0.1, 1, [], None), ("tx", 0.11, 2), ("ack", 0.2, 1, [(2, 3), (2, 5)], None)]
    _, acks = run([script], timestamps=False)
    assert acks["dsack"].tolist() == [False, True]


def test_an_ack_echoing_a_tsval_older_than_the_retransmission_is_eifel_evidence():
    script = [("tx", 0.0, 0), ("tx", 0.9, 0), ("ack", 0.95, 1, [], 0)]
    tx, acks = run([script])
    assert trigger(tx, 0) == "rto" and evidence(tx, 0) == "eifel"
    assert acks["rtt_src"][0] == 2 and acks["rtt"][0] == pytest.approx(0.95)  # TSecr 0: the first send
    tx, _ = run([[("tx", 0.0, 0), ("tx", 0.9, 0), ("ack", 0.95, 1, [], 900)]])
    assert evidence(tx, 0) == ""


def test_an_ack_sooner_than_the_minimum_rtt_after_a_retransmission_is_timing_evidence():
    base = [*sent(2), ("ack", 0.1, 1, [], None), ("tx", 0.5, 1)]
    tx, _ = run([[*base, ("ack", 0.5 + 0.099, 2, [], None)]], timestamps=False)
    assert evidence(tx, 1) == "timing"
    tx, _ = run([[*base, ("ack", 0.5 + 0.101, 2, [], None)]], timestamps=False)
    assert evidence(tx, 1) == ""


def test_resending_acknowledged_bytes_is_spurious_by_the_ack_itself():
    tx, _ = run([[("tx", 0.0, 0), ("ack", 0.1, 1, [], None), ("tx", 0.2, 0)]], timestamps=False)
    assert evidence(tx, 0) == "acked" and tx["cover"][1] == tcp_sender.COVER_BEFORE


# -- RTT, rate, chunks -----------------------------------------------------------------------------
def test_karn_takes_no_sample_from_a_retransmitted_segment():
    script = [*sent(2), ("tx", 0.05, 0), ("ack", 0.1, 1, [], None), ("ack", 0.2, 2, [], None)]
    _, acks = run([script], timestamps=False)
    assert math.isnan(acks["rtt"][0]) and acks["rtt"][1] == pytest.approx(0.2 - 0.001)
    assert acks["rtt_seq"][1] == 1


def test_the_delivery_rate_is_the_drafts_sample_and_invalid_under_the_minimum_rtt():
    script = [*sent(4), ("ack", 0.1, 2, [], None), ("ack", 0.2, 4, [], None)]
    _, acks = run([script], timestamps=False)
    # the first ACK: interval max(0.001 - 0, 0.1 - 0) = 0.1 ≥ min RTT 0.099: 200 bytes / 0.1 s
    assert acks["rate"][0] == pytest.approx(2000)
    # the second: P = segment 3 (sent at 0.003 with 0 delivered, at 0.0): 400 bytes over 0.2 s
    assert acks["rate"][1] == pytest.approx(2000)


def test_an_idle_time_longer_than_the_rto_starts_a_chunk():
    base = [("tx", 0.0, 0), ("ack", 0.1, 1, [], None)]  # RTO 0.3, from the last transmission
    tx, _ = run([[*base, ("tx", 0.301, 1)]], timestamps=False)
    assert tx["chunk"].tolist() == [0, 1]
    tx, _ = run([[*base, ("ack", 0.29, 1, [], None), ("tx", 0.299, 1)]], timestamps=False)
    assert tx["chunk"].tolist() == [0, 0]


# -- whole captures ------------------------------------------------------------------------------
A = Endpoints(4, "tcp", "10.0.0.1", "10.0.0.2", 5201, 40000)
B = Endpoints(4, "tcp", "10.0.0.2", "10.0.0.1", 40000, 5201)
ISN, PEER_ISN, MSS = 1000, 5000, 1000


def segment(t, ends, seq, ack, flags="A", payload=b"", **options):
    frame = link_frame(1, ip_packet(ends, payload, tcp_seq=seq, tcp_ack=ack, tcp_flags=flags, ttl=64, **options))
    return Record(round(t * 1e9), frame)


def connection(path, *, acks=True, offload=False, udp=False, all_offloaded=False):
    """A transfer from A: SYNs with MSS 1000, window scale (A 7, B 5) and timestamps; five
    segments of 1000 bytes (the first three one offloaded segment when ``offload``), the third
    lost and retransmitted after three duplicate ACKs; ``udp`` adds an RTP flow A receives."""
    ts = {"tsval": 1}
    records = [segment(0.0, A, ISN, 0, "S", mss=MSS, wscale=7, **ts)]
    if acks:
        records.append(segment(0.05, B, PEER_ISN, ISN + 1, "SA", mss=MSS, wscale=5, window=4000, **ts))
    data = [(0.06 + 0.001 * k, ISN + 1 + MSS * k, bytes(MSS)) for k in range(5)]
    if offload:
        data[:3] = [(0.06, ISN + 1, bytes(3 * MSS))]
    if all_offloaded:
        data = [(0.06, ISN + 1, bytes(3 * MSS)), (0.061, ISN + 1 + 3 * MSS, bytes(2 * MSS))]
    records += [segment(t, A, seq, PEER_ISN + 1, payload=p, tsval=60) for t, seq, p in data]
    if acks:
        for t in (0.11, 0.112, 0.113, 0.114):
            records.append(segment(t, B, PEER_ISN + 1, ISN + 1 + MSS * 2, window=100, tsval=2, tsecr=60))
        records.append(segment(0.115, A, ISN + 1 + 2 * MSS, PEER_ISN + 1, payload=bytes(MSS), tsval=115))
        records.append(segment(0.2, B, PEER_ISN + 1, ISN + 1 + 5 * MSS, window=100, tsval=3, tsecr=115))
    if udp:
        u = Endpoints(4, "udp", "10.0.0.3", "10.0.0.1", 6000, 5004)
        for k in range(5):
            payload = rtp_payload(k, 160 * k, 0x1234, pt=0)
            records.append(Record(round((0.3 + 0.02 * k) * 1e9), link_frame(1, ip_packet(u, payload, ttl=60))))
    write_pcap(path, records, 1)


def read(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_capture(path, **options)


def test_a_connection_read_at_its_sender(tmp_path):
    connection(tmp_path / "c.pcap")
    trace = read(tmp_path / "c.pcap", capture_host="10.0.0.1")
    flow = "10.0.0.1:5201>10.0.0.2:40000/tcp"
    assert trace.meta["view"] == "sender" and trace.meta["flows"][flow]["view"] == "sender"
    p = trace.packets
    assert p["seq"].tolist() == [0, 1, 2, 3, 4, 2] and p["tx"].tolist() == [0, 0, 0, 0, 0, 1]
    assert p["fate"].astype(str).tolist() == ["delivered"] * 2 + ["lost"] + ["delivered"] * 3
    assert p["reason"].astype(str).tolist()[2] == "retransmitted: dupack"
    validate_packets(p)
    acks = trace.acks
    assert acks["rwnd"].tolist() == [4000, 100 << 5, 100 << 5, 100 << 5, 100 << 5, 100 << 5]
    assert acks["dupack"].tolist() == [False, False, True, True, True, False]
    assert acks["rtt_source"].astype(str).tolist()[-1] == "tsecr"
    assert acks["rtt"].iloc[-1] == pytest.approx(0.2 - 0.115)
    assert trace.rtt["rtt"].tolist() == acks["rtt"].dropna().tolist()


def test_an_offloaded_segment_is_read_as_mss_sized_transmissions(tmp_path):
    connection(tmp_path / "c.pcap", offload=True)
    trace = read(tmp_path / "c.pcap", capture_host="10.0.0.1")
    p = trace.packets
    assert p["seq"].tolist() == [0, 1, 2, 3, 4, 2] and p["t_send"].iloc[:3].nunique() == 1
    assert p["size"].iloc[:3].tolist() == [MSS + 52] * 3  # each with the headers: IPv4, TCP and its timestamps
    assert p["uid"].is_unique
    assert trace.meta["flows"]["10.0.0.1:5201>10.0.0.2:40000/tcp"]["offload_segments"] == 1
    # every segment offloaded: the MSS the peer announced is the size of the pieces
    connection(tmp_path / "all.pcap", all_offloaded=True)
    p = read(tmp_path / "all.pcap", capture_host="10.0.0.1").packets
    assert p["seq"].tolist() == [0, 1, 2, 3, 4, 2] and (p["size"] == MSS + 52).all()


def test_one_direction_only_is_read_at_the_sender_without_fates(tmp_path):
    connection(tmp_path / "c.pcap", acks=False)
    trace = read(tmp_path / "c.pcap", vantage="sender")
    info = trace.meta["flows"]["10.0.0.1:5201>10.0.0.2:40000/tcp"]
    assert trace.meta["view"] == "sender" and "no ACKs" in info["note"]
    p = trace.packets
    assert (p["fate"] == "unobserved").all() and (p["reason"] == tcp_sender.NO_ACKS).all()
    assert trace.acks.empty and p["t_ack"].isna().all()
    # at the default vantage a flow whose ACKs are not captured is read as sent, as before
    assert read(tmp_path / "c.pcap", capture_host="10.0.0.1").meta["view"] == "receiver"


def test_a_capture_of_both_views_is_mixed_and_valid(tmp_path):
    connection(tmp_path / "c.pcap", udp=True)
    trace = read(tmp_path / "c.pcap", capture_host="10.0.0.1")
    assert trace.meta["view"] == "mixed"
    views = {label: info["view"] for label, info in trace.meta["flows"].items()}
    assert views == {"10.0.0.1:5201>10.0.0.2:40000/tcp": "sender", "10.0.0.3:6000>10.0.0.1:5004/udp": "receiver"}
    p = trace.packets
    rtp = p[p["flow"] == "10.0.0.3:6000>10.0.0.1:5004/udp"]
    assert rtp["t_ack"].isna().all() and (rtp["chunk"] == -1).all() and (rtp["loss_trigger"] == "").all()
    validate_packets(p)


def test_the_records_keep_window_scale_and_sack_blocks(tmp_path):
    """What the decoder keeps of the options, checked against tshark on a real capture is in
    test_tcp_sender_oracles.py; here the layout: the edges of a segment without payload in head."""
    blocks = ((ISN + 10, ISN + 20), (ISN + 30, ISN + 40), (ISN + 50, ISN + 60))
    write_pcap(tmp_path / "s.pcap", [segment(0.0, B, PEER_ISN, ISN, sack=blocks, window=77)], 1)
    for head_bytes, kept in ((16, 2), (32, 3)):
        r = decode_capture(tmp_path / "s.pcap", head_bytes=head_bytes).records[0]
        edges = np.frombuffer(bytes(r["head"][: 8 * kept]), ">u4").reshape(-1, 2).tolist()
        assert (r["tcp_sack_n"], r["tcp_win"], edges) == (3, 77, [list(b) for b in blocks[:kept]])


def test_two_connections_on_the_same_ports_are_skipped_with_the_reason(tmp_path):
    records = [segment(0.0, B, PEER_ISN, ISN + 1)]
    for start, at in ((ISN + 1, 0.1), (ISN + 2**31, 5.0)):  # a second connection, far in the sequence space
        records += [segment(at + 0.001 * k, A, start + MSS * k, PEER_ISN + 1, payload=bytes(MSS)) for k in range(5)]
    write_pcap(tmp_path / "two.pcap", records, 1)
    with pytest.raises(TraceError, match="segment numbers: "):
        read_capture(tmp_path / "two.pcap", capture_host="10.0.0.1")
