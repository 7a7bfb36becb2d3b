"""First-run cost: ``ldanalyze inspect`` and ``score`` of a capture and of an ns-2 trace with an
empty numba cache (as on a fresh install: every kernel a command calls compiles, unless its work is
small enough to run interpreted, see ldanalyze/tiering.py) against the same command with the cache
warm, in one run. The field-captures issue targets <= 4 s for the first inspect of a capture.
Usage: ``python benchmarks/first_run.py [CAPTURE]`` (default: the bundled lab receiver capture).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def timed(command: list[str], env: dict, cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=cwd)
    return time.perf_counter() - t0


def main() -> None:
    capture = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "traces" / "captures" / "lab_receiver.pcap")
    ns2 = str(ROOT / "traces" / "wlh_tfrc_1flow_high.tr.gz")
    commands = [["inspect", capture], ["score", capture], ["inspect", ns2], ["score", ns2]]
    with tempfile.TemporaryDirectory() as tmp:
        package = pathlib.Path(tmp) / "ldanalyze"
        shutil.copytree(ROOT / "ldanalyze", package, ignore=shutil.ignore_patterns("__pycache__"))
        env = {
            **os.environ,
            "NUMBA_CACHE_DIR": str(pathlib.Path(tmp) / "numba"),
            "PYTHONPATH": tmp,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        env.pop("LDANALYZE_KERNELS", None)
        print(f"{'command':60s} {'first run':>10s} {'warm':>8s} {'ratio':>6s}")
        for args in commands:
            command = [sys.executable, "-m", "ldanalyze.cli", *args]
            shutil.rmtree(pathlib.Path(tmp) / "numba", ignore_errors=True)
            cold = timed(command, env, tmp)
            warm = min(timed(command, env, tmp) for _ in range(3))
            name = "ldanalyze " + " ".join(pathlib.Path(a).name for a in args)
            print(f"{name:60s} {cold:9.2f}s {warm:7.2f}s {cold / warm:5.1f}x")
    print("first run: an empty numba cache, as on a fresh install (target for inspect of a capture: <= 4 s)")
    print("each command starts from an empty cache; warm: the best of three runs after it")


if __name__ == "__main__":
    main()
