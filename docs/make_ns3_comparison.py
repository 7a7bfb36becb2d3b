"""The LDAs on the ns-3 Wi-Fi and LTE scenarios against the bundled ns-2 wireless-last-hop
traces: a Markdown table of pooled M_c, M_w and accuracy and docs/images/ns3_vs_ns2.png (M_c
against M_w, one panel each). Needs ns-3 (libns3-dev). Usage: ``python docs/make_ns3_comparison.py``."""

from __future__ import annotations

import glob
import importlib.util
import pathlib
import sys
import warnings

import matplotlib

matplotlib.use("Agg")

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import ldanalyze as la  # noqa: E402
from ldanalyze.analysis import analyze_traces  # noqa: E402
from ldanalyze.io.capture.fields import FieldSpec  # noqa: E402
from ldanalyze.io.labels import apply_labels  # noqa: E402

SCENARIOS = {
    "wifi": {"duration": 60, "stations": 3, "bottleneck": "5Mbps", "retries": 1, "speed": 2.0, "seed": 1},
    "lte": {"duration": 60, "ues": 3, "speed": 5.0, "seed": 1},
}
LDAS = "biaz,mbiaz,spike,zigzag,zbs,win_ldaplus,wro_ldaplus,xrtp,veno,unaware,omniscient"


def main() -> None:
    spec = importlib.util.spec_from_file_location("scenario", ROOT / "traces" / "ns3" / "scenario.py")
    scenario = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scenario)
    seq_ts = FieldSpec.parse("seq=0:4,time=4:8:ns")
    batches = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, title in (("wifi", "ns-3 Wi-Fi"), ("lte", "ns-3 LTE")):
            folder = scenario.run(name, **SCENARIOS[name])
            count, prefix = scenario.RECEIVERS[name]
            batches[title] = analyze_traces(
                [
                    apply_labels(
                        la.read_trace(folder / f"{prefix}-{i}.pcap", payload=seq_ts, skew="keep"),
                        folder / f"{prefix}-{i}.labels.csv",
                    )
                    for i in range(SCENARIOS[name][count])
                ],
                LDAS,
            )
        batches["ns-2 WLH"] = analyze_traces(sorted(glob.glob(str(ROOT / "traces" / "wlh_*.tr.gz"))), LDAS)
    scores = {name: la.score(b.decisions, b.summary, by="pooled", bootstrap=200) for name, b in batches.items()}
    causes = {name: b.summary[["congestion", "wireless", "route"]].sum() for name, b in batches.items()}
    table = pd.concat({name: s.set_index("lda")[["M_c", "M_w", "accuracy"]] for name, s in scores.items()}, axis=1)
    print("losses:", {name: c.to_dict() for name, c in causes.items()})
    shown = (table * 100).round(1)
    print("| LDA | " + " | ".join(f"{a} {b} %" for a, b in shown.columns) + " |")
    print("|---|" + "---:|" * len(shown.columns))
    for lda, row in shown.iterrows():
        print(f"| {lda} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    fig, axes = plt.subplots(1, 3, figsize=(19, 5.5), constrained_layout=True)
    for ax, (name, s) in zip(axes, scores.items()):
        la.plot.mc_mw(s, ax=ax, title=f"{name} (pooled, 95 % bootstrap intervals)")
    fig.savefig(ROOT / "docs" / "images" / "ns3_vs_ns2.png", dpi=72)


if __name__ == "__main__":
    main()
