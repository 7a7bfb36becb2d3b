"""HTML: the compact notebook displays of Trace, Timeline and replay results, and the
self-contained report of ``ldanalyze report`` (figures embedded as PNG data, no network needed).

The report, per trace, after what was read and what the capture missed (its outages and drops:
``formatting.capture_caveat``), picture first: M_c against M_w where the causes are known, and
what each LDA called wireless with its interval (the lead figure of a trace without ground
truth); the score table (paper 000 Table II layout); the agreement between the LDAs (Cohen's
kappa) and the majority per loss; the shares called wireless over time; the timeline of the
worst-classified flow (the one whose losses the LDAs got wrong most often; without truth the
lossiest, with every LDA's calls; without a loss, the one a capture outage hid most of) and the
allowed rates of the controller on that flow; what was read (the flows).
"""

from __future__ import annotations

import base64
import html
import io
import time

import pandas as pd

from ..consensus import majority_line
from ..formatting import html_table, summary_shown, trace_html
from ..io.capture.clockrate import doubtful_clocks_note
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
.caveat { background: #fdf1dc; border-left: 4px solid #E69F00; padding: .4em .8em; }
"""


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=85)
    plt.close(fig)
    return f'<img alt="figure" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def _figures_first(
    plots, scores: pd.DataFrame, per_flow: pd.DataFrame, truth: bool, voting: list[str], bootstrapped: bool
) -> list[str]:
    """The figure a person looks at first: with truth, M_c against M_w; without, what each LDA
    called (and with truth, that too, against the true share)."""
    out = []
    if truth and (scores["M_c"].notna() & scores["M_w"].notna()).any():
        out.append(_png(plots.mc_mw(scores, per_flow)))
    elif truth:  # the plot would be empty: say why instead
        first = scores.iloc[0]
        out.append(
            f"<p class='note'>No M_c against M_w: it needs scored losses of both causes, and this trace has "
            f"{int(first['congestion'])} congestion and {int(first['wireless'])} wireless losses scored.</p>"
        )
    if voting:
        out.append(_png(plots.called_wireless(scores, per_flow)))
    if not truth:
        interval = (
            "the 95 % interval of a bootstrap over loss bursts"
            if bootstrapped
            else "its 95 % Wilson interval (--bootstrap 0), which takes the losses as independent"
        )
        out.append(
            "<p class='note'>No ground truth: the cause of every loss is unknown, so nothing is scored. "
            f"Shown is what each LDA called, with {interval}; --labels or a --vantage chain give the truth.</p>"
        )
    return out


def _agreement_section(plots, kappa: pd.DataFrame, votes: pd.DataFrame) -> list[str]:
    line = majority_line(votes, len(kappa))
    return ["<h3>Agreement between the LDAs</h3>", _png(plots.kappa(kappa)), f"<p class='note'>{html.escape(line)}</p>"]


def _lossiest_flow(decisions: pd.DataFrame) -> str | None:
    counts = decisions.drop_duplicates(["flow", "uid"])["flow"].astype(str).value_counts()
    return str(counts.index[0]) if len(counts) else None


def _outage_flow(meta: dict) -> str | None:
    """The flow with the most packets not observed in a capture outage (``capture_gap``), if any."""
    hidden = {label: info.get("capture_gap", 0) for label, info in (meta.get("flows") or {}).items()}
    flow = max(hidden, key=hidden.__getitem__, default=None)
    return flow if flow is not None and hidden[flow] else None


def worst_flow(decisions: pd.DataFrame) -> str | None:
    """The flow whose scored losses the LDAs (baselines aside) called wrong most often."""
    d = decisions[~decisions["lda"].astype(str).isin(("unaware", "omniscient"))]
    d = d[d["cause"].isin(("congestion", "wireless")) & d["decision"].isin(("congestion", "wireless"))]
    if d.empty:
        return None
    wrong = (d["cause"].astype(str) != d["decision"].astype(str)).groupby(d["flow"].astype(str)).sum()
    return str(wrong.idxmax())


def build_report(
    traces,
    *,
    ldas="all",
    controller="tfrc",
    timeline_ldas=("zbs", "spike", "biaz"),
    path=None,
    route_as="excluded",
    policing_as="excluded",
    bootstrap: int = 1000,
    seed: int = 0,
) -> str:
    """One HTML page for the traces (Trace objects). ``path``: the path model of the
    controller's replay (``PathModel``: base RTT, capacity), for flows that need one;
    ``route_as``, ``policing_as``: how losses of those causes are scored (``scoring.score``);
    ``bootstrap`` and ``seed``: the burst bootstrap's, as ``score`` takes them (the same
    defaults, so an LDA's interval here is the one ``ldanalyze score`` prints)."""
    from ..consensus import agreement, consensus, kappa_matrix, shares_over_time, voters
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
        truth = bool(decisions["cause"].isin(("congestion", "wireless")).any())
        voting = voters(decisions)
        part = [f'<h2 id="{anchor}">{html.escape(str(trace.path))}</h2>', trace_html(trace)]
        doubtful = doubtful_clocks_note(trace.meta)
        if doubtful:
            part.append(f"<p class='note'>Note: {html.escape(doubtful)}.</p>")
        if decisions.empty:
            part.append("<p class='note'>no flow lost a packet: nothing to classify.</p>")
            flow = _outage_flow(trace.meta)
            if flow is not None:
                part += [
                    f"<h3>Timeline of flow {html.escape(flow)}, the one with the most packets in a capture outage</h3>",
                    _png(plots.timeline(tl, flow, (), state=False)),
                ]
        throughput, notes = None, []
        if controller and not decisions.empty:
            try:
                throughput = replay(tl, [controller], ldas, rates=False, path=path).summary
            except Exception as exc:  # the rest of the report stands without it
                notes.append(f"no modeled throughput: {exc}")
        summary = tl.summary().assign(trace=str(trace.path))
        if throughput is not None:
            throughput = throughput.assign(trace=str(trace.path))
        if not decisions.empty:
            scoring = {"route_as": route_as, "policing_as": policing_as}
            scores = score(
                decisions, summary, by="trace", throughput=throughput, bootstrap=bootstrap, seed=seed, **scoring
            )
            per_flow = score(decisions, summary, by="flow", bootstrap=0, **scoring)
            if voting:
                scores = scores.merge(
                    agreement(decisions, ("trace",)).drop(columns=["called"]), on=["trace", "lda"], how="left"
                )
            part += _figures_first(plots, scores, per_flow, truth, voting, bootstrap > 0)
            for title, block, note in blocks(scores):
                part += [f"<h3>Scores</h3><p class='note'>{html.escape(title)}</p>", html_table(block, index=True)]
                if note:
                    part.append(f"<p class='note'>{html.escape(note)}</p>")
            part += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
            if len(voting) >= 2:
                part += _agreement_section(plots, kappa_matrix(decisions), consensus(decisions))
            over_time = shares_over_time(decisions)
            if not over_time.empty:
                part += ["<h3>What the LDAs called, over time</h3>", _png(plots.shares_over_time(over_time))]
            flow = worst_flow(decisions) if truth else _lossiest_flow(decisions)
            if flow is not None:
                present = set(decisions["lda"].astype(str))
                chosen = [x for x in timeline_ldas if x in present] if truth else voting[:10]
                chosen = chosen or [str(decisions["lda"].cat.categories[0])]
                why = "the worst classified" if truth else "the one with the most losses"
                part += [
                    f"<h3>Timeline of flow {html.escape(flow)}, {why}</h3>",
                    _png(plots.timeline(tl, flow, chosen, state=truth)),
                ]
                if controller and throughput is not None:
                    try:
                        rates = replay(tl, [controller], chosen[:2] + ["omniscient", "unaware"], path=path)
                        part.append(_png(plots.rates(rates, flow=flow)))
                    except Exception as exc:
                        part.append(f"<p class='note'>no rate plot: {html.escape(str(exc))}</p>")
        part += ["<h3>Flows</h3>", html_table(summary_shown(tl.summary()))]
        sections.append("\n".join(part))
    stamp = time.strftime("%Y-%m-%d %H:%M")
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>ldanalyze report</title>"
        f"<style>{CSS}</style></head><body><h1>ldanalyze report</h1>"
        f"<p class='note'>ldanalyze {VERSION}, {stamp}. Throughput is an open-loop replay: the trace's "
        f"timing is fixed; rates are what each controller would have allowed.</p>"
        f"<nav>{''.join(toc)}</nav>{''.join(sections)}</body></html>\n"
    )
