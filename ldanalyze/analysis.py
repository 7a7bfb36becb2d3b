"""Many traces at once, in this process: read, build the timeline, classify, replay a controller,
keep the name. ``analyze_traces`` stacks the results into one decisions table, one per-flow
summary and (with a controller) one per-flow modeled-throughput table, each with a ``trace``
column, ready for :func:`ldanalyze.scoring.score`; ``sweep`` and the command line use it.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .control import BASELINES, PathModel, replay
from .errors import UsageError, renamed_keyword
from .io import read_trace
from .lda import Replay, classify
from .packets import Trace, labels_dtype
from .timeline import build_timeline


@dataclasses.dataclass
class Analysed:
    """``decisions`` (classify's table), ``summary`` (Timeline.summary rows) and ``throughput``
    (the controller replay's summary rows; None without a controller), all with ``trace``;
    ``agreement``, the LDAs' agreement counts per trace and flow (``consensus.agreement_counts``)
    where the decisions were tallied away (None: the decisions give them)."""

    decisions: pd.DataFrame
    summary: pd.DataFrame
    throughput: pd.DataFrame | None
    agreement: pd.DataFrame | None = None


@renamed_keyword("replay_options", "semantics", since="0.5.0")
def analyze_traces(
    sources: Iterable[str | os.PathLike | Trace],
    ldas="all",
    *,
    controller=None,
    controller_optional: bool = False,
    semantics: Replay | None = None,
    path_model: PathModel | None = None,
    seq_modulus: int | None = None,
    **read_options,
) -> Analysed:
    """Classify every trace (a path to read with ``read_options``, or a Trace) with ``ldas`` and,
    given a ``controller`` spec, replay it fed each LDA's decisions (open loop; see
    ``docs/controllers.md``). With ``controller_optional``, a trace the controller cannot be
    replayed on (no RTT to be had, say) gets a warning and no throughput rows instead of an
    error."""
    parts = [
        analyze(
            source if isinstance(source, Trace) else read_trace(source, **read_options),
            ldas,
            controller=controller,
            controller_optional=controller_optional,
            semantics=semantics,
            path_model=path_model,
            seq_modulus=seq_modulus,
        )
        for source in sources
    ]
    return stack(parts)


def analyze(
    trace: Trace,
    ldas,
    *,
    controller,
    controller_optional,
    semantics,
    path_model,
    seq_modulus,
    name: str | None = None,
    other_views: bool = False,
) -> Analysed:
    """One trace read, classified, replayed and summarised; ``other_views``: an LDA named that
    is defined on no view of the trace's flows is left out (a batch over receivers' and
    senders' traces), not refused."""
    name = trace.path if name is None else name
    timeline = build_timeline(trace, seq_modulus=seq_modulus)
    decided = classify(timeline, ldas, semantics=semantics, other_views=other_views)
    decided.insert(0, "trace", one_label(name, len(decided)))
    throughput = None
    if controller is not None:
        try:
            result = replay(
                timeline,
                [controller],
                ldas,
                semantics=semantics,
                path=path_model,
                rates=False,
                decisions=with_baselines(timeline, decided, semantics),
            )
            throughput = result.summary.assign(trace=name)
        except UsageError as exc:
            if not controller_optional:
                raise
            warnings.warn(f"{name}: no modeled throughput: {exc}", stacklevel=3)
    return Analysed(decisions=decided, summary=timeline.summary().assign(trace=name), throughput=throughput)


def with_baselines(timeline, decided: pd.DataFrame, semantics: Replay | None) -> pd.DataFrame:
    """The LDA and decision of ``decided``'s rows, and of the baselines' that the controller
    replay needs for its ratios and ``decided`` lacks: the LDAs asked for are not classified
    a second time."""
    missing = [spec for spec in BASELINES if spec not in decided["lda"].cat.categories]
    if not missing:
        return decided
    columns = ["lda", "decision"]
    return pd.concat([decided[columns], classify(timeline, missing, semantics=semantics)[columns]], ignore_index=True)


def one_label(name: str, rows: int) -> pd.Categorical:
    """A trace's name on each of its decisions, as a categorical: a worker sends a code a row
    back to the batch, not the name (a fifth of the bytes a pool moves, and of its unpickling)."""
    return pd.Categorical.from_codes(np.zeros(rows, np.int8), dtype=labels_dtype([name]))


def stack(parts: Sequence[Analysed]) -> Analysed:
    throughputs = [p.throughput for p in parts if p.throughput is not None]
    agreements = [p.agreement for p in parts if p.agreement is not None]
    if len(agreements) not in (0, len(parts)):
        raise UsageError("stack: some results have agreement counts and some do not")
    return Analysed(
        decisions=_concat([p.decisions for p in parts]),
        summary=_concat([p.summary for p in parts]),
        throughput=_concat(throughputs) if throughputs else None,
        agreement=_concat(agreements) if agreements else None,
    )


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Frames stacked, keeping a column that is categorical in every frame categorical: the
    union of their categories in order of first appearance (``_union_categoricals``).
    ``pd.concat`` turns categoricals whose categories differ (each trace's name and flows,
    LDAs left out on some traces) into text, and scoring a thousand traces then spent seconds
    comparing strings."""
    names = list(frames[0].columns)
    if any(list(frame.columns) != names for frame in frames[1:]):
        return pd.concat(frames, ignore_index=True)
    # dtypes compared, never hashed (a categorical dtype hashes its categories); column by
    # column, as selecting the columns of each frame took longer than all else
    dtypes = [frame.dtypes.tolist() for frame in frames]
    columns = {}
    for i, name in enumerate(names):
        kinds = [d[i] for d in dtypes]
        if all(isinstance(kind, pd.CategoricalDtype) for kind in kinds):
            columns[name] = _union_categoricals([frame[name].array for frame in frames])
        elif isinstance(kinds[0], np.dtype) and all(kind == kinds[0] for kind in kinds):
            columns[name] = np.concatenate([frame[name].to_numpy() for frame in frames])
        else:
            columns[name] = pd.concat([frame[name] for frame in frames], ignore_index=True)
    return pd.DataFrame(columns, copy=False)  # the stacked arrays are new: not copied again into blocks


def _union_categoricals(pieces: list[pd.Categorical]) -> pd.Categorical:
    """The pieces end to end as one Categorical over every label they have, in order of first
    appearance, recoded through a table per piece (pandas' ``union_categoricals`` made an
    Index of each piece: seconds over a thousand traces)."""
    first = pieces[0].dtype
    if all(piece.categories.equals(first.categories) for piece in pieces[1:]):  # in the same order: the
        # dtypes of unordered categoricals are equal whatever the order of their categories
        return pd.Categorical.from_codes(np.concatenate([piece.codes for piece in pieces]), dtype=first, validate=False)
    number: dict = {}
    codes = []
    for piece in pieces:
        table = np.array(
            [number.setdefault(label, len(number)) for label in piece.categories.tolist()] + [-1], np.int64
        )
        codes.append(table[piece.codes])  # code -1 (no label) stays -1
    return pd.Categorical.from_codes(np.concatenate(codes), dtype=pd.CategoricalDtype(list(number)), validate=False)
