"""Truth at the sender (issue #44 §2): chunked TCP cubic downloads through the lab
(``LabConfig(traffic="chunks")``), every data segment the sender sent given the place it
vanished (``io.capture.chain_truth``).

In the lab (marked ``lab``): one policed run and one shaped run, each with r1's random drops,
whose truth must equal the kernel's own counters to the packet and cover every data record of
the sender's capture (counted and located by dpkt, another reader). Without the lab: the two
bundled grid runs (tests/data/lab, ``traces/sender_grid.py``) against tshark's counts, and the
spurious rule's boundaries by hand.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import socket
import subprocess

import dpkt
import numpy as np
import pandas as pd
import pytest

from ldanalyze.errors import TraceError
from ldanalyze.io.capture.chain_truth import TRUTH_COLUMNS, _retransmissions, chain_truth
from ldanalyze.io.capture.pcap import CaptureWarning
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab

from ..conftest import IN_CI, ROOT, needs_binary, require_binary

LAB_UNAVAILABLE = lab_unavailable()


def in_the_lab(test):
    """Marked ``lab``; skipped where the lab cannot be built, except in CI, where it fails."""
    skip = pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)")
    return pytest.mark.lab(skip(test))


BUNDLED = ROOT / "tests" / "data" / "lab"
# r1 drops 3 % of the ~310 data segments: none at all once in 10^4 runs (at 1 %, one in 20)
BASE = LabConfig(
    traffic="chunks", both_ways=True, snaplen=98, chunk_bytes=196608, chunk_count=2, wireless_drop_percent=3
)
RUNS = {
    # 1.5 Mbit/s with a 8-packet bucket (12 kB); the 192 KiB chunks take about a second each
    "policed": dataclasses.replace(BASE, limiter="nft-policer", tbf_rate="1500kbit", tbf_burst_bytes=12000),
    # the same rate, a 20 ms queue (4 packets, 6000 bytes)
    "shaped": dataclasses.replace(BASE, limiter="tbf", tbf_rate="1500kbit", tbf_burst_bytes=3000, tbf_limit_bytes=6000),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the network namespace lab must run in CI, but {LAB_UNAVAILABLE}")
    labs = {name: run_lab(tmp_path_factory.mktemp(name), config) for name, config in RUNS.items()}
    return {name: (lab, chain_truth(lab.chain())) for name, lab in labs.items()}


def sender_data(path: pathlib.Path, sender: str) -> list[tuple[int, int, int]]:
    """(record index, byte offset, TCP sequence number) of every TCP segment with payload from
    ``sender`` in a pcap, read by dpkt (Ethernet links)."""
    found = []
    with open(path, "rb") as f:
        offset = 24  # the pcap file header
        for index, (_, frame) in enumerate(dpkt.pcap.Reader(f)):
            ip = dpkt.ethernet.Ethernet(frame).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                tcp = ip.data
                if socket.inet_ntoa(ip.src) == sender and ip.len - 4 * ip.hl - 4 * (tcp.off) > 0:
                    found.append((index, offset, tcp.seq))
            offset += 16 + len(frame)
    return found


@pytest.mark.parametrize("name", list(RUNS))
@in_the_lab
def test_the_truth_counts_equal_the_kernels_counters(runs, name):
    lab, truth = runs[name]
    counts = truth["truth"].value_counts()
    assert lab.wireless_drops > 0 and lab.bottleneck_drops > 0
    assert counts.get("wireless", 0) == lab.wireless_drops
    assert counts.get(lab.bottleneck_cause, 0) == lab.bottleneck_drops
    assert set(counts.index) == {"delivered", "wireless", lab.bottleneck_cause}
    assert dict(lab.capture_drops) == {"sender": 0, "r1": 0, "r2": 0, "receiver": 0}
    assert lab.iperf3["congestion_control"] == "cubic"
    # every byte of both chunks reached the receiver; every drop was sent again
    delivered = truth[truth["truth"] == "delivered"]
    assert delivered["payload_len"].sum() - truth.loc[truth["spurious"], "payload_len"].sum() == 2 * 196608
    assert truth["retransmission"].sum() >= len(truth) - len(delivered)


@pytest.mark.parametrize("name", list(RUNS))
@in_the_lab
def test_every_data_record_of_the_senders_capture_gets_a_verdict(runs, name):
    lab, truth = runs[name]
    expected = sender_data(lab.captures["sender"], lab.sender_ip)
    assert list(truth.columns) == list(TRUTH_COLUMNS)
    assert list(zip(truth["index"], truth["offset"], truth["tcp_seq"], strict=True)) == expected
    assert truth["truth"].notna().all() and (truth["flow"] == truth["flow"].iloc[0]).all()


@pytest.mark.parametrize("run", ["policer-0.5M-b64k-r0", "shaper-0.5M-qsmall-r0"])
@needs_binary("tshark")
def test_the_bundled_runs_truth_against_tshark(run):
    """Each capture's count of the sender's data segments (tshark) gives the losses of each
    hop: what the sender sent and r1 did not forward, what r1 forwarded and r2 did not."""
    folder = BUNDLED / run
    report = json.loads((folder / "run.json").read_text())
    cause = "policing" if report["kind"] == "policer" else "congestion"
    truth = chain_truth(
        [
            folder / "sender.pcap",
            f"{folder / 'r1.pcap'}:wireless",
            f"{folder / 'r2.pcap'}:{cause}",
            folder / "receiver.pcap",
        ]
    )
    tshark = require_binary("tshark")

    def count(capture: str, extra: str = "") -> int:
        shown = subprocess.run(
            [tshark, "-r", str(folder / capture), "-Y", f"ip.src==10.231.1.1 && tcp.len>0{extra}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return len(shown.splitlines())

    sent, r1, r2, received = (count(f"{name}.pcap") for name in ("sender", "r1", "r2", "receiver"))
    counts = truth["truth"].value_counts()
    assert (len(truth), counts.get("wireless", 0), counts.get(cause, 0)) == (sent, sent - r1, r1 - r2)
    assert counts["delivered"] == r2 == received
    assert dict(counts) == report["truth"] and counts.get(cause, 0) == report["counters"]["bottleneck_drops"]
    # tshark calls a repeat within its RTT guess out of order, not a retransmission: both are ours
    again = count("sender.pcap", " && (tcp.analysis.retransmission || tcp.analysis.out_of_order)")
    assert truth["retransmission"].sum() == again


def test_the_packet_policers_bucket_is_its_burst():
    """The bundled policed run (``limit rate over 2500/minute burst 43 packets``): the policer's
    first drop comes once the full bucket and the tokens since the chunk's first segment are
    spent, to the packet (nftables' byte limit would have let a second of its rate more through:
    ``ldanalyze.lab.config.LIMITERS``)."""
    folder = BUNDLED / "policer-0.5M-b64k-r0"
    truth = chain_truth(
        [
            folder / "sender.pcap",
            f"{folder / 'r1.pcap'}:wireless",
            f"{folder / 'r2.pcap'}:policing",
            folder / "receiver.pcap",
        ]
    )
    first = truth.loc[truth["truth"] == "policing", "t_send"].iloc[0]
    passed = ((truth["t_send"] < first) & (truth["truth"] == "delivered")).sum()
    tokens = 43 + 2500 / 60 * (first - truth["t_send"].iloc[0])
    assert tokens - 1 < passed <= tokens


def test_a_capture_of_other_packets_is_refused_and_a_gap_in_a_middle_one_warned_of(tmp_path):
    policed, shaped = BUNDLED / "policer-0.5M-b64k-r0", BUNDLED / "shaper-0.5M-qsmall-r0"
    with pytest.raises(TraceError, match="none of the 410 data segments 10.231.1.1 sent"):
        chain_truth([policed / "sender.pcap", shaped / "r1.pcap", policed / "receiver.pcap"])
    # r1's capture with its first 40 records cut: the sender's first data segments are missing there
    with open(policed / "r1.pcap", "rb") as f:
        records = list(dpkt.pcap.Reader(f))
    with open(tmp_path / "r1.pcap", "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=98)
        for ts, frame in records[40:]:
            writer.writepkt(frame, ts)
    cut = sum(index < 40 for index, _, _ in sender_data(policed / "r1.pcap", "10.231.1.1"))
    with pytest.warns(CaptureWarning, match=rf"r1.pcap: {cut} data segment\(s\) seen further on are not in it"):
        truth = chain_truth([policed / "sender.pcap", tmp_path / "r1.pcap", policed / "receiver.pcap"])
    assert (truth["truth"] == "delivered").sum() == 274


def test_a_retransmission_is_spurious_when_delivered_rows_carried_all_its_bytes_before():
    rows = pd.DataFrame(
        [
            # seq, len, truth: comment
            (1000, 100, "delivered"),  # 0 first
            (1100, 100, "policing"),  # 1 first, lost
            (1000, 100, "delivered"),  # 2 repeats 0, which arrived: spurious
            (1100, 100, "delivered"),  # 3 repeats 1, which was lost: needed
            (1050, 100, "delivered"),  # 4 over 0 and 3, both arrived: spurious
            (1150, 100, "delivered"),  # 5 half new (1200-1250): a retransmission, not spurious
            (1250, 10, "wireless"),  # 6 new bytes
            (1250, 10, "delivered"),  # 7 repeats 6, lost: needed
            (1200, 60, "delivered"),  # 8 over 5 and 7 (1200-1260): spurious, touching intervals
        ],
        columns=["tcp_seq", "payload_len", "truth"],
    ).assign(flow="a")
    retransmission, spurious = _retransmissions(rows)
    assert retransmission.tolist() == [False, False, True, True, True, True, False, True, True]
    assert spurious.tolist() == [False, False, True, False, True, False, False, False, True]


def test_sequence_numbers_wrap():
    """A flow crossing 2^32 keeps its bytes in order: a repeat across the wrap is one."""
    top = (1 << 32) - 50
    rows = pd.DataFrame(
        {"tcp_seq": [top, 50, top], "payload_len": [100, 100, 100], "truth": ["delivered"] * 3, "flow": "a"}
    )
    retransmission, spurious = _retransmissions(rows)
    assert retransmission.tolist() == [False, False, True] and spurious.tolist() == [False, False, True]
    assert np.array_equal(retransmission, spurious)
