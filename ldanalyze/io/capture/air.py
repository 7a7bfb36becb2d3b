"""A monitor-mode (802.11) capture as a vantage of a capture chain: the radio's own evidence.

A sniffer near an access point sees every transmission attempt of a frame it can decode, with
the 802.11 header's retry bit and sequence number (``linklayer.wifi_sequence``). Placed in a
chain between a capture on the sender's side and the receiver's own (``--vantage
air.pcap:air``, or any middle capture whose link is 802.11), it splits each loss by where it
happened (issue #33, the air as a vantage):

* a packet seen in the air and never at the receiver was given up by the radio: **wireless**
  (the chain's next segment, unless a cause is given for it);
* a packet never seen in the air was lost before the radio (the AP's queue, a bottleneck on
  the wire: the air vantage's own cause, ``congestion`` unless given) **only when the MAC
  sequence numbers prove it was never transmitted**: between the two frames of its flow the
  sniffer saw around it, every sequence number the transmitter used is accounted for by a
  frame the sniffer saw or by a packet that reached the receiver unseen. Otherwise the sniffer
  may have missed it, and its cause stays unknown (``lost``, reason ``not seen in the air``),
  never guessed.

Read alone, a receiver's own monitor-mode capture (``read_capture``) gives each arrival its
frame's retry bit (``received_air_columns``): evidence of the radio's trouble that no end-to-end
LDA had (issue #30).

Retries fold into one packet: frames of the same packet (flow, IP ID, payload) with the same
transmitter sequence counter and number are its attempts. The packet's rows get
``air_frames`` (frames of it the sniffer saw: a lower bound of the attempts), ``air_retried``
(one of them had the retry bit: there was an attempt before, seen or not), ``t_air`` and
``t_air_last`` (its first and last frame on the sniffer's clock).

What this cannot see: encrypted frames (``wifi_protected``: the IP header is unreadable, so no
frame is matched; decrypt the capture first, e.g. with Wireshark's keys), A-MPDU subframes the
capture does not split, and a sender whose MAC renumbers a retransmitted frame. Sequence
numbers wrap every 4096 frames: a stretch between two seen frames that may hold more is not
counted, its losses left unknown.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from numba import njit

from ...packets import AIR_COLUMNS, DELIVERED
from .linklayer import LINKTYPE_IEEE802_11, LINKTYPE_IEEE802_11_RADIOTAP, LINKTYPE_PPI
from .record import M_QOS, M_RETRY, NO_MAC_SEQ

UNKNOWN = -1  # air_unseen where the numbers cannot be counted
AIR_LINKTYPES = (LINKTYPE_IEEE802_11, LINKTYPE_IEEE802_11_RADIOTAP, LINKTYPE_PPI)
SEQUENCE_SPACE = 4096  # 802.11 sequence numbers are 12 bits
WRAP_GUARD = SEQUENCE_SPACE // 2  # frames between two seen ones beyond which a count may have wrapped
NOT_SEEN_IN_AIR = "not seen in the air"


def is_air_capture(capture) -> bool:
    """Whether every interface of ``capture`` carries 802.11 frames (radiotap, PPI or bare)."""
    links = capture.interfaces["linktype"].to_numpy() if len(capture.interfaces) else np.zeros(0)
    return bool(len(links)) and bool(np.isin(links, AIR_LINKTYPES).all())


@dataclasses.dataclass(frozen=True)
class AirFrames:
    """An air capture's frames folded into packets (``fold_retries``), per record: ``keys``
    the match key of each packet's first frame (0 for its retries and the other records),
    ``frames`` and ``retried`` of that packet, ``last`` the record of its last frame."""

    keys: np.ndarray
    frames: np.ndarray
    retried: np.ndarray
    last: np.ndarray


def fold_retries(records: np.ndarray, keys: np.ndarray) -> AirFrames:
    """Fold the frames of one packet (same match key, same sequence counter and number) into
    its first frame; ``keys`` are the chain's match keys of the records (0: not of its flows)."""
    n = keys.shape[0]
    candidate = np.flatnonzero(keys != 0)
    mac = (records["mac_space"][candidate].astype(np.uint64) << np.uint64(16)) | records["mac_seq"][candidate]
    group, _ = pd.factorize(pd.MultiIndex.from_arrays([keys[candidate], mac]))
    first = np.full(group.max() + 1 if group.size else 0, n, np.int64)
    np.minimum.at(first, group, candidate)
    last = np.full(first.shape[0], -1, np.int64)
    np.maximum.at(last, group, candidate)
    frames = np.bincount(group, minlength=first.shape[0])
    retried = np.bincount(group, weights=(records["mac_flags"][candidate] & M_RETRY) != 0, minlength=first.shape[0])
    folded = np.zeros(n, np.uint64)
    folded[first] = keys[first]
    per_record = np.zeros(n, np.int64)
    per_record[first] = frames
    any_retry = np.zeros(n, bool)
    any_retry[first] = retried > 0
    last_record = np.full(n, -1, np.int64)
    last_record[first] = last
    return AirFrames(folded, per_record, any_retry, last_record)


def air_columns(capture, folded: AirFrames, record_at: np.ndarray, flow_codes: np.ndarray) -> dict[str, np.ndarray]:
    """The packets' ``AIR_COLUMNS`` (``packets``) from the record each matched in the air (-1:
    not seen)."""
    seen = record_at >= 0
    at = np.where(seen, record_at, 0)
    times = capture.times()
    last = np.where(seen, folded.last[at], 0)
    values = (
        np.where(seen, folded.frames[at], 0).astype(np.int64),
        seen & folded.retried[at],
        np.where(seen, times[at], np.nan),
        np.where(seen, times[last], np.nan),
        numbers_unseen(capture.records, record_at, flow_codes),
        seen & ((capture.records["mac_flags"][at] & M_QOS) != 0),
    )
    return dict(zip(AIR_COLUMNS, values, strict=True))


def received_air_columns(capture, packets: pd.DataFrame) -> dict[str, np.ndarray]:
    """``AIR_COLUMNS`` of a receiver's own monitor-mode capture read as one point: each
    delivered row is one frame the receiver's radio got (a copy received again is a row of its
    own, a duplicate), retried when its retry bit says an attempt before it failed, QoS when
    its counter is the receiver's own; lost rows have none."""
    uid = packets["uid"].to_numpy()
    got = (packets["fate"] == DELIVERED).to_numpy() & (uid >= 0) & (uid < capture.records.shape[0])
    at = np.where(got, uid, 0)
    times = capture.times()
    t_air = np.where(got, times[at] if times.size else np.nan, np.nan)
    flags = capture.records["mac_flags"][at]
    retried = got & ((flags & M_RETRY) != 0)
    unseen = numbers_unseen(capture.records, np.where(got, uid, -1), packets["flow"].cat.codes.to_numpy())
    values = (got.astype(np.int64), retried, t_air, t_air, unseen, got & ((flags & M_QOS) != 0))
    return dict(zip(AIR_COLUMNS, values, strict=True))


def radio_note(path: str, columns: dict[str, np.ndarray]) -> str:
    """What a receiver's own monitor-mode capture adds, counted: the arrivals whose 802.11 retry
    bit says an attempt before failed, the sequence numbers that went by unseen, and the LDA that
    reads them (``inspect`` prints it, the report and ``--json`` hold it among the notes)."""
    seen = columns["air_frames"] > 0
    unseen = columns["air_unseen"][seen]
    return (
        f"{path}: a monitor-mode capture: {int(columns['air_retried'].sum())} of {int(seen.sum())} arrivals "
        f"retried (802.11 retry bit: an attempt before failed), {int(unseen[unseen > 0].sum())} sequence numbers "
        "gone by unseen (air_unseen); --lda macseq reads them"
    )


def shared_counter_note(path: str, columns: dict[str, np.ndarray]) -> str | None:
    """A note for a capture whose frames were numbered from a counter shared with other stations
    (non-QoS data): their ``air_unseen`` may count frames to those stations that the radio did not
    decode, so it overstates the radio's losses; ``macseq`` may call congestion wireless there and
    the learned LDA does not read it. None when every frame seen was QoS data."""
    seen = columns["air_frames"] > 0
    shared = int((seen & ~columns["air_qos"]).sum())
    if not shared:
        return None
    return (
        f"{path}: {shared} of {int(seen.sum())} packets came in non-QoS 802.11 frames, numbered from "
        "their sender's one counter shared with its frames to other stations: air_unseen may count "
        "those, so macseq may call congestion losses wireless there (the learned LDA leaves them out)"
    )


def numbers_unseen(records: np.ndarray, record_at: np.ndarray, flow_codes: np.ndarray) -> np.ndarray:
    """Per row seen in the capture (``record_at`` ≥ 0): how many numbers of its frame's
    sequence counter went by, since the frame of its flow furthest on so far in the capture, that
    no frame of the capture carries (``air_unseen``): frames the transmitter sent and the radio
    never heard, this flow's or another's on the same counter. 0: everything the transmitter
    numbered in between was seen, so a packet of the flow missing in between was never
    transmitted. ``UNKNOWN`` for a flow's first frame, a frame without a number, a change of
    counter, stretches that may have wrapped, and a frame numbered behind that furthest one: under
    a block-ack agreement (A-MPDU, 802.11n and later) a frame retransmitted after a block ack
    comes after frames numbered past it (IEEE 802.11-2020 §10.25, block ack)."""
    out = np.full(record_at.shape[0], UNKNOWN, np.int64)
    rows = np.flatnonzero(record_at >= 0)
    if not rows.size:
        return out
    rows = rows[np.lexsort((record_at[rows], flow_codes[rows]))]
    starts = np.ones(rows.shape[0], bool)
    starts[1:] = flow_codes[rows[1:]] != flow_codes[rows[:-1]]
    out[rows] = _numbers_unseen(
        records["mac_seq"].astype(np.int64), records["mac_space"].astype(np.int64), record_at[rows], starts
    )
    return out


@njit(cache=True)
def _numbers_unseen(seq, space, record, starts):
    """``numbers_unseen`` over rows in capture order within each flow (``starts``: a flow's first)."""
    out = np.full(record.shape[0], UNKNOWN, np.int64)
    mark = np.zeros(SEQUENCE_SPACE, np.bool_)
    marked = np.empty(WRAP_GUARD, np.int64)
    lead = 0  # the record of the flow's frame furthest on so far
    for j in range(record.shape[0]):
        a, b = lead, record[j]
        lead = b
        if starts[j] or seq[a] == NO_MAC_SEQ or seq[b] == NO_MAC_SEQ or space[a] != space[b] or b <= a:
            continue
        span = (seq[b] - seq[a]) % SEQUENCE_SPACE
        if span == 0:  # the same frame again
            out[j] = 0
            continue
        if span > WRAP_GUARD:  # numbered behind the lead: retransmitted after later frames
            lead = a
            continue
        count = 0
        frames = 0
        for r in range(a + 1, b):
            if space[r] != space[a] or seq[r] == NO_MAC_SEQ:
                continue
            frames += 1
            if frames >= WRAP_GUARD:
                break
            d = (seq[r] - seq[a]) % SEQUENCE_SPACE
            if 0 < d < span and not mark[d]:
                mark[d] = True
                marked[count] = d
                count += 1
        for k in range(count):
            mark[marked[k]] = False
        if frames < WRAP_GUARD:
            out[j] = span - 1 - count
    return out


def never_transmitted(
    records: np.ndarray, record_at: np.ndarray, flow_codes: np.ndarray, after_air: np.ndarray, lost_before: np.ndarray
) -> np.ndarray:
    """Which rows of ``lost_before`` (not seen in the air, nor further on) the transmitter's
    sequence numbers prove never went on the air (module docstring); the others of them the
    sniffer may have missed.

    ``record_at``: each row's first frame in the air (-1: not seen); ``flow_codes``: rows
    grouped by flow, in send order within each; ``after_air``: rows seen beyond the air
    vantage (they went on the air, seen or not)."""
    n = record_at.shape[0]
    proven = np.zeros(n, bool)
    seen = record_at >= 0
    if not lost_before.any() or not seen.any():
        return proven
    numbered = np.flatnonzero(records["mac_seq"] != NO_MAC_SEQ)
    by_space = numbered[np.lexsort((numbered, records["mac_space"][numbered]))]
    position = np.full(records.shape[0], -1, np.int64)
    position[by_space] = np.arange(by_space.shape[0])
    space_sorted = records["mac_space"][by_space]
    seq_sorted = records["mac_seq"][by_space].astype(np.int64)
    # the seen rows around each row, within its flow
    index = np.arange(n)
    starts = np.ones(n, bool)
    starts[1:] = flow_codes[1:] != flow_codes[:-1]
    flow_start = np.maximum.accumulate(np.where(starts, index, 0))
    before = np.maximum.accumulate(np.where(seen, index, -1))
    after = np.minimum.accumulate(np.where(seen, index, n)[::-1])[::-1]
    inside = ~seen & (before >= flow_start) & (after < n)
    inside[inside] &= flow_codes[after[inside]] == flow_codes[inside]
    candidates = np.flatnonzero(inside & lost_before)
    if not candidates.size:
        return proven
    pairs = pd.MultiIndex.from_arrays([before[candidates], after[candidates]])
    stretch, unique = pd.factorize(pairs)
    for s, (a, b) in enumerate(unique):
        rows = np.arange(a + 1, b)
        pa, pb = position[record_at[a]], position[record_at[b]]
        if pa < 0 or pb < 0 or space_sorted[pa] != space_sorted[pb] or pb - pa > WRAP_GUARD:
            continue
        if rows.shape[0] >= WRAP_GUARD:
            continue
        first, last = seq_sorted[pa], seq_sorted[pb]
        span = (last - first) % SEQUENCE_SPACE
        between = (seq_sorted[pa + 1 : pb] - first) % SEQUENCE_SPACE
        seen_numbers = np.unique(between[(between > 0) & (between < span)]).shape[0]
        unseen_numbers = span - 1 - seen_numbers
        went_unseen = int((after_air[rows] & ~seen[rows]).sum())
        if unseen_numbers == went_unseen:  # every number is accounted for: the rest never went out
            proven[candidates[stretch == s]] = True
    return proven
