"""The PacketTable: one row per transmitted data packet, and the fate vocabulary.

Every reader (ns-2 wired, ns-2 wireless, captures) produces the same table, so that nothing
downstream knows where a trace came from.

Columns (see ``COLUMNS``):

========  =======  ===========================================================================
flow      category flow label (ns-2: the flow id ``fid``, or ``src>dst`` addresses); its
                   categories are the flows in natural order ("2" before "10")
seq       int64    the sequence number the receiver sees (TCP retransmissions repeat it)
tx        int64    transmission index of this ``(flow, seq)``: 0 first, 1 first retransmission ...
uid       int64    the reader's unique packet id (ns-2 uid; capture record index)
size      int64    bytes on the wire
t_send    float64  seconds on the sender's clock (first enqueue at the source)
t_recv    float64  seconds on the receiver's clock; NaN when never received
t_drop    float64  time of the drop record when the trace has one; else NaN
fate      category delivered | congestion | wireless | route | policing | lost | unobserved
reason    category what the fate was derived from (e.g. ``queue``, ``link-error``, ``IFQ ---``)
========  =======  ===========================================================================

Optional columns: a capture chain with an air vantage (``io.capture.air``) adds the radio's
evidence, ``AIR_COLUMNS``: ``air_frames`` (int64, frames of the packet a monitor-mode sniffer
saw, 0: none), ``air_retried`` (bool, one had the 802.11 retry bit), ``t_air`` and
``t_air_last`` (float64, its first and last frame on the sniffer's clock), ``air_unseen``
(int64, numbers of its transmitter's 802.11 sequence counter the capture never saw go by since
the flow's previous frame; -1: not known), ``air_qos`` (bool, its frame was QoS data: the
counter numbers only frames to its receiver and traffic identifier, so ``air_unseen`` counts
only them; a non-QoS counter is shared with the frames to every other station, whose unheard
numbers count as unseen too). A receiver's own monitor-mode capture read alone
gives them too, one frame per arrival. The timeline carries them to its arrivals and losses.

A **sender's view** (``trace.meta["view"] == "sender"``: a capture at the sender, a qlog, the
source node of an ns-2 TCP trace) has one row per transmission the sender made, ``t_send`` on
its clock and ``t_recv`` NaN (the receiver is not seen; where the receiver's own log is joined
as a chain, a qlog's peer, its receipt on the receiver's clock, delivered rows only). ``delivered`` there means acknowledged
(or shown delivered by a spurious retransmission's evidence), ``lost`` a transmission the sender
had to repeat (or declared lost) and that was not delivered, ``unobserved`` one neither
acknowledged nor repeated by the end. It adds ``SENDER_COLUMNS``: ``t_ack`` (float64, the first
ACK that covered the transmission's bytes, cumulatively or by SACK; NaN: none), ``t_detect``
(float64, when the sender acted on its loss: the retransmission, QUIC's ``packet_lost``; NaN:
never declared lost), ``loss_trigger`` (category, how the sender detected it: ``dupack``,
``sack``, ``rto``, ``tlp``, ``other``; QUIC's ``reordering``, ``time``, ``pto``; "" when never
declared lost), ``spurious`` (category, the evidence that a declared loss was not one: ``dsack``,
``eifel``, ``timing``, ``acked``; ``received``: the receiver's own log, joined as a chain,
shows it arrived; ``truth``: the simulator's record or a chain of captures shows it arrived;
"" when none), ``chunk`` (int64, the flow cut at idle periods
longer than an RTO, Flach et al.'s chunks), ``in_flight`` (int64, bytes in flight when it was
sent; -1 unknown). Its ACK stream is ``Trace.acks`` (``ACK_COLUMNS``, one row per
acknowledgement).

``route`` is a loss to routing and mobility (no route, a route-wait buffer full, a broken link
reported by the MAC, a loop, TTL): neither congestion nor the radio's doing, so scores leave it
out of M_c/M_w unless told to count it as one of them. ``policing`` is a drop by a rate
limiter that drops rather than queues (a token-bucket policer: no queue builds before it, so
delay-based LDAs see no congestion); scores keep it apart likewise. ``lost`` is a loss whose cause is
unknown; ``unobserved`` is a packet still in flight when the trace ends, or one a capture missed
while it was not recording (reason ``capture gap``, ``io/capture/outages.py``): it is never
counted as a loss.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

import numpy as np
import pandas as pd

from .formatting import trace_html

DELIVERED = "delivered"
CONGESTION = "congestion"
WIRELESS = "wireless"
ROUTE = "route"
POLICING = "policing"
LOST = "lost"
UNOBSERVED = "unobserved"

FATES = (DELIVERED, CONGESTION, WIRELESS, ROUTE, POLICING, LOST, UNOBSERVED)
LOSS_FATES = (CONGESTION, WIRELESS, ROUTE, POLICING, LOST)
# the words a user may give for a loss's cause (labels files, rules, a chain's segments)
CAUSE_WORDS = {
    "congestion": CONGESTION,
    "wireless": WIRELESS,
    "route": ROUTE,
    "policing": POLICING,
    "unknown": LOST,
    "lost": LOST,
}
WEAK_LABEL = "weak-label"  # the reason of a loss whose cause came from a rule, not per-packet truth
FATE_DTYPE = pd.CategoricalDtype(list(FATES))
SENDER_COLUMNS = {
    "t_ack": np.float64,
    "t_detect": np.float64,
    "loss_trigger": "category",
    "spurious": "category",
    "chunk": np.int64,
    "in_flight": np.int64,
}
# how a sender detected a loss (TCP; QUIC's triggers), and the evidence that it was none
LOSS_TRIGGERS = ("dupack", "sack", "rto", "tlp", "other", "reordering", "time", "pto")
SPURIOUS_EVIDENCE = ("dsack", "eifel", "timing", "acked", "received", "truth")
# the sender's ACK stream (``Trace.acks``), one row per acknowledgement the sender received:
# ``t`` its arrival (sender's clock), ``ack`` the segment index (TCP) or packet number (QUIC)
# below which all is acknowledged, ``largest`` the highest segment index/packet number it
# acknowledges (SACK and QUIC ranges included), ``newly`` the bytes it newly acknowledged
# (cumulatively or by SACK), ``dupack`` (TCP: a duplicate ACK), ``dsack`` (it reports a
# duplicate: RFC 2883), ``rtt`` (seconds, NaN where no sample: Karn's rule), ``rtt_source``
# (``karn``, ``tsecr``, ``qlog``; "" none), ``delivery_rate`` (bytes/s, draft-cheng-iccrg-
# delivery-rate-estimation; NaN none), ``in_flight`` (bytes after it; -1 unknown), ``rwnd``
# (the receive window, bytes; -1 unknown), ``cwnd`` (the sender's window as it logged it, bytes;
# -1 unknown: TCP captures)
ACK_COLUMNS = {
    "flow": "category",
    "t": np.float64,
    "ack": np.int64,
    "largest": np.int64,
    "newly": np.int64,
    "dupack": bool,
    "dsack": bool,
    "rtt": np.float64,
    "rtt_source": "category",
    "delivery_rate": np.float64,
    "in_flight": np.int64,
    "rwnd": np.int64,
    "cwnd": np.int64,
}
AIR_COLUMNS = ("air_frames", "air_retried", "t_air", "t_air_last", "air_unseen", "air_qos")

COLUMNS = {
    "flow": "category",
    "seq": np.int64,
    "tx": np.int64,
    "uid": np.int64,
    "size": np.int64,
    "t_send": np.float64,
    "t_recv": np.float64,
    "t_drop": np.float64,
    "fate": FATE_DTYPE,
    "reason": "category",
}


@dataclasses.dataclass
class Trace:
    """What a reader returns: the PacketTable plus what else the file told.

    ``rtt`` holds round-trip samples derived from feedback packets (columns ``flow, t, seq,
    rtt``; empty when the trace has no feedback). ``meta`` records how the file was read
    (format, packet types taken as data, counts of what was ignored; ``view``: ``sender`` for a
    sender's view, else a receiver's). ``acks`` is a sender's ACK stream (``ACK_COLUMNS``; empty
    in a receiver's view).
    """

    packets: pd.DataFrame
    rtt: pd.DataFrame
    path: str
    format: str
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    acks: pd.DataFrame = dataclasses.field(default_factory=lambda: empty_acks())

    @property
    def view(self) -> str:
        """``sender`` (transmissions and the ACKs that came back) or ``receiver`` (arrivals)."""
        return self.meta.get("view", "receiver")

    @property
    def flows(self) -> list[str]:
        return flows_of(self.packets["flow"])

    def _repr_html_(self) -> str:
        return trace_html(self)


def unwrap_sequence(seq: np.ndarray, modulus: int) -> np.ndarray:
    """Unwrap sequence numbers modulo ``modulus`` given in order.

    Each step is taken as the signed difference closest to zero, so a step of more than
    half the sequence space backwards is a wrap forward (RFC 3550 A.1's rule). The first
    value is kept as it is.
    """
    seq = np.asarray(seq, dtype=np.int64)
    if seq.size == 0:
        return seq.copy()
    step = np.diff(seq) % modulus
    step = np.where(step >= modulus // 2 + modulus % 2, step - modulus, step)
    return np.concatenate(([seq[0]], seq[0] + np.cumsum(step)))


def natural_sorted(labels) -> list[str]:
    """Flow labels sorted so that "2" comes before "10": digit runs compare as numbers."""

    def key(label: str) -> tuple:
        return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(label)))

    return sorted((str(x) for x in labels), key=key)


def named_flows(flows) -> set[str] | None:
    """The flows a ``flows`` option names, or None when it asks for every one (None, ``"all"``)."""
    wanted = {flows} if isinstance(flows, str) else None if flows is None else set(flows)
    return None if wanted is None or wanted == {"all"} else wanted


def flows_of(flow: pd.Series) -> list[str]:
    """The flows some row has, in natural order: of a categorical, the categories its codes
    use (counted from the codes, not hashed row by row)."""
    if isinstance(flow.dtype, pd.CategoricalDtype):
        codes = flow.cat.codes.to_numpy()
        used = np.bincount(codes[codes >= 0], minlength=len(flow.cat.categories)) > 0
        return natural_sorted(flow.cat.categories[used])
    return natural_sorted(flow.dropna().unique())


def labels_dtype(labels) -> pd.CategoricalDtype:
    """A categorical dtype over ``labels`` (LDA specs, flows, a trace's name), made once per
    set of labels: pandas validates a new dtype's categories, 80 µs for a few strings, which
    dominated the small tables of a batch re-run."""
    return _labels_dtype(tuple(labels))


@functools.lru_cache(maxsize=4096)
def _labels_dtype(labels: tuple) -> pd.CategoricalDtype:
    return pd.CategoricalDtype(list(labels))


def label_positions(column: pd.Series, labels) -> np.ndarray:
    """Each row's position in ``labels`` (-1 where its label is not there), labels compared as
    strings: a categorical column is matched by its categories, not row by row (turning
    millions of rows into strings took seconds)."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype("category")
    where = pd.Index(labels).get_indexer(column.cat.categories.astype(str))
    return np.append(where, -1)[column.cat.codes.to_numpy()]  # code -1 (no label): -1


def empty_rtt() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "flow": pd.Series([], dtype=object),
            "t": pd.Series([], dtype=np.float64),
            "seq": pd.Series([], dtype=np.int64),
            "rtt": pd.Series([], dtype=np.float64),
        }
    )


def sender_flows(trace: Trace) -> list[str]:
    """The flows of ``trace`` read in the sender's view (all of a sender's, some of a mixed one's)."""
    views = trace.meta.get("flows", {})
    return [flow for flow in trace.flows if views.get(flow, {}).get("view", trace.view) == "sender"]


def empty_acks() -> pd.DataFrame:
    """A sender's ACK stream with no rows (``ACK_COLUMNS``)."""
    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in ACK_COLUMNS.items()})


def flow_text(flow: pd.Series):
    """A flow column's labels row by row, as the column pandas makes of ``flow.to_numpy()``
    (text; object where no row has a label): a categorical's taken from its categories, not
    turned into a million Python strings and back (0.5 s against 0.08 s)."""
    if not isinstance(flow.dtype, pd.CategoricalDtype) or flow.cat.categories.dtype != "str":
        return flow.to_numpy()
    codes = flow.cat.codes.to_numpy()
    if not (codes >= 0).any():
        return flow.to_numpy()
    return flow.cat.categories.array.take(codes.astype(np.intp), allow_fill=True)


def flow_codes(flow: pd.Series) -> np.ndarray:
    """Each row's flow as an integer, in the order the flows sort (a categorical's own codes)."""
    if isinstance(flow.dtype, pd.CategoricalDtype):
        return flow.cat.codes.to_numpy()
    return pd.factorize(flow, sort=True)[0]


def sorting_order(*keys: np.ndarray) -> np.ndarray | None:
    """The row order that sorts by ``keys`` (the first the primary one), like ``np.lexsort``
    with the keys reversed, ties kept in row order; None when the rows are in that order
    already. Tables usually come sorted, and the check costs a few comparisons a row where
    the sort and the reordering cost a few hundred."""
    n = keys[0].shape[0]
    ahead = np.zeros(max(n - 1, 0), bool)  # row i+1 already sorts after row i on an earlier key
    for key in keys:
        later, same = key[1:], key[:-1]
        if not (ahead | (later >= same)).all():
            return np.lexsort(keys[::-1])
        ahead |= later > same
    return None


def make_packet_table(**columns: Any) -> pd.DataFrame:
    """Build a PacketTable with the canonical column order and dtypes.

    Missing optional columns get defaults (``uid`` = row number, ``t_drop`` = NaN,
    ``reason`` = ""; ``tx`` counts the transmissions of each ``(flow, seq)`` in send order).
    A sender's view's ``SENDER_COLUMNS`` given are kept (after the others, in the same order).
    Rows are sorted by flow, then send time, then uid. Arrays already of their column's dtype
    are taken as they are, not copied (the readers pass arrays they made for the table; a
    copy and a consolidation cost half a second on two million rows).
    """
    n = len(columns["seq"])
    defaults = {
        "uid": lambda: np.arange(n, dtype=np.int64),
        "t_drop": lambda: np.full(n, np.nan),
        "reason": lambda: np.full(n, "", dtype=object),
    }
    data = {}
    for name, dtype in COLUMNS.items():
        if name == "tx" and name not in columns:
            continue  # counted below, once the rows are in order
        values = columns[name] if name in columns else defaults[name]() if name in defaults else None
        if values is None:
            raise KeyError(f"PacketTable needs column {name!r}")
        if name == "flow":
            data[name] = _flow_categorical(values)
        elif dtype is object:
            data[name] = pd.Series(np.asarray(values, dtype=object), dtype=object, copy=False)
        else:
            data[name] = pd.Series(values, dtype=dtype, copy=False)
    for name, dtype in SENDER_COLUMNS.items():
        if name in columns:
            data[name] = pd.Series(columns[name], dtype=dtype, copy=False)
    unknown = set(columns) - set(COLUMNS) - set(SENDER_COLUMNS)
    if unknown:
        raise KeyError(f"PacketTable has no column {sorted(unknown)[0]!r}")
    codes = data["flow"].cat.codes.to_numpy()
    order = sorting_order(codes, data["t_send"].to_numpy(), data["uid"].to_numpy())
    if order is not None:
        data = {name: column.take(order).reset_index(drop=True) for name, column in data.items()}
        codes = data["flow"].cat.codes.to_numpy()
    if "tx" not in columns:
        data["tx"] = pd.Series(transmission_index(codes, data["seq"].to_numpy()), copy=False)
    return pd.DataFrame(
        {name: data[name] for name in [*COLUMNS, *(c for c in SENDER_COLUMNS if c in data)]}, copy=False
    )


def _flow_categorical(values) -> pd.Series:
    """Flow labels as a categorical whose categories are in natural order."""
    if isinstance(values, pd.Categorical):
        codes, labels = values.codes, values.categories
    else:
        codes, labels = pd.factorize(np.asarray(values, dtype=object))
    order = natural_sorted(labels)
    position = {label: i for i, label in enumerate(order)}
    remap = np.array([position[str(x)] for x in labels], dtype=np.int64)
    if len(codes):
        codes = remap.astype(np.min_scalar_type(-max(len(order), 1)))[codes]  # the dtype pandas keeps
    return pd.Series(pd.Categorical.from_codes(codes, categories=order, validate=False), copy=False)


def transmission_index(flow_codes: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... over the rows of each (flow, seq), in row order (rows in send order)."""
    n = seq.shape[0]
    later = flow_codes[1:] > flow_codes[:-1]
    if n < 2 or (later | ((flow_codes[1:] == flow_codes[:-1]) & (seq[1:] > seq[:-1]))).all():
        return np.zeros(n, np.int64)  # flows in turn, each one's numbers rising: all first transmissions
    order = np.lexsort((np.arange(n), seq, flow_codes))
    key_f, key_s = flow_codes[order], seq[order]
    new_group = np.ones(n, bool)
    new_group[1:] = (key_f[1:] != key_f[:-1]) | (key_s[1:] != key_s[:-1])
    starts = np.flatnonzero(new_group)
    run = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    tx = np.empty(n, np.int64)
    tx[order] = run
    return tx


def validate_packets(packets: pd.DataFrame) -> None:
    """Check the PacketTable invariants; raise ValueError naming the first violation.

    Used by tests and by readers of user-supplied tables. Invariants: all columns present
    with their dtypes; delivered rows have a finite receive time and the others none, except
    that in a table with ``SENDER_COLUMNS`` (a sender's view, or a mixed one) a delivered row may
    instead be acknowledged (a finite ``t_ack``) or shown delivered by a spurious retransmission;
    finite send times; a non-negative delay for delivered packets is *not* required
    (clocks of two endpoints may differ).
    """
    missing = [c for c in COLUMNS if c not in packets.columns]
    if missing:
        raise ValueError(f"PacketTable lacks columns {missing}")
    if not isinstance(packets["fate"].dtype, pd.CategoricalDtype) or list(packets["fate"].cat.categories) != list(
        FATES
    ):
        raise ValueError("PacketTable 'fate' must be categorical over " + ", ".join(FATES))
    if packets["fate"].isna().any():
        raise ValueError("PacketTable has rows without a fate")
    delivered = (packets["fate"] == DELIVERED).to_numpy()
    t_recv = packets["t_recv"].to_numpy()
    received = np.isfinite(t_recv)
    if "t_ack" in packets.columns:  # a sender's view, or mixed: a sender's row is delivered when acked or spurious
        shown = np.isfinite(packets["t_ack"].to_numpy()) | (packets["spurious"].astype(str) != "").to_numpy()
        bad = np.flatnonzero(np.where(delivered, ~received & ~shown, received))
    else:
        bad = np.flatnonzero(delivered != received)
    if bad.size:
        raise ValueError(
            f"PacketTable row {int(bad[0])}: fate {packets['fate'].iat[bad[0]]!r} "
            f"inconsistent with t_recv={t_recv[bad[0]]!r}"
        )
    bad = np.flatnonzero(~np.isfinite(packets["t_send"].to_numpy()))
    if bad.size:
        raise ValueError(f"PacketTable row {int(bad[0])}: t_send is not finite")


def rtt_from_feedback(packets: pd.DataFrame, feedback: pd.DataFrame) -> pd.DataFrame:
    """RTT samples: feedback time minus the send time of the data packet it names.

    ``feedback`` has ``flow, t, seq`` (arrival time at the data sender and the data seqno it
    acknowledges: TFRC feedback names the packet that triggered it; an ns-2 TCP ACK names the
    highest in-order packet). A sample is taken from the first feedback naming a seqno
    higher than any named before, and only when that seqno was transmitted once before the
    feedback arrived (Karn's rule: a retransmitted packet gives an ambiguous sample).

    Samples come by flow (in the order flow labels sort), then time. Computed on one integer
    key per (flow, seqno), not a pandas groupby and join (docs/design.md).
    ``tests/naive/packets.py`` has the plain twin.
    """
    if feedback.empty:
        return empty_rtt()
    codes, flows = pd.factorize(feedback["flow"], sort=True)  # sort_values' order of the flows
    flows = np.asarray(flows, dtype=object)
    t = feedback["t"].to_numpy(np.float64)
    order = np.lexsort((t, codes))  # stable: ties keep their rows' order
    codes, t, seq = codes[order], t[order], feedback["seq"].to_numpy(np.int64)[order]
    p_codes = label_positions(packets["flow"], [str(f) for f in flows])  # -1: a flow no feedback names
    known = p_codes >= 0
    p_seq = packets["seq"].to_numpy(np.int64)[known]
    # one integer key per (flow, seqno), ordered as the pairs are: a seqno by its rank among all
    ranks = np.unique(np.concatenate([seq, p_seq]))
    key = codes * len(ranks) + np.searchsorted(ranks, seq)
    top = np.maximum.accumulate(key)  # the flows are contiguous and their keys above the last's
    keep = np.ones(len(key), bool)
    keep[1:] = (codes[1:] != codes[:-1]) | (key[1:] > top[:-1])
    t, seq, key, codes = t[keep], seq[keep], key[keep], codes[keep]
    # each (flow, seqno)'s transmissions: how many, and the first one's send time
    p_key = p_codes[known] * len(ranks) + np.searchsorted(ranks, p_seq)
    by_key = np.argsort(p_key, kind="stable")
    p_key = p_key[by_key]
    starts = np.flatnonzero(np.diff(p_key, prepend=p_key[:1] - 1))
    n_tx = np.diff(np.append(starts, len(p_key)))
    t_first = packets["t_send"].to_numpy(np.float64)[known][by_key[starts]]
    p_key = p_key[starts]
    at = np.searchsorted(p_key, key)
    sample = at < len(p_key)
    hit = at[sample]
    sample[sample] = (p_key[hit] == key[sample]) & (n_tx[hit] == 1) & (t_first[hit] <= t[sample])
    return pd.DataFrame(
        {"flow": flows[codes[sample]], "t": t[sample], "seq": seq[sample], "rtt": t[sample] - t_first[at[sample]]}
    )


def mark_vanished(packets: pd.DataFrame) -> pd.DataFrame:
    """Neither received nor dropped: lost if a later packet of the flow was delivered. A packet
    with a drop record that says it was in flight (ns-2's ``END``) stays unobserved."""
    undecided = (packets["fate"] == UNOBSERVED).to_numpy() & np.isnan(packets["t_drop"].to_numpy())
    if not undecided.any():
        return packets
    # rows are sorted by (flow, t_send, uid): look for any delivered row later in the flow
    delivered = (packets["fate"] == DELIVERED).astype(np.int64)
    later = delivered[::-1].groupby(packets["flow"][::-1]).cumsum()[::-1] - delivered
    vanished = undecided & (later.to_numpy() > 0)
    packets.loc[vanished, "fate"] = LOST
    if "vanished" not in packets["reason"].cat.categories:
        packets["reason"] = packets["reason"].cat.add_categories(["vanished"])
    packets.loc[vanished, "reason"] = "vanished"
    return packets
