"""The batch cache: a job's parsed trace and its results, stored by the content of its files and
its read options, written atomically so that parallel workers never read half an entry.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pathlib
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from ..analysis import Analysed, one_label, with_baselines
from ..control import BASELINES, PathModel, Signals, replay
from ..errors import UsageError
from ..io import read_trace
from ..io.capture.vantage import read_vantages
from ..io.labels import apply_labels
from ..lda import Replay, classify, optional_specs, runnable_ldas
from ..output import atomic_folder, atomic_write, json_default
from ..packets import Trace, labels_dtype
from ..timeline import Timeline, build_timeline
from ..version import VERSION
from .jobs import Analysis, Job

CACHE_VERSION = 9


def labelled_of(trace: Trace, job: Job) -> Trace:
    return apply_labels(trace, job.labels) if job.labels else trace


def analyze_cached(
    job: Job,
    analysis: Analysis,
    *,
    entry: pathlib.Path | None = None,
    read: Callable[[], tuple[Trace, bool]] | None = None,
) -> tuple[Analysed, int, bool]:
    """The analysis with every piece kept in the cache, under the parsed trace's entry (by
    content and read options): the timeline (by labels and sequence modulus, Arrow files), and
    under it the flow summary, the LDAs' decisions and the replay rows (by replay semantics and
    controller), one file each that grows by the LDAs a run adds. A re-run computes only the
    LDAs it has not seen, from the cached timeline (the baselines' replay rows give the ratios),
    and reads no trace when it has seen them all. ``entry`` and ``read`` (the labelled trace,
    and whether it came from the cache) stand for the job's own when the trace is one flow of
    a capture read flow by flow."""
    from ..lda import parse_ldas

    entry = entry or entry_of(job, analysis)
    read = read or (lambda: _labelled_read(job, entry))
    built = hashlib.blake2b(digest_size=12)
    built.update(repr(analysis.seq_modulus).encode())
    if job.labels:
        built.update(pathlib.Path(job.labels).read_bytes())
    timeline_dir = entry / "timelines" / built.hexdigest()
    results = (
        timeline_dir
        / hashlib.blake2b(repr((analysis.semantics, analysis.controller)).encode(), digest_size=12).hexdigest()
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
        runnable = (
            [lda.spec for lda in runnable_ldas(timeline, missing, optional=optional, other_views=True)]
            if missing
            else []
        )
        newly_left = set(missing) - set(runnable)
        if newly_left:
            left_out |= newly_left
            atomic_write(results / "left_out.json", lambda tmp: tmp.write_text(json.dumps(sorted(left_out))))
            wanted = [spec for spec in wanted if spec not in newly_left]
        if runnable:
            decided = classify(timeline, runnable, semantics=analysis.semantics)
            decisions.append(_write_piece(decided, results / f"decisions-{_part_name(runnable)}.arrow", ldas=runnable))
            if analysis.controller:
                assert rows is not None  # read above where there is a controller
                rows = _replay_rows(timeline, analysis, runnable, rows, results, decided)
    summary = _read_table(results / "summary.arrow")
    flows = summary["flow"].astype(str).tolist()
    decisions = _in_order(_stacked(decisions), wanted, flows=flows)
    decisions.insert(0, "trace", one_label(job.name, len(decisions)))
    throughput = None
    if rows:
        rows = _in_order(_stacked(rows), wanted)
        throughput = rows.assign(trace=job.name) if len(rows) else None
    packets = int(summary["sent"].sum())  # the trace's packet rows, whichever pieces were read
    return Analysed(decisions=decisions, summary=summary.assign(trace=job.name), throughput=throughput), packets, cached


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
        signals = _signals(timeline, analysis.semantics, results)
        new = replay(
            timeline,
            [analysis.controller],
            runnable,
            semantics=analysis.semantics,
            rates=False,
            reference=_reference_rows(rows) if have_baselines else None,
            decisions=decided if have_baselines else with_baselines(timeline, decided, analysis.semantics),
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


def _signals(timeline, semantics: Replay, folder: pathlib.Path):
    """The controllers' inputs (they do not depend on the LDA): from the cache, or computed
    and stored. A trace they cannot be had for (no RTT, say) has its UsageError stored and
    raised again, without the timeline being read."""
    file, refused = folder / "signals.bin", folder / "no_signals.txt"
    if file.exists():
        return Signals.load(file, timeline, semantics, PathModel())
    if refused.exists():
        raise UsageError(refused.read_text())
    try:
        signals = Signals.of(timeline, semantics, PathModel())
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
    file in memory (the arrays are views of them): quicker than opening it through
    ``pa.OSFile`` or ``feather.read_table`` (docs/design.md). A large one (a big flow's) is memory-mapped: its arrays are the file's pages, which
    the system can drop under pressure, not copies."""
    import pyarrow as pa

    path = pathlib.Path(path)
    if path.stat().st_size <= WHOLE_FILE_BYTES:
        return pa.ipc.open_file(pa.py_buffer(path.read_bytes())).read_all()
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def _as_frame(table) -> pd.DataFrame:
    """An Arrow table of the cache as a DataFrame, without pandas' metadata (every cache file
    is written with a plain RangeIndex): numbers as NumPy arrays, dictionaries as categoricals
    over a dtype made once per set of labels (validating a new dtype's categories is costly
    on a warm re-run), the rest by pyarrow: quicker than ``Table.to_pandas``."""
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
    """Write a cache file (Arrow IPC, uncompressed: more bytes than LZ4, quicker to read); the
    Arrow table written. Column by column, without pandas' metadata, which ``_as_frame``
    ignores (``Table.from_pandas`` is slower on a trace's tables). A small file is made in
    memory and written at once, as ``_arrow`` reads it; a large one is written through
    ``pa.OSFile``, not held twice in memory (docs/design.md)."""
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


def entry_of(job: Job, analysis: Analysis) -> pathlib.Path:
    """The job's cache entry: its folder under the cache, by content and read options."""
    assert analysis.cache_dir is not None  # asked of a cached analysis only
    key = cache_key(job, analysis.cache_dir)
    return pathlib.Path(analysis.cache_dir) / key[:2] / key


def _labelled_read(job: Job, entry: pathlib.Path) -> tuple[Trace, bool]:
    """The job's parsed trace from its cache entry, or read and stored there, with its labels."""
    trace = load_entry(entry, job.path)
    if trace is None:
        trace = read_fresh(job, dict(job.read_options))
        store(entry, trace)
        return labelled_of(trace, job), False
    return labelled_of(trace, job), True


def load_entry(entry: pathlib.Path, path: str | None) -> Trace | None:
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


def read_fresh(job: Job, options: dict) -> Trace:
    if job.vantage:
        return read_vantages(list(job.vantage), **options)
    assert job.path is not None  # a job is a file or a chain
    return read_trace(job.path, **options)


@functools.cache
def code_digest() -> str:
    """A digest of ldanalyze's own source (every ``.py`` file of the package, by path and bytes):
    the version number alone stays the same between commits, so an entry an older reader or
    LDA wrote would otherwise be read back as this code's result. About 8 ms, once a process."""
    root = pathlib.Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(digest_size=12)
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_key(job: Job, cache_dir: str | None = None) -> str:
    """A digest of every input file's bytes, the read options, the cache's layout version and
    the code (:func:`code_digest`): a changed file, option or ldanalyze never meets an old
    entry. With ``cache_dir``, the files' digests are remembered there (:func:`file_digest`)."""

    digest = hashlib.blake2b(digest_size=20)
    key = [CACHE_VERSION, VERSION, code_digest(), list(job.vantage) and "chain", repr(job.read_options)]
    digest.update(json.dumps(key).encode())
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


def store(entry: pathlib.Path, trace: Trace) -> None:
    """Write a cache entry atomically (``output.atomic_folder``); another worker's entry, stored
    first, stands."""
    entry.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: pathlib.Path) -> None:
        _write_piece(trace.packets, tmp / "packets.arrow")  # Arrow IPC, as all the cache: quicker to read than Parquet
        _write_piece(trace.rtt, tmp / "rtt.arrow")
        meta = {"path": trace.path, "format": trace.format, **trace.meta}
        (tmp / "meta.json").write_text(json.dumps(meta, default=json_default))

    atomic_folder(entry, write)
