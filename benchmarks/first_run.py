"""First-run cost: ``ldanalyze inspect`` of a capture with an empty numba cache (as on a fresh
install, every kernel it calls compiles) against the same command with the cache warm, in one
run. The field-captures issue targets <= 4 s for the first. Usage:
``python benchmarks/first_run.py [CAPTURE]`` (default: the bundled lab receiver capture).
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
    with tempfile.TemporaryDirectory() as tmp:
        package = pathlib.Path(tmp) / "ldanalyze"
        shutil.copytree(ROOT / "ldanalyze", package, ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "NUMBA_CACHE_DIR": str(pathlib.Path(tmp) / "numba"), "PYTHONPATH": tmp,
               "PYTHONDONTWRITEBYTECODE": "1"}
        command = [sys.executable, "-m", "ldanalyze.cli", "inspect", capture]
        cold = timed(command, env, tmp)
        warm = min(timed(command, env, tmp) for _ in range(3))
    print(f"ldanalyze inspect {pathlib.Path(capture).name}")
    print(f"  empty numba cache (first run): {cold:.2f} s   (target <= 4 s)")
    print(f"  warm cache                   : {warm:.2f} s")
    print(f"  first run / warm             : {cold / warm:.1f}x")


if __name__ == "__main__":
    main()
