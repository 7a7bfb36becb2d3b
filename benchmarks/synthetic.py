"""The synthetic trace the benchmarks share, and best-of-n timing."""

from __future__ import annotations

import time

import numpy as np

from ldanalyze.packets import make_packet_table


def synthetic_packets(count: int, flows: int = 4, seed: int = 1):
    """A PacketTable: ``flows`` interleaved flows, 1 ms spacing, a random-walk queue delay,
    ~2 % wireless losses in short bursts and congestion losses when the queue is near full."""
    rng = np.random.default_rng(seed)
    flow = np.arange(count) % flows
    t_send = np.arange(count) * 0.001 / flows + rng.uniform(0, 1e-5, count)
    queue = np.clip(np.cumsum(rng.normal(0, 0.0008, count)) % 0.16 - 0.08, 0, 0.08)
    owd = 0.02 + queue + rng.exponential(0.0003, count)
    wireless = rng.random(count) < 0.015
    wireless |= np.roll(wireless, flows) & (rng.random(count) < 0.3)  # bursts
    congestion = (queue > 0.075) & (rng.random(count) < 0.2) & ~wireless
    fate = np.where(wireless, "wireless", np.where(congestion, "congestion", "delivered"))
    seq = np.arange(count) // flows
    t_recv = np.where(fate == "delivered", t_send + owd, np.nan)
    return make_packet_table(
        flow=flow.astype(str), seq=seq, t_send=t_send, t_recv=t_recv, fate=fate, size=np.full(count, 1000)
    )


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)
