"""qlog reading speed: ldanalyze's qlog reader against plain ``json`` and untyped ``msgspec``.

Builds a large qlog by repeating the bundled aioquic download's server trace
(tests/data/qlog/aioquic_server.qlog.gz: 1-RTT packets, ACKs, losses, metrics), each copy's
times and packet numbers shifted past the previous one's, as qlog 0.3 JSON and as JSON-SEQ, then
measures on each, in one run:

* ``ldanalyze``: ``read_qlog`` (parse, the events walked, fates, the ACK stream, the tables),
* ``json``: the least a reader written with the standard library does: ``json.loads`` (the
  document; JSON-SEQ: record by record) and a loop that looks at every event's name,
* ``msgspec``: ``msgspec.json.decode`` of the document into Python objects, untyped (what a reader
  that turned every event into dicts would pay before looking at any),
* and the floors under ``ldanalyze``: its decoding alone (``typed_documents``: each event typed
  by its name, the data of those read as structs, the rest skipped), and msgspec's scan of the
  text with every event skipped (the least any msgspec reader pays: JSON only).

Prints events per second of processor time and the ratios; the issue's target (#44, Speed) is
>= 1 M events/s. On the 2-core machine shared with other work where it was written (0.3 JSON,
999,000 events, 175 MB; every figure with the file read): ``read_qlog`` 0.21-0.25 M events/s
before the typed decoding, 0.31-0.37 after; its decoding alone 0.8-0.95 M/s, msgspec's scan
2.1-2.5 M/s. The rest of the time is Python's, per event read (about 640,000 of the 999,000
are of the four kinds read): their objects made, walked and freed.
Usage: ``python benchmarks/qlog_read.py [--events N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import sys
import tempfile
import time

import msgspec

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ldanalyze.io.qlog import read_qlog  # noqa: E402
from ldanalyze.io.qlog.parse import paused_gc, typed_documents  # noqa: E402

SAMPLE = ROOT / "tests" / "data" / "qlog" / "aioquic_server.qlog.gz"


def shifted(event: dict, dt: float, dpn: int) -> dict:
    """A copy of an event ``dt`` ms later with its packet numbers (sent, lost, acknowledged) ``dpn`` higher."""
    event = msgspec.json.decode(msgspec.json.encode(event))
    event["time"] += dt
    data = event["data"]
    header = data.get("header")
    if event["name"].endswith(("packet_sent", "packet_received", "packet_lost")):
        if header and "packet_number" in header and event["name"] != "transport:packet_received":
            header["packet_number"] += dpn
        if "packet_number" in data:
            data["packet_number"] += dpn
        for frame in data.get("frames") or []:
            if frame.get("frame_type") == "ack":
                frame["acked_ranges"] = [[lo + dpn, hi + dpn] for lo, hi in frame["acked_ranges"]]
    return event


def build(n_events: int) -> tuple[dict, bytes, bytes]:
    doc = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    (trace,) = doc["traces"]
    events = trace["events"]
    span = events[-1]["time"] - events[0]["time"] + 1
    top = 1 + max(e["data"]["header"]["packet_number"] for e in events if e["name"] == "transport:packet_sent")
    copies = [shifted(e, k * span, k * top) for k in range(max(1, n_events // len(events))) for e in events]
    big = {**doc, "traces": [{**trace, "events": copies}]}
    header = {
        "qlog_version": "0.3",
        "qlog_format": "JSON-SEQ",
        "trace": {k: v for k, v in trace.items() if k != "events"},
    }
    seq = b"".join(b"\x1e" + msgspec.json.encode(r) + b"\n" for r in [header, *copies])
    return big, msgspec.json.encode(big), seq


def plain_json(raw: bytes, seq: bool) -> int:
    """The floor of a standard-library reader: parse, and look at each event's name."""
    if seq:
        records = [json.loads(r) for r in raw.split(b"\x1e") if r.strip()]
        events = records[1:]
    else:
        events = [e for t in json.loads(raw)["traces"] for e in t["events"]]
    return sum(1 for e in events if e["name"].endswith("packet_sent"))


class _Skipped(msgspec.Struct):
    """An event, none of it decoded."""


class _Trace(msgspec.Struct):
    events: list[_Skipped] = []


class _Document(msgspec.Struct):
    traces: list[_Trace] = []


def decoding(raw: bytes) -> None:
    """``read_qlog``'s decoding alone, as it runs it (the garbage collector paused)."""
    with paused_gc():
        typed_documents(raw)


def best(func, repeat: int) -> float:
    """The least processor time of ``repeat`` runs: on a machine shared with other work, wall
    time measures the neighbours too."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    big, text, seq = build(args.events)
    n = len(big["traces"][0]["events"])
    read_qlog(SAMPLE)  # numba's cache warm
    with tempfile.TemporaryDirectory() as folder:
        for label, raw, name in (("JSON", text, "big.qlog"), ("JSON-SEQ", seq, "big.sqlog")):
            path = pathlib.Path(folder) / name
            path.write_bytes(raw)
            ours = best(lambda: read_qlog(path), args.repeat)
            plain = best(lambda: plain_json(path.read_bytes(), label == "JSON-SEQ"), args.repeat)
            floor = best(lambda: msgspec.json.decode(path.read_bytes()) if label == "JSON" else None, args.repeat)
            decoded = best(lambda: decoding(path.read_bytes()), args.repeat)
            scanned = best(
                lambda: msgspec.json.decode(path.read_bytes(), type=_Document) if label == "JSON" else None, args.repeat
            )
            print(f"{label}: {n:,} events, {len(raw) / 1e6:.0f} MB")
            print(f"  ldanalyze  {ours:6.2f} s  {n / ours / 1e6:5.2f} M events/s")
            print(
                f"  json       {plain:6.2f} s  {n / plain / 1e6:5.2f} M events/s   ldanalyze is {plain / ours:.1f}x faster"
            )
            if label == "JSON":
                print(
                    f"  msgspec    {floor:6.2f} s  {n / floor / 1e6:5.2f} M events/s   (parse only) ldanalyze at {floor / ours:.2f}x of it"
                )
            print(
                f"  decoding   {decoded:6.2f} s  {n / decoded / 1e6:5.2f} M events/s   (ldanalyze's alone, file read included)"
                f" {decoded / ours:.0%} of ldanalyze's time"
            )
            if label == "JSON":
                print(
                    f"  scan       {scanned:6.2f} s  {n / scanned / 1e6:5.2f} M events/s   (msgspec, every event skipped)"
                )


if __name__ == "__main__":
    main()
