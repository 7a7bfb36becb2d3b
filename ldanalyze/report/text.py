"""What the analysing commands print or write as text: a table as JSON records, ``score`` in the
format asked for (JSON, CSV, Markdown or the terminal's table with the LDAs' agreement), the
decisions per LDA of ``classify``, the modeled throughput of ``replay``, the closed-loop
crosscheck, the learned LDA's evaluation. The commands parse and call; how it reads lives here.
"""

from __future__ import annotations

import json

import pandas as pd

from .. import formatting
from ..consensus import consensus, kappa_matrix, majority_line
from ..control import OPEN_LOOP_NOTE
from ..lda import REGISTRY
from ..lda.zbs import Zbs
from ..output import json_default, table_records
from ..scoring.throughput import share_unknown
from .inspect_text import unreadable_reasons
from .tables import SHARE_NOTE, markdown_table, text_table

SCORE_FORMATS = ("json", "csv", "md", "table")


def table_text(table: pd.DataFrame) -> str:
    """A table as a JSON array of records, a record a line (as the CI report's tables; NaN is
    null): what ``-o results.json`` writes and ``--baseline results.json`` reads."""
    return records_text(table_records(table), "") + "\n"


def records_text(rows: list, indent: str) -> str:
    """Records as a JSON array, a record a line, each line after ``indent``."""
    if not rows:
        return "[]"
    return "[\n" + ",\n".join(f"{indent} {json.dumps(row, default=json_default)}" for row in rows) + f"\n{indent}]"


def score_text(scores: pd.DataFrame, form: str, decisions: pd.DataFrame, flows_read: int) -> str:
    """``score``'s output in ``form`` (``SCORE_FORMATS``); the table for a terminal ends with how
    far the LDAs agree where no truth is known, and says so when there was nothing to score."""
    if form == "json":
        return table_text(scores)
    if form == "csv":
        return scores.to_csv(index=False)
    if form == "md":
        return markdown_table(scores)
    if scores.empty:
        return f"nothing to score: no flow lost a packet ({flows_read} flow(s) read; `inspect` shows them)\n"
    return text_table(scores) + agreement_text(decisions) + hindsight_note(decisions)


def hindsight_note(decisions: pd.DataFrame) -> str:
    """A line per LDA among ``decisions`` that decides with hindsight (``LDA.hindsight``): its
    calls are not what the endpoint could have known when it detected the loss."""
    specs = [str(spec) for spec in pd.unique(decisions["lda"])] if "lda" in decisions.columns else []
    late = [spec for spec in specs if getattr(REGISTRY.get(spec.split(":")[0]), "hindsight", False)]
    return "".join(
        f"note: {spec} decides with hindsight (its verdict per chunk reads the whole chunk, as Flach et al.'s "
        "policer detector does): not what the sender knew when it detected each loss\n"
        for spec in late
    )


def unreadable_line(path: str, description: dict) -> str:
    """Why a capture (``io.capture.describe.capture_description``) gave nothing to score, on one line."""
    return "no flow carries sequence numbers: " + "; ".join(unreadable_reasons(path, description))


def nothing_readable_text(unreadable: dict[str, dict], written: bool) -> str:
    """``score`` when every trace given was a capture without sequence numbers: nothing to
    score, and why, per capture (``written``: whether the scores would have gone to standard
    output; else no file and no table is written)."""
    out = []
    for path, description in unreadable.items():
        out.append(
            f"nothing to score: {path} holds {description['records']} records, no flow with sequence numbers "
            f"(`ldanalyze inspect {path}` describes them){'' if written else '; nothing written'}:"
        )
        out += [f"  {why}" for why in unreadable_reasons(path, description)]
    return "\n".join(out) + "\n"


def agreement_text(decisions: pd.DataFrame) -> str:
    """Without any ground truth: how far the LDAs agree (Cohen's kappa, pooled) and the
    majority call per loss, with its caveat."""
    if decisions.empty or {str(c) for c in pd.unique(decisions["cause"])} != {"lost"}:
        return ""
    kappa = kappa_matrix(decisions)
    if kappa.empty:
        return ""
    shown = kappa.map(lambda k: formatting.number(k, 2))
    return (
        "\nagreement between the LDAs (Cohen's kappa over the losses both called: 1 alike, 0 as by chance, "
        "- undefined: both called every loss the same way):\n"
        f"{shown.to_string()}\n\n{majority_line(consensus(decisions), len(kappa))}\n"
    )


def classify_text(path: str, timeline, ldas: list, decisions: pd.DataFrame) -> str:
    """``classify`` without ``-o``: the decisions counted per LDA, and for ZBS the share of time
    each base scheme was in force in the flows with losses."""
    counts = decisions.groupby(["lda", "decision"], observed=False).size().unstack(fill_value=0)
    out = [
        f"{path}: {len(timeline.losses)} lost packets in {len(timeline.gaps)} gaps; "
        "decisions per LDA (write them all with -o FILE):",
        counts.to_string(),
    ]
    lossy = set(timeline.losses["flow"].astype(str))
    for lda in ldas:
        if isinstance(lda, Zbs):
            usage = lda.usage(timeline).set_index("flow")
            usage = usage[usage.index.astype(str).isin(lossy)]  # where it decided something
            if len(usage):
                out.append(
                    f"\n{lda.spec}: share of time each base scheme was in force (%), in the {len(usage)} "
                    "flow(s) with losses:"
                )
                out.append(formatting.shown(usage, percent={c: c for c in usage.columns}).to_string())
    return "\n".join(out) + "\n" + hindsight_note(decisions)


def replay_text(path: str, summary: pd.DataFrame) -> str:
    """``replay``'s modeled throughput per flow, rates in kbit/s; with the note of
    ``scoring.throughput.share_unknown`` where several flows rest on packet-pair capacities."""
    unsure = bool(share_unknown(summary).any())
    summary = summary.drop(columns="capacity_given", errors="ignore")
    for col in ("mean_rate_bps", "capacity_bps"):
        summary[col] = summary[col] / 1e3
    summary = summary.rename(columns={"mean_rate_bps": "mean_kbps", "capacity_bps": "capacity_kbps"})
    table = formatting.text(
        summary,
        percent={"thput": "thput %"},
        fixed={"mean_kbps": 1, "capacity_kbps": 1, "seconds": 1, "vs_omniscient": 2, "vs_unaware": 2},
    )
    note = f"{SHARE_NOTE.removeprefix('‡ ')}\n" if unsure else ""
    return f"{path}: modeled throughput per flow ({OPEN_LOOP_NOTE})\n{table}\n{note}"


def compare_sent_text(table: pd.DataFrame, bin_s: float) -> str:
    """``replay --compare-sent``: the allowed rate against the rate the trace's sender sent
    (``control.sent_rate.compare_sent``), in kbit/s."""
    table = table.copy()
    table[["allowed_bps", "sent_bps"]] = table[["allowed_bps", "sent_bps"]] / 1e3
    table = table.rename(columns={"allowed_bps": "allowed_kbps", "sent_bps": "sent_kbps"})
    shown = formatting.text(
        table, fixed={"allowed_kbps": 1, "sent_kbps": 1, "ratio": 3, "capped_ratio": 3, "correlation": 3}
    )
    return f"\nallowed rate against the rate the trace's sender sent, in {bin_s:g} s bins:\n{shown}\n"


def crosscheck_text(trace: str, log_path: str, log: pd.DataFrame, summary: pd.DataFrame, differences) -> str:
    """``crosscheck``: the receiver's logged decisions against the offline replay
    (``closedloop.crosscheck``): per LDA, then the first 20 differences."""
    out = [
        f"{trace}: the receiver's decisions ({log_path}, {len(log)} lost packets, steered by "
        f"{', '.join(sorted(set(log['driver'])))}) against the offline replay of this trace:",
        formatting.text(summary, percent=("alike",), digits=2),
    ]
    if differences.empty:
        out.append("every LDA decided every loss alike in both implementations")
    else:
        out += [f"\n{len(differences)} difference(s), the first 20:", differences.head(20).to_string(index=False)]
    return "\n".join(out) + "\n"


def evaluation_text(
    table: pd.DataFrame,
    verdicts: pd.DataFrame,
    importance: pd.DataFrame,
    which: str,
    left_out: dict[str, tuple[int, str]],
    traces: int,
) -> str:
    """``evaluate``: the grouped cross-validation per held-out group and LDA; the verdict per
    group, the learned LDA against the best of the LDAs compared (the trivial baselines among
    them), M_c and M_w beside each accuracy; the LDAs that could not be compared; the features'
    importance."""
    columns = ["held_out", "lda", "losses", "scored", "M_c", "M_w", "accuracy", "accuracy_lo", "accuracy_hi"]
    columns += ["train_gaps", "test_traces"]
    percent = {
        "M_c": "M_c %",
        "M_w": "M_w %",
        "accuracy": "accuracy %",
        "accuracy_lo": "95% CI lo",
        "accuracy_hi": "hi",
    }
    judged = {
        "learned_accuracy": "learned %",
        "learned_M_c": "M_c %",
        "learned_M_w": "M_w %",
        "best_accuracy": "best %",
        "best_M_c": "best M_c %",
        "best_M_w": "best M_w %",
    }
    shown = ["held_out", "compared", *list(judged)[:3], "best", *list(judged)[3:]]
    out = [
        f"grouped cross-validation: {which} held out in turn, trained on the others",
        formatting.text(table[[c for c in columns if c in table]], percent=percent),
        "",
        "verdicts: the learned LDA against the best of the LDAs compared on each held-out group, the trivial "
        "baselines among them (unaware: every loss congestion; all wireless: every loss wireless)",
        formatting.text(verdicts[[c for c in shown if c in verdicts]], percent=judged),
        *(f"held out {row.held_out}: {row.verdict}" for row in verdicts.itertuples()),
        "(Wilson intervals take losses as independent; losses come in bursts, so the true intervals are wider)",
        *(
            f"{spec}: not compared on a group holding one of the {count} of {traces} trace(s) it cannot run on: {why}"
            for spec, (count, why) in left_out.items()
        ),
    ]
    points = importance.pivot(index="feature", columns="held_out", values="importance") * 100
    out += [
        "\nfeature importance (mean drop of gap accuracy when shuffled, held-out gaps; percentage points):",
        points.map(lambda v: formatting.number(v, 2)).to_string(),
    ]
    return "\n".join(out) + "\n"
