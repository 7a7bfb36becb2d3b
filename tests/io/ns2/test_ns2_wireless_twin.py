"""The ns-2 wireless reader (numba line scanner + vectorised assembly) against its plain twin
(tests/naive/ns2.py: one line at a time), on the bundled traces and on generated line mixes of
the three formats."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze.errors import TraceError
from ldanalyze.io.detect import NS2_WIRELESS_OLD, detect_format
from ldanalyze.io.ns2.wired import DATA_TYPES, FEEDBACK_TYPES
from ldanalyze.io.ns2.wireless import DROP_CAUSES, read_ns2_wireless
from ldanalyze.io.text import iter_lines
from ldanalyze.packets import make_packet_table, mark_vanished

from ...conftest import TRACES
from ...naive import ns2 as naive_ns2

COLUMNS = ["flow", "seq", "uid", "size", "t_send", "t_recv", "t_drop", "fate", "reason"]


def twin(path):
    """(packets, skipped lines) from the plain twin, or the line number it refuses."""
    lines = [text for _, text in iter_lines(path)]
    try:
        rows, skipped, _feedback = naive_ns2.read_ns2_wireless_naive(
            lines, set(DATA_TYPES), set(FEEDBACK_TYPES), DROP_CAUSES
        )
    except ValueError as exc:
        return int(re.match(r"line (\d+)", str(exc)).group(1)), None
    if not rows:
        return None, skipped
    table = pd.DataFrame(rows)
    packets = mark_vanished(make_packet_table(**{c: table[c].to_numpy() for c in COLUMNS}))
    return packets, skipped


def same(path):
    expected, skipped = twin(path)
    if isinstance(expected, int) or expected is None:
        with pytest.raises(TraceError) as info:
            read_ns2_wireless(path)
        if isinstance(expected, int):
            assert info.value.line == expected, str(info.value)
        return "refused"
    trace = read_ns2_wireless(path)
    got = trace.packets.sort_values("uid", ignore_index=True)
    want = expected.sort_values("uid", ignore_index=True)
    for column in COLUMNS:
        a, b = got[column], want[column]
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=column)
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), column
    assert trace.meta["skipped_lines"] == skipped
    return "read"


@pytest.mark.parametrize("path", sorted((TRACES / "wireless").glob("*.tr.gz")), ids=lambda p: p.name)
def test_bundled_wireless_traces_match_the_twin(path):
    assert same(path) == "read"


EVENTS = ("s", "r", "D", "f")
LEVELS = ("AGT", "RTR", "MAC", "IFQ")
REASONS = ("---", "---", "IFQ", "CBK", "RET", "END", "COL", "NRTE", "ARP", "XYZ")
TYPES = ("cbr", "cbr", "tcp", "ack", "AODV")


def old_line(ev, t, node, level, why, uid, ptype, src, dst, seq):
    return (
        f"{ev} {t:.9f} _{node}_ {level:>3} {why:>4} {uid} {ptype} 532 [13a 1 0 800] ------- "
        f"[{src[0]}:{src[1]} {dst[0]}:{dst[1]} 30 1] [{seq}] 0 0"
    )


def new_line(ev, t, node, level, why, uid, ptype, src, dst, seq):
    ev = "d" if ev == "D" else ev
    return (
        f"{ev} -t {t:.9f} -Hs {node} -Hd -2 -Ni {node} -Nx 0.00 -Ny 0.00 -Nz 0.00 -Ne -1.000000 -Nl {level} "
        f"-Nw {why} -Ma 0 -Md 0 -Ms 0 -Mt 0 -Is {src[0]}.{src[1]} -Id {dst[0]}.{dst[1]} -It {ptype} -Il 532 "
        f"-If 1 -Ii {uid} -Iv 32 -Pn {ptype} -Pi {seq} -Pf 0 -Po 0"
    )


def tagged_line(ev, t, node, level, why, uid, ptype, src, dst, seq):
    ev = {"s": "+", "f": "h", "D": "d"}.get(ev, ev)
    return (
        f"{ev} {t!r} -s {node} -d -1 -p {ptype} -k {level} -i {uid} -N:loc {{1.00 2.00 0.00}} "
        f"-N:en -1.000000 -M:dur 0 -M:s 0 -M:d 0 -M:t 0 -IP:s {src[0]} -IP:sp {src[1]} -IP:d {dst[0]} "
        f"-IP:dp {dst[1]} -p {ptype} -e 532 -c 1 -i {uid} -IP:ttl 32 -{ptype}:s {seq} -{ptype}:f 0"
    )


OTHER = (
    "M 5.00000 4 (200.00, 400.00, 0.00), (100.00, 300.00), 10.00",
    "N -t 1.001376 -n 3 -e 99.949874",
    "Sconfig 0.00000 tap: on snoop: rts? on errs? on",
    "SFs 1.02 _0_ 1 [0 -> 5] 1(1) to 5 [0 5]",
    "SSendFailure 2.0 _1_ 2 0",
    "",
)
WRITERS = (old_line, new_line, tagged_line)


@st.composite
def line_mix(draw):
    fmt = draw(st.sampled_from((0, 1, 2, None)))  # None: a mix of formats line by line
    t = 1.0
    out = []
    for _ in range(draw(st.integers(1, 60))):
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from(OTHER)))
            continue
        t += draw(st.sampled_from((0.0, 0.001, 0.25, 1 / 3)))
        node = draw(st.integers(0, 3))
        fields = dict(
            ev=draw(st.sampled_from(EVENTS)),
            t=t,
            node=node,
            level=draw(st.sampled_from(LEVELS)),
            why=draw(st.sampled_from(REASONS)),
            uid=draw(st.integers(0, 12)),
            ptype=draw(st.sampled_from(TYPES)),
            src=(draw(st.integers(0, 3)), draw(st.integers(0, 2))),
            dst=(draw(st.sampled_from((node, 1, -1))), draw(st.integers(0, 2))),
            seq=draw(st.integers(0, 20)),
        )
        writer = WRITERS[fmt if fmt is not None else draw(st.integers(0, 2))]
        if draw(st.integers(0, 6)) == 0:  # the MAC gives up and the routing agent echoes it
            out.append(writer(**{**fields, "ev": "D", "level": "MAC", "why": "RET"}))
            fields["t"] = t = t + draw(st.sampled_from((0.0, 0.001)))
            fields.update(ev="D", level="RTR", why="CBK")
        line = writer(**fields)
        if draw(st.integers(0, 30)) == 0:  # a damaged field
            tokens = line.split()
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(("x", "1.5", "[", "-", "1e3")))
            line = " ".join(tokens)
        out.append(line)
    return "\n".join(out) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line_mix())
def test_generated_line_mixes_match_the_twin(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("twin") / "mix.tr"
    path.write_text(text)
    same(path)


def test_an_old_trace_that_opens_with_node_movements_is_read(tmp_path):
    """ns-2's old wireless format writes a movement line per node at each ``setdest``; with 25
    nodes they fill the lines format detection reads, and the trace is still told old-format
    wireless and read (its packet lines as without them)."""
    moves = [f"M 0.50000 {k} (85.74, 169.41, 0.00), (24.64, 7.98), 1.23" for k in range(25)]
    packets = [
        f"{ev} {1 + k / 100:.9f} _{node}_ AGT  --- {3 + k} cbr 512 [0 0 0 0] ------- [0:0 7:0 32 0] [{k}] 0 0"
        for k in range(4)
        for ev, node in (("s", 0), ("r", 7))
    ]
    with_moves, without = tmp_path / "moves.tr", tmp_path / "plain.tr"
    with_moves.write_text("\n".join(moves + packets) + "\n")
    without.write_text("\n".join(packets) + "\n")
    assert detect_format(with_moves) == NS2_WIRELESS_OLD
    a, b = la.read_trace(with_moves).packets, la.read_trace(without).packets
    assert len(a) == 4 and a.equals(b)
