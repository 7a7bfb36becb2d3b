"""The sender's view as a timeline: the ACKs' RTT samples are its arrivals, the sender's own loss
detections its gaps (issue #44 §2; the contract: ``docs/ldas.md``, "The sender's view").

A sender sees no packet arrive; what comes back is ACKs, and an ACK that carries an RTT sample
(``Trace.acks`` with a finite ``rtt``: Karn's rule, TSecr, a qlog's ``latest_rtt``) tells when
the segment it samples reached the receiver as far as the sender can tell: ``t_recv`` is the
ACK's arrival on the sender's clock and ``t_send = t_recv − rtt``, so that the timeline's
one-way delay is the RTT, ``rott`` the RTT above its least, ``iat`` the inter-ACK time and
``jitter`` eq. 7 of paper 001 over these. The LDAs read those columns as they read a receiver's,
which is why the delay schemes run on the sender's view only as named variants (``spike@rtt``:
the RTT adds the reverse path's delay to what their papers judged).

A gap is a moment the sender acted on a loss: each lost transmission (fate congestion,
wireless, route, policing or lost, once truth is joined) is detected at its ``t_detect`` (the
retransmission, a declared loss) and decided with the state of the last ACK sample at or before
it; the losses detected at one moment form one gap of ``n`` losses. A loss the sender never
acted on, or acted on before any ACK sample, is undetected, as a receiver's loss no arrival
revealed. A declared loss that was spurious is delivered, not a loss; how many there were per
flow is the timeline's ``meta["spurious_losses"]``.

``timeline.build_timeline`` builds it: this module finds the samples and the detections (a
layer below, so that the Timeline type and the arrival columns stay in one place).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import UsageError
from .packets import DELIVERED, FATE_DTYPE, LOSS_FATES, Trace, flow_codes, flow_text, label_positions

# the sender's columns an arrival (an ACK sample) carries besides a receiver's: the ACK's
# in_flight, cwnd (bytes, -1 unknown) and delivery_rate, and ``window`` (segments: the
# sender's window the Vegas and Veno tests read; NaN unknown)
SAMPLE_COLUMNS = ("window", "in_flight", "cwnd", "delivery_rate")
NEEDED_ACK_COLUMNS = ("flow", "t", "largest", "newly", "rtt", "in_flight", "cwnd", "delivery_rate")


def ack_samples(trace: Trace) -> pd.DataFrame:
    """The ACKs of ``trace`` that carry an RTT sample, as delivered rows of a PacketTable (what
    the receiver's arrival columns are computed from) plus ``SAMPLE_COLUMNS``: ``seq`` the
    highest segment (packet number) the ACK acknowledges (``largest``: the one a QUIC sample
    and a TCP sample without SACK measure), ``uid`` the ACK's row in ``trace.acks``, ``size``
    the bytes it newly acknowledged, ``t_recv`` its arrival, ``t_send`` = t_recv − rtt.

    ``window``: the sender's window in segments, ``cwnd`` where the log gives it (a qlog), else
    the bytes in flight just before the ACK (``in_flight`` after it plus those it newly
    acknowledged: a sender limited by its window keeps that many in flight), over the flow's
    segment size (the median size of its transmissions)."""
    acks, packets = trace.acks, trace.packets
    missing = [name for name in NEEDED_ACK_COLUMNS if name not in acks.columns]
    if missing:
        raise UsageError(f"{trace.path}: the sender's ACK stream lacks column(s) {', '.join(missing)}")
    flow_dtype = packets["flow"].dtype
    flow = label_positions(acks["flow"], flow_dtype.categories.astype(str))  # by categories, not row by row
    rtt = acks["rtt"].to_numpy(np.float64)
    rows = np.flatnonzero(np.isfinite(rtt) & (flow >= 0))  # an ACK of no flow sent here: none
    t = acks["t"].to_numpy(np.float64)[rows]
    codes = flow[rows].astype(np.int64)
    segment = _segment_sizes(packets)[codes] if rows.size else np.zeros(0)
    cwnd = acks["cwnd"].to_numpy(np.int64)[rows]
    in_flight = acks["in_flight"].to_numpy(np.int64)[rows]
    before = in_flight + acks["newly"].to_numpy(np.int64)[rows]
    with np.errstate(invalid="ignore", divide="ignore"):
        window = np.where(cwnd >= 0, cwnd / segment, np.where(in_flight >= 0, before / segment, np.nan))
    return pd.DataFrame(
        {
            "flow": pd.Categorical.from_codes(codes, dtype=flow_dtype),
            "seq": acks["largest"].to_numpy(np.int64)[rows],
            "tx": np.zeros(rows.size, np.int64),
            "uid": rows.astype(np.int64),
            "size": acks["newly"].to_numpy(np.int64)[rows],
            "t_send": t - rtt[rows],
            "t_recv": t,
            "fate": pd.Categorical.from_codes(np.zeros(rows.size, np.int8), dtype=FATE_DTYPE),
            "window": window,
            "in_flight": in_flight,
            "cwnd": cwnd,
            "delivery_rate": acks["delivery_rate"].to_numpy(np.float64)[rows],
        }
    )


def _segment_sizes(packets: pd.DataFrame) -> np.ndarray:
    """Per flow code, the median size of the flow's transmissions (NaN: none)."""
    codes = flow_codes(packets["flow"])
    median = pd.Series(packets["size"].to_numpy(np.float64)).groupby(codes).median()
    median = median[median.index >= 0]
    out = np.full(len(packets["flow"].cat.categories), np.nan)
    out[median.index.to_numpy()] = median.to_numpy()
    return out


def sample_rtt(arrivals: pd.DataFrame) -> pd.DataFrame:
    """The RTT samples of the arrivals (flow, t, seq, rtt), as ``Timeline.rtt`` holds them."""
    return pd.DataFrame(
        {
            "flow": flow_text(arrivals["flow"]),
            "t": arrivals["t_recv"].to_numpy(),
            "seq": arrivals["seq"].to_numpy(),
            "rtt": arrivals["owd"].to_numpy(),
        }
    )


def detections(arrivals: pd.DataFrame, packets: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The gaps (one per flow and detection time) and the losses (module docstring) of the
    sender's ``packets``, over its ``arrivals`` (the ACK samples, by flow and time)."""
    fate = packets["fate"]
    lost_codes = [fate.cat.categories.get_loc(name) for name in LOSS_FATES]
    rows = np.flatnonzero(np.isin(fate.cat.codes.to_numpy(), lost_codes))
    code = flow_codes(packets["flow"])[rows].astype(np.int64)
    order = np.lexsort((packets["uid"].to_numpy()[rows], packets["t_send"].to_numpy()[rows], code))
    rows, code = rows[order], code[order]
    t_detect = (
        packets["t_detect"].to_numpy(np.float64)[rows] if "t_detect" in packets.columns else np.full(rows.size, np.nan)
    )
    deciding = _last_sample_at(
        flow_codes(arrivals["flow"]).astype(np.int64), arrivals["t_recv"].to_numpy(), code, t_detect
    )
    detected = deciding >= 0
    # a gap per (flow, detection time), in that order: by deciding arrival too
    held = np.flatnonzero(detected)
    by_moment = held[np.lexsort((t_detect[held], code[held]))]
    new = np.ones(by_moment.size, bool)
    new[1:] = (code[by_moment[1:]] != code[by_moment[:-1]]) | (t_detect[by_moment[1:]] != t_detect[by_moment[:-1]])
    gap_of = np.full(rows.size, -1, np.int64)
    gap_of[by_moment] = np.cumsum(new) - 1
    firsts = by_moment[new]
    n = np.bincount(gap_of[held], minlength=firsts.size).astype(np.int64)
    seq = packets["seq"].to_numpy(np.int64)[rows]
    first_seq = np.full(firsts.size, np.iinfo(np.int64).max)
    np.minimum.at(first_seq, gap_of[held], seq[held])
    arrival = deciding[firsts]
    a_codes = flow_codes(arrivals["flow"])
    prev = arrival - 1
    has_prev = (prev >= 0) & (a_codes[np.maximum(prev, 0)] == a_codes[arrival]) if arrival.size else arrival >= 0

    def at(column: str, index: np.ndarray, where: np.ndarray) -> np.ndarray:
        values = arrivals[column].to_numpy(np.float64)
        return np.where(where, values[np.maximum(index, 0)], np.nan) if values.size else np.full(index.size, np.nan)

    always = np.ones(arrival.size, bool)
    gaps = pd.DataFrame(
        {
            "flow": arrivals["flow"].take(arrival).reset_index(drop=True),
            "gap": np.arange(firsts.size, dtype=np.int64),
            "first_seq": first_seq,
            "n": n,
            "prev_seq": at("seq", prev, has_prev),
            "next_seq": arrivals["seq"].to_numpy(np.int64)[arrival],
            "t_prev_send": at("t_send", prev, has_prev),
            "t_prev_recv": at("t_recv", prev, has_prev),
            "t_next_send": at("t_send", arrival, always),
            "t_next_recv": at("t_recv", arrival, always),
            "t_detect": t_detect[firsts],
            "arrival": arrival.astype(np.int64),
            "prev_arrival": np.where(has_prev, prev, -1).astype(np.int64),
            "n_lost": n,
        }
    )
    of_gap = np.maximum(gap_of, 0)

    def gap_column(values: np.ndarray, none) -> np.ndarray:
        return np.where(detected, values[of_gap], none) if values.size else np.full(rows.size, none)

    trigger = (
        packets["loss_trigger"].take(rows).astype(str).to_numpy(object)
        if "loss_trigger" in packets.columns
        else np.full(rows.size, "", dtype=object)
    )
    losses = pd.DataFrame(
        {
            "flow": pd.Categorical.from_codes(code, dtype=packets["flow"].dtype),
            **{name: packets[name].to_numpy()[rows] for name in ("seq", "tx", "uid", "t_send", "t_drop")},
            "cause": np.asarray(fate.cat.categories.astype(str), dtype=object)[fate.cat.codes.to_numpy()[rows]],
            "reason": packets["reason"].take(rows).to_numpy(),
            "loss_trigger": trigger,
            "gap": gap_of,
            "n": gap_column(n, 0),
            "t_prev_recv": gap_column(gaps["t_prev_recv"].to_numpy(), np.nan),
            "t_next_recv": gap_column(gaps["t_next_recv"].to_numpy(), np.nan),
            "t_detect": t_detect,
            "detected": detected,
        }
    )
    return gaps, losses


def _last_sample_at(a_code: np.ndarray, a_t: np.ndarray, code: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per loss (flow ``code``, detection time ``t``, NaN never), the row of the last arrival of
    its flow at or before ``t`` (arrivals by flow, then time), or -1: one sort of arrivals and
    detections together, an arrival before a detection at the same time."""
    n = a_code.size
    keys = (np.concatenate([np.arange(n), np.full(code.size, n)]), np.concatenate([a_t, t]))
    order = np.lexsort((*keys, np.concatenate([a_code, code])))
    last = np.maximum.accumulate(np.where(order < n, order, -1)) if order.size else order
    out = np.empty(code.size, np.int64)
    query = order >= n
    out[order[query] - n] = last[query]
    same_flow = (out >= 0) & (a_code[np.maximum(out, 0)] == code) if n else np.zeros(code.size, bool)
    return np.where(same_flow & np.isfinite(t), out, -1)


def spurious_losses(packets: pd.DataFrame) -> dict[str, int]:
    """Per flow, the declared losses that were not (delivered, with evidence in ``spurious``)."""
    if "spurious" not in packets.columns:
        return {}
    evidence = packets["spurious"].astype("category")  # a no-op for a reader's table
    said = np.append(evidence.cat.categories.astype(str) != "", False)[evidence.cat.codes.to_numpy()]
    spurious = said & (packets["fate"] == DELIVERED).to_numpy()
    flows = packets["flow"].cat.categories
    counts = np.bincount(flow_codes(packets["flow"])[spurious], minlength=len(flows))
    return {str(flow): int(count) for flow, count in zip(flows, counts) if count}
