"""The closed loop: ns-2.35 with LDA-driven TFRC receivers (ldanalyze/data/ns2) against the offline
replay of the same run's trace. Two implementations of docs/ldas.md, checked loss for loss."""

from __future__ import annotations

import gzip
import os
import shutil

import numpy as np
import pytest

import ldanalyze as la
from ldanalyze import closedloop
from ldanalyze.control import controller_state
from ldanalyze.errors import UsageError
from ldanalyze.simulation import SCRIPT, decision_log, run_ns2, simulate

from ..conftest import IN_CI

pytestmark = [
    pytest.mark.ns2,
    pytest.mark.skipif(shutil.which("g++") is None and not IN_CI, reason="building ns-2 needs g++ (CI installs it)"),
]


@pytest.fixture(scope="module")
def ns():
    """The patched ns: built once per patch text (minutes the first time), then cached."""
    return closedloop.patched_ns()


DEFAULTS = {
    "traffic": "tfrc",
    "topology": "wlh",
    "flows": 1,
    "loss": "uniform",
    "rate": 0.078,
    "seed": 1,
    "duration": 30,
    "warmup": 5,
}


def run(ns, folder, **scenario):
    path, _ = simulate({**DEFAULTS, **scenario}, folder, ns)
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
    # §IV's reading of the receiver (a wireless call counts as received in X_recv) decides alike too
    dict(lda="mbiaz", topology="wb", flows=2, seed=10, wireless_as_received=1),
    dict(lda="zbs", flows=3, loss="bursty", seed=12, wireless_as_received=1),
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


def tfrc_of(scenario):
    return closedloop.tfrc_flows({**DEFAULTS, **scenario})


# every parameter of every LDA of the receiver away from its default, one way and the other (ZBS's
# own base schemes' too, apart from the stand-alone ones'); ldanalyze's LDA objects set the
# receiver's (ldaparams=) and replay the trace
SWEEPS = [
    (
        dict(lda="zbs", flows=2, loss="bursty", seed=13),
        [
            "biaz:upper=3",
            "mbiaz:upper=1.1",
            "spike:alpha=0.7:beta=0.2",
            "wro_ldaplus:K=0.6:B=0.4",
            "zigzag:alpha=0.125:dev_factors=[-0.5,0,0.5,1]",
            "win_ldaplus:T_obs=1.5",
            "veno:beta=1.5:window=4",
            "xrtp:positive_jitters=1:threshold=0.5:n=4:l1=1:alpha=0.25",
            "zbs:delay_frac=1:narr_bounds=[0.8,1.4,2.2]:gain=0.25:lock_time=1.5:lock_packets=20"
            ":mbiaz_upper=1.5:spike_alpha=0.6:spike_beta=0.25:zigzag_alpha=0.0625"
            ":zigzag_dev_factors=[-0.75,-0.25,0.25,0.75]",
        ],
    ),
    (
        dict(lda="spike", topology="wb", flows=3, seed=14, wireless_as_received=1),
        [
            "biaz:upper=1.1",
            "mbiaz:upper=1.5",
            "spike:alpha=0.4:beta=0.1",
            "wro_ldaplus:K=0.3:B=0.2",
            "zigzag:alpha=0.0625:dev_factors=[-1.5,-1,-0.5,0]",
            "win_ldaplus:T_obs=10",
            "veno:beta=6:window=12",
            "xrtp:positive_jitters=3:threshold=0.2:n=12:l1=4:alpha=0.0625",
            "zbs:delay_frac=0.02:narr_bounds=[0.9,1.7,3]:gain=0.0625:lock_time=5:lock_packets=80"
            ":mbiaz_upper=1.1:spike_alpha=0.4:spike_beta=0.2:zigzag_alpha=0.125"
            ":zigzag_dev_factors=[-1.5,-1,-0.5,0]",
        ],
    ),
]


@pytest.mark.parametrize("scenario, specs", SWEEPS, ids=lambda s: s["lda"] if isinstance(s, dict) else "")
def test_non_default_parameters_reach_both_alike(ns, tmp_path, capsys, scenario, specs):
    """#46 §4: the receiver runs the parameters ldanalyze's objects give it, the replay runs the
    same objects, and they decide every loss alike; with its defaults instead, each LDA decides
    some of those losses otherwise (the setting took effect on both sides). ``crosscheck
    --ldaparams`` takes the run's text."""
    from ldanalyze.cli import main

    ldas = closedloop.receiver_ldas(specs)
    assert all(lda.spec != lda.name for lda in ldas[2:])  # every LDA with parameters is off its defaults
    options = closedloop.receiver_options(ldas)
    path = run(ns, tmp_path, **scenario, ldaparams=options)
    log = closedloop.read_decision_log(decision_log(path))
    timeline = la.build_timeline(la.read_trace(path))
    summary, differences = closedloop.crosscheck(la.classify(timeline, ldas), log, flows=tfrc_of(scenario))
    assert len(log) > 50, "too few losses to compare"
    assert differences.empty, differences.head(20).to_string()
    assert (summary["equal"] == summary["losses"]).all() and (summary["losses"] == len(log)).all()
    defaults, _ = closedloop.crosscheck(la.classify(timeline, list(closedloop.LOG_LDAS)), log, flows=tfrc_of(scenario))
    moved = defaults.set_index("lda").eval("equal < losses")
    assert moved.drop(["unaware", "omniscient"]).all(), moved
    assert main(["crosscheck", str(path), "--log", str(decision_log(path)), "--ldaparams", options]) == 0
    assert main(["crosscheck", str(path), "--log", str(decision_log(path))]) == 1  # the defaults differ
    assert "every LDA decided every loss alike" in capsys.readouterr().out


# each parameter of each LDA of the receiver alone off its default (the first sweep's value)
ONE_AT_A_TIME = [
    la.get_lda(lda.name, **{field: value})
    for lda in closedloop.receiver_ldas(SWEEPS[0][1])
    for field, value in lda.params().items()
    if value != la.get_lda(lda.name).params()[field]
]


@pytest.mark.parametrize("lda", ONE_AT_A_TIME, ids=lambda lda: lda.spec)
def test_each_parameter_alone_reaches_both_alike(ns, tmp_path, lda):
    """One parameter off its default, on both sweeps' scenarios: the two implementations decide
    every loss alike, and the parameter moved some of this LDA's decisions in one of them (so
    the receiver read that very variable: ZBS's base schemes' parameters move ZBS only where it
    runs that scheme, its delay fraction only when it is large)."""
    moved = 0
    ldas = closedloop.receiver_ldas([lda])
    for scenario, _ in SWEEPS:
        path = run(ns, tmp_path, **scenario, ldaparams=closedloop.receiver_options(ldas))
        log = closedloop.read_decision_log(decision_log(path))
        timeline = la.build_timeline(la.read_trace(path))
        _, differences = closedloop.crosscheck(la.classify(timeline, ldas), log, flows=tfrc_of(scenario))
        assert differences.empty, differences.head(20).to_string()
        defaults, _ = closedloop.crosscheck(la.classify(timeline, [lda.name]), log, flows=tfrc_of(scenario))
        mine = defaults.set_index("lda").loc[lda.name]
        moved += int(mine["losses"] - mine["equal"])
    assert moved > 0


def late_arrivals(timeline):
    """Per flow, the packets that arrived after a higher sequence number had: the late ones."""
    a = timeline.arrivals
    out = {}
    for flow, mine in a.groupby(a["flow"].astype(str), observed=True, sort=False):
        seq = mine["seq"].to_numpy()
        earlier_max = np.maximum.accumulate(np.concatenate([[-1], seq[:-1]]))
        out[flow] = set(seq[seq < earlier_max].tolist())
    return out


@pytest.mark.parametrize("as_received", [0, 1])
def test_a_packet_that_arrives_late_is_no_loss_to_either(ns, tmp_path, as_received):
    """#46 §4, reordering: a wireless link holds back 5 % of the packets 100 ms (paper000.tcl
    reorder=), so they arrive after packets sent later, in a gap the receiver already decided.
    docs/ldas.md's rule, one for both: a loss is a gap's packet that never arrives, decided at
    the gap. ns-2's TFRC counted the late ones in its loss history at the gap (numPkts_ 1), as
    the LDA steered it; the decision log leaves them out, the replay never had them, and the
    two decide every real loss alike."""
    scenario = dict(lda="zbs", flows=2, reorder=0.05, wireless_as_received=as_received)
    trace, log, reports = run_with_reports(ns, tmp_path, **scenario)
    timeline = la.build_timeline(trace)
    late = late_arrivals(timeline)
    delivered = trace.packets[trace.packets["fate"] == "delivered"]
    delivered = set(zip(delivered["flow"].astype(str), delivered["seq"].astype(int)))
    assert not set(zip(log["flow"], log["seq"])) & delivered  # only packets that never arrived
    for flow, mine in reports.groupby("flow"):
        assert len(late[flow]) > 10, (flow, len(late[flow]))  # the scenario does reorder
        # TFRC counted every packet of every gap: the logged losses and the late arrivals
        assert mine["losses"].iloc[-1] == (log["flow"] == flow).sum() + len(late[flow])
    decisions = la.classify(timeline, list(closedloop.LOG_LDAS))
    summary, differences = closedloop.crosscheck(decisions, log, flows=tfrc_of(scenario))
    assert len(log) > 20 and differences.empty, differences.head(20).to_string()
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


def test_a_report_log_without_its_header_is_refused(tmp_path):
    bad = tmp_path / "r.csv"
    bad.write_text("t,flow,seq,p\n1.0,1,3,0.01\n")
    with pytest.raises(UsageError, match=r"r\.csv, line 1: not a report log"):
        closedloop.read_report_log(bad)
    with pytest.raises(UsageError, match="cannot read the report log"):
        closedloop.read_report_log(tmp_path / "missing.csv")


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


# ---------------------------------------------------------------- the steering mechanics, report by report


def run_with_reports(ns, folder, **scenario):
    """A closed-loop run with its decision log and its report log (``ldareports=``: every report
    each receiver sent, what it told the sender and the state behind it); the trace's packets,
    the decision log and the report log."""
    path = folder / "run.tr.gz"
    log, reports = decision_log(path), folder / "reports.csv"
    run_ns2(SCRIPT, {**DEFAULTS, **scenario}, path, ns, extra=[f"ldalog={log}", f"ldareports={reports}"])
    return la.read_trace(path), closedloop.read_decision_log(log), closedloop.read_report_log(reports)


def trace_time(t):
    """A time as ns-2's trace prints it (to the microsecond), as the receiver's LDAs see it."""
    return np.floor(np.asarray(t) * 1e6 + 0.5) / 1e6


def so_far(times, at):
    """How many of ``times`` are at or before each of ``at``."""
    return np.searchsorted(np.sort(np.asarray(times)), np.asarray(at), side="right")


def test_the_loss_event_rate_fed_back_leaves_the_wireless_calls_out(ns, tmp_path):
    """Paper 000 §I. At every report, the lost packets in TFRC's loss history are exactly those the
    offline replay of the trace has the steering LDA call congestion so far, and those kept out
    exactly those it calls wireless. The p fed back is the offline TFRC replay's (control/tfrc.py,
    with ns-2's history discounting) fed the LDA's calls: equal at the median, within 15 % on 80 %
    of the reports (the replay's RTT is the trace's, not the sender's estimate ns-2's receiver holds,
    which moves a few loss-event boundaries); fed every loss instead, the replay's p is about
    twice it."""
    trace, log, reports = run_with_reports(ns, tmp_path, lda="biaz", flows=2, duration=40)
    timeline = la.build_timeline(trace)
    decisions = la.classify(timeline, ["biaz"])
    offline = {
        lda: controller_state(timeline, "tfrc:receive=trace:discounting=true", lda) for lda in ("biaz", "unaware")
    }
    checked = 0
    for flow, mine in reports.groupby("flow"):
        d = decisions[(decisions["flow"].astype(str) == flow) & decisions["decision"].isin(("wireless", "congestion"))]
        at = trace_time(mine["t"])
        congestion = so_far(d.loc[d["decision"] == "congestion", "t_decide"], at)
        wireless = so_far(d.loc[d["decision"] == "wireless", "t_decide"], at)
        assert list(mine["losses"] - mine["wireless"]) == list(congestion)
        assert list(mine["wireless"]) == list(wireless)
        assert congestion[-1] > 5 and wireless[-1] > 5, (congestion[-1], wireless[-1])  # both kinds exercised
        ratio = {}
        for lda, state in offline.items():
            state = state[state["flow"].astype(str) == flow]
            p = state["p"].to_numpy()[so_far(state["t"], at) - 1]  # the replay's p after the last arrival
            fed = mine["p"].to_numpy() > 0
            assert ((p > 0) == fed).mean() > 0.95  # loss events start at the same reports
            ratio[lda] = mine["p"].to_numpy()[fed & (p > 0)] / p[fed & (p > 0)]
        assert abs(np.median(ratio["biaz"]) - 1) < 0.02 and (abs(ratio["biaz"] - 1) < 0.15).mean() > 0.8, ratio
        assert np.median(ratio["unaware"]) < 0.7
        checked += len(mine)
    assert checked > 200


def test_a_loss_called_wireless_never_ends_slow_start(ns, tmp_path):
    """The omniscient receiver on a lossy wireless backbone: radio losses come before the first
    queue drop; every report until that drop's detection says slow start goes on (loss_seen 0,
    p = 0: ns-2's TFRC sender leaves slow start on the first report with p > 0), and the first
    report after it ends slow start. The unaware receiver ends it at the first radio loss."""
    trace, log, reports = run_with_reports(ns, tmp_path, lda="omniscient", topology="wb", duration=20)
    first_congestion = log.loc[~log["driven"], "t"].min()
    wireless_before = int((log["driven"] & (log["t"] < first_congestion)).sum())
    assert wireless_before >= 3, wireless_before  # the scenario does call radio losses wireless first
    before = reports[trace_time(reports["t"]) < first_congestion]
    assert (before["loss_seen"] == 0).all() and (before["p"] == 0).all()
    assert before["wireless"].iloc[-1] == wireless_before
    after = reports[trace_time(reports["t"]) >= first_congestion].iloc[0]
    assert after["loss_seen"] == 1 and after["p"] > 0
    # slow start went on: the receive rate grew well past its first value before the first drop
    assert before["x_recv"].max() > 4 * before["x_recv"].iloc[1]

    (tmp_path / "unaware").mkdir()
    _, log, reports = run_with_reports(ns, tmp_path / "unaware", lda="unaware", topology="wb", duration=20)
    first_loss = log["t"].min()
    assert (reports.loc[trace_time(reports["t"]) < first_loss, "loss_seen"] == 0).all()
    assert reports.loc[trace_time(reports["t"]) >= first_loss, "loss_seen"].iloc[0] == 1


def x_recv_offline(arrived, called, reports):
    """ns-2.35's receive rate (``TfrcSinkAgent::est_thput``, tcp/tfrc-sink.cc) at each report of one
    flow, from the packets counted as received (``arrived``, and ``called``: the losses the LDA
    called wireless, counted at their detection time; seq -> time): more than an RTT since the
    last report, those counted since it over the time since it; else those counted within an RTT
    of the highest one received, walking down from it to the first older one, over the RTT."""
    counted = {**arrived, **called}
    times = np.sort(np.fromiter(counted.values(), float))
    out, last_report = [], 0.0
    for r in reports.itertuples():
        x = 1.0
        if r.rtt > 0 and r.t - last_report >= r.rtt:
            n = so_far(times, trace_time(r.t)) - so_far(times, trace_time(last_report))
            x = n / (r.t - last_report) if n > 0 else 1.0
        elif r.rtt > 0:
            newest, n = arrived[r.seq], 0
            for seq in range(r.seq, 0, -1):
                if seq in counted:
                    if counted[seq] + r.rtt > newest:
                        n += 1
                    else:
                        break
            x = n / r.rtt if n > 0 else 1.0
        out.append(x)
        last_report = r.t
    return np.array(out)


@pytest.mark.parametrize("as_received", [0, 1])
def test_wireless_as_received_counts_a_wireless_call_in_x_recv(ns, tmp_path, as_received):
    """Paper 000 §IV, "in the same way as received packets": with wireless_as_received 1 the receive
    rate X_recv the receiver reports counts every loss its LDA called wireless as a packet received
    when the loss was detected (so a wireless call never lowers it); with 0 it counts the packets
    that arrived, as ns-2's own receiver does. Recomputed report by report from the trace and the
    decision log."""
    trace, log, reports = run_with_reports(
        ns, tmp_path, lda="omniscient", topology="wb", duration=30, wireless_as_received=as_received
    )
    assert (reports["as_received"] == as_received).all()
    packets = trace.packets[(trace.packets["flow"] == "1") & (trace.packets["fate"] == "delivered")]
    arrived = dict(zip(packets["seq"].to_numpy(int), packets["t_recv"].to_numpy(float)))
    wireless = log[log["driven"]]
    called = dict(zip(wireless["seq"].to_numpy(int), wireless["t"].to_numpy(float))) if as_received else {}
    expected = {name: x_recv_offline(arrived, c, reports) for name, c in (("counted", called), ("arrived", {}))}
    assert len(wireless) > 20 and len(reports) > 100
    assert np.allclose(reports["x_recv"], expected["counted"], rtol=1e-12)
    if as_received:  # the wireless calls made a difference, and raised X_recv wherever they did
        assert (expected["counted"] >= expected["arrived"]).all()
        assert (expected["counted"] > expected["arrived"]).mean() > 0.1
