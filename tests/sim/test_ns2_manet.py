"""ns-2 wireless traces of mobile ad hoc runs (traces/wireless/manet.tcl, the real ns-2.35):
every routing agent × trace format, and runs with frame errors at every radio, against an
independent count of the raw lines (traces/wireless/flowcounts.awk), and the cause table's rules
on hand-written lines.
"""

from __future__ import annotations

import subprocess
import warnings

import pandas as pd
import pytest

from ldanalyze import build_timeline, read_trace
from ldanalyze.errors import TraceError, UsageError

from ..conftest import TRACES, needs_binary, require_binary

AGENTS = ("DSDV", "AODV", "DSR")
FORMATS = ("old", "new", "tagged")
# a fast-moving run over a wide area, so that routes break under every agent
SCENARIO = dict(x=1000, y=500, speed=20, pause=0, duration=20, seed=1)

# the documented table (ldanalyze/io/ns2/wireless.py), restated: "LEVEL/REASON" of the last drop
ORACLE_CAUSES = {
    "IFQ/---": "congestion",
    "IFQ/IFQ": "congestion",
    "MAC/ERR": "wireless",
    "MAC/COL": "wireless",
    "MAC/RET": "wireless",
    "RTR/IFQ": "route",
    "RTR/NRTE": "route",
    "RTR/TOUT": "route",
    "RTR/CBK": "route",
    "RTR/LOOP": "route",
    "RTR/TTL": "route",
    "RTR/SAL": "route",
    "IFQ/ARP": "route",
    "IFQ/END": "in flight",
    "(none)": "in flight",
}


@pytest.fixture(scope="module")
def manet(tmp_path_factory):
    """Path of the trace of each (agent, format), built once per test session."""
    ns = require_binary("ns")
    work = tmp_path_factory.mktemp("manet")
    paths = {}
    for agent in AGENTS:
        for fmt in FORMATS:
            out = work / f"{agent}_{fmt}.tr"
            args = [f"{k}={v}" for k, v in SCENARIO.items()] + [f"rp={agent}", f"format={fmt}", f"out={out}"]
            subprocess.run(
                [ns, str(TRACES / "wireless" / "manet.tcl"), *args],
                check=True,
                capture_output=True,
                timeout=300,
                cwd=work,
            )
            paths[agent, fmt] = out
        for retries in (2, 7):  # frame errors at every radio (per=): the MAC's retries absorb most
            out = work / f"{agent}_per_r{retries}.tr"
            args = [f"{k}={v}" for k, v in SCENARIO.items()] + [f"rp={agent}", "per=0.1", f"retries={retries}"]
            subprocess.run(
                [ns, str(TRACES / "wireless" / "manet.tcl"), *args, f"out={out}"],
                check=True,
                capture_output=True,
                timeout=300,
                cwd=work,
            )
            paths[agent, f"per_r{retries}"] = out
    return paths


def oracle(path) -> pd.DataFrame:
    """flowcounts.awk's tables → per data flow: sent, delivered, and lost packets by cause."""
    text = subprocess.run(
        ["awk", "-f", str(TRACES / "wireless" / "flowcounts.awk"), str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    counts, by_last = text.split("LOST by last drop line:")
    rows = {}
    for line in counts.strip().splitlines()[1:]:
        flow, _fid, kind, sent, _recv, delivered, *_ = line.split()
        if kind != "ack":
            src, dst = flow.split(">")
            rows[src.replace(":", ".") + ">" + dst.replace(":", ".")] = {"sent": int(sent), "delivered": int(delivered)}
    header, *lines = by_last.strip().splitlines()
    reasons = header.split()[1:]
    for line in lines:
        flow, *values = line.split()
        src, dst = flow.split(">")
        key = src.replace(":", ".") + ">" + dst.replace(":", ".")
        if key not in rows:
            continue
        for reason, value in zip(reasons, values):
            cause = ORACLE_CAUSES.get(reason, "lost")
            rows[key][cause] = rows[key].get(cause, 0) + int(value)
    return pd.DataFrame.from_dict(rows, orient="index").fillna(0).astype(int)


def summary(path) -> pd.DataFrame:
    return build_timeline(read_trace(path)).summary().set_index("flow")


@pytest.mark.ns2
@needs_binary("ns")
@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("fmt", ("old", "new", "per_r2", "per_r7"))
def test_every_agent_and_format_agrees_with_the_raw_line_count(manet, agent, fmt):
    expected = oracle(manet[agent, fmt])
    got = summary(manet[agent, fmt]).reindex(expected.index)
    for column in ("sent", "delivered", "congestion", "wireless", "route"):
        assert got[column].tolist() == expected.get(column, 0 * expected["sent"]).tolist(), column
    # no drop line, or END: in flight at the end, or vanished when a later packet got through;
    # a last drop line of no cause (a MAC DUP of a packet never delivered): lost
    none = 0 * expected["sent"]
    in_flight = got["unobserved"] + got["lost"]
    assert in_flight.tolist() == (expected.get("in flight", none) + expected.get("lost", none)).tolist()
    assert (got["sent"] == got["delivered"] + got["losses"] + got["unobserved"]).all()


@pytest.mark.ns2
@needs_binary("ns")
def test_the_runs_hold_every_cause(manet):
    """The scenario is a real test: routes break (route drops under every agent), queues overflow."""
    totals = {agent: summary(manet[agent, "old"]).sum() for agent in AGENTS}
    assert all(t["route"] > 0 for t in totals.values())
    assert all(t["congestion"] > 0 for a, t in totals.items() if a != "DSDV")
    assert sum(t["wireless"] for t in totals.values()) > 0
    assert all(t["unobserved"] > 0 for t in totals.values())  # IFQ END at the run's end


@pytest.mark.ns2
@needs_binary("ns")
def test_frame_errors_become_losses_as_the_retries_run_out(manet):
    """With a 10 % frame error rate at every radio, 2 retries let the radio's losses through
    (MAC RET: wireless), 7 absorb nearly all of them: what a link layer that retransmits does."""
    for agent in AGENTS:
        few, many = (summary(manet[agent, f"per_r{r}"]).sum() for r in (2, 7))
        assert few["wireless"] > 5 * max(many["wireless"], 1) and few["wireless"] >= 20, agent


@pytest.mark.ns2
@needs_binary("ns")
@pytest.mark.parametrize("agent", AGENTS)
def test_old_new_and_tagged_twins_read_the_same(manet, agent):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old, new, tagged = (read_trace(manet[agent, fmt]) for fmt in FORMATS)
    assert (old.format, new.format, tagged.format) == tuple(f"ns2-wireless-{fmt}" for fmt in FORMATS)
    assert old.packets.equals(new.packets)
    a, b = old.packets, tagged.packets
    same = ["flow", "seq", "uid", "size", "t_recv"]
    pd.testing.assert_frame_equal(
        a[same].reset_index(drop=True), b[same].reset_index(drop=True), check_categorical=False, atol=1e-8
    )
    # the tagged format prints no drop reason: ARP's drops read as queue drops there
    arp = (a["reason"] == "IFQ ARP").to_numpy()
    assert (b["fate"].to_numpy()[arp] == "congestion").all()
    assert (a["fate"].to_numpy()[~arp] == b["fate"].to_numpy()[~arp]).all()
    # ... and the reader says so, with the count of losses that may be ARP's
    queue = int(a["reason"].isin(["IFQ ---", "IFQ IFQ", "IFQ ARP"]).sum())
    notes = tagged.meta.get("notes", [])
    assert "notes" not in old.meta and "notes" not in new.meta
    assert queue > 0  # every agent's run overflows a queue or ARP's buffer
    assert len(notes) == 1 and notes[0].split(": ")[1].startswith(f"{queue} loss(es) counted as congestion")
    assert any(str(w.message) == notes[0] for w in caught)


@pytest.mark.ns2
@needs_binary("ns")
def test_dsr_log_lines_are_skipped_and_counted(manet):
    meta = read_trace(manet["DSR", "old"]).meta
    assert meta["skipped_lines"]["Sconfig"] > 0 and meta["skipped_lines"]["SFs"] > 0
    assert meta["causes"]["RTR IFQ"] == "route"


# --- the rules on hand-written lines ---------------------------------------------------------

SEND = "s {t:.9f} _0_ AGT  --- {uid} cbr 512 [0 0 0 0] ------- [0:0 2:0 32 0] [{seq}] 0 0"
RECV = "r {t:.9f} _2_ AGT  --- {uid} cbr 532 [13a 2 1 800] ------- [0:0 2:0 30 2] [{seq}] 2 0"
DROP = "D {t:.9f} _{node}_ {level:>3} {why:>4} {uid} cbr 532 [0 0 0 800] ------- [0:0 2:0 30 1] [{seq}] 0 0"


def lines(drops, *, delivered=()):
    """One packet per drop list entry ``[(level, why, t), ...]``; then the delivered ones."""
    out = []
    for uid, steps in enumerate(drops):
        out.append(SEND.format(t=1.0 + uid, uid=uid, seq=uid))
        out += [DROP.format(t=t, node=1, level=level, why=why, uid=uid, seq=uid) for level, why, t in steps]
    for uid in delivered:
        out.append(SEND.format(t=1.0 + uid, uid=uid, seq=uid))
        out.append(RECV.format(t=1.5 + uid, uid=uid, seq=uid))
    return out


@pytest.mark.parametrize(
    "steps, fate",
    [
        ([("IFQ", "---", 1.1)], "congestion"),
        ([("IFQ", "IFQ", 1.1)], "congestion"),
        ([("RTR", "IFQ", 1.1)], "route"),  # the route-wait buffer, not the interface queue
        ([("RTR", "NRTE", 1.1)], "route"),
        ([("RTR", "CBK", 1.1)], "route"),  # link break with no MAC retry failure
        ([("MAC", "RET", 1.1), ("RTR", "CBK", 1.1)], "wireless"),  # CBK echoing the RET
        ([("RTR", "CBK", 1.1), ("MAC", "RET", 1.1)], "wireless"),
        ([("MAC", "RET", 1.1), ("RTR", "CBK", 1.2)], "route"),  # a later callback decides
        ([("MAC", "COL", 1.1)], "wireless"),
        ([("RTR", "XYZ", 1.1)], "lost"),
    ],
)
def test_cause_of_the_last_drop_line(write_trace, steps, fate):
    p = read_trace(write_trace(lines([steps], delivered=[1]))).packets
    assert p.loc[p["uid"] == 0, "fate"].item() == fate


def test_end_of_run_drops_are_in_flight_not_vanished(write_trace):
    # packet 0 was flushed at the end although packet 1, sent later, got through
    p = read_trace(write_trace(lines([[("IFQ", "END", 9.0)]], delivered=[1]))).packets
    assert p.loc[p["uid"] == 0, ["fate", "reason"]].values.tolist() == [["unobserved", "IFQ END"]]


def test_the_cause_table_can_be_amended(write_trace):
    path = write_trace(lines([[("RTR", "CBK", 1.1)]], delivered=[1]))
    p = read_trace(path, causes={"RTR CBK": "wireless"}).packets
    assert p.loc[p["uid"] == 0, "fate"].item() == "wireless"
    with pytest.raises(UsageError, match="LEVEL REASON"):
        read_trace(path, causes={"CBK": "wireless"})
    with pytest.raises(UsageError, match="route"):
        read_trace(path, causes={"RTR CBK": "radio"})


def test_tagged_lines_with_braced_values(write_trace):
    common = "-N:loc {1.00 2.00 0.00} -N:en -1.000000 -M:dur 0 -M:s 0 -M:d 0 -M:t 0 -IP:s 0 -IP:sp 0 -IP:d 2 -IP:dp 0"
    text = [
        f"+ 1 -s 0 -d -1 -p cbr -k AGT -i 7 {common} -p cbr -e 512 -c 1 -i 7 -IP:ttl 32 -cbr:s 3 -cbr:f 0 -cbr:o 0",
        f"r 1.5 -s 2 -d 2 -p cbr -k AGT -i 7 {common} -p cbr -e 532 -c 1 -i 7 -IP:ttl 30 -cbr:s 3 -cbr:f 1 -cbr:o 0",
        f"+ 2 -s 0 -d -1 -p cbr -k AGT -i 8 {common} -p cbr -e 512 -c 1 -i 8 -IP:ttl 32 -cbr:s 4 -cbr:f 0 -cbr:o 0",
        f"d 2.1 -s 0 -d 1 -p cbr -k RTR -i 8 {common} -p cbr -e 532 -c 1 -i 8 -IP:ttl 32 -cbr:s 4 -cbr:f 0 -cbr:o 0",
    ]
    trace = read_trace(write_trace(text))
    p = trace.packets
    assert trace.format == "ns2-wireless-tagged"
    assert p[["flow", "seq", "size", "fate", "reason"]].astype(str).values.tolist() == [
        ["0.0>2.0", "3", "512", "delivered", ""],
        ["0.0>2.0", "4", "512", "route", "RTR ?"],
    ]


def test_other_line_kinds_are_skipped_unless_nothing_parses(write_trace):
    text = ["Sconfig 0.00000 tap: on snoop: rts? on errs? on", "SFs 1.0 _0_ 1 [0 -> 5] 1(1) to 5 [0 5]"]
    trace = read_trace(write_trace(text + lines([], delivered=[0])))
    assert trace.meta["skipped_lines"] == {"Sconfig": 1, "SFs": 1}
    with pytest.raises(TraceError, match="no ns-2 wireless packet line"):
        read_trace(
            write_trace(text + ["M 5.00000 4 (200.00, 400.00, 0.00), (100.00, 300.00), 10.00"]),
            format="ns2-wireless-old",
        )


def test_new_format_line_without_a_node_is_a_clear_error(write_trace):
    line = "s -t 1.0 -Nl AGT -Nw --- -Is 0.0 -Id 2.0 -It cbr -Il 512 -If 1 -Ii 0 -Pn cbr -Pi 0"
    with pytest.raises(TraceError, match=r":1: malformed ns-2 wireless line \(no node"):
        read_trace(write_trace([line]))


def test_cli_amends_the_drop_table_and_maps_route_losses(write_trace, capsys):
    from ldanalyze.cli import main

    path = str(write_trace(lines([[("RTR", "CBK", 1.1)], [("IFQ", "---", 2.1)]], delivered=[2, 3])))
    assert main(["inspect", path]) == 0
    out = capsys.readouterr().out
    assert "route: losses to routing and mobility" in out
    assert main(["inspect", path, "--drop-cause", "RTR CBK=wireless", "--json"]) == 0
    assert '"RTR CBK": "wireless"' in capsys.readouterr().out
    assert (
        main(
            [
                "score",
                path,
                "--lda",
                "biaz",
                "--bootstrap",
                "0",
                "--controller",
                "none",
                "--format",
                "csv",
                "--route-as",
                "wireless",
            ]
        )
        == 0
    )
    row = capsys.readouterr().out.splitlines()
    header, values = row[0].split(","), row[1].split(",")
    record = dict(zip(header, values))
    assert (record["route_as"], record["route"], record["wireless"], record["congestion"]) == (
        "wireless",
        "1",
        "1",
        "1",
    )
    assert main(["inspect", path, "--drop-cause", "RTR CBK=radio"]) == 2
    assert "causes: 'RTR CBK': 'radio'" in capsys.readouterr().err
