"""A large suite from a warm cache, as a CI job re-runs it: ``--traces`` jobs (default 1,000) over
the bundled traces and captures, each file linked under many names (the cache is keyed by
content, so every job is a cache hit after one warm-up run).

In this process, on a pool of two workers: the batch and its results table with every decision
sent back to the parent (``Analysis(keep="decisions")``, the library's default) against the
tally the command keeps (``keep="counts"``), and the bytes of the tables the parent then holds.
Then the whole ``ldanalyze batch`` command, with its JUnit, summary and JSON outputs. Usage:
``python benchmarks/batch_suite.py [--traces 1000]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ldanalyze import batch as batching  # noqa: E402


def held_bytes(outcomes) -> int:
    """Bytes of the tables the outcomes hold."""
    return sum(
        int(table.memory_usage(deep=False).sum())
        for o in outcomes
        if o.result is not None
        for table in (o.result.decisions, o.result.summary, o.result.throughput)
        if table is not None
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each (the best is shown)")
    args = parser.parse_args()
    sources, _ = batching.discover([str(ROOT / "traces")], exclude=["*.em.gz"])
    with tempfile.TemporaryDirectory() as folder:
        suite, cache = pathlib.Path(folder) / "suite", pathlib.Path(folder) / "cache"
        suite.mkdir()
        for i in range(args.traces):
            source = pathlib.Path(sources[i % len(sources)])
            (suite / f"{i:05d}_{source.name}").symlink_to(source)
        jobs = [batching.Job(name=str(p), path=str(p)) for p in sorted(suite.iterdir())]
        every = batching.Analysis(ldas="all", controller="tfrc", cache_dir=str(cache))
        batching.execute(jobs, every, workers=2)  # fills the cache
        times = {"decisions": [], "counts": []}
        held = {}
        for _ in range(args.repeat):
            for keep in times:
                analysis = dataclasses.replace(every, keep=keep)
                t0 = time.perf_counter()
                outcomes = batching.execute(jobs, analysis, workers=2)
                batching.results_table(outcomes)
                times[keep].append(time.perf_counter() - t0)
                held[keep] = held_bytes(outcomes)
        command = [
            sys.executable,
            "-m",
            "ldanalyze.cli",
            "batch",
            str(suite),
            "--cache-dir",
            str(cache),
            "-o",
            f"{folder}/r.parquet",
            "--junit",
            f"{folder}/j.xml",
            "--summary",
            f"{folder}/s.md",
            "--json",
            f"{folder}/r.json",
        ]
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "ldanalyze")], check=True)
        whole = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                lines = [line for line in done.stderr.splitlines() if not line.startswith("batch: [")]
                sys.exit(f"ldanalyze batch failed ({done.returncode}):\n" + "\n".join(lines[-20:]))
            whole.append(time.perf_counter() - t0)
    best = {keep: min(seconds) for keep, seconds in times.items()}
    print(f"suite: {len(jobs)} jobs over {len(sources)} bundled files, every LDA, TFRC, warm cache, 2 workers")
    for keep in times:
        print(
            f"  keep={keep:<9}: batch + results table {best[keep]:.2f} s "
            f"(runs: {', '.join(f'{t:.2f}' for t in times[keep])}), tables held by the parent "
            f"{held[keep] / 1e6:.0f} MB"
        )
    print(
        f"  tally against every decision: {best['decisions'] / best['counts']:.2f}x faster, "
        f"{held['decisions'] / held['counts']:.0f}x less held"
    )
    print(
        f"  whole `ldanalyze batch` with JUnit, summary and JSON: {min(whole):.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in whole)}), {1e3 * min(whole) / len(jobs):.1f} ms a trace"
    )


if __name__ == "__main__":
    main()
