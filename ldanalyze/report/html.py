"""HTML: the compact notebook displays of Trace, Timeline and replay results, and the
self-contained report of ``ldanalyze report`` (figures embedded as PNG data, no network needed).

The report, per trace: what was read (the inspect summary), the score table (paper 000 Table II
layout), M_c against M_w, the timeline of the worst-classified flow (the one whose losses the
LDAs got wrong most often), and the allowed rates of the controller on that flow.
"""

from __future__ import annotations

import base64
import html
import io
import time

import pandas as pd

from ..formatting import html_table, summary_shown, trace_html
from ..version import VERSION

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1180px;
       color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: .2em;
margin-top: 2.2em; } h3 { font-size: 1.05em; margin-top: 1.4em; }
.wide { overflow-x: auto; }
table.ld { border-collapse: collapse; font-size: 0.85em; margin: .5em 0; }
table.ld th, table.ld td { border: 1px solid #ddd; padding: 2px 7px; text-align: right; }
table.ld th { background: #f3f5f7; } table.ld td:first-child, table.ld th:first-child { text-align: left; }
img { max-width: 100%; height: auto; display: block; margin: .6em 0; }
.note { color: #666; font-size: .9em; } nav a { margin-right: 1em; }
"""


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=85)
    plt.close(fig)
    return f'<img alt="figure" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def worst_flow(decisions: pd.DataFrame) -> str | None:
    """The flow whose scored losses the LDAs (baselines aside) called wrong most often."""
    d = decisions[~decisions["lda"].astype(str).isin(("unaware", "omniscient"))]
    d = d[d["cause"].isin(("congestion", "wireless")) & (d["decision"] != "undetected")]
    if d.empty:
        return None
    wrong = (d["cause"].astype(str) != d["decision"].astype(str)).groupby(d["flow"].astype(str)).sum()
    return str(wrong.idxmax())


def build_report(traces, *, ldas="all", controller="tfrc", timeline_ldas=("zbs", "spike", "biaz")) -> str:
    """One HTML page for the traces (Trace objects)."""
    from ..control import replay
    from ..lda import classify
    from ..scoring import score
    from ..timeline import build_timeline
    from . import plots
    from .tables import blocks

    sections, toc = [], []
    for k, trace in enumerate(traces):
        anchor = f"t{k}"
        toc.append(f'<a href="#{anchor}">{html.escape(str(trace.path))}</a>')
        tl = build_timeline(trace)
        decisions = classify(tl, ldas)
        decisions.insert(0, "trace", str(trace.path))
        part = [
            f'<h2 id="{anchor}">{html.escape(str(trace.path))}</h2>',
            trace_html(trace),
            "<h3>Flows</h3>",
            html_table(summary_shown(tl.summary())),
        ]
        throughput = None
        if controller:
            try:
                result = replay(tl, [controller], ldas, rates=False)
                throughput = result.summary
            except Exception as exc:  # noqa: BLE001 - the rest of the report stands without it
                part.append(f"<p class='note'>no modeled throughput: {html.escape(str(exc))}</p>")
        summary = tl.summary().assign(trace=str(trace.path))
        if throughput is not None:
            throughput = throughput.assign(trace=str(trace.path))
        scores = score(decisions, summary, by="trace", throughput=throughput, bootstrap=200)
        for title, block, note in blocks(scores):
            part += [f"<h3>Scores</h3><p class='note'>{html.escape(title)}</p>", html_table(block, index=True)]
            if note:
                part.append(f"<p class='note'>{html.escape(note)}</p>")
        per_flow = score(decisions, summary, by="flow", bootstrap=0)
        part.append(_png(plots.mc_mw(scores, per_flow)))
        flow = worst_flow(decisions)
        if flow is not None:
            chosen = [x for x in timeline_ldas if x in set(decisions["lda"].astype(str))] or [
                str(decisions["lda"].cat.categories[0])
            ]
            part += [
                f"<h3>Timeline of flow {html.escape(flow)}, the worst classified</h3>",
                _png(plots.timeline(tl, flow, chosen)),
            ]
            if controller:
                try:
                    rates = replay(tl, [controller], chosen[:2] + ["omniscient", "unaware"])
                    part.append(_png(plots.rates(rates, flow=flow)))
                except Exception as exc:  # noqa: BLE001
                    part.append(f"<p class='note'>no rate plot: {html.escape(str(exc))}</p>")
        sections.append("\n".join(part))
    stamp = time.strftime("%Y-%m-%d %H:%M")
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>ldanalyze report</title>"
        f"<style>{CSS}</style></head><body><h1>ldanalyze report</h1>"
        f"<p class='note'>ldanalyze {VERSION}, {stamp}. Throughput is an open-loop replay: the trace's "
        f"timing is fixed; rates are what each controller would have allowed.</p>"
        f"<nav>{''.join(toc)}</nav>{''.join(sections)}</body></html>\n"
    )
