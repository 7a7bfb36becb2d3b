"""Many traces at once: read, build the timeline, classify, and keep the trace's name.

The results stack into one decisions table and one per-flow summary, both with a ``trace``
column, ready for :func:`ldanalyze.scoring.score` (which scores per flow, per trace or pooled).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pandas as pd

from .io import read_trace
from .lda import Replay, classify
from .timeline import build_timeline


def classify_traces(
    paths: Iterable[str | os.PathLike],
    ldas="all",
    *,
    replay: Replay | None = None,
    seq_modulus: int | None = None,
    **read_options,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(decisions, summary) of every trace, each row labelled with its trace's path."""
    decisions, summaries = [], []
    for path in paths:
        name = os.fspath(path)
        timeline = build_timeline(read_trace(path, **read_options), seq_modulus=seq_modulus)
        decided = classify(timeline, ldas, replay=replay)
        decided.insert(0, "trace", name)
        decisions.append(decided)
        summaries.append(timeline.summary().assign(trace=name))
    return pd.concat(decisions, ignore_index=True), pd.concat(summaries, ignore_index=True)
