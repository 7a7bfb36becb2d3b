"""Pass or fail for CI: thresholds on metrics and comparisons with a saved baseline.

A threshold is a small expression, parsed by a regular expression and never evaluated as
code: ``LDA.METRIC OP NUMBER`` with ``LDA`` an LDA name or ``*`` (every LDA), ``METRIC`` a
column of the results table (``M_c``, ``M_w``, ``accuracy``, ``thput`` ...), ``OP`` one of
``< <= > >= == !=``. ``--fail-if "zbs.M_c > 0.05"`` fails the batch when the expression holds,
on the pooled scores (``scope="pooled"``) or on each trace's (``scope="trace"``). A metric that
is undefined (NaN: no loss of that cause) cannot hold: the check is reported as undefined.

A baseline is an earlier results table (Parquet, CSV or JSON as ``batch`` writes them). Rows
are matched on (scope, trace, flow, lda); a regression is an error rate (M_c, M_w) up by more
than ``tolerance`` or a rate of success (accuracy, thput) down by more than it, and, with
``beyond_ci``, also outside the baseline's confidence interval where it has one. A row of the
baseline that the new results lack is a regression too (a trace that no longer scores).
An LDA whose parameters changed since the baseline (``biaz`` then, ``biaz:upper=1.6`` now) is
compared with its old self when it is the one LDA of its kind that each table lacks of the
other: the checks' ``baseline_lda`` says so. With two candidates, nothing is guessed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import re

import numpy as np
import pandas as pd

from .errors import UsageError
from .scoring import NUMBER_COLUMNS

OPERATORS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_EXPRESSION = re.compile(
    r"^\s*([A-Za-z_][\w:=.,-]*?|\*)\.([A-Za-z_]\w*)\s*(<=|>=|==|!=|<|>)\s*"
    r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)
WORSE_WHEN_HIGHER = ("M_c", "M_w")
WORSE_WHEN_LOWER = ("accuracy", "thput")
KEYS = ("scope", "trace", "flow", "lda")


@dataclasses.dataclass(frozen=True)
class Threshold:
    """``lda.metric op value``: the batch fails where it holds."""

    text: str
    lda: str
    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Threshold:
        match = _EXPRESSION.match(text)
        if not match:
            raise UsageError(
                f"--fail-if {text!r}: expected LDA.METRIC OP NUMBER, e.g. 'zbs.M_c > 0.05' "
                f"(OP one of {' '.join(OPERATORS)}; LDA may be *)"
            )
        lda, metric, op, value = match.groups()
        return cls(text.strip(), lda, metric, op, float(value))


def check_threshold_names(thresholds, specs: list[str]) -> None:
    """Refuse, before a batch runs, a threshold on an LDA that the batch does not score or on
    what is no number of a score table (a typo found after an hour's run is an hour lost);
    ``specs``: the LDAs' specs as scored."""
    for threshold in thresholds:
        if threshold.metric not in NUMBER_COLUMNS:
            raise UsageError(
                f"--fail-if {threshold.text!r}: no metric {threshold.metric!r} (known: {', '.join(NUMBER_COLUMNS)})"
            )
        if threshold.lda != "*" and threshold.lda not in specs:
            raise UsageError(
                f"--fail-if {threshold.text!r}: no LDA {threshold.lda!r} among those scored ({', '.join(specs)})"
            )


def check_thresholds(results: pd.DataFrame, thresholds, scope: str = "pooled") -> pd.DataFrame:
    """One row per threshold × matching (trace, lda) row: ``check, scope, trace, lda, value,
    status`` with status ``pass``, ``fail`` or ``undefined``."""
    if scope not in ("pooled", "trace"):
        raise UsageError(f"--fail-scope {scope!r}: pooled or trace")
    rows = []
    table = results[results["scope"] == scope]
    for threshold in thresholds:
        if threshold.metric not in results.columns:
            known = [c for c in results.columns if c not in KEYS]
            raise UsageError(
                f"--fail-if {threshold.text!r}: no metric {threshold.metric!r} (known: {', '.join(known[:30])})"
            )
        chosen = table if threshold.lda == "*" else table[table["lda"] == threshold.lda]
        if threshold.lda != "*" and chosen.empty and not table.empty:
            raise UsageError(
                f"--fail-if {threshold.text!r}: no LDA {threshold.lda!r} in the results "
                f"({', '.join(sorted(table['lda'].unique()))})"
            )
        for _, row in chosen.iterrows():
            value = float(row[threshold.metric])
            status = (
                "undefined"
                if math.isnan(value)
                else "fail"
                if OPERATORS[threshold.op](value, threshold.value)
                else "pass"
            )
            rows.append(
                {
                    "check": f"fail-if {threshold.text}",
                    "scope": scope,
                    "trace": row["trace"],
                    "lda": row["lda"],
                    "value": value,
                    "status": status,
                    "message": f"{row['lda']}.{threshold.metric} = {value:.4g} ({threshold.text})",
                }
            )
    return pd.DataFrame(rows, columns=["check", "scope", "trace", "lda", "value", "status", "message"])


def read_results(path: str) -> pd.DataFrame:
    """A results table written by ``ldanalyze batch`` (by its extension): Parquet, CSV, a JSON
    table (``-o results.json``) or the JSON report (``--json``), whose ``results`` it takes, so
    that the report a CI job kept as an artifact can be the next job's baseline."""
    try:
        if path.endswith(".parquet"):
            table = pd.read_parquet(path)
        elif path.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                records = json.load(f)
            if isinstance(records, dict) and "schema_version" in records:
                records = records.get("results", [])
            if not isinstance(records, list):
                raise ValueError("neither a JSON table (an array of records) nor a JSON report")
            table = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=list(KEYS))
            table = table.apply(_numbers_with_nulls)  # a metric that was NaN throughout is all null
        else:
            table = pd.read_csv(path, keep_default_na=False, na_values=["", "NaN", "nan"])
    except (OSError, ValueError) as exc:
        raise UsageError(f"--baseline {path}: cannot read it ({exc})") from None
    missing = [k for k in KEYS if k not in table.columns]
    if missing:
        raise UsageError(f"--baseline {path}: not a batch results table (no column {', '.join(missing)})")
    return table.astype({k: str for k in KEYS})


def _numbers_with_nulls(column: pd.Series) -> pd.Series:
    """A JSON column of numbers and nulls as float (NaN for null), any other column as it is."""

    def number_or_null(value) -> bool:
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))

    if column.dtype != object or not column.map(number_or_null).all():
        return column
    return column.astype(np.float64)


def compare_baseline(
    results: pd.DataFrame, baseline: pd.DataFrame, tolerance: float = 0.02, beyond_ci: bool = False
) -> pd.DataFrame:
    """One row per (scope, trace, flow, lda, metric) that both tables hold, or that the
    baseline holds and the results lack: ``status`` pass, regressed or missing;
    ``baseline_lda`` the baseline's LDA compared (see the module docstring on retuned LDAs)."""
    if not tolerance >= 0:
        raise UsageError(f"--tolerance must be >= 0, not {tolerance}")
    metrics = [m for m in WORSE_WHEN_HIGHER + WORSE_WHEN_LOWER if m in baseline.columns]
    new = results.astype({k: str for k in KEYS}).set_index(list(KEYS))
    retuned = retuned_ldas(results["lda"].astype(str), baseline["lda"].astype(str))
    baseline = baseline.astype({k: str for k in KEYS}).assign(baseline_lda=lambda t: t["lda"])
    baseline["lda"] = baseline["lda"].replace(retuned)
    rows = []
    for key, old in baseline.set_index(list(KEYS)).iterrows():
        where = {**dict(zip(KEYS, key)), "baseline_lda": old["baseline_lda"]}
        if key not in new.index:
            rows.append(
                {
                    **where,
                    "metric": "*",
                    "old": math.nan,
                    "new": math.nan,
                    "status": "missing",
                    "message": "in the baseline, not in the results",
                }
            )
            continue
        now = new.loc[key]
        if isinstance(now, pd.DataFrame):
            now = now.iloc[0]
        for metric in metrics:
            before, after = float(old[metric]), float(now.get(metric, math.nan))
            if math.isnan(before) or math.isnan(after):
                continue
            worse = after - before if metric in WORSE_WHEN_HIGHER else before - after
            regressed = worse > tolerance
            if regressed and beyond_ci and f"{metric}_lo" in old.index and not math.isnan(float(old[f"{metric}_lo"])):
                regressed = not float(old[f"{metric}_lo"]) <= after <= float(old[f"{metric}_hi"])
            rows.append(
                {
                    **where,
                    "metric": metric,
                    "old": before,
                    "new": after,
                    "status": "regressed" if regressed else "pass",
                    "message": f"{metric} {before:.4g} -> {after:.4g}",
                }
            )
    return pd.DataFrame(rows, columns=[*KEYS, "baseline_lda", "metric", "old", "new", "status", "message"])


def retuned_ldas(now: pd.Series, then: pd.Series) -> dict[str, str]:
    """The baseline's LDA → the results' LDA of the same kind (the spec's name, before ``:``),
    for each kind that has exactly one LDA the results lack and one the baseline lacks."""
    gone, added = set(then) - set(now), set(now) - set(then)
    return {
        old: new
        for old in gone
        for new in added
        if _kind(old) == _kind(new)
        and sum(_kind(o) == _kind(old) for o in gone) == 1
        and sum(_kind(n) == _kind(new) for n in added) == 1
    }


def _kind(spec: str) -> str:
    return spec.partition(":")[0]
