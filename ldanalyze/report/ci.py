"""What a CI system shows of a batch: JUnit XML, a Markdown job summary, a versioned JSON report.

JUnit: one test suite ``ldanalyze``; per trace a test case ``read <trace>`` (an error when the
trace failed), and one test case per check row (threshold or baseline comparison): a failure
when it failed, skipped when undefined. The JSON report follows ``JSON_SCHEMA``
(``schema_version`` 1): the results, errors and checks tables as records, and the files
passed over with why (``passed_over``: added later, as optional, so earlier reports validate).
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from typing import TypedDict

import pandas as pd

from ..output import json_default, table_records
from ..version import VERSION
from .tables import markdown_table
from .text import records_text

SCHEMA_VERSION = 1
_ROW = {"type": "object"}
JSON_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "ldanalyze batch report",
    "type": "object",
    "required": ["schema_version", "ldanalyze", "passed", "traces", "results", "errors", "checks"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "ldanalyze": {"type": "string"},
        "passed": {"type": "boolean"},
        "traces": {
            "type": "object",
            "required": ["scored", "failed", "passed_over"],
            "properties": {
                k: {"type": "integer", "minimum": 0} for k in ("scored", "without_losses", "failed", "passed_over")
            },
        },
        "results": {
            "type": "array",
            "description": "scores as ldanalyze.scoring.score names them: shares (M_c, M_w, accuracy, wireless_share, "
            "policing_share, the "
            "loss rates, thput, agrees_with_others) are fractions, not percent; rates in bits/s; times in seconds. "
            "By trace and pooled, thput is the mean over the flows and vs_omniscient, vs_unaware the ratio of "
            "the mean thputs on the same flows (not the mean of the flows' ratios). "
            "agrees_with_others and mean_kappa (Cohen's) compare a voting LDA with the majority of the others "
            "(ldanalyze.consensus), not with the truth; null for the baselines",
            "items": {
                **_ROW,
                "required": ["scope", "trace", "flow", "lda", "M_c", "M_w"],
                "properties": {
                    "scope": {"enum": ["flow", "trace", "pooled"]},
                    **{
                        name: {"type": ["number", "null"], "minimum": 0, "maximum": 1}
                        for name in (
                            "M_c",
                            "M_w",
                            "accuracy",
                            "wireless_share",
                            "policing_share",
                            "agrees_with_others",
                            "congestion_rate",
                            "wireless_rate",
                        )
                    },
                    "compared": {"type": ["number", "null"], "minimum": 0},
                    "mean_kappa": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
                },
            },
        },
        "errors": {"type": "array", "items": {**_ROW, "required": ["trace", "error"]}},
        "checks": {
            "type": "array",
            "items": {
                **_ROW,
                "required": ["check", "status", "message"],
                "properties": {"status": {"enum": ["pass", "fail", "undefined", "regressed", "missing"]}},
            },
        },
        "passed_over": {
            "type": "array",
            "items": {
                **_ROW,
                "required": ["path", "why"],
                "properties": {"path": {"type": "string"}, "why": {"type": "string"}},
            },
        },
    },
}
FAILED = ("fail", "regressed", "missing")


class Counts(TypedDict):
    """The files a batch passed over (file → why) and the traces it read without losses: the
    keywords ``json_report``, ``counts_line`` and ``markdown_summary`` share."""

    passed_over: dict[str, str]
    without_losses: int


def _json(value) -> str:
    return json.dumps(value, default=json_default)


def json_report(
    results: pd.DataFrame,
    errors: pd.DataFrame,
    checks: pd.DataFrame,
    *,
    passed_over: dict[str, str],
    without_losses: int,
    passed: bool,
) -> dict:
    """The JSON report (``JSON_SCHEMA``); ``passed_over``: each file passed over → why."""

    return {
        "schema_version": SCHEMA_VERSION,
        "ldanalyze": VERSION,
        "passed": passed,
        "traces": {
            "scored": scored_traces(results),
            "without_losses": int(without_losses),
            "failed": int(len(errors)),
            "passed_over": len(passed_over),
        },
        "results": table_records(results),
        "errors": table_records(errors),
        "checks": table_records(checks),
        "passed_over": [{"path": path, "why": why} for path, why in passed_over.items()],
    }


def report_text(report: dict) -> str:
    """The JSON report as text: its top level indented, each record of a table on a line of its
    own, a file to grep and diff (indented throughout, a large report is mostly indentation)."""
    members = []
    for key, value in report.items():
        if isinstance(value, list) and value:
            members.append(f" {json.dumps(key)}: {records_text(value, ' ')}")
        else:
            members.append(f" {json.dumps(key)}: {_json(value)}")
    return "{\n" + ",\n".join(members) + "\n}\n"


def scored_traces(results: pd.DataFrame) -> int:
    return int(results.loc[results["scope"] == "trace", "trace"].nunique()) if len(results) else 0


def counts_line(
    results: pd.DataFrame, errors: pd.DataFrame, *, passed_over: dict[str, str], without_losses: int
) -> str:
    """How many traces were scored, had nothing to score, failed, and how many files were
    passed over and why (counted by reason)."""
    reasons = pd.Series(list(passed_over.values()), dtype=object).value_counts()
    why = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
    return (
        f"{scored_traces(results)} trace(s) scored"
        + (f", {without_losses} without losses (nothing to score)" if without_losses else "")
        + f", {len(errors)} failed, {len(passed_over)} file(s) passed over"
        + (f" ({why})" if why else "")
    )


def junit_xml(traces: list[str], errors: pd.DataFrame, checks: pd.DataFrame) -> str:
    suite = ET.Element("testsuite", name="ldanalyze")
    failed = dict(zip(errors["trace"], errors["error"]))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for trace in traces:
        case = ET.SubElement(suite, "testcase", classname="ldanalyze.read", name=f"read {trace}")
        counts["tests"] += 1
        if trace in failed:
            ET.SubElement(case, "error", message=failed[trace][:200]).text = failed[trace]
            counts["errors"] += 1
    for _, row in checks.iterrows():
        name = f"{_check_name(row)} [{_where(row)}]"
        case = ET.SubElement(suite, "testcase", classname="ldanalyze.checks", name=name)
        counts["tests"] += 1
        if row["status"] in FAILED:
            ET.SubElement(case, "failure", message=row["message"]).text = row["message"]
            counts["failures"] += 1
        elif row["status"] == "undefined":
            ET.SubElement(case, "skipped", message=f"undefined: {row['message']}")
            counts["skipped"] += 1
    for key, value in counts.items():
        suite.set(key, str(value))
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def failed_lines(checks: pd.DataFrame, shown: int = 10) -> list[str]:
    """The failed checks as lines for a log: the first ``shown``, then how many more."""
    bad = _failed(checks)
    lines = [f"FAILED {_check_name(row)} [{_where(row)}]: {row['message']}" for _, row in bad.head(shown).iterrows()]
    return lines + (
        [f"... and {len(bad) - shown} more failed checks (--summary or --json lists all)"] if len(bad) > shown else []
    )


def _failed(checks: pd.DataFrame) -> pd.DataFrame:
    """The failed checks, the pooled ones first, then each trace's, then each flow's."""
    if not len(checks):
        return checks
    bad = checks[checks["status"].isin(FAILED)]
    if "scope" not in bad:
        return bad
    return bad.iloc[bad["scope"].map({"pooled": 0, "trace": 1, "flow": 2}).fillna(3).argsort(kind="stable")]


def _check_name(row: pd.Series) -> str:
    return row["check"] if "check" in row and isinstance(row["check"], str) else f"baseline {row['metric']}"


def _where(row: pd.Series) -> str:
    """Where a check looked: scope, trace, flow, LDA (and the baseline's LDA it was compared with)."""
    parts = [
        str(row[k])
        for k in ("scope", "trace", "flow", "lda")
        if k in row and str(row[k]) != "*" and not (isinstance(row[k], float) and math.isnan(row[k]))
    ]
    old = row.get("baseline_lda")
    if isinstance(old, str) and old != row.get("lda"):
        parts.append(f"(baseline: {old})")
    return " ".join(parts)


def _row(*cells) -> str:
    """A Markdown table row, a ``|`` within a cell (a path, an error) escaped."""
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


def markdown_summary(
    results: pd.DataFrame,
    errors: pd.DataFrame,
    checks: pd.DataFrame,
    *,
    passed: bool,
    passed_over: dict[str, str],
    without_losses: int,
    listed: int = 50,
) -> str:
    """The job summary: verdict, counts, failed checks, failed traces, the files passed over
    (folded; the first ``listed``) and the pooled scores."""
    verdict = "passed" if passed else "**failed**"
    out = [
        f"### ldanalyze batch: {verdict}",
        "",
        counts_line(results, errors, passed_over=passed_over, without_losses=without_losses) + ".",
        "",
    ]
    bad = _failed(checks)
    if len(bad):
        out += ["#### Failed checks", "", "| check | where | detail |", "|---|---|---|"]
        for _, row in bad.head(listed * 2).iterrows():
            out.append(_row(_check_name(row), _where(row), row["message"]))
        if len(bad) > listed * 2:
            out.append(f"| ... {len(bad) - listed * 2} more (the JSON report lists all) | | |")
        out.append("")
    if len(errors):
        out += ["#### Traces that failed", "", "| trace | error |", "|---|---|"]
        for _, row in errors.iterrows():
            out.append(_row(row["trace"], str(row["error"]).splitlines()[0]))
        out.append("")
    if passed_over:
        out += [
            f"<details><summary>Files passed over ({len(passed_over)})</summary>",
            "",
            "| file | why |",
            "|---|---|",
        ]
        out += [_row(path, why) for path, why in list(passed_over.items())[:listed]]
        if len(passed_over) > listed:
            out.append(f"| ... {len(passed_over) - listed} more (the JSON report lists all) | |")
        out += ["", "</details>", ""]
    pooled = results[results["scope"] == "pooled"].drop(columns=["scope", "trace", "flow"]) if len(results) else None
    if pooled is not None and len(pooled):
        out.append(markdown_table(pooled))
    return "\n".join(out).rstrip() + "\n"
