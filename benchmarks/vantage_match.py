"""Two-capture matching speed: ``read_vantages`` on a sender and a receiver capture, in one run
against the cost of decoding the two files and against a plain Python dictionary join.

Writes (once, under benchmarks/_data/) the RTP capture of ``pcap_ingest.py`` as the sender's
capture, and the receiver's: the same packets one hop later (TTL 63, 5 ms later), minus 2 %.
Prints, best of ``--repeat``:

* ``decode x2``: ``decode_capture`` of both files, the floor any matcher pays;
* ``read_vantages``: decode + payload sequence numbers + matching + fates + clock fits + skew
  removal, and its ratio to the floor;
* ``dict join``: matching the decoded records with a Python dict keyed by
  (flow, IP ID, payload hash), the plain way, and how many times slower it is than the
  matching part of ``read_vantages`` (its time minus the floor).

Usage: ``python benchmarks/vantage_match.py [--packets N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pcap_ingest import DATA, best_of, build, write_pcap  # noqa: E402

from ldanalyze.io.capture.pcap import decode_capture  # noqa: E402
from ldanalyze.io.capture.vantage import read_vantages  # noqa: E402

PAYLOAD = 172
DROP_EVERY = 50  # one packet in 50 never reaches the receiver


def one_hop_later(f: np.ndarray, ts: np.ndarray, start: int):
    """The receiver's view of a batch: 2 % fewer packets, TTL 63, 5 ms later."""
    kept = (np.arange(start, start + f.shape[0]) % DROP_EVERY) != 7
    f = f[kept]
    f[:, 22] = 63
    return f, ts[kept] + 5_000_000


def write_receiver(path: pathlib.Path, n: int, payload: int) -> None:
    write_pcap(path, n, payload, hop=one_hop_later)


def dict_join(sender: pathlib.Path, receiver: pathlib.Path) -> int:
    """The plain matcher: a dict from (flow label, IP ID, payload hash) to the sender's records."""
    captures = [decode_capture(sender), decode_capture(receiver)]
    keyed = []
    for c in captures:
        labels = c.flows["label"].tolist()
        r = c.records
        keyed.append(
            [(labels[f], i, h) for f, i, h in zip(r["flow"].tolist(), r["ip_id"].tolist(), r["payload_hash"].tolist())]
        )
    where = {key: row for row, key in enumerate(keyed[0])}
    return sum(1 for key in keyed[1] if key in where)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.packets
    sender = build(f"rtp_{n}.pcap", write_pcap, n, PAYLOAD)
    receiver = build(f"rtp_{n}_rx.pcap", write_receiver, n, PAYLOAD)
    print(f"sender {sender.name}: {n:,} packets; receiver {receiver.name}: {n - n // DROP_EVERY:,} packets (in {DATA})")

    def floor():
        decode_capture(sender)
        decode_capture(receiver)

    def chain():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return read_vantages([str(sender), str(receiver)])

    trace = chain()  # numba and page caches
    lost = int((trace.packets["fate"] == "lost").sum())
    assert lost == n // DROP_EVERY, lost
    t_floor, _ = best_of(floor, args.repeat)
    t_chain, _ = best_of(chain, args.repeat)
    t_dict, matched = best_of(lambda: dict_join(sender, receiver), 1)
    assert matched == n - n // DROP_EVERY
    matching = t_chain - t_floor
    print(f"decode x2       {t_floor:7.3f} s  {2 * n / t_floor / 1e6:6.2f} M records/s")
    print(
        f"read_vantages   {t_chain:7.3f} s  {n / t_chain / 1e6:6.2f} M packets/s  "
        f"{t_chain / t_floor:5.2f}x the decode floor ({lost:,} losses found)"
    )
    print(
        f"dict join       {t_dict:7.3f} s  (decode included)  matching part: "
        f"{(t_dict - t_floor) / max(matching, 1e-9):5.1f}x slower than read_vantages' own "
        f"({matching:.3f} s beyond the decode)"
    )


if __name__ == "__main__":
    main()
