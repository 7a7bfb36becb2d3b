"""Plain twins of ldanalyze/scoring's computations."""

from __future__ import annotations

import random


def resample_units(counts, resamples, seed):
    """The burst bootstrap as its definition says it: per resample, draw as many units as
    there are, one at a time, uniformly with replacement, and sum their ``counts`` (a list of
    per-unit count lists). Returns the resamples' totals."""
    rng = random.Random(seed)
    totals = []
    for _ in range(resamples):
        own = [0] * len(counts[0])
        for _ in range(len(counts)):
            own = [x + y for x, y in zip(own, rng.choice(counts))]
        totals.append(own)
    return totals
