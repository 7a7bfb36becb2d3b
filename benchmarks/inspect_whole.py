"""Whole-process ``ldanalyze inspect``, as a user runs it, against the floors the batch issue
names, in one run on the same files:

* a 5 M-line ns-2 wired trace (``ns2_ingest.build``): ``ldanalyze inspect FILE`` against a fresh
  interpreter that imports numpy, pandas and pyarrow and reads the file with
  ``pyarrow.csv.read_csv`` (target: inspect <= 1.5x that);
* a 2 M-packet Ethernet/IPv4/UDP pcap (``pcap_ingest.write_pcap``): ``ldanalyze inspect FILE``
  against a fresh interpreter running a plain dpkt decode loop over it (target: inspect >= 8x
  faster).

Every command runs in its own process with the numba cache warm (one untimed run first) and
ldanalyze's bytecode compiled, as ``pip install`` leaves a package (an editable install run with
PYTHONDONTWRITEBYTECODE, as in our sandbox, compiles every module at every start: 0.2 s); the
best of ``--repeat`` runs is kept, alternating the two commands of a pair. Usage:
``python benchmarks/inspect_whole.py [--lines 5000000] [--packets 2000000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import ns2_ingest  # noqa: E402
import pcap_ingest  # noqa: E402

ARROW = (
    "import sys, numpy, pandas, pyarrow, pyarrow.csv as c; c.read_csv(sys.argv[1], "
    "read_options=c.ReadOptions(autogenerate_column_names=True), parse_options=c.ParseOptions(delimiter=' '))"
)
DPKT = (
    "import sys, socket, dpkt\n"
    "n = 0\n"
    "for ts, buf in dpkt.pcap.Reader(open(sys.argv[1], 'rb')):\n"
    "    ip = dpkt.ethernet.Ethernet(buf).data\n"
    "    udp = ip.data\n"
    "    key = (socket.inet_ntoa(ip.src), socket.inet_ntoa(ip.dst), udp.sport, udp.dport, ip.id, ip.len)\n"
    "    n += 1\n"
)


def run(command: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def pair(ours: list[str], floor: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """Every run's seconds of the two commands, alternating (the best is what is compared)."""
    run(ours)  # numba's cache and the page cache
    times_ours, times_floor = [], []
    for _ in range(repeat):
        times_ours.append(run(ours))
        times_floor.append(run(floor))
    return times_ours, times_floor


def spread(times: list[float]) -> str:
    """The best of the runs, and all of them: on a noisy machine the spread says how far to trust it."""
    return f"{min(times):6.2f} s   (runs: {', '.join(f'{t:.2f}' for t in times)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=5_000_000)
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    inspect = [sys.executable, "-m", "ldanalyze.cli", "inspect"]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "ldanalyze")], check=True, stdout=subprocess.DEVNULL
    )

    trace = ns2_ingest.build(args.lines)
    ours, arrow = pair([*inspect, str(trace)], [sys.executable, "-c", ARROW, str(trace)], args.repeat)
    print(f"ns-2 wired trace, {args.lines:,} lines ({trace.stat().st_size / 1e6:.0f} MB)")
    print(f"  ldanalyze inspect                        : {spread(ours)}")
    print(f"  imports + bare pyarrow read_csv          : {spread(arrow)}")
    print(f"  inspect / floor                          : {min(ours) / min(arrow):6.2f}x   (target <= 1.5x)")

    capture = pcap_ingest.build(f"inspect_udp_{args.packets}.pcap", pcap_ingest.write_pcap, args.packets, 172)
    ours, plain = pair([*inspect, str(capture)], [sys.executable, "-c", DPKT, str(capture)], args.repeat)
    print(f"Ethernet/IPv4/UDP pcap, {args.packets:,} packets ({capture.stat().st_size / 1e6:.0f} MB)")
    print(f"  ldanalyze inspect                        : {spread(ours)}")
    print(f"  plain dpkt decode loop                   : {spread(plain)}")
    print(f"  dpkt / inspect                           : {min(plain) / min(ours):6.1f}x   (target >= 8x)")


if __name__ == "__main__":
    main()
