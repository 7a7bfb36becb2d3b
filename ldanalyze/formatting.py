"""How results read for a person, in one module that imports nothing of the project: numbers in
text tables (shares as percent with ``%`` in the column's name, a missing value as ``-``, times
since the epoch as UTC date and time) and the compact HTML that a Trace, a Timeline and a replay
result show in Jupyter. Machine outputs (JSON, CSV, Parquet) keep fractions and seconds, as
their columns' names say (``loss_rate``, ``M_c``). Every layer may use it; it uses none."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

import pandas as pd

MISSING = "-"
UTC_FORMAT = "%Y-%m-%d %H:%M:%S.%f"

# The timeline summary's columns as a table shows them: shares in percent, delays in ms.
# A timeline summary's main columns (inspect without -v, the notebook display): counts by fate,
# the loss rates, ROTT and IAT at a glance
MAIN_SUMMARY_COLUMNS = (
    "flow",
    "sent",
    "delivered",
    "congestion",
    "wireless",
    "route",
    "policing",
    "lost",
    "unobserved",
    "loss_rate",
    "congestion_rate",
    "wireless_rate",
    "gaps",
    "rott_p50_ms",
    "rott_p95_ms",
    "iat_p50_ms",
)
SUMMARY_PERCENT = {"loss_rate": "loss %", "congestion_rate": "cong %", "wireless_rate": "wless %"}


def number(value, digits: int) -> str:
    """``value`` with ``digits`` decimals, ``-`` when missing."""
    return MISSING if pd.isna(value) else f"{value:.{digits}f}"


def percent(value, digits: int = 1) -> str:
    """A share (a fraction) as a sentence says it: ×100 with ``digits`` decimals and `` %``
    (``92.5 %``), ``-`` when missing."""
    return MISSING if pd.isna(value) else f"{value * 100:.{digits}f} %"


def shown(
    frame: pd.DataFrame,
    *,
    percent: Mapping[str, str] | Iterable[str] = (),
    digits: int = 1,
    fixed: Mapping[str, int] | None = None,
    utc: Iterable[str] = (),
) -> pd.DataFrame:
    """``frame`` as strings for a person: the ``percent`` columns (fractions) ×100 with
    ``digits`` decimals, renamed ``name %`` (or as the mapping says); the ``fixed`` columns with
    their own decimals; the ``utc`` columns (seconds since the epoch) as UTC; every missing
    value ``-``. Other columns are left as they are."""
    names = dict(percent) if isinstance(percent, Mapping) else {c: f"{c} %" for c in percent}
    out = frame.copy()
    for column in names:
        if column in out:
            out[column] = (out[column].astype(float) * 100).map(lambda v: number(v, digits))
    for column, places in (fixed or {}).items():
        if column in out:
            out[column] = out[column].astype(float).map(lambda v, p=places: number(v, p))
    for column in utc:
        if column in out:
            times = pd.to_datetime(out[column], unit="s", utc=True, errors="coerce")
            out[column] = times.dt.strftime(UTC_FORMAT).fillna(MISSING)
    return out.rename(columns={c: n for c, n in names.items() if c in out})


def summary_shown(summary: pd.DataFrame) -> pd.DataFrame:
    """A timeline summary (``Timeline.summary``) as ``inspect`` and the report show it."""
    fixed = {c: 1 for c in summary.columns if c.endswith("_ms")}
    return shown(summary, percent=SUMMARY_PERCENT, digits=2, fixed=fixed)


def text(frame: pd.DataFrame, **options) -> str:
    """:func:`shown` as aligned text, without the index."""
    return shown(frame, **options).to_string(index=False)


# --- HTML: the notebook displays (and the report's tables) ----------------------------------

SHOWN_FLOWS = 20  # rows of a Timeline's display; the rest are counted


def html_table(frame: pd.DataFrame, *, index: bool = False) -> str:
    """A table as the report's and the displays' HTML (class ``ld``, ``-`` for missing)."""
    table = frame.to_html(index=index, classes="ld", border=0, na_rep=MISSING, float_format=lambda v: f"{v:.4g}")
    return f'<div class="wide">{table}</div>'


def capture_caveat(meta: Mapping) -> str | None:
    """What a capture's own failures hide, from ``meta['capture_outages']`` and
    ``meta['capture_dropped']`` (docs/captures.md): each outage, when and how long, with the
    packets it hid, and the packets the capture's interface dropped; None when neither."""
    outages, dropped = meta.get("capture_outages") or [], meta.get("capture_dropped") or 0
    said = []
    if outages:
        each = "; ".join(
            f"from {o['start_s']:.2f} s for {o['seconds']:.2f} s ({o['not_observed']} packets)" for o in outages[:5]
        )
        more = f"; and {len(outages) - 5} more times" if len(outages) > 5 else ""
        said.append(
            "Counting from its first record, the capture recorded nothing of its streams, in either direction, "
            f"{each}{more}. Those packets were not observed: they are neither lost nor scored (fate 'unobserved', "
            "reason 'capture gap')."
        )
    if dropped:
        said.append(
            f"The capture's interface statistics say it dropped {dropped} packets: some of the losses shown may "
            "be the capture's, not the path's (the file does not say when they were dropped)."
        )
    return " ".join(said) or None


def _packets_counted(packets: pd.DataFrame, meta: Mapping) -> str:
    """How many data packets, and, where a capture outage hid some, how many were captured."""
    hidden = sum(o["not_observed"] for o in meta.get("capture_outages") or ())
    if not hidden:
        return f"{len(packets)} data packets"
    outages = meta["capture_outages"]
    seconds = sum(o["seconds"] for o in outages)
    where = (
        f"a {seconds:.2f} s capture outage"
        if len(outages) == 1
        else f"{len(outages)} capture outages ({seconds:.2f} s)"
    )
    lost = int((~packets["fate"].astype(str).isin(("delivered", "unobserved"))).sum())
    others = f", {lost} lost" if lost else ""
    return f"{len(packets)} data packets: {len(packets) - hidden - lost} captured{others}, {hidden} not observed in {where}"


def trace_html(trace) -> str:
    """A Trace: what was read, what the capture missed (:func:`capture_caveat`), and its packets
    counted by fate."""
    fate = trace.packets["fate"]
    counts = fate.value_counts()
    fates = pd.DataFrame({str(name): [int(counts.get(name, 0))] for name in fate.cat.categories})
    head = (
        f"<b>{html.escape(str(trace.path))}</b>: {html.escape(trace.format)}, {len(trace.flows)} flow(s), "
        f"{_packets_counted(trace.packets, trace.meta)}, {len(trace.rtt)} RTT samples"
    )
    caveat = capture_caveat(trace.meta)
    warn = f"<p class='caveat'><b>The capture missed packets.</b> {html.escape(caveat)}</p>" if caveat else ""
    notes = "".join(f"<p class='note'>Note: {html.escape(note)}</p>" for note in trace.meta.get("notes", ()))
    return f"<div>{head}{warn}{html_table(fates)}{notes}</div>"


def timeline_html(tl) -> str:
    """A Timeline: its size and the first flows' summary."""
    summary = tl.summary()
    shown = summary_shown(summary[list(MAIN_SUMMARY_COLUMNS)].head(SHOWN_FLOWS))
    more = f"<p class='note'>... {len(summary) - SHOWN_FLOWS} more flows</p>" if len(summary) > SHOWN_FLOWS else ""
    path = html.escape(str(tl.meta.get("path", "")))
    return (
        f"<div><b>Timeline</b> {path}: {len(tl.arrivals)} arrivals, {len(tl.gaps)} gaps, "
        f"{len(tl.losses)} losses{html_table(shown)}{more}</div>"
    )


def replay_html(result) -> str:
    """A replay result: its note (open loop) and the throughput per controller and LDA."""
    summary = result.summary
    table = summary.groupby(["controller", "lda"], observed=True)[["thput", "vs_omniscient", "vs_unaware"]].mean()
    return (
        f"<div><b>Replay</b> ({html.escape(result.note)}): {len(result.rates)} rate steps; "
        f"mean over flows{html_table(table.reset_index())}</div>"
    )
