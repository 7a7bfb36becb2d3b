"""The figures' shared style: Okabe and Ito's colour-blind-safe palette, markers, axes and
legends, pyplot imported on first use, and the decimation of long lines (broken where asked)."""

from __future__ import annotations

import numpy as np

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


def decimate(t: np.ndarray, y: np.ndarray, points: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """At most ``points`` vertices (default :data:`MAX_POINTS`, read at the call, so a benchmark
    can draw undecimated) that keep each bin's first, lowest, highest and last value, in time
    order: the line looks the same at any pixel width up to points/4 bins."""
    points = MAX_POINTS if points is None else points
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


def decimate_broken(t: np.ndarray, y: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decimate` piece by piece, the pieces starting at ``cuts`` (indices), each with its
    share of the vertices and a NaN before it: the line breaks at every cut (a capture outage)."""
    if not len(cuts):
        return decimate(t, y)
    ts: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for rows in np.split(np.arange(t.size), cuts):
        points = None if t.size <= MAX_POINTS else max(8, MAX_POINTS * rows.size // t.size)
        piece_t, piece_y = decimate(t[rows], y[rows], points)
        ts += [piece_t[:1], piece_t]
        ys += [np.full(1, np.nan), piece_y]
    return np.concatenate(ts[1:]), np.concatenate(ys[1:])
