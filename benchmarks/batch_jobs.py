"""``ldanalyze batch --jobs 2`` against ``--jobs 1`` as a user runs them (fresh processes, no
cache, every LDA and TFRC), in one run: on 16 traces of 1 M ns-2 lines each (copies of
``ns2_ingest.build``'s trace, cut), where the speed issue asks >= 1.7x; and on a suite too
small to gain from a pool (two bundled traces), where ``--jobs 2`` must not be slower.

``--jobs 1`` is not one core: alone, a job parses its next block on a thread and pyarrow uses
its pool, so the last line also times the 16 jobs on one single-threaded process and on two
(``python -c`` loops of ``run_job``, as the pool's workers run them): the scaling the cores
allow. Runs alternate, ``--repeat`` times; every run is printed, the best compared. Usage:
``python benchmarks/batch_jobs.py [--jobs-count 16] [--lines 1000000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import ns2_ingest  # noqa: E402

SINGLE_THREADED = (
    "import sys, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "from ldanalyze import batch, threads\n"
    "from ldanalyze.batch.running import run_job\n"
    "threads.one_per_worker()\n"
    "analysis = batch.Analysis(ldas='all', controller='tfrc', keep='counts')\n"
    "for path in sys.argv[1:]:\n"
    "    run_job(batch.Job(name=path, path=path), analysis)\n"
)


def timed(command: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def runs(times: list[float]) -> str:
    return f"{min(times):6.2f} s   (runs: {', '.join(f'{t:.2f}' for t in times)})"


def jobs_pair(folder: pathlib.Path, repeat: int) -> tuple[list[float], list[float]]:
    batch = [sys.executable, "-m", "ldanalyze", "batch", str(folder), "--no-cache", "--quiet"]
    batch += ["--lda", "all", "--controller", "tfrc", "-o", str(folder.parent / f"{folder.name}.csv")]
    timed([*batch, "--jobs", "1"])  # numba's cache and the page cache
    ones, twos = [], []
    for _ in range(repeat):
        ones.append(timed([*batch, "--jobs", "1"]))
        twos.append(timed([*batch, "--jobs", "2"]))
    return ones, twos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs-count", type=int, default=16)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "ldanalyze")], check=True, stdout=subprocess.DEVNULL
    )
    source = ns2_ingest.build(max(args.lines, 2_000_000))
    with tempfile.TemporaryDirectory() as tmp:
        big = pathlib.Path(tmp) / "big"
        big.mkdir()
        with open(source, "rb") as full, open(big / "t00.tr", "wb") as cut:
            for _ in range(args.lines):
                cut.write(full.readline())
        for k in range(1, args.jobs_count):
            shutil.copyfile(big / "t00.tr", big / f"t{k:02d}.tr")
        small = pathlib.Path(tmp) / "small"
        small.mkdir()
        for name in ("wlh_cbr_1flow_bursty.tr.gz", "wb_tfrc_2flow_medium.tr.gz"):
            shutil.copyfile(ROOT / "traces" / name, small / name)

        ones, twos = jobs_pair(big, args.repeat)
        print(f"batch of {args.jobs_count} ns-2 traces of {args.lines:,} lines, every LDA and TFRC, no cache")
        print(f"  --jobs 1                      : {runs(ones)}")
        print(f"  --jobs 2                      : {runs(twos)}")
        print(
            f"  --jobs 1 / --jobs 2           : {min(ones) / min(twos):6.2f}x   (target >= 1.7x; run by run: "
            f"{', '.join(f'{a / b:.2f}' for a, b in zip(ones, twos))})"
        )
        paths = sorted(str(p) for p in big.iterdir())
        alone = [timed([sys.executable, "-c", SINGLE_THREADED, *paths]) for _ in range(args.repeat)]
        halves = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            workers = [
                subprocess.Popen([sys.executable, "-c", SINGLE_THREADED, *paths[k::2]], stdout=subprocess.DEVNULL)
                for k in range(2)
            ]
            for worker in workers:
                worker.wait()
            halves.append(time.perf_counter() - t0)
        print(f"  one single-threaded process   : {runs(alone)}")
        print(
            f"  two, half the jobs each       : {runs(halves)}   {min(alone) / min(halves):.2f}x (what 2 cores allow)"
        )

        ones, twos = jobs_pair(small, args.repeat)
        print("a suite too small to gain from a pool: two bundled traces")
        print(f"  --jobs 1                      : {runs(ones)}")
        print(f"  --jobs 2                      : {runs(twos)}   {min(twos) / min(ones):.2f}x the time (target <= 1)")


if __name__ == "__main__":
    main()
