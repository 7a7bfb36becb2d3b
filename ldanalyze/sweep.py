"""Parameter sweeps: one LDA over a grid of its parameters, scored on traces, and the points on
the M_c-M_w trade-off frontier.

Paper 000 chose its defaults by such sweeps: mBiaz's upper window limit over (n + 1.1 ... 1.8)
T_min (§III-A), Spike's β over [0.05, 0.5] with α − β over [0, 0.9] (§III-B), ZigZag's α over
2^N for N = −8 ... −2 (§III-C). ``sweep`` replays every grid point over each trace's timeline,
built once per trace, in one ``classify`` call (its features computed once; one kernel run per
point), and scores each point pooled over the traces. The LDA's default point is always
included and flagged, so that whether the defaults sit on the frontier can be read off.

A point is on the frontier (``pareto``) when no other point has an M_c and an M_w both at most
its own and one of them lower. Grid points the LDA refuses (Spike with α < β, say) are left
out and counted in ``attrs['refused']``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .analysis import analyze_traces
from .errors import UsageError, renamed_keyword
from .lda import get_lda
from .scoring import score
from .scoring.losses import EXCLUDED

COLUMNS = ["M_c", "M_w", "accuracy", "losses", "congestion", "wireless"]


def parse_param(text: str) -> tuple[str, list[float]]:
    """``name=start:stop:step`` (stop included, within a hundredth of a step) or
    ``name=v1,v2,...`` → (name, values)."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name or not spec.strip():
        raise UsageError(f"--param {text!r}: expected NAME=START:STOP:STEP or NAME=V1,V2,...")
    try:
        if ":" in spec:
            start, stop, step = (float(x) for x in spec.split(":"))
            if not step > 0 or stop < start:
                raise UsageError(f"--param {text!r}: the step must be positive and STOP ≥ START")
            count = math.floor((stop - start) / step + 0.01) + 1
            return name, [round(start + k * step, 12) for k in range(count)]
        return name, [float(x) for x in spec.split(",")]
    except ValueError:
        raise UsageError(f"--param {text!r}: the values must be numbers") from None


@renamed_keyword("replay", "semantics", since="0.5.0")
def sweep(
    sources: Iterable,
    lda: str,
    grid: dict[str, Sequence[float]],
    *,
    semantics=None,
    seq_modulus: int | None = None,
    route_as: str = EXCLUDED,
    policing_as: str = EXCLUDED,
    **read_options,
) -> pd.DataFrame:
    """One row per grid point (the Cartesian product of ``grid``, plus the LDA's defaults):
    the parameters, ``spec``, ``default``, the pooled ``M_c``, ``M_w``, ``accuracy`` and loss
    counts over ``sources`` (paths or Traces), and ``pareto``; ``route_as`` and
    ``policing_as`` as :func:`ldanalyze.scoring.score` takes them. See the module docstring."""
    if not grid:
        raise UsageError("a sweep needs at least one parameter to vary")
    default = get_lda(lda)
    names = list(grid)
    unknown = [n for n in names if n not in default.params()]
    if unknown:
        get_lda(lda, **{unknown[0]: 0})  # the registry's own message, naming what the LDA takes
    points, refused = [], 0
    for values in itertools.product(*(grid[n] for n in names)):
        try:
            points.append(get_lda(lda, **dict(zip(names, values))))
        except UsageError:
            refused += 1
    if not points:
        raise UsageError(f"{lda}: the LDA refuses every point of the grid ({refused})")
    specs = list(dict.fromkeys([p.spec for p in points] + [default.spec]))
    analysed = analyze_traces(sources, specs, semantics=semantics, seq_modulus=seq_modulus, **read_options)
    scores = score(
        analysed.decisions, analysed.summary, by="pooled", bootstrap=0, route_as=route_as, policing_as=policing_as
    ).set_index("lda")
    by_spec = {p.spec: p for p in points} | {default.spec: default}
    rows = []
    for spec in specs:
        params = {n: getattr(by_spec[spec], n) for n in names}
        rows.append(
            {**params, "spec": spec, "default": spec == default.spec, **{c: scores.loc[spec, c] for c in COLUMNS}}
        )
    table = pd.DataFrame(rows)
    table["pareto"] = pareto(table["M_c"].to_numpy(float), table["M_w"].to_numpy(float))
    table.attrs.update(lda=lda, params=names, refused=refused)
    return table


def pareto(m_c: np.ndarray, m_w: np.ndarray) -> np.ndarray:
    """Whether each point is on the lower-left frontier of (M_c, M_w): no other point is at
    most as large in both and smaller in one. NaN points are never on it."""
    ok = np.isfinite(m_c) & np.isfinite(m_w)
    on = np.zeros(m_c.shape[0], bool)
    order = np.lexsort((m_w, m_c))  # by M_c, ties by M_w
    best = np.inf
    previous = None
    for i in order:
        if not ok[i]:
            continue
        if m_w[i] < best:
            on[i], best, previous = True, m_w[i], (m_c[i], m_w[i])
        elif previous is not None and (m_c[i], m_w[i]) == previous:
            on[i] = True  # the same point twice: neither dominates the other
    return on
