"""Hypothesis strategies: synthetic ns-2 wired traces whose ground truth is known by construction.

Packets of one or two flows cross a chain of links 0→1→…→K. On each link a packet is enqueued
(``+``), then either dropped by the queue (``d`` right after ``+``: congestion), dropped by an
error model before the queue (``d`` with no ``+``: wireless), or dequeued (``-``) and then either
received (``r``) or lost by an error model after the link (``d``: wireless). Per-packet random
delays make reordering possible; retransmissions repeat a sequence number under a new uid; the
trace may be cut while packets are in flight.

``packet_tables`` and ``rtt_samples`` draw packet lists directly (fates, not trace lines) for
the LDA replay tests.
"""

from __future__ import annotations

import dataclasses
import math

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
            events.append(
                (time, len(events), f"{ev} {time:.6f} {a} {b} {ptype} {size} ------- {fid} {src} {dst} {seq} {uid}")
            )

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
            later = any(truth[v][0] == "delivered" and flows[v] == flows[uid] and v > uid for v in truth)
            truth[uid] = ("lost", "vanished") if later else ("unobserved", "")
    sent = {}
    for uid in truth:
        sent[flows[uid]] = sent.get(flows[uid], 0) + 1
    return SynthTrace(lines=lines, truth=truth, flows=flows, seqs=seqs, sent=sent)


# ---------------------------------------------------------------------------------------------
# Packet tables for the LDA replay: fates drawn directly, times on a coarse grid so that ties,
# exact multiples and reordering happen often.
# ---------------------------------------------------------------------------------------------

SPACINGS = (0, 0, 1, 1, 2, 4, 10)  # send spacing, in units
DELAYS = (10, 12, 20, 50, 100)  # one-way delay of a delivered packet, in units
FATE_CHOICES = ("delivered",) * 6 + ("congestion", "wireless", "lost")


@st.composite
def packet_tables(draw, max_packets: int = 60):
    """A list of packet dicts (flow, seq, uid, t_send, t_recv, fate) of one or two flows.

    Times are multiples of a unit that is either decimal (1 ms: sums round) or dyadic (2^-10 s:
    sums are exact, so rule boundaries are hit exactly). A steady table paces the sender and
    mostly keeps the delay at one value, so that receive spacings are multiples of T_min (Biaz's
    band) and T_avg/T_min is near 1 (ZBS's mBiaz). Now and then the sender pauses for 1.5 s (so
    that time-based locks and observation periods can expire) or retransmits an already
    delivered packet, which arrives again (a duplicate). The last few packets may be
    unobserved. Lost packets never share a sequence number with another packet.
    """
    unit = draw(st.sampled_from([0.001, 2.0**-10]))
    steady, step = draw(st.booleans()), draw(st.sampled_from((1, 2, 4)))
    usual_delay = draw(st.sampled_from((10, 10) + DELAYS))
    n_flows = draw(st.integers(1, 2))
    n = draw(st.integers(1, max_packets))
    packets, next_seq, delivered, t = [], {}, {}, 0.0
    for uid in range(n):
        flow = str(draw(st.integers(1, n_flows)))
        if draw(st.integers(0, 29)) == 29:
            t += 1.5
        elif steady:
            t += step * unit
        else:
            t += draw(st.sampled_from(SPACINGS)) * unit
        if delivered.get(flow) and draw(st.integers(0, 9)) == 9:
            seq, fate = draw(st.sampled_from(delivered[flow])), "delivered"
        else:
            seq, fate = next_seq.get(flow, 0), draw(st.sampled_from(FATE_CHOICES))
            next_seq[flow] = seq + 1
        t_recv = math.nan
        if fate == "delivered":
            quiet = steady and draw(st.integers(0, 9)) < 9
            t_recv = t + (usual_delay if quiet else draw(st.sampled_from(DELAYS))) * unit
            delivered.setdefault(flow, []).append(seq)
        packets.append({"flow": flow, "seq": seq, "uid": uid, "t_send": t, "t_recv": t_recv, "fate": fate})
    for p in packets[len(packets) - draw(st.integers(0, 3)) :]:
        p["fate"], p["t_recv"] = "unobserved", math.nan
    return packets


@st.composite
def rtt_samples(draw, packets, every_flow: bool = False):
    """(flow, t, rtt) samples as feedback would give them: some delivered packets (with
    ``every_flow``, at least each flow's first) are answered after a return delay, possibly 0 so
    that a sample can coincide with an arrival. Times are strictly increasing per flow, so their
    order is unambiguous."""
    samples, last = [], {}
    for p in packets:
        if p["fate"] != "delivered":
            continue
        first = p["flow"] not in last
        if not (every_flow and first) and not draw(st.booleans()):
            continue
        t = p["t_recv"] + draw(st.sampled_from((0.0, 0.0, 0.001, 0.01, 0.02)))
        if t > last.get(p["flow"], -math.inf):
            samples.append((p["flow"], t, t - p["t_send"]))
            last[p["flow"]] = t
    return samples
