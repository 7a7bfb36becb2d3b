"""QUIC qlogs read into the sender's view: one row per packet an endpoint sent, its fate by the
ACK frames and loss declarations the same endpoint logged.

Formats, told apart by content (gzip too): the JSON of draft-marx-qlog-main-schema-00/01/02
(``qlog_version`` "draft-0x", traces with ``event_fields`` and events as arrays, names and
numbers sometimes strings, upper case in draft-00), the JSON of qlog 0.3/0.4 (events as
objects, ``name`` "transport:packet_sent"), the JSON-SEQ of qlog 0.3+ (RFC 7464 records, each
after a record separator 0x1E, possibly pretty-printed across lines; ``.sqlog``), the NDJSON of
draft-02 (quic-go 2020: a record per line), and the IETF drafts' names
(draft-ietf-quic-qlog-quic-events: ``quic:packet_sent``, ``quic:packet_lost``,
``quic:recovery_metrics_updated``; ``file_schema`` instead of ``qlog_version``).

The rules (RFC 9000 §12.3, RFC 9002 §5-6):

* Rows: the vantage endpoint's ``packet_sent`` events of the application data packet number
  space (0-RTT and 1-RTT share it, RFC 9000 §12.3); Initial and Handshake packets, in spaces of
  their own and a handful per connection, are counted in ``meta`` and left out, so ``seq`` is
  the packet number, unique in the flow, and ``tx`` is 0 (QUIC never sends a number twice).
  A packet whose type is not logged (quic-trace's conversions) is taken as application data.
* Flow: ``quic <ODCID> server>client`` (or ``client>server``, by the trace's vantage point; a
  network vantage reads as its ``flow`` endpoint), one flow per trace.
* ``t_send``: seconds; since the epoch where the qlog anchors its times there (``reference_time``,
  ``time_format``; aioquic logs epoch milliseconds), else from the trace's own origin
  (``meta['time']`` says which). pcap2qlog's ``reference_time`` in seconds in a trace of
  milliseconds (a value between 1e8 and 1e11) is read as seconds. A ``reference_time`` before
  2000 is a clock of the host's own (picoquic's CLOCK_MONOTONIC: its uptime), kept as the
  origin (both endpoints of one host share it) but not called the epoch's.
* Fate: acknowledged by an ACK frame of a received 1-RTT packet -> ``delivered`` (``t_ack``: the
  first ACK that covered it); declared lost (``packet_lost``: ``t_detect``, ``loss_trigger``
  from its trigger: reordering_threshold -> reordering, time_threshold -> time, pto_expired ->
  pto, else other) and never acknowledged -> ``lost``; declared lost and acknowledged afterwards
  -> ``delivered``, ``spurious`` "acked"; neither -> ``unobserved``.
* ``in_flight``: the bytes in flight as last logged (``metrics_updated``) before the packet was
  sent; -1 before any. ``chunk``: a new chunk after an idle gap longer than the probe timeout of
  the time (RFC 9002 §6.2.1: smoothed_rtt + max(4 rttvar, 1 ms) + max_ack_delay, from the logged
  metrics, the initial 333 ms RTT before any).
* ``Trace.acks``: one row per ACK frame received in a 1-RTT packet: ``ack`` the lowest packet
  number sent and not yet acknowledged, ``largest`` its largest acknowledged, ``newly`` the
  bytes of the packets it acknowledged first; ``rtt`` the latest_rtt sample of RFC 9002 §5.1
  (ACK time minus the send time of the largest acknowledged, when that packet is newly
  acknowledged; not corrected by ack_delay), ``rtt_source`` "qlog"; ``in_flight`` and ``cwnd``
  as the endpoint logged them while processing that packet (-1: it logged none).

* Values that do not read: an event of the four kinds whose data is no object, whose time or
  packet number is no number (numbers as strings read, as draft-00 writes them), whose ACK range
  has no number, is counted (``events_unreadable``) and left out whole; a packet header with
  none of the fields read counts as none (its data's own are read, as draft-00/01 place them).

The modules: ``parse`` (bytes into header and traces), ``events`` (a trace's events into
arrays), ``fates`` (the arrays into tables). JSON is parsed with msgspec (README, dependencies),
typed: each event by its name, so that only the events of the four kinds read become Python
objects, of the few fields read; the rest is scanned, never decoded (a value of it that is no
UTF-8, or a number beyond a double, goes unseen). Where that does not apply (arrays, deltas of
time, an event of another shape), every event's data is decoded one by one into the same
structs. The collector of cycles is paused while a file is read: it would walk the millions of
objects made again and again, and none is in a cycle.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from ...errors import TraceError, UsageError
from ...packets import Trace, empty_rtt, make_packet_table, named_flows
from .events import Collected, collect
from .fates import ack_coverage, flow_tables
from .parse import Document, NotUtf8, documents, event_name, not_utf8, paused_gc, read_bytes, typed_documents

__all__ = ["read_qlog", "ack_coverage"]


def read_qlog(
    path: str | os.PathLike, *, flows: Iterable[str] | str | None = None, peer: str | os.PathLike | None = None
) -> Trace:
    """Read a qlog (any of the formats above, plain or gzip) into a sender's-view Trace: every
    trace of the file is a flow, the packets its endpoint sent; ``flows`` keeps those named
    (None or "all": every one).

    A chain, as two captures make one: where the other endpoint's trace of the same connection
    (same ODCID, the other vantage) is in the file or in the qlog ``peer``, its
    ``packet_received`` of each packet number gives ``t_recv`` (its first receipt, on the
    receiver's clock). A packet received is delivered: one declared lost and never acknowledged
    that arrived is spurious by ``received`` (its ACK was lost, or came after the end)."""
    with paused_gc():
        return _read_qlog(path, flows, peer)


def _read_qlog(path, flows, peer) -> Trace:
    try:
        header, shape, collected, names = _read_traces(path)
        peers = collected + (_read_traces(peer)[2] if peer is not None else [])
        read: list[tuple[Any, Any, dict]] = []  # a trace's packets and acks (None: it sent none), summary
        total = 0
        for c in collected:
            uid0 = total
            total += c.events
            if len(c.sent_t):
                read.append(flow_tables(c, uid0, _peer_of(c, peers)))
            else:
                read.append((None, None, c.summary()))
    except NotUtf8 as bad:
        raise not_utf8(bad.path, bad.raw) from None
    version = str(header.qlog_version or header.file_schema)
    if names is not None:
        raise TraceError(
            path,
            f"a qlog ({shape}, version {version}) without a packet_sent event of application data "
            f"in its {len(collected)} trace(s): nothing was sent to read ({total} events; "
            f"names: {', '.join(names[:12]) or 'none'})",
        )
    wanted = named_flows(flows)
    found = [f[2]["flow"] for f in read if f[0] is not None]
    if wanted is not None and not wanted <= set(found):
        raise UsageError(
            f"{os.fspath(path)} has no flow {sorted(wanted - set(found))[0]!r}; its flows: {', '.join(found)}"
        )
    kept = [f for f in read if f[0] is not None and (wanted is None or f[2]["flow"] in wanted)]
    table = make_packet_table(**_joined([f[0] for f in kept]))
    for column in ("loss_trigger", "spurious", "reason"):
        table[column] = table[column].astype("category")
    acks = pd.DataFrame(_joined([f[1] for f in kept]))
    acks["flow"] = acks["flow"].astype("category")
    acks["rtt_source"] = acks["rtt_source"].astype("category")
    sampled = acks[np.isfinite(acks["rtt"].to_numpy())]
    rtt = (
        pd.DataFrame(
            {
                "flow": sampled["flow"].astype(str).to_numpy(object),
                "t": sampled["t"].to_numpy(),
                "seq": sampled["largest"].to_numpy(),
                "rtt": sampled["rtt"].to_numpy(),
            }
        )
        if len(sampled)
        else empty_rtt()
    )
    meta = {
        "view": "sender",
        "qlog_version": version,
        "qlog_format": shape,
        "events": total,
        "time": "epoch" if all(f[2]["epoch"] for f in read) else "relative",
        "traces": [f[2] for f in read],
    }
    return Trace(packets=table, rtt=rtt, path=os.fspath(path), format="qlog", meta=meta, acks=acks)


def _read_traces(path, typed: bool = True) -> tuple[Document, str, list[Collected], list[str] | None]:
    """A qlog file's header, shape, what each trace's events say, and where none has a packet
    sent, the names of its events (for the error): decoded typed where that applies
    (``typed``), else as parse.documents reads it."""
    raw = read_bytes(path)
    fast = typed_documents(raw) if typed else None
    try:
        header, traces, shape = fast if fast is not None else documents(path, raw)
        collected = [collect(path, trace, n, typed=fast is not None) for n, trace in enumerate(traces)]
    except UnicodeDecodeError:
        raise NotUtf8(path, raw) from None
    names = None
    if not any(len(c.sent_t) for c in collected):
        names = sorted({name for trace in traces for ev in trace.events if (name := event_name(ev, trace))})
    return header, shape, collected, names


def _joined(tables: list[dict]) -> dict:
    """Tables given as columns (flow_tables'), one after the other."""
    return {
        name: union_categoricals([t[name] for t in tables])
        if isinstance(tables[0][name], pd.Categorical)
        else np.concatenate([t[name] for t in tables])
        for name in tables[0]
    }


def _peer_of(c: Collected, candidates: list[Collected]) -> Collected | None:
    """The other endpoint's trace of ``c``'s connection: same ODCID, the opposite vantage."""
    other = {"server": "client", "client": "server"}.get(c.vantage)
    return next((p for p in candidates if c.odcid and p.odcid == c.odcid and p.vantage == other), None)
