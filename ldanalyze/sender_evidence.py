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

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(at[mask[mine]], minlength=n)

    trigger = packets["loss_trigger"].astype(str).to_numpy()
    spurious = packets["spurious"].astype(str).to_numpy()
    declared = trigger != ""
    lost = packets["fate"].isin(LOSS_FATES).to_numpy()
    sent = count(np.ones(len(packets), bool))
    out = {"sent": sent, "rtx": count((packets["tx"] > 0).to_numpy()), "declared_lost": count(declared)}
    for name in LOSS_TRIGGERS:
        hits = count(trigger == name)
        if hits.any():
            out[f"by_{name}"] = hits
    out["spurious"] = count(spurious != "")
    for name in SPURIOUS_EVIDENCE:
        hits = count(spurious == name)
        if hits.any():
            out[f"spurious_{name}"] = hits
    out["lost"] = count(lost)
    out["loss_rate"] = np.divide(out["lost"], sent, out=np.full(n, np.nan), where=sent > 0)
    chunk = packets["chunk"].to_numpy()
    out["chunks"] = np.array([np.unique(chunk[mine][at == i]).size for i in range(n)])
    frame = pd.DataFrame(out, index=index)
    acks = trace.acks
    samples = acks[label_positions(acks["flow"], index) >= 0] if len(acks) else acks
    for column, scale, unit in (("rtt", 1e3, "ms"), ("delivery_rate", 8e-6, "mbit_s")):
        values = samples[["flow", column]].dropna()
        grouped = values.groupby(values["flow"].astype(str), observed=True)[column]
        for q in QUANTILES:
            frame[f"{column}_p{int(q * 100)}_{unit}"] = grouped.quantile(q).reindex(index) * scale
    return frame


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
