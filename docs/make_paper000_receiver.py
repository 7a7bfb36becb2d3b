"""Rebuild docs/paper000/receiver.md: paper 000's Tables II and III closed loop with each of the
receiver's two readings of §IV (issue #46 §2), beside the paper's.

Both receivers keep a loss their LDA calls wireless out of TFRC's loss event rate (§I); with
``wireless_as_received`` the receiver also counts it as received in TFRC's receive rate X_recv
(§IV: "in the same way as received packets"; ``ldanalyze.closedloop``). The runs are the full
suite's one-flow TFRC scenarios of Tables II and III (WLH and WB; uniform and bursty loss of
7.8 %; seeds 1-3; 200 s after a 20 s warm-up), each LDA steering its own receiver, once per
reading: the same scenarios, so a ``reproduce paper000 --closed-loop`` run whose traces folder
is given as CACHE shares its default runs with this one.

    python docs/make_paper000_receiver.py [CACHE] [--jobs N] [--out docs/paper000/receiver.md]

Then ``ldanalyze reproduce paper000 -o docs/paper000 --rewrite`` embeds the page in the README's
closed-loop section.
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
from ldanalyze.reproduce.closed_suite import RECEIVER_PAGE, closed_loop  # noqa: E402
from ldanalyze.reproduce.suite import CELL_LOSSES, SUITES, Suite  # noqa: E402
from ldanalyze.reproduce.tables import receiver_page  # noqa: E402

FULL = SUITES["full"]
# the full suite's scenarios of Tables II and III: one TFRC flow, both topologies, the two 7.8 % losses
TABLES = Suite(FULL.topologies, (1,), CELL_LOSSES, FULL.seeds, FULL.duration, FULL.warmup, ("tfrc",))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", nargs="?", default="/tmp/ldanalyze-paper000-receiver", help="traces and run files")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=str(ROOT / "docs" / "paper000" / RECEIVER_PAGE))
    args = parser.parse_args(argv)
    cache = pathlib.Path(args.cache)
    folder = cache / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    ns = closedloop.patched_ns()
    frames, notes = {}, []
    for faithful in (False, True):
        out = cache / ("iv" if faithful else "ns2")
        out.mkdir(exist_ok=True)
        start = time.perf_counter()
        loop = closed_loop(TABLES, out, folder, args.jobs, ns, faithful)
        seconds = time.perf_counter() - start
        frames[faithful] = loop["closed"]
        equal, total = loop["crosscheck"]
        notes.append(
            f"{'`iv`' if faithful else '`ns2`'}: {loop['runs']} runs ({loop['simulated']} simulated now, {seconds:.0f} s "
            f"on {args.jobs} worker(s)), the receivers' decisions and the offline replay alike on {equal:,} of {total:,}"
        )
        print(notes[-1], flush=True)
    made = (
        f"Runs: the full suite's one-flow scenarios of Tables II and III ({', '.join(TABLES.topologies)}; "
        f"{', '.join(f'{m} {r:g}' for m, r in TABLES.losses)}; seeds {', '.join(map(str, TABLES.seeds))}; "
        f"{TABLES.duration} s after a {TABLES.warmup} s warm-up), each LDA steering its own receiver, by "
        f"`docs/make_paper000_receiver.py`; " + "; ".join(notes) + "."
    )
    both = pd.concat([frames[False], frames[True]], ignore_index=True)
    both.drop(columns="trace").to_csv(pathlib.Path(args.out).with_suffix(".csv"), index=False)
    pathlib.Path(args.out).write_text(receiver_page(frames[False], frames[True], made))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
