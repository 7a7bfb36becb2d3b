"""The burst bootstrap: percentile intervals of M_c, M_w and accuracy that resample each group's
loss bursts (gaps), not its losses, since every loss of a burst gets the burst's decision.
``resample_totals`` is its numba kernel, ``_resample_totals_vectorised`` the same in numpy for
small bootstraps."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from numba import njit

from ..tiering import pick
from .losses import Losses
from .metrics import INTERVAL_METRICS, ratio

# Bootstrap memory bound: resampled unit indices drawn per chunk (int64 and float64 arrays of
# this many elements exist at once).
BOOTSTRAP_CHUNK = 1 << 21


def bootstrap_columns(
    out: pd.DataFrame, group: np.ndarray, losses: Losses, confidence: float, resamples: int, seed
) -> None:
    """Percentile intervals of M_c, M_w and accuracy, resampling the bursts of each group.

    ``group`` is each loss's row in ``out``.
    """
    ng = len(out)
    rows = np.flatnonzero(losses.flags["scored"])
    gid = group[rows]
    codes = {"trace": losses.trace[rows], "flow": losses.flow[rows]}
    assert losses.gap is not None  # prepared with need_gap
    gap = losses.gap[rows]
    gap = np.where(gap >= 0, gap, -1 - rows)  # a loss outside any burst is a unit of its own
    order = np.lexsort((gap, codes["flow"], codes["trace"], gid))
    g, t, f, b = gid[order], codes["trace"][order], codes["flow"][order], gap[order]
    new = np.ones(len(order), bool)
    if len(order):
        new[1:] = (g[1:] != g[:-1]) | (t[1:] != t[:-1]) | (f[1:] != f[:-1]) | (b[1:] != b[:-1])
    unit = np.cumsum(new) - 1
    n_units = int(new.sum())
    unit_group = g[new]
    weight = np.ones(len(rows)) if losses.weight is None else losses.weight[rows]
    per_unit = {
        name: np.bincount(unit, weights=(losses.flags[name][rows] * weight)[order], minlength=n_units).astype(np.int64)
        for name in RESAMPLED_COUNTS
    }
    tails = np.array([0.5 - confidence / 2.0, 0.5 + confidence / 2.0]) * 100.0
    result = {name: np.full((2, ng), np.nan) for name in INTERVAL_METRICS}
    if n_units:
        samples = _resample(unit_group, per_unit, ng, resamples, seed)
        present = np.unique(unit_group)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN groups: NaN interval
            for name in INTERVAL_METRICS:
                result[name][:, present] = np.nanpercentile(samples[name], tails, axis=0)
    for name in INTERVAL_METRICS:
        out[f"{name}_boot_lo"], out[f"{name}_boot_hi"] = result[name]


def _resample(
    unit_group: np.ndarray, per_unit: dict[str, np.ndarray], ng: int, resamples: int, seed
) -> dict[str, np.ndarray]:
    """Resampled M_c, M_w and accuracy, shape (resamples, groups that have units).

    Units are sorted by group. All groups are resampled together: one resample draws, for every
    position of every group, a unit of that group uniformly (one float64 of the generator a
    position, scaled by the group's size); the per-group sums of the drawn units' counts give
    the resample's ratios. Draws come in chunks of resamples (bounded memory), which does not
    change the stream; ``resample_totals`` sums a chunk's draws in one pass.
    """
    size = np.bincount(unit_group, minlength=ng)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    present = np.flatnonzero(size)
    counts = np.stack([per_unit[name] for name in RESAMPLED_COUNTS], axis=1)
    rng = np.random.default_rng(seed)
    out = {name: np.empty((resamples, len(present))) for name in INTERVAL_METRICS}
    n = len(unit_group)
    chunk = max(1, BOOTSTRAP_CHUNK // n)
    buffer = np.empty((min(chunk, resamples), n))  # one block of memory for every chunk's draws
    for s in range(0, resamples, chunk):
        m = min(chunk, resamples - s)
        draws = rng.random(out=buffer[:m])
        how = pick(resample_totals, draws.size * 25e-9, instead=_resample_totals_vectorised)
        totals = how(draws, start[present], size[present], counts)
        t_c, t_cw, t_w, t_wc = (totals[:, :, k] for k in range(4))
        out["M_c"][s : s + m] = ratio(t_cw, t_c)
        out["M_w"][s : s + m] = ratio(t_wc, t_w)
        out["accuracy"][s : s + m] = ratio(t_c + t_w - t_cw - t_wc, t_c + t_w)
    return out


def _resample_totals_vectorised(draws, first, size, counts) -> np.ndarray:
    """``resample_totals`` in numpy, with no machine code to compile or load: 25 ns a draw
    against the kernel's 3, for a small bootstrap (tiering.pick chooses)."""
    high = np.repeat(size, size)  # per position: its group's size
    unit = (draws * high).astype(np.int64)
    np.minimum(unit, high - 1, out=unit)
    unit += np.repeat(first, size)
    totals = np.empty((draws.shape[0], first.shape[0], counts.shape[1]), np.int64)
    for j in range(counts.shape[1]):
        totals[:, :, j] = np.add.reduceat(counts[:, j][unit], first, axis=1)
    return totals


# the per-unit counts a resample sums, in ``resample_totals``' last axis
RESAMPLED_COUNTS = ("congestion", "congestion_as_wireless", "wireless", "wireless_as_congestion")


@njit(cache=True)
def resample_totals(draws, first, size, counts):
    """For each resample (a row of ``draws``, uniform in [0, 1) per position) and each group
    (units ``first .. first + size``, laid end to end in group order): each of the group's
    positions draws unit ``first + min(int(draw * size), size - 1)``, and the group sums its
    drawn units' ``counts`` (four columns). Shape (resamples, groups, 4). One pass, the sums in
    registers: numpy's (resamples x positions) temporaries, four gathers and reductions a
    chunk, took 3 of a 2 M-packet capture's 7 s of ``score``."""
    m = draws.shape[0]
    groups = first.shape[0]
    totals = np.zeros((m, groups, 4), np.int64)
    for r in range(m):
        for g in range(groups):
            a, k = first[g], size[g]
            s0 = s1 = s2 = s3 = 0
            for p in range(a, a + k):
                pick = np.int64(draws[r, p] * k)
                unit = a + (pick if pick < k else k - 1)
                s0 += counts[unit, 0]
                s1 += counts[unit, 1]
                s2 += counts[unit, 2]
                s3 += counts[unit, 3]
            totals[r, g, 0] = s0
            totals[r, g, 1] = s1
            totals[r, g, 2] = s2
            totals[r, g, 3] = s3
    return totals
