"""Plain twins of ldanalyze/packets.py: sequence numbers unwrapped, RTT samples from feedback."""

from __future__ import annotations

from . import twin_of


@twin_of("ldanalyze.packets.unwrap_sequence")
def unwrap(seqs, modulus):
    """RFC 3550 A.1 style: each step is the signed difference nearest zero."""
    out = []
    for s in seqs:
        if not out:
            out.append(s)
            continue
        step = (s - out[-1]) % modulus
        if step >= (modulus + 1) // 2:
            step -= modulus
        out.append(out[-1] + step)
    return out


@twin_of("ldanalyze.packets.rtt_from_feedback")
def rtt_from_feedback(packets, feedback):
    """RTT samples as ``packets.rtt_from_feedback`` takes them: ``packets`` are (flow, seq,
    t_send) rows, ``feedback`` (flow, t, seq) rows; returns (flow, t, seq, rtt) tuples by flow
    label, then time (ties in row order)."""
    sends = {}
    for flow, seq, t_send in packets:
        sends.setdefault((str(flow), seq), []).append(t_send)
    highest, samples = {}, []
    for flow, t, seq in sorted(feedback, key=lambda row: (row[0], row[1])):
        if flow in highest and seq <= highest[flow]:
            continue  # names nothing new
        highest[flow] = seq
        tx = sends.get((str(flow), seq), [])
        if len(tx) == 1 and tx[0] <= t:  # Karn: one transmission, sent before the feedback came
            samples.append((flow, t, seq, t - tx[0]))
    return samples
