"""The HTML report and the notebook displays: the page is self-contained, loads in a real
headless browser without console errors, and its figures render (the screenshot is not blank)."""

from __future__ import annotations

import re
import subprocess

import matplotlib.image
import numpy as np
import pytest

import ldanalyze as la
from ldanalyze.cli import main

from ..conftest import ROOT, TRACES, needs_binary, require_binary


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert (
        main(
            [
                "report",
                str(TRACES / "wlh_mix_4flow_high.tr.gz"),
                str(TRACES / "wireless" / "wlan_old.tr.gz"),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    return out


def test_the_report_is_self_contained(report):
    page = report.read_text()
    # per trace: M_c/M_w, called wireless, kappa, over time, timeline, rates
    assert page.count('<img alt="figure" src="data:image/png;base64,') == 2 * 6
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched
    assert "Timeline of flow 4, the worst classified" in page and "open-loop replay" in page
    first = page.index("<h2")  # picture first: the figures before the score table, the flows last
    assert page.index("<img", first) < page.index("<h3>Scores", first) < page.index("<h3>Flows", first)


def test_the_report_of_a_capture_without_truth_says_what_the_ldas_called(tmp_path):
    """No ground truth: no empty M_c-M_w plot and no table of dashes, but what each LDA called,
    their agreement, the shares over time and the lossiest flow's timeline with every LDA."""
    out = tmp_path / "lab.html"
    assert main(["report", str(TRACES / "captures" / "lab_receiver.pcap"), "-o", str(out), "--controller", "none"]) == 0
    page = out.read_text()
    assert page.count('<img alt="figure"') == 4 and "No ground truth" in page and "M_c %" not in page
    for heading in ("Agreement between the LDAs", "What the LDAs called, over time", "the one with the most losses"):
        assert heading in page
    assert "A majority is not the truth" in page
    assert "class='caveat'" not in page and "capture outage" not in page  # no outage, no word of one


def test_the_report_of_a_capture_outage_says_what_the_capture_missed(tmp_path, capsys):
    """gtp-iphone.pcap: the capture recorded nothing for 10.24 s. The page says so at the top,
    with the outage's time, length and packets, counts captured and not observed apart, and
    draws the timeline of the flow the outage hid most of (no loss to classify otherwise)."""
    out = tmp_path / "gtp.html"
    assert main(["report", str(ROOT / "tests/data/real/tunnels/gtp-iphone.pcap"), "-o", str(out)]) == 0
    assert "(a capture outage, not the path's)" in capsys.readouterr().err  # the reader's warning, as ever
    page = out.read_text()
    top = page.index("<h2")
    assert "946 data packets: 35 captured, 911 not observed in a 10.24 s capture outage" in page
    caveat = page.index("<p class='caveat'>", top)
    assert caveat < page.index("<table", top)  # before the counts' table: the first thing read
    assert "nothing of its streams, in either direction, from 80.92 s for 10.24 s (911 packets)" in page
    assert page.count("recorded nothing") == 1  # said once, not again among the reader's notes
    assert "the one with the most packets in a capture outage" in page and page.count('<img alt="figure"') == 1


@pytest.fixture(scope="module")
def sender_report(tmp_path_factory):
    """The page of a capture read at the sender (the bundled policed lab run): its sender's section too."""
    out = tmp_path_factory.mktemp("report") / "sender.html"
    run = ROOT / "tests" / "data" / "lab" / "policer-0.5M-b64k-r0"
    assert main(["report", str(run / "sender.pcap"), "-o", str(out), "--controller", "none", "--bootstrap", "0"]) == 0
    return out


@pytest.mark.browser
@needs_binary("chromium")
@pytest.mark.parametrize("page", ["report", "sender_report"])
def test_the_report_renders_in_a_headless_browser(page, request, tmp_path):
    report = request.getfixturevalue(page)
    chromium = require_binary("chromium")
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2400",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert not [line for line in run.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    pixels = matplotlib.image.imread(shot)[..., :3]
    ink = (pixels < 0.9).any(axis=2)
    assert ink.mean() > 0.05  # text, tables and figures, not a blank page
    coloured = (pixels.max(axis=2) - pixels.min(axis=2)) > 0.25
    assert coloured.sum() > 2000  # the figures' coloured markers and lines are drawn


def test_notebook_displays_are_compact_html():
    trace = la.read_trace(TRACES / "wlh_cbr_1flow_bursty.tr.gz")
    tl = la.build_timeline(trace)
    page = trace._repr_html_()
    assert "ns2-wired" in page and "<table" in page and "congestion" in page
    shown = tl._repr_html_()  # the main columns, as inspect shows them
    assert "Timeline" in shown and "rott_p50_ms" in shown and "loss %" in shown
    replayed = la.replay(tl, "tfrc", "zbs")
    assert "open-loop" in replayed._repr_html_() and "vs_omniscient" in replayed._repr_html_()
    assert np.isfinite(replayed.summary["thput"]).all()
