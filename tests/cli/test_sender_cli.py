"""The sender's view on the command line (#44): a server-side capture, a chain read at its
sender with the truth joined on, two qlogs of one connection, an ns-2 TCP trace at its source."""

from __future__ import annotations

import json

import pytest

from ldanalyze.cli import main

from ..conftest import ROOT, TRACES

LAB = ROOT / "tests" / "data" / "lab" / "policer-0.5M-b64k-r0"
QLOG = ROOT / "tests" / "data" / "qlog"
CHAIN = [
    "--vantage",
    str(LAB / "sender.pcap"),
    "--vantage",
    f"{LAB / 'r1.pcap'}:wireless",
    "--vantage",
    f"{LAB / 'r2.pcap'}:policing",
    "--vantage",
    str(LAB / "receiver.pcap"),
]
DATA_FLOW = "10.231.1.1:5201>10.231.3.2:32962/tcp"


def test_inspect_reads_the_capture_hosts_data_flow_at_its_sender(capsys):
    assert main(["inspect", str(LAB / "sender.pcap"), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["meta"]["flows"][DATA_FLOW]["view"] == "sender"
    evidence = {row["flow"]: row for row in payload["sender_evidence"]}[DATA_FLOW]
    # the kernel's policer dropped 136 of the 410 data segments (tests/data/lab/SOURCES.md); one
    # retransmission was spurious (D-SACK), so 137 were sent again
    assert (evidence["sent"], evidence["rtx"], evidence["lost"], evidence["spurious_dsack"]) == (410, 137, 136, 1)
    assert evidence["chunks"] == 3
    assert main(["inspect", str(LAB / "sender.pcap")]) == 0
    text = capsys.readouterr().out
    assert "the sender's own evidence" in text and "the capture (the sender's clock)" in text


def test_a_chain_read_at_its_sender_takes_the_policers_drops_as_policing(capsys):
    assert main(["score", *CHAIN, "--view", "sender", "--lda", "omniscient,flach_pd_lab", "--format", "json"]) == 0
    rows = {row["lda"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["omniscient"]["policing"] == 136 and rows["omniscient"]["undetected"] == 0
    assert rows["flach_pd_lab"]["policing_share"] == pytest.approx(1.0)


def test_two_qlogs_of_one_connection_join_the_peers_receipts(capsys):
    assert (
        main(
            [
                "inspect",
                "--vantage",
                str(QLOG / "aioquic_server.qlog.gz"),
                "--vantage",
                str(QLOG / "aioquic_client.qlog.gz"),
                "--json",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["meta"]["view"] == "sender" and payload["format"] == "qlog"
    assert main(["inspect", str(QLOG / "aioquic_server.qlog.gz"), "--view", "receiver"]) == 2
    assert "holds its endpoint's (the sender's) view only" in capsys.readouterr().err


def test_an_ns2_tcp_trace_at_its_source_node_has_no_modeled_throughput(capsys):
    assert main(["score", str(TRACES / "wlh_tcp_1flow_high.tr.gz"), "--view", "sender", "--format", "json"]) == 0
    captured = capsys.readouterr()
    rows = {row["lda"]: row for row in json.loads(captured.out)}
    assert {"vegas", "veno_sender", "spike@rtt"} <= set(rows) and "biaz" not in rows
    assert rows["omniscient"]["M_c"] == 0 and rows["omniscient"]["scored"] == 162
    assert "no modeled throughput" in captured.err and "receiver's arrivals" in captured.err


def test_batch_scores_a_qlog_and_a_server_side_capture_alike(tmp_path):
    import shutil

    import pandas as pd

    shutil.copy(QLOG / "aioquic_server.qlog.gz", tmp_path)
    shutil.copy(LAB / "sender.pcap", tmp_path)
    out = tmp_path / "scores.csv"
    assert main(["batch", str(tmp_path), "-o", str(out)]) == 0
    scores = pd.read_csv(out)
    per_trace = scores[scores["scope"] == "flow"].groupby("trace")["lda"].agg(set)
    assert len(per_trace) == 2
    assert all({"vegas", "veno_sender"} <= ldas and "biaz" not in ldas for ldas in per_trace)
