"""Plain twins of ldanalyze/timeline.py: RFC 3550 jitter and the receiver's gaps and arrival kinds."""

from __future__ import annotations

from . import twin_of


@twin_of("ldanalyze.timeline.rfc3550_jitter")
def rfc3550_jitter(transit_pairs):
    """RFC 3550 §6.4.1 / A.8: J += (|D| - J) / 16 over consecutive packets of one flow.

    ``transit_pairs`` is a list of (t_send, t_recv) in arrival order; returns J after each
    packet (0 after the first).
    """
    out, j, prev = [], 0.0, None
    for t_send, t_recv in transit_pairs:
        if prev is not None:
            d = (t_recv - prev[1]) - (t_send - prev[0])
            j = j + (abs(d) - j) / 16.0
        out.append(j)
        prev = (t_send, t_recv)
    return out


@twin_of("ldanalyze.timeline.order_state")
def receiver_gaps(arrival_seqs, first_seq):
    """Gaps a receiver detects from sequence numbers in arrival order.

    Returns a list of (arrival index, first missing seq, n) and the kind of every arrival
    (in_order / late / duplicate).
    """
    gaps, kinds, received = [], [], set()
    hi = first_seq - 1
    for i, s in enumerate(arrival_seqs):
        if s in received:
            kinds.append("duplicate")
        elif s > hi:
            kinds.append("in_order")
            if s > hi + 1:
                gaps.append((i, hi + 1, s - hi - 1))
            hi = s
        else:
            kinds.append("late")
        received.add(s)
    return gaps, kinds
