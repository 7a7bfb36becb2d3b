"""The lab grid of issue #44 §2, in the spirit of Flach et al.'s validation ("An Internet-wide
analysis of traffic policing", SIGCOMM 2016, §3): TCP cubic downloads of chunks with idle gaps
through a policer, a shaper or random loss, with the truth of every data segment the sender
sent. Needs root (``ldanalyze.lab``)::

    PYTHONPATH=. python traces/sender_grid.py [CACHE] [--grid training|held-out] [--jobs 2] [--only policer,shaper,random]

Cells (``grid()``, the training grid's values; ``--grid held-out`` runs the same cells with the
values of ``HELD_OUT``, none of them the training grid's):

* **policer** (``limiter="nft-policer"``): rates 0.5, 1.5, 3 and 10 Mbit/s × buckets 8 kB,
  64 kB, 512 kB and 2 MB. nftables' byte limit cannot hold a bucket below one second of its
  rate (its bucket is rate·1 s + burst: ``ldanalyze.lab.config.LIMITERS``; nft itself accepts
  any burst from 0 to 2^32 - 1 bytes), so the policer counts packets of 1500 bytes, which the
  data segments are (all but a chunk's last): rate and bucket are rounded to whole packets
  (8 kB: 5 packets, 7500 bytes; ``policed_rate_bps`` and ``bucket_bytes`` in run.json);
* **shaper** (``limiter="tbf"``): the same rates, a small queue (20 ms of the rate) and a large
  one (200 ms), each 4 packets (6000 bytes) at least; tbf's own bucket 1 % of a second of the
  rate, 3000 bytes at least;
* **random**: r1 drops 1 % or 2 % of the data segments at random, no limiter;
* each policer and shaper cell without cross traffic, with an iperf3 UDP flow from r1 to the
  receiver at 30 % of the limiter's rate (``-udp``), and with a greedy iperf3 TCP cubic flow
  from r1 to the receiver (``-tcp``), sharing the policer's bucket or the shaper's queue;
* random cells are repeated RANDOM_REPEATS times (no limiter: each run's chunks are short).

Deviations from Flach et al., and why. Chunks are 2 MB (2 MiB here) at 10 Mbit/s only, and
sized to about 2 s at the limiter's rate below it (0.5 Mbit/s: 128 KiB; 1.5: 384 KiB; 3: 768
KiB), so that a run of three chunks takes seconds, not minutes (2 MB at 0.5 Mbit/s is 32 s a
chunk; a policer with a small bucket makes it several times longer). The idle gap between
chunks is 1 s after the client has a chunk whole: longer than the sender's RTO in every cell
(the largest queue holds 200 ms), so the sender's view cuts the chunks there. The lab has no
netem (this kernel lacks sch_netem), so the base RTT is that of veths (~0.1 ms): the RTT is
the queue's.

Cache layout: one folder per run, ``CACHE/<cell>-r<repeat>/`` (e.g.
``policer-1.5M-b64k-udp-r0``), holding ``sender.pcap``, ``r1.pcap``, ``r2.pcap`` and
``receiver.pcap`` (snap length 98: headers and the payload's first 32 bytes, the payload hash;
the sender's and the receiver's captures hold both directions), ``truth.csv`` (one row per
data record of sender.pcap: ``ldanalyze.io.capture.chain_truth`` columns, plus ``chunk``, the
client's request it answers, 0 first) and ``run.json`` (``cell``, ``kind`` policer / shaper /
random, the LabConfig, the limiter as built, the kernel's counters, the client's per-chunk
times, the truth counts per cause, ``lossy_chunks``, ``agree``: the truth's counts equal the
kernel's, and ``seconds``). run.json is written last: a folder without it is run again; one with
it is skipped. ``CACHE`` defaults to ``~/.cache/ldanalyze/sender_grid`` (``sender_grid_held-out`` for the held-out grid).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import pathlib
import shutil
import sys
import time

import numpy as np

from ldanalyze.io.capture.chain_truth import chain_truth
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab
from ldanalyze.lab.config import CROSS_SOURCE_IP, POLICER_PACKET_BYTES, bits_per_second

RATES = {"0.5M": 131072, "1.5M": 393216, "3M": 786432, "10M": 2097152}  # rate: chunk bytes
BUCKETS = {"8k": 8000, "64k": 64000, "512k": 512000, "2M": 2000000}
QUEUES_S = {"small": 0.02, "large": 0.2}
RANDOM = (1, 2)  # per cent dropped by r1


@dataclasses.dataclass(frozen=True)
class Values:
    """A grid's coordinates: rate (name: chunk bytes), policer buckets, shaper queues (seconds of
    the rate), random drop percentages (r1), cross traffic's share of the rate, and the name of
    the random cells' chunk size (a key of ``rates``)."""

    rates: dict[str, int]
    buckets: dict[str, int]
    queues_s: dict[str, float]
    random: tuple[int, ...]
    cross_share: float
    random_rate: str


TRAINING = Values(RATES, BUCKETS, QUEUES_S, RANDOM, 0.3, "10M")
# The held-out grid: values none of the training grid's, run after flach_pd_lab's thresholds were
# fixed (docs/sender.md, "A held-out grid"): rates and buckets between the training ones, queues
# of 50 and 100 ms, 3 and 5 % random loss (nftables' numgen draws whole percents), cross traffic at 50 % of the rate.
HELD_OUT = Values(
    rates={"1M": 262144, "2M": 524288, "5M": 1310720},
    buckets={"16k": 16000, "128k": 128000, "1M": 1000000},
    queues_s={"50ms": 0.05, "100ms": 0.1},
    random=(3, 5),
    cross_share=0.5,
    random_rate="5M",
)
GRIDS = {"training": TRAINING, "held-out": HELD_OUT}
CHUNKS = 3
GAP_S = 1.0
SNAPLEN = 98
REPEATS = 1
RANDOM_REPEATS = 5
CROSS = (None, "udp", "tcp")


def grid(repeats: int = REPEATS, values: Values = TRAINING) -> dict[str, tuple[str, LabConfig]]:
    """Run name -> (kind, config), for every cell of ``values`` and repeat."""
    cells: dict[str, tuple[str, LabConfig]] = {}
    base = LabConfig(
        traffic="chunks",
        both_ways=True,
        snaplen=SNAPLEN,
        chunk_count=CHUNKS,
        chunk_gap_s=GAP_S,
        wireless_drop_percent=0,
    )
    for rate, chunk in values.rates.items():
        bps = bits_per_second(f"{rate[:-1]}mbit")
        common = dataclasses.replace(base, tbf_rate=f"{bps}bit", chunk_bytes=chunk)
        for cross in CROSS:
            extra = dict(cross=cross, cross_rate=f"{int(bps * values.cross_share)}")
            tag = f"-{cross}" if cross else ""
            for name, burst in values.buckets.items():
                config = dataclasses.replace(common, limiter="nft-policer", tbf_burst_bytes=burst, **extra)
                cells[f"policer-{rate}-b{name}{tag}"] = ("policer", config)
            for name, seconds in values.queues_s.items():
                limit = max(4 * POLICER_PACKET_BYTES, int(bps / 8 * seconds))
                config = dataclasses.replace(
                    common, limiter="tbf", tbf_limit_bytes=limit, tbf_burst_bytes=max(3000, bps // 800), **extra
                )
                cells[f"shaper-{rate}-q{name}{tag}"] = ("shaper", config)
    for percent in values.random:
        config = dataclasses.replace(
            base,
            limiter="none",
            wireless_drop_percent=percent,
            chunk_bytes=values.rates[values.random_rate],
            tbf_rate=f"{values.random_rate[:-1]}mbit",
        )
        cells[f"random-{percent}pct"] = ("random", config)
    return {
        f"{cell}-r{r}": value
        for cell, value in cells.items()
        for r in range(repeats * (RANDOM_REPEATS if value[0] == "random" else 1))
    }


def limiter_as_built(config: LabConfig) -> dict:
    """What r2's limiter really is: the policer's packet rate and bucket in bytes, the shaper's
    rate and queue."""
    if config.limiter == "nft-policer":
        per_minute, burst = config.policer_bucket()
        return {
            "policed_rate_bps": per_minute * POLICER_PACKET_BYTES * 8 / 60,
            "bucket_bytes": burst * POLICER_PACKET_BYTES,
            "rule": f"limit rate over {per_minute}/minute burst {burst} packets",
        }
    if config.limiter == "tbf":
        return {
            "shaped_rate_bps": bits_per_second(config.tbf_rate),
            "queue_bytes": config.tbf_limit_bytes,
            "tbf_burst_bytes": config.tbf_burst_bytes,
        }
    return {}


def run_one(folder: pathlib.Path, name: str, kind: str, config: LabConfig) -> dict:
    """Run one cell into ``folder`` (emptied first), write truth.csv and run.json."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    started = time.monotonic()
    lab = run_lab(folder, config)
    truth = chain_truth(lab.chain(), sender=lab.sender_ip)
    asked = np.array([c["asked"] for c in lab.iperf3["chunks"]])
    truth.insert(2, "chunk", np.maximum(np.searchsorted(asked, truth["t_send"].to_numpy(), side="right") - 1, 0))
    truth.to_csv(folder / "truth.csv", index=False)
    counts = {str(k): int(v) for k, v in truth["truth"].value_counts().items()}
    lost = truth[truth["truth"] != "delivered"]
    cross = None
    if config.cross == "tcp":  # the cross traffic's own truth, from r1 on (its sender)
        cross_truth = chain_truth(lab.chain()[1:], sender=CROSS_SOURCE_IP)
        cross = {str(k): int(v) for k, v in cross_truth["truth"].value_counts().items()}
    bottleneck = counts.get(lab.bottleneck_cause, 0)
    agree = (
        counts.get("wireless", 0) == lab.wireless_drops
        and (
            bottleneck == lab.bottleneck_drops
            if config.limiter != "tbf" or config.cross is None
            else bottleneck <= lab.bottleneck_drops  # tbf's one counter counts the cross traffic's drops too
        )
        and (cross is None or lab.cross_drops is None or cross.get(lab.bottleneck_cause, 0) == lab.cross_drops)
    )
    report = {
        "cell": name.rpartition("-r")[0],
        "kind": kind,
        "config": {k: v for k, v in dataclasses.asdict(config).items() if k != "tbf_steps"},
        "limiter": limiter_as_built(config),
        "counters": {
            "wireless_drops": lab.wireless_drops,
            "bottleneck_drops": lab.bottleneck_drops,
            "cross_drops": lab.cross_drops,
            "capture_drops": dict(lab.capture_drops),
        },
        "flow": f"{lab.sender_ip}:{lab.sender_port}>{lab.receiver_ip}:{lab.port}/tcp",
        "chunks": lab.iperf3["chunks"],
        "congestion_control": lab.iperf3["congestion_control"],
        "cross": lab.iperf3.get("cross", {}).get("end", {}).get("sum", lab.iperf3.get("cross")),
        "cross_truth": cross,
        "truth": counts,
        "retransmissions": int(truth["retransmission"].sum()),
        "spurious": int(truth["spurious"].sum()),
        "lossy_chunks": int(lost["chunk"].nunique()),
        "agree": bool(agree),
        "seconds": round(time.monotonic() - started, 1),
    }
    partial = folder / "run.json.part"
    partial.write_text(json.dumps(report, indent=1, default=str))
    os.replace(partial, folder / "run.json")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", nargs="?", help="default ~/.cache/ldanalyze/sender_grid[_held-out]")
    parser.add_argument("--grid", choices=GRIDS, default="training", help="the cells' values (module docstring)")
    parser.add_argument("--jobs", type=int, default=1, help="labs run at once (each its own namespaces)")
    parser.add_argument("--only", default="policer,shaper,random", help="kinds of cell to run")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args(argv)
    why = lab_unavailable()
    if why:
        print(f"sender_grid: {why}", file=sys.stderr)
        return 2
    suffix = "" if args.grid == "training" else f"_{args.grid}"
    cache = pathlib.Path(args.cache or pathlib.Path.home() / ".cache" / "ldanalyze" / f"sender_grid{suffix}")
    kinds = set(args.only.split(","))
    todo = {name: cell for name, cell in grid(args.repeats, GRIDS[args.grid]).items() if cell[0] in kinds}
    started = time.monotonic()
    reports = {}
    for name in todo:
        done = cache / name / "run.json"
        if done.exists():
            reports[name] = json.loads(done.read_text())
    missing = [name for name in todo if name not in reports]
    print(f"{len(todo)} runs: {len(reports)} cached, {len(missing)} to run in {cache}", flush=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, cache / name, name, *todo[name]): name for name in missing}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future]
            try:
                reports[name] = future.result()
            except Exception as e:  # one failed run is reported; the others go on
                print(f"{name}: FAILED: {e}", flush=True)
                continue
            r = reports[name]
            print(
                f"{name}: {r['truth']} lossy chunks {r['lossy_chunks']} agree {r['agree']} {r['seconds']} s", flush=True
            )
    print(f"wall time {time.monotonic() - started:.0f} s")
    summary(reports)
    return 0


def summary(reports: dict[str, dict]) -> None:
    """Per kind of cell and cross traffic, then per kind: runs, chunks, lossy chunks, losses by
    cause, spurious retransmissions, runs whose truth disagrees with the kernel's counters."""
    rows: dict[str, dict[str, int]] = {}
    for r in reports.values():
        for key in (f"{r['kind']} cross={r['config']['cross']}", f"{r['kind']} (all)"):
            row = rows.setdefault(key, {"runs": 0, "chunks": 0, "lossy_chunks": 0, "spurious": 0, "disagree": 0})
            row["runs"] += 1
            row["chunks"] += len(r["chunks"])
            row["lossy_chunks"] += r["lossy_chunks"]
            row["spurious"] += r["spurious"]
            row["disagree"] += not r["agree"]
            for cause, n in r["truth"].items():
                row[cause] = row.get(cause, 0) + n
    for key, row in sorted(rows.items()):
        print(key, row)


if __name__ == "__main__":
    sys.exit(main())
