"""The report of a capture read at the sender (issue #44 §3): the bundled policed lab run
(tests/data/lab/SOURCES.md) has a section "The sender's view" whose numbers are those of
``sender_evidence`` and ``flach_verdicts``, and with the chain's truth the policer's drops are
scored (counted as congestion where asked)."""

from __future__ import annotations

import html

import pytest

import ldanalyze as la
from ldanalyze.cli import main
from ldanalyze.io.capture.chain_truth import with_chain_truth
from ldanalyze.io.capture.pcap import CaptureWarning
from ldanalyze.lda.sender_policer import SenderPolicerLab, flach_verdicts
from ldanalyze.report.html import build_report
from ldanalyze.sender_evidence import sender_evidence

from ..conftest import ROOT, TRACES

RUN = ROOT / "tests" / "data" / "lab" / "policer-0.5M-b64k-r0"
CHAIN = [RUN / "sender.pcap", f"{RUN / 'r1.pcap'}:wireless", f"{RUN / 'r2.pcap'}:policing", RUN / "receiver.pcap"]


@pytest.fixture(scope="module")
def trace():
    with pytest.warns(CaptureWarning, match="without sequence numbers skipped"):  # its ICMP and a UDP probe
        return la.read_trace(RUN / "sender.pcap")


def _cell(value) -> str:
    return f">{value}</td>"


def test_the_page_of_a_policed_sender_shows_its_evidence_and_verdicts(trace, tmp_path):
    out = tmp_path / "sender.html"
    assert main(["report", str(RUN / "sender.pcap"), "-o", str(out), "--controller", "none", "--bootstrap", "0"]) == 0
    page = out.read_text()
    section = page[page.index("<h3>The sender's view</h3>") : page.index("<h3>Flows</h3>")]
    evidence = sender_evidence(trace)
    flow = str(evidence["declared_lost"].idxmax())
    row = evidence.loc[flow]
    assert (row["sent"], row["declared_lost"], row["by_rto"], row["spurious"], row["lost"]) == (410, 137, 133, 1, 136)
    for value in ("410", "137", "133", "136", f"{row['loss_rate'] * 100:.2f}", f"{row['rtt_p50_ms']:.2f}"):
        assert _cell(value) in section, value
    flach, lab = flach_verdicts(trace), flach_verdicts(trace, SenderPolicerLab())
    assert (flach["verdict"] == "not policed").all() and (lab["verdict"] == "policed").all()
    for chunk in lab.itertuples():  # each policed chunk's token rate and burst, as the detector says
        assert _cell(f"{chunk.rate_bps * 1e-6:.3f}") in section and _cell(f"{chunk.burst_bytes / 1e3:.1f}") in section
    assert section.count(_cell(str(flach["rule"].iloc[0]))) == len(flach)  # the rule that ruled it out
    assert "decide with hindsight" in section and "class='caveat'" in section
    assert f"Flow {html.escape(flow)}, the one with the most declared losses" in section
    assert section.count('<img alt="figure"') == 1
    assert "read in the sender's view" in page  # the timeline says what its axes mean here


def test_with_the_chains_truth_the_policers_drops_are_scored(trace):
    truth = with_chain_truth(trace, CHAIN)
    apart = build_report([truth], ldas="vegas,flach_pd_lab", controller="none", bootstrap=0)
    assert "No ground truth" not in apart and "136 losses to a policer counted apart" in apart
    scored = build_report([truth], ldas="vegas,flach_pd_lab", controller="none", bootstrap=0, policing_as="congestion")
    assert "policer drops scored as congestion" in scored and "flach_pd_lab decides with hindsight" in scored
    assert "<h3>The sender's view</h3>" in scored


def test_a_receivers_page_has_no_senders_section():
    page = build_report([la.read_trace(TRACES / "captures" / "lab_receiver.pcap")], controller="none", bootstrap=0)
    assert "The sender's view" not in page
