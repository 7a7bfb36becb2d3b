"""The commands over suites: ``batch`` (settings, progress, CI outputs) and ``reproduce``."""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import signal
import sys
import time
from collections.abc import Iterator

import pandas as pd

from .. import batch as batching
from .. import gates
from ..control import DEFAULT_CONTROLLER
from ..errors import UsageError
from ..lda import parse_ldas
from ..report import ci
from ..report.tables import text_table
from ..scoring.losses import EXCLUDED
from .options import REPLAY_DEFAULTS, byte_size, replay_semantics
from .writing import table_kind, write_output, write_table

BATCH_DEFAULTS = {
    "lda": "all",
    "controller": "auto",
    "fail_if": [],
    "fail_scope": "pooled",
    "baseline": None,
    "tolerance": 0.02,
    "baseline_ci": False,
    "jobs": os.cpu_count() or 1,
    "scheduler": None,
    "cache_dir": None,
    "no_cache": False,
    "exclude": [],
    "bootstrap": 0,
    "strict": False,
    "manifest": None,
    "output": None,
    "errors": None,
    "junit": None,
    "summary": None,
    "json": None,
    "quiet": False,
    "flow_at_a_time_above": batching.FLOW_AT_A_TIME_ABOVE,
    **REPLAY_DEFAULTS,
    "seq_modulus": None,
    "route_as": EXCLUDED,
    "policing_as": EXCLUDED,
}


def _batch_settings(args: argparse.Namespace) -> dict:
    """Command line over the config file (ldanalyze.toml or [tool.ldanalyze]) over defaults."""
    config, source = batching.load_config(".")
    unknown = sorted(set(k.replace("-", "_") for k in config) - set(BATCH_DEFAULTS) - {"paths"})
    if unknown:
        raise UsageError(f"{source}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(BATCH_DEFAULTS)})")
    settings = {**BATCH_DEFAULTS, **{k.replace("-", "_"): v for k, v in config.items()}}
    for key in BATCH_DEFAULTS:
        given = getattr(args, key, None)
        if given is not None and given is not False:  # 0 is given (--tolerance 0), an unset flag is not
            settings[key] = given
    settings["paths"] = args.paths or config.get("paths", [])
    settings["config"] = source
    return settings


def _check_outputs(s: dict) -> None:
    """Before a batch runs: its tables' names say a known format, and no two outputs are one
    file (the second written would replace the first)."""
    for table in ("output", "errors"):
        if s[table]:
            table_kind(s[table], None)
    outputs = [(key, s[key]) for key in ("output", "errors", "junit", "summary", "json") if s[key]]
    for i, (key, path) in enumerate(outputs):
        for other, other_path in outputs[:i]:
            if os.path.abspath(path) == os.path.abspath(other_path):
                raise UsageError(f"--{key} and --{other} name the same file, {path}: one would overwrite the other")


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[list[int]]:
    """SIGTERM (a CI runner cancelling or timing out a job) stops the batch as Ctrl-C does, so
    that the outputs are written for the traces done; the list it yields is not empty once
    SIGTERM came."""
    came: list[int] = []

    def interrupt(signum, frame):
        came.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


def _usable_folder(path: str, option: str) -> None:
    """Make the folder ``path`` if need be; refuse one that cannot be made or written to, as
    bad usage before the run (it failed every trace with the same OSError)."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot make this folder ({exc.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: this folder cannot be written to")


def _progress(total: int, quiet: bool = False):
    """A progress bar on a terminal; one line per trace in a log; with ``quiet``, a line per
    trace that failed only."""
    start = time.perf_counter()
    state = {"done": 0, "packets": 0}
    bar = None
    if sys.stderr.isatty() and not quiet:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="trace", file=sys.stderr)

    def step(outcome) -> None:
        state["done"] += 1
        state["packets"] += outcome.packets
        rate = state["packets"] / max(time.perf_counter() - start, 1e-9)
        if bar is not None:
            bar.set_postfix_str(f"{rate / 1e3:.0f} k packets/s")
            bar.update(1)
            return
        if quiet and not outcome.error:
            return
        status = f"error: {outcome.error.splitlines()[0]}" if outcome.error else f"{outcome.packets} packets"
        cached = ", cached" if outcome.cached else ""
        print(
            f"batch: [{state['done']}/{total}] {outcome.job.name}: {status} ({outcome.seconds:.2f} s{cached})",
            file=sys.stderr,
            flush=True,
        )

    return step, bar


def cmd_reproduce(args: argparse.Namespace) -> int:
    from ..reproduce import reproduce, rewrite

    if args.paper != "paper000":
        raise UsageError(f"reproduce knows paper000, not {args.paper!r}")
    if args.rewrite:
        written = rewrite(args.output, "quick" if args.quick else "full")
        print(
            f"wrote {', '.join(p.name for p in written.values())} in {args.output} from its result files (nothing simulated)"
        )
        _print_checks(pd.read_csv(written["checks"]), written)
        return 0
    closed = None
    if args.wireless_as_received and not args.closed_loop:
        raise UsageError("--wireless-as-received sets the closed loop's receiver: give --closed-loop too")
    if args.closed_loop:
        from ..closedloop import patched_ns

        print("ns-2.35 with the LDA receiver (built once per patch text, minutes the first time): ", end="", flush=True)
        closed = patched_ns()
        print(closed, flush=True)
    done = reproduce(
        args.output, quick=args.quick, jobs=args.jobs, closed=closed, wireless_as_received=args.wireless_as_received
    )
    print(
        f"{done['traces']} traces ({done['simulated']} simulated now, the rest from the cache) scored in "
        f"{done['seconds']:.0f} s; wrote {args.output}/README.md, results.csv, tables II and III, figures and checks.csv"
    )
    if done["closed"]:
        equal, total = done["closed"]["crosscheck"]
        print(f"closed loop: the receivers' decisions and the offline replay agree on {equal:,} of {total:,}")
    _print_checks(pd.read_csv(done["written"]["checks"]), done["written"])
    return 0


def _print_checks(checks: pd.DataFrame, written: dict) -> None:
    """The README's headline (Tables II and III cell by cell) and each statement's verdict."""
    readme = pathlib.Path(written["readme"]).read_text().split("\n\nSuite ")[0]
    print("\n".join(line for line in readme.splitlines()[2:] if line))
    for row in checks.itertuples():
        print(f"  [{row.holds:>10}] {row.traffic}: {row.id}: {row.evidence}")
    if "checks_closed.csv" in written:
        print("closed loop (open -> closed), written to closed_loop.csv, checks_closed.csv, model_vs_truth.csv:")
        for row in pd.read_csv(written["checks_closed.csv"]).itertuples():
            print(f"  [{row.holds_open:>10} -> {row.holds_closed:<10}] {row.id}: {row.statement}")


def cmd_batch(args: argparse.Namespace) -> int:
    s = _batch_settings(args)
    thresholds = [gates.Threshold.parse(t) for t in s["fail_if"]]
    gates.check_threshold_names(thresholds, [lda.spec for lda in parse_ldas(s["lda"])])
    baseline = gates.read_results(s["baseline"]) if s["baseline"] else None
    _check_outputs(s)
    jobs = batching.read_manifest(s["manifest"]) if s["manifest"] else []
    traces, passed_over = batching.discover(s["paths"], s["exclude"]) if s["paths"] else ([], {})
    jobs += [batching.Job(name=path, path=path) for path in traces]
    if not jobs:
        raise UsageError("batch: no trace found (give files, folders or globs, or a --manifest)")
    inputs = [f for job in jobs for f in job.files] + [j.labels for j in jobs if j.labels]
    cache_dir = (
        None
        if s["no_cache"]
        else (
            s["cache_dir"]
            or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ldanalyze")
        )
    )
    if cache_dir:
        _usable_folder(cache_dir, "--cache-dir")
    controller = {"none": None, "auto": DEFAULT_CONTROLLER}.get(s["controller"], s["controller"])
    semantics = replay_semantics(argparse.Namespace(**s))
    analysis = batching.Analysis(
        ldas=s["lda"],
        controller=controller,
        semantics=semantics,
        seq_modulus=s["seq_modulus"],
        cache_dir=cache_dir,
        flow_at_a_time_above=byte_size(str(s["flow_at_a_time_above"])),
        keep="bursts" if int(s["bootstrap"]) else "counts",
    )
    step, bar = _progress(len(jobs), quiet=s["quiet"])
    with _terminate_as_interrupt() as terminated:
        outcomes = batching.execute(
            jobs, analysis, workers=int(s["jobs"]), scheduler=s["scheduler"], on_outcome=step, strict=s["strict"]
        )
    if bar is not None:
        bar.close()
    interrupted = len(outcomes) < len(jobs)
    results = batching.results_table(
        outcomes, bootstrap=int(s["bootstrap"]), route_as=s["route_as"], policing_as=s["policing_as"]
    )
    errors = batching.errors_table(outcomes)
    checks = [gates.check_thresholds(results, thresholds, s["fail_scope"])] if thresholds and len(results) else []
    if baseline is not None:
        checks.append(gates.compare_baseline(results, baseline, float(s["tolerance"]), bool(s["baseline_ci"])))
    checks = pd.concat(checks, ignore_index=True) if checks else pd.DataFrame(columns=["check", "status", "message"])
    failed_checks = int(checks["status"].isin(ci.FAILED).sum())
    passed = failed_checks == 0 and errors.empty and not interrupted
    done = [o.job.name for o in outcomes]
    # without losses: read and analysed, but nothing lost to score
    counts: ci.Counts = {
        "passed_over": passed_over,
        "without_losses": len(outcomes) - len(errors) - ci.scored_traces(results),
    }

    if s["output"]:
        write_table(results, s["output"], inputs, None)
    if s["errors"]:
        write_table(errors, s["errors"], inputs, None)
    if s["junit"]:
        write_output(s["junit"], inputs, lambda tmp: pathlib.Path(tmp).write_text(ci.junit_xml(done, errors, checks)))
    if s["summary"]:
        text = ci.markdown_summary(results, errors, checks, passed=passed, **counts)
        write_output(s["summary"], inputs, lambda tmp: pathlib.Path(tmp).write_text(text))
    if s["json"]:
        report = ci.json_report(results, errors, checks, passed=passed, **counts)
        write_output(s["json"], inputs, lambda tmp: pathlib.Path(tmp).write_text(ci.report_text(report)))

    print(
        "batch: "
        + ci.counts_line(results, errors, **counts)
        + (f" (settings from {s['config']})" if s["config"] else "")
    )
    for _, row in errors.iterrows():
        first = row["error"].splitlines()[0]  # a reader's error names its file already
        print(f"  error: {first if first.startswith(str(row['trace'])) else row['trace'] + ': ' + first}")
    for old, new in gates.retuned_ldas(results["lda"], baseline["lda"]).items() if baseline is not None else ():
        print(f"  baseline: {new} compared with the baseline's {old} (the one LDA of its kind that changed)")
    for line in ci.failed_lines(checks):
        print(f"  {line}")
    if interrupted:
        print(
            f"batch: {'terminated' if terminated else 'interrupted'} after {len(outcomes)} of {len(jobs)} "
            "traces; the outputs hold those"
        )
        return 143 if terminated else 130
    if not s["output"] and len(results):
        sys.stdout.write(text_table(results[results["scope"] == "pooled"].drop(columns=["scope", "trace", "flow"])))
    return 0 if passed else 1
