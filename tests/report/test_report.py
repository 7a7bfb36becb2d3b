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

from ..conftest import TRACES, needs_binary, require_binary


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
    assert page.count('<img alt="figure" src="data:image/png;base64,') == 2 * 3  # per trace: M_c/M_w, timeline,
    assert not re.search(r'(src|href)="(https?:)?//', page)  # rates; nothing fetched
    assert "Timeline of flow 4, the worst classified" in page and "open-loop replay" in page


@pytest.mark.browser
@needs_binary("chromium")
def test_the_report_renders_in_a_headless_browser(report, tmp_path):
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
