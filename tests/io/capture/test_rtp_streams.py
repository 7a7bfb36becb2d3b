"""RTP streams of one port (ldanalyze/io/capture/rtp.py): STUN and RTCP set apart, noise SSRCs,
streams skipped with a reason, padding-only probes, and RFC 4588 retransmission streams whose
repairs are reported."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.io.capture import rtp

from .test_pcap_payload import LABEL, NS, capture_of, read

MEDIA, RTX_SSRC = 0xA1, 0xB2


def packet(seq, ts, ssrc, pt, payload=b"\x11" * 40, padding=0, marker=0):
    first = 0x80 | (0x20 if padding else 0)
    body = payload + (bytes(padding - 1) + bytes([padding]) if padding else b"")
    return struct.pack(">BBHII", first, (marker << 7) | pt, seq % 65536, ts % 2**32, ssrc) + body


def call(tmp_path, *, holes=(10, 20), repaired=(10, 25), probes=3, noise=2, odd=True, stun=2):
    """A media stream (PT 96, 50 packets, 20 ms, 48 kHz clock) with ``holes``; its RTX stream
    (PT 97) carrying ``repaired`` OSNs; padding-only probes; one-packet noise SSRCs; a stream
    whose numbers are no sequence; STUN and RTCP on the same port."""
    out = []
    for seq in range(50):
        if seq not in holes:
            out.append((NS + seq * 20_000_000, packet(1000 + seq, 960 * seq, MEDIA, 96)))
    for k, osn in enumerate(repaired):
        out.append(
            (
                NS + (osn + 2) * 20_000_000 + 5,
                packet(7 + k, 960 * osn, RTX_SSRC, 97, struct.pack(">H", 1000 + osn) + b"\x22" * 40),
            )
        )
    for k in range(probes):
        out.append((NS + (30 + k) * 20_000_000 + 7, packet(1060 + k, 960 * 30, MEDIA, 96, b"", padding=200)))
    for k in range(noise):
        out.append((NS + k * 1_000_003 + 11, packet(k * 7919, k * 12345, 0xC000 + k, 33)))
    if odd:
        for k in range(6):
            out.append((NS + k * 30_000_000 + 13, packet((k * 20011) % 65536, k, 0xDD, 98)))
    for k in range(stun):
        out.append((NS + k * 500_000_000 + 17, b"\x00\x01\x00\x00" + bytes(16)))
    out.append((NS + 900_000_000, bytes([0x80, 200]) + struct.pack(">HI", 6, MEDIA) + bytes(20)))
    return capture_of(tmp_path, sorted(out))


def test_a_real_call_port_is_taken_apart(tmp_path):
    trace = read(call(tmp_path))
    streams = trace.meta["flows"]
    media = f"{LABEL}/ssrc=0x{MEDIA:08x}"
    assert list(streams) == [media]
    info = streams[media]
    assert info["demux"] == {"rtcp": 1, "rtp": 50 - 2 + 2 + 3 + 2 + 6, "stun": 2}
    assert (info["noise_ssrcs"], info["noise_packets"], info["padding_only"]) == (2, 2, 3)
    assert (info["rtx_stream"], info["rtx_packets"], info["rtx_repaired"]) == (f"{LABEL}/ssrc=0x{RTX_SSRC:08x}", 2, 1)
    assert info["clock_rate"] == 48000
    skipped = trace.meta["skipped_streams"]
    assert list(skipped) == [f"{LABEL}/ssrc=0x000000dd"] and "steps" in skipped[f"{LABEL}/ssrc=0x000000dd"]
    p = trace.packets
    assert (p["fate"] == "delivered").sum() == 48  # the probes and RTX packets are no arrivals
    lost = p[p["fate"] == "lost"].sort_values("seq")
    assert lost["seq"].tolist() == [1010, 1020]
    assert lost["reason"].astype(str).tolist() == ["rtx-repaired", "seq-gap"]


def test_without_the_secondary_streams_the_flow_keeps_its_label(tmp_path):
    trace = read(call(tmp_path, repaired=(), probes=0, noise=0, odd=False, stun=0))
    assert list(trace.meta["flows"]) == [LABEL] and trace.meta["skipped_streams"] == {}


def test_a_flow_with_no_readable_stream_says_why(tmp_path):
    from ldanalyze.errors import TraceError

    out = [(NS + k * 1_000_000, packet(k * 7919, k, 0xE000 + k, 33)) for k in range(4)]
    with pytest.raises(TraceError, match="no readable RTP stream.*4 one-off SSRCs"):
        read(capture_of(tmp_path, out), payload="rtp")


def test_a_flow_without_rtp_headers_says_which_kinds_it_carries(tmp_path):
    """No packet opens with an RTP version 2 header (``NoRTPPackets``: the flow is passed over
    without reading every header); the reason, made only when shown, still counts the packets'
    kinds (RFC 7983), and crosses a process boundary as its words."""
    import pickle

    from ldanalyze.errors import TraceError
    from ldanalyze.io.capture.rtp_streams import NoRTPPackets, no_rtp_reason
    from ldanalyze.io.capture.sequences import NotThisKind

    stun = [(NS + k * 1_000_000, b"\x00\x01\x00\x00" + bytes(16)) for k in range(2)]
    iperf3 = [(NS + (k + 2) * 1_000_000, struct.pack(">III", 0x65000000 + k, 0, k) + bytes(20)) for k in range(3)]
    rtcp_only = [(NS + 9_000_000, bytes([0x80, 200]) + struct.pack(">HI", 6, MEDIA) + bytes(20))]
    with pytest.raises(TraceError, match=r"no RTP packets \(other 3, stun 2\)"):
        read(capture_of(tmp_path, stun + iperf3), payload="rtp")
    with pytest.raises(TraceError, match=r"no RTP packets \(other 3, stun 2, rtcp 1\)"):  # through the kernel
        read(capture_of(tmp_path, stun + iperf3 + rtcp_only, name="rtcp.pcap"), payload="rtp")
    head = np.zeros((1, 16), np.uint8)
    why = NoRTPPackets(head, np.array([16]), np.array([20]))
    assert str(why) == no_rtp_reason(np.array([rtp.STUN], np.int8)) == "no RTP packets (stun 1)"
    again = pickle.loads(pickle.dumps(why))
    assert type(again) is NotThisKind and str(again) == str(why)


@st.composite
def udp_payloads(draw):
    """A UDP payload as a receiver keeps it: mostly RTP-like (CSRCs, extension, padding, FEC-like
    payload openings, zero runs), sometimes any first byte; cut at a snap length."""
    size = draw(st.integers(1, 120))
    body = bytearray(draw(st.binary(min_size=size, max_size=size)))
    if draw(st.booleans()):
        body[0] = 0x80 | draw(st.sampled_from([0, 0x10, 0x20, 0x30])) | draw(st.integers(0, 3))
        if size > 1:
            body[1] = draw(st.sampled_from([96, 111, 200, 201, 127]))
        for _ in range(draw(st.integers(0, 3))):  # runs of zeros (padding) and small numbers
            at = draw(st.integers(0, size - 1))
            end = min(size, at + draw(st.integers(1, 40)))
            body[at:end] = bytes(end - at) if draw(st.booleans()) else bytes([draw(st.integers(0, 3))] * (end - at))
    kept = draw(st.integers(1, 48))
    return bytes(body), min(kept, size)


@settings(max_examples=300, deadline=None)
@given(st.lists(udp_payloads(), min_size=1, max_size=12))
def test_header_fields_match_the_twin(payloads):
    from ...naive import rtp as naive_rtp

    head = np.zeros((len(payloads), 48), np.uint8)
    head_len = np.array([kept for _, kept in payloads], np.int64)
    payload_len = np.array([len(body) for body, _ in payloads], np.int64)
    for i, (body, kept) in enumerate(payloads):
        head[i, :kept] = np.frombuffer(body[:kept], np.uint8)
    kinds, hlen, padding, osn, fec = rtp.header_fields(head, head_len, payload_len)
    got = [
        (rtp.KIND_NAMES[k], int(h), bool(p), int(o), bool(f)) for k, h, p, o, f in zip(kinds, hlen, padding, osn, fec)
    ]
    assert got == [naive_rtp.rtp_header(body[:kept], len(body), rtp.FEC_SPAN) for body, kept in payloads]


def test_header_lengths_count_csrcs_and_extensions():
    head = np.zeros((3, 48), np.uint8)
    head[0, 0] = 0x80  # 12
    head[1, 0] = 0x82  # 2 CSRCs: 20
    head[2, 0] = 0x90  # extension of 3 words: 12 + 4 + 12
    head[2, 14:16] = [0, 3]
    payload_len = np.full(3, 100)
    assert rtp.header_fields(head, np.full(3, 48), payload_len)[1].tolist() == [12, 20, 28]
    assert rtp.header_fields(head, np.full(3, 14), payload_len)[1].tolist() == [12, 20, -1]  # extension length not kept


def test_header_fields_pin_the_rule_boundaries():
    """RFC 7983's first-byte ranges at their edges, RTCP's second-byte range (RFC 5761), the
    255-byte padding limit and the FEC span at 48 and 49 packets back."""

    def one(first=0x80, second=96, kept=48, payload_len=100, body=b""):
        head = np.zeros((1, 48), np.uint8)
        head[0, 0], head[0, 1] = first, second
        head[0, 12 : 12 + len(body)] = np.frombuffer(body, np.uint8)
        fields = rtp.header_fields(head, np.array([kept]), np.array([payload_len]))
        return (rtp.KIND_NAMES[fields[0][0]], *(x[0].item() for x in fields[1:]))

    edges = {
        3: "stun",
        4: "other",
        15: "other",
        16: "zrtp",
        19: "zrtp",
        20: "dtls",
        63: "dtls",
        64: "turn",
        79: "turn",
        80: "other",
        127: "other",
        128: "rtp",
        191: "rtp",
        192: "other",
    }
    assert {b: one(first=b)[0] for b in edges} == edges
    assert [one(second=s)[0] for s in (191, 192, 223, 224)] == ["rtp", "rtcp", "rtcp", "rtp"]
    assert one(kept=11)[0] == "other"  # too short a header to be RTP
    assert one(first=0xA0, payload_len=12 + 255)[2] and not one(first=0xA0, payload_len=12 + 256)[2]
    assert not one(first=0xA0, payload_len=12)[2]  # nothing after the header: not even a count
    assert not one(first=0xA0, body=b"\x01")[2]  # a non-zero byte before the count
    # the packet's own number, bytes 2-3 of the header, is 0 here
    assert one(body=bytes([0, 0]) + (65536 - 48).to_bytes(2, "big") + bytes(6))[4]
    assert not one(body=bytes([0, 0]) + (65536 - 49).to_bytes(2, "big") + bytes(6))[4]
    assert not one(body=bytes([0x80, 0]) + (65536 - 1).to_bytes(2, "big") + bytes(6))[4]  # E bit set
    assert not one(body=bytes([0, 0]) + (65536 - 1).to_bytes(2, "big") + bytes(6), kept=21)[4]  # not kept
    assert one(body=b"\x12\x34")[3] == 0x1234 and one(kept=13)[3] == -1


def sender_report(ssrc, ntp_seconds, rtp_ts):
    whole = int(ntp_seconds)
    frac = int((ntp_seconds - whole) * 2**32)
    return (
        bytes([0x80, 200]) + struct.pack(">HIIII", 6, ssrc, whole, frac, rtp_ts % 2**32) + struct.pack(">II", 10, 1000)
    )


def test_rtcp_sender_reports_give_the_media_clock_rate(tmp_path):
    """A dynamic payload type whose arrivals alone would suggest no usual rate (a sender that
    pauses): the sender reports say 90 kHz, and that is the rate used."""
    out = []
    for seq in range(40):
        t = seq * 0.033 + (0.5 if seq >= 20 else 0.0)  # a 0.5 s pause in sending, timestamps go on
        out.append((NS + int(t * 1e9), packet(seq, int(90000 * seq * 0.033), MEDIA, 100)))
    for t in (0.1, 1.1):
        out.append((NS + int(t * 1e9) + 3, sender_report(MEDIA, 3_900_000_000 + t, int(90000 * t) + 7)))
    trace = read(capture_of(tmp_path, sorted(out)))
    (info,) = trace.meta["flows"].values()
    assert (info["clock_rate"], info["clock_source"], info["sender_reports"]) == (90000, "RTCP sender reports", 2)
    assert info["sender_report_rate"] == pytest.approx(90000, rel=1e-6)
    # the RTP timestamp wraps between two reports one second apart; reports 0.2 s apart are too close
    wrap = [
        sender_report(7, 100.0, 2**32 - 45000),
        sender_report(7, 101.0, 45000),
        sender_report(8, 5.0, 0),
        sender_report(8, 5.2, 18000),
    ]
    head = np.stack([np.frombuffer(r + bytes(48 - len(r)), np.uint8) for r in wrap])
    found = rtp.sender_report_rates(head, np.full(4, 28), np.ones(4, bool))
    assert found == {7: (pytest.approx(90000), 2)}


@st.composite
def extended_packets(draw):
    """An RTP packet with a one-byte or two-byte header extension of random elements."""
    two_byte = draw(st.booleans())
    elements = b""
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 4)) == 0:
            elements += b"\x00"  # padding
            continue
        size = draw(st.integers(1, 4))
        data = draw(st.binary(min_size=size, max_size=size))
        if two_byte:
            elements += bytes([draw(st.integers(1, 255)), size]) + data
        else:
            elements += bytes([(draw(st.integers(1, 14)) << 4) | (size - 1)]) + data
    elements += bytes(-len(elements) % 4)
    profile = 0x1000 if two_byte else 0xBEDE
    cc = draw(st.integers(0, 2))
    head = bytes([0x90 | cc, 96]) + bytes(10) + bytes(4 * cc) + struct.pack(">HH", profile, len(elements) // 4)
    return head + elements + draw(st.binary(max_size=8))


@settings(max_examples=300, deadline=None)
@given(st.lists(extended_packets(), min_size=1, max_size=8), st.integers(1, 4), st.integers(16, 48))
def test_extension_values_match_the_twin(packets, width, kept):
    from ...naive import rtp as naive_rtp

    head = np.zeros((len(packets), 48), np.uint8)
    head_len = np.zeros(len(packets), np.int64)
    for i, p in enumerate(packets):
        cut = p[:kept]
        head[i, : len(cut)] = np.frombuffer(cut, np.uint8)
        head_len[i] = len(cut)
    expected = [naive_rtp.rtp_extension_values_naive(p[:kept], width) for p in packets]
    counts = rtp.extension_counts(head, head_len, width)
    assert {k: int(n) for k, n in enumerate(counts) if n} == {
        k: sum(k in e for e in expected) for k in set().union(*expected)
    }
    for ident in set().union(*expected) | {1}:
        got = rtp.extension_values(head, head_len, width, ident)
        assert got.tolist() == [e.get(ident, -1) for e in expected]


def test_abs_send_time_is_the_send_clock_when_a_stream_carries_it(tmp_path):
    """A video stream: frames of three packets share an RTP timestamp and a pacer spreads them;
    abs-send-time (extension id 3) says when each left. A constant network delay gives a
    constant ROTT from abs-send-time, where the RTP timestamp would show the pacing."""
    out = []
    for frame in range(30):
        for k in range(3):
            sent = 0.5 + frame * 0.040 + k * 0.004  # paced 4 ms apart
            ext = struct.pack(">HH", 0xBEDE, 1) + bytes([0x32]) + (int(sent * 2**18) % 2**24).to_bytes(3, "big")
            rtp_header = struct.pack(">BBHII", 0x90, 96, frame * 3 + k, 90 * 40 * frame, MEDIA)
            out.append((NS + int((sent + 0.030) * 1e9), rtp_header + ext + b"\x33" * 200))
    trace = read(capture_of(tmp_path, out))
    (info,) = trace.meta["flows"].values()
    assert (info["send_time"], info["abs_send_time_id"]) == ("abs-send-time", 3)
    import ldanalyze as la

    rott = la.build_timeline(trace).arrivals["rott"].to_numpy()
    assert np.ptp(rott) < 1e-5  # 3.8 µs units


def test_transport_wide_sequence_numbers_make_one_stream_of_a_webrtc_flow(tmp_path):
    """Audio and video SSRCs and a probe, numbered by one transport-wide counter (extension id
    5, 2 bytes) and timed by abs-send-time (id 3); packets 7 and 12 of the counter are lost."""
    out = []
    for n in range(40):
        sent = 1.0 + n * 0.010
        ext = (
            struct.pack(">HH", 0xBEDE, 2)
            + bytes([0x32])
            + (int(sent * 2**18) % 2**24).to_bytes(3, "big")
            + bytes([0x51])
            + (60000 + n).to_bytes(4, "big")[2:]
            + b"\x00"
        )
        ssrc, pt = (MEDIA, 111) if n % 3 else (0x77, 96)
        if n in (7, 12):
            continue
        rtp_header = struct.pack(">BBHII", 0x90, pt, n // 3, 960 * n, ssrc)
        out.append((NS + int((sent + 0.020) * 1e9), rtp_header + ext + b"\x44" * 80))
    trace = read(capture_of(tmp_path, out), rtp_sequence="transport-cc")
    (label,) = trace.meta["flows"]
    info = trace.meta["flows"][label]
    assert label == f"{LABEL}/transport-cc"
    assert (info["transport_cc_id"], info["abs_send_time_id"], info["packets"], info["lost"]) == (5, 3, 38, 2)
    p = trace.packets
    assert p.loc[p["fate"] == "lost", "seq"].tolist() == [60007, 60012]
    from ldanalyze.errors import TraceError

    with pytest.raises(TraceError, match="no transport-wide sequence number"):
        read(call(tmp_path), rtp_sequence="transport-cc")


def video(tmp_path, *, fec_every=5, fec_base_back=(4, 1), per_frame=3, frames=30, loss=(7,)):
    """A VP8-like stream: ``per_frame`` packets per frame at 25 frames/s (90 kHz clock), sent
    1 ms apart and arriving with a queue that grows through each frame; after every
    ``fec_every`` media packets an RFC 5109 FEC packet (PT 122, same SSRC, the next sequence
    number) whose SN base lies ``fec_base_back`` numbers back (alternating)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    out, seq, k = [], 0, 0
    for f in range(frames):
        for j in range(per_frame):
            t = NS + f * 40_000_000 + j * 1_000_000 + 20_000_000 + j * 3_000_000  # 20 ms path, queue grows
            if seq not in loss:
                out.append((t, packet(seq, 3600 * f, MEDIA, 96)))
            seq += 1
            k += 1
            if k % fec_every == 0:
                back = fec_base_back[(k // fec_every) % len(fec_base_back)]
                fec = bytes([0x40, 96]) + struct.pack(">H", (seq - back) % 65536) + bytes(36)
                out.append((t + 100_000, packet(seq, 3600 * f, MEDIA, 122, fec)))
                seq += 1
    return capture_of(tmp_path, sorted(out)), seq


def test_ulpfec_in_the_media_stream_is_counted_and_keeps_its_sequence_numbers(tmp_path):
    path, sent = video(tmp_path)
    info = read(path, payload="rtp", clock_rate=90000).meta["flows"][LABEL]
    assert (info["fec_payload_type"], info["fec_packets"]) == (122, 18)  # 90 media packets, one FEC per 5
    assert info["packets"] == sent - 1 and info["lost"] == 1 and info["payload_type"] == 96
    # an SN base beyond the FEC span (or ahead of the packet) is no FEC header: nothing counted
    other, _ = video(tmp_path / "far", fec_base_back=(rtp.FEC_SPAN + 1, 60000))
    assert "fec_packets" not in read(other, payload="rtp", clock_rate=90000).meta["flows"][LABEL]


def test_a_video_frame_takes_the_rott_of_its_first_arrival(tmp_path):
    path, _ = video(tmp_path, fec_every=10**6, loss=())
    trace = read(path, payload="rtp", clock_rate=90000)
    info = trace.meta["flows"][LABEL]
    assert info["frames"] == 30 and info["rott"] == "per frame (its first arrival)"
    delay = (trace.packets["t_recv"] - trace.packets["t_send"]).to_numpy()
    frames = delay.reshape(30, 3)
    assert np.ptp(frames, axis=1).max() < 1e-9  # one ROTT per frame: the queue within it is the sender's burst
    # one packet per timestamp (audio): the send times are the timestamps, untouched
    audio, _ = video(tmp_path / "audio", per_frame=1, fec_every=10**6, loss=())
    one = read(audio, payload="rtp", clock_rate=90000)
    assert "frames" not in one.meta["flows"][LABEL]
    np.testing.assert_allclose(
        one.packets["t_send"].to_numpy() - one.packets["t_send"].iloc[0], np.arange(30) * 0.04, atol=1e-9
    )
