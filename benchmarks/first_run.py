"""First-run cost: whole ``ldanalyze`` commands with an empty numba cache (as on a fresh install:
every kernel a command calls compiles, unless its work is small enough to run interpreted, see
ldanalyze/tiering.py), each against a baseline measured in the same run, taking turns with it:
a fresh interpreter importing ``ldanalyze.cli`` and ending as a command does (the imports every
command pays). Then the same command with the cache warm. Targets: ``score`` of the README's
trace <= 1.5 s on a fresh install (issue #49; on a noisy machine read the ratio, times the
baseline on a quiet one); ``inspect`` of a capture <= 4 s (the field-captures issue).

The package is copied without numba's cache and byte-compiled, as ``pip install`` leaves it.
Usage: ``python benchmarks/first_run.py [--repeat 5] [CAPTURE]`` (default: the bundled lab
receiver capture).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
README_TRACE = ROOT / "traces" / "wlh_cbr_1flow_bursty.tr.gz"


def timed(command: list[str], env: dict, cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=cwd)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("capture", nargs="?", default=str(ROOT / "traces" / "captures" / "lab_receiver.pcap"))
    parser.add_argument("--repeat", type=int, default=5, help="cold runs of each command (and of the baseline)")
    args = parser.parse_args()
    ns2 = str(ROOT / "traces" / "wlh_tfrc_1flow_high.tr.gz")
    commands = [["score", str(README_TRACE)], ["inspect", str(README_TRACE)]]
    commands += [["inspect", args.capture], ["score", args.capture], ["inspect", ns2], ["score", ns2]]
    with tempfile.TemporaryDirectory() as tmp:
        package = pathlib.Path(tmp) / "ldanalyze"
        shutil.copytree(ROOT / "ldanalyze", package, ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
        cache = pathlib.Path(tmp) / "numba"
        env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": tmp, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("LDANALYZE_KERNELS", None)
        # ends as a command ends, without the interpreter's teardown (ldanalyze.cli.run says why)
        baseline = [sys.executable, "-c", "import os, ldanalyze.cli; os._exit(0)"]
        timed(baseline, env, tmp)  # the page cache warm
        print(
            f"{'command (empty numba cache)':46s} {'best':>6s} {'baseline':>8s}  {'ratio, run by run':28s} {'warm':>6s}"
        )
        for command_args in commands:
            command = [sys.executable, "-m", "ldanalyze.cli", *command_args]
            cold, base = [], []
            for _ in range(args.repeat):
                shutil.rmtree(cache, ignore_errors=True)
                base.append(timed(baseline, env, tmp))
                cold.append(timed(command, env, tmp))
            warm = min(timed(command, env, tmp) for _ in range(3))
            name = "ldanalyze " + " ".join(pathlib.Path(a).name for a in command_args)
            ratios = " ".join(f"{c / b:.2f}" for c, b in zip(cold, base))
            print(f"{name:46s} {min(cold):5.2f}s {min(base):7.2f}s  {ratios:28s} {warm:5.2f}s")
            print(
                f"{'':46s} cold runs: {' '.join(f'{t:.2f}' for t in cold)}; baseline: {' '.join(f'{t:.2f}' for t in base)}"
            )
    print("baseline: a fresh interpreter importing ldanalyze.cli (then os._exit), run just before each cold run")
    print("ratio: the cold run over its baseline; warm: the best of three runs after them (cache filled)")
    print("targets: score of the README's trace <= 1.5 s (issue #49); inspect of a capture <= 4 s")


if __name__ == "__main__":
    main()
