"""The air vantage (``ldanalyze/io/capture/air.py``): a monitor-mode capture between the sender's
capture and the receiver's, its retries folded, the radio's losses told from those before it.

A simulated access point (``transmit``) numbers what it sends from one counter, retries what is
not acknowledged and drops some packets before the radio; a sniffer sees each frame or misses
it. The proofs are held against that simulation's truth, and against the row-by-row twin in
tests/naive/capture.py.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.cli import main
from ldanalyze.errors import UsageError
from ldanalyze.io.capture.air import fold_retries, never_transmitted, numbers_unseen
from ldanalyze.io.capture.pcap import CaptureWarning, read_capture
from ldanalyze.io.capture.record import M_RETRY, NO_MAC_SEQ
from ldanalyze.io.capture.vantage import Vantage, parse_vantage, read_vantages
from ldanalyze.packets import AIR_COLUMNS, validate_packets
from ldanalyze.timeline import build_timeline

from ...naive.capture import never_transmitted_naive, numbers_unseen_naive
from ...support.captures import T0, Endpoints, Record, ip_packet, iperf3_payload, link_frame, write_pcap

FLOW = Endpoints(proto="udp", src="10.0.0.1", dst="10.0.0.2", sport=40000, dport=5201)
OTHER = Endpoints(proto="udp", src="10.0.0.1", dst="10.0.0.3", sport=40001, dport=5201)
RECORD = np.dtype([("mac_seq", "<u2"), ("mac_space", "<u4"), ("mac_flags", "u1")])


@dataclasses.dataclass
class Sent:
    """One packet through the simulated AP: its fate and the frames the sniffer saw of it."""

    flow: int
    queue_drop: bool = False  # dropped before the radio: never numbered, never sent
    seq: int | None = None  # the MAC sequence number it was sent with
    attempts: int = 0
    seen: list[bool] = dataclasses.field(default_factory=list)  # per attempt: the sniffer got it
    delivered: bool = False


@st.composite
def transmit(draw):
    """An AP sending two flows (rows grouped by flow afterwards) and beacons from one counter,
    and a sniffer's air records: (sequence number, counter) per frame it saw, in order."""
    n = draw(st.integers(2, 60))
    miss = draw(st.sampled_from([0.0, 0.05, 0.3, 0.8]))
    counter = draw(st.integers(0, 4095))
    frames: list[tuple[int | None, int]] = []
    sent: list[Sent] = []
    for _ in range(n):
        if draw(st.integers(0, 9)) == 0:  # a beacon between data frames
            if draw(st.floats(0, 1)) >= miss:
                frames.append((counter, 7))
            counter = (counter + 1) % 4096
        if draw(st.integers(0, 9)) == 0:  # a frame of another counter (another transmitter)
            frames.append((draw(st.integers(0, 4095)), 9))
        p = Sent(flow=draw(st.integers(0, 1)))
        sent.append(p)
        if draw(st.integers(0, 4)) == 0:
            p.queue_drop = True
            continue
        p.seq, counter = counter, (counter + 1) % 4096
        p.attempts = draw(st.integers(1, 3))
        p.delivered = draw(st.booleans()) if p.attempts == 3 else True
        for _ in range(p.attempts):
            got = draw(st.floats(0, 1)) >= miss
            p.seen.append(got)
            if got:
                frames.append((p.seq, 7))
                p.__dict__.setdefault("records", []).append(len(frames) - 1)
    return sent, frames


def arrays(sent: list[Sent], frames):
    """The inputs of ``never_transmitted``: rows grouped by flow (send order kept within)."""
    order = sorted(range(len(sent)), key=lambda i: (sent[i].flow, i))
    rows = [sent[i] for i in order]
    records = np.zeros(len(frames), RECORD)
    for r, (seq, space) in enumerate(frames):
        records[r] = (NO_MAC_SEQ if seq is None else seq, space, 0)
    record_at = np.array([p.__dict__.get("records", [-1])[0] for p in rows], np.int64)
    flows = np.array([p.flow for p in rows], np.int64)
    after_air = np.array([p.delivered for p in rows])
    lost_before = (record_at < 0) & ~after_air
    return rows, records, record_at, flows, after_air, lost_before


@settings(max_examples=300, deadline=None)
@given(case=transmit())
def test_a_proof_never_calls_a_sent_packet_unsent_and_agrees_with_the_twin(case):
    sent, frames = case
    rows, records, record_at, flows, after_air, lost_before = arrays(sent, frames)
    proven = never_transmitted(records, record_at, flows, after_air, lost_before)
    assert proven.tolist() == never_transmitted_naive(frames, record_at, flows, after_air, lost_before)
    assert not any(p.seq is not None for p, q in zip(rows, proven) if q)  # sound: only queue drops
    assert not (proven & ~lost_before).any()


@settings(max_examples=300, deadline=None)
@given(
    frames=st.lists(st.tuples(st.one_of(st.none(), st.integers(4090, 4095), st.integers(0, 6)), st.integers(1, 2))),
    data=st.data(),
)
def test_numbers_unseen_agrees_with_the_twin(frames, data):
    """Rows of two flows, each seen at some record (or not at all); numbers near the wrap."""
    n = data.draw(st.integers(0, 12))
    record_at = np.array([data.draw(st.integers(-1, len(frames) - 1)) for _ in range(n)], np.int64)
    flows = np.array([data.draw(st.integers(0, 1)) for _ in range(n)], np.int64)
    records = np.zeros(len(frames), RECORD)
    for r, (seq, space) in enumerate(frames):
        records[r] = (NO_MAC_SEQ if seq is None else seq, space, 0)
    assert numbers_unseen(records, record_at, flows).tolist() == numbers_unseen_naive(frames, record_at, flows)


def test_numbers_unseen_counts_what_the_radio_never_heard():
    """Flow 0 at numbers 10, 13 and 14; 11 seen on another flow, 12 never: one unseen."""
    records = np.array([(10, 7, 0), (11, 7, 0), (5, 9, 0), (13, 7, 0), (14, 7, 0), (14, 7, 0)], RECORD)
    got = numbers_unseen(records, np.array([0, 3, 4, 5, -1]), np.zeros(5, np.int64))
    assert got.tolist() == [-1, 1, 0, 0, -1]


def test_numbers_unseen_after_a_block_ack_retransmission():
    """A-MPDU under a block-ack agreement: 12 lost, then 13 acknowledged, then 12 retransmitted
    after it, then 14. The radio missed only 12's first attempt (one unseen at 13); 12 comes
    numbered behind 13 (unknown, not 4095 numbers gone by); 14 counts from 13, none unseen."""
    records = np.array([(10, 7, 0), (11, 7, 0), (13, 7, 0), (12, 7, 0), (14, 7, 0)], RECORD)
    got = numbers_unseen(records, np.arange(5), np.zeros(5, np.int64))
    assert got.tolist() == [-1, 0, 1, -1, 0]


def test_a_sniffer_that_misses_nothing_proves_every_queue_drop():
    sent = [Sent(0), Sent(0, queue_drop=True), Sent(0, queue_drop=True), Sent(0), Sent(0, queue_drop=True), Sent(0)]
    frames = []
    for k, p in enumerate(s for s in sent if not s.queue_drop):
        p.seq, p.delivered = 100 + k, True
        frames.append((p.seq, 7))
        p.records = [len(frames) - 1]
    rows, records, record_at, flows, after_air, lost_before = arrays(sent, frames)
    assert never_transmitted(records, record_at, flows, after_air, lost_before).tolist() == [
        False,
        True,
        True,
        False,
        True,
        False,
    ]


@pytest.mark.parametrize(
    ("frames", "record_at", "proven"),
    [
        ([4094, 4095], [0, -1, 1], True),  # the lost row took no number
        ([4095, 0], [0, -1, 1], True),  # ... across the wrap
        ([4095, 1], [0, -1, 1], False),  # 0 skipped: the sniffer may have missed the lost row
        ([4095, 1], [0, -1, "went", 1], True),  # 0 was the row that reached the receiver unseen
        ([4095, 0, 1], [0, -1, 2], True),  # 0 was a frame of another flow, seen
    ],
)
def test_numbers_are_counted_across_the_wrap(frames, record_at, proven):
    """Rows of one flow: seen, lost unseen, (went on unseen,) seen; frames of one counter."""
    went = [r == "went" for r in record_at]
    record_at = np.array([-1 if r == "went" else r for r in record_at], np.int64)
    after_air = np.array([r >= 0 for r in record_at]) | went
    records = np.array([(s, 7, 0) for s in frames], RECORD)
    got = never_transmitted(records, record_at, np.zeros(len(record_at), np.int64), after_air, ~after_air)
    assert bool(got[1]) is proven


def test_retries_fold_into_their_first_frame():
    """Frames of one packet (key) with one sequence number are its attempts; the same packet
    sent again under a new number is another packet (a retransmission from above)."""
    records = np.zeros(6, RECORD)
    records["mac_space"] = 7
    records["mac_seq"] = [10, 10, 11, 10, 12, 12]
    records["mac_flags"] = [0, M_RETRY, 0, M_RETRY, 0, 0]
    keys = np.array([5, 5, 6, 5, 5, 0], np.uint64)
    folded = fold_retries(records, keys)
    assert folded.keys.tolist() == [5, 0, 6, 0, 5, 0]
    assert folded.frames.tolist() == [3, 0, 1, 0, 1, 0]
    assert folded.retried.tolist() == [True, False, False, False, False, False]
    assert folded.last.tolist() == [3, -1, 2, -1, 4, -1]


# -- chains of captures ------------------------------------------------------------------------
def write_air_chain(tmp_path, plan: str, *, gap_at: int | None = None, wifi: str = "qos") -> list[str]:
    """Three captures of one flow: the sender's (Ethernet), the air (radiotap), the receiver's.
    ``plan`` has a letter per packet: ``d`` delivered, ``r`` delivered after a retry, ``q``
    dropped before the radio, ``w`` sent twice and lost on the air, ``m`` sent and delivered,
    the sniffer missing it, ``x`` sent and lost, the sniffer missing it. ``gap_at``: the AP's
    counter skips a number before that packet (a frame to someone the sniffer missed). ``wifi``:
    the frames' kind, ``qos`` or ``data`` (non-QoS: numbered from the AP's one counter)."""
    sender, air, receiver = [], [], []
    mac = 300
    for i, kind in enumerate(plan):
        t = T0 + i * 0.01
        packet = ip_packet(FLOW, iperf3_payload(i, t, size=120), ip_id=i)
        sender.append(Record(int(t * 1e9), link_frame(1, packet)))
        if kind == "q":
            continue
        if i == gap_at:
            mac += 1
        tries = {"d": 1, "r": 2, "w": 2, "m": 0, "x": 0}[kind]
        for k in range(tries):
            frame = link_frame(127, packet, wifi=wifi, wifi_seq=mac, wifi_retry=k > 0, wifi_tid=0)
            air.append(Record(int((t + 0.001 + k * 0.0005) * 1e9), frame))
        mac += 1
        if kind in "drm":
            receiver.append(Record(int((t + 0.003) * 1e9), link_frame(1, packet)))
    paths = []
    for name, records, linktype in (("s.pcap", sender, 1), ("air.pcap", air, 127), ("d.pcap", receiver, 1)):
        write_pcap(tmp_path / name, records, linktype)
        paths.append(str(tmp_path / name))
    return paths


def read(paths, *, air: str = ":air", **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_vantages([paths[0], paths[1] + air, paths[2]], **options)
    validate_packets(trace.packets)
    return trace


def fates(trace) -> str:
    return "".join(
        {"delivered": ".", "congestion": "C", "wireless": "W", "lost": "?"}[f]
        for f in trace.packets["fate"].astype(str)
    )


def test_each_loss_is_told_by_where_it_was_last_seen(tmp_path):
    trace = read(write_air_chain(tmp_path, "ddqdwdrqqdxdmd"))
    assert fates(trace) == "..C.W..CC.?..."
    segments = {s["segment"]: s for s in trace.meta["segments"]}
    assert segments["s.pcap>air.pcap"] == {
        "segment": "s.pcap>air.pcap",
        "cause": "congestion",
        "lost": 3,
        "unobserved": 0,
        "cause_unknown": 1,
    }
    assert segments["air.pcap>d.pcap"]["cause"] == "wireless" and segments["air.pcap>d.pcap"]["lost"] == 1
    p = trace.packets
    assert p["air_frames"].tolist() == [1, 1, 0, 1, 2, 1, 2, 0, 0, 1, 0, 1, 0, 1]
    assert p["air_retried"].tolist() == [k in (4, 6) for k in range(14)]
    assert (p["t_air_last"] - p["t_air"]).fillna(0).round(6).tolist()[4] == 0.0005
    assert trace.meta["vantages"][1]["missed"] == 1  # the m: delivered, never seen in the air


def test_a_number_the_sniffer_never_saw_leaves_the_queue_drop_next_to_it_unknown(tmp_path):
    """The counter skips a number around the dropped packet: the sniffer may have missed the
    packet sent with it."""
    paths = write_air_chain(tmp_path, "ddqdd", gap_at=3)
    assert fates(read(paths)) == "..?.."
    assert fates(read(write_air_chain(tmp_path, "ddqdd"))) == "..C.."


def test_a_middle_radiotap_capture_is_the_air_vantage_by_itself(tmp_path):
    """Without ':air' the capture is still folded and the next segment still wireless; what is
    lost before it has the cause given (none here: unknown)."""
    trace = read(write_air_chain(tmp_path, "ddqdwdd"), air="")
    assert fates(trace) == "..?.W.."
    assert trace.meta["vantages"][1]["unmatched"] == 0  # the retry is folded, not unmatched


def test_the_timeline_carries_the_radio_evidence(tmp_path):
    timeline = build_timeline(read(write_air_chain(tmp_path, "ddrdwdd")))
    assert timeline.arrivals["air_frames"].tolist() == [1, 1, 2, 1, 1, 1]
    assert timeline.arrivals["air_retried"].tolist() == [False, False, True, False, False, False]
    assert timeline.losses["air_frames"].tolist() == [2]
    assert set(AIR_COLUMNS) <= set(read(write_air_chain(tmp_path, "dd")).packets.columns)


def test_frames_numbered_from_a_shared_counter_are_told_apart(tmp_path):
    """Non-QoS frames share their sender's counter with its frames to other stations: each packet
    says which kind it came in, and the reader says its count of unseen numbers may overstate
    the radio's losses."""
    assert read(write_air_chain(tmp_path, "ddwd")).packets["air_qos"].tolist() == [True, True, True, True]
    paths = write_air_chain(tmp_path, "ddwdq", wifi="data")
    with pytest.warns(CaptureWarning, match="4 of 4 packets came in non-QoS 802.11 frames"):
        trace = read_vantages([paths[0], paths[1] + ":air", paths[2]])
    assert trace.packets["air_qos"].tolist() == [False] * 5
    assert any("non-QoS" in note for note in trace.meta["notes"])
    with pytest.warns(CaptureWarning, match="5 of 5 packets came in non-QoS"):
        alone = read_capture(paths[1])  # the sniffer's capture as a receiver's own: a row a frame
    assert alone.packets["air_qos"].sum() == 0 and any("non-QoS" in note for note in alone.meta["notes"])


def test_air_vantages_that_cannot_be_are_refused(tmp_path):
    s, a, d = write_air_chain(tmp_path, "ddd")
    with pytest.raises(UsageError, match="one air vantage"):
        read_vantages([s, a + ":air", a + ":air", d])
    with pytest.raises(UsageError, match="between the sender's capture and the receiver's"):
        read_vantages([s, d + ":air"])
    assert parse_vantage("x.pcap:air") == Vantage("x.pcap", "congestion", air=True)


def test_inspect_says_what_a_monitor_mode_capture_holds(tmp_path, capsys):
    """A receiver's own monitor-mode capture: ``inspect``'s text counts its retried arrivals and
    the numbers gone by unseen, and names ``--lda macseq``, as ``--json`` and the report do."""
    _, air, _ = write_air_chain(tmp_path, "ddqdwdrqqdxdmdrrd")  # read alone: a frame a row
    assert main(["inspect", air]) == 0
    said = f"{air}: a monitor-mode capture: 4 of 16 arrivals retried (802.11 retry bit: an attempt before failed)"
    text = capsys.readouterr().out
    assert said in text and "2 sequence numbers gone by unseen (air_unseen); --lda macseq reads them" in text
    assert main(["inspect", air, "--json"]) == 0
    assert said in capsys.readouterr().out
