"""Figures against time: one flow's timeline with every loss, the capture's outages as gaps, and
the first LDA's state (``timeline``), and the rates a controller allowed (``rates``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import UsageError, renamed_keyword
from .style import (
    BLACK,
    CAUSE_MARKER,
    DECISION_COLOUR,
    GREEN,
    ORANGE,
    PALETTE,
    decimate,
    decimate_broken,
    legend_outside,
    pyplot,
    style_axes,
)

SECONDS = {"d", "start_threshold", "end_threshold", "mean", "dev", "T_avg", "T_min"}  # state columns in s
OUTAGE_GREY = "#BBBBBB"  # the band of a capture outage: no colour of the palette, behind the data
SPARSE = 300  # arrivals shown at most for a dot on each (a lone arrival between outages draws no line)


def _outages_between(meta: dict, t: np.ndarray, origin: float) -> tuple[np.ndarray, np.ndarray]:
    """The capture outages (``meta['capture_outages']``, capture seconds) between two of the
    flow's arrivals ``t`` (less ``origin``), as rows of (start, end), and the index of the first
    arrival after each: the lines break there."""
    spans = np.array([(o["start"], o["end"]) for o in meta.get("capture_outages") or ()], np.float64).reshape(-1, 2)
    spans -= origin
    after = np.searchsorted(t, spans.mean(axis=1)) if t.size else np.zeros(0, np.int64)
    inside = (after > 0) & (after < t.size)
    return spans[inside], np.unique(after[inside])


@renamed_keyword("replay", "semantics", since="0.5.0")
def timeline(tl, flow=None, ldas=("zbs",), *, window=None, state: bool = True, semantics=None, figsize=(11, 7.5)):
    """ROTT, inter-arrival time, the losses and the decisions of ``ldas`` for one ``flow``
    (default: the flow with the most losses), between ``window = (t0, t1)`` seconds. A capture
    outage (``tl.meta['capture_outages']``) is a grey band the lines do not cross."""
    from ...lda import classify, lda_state

    plt = pyplot()
    flows = tl.flows
    if not flows:
        raise UsageError("timeline plot: the timeline has no flow")
    if flow is None:
        counts = tl.losses["flow"].astype(str).value_counts()
        flow = counts.index[0] if len(counts) else flows[0]
    flow = str(flow)
    if flow not in flows:
        raise UsageError(f"timeline plot: no flow {flow!r} (flows: {', '.join(flows[:10])})")
    ldas = [ldas] if isinstance(ldas, str) else list(ldas)
    a = tl.arrivals[tl.arrivals["flow"].astype(str) == flow]
    losses = tl.losses[(tl.losses["flow"].astype(str) == flow) & tl.losses["detected"]]
    t = a["t_recv"].to_numpy(np.float64)
    if window is not None:
        t0, t1 = window
        a = a[(t >= t0) & (t <= t1)]
        losses = losses[(losses["t_detect"] >= t0) & (losses["t_detect"] <= t1)]
        t = a["t_recv"].to_numpy(np.float64)
    # capture times are epoch seconds: show them from the flow's first arrival
    origin = float(t[0]) if t.size and t[0] > 1e8 else 0.0
    panels = 3 + (1 if state and ldas else 0)
    ratios = [3, 2, 0.4 + 0.35 * max(len(ldas), 1)] + ([2] if panels == 4 else [])
    fig, axes = plt.subplots(panels, 1, sharex=True, figsize=figsize, height_ratios=ratios, constrained_layout=True)
    rott = a["rott"].to_numpy(np.float64) * 1e3
    t = t - origin
    outages, cuts = _outages_between(tl.meta, t, origin)
    for k, (start, end) in enumerate(outages):
        for ax in axes:
            label = "capture outage: not observed" if k == 0 and ax is axes[0] else None
            ax.axvspan(start, end, color=OUTAGE_GREY, alpha=0.35, linewidth=0, zorder=0, label=label)
    dots = {"marker": ".", "markersize": 3} if t.size <= SPARSE else {}
    axes[0].plot(*decimate_broken(t, rott, cuts), color=BLACK, linewidth=0.7, label="ROTT", **dots)
    style_axes(axes[0], None, "ROTT (ms)")
    iat = a["iat"].to_numpy(np.float64) * 1e3
    iat[cuts] = np.nan  # the time across an outage is the capture's silence, not an inter-arrival
    axes[1].plot(*decimate_broken(t, iat, cuts), color="#555555", linewidth=0.6, **dots)
    style_axes(axes[1], None, "inter-arrival (ms)")

    # where each loss was revealed: the ROTT of the revealing arrival
    detect = losses["t_detect"].to_numpy(np.float64) - origin
    at = np.searchsorted(t, detect)
    y_loss = rott[np.clip(at, 0, max(len(rott) - 1, 0))] if len(rott) else np.zeros(len(losses))
    cause = losses["cause"].astype(str).to_numpy()
    for name, marker in CAUSE_MARKER.items():
        chosen = cause == name
        if chosen.any():
            axes[0].scatter(
                detect[chosen],
                y_loss[chosen],
                marker=marker,
                s=28,
                facecolor="none",
                edgecolor=BLACK,
                linewidth=0.9,
                zorder=3,
                label="lost: cause unknown" if name == "lost" else f"lost: {name}",
            )
    legend_outside(axes[0])

    strip = axes[2]
    if ldas and len(losses):
        decisions = classify(tl, ldas, semantics=semantics)
        decisions = decisions[decisions["flow"].astype(str) == flow]
        names = [str(x) for x in decisions["lda"].cat.categories]
        for row, name in enumerate(names):
            d = decisions[decisions["lda"] == name].set_index("uid").reindex(losses["uid"])
            decided = d["decision"].astype(str).to_numpy()
            wrong = (
                (decided != cause)
                & np.isin(decided, ("congestion", "wireless"))
                & np.isin(cause, ("congestion", "wireless"))
            )
            for cause_name, marker in CAUSE_MARKER.items():
                for decision, colour in DECISION_COLOUR.items():
                    chosen = (cause == cause_name) & (decided == decision)
                    if chosen.any():
                        strip.scatter(
                            detect[chosen],
                            np.full(chosen.sum(), row),
                            marker=marker,
                            s=30,
                            color=colour,
                            edgecolor=np.where(wrong[chosen], BLACK, colour),
                            linewidth=0.8,
                            zorder=3,
                        )
        strip.set_yticks(range(len(names)), names)
        strip.set_ylim(-0.6, len(names) - 0.4)
        handles = [
            plt.Line2D([], [], marker="s", linestyle="", color=c, label=f"decided {d}")
            for d, c in DECISION_COLOUR.items()
        ]
        if np.isin(cause, ("congestion", "wireless")).any():
            handles.append(
                plt.Line2D(
                    [],
                    [],
                    marker="o",
                    linestyle="",
                    markerfacecolor="white",
                    markeredgecolor=BLACK,
                    label="black edge: wrong",
                )
            )
        strip.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    else:
        strip.set_yticks([])
        strip.text(
            0.5,
            0.5,
            "no loss detected in this window",
            transform=strip.transAxes,
            ha="center",
            va="center",
            color="#777777",
        )
    style_axes(strip, None, None)
    strip.grid(False)

    if panels == 4:
        st = lda_state(tl, ldas[0], semantics=semantics)
        st = st[st["flow"].astype(str) == flow]
        if window is not None:
            st = st[(st["t_recv"] >= window[0]) & (st["t_recv"] <= window[1])]
        _state_panel(axes[3], st, ldas[0], origin)
    axes[-1].set_xlabel(
        "receive time (s)"
        if not origin
        else f"time since the flow's first arrival (s; that is {pd.Timestamp(origin, unit='s'):%Y-%m-%d %H:%M:%S} UTC)"
    )
    source = " + ".join(part.rsplit("/", 1)[-1] for part in str(tl.meta.get("path") or "trace").split("+"))
    fig.suptitle(f"{source}: flow {flow}", fontsize=11)
    return fig


def _state_panel(ax, st: pd.DataFrame, lda, origin: float = 0.0) -> None:
    """The LDA's internal state: delays and thresholds (ms) on the left axis, dimensionless
    quantities on the right one, a boolean state shaded, a chosen scheme as coloured bands."""
    t = st["t_recv"].to_numpy(np.float64) - origin
    columns = [c for c in st.columns if c not in ("flow", "seq", "t_recv")]
    # delays across separate clocks carry the clocks' offset (an epoch, say): shown less it
    delays = [st[c].to_numpy(np.float64) for c in columns if c in SECONDS and st[c].dtype.kind == "f"]
    finite = np.concatenate([d[np.isfinite(d)] for d in delays]) if delays else np.empty(0)
    floor = float(finite.min()) if finite.size and abs(finite.min()) >= 1.0 else 0.0
    right = None
    k = 0
    for column in columns:
        values = st[column]
        if values.dtype.kind == "f":
            target = ax
            if column not in SECONDS:
                right = right or ax.twinx()
                target = right
            scale, shift = (1e3, floor) if column in SECONDS else (1.0, 0.0)
            target.plot(
                *decimate(t, (values.to_numpy(np.float64) - shift) * scale),
                color=PALETTE[k % len(PALETTE)],
                linewidth=0.8,
                label=column if column in SECONDS else f"{column} (right)",
            )
            k += 1
        elif values.dtype.kind == "b":
            ax.fill_between(
                t,
                0,
                1,
                where=values.to_numpy(bool),
                transform=ax.get_xaxis_transform(),
                color=ORANGE,
                alpha=0.18,
                linewidth=0,
                step="post",
                label=column,
            )
        else:
            codes, labels = pd.factorize(values.astype(str))
            for j, label in enumerate(labels):
                if label:
                    ax.fill_between(
                        t,
                        0.92,
                        1.0,
                        where=codes == j,
                        transform=ax.get_xaxis_transform(),
                        color=PALETTE[(4 + j) % len(PALETTE)],
                        alpha=0.5,
                        linewidth=0,
                        step="post",
                        label=f"{column}: {label}",
                    )
    handles, labels = ax.get_legend_handles_labels()
    if right is not None:
        more = right.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
        style_axes(right, None, None)
        right.grid(False)
        right.spines["right"].set_visible(True)
    ax.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(1.06 if right is not None else 1.01, 1.0),
        fontsize=8,
        frameon=False,
        title="ms less the clocks' offset" if floor else None,
        title_fontsize=8,
    )
    style_axes(ax, None, f"{lda} state (ms)")


def rates(result, flow=None, controller=None, ldas=None, *, capacity_bps=None, ax=None):
    """The allowed rate (kb/s) of one controller fed each LDA over one flow, from
    ``replay(..., rates=True)``; the omniscient and unaware baselines dashed."""
    plt = pyplot()
    table = result.rates
    if table.empty:
        raise UsageError("rates plot: the replay holds no rate steps (replay with rates=True)")
    controller = str(controller or table["controller"].astype(str).iloc[0])
    table = table[table["controller"].astype(str) == controller]
    flow = str(flow if flow is not None else table["flow"].astype(str).iloc[0])
    table = table[table["flow"].astype(str) == flow]
    names = [str(x) for x in dict.fromkeys(table["lda"].astype(str))] if ldas is None else list(ldas)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 4.2), constrained_layout=True)
    k = 0
    for name in names:
        part = table[table["lda"].astype(str) == name]
        if part.empty:
            continue
        t, r = decimate(part["t"].to_numpy(np.float64), part["rate_bps"].to_numpy(np.float64) / 1e3)
        if name in ("omniscient", "unaware"):
            ax.step(
                t,
                r,
                where="post",
                color=BLACK if name == "omniscient" else "#888888",
                linestyle="--",
                linewidth=0.7,
                alpha=0.6,
                zorder=1,
                label=name,
            )
        else:
            ax.step(t, r, where="post", color=PALETTE[k % len(PALETTE)], linewidth=0.8, alpha=0.9, label=name)
            k += 1
    if capacity_bps:
        ax.axhline(capacity_bps / 1e3, color=GREEN, linewidth=1, linestyle=":", label="capacity")
    style_axes(ax, "time (s)", "allowed rate (kb/s)")
    ax.set_title(
        f"{controller}, flow {flow}: allowed rate (open-loop replay: the trace's timing is fixed)", fontsize=10
    )
    legend_outside(ax)
    return fig if fig is not None else ax.figure
