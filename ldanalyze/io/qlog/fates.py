"""A trace's lists into its tables: each packet's fate by the ACK frames, loss declarations and
(a chain) the peer's receipts; the ACK stream with its RTT samples; metrics carried forward."""

from __future__ import annotations

from operator import attrgetter

import numpy as np
import pandas as pd
from msgspec import UNSET
from numba import njit

from ...packets import DELIVERED, FATE_DTYPE, FATES, LOST, UNOBSERVED
from .events import DEFAULT_MAX_ACK_DELAY_MS, EPOCH_FLOOR, INITIAL_RTT_MS, Collected
from .parse import MetricsData

_FATE_CODE = {fate: code for code, fate in enumerate(FATES)}
_METRICS = ("bif", "cwnd", "srtt", "rttvar")
_ROW = attrgetter("bytes_in_flight", "cwnd", "smoothed_rtt", "rtt_variance")


def _metrics_state(c: Collected) -> pd.DataFrame:
    """The metrics after each metrics event (bytes_in_flight, cwnd, smoothed_rtt, rtt_variance;
    each carried forward on its own, NaN before any): numbers, or strings that read as numbers."""
    items = [MetricsData() if d is None else d for d in c.metrics] if None in c.metrics else c.metrics
    try:
        numbers = np.array(list(map(_ROW, items)), dtype=np.float64).reshape(len(items), 4)  # None: NaN
    except (TypeError, ValueError, OverflowError):  # a cwnd not logged (UNSET), or a value that is no number
        numbers = np.array([[_number(v) for v in _values(d)] for d in items], dtype=np.float64).reshape(-1, 4)
    last = np.maximum.accumulate(np.where(np.isnan(numbers), -1, np.arange(len(numbers))[:, None]), axis=0)
    carried = np.where(last >= 0, numbers[np.maximum(last, 0), np.arange(4)], np.nan)
    return pd.DataFrame(carried, columns=_METRICS)


def _values(d: MetricsData) -> tuple:
    """A metrics event's values, cwnd as draft-00/01 name it where it has no cwnd."""
    return d.bytes_in_flight, d.congestion_window if d.cwnd is UNSET else d.cwnd, d.smoothed_rtt, d.rtt_variance


def _number(value) -> float:
    try:
        return float(value) if value is not None else np.nan
    except (TypeError, ValueError, OverflowError):
        return np.nan


def _metrics_at(c: Collected, state: pd.DataFrame, at_n: np.ndarray, after_n: np.ndarray | None = None) -> pd.DataFrame:
    """The metrics as last logged before each event index ``at_n`` (``state``: _metrics_state's).
    With ``after_n``: only a metrics event logged after ``after_n`` counts (else NaN): the metrics
    of the packet being processed, not those before it."""
    logged = np.asarray(c.metrics_n, np.int64)
    last = np.searchsorted(logged, at_n) - 1
    valid = last >= 0
    if after_n is not None and len(logged):
        valid &= logged[np.maximum(last, 0)] > after_n
    values = state.to_numpy(np.float64) if len(state) else np.full((1, 4), np.nan)
    out = np.where(valid[:, None], values[np.maximum(last, 0)], np.nan)
    return pd.DataFrame(out, columns=state.columns)


def flow_tables(c: Collected, uid0: int, peer: Collected | None) -> tuple[dict, dict, dict]:
    """One trace's packets and ACK rows, fates decided (module docstring; ``peer``: the other
    endpoint's trace, whose receipts give ``t_recv``): their columns, as arrays."""
    scale = c.scale
    t_send = np.asarray(c.sent_t, np.float64) * scale + c.origin
    pn = np.asarray(c.sent_pn, np.int64)
    size = np.asarray(c.sent_size, np.int64)
    if not c.epoch and not c.delta and len(t_send) and t_send.min() > EPOCH_FLOOR:  # epoch times without a reference
        c.epoch = True
    if c.vantage in ("server", "client"):
        other = "client" if c.vantage == "server" else "server"
        flow = f"quic {c.odcid or f'trace{c.index}'} {c.vantage}>{other}"
    else:
        flow = f"quic {c.odcid or f'trace{c.index}'} {c.vantage}"
    order = np.argsort(pn, kind="stable")
    sorted_pn = pn[order]
    # ACK ranges as half-open intervals of the sorted packets they cover
    lo = np.asarray(c.range_lo, np.int64)
    hi = np.asarray(c.range_hi, np.int64)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    frame_of_range = np.asarray(c.range_frame, np.int64)
    first = np.searchsorted(sorted_pn, lo, "left")
    stop = np.searchsorted(sorted_pn, hi, "right")
    n_frames = len(c.ack_t)
    acked_by_sorted, newly, lowest = ack_coverage(first, stop, frame_of_range, n_frames, size[order])
    acked_by = np.empty_like(acked_by_sorted)
    acked_by[order] = acked_by_sorted
    ack_t = np.asarray(c.ack_t, np.float64) * scale + c.origin
    t_ack = np.where(acked_by >= 0, ack_t[np.maximum(acked_by, 0)] if n_frames else np.nan, np.nan)
    # losses: the first declaration of each packet number sent
    t_detect = np.full(len(pn), np.nan)
    trigger = np.full(len(pn), "", dtype=object)
    if len(c.lost_pn):
        lost_pn = np.asarray(c.lost_pn, np.int64)
        lost_t = np.asarray(c.lost_t, np.float64) * scale + c.origin
        at = np.minimum(np.searchsorted(sorted_pn, lost_pn), len(sorted_pn) - 1)
        known = sorted_pn[at] == lost_pn
        rows = order[at[known]][::-1]  # reversed: the first declaration is written last
        t_detect[rows] = lost_t[known][::-1]
        trigger[rows] = np.asarray(c.lost_trigger, dtype=object)[known][::-1]
    acked = acked_by >= 0
    declared = np.isfinite(t_detect)
    t_recv = _receipts(peer, pn)
    received = np.isfinite(t_recv) & ~acked
    spurious_rows = acked & declared & (t_detect <= t_ack)
    fate = np.where(
        acked | received, _FATE_CODE[DELIVERED], np.where(declared, _FATE_CODE[LOST], _FATE_CODE[UNOBSERVED])
    )
    reason = np.select(
        [spurious_rows, acked, received, declared],
        ["acked after declared lost", "acked", "received, not acknowledged", "declared lost"],
        "not acknowledged",
    ).astype(object)
    spurious = np.select([spurious_rows, received & declared], ["acked", "received"], "").astype(object)
    sent_n = np.asarray(c.sent_n, np.int64)
    state = _metrics_state(c)
    before = _metrics_at(c, state, sent_n)
    one_ms = 1e-3 / scale  # the trace's time unit
    srtt = before["srtt"].fillna(INITIAL_RTT_MS * one_ms).to_numpy()
    rttvar = before["rttvar"].fillna(INITIAL_RTT_MS * one_ms / 2).to_numpy()
    pto = (srtt + np.maximum(4 * rttvar, one_ms) + DEFAULT_MAX_ACK_DELAY_MS * one_ms) * scale
    gaps = np.diff(t_send, prepend=t_send[0] if len(t_send) else 0.0)
    chunk = np.cumsum(gaps > pto)
    packets = {
        "flow": np.full(len(pn), flow, dtype=object),
        "seq": pn,
        "tx": np.zeros(len(pn), np.int64),
        "uid": sent_n + uid0,
        "size": size,
        "t_send": t_send,
        "t_recv": t_recv,
        "fate": pd.Categorical.from_codes(fate.astype(np.int8), dtype=FATE_DTYPE),
        "reason": reason,
        "t_ack": t_ack,
        "t_detect": t_detect,
        "loss_trigger": trigger,
        "spurious": spurious,
        "chunk": chunk.astype(np.int64),
        "in_flight": before["bif"].fillna(-1).to_numpy(np.int64),
    }
    # the ACK stream; in flight and cwnd as logged while its packet was processed (until the next packet event)
    ack_n = np.asarray(c.ack_n, np.int64)
    packet_n = np.asarray(c.packet_n, np.int64)
    following = np.append(packet_n, np.iinfo(np.int64).max)[np.searchsorted(packet_n, ack_n, "right")]
    after = _metrics_at(c, state, following, ack_n)
    largest = np.full(n_frames, -1, np.int64)
    if len(hi):
        np.maximum.at(largest, frame_of_range, hi)
    rtt = np.full(n_frames, np.nan)
    at = np.minimum(np.searchsorted(sorted_pn, largest), max(len(sorted_pn) - 1, 0))
    hit = (sorted_pn[at] == largest) & (acked_by_sorted[at] == np.arange(n_frames))
    rtt[hit] = ack_t[hit] - t_send[order[at[hit]]]
    ack_pn = np.append(sorted_pn, sorted_pn[-1] + 1)[lowest]
    acks = {
        "flow": np.full(n_frames, flow, dtype=object),
        "t": ack_t,
        "ack": ack_pn,
        "largest": largest,
        "newly": newly,
        "dupack": np.zeros(n_frames, bool),
        "dsack": np.zeros(n_frames, bool),
        "rtt": rtt,
        "rtt_source": np.where(hit, "qlog", "").astype(object),
        "delivery_rate": np.full(n_frames, np.nan),
        "in_flight": after["bif"].fillna(-1).to_numpy(np.int64),
        "rwnd": np.full(n_frames, -1, np.int64),
        "cwnd": after["cwnd"].fillna(-1).to_numpy(np.int64),
    }
    summary = c.summary()
    summary.update(
        flow=flow,
        epoch=c.epoch,
        delivered=int((acked | received).sum()),
        lost=int((declared & ~acked & ~received).sum()),
        spurious=int((spurious != "").sum()),
        unobserved=int((~acked & ~declared & ~received).sum()),
        peer=peer.vantage if peer is not None else None,
    )
    return packets, acks, summary


def _receipts(peer: Collected | None, pn: np.ndarray) -> np.ndarray:
    """Each packet number's first receipt in the peer's trace, in seconds on its clock (NaN: none)."""
    t_recv = np.full(len(pn), np.nan)
    if peer is None or not len(peer.recv_pn):
        return t_recv
    got = np.asarray(peer.recv_pn, np.int64)
    when = np.asarray(peer.recv_t, np.float64) * peer.scale + peer.origin
    order = np.lexsort((when, got))
    got, when = got[order], when[order]
    first = np.ones(len(got), bool)
    first[1:] = got[1:] != got[:-1]
    got, when = got[first], when[first]
    at = np.minimum(np.searchsorted(got, pn), len(got) - 1)
    hit = got[at] == pn
    t_recv[hit] = when[at[hit]]
    return t_recv


@njit(cache=True)
def ack_coverage(first, stop, frame_of_range, n_frames, size):  # pragma: no cover - numba
    """Which ACK frame first acknowledged each packet (-1: none), the bytes each frame newly
    acknowledged, and after each frame the index of the lowest packet not yet acknowledged.

    Packets are indexed in packet number order; range ``r`` of frame ``frame_of_range[r]`` covers
    the packets ``first[r]`` to ``stop[r] - 1``; frames in the order they were received. Each
    packet is visited once: ``skip`` points past runs already acknowledged (a union-find with
    path halving), so the ranges repeated by every ACK frame cost nothing.
    tests/naive/qlog.py has the plain twin.
    """
    n = size.shape[0]
    acked_by = np.full(n, -1, np.int64)
    newly = np.zeros(n_frames, np.int64)
    lowest = np.zeros(n_frames, np.int64)
    skip = np.arange(n + 1)
    low = 0
    r = 0
    for f in range(n_frames):
        while r < frame_of_range.shape[0] and frame_of_range[r] == f:
            i = first[r]
            while True:
                while skip[i] != i:  # the first packet at or after i not yet acknowledged
                    skip[i] = skip[skip[i]]
                    i = skip[i]
                if i >= stop[r]:
                    break
                acked_by[i] = f
                newly[f] += size[i]
                skip[i] = i + 1
            r += 1
        while low < n and acked_by[low] >= 0:
            low += 1
        lowest[f] = low
    return acked_by, newly, lowest
