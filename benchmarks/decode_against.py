"""Plain-capture decode rate of this tree against another checkout (``main``), in one run.

Both trees decode the same generated capture (``pcap_ingest.py``'s: 8 flows of
Ethernet/IPv4/UDP/RTP, 172-byte payloads, no tunnel) in small child processes started with
``PYTHONPATH`` set to each tree in turn, ``--rounds`` times, alternating, so that both see the
same machine load; each child takes the best of ``--repeat``, and each tree's figure is its best
child. Two figures per tree:

* ``kernel``: ``PcapWalk.run`` into a record array already paged in (the numba walk and
  decode alone, as the per-packet cost the two trees differ in);
* ``decode``: ``decode_capture`` as a user calls it (fresh records, flow table, counts).

each as wall time and as the process's CPU time (``*_cpu``: less disturbed by other load on
the machine, which the wall time shows as preemption).

numba's disk cache of ``walk.py`` does not notice a change to the frame decoder's modules alone, so the
cached machine code of both trees is deleted first (``--keep-cache`` to skip) and a first child
per tree compiles before any timing. Prints each tree's rates, the spread of its children
(noise) and this tree's time per packet against the other's.

Usage: ``python benchmarks/decode_against.py --base /path/to/main-worktree
[--packets N] [--rounds K] [--repeat R] [--capture FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from pcap_ingest import build, write_pcap  # noqa: E402

# Runs in the child, with only the tree under test importable.
CHILD = r"""
import json, os, sys, time
import ldanalyze
from ldanalyze.io.capture.pcap import CHUNK_BYTES, decode_capture
from ldanalyze.io.capture.source import ByteWindow
from ldanalyze.io.capture.walk import Output, PcapWalk

path, repeat, tree = sys.argv[1], int(sys.argv[2]), sys.argv[3]
assert os.path.realpath(ldanalyze.__file__).startswith(os.path.realpath(tree)), ldanalyze.__file__
output = Output(16)

def kernel():
    # the same record array each time (paged in), fresh flow table
    fresh = Output(16)
    output.n, output.keys, output.slots, output.n_flows = 0, fresh.keys, fresh.slots, 0
    for name in ("tunnels", "tunnel_slots", "n_tunnels", "by_tunnel"):
        if hasattr(fresh, name):
            setattr(output, name, getattr(fresh, name))
    with ByteWindow(path, CHUNK_BYTES) as stream:
        stream.refill(0, 64)
        PcapWalk(stream).run(output)
    return output.n

def best(fn):
    wall = cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        n = fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu, n

n_decoded = len(decode_capture(path).records)  # compile or load the kernels
kernel_wall, kernel_cpu, n = best(kernel)
assert n == n_decoded
decode_wall, decode_cpu, _ = best(lambda: len(decode_capture(path).records))
print(json.dumps({"packets": n, "kernel": kernel_wall, "kernel_cpu": kernel_cpu, "decode": decode_wall,
                  "decode_cpu": decode_cpu}))
"""

FIGURES = ("kernel", "kernel_cpu", "decode", "decode_cpu")


def clear_cache(tree: pathlib.Path) -> int:
    """Delete numba's cached machine code under ``tree/ldanalyze``; returns the files removed."""
    removed = 0
    for suffix in ("*.nbi", "*.nbc"):
        for f in (tree / "ldanalyze").rglob(suffix):
            f.unlink()
            removed += 1
    return removed


def child(tree: pathlib.Path, capture: pathlib.Path, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), LDANALYZE_KERNELS="compiled")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(capture), str(repeat), str(tree)],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, type=pathlib.Path, help="the other tree (e.g. a worktree of main)")
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--capture", type=pathlib.Path, help="a capture to decode instead of the generated one")
    parser.add_argument("--keep-cache", action="store_true", help="do not delete numba's cached machine code first")
    args = parser.parse_args()
    trees = {"base": args.base.resolve(), "this": ROOT}
    capture = args.capture or build(f"rtp_{args.packets}.pcap", write_pcap, args.packets, 172)
    for tree in trees.values():
        if not args.keep_cache:
            clear_cache(tree)
        child(tree, capture, 1)  # compile, and fill both trees' caches
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for k in range(args.rounds):
        order = list(trees) if k % 2 == 0 else list(trees)[::-1]
        for name in order:
            runs[name].append(child(trees[name], capture, args.repeat))
    n = runs["this"][0]["packets"]
    assert all(r["packets"] == n for rs in runs.values() for r in rs)
    print(f"{capture.name}: {n:,} packets, {args.rounds} rounds x best of {args.repeat}")
    best = {}
    for name, tree in trees.items():
        print(f"  {name}: {tree}")
        for what in FIGURES:
            times = sorted(r[what] for r in runs[name])
            best[name, what] = times[0]
            print(
                f"    {what:10s} {n / times[0] / 1e6:6.2f} M packets/s  (children: best {times[0] * 1e3:.0f} ms, "
                f"median {times[len(times) // 2] * 1e3:.0f} ms, worst {times[-1] * 1e3:.0f} ms)"
            )
    for what in FIGURES:
        ratio = best["this", what] / best["base", what]
        print(f"  {what:10s}: this tree's time per packet / base's = {ratio:.3f} ({ratio - 1:+.1%})")


if __name__ == "__main__":
    main()
