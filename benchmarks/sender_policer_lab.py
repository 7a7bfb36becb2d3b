"""Flach et al.'s policer detector (ldanalyze/lda/sender_policer.py) on real TCP through the lab's
policer, shaper and random loss: chunks called policed per limiter.

    python benchmarks/sender_policer_lab.py run FOLDER     # runs the lab grid (root), captures in FOLDER
    python benchmarks/sender_policer_lab.py table FOLDER   # the table from FOLDER's runs

``run`` sends one iperf3 TCP (cubic) transfer per cell through r2's nftables policer
(``nft-limit``: its bucket holds a second of its rate more than its burst), its tbf shaper (small
and large queue) or, with r2 out of the way, r1's random drops, and keeps each run's sender
capture and a ``run.json`` (the config, its cause, the counters). ``table`` reads the sender's
captures into a sender's view by a plain reading written here (the data segments of the run's
connection; a transmission is lost when its bytes are sent again, acknowledged at the first
cumulative ACK that covers them; no SACK, no D-SACK: a spurious retransmission counts as a
loss), cuts each transfer into chunks of ``CHUNK_BYTES`` of new data (iperf3 sends without idle
periods, so these stand in for Flach et al.'s chunks), and runs the detector as written and the
variants named in ``VARIANTS``.

For the lab grid's own cache (traces/sender_grid.py, per-packet truth, chunks at idle periods),
``table`` takes any folder of sender's-view traces the package reads (``la.read_trace`` with
``meta["view"] == "sender"``) beside a ``run.json`` naming the ``cause`` ("policing",
"congestion", "wireless") of its losses: ``FOLDER/<run>/sender.pcap`` or any trace file there.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ldanalyze.lda.sender_policer import Flach, SenderPolicerLab, flach_verdicts
from ldanalyze.packets import make_packet_table

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


def sender_view(pcap: Path, sender_port: int, port: int, chunks: pd.Series | None = None) -> pd.DataFrame:
    """The sender's view of the run's connection, read plainly from the decoded records; its
    chunks ``chunks`` (by the records' byte offsets in the file), else pieces of ``CHUNK_BYTES``."""
    from ldanalyze.io.capture.pcap import decode_capture

    c = decode_capture(pcap)
    rec, flows = c.records, c.flows
    (data,) = flows.index[(flows["proto"] == 6) & (flows["sport"] == sender_port) & (flows["dport"] == port)]
    mine = rec[rec["flow"] == data]
    isn = int(mine["tcp_seq"][0])  # the SYN's
    seg = mine[mine["payload_len"] > 0]
    start = (seg["tcp_seq"].astype(np.int64) - isn) % 2**32
    end = start + seg["payload_len"].astype(np.int64)
    t_send = seg["ts_ns"] / 1e9
    t_ack = first_acks(pcap, sender_port, port, isn, t_send, start, end)
    again = pd.Series(start).duplicated(keep="last").to_numpy()  # its bytes sent again later
    fate = np.where(again, "lost", np.where(np.isfinite(t_ack), "delivered", "unobserved"))
    new = ~pd.Series(start).duplicated(keep="first").to_numpy()
    new_bytes = np.cumsum(np.where(new, seg["payload_len"], 0)) - np.where(new, seg["payload_len"], 0)
    first_of = pd.Series(new_bytes).groupby(start).transform("min").to_numpy()
    chunk = first_of // CHUNK_BYTES if chunks is None else chunks.loc[seg["offset"].astype(np.int64)].to_numpy()
    return make_packet_table(
        flow=np.full(len(seg), "data", dtype=object),
        seq=start,
        size=seg["ip_len"].astype(np.int64),
        t_send=t_send,
        t_recv=np.full(len(seg), np.nan),
        fate=fate,
        t_ack=t_ack,
        chunk=chunk,
    )


def first_acks(pcap: Path, sender_port: int, port: int, isn: int, t_send, start, end) -> np.ndarray:
    """Per transmission, the first ACK after it that covers its bytes, cumulatively or by a SACK
    block (read here from the ACKs' TCP options: the decoded records do not keep them)."""
    acks = []  # (time, cumulative ack, SACK blocks), relative to the ISN
    raw = Path(pcap).read_bytes()
    if raw[:4] != bytes.fromhex("d4c3b2a1") or struct.unpack_from("<I", raw, 20)[0] != 1:
        raise ValueError(f"{pcap}: a little-endian Ethernet pcap (microseconds) is read here")
    at = 24
    while at + 16 <= len(raw):
        sec, usec, incl, _ = struct.unpack_from("<IIII", raw, at)
        frame = raw[at + 16 : at + 16 + incl]
        at += 16 + incl
        if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ip = 14
        tcp = ip + (frame[ip] & 0x0F) * 4
        sport, dport, _, ack = struct.unpack_from("!HHII", frame, tcp)
        if (sport, dport) != (port, sender_port):
            continue
        blocks, o, stop = [], tcp + 20, min(tcp + (frame[tcp + 12] >> 4) * 4, len(frame))
        while o < stop and frame[o] != 0:
            if frame[o] == 1:
                o += 1
                continue
            if o + 1 >= stop:
                break
            kind, length = frame[o], frame[o + 1]
            if kind == 5:
                for b in range(o + 2, min(o + length, stop) - 7, 8):
                    left, right = struct.unpack_from("!II", frame, b)
                    blocks.append(((left - isn) % 2**32, (right - isn) % 2**32))
            o += max(length, 2)
        acks.append((sec + usec / 1e6, (ack - isn) % 2**32, blocks))
    t_ack = np.full(len(t_send), np.nan)
    pending: list[int] = []  # transmissions sent and not yet covered
    i = 0
    for t, ack, blocks in acks:
        while i < len(t_send) and t_send[i] < t:
            pending.append(i)
            i += 1
        still = []
        for j in pending:
            if end[j] <= ack or any(left <= start[j] and end[j] <= right for left, right in blocks):
                t_ack[j] = t
            else:
                still.append(j)
        pending = still
    return t_ack


CAUSES = {"policer": "policing", "shaper": "congestion", "random": "wireless"}  # the grid's kinds


def table(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per run and chunk, each variant's verdict; then per cause, the lossy chunks called
    policed. A run of the lab grid (``kind`` in its run.json) has its chunks and its lossy
    chunks from truth.csv; one of ``run`` here, pieces of ``CHUNK_BYTES`` that the sender lost
    some of."""
    rows = []
    for facts_file in sorted(folder.glob("*/run.json")):
        facts = json.loads(facts_file.read_text())
        chunks = lossy = None
        if "kind" in facts:  # traces/sender_grid.py's
            cause = CAUSES[facts["kind"]]
            ends = facts["flow"].split("/")[0].split(">")
            sender_port, port = int(ends[0].rpartition(":")[2]), int(ends[1].rpartition(":")[2])
            truth = pd.read_csv(facts_file.parent / "truth.csv")
            chunks = truth.set_index("offset")["chunk"]
            lossy = set(truth.loc[truth["truth"] != "delivered", "chunk"])
        else:
            cause, sender_port, port = facts["cause"], facts["sender_port"], facts["port"]
        packets = sender_view(facts_file.parent / "sender.pcap", sender_port, port, chunks)
        for variant, detector in VARIANTS.items():
            v = flach_verdicts(packets, detector)
            v["lossy"] = v["losses"] > 0 if lossy is None else v["chunk"].isin(lossy)
            v["run"], v["cause"], v["variant"] = facts_file.parent.name, cause, variant
            rows.append(v)
    chunks_table = pd.concat(rows, ignore_index=True)
    chunks_table["cross"] = chunks_table["run"].str.extract(r"-(tcp|udp)-r\d+$")[0].fillna("none")
    summary = (
        chunks_table[chunks_table["lossy"]]
        .groupby(["cause", "cross", "variant"])
        .agg(lossy_chunks=("verdict", "size"), called_policed=("verdict", lambda v: int((v == "policed").sum())))
        .reset_index()
    )
    return chunks_table, summary


def markdown(summary: pd.DataFrame) -> str:
    """The summary as docs/ldas.md shows it: per cause and cross traffic, chunks called policed
    out of the lossy ones, per variant."""
    wide = summary.pivot_table(index=["cause", "cross"], columns="variant", values="called_policed", sort=False)
    counts = summary.groupby(["cause", "cross"], sort=False)["lossy_chunks"].first()
    lines = ["| losses by | cross traffic | lossy chunks | " + " | ".join(wide.columns) + " |"]
    lines.append("|---|---|---:|" + "---:|" * len(wide.columns))
    for (cause, cross), row in wide.iterrows():
        n = counts[(cause, cross)]
        cells = [f"{int(v)} ({v / n:.0%})" for v in row]
        lines.append(f"| {cause} | {cross} | {n} | " + " | ".join(cells) + " |")
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
