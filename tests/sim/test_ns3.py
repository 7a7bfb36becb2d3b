"""The ns-3 Wi-Fi and LTE scenarios (traces/ns3/wifi.cc, lte.cc, built against Debian's ns-3.37
by traces/ns3/scenario.py): per-packet truth from ns-3's own trace sources, read through
ldanalyze's capture and labels path.

Conservation is the acceptance test of a labels file: every packet of the sender's ledger is
received by its station or labelled, never both, none unexplained. The receivers' captures,
read with the SeqTsHeader field spec and joined with their labels, leave no loss without a cause,
and the LDAs are scored on them."""

from __future__ import annotations

import csv
import importlib.util
import os
import pathlib
import warnings

import dpkt
import pytest

import ldanalyze as la
from ldanalyze.analysis import analyze_traces
from ldanalyze.io.capture.fields import FieldSpec
from ldanalyze.io.labels import apply_labels

from ..conftest import IN_CI

ROOT = pathlib.Path(__file__).resolve().parents[2]

spec = importlib.util.spec_from_file_location("ns3_scenario", ROOT / "traces" / "ns3" / "scenario.py")
scenario = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scenario)

UNAVAILABLE = scenario.unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None and not IN_CI, reason=f"{UNAVAILABLE} (CI runs it)")
SEQ_TS = FieldSpec.parse("seq=0:4,time=4:8:ns")  # ns-3's SeqTsHeader
RUNS = {  # scenario → its parameters, the causes it must hold
    "wifi": (
        {"duration": 12, "stations": 3, "retries": 1, "speed": 4.0, "seed": 3},
        ("wireless/retry-limit", "congestion/queue-disc"),
    ),
    "lte": (
        {"duration": 10, "ues": 3, "seed": 1},
        ("wireless/radio", "congestion/queue-disc", "congestion/enb-buffer"),
    ),
}


class Run:
    """One scenario's output folder, its receivers' file prefix and count."""

    def __init__(self, name: str, folder: pathlib.Path):
        self.name, self.folder = name, folder
        count, self.prefix = scenario.RECEIVERS[name]
        self.receivers = RUNS[name][0][count]

    def pcap(self, i: int) -> pathlib.Path:
        return self.folder / f"{self.prefix}-{i}.pcap"

    def labels_file(self, i: int) -> pathlib.Path:
        return self.folder / f"{self.prefix}-{i}.labels.csv"


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request, tmp_path_factory):
    if UNAVAILABLE:
        pytest.fail(f"the ns-3 scenarios must run in CI, but {UNAVAILABLE}")
    os.environ.setdefault("LDANALYZE_NS3_CACHE", str(tmp_path_factory.getbasetemp() / "ns3"))
    return Run(request.param, scenario.run(request.param, **RUNS[request.param][0]))


def ledger(folder) -> set[tuple[str, int]]:
    with open(folder / "sent.csv") as f:
        return {(row["flow"], int(row["seq"])) for row in csv.DictReader(f)}


def labels(run: Run, i: int) -> list[dict]:
    with open(run.labels_file(i)) as f:
        return list(csv.DictReader(f))


def received(run: Run, i: int) -> list[tuple[str, int]]:
    """(flow, seq) of every packet in a receiver's capture, read with dpkt."""
    out = []
    with open(run.pcap(i), "rb") as f:
        for _, raw in dpkt.pcap.Reader(f):
            ip = dpkt.ip.IP(raw)
            udp = ip.data
            flow = f"{dpkt.utils.inet_to_str(ip.src)}:{udp.sport}>{dpkt.utils.inet_to_str(ip.dst)}:{udp.dport}/udp"
            out.append((flow, int.from_bytes(udp.data[:4], "big")))
    return out


def test_every_packet_sent_has_exactly_one_fate(run):
    sent = ledger(run.folder)
    got = [p for i in range(run.receivers) for p in received(run, i)]
    assert len(got) == len(set(got))  # no duplicates above the MAC
    labelled = [(row["flow"], int(row["seq"])) for i in range(run.receivers) for row in labels(run, i)]
    assert len(labelled) == len(set(labelled))
    assert not set(got) & set(labelled)  # a packet a MAC gave up on but that arrived is no loss
    assert set(got) | set(labelled) == sent  # nothing unexplained, nothing invented
    with open(run.folder / "stats.csv") as f:
        stats = next(csv.DictReader(f))
    assert int(stats["received"]) == len(got) and int(stats["labelled"]) == len(labelled)


def test_the_run_holds_both_causes(run):
    causes = {}
    for i in range(run.receivers):
        for row in labels(run, i):
            key = f"{row['cause']}/{row['detail']}"
            causes[key] = causes.get(key, 0) + 1
    for cause in RUNS[run.name][1]:  # the walking receiver's radio, the wired bottleneck, ...
        assert causes.get(cause, 0) > 0, (cause, causes)


def test_ldanalyze_reads_each_receiver_with_its_labels(run):
    for i in range(run.receivers):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = la.read_trace(run.pcap(i), payload=SEQ_TS, skew="keep")  # one simulator clock
            joined = apply_labels(trace, run.labels_file(i))
        fates = joined.packets["fate"].value_counts()
        assert fates["delivered"] == len(received(run, i))
        assert fates["lost"] == 0  # every loss between the first and the last arrival has its cause
        rows = labels(run, i)
        assert fates["wireless"] + fates["congestion"] + fates["route"] + joined.meta["labels"]["outside"] == len(rows)


def test_ldas_score_on_the_run(run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traces = [
            apply_labels(la.read_trace(run.pcap(i), payload=SEQ_TS, skew="keep"), run.labels_file(i))
            for i in range(run.receivers)
        ]
    batch = analyze_traces(traces, "all")
    scores = la.score(batch.decisions, batch.summary, by="pooled", bootstrap=0).set_index("lda")
    assert scores.loc["unaware", "M_w"] == 1.0 and scores.loc["unaware", "M_c"] == 0.0
    assert scores.loc["omniscient", "accuracy"] == 1.0


def test_a_scenario_is_built_and_run_once_per_parameter_set(run):
    again = scenario.run(run.name, **RUNS[run.name][0])
    assert again == run.folder and (again / "stats.csv").stat().st_mtime == (run.folder / "stats.csv").stat().st_mtime
    with pytest.raises(scenario.ScenarioError, match="takes no parameter 'bogus'"):
        scenario.run(run.name, bogus=1)


@pytest.fixture(scope="module")
def wifi(tmp_path_factory):
    if UNAVAILABLE:
        pytest.fail(f"the ns-3 scenarios must run in CI, but {UNAVAILABLE}")
    os.environ.setdefault("LDANALYZE_NS3_CACHE", str(tmp_path_factory.getbasetemp() / "ns3"))
    return Run("wifi", scenario.run("wifi", **RUNS["wifi"][0]))


def test_the_radiotap_capture_holds_the_same_packets_and_the_macs_duplicates(wifi):
    """What a monitor-mode capture at a station shows: the IP capture's packets, plus a second
    copy of each frame the station received again because its ACK was lost."""
    run, duplicates = wifi, 0
    for i in range(run.receivers):
        above_mac = received(run, i)
        (flow,) = {f for f, _ in above_mac}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            radio = la.read_trace(run.folder / f"sta-{i}-radiotap.pcap", payload=SEQ_TS, skew="keep", flows=[flow])
        rx = radio.packets[radio.packets["fate"] == "delivered"]
        assert set(zip(rx["flow"].astype(str), rx["seq"])) == set(above_mac)
        summary = la.build_timeline(radio).summary().set_index("flow")
        assert summary.loc[flow, "delivered"] - summary.loc[flow, "duplicates"] == len(above_mac)
        duplicates += summary.loc[flow, "duplicates"]
    assert duplicates > 0  # the walking station's lost ACKs
