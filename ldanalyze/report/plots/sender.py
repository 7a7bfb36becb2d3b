"""One flow as its sender saw it (``sender``): what it sent and had to send again, its RTT and
its delivery rate against time, its chunks, and a policer detector's verdict per chunk."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import UsageError
from .style import BLACK, CAUSE_MARKER, ORANGE, PALETTE, decimate, legend_outside, pyplot, style_axes

TRIGGER_COLOUR = dict(zip(("dupack", "sack", "rto", "tlp", "reordering", "time", "pto", "other"), PALETTE))
SPURIOUS_COLOUR = BLACK  # hollow: no trigger's colour
TOKEN_COLOUR = BLACK
LOG_SPAN = 30.0  # the delivery rate's axis is logarithmic where its samples span more than this factor


def sender(trace, flow=None, *, chunks: pd.DataFrame | None = None, window=None, figsize=(11, 8.0)):
    """Three panels of one ``flow`` of a sender's view (default: the one with the most declared
    losses), between ``window = (t0, t1)`` seconds from its first transmission: the segments sent
    (first transmissions grey; each declared loss at its detection, coloured by its trigger,
    spurious ones green, the true cause by marker shape where known), the RTT samples, and the
    delivery rate with the chunks' bounds; ``chunks`` (a policer detector's table: ``flow``,
    ``chunk``, ``verdict``, ``rate_bps``) draws each policed chunk's token rate."""
    plt = pyplot()
    packets = trace.packets
    if "t_ack" not in packets.columns:
        raise UsageError("sender plot: the trace is not a sender's view (read a capture at the sender, or a qlog)")
    names = packets["flow"].astype(str)
    if flow is None:
        declared = names[packets["loss_trigger"].astype(str) != ""].value_counts()
        flow = declared.index[0] if len(declared) else names.iloc[0]
    flow = str(flow)
    mine = packets[names == flow]
    if mine.empty:
        raise UsageError(f"sender plot: no flow {flow!r} (flows: {', '.join(sorted(set(names))[:10])})")
    origin = float(mine["t_send"].min())
    acks = trace.acks[trace.acks["flow"].astype(str) == flow]
    t_lo, t_hi = (-np.inf, np.inf) if window is None else window
    sent_at = mine["t_send"].to_numpy() - origin
    mine = mine[(sent_at >= t_lo) & (sent_at <= t_hi)]
    acks = acks[((acks["t"] - origin) >= t_lo) & ((acks["t"] - origin) <= t_hi)]

    fig, (ax_seq, ax_rtt, ax_rate) = plt.subplots(3, 1, sharex=True, figsize=figsize, height_ratios=(2.2, 1, 1))
    first = mine[mine["tx"] == 0]
    t, seq = decimate(first["t_send"].to_numpy() - origin, first["seq"].to_numpy(np.float64))
    ax_seq.plot(t, seq, color="#999999", linewidth=1.0, label="sent (first time)")
    declared = mine[mine["loss_trigger"].astype(str) != ""]
    for trigger, rows in declared.groupby(declared["loss_trigger"].astype(str), observed=True):
        real = rows[rows["spurious"].astype(str) == ""]
        for cause, part in real.groupby(real["fate"].astype(str), observed=True):
            ax_seq.scatter(
                part["t_detect"] - origin,
                part["seq"],
                s=22,
                marker=CAUSE_MARKER.get(cause, "X"),
                color=TRIGGER_COLOUR.get(trigger, BLACK),
                label=f"lost ({'cause unknown' if cause == 'lost' else cause}), resent on {trigger}",
                zorder=3,
            )
    spurious = declared[declared["spurious"].astype(str) != ""]
    if len(spurious):
        ax_seq.scatter(
            spurious["t_detect"] - origin,
            spurious["seq"],
            s=26,
            facecolors="none",
            edgecolors=SPURIOUS_COLOUR,
            label="declared lost, spurious",
            zorder=3,
        )
    style_axes(ax_seq, None, "segment / packet number")
    ax_seq.set_title(f"{flow}: as its sender saw it")
    legend_outside(ax_seq)

    samples = acks.dropna(subset=["rtt"])
    t, rtt = decimate(samples["t"].to_numpy() - origin, samples["rtt"].to_numpy() * 1e3)
    ax_rtt.plot(t, rtt, color=ORANGE, linewidth=1.0, label="RTT sample")
    style_axes(ax_rtt, None, "RTT (ms)")
    legend_outside(ax_rtt)

    rated = acks.dropna(subset=["delivery_rate"])
    t, rate = decimate(rated["t"].to_numpy() - origin, rated["delivery_rate"].to_numpy() * 8e-6)
    ax_rate.plot(t, rate, color=PALETTE[0], linewidth=0.6, marker=".", markersize=3, label="delivery rate")
    positive = rate[rate > 0]
    if len(positive) and positive.max() > LOG_SPAN * positive.min():  # a burst's line-rate samples beside a
        ax_rate.set_yscale("log")  # policer's token rate: both readable
    starts = mine.groupby("chunk")["t_send"].min().to_numpy() - origin
    for start in starts[1:]:
        ax_rate.axvline(start, color="#BBBBBB", linewidth=0.8, zorder=0)
    if chunks is not None:
        policed = chunks[(chunks["flow"].astype(str) == flow) & (chunks["verdict"] == "policed")]
        spans = mine.groupby("chunk")["t_send"].agg(["min", "max"]) - origin
        for _, row in policed.iterrows():
            if row["chunk"] in spans.index:
                lo, hi = spans.loc[row["chunk"]]
                ax_rate.hlines(row["rate_bps"] * 1e-6, lo, hi, color=TOKEN_COLOUR, linewidth=2.0)
        if len(policed):
            ax_rate.plot([], [], color=TOKEN_COLOUR, linewidth=2.0, label="token rate (policed chunk)")
    style_axes(ax_rate, "time since its first transmission (s)", "delivery rate (Mbit/s)")
    legend_outside(ax_rate)
    fig.tight_layout()
    return fig
