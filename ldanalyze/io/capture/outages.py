"""Capture outages: when the capture itself stopped recording, the packets it missed are not lost.

A real capture can miss seconds of traffic (a tcpdump that fell behind, a mirror port that
dropped, a sniffer that changed channel). A receiver reads every sequence number it missed as
a loss, so an outage of the capture becomes a burst of losses that no network caused: in
``tests/data/real/tunnels/gtp-iphone.pcap`` both RTP directions of a call stop at 80.92 s and
resume at 91.16 s, 911 of 946 data packets.

The rule (docs/captures.md, "Capture outages"):

- a **streaming** flow carries payload at a steady pace: at least :data:`MIN_PACKETS` payload
  packets, their median spacing at most :data:`OUTAGE_MIN` / :data:`PACE_FACTOR` (pure ACKs and
  sporadic flows, DNS, SIP, keepalives, do not count: a flow of ACKs falls silent whenever the
  data it acknowledges does);
- an **outage** is a silence that hides sequence numbers, of at least :data:`OUTAGE_MIN` seconds in the payload packets of
  every streaming flow together, where streaming flows in **both directions between one pair
  of hosts** carry packets within :data:`OUTAGE_MIN` before it and within :data:`OUTAGE_MIN`
  after it. Two independent senders on either side falling silent at once is the capture's
  failure, not the path's: wherever the capture sits on the path, one of the two directions had
  already passed it (a receiver's capture holds its own host's sending);
- a sequence number missing from a hole whose arrivals on either side straddle an outage that
  fills at least half the time between them was **not observed**: fate ``unobserved``, reason
  ``capture gap``. A flow silent alone while others carry on is still a loss.

A capture read one flow at a time (``split.py``) holds one flow's records at once: its outages
are not looked for.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...packets import FATES, LOST, UNOBSERVED
from .record import NO_TIME

OUTAGE_MIN = 1.0  # seconds of silence, at least, for a capture outage
PACE_FACTOR = 4  # a streaming flow's median spacing is at most OUTAGE_MIN / PACE_FACTOR (a call's 100 ms audio)
MIN_PACKETS = 10  # payload packets a streaming flow has at least
CAPTURE_GAP = "capture gap"  # the reason of a packet not observed because the capture was out


def capture_outages(records: np.ndarray, flows: pd.DataFrame) -> np.ndarray:
    """The capture's outages (module docstring) as rows of (start, end) capture times in
    seconds, in time order; an empty (0, 2) array when there are none."""
    none = np.empty((0, 2))
    ts, flow = records["ts_ns"], records["flow"]
    carrying = (flow >= 0) & (records["payload_len"] > 0) & (ts != NO_TIME)
    if carrying.sum() < 2 * MIN_PACKETS:
        return none
    ts, flow = ts[carrying], flow[carrying].astype(np.int64)
    in_time = bool(np.all(ts[1:] >= ts[:-1]))  # as a capture is written, mostly
    order = flow_order(flow, flows.shape[0]) if in_time else np.lexsort((ts, flow))
    ts_by_time, flow_by_time = ts / 1e9, flow
    ts, flow = ts_by_time[order], flow[order]
    starts = np.flatnonzero(np.r_[True, flow[1:] != flow[:-1]])
    counts = np.diff(np.r_[starts, flow.shape[0]])
    spacing = np.diff(ts)
    spacing[starts[1:] - 1] = np.inf  # across two flows: no spacing of either
    paced = np.zeros(flows.shape[0], bool)
    for first, n in zip(starts, counts):
        if n >= MIN_PACKETS and np.median(spacing[first : first + n - 1]) <= OUTAGE_MIN / PACE_FACTOR:
            paced[flow[first]] = True
    if not paced.any():
        return none
    if in_time:  # the streaming flows' packets in time order, ties as recorded
        streaming = paced[flow_by_time]
        s_ts, s_flow = ts_by_time[streaming], flow_by_time[streaming]
    else:
        streaming = paced[flow]
        s_ts, s_flow = ts[streaming], flow[streaming]
        by_time = np.argsort(s_ts, kind="stable")
        s_ts, s_flow = s_ts[by_time], s_flow[by_time]
    silent = np.flatnonzero(np.diff(s_ts) >= OUTAGE_MIN)
    src, dst = flows["src"].to_numpy(), flows["dst"].to_numpy()
    found = []
    for k in silent:
        start, end = s_ts[k], s_ts[k + 1]
        before = set(s_flow[np.searchsorted(s_ts, start - OUTAGE_MIN) : k + 1].tolist())
        after = set(s_flow[k + 1 : np.searchsorted(s_ts, end + OUTAGE_MIN, side="right")].tolist())
        both = {(src[f], dst[f]) for f in before & after}
        if any((b, a) in both for a, b in both):
            found.append((start, end))
    return np.array(found, np.float64).reshape(-1, 2)


def flow_order(flow: np.ndarray, flows: int) -> np.ndarray:
    """The stable order of ``flow`` codes (0 .. ``flows`` - 1): by flow, each flow's records as
    they came. A radix sort where the codes fit 16 bits (seven times faster than a merge sort
    of int64 on 2 M records)."""
    return np.argsort(flow.astype(np.int16) if flows < 1 << 15 else flow, kind="stable")


def mark_outages(packets: pd.DataFrame, outages: np.ndarray) -> tuple[pd.DataFrame, dict[str, int], np.ndarray]:
    """The receiver's PacketTable with every lost packet whose hole straddles an outage read as
    ``unobserved`` (reason :data:`CAPTURE_GAP`), how many per flow, and how many per outage
    (a silence that hides no sequence number is the senders' pause, not the capture's outage).
    ``t_recv`` is capture time here (before any skew is removed)."""
    hid = np.zeros(outages.shape[0], np.int64)
    fate = packets["fate"].cat.codes.to_numpy()
    lost = np.flatnonzero(fate == FATES.index(LOST))
    if not outages.shape[0] or not lost.shape[0]:
        return packets, {}, hid
    flow = packets["flow"].cat.codes.to_numpy()
    seq, t_recv = packets["seq"].to_numpy(), packets["t_recv"].to_numpy()
    arrived = np.flatnonzero(np.isfinite(t_recv))
    hidden = np.zeros(packets.shape[0], bool)
    for code in np.unique(flow[lost]):
        mine = arrived[flow[arrived] == code]
        if not mine.shape[0]:
            continue
        by_seq = mine[np.argsort(seq[mine], kind="stable")]
        numbers, times = seq[by_seq], t_recv[by_seq]
        gone = lost[flow[lost] == code]
        after = np.searchsorted(numbers, seq[gone], side="right")
        inside = (after > 0) & (after < numbers.shape[0])
        gone, after = gone[inside], after[inside]
        t_before, t_after = times[after - 1], times[after]
        first = np.searchsorted(outages[:, 0], t_before, side="left")  # the first outage from t_before on
        ok = first < outages.shape[0]
        which = np.minimum(first, outages.shape[0] - 1)
        start, end = outages[which].T
        inside = ok & (end <= t_after) & (end - start >= 0.5 * (t_after - t_before))
        hidden[gone] = inside
        np.add.at(hid, which[inside], 1)
    if not hidden.any():
        return packets, {}, hid
    packets = packets.copy()
    packets.loc[hidden, "fate"] = UNOBSERVED
    if CAPTURE_GAP not in packets["reason"].cat.categories:
        packets["reason"] = packets["reason"].cat.add_categories([CAPTURE_GAP])
    packets.loc[hidden, "reason"] = CAPTURE_GAP
    counted = pd.Series(packets["flow"].to_numpy()[hidden]).value_counts()
    return packets, {str(label): int(n) for label, n in counted.items()}, hid
