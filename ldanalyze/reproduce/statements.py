"""Paper 000's statements judged on the suite's numbers. Every statement, and every word's rule
and threshold, is read from the registry (``paper000_statements.toml``, :mod:`.registry`); this
module only applies them, open loop or closed loop, and says "untestable" with the reason where
the numbers a statement needs are missing or undefined."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..formatting import percent
from . import registry
from .suite import mean_over_seeds

OPEN_CONGESTION = (
    "open loop every LDA is judged on one trace, so its congestion is the same for all; only the closed "
    "loop tells the schemes' congestion apart"
)
MISSING_DATA = {
    "usage": "no record of ZBS's base schemes in force (Fig. 13) for these runs (the closed loop keeps it only "
    "while its ZBS runs' traces are at hand)",
    "table_vi": "no 128-flow run (Table VI) for these numbers",
    "sweeps": "no parameter sweep (§III) for these numbers",
}


class Untestable(Exception):
    """A statement's numbers are missing or undefined here; the message says which."""


def _listed(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


class _Numbers:
    """The numbers statements read: per (topology, N, LDA or ZBS's base scheme, metric), the mean
    over seeds at high uniform loss (``suite.HIGH``, §VI-A)."""

    def __init__(self, results: pd.DataFrame | None, usage: pd.DataFrame | None):
        parts = []
        if results is not None and len(results):
            for topology in sorted(results["topology"].unique()):
                means = mean_over_seeds(results, topology).xs("mean", axis=1, level=1)
                long = (
                    means.stack(future_stack=True).rename("value").reset_index().rename(columns={"level_2": "metric"})
                )
                parts.append(long.assign(topology=topology))
        if usage is not None and len(usage):
            schemes = [c for c in usage.columns if c not in ("topology", "flows", "seed")]
            long = usage.melt(["topology", "flows"], schemes, var_name="lda", value_name="value")
            parts.append(long.assign(metric="usage"))
        frame = (
            pd.concat(parts, ignore_index=True)
            if parts
            else pd.DataFrame(columns=["topology", "flows", "lda", "metric", "value"])
        )
        self.values = frame.set_index(["topology", "flows", "lda", "metric"])["value"].sort_index()

    def flows(self, topology: str, metric: str, wanted) -> list[int]:
        """The N of ``wanted`` (one N, or [lowest, highest]) this data has for the metric."""
        index = self.values.index
        mine = (index.get_level_values("topology") == topology) & (index.get_level_values("metric") == metric)
        have = index[mine].get_level_values("flows")
        lo, hi = (wanted, wanted) if isinstance(wanted, int) else wanted
        found = sorted(int(n) for n in set(have) if lo <= n <= hi)
        if not found:
            span = f"N = {lo}" if lo == hi else f"N = {lo} to {hi}"
            raise Untestable(f"no {topology.upper()} run with {span} for {metric} here")
        return found

    def get(self, topology: str, n: int, lda: str, metric: str) -> float:
        return float(self.values.get((topology, n, lda, metric), np.nan))


EPS = 1e-9  # shares: a value on a word's threshold counts as on it, not a float's rounding off it


def _le(x: float, y: float) -> bool:
    return x <= y + EPS


def _lt(x: float, y: float) -> bool:
    return x < y - EPS


def _spearman(x: list, y: list) -> float:
    return float(pd.Series(x).corr(pd.Series(y), method="spearman"))


def _trend(word: dict, sign: int, series: dict[int, float]) -> tuple[bool, str]:
    """``rises`` (sign +1) or ``falls`` (-1): over the N where defined, Spearman rho against N at
    least the word's rho (or at most its negative) and the last value beyond the first."""
    known = {n: v for n, v in series.items() if np.isfinite(v)}
    shown = ", ".join(f"N={n}: {percent(v)}" for n, v in series.items())
    if len(known) < word["points"]:
        raise Untestable(f"defined at {len(known)} N, fewer than {word['points']}: {shown}")
    ns, vs = list(known), list(known.values())
    rho = _spearman(ns, vs) if len(set(vs)) > 1 else np.nan  # a constant neither rises nor falls
    # rho over n points takes a few exact values (0.8 = 1 - 6·4/120 at n = 5): count it as printed
    holds = _le(word["rho"], sign * rho) and sign * (vs[-1] - vs[0]) > 0
    return holds, f"{shown}; Spearman rho {rho:.2f}"


def _rule(word_name: str, word: dict, s: dict, a: dict[str, float], b: dict[str, float]) -> bool:
    """The word's rule (``registry`` [words]) on A's and B's values (shares, not %)."""
    limit = word.get("limit", 0.0) / 100
    if word_name in ("none", "near_zero"):
        return all(_le(v, limit) for v in a.values())
    if word_name == "near_full":
        return all(_le(limit, v) for v in a.values())
    if word_name == "about":
        return all(_le(abs(v - s["value"] / 100), limit) for v in a.values())
    if word_name == "above":
        return all(_lt(s["value"] / 100, v) for v in a.values())
    if word_name == "less":
        return _lt(max(a.values()), min(b.values()))
    if word_name in ("lowest", "highest"):
        others = [v for k, v in b.items() if k not in a]
        return _lt(max(a.values()), min(others)) if word_name == "lowest" else _lt(max(others), min(a.values()))
    if word_name == "same":
        pairs = [(v, next(iter(b.values()))) for v in a.values()] if len(b) == 1 else zip(a.values(), b.values())
        return all(_le(abs(x - y), limit) for x, y in pairs)
    if word_name == "close":
        best = max(b.values())
        return all(_le(best - limit, v) for v in a.values())
    raise ValueError(f"no rule for the word {word_name!r}")  # the registry's loader checks the words


def _shown(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {percent(v)}" for k, v in values.items())


def _one(s: dict, numbers: _Numbers, topology: str, metric: str) -> tuple[bool, str]:
    """One topology and metric of a statement: whether its rule holds, and the numbers."""
    words = registry.load()["words"]
    word = words[s["word"]]
    label = f"{topology.upper()} {metric}: "
    if s["word"] in ("rises", "falls"):
        lda = s["a"][0]
        series = {n: numbers.get(topology, n, lda, metric) for n in numbers.flows(topology, metric, s["flows"])}
        holds, text = _trend(word, 1 if s["word"] == "rises" else -1, series)
        return holds, f"{label}{lda} {text}"
    b_names = s.get("best_of") or s.get("among") or s.get("b") or []
    at = numbers.flows(topology, metric, s["flows"])
    b_at = numbers.flows(topology, metric, s["b_flows"]) if "b_flows" in s else at
    over = s.get("over", "each")

    def values(names, ns):
        got = {lda: [numbers.get(topology, n, lda, metric) for n in ns] for lda in names}
        if over == "mean" or len(ns) == 1:
            return [{lda: float(np.nanmean(v)) if np.isfinite(v).any() else np.nan for lda, v in got.items()}]
        return [{lda: v[i] for lda, v in got.items()} for i in range(len(ns))]

    a_rows, b_rows = values(s["a"], at), values(b_names, b_at)
    if len(b_rows) != len(a_rows):
        b_rows = b_rows * len(a_rows)
    where = "mean over " if over == "mean" and len(at) > 1 else ""
    results, shown = [], []
    for i, (a, b) in enumerate(zip(a_rows, b_rows)):
        ns = f"N={at[i]}" if len(a_rows) > 1 or len(at) == 1 else f"{where}N={at[0]}-{at[-1]}"
        text = f"{ns}: {_shown(a)}" + (f", against N={b_at[0]}: {_shown(b)}" if "b_flows" in s else "")
        if b and "b_flows" not in s and set(b) - set(a):
            text += f" against {_shown({k: v for k, v in b.items() if k not in a})}"
        shown.append(text)
        defined = all(np.isfinite(v) for v in [*a.values(), *b.values()])
        results.append(_rule(s["word"], word, s, a, b) if defined else None)
    if None in results:  # a statement is never taken as holding, or failing, on a missing number
        raise Untestable(f"a number is undefined here (no such loss to misclassify?): {label}{'; '.join(shown)}")
    return all(results), label + "; ".join(shown)


def _sweep(s: dict, sweeps: dict) -> tuple[bool, str]:
    """§III: the default on the sweep's M_c-M_w frontier, or M_c and M_w each spanning less than
    the word's limit over the sweep."""
    lda, topology = s["a"][0], s["topology"]
    table = sweeps.get((lda, topology))
    if table is None:
        raise Untestable(f"no {lda} sweep in {topology.upper()}")
    if s["word"] != "frontier":
        spans = {m: float(table[m].max() - table[m].min()) for m in ("M_c", "M_w")}
        limit = registry.load()["words"][s["word"]]["limit"] / 100
        return _lt(max(spans.values()), limit), ", ".join(f"{m} spans {v * 100:.1f} points" for m, v in spans.items())
    default = table[table["default"]].iloc[0]
    names = table.attrs.get("params", [])
    evidence = (
        f"default ({', '.join(f'{p}={default[p]:.3g}' for p in names)}) M_c {percent(default['M_c'])}, "
        f"M_w {percent(default['M_w'])}; {int(table['pareto'].sum())} of {len(table)} points on the frontier"
    )
    better = table[table["pareto"] & (table["M_c"] <= default["M_c"])].sort_values("M_w")
    if not default["pareto"] and len(better):  # the frontier point that beats it with no more M_c
        b = better.iloc[0]
        evidence += (
            f"; {', '.join(f'{p}={b[p]:.3g}' for p in names)} has M_c {percent(b['M_c'])}, M_w {percent(b['M_w'])}"
        )
    if not np.isfinite([default["M_c"], default["M_w"]]).all():
        raise Untestable(f"the default's M_c or M_w is undefined: {evidence}")
    return bool(default["pareto"]), evidence


def judge(
    results: pd.DataFrame | None,
    loop: str,
    *,
    usage: pd.DataFrame | None = None,
    scaled: pd.DataFrame | None = None,
    sweeps: dict | None = None,
) -> pd.DataFrame:
    """Every statement of the registry judged on one loop's numbers: ``results`` (one row per
    trace and LDA, as ``results.csv`` or the closed rows of ``closed_loop.csv``), ZBS's ``usage``
    (``zbs_usage.csv``), the 128-flow run (``scaled``, Table VI) and the §III ``sweeps``. One row
    per statement: id, statement, where, paper (its numbers), ldas, test, holds (yes, no,
    untestable) and evidence (the numbers, or why it cannot be tested)."""
    words = registry.load()["words"]
    numbers = _Numbers(results, None)
    sources = {
        "results": numbers,
        "usage": _Numbers(None, usage) if usage is not None else None,
        "table_vi": _Numbers(pd.concat([results, scaled], ignore_index=True), None) if scaled is not None else None,
    }
    rows = []
    for s in registry.load()["statement"]:
        data = s.get("data", "results")
        try:
            if data == "sweeps":
                if sweeps is None:
                    raise Untestable(MISSING_DATA["sweeps"])
                holds, evidence = _sweep(s, sweeps)
            else:
                source = sources[data]
                if source is None:
                    raise Untestable(MISSING_DATA[data])
                if loop == "open" and "congestion_rate" in _listed(s["metric"]):
                    raise Untestable(OPEN_CONGESTION)
                verdicts = [
                    _one(s, source, topology, metric)
                    for topology in _listed(s["topology"])
                    for metric in _listed(s["metric"])
                ]
                holds, evidence = all(v for v, _ in verdicts), "; ".join(e for _, e in verdicts)
            verdict = "yes" if holds else "no"
        except Untestable as why:
            verdict, evidence = "untestable", str(why)
        rows.append(
            {
                "id": s["id"],
                "statement": s["text"],
                "where": s["where"],
                "paper": s["paper"],
                "ldas": ", ".join(s["ldas"]),
                "test": f"{s['word']}: {words[s['word']]['rule']}",
                "holds": verdict,
                "evidence": evidence,
            }
        )
    return pd.DataFrame(rows)


def loop_checks(opened: pd.DataFrame, closed: pd.DataFrame) -> pd.DataFrame:
    """The statements judged open loop (``opened``: :func:`judge`'s frame) and closed loop side
    by side, with a sentence on why a verdict moved."""
    keep = ["id", "statement", "where", "paper", "ldas", "test"]
    merged = opened.merge(closed[["id", "holds", "evidence"]], on="id", suffixes=("_open", "_closed"))
    merged = merged[[*keep, "holds_open", "evidence_open", "holds_closed", "evidence_closed"]]
    merged["why"] = [_why(r) for r in merged.itertuples()]
    return merged


def _why(r) -> str:
    """A sentence on why a statement's verdict did or did not move between the loops."""
    if r.holds_open == r.holds_closed == "untestable":
        return "untestable both ways: its numbers are missing or undefined (see its evidence)"
    if "untestable" in (r.holds_open, r.holds_closed):
        return "untestable in one loop: its numbers are missing or undefined there (see its evidence)"
    if r.holds_open == r.holds_closed:
        return "the same verdict both ways"
    if "thput" in r.evidence_open:
        return (
            "the throughput moved: closed loop each LDA's sender fills the queue its decisions allow, where "
            "the open-loop model replays rates over the unaware sender's timing"
        )
    return (
        "the decisions moved: closed loop each LDA's own sender shapes the queue, and so the delays and "
        "spacings the LDA judges; open loop they are the unaware sender's"
    )
