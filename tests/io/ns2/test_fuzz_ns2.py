"""Fuzzing the ns-2 readers with mutations of real ns-2.35 output.

Each example takes a window of lines from a bundled trace (the real simulator's output) or
from a tagged-format line set, damages it (bit flips, truncation, spliced bytes, dropped and
duplicated lines, a field replaced by ``nan``, ``-1``, a huge number or garbage) and reads it.
The reader may refuse the file with one of the project's errors, never with anything else;
what it accepts must keep every packet accounted for: per flow, delivered + losses +
unobserved = sent.
"""

from __future__ import annotations

import gzip
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldanalyze import build_timeline, read_trace
from ldanalyze.errors import TraceError, UsageError

from ...conftest import TRACES

SOURCES = {
    "wired": TRACES / "wlh_mix_4flow_high.tr.gz",
    "wireless-old": TRACES / "wireless" / "wlan_old.tr.gz",
    "wireless-new": TRACES / "wireless" / "wlan_new.tr.gz",
    "wireless-energy": TRACES / "wireless" / "wlan_simple_old.tr.gz",
}
WINDOW = 400
FIELD_VALUES = ("nan", "-1", "inf", "99999999999999999999999", "-0", "", "x", "[", "1e308", "_-3_", "{")


def _lines(path) -> list[bytes]:
    with gzip.open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


LINES = {name: _lines(path) for name, path in SOURCES.items()}


@st.composite
def damaged(draw, name: str) -> bytes:
    lines = LINES[name]
    start = draw(st.integers(0, len(lines) - WINDOW))
    window = list(lines[start : start + WINDOW])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("flip", "truncate", "splice", "drop", "duplicate", "field")))
        i = draw(st.integers(0, len(window) - 1))
        line = window[i]
        if kind == "flip" and line:
            at = draw(st.integers(0, len(line) - 1))
            window[i] = line[:at] + bytes([line[at] ^ (1 << draw(st.integers(0, 7)))]) + line[at + 1 :]
        elif kind == "truncate":
            window[i] = line[: draw(st.integers(0, len(line)))]
        elif kind == "splice":
            window[i] = line[: len(line) // 2] + draw(st.binary(min_size=1, max_size=12)) + line[len(line) // 2 :]
        elif kind == "drop":
            del window[i]
        elif kind == "duplicate":
            window.insert(draw(st.integers(0, len(window))), line)
        else:
            fields = line.split()
            if fields:
                j = draw(st.integers(0, len(fields) - 1))
                fields[j] = draw(st.sampled_from(FIELD_VALUES)).encode()
                window[i] = b" ".join(fields) + b"\n"
        if not window:
            window = [b"\n"]
    return b"".join(window)


def check(path) -> str:
    """Read a damaged file: a project error, or a trace whose packets all have one fate."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a damaged trace may well warn
            trace = read_trace(path)
    except (TraceError, UsageError):
        return "refused"
    summary = build_timeline(trace).summary()
    assert (summary["delivered"] + summary["losses"] + summary["unobserved"] == summary["sent"]).all()
    assert trace.packets["t_send"].notna().all()
    return "read"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_damaged_real_traces_are_read_or_refused_cleanly(tmp_path_factory, name):
    outcomes = {"refused": 0, "read": 0}

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(damaged(name))
    def run(data):
        path = tmp_path_factory.mktemp("fuzz") / "damaged.tr"
        path.write_bytes(data)
        outcomes[check(path)] += 1

    run()
    print(f"fuzz {name}: {outcomes}")
    # both outcomes occur: the mutations are neither all harmless nor all fatal
    assert outcomes["read"] > 0 and outcomes["refused"] > 0, outcomes


TAGGED = (
    "+ 1 -s 0 -d -1 -p cbr -k AGT -i {uid} -N:loc {{1.0 2.0 0.0}} -N:en -1.000000 -M:dur 0 -M:s 0 -M:d 0 -M:t 0 "
    "-IP:s 0 -IP:sp 0 -IP:d 2 -IP:dp 0 -p cbr -e 512 -c 1 -i {uid} -IP:ttl 32 -cbr:s {uid} -cbr:f 0 -cbr:o 0\n",
    "r 1.5 -s 2 -d 2 -p cbr -k AGT -i {uid} -N:loc {{1.0 2.0 0.0}} -N:en -1.000000 -M:dur 13a -M:s 2 -M:d 0 "
    "-M:t 800 -IP:s 0 -IP:sp 0 -IP:d 2 -IP:dp 0 -p cbr -e 532 -c 1 -i {uid} -IP:ttl 30 -cbr:s {uid} -cbr:f 1 -cbr:o 0\n",
    "d 1.2 -s 1 -d 2 -p cbr -k IFQ -i {uid} -N:loc {{1.0 2.0 0.0}} -N:en -1.000000 -M:dur 0 -M:s 2 -M:d 1 -M:t 800 "
    "-IP:s 0 -IP:sp 0 -IP:d 2 -IP:dp 0 -p cbr -e 532 -c 1 -i {uid} -IP:ttl 30 -cbr:s {uid} -cbr:f 0 -cbr:o 0\n",
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30)), min_size=1, max_size=40),
    st.integers(0, 10_000),
    st.binary(max_size=8),
)
def test_damaged_tagged_lines_are_read_or_refused_cleanly(tmp_path_factory, events, cut, junk):
    text = "".join(TAGGED[kind].format(uid=uid) for kind, uid in events).encode()
    cut = min(cut, len(text))
    path = tmp_path_factory.mktemp("fuzz") / "tagged.tr"
    path.write_bytes(text[:cut] + junk + text[cut:])
    check(path)
