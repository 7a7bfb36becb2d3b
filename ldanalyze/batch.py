"""Many traces at once: read, build the timeline, classify, replay a controller, keep the name.

``analyze_traces`` runs in this process and stacks the results into one decisions table, one
per-flow summary and (with a controller) one per-flow modeled-throughput table, each with a
``trace`` column, ready for :func:`ldanalyze.scoring.score`.

``execute`` is the same work for a batch job (``ldanalyze batch``; ``score_suite`` from Python): one :class:`Job` per
trace, each run on its own (in this process, a process pool, or a Dask cluster), a trace that
fails reported with its error instead of stopping the others, parsed traces cached by content,
and the results scored per flow, per trace and pooled. Results do not depend on how the jobs
were run: they are combined in job order.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import glob
import hashlib
import json
import multiprocessing
import os
import pathlib
import signal
import time
import warnings
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from . import threads
from .control import BASELINES, PathModel, Signals, parse_controllers, replay
from .errors import TraceError, UsageError
from .io import read_trace
from .io.capture.vantage import read_vantages
from .io.detect import detect_format
from .io.labels import apply_labels
from .lda import Replay, classify, optional_specs, parse_ldas, runnable_ldas
from .output import atomic_write, json_default
from .packets import Trace, labels_dtype
from .scoring import SUMMARY_REQUIRED, THROUGHPUT_REQUIRED, score, tally
from .timeline import Timeline, build_timeline
from .version import VERSION

CACHE_VERSION = 7
FLOW_AT_A_TIME_ABOVE = 1 << 30  # bytes: a larger capture is read one flow at a time (Analysis)


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
    """Classify every trace (a path to read with ``read_options``, or a Trace) with ``ldas`` and,
    given a ``controller`` spec, replay it fed each LDA's decisions (open loop; see
    ``docs/controllers.md``). With ``controller_optional``, a trace the controller cannot be
    replayed on (no RTT to be had, say) gets a warning and no throughput rows instead of an
    error."""
    parts = [
        _analyze(
            source if isinstance(source, Trace) else read_trace(source, **read_options),
            ldas,
            controller=controller,
            controller_optional=controller_optional,
            replay_options=replay_options,
            path_model=path_model,
            seq_modulus=seq_modulus,
        )
        for source in sources
    ]
    return _stack(parts)


def _analyze(
    trace: Trace,
    ldas,
    *,
    controller,
    controller_optional,
    replay_options,
    path_model,
    seq_modulus,
    name: str | None = None,
) -> Batch:
    name = trace.path if name is None else name
    timeline = build_timeline(trace, seq_modulus=seq_modulus)
    decided = classify(timeline, ldas, replay=replay_options)
    decided.insert(0, "trace", _one_label(name, len(decided)))
    throughput = None
    if controller is not None:
        try:
            result = replay(
                timeline,
                [controller],
                ldas,
                replay=replay_options,
                path=path_model,
                rates=False,
                decisions=_with_baselines(timeline, decided, replay_options),
            )
            throughput = result.summary.assign(trace=name)
        except UsageError as exc:
            if not controller_optional:
                raise
            warnings.warn(f"{name}: no modeled throughput: {exc}", stacklevel=3)
    return Batch(decisions=decided, summary=timeline.summary().assign(trace=name), throughput=throughput)


def _with_baselines(timeline, decided: pd.DataFrame, replay_options: Replay | None) -> pd.DataFrame:
    """The LDA and decision of ``decided``'s rows, and of the baselines' that the controller
    replay needs for its ratios and ``decided`` lacks: the LDAs asked for are not classified
    a second time."""
    missing = [spec for spec in BASELINES if spec not in decided["lda"].cat.categories]
    if not missing:
        return decided
    columns = ["lda", "decision"]
    return pd.concat([decided[columns], classify(timeline, missing, replay=replay_options)[columns]], ignore_index=True)


def _one_label(name: str, rows: int) -> pd.Categorical:
    """A trace's name on each of its decisions, as a categorical: a worker sends a code a row
    back to the batch, not the name (a fifth of the bytes a pool moves, and of its unpickling)."""
    return pd.Categorical.from_codes(np.zeros(rows, np.int8), dtype=labels_dtype([name]))


def _stack(parts: Sequence[Batch]) -> Batch:
    throughputs = [p.throughput for p in parts if p.throughput is not None]
    return Batch(
        decisions=_concat([p.decisions for p in parts]),
        summary=_concat([p.summary for p in parts]),
        throughput=_concat(throughputs) if throughputs else None,
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


# --- batch jobs ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Job:
    """One trace of a batch: a file, or a chain of captures (``vantage``), with a labels file
    to join and the reader's options (sorted ``(name, value)`` pairs)."""

    name: str
    path: str | None = None
    vantage: tuple[str, ...] = ()
    labels: str | None = None
    read_options: tuple[tuple[str, object], ...] = ()

    @property
    def files(self) -> list[str]:
        from .io.capture.vantage import parse_vantage

        return ([self.path] if self.path else []) + [parse_vantage(v).path for v in self.vantage]


@dataclasses.dataclass(frozen=True)
class Analysis:
    """What every job of a batch computes (picklable: it travels to the workers). Unknown LDAs
    or controllers, or bad parameters, are refused here, before any trace is read."""

    ldas: str = "all"
    controller: str | None = None
    replay: Replay = dataclasses.field(default_factory=Replay)
    seq_modulus: int | None = None
    cache_dir: str | None = None
    flow_at_a_time_above: int | None = FLOW_AT_A_TIME_ABOVE
    keep: str = "decisions"  # what each job's result keeps: one of KEEP

    def __post_init__(self) -> None:
        parse_ldas(self.ldas)
        if self.controller is not None:
            parse_controllers(self.controller)
        if self.keep not in KEEP:
            raise UsageError(f"keep must be one of {', '.join(KEEP)}, not {self.keep!r}")


# What a job's result keeps (``_kept``): every row of its tables; or what the results table reads,
# the decisions tallied per burst (``scoring.tally``: the burst bootstrap needs them) or per flow,
# LDA, cause and decision (every other score). The command keeps a tally, so that its parent, or
# a Dask client, holds a few rows per flow and LDA instead of one per loss.
KEEP = ("decisions", "bursts", "counts")


@dataclasses.dataclass
class Outcome:
    """What one job gave: its tables (None on error), the error, packets read, seconds taken
    and whether the parsed trace came from the cache."""

    job: Job
    result: Batch | None
    error: str | None
    packets: int
    seconds: float
    cached: bool


TRACE_NAMES = (".tr", ".pcap", ".pcapng", ".cap")  # and these gzipped: a file named as a trace


def discover(paths: Sequence[str], exclude: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """Every trace under ``paths`` (files, directories walked recursively, globs), in a stable
    order, decided by content; and the files passed over, each with why (excluded, or no
    supported format). A file named as a trace (``TRACE_NAMES``) whose content fits no format
    is kept, to fail as a broken trace when read: a damaged trace must not leave a suite
    unnoticed, which would change its pooled scores."""
    found: list[str] = []
    for given in paths:
        matches = sorted(glob.glob(given, recursive=True)) if glob.has_magic(given) else [given]
        if not matches:
            raise UsageError(f"{given}: no such file, directory or match")
        for match in matches:
            if os.path.isdir(match):
                found += sorted(str(p) for p in pathlib.Path(match).rglob("*") if p.is_file())
            elif os.path.exists(match):
                found.append(match)
            else:
                raise UsageError(f"{match}: no such file or directory")
    traces, passed = [], {}
    for path in dict.fromkeys(found):
        pattern = next(
            (
                pattern
                for pattern in exclude
                if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern)
            ),
            None,
        )
        if pattern is not None:
            passed[path] = f"excluded by {pattern}"
            continue
        try:
            detect_format(path)
        except TraceError:
            if not _named_as_trace(path):
                passed[path] = "empty" if os.path.getsize(path) == 0 else "no known trace format"
                continue
        traces.append(path)
    return traces, passed


def _named_as_trace(path: str) -> bool:
    name = path.lower().removesuffix(".gz")
    return name.endswith(TRACE_NAMES)


def run_job(job: Job, analysis: Analysis) -> Outcome:
    """Read (or take from the cache), analyse; any failure becomes the outcome's error."""
    start = time.perf_counter()
    cached = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if _flow_at_a_time(job, analysis):
                result, packets, cached = _analyze_flows(job, analysis)
            elif analysis.cache_dir is None:
                trace = _labelled(_read_fresh(job, dict(job.read_options)), job)
                result = _analyze(
                    trace,
                    analysis.ldas,
                    controller=analysis.controller,
                    controller_optional=True,
                    replay_options=analysis.replay,
                    path_model=None,
                    seq_modulus=analysis.seq_modulus,
                    name=job.name,
                )
                packets = len(trace.packets)
            else:
                result, packets, cached = _analyze_cached(job, analysis)
        return Outcome(job, _kept(result, analysis.keep), None, packets, time.perf_counter() - start, cached)
    except Exception as exc:  # noqa: BLE001 - a batch reports what broke one trace and goes on
        message = str(exc) if isinstance(exc, (TraceError, UsageError)) else f"{type(exc).__name__}: {exc}"
        return Outcome(job, None, message, 0, time.perf_counter() - start, cached)


def _kept(result: Batch, keep: str) -> Batch:
    """What a job's result keeps (``KEEP``): everything, or what the results table reads, its
    decisions tallied and the columns of its summary and throughput that scoring reads."""
    if keep == "decisions":
        return result

    def read(table: pd.DataFrame | None, columns: tuple[str, ...]) -> pd.DataFrame | None:
        return None if table is None else table[[c for c in ("trace", *columns) if c in table.columns]]

    return Batch(
        decisions=tally(result.decisions, bursts=keep == "bursts"),
        summary=read(result.summary, SUMMARY_REQUIRED),
        throughput=read(result.throughput, THROUGHPUT_REQUIRED),
    )


def _run_in_worker(job: Job, analysis: Analysis) -> Outcome:
    """:func:`run_job` in a worker of a pool or a Dask cluster, on one thread: the other
    workers keep the other cores busy (:mod:`ldanalyze.threads`). A Dask worker that is a
    thread of the caller's own process is left its threads: they are the caller's too."""
    if multiprocessing.parent_process() is not None:
        threads.one_per_worker()
    return run_job(job, analysis)


def _flow_at_a_time(job: Job, analysis: Analysis) -> bool:
    """Whether the job is a capture to read one flow at a time: one pcap or pcapng file larger
    than ``analysis.flow_at_a_time_above`` bytes, read with no option that picks flows or
    streams (those read the capture whole)."""
    from .io.capture.pcap import capture_format

    limit = analysis.flow_at_a_time_above
    if limit is None or job.vantage or not job.path or set(dict(job.read_options)) - SPLIT_OPTIONS:
        return False
    try:
        return os.path.getsize(job.path) > limit and capture_format(job.path) is not None
    except OSError:
        return False  # the reader says what is wrong with the file


SPLIT_OPTIONS = {"payload", "clock_rate", "skew", "skew_limit_ppm", "capture_host", "vantage"}


def _analyze_flows(job: Job, analysis: Analysis) -> tuple[Batch, int, bool]:
    """A big capture analysed one flow at a time (``io.capture.split``: memory holds one flow),
    its flows' tables stacked under the job's name: the whole read's results. With a cache,
    each flow has an entry of its own under the capture's (``flows/K``: its parsed trace, and
    its timeline and results as a whole trace's), and a listing of them once all are in: a
    re-run reads no capture, and a changed labels file or sequence modulus rebuilds the
    flows' timelines from their parsed traces."""
    from .io.capture.split import read_capture_flows
    from .io.labels import read_labels

    labels = read_labels(job.labels) if job.labels else None

    def labelled(trace: Trace) -> Trace:
        if labels is None:
            return trace
        return apply_labels(trace, labels[labels["flow"].isin(trace.flows)])

    folder = _entry(job, analysis) / "flows" if analysis.cache_dir is not None else None
    listing = folder / "flows.json" if folder is not None else None
    known = json.loads(listing.read_text()) if listing is not None and listing.exists() else None
    if known is not None and all((folder / name / "meta.json").exists() for name in known["entries"]):
        results = [
            _analyze_cached(
                job,
                analysis,
                entry=folder / name,
                read=lambda sub=folder / name: (labelled(_load_entry(sub, job.path)), True),
            )
            for name in known["entries"]
        ]
        parts, packets, cached, seen = [r[0] for r in results], sum(r[1] for r in results), True, set(known["flows"])
    else:
        parts, packets, cached, seen, names = [], 0, False, set(), []
        for k, trace in enumerate(read_capture_flows(job.path, **dict(job.read_options))):
            seen |= set(trace.flows)
            packets += len(trace.packets)
            if folder is None:
                parts.append(
                    _analyze(
                        labelled(trace),
                        analysis.ldas,
                        controller=analysis.controller,
                        controller_optional=True,
                        replay_options=analysis.replay,
                        path_model=None,
                        seq_modulus=analysis.seq_modulus,
                        name=job.name,
                    )
                )
                continue
            names.append(str(k))
            _store(folder / str(k), trace)
            parts.append(
                _analyze_cached(job, analysis, entry=folder / str(k), read=lambda t=trace: (labelled(t), False))[0]
            )
        if listing is not None and parts:
            text = json.dumps({"entries": names, "flows": sorted(seen)})
            atomic_write(listing, lambda tmp: tmp.write_text(text))  # last: the flows are all in
    if labels is not None and not set(labels["flow"]) <= seen:
        missing = sorted(set(labels["flow"]) - seen)
        raise TraceError(job.labels, f"labels name flow(s) {job.path} does not have: {', '.join(missing[:5])}")
    return _stack(parts), packets, cached


def _labelled(trace: Trace, job: Job) -> Trace:
    return apply_labels(trace, job.labels) if job.labels else trace


def _analyze_cached(
    job: Job,
    analysis: Analysis,
    *,
    entry: pathlib.Path | None = None,
    read: Callable[[], tuple[Trace, bool]] | None = None,
) -> tuple[Batch, int, bool]:
    """The analysis with every piece kept in the cache, under the parsed trace's entry (by
    content and read options): the timeline (by labels and sequence modulus, Arrow files), and
    under it the flow summary, the LDAs' decisions and the replay rows (by replay semantics and
    controller), one file each that grows by the LDAs a run adds. A re-run computes only the
    LDAs it has not seen, from the cached timeline (the baselines' replay rows give the ratios),
    and reads no trace when it has seen them all. ``entry`` and ``read`` (the labelled trace,
    and whether it came from the cache) stand for the job's own when the trace is one flow of
    a capture read flow by flow."""
    from .lda import parse_ldas

    entry = entry or _entry(job, analysis)
    read = read or (lambda: _labelled_read(job, entry))
    built = hashlib.blake2b(digest_size=12)
    built.update(repr(analysis.seq_modulus).encode())
    if job.labels:
        built.update(pathlib.Path(job.labels).read_bytes())
    timeline_dir = entry / "timelines" / built.hexdigest()
    results = (
        timeline_dir
        / hashlib.blake2b(repr((analysis.replay, analysis.controller)).encode(), digest_size=12).hexdigest()
    )
    specs = [lda.spec for lda in parse_ldas(analysis.ldas)]
    left_out = (
        set(json.loads((results / "left_out.json").read_text())) if (results / "left_out.json").exists() else set()
    )
    optional = optional_specs(analysis.ldas)  # what "all" brought in; one named on its own is never left out
    wanted = [spec for spec in specs if spec not in left_out or spec not in optional]
    decisions = _read_pieces(results, "decisions")  # Arrow tables, one per run that added LDAs
    rows = _read_pieces(results, "replay") if analysis.controller else None
    done = _specs_in(decisions)
    if rows is not None:
        done &= _specs_in(rows) | set(
            json.loads((results / "no_replay.json").read_text()) if (results / "no_replay.json").exists() else []
        )
    missing = [spec for spec in wanted if spec not in done]
    cached = True
    if missing or not (results / "summary.arrow").exists():
        timeline, cached = _timeline(analysis, timeline_dir, read)
        results.mkdir(parents=True, exist_ok=True)
        if not (results / "summary.arrow").exists():
            _write_piece(timeline.summary(), results / "summary.arrow")
        runnable = [lda.spec for lda in runnable_ldas(timeline, missing, optional=optional)] if missing else []
        newly_left = set(missing) - set(runnable)
        if newly_left:
            left_out |= newly_left
            atomic_write(results / "left_out.json", lambda tmp: tmp.write_text(json.dumps(sorted(left_out))))
            wanted = [spec for spec in wanted if spec not in newly_left]
        if runnable:
            decided = classify(timeline, runnable, replay=analysis.replay)
            decisions.append(_write_piece(decided, results / f"decisions-{_part_name(runnable)}.arrow", ldas=runnable))
            if analysis.controller:
                rows = _replay_rows(timeline, analysis, runnable, rows, results, decided)
    summary = _read_table(results / "summary.arrow")
    flows = summary["flow"].astype(str).tolist()
    decisions = _in_order(_stacked(decisions), wanted, flows=flows)
    decisions.insert(0, "trace", _one_label(job.name, len(decisions)))
    throughput = None
    if rows:
        rows = _in_order(_stacked(rows), wanted)
        throughput = rows.assign(trace=job.name) if len(rows) else None
    packets = int(summary["sent"].sum())  # the trace's packet rows, whichever pieces were read
    return Batch(decisions=decisions, summary=summary.assign(trace=job.name), throughput=throughput), packets, cached


def _in_order(table: pd.DataFrame, ldas: list[str], flows: list[str] | None = None) -> pd.DataFrame:
    """The rows of ``ldas``, in their order, with ``lda`` (and ``flow``) categoricals over
    exactly these values: the cached pieces' own dictionaries recoded, not their strings
    factorized again."""
    if "lda" not in table:  # no LDA could run on this trace
        table = pd.DataFrame({"lda": pd.Series(dtype=str), "flow": pd.Series(dtype=str)})
    lda = pd.Categorical(table["lda"], dtype=labels_dtype(ldas))
    if (np.diff(lda.codes) >= 0).all() and (lda.codes >= 0).all():  # the usual case: as cached
        out = table.copy(deep=False)
        out["lda"] = lda
    else:
        keep = np.flatnonzero(lda.codes >= 0)
        keep = keep[np.argsort(lda.codes[keep], kind="stable")]
        out = table.take(keep).reset_index(drop=True)
        out["lda"] = lda.take(keep)
    if flows is not None:
        out["flow"] = pd.Categorical(out["flow"], dtype=labels_dtype(flows))
    return out


def _replay_rows(
    timeline, analysis: Analysis, runnable: list[str], rows: list, results: pathlib.Path, decided: pd.DataFrame
) -> list:
    """The cached replay pieces (Arrow tables) with the one of ``runnable`` added (the
    baselines' cached rows give the ratios; ``decided`` holds the LDAs' decisions); a trace the
    controller cannot be replayed on is remembered as such."""
    have_baselines = set(BASELINES) <= _specs_in(rows)
    try:
        signals = _signals(timeline, analysis.replay, results)
        new = replay(
            timeline,
            [analysis.controller],
            runnable,
            replay=analysis.replay,
            rates=False,
            reference=_reference_rows(rows) if have_baselines else None,
            decisions=decided if have_baselines else _with_baselines(timeline, decided, analysis.replay),
            signals=signals,
        ).summary
    except UsageError:
        skipped = results / "no_replay.json"
        before = json.loads(skipped.read_text()) if skipped.exists() else []
        atomic_write(skipped, lambda tmp: tmp.write_text(json.dumps(sorted(set(before) | set(runnable)))))
        return rows
    return [*rows, _write_piece(new, results / f"replay-{_part_name(runnable)}.arrow", ldas=runnable)]


def _reference_rows(tables: list) -> dict[str, list]:
    """The columns of the cached replay pieces that ``replay``'s ratios read (its
    ``reference``), as lists: making a DataFrame of the whole rows was a fifth of a re-run's
    replay."""
    import pyarrow as pa

    stacked = pa.concat_tables(tables, promote_options="permissive")
    return {name: stacked[name].to_pylist() for name in ("lda", "controller", "flow", "thput")}


def _signals(timeline, replay_options: Replay, folder: pathlib.Path):
    """The controllers' inputs (they do not depend on the LDA): from the cache, or computed
    and stored. A trace they cannot be had for (no RTT, say) has its UsageError stored and
    raised again, without the timeline being read."""
    file, refused = folder / "signals.bin", folder / "no_signals.txt"
    if file.exists():
        return Signals.load(file, timeline, replay_options, PathModel())
    if refused.exists():
        raise UsageError(refused.read_text())
    try:
        signals = Signals.of(timeline, replay_options, PathModel())
    except UsageError as exc:
        why = str(exc)
        atomic_write(refused, lambda tmp: tmp.write_text(why))
        raise
    atomic_write(file, signals.save)
    return signals


def _timeline(analysis: Analysis, folder: pathlib.Path, read: Callable[[], tuple[Trace, bool]]):
    """(timeline, whether it came from the cache): the cached timeline's Arrow files, each read
    when first used, or one built from the trace ``read`` gives (labelled; parsed from the cache
    or afresh) and stored."""
    if (folder / "meta.json").exists():
        stored = json.loads((folder / "meta.json").read_text())
        return Timeline.read_lazily(lambda name: _read_table(folder / f"{name}.arrow"), **stored), True
    trace, from_cache = read()
    timeline = build_timeline(trace, seq_modulus=analysis.seq_modulus)
    folder.mkdir(parents=True, exist_ok=True)
    for name in Timeline.TABLES:
        _write_piece(getattr(timeline, name), folder / f"{name}.arrow")
    stored = {
        "flows": timeline.flows,
        "meta": {k: v for k, v in timeline.meta.items() if isinstance(v, (str, int, float, bool))},
    }
    atomic_write(folder / "meta.json", lambda tmp: tmp.write_text(json.dumps(stored)))  # last: the entry is whole
    return timeline, from_cache


def _specs_in(tables: list) -> set[str]:
    """The LDAs that cached pieces (Arrow tables) were computed for: those they hold rows of,
    and those their metadata names (a trace without losses has no rows; it was classified
    anew at every re-run before)."""
    named = {spec for table in tables for spec in json.loads((table.schema.metadata or {}).get(b"ldas", b"[]"))}
    return named | {spec for table in tables for spec in table["lda"].unique().to_pylist()}


def _part_name(specs: list[str]) -> str:
    """The file name part of the rows one run added for these LDAs."""
    return hashlib.blake2b(json.dumps(specs).encode(), digest_size=10).hexdigest()


def _read_pieces(folder: pathlib.Path, kind: str) -> list:
    """The rows of one kind that the runs so far added: one Arrow table per run that added LDAs
    (its label columns dictionaries), concatenated only once a run has added its own."""
    return [_arrow(path) for path in sorted(folder.glob(f"{kind}-*.arrow"))]


def _stacked(tables: list) -> pd.DataFrame:
    """Cached pieces as one DataFrame (the dictionaries unified into categoricals); an empty
    frame when there are none."""
    import pyarrow as pa

    return _as_frame(pa.concat_tables(tables, promote_options="permissive")) if tables else pd.DataFrame()


def _read_table(path: pathlib.Path) -> pd.DataFrame:
    """A cache file as a DataFrame."""
    return _as_frame(_arrow(path))


WHOLE_FILE_BYTES = 8 << 20  # a cache file up to this size is read or written whole, in memory


def _arrow(path: pathlib.Path):
    """A cache file's Arrow table. A small file's bytes are read at once and opened as an IPC
    file in memory (the arrays are views of them): opening it through ``pa.OSFile`` took three
    times as long on a trace's small tables (124 against 39 us), ``feather.read_table`` longer
    still. A large one (a big flow's) is memory-mapped: its arrays are the file's pages, which
    the system can drop under pressure, not copies."""
    import pyarrow as pa

    path = pathlib.Path(path)
    if path.stat().st_size <= WHOLE_FILE_BYTES:
        return pa.ipc.open_file(pa.py_buffer(path.read_bytes())).read_all()
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def _as_frame(table) -> pd.DataFrame:
    """An Arrow table of the cache as a DataFrame, without pandas' metadata (every cache file
    is written with a plain RangeIndex): numbers as NumPy arrays, dictionaries as categoricals
    over a dtype made once per set of labels (validating a new dtype's categories was a
    sixth of a re-run), the rest by pyarrow. A quarter faster than ``Table.to_pandas``."""
    import pyarrow as pa

    columns = {}
    for name, column in zip(table.column_names, table.columns):
        kind = column.type
        if pa.types.is_dictionary(kind) and column.num_chunks:
            column = column.combine_chunks()  # one dictionary, the chunks' unified
            codes = column.indices.fill_null(-1) if column.null_count else column.indices
            columns[name] = pd.Categorical.from_codes(
                codes.to_numpy(zero_copy_only=False), dtype=labels_dtype(column.dictionary.to_pylist()), validate=False
            )
        elif (pa.types.is_integer(kind) or pa.types.is_floating(kind)) and not column.null_count:
            columns[name] = column.to_numpy()
        else:
            columns[name] = column.to_pandas()
    return pd.DataFrame(columns, copy=False)


def _write_piece(table: pd.DataFrame, path: pathlib.Path, *, ldas: list[str] | None = None):
    """Write a cache file (Arrow IPC, uncompressed: twice the bytes of LZ4 and half the time
    to read); the Arrow table written. Column by column, without pandas' metadata, which
    ``_as_frame`` ignores: ``Table.from_pandas`` took up to four times as long on a trace's
    tables. A small file is made in memory and written at once, as ``_arrow`` reads it (a third
    faster than writing through ``pa.OSFile``); a large one is written through it, not held
    twice in memory."""
    import pyarrow as pa

    arrow = pa.table(
        {str(name): pa.Array.from_pandas(column) for name, column in table.items()},
        metadata=None if ldas is None else {"ldas": json.dumps(ldas)},
    )  # what it was computed for

    def write(sink) -> None:
        with pa.ipc.new_file(sink, arrow.schema) as writer:
            writer.write_table(arrow)

    if arrow.nbytes <= WHOLE_FILE_BYTES:
        buffer = pa.BufferOutputStream()
        write(buffer)
        atomic_write(path, lambda tmp: tmp.write_bytes(buffer.getvalue()))
    else:

        def streamed(tmp: pathlib.Path) -> None:
            with pa.OSFile(str(tmp), "wb") as sink:
                write(sink)

        atomic_write(path, streamed)
    return arrow


def _entry(job: Job, analysis: Analysis) -> pathlib.Path:
    """The job's cache entry: its folder under the cache, by content and read options."""
    key = cache_key(job, analysis.cache_dir)
    return pathlib.Path(analysis.cache_dir) / key[:2] / key


def _labelled_read(job: Job, entry: pathlib.Path) -> tuple[Trace, bool]:
    """The job's parsed trace from its cache entry, or read and stored there, with its labels."""
    trace = _load_entry(entry, job.path)
    if trace is None:
        trace = _read_fresh(job, dict(job.read_options))
        _store(entry, trace)
        return _labelled(trace, job), False
    return _labelled(trace, job), True


def _load_entry(entry: pathlib.Path, path: str | None) -> Trace | None:
    """The parsed trace a cache entry holds (None when it holds none), named ``path`` (another
    file with the same bytes may have stored it)."""
    if not (entry / "meta.json").exists():
        return None
    meta = json.loads((entry / "meta.json").read_text())
    stored = meta.pop("path")
    return Trace(
        packets=_read_table(entry / "packets.arrow"),
        rtt=_read_table(entry / "rtt.arrow"),
        path=path or stored,
        format=meta.pop("format"),
        meta=meta,
    )


def _read_fresh(job: Job, options: dict) -> Trace:
    if job.vantage:
        return read_vantages(list(job.vantage), **options)
    return read_trace(job.path, **options)


def cache_key(job: Job, cache_dir: str | None = None) -> str:
    """A digest of every input file's bytes, the read options and the cache's layout version:
    a changed file, option or ldanalyze cache layout never meets an old entry. With
    ``cache_dir``, the files' digests are remembered there (:func:`file_digest`)."""

    digest = hashlib.blake2b(digest_size=20)
    digest.update(json.dumps([CACHE_VERSION, VERSION, list(job.vantage) and "chain", repr(job.read_options)]).encode())
    for path in job.files:
        digest.update(file_digest(path, cache_dir).encode())
    return digest.hexdigest()


RECENT_NS = 2_000_000_000  # a file whose status changed this recently is hashed every time


def file_digest(path: str, cache_dir: str | None = None) -> str:
    """The digest of a file's bytes. With ``cache_dir`` it is remembered there under the file's
    status (device, inode, size, modification and change times in ns) and reused while the
    status is the same: any write changes the change time, which no user can set back. A file
    changed in the last 2 s is hashed each time and not remembered, since two writes within
    one tick of the file system's clock would leave the same times."""
    stamp = _stamp(path)
    memo = None
    if cache_dir is not None:
        name = hashlib.blake2b(os.path.abspath(path).encode(), digest_size=12).hexdigest()
        memo = pathlib.Path(cache_dir) / "digests" / name
        try:
            saved = json.loads(memo.read_text())
            if saved["stat"] == stamp:
                return saved["digest"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    digest = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    if memo is not None and _stamp(path) == stamp and time.time_ns() - stamp[-1] > RECENT_NS:
        memo.parent.mkdir(parents=True, exist_ok=True)
        saved = json.dumps({"path": os.path.abspath(path), "stat": stamp, "digest": value})
        atomic_write(memo, lambda tmp: tmp.write_text(saved))
    return value


def _stamp(path: str) -> list[int]:
    """A file's device, inode, size, modification and change times (ns), change time last."""
    status = os.stat(path)
    return [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]


def _store(entry: pathlib.Path, trace: Trace) -> None:
    """Write a cache entry atomically (a temporary folder renamed into place)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
    tmp.mkdir(exist_ok=True)
    _write_piece(trace.packets, tmp / "packets.arrow")  # Arrow IPC, as all the cache: 4x faster than Parquet
    _write_piece(trace.rtt, tmp / "rtt.arrow")
    meta = {"path": trace.path, "format": trace.format, **trace.meta}
    (tmp / "meta.json").write_text(json.dumps(meta, default=json_default))
    try:
        os.replace(tmp, entry)
    except OSError:  # another worker stored the same entry first
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


def execute(
    jobs: Sequence[Job],
    analysis: Analysis,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    strict: bool = False,
) -> list[Outcome]:
    """Run the jobs (serially, on ``workers`` processes, or on the Dask cluster at
    ``scheduler``) and return their outcomes in job order. ``on_outcome`` sees each as it
    finishes; ``strict`` stops at the first error (raising a TraceError naming the trace).
    Ctrl-C returns what had finished, in job order."""
    done: dict[int, Outcome] = {}

    def take(index: int, outcome: Outcome) -> None:
        done[index] = outcome
        if on_outcome is not None:
            on_outcome(outcome)
        if strict and outcome.error is not None:
            raise TraceError(outcome.job.name, outcome.error)

    try:
        if scheduler is not None:
            _on_dask(jobs, analysis, scheduler, take)
        elif workers > 1 and len(jobs) > 1:
            _on_pool(jobs, analysis, workers, take)
        else:
            for index, job in enumerate(jobs):
                take(index, run_job(job, analysis))
    except KeyboardInterrupt:
        pass
    return [done[i] for i in sorted(done)]


JOB_BYTES = 4 << 20  # a job's own fixed work, in bytes of trace: about 25 ms, as 4 MB of ns-2 text


def largest_first(jobs: Sequence[Job]) -> list[int]:
    """Job indices by decreasing work, estimated as the bytes a job reads (a gzip file's by its
    trailer: its compressed size understated the bundled traces' work tenfold) plus a fixed
    ``JOB_BYTES`` a job: handing the longest jobs out first keeps a pool from waiting on one
    big trace at the end (longest-processing-time scheduling)."""
    work = [len(job.files) * JOB_BYTES + sum(_bytes_read(path) for path in job.files) for job in jobs]
    return sorted(range(len(jobs)), key=lambda i: -work[i])


def _bytes_read(path: str) -> int:
    """A file's size, uncompressed for gzip (the trailer's size modulo 4 GiB, at least the
    file's); 0 when it cannot be read (the job itself reports that)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            if size < 18 or f.read(2) != b"\x1f\x8b":
                return size
            f.seek(-4, os.SEEK_END)
            return max(size, int.from_bytes(f.read(4), "little"))
    except OSError:
        return 0


def _on_pool(jobs, analysis, workers, take) -> None:
    """The jobs on a pool of ``workers`` processes. A worker that dies (the kernel's
    out-of-memory killer, a crash) breaks the whole pool and fails every job not yet finished;
    those that had not started go to a new pool, and those that had are each run again alone
    (:func:`_alone`), which names the trace that kills its process and scores the others."""
    import gc
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    started = multiprocessing.Array("b", len(jobs), lock=False)  # shared memory: a worker marks the jobs it starts
    gc.freeze()  # the forked workers' collections leave the inherited objects, and their pages, alone
    try:
        left = largest_first(jobs)
        while left:
            broken = []
            with ProcessPoolExecutor(max_workers=workers, initializer=_share, initargs=(started,)) as pool:
                futures = {pool.submit(_run_marked, i, jobs[i], analysis): i for i in left}
                try:
                    for future in as_completed(futures):
                        try:
                            take(futures[future], future.result())
                        except BrokenProcessPool:
                            broken.append(futures[future])
                except BaseException:
                    for future in futures:
                        future.cancel()
                    raise
            suspects = [i for i in broken if started[i]]
            left = [i for i in broken if not started[i]]
            if broken and not suspects:  # the workers died before any job: no pool again
                suspects, left = broken, []
            for i in suspects:
                take(i, _alone(jobs[i], analysis))
    finally:
        gc.unfreeze()


_STARTED = None  # in a pool's worker: the parent's shared array of the jobs started


def _share(started) -> None:
    global _STARTED
    _STARTED = started


def _run_marked(index: int, job: Job, analysis: Analysis) -> Outcome:
    _STARTED[index] = 1
    return _run_in_worker(job, analysis)


def _alone(job: Job, analysis: Analysis) -> Outcome:
    """``job`` in a process of its own; if that process dies, the job's error says how."""
    start = time.perf_counter()
    receive, send = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(target=_send_outcome, args=(send, job, analysis), daemon=True)
    process.start()
    send.close()
    try:
        outcome = receive.recv()
    except EOFError:  # it died before sending
        outcome = None
    process.join()
    if outcome is not None:
        return outcome
    code = process.exitcode
    if code is not None and code < 0:
        how = f"killed by {signal.Signals(-code).name}"
        how += (
            (
                " (the kernel's out-of-memory killer sends it; a large capture can be read one flow at a"
                " time, --flow-at-a-time-above)"
            )
            if -code == signal.SIGKILL
            else ""
        )
    else:
        how = f"exit status {code}"
    return Outcome(job, None, f"the process analysing it died, {how}", 0, time.perf_counter() - start, False)


def _send_outcome(send, job: Job, analysis: Analysis) -> None:
    send.send(_run_in_worker(job, analysis))
    send.close()


def _on_dask(jobs, analysis, scheduler, take) -> None:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise UsageError("--scheduler needs Dask: pip install 'ldanalyze[dask]'") from None
    try:  # within Dask's own connect timeout (distributed.comm.timeouts.connect, 30 s by default)
        client = Client(scheduler)
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({exc})") from None
    with client:
        order = largest_first(jobs)
        if analysis.cache_dir:
            analysis = dataclasses.replace(analysis, cache_dir=os.path.abspath(analysis.cache_dir))
        futures = client.map(_run_in_worker, [_located(jobs[i]) for i in order], analysis=analysis, pure=False)
        index = {future.key: i for i, future in zip(order, futures)}
        try:
            for future, outcome in as_completed(futures, with_results=True, raise_errors=False):
                i = index[future.key]
                if future.status == "error":  # the job's own failures are outcomes: this is Dask's
                    error = outcome[1]  # (type, exception, traceback); KilledWorker when its workers died
                    take(i, Outcome(jobs[i], None, f"Dask: {type(error).__name__}: {error}", 0, 0.0, False))
                else:
                    take(i, dataclasses.replace(outcome, job=jobs[i]))
        except BaseException:
            client.cancel(futures)
            raise


def _located(job: Job) -> Job:
    """``job`` with its files named by absolute paths: a Dask worker runs in a folder of its own
    (on a cluster, the one its service started it in), where names relative to the command's
    folder find nothing."""

    def vantage(text: str) -> str:
        if os.path.exists(text) or ":" not in text:
            return os.path.abspath(text)
        path, _, cause = text.rpartition(":")
        return f"{os.path.abspath(path)}:{cause}"

    return dataclasses.replace(
        job,
        path=job.path and os.path.abspath(job.path),
        vantage=tuple(map(vantage, job.vantage)),
        labels=job.labels and os.path.abspath(job.labels),
    )


# --- results ---------------------------------------------------------------------------------

SCOPES = ("flow", "trace", "pooled")


def results_table(outcomes: Sequence[Outcome], *, bootstrap: int = 0, seed=0) -> pd.DataFrame:
    """One tidy table of scores: ``scope`` flow (per trace and flow), trace, and pooled (every
    trace); the modeled-throughput columns where a controller was replayed."""
    parts = [o.result for o in outcomes if o.result is not None]
    if not parts:
        return pd.DataFrame(columns=["scope", "trace", "flow", "lda"])
    batch = _stack(parts)
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


# --- manifests and configuration ------------------------------------------------------------

MANIFEST_KEYS = ("name", "path", "vantage", "labels", "payload", "flows", "clocks", "skew", "format")


def read_manifest(path: str) -> list[Job]:
    """Jobs from a manifest: TOML (``[[trace]]`` tables) or CSV (a header naming the keys;
    ``vantage`` and ``flows`` separated by ``;``). Keys: ``path`` or ``vantage`` (a chain,
    sender first, ``PCAP[:CAUSE]``), and optionally ``name``, ``labels``, ``payload``, ``flows``,
    ``clocks`` (chains), ``skew``, ``format``. Relative paths are taken from the manifest's
    folder."""
    import csv
    import tomllib

    base = os.path.dirname(os.path.abspath(path))
    try:
        if path.endswith(".toml"):
            with open(path, "rb") as f:
                entries = tomllib.load(f).get("trace", [])
        else:
            with open(path, newline="", encoding="utf-8-sig") as f:
                entries = [
                    {k: v for k, v in row.items() if v not in (None, "")}
                    for row in csv.DictReader(line for line in f if not line.startswith("#"))
                ]
                for entry in entries:
                    for key in ("vantage", "flows"):
                        if key in entry:
                            entry[key] = [part.strip() for part in entry[key].split(";") if part.strip()]
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"--manifest {path}: {exc}") from None
    jobs = []
    for number, entry in enumerate(entries, 1):
        unknown = sorted(set(entry) - set(MANIFEST_KEYS))
        if unknown:
            raise UsageError(
                f"--manifest {path}: entry {number}: unknown key(s) {', '.join(unknown)} "
                f"(known: {', '.join(MANIFEST_KEYS)})"
            )
        if ("path" in entry) == ("vantage" in entry):
            raise UsageError(f"--manifest {path}: entry {number}: give a path or a vantage chain, one of them")

        def local(p: str) -> str:
            return p if os.path.isabs(p) else os.path.join(base, p)

        vantage = tuple(local(v) for v in entry.get("vantage", []))
        options = {k: entry[k] for k in ("payload", "flows", "clocks", "skew", "format") if k in entry}
        if "flows" in options:
            options["flows"] = list(options["flows"])
        name = entry.get("name") or entry.get("path") or " > ".join(entry["vantage"])
        jobs.append(
            Job(
                name=name,
                path=local(entry["path"]) if "path" in entry else None,
                vantage=vantage,
                labels=local(entry["labels"]) if "labels" in entry else None,
                read_options=tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items())),
            )
        )
    return jobs


def load_config(folder: str = ".") -> tuple[dict, str | None]:
    """The batch settings of ``ldanalyze.toml`` (top level) or of ``pyproject.toml``'s
    ``[tool.ldanalyze]`` in ``folder``, and which file they came from."""
    import tomllib

    for name, section in (("ldanalyze.toml", ()), ("pyproject.toml", ("tool", "ldanalyze"))):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        try:
            with open(path, "rb") as f:
                config = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: {exc}") from None
        for key in section:
            config = config.get(key, {})
        if config:
            return config, path
    return {}, None
