"""A batch's results: scored per flow, per trace and pooled, and the errors."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pandas as pd

from ..analysis import stack
from ..errors import UsageError
from ..scoring import score
from .jobs import Analysis, Job, Outcome, discover
from .running import execute

SCOPES = ("flow", "trace", "pooled")


def results_table(outcomes: Sequence[Outcome], *, bootstrap: int = 0, seed=0) -> pd.DataFrame:
    """One tidy table of scores: ``scope`` flow (per trace and flow), trace, and pooled (every
    trace); the modeled-throughput columns where a controller was replayed."""
    parts = [o.result for o in outcomes if o.result is not None]
    if not parts:
        return pd.DataFrame(columns=["scope", "trace", "flow", "lda"])
    batch = stack(parts)
    tables = []
    for scope in SCOPES:
        table = score(
            batch.decisions, batch.summary, by=scope, bootstrap=bootstrap, seed=seed, throughput=batch.throughput
        )
        for key in ("trace", "flow"):
            if key not in table.columns:
                table.insert(0, key, "*")
        table.insert(0, "scope", scope)
        tables.append(table)
    out = pd.concat(tables, ignore_index=True)
    out["lda"] = out["lda"].astype(str)
    out["trace"] = out["trace"].astype(str)
    out["flow"] = out["flow"].astype(str)
    return out


def score_suite(
    paths: str | Sequence[str],
    *,
    exclude: Sequence[str] = (),
    ldas="all",
    controller: str | None = None,
    jobs: int = 1,
    bootstrap: int = 0,
    cache_dir: str | None = None,
) -> pd.DataFrame:
    """What ``ldanalyze batch PATHS`` scores, as a DataFrame: every trace under ``paths``
    (files, folders walked, globs; ``exclude`` patterns) read, classified with ``ldas`` (and
    ``controller`` replayed, open loop) on ``jobs`` processes, then :func:`results_table`. A
    trace that fails is left out with a warning naming it and why."""
    traces, _ = discover([paths] if isinstance(paths, str) else list(paths), exclude)
    if not traces:
        raise UsageError(f"no trace under {paths}")
    outcomes = execute(
        [Job(name=path, path=path) for path in traces],
        Analysis(ldas=ldas, controller=controller, cache_dir=cache_dir),
        workers=jobs,
    )
    for outcome in outcomes:
        if outcome.error is not None:
            warnings.warn(f"{outcome.job.name}: left out: {outcome.error}", UserWarning, stacklevel=2)
    return results_table(outcomes, bootstrap=bootstrap)


def errors_table(outcomes: Sequence[Outcome]) -> pd.DataFrame:
    rows = [{"trace": o.job.name, "error": o.error} for o in outcomes if o.error is not None]
    return pd.DataFrame(rows, columns=["trace", "error"])
