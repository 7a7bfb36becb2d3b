"""ns-3 scenario generation time, as a user runs it: ``traces/ns3/scenario.py`` with an empty
cache (the build, then a 60-second run) and the same run again (cached), for Wi-Fi and LTE.
The simulated-wireless issue targets a 60-second Wi-Fi scenario generated in < 30 s.
Usage: ``python benchmarks/ns3_scenarios.py [--duration 60]`` (needs libns3-dev)."""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def timed(command: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=60)
    args = parser.parse_args()
    script = [sys.executable, str(ROOT / "traces" / "ns3" / "scenario.py")]
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "LDANALYZE_NS3_CACHE": cache}
        for name in ("wifi", "lte"):
            cold = timed([*script, name, "--duration", str(args.duration)], env)
            other_seed = timed([*script, name, "--duration", str(args.duration), "--seed", "2"], env)
            cached = timed([*script, name, "--duration", str(args.duration)], env)
            print(
                f"{name}, {args.duration} simulated s: build + run {cold:5.1f} s, run alone {other_seed:5.1f} s, "
                f"cached {cached:4.2f} s" + ("   (target < 30 s)" if name == "wifi" else "")
            )


if __name__ == "__main__":
    main()
