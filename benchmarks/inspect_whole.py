"""Whole commands as a user runs them (``ldanalyze inspect``, ``ldanalyze score --lda all``), each
in a fresh process, against the floors the speed issue names, in one run on the same files:

* a 5 M-line ns-2 wired trace (``ns2_ingest.build``): ``inspect`` against a fresh interpreter
  that imports numpy, pandas and pyarrow and reads the file with ``pyarrow.csv.read_csv``
  (target: <= 1.2x in every run, issue #49); ``score --lda all`` against ``inspect`` (target <= 1.3x);
* the issue's capture: 2 M Ethernet/IPv4/UDP packets of 8 iperf3 flows, 567-byte payloads, about
  1 % lost (1.25 GB, ``pcap_ingest``): ``inspect`` against a fresh interpreter running a plain
  dpkt decode loop (target >= 8x faster) and against the time it cannot go below, a fresh
  interpreter that imports ldanalyze's command line and reads the file's bytes (target <= 2x);
  ``score --lda all`` against ``inspect`` (target <= 1.3x).

Each pair runs ``--repeat`` times, alternating, after one untimed run of each (numba's cache
and the page cache warm); every run and every run's ratio are printed, the best compared. The
package's bytecode is compiled first, as ``pip install`` leaves it (with
PYTHONDONTWRITEBYTECODE, as in our sandbox, an editable install compiles every module at every
start: 0.2 s). Usage: ``python benchmarks/inspect_whole.py [--lines 5000000] [--packets
2000000] [--repeat 5] [--dpkt-repeat 2]``.
"""

from __future__ import annotations

import argparse
import functools
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
READ_BYTES = (
    "import sys, ldanalyze.cli\n"
    "buffer = memoryview(bytearray(1 << 24))\n"
    "with open(sys.argv[1], 'rb', buffering=0) as f:\n"
    "    while f.readinto(buffer):\n"
    "        pass\n"
)
PAYLOAD = 567  # 625 bytes a packet in the file: 2 M packets, 1.25 GB


def run(command: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def pair(first: list[str], second: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """Every run's seconds of the two commands, alternating, after one untimed run of each."""
    run(first)
    run(second)
    times_first, times_second = [], []
    for _ in range(repeat):
        times_first.append(run(first))
        times_second.append(run(second))
    return times_first, times_second


def spread(times: list[float]) -> str:
    """The best of the runs, and all of them: on a noisy machine the spread says how far to trust it."""
    return f"{min(times):6.2f} s   (runs: {', '.join(f'{t:.2f}' for t in times)})"


def ratios(top: list[float], bottom: list[float]) -> str:
    return ", ".join(f"{a / b:.2f}" for a, b in zip(top, bottom))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=5_000_000)
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dpkt-repeat", type=int, default=2, help="dpkt loops to time (20-30 s each)")
    args = parser.parse_args()
    ldanalyze = [sys.executable, "-m", "ldanalyze"]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "ldanalyze")], check=True, stdout=subprocess.DEVNULL
    )

    trace = ns2_ingest.build(args.lines)
    inspect, arrow = pair([*ldanalyze, "inspect", str(trace)], [sys.executable, "-c", ARROW, str(trace)], args.repeat)
    score, inspect_again = pair(
        [*ldanalyze, "score", str(trace), "--lda", "all"], [*ldanalyze, "inspect", str(trace)], args.repeat
    )
    print(f"ns-2 wired trace, {args.lines:,} lines ({trace.stat().st_size / 1e6:.0f} MB)")
    print(f"  ldanalyze inspect                        : {spread(inspect)}")
    print(f"  imports + bare pyarrow read_csv          : {spread(arrow)}")
    print(f"  inspect / floor, run by run              : {ratios(inspect, arrow)}   (target <= 1.2 in every run)")
    print(f"  ldanalyze score --lda all                : {spread(score)}")
    print(f"  ldanalyze inspect (taking turns with it) : {spread(inspect_again)}")
    print(f"  score / inspect, best of each            : {min(score) / min(inspect_again):6.2f}x   (target <= 1.3x)")
    print(f"  score / inspect, run by run              : {ratios(score, inspect_again)}")

    name = f"inspect_iperf3_lossy_{args.packets}.pcap"
    writer = functools.partial(pcap_ingest.write_pcap, kind="iperf3", hop=pcap_ingest.lossy)
    capture = pcap_ingest.build(name, writer, args.packets, PAYLOAD)
    inspect, floor = pair(
        [*ldanalyze, "inspect", str(capture)], [sys.executable, "-c", READ_BYTES, str(capture)], args.repeat
    )
    plain = [run([sys.executable, "-c", DPKT, str(capture)]) for _ in range(args.dpkt_repeat)]
    score, inspect_again = pair(
        [*ldanalyze, "score", str(capture), "--lda", "all"], [*ldanalyze, "inspect", str(capture)], args.repeat
    )
    print(
        f"\nEthernet/IPv4/UDP pcap of iperf3 flows, {args.packets:,} packets less 1 % ({capture.stat().st_size / 1e6:.0f} MB)"
    )
    print(f"  ldanalyze inspect                        : {spread(inspect)}")
    print(f"  import ldanalyze.cli + read the bytes    : {spread(floor)}")
    print(f"  inspect / floor, best of each            : {min(inspect) / min(floor):6.2f}x   (target <= 2x)")
    print(f"  inspect / floor, run by run              : {ratios(inspect, floor)}")
    print(f"  plain dpkt decode loop                   : {spread(plain)}")
    print(f"  dpkt / inspect                           : {min(plain) / min(inspect):6.1f}x   (target >= 8x)")
    print(f"  ldanalyze score --lda all                : {spread(score)}")
    print(f"  ldanalyze inspect (taking turns with it) : {spread(inspect_again)}")
    print(f"  score / inspect, best of each            : {min(score) / min(inspect_again):6.2f}x   (target <= 1.3x)")
    print(f"  score / inspect, run by run              : {ratios(score, inspect_again)}")


if __name__ == "__main__":
    main()
