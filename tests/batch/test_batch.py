"""``ldanalyze batch``: discovery, isolation of broken traces, pool and Dask against serial, the
content-keyed cache, thresholds, baselines, JUnit/Markdown/JSON outputs, config and manifests."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import pathlib
import shutil
import signal
import time
import xml.etree.ElementTree as ET

import jsonschema
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze import analysis as in_process
from ldanalyze import batch as batching
from ldanalyze import threads
from ldanalyze.cli import main
from ldanalyze.errors import UsageError
from ldanalyze.gates import Threshold, check_thresholds, compare_baseline, retuned_ldas
from ldanalyze.report import ci
from ldanalyze.report.ci import JSON_SCHEMA
from ldanalyze.report.text import table_text

from ..conftest import TRACES
from ..support.tunnels import tunnel_capture

SUITE = ["wlh_cbr_1flow_bursty.tr.gz", "wlh_tcp_1flow_high.tr.gz", "wlh_tfrc_1flow_high.tr.gz"]


@pytest.fixture
def suite(tmp_path):
    """A folder of three bundled traces, a broken one, and a file that is no trace."""
    folder = tmp_path / "suite"
    (folder / "sub").mkdir(parents=True)
    for i, name in enumerate(SUITE):
        shutil.copy(TRACES / name, (folder / "sub" if i == 2 else folder) / name)
    (folder / "README.txt").write_text("not a trace\n")
    return folder


def broken(folder):
    path = folder / "broken.tr"
    path.write_text("+ 0.1 0 1 cbr 500 ------- 1 0.0 1.0 0 0\n+ x 0 1 cbr 500 ------- 1 0.0 1.0 1 1\n")
    return path


def run(tmp_path, *args):
    return main(["batch", *map(str, args), "--no-cache", "--jobs", "1", "--lda", "biaz,zbs,spike"])


def test_discovery_walks_folders_and_globs_and_passes_over_what_is_no_trace(suite):
    traces, passed = batching.discover([str(suite)])
    assert sorted(p.split("/")[-1] for p in traces) == sorted(SUITE)
    assert {p.split("/")[-1]: why for p, why in passed.items()} == {"README.txt": "no known trace format"}
    (suite / "notes.txt").write_bytes(b"")
    traces, passed = batching.discover([str(suite / "**" / "*.t*")], exclude=["*tcp*"])
    assert sorted(p.split("/")[-1] for p in traces) == sorted(n for n in SUITE if "tcp" not in n)
    assert {p.split("/")[-1]: why for p, why in passed.items()} == {
        "README.txt": "no known trace format",
        "notes.txt": "empty",
        "wlh_tcp_1flow_high.tr.gz": "excluded by *tcp*",
    }
    with pytest.raises(UsageError, match="no such"):
        batching.discover([str(suite / "missing.tr")])


def test_a_file_named_as_a_trace_that_fits_no_format_fails_and_is_not_passed_over(suite, tmp_path, capsys):
    """A damaged capture (its magic number gone), an empty ns-2 trace and a gzipped trace of
    garbage would shrink a suite in silence if passed over: each is a failed trace, with the
    reader's error naming the file."""
    damaged = suite / "call.PCAP"
    damaged.write_bytes(b"\x00" * 4 + (TRACES / "captures" / "lab_receiver.pcap").read_bytes()[4:])
    (suite / "empty.tr").write_bytes(b"")
    (suite / "noise.tr.gz").write_bytes(gzip.compress(b"hello\n"))
    traces, passed = batching.discover([str(suite)])
    assert {p.split("/")[-1] for p in traces} == set(SUITE) | {"call.PCAP", "empty.tr", "noise.tr.gz"}
    assert list(passed) == [str(suite / "README.txt")]
    assert run(tmp_path, suite, "--controller", "none") == 1
    printed = capsys.readouterr().out
    assert "3 trace(s) scored, 3 failed, 1 file(s) passed over (1 no known trace format)" in printed
    assert f"error: {damaged}: byte 0: unknown trace format: binary, but not a pcap or pcapng capture" in printed
    assert f"error: {suite / 'empty.tr'}: the trace is empty" in printed
    assert f"error: {suite / 'noise.tr.gz'}:1: unknown trace format" in printed


def test_a_broken_trace_is_reported_and_the_others_are_scored(suite, tmp_path, capsys):
    bad = broken(suite)
    out = tmp_path / "results.csv"
    assert run(tmp_path, suite, "-o", out, "--controller", "none") == 1
    printed = capsys.readouterr().out
    assert f"error: {bad}" in printed and "3 trace(s) scored, 1 failed" in printed
    results = pd.read_csv(out)
    assert sorted(results.loc[results["scope"] == "trace", "trace"].unique()) == sorted(
        str(p) for p in suite.rglob("*.tr.gz")
    )
    assert run(tmp_path, suite, "--strict", "--controller", "none") == 2


def test_quiet_logs_only_the_traces_that_fail(suite, tmp_path, capsys):
    bad = broken(suite)
    assert run(tmp_path, suite, "--quiet", "--controller", "none") == 1
    logged = capsys.readouterr().err.splitlines()
    assert len(logged) == 1 and logged[0].startswith("batch: [") and f"{bad}: error: {bad}:2:" in logged[0]
    assert run(tmp_path, suite, "--controller", "none") == 1
    assert len(capsys.readouterr().err.splitlines()) == 4  # a line a trace


def test_bad_usage_is_refused_before_any_trace_is_read(suite, tmp_path, capsys):
    """An unknown LDA or controller, a bad LDA parameter, a results name of no known format or
    a threshold on an LDA not scored is bad usage (exit 2), said once, not a failure of every
    trace (or a usage error) after a whole run."""
    for args, said in (
        (["--lda", "nosuch"], "unknown LDA 'nosuch'"),
        (["--controller", "nosuch"], "unknown controller 'nosuch'"),
        (["--lda", "biaz:upper=x"], "upper must be a positive number"),
        (["-o", str(tmp_path / "results.xlsx")], "results.xlsx: a table is written as .parquet, .csv"),
        (["--lda", "biaz,zbs", "--fail-if", "spike.M_c > 0.1"], "no LDA 'spike' among those scored (biaz, zbs)"),
        (["--fail-if", "zbs.M_x > 0.1"], "no metric 'M_x' (known: losses, unknown,"),
        (["--fail-if", "zbs.controller > 1"], "no metric 'controller'"),  # was a traceback
        (
            ["-o", str(tmp_path / "r.json"), "--json", str(tmp_path / "r.json")],
            "--json and --output name the same file",
        ),
    ):
        assert main(["batch", str(suite), "--no-cache", *args]) == 2
        captured = capsys.readouterr()
        assert said in captured.err and "batch: [" not in captured.err  # no trace was read
    (tmp_path / "a_file").write_text("")
    assert main(["batch", str(suite), "--cache-dir", str(tmp_path / "a_file")]) == 2
    captured = capsys.readouterr()
    assert "a_file: cannot make this folder (File exists)" in captured.err and "batch: [" not in captured.err
    with pytest.raises(UsageError, match="unknown LDA"):
        batching.Analysis(ldas="biaz,nosuch")


def test_outputs_get_the_mode_of_a_new_file_not_of_a_temporary_one(suite, tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        out, junit = tmp_path / "results.csv", tmp_path / "junit.xml"
        run(tmp_path, suite, "-o", out, "--junit", junit, "--controller", "none")
        assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE(junit.stat().st_mode) == 0o644
        out.chmod(0o640)  # a file replaced keeps its mode
        run(tmp_path, suite, "-o", out, "--controller", "none")
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_an_unreachable_dask_scheduler_is_a_usage_error_not_a_traceback(suite, tmp_path, capsys):
    import socket

    import dask
    import distributed  # noqa: F401  (its defaults in dask's config before one is set for a while)

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert main(["batch", str(suite), "--no-cache", "--scheduler", f"tcp://127.0.0.1:{port}"]) == 2
    assert f"--scheduler tcp://127.0.0.1:{port}: cannot reach a Dask scheduler there" in capsys.readouterr().err


@pytest.fixture
def pool_always(monkeypatch):
    """A pool however small the suite (``pool_size`` would run these few small traces here):
    for the tests of what a pool does."""
    monkeypatch.setattr(batching.running, "POOL_START_S", 0.0)


def test_jobs_are_handed_out_by_the_bytes_they_read_gzip_uncompressed(tmp_path):
    """Longest first: a gzip trace counts by its uncompressed size (its trailer), not by its
    bytes on disk; a file that cannot be read counts as nothing and fails in its own job."""
    text = b"+ 0.1 0 1 cbr 500 ------- 1 0.0 1.0 0 0\n"
    (tmp_path / "small.tr").write_bytes(text * 10)
    (tmp_path / "packed.tr.gz").write_bytes(gzip.compress(text * 100_000))  # 4 MB of text, 20 kB on disk
    (tmp_path / "plain.tr").write_bytes(text * 20_000)  # 0.8 MB
    assert (tmp_path / "packed.tr.gz").stat().st_size < (tmp_path / "plain.tr").stat().st_size
    names = ["small.tr", "packed.tr.gz", "missing.tr", "plain.tr"]
    jobs = [batching.Job(name=n, path=str(tmp_path / n)) for n in names]
    assert [names[i] for i in batching.largest_first(jobs)] == ["packed.tr.gz", "plain.tr", "small.tr", "missing.tr"]
    assert batching.running._bytes_read(str(tmp_path / "packed.tr.gz")) == len(text) * 100_000


def test_a_suite_too_small_to_gain_runs_without_a_pool(tmp_path, monkeypatch):
    """``pool_size``: no pool where sharing the work between two workers would not save the
    pool's start (a few small traces); else the fewest workers that finish soonest, no more
    than jobs, and two at least: one big job and a small one keep a pool, whose worker dies
    alone if the big one kills its process."""
    per_s = batching.running.WORK_BYTES_PER_S
    sizes = {"small": per_s // 20, "second": per_s, "big": 4 * per_s}
    monkeypatch.setattr(batching.running, "_bytes_read", lambda path: sizes[pathlib.Path(path).name.split("_")[0]])

    def jobs(*names):
        return [batching.Job(name=f"{n}_{k}", path=str(tmp_path / f"{n}_{k}")) for k, n in enumerate(names)]

    assert batching.pool_size(jobs("small", "small", "small"), 2) == 1
    assert batching.pool_size(jobs("second", "second"), 2) == 2
    assert batching.pool_size(jobs("second", "second"), 8) == 2
    assert batching.pool_size(jobs("second"), 2) == 1
    assert batching.pool_size(jobs("big", "small"), 8) == 2
    assert batching.pool_size(jobs("big", "second", "second"), 8) == 2  # the big one takes as long as the rest
    assert batching.pool_size(jobs(*["second"] * 6), 3) == 3
    assert batching.pool_size(jobs(*["second"] * 6), 1) == 1
    called = []
    monkeypatch.setattr(batching.running, "_on_pool", lambda *args: called.append(args))
    monkeypatch.setattr(
        batching.running, "run_job", lambda job, analysis: batching.Outcome(job, None, None, 0, 0.0, False)
    )
    batching.execute(jobs("small", "small"), batching.Analysis(ldas="biaz"), workers=2)
    assert not called
    batching.execute(jobs("second", "second"), batching.Analysis(ldas="biaz"), workers=2)
    assert len(called) == 1 and called[0][2] == 2


def analysis(cache_dir=None, ldas="biaz,zbs,spike"):
    return batching.Analysis(ldas=ldas, controller="tfrc", cache_dir=cache_dir)


def jobs_of(folder):
    traces, _ = batching.discover([str(folder)])
    return [batching.Job(name=p, path=p) for p in traces]


def test_process_pool_and_dask_give_the_serial_results(suite, tmp_path, monkeypatch, pool_always):
    from dask.distributed import Client, LocalCluster

    jobs = jobs_of(suite)
    serial = batching.results_table(batching.execute(jobs, analysis()))
    pooled = batching.results_table(batching.execute(jobs, analysis(), workers=2))
    pd.testing.assert_frame_equal(serial, pooled)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        dask = batching.results_table(batching.execute(jobs, analysis(), scheduler=cluster.scheduler_address))
        with Client(cluster) as client:  # the workers that ran jobs run on one thread each
            assert set(client.run(threads.may_spread).values()) == {False}
            assert set(client.run(pa.cpu_count).values()) == {1}
            workers_folder = set(client.run(os.getcwd).values())
        # names relative to the command's folder, which is not the workers' (as on a cluster);
        # the outcomes keep the names as given
        monkeypatch.chdir(tmp_path)
        assert workers_folder != {str(tmp_path)}
        relative = [batching.Job(name=j.name, path=os.path.relpath(j.path)) for j in jobs]
        outcomes = batching.execute(relative, analysis(cache_dir="cache"), scheduler=cluster.scheduler_address)
        assert [o.error for o in outcomes] == [None] * len(jobs) and (tmp_path / "cache").is_dir()
        assert [o.job for o in outcomes] == relative
    pd.testing.assert_frame_equal(serial, dask)
    pd.testing.assert_frame_equal(serial, batching.results_table(outcomes))


def test_a_trace_whose_worker_dies_is_named_and_the_others_are_scored(suite, monkeypatch, pool_always):
    """A worker killed (here by itself; in the field by the out-of-memory killer: checked by
    hand in a memory cgroup) broke the whole pool, and the batch ended in a traceback with
    nothing kept. Now the jobs it took down are run again alone: the one that dies again is
    named with its signal, the others score as in a serial run."""
    jobs = jobs_of(suite)
    killer = next(j for j in jobs if "tcp" in j.name)
    run_job = batching.run_job

    def dying(job, analysis):
        if job == killer:
            os.kill(os.getpid(), signal.SIGKILL)
        return run_job(job, analysis)

    monkeypatch.setattr(batching.running, "run_job", dying)  # the forked workers inherit it
    outcomes = batching.execute(jobs, analysis(), workers=2)
    assert [o.job for o in outcomes] == jobs
    errors = {o.job.name: o.error for o in outcomes if o.error}
    assert list(errors) == [killer.name] and errors[killer.name].startswith(
        "the process analysing it died, killed by SIGKILL (the kernel's out-of-memory killer"
    )
    monkeypatch.setattr(batching.running, "run_job", run_job)
    others = [j for j in jobs if j != killer]
    pd.testing.assert_frame_equal(
        batching.results_table([o for o in outcomes if o.job != killer]),
        batching.results_table(batching.execute(others, analysis())),
    )


def test_a_trace_whose_dask_worker_dies_is_named_and_the_others_are_scored(suite, monkeypatch):
    """On Dask, a task whose workers die is Dask's KilledWorker (after
    ``distributed.scheduler.allowed-failures`` retries: two here, so that a job that was only
    queued on a dying worker, once or twice, is tried again): it ended the batch in a traceback; now it is
    that trace's error."""
    import dask
    from dask.distributed import LocalCluster

    jobs = jobs_of(suite)
    killer = next(j for j in jobs if "tcp" in j.name)
    in_worker = batching.running._run_in_worker

    def dying(job, analysis):  # sent to the workers by value (cloudpickle)
        if job.name == killer.name:
            os.kill(os.getpid(), signal.SIGKILL)
        return in_worker(job, analysis)

    monkeypatch.setattr(batching.running, "_run_in_worker", dying)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 2}),
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
    ):
        outcomes = batching.execute(jobs, analysis(), scheduler=cluster.scheduler_address)
    errors = {o.job.name: o.error for o in outcomes if o.error}
    assert list(errors) == [killer.name] and errors[killer.name].startswith("Dask: KilledWorker")
    assert len(outcomes) == len(jobs) and all(o.result is not None for o in outcomes if o.job != killer)


def test_thresholds_know_every_number_of_a_results_table(suite):
    """The names ``--fail-if`` accepts before a run are the numbers a results table holds, with
    the bootstrap's intervals and the controller's columns: no more, no fewer."""
    from ldanalyze.scoring import NUMBER_COLUMNS

    results = batching.results_table(batching.execute(jobs_of(suite), analysis()), bootstrap=20)
    assert sorted(c for c in results.columns if results[c].dtype.kind in "if") == sorted(NUMBER_COLUMNS)


def test_jobs_that_keep_a_tally_give_the_results_of_every_decision(suite, pool_always):
    """The command's jobs send back tallies (``keep``), a few rows a flow and LDA: the results,
    the bootstrap's intervals included, are those of every decision kept."""
    jobs = jobs_of(suite)
    every = batching.execute(jobs, analysis())
    for keep, bootstrap in (("counts", 0), ("bursts", 200)):
        kept = batching.execute(jobs, dataclasses.replace(analysis(), keep=keep), workers=2)
        assert sum(len(o.result.decisions) for o in kept) < sum(len(o.result.decisions) for o in every)
        pd.testing.assert_frame_equal(
            batching.results_table(kept, bootstrap=bootstrap), batching.results_table(every, bootstrap=bootstrap)
        )
    with pytest.raises(UsageError, match="keep must be one of"):
        dataclasses.replace(analysis(), keep="some")


def test_the_cache_writes_every_file_under_a_temporary_name(tmp_path, monkeypatch):
    """Two workers may share a cache entry (one capture under two names): each file, the lists
    of LDAs left out and not replayed among them, is written beside its place and renamed in,
    or inside an entry's temporary folder. Two of a thousand jobs failed reading a half-written
    list (JSONDecodeError) before."""
    written = []
    for method in ("write_text", "write_bytes"):
        real = getattr(pathlib.Path, method)
        monkeypatch.setattr(
            pathlib.Path, method, lambda self, *a, real=real, **k: (written.append(self), real(self, *a, **k))[1]
        )
    captures = sorted(str(p) for p in (TRACES / "captures").glob("*.pcap"))
    outcomes = batching.execute(
        [batching.Job(name=p, path=p) for p in captures], analysis(tmp_path / "cache", ldas="all")
    )
    assert [o.error for o in outcomes] == [None] * len(captures)
    names = {p.name for p in (tmp_path / "cache").rglob("*.json")}
    assert {"left_out.json", "no_replay.json"} <= names  # the lists were written
    assert written and all(p.name.startswith(".") or p.parent.name.endswith(".tmp") for p in written)


def test_a_trace_without_losses_is_not_classified_again_from_the_cache(tmp_path, monkeypatch):
    """A cached piece names the LDAs it was computed for: a trace with nothing to classify has
    no rows to tell, and was classified anew at every re-run."""
    sender = str(TRACES / "captures" / "lab_sender.pcap")
    jobs = [batching.Job(name=sender, path=sender)]
    first = batching.execute(jobs, analysis(tmp_path / "cache", ldas="all"))
    assert first[0].error is None and len(first[0].result.decisions) == 0
    calls = []
    for module in (batching.cache, in_process):  # where a job classifies, from the cache or fresh
        monkeypatch.setattr(module, "classify", lambda *a, **k: calls.append(a) or pytest.fail("classified again"))
    again = batching.execute(jobs, analysis(tmp_path / "cache", ldas="all"))
    assert again[0].error is None and calls == []
    pd.testing.assert_frame_equal(batching.results_table(again), batching.results_table(first))


def _worker_threads(job, analysis):
    outcome = batching.running._run_in_worker(job, analysis)
    return outcome.error, pa.cpu_count(), threads.may_spread()


def test_a_pool_worker_runs_on_one_thread_and_the_caller_keeps_its_own(suite):
    """A job run in a worker process leaves it one thread of pyarrow's and none of the
    readers'; run in the caller's own process (a Dask cluster of threads), the caller's
    threads are left as they were."""
    from concurrent.futures import ProcessPoolExecutor

    job, before = jobs_of(suite)[0], pa.cpu_count()
    with ProcessPoolExecutor(max_workers=1) as pool:
        assert pool.submit(_worker_threads, job, analysis()).result() == (None, 1, False)
    assert _worker_threads(job, analysis()) == (None, before, True)


def test_an_lda_added_to_a_warm_cache_scores_as_a_plain_run(suite, tmp_path):
    """The added LDA is classified and replayed from the cached timeline, its throughput ratios
    taken from the cached baselines' rows: the same table as a run without cache."""
    cache, jobs, added = str(tmp_path / "cache"), jobs_of(suite), "all,biaz:upper=1.5"
    batching.execute(jobs, analysis(cache, ldas="all"))
    warm = batching.execute(jobs, analysis(cache, ldas=added))
    assert all(o.cached for o in warm)
    plain_outcomes = batching.execute(jobs, analysis(ldas=added))
    plain = batching.results_table(plain_outcomes)
    assert {"thput", "vs_omniscient"} <= set(plain.columns) and plain["vs_omniscient"].notna().any()
    pd.testing.assert_frame_equal(batching.results_table(warm), plain)
    for cached, fresh in zip(warm, plain_outcomes):  # the tables themselves, categoricals and all
        for part in ("decisions", "summary", "throughput"):
            pd.testing.assert_frame_equal(getattr(cached.result, part), getattr(fresh.result, part))


def test_a_trace_the_controller_cannot_replay_is_not_tried_again_from_the_cache(tmp_path, monkeypatch):
    """A capture on two clocks without feedback has no RTT: the first run stores why, a re-run
    that adds an LDA says the same without building the signals again."""
    from ldanalyze.control import Signals

    capture = str(TRACES / "captures" / "lab_receiver.pcap")
    jobs, cache = [batching.Job(name=capture, path=capture)], str(tmp_path / "cache")
    first = batching.execute(jobs, analysis(cache))
    assert first[0].error is None and first[0].result.throughput is None
    assert len(list((tmp_path / "cache").rglob("no_signals.txt"))) == 1
    monkeypatch.setattr(Signals, "of", classmethod(lambda *a, **k: pytest.fail("signals built again")))
    again = batching.execute(jobs, analysis(cache, ldas="biaz,zbs,spike,mbiaz"))
    assert again[0].error is None and again[0].result.throughput is None
    assert set(again[0].result.decisions["lda"].cat.categories) == {"biaz", "zbs", "spike", "mbiaz"}


def test_the_cache_is_keyed_by_content_and_options(suite, tmp_path):
    cache = str(tmp_path / "cache")
    jobs = jobs_of(suite)
    cold = batching.execute(jobs, analysis(cache))
    warm = batching.execute(jobs, analysis(cache, ldas="biaz:upper=1.5,zbs,spike"))
    assert not any(o.cached for o in cold) and all(o.cached for o in warm)
    unchanged = batching.execute(jobs, analysis(cache, ldas="biaz:upper=1.5,zbs,spike"))  # reads no trace
    assert [o.packets for o in unchanged] == [o.packets for o in warm] == [o.packets for o in cold]
    pd.testing.assert_frame_equal(
        batching.results_table(batching.execute(jobs, analysis(cache))), batching.results_table(cold)
    )
    pd.testing.assert_frame_equal(
        batching.results_table(batching.execute(jobs, analysis())), batching.results_table(cold)
    )  # the cached path scores as the plain one
    changed = batching.results_table(warm)
    assert set(changed["lda"]) == {"biaz:upper=1.5", "zbs", "spike"}
    # same name, other content: a new entry, read afresh; the same content under another name: a hit
    target = suite / SUITE[0]
    shutil.copy(TRACES / "wlh_mix_4flow_high.tr.gz", target)
    again = {o.job.name: o for o in batching.execute(jobs, analysis(cache))}
    assert not again[str(target)].cached and again[str(target)].packets == 8022
    twin = suite / "copy.tr.gz"
    shutil.copy(TRACES / SUITE[1], twin)
    (hit,) = batching.execute([batching.Job(name=str(twin), path=str(twin))], analysis(cache))
    assert hit.cached and hit.result.summary["trace"].unique().tolist() == [str(twin)]
    optioned = batching.Job(name="x", path=str(suite / "sub" / SUITE[2]), read_options=(("flow_by", "addr"),))
    assert batching.cache_key(optioned) != batching.cache_key(batching.Job(name="x", path=optioned.path))


def test_file_digests_are_remembered_by_status_and_a_write_forgets_them(tmp_path, monkeypatch):
    cache, trace = str(tmp_path / "cache"), tmp_path / "a.tr"
    trace.write_bytes(b"x" * 1000)
    fresh = batching.file_digest(str(trace), cache)
    assert not (tmp_path / "cache" / "digests").exists()  # changed under 2 s ago: never remembered
    monkeypatch.setattr(batching.cache, "RECENT_NS", 0)
    assert batching.file_digest(str(trace), cache) == fresh
    (memo,) = (tmp_path / "cache" / "digests").iterdir()
    saved = json.loads(memo.read_text())
    memo.write_text(json.dumps({**saved, "digest": "remembered"}))
    assert batching.file_digest(str(trace), cache) == "remembered"  # same status: not read again
    time.sleep(0.05)  # past a tick of the file system's clock
    trace.write_bytes(b"y" * 1000)  # same size, new content
    assert batching.file_digest(str(trace), cache) == batching.file_digest(str(trace)) != fresh


@pytest.mark.parametrize("losses", [True, False])
def test_cached_controller_signals_round_trip(tmp_path, losses):
    from ldanalyze import build_timeline, read_trace
    from ldanalyze.control import PathModel, Signals
    from ldanalyze.lda import Replay

    trace = read_trace(TRACES / "wlh_mix_4flow_high.tr.gz")
    if not losses:
        trace = dataclasses.replace(trace, packets=trace.packets[trace.packets["fate"] == "delivered"])
    tl = build_timeline(trace)
    assert (len(tl.losses) > 0) == losses
    semantics = Replay(detection=3)
    signals = Signals.of(tl, semantics, PathModel())
    signals.save(tmp_path / "signals.bin")
    loaded = Signals.load(tmp_path / "signals.bin", tl, semantics, PathModel())
    for field in dataclasses.fields(Signals):
        want, got = getattr(signals, field.name), getattr(loaded, field.name)
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), field.name
        else:
            assert got == want, field.name


def test_ctrl_c_keeps_what_finished(suite):
    jobs = jobs_of(suite)
    seen = []

    def interrupt(outcome):
        seen.append(outcome)
        if len(seen) == 2:
            raise KeyboardInterrupt

    outcomes = batching.execute(jobs, analysis(), on_outcome=interrupt)
    assert [o.job.name for o in outcomes] == [j.name for j in jobs[:2]]
    assert set(batching.results_table(outcomes)["trace"]) >= {jobs[0].name, jobs[1].name}


@pytest.mark.parametrize(
    "signum, code, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_the_command_stopped_by_a_signal_writes_what_finished(tmp_path, signum, code, said):
    """Ctrl-C, or SIGTERM (a CI runner cancelling or timing out a job: it ended the process with
    no output), stops ``ldanalyze batch`` with the outputs written for the traces done."""
    import subprocess
    import sys

    folder = tmp_path / "suite"
    folder.mkdir()
    for i in range(20):
        for name in SUITE:
            shutil.copy(TRACES / name, folder / f"{i}_{name}")
    out, junit = tmp_path / "results.csv", tmp_path / "junit.xml"
    command = [
        sys.executable,
        "-m",
        "ldanalyze.cli",
        "batch",
        str(folder),
        "--no-cache",
        "--jobs",
        "2",
        "--lda",
        "biaz",
        "-o",
        str(out),
        "--junit",
        str(junit),
    ]
    # Ctrl-C as at a terminal: a runner that started the tests as a background job has them
    # ignore SIGINT (POSIX shells do so without job control), which the child would inherit
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for line in process.stderr:  # one line per trace when not on a terminal
        if line.startswith("batch: [3/"):
            process.send_signal(signum)
            break
    printed, _ = process.communicate(timeout=120)
    assert process.returncode == code
    done = int(printed.splitlines()[-1].split(f"{said} after ")[1].split(" of ")[0])
    assert 3 <= done < 3 * 20
    results = pd.read_csv(out)
    assert results.loc[results["scope"] == "trace", "trace"].nunique() == done
    assert int(ET.parse(junit).getroot().get("tests")) == done


@pytest.mark.parametrize(
    "text", ["__import__('os').system('true')", "zbs.M_c > x", "zbs.M_c >> 1", "M_c > 1", "zbs.M_c > 1; rm", ""]
)
def test_threshold_expressions_are_parsed_never_evaluated(text):
    with pytest.raises(UsageError, match="LDA.METRIC OP NUMBER"):
        Threshold.parse(text)


def test_thresholds_pass_fail_and_undefined():
    results = pd.DataFrame(
        {
            "scope": ["pooled"] * 3,
            "trace": ["*"] * 3,
            "flow": ["*"] * 3,
            "lda": ["zbs", "biaz", "spike"],
            "M_c": [0.04, 0.06, float("nan")],
        }
    )
    checks = check_thresholds(results, [Threshold.parse("*.M_c > 0.05")])
    assert checks["status"].tolist() == ["pass", "fail", "undefined"]
    assert check_thresholds(results, [Threshold.parse("zbs.M_c <= 0.04")])["status"].tolist() == ["fail"]
    with pytest.raises(UsageError, match="no metric"):
        check_thresholds(results, [Threshold.parse("zbs.M_x > 1")])
    with pytest.raises(UsageError, match="no LDA"):
        check_thresholds(results, [Threshold.parse("zigzag.M_c > 1")])


def test_baseline_regressions_beyond_the_tolerance():
    keys = {"scope": ["pooled", "pooled"], "trace": ["*", "*"], "flow": ["*", "*"], "lda": ["zbs", "biaz"]}
    old = pd.DataFrame({**keys, "M_c": [0.10, 0.10], "M_w": [0.2, 0.2], "accuracy": [0.8, 0.8]})
    new = pd.DataFrame({**keys, "M_c": [0.115, 0.13], "M_w": [0.2, 0.1], "accuracy": [0.8, 0.7]})
    table = compare_baseline(new, old, tolerance=0.02)
    bad = table[table["status"] == "regressed"]
    assert sorted(zip(bad["lda"], bad["metric"])) == [("biaz", "M_c"), ("biaz", "accuracy")]
    gone = compare_baseline(new.iloc[:1], old, tolerance=0.02)
    assert gone.loc[gone["lda"] == "biaz", "status"].tolist() == ["missing"]


def test_a_retuned_lda_is_compared_with_its_baseline_self_and_nothing_is_guessed_between_two():
    assert retuned_ldas(pd.Series(["biaz:upper=1.6", "zbs"]), pd.Series(["biaz", "zbs"])) == {"biaz": "biaz:upper=1.6"}
    assert retuned_ldas(pd.Series(["biaz:upper=1.6", "biaz:upper=1.2"]), pd.Series(["biaz"])) == {}
    assert retuned_ldas(pd.Series(["biaz", "biaz:upper=1.6"]), pd.Series(["biaz"])) == {}  # biaz is still there
    assert retuned_ldas(pd.Series(["mbiaz"]), pd.Series(["biaz"])) == {}  # another kind
    keys = {"scope": ["pooled"] * 2, "trace": ["*"] * 2, "flow": ["*"] * 2}
    old = pd.DataFrame({**keys, "lda": ["biaz", "zbs"], "M_c": [0.10, 0.10]})
    new = pd.DataFrame({**keys, "lda": ["biaz:upper=1.6", "zbs"], "M_c": [0.15, 0.10]})
    table = compare_baseline(new, old, tolerance=0.02)
    assert table[["lda", "baseline_lda", "status"]].values.tolist() == [
        ["biaz:upper=1.6", "biaz", "regressed"],
        ["zbs", "zbs", "pass"],
    ]
    twice = pd.concat([new, new.assign(lda=["biaz:upper=1.2", "zbs"]).iloc[:1]], ignore_index=True)
    assert compare_baseline(twice, old)["status"].tolist() == ["missing", "pass"]


def test_failed_checks_are_listed_pooled_first_and_cut_short_in_a_log():
    rows = [
        {
            "scope": "flow",
            "trace": "t",
            "flow": str(k),
            "lda": "zbs",
            "baseline_lda": "zbs",
            "metric": "M_c",
            "status": "regressed",
            "message": f"M_c 0 -> {k}",
        }
        for k in range(12)
    ]
    rows.insert(
        5,
        {
            "scope": "pooled",
            "trace": "*",
            "flow": "*",
            "lda": "biaz:upper=1.6",
            "baseline_lda": "biaz",
            "metric": "M_w",
            "status": "regressed",
            "message": "M_w 0.1 -> 0.2",
        },
    )
    threshold = {
        "check": "fail-if zbs.M_c > 0.05",
        "scope": "pooled",
        "trace": "*",
        "flow": "*",
        "lda": "zbs",
        "status": "fail",
        "message": "zbs.M_c = 0.3",
    }
    checks = pd.concat([pd.DataFrame([threshold]), pd.DataFrame(rows)], ignore_index=True)
    lines = ci.failed_lines(checks)
    assert lines[0] == "FAILED fail-if zbs.M_c > 0.05 [pooled zbs]: zbs.M_c = 0.3"
    assert lines[1] == "FAILED baseline M_w [pooled biaz:upper=1.6 (baseline: biaz)]: M_w 0.1 -> 0.2"
    assert lines[2] == "FAILED baseline M_c [flow t 0 zbs]: M_c 0 -> 0"
    assert len(lines) == 11 and lines[-1] == "... and 4 more failed checks (--summary or --json lists all)"
    names = [
        c.get("name")
        for c in ET.fromstring(
            ci.junit_xml([], pd.DataFrame(columns=["trace", "error"]), checks).split("\n", 1)[1]
        ).iter("testcase")
    ]
    assert names[:2] == ["fail-if zbs.M_c > 0.05 [pooled zbs]", "baseline M_c [flow t 0 zbs]"]
    assert not any("nan" in name for name in names)


def test_ci_outputs_parse_validate_and_count(suite, tmp_path):
    broken(suite)
    junit, summary, report = tmp_path / "junit.xml", tmp_path / "summary.md", tmp_path / "report.json"
    code = run(
        tmp_path,
        suite,
        "--junit",
        junit,
        "--summary",
        summary,
        "--json",
        report,
        "--controller",
        "none",
        "--fail-if",
        "*.M_c > 0.5",
        "--fail-if",
        "zbs.accuracy < 0.01",
    )
    assert code == 1
    suite_xml = ET.parse(junit).getroot()
    cases = suite_xml.findall("testcase")
    checks = 3 + 1  # '*.M_c' on three LDAs, 'zbs.accuracy' on one
    assert int(suite_xml.get("tests")) == len(cases) == 4 + checks
    assert int(suite_xml.get("errors")) == len(suite_xml.findall("testcase/error")) == 1
    failures = int(suite_xml.get("failures"))
    payload = json.loads(report.read_text())
    jsonschema.validate(payload, JSON_SCHEMA)
    lines = report.read_text().splitlines()  # a record a line, between the tables' brackets
    start = lines.index(' "results": [')
    assert [
        json.loads(line.strip().rstrip(",")) for line in lines[start + 1 : start + 1 + len(payload["results"])]
    ] == payload["results"] and lines[start + 1 + len(payload["results"])] == " ],"
    assert payload["passed"] is False
    assert payload["traces"] == {"scored": 3, "without_losses": 0, "failed": 1, "passed_over": 1}
    assert payload["passed_over"] == [{"path": str(suite / "README.txt"), "why": "no known trace format"}]
    assert failures == sum(c["status"] == "fail" for c in payload["checks"])
    text = summary.read_text()
    assert text.startswith("### ldanalyze batch: **failed**") and "broken.tr" in text
    assert "<summary>Files passed over (1)</summary>" in text
    assert f"| {suite / 'README.txt'} | no known trace format |" in text


def test_the_pooled_throughput_rows_say_their_mean_and_flag_what_they_show(tmp_path):
    """The bundled traces, batched as docs/batch.md does: zbs showed `78.8 †` against
    omniscient's 80.1 with † "above the omniscient receiver's", and omniscient `vs unaware`
    1.84 where 80.1 / 50.4 = 1.59 (means of the flows' ratios). The rows now name their mean,
    the ratios are those of the numbers shown, and † marks a thput above omniscient's."""
    summary = tmp_path / "summary.md"
    args = ["batch", str(TRACES), "--exclude", "*.em.gz", "--no-cache", "--jobs", "1", "-q", "--summary", str(summary)]
    assert main(args) == 0
    lines = summary.read_text().splitlines()
    header = next(line for line in lines if line.startswith("| metric |")).strip("|").split("|")
    ldas = [cell.strip() for cell in header[1:]]
    rows = {}
    for line in lines:
        if line.startswith("| ") and not line.startswith("| metric"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows[cells[0]] = dict(zip(ldas, cells[1:]))
    # the bundled traces hold several flows each on packet-pair capacities: outside the model's range (‡)
    shown = rows["thput % (mean over flows) ‡"]
    thput = {lda: float(cell.removesuffix(" †")) for lda, cell in shown.items()}
    flagged = {lda for lda, cell in shown.items() if cell.endswith("†")}
    vs_omniscient = {lda: float(cell) for lda, cell in rows["vs omniscient (ratio of means)"].items()}
    vs_unaware = {lda: float(cell) for lda, cell in rows["vs unaware (ratio of means)"].items()}
    assert {"fairness std % (mean over traces)", "Jain index (mean over traces)"} <= set(rows)
    assert flagged, "no LDA rests on ignored congestion: the check below checks nothing"
    losses = rows["losses"]

    def slack(lda: str, base: str) -> float:
        """How far a ratio shown to two places may be from that of two throughputs shown to one."""
        return 0.005 + thput[lda] / thput[base] * (0.05 / thput[lda] + 0.05 / thput[base])

    for lda in ldas:
        if losses[lda] != losses["omniscient"]:  # run on fewer traces (adaptive_rtt): its own flows
            continue
        assert vs_omniscient[lda] == pytest.approx(thput[lda] / thput["omniscient"], abs=slack(lda, "omniscient"))
        assert vs_unaware[lda] == pytest.approx(thput[lda] / thput["unaware"], abs=slack(lda, "unaware"))
        if thput[lda] != thput["omniscient"]:  # equal as shown: either side of it unrounded
            above = thput[lda] > thput["omniscient"] and float(rows["M_c %"][lda]) > 0
            assert (lda in flagged) == above, lda
    assert vs_unaware["omniscient"] == pytest.approx(
        thput["omniscient"] / thput["unaware"], abs=slack("omniscient", "unaware")
    )


def against_a_worse_biaz(suite, baseline) -> int:
    """``batch``'s exit code for the suite scored with Biaz far from the paper's threshold,
    against ``baseline``."""
    lda = "biaz:upper=3,zbs,spike"
    return main(["batch", str(suite), "--no-cache", "--jobs", "1", "--lda", lda, "--controller", "none",
                 "--baseline", str(baseline)])  # fmt: skip


def test_baseline_round_trip_on_the_command_line(suite, tmp_path, capsys):
    saved = tmp_path / "baseline.parquet"
    assert run(tmp_path, suite, "-o", saved, "--controller", "none") == 0
    assert run(tmp_path, suite, "--baseline", saved, "--controller", "none") == 0
    # a worse biaz (a threshold far from the paper's) regresses its accuracy
    code = against_a_worse_biaz(suite, saved)
    out = capsys.readouterr().out
    assert code == 1 and "FAILED baseline" in out and "biaz" in out


def test_a_json_table_or_report_is_a_baseline_to_the_last_bit(suite, tmp_path, capsys):
    """``-o results.json`` and the ``--json`` report read back as baselines: equal to the Parquet
    table's values exactly, so ``--tolerance 0`` passes against the run that wrote them (pandas'
    ``to_json`` kept 10 digits, and it failed) and a retuned LDA still regresses."""
    table, report, parquet = tmp_path / "results.json", tmp_path / "report.json", tmp_path / "results.parquet"
    assert run(tmp_path, suite, "-o", table, "--json", report, "--controller", "none") == 0
    assert run(tmp_path, suite, "-o", parquet, "--controller", "none") == 0
    written = pd.read_parquet(parquet)
    for baseline in (table, report):
        read = gates_read(baseline)
        floats = [c for c in written.columns if written[c].dtype.kind == "f"]
        assert list(read.columns) == list(written.columns)
        np.testing.assert_array_equal(read[floats].to_numpy(np.float64), written[floats].to_numpy(np.float64))
        assert run(tmp_path, suite, "--baseline", baseline, "--tolerance", "0", "--controller", "none") == 0
        code = against_a_worse_biaz(suite, baseline)
        assert code == 1 and "FAILED baseline" in capsys.readouterr().out
    (tmp_path / "other.json").write_text('{"a": 1}')
    assert run(tmp_path, suite, "--baseline", tmp_path / "other.json") == 2
    assert "neither a JSON table" in capsys.readouterr().err


def gates_read(path):
    from ldanalyze.gates import read_results

    return read_results(str(path))


def test_the_errors_table_lists_the_traces_that_failed(suite, tmp_path, capsys):
    bad = broken(suite)
    for name in ("errors.csv", "errors.json", "errors.parquet"):
        out = tmp_path / name
        assert run(tmp_path, suite, "--errors", out, "--controller", "none") == 1
        errors = (
            pd.read_csv(out)
            if name.endswith(".csv")
            else pd.read_json(out)
            if name.endswith(".json")
            else pd.read_parquet(out)
        )
        assert list(errors.columns) == ["trace", "error"] and errors["trace"].tolist() == [str(bad)]
        assert errors["error"][0].startswith(f"{bad}:2: field 'time' is not a valid float")
    bad.unlink()
    assert run(tmp_path, suite, "--errors", tmp_path / "none.csv", "--controller", "none") == 0
    assert pd.read_csv(tmp_path / "none.csv").columns.tolist() == ["trace", "error"]  # none failed: a header
    capsys.readouterr()
    assert run(tmp_path, suite, "--errors", tmp_path / "errors.txt") == 2
    captured = capsys.readouterr()
    assert "errors.txt: a table is written as" in captured.err and "batch: [" not in captured.err


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20))
def test_json_tables_keep_every_float_exactly_and_write_missing_as_null(values):
    table = pd.DataFrame(
        {
            "x": np.array(values, np.float64),
            "n": np.arange(len(values)),
            "s": pd.Categorical([f"v{i % 3}" for i in range(len(values))]),
        }
    )
    read = json.loads(table_text(table))
    assert [r["x"] for r in read] == [v if np.isfinite(v) else None for v in values]
    assert [r["n"] for r in read] == list(range(len(values))) and read[0]["s"] == "v0"


def test_settings_come_from_ldanalyze_toml_and_the_command_line_wins(suite, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ldanalyze.toml").write_text(
        f'paths = ["{suite}"]\nlda = "biaz,zbs"\ncontroller = "none"\nno_cache = true\njobs = 1\n'
        'fail_if = ["zbs.M_c > 0.0"]\ngap-delay = "previous"\ndetection = 3\noutput = "out.csv"\n'
    )
    assert main(["batch"]) == 1
    assert "settings from" in capsys.readouterr().out
    from_file = pd.read_csv(tmp_path / "out.csv")
    assert sorted(from_file["lda"].unique()) == ["biaz", "zbs"]  # the file's LDAs, not the option's default
    assert main(["batch", "--lda", "spike", "--fail-if", "spike.M_c > 0.99"]) == 0  # the options replace the file's
    assert sorted(pd.read_csv(tmp_path / "out.csv")["lda"].unique()) == ["spike"]
    # the file's replay settings apply: the same as given on the command line, not as the defaults
    main(["batch", "--gap-delay", "previous", "--detection", "3", "-o", "options.csv"])
    main(["batch", "--gap-delay", "revealing", "--detection", "1", "-o", "defaults.csv"])
    options, defaults = pd.read_csv(tmp_path / "options.csv"), pd.read_csv(tmp_path / "defaults.csv")
    pd.testing.assert_frame_equal(from_file, options)
    assert not from_file.equals(defaults)
    # 0 given on the command line is given: a tolerance of 0 is not the file's
    (tmp_path / "ldanalyze.toml").write_text(
        f'paths = ["{suite}"]\nno_cache = true\njobs = 1\ntolerance = 0.5\ncontroller = "none"\nlda = "biaz"\n'
    )
    assert main(["batch", "-o", "base.csv"]) == 0
    worse = pd.read_csv(tmp_path / "base.csv")
    worse.loc[worse["scope"] == "pooled", "M_c"] -= 0.01  # the baseline 0.01 better than the results
    worse.to_csv(tmp_path / "better.csv", index=False)
    assert main(["batch", "--baseline", "better.csv"]) == 0  # within the file's tolerance, 0.5
    assert main(["batch", "--baseline", "better.csv", "--tolerance", "0"]) == 1
    (tmp_path / "ldanalyze.toml").write_text('colour = "red"\n')
    assert main(["batch", str(suite)]) == 2


def test_manifest_lists_traces_with_labels_and_options(suite, tmp_path):
    trace = suite / SUITE[0]
    labels = tmp_path / "labels.csv"
    assert main(["labels", str(trace), "-o", str(labels)]) == 0
    (tmp_path / "m.toml").write_text(f'[[trace]]\nname = "bursty"\npath = "{trace}"\nlabels = "labels.csv"\n')
    (tmp_path / "m.csv").write_text(f"name,path,labels\nbursty,{trace},labels.csv\n")
    for manifest in ("m.toml", "m.csv"):
        (job,) = batching.read_manifest(str(tmp_path / manifest))
        assert (job.name, job.path, job.labels) == ("bursty", str(trace), str(labels))
        (outcome,) = batching.execute([job], analysis())
        assert outcome.error is None and outcome.result.summary["trace"].unique().tolist() == ["bursty"]
    (tmp_path / "bad.toml").write_text('[[trace]]\nlabels = "x.csv"\n')
    with pytest.raises(UsageError, match="entry 1: give a path or a vantage chain"):
        batching.read_manifest(str(tmp_path / "bad.toml"))
    (tmp_path / "bad.toml").write_text(f'[[trace]]\npath = "{trace}"\ncolour = "red"\n')
    with pytest.raises(UsageError, match=r"entry 1: unknown key\(s\) colour \(known: name, path, vantage"):
        batching.read_manifest(str(tmp_path / "bad.toml"))


def test_a_manifest_reads_a_field_spec_and_labels_flows_inside_tunnels(tmp_path):
    """A capture of flows in GTP-U, VXLAN, GRE and IP-in-IP tunnels (tests/support/tunnels.py),
    its sequence numbers read by a field spec; a labels file names one flow by its label, tunnel
    and all, and its two losses are scored."""
    tunnel_capture(tmp_path / "t.pcap")
    flow = "10.0.0.1:5000>10.0.0.2:6000/udp/gtpu=0x1234@192.0.0.1>192.0.0.2"
    (tmp_path / "labels.csv").write_text(f"flow,seq,cause\n{flow},5,congestion\n{flow},17,wireless\n")
    (tmp_path / "m.toml").write_text(
        f'[[trace]]\npath = "t.pcap"\nfield = "seq=0:4,time=4:8:ns"\nlabels = "labels.csv"\nflows = ["{flow}"]\n'
    )
    (job,) = batching.read_manifest(str(tmp_path / "m.toml"))
    (outcome,) = batching.execute([job], analysis())
    assert outcome.error is None
    losses = outcome.result.summary.set_index("flow").loc[flow]
    assert (losses["congestion"], losses["wireless"]) == (1, 1)
    (tmp_path / "bad.toml").write_text('[[trace]]\npath = "t.pcap"\nfield = "seq=0:4"\npayload = "rtp"\n')
    with pytest.raises(UsageError, match="entry 1: give either payload or field"):
        batching.read_manifest(str(tmp_path / "bad.toml"))
    (tmp_path / "bad.toml").write_text('[[trace]]\npath = "t.pcap"\nfield = "seq=zero"\n')
    with pytest.raises(UsageError, match="entry 1: field:"):
        batching.read_manifest(str(tmp_path / "bad.toml"))


REAL_CAPTURES = sorted((TRACES.parent / "tests" / "data" / "real").glob("*.pcap*")) + sorted(
    (TRACES / "captures").glob("*.pcap")
)


def test_a_big_capture_is_read_one_flow_at_a_time_with_the_whole_reads_results(tmp_path):
    """Above the size limit a capture is read flow by flow (its memory bounded by its largest
    flow) and scores as the whole read does: the real captures of tests/data/real and the lab's,
    and the lab receiver's 41 losses labelled through a labels file."""
    receiver = TRACES / "captures" / "lab_receiver.pcap"
    losses = la.build_timeline(la.read_trace(str(receiver), skew="keep")).losses  # (skew: no matter to seqs)
    labels = tmp_path / "labels.csv"
    causes = np.where(np.arange(len(losses)) % 3 == 0, "wireless", "congestion")
    pd.DataFrame({"flow": losses["flow"].astype(str), "seq": losses["seq"], "cause": causes}).to_csv(
        labels, index=False
    )
    jobs = [batching.Job(name=str(p), path=str(p)) for p in REAL_CAPTURES]
    jobs.append(batching.Job(name="labelled", path=str(receiver), labels=str(labels)))

    def run(above, cache=None, ldas="all"):
        ran = batching.Analysis(ldas=ldas, controller="tfrc", flow_at_a_time_above=above, cache_dir=cache)
        assert batching.running._flow_at_a_time(jobs[0], ran) == (above == 0)
        outcomes = batching.execute(jobs, ran)
        assert [o.error for o in outcomes] == [None] * len(jobs)
        return batching.results_table(outcomes), [o.cached for o in outcomes]

    whole, _ = run(None)
    cache = str(tmp_path / "cache")
    for expect_cached in (False, True):  # the second run decodes no capture
        split, cached = run(0, cache)  # (the labelled job has the bytes of the one before it)
        assert cached == [expect_cached] * (len(jobs) - 1) + [True]
        pd.testing.assert_frame_equal(split, whole)
    labelled = whole[(whole["scope"] == "trace") & (whole["trace"] == "labelled") & (whole["lda"] == "biaz")]
    assert len(labelled) == 1 and labelled["M_w"].notna().all() and labelled["M_c"].notna().all()
    # another LDA, and other labels: from the flows' cached timelines and parsed traces
    more = "biaz,zbs,spike,biaz:upper=1.5"
    pd.testing.assert_frame_equal(run(0, cache, more)[0], run(None, None, more)[0])
    pd.DataFrame({"flow": losses["flow"].astype(str), "seq": losses["seq"], "cause": "wireless"}).to_csv(
        labels, index=False
    )
    relabelled, cached = run(0, cache)
    assert all(cached)
    pd.testing.assert_frame_equal(relabelled, run(None)[0])
    # a label for a flow the capture lacks is an error, as in the whole read
    with labels.open("a") as f:
        f.write("10.9.9.9:1>10.9.9.8:2/udp,7,wireless\n")
    for cached in (None, cache):
        (outcome,) = batching.execute(
            jobs[-1:], batching.Analysis(ldas="biaz", flow_at_a_time_above=0, cache_dir=cached)
        )
        assert "10.9.9.9:1>10.9.9.8:2/udp" in outcome.error


def test_a_capture_read_one_flow_at_a_time_takes_a_rules_file_as_the_whole_read_does(tmp_path):
    """A rules file (weak labels) on a capture read flow by flow: the same scores as the whole
    read, a rule that matches no flow left to its warning (the check that a labels file names
    only the capture's flows is a labels table's)."""
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ncause = "congestion"\n[[rule]]\nflow = "10.9.9.9*"\ncause = "wireless"\n')
    job = batching.Job(name="lab", path=str(TRACES / "captures" / "lab_receiver.pcap"), labels=str(rules))
    tables = []
    for above, cache in ((None, None), (0, None), (0, str(tmp_path / "cache"))):
        outcomes = batching.execute([job], batching.Analysis(ldas="biaz", flow_at_a_time_above=above, cache_dir=cache))
        assert [o.error for o in outcomes] == [None]
        tables.append(batching.results_table(outcomes))
    for split in tables[1:]:
        pd.testing.assert_frame_equal(split, tables[0])


def test_flow_at_a_time_sizes_on_the_command_line(suite, tmp_path, capsys):
    capture = tmp_path / "c" / "lab.pcap"
    capture.parent.mkdir()
    shutil.copy(TRACES / "captures" / "lab_receiver.pcap", capture)
    common = ["batch", str(capture.parent), "--no-cache", "--jobs", "1", "--lda", "biaz", "--controller", "none"]
    assert main([*common, "--flow-at-a-time-above", "0", "-o", str(tmp_path / "split.csv")]) == 0
    assert main([*common, "--flow-at-a-time-above", "never", "-o", str(tmp_path / "whole.csv")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "split.csv"), pd.read_csv(tmp_path / "whole.csv"))
    assert main([*common, "--flow-at-a-time-above", "lots"]) == 2
    assert "'lots' is no size" in capsys.readouterr().err
    shutil.copy(TRACES.parent / "tests" / "data" / "real" / "stun_wa_call.pcapng", capture.parent)  # nothing lost
    assert main(common) == 0
    assert "batch: 1 trace(s) scored, 1 without losses (nothing to score), 0 failed" in capsys.readouterr().out


def test_a_cache_file_is_the_same_read_and_written_whole_or_streamed_and_mapped(tmp_path, monkeypatch):
    """Small cache files are read and written whole, in memory; large ones (a big flow's) are
    streamed to disk and memory-mapped back: the same bytes and the same frames either way."""
    from ldanalyze.timeline import build_timeline

    timeline = build_timeline(la.read_trace(TRACES / "wlh_mix_4flow_high.tr.gz"))
    for name in ("arrivals", "gaps", "losses"):
        table = getattr(timeline, name)
        batching.cache._write_piece(table, tmp_path / "whole.arrow")
        whole = batching.cache._read_table(tmp_path / "whole.arrow")
        with monkeypatch.context() as m:
            m.setattr(batching.cache, "WHOLE_FILE_BYTES", 0)
            batching.cache._write_piece(table, tmp_path / "streamed.arrow")
            mapped = batching.cache._read_table(tmp_path / "streamed.arrow")
        assert (tmp_path / "whole.arrow").read_bytes() == (tmp_path / "streamed.arrow").read_bytes()
        pd.testing.assert_frame_equal(whole, mapped)
        pd.testing.assert_frame_equal(whole, table.reset_index(drop=True), check_categorical=False)


def test_an_lda_that_all_brought_in_may_be_left_out_one_named_may_not_cached_or_not(tmp_path):
    """On a capture on two clocks without feedback adaptive_rtt cannot run. Brought in by "all",
    alone or in a list with a retuned LDA, it is left out with a warning; named on its own it
    is an error. The cache gives the same, whatever it remembers of earlier runs."""
    from ldanalyze.lda import optional_specs, runnable_ldas
    from ldanalyze.timeline import build_timeline

    from ..support.captures import Endpoints, Record, ip_packet, link_frame, rtp_payload, write_pcap

    records = [
        Record(10**9 + seq * 20_000_000, link_frame(1, ip_packet(Endpoints(), rtp_payload(seq, seq * 160, 7))))
        for seq in range(200)
        if seq % 50 != 25
    ]
    capture = tmp_path / "rtp.pcap"
    write_pcap(capture, records, 1)
    every = {lda.spec for lda in la.lda.parse_ldas("all")}
    assert optional_specs("all") == optional_specs(None) == every
    assert optional_specs("all,biaz:upper=1.4") == optional_specs(["all", "biaz:upper=1.4"]) == every
    assert optional_specs("adaptive_rtt,zbs") == set()
    timeline = build_timeline(la.read_trace(capture))
    with pytest.warns(UserWarning, match="adaptive_rtt left out"):
        kept = [lda.spec for lda in runnable_ldas(timeline, "all,biaz:upper=1.4")]
    assert "adaptive_rtt" not in kept and "biaz:upper=1.4" in kept
    with pytest.raises(UsageError, match="adaptive_rtt"):
        runnable_ldas(timeline, "adaptive_rtt,zbs")
    job = [batching.Job(name="rtp", path=str(capture))]
    plain = batching.results_table(batching.execute(job, batching.Analysis(ldas="all,biaz:upper=1.4")))
    cache = str(tmp_path / "cache")
    batching.execute(job, batching.Analysis(ldas="all", cache_dir=cache))  # remembers adaptive_rtt left out
    cached = batching.results_table(
        batching.execute(job, batching.Analysis(ldas="all,biaz:upper=1.4", cache_dir=cache))
    )
    pd.testing.assert_frame_equal(plain, cached)
    for cache_dir in (None, cache):
        (named,) = batching.execute(job, batching.Analysis(ldas="adaptive_rtt,zbs", cache_dir=cache_dir))
        assert named.error is not None and "adaptive_rtt" in named.error


def test_cache_tables_become_the_frames_pyarrow_makes():
    """_as_frame's own conversion against pyarrow's to_pandas: dictionaries over several chunks
    with different labels and a null, numbers with and without nulls, booleans, strings, an
    empty table."""
    import pyarrow as pa

    def labels(codes, names):
        return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), pa.array(names))

    one = pa.table(
        {
            "lda": labels([0, 1, 1], ["zbs", "biaz"]),
            "n": pa.array([1, 2, 3], pa.int64()),
            "t": pa.array([0.5, None, 1.5]),
            "ok": pa.array([True, False, True]),
            "flow": pa.array(["a", "b", None]),
            "k": pa.array([1, None, 3], pa.int32()),
        }
    )
    two = pa.table(
        {
            "lda": labels([0, None], ["spike"]),
            "n": pa.array([4, 5], pa.int64()),
            "t": pa.array([2.0, 3.0]),
            "ok": pa.array([False, False]),
            "flow": pa.array(["c", "d"]),
            "k": pa.array([4, 5], pa.int32()),
        }
    )
    for table in (
        one,
        two,
        pa.concat_tables([one, two], promote_options="permissive"),
        one.slice(0, 0),
        one.schema.empty_table(),
    ):
        pd.testing.assert_frame_equal(batching.cache._as_frame(table), table.to_pandas(ignore_metadata=True))
    stacked = batching.cache._as_frame(pa.concat_tables([one, two], promote_options="permissive"))
    assert stacked["lda"].tolist()[:4] == ["zbs", "biaz", "biaz", "spike"] and pd.isna(stacked["lda"].iloc[4])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=6),
            st.permutations(["a", "b", "c", "d"]),
            st.integers(0, 4),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_stacking_keeps_categoricals_and_the_values_of_pandas_concat(pieces):
    """A column categorical in every frame stays categorical (pandas turns categoricals with
    differing categories into text) and holds what ``pd.concat`` gives, row by row; so do the
    other columns. Pieces: labels, their categories' order and how many there are (0: none,
    as a frame of no rows has), and whether a label is missing."""
    frames = []
    for labels, order, kept, missing in pieces:
        categories = [c for c in order[:kept] if c] or [c for c in order if c in labels]
        values = [None if missing and i == 0 else v for i, v in enumerate(labels)]
        values = [v if v in categories else None for v in values]
        column = pd.Categorical(values, categories=categories) if categories else pd.Categorical([None] * len(values))
        frames.append(
            pd.DataFrame(
                {
                    "label": column,
                    "n": np.arange(len(values), dtype=np.int64),
                    "text": pd.Series([f"t{i}" for i in range(len(values))], dtype=str),
                }
            )
        )
    stacked = in_process._concat(frames)
    expected = pd.concat(frames, ignore_index=True)
    assert list(stacked.columns) == ["label", "n", "text"] and len(stacked) == len(expected)
    assert isinstance(stacked["label"].dtype, pd.CategoricalDtype)
    assert (
        stacked["label"].astype(object).where(stacked["label"].notna(), None).tolist()
        == expected["label"].astype(object).where(expected["label"].notna(), None).tolist()
    )
    assert stacked["n"].dtype == np.int64 and stacked["n"].tolist() == expected["n"].tolist()
    assert stacked["text"].tolist() == expected["text"].tolist()


def test_a_cached_trace_keeps_its_meta_exactly(tmp_path):
    """The cache's meta.json holds floats as they were (pandas' ``to_json`` kept 10 digits: a
    clock fit's excess of 0.006000041961669922 s came back 0.006000042)."""
    trace = la.read_trace(pathlib.Path(__file__).parents[1] / "data" / "real" / "discord.pcap")
    fits = trace.meta["clock_fit"]
    batching.cache.store(tmp_path / "entry", trace)
    back = batching.cache.load_entry(tmp_path / "entry", None)
    pd.testing.assert_frame_equal(pd.DataFrame(back.meta["clock_fit"]), fits, check_dtype=False, check_exact=True)
    assert any(abs(v - round(v, 10)) > 0 for v in fits["excess_s"].dropna())  # a value that needs every digit


def test_the_agreement_in_a_batch_is_that_of_every_decision(tmp_path, pool_always):
    """The workers send the LDAs' agreement as counts per flow (their decisions tallied away):
    per trace and pooled, the results table gives ``consensus.agreement`` of every decision,
    whether run here, on a pool, one flow at a time, or from the cache cold and warm; the
    baselines, which do not vote, get none."""
    from ldanalyze.consensus import agreement

    paths = [str(TRACES / "wlh_mix_4flow_high.tr.gz"), *map(str, sorted((TRACES / "captures").glob("lab_r*.pcap")))]
    jobs, ldas = [batching.Job(name=p, path=p) for p in paths], "biaz,zbs,spike,zigzag,unaware"
    decisions = in_process.analyze_traces(paths, ldas).decisions
    kept = batching.Analysis(ldas=ldas, keep="counts")
    cached = dataclasses.replace(kept, cache_dir=str(tmp_path / "cache"))
    runs = {
        "here": batching.execute(jobs, kept),
        "pool": batching.execute(jobs, kept, workers=2),
        "flow at a time": batching.execute(jobs, dataclasses.replace(kept, flow_at_a_time_above=0)),
        "cold": batching.execute(jobs, cached),
        "warm": batching.execute(jobs, cached),
    }
    assert all(o.cached for o in runs["warm"]) and not any(o.cached for o in runs["cold"])
    table = batching.results_table(runs["here"])
    for outcomes in runs.values():
        pd.testing.assert_frame_equal(batching.results_table(outcomes), table)
    for scope, keys, expected in (
        ("trace", ["trace"], agreement(decisions, ("trace",))),
        ("pooled", [], agreement(decisions)),
    ):
        rows = table[table["scope"] == scope]
        baseline = rows["lda"] == "unaware"
        assert baseline.any() and rows.loc[baseline, ["agrees_with_others", "mean_kappa"]].isna().all().all()
        both = rows[~baseline].merge(
            expected.astype({k: str for k in keys}),
            on=[*keys, "lda"],
            how="outer",
            suffixes=("", "_all"),
            validate="1:1",
        )
        assert len(both) == len(expected) >= 4 * (len(paths) if keys else 1)
        for column in ("called", "compared", "agrees_with_others", "mean_kappa"):
            np.testing.assert_allclose(both[column].astype(float), both[f"{column}_all"].astype(float), rtol=1e-12)
        assert both["agrees_with_others"].notna().all() and both["mean_kappa"].notna().any()
