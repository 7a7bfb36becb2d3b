"""Where sequence numbers and send times come from in a one-point capture.

A capture shows packets at one place. The PacketTable needs, per packet, the sequence number
the receiver sees and the time it was sent on the sender's clock. This module reads both from
each flow's packets (``decode_capture`` keeps the first payload bytes of every packet):

``rtp``
    RFC 3550 header: 16-bit sequence number and 32-bit timestamp, both unwrapped in capture
    order. A flow is first taken apart (``rtp.py``): STUN, DTLS, TURN and RTCP packets set aside
    (RFC 7983), one stream per SSRC (labelled ``<flow>/ssrc=0x...`` when the flow has more than
    one), one-off SSRCs counted as noise, padding probes left out, retransmission (RTX) streams
    joined to their media stream, and a stream that cannot be read skipped with its reason
    (``meta['skipped_streams']``), never failing its flow. The timestamp is the sender's
    media clock: its rate is ``clock_rate`` when given, else what the stream's RTCP sender
    reports say (when between 1 kHz and 1 MHz; ``sender_report_refused`` says why not), else
    the payload type's static rate (RFC 3551: 8000 Hz for PCMU, 90000 Hz for JPEG, ...), else
    (dynamic types) inferred from timestamp increments against capture times and taken as the
    nearest usual rate (8000, 16000, 48000, 90000, ...) when within 2 %.
    ``meta['flows']`` says which (``clock_source``).
``iperf3``
    UDP payload starts with tv_sec, tv_usec (32 bits each) and a packet counter of 32 bits,
    or 64 bits with ``--udp-counters-64bit``: inferred from which layout counts packets.
``iperf2``
    UDP payload starts with a signed 32-bit packet id, tv_sec, tv_usec and (iperf 2.0.10 on)
    the upper 32 bits of a 64-bit id. Negative ids mark the end of a test and are skipped.
``tcp``
    The byte sequence number is turned into a segment index per flow: distinct segment starts
    are numbered in byte order, and a hole in the byte space between two starts counts
    ceil(hole / MSS) missing segments (MSS from the SYN's option, else the most common segment
    size). A segment seen again at the same start (a retransmission) keeps its index, so it
    becomes the next transmission (``tx``) of that ``seq``; segments whose bytes were all sent
    before (keep-alives, partial retransmissions) take the index of the segment before them.
    The timestamps option's TSval is the sender clock, its tick rate inferred and snapped to
    the usual ones (1000 Hz, ...) within 10 %.
``order``
    No field at all: the k-th packet of the flow in the capture gets sequence number k. Only
    at the sender of a multi-point capture (``vantage.py``), where capture order is send order
    and the other captures say what arrived; a receiver cannot number what it never saw.
a :class:`FieldSpec`
    Any other protocol: where the sequence number and the send time sit in the payload
    (offset, width, byte order) and the time's units.

Vantage. ``receiver`` (the default): each captured packet is an arrival (``t_recv`` = capture
time, ``t_send`` = the in-band send time). Sequence numbers never seen between the first and
the last seen become ``lost`` rows (``reason`` ``seq-gap``; size the flow's median; ``t_send``
interpolated between the in-order arrivals around them); none is invented after the last one.
For TCP, a segment that arrives to fill a hole with a TSval later than the packet that opened
the hole is a retransmission: its first transmission was lost (a ``lost`` row with ``reason``
``retransmitted``). With 1 ms TSval ticks, a retransmission sent within the same tick as that
packet cannot be told from reordering. ``sender``: each captured packet is a transmission
(``t_send`` = capture time, ``t_recv`` NaN, ``fate`` ``unobserved``).

The sender's view of TCP (``tcp_sender.py``; ``read_capture`` asks for it). A TCP data flow the
capture host sends whose ACK flow is in the capture is read as its sender saw it, at either
vantage: transmissions with their ACKs, loss triggers, spurious retransmissions and fates, and
the ACK stream (``meta['acks']`` for ``capture_trace``'s ``Trace.acks``). At ``vantage="sender"``
every TCP data flow of the host (of every host, when none is known) is, its ACKs captured or
not. Each flow's ``meta['flows'][label]['view']`` is ``sender`` or ``receiver``; the other
flows' rows of a table with sender's-view flows get ``SENDER_COLUMNS``' defaults.

Which flows: with ``payload="auto"`` each flow gets the first kind that fits it (RTP, iperf3,
iperf2 for UDP; TCP for TCP flows that carry data); a kind fits when its fields read as a
sequence (steps between consecutive packets mostly small and forward, and the numbers span
not much more than the packets). When each kind that fits leaves packets out or repeats
numbers, the one that misreads fewest packets is taken (a 64-bit iperf counter read as 32 bits
is its high word, which repeats, or a signed id, which goes negative). Flows nothing fits are
skipped with a warning; flows named in ``flows`` must fit, or the reader raises a TraceError
naming the flow and its first byte.

The parts: field specs in ``fields.py``, clock rates in ``clockrate.py``, RTP streams in
``rtp_streams.py``, TCP in ``tcp.py``, what a reading gives (streams, skip reasons) in
``sequences.py``, the flows' records and the capture host in ``flows.py``; this module picks
each flow's kind and builds the PacketTable's rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import TraceError, UsageError
from ...packets import (
    DELIVERED,
    FATE_DTYPE,
    FATES,
    LOST,
    SENDER_COLUMNS,
    UNOBSERVED,
    make_packet_table,
    unwrap_sequence,
)
from .clockrate import ClockRates, send_seconds
from .fields import PAIR_UNITS, RTP, TCP, UDP, UDP_SPECS, FieldSpec, payload_name
from .flows import SSRC, FlowRecords, capture_host, chosen_flows, flow_groups
from .rtp_streams import TRANSPORT_CC, capture_sender_reports, flow_rtp_streams
from .sequences import MIN_AUTO_PACKETS, NotThisKind, Stream, distinct, first_reasons, not_a_sequence, repeats
from .tcp import ACKS_ONLY, tcp_stream
from .tcp_sender import FATE_REASONS, Connection, sender_view

VANTAGES = ("receiver", "sender")
KINDS = ("auto", "rtp", "iperf3", "iperf2", "tcp", "order")
ORDER = "order"
GAP = "seq-gap"
RETRANSMITTED = "retransmitted"
RTX_REPAIRED = "rtx-repaired"
RTP_SEQUENCES = ("ssrc", TRANSPORT_CC)  # an RTP stream per SSRC, or one per flow in transport-wide order
REASONS = ("", GAP, RETRANSMITTED, RTX_REPAIRED)


class NoSequenceNumbers(TraceError):
    """No flow of the capture carries sequence numbers; ``skipped``: each flow's label → why;
    ``capture``: the decoded capture, to describe (``describe.capture_description``), when the
    reader held it whole (not when it read flow by flow)."""

    def __init__(self, path: str, message: str, *, skipped: dict[str, str], capture=None) -> None:
        super().__init__(path, message)
        self.skipped = skipped
        self.capture = capture

    def __reduce__(self):
        # the capture stays behind: a process pool (batch, Dask) sends back the error, not the records
        restore, (cls, fields) = super().__reduce__()
        return restore, (cls, {**fields, "capture": None})


# -- the entry points --------------------------------------------------------------------------
def capture_packets(
    capture,
    *,
    payload="auto",
    vantage: str = "receiver",
    flows=None,
    clock_rate=None,
    fallback: str | None = None,
    ssrc=None,
    rtp_sequence: str = "ssrc",
    reports=None,
    host: str | tuple | None = "auto",
    sender_side: bool = False,
) -> tuple[pd.DataFrame, dict]:
    """The PacketTable of a decoded one-point capture, and what was taken and skipped
    (``meta['skipped_flows']``: flow label → why).

    See the module docstring for ``payload`` and ``vantage``; ``flows`` names flows by label
    (as ``list_flows`` prints them) and makes them mandatory; ``ssrc`` keeps the RTP streams of
    these SSRCs (``"0x1234abcd"`` or integers) only; ``clock_rate`` is the rate of the in-band
    clock (RTP timestamp, TCP TSval) when you know it, for every stream or per stream
    (:class:`ClockRates`; used as given, with a warning where the stream's clock disagrees). ``fallback`` (a kind)
    reads the data-carrying flows that ``payload`` does not fit instead of skipping them.
    ``reports``: the clock rates RTCP sender reports give (``capture_sender_reports``) when the
    caller took them from more of the capture than ``capture`` holds. ``host``: the address of
    the host the capture was taken on (``auto``: ``capture_host`` finds it, ``None``: none, or
    ``host_of``'s (address, how));
    at a receiver, the flows it sends are read as sent (fate ``unobserved``, streams marked
    ``outgoing``): they were captured before the path, so a receiver learns nothing of them.
    ``sender_side`` (with ``payload`` ``auto`` or ``tcp``): a TCP data flow the capture host sent whose ACK flow is in the capture
    (at ``vantage="sender"``: any TCP data flow of the host, of every host when none is known,
    ACKs captured or not) is read in the sender's view (``tcp_sender.py``): its rows carry
    ``SENDER_COLUMNS`` (the other flows' rows their defaults), ``meta['acks']`` its ACK stream,
    ``meta['rtt']`` its RTT samples, and each flow's ``view`` says which view it was read in.
    """
    if vantage not in VANTAGES:
        raise UsageError(f"vantage must be one of {VANTAGES}, not {vantage!r}")
    if not isinstance(payload, FieldSpec) and payload not in KINDS:
        raise UsageError(f"payload must be a FieldSpec or one of {KINDS}, not {payload!r}")
    clock_rate = ClockRates.parse(clock_rate) or ClockRates()
    if rtp_sequence not in RTP_SEQUENCES:
        raise UsageError(f"rtp_sequence must be one of {RTP_SEQUENCES}, not {rtp_sequence!r}")
    receiver = vantage == "receiver"
    chosen, wanted = chosen_flows(capture, flows)
    times = capture.times()
    reports = capture_sender_reports(capture) if reports is None else reports
    if isinstance(host, tuple):  # host_of's answer, found from more of the capture than this
        found = host
    else:
        found = capture_host(capture) if host == "auto" else (host, "given") if host else (None, "none given")
    outgoing = set(np.flatnonzero((capture.flows["src"] == found[0]).to_numpy())) if receiver and found[0] else set()
    tcp_kinds = not isinstance(payload, FieldSpec) and payload in ("auto", "tcp")
    ack_flow = sender_flows(capture.flows, found[0], receiver) if sender_side and tcp_kinds else {}
    stashed: dict[int, tuple] = {}  # the records of the sender's-view flows and of their ACK flows
    streams, skipped = [], {}
    for flow, rows, records in flow_groups(capture.records):
        if flow in ack_flow.values() or flow in ack_flow:
            stashed[flow] = (rows, records)
        if chosen is not None and flow not in chosen:
            continue
        if flow in ack_flow and (records["payload_len"] > 0).any():
            continue  # read in the sender's view, below
        try:
            mine = flow_streams(
                capture,
                flow,
                rows,
                records,
                payload,
                times,
                clock_rate=clock_rate,
                forced=chosen is not None and fallback is None,
                send_times=receiver and flow not in outgoing,
                rtp_sequence=rtp_sequence,
                reports=reports,
            )
            for stream in mine:
                stream.info["outgoing"] = flow in outgoing
            streams += mine
        except NotThisKind as why:
            if fallback is not None and not str(why).startswith(ACKS_ONLY):
                streams += flow_streams(capture, flow, rows, records, fallback, times, forced=True, send_times=receiver)
                continue
            label = capture.flows["label"].iat[flow]
            first = int(records["offset"][0])
            if chosen is not None:
                raise TraceError(capture.path, f"flow {label}: {why}", offset=first) from None
            skipped[label] = f"{why} (first packet at byte {first})"
    labels = capture.flows["label"]
    connections = []
    for flow, acks in sorted(ack_flow.items()):
        if flow in stashed and (chosen is None or flow in chosen) and (stashed[flow][1]["payload_len"] > 0).any():
            ack_rows, ack_records = stashed.get(acks, (None, None)) if acks is not None else (None, None)
            rows, records = stashed[flow]
            try:
                connections.append(Connection(labels.iat[flow], rows, records, ack_rows, ack_records, times))
            except NotThisKind as why:
                skipped[labels.iat[flow]] = f"{why} (first packet at byte {int(records['offset'][0])})"
    if wanted is not None:  # a named RTP stream leaves out the other streams of its flow
        streams = [s for s in streams if s.label in wanted or s.label.partition(SSRC)[0] in wanted]
    if ssrc is not None:  # RTP streams by SSRC, on whatever flow they travel
        chosen_ssrcs = {f"0x{int(str(x), 0):08x}" for x in ([ssrc] if isinstance(ssrc, (str, int)) else ssrc)}
        streams = [s for s in streams if s.info.get("ssrc") in chosen_ssrcs]
        if not streams:
            raise TraceError(capture.path, f"no RTP stream with SSRC {', '.join(sorted(chosen_ssrcs))}")
    if not streams and not connections:
        counts = capture.counts
        raise NoSequenceNumbers(
            capture.path,
            f"no decodable flow with sequence numbers: {counts['records']} "
            f"records, {counts['decoded']} decoded into {len(capture.flows)} flows"
            + (f"; {first_reasons(skipped)}" if skipped else "")
            + FIELD_HINT,
            skipped=skipped,
            capture=capture if chosen is None and ssrc is None else None,
        )
    skipped_streams = {}
    for stream in streams:
        skipped_streams.update(stream.info.pop("skipped_streams", {}))
    sent = sender_view(connections) if connections else None
    table, per_stream = _packet_rows(capture, streams, times, receiver, connections, sent)
    per_stream = in_flow_order(per_stream, labels)
    meta = {
        "flows": per_stream,
        "acks": sent[1] if sent else None,
        "rtt": sent[2] if sent else None,
        "skipped_flows": skipped,
        "skipped_streams": skipped_streams,
        "capture_host": {"address": found[0], "how": found[1]},
    }
    return table, meta


def in_flow_order(per_stream: dict, labels) -> dict:
    """Streams' entries in the order of their flows in the capture (a flow's streams in the
    order read): the sender's-view flows, read after the others, take their place."""
    position = {label: i for i, label in enumerate(labels)}
    return dict(sorted(per_stream.items(), key=lambda item: position.get(item[0].partition(SSRC)[0], len(position))))


def sender_flows(flows: pd.DataFrame, host: str | None, receiver: bool) -> dict[int, int | None]:
    """The TCP flows to read in the sender's view (flow id → its ACK flow's id; None: not
    captured, read so only at ``vantage="sender"``): those the capture host sends (any, when no
    host is known, at the sender)."""
    tcp = (flows["proto"] == TCP).to_numpy()
    ends = list(zip(flows["src"], flows["sport"], flows["dst"], flows["dport"], flows["tunnel"]))
    index = {end: i for i, end in enumerate(ends) if tcp[i]}
    chosen = {}
    for i, (src, sport, dst, dport, tunnel) in enumerate(ends):
        if not tcp[i] or (host is not None and src != host) or (host is None and receiver):
            continue
        back = index.get((dst, dport, src, sport, tunnel))
        if back is not None or not receiver:
            chosen[i] = back
    return chosen


def detect_kinds(capture) -> dict[int, str]:
    """The payload kind of every flow (flow id → ``rtp``, ``iperf3``, ..., or ``""``)."""
    kinds = {}
    for flow, rows, records in flow_groups(capture.records):
        try:
            streams = flow_streams(capture, flow, rows, records, "auto", None, send_times=False)
            kinds[flow] = streams[0].kind
        except NotThisKind:
            kinds[flow] = ""
    return kinds


# What to do when no known payload fits: say where the protocol keeps its numbers.
FIELD_HINT = (
    ". If the packets carry a sequence number and a send time in a layout of their own, say where: "
    "--field seq=OFF:W,time=OFF:W:UNITS (Python: payload=FieldSpec.parse(...); docs/captures.md)"
)


# -- one flow ----------------------------------------------------------------------------------
def flow_streams(
    capture,
    flow: int,
    rows: np.ndarray,
    records: FlowRecords,
    payload,
    times,
    *,
    clock_rate: ClockRates = ClockRates(),  # noqa: B008 (frozen: one shared default is safe)
    forced=False,
    send_times=True,
    rtp_sequence="ssrc",
    reports=None,
) -> list[Stream]:
    """The sequence spaces of one flow (its records and their indices) under ``payload``;
    raises NotThisKind when it does not fit.

    ``send_times`` asks for the in-band send times (a receiver-side trace needs them).
    """
    label = capture.flows["label"].iat[flow]
    proto = int(capture.flows["proto"].iat[flow])
    custom = isinstance(payload, FieldSpec)
    if payload == ORDER:
        return [
            Stream(
                label,
                ORDER,
                rows,
                np.arange(rows.shape[0], dtype=np.int64),
                np.full(rows.shape[0], np.nan),
                {"kind": ORDER},
            )
        ]
    if proto == TCP:
        if payload in ("auto", "tcp"):
            return [tcp_stream(label, rows, records, times, clock_rate.of(label), send_times)]
        if not (custom and forced):
            raise NotThisKind(
                f"a TCP flow (name it in flows to read it with a {payload_name(payload)} spec)"
                if custom
                else f"a TCP flow cannot carry {payload} packets"
            )
    elif payload == "tcp":
        raise NotThisKind("not a TCP flow")
    elif not custom and proto != UDP:
        raise NotThisKind(
            f"no payload kind is known for IP protocol {proto}"
            if payload == "auto"
            else f"{payload} is carried over UDP, not IP protocol {proto}"
        )
    specs: tuple[FieldSpec, ...]
    if custom:
        specs = (payload,)
    elif payload == "auto":
        specs = tuple(s for group in UDP_SPECS.values() for s in group)
    else:
        specs = UDP_SPECS[payload]
    reasons, fits = [], []
    for spec in specs:
        try:
            if spec is RTP:
                return flow_rtp_streams(
                    label, rows, records, times, clock_rate, send_times, rtp_sequence, reports=reports
                )
            streams = _spec_streams(
                spec,
                label,
                rows,
                records,
                times,
                clock_rate,
                send_times,
                min_packets=1 if forced or payload != "auto" else MIN_AUTO_PACKETS,
            )
        except NotThisKind as why:
            reasons.append((spec.name, why))  # worded only if none fits (``NoRTPPackets``)
            continue
        if not _misread(streams, rows.shape[0]):
            return streams
        fits.append(streams)
    if fits:  # the reading that misreads fewest packets, the first tried of equals
        return min(fits, key=lambda streams: _misread(streams, rows.shape[0]))
    tried = "; ".join(f"not {name}: {why}" for name, why in reasons)
    raise NotThisKind(tried if payload != "auto" else f"no sequence numbers found ({tried})")


def _spec_streams(spec: FieldSpec, label, rows, records, times, clock_rate, send_times, min_packets):
    """Apply a field spec to one flow's records."""
    need = spec.needed_bytes
    if need > records.dtype["head"].shape[0]:
        raise UsageError(f"the payload spec reads {need} payload bytes; decode with head_bytes >= {need}")
    head = records["head"]
    long_enough = records["payload_len"] >= need
    captured = records["head_len"] >= need
    valid = long_enough & captured
    excluded = {"short_payload": int((~long_enough).sum()), "cut_by_snaplen": int((long_enough & ~captured).sum())}
    if spec is RTP:
        version_2 = head[:, 0] >> 6 == 2
        rtcp = (head[:, 1] >= 200) & (head[:, 1] <= 204)  # RTCP multiplexed on the port
        excluded["not_rtp"] = int((valid & ~(version_2 & ~rtcp)).sum())
        valid &= version_2 & ~rtcp
    if spec.time_units in PAIR_UNITS and spec.send_time is not None:
        fraction = spec.send_time.halves()[1].read(head)
        out_of_range = valid & (fraction >= round(1 / PAIR_UNITS[spec.time_units])) & (spec.time_units != "ntp")
        if out_of_range.any():
            raise NotThisKind(f"{int(out_of_range.sum())} packets have a sub-second field out of range")
    seq = spec.seq.read(head)
    if spec.seq_high is not None:  # in use when nonzero and small, or negative (an end marker)
        high = spec.seq_high.read(head)
        if not (valid & (high > 0)).any() or (valid & (high > 0xFFFF) & (high < 1 << 31)).any():
            raise NotThisKind("no upper sequence word in use")
        seq = ((high.astype(np.uint64) << np.uint64(32)) | seq.astype(np.uint64)).view(np.int64)
    if spec.seq.signed or spec.seq_high is not None:
        excluded["end_of_test"] = int((valid & (seq < 0)).sum())
        valid &= seq >= 0
    if int(valid.sum()) < min_packets:
        raise NotThisKind(f"{int(valid.sum())} packets carry the fields (payload of {need} bytes or more)")
    rows, head, seq = rows[valid], head[valid], seq[valid]
    keys = spec.stream.read(head) if spec.stream is not None else np.zeros(seq.shape[0], np.int64)
    distinct_keys = pd.unique(keys)
    info = {"kind": spec.name, "excluded": {k: v for k, v in excluded.items() if v}}  # of the whole flow
    streams = []
    for key in distinct_keys:
        mine = keys == key if len(distinct_keys) > 1 else slice(None)
        own = seq[mine]
        if spec.seq.width < 8 and not spec.seq.signed and spec.seq_high is None:
            own = unwrap_sequence(own, 1 << (8 * spec.seq.width))
        if own.shape[0] >= min_packets:
            problem = not_a_sequence(own)
            if problem:
                raise NotThisKind(problem)
        name = label if len(distinct_keys) == 1 else f"{label}{SSRC}0x{int(key):08x}"
        own_info = dict(info)
        sent = np.full(own.shape[0], np.nan)
        if send_times and spec.send_time is not None:
            sent = send_seconds(spec, head[mine], times[rows[mine]], clock_rate.of(name), own_info, name)
        streams.append(Stream(name, spec.name, rows[mine], own, sent, own_info))
    return streams


def _misread(streams: list[Stream], packets: int) -> int:
    """Packets of the flow (``packets`` of them) that a reading leaves out, plus those whose
    number another packet of their stream had. Neither is common in a packet sequence read
    right; a 64-bit counter read as 32 bits (its high word) repeats, and read as a signed 32-bit
    id leaves out the 'negative' ones, yet either can pass the sequence checks on a short flow."""
    read = sum(s.seq.shape[0] for s in streams)
    return packets - read + sum(repeats(s.seq) for s in streams)


# -- rows --------------------------------------------------------------------------------------
def _packet_rows(
    capture, streams: list[Stream], times, receiver: bool, connections=(), sent=None
) -> tuple[pd.DataFrame, dict]:
    """The PacketTable of all streams, with lost rows at the receiver, and the sender's-view
    rows of ``connections`` (``sent``: ``tcp_sender.sender_view``'s transmissions). Each
    stream's rows are written into the table's columns in place: the columns are the biggest
    arrays of a read, and fresh memory costs more than the work (see ``flow_groups``)."""
    records = capture.records
    plans, per_stream = [], {}
    for s in streams:
        t = times[s.rows]
        if np.isnan(t).any():
            first = int(records["offset"][s.rows[np.argmax(np.isnan(t))]])
            raise TraceError(
                capture.path,
                f"flow {s.label}: {int(np.isnan(t).sum())} packets come from simple "
                "packet blocks, which carry no timestamp; a trace needs their capture times",
                offset=first,
            )
        if receiver and not s.info.get("outgoing"):
            if np.isnan(s.sent).any():
                raise TraceError(
                    capture.path,
                    f"flow {s.label}: its {s.kind} packets carry no send time, which a receiver-side trace needs",
                    offset=int(records["offset"][s.rows[0]]),
                )
            plans.append((t, True, *_lost_rows(s, t)))
        else:
            plans.append((t, False, None, *_NO_LOSSES))
            if s.info.get("outgoing"):  # numbers the host skipped, or the capture missed: not path losses
                s.info["missing"] = int(s.seq.max() - s.seq.min() + 1 - np.unique(s.seq).shape[0])
        per_stream[s.label] = {
            **s.info,
            "packets": int(s.rows.shape[0]),
            "lost": int(plans[-1][3].shape[0]),
            "view": "receiver",
        }
    n_sent = sent[0]["seq"].shape[0] if sent else 0
    total = sum(s.rows.shape[0] + plan[3].shape[0] for s, plan in zip(streams, plans)) + n_sent
    out = {
        "flow": np.empty(total, np.int32),
        "seq": np.empty(total, np.int64),
        "uid": np.empty(total, np.int64),
        "size": np.empty(total, np.int64),
        "t_send": np.empty(total),
        "t_recv": np.empty(total),
        "fate": np.empty(total, np.int8),
        "reason": np.empty(total, np.int8),
    }
    at, next_uid = 0, len(records)
    for i, (s, (t, received, order, lost, lost_reason, lost_sent)) in enumerate(zip(streams, plans)):
        n, k = s.rows.shape[0], lost.shape[0]
        seen, gone = slice(at, at + n), slice(at + n, at + n + k)
        out["flow"][at : at + n + k] = i
        rows = s.rows if order is None else s.rows[order]
        out["size"][seen] = records["ip_len"][rows]
        sent_at, arrived = (s.sent, t) if received else (t, None)
        for name, values in (("seq", s.seq), ("t_send", sent_at), ("t_recv", arrived)):
            out[name][seen] = np.nan if values is None else values if order is None else values[order]
        out["uid"][seen] = rows
        out["fate"][seen] = FATES.index(DELIVERED if received else UNOBSERVED)
        out["reason"][seen] = 0
        out["seq"][gone], out["uid"][gone] = lost, next_uid + np.arange(k)
        out["size"][gone] = int(np.median(out["size"][seen])) if k else 0
        out["t_send"][gone], out["t_recv"][gone] = lost_sent, np.nan
        out["fate"][gone], out["reason"][gone] = FATES.index(LOST), lost_reason
        at, next_uid = at + n + k, next_uid + k
    extra = {}
    if connections:
        tx = sent[0]
        mine = slice(at, total)
        out["flow"][mine] = len(streams) + tx["flow"]
        for name in ("seq", "size", "t_send"):
            out[name][mine] = tx[name]
        out["t_recv"][mine] = np.nan
        pieces = tx["part"] > 0  # offload's further pieces of a record: uids of their own
        out["uid"][mine] = np.where(pieces, next_uid + np.cumsum(pieces) - 1, tx["rows"])
        out["fate"][mine] = tx["fate"]
        out["reason"][mine] = len(REASONS) + tx["reason"]
        for name, dtype in SENDER_COLUMNS.items():
            column = tx[name]
            if dtype == "category":
                codes = np.zeros(total, np.int8)
                codes[mine] = column.codes
                extra[name] = pd.Categorical.from_codes(codes, categories=list(column.categories))
            else:
                values = np.full(total, np.nan if dtype == np.float64 else -1, dtype)
                values[mine] = column
                extra[name] = values
        for code, c in enumerate(connections):
            seq = tx["seq"][tx["flow"] == code]
            per_stream[c.label] = {
                **c.info,
                "packets": int(seq.shape[0]),
                "lost": int((tx["fate"][tx["flow"] == code] == FATES.index(LOST)).sum()),
                "retransmissions": int(seq.shape[0] - np.count_nonzero(np.bincount(seq))),  # segment indices: >= 0
            }
    table = make_packet_table(
        flow=pd.Categorical.from_codes(
            out["flow"], categories=[s.label for s in streams] + [c.label for c in connections]
        ),
        seq=out["seq"],
        uid=out["uid"],
        size=out["size"],
        t_send=out["t_send"],
        t_recv=out["t_recv"],
        fate=pd.Categorical.from_codes(out["fate"], dtype=FATE_DTYPE),
        reason=pd.Categorical.from_codes(
            out["reason"], categories=list(REASONS) + (list(FATE_REASONS) if connections else [])
        ),
        **extra,
    )
    return table, per_stream


_NO_LOSSES = (np.empty(0, np.int64), np.empty(0, np.int8), np.empty(0))


def _lost_rows(s: Stream, t_recv) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """A received stream's arrival order (indices into its packets; None when they came in
    capture order), and its lost rows: a sequence number never seen inside the range seen, and
    a TCP retransmission that fills a hole; their numbers, reasons and send times (interpolated
    between in-order arrivals)."""
    order = None if (t_recv[1:] >= t_recv[:-1]).all() else np.argsort(t_recv, kind="stable")
    seq, sent = (s.seq, s.sent) if order is None else (s.seq[order], s.sent[order])
    best_before = np.maximum.accumulate(np.concatenate(([seq[0] - 1], seq[:-1])))
    in_order = seq > best_before
    io_seq, io_sent = seq[in_order], sent[in_order]
    seen, _ = distinct(seq)
    missing = np.setdiff1d(np.arange(seen[0], seen[-1] + 1), seen, assume_unique=True)
    reason = np.where(np.isin(missing, s.repaired), REASONS.index(RTX_REPAIRED), REASONS.index(GAP)).astype(np.int8)
    lost_seq, lost_reason = [missing], [reason]
    if s.kind == "tcp":
        by_seq = np.argsort(seq, kind="stable")
        ordered = seq[by_seq]
        fills = np.zeros(seq.shape[0], bool)
        fills[by_seq[np.diff(ordered, prepend=ordered[0] - 1) != 0]] = True  # first arrival of its seq
        fills &= ~in_order
        opener = np.searchsorted(io_seq, seq[fills], side="right")  # first in-order arrival above it
        resent = seq[fills][sent[fills] > io_sent[opener]]
        lost_seq.append(resent)
        lost_reason.append(np.full(resent.shape[0], REASONS.index(RETRANSMITTED), np.int8))
    lost = np.concatenate(lost_seq)
    return order, lost, np.concatenate(lost_reason), np.interp(lost, io_seq, io_sent)
