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

What differs from ``read_capture``: ``meta['capture_flows']`` lists the flow the trace holds;
a flow that carries no sequence numbers is skipped with a warning, as there.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import tempfile
import warnings
from collections.abc import Iterator

import numpy as np
from pyarrow import feather

from ...clocks import (
    PLAUSIBLE_SKEW_PPM, delay_summary, delivered_rows, fit_pair, halves_summaries, pair_of, remove_skew,
)
from ...errors import TraceError
from ...packets import Trace
from . import payload as payloads
from .linklayer import STATUS_NAMES
from .pcap import CHUNK_BYTES, CaptureWarning, _host_option, _Output, capture_trace, decode_into, head_bytes_for

SPILL_RECORDS = 1 << 20  # records per block before it is written out (about 100 MB)


class _SpillingOutput(_Output):
    """Record blocks written to one file per flow as they fill (see the module docstring)."""

    def __init__(self, head_bytes: int, folder: pathlib.Path, block_records: int) -> None:
        super().__init__(head_bytes)
        self.out = np.empty(block_records, self.dtype)
        self.heads = self.out["head"]
        self.folder = folder
        self.kept: list[np.ndarray] = []  # frames of no flow, and sender reports
        self.spilled = np.zeros(256, np.int64)  # flow records written out, by decode status
        self.ttls = np.zeros((0, 256), np.int64)  # decoded packets by flow and TTL (for the capture host)
        self.flows_written: set[int] = set()

    def new_block(self) -> None:
        self._spill(self.out[: self.n])
        self.n = 0  # the same buffer again

    def records(self) -> np.ndarray:
        self._spill(self.out[: self.n])
        self.out = self.heads = None
        return np.concatenate(self.kept) if self.kept else np.empty(0, self.dtype)

    def _spill(self, block: np.ndarray) -> None:
        flow = block["flow"]
        self.kept.append(block[(flow < 0) | payloads.sender_report_candidates(block)].copy())
        flowing = flow >= 0
        self.spilled += np.bincount(block["status"][flowing], minlength=256)
        more = payloads.flow_ttls(block, self.n_flows)
        more[: self.ttls.shape[0]] += self.ttls
        self.ttls = more
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
) -> Iterator[Trace]:
    """One Trace per flow of a capture, with memory bounded by the largest flow (module
    docstring); the options are ``read_capture``'s. The per-flow files live in a temporary
    folder under ``workdir`` (the system's temporary folder by default), removed at the end."""
    head_bytes = head_bytes_for(payload)
    with tempfile.TemporaryDirectory(prefix="ldanalyze-flows-", dir=workdir) as folder:
        folder = pathlib.Path(folder)
        output = _SpillingOutput(head_bytes, folder, block_records)
        capture = decode_into(path, output, chunk_bytes)  # holds the kept records only
        _count_spilled(capture, output)
        reports = payloads.capture_sender_reports(capture)
        host = _host_option(capture_host)
        if host == "auto":  # from every flow's packets, not the one at hand
            host = payloads.host_of(capture.flows, output.ttls)
        # one flow: its pair's fit needs no other flow, and is made in memory, as read_capture does
        joint = skew == "remove" and vantage == "receiver" and len(output.flows_written) > 1
        traces = _flow_traces(capture, output, folder, reports=reports, host=host, payload=payload,
                              vantage=vantage, clock_rate=clock_rate, skew="keep" if joint else skew,
                              skew_limit_ppm=skew_limit_ppm)
        yield from _skew_removed(traces, folder, skew_limit_ppm) if joint else traces


def _flow_traces(capture, output: _SpillingOutput, folder: pathlib.Path, *, reports, host, payload, vantage,
                 clock_rate, skew, skew_limit_ppm) -> Iterator[Trace]:
    """The Trace of each flow file in turn, its skew removed as ``capture_trace`` does on the
    flow alone or kept (a warning at the end for the flows that carried no sequence numbers)."""
    skipped = {}
    for flow in sorted(output.flows_written):
        file = folder / f"{flow}.rec"
        # mapped, not read: the flow's records are the file's pages, which the system can drop
        # under pressure and read again (they count in RSS while resident, but are no copy)
        one = dataclasses.replace(capture, records=np.memmap(file, dtype=output.dtype, mode="r"),
                                  notes=list(capture.notes))
        try:
            try:
                packets, taken = payloads.capture_packets(one, payload=payload, vantage=vantage,
                                                          clock_rate=clock_rate, reports=reports, host=host)
            except TraceError as why:  # this flow carries no sequence numbers
                skipped[capture.flows["label"].iat[flow]] = str(why)
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CaptureWarning)  # said once for the capture, below
                trace = capture_trace(one, packets, taken, payload=payload, vantage=vantage, skew=skew,
                                      skew_limit_ppm=skew_limit_ppm)
        finally:
            one = packets = None  # the mapping is closed before its file goes
            file.unlink()
        yield trace
    if skipped:
        warnings.warn(f"{capture.path}: {len(skipped)} flow(s) without sequence numbers skipped "
                      f"({payloads.first_reasons(skipped)})", CaptureWarning, stacklevel=3)


def _skew_removed(traces: Iterator[Trace], folder: pathlib.Path, skew_limit_ppm: float) -> Iterator[Trace]:
    """The traces with each pair of hosts' skew removed, fitted on all the pair's flows (module
    docstring): three passes, one flow's table in memory at a time (each pass a function of
    its own, so that no name keeps a table of the pass before alive)."""
    shells, spans = _tables_written(traces, folder)
    fits = _pair_fits(shells, spans)
    for table, shell in shells:
        trace = remove_skew(dataclasses.replace(shell, packets=feather.read_feather(table)),
                            skew_limit_ppm=skew_limit_ppm, pairs="hosts", fitted=fits)
        table.unlink()
        yield trace


def _tables_written(traces: Iterator[Trace], folder: pathlib.Path) -> tuple[list, dict]:
    """Each trace's PacketTable written to the folder, and the trace without it; and each pair
    of hosts' time span."""
    shells, spans = [], {}
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
    """Add the records written out to the capture's counts (``_account`` saw the kept ones)."""
    counts = capture.counts
    counts["records"] += int(output.spilled.sum()) - int((capture.records["flow"] >= 0).sum())
    kept = np.bincount(capture.records["status"][capture.records["flow"] >= 0], minlength=256)
    for code, name in enumerate(STATUS_NAMES):
        counts[name] += int(output.spilled[code] - kept[code])

