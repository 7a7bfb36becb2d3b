"""Many traces at once: read, build the timeline, classify, replay a controller, keep the name.

The results stack into one decisions table, one per-flow summary and (with a controller) one
per-flow modeled-throughput table, each with a ``trace`` column, ready for
:func:`ldanalyze.scoring.score` (which scores per flow, per trace or pooled).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable

import pandas as pd

from .control import PathModel, replay
from .errors import UsageError
from .io import read_trace
from .lda import Replay, classify
from .packets import Trace
from .timeline import build_timeline


@dataclasses.dataclass
class Batch:
    """``decisions`` (classify's table), ``summary`` (Timeline.summary rows) and ``throughput``
    (the controller replay's summary rows; None without a controller), all with ``trace``."""

    decisions: pd.DataFrame
    summary: pd.DataFrame
    throughput: pd.DataFrame | None


def analyze_traces(
    sources: Iterable[str | os.PathLike | Trace],
    ldas="all",
    *,
    controller=None,
    controller_optional: bool = False,
    replay_options: Replay | None = None,
    path_model: PathModel | None = None,
    seq_modulus: int | None = None,
    **read_options,
) -> Batch:
    """Classify every trace (a path to read with ``read_options``, or a Trace) with ``ldas`` and, given a ``controller`` spec, replay it fed each
    LDA's decisions (open loop; see ``docs/controllers.md``). With ``controller_optional``, a
    trace the controller cannot be replayed on (no RTT to be had, say) gets a warning and no
    throughput rows instead of an error."""
    decisions, summaries, throughputs = [], [], []
    for source in sources:
        trace = source if isinstance(source, Trace) else read_trace(source, **read_options)
        name = trace.path
        timeline = build_timeline(trace, seq_modulus=seq_modulus)
        decided = classify(timeline, ldas, replay=replay_options)
        decided.insert(0, "trace", name)
        decisions.append(decided)
        summaries.append(timeline.summary().assign(trace=name))
        if controller is not None:
            try:
                result = replay(timeline, [controller], ldas, replay=replay_options, path=path_model, rates=False)
            except UsageError as exc:
                if not controller_optional:
                    raise
                warnings.warn(f"{name}: no modeled throughput: {exc}", stacklevel=2)
                continue
            throughputs.append(result.summary.assign(trace=name))
    return Batch(
        decisions=pd.concat(decisions, ignore_index=True),
        summary=pd.concat(summaries, ignore_index=True),
        throughput=pd.concat(throughputs, ignore_index=True) if throughputs else None,
    )
