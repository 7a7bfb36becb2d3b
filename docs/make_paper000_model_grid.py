"""Rebuild docs/paper000/model_grid.md: the open-loop throughput model chosen on one seed of a
grid built to make the LDAs differ, and reported on the other (issue #46 §3;
``ldanalyze.reproduce.model_grid`` says what the grid is).

    python docs/make_paper000_model_grid.py [CACHE] [--jobs N] [--frame model_grid.csv.gz]

Every run is cached in CACHE/traces; ``--frame`` judges a frame written before and simulates
nothing (for a new page over the same numbers).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ldanalyze import closedloop  # noqa: E402
from ldanalyze.reproduce import model_grid  # noqa: E402
from ldanalyze.reproduce.tables import model_grid_page  # noqa: E402

OUT = ROOT / "docs" / "paper000"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", nargs="?", default="/tmp/ldanalyze-paper000-model-grid", help="traces")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--frame", help="a model_grid.csv(.gz) written before: judge it, simulate nothing")
    args = parser.parse_args(argv)
    if args.frame:
        frame, made = pd.read_csv(args.frame), f"the frame `{pathlib.Path(args.frame).name}` written before"
    else:
        folder = pathlib.Path(args.cache) / "traces"
        folder.mkdir(parents=True, exist_ok=True)
        scenarios = model_grid.grid_scenarios()
        start = time.perf_counter()
        frame, simulated = model_grid.run_grid(scenarios, folder, args.jobs, closedloop.patched_ns())
        made = (
            f"{len(frame)} closed-loop runs ({simulated} simulated now), {time.perf_counter() - start:.0f} s on "
            f"{args.jobs} worker(s)"
        )
        frame.drop(columns="trace").to_csv(OUT / "model_grid.csv.gz", index=False)  # its paths are this machine's
    (OUT / "model_grid.md").write_text(model_grid_page(frame, made))
    print(f"{made}; wrote {OUT / 'model_grid.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
