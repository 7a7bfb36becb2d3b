"""Figures of studies over many runs: ZBS's base schemes in force, a parameter sweep's frontier,
and the learned LDA's grouped cross-validation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .style import BLACK, BLUE, MARKERS, PALETTE, VERMILLION, legend_outside, pyplot, style_axes


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
    Wilson interval (the learned LDA last, in black; the trivial baselines in grey); with ``importance``, a second panel of the
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
        # clipped: a bound a rounding error beyond the accuracy (Wilson's lower bound at 0 of n: 4e-19)
        err = np.clip([y - mine["accuracy_lo"].to_numpy() * 100, mine["accuracy_hi"].to_numpy() * 100 - y], 0, None)
        trivial = {"unaware": "_", "all wireless": "x"}.get(lda)  # learn.BASELINES: every loss congestion, wireless
        colour = BLACK if lda == "learned" else "#888888" if trivial else PALETTE[k % (len(PALETTE) - 1)]  # no black
        ax.errorbar(
            x,
            y,
            yerr=err,
            fmt=trivial or MARKERS[k % len(MARKERS)],
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
