"""ns-2 wired traces (``$ns trace-all``), plain or gzip, with ground truth for every drop.

Line format (ns-2 manual, "Trace and Monitoring Support")::

    ev time from to ptype size flags fid src.port dst.port seqno uid

``ev`` is ``+`` (enqueued at link from→to), ``-`` (dequeued), ``r`` (received at ``to``) or
``d`` (dropped). One data packet is one ``uid``; a TCP retransmission keeps its seqno and gets
a new uid, so every transmission is its own row in the PacketTable.

Ground truth, for a ``d`` of a packet on link L (checked on real ns-2.35 runs, see
``traces/README.md``): the packet's previous event on the same link L decides.

* ``+`` (enqueued, never dequeued) → **congestion**: the queue dropped it (``reason=queue``).
* ``-`` (dequeued, i.e. transmitted) → **wireless**: an error model after the queue, as
  ``$ns link-lossmodel`` installs it, lost it (``reason=link-error``).
* no earlier event on L → **wireless**: an error model before the queue, as ``$ns lossmodel``
  installs it (``reason=ingress-error``).
* an explicit error-drop letter (``error_events``, default ``e``) → **wireless**.
* ``r`` on L → **lost**, cause unknown (``reason=after-receive``): no ns-2 component does this.

A packet neither received nor dropped is **lost** (``reason=vanished``: e.g. dropped by an
untraced error model) when a later packet of its flow was delivered, and **unobserved** (in
flight when the trace ends) otherwise.

Send time is the packet's first event on a link leaving its source node; receive time is its
``r`` at the destination node. Nodes are taken from the flat ``node.port`` addresses.

Parsing uses pyarrow's CSV reader with an explicit schema (``src.port``/``dst.port`` read as
strings: inference would turn "1.10" into the float 1.1), one bounded block at a time; one
numba kernel walks the data-packet events and keeps per-uid state.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from numba import njit

from ... import threads
from ...errors import TraceError, TraceWarning, UsageError
from ...packets import (
    CONGESTION,
    DELIVERED,
    FATE_DTYPE,
    FATES,
    LOST,
    UNOBSERVED,
    WIRELESS,
    Trace,
    empty_rtt,
    make_packet_table,
    mark_vanished,
    rtt_from_feedback,
)
from ...tiering import call, preload
from ..detect import NS2_WIRELESS, line_format
from ..text import iter_blocks, locate_row
from . import LAST_TIME_S, TIME_RANGE, select_flows, types_per_flow
from .sender import sender_view

DATA_TYPES = ("tcpFriend", "cbr", "udp", "tcp", "exp", "pareto", "rtp", "Traffic", "data")
FEEDBACK_TYPES = ("tcpFriendCtl", "ack", "rtcp")
FLOW_BY = ("auto", "fid", "addr")
VIEWS = ("receiver", "sender")

COLUMN_NAMES = ["ev", "time", "frm", "to", "ptype", "size", "flags", "fid", "src", "dst", "seq", "uid"]
_DICT = pa.dictionary(pa.int32(), pa.string())
_SCHEMA = {
    "ev": _DICT,
    "time": pa.float64(),
    "frm": pa.int32(),
    "to": pa.int32(),
    "ptype": _DICT,
    "size": pa.int64(),
    "fid": pa.int64(),
    "src": pa.string(),  # strings: "1.10" must not become the float 1.1
    "dst": pa.string(),
    "seq": pa.int64(),
    "uid": pa.int64(),
}
_FIELD_CHECKS = {"time": float, "frm": int, "to": int, "size": int, "fid": int, "seq": int, "uid": int}

BLOCK_BYTES = 32 << 20  # small enough to pipeline parsing with folding
LINE_BYTES = 60  # about, in a wired trace: what a file's lines are estimated from
# pyarrow's batches within a block: two, parsed side by side; its default 1 MB made 32, each
# folded in with a dozen Python-level calls (5 M lines: 1.4 s read, 1.2 s with two)
BATCH_BYTES = BLOCK_BYTES // 2

# Event codes used by the kernel.
EV_ENQ, EV_DEQ, EV_RECV, EV_DROP, EV_ERROR = 0, 1, 2, 3, 4
_EVENT_LETTERS = {"+": EV_ENQ, "-": EV_DEQ, "r": EV_RECV, "d": EV_DROP}

# Cause codes written by the kernel (1..5 index _CAUSES in order).
C_NONE, C_QUEUE, C_LINK, C_INGRESS, C_EXPLICIT, C_AFTER_RECV = 0, 1, 2, 3, 4, 5
_CAUSES = {
    C_QUEUE: (CONGESTION, "queue"),
    C_LINK: (WIRELESS, "link-error"),
    C_INGRESS: (WIRELESS, "ingress-error"),
    C_EXPLICIT: (WIRELESS, "error-event"),
    C_AFTER_RECV: (LOST, "after-receive"),
}

# Columns of the per-uid integer state.
(S_SEQ, S_SIZE, S_FID, S_SRC, S_DST, S_SRC_NODE, S_DST_NODE, S_LAST_EV, S_LAST_FROM, S_LAST_TO, S_CAUSE, S_TYPE) = (
    range(12)
)
N_INT_STATE = 12
# Columns of the per-uid time state.
T_SEND, T_RECV, T_DROP = range(3)

# Kernel error codes.
E_UID_REUSED, E_AFTER_DROP = 1, 2
P_EVENT, P_TIME, P_BACKWARDS, P_UID = 1, 2, 3, 4
# Row classes by packet type.
ROW_OTHER, ROW_DATA, ROW_FEEDBACK = 0, 1, 2


@njit(cache=True)
def scan_rows(ev_idx, ev_map, pt_idx, pt_class, t, uid, last_time):
    """One pass over a block: event codes, row classes, the largest data uid, and the first
    invalid row with what is wrong with it (``-1, 0`` when all are valid)."""
    n = ev_idx.shape[0]
    ev = np.empty(n, np.int8)
    cls = np.empty(n, np.int8)
    max_uid = -1
    prev = last_time
    for i in range(n):
        e = ev_map[ev_idx[i]]
        if e < 0:
            return ev, cls, max_uid, i, P_EVENT
        ti = t[i]
        if not (ti >= 0.0 and ti <= LAST_TIME_S):
            return ev, cls, max_uid, i, P_TIME
        if ti < prev:
            return ev, cls, max_uid, i, P_BACKWARDS
        prev = ti
        ev[i] = e
        c = pt_class[pt_idx[i]]
        cls[i] = c
        if c == ROW_DATA:
            if uid[i] < 0:
                return ev, cls, max_uid, i, P_UID
            if uid[i] > max_uid:
                max_uid = uid[i]
    return ev, cls, max_uid, -1, 0


@njit(cache=True)
def first_sightings(uid, cls, seen):
    """Mark the uids of data rows as seen; return the rows where a uid first appears."""
    out = np.empty(uid.shape[0], np.int64)
    k = 0
    for i in range(uid.shape[0]):
        if cls[i] == ROW_DATA and seen[uid[i]] == 0:
            seen[uid[i]] = 1
            out[k] = i
            k += 1
    return out[:k]


@njit(cache=True)
def walk_events(ev, t, frm, to, uid, seq, cls, ints, times):
    """Fold the data-packet events of one block into the per-uid state.

    Static attributes (seq, size, fid, addresses, nodes) were stored at the uid's first
    sighting. Returns ``(row, code)`` of the first inconsistent event, or ``(-1, 0)``.
    """
    for i in range(ev.shape[0]):
        if cls[i] != ROW_DATA:
            continue
        u = uid[i]
        if ints[u, S_SEQ] != seq[i]:
            return i, E_UID_REUSED
        if ints[u, S_CAUSE] != C_NONE:
            return i, E_AFTER_DROP
        e = ev[i]
        if np.isnan(times[u, T_SEND]) and frm[i] == ints[u, S_SRC_NODE]:
            times[u, T_SEND] = t[i]
        if e == EV_RECV:
            if to[i] == ints[u, S_DST_NODE] and np.isnan(times[u, T_RECV]):
                times[u, T_RECV] = t[i]
        elif e == EV_DROP or e == EV_ERROR:
            same_link = ints[u, S_LAST_FROM] == frm[i] and ints[u, S_LAST_TO] == to[i]
            if e == EV_ERROR:
                cause = C_EXPLICIT
            elif not same_link or ints[u, S_LAST_EV] < 0:
                cause = C_INGRESS
            elif ints[u, S_LAST_EV] == EV_ENQ:
                cause = C_QUEUE
            elif ints[u, S_LAST_EV] == EV_DEQ:
                cause = C_LINK
            else:
                cause = C_AFTER_RECV
            ints[u, S_CAUSE] = cause
            times[u, T_DROP] = t[i]
        ints[u, S_LAST_EV] = e
        ints[u, S_LAST_FROM] = frm[i]
        ints[u, S_LAST_TO] = to[i]
    return -1, 0


class _Interner:
    """Maps strings seen in any block to stable small integers."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.values: list[str] = []

    def codes(self, values: Iterable[str]) -> np.ndarray:
        out = []
        for v in values:
            code = self.ids.get(v)
            if code is None:
                code = self.ids[v] = len(self.values)
                self.values.append(v)
            out.append(code)
        return np.asarray(out, dtype=np.int64)


class _State:
    """Per-uid state arrays, grown geometrically as larger uids appear."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        self.seen = np.zeros(capacity, np.uint8)
        self.ints = np.zeros((capacity, N_INT_STATE), np.int64)
        self.times = np.full((capacity, 3), np.nan)

    def ensure(self, max_uid: int) -> None:
        cap = self.seen.shape[0]
        if max_uid < cap:
            return
        new = max(cap * 2, max_uid + 1)
        seen = np.zeros(new, np.uint8)
        seen[:cap] = self.seen
        ints = np.zeros((new, N_INT_STATE), np.int64)
        ints[:cap] = self.ints
        times = np.full((new, 3), np.nan)
        times[:cap] = self.times
        self.seen, self.ints, self.times = seen, ints, times


def read_ns2_wired(
    path: str | os.PathLike,
    *,
    data_types: Iterable[str] = DATA_TYPES,
    feedback_types: Iterable[str] = FEEDBACK_TYPES,
    flow_by: str = "auto",
    error_events: Iterable[str] = ("e",),
    flows: Iterable[str] | str | None = None,
    block_bytes: int = BLOCK_BYTES,
    view: str = "receiver",
) -> Trace:
    """Read an ns-2 wired trace into a :class:`~ldanalyze.packets.Trace`.

    ``data_types``/``feedback_types`` select packets by type; other types (routing, warm-up
    traffic you did not name) are counted in ``meta['ignored_types']``. ``flow_by`` is
    ``fid``, ``addr`` (source and destination address) or ``auto`` (fid unless one fid
    carries several address pairs). ``error_events`` are extra event letters that a script
    writes for error-model drops. ``flows`` picks the flows read (:func:`select_flows`: by
    default those under study, not background traffic). ``view``: ``receiver`` (the flows as
    their receivers saw them, with the truth) or ``sender`` (as their TCP sources saw them, with
    the truth: ``ns2.sender``). Memory grows with the number of packets, not of lines:
    the file is parsed ``block_bytes`` at a time.
    """
    if flow_by not in FLOW_BY:
        raise UsageError(f"flow_by must be one of {FLOW_BY}, not {flow_by!r}")
    if view not in VIEWS:
        raise UsageError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    data_types, feedback_types = set(data_types), set(feedback_types)
    letters = dict(_EVENT_LETTERS)
    letters.update({e: EV_ERROR for e in error_events})
    reader = _WiredReader(path, data_types, feedback_types, letters, view)
    blocks = iter_blocks(path, block_bytes)
    if not threads.may_spread():  # a pool's worker: its siblings keep the other cores busy
        for block, offset in blocks:
            reader.add_table(reader.parse(block, offset), offset)
        return _tcp_at_its_source(select_flows(*reader.finish(flow_by), flows), view)
    # parse block k+1 on a worker thread while block k is folded in (pyarrow releases the
    # GIL); at most two blocks are in memory at once
    with ThreadPoolExecutor(max_workers=1) as pool:
        previous = None
        for block, offset in blocks:
            parsing = pool.submit(reader.parse, block, offset)
            if previous is None:  # the kernels load while the first block parses
                preload((scan_rows, first_sightings, walk_events), os.path.getsize(path) / LINE_BYTES * 1e-6)
            if previous is not None:
                reader.add_table(previous[0].result(), previous[1])
            previous = (parsing, offset)
        if previous is not None:
            reader.add_table(previous[0].result(), previous[1])
    return _tcp_at_its_source(select_flows(*reader.finish(flow_by), flows), view)


def _tcp_at_its_source(trace: Trace, view: str) -> Trace:
    """``trace``; read at the sources (``view="sender"``), only if its flows are TCP's: another
    transport's feedback (TFRC's reports) is no cumulative ACK, and CBR has none."""
    if view == "sender":
        types = trace.meta["flow_types"]
        other = [flow for flow in trace.flows if set(types.get(flow, ())) - {"tcp"}]
        if other:
            shown = ", ".join(f"{flow} ({'/'.join(types[flow])})" for flow in other[:5])
            raise UsageError(
                f"{trace.path}: view='sender' reads TCP flows at their source; not TCP: {shown} "
                "(pick the TCP flows with flows=...)"
            )
    return trace


class _WiredReader:
    def __init__(self, path, data_types, feedback_types, letters, view) -> None:
        self.path = os.fspath(path)
        self.view = view
        self.data_types = data_types
        self.feedback_types = feedback_types
        self.letters = letters
        self.state = _State()
        self.addresses = _Interner()
        self.types = _Interner()
        self.address_node: list[int] = []
        self.type_counts: dict[str, int] = {}
        self.feedback: list[dict[str, np.ndarray]] = []
        self.lines = 0
        self.last_time = -np.inf

    # -- one block ---------------------------------------------------------------------
    def add_table(self, table: pa.Table, offset: int) -> None:
        """Fold in one parsed block, one record batch at a time (zero-copy arrays)."""
        first_row = 0
        for batch in table.to_batches():
            self._add_batch(batch, offset, first_row)
            first_row += batch.num_rows

    def _add_batch(self, table: pa.RecordBatch, offset: int, first_row: int) -> None:
        n = table.num_rows
        if n == 0:
            return
        self.lines += n

        def fail(row: int, message: str):
            line, text = locate_row(self.path, offset, first_row + int(row))
            raise TraceError(self.path, message, line=line, text=text)

        ev_idx, ev_dict = _dict_column(table, "ev")
        ev_map = np.array([self.letters.get(v, -1) for v in ev_dict], dtype=np.int8)
        pt_idx, pt_dict = _dict_column(table, "ptype")
        counts = np.bincount(pt_idx, minlength=len(pt_dict))
        for name, c in zip(pt_dict, counts):
            self.type_counts[name] = self.type_counts.get(name, 0) + int(c)
        pt_class = np.array(
            [
                ROW_DATA if v in self.data_types else ROW_FEEDBACK if v in self.feedback_types else ROW_OTHER
                for v in pt_dict
            ],
            dtype=np.int8,
        )
        t = table.column("time").to_numpy()
        uid = table.column("uid").to_numpy()
        ev, cls, max_uid, bad_row, problem = call(
            scan_rows, ev_idx, ev_map, pt_idx, pt_class, t, uid, self.last_time, us_per_item=0.6
        )
        if bad_row >= 0:
            fail(
                bad_row,
                {
                    P_EVENT: f"unknown event letter {ev_dict[int(ev_idx[bad_row])]!r} "
                    f"(expected one of {', '.join(sorted(self.letters))})",
                    P_TIME: f"time is not {TIME_RANGE}",
                    P_BACKWARDS: "time goes backwards (an ns-2 trace is in time order)",
                    P_UID: "negative uid",
                }[problem],
            )
        self.last_time = t[-1]

        frm = table.column("frm").to_numpy()
        to = table.column("to").to_numpy()
        seq = table.column("seq").to_numpy()
        if max_uid >= 0:
            self.state.ensure(int(max_uid))
            new_rows = call(first_sightings, uid, cls, self.state.seen, us_per_item=0.3)
            self._first_sightings(table, new_rows, uid[new_rows], fail)
            bad_row, code = call(
                walk_events, ev, t, frm, to, uid, seq, cls, self.state.ints, self.state.times, us_per_item=1.0
            )
            if bad_row >= 0:
                fail(
                    bad_row,
                    {
                        E_UID_REUSED: "uid reappears with a different seqno (uids must be unique per packet)",
                        E_AFTER_DROP: "event for a packet after it was dropped",
                    }[code],
                )

        fb = np.flatnonzero((cls == ROW_FEEDBACK) & (ev == EV_RECV))
        if fb.size:
            src, _ = self._addresses(table, "src", fb, fail)
            dst, dst_node = self._addresses(table, "dst", fb, fail)
            at_dst = to[fb] == dst_node
            self.feedback.append({"t": t[fb][at_dst], "src": src[at_dst], "dst": dst[at_dst], "seq": seq[fb][at_dst]})

    def _first_sightings(self, table: pa.RecordBatch, rows: np.ndarray, uids: np.ndarray, fail) -> None:
        """Store the static attributes of newly seen uids (one row each)."""
        src, src_node = self._addresses(table, "src", rows, fail)
        dst, dst_node = self._addresses(table, "dst", rows, fail)
        ints = self.state.ints
        ints[uids, S_SEQ] = table.column("seq").to_numpy()[rows]
        ints[uids, S_SIZE] = table.column("size").to_numpy()[rows]
        ints[uids, S_FID] = table.column("fid").to_numpy()[rows]
        ints[uids, S_SRC], ints[uids, S_DST] = src, dst
        ints[uids, S_SRC_NODE], ints[uids, S_DST_NODE] = src_node, dst_node
        ints[uids, S_LAST_EV] = -1
        type_idx, type_names = _dict_column(table, "ptype")
        ints[uids, S_TYPE] = self.types.codes(type_names)[type_idx[rows]]

    def _addresses(self, table: pa.RecordBatch, column: str, rows: np.ndarray, fail):
        """Address codes and node ids of the given rows (flat ``node.port`` addresses)."""
        encoded = pc.dictionary_encode(table.column(column).take(pa.array(rows)))
        codes = self.addresses.codes(encoded.dictionary.to_pylist())
        while len(self.address_node) < len(self.addresses.values):
            addr = self.addresses.values[len(self.address_node)]
            node, _, port = addr.partition(".")
            if not (node.isdigit() and port.isdigit()):
                local = codes.tolist().index(len(self.address_node))
                at = int(np.argmax(encoded.indices.to_numpy(zero_copy_only=False) == local))
                fail(
                    rows[at],
                    f"address {addr!r} is not a flat 'node.port' address (hierarchical addressing is not supported)",
                )
            self.address_node.append(int(node))
        idx = codes[encoded.indices.to_numpy(zero_copy_only=False)]
        return idx, np.asarray(self.address_node, dtype=np.int64)[idx]

    def parse(self, block, offset: int) -> pa.Table:
        try:
            table = pacsv.read_csv(
                pa.py_buffer(block),
                read_options=pacsv.ReadOptions(column_names=COLUMN_NAMES, block_size=BATCH_BYTES),
                parse_options=pacsv.ParseOptions(delimiter=" "),
                convert_options=pacsv.ConvertOptions(
                    column_types=_SCHEMA,
                    include_columns=[c for c in COLUMN_NAMES if c != "flags"],
                    null_values=[],  # "nan", "NULL", "" are values to check, not missing ones
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
        except pa.ArrowInvalid as exc:
            self._explain_parse_error(block, offset, exc)
            raise  # unreachable: _explain_parse_error always raises
        return table.unify_dictionaries()

    def _explain_parse_error(self, block, offset: int, exc: Exception) -> None:
        """Find the offending line with a plain scan (only on the error path)."""
        for line_no, text in _block_lines(self.path, offset, bytes(block)):
            fields = text.split(" ")
            problem = None
            if len(fields) != len(COLUMN_NAMES):
                problem = (
                    f"expected {len(COLUMN_NAMES)} space-separated fields "
                    "(ev time from to type size flags fid src.port dst.port seqno uid), "
                    f"got {len(fields)}"
                )
                if line_format(text) in NS2_WIRELESS:
                    problem += "; this looks like an ns-2 wireless trace, not the wired format"
            else:
                for name, kind in _FIELD_CHECKS.items():
                    value = fields[COLUMN_NAMES.index(name)]
                    try:
                        kind(value)
                    except ValueError:
                        problem = f"field '{name}' is not a valid {kind.__name__}: {value!r}"
                        break
            if problem:
                raise TraceError(self.path, problem, line=line_no, text=text)
        raise TraceError(self.path, f"cannot parse as an ns-2 wired trace: {exc}", offset=offset)

    # -- after the last block ------------------------------------------------------------
    def finish(self, flow_by: str) -> tuple[Trace, dict[str, set[str]]]:
        """The trace of every flow, and each flow's packet types."""
        if self.lines == 0:
            raise TraceError(self.path, "the trace is empty")
        ints, times = self.state.ints, self.state.times
        uids = np.flatnonzero(self.state.seen)
        if uids.size == 0:
            seen = ", ".join(f"{k} ({v})" for k, v in sorted(self.type_counts.items()))
            raise TraceError(
                self.path,
                f"no data packets: none of the packet types {sorted(self.data_types)} occurs "
                f"(types seen: {seen}); name the data types to use",
            )
        st, tm = ints[uids], times[uids]
        flow, pairs = self._flows(st[:, S_FID], st[:, S_SRC], st[:, S_DST], flow_by)

        # fate and reason as categorical codes: no per-packet strings
        cause = st[:, S_CAUSE]
        fate_of = np.full(len(_CAUSES) + 1, FATES.index(UNOBSERVED), np.int8)
        reasons = [""] + [why for _, why in _CAUSES.values()]
        for code, (fate_name, _) in _CAUSES.items():
            fate_of[code] = FATES.index(fate_name)
        delivered = np.isfinite(tm[:, T_RECV])
        if not delivered.any() and np.isnan(tm[:, T_SEND]).all():
            raise TraceError(
                self.path,
                "only drop events ('d'), no packet sent or received: an error model's drop "
                "trace (such as the bundled *.em.gz), not a trace of packets; give the "
                "full trace ($ns trace-all)",
            )
        fate = np.where(delivered, FATES.index(DELIVERED), fate_of[cause])
        reason = np.where(delivered, 0, cause)
        fate = pd.Categorical.from_codes(fate, dtype=FATE_DTYPE)
        reason = pd.Categorical.from_codes(reason, categories=reasons)
        t_send = tm[:, T_SEND]
        # a packet dropped before it left its source node has no send event on its own link
        t_send = np.where(np.isnan(t_send), tm[:, T_DROP], t_send)
        # one first seen past its source (a trace whose head was cut) has no send time at all
        sent = ~np.isnan(t_send)
        if not sent.all():
            warnings.warn(
                f"{self.path}: {int((~sent).sum())} data packet(s) appear without their enqueue at the "
                "source (the trace starts mid-run?); left out",
                TraceWarning,
                stacklevel=3,
            )

        flow_types = types_per_flow(flow[sent], st[sent, S_TYPE], self.types.values)
        packets = make_packet_table(
            flow=flow[sent],
            seq=st[sent, S_SEQ],
            uid=uids[sent],
            size=st[sent, S_SIZE],
            t_send=t_send[sent],
            t_recv=tm[sent, T_RECV],
            t_drop=tm[sent, T_DROP],
            fate=fate[sent],
            reason=reason[sent],
        )
        packets = mark_vanished(packets)
        feedback = self._feedback(pairs)
        rtt = rtt_from_feedback(packets, feedback) if len(feedback) else empty_rtt()
        meta = {
            "lines": self.lines,
            "data_types": sorted(t for t in self.type_counts if t in self.data_types),
            "feedback_types": sorted(t for t in self.type_counts if t in self.feedback_types),
            "ignored_types": {
                k: v
                for k, v in sorted(self.type_counts.items())
                if k not in self.data_types and k not in self.feedback_types
            },
            "flow_by": flow_by,
            "clock": "common",
            "no_send": int((~sent).sum()),
        }
        trace = Trace(packets=packets, rtt=rtt, path=self.path, format="ns2-wired", meta=meta)
        return (sender_view(trace, feedback) if self.view == "sender" else trace), flow_types

    def _flows(self, fid, src, dst, flow_by: str) -> tuple[pd.Categorical, dict[int, str]]:
        """Flow label per packet, and the flow of each (src, dst) address pair (keyed by
        ``src * addresses + dst``; the first flow seen, where several fids share a pair).

        Labels: ``"fid"``, ``"src>dst"``, or in ``auto`` mode the fid alone unless that fid
        carries several address pairs (then ``"fid:src>dst"`` for that fid). Computed once
        per distinct (fid, src, dst), not per packet.
        """
        n_addr = len(self.addresses.values)
        inverse, keys = pd.factorize((fid * n_addr + src) * n_addr + dst)
        combos = np.stack([keys // (n_addr * n_addr), keys // n_addr % n_addr, keys % n_addr], axis=1)
        addr = self.addresses.values
        fids, pair = combos[:, 0], [f"{addr[a]}>{addr[b]}" for a, b in combos[:, 1:]]
        fid_pairs = pd.Series(pair).groupby(fids).transform("nunique").to_numpy()
        labels = []
        for f, p, shared in zip(fids.tolist(), pair, fid_pairs > 1):
            if flow_by == "addr":
                labels.append(p)
            elif flow_by == "fid" or not shared:
                labels.append(str(f))
            else:
                labels.append(f"{f}:{p}")
        flow_ids, flow_labels = pd.factorize(np.asarray(labels, dtype=object))
        pairs: dict[int, str] = {}
        for (a, b), label in zip(combos[:, 1:].tolist(), labels):
            pairs.setdefault(a * n_addr + b, label)
        return pd.Categorical.from_codes(flow_ids[inverse], categories=flow_labels), pairs

    def _feedback(self, pairs: dict[int, str]) -> pd.DataFrame:
        """The feedback packets that reached their destination (flow, t, seq), each given the
        flow of the address pair it answers, looked up once per distinct pair."""
        if not self.feedback:
            return pd.DataFrame({"flow": pd.Series([], dtype=object), "t": [], "seq": pd.Series([], dtype=np.int64)})
        fb = {k: np.concatenate([f[k] for f in self.feedback]) for k in self.feedback[0]}
        # feedback runs from the data receiver back to the data sender
        answered = fb["dst"].astype(np.int64) * len(self.addresses.values) + fb["src"]
        keys, inverse = np.unique(answered, return_inverse=True)
        flow = np.array([pairs.get(int(k)) for k in keys], dtype=object)[inverse]
        known = pd.notna(flow)  # a pair no data flow took: not feedback of ours
        return pd.DataFrame({"flow": flow[known], "t": fb["t"][known], "seq": fb["seq"][known]})


def _block_lines(path: str, offset: int, block: bytes):
    """``(line number, text)`` of the non-empty lines of a block (error path only)."""
    first, _ = locate_row(path, offset, 0)
    for i, raw in enumerate(block.split(b"\n")):
        if raw not in (b"", b"\r"):
            yield first + i, raw.decode("utf-8", "replace").rstrip("\r")


def _dict_column(batch: pa.RecordBatch, name: str) -> tuple[np.ndarray, list[str]]:
    """Indices and dictionary of a dictionary-encoded column."""
    column = batch.column(name)
    return column.indices.to_numpy(zero_copy_only=False), column.dictionary.to_pylist()
