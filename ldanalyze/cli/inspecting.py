"""``ldanalyze inspect``: what a trace or capture holds, read whole or flow by flow."""

from __future__ import annotations

import argparse
import os
import sys

import pandas as pd

from ..batch import too_big_to_read_whole, whole_read_limit
from ..io import list_flows
from ..io.capture.payload import NoSequenceNumbers
from ..io.capture.pcap import RTP_HEAD_BYTES
from ..packets import empty_rtt, natural_sorted
from ..report.inspect_text import Inspected, described_json, described_text, inspect_json, inspect_text, is_capture
from ..sender_evidence import joined_evidence, sender_evidence
from ..timeline import build_timeline
from .options import byte_size, described_capture, flow_by_flow, flow_picking, load_timeline, source_paths


def _inspected(args: argparse.Namespace) -> Inspected:
    if args.flow_at_a_time or _big_capture(args):
        return _inspected_flow_by_flow(args)
    if args.flows is None:  # inspect shows every flow, background traffic too
        args = argparse.Namespace(**{**vars(args), "flows": ["all"]})
    trace, timeline = load_timeline(args)
    return Inspected(
        trace.path,
        trace.format,
        trace.meta,
        len(trace.packets),
        int((trace.packets["fate"] == "route").sum()),
        trace.rtt,
        timeline.summary(),
        sender_evidence(trace),
    )


def _big_capture(args: argparse.Namespace) -> bool:
    """Whether ``inspect`` reads its capture one flow at a time by itself, as ``batch`` does: a
    pcap or pcapng file above ``--flow-at-a-time-above`` bytes, no option picking flows or
    streams; by default (``auto``) one larger than a quarter of the memory available would hold
    read whole (``batch.whole_read_limit``). The report is the same either way; a note on
    standard error says which it was."""
    path = args.trace
    limit = byte_size(args.flow_at_a_time_above)
    if not path or flow_picking(args) or not too_big_to_read_whole(path, limit):
        return False
    above = (
        f"more than the {whole_read_limit() / 1e6:,.0f} MB the memory available holds read whole"
        if limit == "auto"
        else f"more than --flow-at-a-time-above ({args.flow_at_a_time_above})"
    )
    print(
        f"ldanalyze: note: {path} holds {os.path.getsize(path) / 1e6:,.0f} MB, {above}: read one flow at a "
        "time, memory bounded by its largest flow ('--flow-at-a-time-above never' reads it whole)",
        file=sys.stderr,
    )
    return True


def _inspected_flow_by_flow(args: argparse.Namespace) -> Inspected:
    """``inspect --flow-at-a-time``: each flow's timeline summarised as it is read (memory
    bounded by the largest flow), the capture's meta gathered from the flows'."""
    path = source_paths(args)[0]
    flows = flow_by_flow(args, path)
    summaries, evidence, metas, rtts, packets, kind = [], [], [], [], 0, None
    for trace in flows:
        summaries.append(build_timeline(trace, seq_modulus=args.seq_modulus).summary())
        evidence.append(sender_evidence(trace))
        metas.append(trace.meta)
        rtts.append(trace.rtt)  # a sender's view's samples (a TCP connection read at its sender)
        packets, kind = packets + len(trace.packets), trace.format
    summary = pd.concat(summaries, ignore_index=True)
    summary = summary.set_index("flow").loc[natural_sorted(summary["flow"])].reset_index()
    assert kind is not None  # a capture without a flow to read raises a TraceError instead
    rtt = pd.concat([r for r in rtts if len(r)], ignore_index=True) if any(len(r) for r in rtts) else empty_rtt()
    sender = joined_evidence(evidence)
    sender = sender.loc[natural_sorted(sender.index)] if len(sender) else pd.DataFrame()
    return Inspected(flows.path, kind, flows.whole_meta(metas), packets, 0, rtt, summary, sender)


def cmd_inspect(args: argparse.Namespace) -> int:
    try:
        seen = _inspected(args)
    except NoSequenceNumbers as error:  # what the capture holds, and why none of it is read
        description = described_capture(args, error)
        sys.stdout.write((described_json if args.json else described_text)(str(error.path), description))
        return 0
    if args.json:
        sys.stdout.write(inspect_json(seen))
        return 0
    flows = None
    if is_capture(seen):
        flows = seen.meta.get("capture_flows")
        if flows is None:  # a trace from the batch cache keeps its meta as records
            flows = list_flows(seen.path, head_bytes=RTP_HEAD_BYTES)
    sys.stdout.write(inspect_text(seen, flows, args.verbose))
    return 0
