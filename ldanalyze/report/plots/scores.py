"""Figures of score tables: M_c against M_w, the confusion tables, the share called wireless, the
LDAs' agreement, the shares over time, and a metric across a set of traces."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import UsageError
from .style import BLACK, BLUE, GREEN, MARKERS, PALETTE, VERMILLION, legend_outside, pyplot, style_axes


def _bars(x: float, lo: float, hi: float) -> list[list[float]]:
    """An error bar's two lengths around ``x`` (%) from an interval's bounds (fractions); never
    negative (a Wilson bound of 0 of n lands a rounding error off the share: 1.7e-18 above 0)."""
    return [[max(x - lo * 100, 0.0)], [max(hi * 100 - x, 0.0)]]


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
                xerr = _bars(x, row[f"M_c{lo}"], row[f"M_c{hi}"])
            if f"M_w{lo}" in row.index and np.isfinite(row[f"M_w{lo}"]):
                yerr = _bars(y, row[f"M_w{lo}"], row[f"M_w{hi}"])
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
                xerr = _bars(x, row[f"wireless_share{lo}"], row[f"wireless_share{hi}"])
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
