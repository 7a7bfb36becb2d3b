"""Simulated losses of the three mechanisms a receiver must tell apart: a token-bucket policer,
a drop-tail queue and random (radio) loss, on one constant-rate flow with per-packet truth."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ldanalyze.packets import FATE_DTYPE, Trace, empty_rtt, make_packet_table


def simulated(kind: str, n: int = 3000, seed: int = 1, *, spacing=0.004, size=1000, rate=200_000.0, bucket=5000,
              buffer=10, p=0.05) -> Trace:  # fmt: skip
    """A constant-rate sender (``size`` bytes every ``spacing`` s: 250 kB/s) through a token
    bucket policer (``rate`` bytes/s, ``bucket`` bytes), a drop-tail queue of ``buffer`` packets
    served at ``rate``, or random loss ``p``; 20 ms base delay and 1 ms of jitter."""
    rng = np.random.default_rng(seed)
    t_send = np.arange(n) * spacing
    base = 0.02 + rng.random(n) * 0.001
    fate = np.full(n, "delivered", dtype=object)
    t_recv = np.full(n, np.nan)
    if kind == "policing":
        tokens, last = float(bucket), 0.0
        for i, t in enumerate(t_send):
            tokens, last = min(bucket, tokens + (t - last) * rate), t
            if tokens >= size:
                tokens -= size
                t_recv[i] = t + base[i]
            else:
                fate[i] = "policing"
    elif kind == "congestion":
        queue: list[float] = []  # departure times of the packets in the queue
        for i, t in enumerate(t_send):
            queue = [leave for leave in queue if leave > t]
            if len(queue) >= buffer:
                fate[i] = "congestion"
                continue
            queue.append(max(t, queue[-1] if queue else t) + size / rate)
            t_recv[i] = queue[-1] + base[i]
    else:
        lost = rng.random(n) < p
        fate[lost] = "wireless"
        t_recv[~lost] = t_send[~lost] + base[~lost]
    packets = make_packet_table(
        flow=["1"] * n,
        seq=np.arange(n),
        t_send=t_send,
        t_recv=t_recv,
        size=np.full(n, size),
        fate=pd.Categorical(fate, dtype=FATE_DTYPE),
    )
    return Trace(packets=packets, rtt=empty_rtt(), path=kind, format="simulated", meta={})
