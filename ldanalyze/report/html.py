"""HTML: the compact notebook displays of Trace, Timeline and replay results, and the
self-contained report of ``ldanalyze report`` (figures embedded as PNG data, no network needed).

The report, per trace, after what was read and what the capture missed (its outages and drops:
``formatting.capture_caveat``), picture first: M_c against M_w where the causes are known, and
what each LDA called wireless with its interval (the lead figure of a trace without ground
truth); the score table (paper 000 Table II layout); the agreement between the LDAs (Cohen's
kappa) and the majority per loss; the shares called wireless over time; the timeline of the
worst-classified flow (the one whose losses the LDAs got wrong most often; without truth the
lossiest, with every LDA's calls; without a loss, the one a capture outage hid most of) and the
allowed rates of the controller on that flow; what was read (the flows). A trace with flows read
in the sender's view (issue #44 §3) adds "The sender's view": its own evidence per flow
(``sender_evidence``), the policer detector's verdict per chunk, Flach et al.'s and the lab
variant's (``lda.sender_policer``: rate, burst, the rule that ruled policing out), and the
``plots.sender`` figure of the flow with the most declared losses.
"""

from __future__ import annotations

import base64
import html
import io
import time

import pandas as pd

from ..consensus import majority_line
from ..control import DEFAULT_CONTROLLER
from ..formatting import html_table, number, shown, summary_shown, trace_html
from ..io.capture.clockrate import doubtful_clocks_note
from ..packets import sender_flows
from ..version import VERSION
from .text import hindsight_note

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1180px;
       color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: .2em;
margin-top: 2.2em; } h3 { font-size: 1.05em; margin-top: 1.4em; } h4 { font-size: .95em; margin: 1em 0 .3em; }
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
            f"{int(first['congestion'])} congestion and {int(first['wireless'])} wireless losses scored"
            f"{_policing_apart(first)}.</p>"
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


def _policing_apart(first: pd.Series) -> str:
    """The losses to a policer scored apart (``--policing-as excluded``), if any, as a clause."""
    apart = int(first.get("policing", 0)) if first.get("policing_as", "excluded") == "excluded" else 0
    return f" ({apart} losses to a policer counted apart: --policing-as congestion scores them)" if apart else ""


def _agreement_section(plots, kappa: pd.DataFrame, votes: pd.DataFrame) -> list[str]:
    line = majority_line(votes, len(kappa))
    return ["<h3>Agreement between the LDAs</h3>", _png(plots.kappa(kappa)), f"<p class='note'>{html.escape(line)}</p>"]


KNOWN_CAUSES = ("congestion", "wireless", "policing", "route")  # a trace with one of them has ground truth
SENDER_TIMELINE_NOTE = (
    "This flow was read in the sender's view: its arrivals are the ACKs' RTT samples, so ROTT is the RTT above "
    "its least and the inter-arrival time the time between ACK samples; each loss is marked where the sender "
    "declared it (sender_timeline)."
)
SENDER_SHOWN = 20  # flows of the sender's evidence table, most declared losses first
EVIDENCE_UNITS = {"loss_rate": "lost %"}
HINDSIGHT_CAVEAT = (
    "Both detectors decide with hindsight: a chunk's verdict reads the whole chunk (Flach et al., SIGCOMM 2016, "
    "§3.1), so it is not what the sender knew when it detected each loss. The lab variant's thresholds were "
    'chosen on the lab grid (docs/ldas.md, "At the sender"); on other paths they are a guess.'
)


def _evidence_table(evidence: pd.DataFrame) -> pd.DataFrame:
    """The sender's evidence as a person reads it: the flows with the most declared losses, numbers
    rounded; a quantity a row where there are few flows (the table stays narrow)."""
    top = evidence.sort_values("declared_lost", ascending=False, kind="stable").head(SENDER_SHOWN)
    fixed = {c: 2 if c.startswith("rtt") else 3 for c in top.columns if c.endswith(("_ms", "_mbit_s"))}
    table = shown(top, percent=EVIDENCE_UNITS, digits=2, fixed=fixed)
    return table.T if len(table) <= 4 else table


def _verdict_table(flach: pd.DataFrame, lab: pd.DataFrame) -> pd.DataFrame:
    """Per chunk, a row per detector: the verdict, the rule that ruled policing out, the token
    rate (Mbit/s) and the burst (kB) where policed."""
    both = pd.concat([flach.assign(detector="flach_pd"), lab.assign(detector="flach_pd_lab")], ignore_index=True)
    both = both.sort_values(["flow", "chunk"], kind="stable")
    table = pd.DataFrame(
        {
            "flow": both["flow"].astype(str),
            "chunk": both["chunk"],
            "losses": both["losses"],
            "sent": both["transmissions"],
            "detector": both["detector"],
            "verdict": both["verdict"].astype(str),
            "ruled out by": both["rule"].astype(str).replace("", "-"),
            "rate Mbit/s": (both["rate_bps"] * 1e-6).map(lambda v: number(v, 3)),
            "burst kB": (both["burst_bytes"].where(both["burst_bytes"] >= 0) / 1e3).map(lambda v: number(v, 1)),
        }
    )
    return table.drop(columns=["flow"]) if table["flow"].nunique() == 1 else table


def _sender_section(plots, trace) -> list[str]:
    """ "The sender's view": the evidence per flow, the verdicts per chunk, the figure of the flow
    with the most declared losses (the lab variant's policed chunks' token rate drawn); nothing
    for a trace without a flow read in the sender's view."""
    from ..lda.sender_policer import SenderPolicerLab, flach_verdicts
    from ..sender_evidence import sender_evidence

    evidence = sender_evidence(trace)
    if evidence.empty:
        return []
    flach = flach_verdicts(trace)
    lab = flach_verdicts(trace, SenderPolicerLab())
    flow = str(evidence["declared_lost"].idxmax())
    more = (
        f" (the {SENDER_SHOWN} with the most declared losses of {len(evidence)})"
        if len(evidence) > SENDER_SHOWN
        else ""
    )
    policed = int((lab["verdict"] == "policed").sum())
    return [
        "<h3>The sender's view</h3>",
        f"<h4>What the sender itself knew, per flow{more}</h4>",
        html_table(_evidence_table(evidence), index=True),
        "<p class='note'>Without any truth: each retransmission is the sender's belief that a segment was lost, "
        "counted by what triggered it (by_…); those its own evidence showed needless are spurious (D-SACK, "
        "RFC 2883; Eifel and F-RTO timing, RFC 3522, RFC 5682) and are not losses; lost: declared and not "
        "spurious. RTT: the ACKs' samples (Karn's rule, or TSecr); delivery rate: "
        "draft-cheng-iccrg-delivery-rate-estimation §3; p10/p50/p90 their percentiles.</p>",
        "<h4>A policer? The verdict per chunk</h4>",
        html_table(_verdict_table(flach, lab)),
        f"<p class='note'>flach_pd: Flach et al.'s detector with their public code's thresholds; flach_pd_lab: "
        f"the variant (its token rate refitted, the bucket capped, its tolerances floored at a few segments); "
        f"{policed} of {len(lab)} chunk(s) policed by it. A chunk is the flow cut where it sent nothing for "
        "more than an RTO. Rate: the goodput between the chunk's first and last loss; burst: the bytes sent "
        "before its first loss.</p>",
        f"<p class='caveat'>{html.escape(HINDSIGHT_CAVEAT)}</p>",
        f"<h4>Flow {html.escape(flow)}, the one with the most declared losses</h4>",
        _png(plots.sender(trace, flow, chunks=lab)),
    ]


def _lossiest_flow(decisions: pd.DataFrame) -> str | None:
    counts = decisions.drop_duplicates(["flow", "uid"])["flow"].astype(str).value_counts()
    return str(counts.index[0]) if len(counts) else None


def _outage_flow(meta: dict) -> str | None:
    """The flow with the most packets not observed in a capture outage (``capture_gap``), if any."""
    hidden = {label: info.get("capture_gap", 0) for label, info in (meta.get("flows") or {}).items()}
    flow = max(hidden, key=hidden.__getitem__, default=None)
    return flow if flow is not None and hidden[flow] else None


def worst_flow(decisions: pd.DataFrame, policing_as: str = "excluded") -> str | None:
    """The flow whose scored losses the LDAs (baselines aside) called wrong most often; losses
    to a policer count as ``policing_as`` says (``scoring.score``); None when none is scored."""
    d = decisions[~decisions["lda"].astype(str).isin(("unaware", "omniscient"))]
    cause = d["cause"].astype(str)
    if policing_as != "excluded":
        cause = cause.replace("policing", policing_as)
    called = d["decision"].astype(str)
    scored = cause.isin(("congestion", "wireless")) & called.isin(("congestion", "wireless"))
    if not scored.any():
        return None
    wrong = (cause[scored] != called[scored]).groupby(d["flow"].astype(str)[scored]).sum()
    return str(wrong.idxmax())


def build_report(
    traces,
    *,
    ldas="all",
    controller=DEFAULT_CONTROLLER,
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
        truth = bool(decisions["cause"].isin(KNOWN_CAUSES).any())
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
            notes += hindsight_note(decisions).splitlines()
            part += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
            if len(voting) >= 2:
                part += _agreement_section(plots, kappa_matrix(decisions), consensus(decisions))
            over_time = shares_over_time(decisions)
            if not over_time.empty:
                part += ["<h3>What the LDAs called, over time</h3>", _png(plots.shares_over_time(over_time))]
            worst = worst_flow(decisions, policing_as) if truth else None
            flow = worst or _lossiest_flow(decisions)
            if flow is not None:
                present = set(decisions["lda"].astype(str))
                named = [x for x in timeline_ldas if x in present] if truth else []
                chosen = named or voting[:10] or [str(decisions["lda"].cat.categories[0])]
                why = "the worst classified" if worst else "the one with the most losses"
                part += [
                    f"<h3>Timeline of flow {html.escape(flow)}, {why}</h3>",
                    _png(plots.timeline(tl, flow, chosen, state=bool(named))),
                ]
                if flow in sender_flows(trace):
                    part.append(f"<p class='note'>{SENDER_TIMELINE_NOTE}</p>")
                if controller and throughput is not None:
                    try:
                        rates = replay(tl, [controller], chosen[:2] + ["omniscient", "unaware"], path=path)
                        part.append(_png(plots.rates(rates, flow=flow)))
                    except Exception as exc:
                        part.append(f"<p class='note'>no rate plot: {html.escape(str(exc))}</p>")
        part += _sender_section(plots, trace)
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
