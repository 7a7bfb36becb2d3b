"""A server-side capture of bulk TCP transfers, made for the sender's-view benchmark: ``flows``
connections from 10.0.0.1 (the capture host) to 10.0.1.1, each a stream of 1448-byte segments
with the timestamps option, and the receiver's ACKs coming back one per segment, ``rtt`` later.

About ``loss`` of the segments are lost on the way: the ACKs of the segments after a lost one
repeat its number (duplicate ACKs) with a SACK block of what arrived above it, the sender
retransmits it at the third duplicate ACK, and the ACK of the retransmission (one RTT later)
moves the cumulative ACK to all that arrived. Nothing else is modelled (the sender keeps its
pace: no window), so the file tests reading speed, not TCP. Frames are cut at 78 bytes, as a
server's ``tcpdump -s 78`` would (headers and 12 payload bytes); IP lengths say the whole size.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

T0_NS = 1_700_000_000 * 10**9
MSS = 1448
SNAP = 78  # Ethernet 14 + IPv4 20 + TCP 44 (an ACK's header with one SACK block)


def _put(a: np.ndarray, at: int, width: int, values) -> None:
    values = np.asarray(values, dtype=np.int64)
    for b in range(width):
        a[:, at + b] = (values >> (8 * (width - 1 - b))) & 0xFF


def _events(segments: int, loss: float, gap_ns: int, rtt_ns: int, rng) -> np.ndarray:
    """One flow's packets in time order, a row each: time (ns from the flow's start), data (1)
    or ACK (0), the data's segment index or the ACK's cumulative number, the ACK's SACK block
    (segment indices, left = right: none), TSval and TSecr (ms). A loss while a hole is open is
    not made (one hole at a time)."""
    lost = rng.random(segments) < loss
    lost[:3] = False
    rows = [(k * gap_ns, 1, k, 0, 0, k * gap_ns // 1_000_000, 0) for k in range(segments)]
    hole, held, closes_at = -1, 0, -1
    for k in range(segments):
        t_sent = k * gap_ns
        t_ack = t_sent + rtt_ns
        if hole >= 0 and t_ack > closes_at >= 0:
            hole, closes_at = -1, -1
        if hole < 0 and lost[k]:
            hole, held = k, 0
            continue
        lost[k] = False
        if hole < 0:
            rows.append((t_ack, 0, k + 1, 0, 0, t_ack // 1_000_000, t_sent // 1_000_000))
            continue
        held += 1
        rows.append((t_ack, 0, hole, hole + 1, k + 1, t_ack // 1_000_000, t_sent // 1_000_000))
        if held == 3:  # fast retransmit; its ACK one RTT later acknowledges all that arrived
            t_rtx = t_ack + 50_000
            closes_at = t_rtx + rtt_ns
            arrived = min((closes_at - rtt_ns) // gap_ns + 1, segments)
            rows.append((t_rtx, 1, hole, 0, 0, t_rtx // 1_000_000, t_ack // 1_000_000))
            rows.append((closes_at, 0, arrived, 0, 0, closes_at // 1_000_000, t_rtx // 1_000_000))
    table = np.array(rows, dtype=np.int64)
    return table[np.lexsort((-table[:, 1], table[:, 0]))]


def write_capture(path: pathlib.Path, packets: int, flows: int = 8, loss: float = 0.01, seed: int = 1) -> None:
    """About ``packets`` frames (data and ACKs) of ``flows`` transfers, taking turns in time."""
    rng = np.random.default_rng(seed)
    per_flow = packets // (2 * flows)
    gap_ns, rtt_ns = 100_000, 40_000_000
    tables = []
    for f in range(flows):
        table = _events(per_flow, loss, gap_ns, rtt_ns, rng)
        table[:, 0] += T0_NS + f * (gap_ns // flows)
        tables.append(np.column_stack([table, np.full(len(table), f)]))
    allrows = np.concatenate(tables)
    allrows = allrows[np.argsort(allrows[:, 0], kind="stable")]
    n = len(allrows)
    t, data, number, left, right, tsval, tsecr, flow = allrows.T
    data = data.astype(bool)
    frames = np.zeros((n, SNAP), np.uint8)
    frames[:, 0:6] = [0x02, 0, 0, 0, 0, 2]
    frames[:, 6:12] = [0x02, 0, 0, 0, 0, 1]
    frames[:, 12:14] = [0x08, 0x00]
    frames[:, 14] = 0x45
    header = np.where(data, 32, 44)
    ip_len = 20 + header + np.where(data, MSS, 0)
    _put(frames, 16, 2, ip_len)
    _put(frames, 18, 2, np.arange(n) & 0xFFFF)
    frames[:, 22] = np.where(data, 64, 61)
    frames[:, 23] = 6
    frames[:, 26:30] = [10, 0, 0, 1]
    frames[:, 30:34] = [10, 0, 1, 1]
    # ACKs come from 10.0.1.1 to 10.0.0.1: swap the addresses
    swap = ~data
    frames[np.ix_(swap, np.arange(26, 30))], frames[np.ix_(swap, np.arange(30, 34))] = (
        frames[np.ix_(swap, np.arange(30, 34))],
        frames[np.ix_(swap, np.arange(26, 30))].copy(),
    )
    port_server, port_client = 5201, 40000 + flow
    _put(frames, 34, 2, np.where(data, port_server, port_client))
    _put(frames, 36, 2, np.where(data, port_client, port_server))
    isn = 1000 + flow * 7_000_000
    _put(frames, 38, 4, np.where(data, (isn + number * MSS) & 0xFFFFFFFF, 1))
    _put(frames, 42, 4, np.where(data, 1, (isn + number * MSS) & 0xFFFFFFFF))
    frames[:, 46] = (header // 4) << 4
    frames[:, 47] = np.where(data, 0x18, 0x10)  # PSH|ACK, ACK
    _put(frames, 48, 2, np.full(n, 65535))
    frames[:, 54:56] = [1, 1]
    frames[:, 56:58] = [8, 10]
    _put(frames, 58, 4, tsval & 0xFFFFFFFF)
    _put(frames, 62, 4, tsecr & 0xFFFFFFFF)
    sack = swap & (right > left)
    frames[swap, 66:78] = 1  # NOPs where no block
    rows = np.flatnonzero(sack)
    frames[rows, 68] = 5
    frames[rows, 69] = 10
    sub = frames[rows]
    _put(sub, 70, 4, (isn[rows] + left[rows] * MSS) & 0xFFFFFFFF)
    _put(sub, 74, 4, (isn[rows] + right[rows] * MSS) & 0xFFFFFFFF)
    frames[rows] = sub
    wirelen = 14 + ip_len
    head = np.empty((n, 4), "<u4")
    head[:, 0], head[:, 1] = t // 10**9, t % 10**9
    head[:, 2] = np.minimum(wirelen, SNAP)
    head[:, 3] = wirelen
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        out.write(np.array([0xA1B23C4D, 0x00040002, 0, 0, SNAP, 1], "<u4").tobytes()[:24])
        out.write(np.concatenate([head.view(np.uint8), frames], axis=1).tobytes())
    os.replace(tmp, path)


if __name__ == "__main__":
    import sys

    write_capture(pathlib.Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 20_000)
