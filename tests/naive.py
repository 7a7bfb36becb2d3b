"""Plain, line-by-line twins of the fast kernels, written for reading, not for speed.

Tests compare every numba kernel and vectorised routine against these on generated input.
"""

from __future__ import annotations

import math


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


def wired_labels(lines, data_types=("tcpFriend", "cbr", "udp", "tcp", "exp"), error_events=("e",)):
    """The ns-2 wired ground-truth rule, one line at a time.

    Returns {uid: (fate, reason, t_send, t_recv)} with fate delivered/congestion/wireless/
    lost/None (None: neither received nor dropped; the flow-level rule decides later).
    """
    packets = {}
    for line in lines:
        f = line.split()
        if not f:
            continue
        ev, t, frm, to, ptype = f[0], float(f[1]), int(f[2]), int(f[3]), f[4]
        src_node, dst_node, uid = int(f[8].split(".")[0]), int(f[9].split(".")[0]), int(f[11])
        if ptype not in data_types:
            continue
        p = packets.setdefault(uid, {"last": None, "fate": None, "reason": "", "t_send": None, "t_recv": None})
        if p["t_send"] is None and frm == src_node:
            p["t_send"] = t
        if ev == "r" and to == dst_node and p["t_recv"] is None:
            p["t_recv"] = t
        if ev == "d" or ev in error_events:
            last = p["last"]
            if ev in error_events:
                p["fate"], p["reason"] = "wireless", "error-event"
            elif last is None or (last[1], last[2]) != (frm, to):
                p["fate"], p["reason"] = "wireless", "ingress-error"
            elif last[0] == "+":
                p["fate"], p["reason"] = "congestion", "queue"
            elif last[0] == "-":
                p["fate"], p["reason"] = "wireless", "link-error"
            else:
                p["fate"], p["reason"] = "lost", "after-receive"
            if p["t_send"] is None:
                p["t_send"] = t
        p["last"] = (ev, frm, to)
    out = {}
    for uid, p in packets.items():
        if p["t_recv"] is not None:
            out[uid] = ("delivered", "", p["t_send"], p["t_recv"])
        else:
            out[uid] = (p["fate"], p["reason"], p["t_send"], math.nan)
    return out


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
