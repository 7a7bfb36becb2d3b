"""The closed loop: ns-2.35 with LDA-driven TFRC receivers (ldanalyze/data/ns2) against the offline
replay of the same run's trace. Two implementations of docs/ldas.md, checked loss for loss."""

from __future__ import annotations

import gzip
import os
import shutil

import pytest

import ldanalyze as la
from ldanalyze import closedloop
from ldanalyze.errors import UsageError
from ldanalyze.simulation import decision_log, simulate

from ..conftest import IN_CI

pytestmark = [
    pytest.mark.ns2,
    pytest.mark.skipif(shutil.which("g++") is None and not IN_CI, reason="building ns-2 needs g++ (CI installs it)"),
]


@pytest.fixture(scope="module")
def ns():
    """The patched ns: built once per patch text (minutes the first time), then cached."""
    return closedloop.patched_ns()


def run(ns, folder, **scenario):
    scenario = {
        "traffic": "tfrc",
        "topology": "wlh",
        "flows": 1,
        "loss": "uniform",
        "rate": 0.078,
        "seed": 1,
        "duration": 30,
        "warmup": 5,
        **scenario,
    }
    path, _ = simulate(scenario, folder, ns)
    return path


# every topology and loss model, one to four flows, TFRC alone and against TCP; each run is
# steered by a different LDA, and every LDA's decisions are compared in every run
SCENARIOS = [
    dict(lda="zbs"),
    dict(lda="spike", flows=3, loss="bursty"),
    dict(lda="biaz", topology="wb", flows=2),
    dict(lda="omniscient", topology="wb", flows=4, loss="bursty", seed=2),
    dict(lda="zigzag", traffic="mix", flows=3, seed=3),
    dict(lda="mbiaz", flows=2, rate=0.031, seed=4),
    dict(lda="veno", topology="wb", flows=1, seed=5),
    dict(lda="xrtp", flows=4, seed=6),
    dict(lda="wro_ldaplus", topology="wb", flows=3, loss="bursty", seed=7),
    dict(lda="win_ldaplus", flows=2, loss="bursty", seed=8),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: "-".join(f"{v}" for v in s.values()))
def test_the_receiver_and_the_replay_decide_every_loss_alike(ns, tmp_path, scenario):
    path = run(ns, tmp_path, **scenario)
    log = closedloop.read_decision_log(decision_log(path))
    tfrc = [str(i) for i in range(1, scenario.get("flows", 1) + (0 if scenario.get("traffic") == "mix" else 1))]
    decisions = la.classify(la.build_timeline(la.read_trace(path)), list(closedloop.LOG_LDAS))
    summary, differences = closedloop.crosscheck(decisions, log, flows=tfrc)
    assert len(log) > 20, "too few losses to compare"
    assert (log["driver"] == scenario["lda"]).all()
    assert (log["driven"] == log[scenario["lda"]]).all()
    assert differences.empty, differences.head(20).to_string()
    assert (summary["equal"] == summary["losses"]).all() and (summary["losses"] == len(log)).all()


def test_an_unaware_receiver_changes_nothing(ns, tmp_path):
    """Agent/TFRCSink/LDA steered by the unaware LDA is ns-2's own TFRC receiver, packet for
    packet (and the oracle behind the error model only passes drops on)."""
    for folder in ("plain", "loop"):
        (tmp_path / folder).mkdir()
    plain = run(ns, tmp_path / "plain", flows=2, loss="bursty")
    loop = run(ns, tmp_path / "loop", flows=2, loss="bursty", lda="unaware")
    with gzip.open(plain) as a, gzip.open(loop) as b:
        assert a.read() == b.read()


def test_the_steering_lda_changes_what_tfrc_sends(ns, tmp_path):
    """Paper 000 §VI-A: a receiver that keeps wireless losses out of the loss event rate lets TFRC
    send more over a lossy last hop than the unaware one."""
    delivered = {}
    for lda in ("unaware", "omniscient"):
        (tmp_path / lda).mkdir()
        packets = la.read_trace(run(ns, tmp_path / lda, lda=lda, duration=60)).packets
        delivered[lda] = int(((packets["flow"] == "1") & (packets["fate"] == "delivered")).sum())
    assert delivered["omniscient"] > 1.1 * delivered["unaware"], delivered  # paper 000 Table II: 99 against 84 %


def test_a_damaged_decision_log_is_refused_with_its_line(tmp_path):
    good = ",".join(closedloop.LOG_COLUMNS)
    bad_header = tmp_path / "a.csv"
    bad_header.write_text("t,flow,seq\n")
    with pytest.raises(UsageError, match=r"a\.csv, line 1: not a decision log"):
        closedloop.read_decision_log(bad_header)
    bad_value = tmp_path / "b.csv"
    row = ["1.5", "1", "7", "1", *["0"] * len(closedloop.LOG_LDAS), "zbs", "0"]
    wrong = row.copy()
    wrong[5] = "2"
    bad_value.write_text("\n".join([good, ",".join(row), ",".join(wrong)]) + "\n")
    with pytest.raises(UsageError, match=r"b\.csv, line 3: omniscient must be 0 or 1"):
        closedloop.read_decision_log(bad_value)


def test_a_given_ns_must_be_executable(tmp_path, monkeypatch):
    monkeypatch.setenv("LDANALYZE_NS", str(tmp_path / "nothing"))
    with pytest.raises(UsageError, match="not an executable"):
        closedloop.patched_ns()
    monkeypatch.setenv("LDANALYZE_NS", os.devnull)
    with pytest.raises(UsageError, match="not an executable"):
        closedloop.patched_ns()


def test_measured_counts_what_crossed_the_bottleneck():
    """Hand-computed: flow 1 sends 4 packets of 1000 B over 2 s (one delivered late, one lost to
    the radio after the bottleneck, one dropped by the queue): 3 crossed, 24,000 bits in 2 s."""
    import pandas as pd

    packets = pd.DataFrame(
        {
            "flow": pd.Categorical(["1", "1", "1", "1", "100"]),
            "size": [1000] * 5,
            "t_send": [1.0, 1.5, 2.0, 3.0, 1.0],
            "fate": pd.Categorical(["delivered", "wireless", "congestion", "delivered", "delivered"]),
        }
    )
    m = closedloop.measured(packets, ["1"], fair_share_bps=20_000.0).set_index("flow")
    assert m.loc["1", "carried_bps"] == pytest.approx(12_000.0)
    assert m.loc["1", "thput"] == pytest.approx(0.6)
    assert m.loc["1", "congestion_rate"] == pytest.approx(0.25)
    assert list(m.index) == ["1"]  # the cross traffic is left out


def test_the_tfrc_flows_of_a_scenario():
    assert closedloop.tfrc_flows({"flows": 3, "traffic": "tfrc"}) == ["1", "2", "3"]
    assert closedloop.tfrc_flows({"flows": 3, "traffic": "mix"}) == ["1", "2"]  # flow 3 is TCP


def test_the_fair_share_follows_the_scenario_script():
    from ldanalyze.simulation import fair_share_bps

    assert fair_share_bps({"topology": "wlh", "flows": 1}) == 150_000.0  # the wireless last hop
    assert fair_share_bps({"topology": "wlh", "flows": 4}) == 130_000.0  # 4 × 130 kb/s shared
    assert fair_share_bps({"topology": "wb", "flows": 1}) == 800_000.0
    assert fair_share_bps({"topology": "wb", "flows": 4}) == 400_000.0  # 1600 kb/s over 4


def test_the_crosscheck_command_finds_a_changed_decision(ns, tmp_path, capsys):
    from ldanalyze.cli import main

    path = run(ns, tmp_path, lda="mbiaz", flows=2, seed=9)
    log = decision_log(path)
    assert main(["crosscheck", str(path), "--log", str(log)]) == 0
    assert "every LDA decided every loss alike" in capsys.readouterr().out
    lines = log.read_text().splitlines()
    columns = lines[0].split(",")
    cells = lines[5].split(",")
    spike = columns.index("spike")
    cells[spike] = "1" if cells[spike] == "0" else "0"  # one decision the replay did not make
    lines[5] = ",".join(cells)
    changed = tmp_path / "changed.csv"
    changed.write_text("\n".join(lines) + "\n")
    assert main(["crosscheck", str(path), "--log", str(changed)]) == 1
    out = capsys.readouterr().out
    assert "1 difference(s)" in out and f" {cells[2]} " in out


@pytest.mark.skipif(shutil.which("ns") is None and not IN_CI, reason="Debian's ns2 is not installed (CI installs it)")
def test_the_patched_build_is_debians_ns_where_no_lda_runs(ns, tmp_path):
    """Built from Debian's source with the project's patches, ns gives Debian's own binary's
    traces, byte for byte, on wired TFRC against TCP with cross traffic (WB, bursty loss)."""
    traces = {}
    for name, binary in (("debian", shutil.which("ns")), ("patched", ns)):
        (tmp_path / name).mkdir()
        traces[name] = run(binary, tmp_path / name, topology="wb", traffic="mix", flows=3, loss="bursty", seed=11)
    with gzip.open(traces["debian"]) as a, gzip.open(traces["patched"]) as b:
        assert a.read() == b.read()
