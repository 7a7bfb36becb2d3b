"""The sender-side policer detector (ldanalyze/lda/sender_policer.py), written plainly: each
chunk's transmissions walked in send order with lists, numpy's own median and percentiles."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ldanalyze import packets as pk

from . import twin_of


@twin_of("ldanalyze.lda.sender_policer._percentile")
def percentile(values, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


@twin_of("ldanalyze.lda.sender_policer.flach_chunks", "ldanalyze.lda.sender_policer.chunk_rows")
def flach_chunks(packets: pd.DataFrame, d) -> list[tuple]:
    """Per (flow, chunk) in order: (flow, chunk, code, rate bit/s or NaN, burst or -1)."""
    rows = packets.assign(flow=packets["flow"].astype(str), chunk=packets.get("chunk", 0))
    rows = rows.assign(code=pk.flow_codes(packets["flow"])).sort_values(
        ["code", "chunk", "t_send", "uid"], kind="stable"
    )
    records = rows.to_dict("records")
    last_tx: dict = {}
    first_tx: dict = {}
    settled: dict = {}
    for r in records:
        key = (r["flow"], r["seq"])
        last_tx[key] = max(last_tx.get(key, r["tx"]), r["tx"])
        first_tx[key] = min(first_tx.get(key, r["tx"]), r["tx"])
        t_ack = r.get("t_ack", np.nan)
        if t_ack == t_ack:
            settled[key] = max(settled.get(key, t_ack), t_ack)
    out = []
    for (flow, chunk), group in _groups(records):
        out.append((flow, chunk, *_chunk(group, d, last_tx, first_tx, settled)))
    return out


def _groups(records):
    groups: dict = {}
    for r in records:
        groups.setdefault((r["flow"], r["chunk"]), []).append(r)
    return groups.items()


def _chunk(rows, d, last_tx, first_tx, settled):
    key = [(r["flow"], r["seq"]) for r in rows]
    lost = [r["fate"] in pk.LOSS_FATES for r in rows]
    resent = [r["tx"] < last_tx[k] for r, k in zip(rows, key)]
    t = [r["t_send"] for r in rows]
    size = [float(r["size"]) for r in rows]
    delay = [
        r["t_ack"] - r["t_send"] if not again and r.get("t_ack", np.nan) == r.get("t_ack", np.nan) else None
        for r, again in zip(rows, resent)
    ]
    offset_of: dict = {}
    sent = 0.0
    for r, k in zip(rows, key):
        if r["tx"] == first_tx[k]:
            offset_of[k] = sent
            sent += r["size"]
    loss_rows = [i for i, x in enumerate(lost) if x]
    if len(loss_rows) < 2 * d.cutoff + 2:
        return 1, np.nan, -1
    first, last = loss_rows[d.cutoff], loss_rows[-1 - d.cutoff]
    if offset_of.get(key[first], np.inf) > d.late_loss_bytes:
        return 2, np.nan, -1
    samples = [x for x in delay if x is not None]
    if not samples:
        return 8, np.nan, -1
    median_rtt = float(np.median(samples))
    elapsed = t[last] - t[first]
    passed = sum(size[i] for i in range(first, last) if not lost[i])
    rate = passed / elapsed if elapsed > 0 else 0.0
    segment = float(np.median(size))
    burst = int(sum(size[: loss_rows[0]]))
    if d.refit and rate > 0:
        rate = _refitted(rate, t, first, last, burst, t[loss_rows[0]] - t[0], segment, passed, elapsed)
    loss_zero = max(d.loss_rtts * median_rtt * rate, d.loss_segments * segment)
    pass_zero = max(d.pass_rtts * median_rtt * rate, d.pass_segments * segment)
    if offset_of[key[first]] - rate * (t[first] - t[0]) < -pass_zero:
        return 3, np.nan, -1
    rtts: list[float] = []
    ignore_until = -np.inf
    on_loss, on_pass = [], []
    inflated = slices = 0
    slice_end = t[first] + median_rtt
    used = 0.0
    depth = max(burst - rate * (t[loss_rows[0]] - t[0]), segment) if d.capped else np.inf
    level, last_t = 0.0, t[first]
    for i in range(len(rows)):
        if resent[i] and settled.get(key[i], -np.inf) > ignore_until:
            ignore_until = settled[key[i]]
        if not resent[i] and delay[i] is not None and t[i] > ignore_until:
            rtts.append(delay[i])
        if i < first:
            continue
        if d.capped:  # a bucket of the estimated depth, empty at the first loss
            level, last_t = min(depth, level + rate * (t[i] - last_t)), t[i]
            tokens = level
        else:
            tokens = rate * (t[i] - t[first]) - used
        if lost[i]:
            on_loss.append(tokens)
            if len(rtts) > 1 and rtts[-2] >= d.min_inflated_rtt:
                if d.over_min:
                    wait = d.queue_segments * segment / rate if rate > 0 else np.inf
                    inflated += rtts[-2] > d.inflation * min(rtts) and rtts[-2] >= min(rtts) + wait
                else:
                    inflated += rtts[-2] >= percentile(rtts, 50) and rtts[-2] > d.inflation * percentile(rtts, 10)
            if i == first:
                slices = 1
            elif t[i] > slice_end:
                slice_end = t[i] + median_rtt
                slices += 1
        else:
            on_pass.append(tokens)
            used += size[i]
            level -= size[i]
    if slices < d.min_loss_slices or len(on_loss) < d.min_samples or len(on_pass) < d.min_samples:
        return 1, np.nan, -1
    middle = float(np.median(on_loss))
    if np.mean(on_loss) >= np.mean(on_pass) or middle >= np.median(on_pass):
        return 4, np.nan, -1
    if sum(abs(x - middle) > loss_zero for x in on_loss) > d.loss_out_of_range * len(on_loss):
        return 5, np.nan, -1
    if sum(x - middle < -pass_zero for x in on_pass) > d.pass_out_of_range * len(on_pass):
        return 6, np.nan, -1
    if inflated > d.inflated_share * len(on_loss):
        return 7, np.nan, -1
    return 0, rate * 8, burst


def _refitted(rate, t, first, last, burst, before_loss, segment, passed, elapsed):
    """The token rate over the time a bucket of the estimated depth was not full, refitted."""
    for _ in range(100):
        depth = max(burst - rate * before_loss, segment)
        wasted = sum(max(t[i + 1] - t[i] - depth / rate, 0.0) for i in range(first, last))
        refitted = passed / (elapsed - wasted)
        settled = abs(refitted - rate) <= 1e-9 * rate
        rate = refitted
        if settled:
            break
    return rate
