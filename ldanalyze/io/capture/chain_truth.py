"""Truth for the sender's view: where each TCP data segment the sender's capture holds vanished,
read off a chain of captures along its path (issue #44 §2).

``chain_truth`` takes the chain as ``read_vantages`` does (the sender's egress first, then one
capture after each hop, each later one naming the cause of the losses of the segment that ends
at it; the network lab's ``LabRun.chain()``) and returns one row per data record of the
sender's capture: a TCP segment with payload sent by the sender. Its verdict is ``delivered``
when the last capture holds it, else the cause of the segment after the furthest capture that
holds it (in the lab: not at r1's egress, r1's random drop, ``wireless``; at r1 but not at r2's
egress, r2's limiter, ``congestion`` for a shaper and ``policing`` for a policer).

Matching. A record is the same transmission in another capture when its flow (the 5-tuple),
TCP sequence number, payload length, IPv4 identification and payload hash
(``record.payload_hash``; 0 in every capture when the snap length cuts the payload's first 32
bytes) are equal; records equal in all of these are matched in capture order. Linux gives each
transmission, a retransmission too, a new IP ID, so the key is unique in practice.

A later capture that holds none of the sender's data records is refused (not a capture of the
same packets); one that lacks records a capture further on holds (it dropped them, or was not
running) is warned of, and those records take their verdict from the furthest capture.

Spurious by truth: a retransmission (a record some of whose bytes an earlier record of its flow
carried) is spurious when every one of its bytes had been carried by earlier records that were
delivered: the receiver had them all, whatever the sender knew.

Rows identify the sender's record twice over: ``index`` (its place in the capture: the
``uid`` of the sender's-view PacketTable) and ``offset`` (its byte offset in the file), so a
sender's-view trace joins its truth on either.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...errors import TraceError, UsageError
from ...packets import DELIVERED, FATES, LOST, Trace, sender_flows, unwrap_sequence
from .pcap import Capture, CaptureWarning, decode_capture
from .record import IPPROTO_TCP, S_DECODED
from .vantage import Vantage, parse_vantage

KEY = ["flow", "tcp_seq", "payload_len", "ip_id", "payload_hash"]
TRUTH_COLUMNS = (
    "index",
    "offset",
    "flow",
    "tcp_seq",
    "payload_len",
    "ip_id",
    "t_send",
    "retransmission",
    "truth",
    "furthest",
    "spurious",
)


def chain_truth(chain: Sequence[Vantage | str | os.PathLike], *, sender: str | None = None) -> pd.DataFrame:
    """One row per TCP data record the ``sender`` (an IP address; by default the source of the
    most TCP payload bytes in the first capture) sent, in capture order (module docstring).

    Columns: ``index`` and ``offset`` of the record in the first capture, ``flow`` (label),
    ``tcp_seq``, ``payload_len``, ``ip_id``, ``t_send`` (capture time, s), ``retransmission``
    (some of its bytes were sent before), ``truth`` (``delivered`` or the cause), ``furthest``
    (the file name of the last capture that holds it), ``spurious`` (a retransmission all of whose
    bytes had been delivered before).
    """
    vantages = [v if isinstance(v, Vantage) else parse_vantage(v) for v in chain]
    if len(vantages) < 2:
        raise UsageError("a chain needs at least two captures: the sender's and the receiver's")
    captures = [decode_capture(v.path) for v in vantages]
    first = _data_records(captures[0])
    if sender is None:
        if first.empty:
            raise UsageError(f"{vantages[0].path}: no TCP segment with payload, so no sender to find")
        sender = str(first.groupby("src")["payload_len"].sum().idxmax())
    sent = first[first["src"] == sender].reset_index(drop=True)
    if sent.empty:
        raise UsageError(f"{vantages[0].path}: {sender} sent no TCP segment with payload")
    seen = np.zeros((len(sent), len(vantages)), bool)
    seen[:, 0] = True
    for k, capture in enumerate(captures[1:], start=1):
        seen[_matched(sent, _data_records(capture)), k] = True
        if not seen[:, k].any():
            raise TraceError(
                capture.path,
                f"none of the {len(sent)} data segments {sender} sent in {vantages[0].path} appear in it: "
                "is it a capture of the same packets?",
            )
    furthest = seen.shape[1] - 1 - np.argmax(seen[:, ::-1], axis=1)
    for k in range(1, len(vantages) - 1):
        missed = int((~seen[:, k] & (furthest > k)).sum())
        if missed:
            warnings.warn(
                f"{vantages[k].path}: {missed} data segment(s) seen further on are not in it (dropped by the "
                "capture, or it was not running); their verdict is the furthest capture's",
                CaptureWarning,
                stacklevel=2,
            )
    causes = np.array([DELIVERED if k == len(vantages) - 1 else vantages[k + 1].cause for k in range(len(vantages))])
    paths = np.array([os.path.basename(v.path) for v in vantages])
    truth = sent.assign(truth=causes[furthest], furthest=paths[furthest])
    truth["retransmission"], truth["spurious"] = _retransmissions(truth)
    return truth[list(TRUTH_COLUMNS)]


def _data_records(capture: Capture) -> pd.DataFrame:
    """The capture's decoded TCP records with payload: index, offset, time, source, the key."""
    r = capture.records
    rows = np.flatnonzero((r["status"] == S_DECODED) & (r["proto"] == IPPROTO_TCP) & (r["payload_len"] > 0))
    flows = capture.flows
    flow = r["flow"][rows]
    return pd.DataFrame(
        {
            "index": rows,
            "offset": r["offset"][rows].astype(np.int64),
            "flow": flows["label"].to_numpy()[flow],
            "src": flows["src"].to_numpy()[flow],
            "tcp_seq": r["tcp_seq"][rows].astype(np.int64),
            "payload_len": r["payload_len"][rows].astype(np.int64),
            "ip_id": r["ip_id"][rows].astype(np.int64),
            "payload_hash": r["payload_hash"][rows],
            "t_send": capture.times()[rows],
        }
    )


def _matched(sent: pd.DataFrame, later: pd.DataFrame) -> np.ndarray:
    """Which rows of ``sent`` a later capture holds: equal keys, the n-th with the n-th."""
    left = sent[KEY].assign(n=sent.groupby(KEY, sort=False).cumcount(), row=np.arange(len(sent)))
    right = later[KEY].assign(n=later.groupby(KEY, sort=False).cumcount())
    return left.merge(right, on=[*KEY, "n"], how="inner")["row"].to_numpy()


def _retransmissions(truth: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row: does an earlier row of its flow carry some of its bytes (a retransmission), and
    did earlier delivered rows carry all of them (spurious)?"""
    retransmission = np.zeros(len(truth), bool)
    spurious = np.zeros(len(truth), bool)
    for _, rows in truth.groupby("flow", sort=False).indices.items():
        start = unwrap_sequence(truth["tcp_seq"].to_numpy()[rows], 1 << 32)
        end = start + truth["payload_len"].to_numpy()[rows]
        delivered = truth["truth"].to_numpy()[rows] == DELIVERED
        sent, arrived = _Coverage(), _Coverage()
        for i, row in enumerate(rows):
            retransmission[row] = sent.overlaps(start[i], end[i])
            spurious[row] = retransmission[row] and arrived.covers(start[i], end[i])
            sent.add(start[i], end[i])
            if delivered[i]:
                arrived.add(start[i], end[i])
    return retransmission, spurious


class _Coverage:
    """A union of half-open byte intervals, kept as sorted disjoint starts and ends."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        lo = bisect.bisect_left(self.ends, start)  # the first interval ending at or after start
        hi = bisect.bisect_right(self.starts, end)  # past the last starting at or before end
        if lo < hi:
            start, end = min(start, self.starts[lo]), max(end, self.ends[hi - 1])
        self.starts[lo:hi] = [start]
        self.ends[lo:hi] = [end]

    def covers(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start) - 1
        return i >= 0 and self.ends[i] >= end

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.ends, start)  # the first interval ending after start
        return i < len(self.starts) and self.starts[i] < end


__all__ = ["TRUTH_COLUMNS", "chain_truth"]


def with_chain_truth(trace: Trace, chain: Sequence[Vantage | str | os.PathLike]) -> Trace:
    """``trace`` (the sender's view of the chain's first capture) with each transmission's true
    fate from :func:`chain_truth`, joined on the record index (``uid``): a transmission dropped on
    the way takes the drop's cause (detected by the sender or not: one never declared lost stays
    undetected); one the sender declared lost that reached the receiver is delivered, spurious by
    ``truth`` unless its own evidence already said so. Rows of flows read in the receiver's view
    keep theirs. ``meta['truth']`` says where the truth came from and what it changed."""
    if "t_ack" not in trace.packets.columns:
        raise UsageError(f"{trace.path}: the truth of a chain joins onto a sender's view; read it at the sender")
    truth = chain_truth(chain)
    packets = trace.packets
    sender_rows = packets["flow"].astype(str).isin(sender_flows(trace)).to_numpy()
    by_index = pd.Series(truth["truth"].to_numpy(), index=truth["index"].to_numpy())
    found = by_index.reindex(packets["uid"].to_numpy()).to_numpy()
    known = sender_rows & pd.notna(found)
    dropped = known & (found != DELIVERED)
    reached = known & (found == DELIVERED)
    fate = packets["fate"].astype(str).to_numpy(object)
    declared_lost = fate == LOST
    fate[dropped] = found[dropped]
    fate[reached & declared_lost] = DELIVERED
    spurious = packets["spurious"].astype(str).to_numpy(object)
    newly_spurious = reached & declared_lost & (spurious == "")
    spurious[newly_spurious] = "truth"
    reason = packets["reason"].astype(str).to_numpy(object)
    reason[dropped] = "chain"
    out = packets.assign(
        fate=pd.Categorical(fate, categories=FATES), spurious=pd.Categorical(spurious), reason=pd.Categorical(reason)
    )
    meta = {
        **trace.meta,
        "truth": {
            "chain": [os.fspath(v.path if isinstance(v, Vantage) else v) for v in chain],
            "matched": int(known.sum()),
            "dropped": int(dropped.sum()),
            "declared_lost_but_delivered": int((reached & declared_lost).sum()),
            "dropped_never_declared": int((dropped & ~declared_lost).sum()),
        },
    }
    return dataclasses.replace(trace, packets=out, meta=meta)
