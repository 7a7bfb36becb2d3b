"""Tunnel decapsulation cost: ``decode_capture`` on the same packets plain and in tunnels, in one run.

Writes (once, under benchmarks/_data/) the synthetic capture of ``pcap_ingest.py`` (8 flows of
Ethernet/IPv4/UDP/RTP, 172-byte payloads) and the same packets inside GTP-U (plain, and with a
PDU session container extension header, as on N3), VXLAN (the whole Ethernet frame) and GRE with
key and sequence number, each flow in its own tunnel. Decodes them in turn, ``--repeat`` rounds
(the order reversed every other round, so that a burst of load on the machine falls on all of
them), and prints each capture's best rate and its time per packet against the plain capture's,
as wall time and as the process's CPU time (less disturbed by other work on the machine): the
target is at most 30 % extra (the tunnelled files are also 36-50 bytes a packet longer to read).

Usage: ``python benchmarks/tunnel_decode.py [--packets N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pcap_ingest import DATA, put_be, write_pcap  # noqa: E402

from ldanalyze.io.capture.pcap import decode_capture  # noqa: E402

PAYLOAD = 172


def outer(n: int, body: int, proto: int) -> np.ndarray:
    """Ethernet and an outer IPv4 header (192.0.2.1 > 192.0.2.2) before ``body`` bytes."""
    f = np.zeros((n, 34 + body), np.uint8)
    f[:, 0:12] = [0x02, 0, 0, 0, 0, 0xB, 0x02, 0, 0, 0, 0, 0xA]
    f[:, 12:14] = [0x08, 0x00]
    f[:, 14] = 0x45
    put_be(f, 16, 2, np.full(n, 20 + body))
    f[:, 22] = 64
    f[:, 23] = proto
    f[:, 26:30] = [192, 0, 2, 1]
    f[:, 30:34] = [192, 0, 2, 2]
    return f


def udp(f: np.ndarray, sport: int, dport: int) -> None:
    put_be(f, 34, 2, np.full(f.shape[0], sport))
    put_be(f, 36, 2, np.full(f.shape[0], dport))
    put_be(f, 38, 2, np.full(f.shape[0], f.shape[1] - 34))


def flow_id(f: np.ndarray) -> np.ndarray:
    """A per-flow tunnel id: the inner UDP source port."""
    return f[:, 34].astype(np.int64) << 8 | f[:, 35]


def gtpu(f: np.ndarray, extension: bool) -> np.ndarray:
    inner = f[:, 14:]
    head = 16 if extension else 8
    g = outer(f.shape[0], 8 + head + inner.shape[1], 17)
    udp(g, 2152, 2152)
    g[:, 42] = 0x34 if extension else 0x30
    g[:, 43] = 0xFF
    put_be(g, 44, 2, np.full(f.shape[0], g.shape[1] - 50))
    put_be(g, 46, 4, 0x10000 + flow_id(f))
    if extension:  # sequence word, next extension 0x85; a PDU session container (QFI 9)
        g[:, 50:54] = [0, 0, 0, 0x85]
        g[:, 54:58] = [1, 0x10, 9, 0]
    g[:, g.shape[1] - inner.shape[1] :] = inner
    return g


def vxlan(f: np.ndarray) -> np.ndarray:
    g = outer(f.shape[0], 16 + f.shape[1], 17)
    udp(g, 40000, 4789)
    g[:, 42] = 0x08
    put_be(g, 46, 3, flow_id(f))
    g[:, 50:] = f
    return g


def gre(f: np.ndarray) -> np.ndarray:
    inner = f[:, 14:]
    g = outer(f.shape[0], 12 + inner.shape[1], 47)
    g[:, 34:38] = [0x30, 0, 0x08, 0x00]  # key and sequence present, IPv4
    put_be(g, 38, 4, flow_id(f))
    put_be(g, 42, 4, np.arange(f.shape[0]))
    g[:, 46:] = inner
    return g


WRAPS = {
    "plain": None,
    "gtpu": lambda f: gtpu(f, False),
    "gtpu-ext": lambda f: gtpu(f, True),
    "vxlan": vxlan,
    "gre": gre,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, wrap in WRAPS.items():
        paths[name] = DATA / f"tunnel_{name}_{args.packets}.pcap"
        if not paths[name].exists():
            hop = None if wrap is None else (lambda f, ts, start, wrap=wrap: (wrap(f), ts))
            write_pcap(paths[name], args.packets, PAYLOAD, hop=hop)
    wall = dict.fromkeys(paths, float("inf"))
    cpu = dict.fromkeys(paths, float("inf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decode_capture(paths["plain"])  # compile (or load) the kernels first
        for k in range(args.repeat):
            for name in list(paths) if k % 2 == 0 else list(paths)[::-1]:
                t0, c0 = time.perf_counter(), time.process_time()
                capture = decode_capture(paths[name])
                wall[name] = min(wall[name], time.perf_counter() - t0)
                cpu[name] = min(cpu[name], time.process_time() - c0)
                assert capture.counts["decoded"] == args.packets and len(capture.flows) == 8, name
                if name != "plain":
                    assert sum(capture.counts["tunnels"].values()) == args.packets, name
                del capture
    print(f"{args.packets:,} packets, best of {args.repeat} rounds")
    for name in paths:
        extra = "baseline" if name == "plain" else f"{wall[name] / wall['plain'] - 1:+.1%} per packet"
        extra_cpu = "" if name == "plain" else f" (CPU time {cpu[name] / cpu['plain'] - 1:+.1%})"
        size = paths[name].stat().st_size / args.packets
        print(
            f"  {name:9s} {args.packets / wall[name] / 1e6:6.2f} M packets/s  {size:5.0f} B/packet  {extra}{extra_cpu}"
        )


if __name__ == "__main__":
    main()
