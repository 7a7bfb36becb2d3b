"""TCP read at its sender against the established tools (issue #44 §1): tshark's
``tcp.analysis`` flags and ``tcptrace -l``'s retransmission counts, and the options the decoder
keeps against tshark's fields, on a real capture taken at a server (tests/data/real/SOURCES.md)
and on a real Linux TCP transfer through the network lab, captured at its sender, whose drops
the lab counts (the truth).

How the tools' words map onto the sender's view (RFC 3708's "spurious" is not tshark's):

- tshark's ``tcp.analysis.retransmission`` marks a data segment below the highest sequence number
  seen; ``fast_retransmission`` one that follows two duplicate ACKs within 20 ms; but a segment
  sent within 3 ms (or an RTT) of the highest one is called ``out_of_order`` instead. At a
  sender nothing is reordered before the capture: such a segment is a retransmission (tcptrace
  and the lab's drop counters agree; see the lab test), so ours = retransmission ∪ out_of_order.
- tshark's ``spurious_retransmission`` is a segment whose bytes were acknowledged already: our
  ``acked`` evidence. Our ``dsack``, ``eifel`` and ``timing`` evidence (RFC 2883, 3522, 3708) is
  evidence tshark does not look at.
- tshark's ``lost_segment`` ("previous segment not captured") is a hole in the bytes captured:
  at a sender, packets the capture missed, which the segment index counts as numbers never sent
  (rows of no transmission), not losses.
- tcptrace's ``rexmt data pkts`` counts data segments carrying bytes sent before: our rows with
  ``tx`` > 0 (a retransmission takes the index of the segment holding its first byte).
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import warnings

import numpy as np
import pytest

import ldanalyze as la
from ldanalyze.io.capture.pcap import decode_capture, read_capture
from ldanalyze.io.capture.record import F_TCP_SACK, F_TCP_WSCALE, IPPROTO_TCP
from ldanalyze.lab import lab_unavailable, run_lab

from ...conftest import IN_CI, needs_binary, require_binary
from ...lab.test_lab_tcp import CONFIG  # the lab's TCP transfer: 2 % radio loss, a tbf bottleneck

REAL = pathlib.Path(__file__).parents[2] / "data" / "real" / "tcp"
FAST009 = REAL / "retransmit-fast009.pcap"
SERVER = "192.168.0.27:80>10.0.88.85:50368/tcp"


def tshark_frames(path, flt: str) -> set[int]:
    out = subprocess.run(
        [require_binary("tshark"), "-r", str(path), "-Y", flt, "-T", "fields", "-e", "frame.number"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {int(x) for x in out.split()}


def tcptrace_retransmissions(path) -> dict[str, int]:
    """``tcptrace -l -n``'s ``rexmt data pkts`` per direction, keyed ``src:port>dst:port``."""
    out = subprocess.run(
        [require_binary("tcptrace"), "-l", "-n", str(path)], capture_output=True, text=True, check=True
    ).stdout
    counts = {}
    for block in out.split("TCP connection ")[1:]:
        hosts = re.findall(r"host \w+:\s+(\S+)", block)
        rexmt = re.search(r"rexmt data pkts:\s+(\d+)\s+rexmt data pkts:\s+(\d+)", block)
        if len(hosts) == 2 and rexmt:
            counts[f"{hosts[0]}>{hosts[1]}"] = int(rexmt.group(1))
            counts[f"{hosts[1]}>{hosts[0]}"] = int(rexmt.group(2))
    return counts


def read(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_capture(path, **options)


def frames_of(packets, flow: str, rows) -> set[int]:
    """tshark's frame numbers of some of a flow's transmissions (uid: the record's index)."""
    return set((packets.loc[rows & (packets["flow"] == flow), "uid"] + 1).tolist())


def check_against_tools(path, packets, flow: str, src_port: int) -> None:
    """Our retransmissions, spurious ones and holes against tshark's flags and tcptrace's count."""
    data = f"tcp.srcport=={src_port} && tcp.len>0"
    retransmitted = frames_of(packets, flow, packets["tx"] > 0)
    flagged = tshark_frames(path, f"{data} && (tcp.analysis.retransmission || tcp.analysis.out_of_order)")
    assert retransmitted == flagged
    assert len(retransmitted) == tcptrace_retransmissions(path)[flow.removesuffix("/tcp")]
    fast = tshark_frames(path, f"{data} && tcp.analysis.fast_retransmission")
    assert fast <= retransmitted
    already = packets[(packets["flow"] == flow) & (packets["spurious"] == "acked")]
    assert len(already) == len(tshark_frames(path, f"{data} && tcp.analysis.spurious_retransmission"))
    mine = packets[packets["flow"] == flow]
    holes = int(mine["seq"].max() + 1 - mine["seq"].nunique())
    assert (holes == 0) == (not tshark_frames(path, f"{data} && tcp.analysis.lost_segment"))


def check_fields_against_tshark(path) -> None:
    """The window, the window-scale shift and every SACK edge kept, record by record."""
    out = subprocess.run(
        [
            require_binary("tshark"),
            "-r",
            str(path),
            "-o",
            "tcp.relative_sequence_numbers:FALSE",
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "frame.number",
            "-e",
            "tcp.window_size_value",
            "-e",
            "tcp.options.wscale.shift",
            "-e",
            "tcp.options.sack_le",
            "-e",
            "tcp.options.sack_re",
            "-e",
            "tcp.len",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    records = decode_capture(path, head_bytes=32).records
    checked = 0
    for line in out.splitlines():
        frame, window, shift, left, right, length = line.split(";")
        if not window:
            continue  # not TCP
        r = records[int(frame) - 1]
        assert r["proto"] == IPPROTO_TCP and r["tcp_win"] == int(window), frame
        assert bool(r["flags"] & F_TCP_WSCALE) == bool(shift) and (not shift or r["tcp_wscale"] == int(shift))
        edges = [(int(a), int(b)) for a, b in zip(left.split(","), right.split(","))] if left else []
        assert bool(r["flags"] & F_TCP_SACK) == bool(edges) and r["tcp_sack_n"] == len(edges), frame
        if edges and int(length) == 0:
            kept = np.frombuffer(bytes(r["head"][: 8 * len(edges)]), ">u4").reshape(-1, 2)
            assert [tuple(map(int, e)) for e in kept] == edges, frame
        checked += 1
    assert checked == int((records["proto"] == IPPROTO_TCP).sum())


@needs_binary("tshark")
@pytest.mark.parametrize("path", [FAST009, REAL.parent / "telegram_videocall.pcapng"], ids=lambda p: p.name)
def test_the_option_fields_are_tsharks_on_real_captures(path):
    """SACK blocks (the server capture), window scales and timestamps (Telegram's TLS)."""
    check_fields_against_tshark(path)


@needs_binary("tshark")
@needs_binary("tcptrace")
def test_a_server_capture_with_a_fast_retransmission_against_tshark_and_tcptrace():
    """A real web download captured at its server in 2010 (Zeek's test traces): the client's MSS
    clamped on the path, so the server's retransmissions (1430 bytes) straddle its first sends
    (1446 bytes); three duplicate ACKs with SACK blocks, then one recovery of three segments."""
    trace = read(FAST009, capture_host="192.168.0.27")
    p = trace.packets
    assert trace.meta["flows"][SERVER]["view"] == "sender"
    check_against_tools(FAST009, p, SERVER, 80)
    mine = p[p["flow"] == SERVER]
    assert mine["reason"].astype(str).value_counts()["retransmitted: dupack"] == 3
    assert (mine["spurious"] == "").all() and (mine.loc[mine["tx"] > 0, "fate"] == "delivered").all()
    # the capture host is not told by the TTLs here: at the sender's vantage, every TCP data flow
    assert read(FAST009, vantage="sender").meta["flows"][SERVER]["view"] == "sender"


# -- the lab: Linux's TCP, captured at its sender, drops counted by the lab ---------------------
LAB_UNAVAILABLE = lab_unavailable()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the TCP lab must run in CI, but {LAB_UNAVAILABLE}")
    return run_lab(tmp_path_factory.mktemp("tcp-sender"), CONFIG)


@pytest.mark.lab
@pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)")
@needs_binary("tshark")
@needs_binary("tcptrace")
def test_a_linux_transfer_read_at_its_sender_finds_every_drop(lab):
    """Each drop on the path (the emulated radio's and the bottleneck queue's) made one
    retransmission, and none other was made: what we read as lost is what was lost.
    tshark calls some of those retransmissions out-of-order (sent within 3 ms of the highest
    segment); tcptrace and the drop counters call them retransmissions, as we do."""
    path = lab.captures["sender"]
    trace = read(path)
    flow = f"{lab.sender_ip}:{lab.sender_port}>{lab.receiver_ip}:{lab.port}/tcp"
    p = trace.packets
    mine = p[p["flow"] == flow]
    assert trace.meta["flows"][flow]["view"] == "sender"
    check_against_tools(path, p, flow, lab.sender_port)
    # the counters count drops of any segment of the host's connections (the iperf3 control
    # connection's too) up to the end, where the last segments may go unacknowledged when iperf3
    # resets the connection: every lost row is a drop, and every drop a lost row or one of those
    sent = p[p["flow"].map(lambda f: trace.meta["flows"][f]["view"] == "sender").astype(bool)]
    lost, unacknowledged = (sent["fate"] == "lost").sum(), (sent["reason"] == "not acknowledged").sum()
    drops = lab.wireless_drops + lab.bottleneck_drops
    assert lost <= drops <= lost + unacknowledged and unacknowledged < 0.1 * lost
    assert (mine["loss_trigger"] != "").sum() == (mine["fate"] == "lost").sum()
    acks = trace.acks[trace.acks["flow"] == flow]
    assert acks["rwnd"].min() > 0 and (acks["rtt"].dropna() > 0).all()
    assert la.packets.validate_packets(p) is None
    check_fields_against_tshark(path)
