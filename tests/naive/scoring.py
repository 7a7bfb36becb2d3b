"""Plain twins of ldanalyze/scoring's kernels."""

from __future__ import annotations

import math

from . import twin_of


@twin_of("ldanalyze.scoring.bootstrap.resample_totals")
def resample_totals(draws, first, size, counts):
    """Per resample (a list of uniform draws, one per position of the groups' units laid end
    to end in group order) and per group (units ``first[g]`` to ``first[g] + size[g] - 1``):
    the sums of ``counts`` (a list of per-unit count lists) over the units its positions draw,
    position i drawing unit floor(draw * size) of the group, the last one at most."""
    totals = []
    for row in draws:
        sums = []
        for a, k in zip(first, size):
            own = [0] * len(counts[0])
            for position in range(a, a + k):
                chosen = a + min(math.floor(row[position] * k), k - 1)
                own = [x + y for x, y in zip(own, counts[chosen])]
            sums.append(own)
        totals.append(sums)
    return totals
