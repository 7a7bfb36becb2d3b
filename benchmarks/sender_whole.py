"""The sender's view as a user runs it, against the receiver's (issue #44, Speed): ``ldanalyze
inspect`` of a 2 M-packet server-side capture of bulk TCP transfers (``tcp_sender_capture``:
data, duplicate ACKs with SACK, fast retransmissions) against ``inspect`` of a receiver-side
capture of as many packets (``pcap_ingest``'s lossy iperf3 flows), each in a fresh process,
taking turns (target: the sender's <= 1.5x the receiver's in every run); and ``score --lda all``
of the server-side capture against its ``inspect``.

Usage: ``python benchmarks/sender_whole.py [--packets 2000000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import pcap_ingest  # noqa: E402
import tcp_sender_capture  # noqa: E402
from inspect_whole import PAYLOAD, pair, ratios, spread  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ldanalyze = [sys.executable, "-m", "ldanalyze"]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "ldanalyze")], check=True, stdout=subprocess.DEVNULL
    )
    sender = pcap_ingest.DATA / f"tcp_sender_{args.packets}.pcap"
    if not sender.exists():
        pcap_ingest.DATA.mkdir(parents=True, exist_ok=True)
        tcp_sender_capture.write_capture(sender, args.packets)
    writer = functools.partial(pcap_ingest.write_pcap, kind="iperf3", hop=pcap_ingest.lossy)
    receiver = pcap_ingest.build(f"inspect_iperf3_lossy_{args.packets}.pcap", writer, args.packets, PAYLOAD)
    at_sender, at_receiver = pair(
        [*ldanalyze, "inspect", str(sender)], [*ldanalyze, "inspect", str(receiver)], args.repeat
    )
    score, inspect_again = pair(
        [*ldanalyze, "score", str(sender), "--lda", "all"], [*ldanalyze, "inspect", str(sender)], args.repeat
    )
    print(f"server-side capture of 8 TCP transfers, {args.packets:,} packets ({sender.stat().st_size / 1e6:.0f} MB)")
    print(f"  ldanalyze inspect (sender's view)        : {spread(at_sender)}")
    print(f"  ldanalyze inspect of a receiver's capture: {spread(at_receiver)}   ({args.packets:,} packets)")
    print(
        f"  sender / receiver, run by run            : {ratios(at_sender, at_receiver)}   (target <= 1.5 in every run)"
    )
    print(f"  ldanalyze score --lda all                : {spread(score)}")
    print(f"  score / inspect, run by run              : {ratios(score, inspect_again)}")


if __name__ == "__main__":
    main()
