"""Plain twins of ldanalyze/clocks.py: the lower envelope and the common skew of a pair of clocks."""

from __future__ import annotations

from . import twin_of


# --- clocks -----------------------------------------------------------------------------------
@twin_of("ldanalyze.clocks._lower_hull", "ldanalyze.clocks._envelope_line")
def lower_envelope_naive(t, d, tolerance=1e-9):
    """The Moon-Skelly-Towsley LP by brute force: among the lines through two points with
    different send times that no point lies below, the one with the smallest total distance
    to the points, as (total distance, slope). One distinct send time: slope 0 under the
    lowest point. ``tolerance`` (relative to the delays' range) absorbs rounding."""
    points = list(zip(t, d))
    slack = tolerance * (max(d) - min(d) + 1.0)
    best = (sum(y - min(d) for y in d), 0.0) if len(set(t)) == 1 else None
    for i, (ti, di) in enumerate(points):
        for tj, dj in points[i + 1 :]:
            if tj == ti:
                continue
            slope = (dj - di) / (tj - ti)
            line = [di + slope * (x - ti) for x in t]
            if all(y >= h - slack for y, h in zip(d, line)):
                total = sum(y - h for y, h in zip(d, line))
                if best is None or total < best[0]:
                    best = (total, slope)
    return best


# --- clocks: one skew for the flows of a pair of clocks (ldanalyze/clocks.py common_skew) ---


def joint_objective_naive(groups, b):
    """Σ over flows of the area between the flow's points and its lowest line of slope b."""
    total = 0.0
    for t, d in groups:
        t0 = min(t)
        r = [di - b * (ti - t0) for ti, di in zip(t, d)]
        total += sum(r) - len(r) * min(r)
    return total


@twin_of("ldanalyze.clocks.common_skew")
def common_skew_naive(groups):
    """The convex piecewise-linear objective is least at a breakpoint: a slope between two
    points of one flow (or anywhere when it is flat); try them all."""
    candidates = [0.0]
    for t, d in groups:
        for i in range(len(t)):
            for j in range(i + 1, len(t)):
                if t[j] != t[i]:
                    candidates.append((d[j] - d[i]) / (t[j] - t[i]))
    return min(joint_objective_naive(groups, b) for b in candidates)
