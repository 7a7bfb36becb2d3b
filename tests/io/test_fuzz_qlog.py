"""Fuzzing the qlog reader with mutations of real qlogs (tests/data/qlog): a window of events of
aioquic's download as qlog 0.3 JSON and as JSON-SEQ, and of qvis's draft-01 and quic-trace's
draft-00 traces, damaged byte-wise (bit flips, truncations, spliced, duplicated and dropped
bytes) or value-wise (a number, string or structure replaced by an extreme or a wrong-typed
value). The reader may refuse a file with one of the project's errors, never with anything
else; what it accepts keeps every packet accounted for (per flow, delivered + lost +
unobserved = sent) and its tables in their schema."""

from __future__ import annotations

import gzip
import json
import pathlib
import re
import tempfile
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldanalyze import read_trace
from ldanalyze.errors import TraceError, UsageError
from ldanalyze.packets import ACK_COLUMNS, validate_packets

DATA = pathlib.Path(__file__).parents[1] / "data" / "qlog"
WINDOW = 120


def _window(name: str) -> dict:
    doc = json.loads(gzip.decompress((DATA / name).read_bytes()))
    doc["traces"] = [{**t, "events": t["events"][:WINDOW]} for t in doc["traces"][:1]]
    return doc


def _seq(doc: dict) -> bytes:
    (trace,) = doc["traces"]
    header = {
        "qlog_version": "0.3",
        "qlog_format": "JSON-SEQ",
        "trace": {k: v for k, v in trace.items() if k != "events"},
    }
    return b"".join(b"\x1e" + json.dumps(r).encode() + b"\n" for r in [header, *trace["events"]])


AIOQUIC = _window("aioquic_server.qlog.gz")
SOURCES = {
    "json-0.3": json.dumps(AIOQUIC).encode(),
    "json-seq": _seq(AIOQUIC),
    "draft-01": json.dumps(_window("qvis_parallel_10_50KB_f5.qlog.gz"), indent=1).encode(),
    "draft-00": json.dumps(_window("qvis_quictrace_example_github.qlog.gz")).encode(),
}
VALUES = (b"null", b"-1", b"1e308", b"18446744073709551617", b'"x"', b"[]", b"{}", b'"1RTT"', b"true", b"[[1]]")
TOKEN = re.compile(rb'-?\d+(\.\d+)?|"[^"\\]*"|\[\]|\{\}|true|false|null')


@st.composite
def damaged(draw, name: str) -> bytes:
    data = bytearray(SOURCES[name])
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(("flip", "truncate", "splice", "duplicate", "drop", "value", "value", "value")))
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[draw(st.integers(len(data) // 2, len(data))) :]
        elif kind == "splice":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 300))]
        elif kind == "drop":
            del data[at : at + draw(st.integers(1, 300))]
        else:  # a JSON value (a number, a string, an empty container) replaced by another
            found = TOKEN.search(bytes(data), at)
            if found:
                data[found.start() : found.end()] = draw(st.sampled_from(VALUES))
        if len(data) < 8:
            break
    return bytes(data)


def _read(data: bytes, compress: bool):
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "fuzz.qlog"
        path.write_bytes(gzip.compress(data) if compress else data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return read_trace(path)


def _check(data: bytes, compress: bool) -> None:
    try:
        trace = _read(data, compress)
    except (TraceError, UsageError):
        return
    packets = trace.packets
    validate_packets(packets)
    assert trace.view == "sender"
    assert set(packets["fate"].astype(str)) <= {"delivered", "lost", "unobserved"}
    declared = np.isfinite(packets["t_detect"].to_numpy())
    acked = np.isfinite(packets["t_ack"].to_numpy())
    assert ((packets["fate"] == "lost").to_numpy() == (declared & ~acked)).all()
    assert ((packets["fate"] == "unobserved").to_numpy() == (~declared & ~acked)).all()
    delivered = (packets["fate"] == "delivered").to_numpy()
    assert np.isfinite(packets["t_ack"].to_numpy()[delivered]).all()
    assert (packets["spurious"].astype(str) != "").sum() <= np.isfinite(packets["t_detect"].to_numpy()).sum()
    assert list(trace.acks.columns) == list(ACK_COLUMNS)
    assert (trace.acks["newly"] >= 0).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SOURCES)), st.data(), st.booleans())
def test_damaged_qlogs_are_read_or_refused_cleanly(name, data, compress):
    _check(data.draw(damaged(name)), compress)


def test_the_sources_read_whole():
    for name, data in SOURCES.items():
        trace = _read(data, False)
        assert len(trace.packets), name
