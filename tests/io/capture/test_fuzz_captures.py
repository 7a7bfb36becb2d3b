"""Fuzzing the capture readers with mutations of real captures (tests/data/real, the bundled lab
chain) and of a generated one of flows in tunnels (GTP-U, VXLAN, GRE, IP-in-IP, nested): bit flips, truncations, spliced bytes, duplicated and dropped byte ranges. The reader may
refuse a file with one of the project's errors, never with anything else, and what it accepts
keeps every packet accounted for (per flow, delivered + losses + unobserved = sent)."""

from __future__ import annotations

import pathlib
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze.errors import TraceError, UsageError
from ldanalyze.io.capture.fields import FieldSpec

from ...conftest import TRACES
from ...support.tunnels import tunnel_capture

REAL = pathlib.Path(__file__).parents[2] / "data" / "real"
SOURCES = sorted(REAL.glob("*.pcap*")) + [
    TRACES / "captures" / "lab_receiver.pcap",
    REAL / "tcp" / "retransmit-fast009.pcap",
]
DATA = {p.name: p.read_bytes() for p in SOURCES}


def _tunnelled() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "tunnels.pcap"
        tunnel_capture(path)
        return path.read_bytes()


DATA["tunnels.pcap"] = _tunnelled()
OPTIONS = {
    "tunnels.pcap": {"payload": FieldSpec.parse("seq=0:4,time=4:8:ns")},  # its flows' sequence field
    "retransmit-fast009.pcap": {"vantage": "sender"},  # TCP read at its sender (its host the TTLs do not tell)
}


@st.composite
def damaged(draw, name: str) -> bytes:
    data = bytearray(DATA[name])
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(("flip", "truncate", "splice", "duplicate", "drop", "field")))
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[draw(st.integers(max(24, len(data) // 2), len(data))) :]
        elif kind == "splice":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "duplicate":
            size = draw(st.integers(1, 200))
            data[at:at] = data[at : at + size]
        elif kind == "drop":
            del data[at : at + draw(st.integers(1, 200))]
        else:  # a 32-bit field (a length, a timestamp) replaced by an extreme value
            data[at : at + 4] = draw(st.sampled_from((b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff")))
        if len(data) < 24:
            break
    return bytes(data)


@pytest.mark.parametrize("name", sorted(DATA))
def test_damaged_real_captures_are_read_or_refused_cleanly(tmp_path_factory, name):
    outcomes = {"refused": 0, "read": 0}

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(damaged(name))
    def run(data):
        path = tmp_path_factory.mktemp("fuzz") / name
        path.write_bytes(data)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trace = la.read_trace(path, **OPTIONS.get(name, {}))
        except (TraceError, UsageError):
            outcomes["refused"] += 1
            return
        summary = la.build_timeline(trace).summary()
        assert (summary["delivered"] + summary["losses"] + summary["unobserved"] == summary["sent"]).all()
        outcomes["read"] += 1

    run()
    print(f"fuzz {name}: {outcomes}")
    assert outcomes["read"] + outcomes["refused"] >= 20 and outcomes["read"] > 0
