"""Rebuild the README's pictures from the bundled traces: python docs/make_figures.py"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ldanalyze as la  # noqa: E402
from ldanalyze import batch  # noqa: E402
from ldanalyze.report.html import build_report  # noqa: E402
from ldanalyze.sweep import sweep  # noqa: E402

OUT = ROOT / "docs" / "images"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    trace = la.read_trace(ROOT / "traces" / "wlh_mix_4flow_high.tr.gz")
    tl = la.build_timeline(trace)
    decisions = la.classify(tl, "all")
    scores = la.score(decisions, tl.summary(), by="trace")
    per_flow = la.score(decisions, tl.summary(), by="flow", bootstrap=0)
    la.plot.timeline(tl, "4", ["zbs", "spike", "biaz"], window=(20, 50)).savefig(OUT / "timeline.png", dpi=72)
    la.plot.mc_mw(scores, per_flow).savefig(OUT / "mc_mw.png", dpi=72)
    la.plot.confusion(scores[scores["lda"].isin(["biaz", "spike", "zbs", "xrtp"])]).savefig(
        OUT / "confusion.png", dpi=72
    )
    la.plot.zbs_usage(la.get_lda("zbs").usage(tl)).savefig(OUT / "zbs_usage.png", dpi=72)
    result = la.replay(tl, "tfrc", "zbs,spike,omniscient,unaware")
    la.plot.rates(result, flow="1").savefig(OUT / "rates.png", dpi=72)
    traces, _ = batch.discover([str(ROOT / "traces")], exclude=["*.em.gz", "*.pcap"])
    outcomes = batch.execute(
        [batch.Job(name=p, path=p) for p in traces], batch.Analysis(ldas="biaz,mbiaz,spike,zbs", controller=None)
    )
    results = batch.results_table(outcomes)
    la.plot.across(results[results["scope"] == "trace"], x="wireless_rate", metric="M_w", connect=False).savefig(
        OUT / "across.png", dpi=72
    )
    spike = sweep(
        [str(ROOT / "traces" / "wlh_mix_4flow_high.tr.gz")],
        "spike",
        {"beta": [round(0.05 * k, 2) for k in range(1, 11)], "alpha": [round(0.05 * k, 2) for k in range(2, 21)]},
    )
    la.plot.sweep(spike, title="Spike on wlh_mix_4flow_high: β 0.05-0.5, α 0.1-1").savefig(OUT / "sweep.png", dpi=72)
    with tempfile.TemporaryDirectory() as tmp:
        page = pathlib.Path(tmp) / "report.html"
        page.write_text(build_report([trace]))
        subprocess.run(
            [
                "chromium",
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1100,1300",
                f"--screenshot={OUT / 'report.png'}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


if __name__ == "__main__":
    main()
