"""Running a batch's jobs: each on its own (in this process, a process pool, or a Dask cluster),
a capture above a size read one flow at a time, a job that fails reported with its error
instead of stopping the others, the outcomes in job order whatever order they finished in.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import multiprocessing
import os
import pathlib
import signal
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from .. import threads
from ..analysis import Analysed, analyze, stack
from ..consensus import agreement_counts
from ..errors import TraceError, UsageError
from ..io.labels import apply_labels
from ..output import atomic_write
from ..packets import Trace
from ..scoring.losses import tally
from ..scoring.rates import SUMMARY_READ
from ..scoring.throughput import THROUGHPUT_REQUIRED
from .cache import analyze_cached, entry_of, labelled_of, load_entry, read_fresh, store
from .jobs import SPLIT_OPTIONS, Analysis, Job, Outcome, too_big_to_read_whole


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
                trace = labelled_of(read_fresh(job, dict(job.read_options)), job)
                result = _analyze_in_process(trace, job, analysis)
                packets = len(trace.packets)
            else:
                result, packets, cached = analyze_cached(job, analysis)
        return Outcome(job, _kept(result, analysis.keep), None, packets, time.perf_counter() - start, cached)
    except Exception as exc:  # a batch reports what broke one trace and goes on
        message = str(exc) if isinstance(exc, (TraceError, UsageError)) else f"{type(exc).__name__}: {exc}"
        return Outcome(job, None, message, 0, time.perf_counter() - start, cached)


def _kept(result: Analysed, keep: str) -> Analysed:
    """What a job's result keeps (``KEEP``): everything, or what the results table reads, its
    decisions tallied, the LDAs' agreement counts per flow (a tally has no loss to pair the
    LDAs' calls on) and the columns of its summary and throughput that scoring reads."""
    if keep == "decisions":
        return result

    def read(table: pd.DataFrame | None, columns: tuple[str, ...]) -> pd.DataFrame | None:
        return None if table is None else table[[c for c in ("trace", *columns) if c in table.columns]]

    return Analysed(
        decisions=tally(result.decisions, bursts=keep == "bursts"),
        summary=read(result.summary, SUMMARY_READ),
        throughput=read(result.throughput, THROUGHPUT_REQUIRED),
        agreement=agreement_counts(result.decisions, ("trace", "flow")),
    )


def _run_in_worker(job: Job, analysis: Analysis) -> Outcome:
    """:func:`run_job` in a worker of a pool or a Dask cluster, on one thread: the other
    workers keep the other cores busy (:mod:`ldanalyze.threads`). A Dask worker that is a
    thread of the caller's own process is left its threads: they are the caller's too."""
    if multiprocessing.parent_process() is not None:
        threads.one_per_worker()
    return run_job(job, analysis)


def _analyze_in_process(trace: Trace, job: Job, analysis: Analysis) -> Analysed:
    """The analysis a job asks for, of a trace read without the cache."""
    return analyze(
        trace,
        analysis.ldas,
        controller=analysis.controller,
        controller_optional=True,
        semantics=analysis.semantics,
        path_model=None,
        seq_modulus=analysis.seq_modulus,
        name=job.name,
        other_views=True,
    )


def _flow_at_a_time(job: Job, analysis: Analysis) -> bool:
    """Whether the job is a capture to read one flow at a time: one pcap or pcapng file larger
    than ``analysis.flow_at_a_time_above`` bytes, read with no option that picks flows or
    streams (those read the capture whole)."""
    if job.vantage or not job.path or set(dict(job.read_options)) - SPLIT_OPTIONS:
        return False
    return too_big_to_read_whole(job.path, analysis.flow_at_a_time_above)


def _analyze_flows(job: Job, analysis: Analysis) -> tuple[Analysed, int, bool]:
    """A big capture analysed one flow at a time (``io.capture.split``: memory holds one flow),
    its flows' tables stacked under the job's name: the whole read's results. With a cache,
    each flow has an entry of its own under the capture's (``flows/K``: its parsed trace, and
    its timeline and results as a whole trace's), and a listing of them once all are in: a
    re-run reads no capture, and a changed labels file or sequence modulus rebuilds the
    flows' timelines from their parsed traces."""
    from ..io.capture.split import read_capture_flows
    from ..io.labels import LabelRules, is_rules_file, read_label_rules, read_labels

    assert job.path is not None  # one capture file (_flow_at_a_time)
    labels: pd.DataFrame | LabelRules | None = None
    if job.labels and is_rules_file(job.labels):
        labels = read_label_rules(job.labels)
        if any(not rule.absolute and (math.isfinite(rule.start) or math.isfinite(rule.end)) for rule in labels.rules):
            raise UsageError(
                f"{job.labels}: a rule's window in seconds since the trace's start means each flow's own start when "
                f"{job.name} is read one flow at a time: give its start and end as dates, or "
                "--flow-at-a-time-above never"
            )
    elif job.labels:
        labels = read_labels(job.labels)

    def labelled(trace: Trace) -> Trace:
        if labels is None:
            return trace
        if isinstance(labels, LabelRules):
            return apply_labels(trace, labels)
        return apply_labels(trace, labels[labels["flow"].isin(trace.flows)])

    def stored(entry: pathlib.Path) -> tuple[Trace, bool]:
        trace = load_entry(entry, job.path)
        assert trace is not None  # every flow's entry holds its trace (the listing is written last)
        return labelled(trace), True

    def fresh(trace: Trace) -> tuple[Trace, bool]:
        return labelled(trace), False

    folder = entry_of(job, analysis) / "flows" if analysis.cache_dir is not None else None
    listing = folder / "flows.json" if folder is not None else None
    known = json.loads(listing.read_text()) if listing is not None and listing.exists() else None
    if known is not None and all((folder / name / "meta.json").exists() for name in known["entries"]):
        results = [
            analyze_cached(job, analysis, entry=folder / name, read=functools.partial(stored, folder / name))
            for name in known["entries"]
        ]
        parts, packets, cached, seen = [r[0] for r in results], sum(r[1] for r in results), True, set(known["flows"])
    else:
        parts, packets, cached, seen, names = [], 0, False, set(), []
        for k, trace in enumerate(read_capture_flows(job.path, **dict(job.read_options))):
            seen |= set(trace.flows)
            packets += len(trace.packets)
            if folder is None:
                parts.append(_analyze_in_process(labelled(trace), job, analysis))
                continue
            names.append(str(k))
            store(folder / str(k), trace)
            parts.append(analyze_cached(job, analysis, entry=folder / str(k), read=functools.partial(fresh, trace))[0])
        if listing is not None and parts:
            text = json.dumps({"entries": names, "flows": sorted(seen)})
            atomic_write(listing, lambda tmp: tmp.write_text(text))  # last: the flows are all in
    if isinstance(labels, pd.DataFrame) and not set(labels["flow"]) <= seen:  # (a rule that matches none warns)
        missing = sorted(set(labels["flow"]) - seen)
        raise TraceError(job.labels, f"labels name flow(s) {job.path} does not have: {', '.join(missing[:5])}")
    return stack(parts), packets, cached


def execute(
    jobs: Sequence[Job],
    analysis: Analysis,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    strict: bool = False,
) -> list[Outcome]:
    """Run the jobs (serially, on up to ``workers`` processes as ``pool_size`` says, or on the
    Dask cluster at ``scheduler``) and return their outcomes in job order. ``on_outcome`` sees each as it
    finishes; ``strict`` stops at the first error (raising a TraceError naming the trace).
    Ctrl-C returns what had finished, in job order."""
    done: dict[int, Outcome] = {}

    def take(index: int, outcome: Outcome) -> None:
        done[index] = outcome
        if on_outcome is not None:
            on_outcome(outcome)
        if strict and outcome.error is not None:
            raise TraceError(outcome.job.name, outcome.error)

    size = pool_size(jobs, workers) if scheduler is None else 1  # once: it reads every gzip file's trailer
    try:
        if scheduler is not None:
            _on_dask(jobs, analysis, scheduler, take)
        elif size > 1:
            _on_pool(jobs, analysis, size, take)
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
    work = [_work(job) for job in jobs]
    return sorted(range(len(jobs)), key=lambda i: -work[i])


# one core analyses about this many bytes of trace a second (ns-2 text, every LDA and TFRC:
# 57 MB in 0.84 s), and a pool of worker processes takes about this long to start and stop
WORK_BYTES_PER_S = 64 << 20
POOL_START_S = 0.3


def pool_size(jobs: Sequence[Job], workers: int) -> int:
    """How many of ``workers`` processes to run ``jobs`` on. None (1: run here) when the
    suite's estimated work is too small to gain from a pool: shared among two workers it would
    not save the pool's start (``POOL_START_S``). Else the fewest workers that finish soonest
    (the work shared out, or the largest job if longer: a pool waits on it), never below two:
    a job that kills its process (a capture too big for memory) then kills a worker, which is
    reported, not the batch."""
    if workers <= 1 or len(jobs) <= 1:
        return 1
    work = sorted((_work(job) / WORK_BYTES_PER_S for job in jobs), reverse=True)
    total = sum(work)
    if total <= 2 * POOL_START_S:
        return 1
    sizes = range(2, min(workers, len(jobs)) + 1)
    return min(sizes, key=lambda size: (max(total / size, work[0]), size))


def _work(job: Job) -> int:
    """A job's work, in bytes of trace: what it reads and ``JOB_BYTES`` a file."""
    return len(job.files) * JOB_BYTES + sum(_bytes_read(path) for path in job.files)


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


_STARTED: Any = None  # in a pool's worker: the parent's shared array of the jobs started (multiprocessing.Array)


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
