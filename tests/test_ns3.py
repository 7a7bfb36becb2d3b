"""The ns-3 Wi-Fi scenario (traces/ns3/wifi.cc, built against Debian's ns-3.37 by
traces/ns3/scenario.py): per-packet truth from ns-3's own trace sources, read through
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
from ldanalyze.batch import analyze_traces
from ldanalyze.io.capture.payload import FieldSpec
from ldanalyze.io.labels import apply_labels

from .conftest import IN_CI

ROOT = pathlib.Path(__file__).resolve().parent.parent

spec = importlib.util.spec_from_file_location("ns3_scenario", ROOT / "traces" / "ns3" / "scenario.py")
scenario = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scenario)

UNAVAILABLE = scenario.unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None and not IN_CI, reason=f"{UNAVAILABLE} (CI runs it)")
SEQ_TS = FieldSpec.parse("seq=0:4,time=4:8:ns")  # ns-3's SeqTsHeader
PARAMS = {"duration": 12, "stations": 3, "retries": 1, "speed": 4.0, "seed": 3}


@pytest.fixture(scope="module")
def wifi(tmp_path_factory):
    if UNAVAILABLE:
        pytest.fail(f"the ns-3 scenarios must run in CI, but {UNAVAILABLE}")
    os.environ.setdefault("LDANALYZE_NS3_CACHE", str(tmp_path_factory.mktemp("ns3")))
    return scenario.run("wifi", **PARAMS)


def ledger(folder) -> set[tuple[str, int]]:
    with open(folder / "sent.csv") as f:
        return {(row["flow"], int(row["seq"])) for row in csv.DictReader(f)}


def labels(folder, station: int) -> list[dict]:
    with open(folder / f"sta-{station}.labels.csv") as f:
        return list(csv.DictReader(f))


def received(folder, station: int) -> list[tuple[str, int]]:
    """(flow, seq) of every packet in a station's capture, read with dpkt."""
    out = []
    with open(folder / f"sta-{station}.pcap", "rb") as f:
        for _, raw in dpkt.pcap.Reader(f):
            ip = dpkt.ip.IP(raw)
            udp = ip.data
            flow = f"{dpkt.utils.inet_to_str(ip.src)}:{udp.sport}>{dpkt.utils.inet_to_str(ip.dst)}:{udp.dport}/udp"
            out.append((flow, int.from_bytes(udp.data[:4], "big")))
    return out


def test_every_packet_sent_has_exactly_one_fate(wifi):
    sent = ledger(wifi)
    got = [p for i in range(PARAMS["stations"]) for p in received(wifi, i)]
    assert len(got) == len(set(got))  # no duplicates above the MAC
    labelled = [(row["flow"], int(row["seq"])) for i in range(PARAMS["stations"]) for row in labels(wifi, i)]
    assert len(labelled) == len(set(labelled))
    assert not set(got) & set(labelled)  # a packet the MAC gave up on but that arrived is no loss
    assert set(got) | set(labelled) == sent  # nothing unexplained, nothing invented
    with open(wifi / "stats.csv") as f:
        stats = next(csv.DictReader(f))
    assert int(stats["received"]) == len(got) and int(stats["labelled"]) == len(labelled)


def test_the_run_holds_both_causes(wifi):
    causes = {}
    for i in range(PARAMS["stations"]):
        for row in labels(wifi, i):
            key = f"{row['cause']}/{row['detail']}"
            causes[key] = causes.get(key, 0) + 1
    assert causes.get("wireless/retry-limit", 0) > 0  # the walking station's frames
    assert causes.get("congestion/queue-disc", 0) > 0  # the wired bottleneck


def test_ldanalyze_reads_each_station_with_its_labels(wifi):
    for i in range(PARAMS["stations"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = la.read_trace(wifi / f"sta-{i}.pcap", payload=SEQ_TS, skew="keep")  # one simulator clock
            joined = apply_labels(trace, wifi / f"sta-{i}.labels.csv")
        fates = joined.packets["fate"].value_counts()
        assert fates["delivered"] == len(received(wifi, i))
        assert fates["lost"] == 0  # every loss between the first and the last arrival has its cause
        rows = labels(wifi, i)
        assert fates["wireless"] + fates["congestion"] + fates["route"] + joined.meta["labels"]["outside"] == len(rows)


def test_ldas_score_on_the_ns3_wifi_run(wifi):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traces = [apply_labels(la.read_trace(wifi / f"sta-{i}.pcap", payload=SEQ_TS, skew="keep"),
                               wifi / f"sta-{i}.labels.csv") for i in range(PARAMS["stations"])]
    batch = analyze_traces(traces, "all")
    scores = la.score(batch.decisions, batch.summary, by="trace", bootstrap=0)
    pooled = scores.groupby("lda", observed=True)[["M_c", "M_w"]].mean()
    assert pooled.loc["unaware", "M_w"] == 1.0 and pooled.loc["unaware", "M_c"] == 0.0
    assert scores.loc[scores["lda"] == "omniscient", "accuracy"].eq(1.0).all()


def test_a_scenario_is_built_and_run_once_per_parameter_set(wifi):
    again = scenario.run("wifi", **PARAMS)
    assert again == wifi and (again / "stats.csv").stat().st_mtime == (wifi / "stats.csv").stat().st_mtime
    with pytest.raises(scenario.ScenarioError, match="takes no parameter 'bogus'"):
        scenario.run("wifi", bogus=1)
