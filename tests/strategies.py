"""Hypothesis strategies: synthetic ns-2 wired traces whose ground truth is known by construction.

Packets of one or two flows cross a chain of links 0→1→…→K. On each link a packet is enqueued
(``+``), then either dropped by the queue (``d`` right after ``+``: congestion), dropped by an
error model before the queue (``d`` with no ``+``: wireless), or dequeued (``-``) and then either
received (``r``) or lost by an error model after the link (``d``: wireless). Per-packet random
delays make reordering possible; retransmissions repeat a sequence number under a new uid; the
trace may be cut while packets are in flight.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

OUTCOMES = ("ok", "ok", "ok", "ok", "queue", "ingress", "link")


@dataclasses.dataclass
class SynthTrace:
    lines: list[str]
    truth: dict[int, tuple[str, str]]  # uid -> (fate, reason)
    flows: dict[int, str]  # uid -> flow label
    seqs: dict[int, int]  # uid -> seq
    sent: dict[str, int]  # flow -> packets sent


@st.composite
def wired_traces(draw, max_packets: int = 40):
    hops = draw(st.integers(1, 3))
    n_flows = draw(st.integers(1, 2))
    n = draw(st.integers(0, max_packets))
    events = []  # (time, order, line)
    truth, flows, seqs = {}, {}, {}
    next_seq = {f: 0 for f in range(1, n_flows + 1)}
    t = 0.0
    for uid in range(n):
        fid = draw(st.integers(1, n_flows))
        t += draw(st.sampled_from([0.0, 0.001, 0.004, 0.01, 0.013]))
        retransmit = next_seq[fid] > 0 and draw(st.integers(0, 9)) == 0
        seq = draw(st.integers(0, next_seq[fid] - 1)) if retransmit else next_seq[fid]
        if not retransmit:
            next_seq[fid] += 1
        size = draw(st.sampled_from([40, 762, 1040]))
        src, dst = f"0.{fid}", f"{hops}.{fid}"
        ptype = "cbr" if fid == 1 else "tcp"
        flows[uid], seqs[uid] = str(fid), seq

        def emit(ev, time, a, b):
            # the running index keeps a packet's own events in order when times tie
            events.append((time, len(events), f"{ev} {time:.6f} {a} {b} {ptype} {size} ------- "
                                              f"{fid} {src} {dst} {seq} {uid}"))

        now = t
        fate, reason = "delivered", ""
        for hop in range(hops):
            outcome = draw(st.sampled_from(OUTCOMES))
            a, b = hop, hop + 1
            if outcome == "ingress":
                emit("d", now, a, b)
                fate, reason = "wireless", "ingress-error"
                break
            emit("+", now, a, b)
            if outcome == "queue":
                emit("d", now, a, b)
                fate, reason = "congestion", "queue"
                break
            now += draw(st.sampled_from([0.0, 0.002, 0.02]))
            emit("-", now, a, b)
            now += draw(st.sampled_from([0.001, 0.01, 0.05]))
            if outcome == "link":
                emit("d", now, a, b)
                fate, reason = "wireless", "link-error"
                break
            emit("r", now, a, b)
        truth[uid] = (fate, reason)
    events.sort()
    if events and draw(st.booleans()):
        cut = draw(st.integers(0, len(events)))
        events = events[:cut]
    lines = [e[2] for e in events]
    present = {int(ln.split()[11]) for ln in lines}
    # packets cut off by the end of the trace: neither delivered nor dropped in the file
    final_event = {}
    for ln in lines:
        f = ln.split()
        final_event[int(f[11])] = (f[0], int(f[3]))
    for uid in list(truth):
        if uid not in present:
            del truth[uid], flows[uid], seqs[uid]
            continue
        ev, to = final_event[uid]
        delivered = ev == "r" and to == hops
        if not delivered and ev != "d":
            truth[uid] = (None, "")
    # cut packets: lost if a later packet of the flow was delivered, else unobserved
    for uid, (fate, _) in truth.items():
        if fate is None:
            later = any(
                truth[v][0] == "delivered" and flows[v] == flows[uid] and v > uid for v in truth
            )
            truth[uid] = ("lost", "vanished") if later else ("unobserved", "")
    sent = {}
    for uid in truth:
        sent[flows[uid]] = sent.get(flows[uid], 0) + 1
    return SynthTrace(lines=lines, truth=truth, flows=flows, seqs=seqs, sent=sent)
