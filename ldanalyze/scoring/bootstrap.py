"""The burst bootstrap: percentile intervals of M_c, M_w and accuracy that resample each group's
loss bursts (gaps), not its losses, since every loss of a burst gets the burst's decision. Each
group draws from its own generator, seeded by the user's seed and what the group is scored on."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pandas as pd

from .losses import Losses
from .metrics import INTERVAL_METRICS, ratio

# Bootstrap memory bound: multiplicities drawn per chunk (resamples times a group's distinct
# count vectors; an int64 array of this many elements exists at once).
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

    Units are sorted by group; ``streams`` holds a generator per group that has units. A
    resample draws as many of the group's units as it has, uniformly with replacement, and sums
    their counts. Units with the same counts are interchangeable, so a resample draws over the
    group's distinct count vectors instead: how often each is drawn is multinomial (the group's
    size; each vector's share of its units), one ``Generator.multinomial`` draw of the group's
    stream a resample, and the totals are those multiplicities times the vectors. The same
    distribution as drawing unit by unit, at the cost of the distinct vectors (a handful: a
    burst's counts are small) rather than of the units. Chunks of resamples bound the memory
    and leave each group's stream as it is.
    """
    size = np.bincount(unit_group, minlength=ng)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    present = np.flatnonzero(size)
    counts = np.stack([per_unit[name] for name in RESAMPLED_COUNTS], axis=1)
    out = {name: np.empty((resamples, len(present))) for name in INTERVAL_METRICS}
    for i, g in enumerate(present.tolist()):
        t_c, t_cw, t_w, t_wc = resampled_totals(counts[start[g] : start[g] + size[g]], resamples, streams[i]).T
        out["M_c"][:, i] = ratio(t_cw, t_c)
        out["M_w"][:, i] = ratio(t_wc, t_w)
        out["accuracy"][:, i] = ratio(t_c + t_w - t_cw - t_wc, t_c + t_w)
    return out


def resampled_totals(counts: np.ndarray, resamples: int, stream: np.random.Generator) -> np.ndarray:
    """One group's resamples (``_resample``): each the column sums of ``len(counts)`` rows of
    ``counts`` drawn uniformly with replacement, drawn as multinomial multiplicities of its
    distinct rows. Shape (resamples, columns)."""
    k = len(counts)
    # the distinct rows in numeric order, first column first (np.unique with axis=0 compares
    # bytes, and sorts a group of 12,000 rows 20 times slower)
    rows = counts[np.lexsort(counts.T[::-1])]
    new = np.ones(k, bool)
    new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    vectors, times = rows[new], np.diff(np.append(np.flatnonzero(new), k))
    chunk = max(1, BOOTSTRAP_CHUNK // len(vectors))
    return np.concatenate(
        [stream.multinomial(k, times / k, size=min(chunk, resamples - s)) @ vectors for s in range(0, resamples, chunk)]
    )


# the per-unit counts a resample sums, the columns of ``_resample``'s count vectors
RESAMPLED_COUNTS = ("congestion", "congestion_as_wireless", "wireless", "wireless_as_congestion")
