"""Per-flow, per-packet timelines: what a receiver saw, and the losses it could detect.

``build_timeline`` turns a PacketTable into three tables:

``arrivals``
    the delivered packets of each flow in arrival order (``t_recv``, then uid) with

    * ``owd`` = t_recv − t_send (absolute one-way delay; meaningful only when the two
      endpoints share a clock, as in ns-2),
    * ``rott`` = owd minus its minimum over the flow (relative one-way trip time),
    * ``iat`` = t_recv − previous t_recv of the flow (inter-arrival time),
    * ``jitter`` = Δt_recv − Δt_send between consecutive arrivals (paper 001, §III-C, eq. 7),
    * ``jitter_rfc3550`` = the RFC 3550 §6.4.1 running estimate J += (|D| − J)/16,
    * ``kind``: ``in_order`` (a sequence number above all received so far), ``late`` (it fills
      a hole: a reordered packet or a retransmission), ``duplicate`` (seen before).
      Statistics are computed over all arrivals; an LDA that wants in-order spacing only (Biaz)
      selects by ``kind``.

``gaps``
    one row per hole the receiver detects: an in-order arrival P_{i+n+1} whose sequence
    number is more than one above the highest received so far (P_i) reveals
    ``n = seq(P_{i+n+1}) − seq(P_i) − 1`` missing packets. The gap is detected at the arrival
    of P_{i+n+1} (row ``arrival`` of ``arrivals``; P_i is row ``prev_arrival``, −1 if none).
    Packets of the gap that arrive later (reordering) fill it: they are not
    losses, so ``n_lost`` (the packets of the gap that were really lost) can be below ``n``.
    Before the first arrival, P_i is the flow's first sequence number minus one and its times
    are NaN.

``losses``
    one row per lost transmission (fate congestion, wireless or lost) with its true cause and
    the gap that revealed it. A sequence number in a gap is charged to its first lost
    transmission. Lost transmissions that no arrival reveals (after the last arrival, or a
    lost retransmission of a sequence number already charged or received) have ``gap = -1``
    and ``detected = False``: a receiver cannot classify them.

A PacketTable with the radio's evidence of an air vantage (``packets.AIR_COLUMNS``) keeps it in
arrivals and losses.

Sequence numbers that wrap (RTP's 16 bits, say) are unwrapped per flow in send order when
``seq_modulus`` is given.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from .errors import UsageError
from .formatting import timeline_html
from .packets import (
    AIR_COLUMNS,
    CONGESTION,
    DELIVERED,
    FATES,
    LOSS_FATES,
    UNOBSERVED,
    WEAK_LABEL,
    WIRELESS,
    Trace,
    empty_rtt,
    flow_codes,
    flows_of,
    label_positions,
    sorting_order,
    unwrap_sequence,
)
from .sender_timeline import SAMPLE_COLUMNS, ack_samples, detections, sample_rtt, spurious_losses
from .tiering import call, pick

KIND_IN_ORDER, KIND_LATE, KIND_DUPLICATE = "in_order", "late", "duplicate"
RECEIVER, SENDER = "receiver", "sender"  # a timeline's views (``Timeline.view``; "mixed": each flow its own)
ARRIVAL_KIND = pd.CategoricalDtype([KIND_IN_ORDER, KIND_LATE, KIND_DUPLICATE])


@dataclasses.dataclass
class Timeline:
    """Arrivals, gaps and losses of every flow of one trace (see the module docstring)."""

    arrivals: pd.DataFrame
    gaps: pd.DataFrame
    losses: pd.DataFrame
    packets: pd.DataFrame
    rtt: pd.DataFrame = dataclasses.field(default_factory=empty_rtt)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    TABLES = ("arrivals", "gaps", "losses", "packets", "rtt")

    @classmethod
    def read_lazily(cls, load: Callable[[str], pd.DataFrame], flows: list[str], meta: dict[str, Any]) -> Timeline:
        """A timeline whose tables ``load(name)`` reads when one is first used, with its
        ``flows`` known: the batch cache's, where a re-run that adds one LDA needs neither the
        packet table nor the RTT samples (a third of the timeline's rows)."""
        timeline = cls.__new__(cls)
        timeline.__dict__.update(meta=meta, _pending={name: load for name in cls.TABLES}, _flows=list(flows))
        return timeline

    def __getattr__(self, name: str):
        """A table of :meth:`read_lazily` not read yet (fields set in ``__init__`` never get here)."""
        pending = self.__dict__.get("_pending", {})
        if name not in pending:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = pending.pop(name)(name)
        setattr(self, name, value)
        return value

    @property
    def view(self) -> str:
        """``receiver`` (arrivals and gaps), ``sender`` (ACK samples and loss detections), or
        ``mixed`` (each flow in its own: ``flow_views``)."""
        return self.meta.get("view", RECEIVER)

    @property
    def flow_views(self) -> dict[str, str]:
        """Each flow's view (``receiver`` or ``sender``)."""
        if self.view != "mixed":
            return dict.fromkeys(self.flows, self.view)
        if "flow_views" in self.meta:
            return dict(self.meta["flow_views"])
        said = self.meta.get("flows") or {}  # a meta kept without them (a cache's): the reader's word
        return {flow: str((said.get(flow) or {}).get("view", RECEIVER)) for flow in self.flows}

    @property
    def clock_common(self) -> bool:
        """Whether send and receive times are on one clock (ns-2), so ``owd`` is absolute."""
        return self.meta.get("clock") == "common"

    @property
    def flows(self) -> list[str]:
        """The flows that have packets, in natural order."""
        if "_flows" in self.__dict__:
            return list(self._flows)
        return flows_of(self.packets["flow"])

    def _repr_html_(self) -> str:
        return timeline_html(self)

    def summary(self) -> pd.DataFrame:
        """One row per flow: packet counts by fate, loss rates, ROTT and IAT statistics.

        Loss rates are over packets whose fate is known (sent minus unobserved). ROTT and
        IAT figures are in milliseconds over all arrivals of the flow.
        """
        flows = pd.Index(self.flows, name="flow")

        def by_flow(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
            """Each row's position in ``flows`` (grouping on integers), and the rows whose flow
            is known."""
            at = label_positions(frame["flow"], flows)
            return at, at >= 0

        def total(frame: pd.DataFrame, values=None) -> np.ndarray:
            """Count (or sum of the 0/1 ``values``) per flow."""
            at, known = by_flow(frame)
            weights = None if values is None else np.asarray(values, dtype=np.float64)[known]
            return np.bincount(at[known], weights=weights, minlength=len(flows)).astype(np.int64)

        p = self.packets
        out: dict[str, Any] = {"flow": flows}  # the columns, made into a frame once
        at, known = by_flow(p)
        fates = p["fate"].cat.categories
        fate = p["fate"].cat.codes.to_numpy()[known]
        counts = np.bincount(at[known] * len(fates) + fate, minlength=len(flows) * len(fates))
        counts = counts.reshape(len(flows), len(fates)).astype(np.int64)
        out["sent"] = counts.sum(axis=1)
        for name in FATES:
            out[name] = counts[:, fates.get_loc(name)] if name in fates else np.zeros(len(flows), np.int64)
        out["losses"] = sum(out[name] for name in LOSS_FATES)
        known_fate = out["sent"] - out[UNOBSERVED]
        known_fate = np.where(known_fate > 0, known_fate, np.nan)
        out["loss_rate"] = out["losses"] / known_fate
        out["congestion_rate"] = out[CONGESTION] / known_fate
        out["wireless_rate"] = out[WIRELESS] / known_fate
        out["gaps"] = total(self.gaps)
        out["undetected"] = total(self.losses, ~self.losses["detected"].to_numpy(bool))
        out["weak_labels"] = total(p, (p["reason"] == WEAK_LABEL).to_numpy())  # causes from rules (io.labels)
        a = self.arrivals
        at, known = by_flow(a)
        kinds = np.bincount(at[known] * 3 + a["kind"].cat.codes.to_numpy()[known], minlength=len(flows) * 3)
        kinds = kinds.reshape(len(flows), 3).astype(np.int64)
        for col in ("rott", "iat"):
            stats = _flow_statistics(at, a[col].to_numpy(np.float64), len(flows))
            for k, name in enumerate(("mean", "p50", "p95", "max")):
                out[f"{col}_{name}_ms"] = stats[:, k] * 1e3
        out["reordered"] = kinds[:, ARRIVAL_KIND.categories.get_loc(KIND_LATE)]
        out["duplicates"] = kinds[:, ARRIVAL_KIND.categories.get_loc(KIND_DUPLICATE)]
        return pd.DataFrame(out)

    def per_packet(self) -> pd.DataFrame:
        """Every data packet (sent order) with its timeline columns and fate: the export (at the
        sender, no packet has arrival columns: the arrivals are ACKs).
        ``owd`` is missing (NaN, with a warning) unless the send and receive times are on one
        clock (:attr:`clock_common`): across two clocks with no common origin it is the distance
        between the origins, not a delay. ``rott``, the delay above the flow's least, is there
        either way."""
        cols = ["uid", "owd", "rott", "iat", "jitter", "jitter_rfc3550", "kind"]
        # a sender's arrivals are ACKs (their uids: rows of the ACK stream), none a packet's
        arrived = self.arrivals[cols]
        if self.view != RECEIVER:
            receivers = [flow for flow, view in self.flow_views.items() if view == RECEIVER]
            arrived = arrived[label_positions(self.arrivals["flow"], receivers) >= 0]
        out = self.packets.merge(arrived, on="uid", how="left")
        if not self.clock_common and out["owd"].notna().any():
            clocks = {"separate": "separate clocks", "skew-removed": "separate clocks (skew removed)"}
            warnings.warn(
                f"{self.meta.get('path', 'timeline')}: owd left empty: the send and receive times are on "
                f"{clocks.get(str(self.meta.get('clock')), 'clocks not known to be one')}, without a common origin; "
                "rott, the delay above each flow's least, is there",
                stacklevel=2,
            )
            out["owd"] = np.nan
        gap_cols = self.losses[["uid", "gap", "n", "t_detect"]]
        out = out.merge(gap_cols, on="uid", how="left")
        out["gap"] = out["gap"].fillna(-1).astype(np.int64)
        out["n"] = out["n"].fillna(0).astype(np.int64)
        return out


def _flow_statistics(at: np.ndarray, values: np.ndarray, n_flows: int) -> np.ndarray:
    """Mean, median, 95th percentile (linear, as pandas and numpy interpolate) and maximum of
    ``values`` per flow (``at``: each row's flow, -1 none; a flow's rows in one run, as
    arrivals are), NaN left out; a row of NaN for a flow without a number."""
    out = np.full((n_flows, 4), np.nan)
    starts = np.flatnonzero(np.diff(at, prepend=-2))
    if np.unique(at[starts]).size != starts.size:  # a flow in several runs: gather them
        order = np.argsort(at, kind="stable")
        at, values = at[order], values[order]
        starts = np.flatnonzero(np.diff(at, prepend=-2))
    for start, end in zip(starts, np.append(starts[1:], at.shape[0])):
        x = values[start:end]
        missing = np.isnan(x)
        if missing.any():  # else the flow's slice as it is: no copy of millions of values
            x = x[~missing]
        if at[start] >= 0 and x.size:
            out[at[start]] = (x.mean(), *np.percentile(x, [50, 95]), x.max())
    return out


@njit(cache=True)
def rfc3550_jitter(abs_d: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """J_i = J_{i-1} + (|D_i| − J_{i-1}) / 16 per segment; J = 0 at each segment's start.

    ``abs_d[i]`` is |D| between arrival i−1 and i; ``starts`` flags the first arrival of a
    flow, where J restarts at 0 and ``abs_d`` is ignored.
    """
    out = np.empty(abs_d.shape[0])
    j = 0.0
    for i in range(abs_d.shape[0]):
        if starts[i]:
            j = 0.0
        else:
            j += (abs_d[i] - j) / 16.0
        out[i] = j
    return out


def build_timeline(source: Trace | pd.DataFrame, *, seq_modulus: int | None = None) -> Timeline:
    """Build the per-flow timeline of a trace (or a bare PacketTable).

    A Trace also lends its RTT samples and metadata (``meta['clock']``: ``"common"`` when both
    ends share a clock, as in ns-2); a bare PacketTable has neither. A sender's view
    (``trace.view == "sender"``) gives the sender's timeline (``sender_timeline``): its ACK
    samples as arrivals, its loss detections as gaps. A trace whose flows were read in different
    views (``"mixed"``, each flow's in ``meta["flows"][flow]["view"]``) gives each flow's in its
    own view, joined (``meta["flow_views"]``).
    """
    if isinstance(source, Trace) and source.view == "mixed":
        return _mixed_timeline(source, seq_modulus)
    if isinstance(source, Trace) and source.view != "receiver":
        return _sender_timeline(source, seq_modulus)
    packets = source.packets if isinstance(source, Trace) else source
    rtt = source.rtt if isinstance(source, Trace) else empty_rtt()
    meta = {**source.meta, "path": source.path} if isinstance(source, Trace) else {}
    packets = packets.reset_index(drop=True)
    if seq_modulus is not None:
        packets = packets.copy()
        order = packets.sort_values(["flow", "t_send", "uid"], kind="stable").index
        unwrapped = np.empty(len(packets), np.int64)
        for _, idx in packets.loc[order].groupby("flow", sort=False).groups.items():
            unwrapped[idx] = unwrap_sequence(packets.loc[idx, "seq"].to_numpy(), seq_modulus)
        packets["seq"] = unwrapped
    first_seq = packets.groupby("flow")["seq"].min()
    arrivals, prev_in_order = _arrivals(packets)
    gaps = _gaps(arrivals, first_seq, prev_in_order)
    losses = _losses(packets, gaps)
    gaps["n_lost"] = losses[losses["gap"] >= 0].groupby("gap").size().reindex(gaps["gap"], fill_value=0).to_numpy()
    return Timeline(arrivals=arrivals, gaps=gaps, losses=losses, packets=packets, rtt=rtt, meta=meta)


def _sender_timeline(trace: Trace, seq_modulus: int | None) -> Timeline:
    """The sender's view as a Timeline (``sender_timeline``'s docstring; ``docs/ldas.md``, "The
    sender's view"): the arrival columns of the ACK samples, computed as a receiver's are."""
    if trace.view != "sender":
        raise UsageError(f"{trace.path}: a trace in an unknown view {trace.view!r} (receiver, sender or mixed)")
    if seq_modulus is not None:
        raise UsageError(
            f"{trace.path}: a sender's view numbers segments and packets without wrapping: no sequence modulus"
        )
    samples = ack_samples(trace)
    arrivals, _ = _arrivals(samples)
    at = np.searchsorted(samples["uid"].to_numpy(), arrivals["uid"].to_numpy())  # uids: the ACKs' rows, rising
    for name in SAMPLE_COLUMNS:
        arrivals[name] = samples[name].to_numpy()[at]
    gaps, losses = detections(arrivals, trace.packets)
    meta = {**trace.meta, "path": trace.path, "view": "sender", "spurious_losses": spurious_losses(trace.packets)}
    return Timeline(
        arrivals=arrivals,
        gaps=gaps,
        losses=losses,
        packets=trace.packets.reset_index(drop=True),
        rtt=sample_rtt(arrivals),
        meta=meta,
    )


def flow_views(trace: Trace) -> dict[str, str]:
    """Each flow's view in a mixed trace (``meta["flows"][flow]["view"]``; receiver if not said)."""
    said = trace.meta.get("flows") or {}
    views = {flow: str((said.get(flow) or {}).get("view", RECEIVER)) for flow in trace.flows}
    unknown = sorted({view for view in views.values() if view not in (RECEIVER, SENDER)})
    if unknown:
        raise UsageError(
            f"{trace.path}: flow view(s) {', '.join(unknown)}: a flow is read as its receiver's or sender's"
        )
    return views


def _mixed_timeline(trace: Trace, seq_modulus: int | None) -> Timeline:
    """Each flow's timeline in its own view, joined as one: arrivals by flow (each flow's
    as its view gives them), gaps in arrival order, losses by flow and send time; the arrival and
    gap indices renumbered to match."""
    views = flow_views(trace)
    parts = []
    for view in (RECEIVER, SENDER):
        mine = [flow for flow, its in views.items() if its == view]
        if mine:
            tables = {name: _rows_of(getattr(trace, name), mine) for name in ("packets", "rtt", "acks")}
            subset = dataclasses.replace(trace, **tables, meta={**trace.meta, "view": view})
            parts.append(build_timeline(subset, seq_modulus=seq_modulus if view == RECEIVER else None))
    arrivals = pd.concat([part.arrivals for part in parts], ignore_index=True)
    order = np.argsort(flow_codes(arrivals["flow"]), kind="stable")  # each part by flow and time already
    position = np.empty(order.size, np.int64)
    position[order] = np.arange(order.size)
    gaps, losses = [], []
    arrival_base = gap_base = 0
    for part in parts:
        at = {
            name: _renumbered(part.gaps[name].to_numpy(), position, arrival_base)
            for name in ("arrival", "prev_arrival")
        }
        gaps.append(part.gaps.assign(**at, gap=part.gaps["gap"] + gap_base))
        gap = part.losses["gap"].to_numpy()
        losses.append(part.losses.assign(gap=np.where(gap >= 0, gap + gap_base, -1)))
        arrival_base += len(part.arrivals)
        gap_base += len(part.gaps)
    gaps_joined = pd.concat(gaps, ignore_index=True)
    by_arrival = np.argsort(gaps_joined["arrival"].to_numpy(), kind="stable")
    new_gap = np.empty(by_arrival.size, np.int64)
    new_gap[by_arrival] = np.arange(by_arrival.size)
    gaps_joined = gaps_joined.take(by_arrival).reset_index(drop=True).assign(gap=np.arange(by_arrival.size))
    losses_joined = pd.concat(losses, ignore_index=True)
    losses_joined["gap"] = _renumbered(losses_joined["gap"].to_numpy(), new_gap, 0)
    loss_order = np.lexsort(
        (losses_joined["uid"].to_numpy(), losses_joined["t_send"].to_numpy(), flow_codes(losses_joined["flow"]))
    )
    meta = {**trace.meta, "path": trace.path, "view": "mixed", "flow_views": views}
    meta["spurious_losses"] = spurious_losses(trace.packets)
    return Timeline(
        arrivals=arrivals.take(order).reset_index(drop=True),
        gaps=gaps_joined,
        losses=losses_joined.take(loss_order).reset_index(drop=True),
        packets=trace.packets.reset_index(drop=True),
        rtt=pd.concat([part.rtt for part in parts], ignore_index=True),
        meta=meta,
    )


def _rows_of(table: pd.DataFrame, flows: list[str]) -> pd.DataFrame:
    """The rows of ``table`` whose flow is one of ``flows``."""
    return table[table["flow"].astype(str).isin(flows).to_numpy()].reset_index(drop=True)


def _renumbered(index: np.ndarray, position: np.ndarray, base: int) -> np.ndarray:
    """Row numbers of a part (-1: none) as ``position`` renumbers the joined rows, the part's
    first at ``base``."""
    return np.where(index >= 0, position[np.maximum(index, 0) + base], -1)


def _arrivals(packets: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The delivered rows in arrival order with their timeline columns (module docstring),
    and each one's ``prev_in_order`` (see ``order_state``).

    Array code over the flows' integer codes: the rows of a flow are contiguous once sorted,
    so per-flow minima and differences need no grouping (pandas groupby on two million rows
    cost most of a capture's ``inspect``)."""
    delivered = np.flatnonzero((packets["fate"] == DELIVERED).to_numpy())
    codes = flow_codes(packets["flow"])[delivered]
    t_recv = packets["t_recv"].to_numpy()[delivered]
    uid = packets["uid"].to_numpy()[delivered]
    order = sorting_order(codes, t_recv, uid)
    rows = delivered if order is None else delivered[order]
    if order is not None:
        codes, t_recv = codes[order], t_recv[order]
    a = {"flow": packets["flow"].take(rows).reset_index(drop=True)}
    for column in ("seq", "tx", "uid", "size", "t_send", *_air_columns(packets)):
        a[column] = packets[column].to_numpy()[rows]
    a["t_recv"] = t_recv
    n = rows.shape[0]
    starts = np.ones(n, bool)
    starts[1:] = codes[1:] != codes[:-1]
    first = np.flatnonzero(starts)
    t_send = a["t_send"]
    owd = t_recv - t_send
    a["owd"] = owd
    a["rott"] = owd - np.repeat(np.minimum.reduceat(owd, first), np.diff(np.append(first, n))) if n else owd
    d_recv = np.diff(t_recv, prepend=np.nan)
    d_send = np.diff(t_send, prepend=np.nan)
    d_recv[starts], d_send[starts] = np.nan, np.nan
    a["iat"] = d_recv
    a["jitter"] = d_recv - d_send
    a["jitter_rfc3550"] = pick(rfc3550_jitter, n * 1e-6)(np.abs(a["jitter"]), starts)
    seq = a["seq"]
    hi_before, prev_in_order = call(order_state, seq, starts)
    in_order = ~(seq <= hi_before)  # NaN (first arrival) compares False: in order
    kind = np.where(in_order, 0, 1).astype(np.int8)
    kind[_repeated(codes, seq, ~in_order)] = 2
    a["kind"] = pd.Categorical.from_codes(kind, dtype=ARRIVAL_KIND)
    a["hi_before"] = hi_before
    return pd.DataFrame(a, copy=False), prev_in_order  # the arrays made here, taken as they are


def _air_columns(packets: pd.DataFrame) -> list[str]:
    """The radio's evidence the PacketTable has (``packets.AIR_COLUMNS``): kept per arrival and loss."""
    return [name for name in AIR_COLUMNS if name in packets.columns]


@njit(cache=True)
def order_state(seq: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per arrival, within its flow (``starts`` flags each flow's first arrival): the highest
    sequence number received before it (NaN at the first), and the row of the last arrival
    before it that was in order, i.e. above everything before it (-1 if none)."""
    n = seq.shape[0]
    hi_before = np.empty(n)
    prev_in_order = np.empty(n, np.int64)
    hi = 0
    last = -1
    for i in range(n):
        if starts[i]:
            hi_before[i] = np.nan
            prev_in_order[i] = -1
            hi = seq[i]
            last = i
            continue
        hi_before[i] = hi
        prev_in_order[i] = last
        if seq[i] > hi:
            hi = seq[i]
            last = i
    return hi_before, prev_in_order


def _repeated(codes: np.ndarray, seq: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Rows whose (flow, seq) an earlier row already had. Only ``candidates`` (the arrivals
    not in order) can be such rows, so only the rows sharing a sequence number with one of
    them are compared."""
    out = np.zeros(seq.shape[0], bool)
    if not candidates.any():
        return out
    shared = np.flatnonzero(np.isin(seq, np.unique(seq[candidates])))
    out[shared] = pd.DataFrame({"flow": codes[shared], "seq": seq[shared]}).duplicated().to_numpy()
    return out


def _gaps(arrivals: pd.DataFrame, first_seq: pd.Series, prev_in_order: np.ndarray) -> pd.DataFrame:
    a = arrivals
    flow = a["flow"]
    codes = flow_codes(flow)
    starts = np.ones(len(a), bool)
    starts[1:] = codes[1:] != codes[:-1]
    hi_before = a["hi_before"].to_numpy().copy()
    hi_before[starts] = first_seq.reindex(flow.iloc[np.flatnonzero(starts)]).to_numpy() - 1
    seq = a["seq"].to_numpy()
    is_gap = (a["kind"] == KIND_IN_ORDER).to_numpy() & (seq > hi_before + 1)
    rows = np.flatnonzero(is_gap)
    # P_i is the last in-order arrival before the gap's revealing one (it set hi_before)
    prev_i = prev_in_order[rows]
    has_prev = prev_i >= 0
    prev_i = np.maximum(prev_i, 0)

    def before(column: str) -> np.ndarray:
        values = a[column].to_numpy(np.float64)[prev_i]
        return np.where(has_prev, values, np.nan)

    gaps = pd.DataFrame(
        {
            "flow": flow.take(rows).reset_index(drop=True),
            "gap": np.arange(rows.size, dtype=np.int64),
            "first_seq": (hi_before[rows] + 1).astype(np.int64),
            "n": (seq[rows] - hi_before[rows] - 1).astype(np.int64),
            "prev_seq": before("seq"),
            "next_seq": seq[rows],
            "t_prev_send": before("t_send"),
            "t_prev_recv": before("t_recv"),
            "t_next_send": a["t_send"].to_numpy()[rows],
            "t_next_recv": a["t_recv"].to_numpy()[rows],
            "t_detect": a["t_recv"].to_numpy()[rows],
            "arrival": rows.astype(np.int64),
            "prev_arrival": np.where(has_prev, prev_i, -1).astype(np.int64),
        }
    )
    return gaps


def _losses(packets: pd.DataFrame, gaps: pd.DataFrame) -> pd.DataFrame:
    """The lost transmissions by flow, send time and uid, each charged to the gap that holds
    it (array code on the flows' codes, not a pandas sort, duplicate search and groupby:
    docs/design.md)."""
    fate = packets["fate"]
    lost_codes = [fate.cat.categories.get_loc(name) for name in LOSS_FATES if name in fate.cat.categories]
    rows = np.flatnonzero(np.isin(fate.cat.codes.to_numpy(), lost_codes))
    flow = packets["flow"]
    if not isinstance(flow.dtype, pd.CategoricalDtype):
        flow = flow.astype("category")  # codes in the labels' sort order, as sort_values sorts them
    code = flow.cat.codes.to_numpy()[rows]
    order = np.lexsort((packets["uid"].to_numpy()[rows], packets["t_send"].to_numpy()[rows], code))  # stable
    rows, code = rows[order], code[order]
    out = {
        "flow": pd.Categorical.from_codes(code, dtype=flow.dtype),  # as arrivals and gaps have it
        **{name: packets[name].to_numpy()[rows] for name in ("seq", "tx", "uid", "t_send", "t_drop")},
        **{name: packets[name].to_numpy()[rows] for name in _air_columns(packets)},
        "cause": np.asarray(fate.cat.categories.astype(str), dtype=object)[fate.cat.codes.to_numpy()[rows]],
        "reason": packets["reason"].take(rows).to_numpy(),
    }
    gap_row = _gap_containing(
        code,
        out["seq"],
        pd.Categorical(gaps["flow"], dtype=flow.dtype).codes,
        gaps["first_seq"].to_numpy(),
        gaps["next_seq"].to_numpy(),
    )
    # a sequence number is charged once, to its first lost transmission in the gap
    held = np.flatnonzero(gap_row >= 0)
    by_number = held[np.lexsort((out["seq"][held], gap_row[held]))]  # stable: first transmission first
    first = np.ones(len(by_number), bool)
    first[1:] = (gap_row[by_number[1:]] != gap_row[by_number[:-1]]) | (
        out["seq"][by_number[1:]] != out["seq"][by_number[:-1]]
    )
    charged = np.zeros(len(rows), bool)
    charged[by_number[first]] = True
    take = np.where(charged, gap_row, 0)

    def of_gap(column: str, none) -> np.ndarray:
        values = gaps[column].to_numpy()[take] if len(gaps) else np.full(len(rows), none)
        return np.where(charged, values, none)

    out["gap"], out["n"] = of_gap("gap", -1), of_gap("n", 0)
    for k in ("t_prev_recv", "t_next_recv", "t_detect"):
        out[k] = of_gap(k, np.nan)
    out["detected"] = charged
    return pd.DataFrame(out)


def _gap_containing(
    code: np.ndarray, seq: np.ndarray, gap_code: np.ndarray, first: np.ndarray, next_seq: np.ndarray
) -> np.ndarray:
    """Row of the gaps (flow ``gap_code``, sequence numbers ``first`` to ``next_seq`` − 1; by
    flow, then increasing) that holds each lost packet (flow ``code``, ``seq``), or -1: one
    search over integer keys (flow, rank of the sequence number)."""
    if not len(code) or not len(gap_code):
        return np.full(len(code), -1, np.int64)
    ranks = np.unique(np.concatenate([first, seq]))
    gap_key = gap_code.astype(np.int64) * len(ranks) + np.searchsorted(ranks, first)
    rows = np.arange(len(gap_key)) if (np.diff(gap_key) > 0).all() else np.argsort(gap_key, kind="stable")
    key = code.astype(np.int64) * len(ranks) + np.searchsorted(ranks, seq)
    k = np.searchsorted(gap_key[rows], key, side="right") - 1
    at = rows[np.maximum(k, 0)]
    return np.where((k >= 0) & (gap_code[at] == code) & (seq < next_seq[at]), at, -1).astype(np.int64)
