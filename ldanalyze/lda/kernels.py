"""Running statistics per flow that several LDAs and the rate controllers keep: the delay's
minimum and maximum so far, and its moving mean and deviation (ZigZag's and RFC 6298's update
orders). Each is a compiled kernel over a timeline's arrivals, a flow starting where ``start``
is set; the LDAs' and controllers' plain twins in ``tests/naive/`` check them whole."""

from __future__ import annotations

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
