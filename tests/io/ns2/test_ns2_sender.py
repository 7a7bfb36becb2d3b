"""ns-2 TCP read at its source node (``read_ns2_wired(view="sender")``, ``io/ns2/sender.py``): a
hand-written trace pins each rule; the bundled TCP trace is held to a plain count of its events."""

from __future__ import annotations

import gzip
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import ldanalyze as la
from ldanalyze.errors import UsageError
from ldanalyze.io.ns2.wired import read_ns2_wired
from ldanalyze.packets import ACK_COLUMNS, SENDER_COLUMNS, validate_packets

from ...conftest import TRACES

DATA = "{ev} {t:.6f} 0 1 tcp 1040 ------- 1 0.0 1.0 {seq} {uid}"
ACK = "{ev} {t:.6f} 1 0 ack 40 ------- 1 1.0 0.0 {seq} {uid}"


def sent(seq, uid, t, arrives=None, dropped=None):
    """A data packet enqueued at the source (node 0) at t, received at node 1 or dropped from
    the queue (congestion)."""
    lines = [DATA.format(ev="+", t=t, seq=seq, uid=uid)]
    if dropped is not None:
        return lines + [DATA.format(ev="d", t=dropped, seq=seq, uid=uid)]
    return lines + [DATA.format(ev=ev, t=at, seq=seq, uid=uid) for ev, at in (("-", t), ("r", arrives))]


def acked(seq, uid, t, arrives=None):
    """An ACK of seqno ``seq`` (the highest received in order) leaving node 1 at t, reaching the
    source at ``arrives`` (None: lost on the way)."""
    lines = [ACK.format(ev="+", t=t, seq=seq, uid=uid), ACK.format(ev="-", t=t, seq=seq, uid=uid)]
    return lines + [
        ACK.format(ev="r", t=arrives, seq=seq, uid=uid) if arrives else ACK.format(ev="d", t=t, seq=seq, uid=uid)
    ]


def hand_lines():
    """Segment 1 dropped by the queue and sent again on the third duplicate ACK; segment 5
    delivered, its ACK lost, sent again by the timer (spurious)."""
    lines = sent(0, 0, 0.00, 0.10) + acked(0, 100, 0.10, 0.20)
    lines += sent(1, 1, 0.01, dropped=0.01)
    for k, seq in enumerate((2, 3, 4)):
        t = 0.02 + 0.01 * k
        lines += sent(seq, seq, t, t + 0.1) + acked(0, 101 + k, t + 0.1, t + 0.2)
    lines += sent(1, 5, 0.24, 0.34) + acked(4, 104, 0.34, 0.44)
    lines += sent(5, 6, 0.45, 0.55) + acked(5, 105, 0.55, None)
    lines += sent(5, 7, 1.50, 1.60) + acked(5, 106, 1.60, 1.70)
    return sorted(lines, key=lambda line: float(line.split()[1]))


def test_hand_the_source_node_view(write_trace):
    tr = read_ns2_wired(write_trace(hand_lines()), view="sender")
    assert tr.view == "sender"
    validate_packets(tr.packets)
    p = tr.packets.set_index("uid")
    assert set(SENDER_COLUMNS) <= set(p.columns) and p["t_recv"].isna().all()
    assert p.loc[1, "fate"] == "congestion" and p.loc[1, "t_detect"] == 0.24 and p.loc[1, "loss_trigger"] == "dupack"
    assert p.loc[6, "fate"] == "delivered" and p.loc[6, "t_detect"] == 1.5 and p.loc[6, "loss_trigger"] == "rto"
    assert p.loc[6, "spurious"] == "truth" and (p["spurious"] == "truth").sum() == 1
    assert math.isnan(p.loc[0, "t_detect"]) and p.loc[0, "t_ack"] == 0.2 and p.loc[5, "t_ack"] == 0.44
    assert p.loc[5, "in_flight"] == 4 * 1040  # segments 1..4 outstanding when it went again
    a = tr.acks
    assert list(a.columns) == list(ACK_COLUMNS)
    assert a["t"].tolist() == [0.2, 0.22, 0.23, 0.24, 0.44, 1.7]
    assert a["ack"].tolist() == [1, 1, 1, 1, 5, 6] and a["dupack"].tolist() == [False, True, True, True, False, False]
    assert np.allclose(a["rtt"], [0.2, np.nan, np.nan, np.nan, 0.4, np.nan], equal_nan=True)  # Karn: 5 went twice
    assert a["newly"].tolist() == [1040, 0, 0, 0, 4 * 1040, 1040]
    tl = la.build_timeline(tr)
    assert (
        tl.losses["uid"].tolist() == [1]
        and tl.gaps["arrival"].tolist() == [0]
        and tl.meta["spurious_losses"] == {"1": 1}
    )
    with pytest.raises(UsageError, match="view must be one of"):
        read_ns2_wired(write_trace(hand_lines()), view="both")


def test_only_tcp_is_read_at_its_source():
    with pytest.raises(UsageError, match="reads TCP flows at their source; not TCP: 1 .tcpFriend"):
        la.read_trace(TRACES / "wlh_tfrc_1flow_high.tr.gz", view="sender")
    mix = la.read_trace(TRACES / "wlh_mix_4flow_high.tr.gz", view="sender", flows=["4"])  # its TCP flow
    assert mix.flows == ["4"] and mix.view == "sender"


def plain_count(path):
    """Of the bundled TCP trace (one TCP flow, fid 1, source node 2): data packets enqueued at
    their source, their distinct seqnos, drops of data packets, and ACKs received at the source."""
    counts, seqnos = Counter(), set()
    with gzip.open(path, "rt") as lines:
        for line in lines:
            ev, _, frm, to, ptype, *_, fid, _, _, seq, _ = line.split()
            if ptype == "tcp" and ev == "+" and frm == "2":
                counts["sent"] += 1
                seqnos.add(seq)
            elif ptype == "tcp" and ev == "d":
                counts["dropped"] += 1
            elif ptype == "ack" and ev == "r" and to == "2":
                counts["acks"] += 1
    return counts, len(seqnos)


def test_the_bundled_tcp_trace_at_its_source_against_a_plain_count():
    path = TRACES / "wlh_tcp_1flow_high.tr.gz"
    tr = la.read_trace(path, view="sender")
    counts, distinct = plain_count(path)
    p = tr.packets
    assert len(p) == counts["sent"] == 2028 and len(tr.acks) == counts["acks"]
    assert int((p["tx"] == 0).sum()) == distinct and int(p["t_detect"].notna().sum()) == counts["sent"] - distinct
    assert int(p["fate"].isin(["congestion", "wireless"]).sum()) == counts["dropped"]
    receiver = la.read_trace(path)  # the same transmissions and truth as the receiver's view
    same = receiver.packets.merge(p, on="uid", suffixes=("", "_s"))
    assert len(same) == len(p) and (same["fate"] == same["fate_s"]).all()
    # every retransmission is explained: on an ACK asking for it, or by the timer
    retransmitted = p[p["t_detect"].notna()]
    assert set(retransmitted["loss_trigger"].astype(str)) == {"dupack", "rto"}
    # the RTT samples are the receiver-side reader's (the same feedback, Karn's rule)
    pd.testing.assert_frame_equal(
        tr.rtt.reset_index(drop=True)[["t", "seq", "rtt"]], receiver.rtt.reset_index(drop=True)[["t", "seq", "rtt"]]
    )
    decisions = la.classify(la.build_timeline(tr), "all")
    assert {"veno_sender", "vegas", "spike@rtt", "adaptive_rtt"} <= set(decisions["lda"].astype(str))
