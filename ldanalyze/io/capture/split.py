"""Captures larger than memory, read one flow at a time.

``read_capture`` holds every decoded record (about 100 bytes a packet) and then the PacketTable
of every flow: a 10 GB capture of small VoIP packets is some 40 M packets, 4 GB of records.
``read_capture_flows`` decodes the capture as ``read_capture`` does but writes each block of
records, as it fills, to one file per flow (the records' own bytes, appended: no pickle) in a
temporary folder, keeping in memory only the flow table, the frames that belong to no flow
(for the decode report) and the RTCP sender reports (for the media clock rates). It then yields
one Trace per flow, reading that flow's file alone: memory holds one block of records and the
largest flow, not the capture. Pass the traces to ``analyze_traces``, or score them one by one.

The clock skew is fitted per pair of hosts, as ``read_capture`` fits it, though a pair's flows
are never in memory together: each flow's PacketTable is written to the folder (Arrow IPC)
as it is read, with a summary of its delays (``clocks.DelaySummary``: its lower hull and a
few sums, all the joint fit needs); once every flow is read, each pair's skew is fitted from
its flows' summaries (``clocks.fit_pair``), and the tables are read back one at a time and
yielded with their pair's skew removed. The skew found is ``read_capture``'s, up to rounding.
A capture of one flow needs none of this: its skew is removed in memory, as there.

What differs from ``read_capture``: a Trace's ``meta['capture_flows']`` counts the packets of
its own flow only (of its two flows, for a TCP connection read in the sender's view: the data
flow with its ACK flow, the two files joined in capture order), and a flow that carries no sequence numbers is skipped with a warning, as
there; once every flow is read, the capture's whole flow table and the flows skipped are the
result's (:class:`FlowByFlow`), which is how ``inspect --flow-at-a-time`` reports them.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import tempfile
import warnings
from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyarrow import feather

from ...clocks import (
    PLAUSIBLE_SKEW_PPM,
    delay_summary,
    delivered_rows,
    fit_pair,
    halves_summaries,
    pair_of,
    remove_skew,
)
from ...packets import Trace, natural_sorted
from ...tiering import call
from . import payload as payloads
from .flows import flow_extents, flow_listing, flow_ttls, host_of
from .pcap import CHUNK_BYTES, CaptureWarning, capture_trace, decode_into, head_bytes_for, host_option, kinds_read
from .record import NO_TIME, STATUS_NAMES
from .rtp_streams import capture_sender_reports, sender_report_candidates
from .sequences import first_reasons, reasons_in_brief
from .tcp import ACKS_ONLY
from .walk import Output

SPILL_RECORDS = 1 << 20  # records per block before it is written out (about 100 MB)


class _SpillingOutput(Output):
    """Record blocks written to one file per flow as they fill (see the module docstring)."""

    def __init__(self, head_bytes: int, folder: pathlib.Path, block_records: int) -> None:
        super().__init__(head_bytes)
        self.out = np.empty(block_records, self.dtype)
        self.heads = self.out["head"]
        self.folder = folder
        self.kept: list[np.ndarray] = []  # frames of no flow, and sender reports
        self.spilled = np.zeros(256, np.int64)  # flow records written out, by decode status
        self.ttls = np.zeros((0, 256), np.int64)  # decoded packets by flow and TTL (for the capture host)
        self.extents = _no_extents(0)  # packets, IP bytes, first and last time by flow (list_flows's)
        self.flows_written: set[int] = set()

    def new_block(self) -> None:
        self._spill(self.out[: self.n])
        self.n = 0  # the same buffer again

    def records(self) -> np.ndarray:
        self._spill(self.out[: self.n])
        self.out = self.heads = None  # type: ignore[assignment]  # released: never None while the walk writes
        return np.concatenate(self.kept) if self.kept else np.empty(0, self.dtype)

    def _spill(self, block: np.ndarray) -> None:
        flow = block["flow"]
        self.kept.append(block[(flow < 0) | sender_report_candidates(block)].copy())
        flowing = flow >= 0
        self.spilled += np.bincount(block["status"][flowing], minlength=256)
        more = flow_ttls(block, self.n_flows)
        more[: self.ttls.shape[0]] += self.ttls
        self.ttls = more
        self.extents = _merged_extents(
            self.extents, call(flow_extents, flow, block["ts_ns"], block["ip_len"], self.n_flows)
        )
        order = np.argsort(flow, kind="stable")
        ordered = flow[order]
        starts = np.flatnonzero(np.diff(ordered, prepend=-2))
        for start, end in zip(starts, np.append(starts[1:], ordered.shape[0])):
            if ordered[start] < 0:
                continue
            with open(self.folder / f"{int(ordered[start])}.rec", "ab") as f:
                f.write(block[order[start:end]].tobytes())
            self.flows_written.add(int(ordered[start]))


def read_capture_flows(
    path: str | os.PathLike,
    *,
    payload="auto",
    vantage: str = "receiver",
    clock_rate: float | None = None,
    skew: str = "remove",
    skew_limit_ppm: float = PLAUSIBLE_SKEW_PPM,
    capture_host: str | None = "auto",
    workdir: str | os.PathLike | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    block_records: int = SPILL_RECORDS,
) -> FlowByFlow:
    """One Trace per flow of a capture, with memory bounded by the largest flow (module
    docstring); the options are ``read_capture``'s. The per-flow files live in a temporary
    folder under ``workdir`` (the system's temporary folder by default), removed at the end.
    Nothing is read until the result is iterated (once); see :class:`FlowByFlow`."""
    return FlowByFlow(
        path,
        dict(
            payload=payload,
            vantage=vantage,
            clock_rate=clock_rate,
            skew=skew,
            skew_limit_ppm=skew_limit_ppm,
            capture_host=capture_host,
            workdir=workdir,
            chunk_bytes=chunk_bytes,
            block_records=block_records,
        ),
    )


class FlowByFlow:
    """The Traces of a capture read one flow at a time (``read_capture_flows``), to iterate
    once; after them, what ``read_capture`` keeps of the capture as a whole, which no one flow's
    Trace holds: ``capture_flows``, ``list_flows``'s table of every flow of the capture (its
    packets, bytes and times counted as the records were decoded, the payload kind of each flow
    read), ``skipped_flows`` (label → why: the flows that carry no sequence numbers) and
    ``notes`` (the warnings about the capture as a whole)."""

    def __init__(self, path: str | os.PathLike, options: dict) -> None:
        self.path = os.fspath(path)
        self.options = options
        self.capture_flows: pd.DataFrame | None = None
        self.skipped_flows: dict[str, str] = {}
        self.notes: list[str] = []

    def __iter__(self) -> Iterator[Trace]:
        o = self.options
        head_bytes = head_bytes_for(o["payload"])
        with tempfile.TemporaryDirectory(prefix="ldanalyze-flows-", dir=o["workdir"]) as name:
            folder = pathlib.Path(name)
            output = _SpillingOutput(head_bytes, folder, o["block_records"])
            capture = decode_into(self.path, output, o["chunk_bytes"])  # holds the kept records only
            self.notes = capture.notes
            _count_spilled(capture, output)
            reports = capture_sender_reports(capture)
            host: str | tuple[str | None, str] | None = host_option(o["capture_host"])
            if host == "auto":  # from every flow's packets, not the one at hand
                host = host_of(capture.flows, output.ttls)
            # one flow: its pair's fit needs no other flow, and is made in memory, as read_capture does
            joint = o["skew"] == "remove" and o["vantage"] == "receiver" and len(output.flows_written) > 1
            traces = _flow_traces(
                capture,
                output,
                folder,
                reports=reports,
                host=host,
                payload=o["payload"],
                vantage=o["vantage"],
                clock_rate=o["clock_rate"],
                skew="keep" if joint else o["skew"],
                skew_limit_ppm=o["skew_limit_ppm"],
                skipped=self.skipped_flows,
            )
            streams: dict[str, dict] = {}
            for trace in _skew_removed(traces, folder, o["skew_limit_ppm"]) if joint else traces:
                streams.update(trace.meta["flows"])
                yield trace
            self.capture_flows = flow_listing(
                capture.flows, _padded(output.extents, len(capture.flows)), kinds_read(capture, streams)
            )

    def whole_meta(self, metas: list[dict]) -> dict:
        """The meta ``read_capture`` gives the whole capture, from its flows' Traces' meta (in
        the order they came), once they are all read: the streams and skipped streams of every
        flow and its clock fit's rows; the capture's flow table, flows skipped and notes from
        this reading; what the flows share (format, records, interfaces, capture host) from
        the first."""
        if self.capture_flows is None:
            raise RuntimeError("whole_meta: read every flow first")
        meta = dict(metas[0])
        for key in ("flows", "skipped_streams"):
            meta[key] = {k: v for m in metas for k, v in m.get(key, {}).items()}
        meta["flows"] = payloads.in_flow_order(
            meta["flows"], self.capture_flows["flow"]
        )  # a connection's two flows came together
        meta["skipped_flows"] = {**self.skipped_flows, **{k: v for m in metas for k, v in m["skipped_flows"].items()}}
        meta["notes"] = self.notes  # the decode's and the skipped flows' and streams' (not each flow's own)
        meta["capture_flows"] = self.capture_flows
        fits = [
            m["clock_fit"] for m in metas if len(m.get("clock_fit", ()))
        ]  # a flow with no delivered packet has none
        if fits:
            fit = pd.concat(fits, ignore_index=True)
            meta["clock_fit"] = fit.set_index("flow").loc[natural_sorted(fit["flow"])].reset_index()
        return meta


def _no_extents(n_flows: int) -> tuple:
    """``flow_extents`` of no records."""
    return (
        np.zeros(n_flows, np.int64),
        np.zeros(n_flows, np.int64),
        np.full(n_flows, np.iinfo(np.int64).max),
        np.full(n_flows, NO_TIME),
    )


def _merged_extents(a: tuple, b: tuple) -> tuple:
    """Two blocks' ``flow_extents`` as one."""
    n = max(a[0].shape[0], b[0].shape[0])
    a, b = _padded(a, n), _padded(b, n)
    return a[0] + b[0], a[1] + b[1], np.minimum(a[2], b[2]), np.maximum(a[3], b[3])


def _padded(extents: tuple, n_flows: int) -> tuple:
    """``flow_extents`` over ``n_flows`` flows: the flow table grows as the decode goes."""
    if extents[0].shape[0] == n_flows:
        return extents
    out = _no_extents(n_flows)
    for whole, part in zip(out, extents):
        whole[: part.shape[0]] = part
    return out


def _flow_traces(
    capture,
    output: _SpillingOutput,
    folder: pathlib.Path,
    *,
    reports,
    host,
    payload,
    vantage,
    clock_rate,
    skew,
    skew_limit_ppm,
    skipped: dict,
) -> Iterator[Trace]:
    """The Trace of each flow file in turn, its skew removed as ``capture_trace`` does on the
    flow alone or kept; the flows that carry no sequence numbers go into ``skipped`` (a
    warning at the end, and one for the RTP streams skipped). NoSequenceNumbers when no flow
    carries any, as ``read_capture`` raises it."""
    streams: dict[str, str] = {}
    read = 0
    address = host[0] if isinstance(host, tuple) else host
    partner = {}  # a TCP flow read in the sender's view and its ACK flow, read together
    for data, acks in payloads.sender_flows(capture.flows, address, vantage == "receiver").items():
        if acks is not None and {data, acks} <= output.flows_written:
            partner[data], partner[acks] = acks, data
    for flow in sorted(output.flows_written):
        if partner.get(flow, flow) < flow:
            continue  # read with its partner
        files = [folder / f"{f}.rec" for f in sorted({flow, partner.get(flow, flow)})]
        # mapped, not read: the flow's records are the file's pages, which the system can drop
        # under pressure and read again (they count in RSS while resident, but are no copy); a
        # connection's two directions are joined in capture order (the records' byte offsets)
        maps = [np.memmap(file, dtype=output.dtype, mode="r") for file in files]
        records = maps[0] if len(maps) == 1 else np.concatenate(maps)
        if len(maps) > 1:
            records = records[np.argsort(records["offset"], kind="stable")]
        one = dataclasses.replace(capture, records=records, notes=list(capture.notes))
        try:
            try:
                packets, taken = payloads.capture_packets(
                    one,
                    payload=payload,
                    vantage=vantage,
                    clock_rate=clock_rate,
                    reports=reports,
                    host=host,
                    sender_side=True,
                )
            except payloads.NoSequenceNumbers as why:  # this flow carries none
                skipped.update(why.skipped)
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CaptureWarning)  # said once for the capture, below
                trace = capture_trace(
                    one, packets, taken, payload=payload, vantage=vantage, skew=skew, skew_limit_ppm=skew_limit_ppm
                )
        finally:
            one = packets = None  # the mappings are closed before their files go
            del records, maps
            for file in files:
                file.unlink()
        streams.update(trace.meta["skipped_streams"])
        skipped.update(trace.meta["skipped_flows"])  # a connection's other flow, read with it
        read += 1
        yield trace
    if not read:
        raise payloads.NoSequenceNumbers(
            capture.path,
            "no flow with sequence numbers" + (f" ({first_reasons(skipped)})" if skipped else "") + payloads.FIELD_HINT,
            skipped=skipped,
        )
    at = {label: i for i, label in enumerate(capture.flows["label"])}  # in flow order, as read_capture has them
    ordered = sorted(skipped.items(), key=lambda item: at.get(item[0], -1))
    skipped.clear()
    skipped.update(ordered)
    told = {k: v for k, v in skipped.items() if not v.startswith(ACKS_ONLY)}  # as capture_trace tells
    messages = [
        f"{capture.path}: {len(told)} flow(s) without sequence numbers skipped ({reasons_in_brief(told)})"
        if told
        else "",
        f"{capture.path}: {len(streams)} RTP stream(s) skipped ({reasons_in_brief(streams)})" if streams else "",
    ]
    for message in filter(None, messages):
        capture.notes.append(message)  # the capture's notes, as capture_trace keeps them
        warnings.warn(message, CaptureWarning, stacklevel=3)


def _skew_removed(traces: Iterator[Trace], folder: pathlib.Path, skew_limit_ppm: float) -> Iterator[Trace]:
    """The traces with each pair of hosts' skew removed, fitted on all the pair's flows (module
    docstring): three passes, one flow's table in memory at a time (each pass a function of
    its own, so that no name keeps a table of the pass before alive)."""
    shells, spans = _tables_written(traces, folder)
    fits = _pair_fits(shells, spans)
    told = set()
    for table, shell in shells:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trace = remove_skew(
                dataclasses.replace(shell, packets=feather.read_feather(table)),
                skew_limit_ppm=skew_limit_ppm,
                pairs="hosts",
                fitted=fits,
            )
        for warning in caught:  # a pair's warning once, as read_capture gives it, not once per flow
            if str(warning.message) not in told:
                told.add(str(warning.message))
                warnings.warn(warning.message, warning.category, stacklevel=2)
        table.unlink()
        yield trace


def _tables_written(traces: Iterator[Trace], folder: pathlib.Path) -> tuple[list, dict]:
    """Each trace's PacketTable written to the folder, and the trace without it; and each pair
    of hosts' time span."""
    shells: list[tuple[pathlib.Path, Trace]] = []
    spans: dict[str, tuple[float, float]] = {}
    for k, trace in enumerate(traces):
        table = folder / f"{k}.arrow"
        feather.write_feather(trace.packets, table, compression="uncompressed")
        for flow, (t, _) in _delays(trace.packets).items():
            start, end = spans.get(pair_of(flow), (np.inf, -np.inf))
            spans[pair_of(flow)] = (min(start, float(t.min())), max(end, float(t.max())))
        shells.append((table, dataclasses.replace(trace, packets=None)))
    return shells, spans


def _pair_fits(shells: list, spans: dict) -> dict:
    """Each pair of hosts' skew, from its flows' delay summaries over the whole span and its halves."""
    summaries: dict[str, tuple[list, list, list]] = {pair: ([], [], []) for pair in spans}
    for table, _ in shells:
        for flow, (t, d) in _delays(feather.read_feather(table)).items():
            whole, first, second = summaries[pair_of(flow)]
            start, end = spans[pair_of(flow)]
            whole.append(delay_summary(t, d))
            early, late = halves_summaries(t, d, (start + end) / 2)
            first.extend([early] if early is not None else [])
            second.extend([late] if late is not None else [])
    return {pair: fit_pair(*lists) for pair, lists in summaries.items()}


def _delays(packets) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each flow's delivered packets' send times and delays."""
    t_send, t_recv = packets["t_send"].to_numpy(), packets["t_recv"].to_numpy()
    return {flow: (t_send[got], t_recv[got] - t_send[got]) for flow, got in delivered_rows(packets).items()}


def _count_spilled(capture, output: _SpillingOutput) -> None:
    """Add the records written out to the capture's counts by status (``_account`` saw the kept
    ones; the counts by tunnel are the walk's, of every record)."""
    counts = capture.counts
    counts["records"] += int(output.spilled.sum()) - int((capture.records["flow"] >= 0).sum())
    kept = np.bincount(capture.records["status"][capture.records["flow"] >= 0], minlength=256)
    for code, name in enumerate(STATUS_NAMES):
        counts[name] += int(output.spilled[code] - kept[code])
