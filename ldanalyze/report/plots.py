"""Figures in the manner of the papers' (matplotlib; ``ldanalyze.plot``). Each function returns
its Figure, or draws into the ``ax`` it is given.

- ``timeline``: ROTT and inter-arrival time of one flow against time, every loss marked where
  the receiver detected it, by true cause (marker shape) and by each LDA's decision (colour);
  the first LDA's internal state below. Lines are decimated to the pixels they cover; losses
  never are.
- ``mc_mw``: M_c against M_w, one point per LDA with its confidence intervals, the per-flow
  spread behind it, the ideal corner marked (paper 000 §VI weighs the two this way).
- ``confusion``: paper 001 Table I as a 2 × 2 heat map per LDA.
- ``called_wireless``: the share of its losses each LDA called wireless, with its interval and
  the per-flow spread; the true share where the causes are known. The first figure of a trace
  without ground truth: there it is what the LDAs say.
- ``kappa``: Cohen's kappa between every pair of LDAs as a heat map (``consensus``).
- ``shares_over_time``: each LDA's share called wireless per time window, as a heat map.
- ``rates``: each controller's allowed rate fed several LDAs, omniscient and unaware as
  bounds, against time (open-loop replay).
- ``across``: a metric against a trace property over a set of traces (paper 000 Figs. 8-9).
- ``zbs_usage``: the share of time each ZBS base scheme was in force (paper 000 Fig. 13).
- ``sweep``: a parameter sweep's M_c against M_w, the frontier and the defaults.
- ``evaluation``: the learned LDA's grouped cross-validation: accuracy per held-out group and
  LDA with its intervals, and the features' permutation importance.

Colours are Okabe and Ito's colour-blind-safe palette. matplotlib is imported when a figure is
drawn, not with ldanalyze.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import UsageError, renamed_keyword

# Okabe-Ito
BLACK, ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE = (
    "#000000",
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
)
PALETTE = (BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY, YELLOW, BLACK)
DECISION_COLOUR = {"congestion": VERMILLION, "wireless": BLUE, "undetected": "#999999", "abstained": "#CCCCCC"}
CAUSE_MARKER = {"congestion": "v", "wireless": "o", "route": "s", "policing": "D", "lost": "X"}
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h", "p")
MAX_POINTS = 4000  # line vertices per panel after decimation
SECONDS = {"d", "start_threshold", "end_threshold", "mean", "dev", "T_avg", "T_min"}  # state columns in s


def legend_outside(ax, **kwargs) -> None:
    """A legend to the right of the axes, where it hides no data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, **kwargs)


def pyplot():
    """pyplot, imported on first use (matplotlib picks Agg where there is no display)."""
    import matplotlib.pyplot as plt

    return plt


def style_axes(ax, xlabel: str | None, ylabel: str | None) -> None:
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def decimate(t: np.ndarray, y: np.ndarray, points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``points`` vertices that keep each bin's first, lowest, highest and last value,
    in time order: the line looks the same at any pixel width up to points/4 bins."""
    n = t.size
    if n <= points:
        return t, y
    bins = points // 4
    edges = np.linspace(0, n, bins + 1).astype(np.int64)
    keep = [edges[:-1], edges[1:] - 1]
    finite = np.where(np.isfinite(y), y, np.nan)
    for pick in (np.nanargmin, np.nanargmax):
        idx = np.empty(bins, np.int64)
        for b in range(bins):
            segment = finite[edges[b] : edges[b + 1]]
            idx[b] = edges[b] + (pick(segment) if np.isfinite(segment).any() else 0)
        keep.append(idx)
    rows = np.unique(np.concatenate(keep))
    return t[rows], y[rows]


@renamed_keyword("replay", "semantics", since="0.5.0")
def timeline(tl, flow=None, ldas=("zbs",), *, window=None, state: bool = True, semantics=None, figsize=(11, 7.5)):
    """ROTT, inter-arrival time, the losses and the decisions of ``ldas`` for one ``flow``
    (default: the flow with the most losses), between ``window = (t0, t1)`` seconds."""
    from ..lda import classify, lda_state

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
    axes[0].plot(*decimate(t, rott), color=BLACK, linewidth=0.7, label="ROTT")
    style_axes(axes[0], None, "ROTT (ms)")
    iat = a["iat"].to_numpy(np.float64) * 1e3
    axes[1].plot(*decimate(t, iat), color="#555555", linewidth=0.6)
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


def mc_mw(scores: pd.DataFrame, per_flow: pd.DataFrame | None = None, ax=None, title: str | None = None):
    """M_c against M_w in %, one point per LDA (pooled or per-trace rows of ``score``), with its
    intervals; ``per_flow`` (``score(..., by="flow")``) adds each flow's point behind it."""
    plt = pyplot()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 5.5), constrained_layout=True)
    rows = scores.drop_duplicates("lda")
    for k, (_, row) in enumerate(rows.iterrows()):
        colour = PALETTE[k % len(PALETTE)]
        name = str(row["lda"])
        if per_flow is not None:
            flows = per_flow[per_flow["lda"].astype(str) == name]
            ax.scatter(
                flows["M_c"] * 100,
                flows["M_w"] * 100,
                s=12,
                color=colour,
                alpha=0.3,
                linewidth=0,
                marker=MARKERS[k % len(MARKERS)],
            )
        x, y = row["M_c"] * 100, row["M_w"] * 100
        if not (np.isfinite(x) and np.isfinite(y)):
            continue
        xerr = yerr = None
        for lo, hi in (("_boot_lo", "_boot_hi"), ("_lo", "_hi")):
            if f"M_c{lo}" in row.index and np.isfinite(row[f"M_c{lo}"]):
                xerr = [[x - row[f"M_c{lo}"] * 100], [row[f"M_c{hi}"] * 100 - x]]
            if f"M_w{lo}" in row.index and np.isfinite(row[f"M_w{lo}"]):
                yerr = [[y - row[f"M_w{lo}"] * 100], [row[f"M_w{hi}"] * 100 - y]]
            if xerr is not None or yerr is not None:
                break
        ax.errorbar(
            x,
            y,
            xerr=xerr,
            yerr=yerr,
            fmt=MARKERS[k % len(MARKERS)],
            color=colour,
            markersize=7,
            capsize=2,
            linewidth=1,
            label=name,
        )
    ax.scatter([0], [0], marker="*", s=160, color=GREEN, zorder=4, clip_on=False, label="ideal")
    ax.set_xlim(-3, 103)
    ax.set_ylim(-3, 103)
    style_axes(ax, "M_c: congestion losses called wireless (%)", "M_w: wireless losses called congestion (%)")
    ax.set_title(
        title or "misclassification: M_c against M_w" + (" (faint: per flow)" if per_flow is not None else ""),
        fontsize=10,
    )
    legend_outside(ax)
    return fig if fig is not None else ax.figure


def called_wireless(scores: pd.DataFrame, per_flow: pd.DataFrame | None = None, ax=None, title: str | None = None):
    """The share of its decided losses each LDA called wireless (%), with its interval (burst
    bootstrap, else Wilson), one row per LDA (pooled or one trace's rows of ``score``);
    ``per_flow`` adds each flow's share behind it. Where the causes are known, the omniscient
    row's share (the true one) is drawn as a line; the baselines are not drawn as LDAs."""
    plt = pyplot()
    rows = scores.drop_duplicates("lda")
    truth = rows[rows["lda"].astype(str) == "omniscient"]
    rows = rows[~rows["lda"].astype(str).isin(("unaware", "omniscient"))]
    if rows.empty:
        raise UsageError("called-wireless plot: no LDA among the score rows (only baselines)")
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.32 * len(rows)), constrained_layout=True)
    names = [str(x) for x in rows["lda"]][::-1]  # the first LDA at the top
    for y, (_, row) in enumerate(rows.iloc[::-1].iterrows()):
        colour = PALETTE[(len(rows) - 1 - y) % len(PALETTE)]
        if per_flow is not None:
            flows = per_flow[per_flow["lda"].astype(str) == names[y]]["wireless_share"].dropna() * 100
            ax.scatter(flows, np.full(len(flows), y), s=10, color=colour, alpha=0.25, linewidth=0)
        x = row["wireless_share"] * 100
        if not np.isfinite(x):
            continue
        xerr = None
        for lo, hi in (("_boot_lo", "_boot_hi"), ("_lo", "_hi")):
            if f"wireless_share{lo}" in row.index and np.isfinite(row[f"wireless_share{lo}"]):
                xerr = [[x - row[f"wireless_share{lo}"] * 100], [row[f"wireless_share{hi}"] * 100 - x]]
                break
        ax.errorbar(x, y, xerr=xerr, fmt="o", color=colour, markersize=6, capsize=3, linewidth=1.2)
    if not truth.empty and int(truth["unknown"].iloc[0]) < int(truth["losses"].iloc[0]):
        share = float(truth["wireless_share"].iloc[0]) * 100
        ax.axvline(share, color=GREEN, linewidth=1.5, linestyle="--", label=f"true share {share:.1f} %")
        legend_outside(ax)
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlim(-2, 102)
    style_axes(ax, "losses called wireless (% of the losses each LDA decided; bars: 95 % interval)", None)
    ax.set_title(
        title or "what each LDA called wireless" + (" (faint: per flow)" if per_flow is not None else ""), fontsize=10
    )
    return fig if fig is not None else ax.figure


def kappa(matrix: pd.DataFrame, ax=None, title: str | None = None):
    """Cohen's kappa between every pair of LDAs (``consensus.kappa_matrix``): blue agree, red
    disagree, white as by chance, grey undefined."""
    plt = pyplot()
    if matrix.empty:
        raise UsageError("kappa plot: the matrix is empty (no LDA voted)")
    fig = None
    n = len(matrix)
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.6 + 0.55 * n, 1.2 + 0.5 * n), constrained_layout=True)
    values = matrix.to_numpy(np.float64)
    cmap = plt.get_cmap("RdBu").with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-1, vmax=1)
    for i in range(n):
        for j in range(n):
            v = values[i, j]
            ax.text(j, i, "-" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if np.isfinite(v) and abs(v) > 0.6 else BLACK)  # fmt: skip
    labels = [str(x) for x in matrix.index]
    ax.set_xticks(range(n), labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    bar = (fig or ax.figure).colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("Cohen's kappa", fontsize=8)
    ax.set_title(title or "agreement between LDAs\n(1 alike, 0 as by chance)", fontsize=10)
    return fig if fig is not None else ax.figure


def shares_over_time(table: pd.DataFrame, ax=None, title: str | None = None):
    """Each LDA's share called wireless per time window (``consensus.shares_over_time``) as a
    heat map: rows LDAs, columns windows; vermillion congestion, blue wireless, grey none."""
    plt = pyplot()
    from matplotlib.colors import LinearSegmentedColormap

    if table.empty:
        raise UsageError("shares-over-time plot: no decided loss")
    names = list(dict.fromkeys(table["lda"].astype(str)))
    starts = np.sort(table["t_start"].unique())
    grid = table.pivot_table(index="lda", columns="t_start", values="wireless_share", aggfunc="first", dropna=False)
    grid = grid.reindex(index=names, columns=starts)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 0.9 + 0.3 * len(names)), constrained_layout=True)
    origin = float(starts[0]) if starts[0] > 1e8 else 0.0
    step = float(starts[1] - starts[0]) if len(starts) > 1 else 1.0
    cmap = LinearSegmentedColormap.from_list("called", [VERMILLION, "#f7f7f7", BLUE]).with_extremes(bad="#dddddd")
    image = ax.imshow(
        np.ma.masked_invalid(grid.to_numpy(np.float64) * 100),
        aspect="auto",
        cmap=cmap,
        vmin=0,
        vmax=100,
        interpolation="nearest",
        extent=(starts[0] - origin, starts[-1] - origin + step, len(names) - 0.5, -0.5),
    )
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel("time since the first decided loss (s)" if origin else "time (s)")
    bar = (fig or ax.figure).colorbar(image, ax=ax, pad=0.01)
    bar.set_label("called wireless (%)", fontsize=8)
    ax.set_title(title or f"losses called wireless per {step:.3g} s window (grey: no loss)", fontsize=10)
    return fig if fig is not None else ax.figure


def confusion(scores: pd.DataFrame, ncols: int = 4):
    """Per LDA, paper 001 Table I: decided cause (rows) against true cause (columns), in % of
    the scored losses."""
    plt = pyplot()
    rows = scores.drop_duplicates("lda")
    n = len(rows)
    if n == 0:
        raise UsageError("confusion plot: no score rows")
    ncols = min(ncols, n)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.6 * ncols, 2.5 * nrows), constrained_layout=True, squeeze=False)
    for ax, (_, row) in zip(axes.flat, rows.iterrows()):
        matrix = np.array([[row["CC"], row["CW"]], [row["WC"], row["WW"]]], dtype=np.float64) * 100
        ax.imshow(matrix, cmap="Blues", vmin=0, vmax=100)
        for i in range(2):
            for j in range(2):
                value = matrix[i, j]
                ax.text(
                    j,
                    i,
                    "-" if not np.isfinite(value) else f"{value:.1f}",
                    ha="center",
                    va="center",
                    color="white" if np.isfinite(value) and value > 55 else BLACK,
                    fontsize=10,
                )
        ax.set_xticks([0, 1], ["congestion", "wireless"], fontsize=8)
        ax.set_yticks([0, 1], ["congestion", "wireless"], fontsize=8)
        ax.set_xlabel("true cause", fontsize=8)
        ax.set_ylabel("decided", fontsize=8)
        ax.set_title(str(row["lda"]), fontsize=9)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("decisions against true causes (% of scored losses)", fontsize=10)
    return fig


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


def across(scores: pd.DataFrame, x: str, metric: str = "M_c", ax=None, xlabel: str | None = None, connect: bool = True):
    """``metric`` (%) against ``x`` over traces: per LDA the per-trace rows of
    ``score(..., by="trace")`` (x: a score column, e.g. congestion_rate, or one you add), joined
    by a line when ``connect`` (a sweep of one scenario, as in paper 000 Figs. 8-9)."""
    plt = pyplot()
    for column in (x, metric):
        if column not in scores.columns:
            raise UsageError(f"across plot: no column {column!r} in the scores")
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 4.5), constrained_layout=True)
    for k, (name, part) in enumerate(scores.groupby(scores["lda"].astype(str), sort=False)):
        part = part.sort_values(x)
        ax.plot(
            part[x] * (100 if x.endswith("_rate") else 1),
            part[metric] * 100,
            marker=MARKERS[k % len(MARKERS)],
            markersize=5,
            color=PALETTE[k % len(PALETTE)],
            linewidth=1 if connect else 0,
            label=name,
        )
    style_axes(ax, xlabel or (f"{x} (%)" if x.endswith("_rate") else x), f"{metric} (%)")
    legend_outside(ax)
    return fig if fig is not None else ax.figure


def zbs_usage(usage: pd.DataFrame, ax=None, labels: dict | None = None):
    """Share of time each ZBS base scheme was in force, one stacked bar per row of ``usage``
    (``Zbs.usage(timeline)``, or such tables of several traces stacked with a label column
    first), as in paper 000 Fig. 13."""
    plt = pyplot()
    schemes = [c for c in usage.columns if usage[c].dtype.kind == "f"]
    names = usage.iloc[:, 0].astype(str).tolist()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(names) + 3), 4), constrained_layout=True)
    bottom = np.zeros(len(usage))
    x = np.arange(len(usage))
    for k, scheme in enumerate(schemes):
        share = usage[scheme].to_numpy(np.float64) * 100
        ax.bar(x, share, bottom=bottom, color=PALETTE[k % len(PALETTE)], width=0.7, label=scheme)
        bottom += np.nan_to_num(share)
    shown = [labels.get(n, n) if labels else n for n in names]
    tilt = len(shown) > 6 or max(len(n) for n in shown) > 8
    ax.set_xticks(x, shown, rotation=30 if tilt else 0, ha="right" if tilt else "center", fontsize=8)
    ax.set_ylim(0, 100)
    style_axes(ax, usage.columns[0], "time in force (%)")
    ax.set_title("ZBS: the base scheme in force", fontsize=10)
    legend_outside(ax)
    return fig if fig is not None else ax.figure


def sweep(table: pd.DataFrame, ax=None, title: str | None = None):
    """A parameter sweep (``ldanalyze.sweep.sweep``): M_c against M_w in %, every grid point
    faint, the trade-off frontier joined in order of M_c, the LDA's defaults starred."""
    plt = pyplot()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 5.5), constrained_layout=True)
    params = table.attrs.get("params", [])
    ax.scatter(
        table["M_c"] * 100,
        table["M_w"] * 100,
        s=18,
        color=BLUE,
        alpha=0.3,
        linewidth=0,
        label=f"grid points ({len(table)})",
    )
    front = table[table["pareto"]].sort_values(["M_c", "M_w"])
    ax.plot(
        front["M_c"] * 100,
        front["M_w"] * 100,
        "-o",
        color=VERMILLION,
        markersize=5,
        linewidth=1.2,
        label=f"frontier ({len(front)}, labelled with its parameters)"
        if len(front) <= 12
        else f"frontier ({len(front)})",
    )
    if len(front) <= 12:  # which setting gives which trade-off (labels 5 points apart, not overprinted)
        placed: list[tuple[float, float]] = []
        for row in front.itertuples():
            if any(math.hypot(row.M_c * 100 - x, row.M_w * 100 - y) < 5 for x, y in placed):
                continue
            placed.append((row.M_c * 100, row.M_w * 100))
            ax.annotate(
                ", ".join(f"{getattr(row, p):.3g}" for p in params),
                (row.M_c * 100, row.M_w * 100),
                xytext=(5, 4),
                textcoords="offset points",
                fontsize=7,
                color=VERMILLION,
            )
    for row in table[table["default"]].itertuples():
        where = "on the frontier" if row.pareto else "off the frontier"
        ax.scatter(
            [row.M_c * 100],
            [row.M_w * 100],
            marker="*",
            s=220,
            color=BLACK,
            zorder=5,
            label=f"default {', '.join(f'{p}={getattr(row, p):.3g}' for p in params)} ({where})",
        )
    ax.set_xlim(-3, 103)
    ax.set_ylim(-3, 103)
    style_axes(ax, "M_c: congestion losses called wireless (%)", "M_w: wireless losses called congestion (%)")
    ax.set_title(title or f"{table.attrs.get('lda', 'LDA')}: sweep of {', '.join(params)}", fontsize=10)
    legend_outside(ax)
    return fig if fig is not None else ax.figure


def evaluation(scores: pd.DataFrame, importance: pd.DataFrame | None = None):
    """``ldanalyze.learn.evaluate``'s results: per held-out group, each LDA's accuracy with its
    Wilson interval (the learned LDA last, in black); with ``importance``, a second panel of the
    features' permutation importance per held-out group."""
    plt = pyplot()
    panels = 2 if importance is not None and len(importance) else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels + 2, 4.8), constrained_layout=True, squeeze=False)
    ax = axes[0, 0]
    groups = sorted(scores["held_out"].unique())
    ldas = list(dict.fromkeys(scores["lda"].astype(str)))
    ldas = [lda for lda in ldas if lda != "learned"] + (["learned"] if "learned" in ldas else [])
    width = 0.8 / len(ldas)
    for k, lda in enumerate(ldas):
        mine = scores[scores["lda"].astype(str) == lda].set_index("held_out").reindex(groups)
        x = np.arange(len(groups)) + (k - (len(ldas) - 1) / 2) * width
        y = mine["accuracy"].to_numpy() * 100
        err = [y - mine["accuracy_lo"].to_numpy() * 100, mine["accuracy_hi"].to_numpy() * 100 - y]
        colour = BLACK if lda == "learned" else PALETTE[k % len(PALETTE)]
        ax.errorbar(
            x,
            y,
            yerr=err,
            fmt=MARKERS[k % len(MARKERS)],
            color=colour,
            markersize=7 if lda == "learned" else 5,
            capsize=2,
            linewidth=1,
            label=lda,
        )
    ax.set_xticks(np.arange(len(groups)), groups)
    ax.set_ylim(0, 100)
    style_axes(ax, "held-out group (trained on the others)", "accuracy on its losses (%)")
    ax.set_title("grouped cross-validation: accuracy with 95 % Wilson intervals", fontsize=10)
    legend_outside(ax)
    if panels == 2:
        assert importance is not None  # panels == 2 says so
        ax = axes[0, 1]
        table = importance.pivot(index="feature", columns="held_out", values="importance")
        table = table.loc[table.mean(axis=1).sort_values().index]
        height = 0.8 / table.shape[1]
        for k, group in enumerate(table.columns):
            ax.barh(
                np.arange(len(table)) + (k - (table.shape[1] - 1) / 2) * height,
                table[group],
                height=height,
                color=PALETTE[k % len(PALETTE)],
                label=f"held out {group}",
            )
        ax.set_yticks(np.arange(len(table)), table.index)
        ax.axvline(0, color=BLACK, linewidth=0.6)
        style_axes(ax, "drop of gap accuracy when shuffled", None)
        ax.set_title("permutation importance on the held-out gaps", fontsize=10)
        legend_outside(ax)
    return fig
