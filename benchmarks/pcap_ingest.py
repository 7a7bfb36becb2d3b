"""Capture ingest speed: ldanalyze's pcap/pcapng decode against dpkt and tshark, in one run.

Writes (once, under benchmarks/_data/) a synthetic capture of Ethernet/IPv4/UDP/RTP packets
(8 flows, G.711-sized 172-byte payloads) as pcap and as pcapng, then measures on those files:

* ``decode_capture`` (pcap): the container walk and frame decode into per-record columns
  (time, flow, IP length and ID, payload hash, payload head); the issue's target is
  >= 5 M packets/s;
* a plain dpkt loop decoding the same fields (time, addresses, ports, IP ID and length):
  target ratio >= 40x;
* ``tshark -T fields`` printing the same fields: target ratio >= 80x;
* ``decode_capture`` on the pcapng twin: target >= 3 M packets/s;
* ``read_capture`` (decode + RTP sequence/timestamp + PacketTable), for information;
* peak memory (VmHWM) of a fresh process decoding a large capture of 1400-byte packets,
  against the file's size: memory grows with packets, not with the file.

Usage: ``python benchmarks/pcap_ingest.py [--packets N] [--large-gb G] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ldanalyze.io.capture.pcap import decode_capture, read_capture  # noqa: E402

DATA = ROOT / "benchmarks" / "_data"
FLOWS = 8
T0_NS = 1_700_000_000 * 10**9


def frames(n: int, payload: int, start: int = 0, flows: int = FLOWS, kind: str = "rtp") -> np.ndarray:
    """``n`` Ethernet/IPv4/UDP frames (one row each) of RTP or iperf3 (``kind``), packets
    ``start`` .. ``start + n``, taking turns among ``flows`` flows."""
    i = np.arange(start, start + n, dtype=np.int64)
    flow = i % flows
    k = i // flows  # packet number within its flow
    ip_len = 20 + 8 + payload
    f = np.zeros((n, 14 + ip_len), np.uint8)
    f[:, 0:6] = [0x02, 0, 0, 0, 0, 2]
    f[:, 6:12] = [0x02, 0, 0, 0, 0, 1]
    f[:, 12:14] = [0x08, 0x00]
    f[:, 14] = 0x45
    f[:, 16:18] = [ip_len >> 8, ip_len & 0xFF]
    put_be(f, 18, 2, i & 0xFFFF)  # IP ID
    f[:, 22] = 64
    f[:, 23] = 17
    f[:, 26:30] = [10, 0, 0, 1]
    f[:, 30:34] = [10, 0, 1, 1]
    put_be(f, 34, 2, 5004 + 2 * flow)
    put_be(f, 36, 2, 6000 + 2 * flow)
    put_be(f, 38, 2, np.full(n, 8 + payload))
    if kind == "iperf3":  # tv_sec, tv_usec, a 32-bit packet counter from 1
        ts = times_ns(n, start, flows)
        put_be(f, 42, 4, ts // 10**9)
        put_be(f, 46, 4, ts % 10**9 // 1000)
        put_be(f, 50, 4, k + 1)
        return f
    f[:, 42] = 0x80
    put_be(f, 44, 2, k & 0xFFFF)  # RTP sequence
    put_be(f, 46, 4, (160 * k) & 0xFFFFFFFF)  # RTP timestamp
    put_be(f, 50, 4, 0x10000 + flow)  # SSRC
    return f


def put_be(a: np.ndarray, at: int, width: int, values) -> None:
    values = np.asarray(values, dtype=np.int64)
    for b in range(width):
        a[:, at + b] = (values >> (8 * (width - 1 - b))) & 0xFF


def times_ns(n: int, start: int = 0, flows: int = FLOWS) -> np.ndarray:
    """One packet per 20 ms per flow, with a little jitter."""
    i = np.arange(start, start + n, dtype=np.int64)
    return T0_NS + i * (20_000_000 // flows) + (i * 7919) % 400_000


def write_pcap(
    path: pathlib.Path, n: int, payload: int, batch: int = 200_000, hop=None, flows: int = FLOWS, kind: str = "rtp"
) -> None:
    """The capture of ``n`` packets of ``flows`` flows of ``kind`` (``frames``); ``hop(frames,
    ts_ns, start)`` may change each batch (drop packets, lower the TTL, delay them) and returns
    the frames and times to write."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        out.write(np.array([0xA1B23C4D, 0x00040002, 0, 0, 262144, 1], "<u4").tobytes()[:24])
        for start in range(0, n, batch):
            m = min(batch, n - start)
            f, ts = frames(m, payload, start, flows, kind), times_ns(m, start, flows)
            if hop is not None:
                f, ts = hop(f, ts, start)
            header = np.empty((f.shape[0], 4), "<u4")
            header[:, 0], header[:, 1] = ts // 10**9, ts % 10**9
            header[:, 2] = header[:, 3] = f.shape[1]
            out.write(np.concatenate([header.view(np.uint8), f], axis=1).tobytes())
    os.replace(tmp, path)


def lossy(frames, ts_ns, start):
    """About 1 % of the packets lost, in runs of one to three (so that there is something to score)."""
    i = np.arange(start, start + frames.shape[0])
    kept = (i // 3 * 2654435761) % 1000 >= 4 + i % 3 * 2
    return frames[kept], ts_ns[kept]


def write_pcapng(path: pathlib.Path, n: int, payload: int, batch: int = 200_000) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        # SHB: version 1.0, section length unknown
        out.write(np.array([0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0xFFFFFFFF, 0xFFFFFFFF, 28], "<u4").tobytes())
        # IDB: Ethernet, snaplen 262144, if_tsresol = 9 (ns)
        out.write(
            np.array([1, 32, 1, 262144], "<u4").tobytes()
            + bytes([9, 0, 1, 0, 9, 0, 0, 0])
            + np.array([0, 32], "<u4").tobytes()
        )
        for start in range(0, n, batch):
            m = min(batch, n - start)
            f = frames(m, payload, start)
            padded = -(-f.shape[1] // 4) * 4
            blen = 32 + padded
            ts = times_ns(m, start).astype(np.uint64)
            block = np.zeros((m, blen), np.uint8)
            head = np.empty((m, 7), "<u4")
            head[:, 0], head[:, 1], head[:, 2] = 6, blen, 0
            head[:, 3], head[:, 4] = ts >> np.uint64(32), ts & np.uint64(0xFFFFFFFF)
            head[:, 5] = head[:, 6] = f.shape[1]
            block[:, :28] = head.view(np.uint8)
            block[:, 28 : 28 + f.shape[1]] = f
            block[:, blen - 4 :] = np.full((m, 1), blen, "<u4").view(np.uint8)
            out.write(block.tobytes())
    os.replace(tmp, path)


def build(name: str, writer, n: int, payload: int) -> pathlib.Path:
    path = DATA / name
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        writer(path, n, payload)
    return path


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def dpkt_loop(path: pathlib.Path) -> int:
    """The plain dpkt decode: the same fields into Python lists."""
    import dpkt

    ts, src, dst, sport, dport, ip_id, ip_len = [], [], [], [], [], [], []
    with open(path, "rb") as f:
        for t, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            udp = ip.data
            ts.append(t)
            src.append(ip.src)
            dst.append(ip.dst)
            sport.append(udp.sport)
            dport.append(udp.dport)
            ip_id.append(ip.id)
            ip_len.append(ip.len)
    return len(ts)


def tshark_fields(path: pathlib.Path) -> int:
    fields = ["frame.time_epoch", "ip.src", "ip.dst", "udp.srcport", "udp.dstport", "ip.id", "ip.len"]
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields"] + [a for f in fields for a in ("-e", f)]
    out = subprocess.run(cmd, check=True, capture_output=True)
    return out.stdout.count(b"\n")


def peak_rss_mb(path: pathlib.Path) -> float:
    """Peak RSS (MB) of a fresh process that only decodes ``path`` (VmHWM: getrusage would
    report this parent's peak)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from ldanalyze.io.capture.pcap import decode_capture;"
        "c = decode_capture(sys.argv[2]); print(len(c.records), file=sys.stderr);"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ROOT), str(path)], check=True, capture_output=True, text=True)
    return float(out.stdout) / 1e3


def baseline_rss_mb() -> float:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import ldanalyze.io.capture.pcap;"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], check=True, capture_output=True, text=True)
    return float(out.stdout) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--large-gb", type=float, default=2.0, help="size of the memory test capture (0: skip)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.packets
    pcap = build(f"rtp_{n}.pcap", write_pcap, n, 172)
    pcapng = build(f"rtp_{n}.pcapng", write_pcapng, n, 172)
    print(
        f"files: {pcap.name} ({pcap.stat().st_size / 1e6:.0f} MB), {pcapng.name} "
        f"({pcapng.stat().st_size / 1e6:.0f} MB), {n:,} packets"
    )

    decode_capture(pcap)  # numba cache and page cache
    decode_capture(pcapng)
    t_ours, capture = best_of(lambda: decode_capture(pcap), args.repeat)
    assert len(capture.records) == n and capture.counts["decoded"] == n
    t_ng, capture_ng = best_of(lambda: decode_capture(pcapng), args.repeat)
    assert len(capture_ng.records) == n
    t_trace, trace = best_of(lambda: read_capture(pcap), min(args.repeat, 3))
    t_dpkt, count = best_of(lambda: dpkt_loop(pcap), 1)
    assert count == n
    ours, ng = n / t_ours, n / t_ng
    print(f"ldanalyze decode_capture, pcap  : {ours / 1e6:6.2f} M packets/s  ({t_ours:.3f} s)   (target >= 5)")
    print(f"ldanalyze decode_capture, pcapng: {ng / 1e6:6.2f} M packets/s  ({t_ng:.3f} s)   (target >= 3)")
    print(
        f"ldanalyze read_capture (RTP)    : {n / t_trace / 1e6:6.2f} M packets/s  ({t_trace:.3f} s, "
        f"{len(trace.packets):,} rows)"
    )
    print(f"plain dpkt decode loop          : {n / t_dpkt / 1e6:6.3f} M packets/s  ({t_dpkt:.2f} s)")
    print(f"ratio vs dpkt                   : {t_dpkt / t_ours:6.1f}x   (target >= 40x)")
    if shutil.which("tshark"):
        t_tshark, count = best_of(lambda: tshark_fields(pcap), 1)
        assert count == n
        print(f"tshark -T fields                : {n / t_tshark / 1e6:6.3f} M packets/s  ({t_tshark:.2f} s)")
        print(f"ratio vs tshark                 : {t_tshark / t_ours:6.1f}x   (target >= 80x)")
    else:
        print("tshark                          : not installed (apt-get install tshark): ratio not measured")
    if args.large_gb > 0:
        m = int(args.large_gb * 1e9 / (16 + 1400))
        large = build(f"rtp_large_{m}.pcap", write_pcap, m, 1400 - 42)
        item = capture.records.dtype.itemsize
        print(
            f"peak RSS of a fresh process (one that only imports ldanalyze: {baseline_rss_mb():.0f} MB; "
            f"records take {item} bytes a packet):"
        )
        for path, packets in ((pcap, n), (large, m)):
            print(
                f"  decoding {path.stat().st_size / 1e6:6,.0f} MB, {packets:>9,} packets: "
                f"{peak_rss_mb(path):.0f} MB (records {packets * item / 1e6:.0f} MB)"
            )


if __name__ == "__main__":
    main()
