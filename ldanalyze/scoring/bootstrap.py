"""The burst bootstrap: percentile intervals of M_c, M_w and accuracy that resample each group's
loss bursts (gaps), not its losses, since every loss of a burst gets the burst's decision. Each
group draws from its own generator, seeded by the user's seed and what the group is scored on.
``resample_totals`` is its numba kernel, ``_resample_totals_vectorised`` the same in numpy for
small bootstraps."""

from __future__ import annotations

import hashlib
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
    out: pd.DataFrame, group: np.ndarray, losses: Losses, confidence: float, resamples: int, seed: int
) -> None:
    """Percentile intervals of M_c, M_w and accuracy, resampling the bursts of each group.

    ``group`` is each loss's row in ``out``. Each group draws from a generator of its own, seeded
    by ``seed`` and what the group is scored on (``group_key``): an LDA's interval is the same
    whichever other LDAs, flows or traces are scored beside it, and in every command.
    """
    ng = len(out)
    rows = np.flatnonzero(losses.flags["scored"])
    gid = group[rows]
    names = losses.labels["trace"]
    by_name = sorted(range(len(names)), key=lambda code: (file_name(names[code]), names[code]))
    trace_rank = np.empty(len(names), np.int64)
    trace_rank[by_name] = np.arange(len(names))
    codes = {"trace": trace_rank[losses.trace[rows]], "flow": losses.flow[rows]}
    assert losses.gap is not None  # prepared with need_gap
    gap = losses.gap[rows]
    gap = np.where(gap >= 0, gap, -1 - rows)  # a loss outside any burst is a unit of its own
    # units in group order, then by trace (file name), flow (natural order) and burst: not by
    # anything the other groups change (trace codes follow first appearance, so their rank)
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
        present = np.unique(unit_group)
        keys = _group_keys(out["lda"].to_numpy(), losses, g[new], t[new], f[new], present)
        streams = [np.random.default_rng(group_seed(seed, key)) for key in keys]
        samples = _resample(unit_group, per_unit, ng, resamples, streams)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN groups: NaN interval
            for name in INTERVAL_METRICS:
                result[name][:, present] = np.nanpercentile(samples[name], tails, axis=0)
    for name in INTERVAL_METRICS:
        out[f"{name}_boot_lo"], out[f"{name}_boot_hi"] = result[name]


def group_key(lda: str, pairs: list[tuple[str, str]]) -> str:
    """What a group is scored on, as text: its LDA and the (trace, flow) pairs whose bursts it
    resamples, a trace by its file name (``file_name``). A flow scored alone, its trace scored
    by trace and everything pooled over that one flow have the same key, so the same draws and
    the same interval."""
    return "\x1f".join([lda, *(f"{trace}\x1e{flow}" for trace, flow in pairs)])


def file_name(trace: str) -> str:
    """A trace's name without its folders: the same trace named as ``traces/x.tr`` or by its
    absolute path gets the same draws."""
    return trace.replace("\\", "/").rsplit("/", 1)[-1]


def group_seed(seed: int, key: str) -> np.random.SeedSequence:
    """The seed of a group's draws: the user's ``seed`` and a stable hash of the group's key
    (blake2b; Python's ``hash`` of a str changes from one process to the next)."""
    words = np.frombuffer(hashlib.blake2b(key.encode(), digest_size=16).digest(), dtype="<u4")
    return np.random.SeedSequence([int(seed), *words.tolist()])


def _group_keys(
    lda: np.ndarray, losses: Losses, unit_group: np.ndarray, trace: np.ndarray, flow: np.ndarray, present: np.ndarray
) -> list[str]:
    """``group_key`` of each group that has units (``present``, in order), from the units'
    group, trace rank and flow code (sorted by group, trace, flow)."""
    first = np.ones(len(unit_group), bool)
    first[1:] = (unit_group[1:] != unit_group[:-1]) | (trace[1:] != trace[:-1]) | (flow[1:] != flow[:-1])
    traces = sorted(file_name(name) for name in losses.labels["trace"])
    flows = losses.labels["flow"]
    pairs: dict[int, list[tuple[str, str]]] = {int(k): [] for k in present}
    for k, r, c in zip(unit_group[first].tolist(), trace[first].tolist(), flow[first].tolist()):
        pairs[k].append((traces[r], flows[c]))
    return [group_key(str(lda[k]), pairs[int(k)]) for k in present]


def _resample(
    unit_group: np.ndarray, per_unit: dict[str, np.ndarray], ng: int, resamples: int, streams: list
) -> dict[str, np.ndarray]:
    """Resampled M_c, M_w and accuracy, shape (resamples, groups that have units).

    Units are sorted by group; ``streams`` holds a generator per group that has units. For every
    position of a group, a resample draws a unit of that group uniformly (one float64 of the
    group's generator a position, scaled by the group's size; the group's draws are its
    generator's stream in resample order, whatever else is resampled); the per-group sums of the
    drawn units' counts give the resample's ratios. Small groups are resampled together, a large
    one alone in chunks of resamples (bounded memory), which does not change any group's stream;
    ``resample_totals`` sums a block's draws in one pass.
    """
    size = np.bincount(unit_group, minlength=ng)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    present = np.flatnonzero(size)
    counts = np.stack([per_unit[name] for name in RESAMPLED_COUNTS], axis=1)
    out = {name: np.empty((resamples, len(present))) for name in INTERVAL_METRICS}
    for lo, hi in _blocks(size[present], max(1, BOOTSTRAP_CHUNK // resamples)):
        k = size[present[lo:hi]]
        a = start[present[lo]]
        n = int(k.sum())
        first = np.concatenate(([0], np.cumsum(k)[:-1]))
        chunk = max(1, BOOTSTRAP_CHUNK // n)
        for s in range(0, resamples, chunk):
            m = min(chunk, resamples - s)
            if hi - lo == 1:
                draws = streams[lo].random((m, n))
            else:  # a block of small groups: all its resamples at once (m == resamples)
                draws = np.empty((m, n))
                for j in range(hi - lo):
                    draws[:, first[j] : first[j] + k[j]] = streams[lo + j].random((m, k[j]))
            how = pick(resample_totals, draws.size * 25e-9, instead=_resample_totals_vectorised)
            totals = how(draws, first, k, counts[a : a + n])
            t_c, t_cw, t_w, t_wc = (totals[:, :, j] for j in range(4))
            out["M_c"][s : s + m, lo:hi] = ratio(t_cw, t_c)
            out["M_w"][s : s + m, lo:hi] = ratio(t_wc, t_w)
            out["accuracy"][s : s + m, lo:hi] = ratio(t_c + t_w - t_cw - t_wc, t_c + t_w)
    return out


def _blocks(sizes: np.ndarray, most: int) -> list[tuple[int, int]]:
    """Runs ``lo:hi`` of consecutive groups whose sizes sum to at most ``most`` (a larger group
    is a run of its own)."""
    blocks, lo, total = [], 0, 0
    for i, k in enumerate(sizes.tolist()):
        if i > lo and total + k > most:
            blocks.append((lo, i))
            lo, total = i, 0
        total += k
    if len(sizes):
        blocks.append((lo, len(sizes)))
    return blocks


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
