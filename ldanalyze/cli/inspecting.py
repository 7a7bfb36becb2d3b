"""``ldanalyze inspect``: what a trace or capture holds, read whole or flow by flow."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import pandas as pd

from .. import formatting
from ..batch import too_big_to_read_whole, whole_read_limit
from ..formatting import MAIN_SUMMARY_COLUMNS, summary_shown
from ..io import list_flows
from ..io.capture.pcap import RTP_HEAD_BYTES
from ..io.detect import PCAP, PCAPNG
from ..io.ns2 import background_flows
from ..output import json_default, table_records
from ..packets import empty_rtt, natural_sorted
from ..timeline import build_timeline
from .options import byte_size, flow_by_flow, flow_picking, load_timeline, source_paths


def send_time_source(info: dict) -> str:
    """Where a capture stream's send times came from, in words."""
    kind = info.get("kind", "")
    if info.get("send_time") == "abs-send-time":
        return f"abs-send-time header extension (id {info['abs_send_time_id']})"
    if kind == "rtp":
        frames = ", per frame" if "frames" in info else ""
        refused = (
            f"; sender reports refused: {info['sender_report_refused']}" if "sender_report_refused" in info else ""
        )
        envelope = (
            f"; its lower envelope read {info['clock_envelope_rate']:,.0f} Hz" if "clock_envelope_rate" in info else ""
        )
        disagrees = "; the stream's clock disagrees, see the warning" if "clock_given_disagrees" in info else ""
        return (
            f"RTP timestamp at {info.get('clock_rate', float('nan')):g} Hz "
            f"({info.get('clock_source', '?')}{refused}{envelope}{disagrees}){frames}"
        )
    if kind == "tcp":
        return f"TCP TSval at {info.get('clock_rate', float('nan')):g} Hz ({info.get('clock_source', '?')})"
    if kind.startswith(("iperf3", "iperf2")):
        return f"{kind} payload (sender's wall clock)"
    return {"order": "sender's capture time", "vantage": "sender's capture time"}.get(kind, f"{kind} payload")


def _print_streams(meta: dict) -> None:
    rows = []
    for label, info in meta.get("flows", {}).items():
        out = info.get("outgoing", False)
        rows.append(
            {
                "stream": label,
                "kind": info.get("kind", ""),
                "direction": "out" if out else "in",
                "packets": info.get("packets", 0),
                "lost": "-" if out else info.get("lost", 0),
                **({"capture gap": "-" if out else info.get("capture_gap", 0)} if meta.get("capture_outages") else {}),
                "rtx repaired": info.get("rtx_repaired", 0),
                "padding only": info.get("padding_only", 0),
                "fec": info.get("fec_packets", 0),
                "send times from": "- (sent by the capture host)" if out else send_time_source(info),
            }
        )
    records = meta.get("records", {})
    opened = records.get("tunnels")
    if opened or records.get("tunnel_other") or records.get("tunnel_too_deep"):
        kinds = ", ".join(f"{kind} {n}" for kind, n in opened.items()) or "none"
        print(
            f"\ntunnels opened (packets by kind): {kinds}; not opened: {records.get('tunnel_other', 0)} "
            f"(signalling, other protocols), {records.get('tunnel_too_deep', 0)} deeper than 4 tunnels"
        )
    host = meta.get("capture_host")
    if host:
        print(f"\ncapture host: {host['address'] or 'not known'} ({host['how']})")
    if rows:
        print(
            "\nstreams read (send times from the best source each carries; out: sent by the capture host, "
            "captured before the path, so its fates are unknown here):"
        )
        print(pd.DataFrame(rows).to_string(index=False))
    noise = sum(info.get("noise_ssrcs", 0) for info in meta.get("flows", {}).values())
    if noise:
        print(f"noise: {noise} one- or two-packet SSRCs (packets that only look like RTP)")
    for label, why in meta.get("skipped_streams", {}).items():
        print(f"skipped stream {label}: {why}")


@dataclasses.dataclass
class _Inspected:
    """What ``inspect`` reports of a trace, read whole or gathered flow by flow."""

    path: str
    format: str
    meta: dict
    packets: int  # data packets (PacketTable rows)
    routes: int  # losses to routing and mobility
    rtt: pd.DataFrame
    summary: pd.DataFrame  # Timeline.summary


def _inspected(args: argparse.Namespace) -> _Inspected:
    if args.flow_at_a_time or _big_capture(args):
        return _inspected_flow_by_flow(args)
    if args.flows is None:  # inspect shows every flow, background traffic too
        args = argparse.Namespace(**{**vars(args), "flows": ["all"]})
    trace, timeline = load_timeline(args)
    return _Inspected(
        trace.path,
        trace.format,
        trace.meta,
        len(trace.packets),
        int((trace.packets["fate"] == "route").sum()),
        trace.rtt,
        timeline.summary(),
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


def _inspected_flow_by_flow(args: argparse.Namespace) -> _Inspected:
    """``inspect --flow-at-a-time``: each flow's timeline summarised as it is read (memory
    bounded by the largest flow), the capture's meta gathered from the flows'."""
    path = source_paths(args)[0]
    flows = flow_by_flow(args, path)
    summaries, metas, packets, kind = [], [], 0, None
    for trace in flows:
        summaries.append(build_timeline(trace, seq_modulus=args.seq_modulus).summary())
        metas.append(trace.meta)
        packets, kind = packets + len(trace.packets), trace.format
    summary = pd.concat(summaries, ignore_index=True)
    summary = summary.set_index("flow").loc[natural_sorted(summary["flow"])].reset_index()
    assert kind is not None  # a capture without a flow to read raises a TraceError instead
    return _Inspected(flows.path, kind, flows.whole_meta(metas), packets, 0, empty_rtt(), summary)


def cmd_inspect(args: argparse.Namespace) -> int:
    seen = _inspected(args)
    summary = seen.summary
    if args.json:
        payload = {
            "trace": seen.path,
            "format": seen.format,
            "meta": seen.meta,
            "rtt_samples": int(len(seen.rtt)),
            "flows": table_records(summary),
        }
        print(json.dumps(payload, indent=2, default=json_default))
        return 0
    if seen.format in (PCAP, PCAPNG):
        flows = seen.meta.get("capture_flows")
        if flows is None:  # a trace from the batch cache keeps its meta as records
            flows = list_flows(seen.path, head_bytes=RTP_HEAD_BYTES)
        flows = pd.DataFrame(flows)
        print(
            f"{seen.path}: {seen.format}, {len(flows)} flow(s) in the capture, {len(summary)} read as sequenced "
            f"flows or streams ({seen.packets} data packets)"
        )
        shown = flows if args.verbose else flows.head(CAPTURE_FLOWS_SHOWN)
        print("\nflows in the capture (5-tuple and direction; first and last: UTC):")
        print(formatting.text(shown, utc=("first", "last")))
        if len(shown) < len(flows):
            print(f"... and {len(flows) - len(shown)} more (inspect -v lists them all)")
        _print_streams(seen.meta)
    else:
        print(f"{seen.path}: {seen.format}, {len(summary)} flow(s), {seen.packets} data packets")
        shown = set(summary["flow"].astype(str))
        background = [label for label in background_flows(seen.meta.get("flow_types", {})) if label in shown]
        if background:
            types = sorted({kind for label in background for kind in seen.meta["flow_types"][label]})
            print(
                f"background traffic ({', '.join(types)}), which score, sweep and batch leave out unless "
                f"--flows names it (or all): {', '.join(background)}"
            )
    if "vantages" in seen.meta:
        print("\ncaptures along the path (clock fit against the sender's: minimal delay and skew):")
        vantages = pd.DataFrame(seen.meta["vantages"])
        vantages["offset_ms"] = vantages["offset_s"] * 1e3
        print(
            vantages[
                ["path", "cause", "records", "matched", "unmatched", "missed", "offset_ms", "skew_ppm", "skew_status"]
            ]
            .round(3)
            .to_string(index=False)
        )
        print("\nlosses per segment:")
        segments = pd.DataFrame(seen.meta["segments"])
        if not segments["cause_unknown"].any():  # only an air vantage leaves losses without a cause
            segments = segments.drop(columns="cause_unknown")
        print(segments.to_string(index=False))
    if "clock_fit" in seen.meta:
        removed = "skew and offset" if seen.meta.get("offset_removed") else "skew"
        print(
            f"\nclock {removed} fitted per pair of clocks (lower envelope) and removed from the receive times "
            "where the status says applied:"
        )
        print(_clock_fit_text(seen.meta["clock_fit"]))
    if "radio" in seen.meta:  # a receiver's monitor-mode capture: its retries and unseen numbers
        print(f"\n{seen.meta['radio']}")
    if "labels" in seen.meta:
        print("\nlabels: " + ", ".join(f"{k} {v}" for k, v in seen.meta["labels"].items()))
    skipped = seen.meta.get("skipped_lines")
    if skipped:
        print("lines that are no packet event, skipped: " + ", ".join(f"{k} ({v})" for k, v in skipped.items()))
    if seen.routes:
        print("route: losses to routing and mobility; `score` leaves them out of M_c/M_w (see --route-as)")
    ignored = seen.meta.get("ignored_types")
    if ignored:
        print("ignored packet types: " + ", ".join(f"{k} ({v})" for k, v in ignored.items()))
    if len(seen.rtt):
        rtt = seen.rtt.groupby("flow")["rtt"].agg(["size", "mean", "min"])
        print(
            "RTT samples from feedback: "
            + ", ".join(
                f"flow {f}: {int(r['size'])} (mean {r['mean'] * 1e3:.1f} ms, min {r['min'] * 1e3:.1f} ms)"
                for f, r in rtt.iterrows()
            )
        )
    print()
    columns = list(summary.columns) if args.verbose else [c for c in MAIN_SUMMARY_COLUMNS if c in summary.columns]
    print(summary_shown(summary[columns]).to_string(index=False))
    if not args.verbose:
        print(
            "(the main columns; inspect -v shows all, with ROTT and IAT mean, p50, p95 and max, "
            "reordered and duplicates; --json everything)"
        )
    return 0


CAPTURE_FLOWS_SHOWN = 20


# Past this, a fitted offset is the distance between the origins of two unrelated clocks (an
# RTP timestamp's random start against the capture's epoch), not a delay worth showing.
OFFSET_SHOWN_BELOW_S = 3600.0


def _clock_fit_text(fit: pd.DataFrame) -> str:
    """The clock fits as ``inspect`` prints them: skew and its uncertainty in ppm with one
    decimal, the flow's and its pair's samples (the skew rests on the pair's), the offset in ms
    where the two clocks share an origin, and whether each fit was applied."""
    if not len(fit):
        return "  (none: no flow read here has send times on another host's clock)"
    fit = fit.copy()
    columns = {
        "flow": "flow",
        "skew_ppm": "skew ppm",
        "uncertainty_ppm": "± ppm",
        "samples": "samples",
        "pair_samples": "pair samples",
    }
    if fit["reverse_samples"].any():  # both directions (Paxson): each one's own fit
        columns.update(forward_ppm="forward ppm", reverse_ppm="reverse ppm", reverse_samples="reverse samples")
    shared_origin = fit["offset_s"].abs() < OFFSET_SHOWN_BELOW_S
    fit["offset_ms"] = (fit["offset_s"] * 1e3).where(shared_origin)
    columns["offset_ms"] = "offset ms"
    note = (
        ""
        if shared_origin.all()
        else "\n  (offset -: the flow's send times count from an origin of their own, "
        "as an RTP timestamp or a TCP TSval does)"
    )
    columns["status"] = "status"
    decimals = dict.fromkeys(("skew_ppm", "uncertainty_ppm", "forward_ppm", "reverse_ppm", "offset_ms"), 1)
    table = formatting.shown(fit[list(columns)], fixed=decimals).rename(columns=columns)
    return table.to_string(index=False) + note
