"""Counts and metrics per group: the losses pooled per group (``pooled``) or their per-flow
metrics averaged (``mean``), and the Wilson score intervals of the pooled metrics."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

from .losses import BY, COUNTS, Losses

METRICS = ("M_c", "M_w", "accuracy", "A_c", "A_w", "accuracy_ratio", "CC", "CW", "WC", "WW", "M_p")
INTERVAL_METRICS = ("M_c", "M_w", "accuracy")


def _group_ids(codes: dict[str, np.ndarray], keys: tuple[str, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Group id per row, groups numbered in output order, and the key codes of each group."""
    n = len(next(iter(codes.values())))
    if n == 0:
        return np.zeros(0, np.int64), {k: np.zeros(0, np.int64) for k in keys}
    sizes = [int(codes[k].max()) + 1 for k in keys]
    combined = np.ravel_multi_index(tuple(codes[k] for k in keys), sizes)
    space = math.prod(sizes)
    if space <= 4 * n + (1 << 20):  # numbered through a table of every key: no sort (np.unique's)
        present = np.zeros(space, bool)
        present[combined] = True
        uniq = np.flatnonzero(present)
        number = np.cumsum(present) - 1
        gid = number[combined]
    else:
        uniq, gid = np.unique(combined, return_inverse=True)
    group_codes = dict(zip(keys, np.unravel_index(uniq, sizes)))
    return gid.astype(np.int64), {k: np.asarray(v, np.int64) for k, v in group_codes.items()}


def _key_frame(group_codes: dict[str, np.ndarray], labels: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            k: pd.Series(np.asarray(labels[k], dtype=object)[c] if len(c) else [], dtype=str)
            for k, c in group_codes.items()
        }
    )


def ratio(num, den) -> np.ndarray:
    """num / den, NaN where den is 0."""
    num = np.asarray(num, np.float64)
    den = np.asarray(den, np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def pooled(losses: Losses, keys: tuple[str, ...]) -> tuple[pd.DataFrame, dict[str, np.ndarray], np.ndarray]:
    """Counts summed per group and the metrics of the pooled counts; the group keys' codes and
    each loss's group (its row in the output)."""
    codes = {"trace": losses.trace, "flow": losses.flow, "lda": losses.lda}
    gid, group_codes = _group_ids(codes, keys)
    ng = len(next(iter(group_codes.values())))
    out = _key_frame(group_codes, losses.labels)
    for name in COUNTS:
        out[name] = losses.count(name, gid, ng)
    for name, values in _metrics(out).items():
        out[name] = values
    return out, group_codes, gid


def _metrics(counts: pd.DataFrame) -> dict[str, np.ndarray]:
    c, w = counts["congestion"].to_numpy(), counts["wireless"].to_numpy()
    cw, wc = counts["congestion_as_wireless"].to_numpy(), counts["wireless_as_congestion"].to_numpy()
    scored = counts["scored"].to_numpy()
    m_c, m_w = ratio(cw, c), ratio(wc, w)
    return {
        "M_c": m_c,
        "M_w": m_w,
        "accuracy": ratio(scored - cw - wc, scored),
        "A_c": 1.0 - m_c,
        "A_w": 1.0 - m_w,
        "accuracy_ratio": ratio(counts["decided_wireless"].to_numpy(), w),
        "CC": ratio(c - cw, scored),
        "CW": ratio(wc, scored),
        "WC": ratio(cw, scored),
        "WW": ratio(w - wc, scored),
        "M_p": ratio(counts["policing_as_wireless"].to_numpy(), counts["policing_decided"].to_numpy()),
    }


def _interval_fractions(counts: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(successes, trials) behind each metric that gets an interval."""
    scored = counts["scored"].to_numpy()
    wrong = counts["congestion_as_wireless"].to_numpy() + counts["wireless_as_congestion"].to_numpy()
    return {
        "M_c": (counts["congestion_as_wireless"].to_numpy(), counts["congestion"].to_numpy()),
        "M_w": (counts["wireless_as_congestion"].to_numpy(), counts["wireless"].to_numpy()),
        "accuracy": (scored - wrong, scored),
    }


def wilson_interval(successes, trials, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for successes / trials (arrays); NaN where trials is 0."""
    k = np.asarray(successes, np.float64)
    n = np.asarray(trials, np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
        lo = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
        hi = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lo, hi


def wilson_columns(out: pd.DataFrame, confidence: float) -> None:
    for name, (k, n) in _interval_fractions(out).items():
        out[f"{name}_lo"], out[f"{name}_hi"] = wilson_interval(k, n, confidence)


def mean(losses: Losses, keys: tuple[str, ...]) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Per-flow metrics averaged over the group's flows (NaN flows skipped); counts summed."""
    per_flow, flow_codes, _ = pooled(losses, BY["flow"])
    gid, group_codes = _group_ids(flow_codes, keys)
    ng = len(next(iter(group_codes.values())))
    out = _key_frame(group_codes, losses.labels)
    out["flows"] = np.bincount(gid, minlength=ng).astype(np.int64)
    for name in COUNTS:
        out[name] = np.bincount(gid, weights=per_flow[name].to_numpy(), minlength=ng).astype(np.int64)
    for name in METRICS:
        values = per_flow[name].to_numpy(np.float64)
        defined = ~np.isnan(values)
        total = np.bincount(gid, weights=np.where(defined, values, 0.0), minlength=ng)
        out[name] = ratio(total, np.bincount(gid, weights=defined, minlength=ng))
    return out, group_codes
