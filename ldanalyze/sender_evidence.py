"""What a sender's view tells of each flow without any truth: its retransmissions by what
triggered them, the declared losses that were not losses (spurious, by their evidence), the real
losses, its RTT and its delivery rate (issue #44 §3).

The counts are of the sender's own decisions: a retransmission is the sender's belief that a
segment was lost, and only those not shown spurious are counted as losses (``packets.py``:
the sender's view). RTTs are the ACK stream's samples (Karn's rule or TSecr, as read), delivery
rates the samples of draft-cheng-iccrg-delivery-rate-estimation §3.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .packets import LOSS_FATES, LOSS_TRIGGERS, SPURIOUS_EVIDENCE, Trace, label_positions, sender_flows

QUANTILES = (0.1, 0.5, 0.9)


def sender_evidence(trace: Trace) -> pd.DataFrame:
    """One row per flow read in the sender's view: transmissions, retransmissions (``rtx``) and
    declared losses by trigger (``by_<trigger>``), spurious ones by evidence (``spurious_<evidence>``),
    real losses (``lost``: declared and not spurious, with the share of transmissions), chunks,
    RTT percentiles (ms) and delivery-rate percentiles (Mbit/s); empty for a receiver's view."""
    packets = trace.packets
    if "t_ack" not in packets.columns:
        return pd.DataFrame(index=pd.Index([], name="flow"))
    flows = sender_flows(trace)
    index = pd.Index(flows, name="flow")
    at = label_positions(packets["flow"], index)
    mine = at >= 0
    at = at[mine]
    n = len(flows)

    triggers, by_trigger = _label_counts(packets["loss_trigger"], at, mine, n)
    evidence, by_evidence = _label_counts(packets["spurious"], at, mine, n)
    fates, by_fate = _label_counts(packets["fate"], at, mine, n)
    sent = np.bincount(at, minlength=n)
    declared = by_trigger[:, triggers != ""].sum(axis=1)
    rtx = np.bincount(at[(packets["tx"] > 0).to_numpy()[mine]], minlength=n)
    out = {"sent": sent, "rtx": rtx, "declared_lost": declared}
    for name in LOSS_TRIGGERS:
        hits = by_trigger[:, triggers == name].sum(axis=1)
        if hits.any():
            out[f"by_{name}"] = hits
    out["spurious"] = by_evidence[:, evidence != ""].sum(axis=1)
    for name in SPURIOUS_EVIDENCE:
        hits = by_evidence[:, evidence == name].sum(axis=1)
        if hits.any():
            out[f"spurious_{name}"] = hits
    out["lost"] = by_fate[:, [fate in LOSS_FATES for fate in fates]].sum(axis=1)
    out["loss_rate"] = np.divide(out["lost"], sent, out=np.full(n, np.nan), where=sent > 0)
    out["chunks"] = _distinct_per_flow(packets["chunk"].to_numpy()[mine], at, n)
    frame = pd.DataFrame(out, index=index)
    acks = trace.acks
    on = label_positions(acks["flow"], index) if len(acks) else np.zeros(0, np.int64)
    for column, scale, unit in (("rtt", 1e3, "ms"), ("delivery_rate", 8e-6, "mbit_s")):
        values = acks[column].to_numpy(np.float64) if len(acks) else np.zeros(0)
        kept = (on >= 0) & ~np.isnan(values)
        grouped = pd.Series(values[kept]).groupby(on[kept])  # by flow position, not by label as text
        for q in QUANTILES:
            quantile = grouped.quantile(q)
            per_flow = np.full(n, np.nan)
            per_flow[quantile.index.to_numpy(np.int64)] = quantile.to_numpy(np.float64)
            frame[f"{column}_p{int(q * 100)}_{unit}"] = per_flow * scale
    return frame


def _label_counts(column: pd.Series, at: np.ndarray, mine: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The labels of ``column`` as text (NaN: none) and, per flow (position ``at`` of the rows
    ``mine``) and label, its rows: counted on the categorical's codes, not on a million rows
    turned into text (a second of a 2 M-packet capture's ``inspect``)."""
    column = column.astype("category")  # a no-op for a reader's table
    labels = np.append(np.asarray(column.cat.categories.astype(str), dtype=object), np.nan)
    codes = column.cat.codes.to_numpy()[mine].astype(np.int64) % labels.shape[0]  # -1 (none): the NaN
    counts = np.bincount(at * labels.shape[0] + codes, minlength=n * labels.shape[0])
    return labels, counts.reshape(n, labels.shape[0])


def _distinct_per_flow(values: np.ndarray, at: np.ndarray, n: int) -> np.ndarray:
    """Per flow position, how many distinct ``values`` its rows (``at``) hold."""
    if not values.shape[0]:
        return np.zeros(n, np.int64)
    low = int(values.min())
    span = int(values.max()) - low + 1
    pairs = pd.unique(at.astype(np.int64) * span + (values.astype(np.int64) - low))
    return np.bincount(pairs // span, minlength=n)


def joined_evidence(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The evidence of flows read one at a time as one table, as ``sender_evidence`` of the
    whole trace gives it: a count column some flow lacks (no loss of that trigger) is 0 there,
    the columns in the whole table's order."""
    parts = [part for part in parts if len(part)]
    if not parts:
        return pd.DataFrame(index=pd.Index([], name="flow"))
    joined = pd.concat(parts)
    counts = [c for c in joined.columns if c.startswith(("by_", "spurious_"))]
    joined[counts] = joined[counts].fillna(0).astype(np.int64)
    order = ["sent", "rtx", "declared_lost", *(f"by_{name}" for name in LOSS_TRIGGERS), "spurious"]
    order += [f"spurious_{name}" for name in SPURIOUS_EVIDENCE]
    ranked = [c for c in order if c in joined.columns] + [c for c in joined.columns if c not in order]
    return joined[ranked]
