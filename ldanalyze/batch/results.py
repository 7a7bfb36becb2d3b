"""A batch's results: scored per flow, per trace and pooled, and the errors."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pandas as pd

from ..analysis import stack
from ..consensus import agreement_counts, agreement_table
from ..errors import UsageError
from ..scoring import score
from ..scoring.losses import BY, EXCLUDED
from .jobs import Analysis, Job, Outcome, discover
from .running import execute

SCOPES = ("flow", "trace", "pooled")


def results_table(
    outcomes: Sequence[Outcome], *, bootstrap: int = 0, seed=0, route_as: str = EXCLUDED, policing_as: str = EXCLUDED
) -> pd.DataFrame:
    """One tidy table of scores: ``scope`` flow (per trace and flow), trace, and pooled (every
    trace); the LDAs' agreement with each other (``AGREEMENT``); the modeled-throughput
    columns where a controller was replayed. ``route_as``, ``policing_as``: as ``score``."""
    parts = [o.result for o in outcomes if o.result is not None]
    if not parts:
        return pd.DataFrame(columns=["scope", "trace", "flow", "lda"])
    analysed = stack(parts)
    counts = (
        analysed.agreement
        if analysed.agreement is not None
        else agreement_counts(analysed.decisions, ("trace", "flow"))
    )
    tables = []
    for scope in SCOPES:
        table = score(
            analysed.decisions,
            analysed.summary,
            by=scope,
            bootstrap=bootstrap,
            seed=seed,
            throughput=analysed.throughput,
            route_as=route_as,
            policing_as=policing_as,
        )
        _add_agreement(table, counts, BY[scope][:-1])
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


# what ``consensus.agreement`` says of each voting LDA, from the agreement counts of the traces'
# flows summed over the scope: NaN for the baselines, which do not vote
AGREEMENT = ("compared", "agrees_with_others", "mean_kappa")


def _add_agreement(table: pd.DataFrame, counts: pd.DataFrame, keys: tuple[str, ...]) -> None:
    """Join the agreement of the LDAs (``AGREEMENT``) per ``keys`` onto a scope's score rows,
    after the wireless shares: on a trace without truth the two say what there is to say."""
    agreed = agreement_table(counts, keys).astype({k: str for k in keys})
    joined = table[[*keys, "lda"]].astype(str).merge(agreed, how="left", on=[*keys, "lda"])
    at = max(k for k, name in enumerate(table.columns) if name.startswith("wireless_share")) + 1
    for offset, name in enumerate(AGREEMENT):
        table.insert(at + offset, name, joined[name].to_numpy())


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
