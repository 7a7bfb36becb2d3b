"""Running statistics per flow that several LDAs and the rate controllers keep: the delay's
minimum and maximum so far, and its moving mean and deviation (ZigZag's and RFC 6298's update
orders). Each is a compiled kernel over a timeline's arrivals, a flow starting where ``start``
is set; the LDAs' and controllers' plain twins in ``tests/naive/`` check them whole. And the
median of a few values by a sorting network, which the learned LDA and the policer detector
take per gap."""

from __future__ import annotations

import functools

import numpy as np
from numba import njit


@njit(cache=True)
def running_min_max(x, start):
    """Minimum and maximum of ``x`` over each flow's arrivals so far (including the current)."""
    lo = np.empty(x.shape[0])
    hi = np.empty(x.shape[0])
    a = b = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if start[i] or v < a:
            a = v
        if start[i] or v > b:
            b = v
        lo[i] = a
        hi[i] = b
    return lo, hi


@njit(cache=True)
def ewma_mean_dev(x, start, gain_mean, gain_dev, rfc6298):
    """Running mean and mean deviation of ``x`` per flow (NaN samples are skipped).

    ZigZag's order (``rfc6298`` False): first sample mean = x, dev = 0; then the mean is
    updated and dev with the updated mean. RFC 6298's order (True): first sample mean = x,
    dev = x/2; then dev is updated with the old mean, then the mean.
    """
    mean = np.empty(x.shape[0])
    dev = np.empty(x.shape[0])
    m = s = np.nan
    for i in range(x.shape[0]):
        if start[i]:
            m = s = np.nan
        v = x[i]
        if v == v:
            if m != m:
                m = v
                s = v / 2 if rfc6298 else 0.0
            elif rfc6298:
                s = (1 - gain_dev) * s + gain_dev * abs(m - v)
                m = (1 - gain_mean) * m + gain_mean * v
            else:
                m = (1 - gain_mean) * m + gain_mean * v
                s = (1 - gain_dev) * s + gain_dev * abs(v - m)
        mean[i] = m
        dev[i] = s
    return mean, dev


@njit(cache=True)
def network_size(k):
    """The number of values ``sorting_network(k)`` sorts: the next power of two ≥ ``k``."""
    size = 1
    while size < k:
        size *= 2
    return size


@functools.lru_cache(maxsize=16)
def sorting_network(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The compare-exchange pairs (lower index, higher) of Batcher's odd-even merge sort over
    ``network_size(k)`` values: applied in order, they sort any values without a branch on them
    (an insertion sort, or numba's np.median, spent most of its time mispredicting branches or
    allocating when called once per gap). Cached: the arrays are shared, never modify them.
    Built when an analysis first needs it, never on import: ``network_size`` is a kernel, and a
    command's start-up tweaks must come before its first one (``cli/startup.py``)."""
    size = network_size(k)
    pairs = []
    p = 1
    while p < size:
        step = p
        while step >= 1:
            for j in range(step % p, size - step, 2 * step):
                for i in range(min(step, size - j - step)):
                    if (i + j) // (2 * p) == (i + j + step) // (2 * p):
                        pairs.append((i + j, i + j + step))
            step //= 2
        p *= 2
    lo, hi = (np.array(side, np.int64) for side in zip(*pairs)) if pairs else (np.zeros(0, np.int64),) * 2
    return lo, hi


@njit(cache=True)
def small_median(values, m, window, lo, hi):
    """The median of ``values[:m]`` (as np.median's), sorted in ``window`` (of the network's size,
    ≥ m) by the network ``lo``, ``hi`` (``sorting_network``); the unused slots sort last."""
    for j in range(window.shape[0]):
        window[j] = values[j] if j < m else np.inf
    for c in range(lo.shape[0]):
        a, b = window[lo[c]], window[hi[c]]
        window[lo[c]] = min(a, b)
        window[hi[c]] = max(a, b)
    return window[m // 2] if m % 2 else 0.5 * (window[m // 2 - 1] + window[m // 2])
