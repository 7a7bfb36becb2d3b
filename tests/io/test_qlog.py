"""QUIC qlogs into the sender's view (ldanalyze/io/qlog/).

Real qlogs (tests/data/qlog/SOURCES.md) against a plain count of their events, read here with
the standard library's ``json``; hand-made qlogs pinning each rule; the ACK coverage kernel
against its plain twin."""

from __future__ import annotations

import gzip
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze import TraceError, read_trace
from ldanalyze.errors import UsageError
from ldanalyze.io.detect import QLOG, detect_format
from ldanalyze.io.qlog.fates import ack_coverage
from ldanalyze.packets import SENDER_COLUMNS, validate_packets

from ..naive import qlog as naive

DATA = pathlib.Path(__file__).parents[1] / "data" / "qlog"
REAL = sorted(p.name for p in DATA.glob("*qlog*"))
ROOT = pathlib.Path(__file__).parents[2]


# ---------------------------------------------------------------- the oracle: a plain event count


def plain_traces(path: pathlib.Path) -> list[dict]:
    """Each trace of a qlog as a vantage and its events as (name, data) pairs, read with ``json``."""
    raw = gzip.decompress(path.read_bytes()) if path.read_bytes()[:2] == b"\x1f\x8b" else path.read_bytes()
    if raw.lstrip().startswith(b"\x1e"):
        records = [json.loads(r) for r in raw.split(b"\x1e") if r.strip()]
        traces = [{**records[0]["trace"], "events": records[1:]}]
    else:
        traces = json.loads(raw)["traces"]
    out = []
    for trace in traces:
        fields = [f.lower() for f in trace.get("event_fields") or []]
        events = []
        for ev in trace["events"]:
            if fields:
                if len(ev) < len(fields):
                    continue
                row = dict(zip(fields, ev))
                name = f"{row['category']}:{row.get('event_type', row.get('event'))}".lower()
                events.append((name, row["data"]))
            else:
                events.append((ev["name"], ev["data"]))
        vantage = trace.get("vantage_point") or {}
        kind = vantage.get("type", "").lower()
        out.append({"vantage": vantage.get("flow") if kind == "network" else kind, "events": events})
    return out


def packet_type(data: dict) -> str:
    return str((data.get("header") or {}).get("packet_type") or data.get("packet_type") or data.get("type") or "")


def application(data: dict) -> bool:
    return packet_type(data).lower() not in ("initial", "handshake", "retry", "version_negotiation")


def plain_counts(events, peer_events=()) -> dict:
    """Packets sent, declared lost, acknowledged (by any ACK range), received by the peer (its
    packet_received), ACK frames: 1-RTT only."""
    sent = [int(d["header"]["packet_number"]) for n, d in events if n.endswith("packet_sent") and application(d)]
    lost = {
        int(d.get("packet_number", (d.get("header") or {}).get("packet_number")))
        for n, d in events
        if n.endswith("packet_lost") and application(d)
    }
    acked = set()
    frames = 0
    for n, d in events:
        if n.endswith("packet_received") and application(d):
            for frame in d.get("frames") or []:
                if frame.get("frame_type") in ("ack", "ACK", "ack_ecn"):
                    frames += 1
                    for r in frame.get("acked_ranges") or []:
                        acked.update(range(int(r[0]), int(r[-1]) + 1))
    received = {
        int(d["header"]["packet_number"])
        for n, d in peer_events
        if n.endswith("packet_received") and application(d) and "packet_number" in (d.get("header") or {})
    }
    sent_set = set(sent)
    return {
        "sent": len(sent),
        "declared": len(lost & sent_set),
        "delivered": len((acked | received) & sent_set),
        "lost": len((lost - acked - received) & sent_set),
        "received": len(received & sent_set),
        "frames": frames,
    }


def peer_events(traces: list[dict], trace: dict) -> list:
    """The events of the other endpoint's trace in the same file (the test files hold one connection each)."""
    other = {"server": "client", "client": "server"}.get(trace["vantage"])
    return next((t["events"] for t in traces if t["vantage"] == other), [])


@pytest.mark.parametrize("name", REAL)
def test_real_qlogs_agree_with_a_plain_count(name):
    path = DATA / name
    assert detect_format(path) == QLOG
    trace = read_trace(path)
    assert trace.view == "sender" and trace.format == "qlog"
    validate_packets(trace.packets)
    assert list(trace.packets.columns[-len(SENDER_COLUMNS) :]) == list(SENDER_COLUMNS)
    by_flow = {s["flow"]: s for s in trace.meta["traces"] if s["flow"]}
    traces = plain_traces(path)
    plain = [(t, plain_counts(t["events"], peer_events(traces, t))) for t in traces]
    assert len(plain) == len(trace.meta["traces"])
    for (t, counts), summary in zip(plain, trace.meta["traces"]):
        if not counts["sent"]:
            assert summary["flow"] is None
            continue
        rows = trace.packets[trace.packets["flow"] == summary["flow"]]
        assert summary["vantage"] == t["vantage"]
        assert len(rows) == counts["sent"], name
        assert int(np.isfinite(rows["t_detect"]).sum()) == counts["declared"]
        assert int((rows["fate"] == "delivered").sum()) == counts["delivered"]
        assert int((rows["fate"] == "lost").sum()) == counts["lost"]
        assert int(np.isfinite(rows["t_recv"]).sum()) == counts["received"]
        acks = trace.acks[trace.acks["flow"] == summary["flow"]]
        assert len(acks) == counts["frames"]
        assert acks["newly"].sum() == rows.loc[np.isfinite(rows["t_ack"]), "size"].sum()
    assert set(by_flow) == set(trace.packets["flow"].astype(str))


def test_the_aioquic_download_has_real_and_spurious_losses():
    """The generated download (SOURCES.md): declared losses, most of the late ones acknowledged
    afterwards; JSON and JSON-SEQ of the same events read alike."""
    trace = read_trace(DATA / "aioquic_server.qlog.gz")
    seq = read_trace(DATA / "aioquic_server.sqlog.gz")
    assert trace.meta["qlog_format"] == "JSON" and seq.meta["qlog_format"] == "JSON-SEQ"
    assert trace.packets.equals(seq.packets) and trace.acks.equals(seq.acks)
    p = trace.packets
    assert p["flow"].astype(str).unique().tolist() == ["quic 3fe8880fd4a2167e server>client"]
    assert (p["spurious"] == "acked").sum() == 24 and (p["fate"] == "lost").sum() == 12
    assert ((p["spurious"] == "acked") == (p["reason"] == "acked after declared lost")).all()
    assert (p.loc[p["spurious"] == "acked", "t_ack"] > p.loc[p["spurious"] == "acked", "t_detect"]).all()
    assert (p["loss_trigger"][np.isfinite(p["t_detect"])] == "other").all()  # aioquic logs no trigger
    assert trace.meta["time"] == "epoch" and 1.7e9 < p["t_send"].min() < 2e9
    assert (p["in_flight"] >= 0).all()
    assert (trace.acks["cwnd"].iloc[:-1] > 0).all()  # the last ACK: aioquic logged no metrics after it


def test_rtt_samples_match_the_latest_rtt_aioquic_logged():
    """RFC 9002 §5.1's latest_rtt, taken from the log's times, against the latest_rtt aioquic
    logged in the metrics_updated right after each ACK. aioquic measures on its event loop's
    clock and stamps events when it logs them, and its samples are at least 1 ms (RFC 9002's
    kGranularity): a tenth of a millisecond apart typically, a few at most."""
    (server,) = plain_traces(DATA / "aioquic_server.qlog.gz")
    logged = []
    pending = False
    for name, data in server["events"]:
        if name == "transport:packet_received" and application(data):
            pending = any(f["frame_type"] == "ack" for f in data["frames"])
        elif name == "recovery:metrics_updated" and pending and "latest_rtt" in data:
            logged.append(data["latest_rtt"] / 1000)
            pending = False
    trace = read_trace(DATA / "aioquic_server.qlog.gz")
    ours = trace.rtt["rtt"].to_numpy()
    assert len(ours) == len(logged) > 50
    apart = np.abs(ours - np.maximum(np.array(logged), 0))
    assert np.median(apart) < 3e-4 and apart.max() < 5e-3
    assert trace.rtt["seq"].tolist() == trace.acks.loc[np.isfinite(trace.acks["rtt"]), "largest"].tolist()


def test_both_endpoints_in_one_file_are_two_flows():
    path = DATA / "qvis_doublevantage_100ms.qlog.gz"
    trace = read_trace(path)
    assert trace.flows == ["quic b0bf29d0abe27b8b client>server", "quic b0bf29d0abe27b8b server>client"]
    server = read_trace(path, flows=["quic b0bf29d0abe27b8b server>client"])
    assert server.flows == ["quic b0bf29d0abe27b8b server>client"]
    assert server.acks["flow"].astype(str).unique().tolist() == server.flows
    with pytest.raises(UsageError, match="has no flow 'quic x'.*its flows: quic b0bf29d0abe27b8b client>server"):
        read_trace(path, flows="quic x")


def test_both_endpoints_make_a_chain():
    """The server's qlog with the client's (peer=): each packet the client logged receiving has
    its receive time on the client's clock; the datagrams the generator dropped never arrive, so
    the declared losses left are real; the 40 ms it held datagrams back shows in their delays."""
    alone = read_trace(DATA / "aioquic_server.qlog.gz")
    chain = read_trace(DATA / "aioquic_server.qlog.gz", peer=DATA / "aioquic_client.qlog.gz")
    p = chain.packets
    assert chain.meta["traces"][0]["peer"] == "client" and alone.meta["traces"][0]["peer"] is None
    assert alone.packets["t_recv"].isna().all()
    received = np.isfinite(p["t_recv"])
    assert (p.loc[received, "fate"] == "delivered").all()
    assert not received[p["fate"] == "lost"].any() and (p["fate"] == "lost").sum() == 12
    delay = (p["t_recv"] - p["t_send"])[received]
    assert 0 < delay.median() < 0.01 and 0.035 < delay.max() < 0.2  # loopback; the held-back datagrams
    validate_packets(p)


PICOQUIC_SERVER, PICOQUIC_CLIENT = DATA / "picoquic_server.qlog.gz", DATA / "picoquic_client.qlog.gz"


def test_the_picoquic_download_has_real_and_spurious_losses():
    """picoquic's download through a bottleneck, a bypass that reorders and a random drop
    (SOURCES.md): the packets it declared lost and never saw acknowledged are exactly the
    datagrams the path's kernel counters dropped (52 tail drops at the bottleneck, 57 random ones);
    the other declared losses were acknowledged afterwards (spurious), as a plain count says."""
    p = read_trace(PICOQUIC_SERVER).packets
    ((_, events),) = ((t["vantage"], t["events"]) for t in plain_traces(PICOQUIC_SERVER))
    counts = plain_counts(events)
    assert p["flow"].astype(str).unique().tolist() == ["quic 36b13b4e9ffe60f9 server>client"]
    assert len(p) == counts["sent"] == 2591
    assert np.isfinite(p["t_detect"]).sum() == counts["declared"] == 594
    assert (p["fate"] == "lost").sum() == counts["lost"] == 52 + 57
    assert (p["spurious"] == "acked").sum() == counts["declared"] - counts["lost"] == 485
    spurious = p[p["spurious"] == "acked"]
    assert (spurious["reason"] == "acked after declared lost").all()
    assert (spurious["t_ack"] > spurious["t_detect"]).all()
    # picoquic's triggers are its own words ("repeat": RACK's thresholds, "timer": a timeout)
    assert (p["loss_trigger"][np.isfinite(p["t_detect"])] == "other").all()
    assert (p["in_flight"].iloc[1:] >= 0).all() and (p["chunk"] == 0).all()


def test_picoquic_times_are_not_the_epochs():
    """picoquic's reference_time is its clock at the connection's start: CLOCK_MONOTONIC in
    microseconds on Linux (picoquic_current_time, picoquic/quicctx.c), here 23,262 s, the
    machine's uptime; not a time since 1970."""
    trace = read_trace(PICOQUIC_SERVER)
    assert 23262 < trace.packets["t_send"].min() < 23264
    assert trace.meta["time"] != "epoch"


def test_picoquic_rtt_samples_match_the_latest_rtt_it_logged():
    """RFC 9002 §5.1's latest_rtt, from the log's times, against the latest_rtt picoquic logged
    right after each ACK: the same to the microsecond, once picoquic's correction by the ACK's
    delay is made (RFC 9002 §5.3: ack_delay, in units of 2^3 µs, the default ack_delay_exponent
    of RFC 9000 §18.2, subtracted unless the sample would fall below min_rtt)."""
    (trace,) = json.loads(gzip.decompress(PICOQUIC_SERVER.read_bytes()))["traces"]
    origin = int(trace["common_fields"]["reference_time"])
    logged, pending = {}, None
    for t, _category, name, data in trace["events"]:
        if name == "packet_received":
            frames = [f for f in data.get("frames") or [] if f["frame_type"] == "ack"]
            pending = (t, frames[0]["ack_delay"] * 8) if frames and data["packet_type"] == "1RTT" else None
        elif name == "metrics_updated" and pending is not None and "latest_rtt" in data:
            logged[pending[0] + origin] = (data["latest_rtt"], pending[1])
            pending = None
    samples = read_trace(PICOQUIC_SERVER).rtt
    matched = 0
    for t, rtt in zip(samples["t"], samples["rtt"]):
        at = round(t * 1e6)
        if at in logged:
            latest, ack_delay = logged[at]
            ours = round(rtt * 1e6)
            assert latest in (ours, ours - ack_delay), (t, ours, latest, ack_delay)
            matched += 1
    assert matched >= len(samples) - 1 > 600  # the last ACK: no metrics logged after it


def test_picoquic_endpoints_make_a_chain():
    """The server's qlog with the client's (peer=): every packet acknowledged was received,
    none of the real losses was; both clocks are the machine's, so the one-way delays are the
    path's: mostly the bottleneck's queue (24 ms at most at its rate), a few more where the
    client stalled a while on the shared machine. The spurious losses were packets still queued
    when a packet of the bypass overtook them: most arrived after they were declared lost."""
    chain = read_trace(PICOQUIC_SERVER, peer=PICOQUIC_CLIENT)
    p = chain.packets
    assert chain.meta["traces"][0]["peer"] == "client"
    received = np.isfinite(p["t_recv"])
    assert (p.loc[received, "fate"] == "delivered").all()
    assert received.sum() == (p["fate"] == "delivered").sum() == 2482
    assert not received[p["fate"] == "lost"].any()
    delay = (p["t_recv"] - p["t_send"])[received]
    assert 0 < delay.min() < 0.001 and 0.005 < delay.median() < 0.024 < delay.max() < 0.1
    assert (delay < 0.026).mean() > 0.95
    spurious = p[p["spurious"] == "acked"]
    assert (spurious["t_recv"] > spurious["t_detect"]).mean() > 0.9
    validate_packets(p)


def test_declared_lost_but_received_is_spurious(tmp_path):
    sender = qlog(tmp_path, [sent(0, 0), sent(1, 1), sent(2, 2), lost(40, 0, "pto_expired"), ack(50, (2, 2))])
    receiver = qlog(
        tmp_path,
        [
            event(10, "transport:packet_received", {"header": {"packet_type": "1RTT", "packet_number": pn}})
            for pn in (0, 2)
        ]
        + [sent(11, 0)],
        vantage="client",
        name="client.qlog",
    )
    p = rows(read_trace(sender, peer=receiver))
    assert p["fate"].tolist() == ["delivered", "unobserved", "delivered"]
    assert p["spurious"].tolist() == ["received", "", ""]
    assert p["reason"].tolist() == ["received, not acknowledged", "not acknowledged", "acked"]
    np.testing.assert_allclose(p["t_recv"], [0.01, np.nan, 0.01])


# ---------------------------------------------------------------- hand-made qlogs, one rule each


def event(t, name, data):
    return {"time": t, "name": name, "data": data}


def sent(t, pn, size=1200, ptype="1RTT"):
    return event(
        t, "transport:packet_sent", {"header": {"packet_type": ptype, "packet_number": pn}, "raw": {"length": size}}
    )


def ack(t, *ranges, ptype="1RTT"):
    frames = [{"frame_type": "ack", "ack_delay": 0.5, "acked_ranges": [list(r) for r in ranges]}]
    return event(
        t, "transport:packet_received", {"header": {"packet_type": ptype, "packet_number": 0}, "frames": frames}
    )


def lost(t, pn, trigger=None, name="recovery:packet_lost"):
    data = {"header": {"packet_type": "1RTT", "packet_number": pn}}
    if trigger is not None:
        data["trigger"] = trigger
    return event(t, name, data)


def qlog(tmp_path, events, *, vantage="server", name="x.qlog", **common):
    doc = {
        "qlog_version": "0.3",
        "qlog_format": "JSON",
        "traces": [
            {"vantage_point": {"type": vantage}, "common_fields": {"ODCID": "abcd", **common}, "events": events}
        ],
    }
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def rows(trace):
    return trace.packets.set_index("seq")


def test_fates_spurious_and_unobserved(tmp_path):
    path = qlog(
        tmp_path,
        [
            sent(0, 0),
            sent(1, 1),
            sent(2, 2),
            sent(3, 3),
            sent(4, 4),
            lost(50, 1, "time_threshold"),
            lost(51, 2, "reordering_threshold"),
            ack(60, (0, 0), (2, 3)),  # 2 acked after it was declared lost: spurious
            ack(70, (0, 0), (2, 3)),
        ],
    )
    p = rows(read_trace(path))
    assert p["fate"].tolist() == ["delivered", "lost", "delivered", "delivered", "unobserved"]
    assert p["reason"].tolist() == ["acked", "declared lost", "acked after declared lost", "acked", "not acknowledged"]
    assert p["spurious"].tolist() == ["", "", "acked", "", ""]
    assert p["loss_trigger"].tolist() == ["", "time", "reordering", "", ""]
    np.testing.assert_allclose(p["t_ack"], [0.06, np.nan, 0.06, 0.06, np.nan])
    np.testing.assert_allclose(p["t_detect"], [np.nan, 0.05, 0.051, np.nan, np.nan])
    assert (p["tx"] == 0).all()
    assert p["flow"].astype(str).unique().tolist() == ["quic abcd server>client"]


@pytest.mark.parametrize(
    "trigger, word",
    [
        ("reordering_threshold", "reordering"),
        ("time_threshold", "time"),
        ("pto_expired", "pto"),
        (None, "other"),
        ("something_new", "other"),
    ],
)
@pytest.mark.parametrize("name", ["recovery:packet_lost", "quic:packet_lost"])
def test_loss_triggers(tmp_path, trigger, word, name):
    p = rows(read_trace(qlog(tmp_path, [sent(0, 0), sent(1, 1), lost(9, 0, trigger, name), ack(10, (1, 1))])))
    assert p.loc[0, "loss_trigger"] == word and p.loc[0, "fate"] == "lost"


def test_a_loss_acknowledged_before_it_was_declared_is_not_spurious(tmp_path):
    p = rows(read_trace(qlog(tmp_path, [sent(0, 0), ack(5, (0, 0)), lost(9, 0, "pto_expired")])))
    assert p.loc[0, "fate"] == "delivered" and p.loc[0, "spurious"] == "" and p.loc[0, "reason"] == "acked"


def test_only_application_data_packets_are_rows(tmp_path):
    """Initial and Handshake packets have spaces of their own: left out, counted in meta; their
    ACK frames acknowledge their own space, not 1-RTT packets of the same numbers."""
    events = [
        sent(0, 0, ptype="initial"),
        sent(1, 0, ptype="handshake"),
        sent(2, 0),
        sent(3, 1, ptype="0RTT"),
        ack(9, (0, 1), ptype="handshake"),
    ]
    trace = read_trace(qlog(tmp_path, events))
    assert trace.packets["seq"].tolist() == [0, 1]
    assert (trace.packets["fate"] == "unobserved").all() and trace.acks.empty
    assert trace.meta["traces"][0]["other_spaces_sent"] == 2


def test_the_ack_stream(tmp_path):
    events = [
        sent(0, 0, 1000),
        sent(1, 1, 1100),
        sent(2, 2, 1200),
        sent(3, 3, 1300),
        event(3, "recovery:metrics_updated", {"bytes_in_flight": 4600, "cwnd": 12000}),
        ack(40, (0, 0), (2, 2)),  # 1 is a hole; largest 2 newly acked: a sample
        event(40, "recovery:metrics_updated", {"bytes_in_flight": 2400, "congestion_window": 13000}),
        ack(50, (0, 2)),  # largest 2 was acked before: no sample
        ack(60, (0, 3)),
        event(61, "quic:recovery_metrics_updated", {"bytes_in_flight": 0}),
    ]
    trace = read_trace(qlog(tmp_path, events))
    a = trace.acks
    assert a["ack"].tolist() == [1, 3, 4]
    assert a["largest"].tolist() == [2, 2, 3]
    assert a["newly"].tolist() == [2200, 1100, 1300]
    np.testing.assert_allclose(a["rtt"], [0.038, np.nan, 0.057])
    assert a["rtt_source"].tolist() == ["qlog", "", "qlog"]
    assert a["in_flight"].tolist() == [2400, -1, 0]
    assert a["cwnd"].tolist() == [13000, -1, 13000]
    assert trace.rtt[["t", "seq"]].values.tolist() == [[0.04, 2], [0.06, 3]]
    assert trace.packets["in_flight"].tolist() == [-1, -1, -1, -1]


def test_in_flight_and_chunks(tmp_path):
    """in_flight: as last logged before the send; a chunk ends at a gap longer than the PTO
    (srtt 100 ms + 4 x 10 ms + 25 ms max_ack_delay = 165 ms)."""
    events = [
        event(0, "recovery:metrics_updated", {"bytes_in_flight": 0, "smoothed_rtt": 100, "rtt_variance": 10}),
        sent(0, 0),
        event(0, "recovery:metrics_updated", {"bytes_in_flight": 1200}),
        sent(100, 1),
        sent(264, 2),  # 164 ms later: same chunk
        sent(430, 3),  # 166 ms later: a new one
    ]
    p = rows(read_trace(qlog(tmp_path, events)))
    assert p["in_flight"].tolist() == [0, 1200, 1200, 1200]
    assert p["chunk"].tolist() == [0, 0, 0, 1]


def test_clock_reference_and_units(tmp_path):
    events = [sent(5, 0), ack(15, (0, 0))]
    p = rows(read_trace(qlog(tmp_path, events, reference_time=1_700_000_000_000.0)))
    assert p.loc[0, "t_send"] == pytest.approx(1_700_000_000.005)
    relative = read_trace(qlog(tmp_path, events, name="r.qlog"))
    assert relative.meta["time"] == "relative" and rows(relative).loc[0, "t_send"] == pytest.approx(0.005)
    delta = read_trace(qlog(tmp_path, [sent(5, 0), sent(5, 1)], name="d.qlog", time_format="delta"))
    assert rows(delta)["t_send"].tolist() == pytest.approx([0.005, 0.010])
    iso = {"clock_type": "system", "epoch": "2024-01-01T00:00:00Z"}
    p = rows(read_trace(qlog(tmp_path, events, name="i.qlog", reference_time=iso)))
    assert p.loc[0, "t_send"] == pytest.approx(1704067200.005)


def test_draft01_arrays_with_strings_and_microseconds(tmp_path):
    trace = {
        "vantage_point": {"type": "SERVER"},
        "common_fields": {"group_id": "g1", "reference_time": "1000"},
        "configuration": {"time_units": "us"},
        "event_fields": ["relative_time", "CATEGORY", "EVENT_TYPE", "TRIGGER", "DATA"],
        "events": [
            [
                "0",
                "TRANSPORT",
                "PACKET_SENT",
                "DEFAULT",
                {"packet_type": "1RTT", "header": {"packet_number": "7", "packet_size": 1350}},
            ],
            ["10", "RECOVERY", "PACKET_LOST", "pto_expired", {"packet_number": "7"}],
            [
                "20",
                "TRANSPORT",
                "PACKET_RECEIVED",
                "DEFAULT",
                {"frames": [{"frame_type": "ACK", "acked_ranges": [["7"]]}]},
            ],
            [],
        ],
    }
    path = tmp_path / "d1.qlog"
    path.write_text(json.dumps({"qlog_version": "draft-00", "traces": [trace]}))
    t = read_trace(path)
    p = rows(t)
    assert p.loc[7, "size"] == 1350 and p.loc[7, "t_send"] == pytest.approx(1000e-6)
    assert p.loc[7, "loss_trigger"] == "pto" and p.loc[7, "spurious"] == "acked"
    assert p.loc[7, "t_ack"] == pytest.approx(1020e-6)
    assert t.meta["traces"][0]["events_unreadable"] == 1


def seq_file(tmp_path, header, events, *, pretty=False, separator=b"\x1e", name="x.sqlog", compress=False):
    dump = (lambda r: json.dumps(r, indent=2)) if pretty else json.dumps
    body = b"".join(separator + dump(r).encode() + b"\n" for r in [header, *events])
    if separator == b"\n":
        body = body[1:]
    path = tmp_path / name
    path.write_bytes(gzip.compress(body) if compress else body)
    return path


HEADER_03 = {
    "qlog_version": "0.3",
    "qlog_format": "JSON-SEQ",
    "trace": {"vantage_point": {"type": "client"}, "common_fields": {"ODCID": "ee"}},
}
HEADER_IETF = {
    "file_schema": "urn:ietf:params:qlog:file:sequential",
    "serialization_format": "application/qlog+json-seq",
    "trace": {"vantage_point": {"type": "client"}, "common_fields": {"group_id": "ee"}},
}
EVENTS = [sent(0, 0), sent(1, 1), ack(20, (0, 1))]


@pytest.mark.parametrize("pretty", [False, True])
@pytest.mark.parametrize("compress", [False, True])
def test_json_seq_records_compact_pretty_and_gzip(tmp_path, pretty, compress):
    trace = read_trace(seq_file(tmp_path, HEADER_03, EVENTS, pretty=pretty, compress=compress))
    assert trace.meta["qlog_format"] == "JSON-SEQ"
    assert trace.packets["fate"].tolist() == ["delivered", "delivered"]
    assert trace.flows == ["quic ee client>server"]


def test_ietf_names_and_file_schema(tmp_path):
    events = [{**e, "name": e["name"].replace("transport:", "quic:")} for e in EVENTS]
    trace = read_trace(seq_file(tmp_path, HEADER_IETF, events))
    assert trace.packets["fate"].tolist() == ["delivered", "delivered"]


def test_ndjson(tmp_path):
    header = {**HEADER_03, "qlog_format": "NDJSON", "qlog_version": "draft-02"}
    trace = read_trace(seq_file(tmp_path, header, EVENTS, separator=b"\n", name="x.qlog"))
    assert trace.meta["qlog_format"] == "NDJSON" and len(trace.packets) == 2


# ---------------------------------------------------------------- bad input


def expect(path, *fragments, offset=None, line=None):
    with pytest.raises(TraceError) as info:
        read_trace(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message
    if offset is not None:
        assert info.value.offset == offset
    if line is not None:
        assert info.value.line == line
    return info.value


def test_unknown_schema_version(tmp_path):
    path = tmp_path / "v.qlog"
    path.write_text(json.dumps({"qlog_version": "7.1", "traces": []}))
    expect(path, "schema version '7.1'", "draft-01", "0.3")


def test_a_truncated_json_seq_record(tmp_path):
    path = seq_file(tmp_path, HEADER_03, EVENTS)
    raw = path.read_bytes()
    path.write_bytes(raw[:-30])
    start = raw.rfind(b"\x1e")
    expect(path, "JSON-SEQ record 4", f"byte {start:,}", "the file ends inside it", offset=start)
    path.write_bytes(raw.replace(b'"time": 1,', b'"time": 1'))  # the second event record broken
    expect(
        path,
        "JSON-SEQ record 3",
        offset=raw.find(b'"time": 1,') - raw[: raw.find(b'"time": 1,')][::-1].find(b"\x1e") - 1,
    )


def test_a_truncated_json_document(tmp_path):
    path = qlog(tmp_path, EVENTS)
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])
    expect(path, "not valid JSON", "cut short", line=1)


def test_a_qlog_without_packet_sent(tmp_path):
    path = qlog(tmp_path, [ack(1, (0, 0)), event(2, "recovery:metrics_updated", {"cwnd": 1})])
    expect(path, "without a packet_sent", "transport:packet_received")


def test_json_that_is_not_a_qlog(tmp_path):
    path = tmp_path / "package.json"
    path.write_text(json.dumps({"name": "x", "version": "1.0"}))
    expect(path, "JSON, but not a qlog", "name, version", offset=0)
    path.write_text("[1, 2, 3]")
    with pytest.raises(TraceError, match="unknown trace format|not a qlog"):
        read_trace(path)


# ---------------------------------------------------------------- the kernel and its twin


@st.composite
def ack_ranges(draw):
    n = draw(st.integers(0, 30))
    n_frames = draw(st.integers(0, 8))
    frame_of_range, first, stop = [], [], []
    for f in range(n_frames):
        for _ in range(draw(st.integers(0, 3))):
            a = draw(st.integers(0, n))
            frame_of_range.append(f)
            first.append(a)
            stop.append(draw(st.integers(a, n)))
    size = draw(st.lists(st.integers(1, 1500), min_size=n, max_size=n))
    return first, stop, frame_of_range, n_frames, size


@settings(max_examples=300, deadline=None)
@given(ack_ranges())
def test_ack_coverage_matches_its_twin(case):
    first, stop, frame_of_range, n_frames, size = case
    fast = ack_coverage(
        np.asarray(first, np.int64),
        np.asarray(stop, np.int64),
        np.asarray(frame_of_range, np.int64),
        n_frames,
        np.asarray(size, np.int64),
    )
    plain = naive.ack_coverage(first, stop, frame_of_range, n_frames, size)
    for got, want in zip(fast, plain):
        assert got.tolist() == list(want)


# ---------------------------------------------------------------- the generator


def test_the_generator_writes_qlogs_with_losses(tmp_path):
    """traces/qlog_generate.py: a short download over loopback with drops and delays (a few
    seconds); both endpoints' qlogs read, the server's with declared losses."""
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "traces" / "qlog_generate.py"),
            "--out",
            str(tmp_path),
            "--size",
            "200000",
            "--drop",
            "0.05",
            "--delay",
            "0.05",
            "--seq",
        ],
        check=True,
        capture_output=True,
    )
    server = read_trace(tmp_path / "server.qlog")
    client = read_trace(tmp_path / "client.qlog")
    assert read_trace(tmp_path / "server.sqlog").packets.equals(server.packets)
    assert server.flows[0].endswith("server>client") and client.flows[0].endswith("client>server")
    assert server.flows[0].split()[1] == client.flows[0].split()[1]
    assert np.isfinite(server.packets["t_detect"]).any()
    assert server.packets["size"].sum() > 200000
