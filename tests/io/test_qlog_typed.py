"""The qlog reader's two decodings (ldanalyze/io/qlog/parse.py) read alike.

``typed_documents`` decodes each event by its name, learning the names from the file, and is
the one a qlog of objects goes through; ``documents`` walks the events one by one, the way
draft-00/01's arrays and any file the fast one does not foresee are read. Random qlogs of every
shape the rules read (headers or none, packet types or none, sizes where each format puts them,
ACK ranges of one number or two or none, losses, metrics under either name, events of other
names) give the same tables both ways, as qlog JSON, JSON-SEQ and NDJSON; hand-made qlogs pin
what changed with the fast decoding (a value the reader does not read is not looked at)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldanalyze.io.qlog as qlog_module
from ldanalyze import read_trace
from ldanalyze.errors import TraceError, UsageError
from ldanalyze.io.qlog import parse

DATA = pathlib.Path(__file__).parents[1] / "data" / "qlog"
PACKET_TYPES = ("1RTT", "1RTT", "0RTT", "initial", "handshake", "INITIAL", None, "")
OTHER_NAMES = ("transport:datagrams_sent", "connectivity:spin_bit_updated", "security:key_updated", "x:y")
numbers = st.one_of(st.integers(-3, 2**64), st.sampled_from([0, 1, 7, 2**62 - 1, 2**62]))
values = st.one_of(
    st.none(), st.integers(-5, 10**6), st.floats(0, 1e6), st.sampled_from(["12", "x", "", True, [1], 10**400])
)


@st.composite
def packet(draw, name: str, t: float) -> dict:
    """A packet event of ``name``: its packet number and type in a header, or in the data
    itself (draft-00/01), or an empty header; a size where one format or another puts it."""
    fields: dict = {}
    ptype = draw(st.sampled_from(PACKET_TYPES))
    if ptype is not None:
        fields["packet_type"] = ptype
    if draw(st.booleans()):
        fields["packet_number"] = draw(numbers)
    if draw(st.booleans()):
        fields["dcid"] = draw(st.sampled_from(["", "c0ffee", "0a"]))
    where = draw(st.sampled_from(["header", "header", "data", "empty header"]))
    data: dict = (
        {"header": fields} if where == "header" else {**fields, "header": {}} if where == "empty header" else fields
    )
    size = draw(st.integers(0, 1500))
    place = draw(st.sampled_from(["raw", "header", "data", "none"]))
    if place == "raw":
        data["raw"] = {"length": size, "payload_length": 3}
    elif place == "header" and where == "header":
        data["header"]["packet_size"] = size
    elif place == "data":
        data["packet_size"] = size
    if name.endswith("packet_received"):
        data["frames"] = draw(st.lists(frame(), max_size=3))
    if name.endswith("packet_lost") and draw(st.booleans()):
        data["trigger"] = draw(st.sampled_from(["reordering_threshold", "time_threshold", "pto_expired", "other"]))
    if draw(st.booleans()):
        data["extra"] = {"nested": [1, {"deep": "x"}], "s": 'a "quoted" string'}
    return {"time": t, "name": name, "data": data}


@st.composite
def frame(draw) -> dict:
    """A frame: an ACK frame with ranges of two numbers, one, or (rarely) none; or another."""
    kind = draw(st.sampled_from(["ack", "ack", "ACK", "ack_ecn", "stream", "padding"]))
    if not kind.lower().startswith("ack"):
        return {"frame_type": kind, "length": 3}
    pairs = draw(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3)), max_size=3))
    ranges: list = [[lo, lo + span] if span else [lo] for lo, span in pairs]
    if draw(st.integers(0, 9)) == 0:
        ranges.append([])
    if draw(st.integers(0, 9)) == 0:
        ranges.append([2**62, 2**62 + 1])
    return {"frame_type": kind, "acked_ranges": ranges, "ack_delay": 0.5}


@st.composite
def metrics(draw, t: float) -> dict:
    keys = ["bytes_in_flight", "cwnd", "congestion_window", "smoothed_rtt", "rtt_variance", "latest_rtt"]
    data = {key: draw(values) for key in keys if draw(st.booleans())}
    name = draw(st.sampled_from(["recovery:metrics_updated", "quic:recovery_metrics_updated"]))
    return {"time": t, "name": name, "data": data if draw(st.integers(0, 9)) else None}


@st.composite
def events(draw) -> list[dict]:
    out = []
    for i in range(draw(st.integers(1, 40))):
        t = float(i) + draw(st.sampled_from([0.0, 0.25]))
        kind = draw(st.sampled_from(["sent", "sent", "received", "lost", "metrics", "other"]))
        if kind == "metrics":
            out.append(draw(metrics(t)))
        elif kind == "other":
            out.append(
                {"time": t, "name": draw(st.sampled_from(OTHER_NAMES)), "data": {"count": 1, "raw": [{"length": 1}]}}
            )
        else:
            prefix = draw(st.sampled_from(["transport", "quic"] if kind != "lost" else ["recovery", "quic"]))
            out.append(draw(packet(f"{prefix}:packet_{kind}", t)))
    return out


def write(tmp_path, shape: str, trace_events: list[dict], vantage: str = "server"):
    trace = {"vantage_point": {"type": vantage}, "common_fields": {"reference_time": 1.7e12}}
    path = tmp_path / f"x.{shape}"
    if shape == "json":
        path.write_text(json.dumps({"qlog_version": "0.3", "traces": [{**trace, "events": trace_events}]}))
    else:
        header = {"qlog_version": "0.3" if shape == "seq" else "draft-02", "trace": trace}
        separator = "\x1e" if shape == "seq" else ""
        path.write_text("".join(separator + json.dumps(r) + "\n" for r in [header, *trace_events]))
    return path


def read_both(path):
    """The trace read as the reader reads it (the fast decoding applies), and read with the
    general decoding only; or the errors each raised."""

    def read():
        try:
            return read_trace(path)
        except (TraceError, UsageError) as exc:  # the same both ways
            return f"{type(exc).__name__}: {exc}"

    assert parse.typed_documents(path.read_bytes()) is not None
    fast = read()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(qlog_module, "typed_documents", lambda raw: None)
        general = read()
    return fast, general


def assert_same(fast, general):
    if isinstance(fast, str) or isinstance(general, str):
        assert fast == general
        return
    assert fast.packets.equals(general.packets)
    assert fast.acks.equals(general.acks)
    assert fast.rtt.equals(general.rtt)
    assert fast.meta == general.meta


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events(), st.sampled_from(["json", "seq", "ndjson"]), st.sampled_from(["server", "client"]))
def test_both_decodings_read_alike(tmp_path, trace_events, shape, vantage):
    assert_same(*read_both(write(tmp_path, shape, trace_events, vantage)))


def test_a_name_first_met_late_is_learned(tmp_path):
    """Event names the fast decoding has not met make it decode again; one met after the first
    thousand events makes it scan the text for every name left, once."""
    sent = [{"time": i, "name": "transport:packet_sent", "data": {"header": {"packet_number": i}}} for i in range(3000)]
    late = [{"time": 3000 + i, "name": f"transport:late_{i}", "data": {}} for i in range(5)]
    closing = {"time": 4000, "name": "connectivity:connection_closed", "data": {"reason": "done"}}
    path = write(tmp_path, "json", [sent[0], {"time": 0, "name": "x:early", "data": {}}, *sent[1:], *late, closing])
    fast, general = read_both(path)
    assert_same(fast, general)
    assert len(fast.packets) == 3000 and fast.meta["events"] == 3007


def test_names_spelled_with_escapes(tmp_path):
    """An event name written with an escape (json.dumps writes "\\u00e9") is learned where met
    early, or where it is the first name met late; one met late after that (the scan of the
    text for every name cannot see it), the file is read the general way."""
    sent = [{"time": i, "name": "transport:packet_sent", "data": {"header": {"packet_number": i}}} for i in range(1500)]
    odd = {"time": 0, "name": "x:\u00e9t\u00e9", "data": {}}
    early = write(tmp_path, "seq", [odd, *sent])
    assert b"\\u00e9" in early.read_bytes() and parse.typed_documents(early.read_bytes()) is not None
    late = write(tmp_path, "json", [*sent, {**odd, "time": 2000}, {**odd, "name": "x:\u00f4t\u00e9"}])
    assert parse.typed_documents(late.read_bytes()) is None
    assert len(read_trace(late).packets) == len(read_trace(early).packets) == 1500


def test_an_empty_header_reads_the_datas_own_fields(tmp_path):
    events_ = [
        {"time": 1, "name": "transport:packet_sent", "data": {"header": {}, "packet_number": 4, "packet_type": "1RTT"}},
        {"time": 2, "name": "transport:packet_sent", "data": {"header": {"scid": "ab"}, "packet_number": 5}},
    ]
    trace = read_trace(write(tmp_path, "json", events_))
    assert trace.packets["seq"].tolist() == [4, 5] and trace.meta["traces"][0]["untyped_packets"] == 1


def test_an_ack_range_without_a_number_makes_its_packet_unreadable(tmp_path):
    """The whole packet received: its ACK frames, ranges and packet number (the other events read)."""
    ack = {"frame_type": "ack", "acked_ranges": [[0, 1], []]}
    events_ = [
        {"time": 1, "name": "transport:packet_sent", "data": {"header": {"packet_number": 0}}},
        {"time": 1, "name": "transport:packet_sent", "data": {"header": {"packet_number": 1}}},
        {"time": 9, "name": "transport:packet_received", "data": {"header": {"packet_number": 3}, "frames": [ack]}},
        {"time": 9, "name": "transport:packet_received", "data": {"frames": [{**ack, "acked_ranges": [[1]]}]}},
    ]
    trace = read_trace(write(tmp_path, "seq", events_))
    assert trace.packets["fate"].tolist() == ["unobserved", "delivered"]
    assert len(trace.acks) == 1 and trace.meta["traces"][0]["events_unreadable"] == 1


def test_a_value_not_read_is_not_looked_at(tmp_path):
    """Bytes that are no UTF-8 in a key or a string the reader does not read, and a number out of
    range there, leave the event read (the reader before the fast decoding called the event
    unreadable, or refused the file; and crashed on the key of a metrics event)."""
    events_ = [
        {"time": 1, "name": "transport:packet_sent", "data": {"header": {"packet_number": 0, "scid": "SCID"}}},
        {"time": 12345, "name": "recovery:metrics_updated", "data": {"bytes_in_flight": 1200, "KEY": 1}},
    ]
    path = write(tmp_path, "seq", events_)
    damaged = path.read_bytes().replace(b"SCID", b"\xce\x9a\xff").replace(b"KEY", b"\xbf\xea")
    path.write_bytes(damaged.replace(b"12345", b"1e999"))  # the time of a metrics event: never read
    trace = read_trace(path)
    assert trace.packets["seq"].tolist() == [0] and trace.meta["traces"][0]["events_unreadable"] == 0


def test_draft00_arrays_whose_event_is_a_list_are_events_of_no_interest(tmp_path):
    """An array's category or event that is no string (the reader crashed on a list there)."""
    trace = {
        "vantage_point": {"type": "server"},
        "event_fields": ["relative_time", "category", "event", "data"],
        "events": [
            ["0", "transport", "packet_sent", {"packet_type": "1RTT", "header": {"packet_number": "1"}}],
            ["5", "transport", ["packet_received"], {"frames": []}],
            ["6", {"x": 1}, "packet_received", {"frames": []}],
        ],
    }
    path = tmp_path / "d0.qlog"
    path.write_text(json.dumps({"qlog_version": "draft-00", "traces": [trace]}))
    read = read_trace(path)
    assert read.packets["seq"].tolist() == [1] and read.meta["traces"][0]["events_unreadable"] == 0


def test_the_bundled_qlogs_read_alike_both_ways():
    """The real qlogs of tests/data/qlog whose events are objects (the others are arrays: read
    the general way only)."""
    read_fast = 0
    for path in sorted(DATA.glob("*qlog*")):
        raw = parse.read_bytes(path)
        if parse.typed_documents(raw) is None:
            continue
        read_fast += 1
        fast = read_trace(path)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(qlog_module, "typed_documents", lambda raw: None)
            general = read_trace(path)
        assert_same(fast, general)
        assert np.isfinite(fast.packets["t_send"]).all()
    assert read_fast >= 3
