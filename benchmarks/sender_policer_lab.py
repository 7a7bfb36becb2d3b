"""Flach et al.'s policer detector (ldanalyze/lda/sender_policer.py) on real TCP through the lab's
policer, shaper and random loss: chunks called policed per limiter.

    python benchmarks/sender_policer_lab.py run FOLDER     # runs the lab grid (root), captures in FOLDER
    python benchmarks/sender_policer_lab.py table FOLDER   # the table from FOLDER's runs

``run`` sends one iperf3 TCP (cubic) transfer per cell through r2's nftables policer
(``nft-limit``: its bucket holds a second of its rate more than its burst), its tbf shaper (small
and large queue) or, with r2 out of the way, r1's random drops, and keeps each run's sender
capture and a ``run.json`` (the config, its cause, the counters). ``table`` reads each sender's
capture with the package's reader (``la.read_trace``: the sender's view, SACK and D-SACK read, a
spurious retransmission not a loss), cuts each transfer into chunks of ``CHUNK_BYTES`` of new
data (iperf3 sends without idle periods, so these stand in for Flach et al.'s chunks), and runs
the detector as written and the variants named in ``VARIANTS``; a chunk is lossy when the
sender lost some of it (these runs keep no truth).

The lab grid's runs (traces/sender_grid.py: chunks at idle periods, the truth of the chain) are
evaluated by docs/make_sender_evaluation.py, which writes docs/sender.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import ldanalyze as la
from ldanalyze.lda.sender_policer import Flach, SenderPolicerLab, flach_verdicts
from ldanalyze.packets import sender_flows

CHUNK_BYTES = 2_000_000
RATES = ("500kbit", "1500kbit", "3mbit", "10mbit")
# as written (their two runs: cutoff 0 and 2), and the lab variant (flach_pd_lab's thresholds)
VARIANTS = {
    "flach_pd": Flach(),
    "flach_pd cutoff=2": Flach(cutoff=2),
    "flach_pd_lab": Flach(**SenderPolicerLab().params()),
}


def grid() -> dict[str, dict]:
    """The cells: policer (two bursts), shaper (two queues) at each rate, random loss 1 and 2 %."""
    cells = {}
    for rate in RATES:
        seconds = max(6, min(20, int(2.4e6 * 8 / float(rate.rstrip("kmbit")) / (1e3 if "k" in rate else 1e6)) + 2))
        for burst in (8000, 100_000):
            cells[f"policer-{rate}-{burst}"] = dict(limiter="nft-limit", tbf_rate=rate, tbf_burst_bytes=burst,
                                                    duration_s=seconds, cause="policing")  # fmt: skip
        for limit in (10_000, 100_000):
            cells[f"shaper-{rate}-{limit}"] = dict(limiter="tbf", tbf_rate=rate, tbf_burst_bytes=3200,
                                                   tbf_limit_bytes=limit, duration_s=seconds, cause="congestion")  # fmt: skip
    for percent in (1, 2):
        cells[f"random-{percent}"] = dict(limiter="tbf", tbf_rate="1000mbit", tbf_burst_bytes=1_000_000,
                                          tbf_limit_bytes=1_000_000, wireless_drop_percent=percent, duration_s=8,
                                          cause="wireless")  # fmt: skip
    return cells


def run(folder: Path) -> None:
    from ldanalyze.lab import run_lab
    from ldanalyze.lab.config import LabConfig

    for name, cell in grid().items():
        out = folder / name
        if (out / "run.json").exists():
            continue
        out.mkdir(parents=True, exist_ok=True)
        settings = {k: v for k, v in cell.items() if k != "cause"}
        settings.setdefault("wireless_drop_percent", 0)
        config = LabConfig(traffic="iperf3-tcp", both_ways=True, rate="1000M", **settings)
        r = run_lab(out, config)
        for point in ("r1", "r2", "receiver"):
            Path(r.captures[point]).unlink()
        facts = dict(cell, sender_port=r.sender_port, port=r.port, bottleneck_drops=r.bottleneck_drops,
                     wireless_drops=r.wireless_drops)  # fmt: skip
        (out / "run.json").write_text(json.dumps(facts, indent=1))
        print(name, facts, flush=True)


def sender_view(pcap: Path) -> pd.DataFrame:
    """The sender's view of the capture's data flows (``la.read_trace``: SACK and D-SACK read, a
    spurious retransmission is not a loss), cut into chunks of ``CHUNK_BYTES`` of new data: an
    iperf3 transfer has no idle period for the reader's own chunks to start at."""
    trace = la.read_trace(pcap)
    packets = trace.packets[trace.packets["flow"].astype(str).isin(sender_flows(trace))]
    packets = packets.sort_values(["flow", "t_send", "uid"], kind="stable")
    first = packets["tx"] == packets.groupby(["flow", "seq"], observed=True)["tx"].transform("min")
    new = packets["size"].where(first, 0)
    before = new.groupby(packets["flow"], observed=True).cumsum() - new
    start = before.where(first).groupby([packets["flow"], packets["seq"]], observed=True).transform("min")
    return packets.assign(chunk=(start // CHUNK_BYTES).astype(np.int64))


def table(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per run of ``run`` and chunk, each variant's verdict; then per cause, the lossy chunks
    (those the sender lost some of: no truth here) called policed. The lab grid's runs, with
    their truth, are docs/make_sender_evaluation.py's."""
    rows = []
    for facts_file in sorted(folder.glob("*/run.json")):
        facts = json.loads(facts_file.read_text())
        if "cause" not in facts:
            raise SystemExit(
                f"{facts_file}: not a run of this script (traces/sender_grid.py's: docs/make_sender_evaluation.py)"
            )
        packets = sender_view(facts_file.parent / "sender.pcap")
        for variant, detector in VARIANTS.items():
            v = flach_verdicts(packets, detector)
            v["lossy"] = v["losses"] > 0
            v["run"], v["cause"], v["variant"] = facts_file.parent.name, facts["cause"], variant
            rows.append(v)
    chunks_table = pd.concat(rows, ignore_index=True)
    summary = (
        chunks_table[chunks_table["lossy"]]
        .groupby(["cause", "variant"])
        .agg(lossy_chunks=("verdict", "size"), called_policed=("verdict", lambda v: int((v == "policed").sum())))
        .reset_index()
    )
    return chunks_table, summary


def markdown(summary: pd.DataFrame) -> str:
    """The summary as docs/ldas.md shows it: per cause, chunks called policed out of the lossy
    ones, per variant."""
    wide = summary.pivot_table(index="cause", columns="variant", values="called_policed", sort=False)
    counts = summary.groupby("cause", sort=False)["lossy_chunks"].first()
    lines = ["| losses by | lossy chunks | " + " | ".join(wide.columns) + " |"]
    lines.append("|---|---:|" + "---:|" * len(wide.columns))
    for cause, row in wide.iterrows():
        n = counts[cause]
        cells = [f"{int(v)} ({v / n:.0%})" for v in row]
        lines.append(f"| {cause} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    command, where = sys.argv[1], Path(sys.argv[2])
    if command == "run":
        run(where)
    else:
        chunks, summary = table(where)
        pd.set_option("display.width", 200)
        columns = ["run", "chunk", "variant", "verdict", "rule", "rate_bps", "burst_bytes", "losses", "transmissions"]
        print(chunks[columns].to_string())
        print(markdown(summary))
