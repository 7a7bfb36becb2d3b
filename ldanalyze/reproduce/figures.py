"""Paper 000's figures: the metrics against the number of flows (Figs. 8, 9, 11, 12), the §III
sweeps with their frontier, ZBS's use of its base schemes (Fig. 13), and writing them."""

from __future__ import annotations

import pathlib

import pandas as pd

from .suite import LDAS, SWEEPS, TRAFFIC_NAMES, mean_over_seeds


def save(fig, path: pathlib.Path) -> None:
    """Write a figure and let it go (a full run draws dozens)."""
    from ..report.plots.style import pyplot

    fig.savefig(path, dpi=90)
    pyplot().close(fig)


def sweep_figure(sweeps: dict, topology: str):
    """The §III sweeps in one topology, a panel per LDA: M_c against M_w, the frontier, the default."""
    from ..report.plots import sweep as draw
    from ..report.plots.style import pyplot

    plt = pyplot()
    ldas = [lda for lda in SWEEPS if (lda, topology) in sweeps]
    fig, axes = plt.subplots(1, len(ldas), figsize=(5.5 * len(ldas), 6.4), constrained_layout=True, squeeze=False)
    for ax, lda in zip(axes.flat, ldas):
        table = sweeps[(lda, topology)]
        draw(table, ax=ax, title=f"{lda} in {topology.upper()}: sweep of {', '.join(table.attrs.get('params', []))}")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, frameon=False)  # three panels abreast
    return fig


def metrics_figure(results: pd.DataFrame, topology: str, traffic: str = "tfrc", loop: str = "open"):
    """Figs. 8, 9, 11, 12: throughput, M_c and M_w against the number of flows, a line per LDA
    (the mean over seeds) in a band (their range); the throughput modeled open loop, measured
    closed loop."""
    from ..report.plots.style import MARKERS, PALETTE, legend_outside, pyplot, style_axes

    plt = pyplot()
    stats = mean_over_seeds(results, topology)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), constrained_layout=True)
    for ax, metric, label in zip(
        axes,
        ("thput", "M_c", "M_w"),
        (
            "modeled TFRC throughput (% of bottleneck)"
            if loop == "open"
            else "measured TFRC throughput, closed loop (% of fair share)",
            "M_c (%)",
            "M_w (%)",
        ),
    ):
        for k, lda in enumerate(LDAS):
            if lda not in stats.index.get_level_values("lda"):
                continue
            s = stats.xs(lda, level="lda")
            colour = PALETTE[k % len(PALETTE)]
            ax.plot(
                s.index,
                s[(metric, "mean")] * 100,
                marker=MARKERS[k % len(MARKERS)],
                color=colour,
                label=lda,
                linewidth=1.3,
                markersize=5,
            )
            ax.fill_between(
                s.index, s[(metric, "min")] * 100, s[(metric, "max")] * 100, color=colour, alpha=0.12, linewidth=0
            )
        style_axes(ax, "number of flows", label)
        ax.set_xticks(sorted(stats.index.get_level_values("flows").unique()))
        ax.set_ylim(-3, 105)
    legend_outside(axes[-1])
    name = {"wlh": "wireless last hop (paper 000 Figs. 8, 11)", "wb": "wireless backbone (Figs. 9, 12)"}[topology]
    how = "open loop" if loop == "open" else "closed loop: each LDA steering its own TFRC receiver in ns-2"
    fig.suptitle(
        f"{name}, {TRAFFIC_NAMES[traffic]}, {how}: high uniform loss; line: mean over seeds, band: their range",
        fontsize=10,
    )
    return fig


def usage_figure(usage: pd.DataFrame, traffic: str = "tfrc"):
    """Fig. 13: the share of time each base scheme was in force in ZBS, a panel per topology."""
    from ..report.plots import zbs_usage as draw
    from ..report.plots.style import pyplot

    plt = pyplot()
    topologies = [t for t in ("wlh", "wb") if t in set(usage["topology"])]
    fig, axes = plt.subplots(
        1, len(topologies), figsize=(6.5 * len(topologies), 4), constrained_layout=True, squeeze=False
    )
    for ax, topology in zip(axes.flat, topologies):
        mine = usage[usage["topology"] == topology].drop(columns="topology")
        draw(mine.assign(flows=mine["flows"].astype(str)).rename(columns={"flows": "number of flows"}), ax=ax)
        ax.set_title(f"ZBS in {topology.upper()}, {TRAFFIC_NAMES[traffic]} (paper 000 Fig. 13)", fontsize=10)
    return fig
