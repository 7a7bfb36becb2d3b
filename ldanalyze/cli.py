"""The ``ldanalyze`` command: thin subcommands over the public API.

Exit status: 0 on success, 2 on bad input (the message names the file and line), 1 on any
other failure.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import difflib
import importlib.abc
import json
import os
import pathlib
import signal
import sys
import threading
import time
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import batch as batching
from . import formatting, gates
from .batch import analyze_traces
from .control import OPEN_LOOP_NOTE, PathModel, replay
from .control import REGISTRY as CONTROLLERS
from .control.agreement import agreement
from .errors import TraceError, UsageError
from .formatting import MAIN_SUMMARY_COLUMNS, summary_shown
from .io import FORMATS, list_flows, read_trace
from .io.capture.payload import KINDS, ORDER, ClockRates, FieldSpec
from .io.capture.pcap import RTP_HEAD_BYTES, SKEW_CHOICES, capture_format
from .io.capture.split import read_capture_flows
from .io.capture.vantage import CLOCKS, parse_vantage, read_vantages
from .io.detect import PCAP, PCAPNG
from .io.labels import apply_labels, write_labels
from .io.ns2 import background_flows
from .lda import REGISTRY, Replay, classify, parse_ldas, runnable_ldas
from .lda.zbs import Zbs
from .output import atomic_write, json_default
from .packets import LOSS_FATES, Trace, empty_rtt, natural_sorted
from .report import ci
from .report.tables import markdown_table, text_table
from .scoring import ROUTE_AS, score
from .timeline import build_timeline
from .version import VERSION


def _csv_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _byte_size(text: str) -> int | None:
    """``512M``, ``2G``, ``1.5G``, ``0`` or a plain byte count (binary units, a trailing B or
    iB allowed); None for ``never``."""
    if text.strip().lower() == "never":
        return None
    number = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = number[-1:] if number[-1:] in "KMGT" else ""
    try:
        value = float(number[: len(number) - len(unit)]) * SIZE_UNITS[unit]
    except ValueError:
        value = -1.0
    if not 0 <= value < float(1 << 62):
        raise UsageError(f"{text!r} is no size: give bytes, or a number with K, M, G or T (1G), or 'never'")
    return int(value)


def _clock_rates(text: str) -> ClockRates:
    try:
        return ClockRates.parse(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _drop_cause(text: str) -> tuple[str, str]:
    key, sep, cause = text.rpartition("=")
    if not sep or len(key.split()) != 2:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 'LEVEL REASON=CAUSE', e.g. 'RTR CBK=wireless'")
    return " ".join(key.split()), cause.strip()


def _trace_options(args: argparse.Namespace) -> dict:
    options = {"format": args.trace_format}
    if args.data_types:
        options["data_types"] = args.data_types
    if args.feedback_types:
        options["feedback_types"] = args.feedback_types
    if args.flow_by:
        options["flow_by"] = args.flow_by
    if args.drop_cause:
        options["causes"] = dict(args.drop_cause)
    return options


def _read(args: argparse.Namespace, path: str | None) -> Trace:
    """The trace of ``path``, or of the ``--vantage`` chain when ``path`` is None, with the
    ``--labels`` file joined on."""
    if path is None:
        ignored = [
            flag
            for flag, given in (
                ("--skew", args.skew),
                ("--trace-format", args.trace_format != "auto"),
                ("--field", args.field),
                ("--clock-rate", args.clock_rate),
                ("--ssrc", args.ssrc),
                ("--capture-host", args.capture_host),
                ("--data-types", args.data_types),
                ("--feedback-types", args.feedback_types),
                ("--flow-by", args.flow_by),
                ("--drop-cause", args.drop_cause),
            )
            if given
        ]
        if ignored:
            raise UsageError(f"{', '.join(ignored)} do(es) not apply to a --vantage chain (see --clocks)")
        chain_options = {"skew_limit_ppm": args.skew_limit} if args.skew_limit is not None else {}
        trace = read_vantages(
            args.vantage,
            clocks=args.clocks or "separate",
            payload=args.payload or "auto",
            flows=args.flows,
            **chain_options,
        )
    else:
        options = _trace_options(args)
        for name in ("payload", "skew", "flows", "clock_rate", "ssrc", "capture_host"):
            if getattr(args, name):
                options[name] = getattr(args, name)
        if args.rtp_sequence != "ssrc":
            options["rtp_sequence"] = args.rtp_sequence
        if args.skew_limit is not None:
            options["skew_limit_ppm"] = args.skew_limit
        if args.field:
            if args.payload:
                raise UsageError("give either --payload or --field")
            options["payload"] = FieldSpec.parse(args.field)
        trace = read_trace(path, **options)
    return apply_labels(trace, args.labels) if args.labels else trace


def _sources(args: argparse.Namespace) -> list[str | None]:
    """The traces named on the command line; None stands for the ``--vantage`` chain."""
    paths = args.traces if hasattr(args, "traces") else [args.trace] if args.trace else []
    if args.vantage:
        if len(args.vantage) < 2:
            raise UsageError("--vantage: a chain needs the sender's capture and at least one more")
        paths = [*paths, None]
    if not paths:
        raise UsageError("give a trace file, or a capture chain with --vantage (at least two)")
    if args.clocks and not args.vantage:
        raise UsageError("--clocks is about a --vantage chain")
    if args.labels and len(paths) > 1:
        raise UsageError("--labels joins one labels file onto one trace; give one trace (or one --vantage chain)")
    if not hasattr(args, "traces") and len(paths) > 1:
        raise UsageError("give either a trace file or a --vantage chain, not both")
    folders = [p for p in paths if p is not None and os.path.isdir(p)]
    if folders:
        raise UsageError(
            f"{folders[0]} is a folder: name its traces, or score the whole suite with "
            f"`ldanalyze batch {folders[0]}` (docs/batch.md)"
        )
    return paths


def _inputs(args: argparse.Namespace) -> list[str]:
    """Every file the command reads: never to be overwritten."""
    named = [p for p in _sources(args) if p is not None]
    chain = [parse_vantage(v).path for v in args.vantage or []]
    return named + chain + ([args.labels] if args.labels else [])


def _load(args: argparse.Namespace):
    trace = _read(args, _sources(args)[0])
    return trace, build_timeline(trace, seq_modulus=args.seq_modulus)


def _replay(args: argparse.Namespace) -> Replay:
    return Replay(update_first=not args.classify_first, gap_delay=args.gap_delay, detection=args.detection)


def _atomic_write(output: str, inputs: Sequence[str], write) -> None:
    """``output.atomic_write``, never over an input."""
    _refuse_overwriting(os.path.abspath(output), inputs)
    atomic_write(output, write)


def _refuse_overwriting(output: str, inputs: Sequence[str]) -> None:
    for path in inputs:
        if os.path.exists(output) and os.path.samefile(path, output):
            raise UsageError(f"refusing to overwrite the input trace {path}")


TABLE_KINDS = ("parquet", "csv", "json")


def _table_kind(output: str, kind: str | None) -> str:
    """The format a table is written in: ``kind``, else by the name (.parquet, .csv, .csv.gz,
    .json)."""
    if kind:
        return kind
    if output.endswith(".parquet"):
        return "parquet"
    if output.endswith((".csv", ".csv.gz")):
        return "csv"
    if output.endswith(".json"):
        return "json"
    raise UsageError(f"{output}: a table is written as .parquet, .csv, .csv.gz or .json; give one of these names")


def _write_table(table: pd.DataFrame, output: str, inputs: Sequence[str], kind: str | None) -> str:
    """Write ``table`` as .parquet, .csv or .csv.gz, or .json (an array of records, a record a
    line), by ``kind`` or the extension."""
    _refuse_overwriting(output, inputs)  # said first: the worse mistake
    kind = _table_kind(output, kind)
    if kind == "parquet":
        _atomic_write(output, inputs, lambda tmp: table.to_parquet(tmp, index=False))
    elif kind == "json":
        _atomic_write(output, inputs, lambda tmp: pathlib.Path(tmp).write_text(ci.table_text(table)))
    else:
        compression = "gzip" if output.endswith(".gz") else None
        _atomic_write(output, inputs, lambda tmp: table.to_csv(tmp, index=False, compression=compression))
    return kind


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
        return (
            f"RTP timestamp at {info.get('clock_rate', float('nan')):g} Hz "
            f"({info.get('clock_source', '?')}{refused}){frames}"
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
                "rtx repaired": info.get("rtx_repaired", 0),
                "padding only": info.get("padding_only", 0),
                "fec": info.get("fec_packets", 0),
                "send times from": "- (sent by the capture host)" if out else send_time_source(info),
            }
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
    trace, timeline = _load(args)
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
    streams. The report is the same either way; a note on standard error says which it was."""
    limit, path = _byte_size(args.flow_at_a_time_above), args.trace
    if limit is None or not path or _flow_picking(args):
        return False
    try:
        size = os.path.getsize(path)
    except OSError:
        return False  # the reader says what is wrong with the file
    if size <= limit or capture_format(path) is None:
        return False
    print(
        f"ldanalyze: note: {path} holds {size / 1e6:,.0f} MB, more than --flow-at-a-time-above "
        f"({args.flow_at_a_time_above}): read one flow at a time, memory bounded by its largest flow "
        "('--flow-at-a-time-above never' reads it whole)",
        file=sys.stderr,
    )
    return True


def _inspected_flow_by_flow(args: argparse.Namespace) -> _Inspected:
    """``inspect --flow-at-a-time``: each flow's timeline summarised as it is read (memory
    bounded by the largest flow), the capture's meta gathered from the flows'."""
    path = _sources(args)[0]
    flows = _flow_by_flow(args, path)
    summaries, metas, packets, kind = [], [], 0, None
    for trace in flows:
        summaries.append(build_timeline(trace, seq_modulus=args.seq_modulus).summary())
        metas.append(trace.meta)
        packets, kind = packets + len(trace.packets), trace.format
    summary = pd.concat(summaries, ignore_index=True)
    summary = summary.set_index("flow").loc[natural_sorted(summary["flow"])].reset_index()
    return _Inspected(path, kind, flows.whole_meta(metas), packets, 0, empty_rtt(), summary)


def cmd_inspect(args: argparse.Namespace) -> int:
    seen = _inspected(args)
    summary = seen.summary
    if args.json:
        payload = {
            "trace": seen.path,
            "format": seen.format,
            "meta": seen.meta,
            "rtt_samples": int(len(seen.rtt)),
            "flows": json.loads(summary.to_json(orient="records")),
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
            vantages[["path", "cause", "records", "matched", "unmatched", "missed", "offset_ms", "skew_ppm"]]
            .round(3)
            .to_string(index=False)
        )
        print("\nlosses per segment:")
        print(pd.DataFrame(seen.meta["segments"]).to_string(index=False))
    if "clock_fit" in seen.meta:
        removed = "skew and offset" if seen.meta.get("offset_removed") else "skew"
        print(
            f"\nclock {removed} fitted per pair of clocks (lower envelope) and removed from the receive times "
            "where the status says applied:"
        )
        print(_clock_fit_text(seen.meta["clock_fit"]))
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


def cmd_labels(args: argparse.Namespace) -> int:
    trace = _read(args, _sources(args)[0])
    losses = int(trace.packets["fate"].isin(LOSS_FATES).sum())
    _atomic_write(args.output, _inputs(args), lambda tmp: write_labels(trace, tmp))
    print(f"wrote {losses} labels (the losses of {trace.path}) to {args.output}")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    _, timeline = _load(args)
    table = timeline.per_packet()
    table["fate"] = table["fate"].astype(str)
    table["kind"] = table["kind"].astype(str).replace("nan", "")
    kind = _write_table(table, args.output, _inputs(args), args.output_format)
    print(f"wrote {len(table)} packets of {len(timeline.flows)} flow(s) to {args.output} ({kind})")
    return 0


def cmd_classify(args: argparse.Namespace) -> int:
    trace, timeline = _load(args)
    ldas = runnable_ldas(timeline, args.lda)
    decisions = classify(timeline, ldas, replay=_replay(args))
    if args.output:
        table = decisions.astype({"lda": str, "flow": str, "decision": str})
        kind = _write_table(table, args.output, _inputs(args), args.output_format)
        print(
            f"wrote {len(table)} decisions ({table['lda'].nunique()} LDAs, "
            f"{len(timeline.losses)} lost packets) to {args.output} ({kind})"
        )
        return 0
    counts = decisions.groupby(["lda", "decision"], observed=False).size().unstack(fill_value=0)
    print(
        f"{trace.path}: {len(timeline.losses)} lost packets in {len(timeline.gaps)} gaps; "
        "decisions per LDA (write them all with -o FILE):"
    )
    print(counts.to_string())
    lossy = set(timeline.losses["flow"].astype(str))
    for lda in ldas:
        if isinstance(lda, Zbs):
            usage = lda.usage(timeline).set_index("flow") * 100
            usage = usage[usage.index.astype(str).isin(lossy)]  # where it decided something
            if len(usage):
                print(
                    f"\n{lda.spec}: share of time each base scheme was in force (%), in the {len(usage)} "
                    "flow(s) with losses:"
                )
                print(usage.round(1).to_string())
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    from . import closedloop

    log = closedloop.read_decision_log(args.log)
    _, timeline = _load(args)
    decisions = classify(timeline, list(closedloop.LOG_LDAS))
    summary, differences = closedloop.agreement(decisions, log)
    print(
        f"{args.trace}: the receiver's decisions ({args.log}, {len(log)} lost packets, steered by "
        f"{', '.join(sorted(set(log['driver'])))}) against the offline replay of this trace:"
    )
    shown = summary.assign(agreement=(summary["agreement"] * 100).round(2)).rename(columns={"agreement": "agreement %"})
    print(shown.to_string(index=False))
    if differences.empty:
        print("every LDA decided every loss alike in both implementations")
        return 0
    print(f"\n{len(differences)} difference(s), the first 20:")
    print(differences.head(20).to_string(index=False))
    return 1


SCORE_FORMATS = {".json": "json", ".csv": "csv", ".md": "md", ".txt": "table"}


def _score_format(output: str | None, given: str | None) -> str:
    """What ``score`` writes: ``--format``, else what ``-o``'s extension promises (text for
    another); an extension that promises something else is refused."""
    suffix = pathlib.Path(output).suffix.lower() if output else ""
    if suffix in (".html", ".htm"):
        raise UsageError(
            f"score writes a table (text, JSON, CSV or Markdown), not {output}: for an HTML page "
            f"with the plots, use `ldanalyze report TRACE -o {output}`"
        )
    promised = SCORE_FORMATS.get(suffix)
    if given and promised and given != promised:
        raise UsageError(f"-o {output} promises {promised}, but --format {given} was given")
    return given or promised or "table"


def cmd_score(args: argparse.Namespace) -> int:
    if args.average == "mean" and args.by == "flow":
        raise UsageError("--average mean needs --by trace or --by pooled (a flow is its own mean)")
    controller = {"none": None, "auto": "tfrc"}.get(args.controller, args.controller)
    batch = analyze_traces(
        _score_traces(args),
        args.lda,
        controller=controller,
        controller_optional=args.controller == "auto",
        replay_options=_replay(args),
        path_model=_path(args),
        seq_modulus=args.seq_modulus,
    )
    scores = score(
        batch.decisions,
        batch.summary,
        by=args.by,
        average=args.average,
        bootstrap=args.bootstrap,
        seed=args.seed,
        throughput=batch.throughput,
        route_as=args.route_as,
    )
    args.format = _score_format(args.output, args.format)
    if batch.throughput is not None and args.format == "table":
        print(f"throughput: {OPEN_LOOP_NOTE}", file=sys.stderr)
    if args.format == "json":
        text = scores.to_json(orient="records", indent=2) + "\n"
    elif args.format == "csv":
        text = scores.to_csv(index=False)
    elif args.format == "md":
        text = markdown_table(scores)
    elif scores.empty:
        flows = 0 if batch.summary is None else len(batch.summary)
        text = f"nothing to score: no flow lost a packet ({flows} flow(s) read; `inspect` shows them)\n"
    else:
        text = text_table(scores)
    if args.output:
        _atomic_write(args.output, _inputs(args), lambda tmp: pathlib.Path(tmp).write_text(text))
        print(f"wrote {len(scores)} score rows to {args.output} ({args.format})")
    else:
        sys.stdout.write(text)
    return 0


def _score_traces(args: argparse.Namespace):
    """The traces ``score`` reads: one per file, or with ``--flow-at-a-time`` one per flow of
    each capture (``read_capture_flows``: memory bounded by the largest flow)."""
    if not args.flow_at_a_time:
        for path in _sources(args):
            trace = _read(args, path)
            _note_unscored(trace)
            yield trace
        return
    for path in _sources(args):
        yield from _flow_by_flow(args, path)


def _note_unscored(trace: Trace) -> None:
    """Say on standard error which flows of an ns-2 trace are left out of the scores, and why."""
    left_out = trace.meta.get("unscored_flows")
    if not left_out:
        return
    by_reason: dict[str, list[str]] = {}
    for label, why in left_out.items():
        by_reason.setdefault(why, []).append(label)
    parts = [
        ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "") + f" ({why})"
        for why, labels in by_reason.items()
    ]
    hint = "; --flows all scores every flow" if any(why.startswith("background") for why in by_reason) else ""
    print(f"{trace.path}: flows not scored: {'; '.join(parts)}{hint}", file=sys.stderr)


def _flow_picking(args: argparse.Namespace) -> list[str]:
    """The options given that pick flows or streams, or join labels: a reading flow by flow
    takes none of them."""
    return [
        flag
        for flag, value in (
            ("--vantage", args.vantage),
            ("--labels", args.labels),
            ("--flows", args.flows),
            ("--ssrc", args.ssrc),
            ("--rtp-sequence", args.rtp_sequence != "ssrc"),
        )
        if value
    ]


def _flow_by_flow(args: argparse.Namespace, path: str | None):
    """``read_capture_flows`` of the capture at ``path`` with the command line's options
    (``--flow-at-a-time``), or a usage error for an option that picks flows or streams."""
    given = _flow_picking(args)
    if given:
        raise UsageError(f"--flow-at-a-time reads whole captures flow by flow; it takes no {', '.join(given)}")
    if capture_format(path) is None:
        raise UsageError(f"--flow-at-a-time reads pcap and pcapng captures; {path} is not one")
    options = {"payload": FieldSpec.parse(args.field) if args.field else args.payload or "auto"}
    if args.clock_rate:
        options["clock_rate"] = args.clock_rate
    if args.skew:
        options["skew"] = args.skew
    if args.skew_limit is not None:
        options["skew_limit_ppm"] = args.skew_limit
    if args.capture_host:
        options["capture_host"] = args.capture_host
    return read_capture_flows(path, **options)


def _path(args: argparse.Namespace) -> PathModel:
    return PathModel(reverse_delay=args.reverse_delay, base_rtt=args.base_rtt, capacity=args.capacity)


def cmd_replay(args: argparse.Namespace) -> int:
    trace, timeline = _load(args)
    result = replay(timeline, args.controller, args.lda, replay=_replay(args), path=_path(args))
    if args.output:
        table = result.rates.astype({"lda": str, "controller": str, "flow": str})
        kind = _write_table(table, args.output, _inputs(args), args.output_format)
        print(f"wrote {len(table)} rate steps to {args.output} ({kind}); {OPEN_LOOP_NOTE}")
    summary = result.summary.copy()
    print(f"{trace.path}: modeled throughput per flow ({OPEN_LOOP_NOTE})")
    for col in ("mean_rate_bps", "capacity_bps"):
        summary[col] = summary[col] / 1e3
    summary = summary.rename(columns={"mean_rate_bps": "mean_kbps", "capacity_bps": "capacity_kbps"})
    print(
        formatting.text(
            summary,
            percent={"thput": "thput %"},
            fixed={"mean_kbps": 1, "capacity_kbps": 1, "seconds": 1, "vs_omniscient": 2, "vs_unaware": 2},
        )
    )
    if args.compare_sent:
        capacity = result.summary.drop_duplicates("flow").set_index("flow")["capacity_bps"]
        table = agreement(result.rates, timeline, args.compare_sent, capacity_bps=capacity)
        print(f"\nallowed rate against the rate the trace's sender sent, in {args.compare_sent:g} s bins:")
        table[["allowed_bps", "sent_bps"]] = table[["allowed_bps", "sent_bps"]] / 1e3
        table = table.rename(columns={"allowed_bps": "allowed_kbps", "sent_bps": "sent_kbps"})
        print(
            formatting.text(
                table, fixed={"allowed_kbps": 1, "sent_kbps": 1, "ratio": 3, "capped_ratio": 3, "correlation": 3}
            )
        )
    return 0


def _bits_per_second(text: str) -> float:
    """'150k', '1.5M', '2e6' → bits/s."""
    scale = {"k": 1e3, "m": 1e6, "g": 1e9}.get(text[-1:].lower(), 1.0)
    number = text[:-1] if scale != 1.0 else text
    try:
        return float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a rate in bits/s: {text!r} (e.g. 150k, 1.5M)") from None


BATCH_DEFAULTS = {
    "lda": "all",
    "controller": "auto",
    "fail_if": [],
    "fail_scope": "pooled",
    "baseline": None,
    "tolerance": 0.02,
    "baseline_ci": False,
    "jobs": os.cpu_count() or 1,
    "scheduler": None,
    "cache_dir": None,
    "no_cache": False,
    "exclude": [],
    "bootstrap": 0,
    "strict": False,
    "manifest": None,
    "output": None,
    "errors": None,
    "junit": None,
    "summary": None,
    "json": None,
    "quiet": False,
    "flow_at_a_time_above": "1G",
    "classify_first": False,
    "gap_delay": "revealing",
    "detection": 1,
    "seq_modulus": None,
}


def _replay_options(*, defaults: bool) -> argparse.ArgumentParser:
    """A parent parser of the LDA and replay options. Without ``defaults`` (``batch``), an
    option not given is None, so that the settings file's value stands (``BATCH_DEFAULTS``
    has the same defaults); parents' actions are shared, so each use makes its own."""

    def default(value):
        return value if defaults else None

    replaying = argparse.ArgumentParser(add_help=False)
    replaying.add_argument(
        "--lda",
        default=default("all"),
        metavar="SPEC,SPEC",
        help="LDAs to replay: 'all' (default) or a comma-separated list of NAME or "
        "NAME:key=value:... (e.g. mbiaz:upper=1.3); names: " + ", ".join(REGISTRY),
    )
    replaying.add_argument(
        "--classify-first",
        action="store_true",
        help="decide a gap with the state before the packet that reveals it (default: fold that packet in first)",
    )
    replaying.add_argument(
        "--gap-delay",
        choices=("revealing", "previous"),
        default=default("revealing"),
        help="judge a gap by the delay of the packet after it (default) or before it",
    )
    replaying.add_argument(
        "--detection",
        type=int,
        default=default(1),
        metavar="K",
        help="decide a gap at the K-th arrival above it (1: at once, default; 3: RFC 5348's rule)",
    )
    return replaying


def _batch_settings(args: argparse.Namespace) -> dict:
    """Command line over the config file (ldanalyze.toml or [tool.ldanalyze]) over defaults."""
    config, source = batching.load_config(".")
    unknown = sorted(set(k.replace("-", "_") for k in config) - set(BATCH_DEFAULTS) - {"paths"})
    if unknown:
        raise UsageError(f"{source}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(BATCH_DEFAULTS)})")
    settings = {**BATCH_DEFAULTS, **{k.replace("-", "_"): v for k, v in config.items()}}
    for key in BATCH_DEFAULTS:
        given = getattr(args, key, None)
        if given is not None and given is not False:  # 0 is given (--tolerance 0), an unset flag is not
            settings[key] = given
    settings["paths"] = args.paths or config.get("paths", [])
    settings["config"] = source
    return settings


def _check_outputs(s: dict) -> None:
    """Before a batch runs: its tables' names say a known format, and no two outputs are one
    file (the second written would replace the first)."""
    for table in ("output", "errors"):
        if s[table]:
            _table_kind(s[table], None)
    outputs = [(key, s[key]) for key in ("output", "errors", "junit", "summary", "json") if s[key]]
    for i, (key, path) in enumerate(outputs):
        for other, other_path in outputs[:i]:
            if os.path.abspath(path) == os.path.abspath(other_path):
                raise UsageError(f"--{key} and --{other} name the same file, {path}: one would overwrite the other")


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM (a CI runner cancelling or timing out a job) stops the batch as Ctrl-C does, so
    that the outputs are written for the traces done; the list it yields is not empty once
    SIGTERM came."""
    came: list[int] = []

    def interrupt(signum, frame):
        came.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


def _usable_folder(path: str, option: str) -> None:
    """Make the folder ``path`` if need be; refuse one that cannot be made or written to, as
    bad usage before the run (it failed every trace with the same OSError)."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot make this folder ({exc.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: this folder cannot be written to")


def _progress(total: int, quiet: bool = False):
    """A progress bar on a terminal; one line per trace in a log; with ``quiet``, a line per
    trace that failed only."""
    start = time.perf_counter()
    state = {"done": 0, "packets": 0}
    bar = None
    if sys.stderr.isatty() and not quiet:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="trace", file=sys.stderr)

    def step(outcome) -> None:
        state["done"] += 1
        state["packets"] += outcome.packets
        rate = state["packets"] / max(time.perf_counter() - start, 1e-9)
        if bar is not None:
            bar.set_postfix_str(f"{rate / 1e3:.0f} k packets/s")
            bar.update(1)
            return
        if quiet and not outcome.error:
            return
        status = f"error: {outcome.error.splitlines()[0]}" if outcome.error else f"{outcome.packets} packets"
        cached = ", cached" if outcome.cached else ""
        print(
            f"batch: [{state['done']}/{total}] {outcome.job.name}: {status} ({outcome.seconds:.2f} s{cached})",
            file=sys.stderr,
            flush=True,
        )

    return step, bar


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import parse_param, sweep

    grid = dict(parse_param(text) for text in args.param)
    if args.vantage or args.labels:
        raise UsageError("sweep scores trace files; give them as arguments (no --vantage, --labels)")
    if args.lda != "all":
        raise UsageError(
            f"sweep varies the LDA named first (sweep {args.swept} TRACE --param ...); "
            f"--lda {args.lda} does not apply to it"
        )
    table = sweep(
        args.traces, args.swept, grid, replay=_replay(args), seq_modulus=args.seq_modulus, **_trace_options(args)
    )
    shown = table.drop(columns=["spec"])
    if args.output:
        _write_table(table, args.output, _inputs(args), None)
        print(f"wrote {len(table)} grid points to {args.output}")
    else:
        print(formatting.text(shown, percent=("M_c", "M_w", "accuracy")))
    front = table[table["pareto"]]
    default = table[table["default"]].iloc[0]
    print(
        f"\n{len(table)} points ({table.attrs['refused']} refused by {args.swept}), {len(front)} on the M_c-M_w "
        f"frontier; the defaults ({default['spec']}) are {'on' if default['pareto'] else 'off'} it"
    )
    if args.plot:
        from .report import plots

        _atomic_write(args.plot, _inputs(args), lambda tmp: plots.sweep(table).savefig(tmp, format="png", dpi=100))
        print(f"wrote the frontier plot to {args.plot}")
    return 0


def _labelled(args: argparse.Namespace) -> list:
    """Every trace named (or the --vantage chain, or one trace with --labels), analysed once
    for the learned LDA: features, labels, the heuristics' decisions."""
    from . import learn

    items = []
    for path in _sources(args):
        items.append(learn.analyse(_read(args, path), replay=_replay(args)))
        print(
            f"  {items[-1].name}: {len(items[-1].features)} gaps, {int(np.isfinite(items[-1].labels).sum())} with "
            "a known cause",
            file=sys.stderr,
        )
    return items


def cmd_train(args: argparse.Namespace) -> int:
    from . import learn
    from .lda.learned import save_model

    items = _labelled(args)
    model, gaps = learn.fit(items, args.model, args.seed)
    names = ["+".join(os.path.basename(part) for part in item.name.split("+")) for item in items]  # chains: a+b+c
    _atomic_write(
        args.output, _inputs(args), lambda tmp: save_model(model, tmp, kind=args.model, trained_on=names, gaps=gaps)
    )
    print(
        f"trained a {args.model} model on {gaps} gaps of {len(items)} trace(s); wrote {args.output} "
        f"(use it as --lda learned:model={args.output})"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from . import learn

    for path in args.traces:  # a bad pattern is said before any trace is read
        learn.group_of(path, args.group_by)
    items = _labelled(args)
    groups = [learn.group_of(item.name, args.group_by) for item in items]
    table, importance = learn.evaluate(items, groups, args.model, args.seed)
    verdicts = learn.verdicts(table)
    print("grouped cross-validation: each group held out in turn, trained on the others")
    print(
        formatting.text(
            table[
                [
                    "held_out",
                    "lda",
                    "losses",
                    "scored",
                    "M_c",
                    "M_w",
                    "accuracy",
                    "accuracy_lo",
                    "accuracy_hi",
                    "train_gaps",
                    "test_traces",
                ]
            ],
            percent={
                "M_c": "M_c %",
                "M_w": "M_w %",
                "accuracy": "accuracy %",
                "accuracy_lo": "95% CI lo",
                "accuracy_hi": "hi",
            },
        )
    )
    print()
    for row in verdicts.itertuples():
        print(
            f"held out {row.held_out}: learned {row.learned_accuracy:.1%} against the best heuristic "
            f"({row.best_heuristic}) {row.best_accuracy:.1%}: {row.verdict}"
        )
    print("\nfeature importance (mean drop of gap accuracy when shuffled, held-out gaps; percentage points):")
    points = importance.pivot(index="feature", columns="held_out", values="importance") * 100
    print(points.map(lambda v: formatting.number(v, 2)).to_string())
    if args.output:
        _write_table(table, args.output, _inputs(args), None)
        print(f"wrote {args.output}")
    if args.plot:
        from .report import plots

        _atomic_write(
            args.plot,
            _inputs(args),
            lambda tmp: plots.evaluation(table, importance).savefig(tmp, format="png", dpi=100),
        )
        print(f"wrote the figure to {args.plot}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import reproduce

    if args.paper != "paper000":
        raise UsageError(f"reproduce knows paper000, not {args.paper!r}")
    closed = None
    if args.closed_loop:
        from .closedloop import patched_ns

        print("ns-2.35 with the LDA receiver (built once per patch text, minutes the first time): ", end="", flush=True)
        closed = patched_ns()
        print(closed, flush=True)
    done = reproduce(args.output, quick=args.quick, jobs=args.jobs, closed=closed)
    checks = pd.read_csv(done["written"]["checks"])
    print(
        f"{done['traces']} traces ({done['simulated']} simulated now, the rest from the cache) scored in "
        f"{done['seconds']:.0f} s; wrote {args.output}/README.md, results.csv, tables II and III, figures and checks.csv"
    )
    for row in checks.itertuples():
        print(f"  [{row.holds:>10}] {row.traffic}: {row.claim}: {row.evidence}")
    if done["closed"]:
        equal, total = done["closed"]["agreement"]
        print(f"closed loop: the receivers' decisions and the offline replay agree on {equal:,} of {total:,}")
        print("closed loop (open -> closed), written to closed_loop.csv, checks_closed.csv, model_vs_truth.csv:")
        for row in done["closed"]["checks"].itertuples():
            print(f"  [{row.holds_open:>10} -> {row.holds_closed:<10}] {row.claim}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report.html import build_report

    traces = [_read(args, path) for path in _sources(args)]
    controller = None if args.controller == "none" else args.controller
    page = build_report(traces, ldas=args.lda, controller=controller)
    _atomic_write(args.output, _inputs(args), lambda tmp: pathlib.Path(tmp).write_text(page))
    print(f"wrote {args.output} ({len(page) / 1e6:.1f} MB, {len(traces)} trace(s))")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    s = _batch_settings(args)
    thresholds = [gates.Threshold.parse(t) for t in s["fail_if"]]
    gates.check_threshold_names(thresholds, [lda.spec for lda in parse_ldas(s["lda"])])
    baseline = gates.read_results(s["baseline"]) if s["baseline"] else None
    _check_outputs(s)
    jobs = batching.read_manifest(s["manifest"]) if s["manifest"] else []
    traces, passed_over = batching.discover(s["paths"], s["exclude"]) if s["paths"] else ([], {})
    jobs += [batching.Job(name=path, path=path) for path in traces]
    if not jobs:
        raise UsageError("batch: no trace found (give files, folders or globs, or a --manifest)")
    inputs = [f for job in jobs for f in job.files] + [j.labels for j in jobs if j.labels]
    cache_dir = (
        None
        if s["no_cache"]
        else (
            s["cache_dir"]
            or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ldanalyze")
        )
    )
    if cache_dir:
        _usable_folder(cache_dir, "--cache-dir")
    controller = {"none": None, "auto": "tfrc"}.get(s["controller"], s["controller"])
    replay = Replay(update_first=not s["classify_first"], gap_delay=s["gap_delay"], detection=s["detection"])
    analysis = batching.Analysis(
        ldas=s["lda"],
        controller=controller,
        replay=replay,
        seq_modulus=s["seq_modulus"],
        cache_dir=cache_dir,
        flow_at_a_time_above=_byte_size(str(s["flow_at_a_time_above"])),
        keep="bursts" if int(s["bootstrap"]) else "counts",
    )
    step, bar = _progress(len(jobs), quiet=s["quiet"])
    with _terminate_as_interrupt() as terminated:
        outcomes = batching.execute(
            jobs, analysis, workers=int(s["jobs"]), scheduler=s["scheduler"], on_outcome=step, strict=s["strict"]
        )
    if bar is not None:
        bar.close()
    interrupted = len(outcomes) < len(jobs)
    results = batching.results_table(outcomes, bootstrap=int(s["bootstrap"]))
    errors = batching.errors_table(outcomes)
    checks = [gates.check_thresholds(results, thresholds, s["fail_scope"])] if thresholds and len(results) else []
    if baseline is not None:
        checks.append(gates.compare_baseline(results, baseline, float(s["tolerance"]), bool(s["baseline_ci"])))
    checks = pd.concat(checks, ignore_index=True) if checks else pd.DataFrame(columns=["check", "status", "message"])
    failed_checks = int(checks["status"].isin(ci.FAILED).sum())
    passed = failed_checks == 0 and errors.empty and not interrupted
    done = [o.job.name for o in outcomes]
    # without losses: read and analysed, but nothing lost to score
    counts = {"passed_over": passed_over, "without_losses": len(outcomes) - len(errors) - ci.scored_traces(results)}

    if s["output"]:
        _write_table(results, s["output"], inputs, None)
    if s["errors"]:
        _write_table(errors, s["errors"], inputs, None)
    if s["junit"]:
        _atomic_write(s["junit"], inputs, lambda tmp: pathlib.Path(tmp).write_text(ci.junit_xml(done, errors, checks)))
    if s["summary"]:
        text = ci.markdown_summary(results, errors, checks, passed=passed, **counts)
        _atomic_write(s["summary"], inputs, lambda tmp: pathlib.Path(tmp).write_text(text))
    if s["json"]:
        report = ci.json_report(results, errors, checks, passed=passed, **counts)
        _atomic_write(s["json"], inputs, lambda tmp: pathlib.Path(tmp).write_text(ci.report_text(report)))

    print(
        "batch: "
        + ci.counts_line(results, errors, **counts)
        + (f" (settings from {s['config']})" if s["config"] else "")
    )
    for _, row in errors.iterrows():
        first = row["error"].splitlines()[0]  # a reader's error names its file already
        print(f"  error: {first if first.startswith(str(row['trace'])) else row['trace'] + ': ' + first}")
    for old, new in gates.retuned_ldas(results["lda"], baseline["lda"]).items() if baseline is not None else ():
        print(f"  baseline: {new} compared with the baseline's {old} (the one LDA of its kind that changed)")
    for line in ci.failed_lines(checks):
        print(f"  {line}")
    if interrupted:
        print(
            f"batch: {'terminated' if terminated else 'interrupted'} after {len(outcomes)} of {len(jobs)} "
            "traces; the outputs hold those"
        )
        return 143 if terminated else 130
    if not s["output"] and len(results):
        sys.stdout.write(text_table(results[results["scope"] == "pooled"].drop(columns=["scope", "trace", "flow"])))
    return 0 if passed else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ldanalyze",
        description="Offline analysis of loss differentiation algorithms over ns-2 traces and pcap/pcapng captures.",
    )
    parser.add_argument("--version", action="version", version=f"ldanalyze {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)
    parser.commands = sub.choices  # each command's parser, for the suggestions of _unrecognized

    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument(
        "--trace-format",
        default="auto",
        choices=("auto",) + FORMATS,
        help="trace format (default: detected from the content)",
    )
    reading.add_argument(
        "--data-types",
        type=_csv_list,
        metavar="T,T",
        help="packet types that are data (default: tcpFriend,cbr,udp,tcp,exp,...)",
    )
    reading.add_argument(
        "--feedback-types",
        type=_csv_list,
        metavar="T,T",
        help="packet types that are feedback/ACKs (default: tcpFriendCtl,ack,rtcp)",
    )
    reading.add_argument(
        "--drop-cause",
        action="append",
        type=_drop_cause,
        metavar="'LEVEL REASON=CAUSE'",
        help="ns-2 wireless: amend the drop table, e.g. 'RTR CBK=wireless' (repeatable)",
    )
    reading.add_argument(
        "--flow-by",
        choices=("auto", "fid", "addr"),
        help="ns-2 wired: how packets are grouped into flows (default auto)",
    )
    reading.add_argument(
        "--seq-modulus", type=int, metavar="M", help="unwrap sequence numbers that wrap modulo M (e.g. 65536)"
    )
    reading.add_argument(
        "--payload",
        choices=[k for k in KINDS if k != ORDER],
        help="captures: where sequence numbers and send times come from (default auto)",
    )
    reading.add_argument(
        "--flows",
        type=_csv_list,
        metavar="FLOW,FLOW",
        help="the flows to read, by label as `inspect` lists them (an ns-2 fid for all its flows), or "
        "'all' (default: of a capture, all that carry sequence numbers; of an ns-2 trace, all "
        "but background traffic, the exp and pareto generators' flows)",
    )
    reading.add_argument(
        "--field",
        metavar="seq=OFF:W[:ORDER],time=OFF:W:UNITS",
        help="captures: where another protocol's payload carries its sequence number and send "
        "time, e.g. ns-3's SeqTsHeader: seq=0:4,time=4:8:ns (UNITS s, ms, us, ns, "
        "sec+usec, sec+nsec, ntp, a rate in Hz, or ? to infer it)",
    )
    reading.add_argument(
        "--ssrc", type=_csv_list, metavar="0xSSRC,...", help="captures: keep only the RTP streams of these SSRCs"
    )
    reading.add_argument(
        "--rtp-sequence",
        choices=("ssrc", "transport-cc"),
        default="ssrc",
        help="captures: one RTP stream per SSRC (default), or per WebRTC flow in the order of "
        "its transport-wide sequence numbers (transport-cc header extension)",
    )
    reading.add_argument(
        "--clock-rate",
        type=_clock_rates,
        metavar="HZ|KEY=HZ,...",
        help="captures: the in-band clock's rate (RTP timestamp, TSval) when known: for every "
        "stream (90000), or per stream by SSRC, RTP payload type or label "
        "(0x1234abcd=90000,111=48000); a rate a stream's own clock contradicts is refused",
    )
    reading.add_argument(
        "--capture-host",
        metavar="ADDR|none",
        help="receiver captures: the address of the host the capture was taken on; the flows "
        "it sends are read as sent, not as received (default: found from the flows' "
        "ends and TTLs, as `inspect` reports)",
    )
    reading.add_argument(
        "--skew-limit",
        type=float,
        metavar="PPM",
        help="captures: a fitted clock skew beyond this is reported, not applied (default 200)",
    )
    reading.add_argument(
        "--skew",
        choices=SKEW_CHOICES,
        help="receiver captures: remove the clock skew fitted to the delays (default) or keep the capture times",
    )
    reading.add_argument(
        "--vantage",
        action="append",
        metavar="PCAP[:CAUSE]",
        help="one capture of a chain along the path, in path order, sender first; CAUSE "
        "(congestion, wireless, unknown) names what loses packets on the way to it",
    )
    reading.add_argument(
        "--clocks",
        choices=CLOCKS,
        help="--vantage: the captures have separate clocks (default: skew and offset are "
        "removed) or a common one (one host, PTP: one-way delays are absolute)",
    )
    reading.add_argument(
        "--labels", metavar="CSV", help="labels file (flow,seq,cause[,tx]) giving the causes of the trace's losses"
    )

    one = argparse.ArgumentParser(add_help=False, parents=[reading])
    one.add_argument(
        "trace", nargs="?", help="trace file (ns-2 wired or wireless, pcap or pcapng; plain or gzip); or use --vantage"
    )

    replaying = _replay_options(defaults=True)

    controlling = argparse.ArgumentParser(add_help=False)
    controlling.add_argument(
        "--reverse-delay",
        type=float,
        metavar="S",
        help="ACK path delay in seconds (default: from feedback or the one-way delay)",
    )
    controlling.add_argument(
        "--base-rtt",
        type=float,
        metavar="S",
        help="RTT at an empty queue, for flows without feedback on separate clocks",
    )
    controlling.add_argument(
        "--capacity",
        type=_bits_per_second,
        metavar="BPS",
        help="bottleneck capacity in bits/s, e.g. 150k (default: packet-pair s/T_min per flow)",
    )

    p = sub.add_parser("inspect", parents=[one], help="per-flow packets, losses by cause, ROTT/IAT")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=f"every column of the flow table and every flow of a capture (default: the main columns, "
        f"the first {CAPTURE_FLOWS_SHOWN} flows of a capture's list)",
    )
    p.add_argument(
        "--flow-at-a-time",
        action="store_true",
        help="captures larger than memory: decode into per-flow files on disk, then read and summarise "
        "one flow at a time (the same report; memory bounded by the largest flow)",
    )
    p.add_argument(
        "--flow-at-a-time-above",
        metavar="SIZE",
        default="1G",
        help="read a capture larger than SIZE (e.g. 512M, 2G; never) one flow at a time by itself, "
        "unless an option picks flows or streams (default 1G, as batch)",
    )
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("labels", parents=[one], help="write the causes of a trace's losses as a labels file")
    p.add_argument("-o", "--output", required=True, help="output labels file (.csv)")
    p.set_defaults(func=cmd_labels)

    p = sub.add_parser("timeline", parents=[one], help="write the per-packet timeline")
    p.add_argument("-o", "--output", required=True, help="output file (.parquet, .csv, .csv.gz or .json)")
    p.add_argument("--output-format", choices=TABLE_KINDS, help="default: from the extension")
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("classify", parents=[one, replaying], help="replay LDAs: one decision per lost packet per LDA")
    p.add_argument("-o", "--output", help="write every decision (.parquet, .csv, .csv.gz or .json)")
    p.add_argument("--output-format", choices=TABLE_KINDS, help="default: from the extension")
    p.set_defaults(func=cmd_classify)

    p = sub.add_parser(
        "agreement",
        parents=[one],
        help="a closed-loop run's in-simulator decisions against the offline replay of its trace "
        "(exit 1 on any difference)",
    )
    p.add_argument("--log", required=True, help="the decision log the LDA receiver wrote (paper000.tcl ldalog=)")
    p.set_defaults(func=cmd_agreement)

    p = sub.add_parser(
        "replay",
        parents=[one, replaying, controlling],
        help="replay rate controllers fed each LDA's decisions: modeled throughput (open loop)",
    )
    p.add_argument(
        "--controller",
        default="all",
        metavar="SPEC,SPEC",
        help="controllers: 'all' (default) or NAME[:key=value...], e.g. tfrc:discounting=true; "
        "names: " + ", ".join(CONTROLLERS),
    )
    p.add_argument("-o", "--output", help="write the rate timelines (.parquet, .csv, .csv.gz or .json)")
    p.add_argument("--output-format", choices=TABLE_KINDS, help="default: from the extension")
    p.add_argument(
        "--compare-sent",
        type=float,
        nargs="?",
        const=1.0,
        metavar="BIN_S",
        help="also compare the allowed rate with what the trace's sender sent, in bins "
        "(default 1 s): for traces made by the controller under study",
    )
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser(
        "score",
        parents=[reading, replaying, controlling],
        help="score LDAs against the true causes (M_c, M_w, accuracy, ...)",
    )
    p.add_argument("traces", nargs="*", metavar="TRACE", help="trace files (and/or one --vantage chain)")
    p.add_argument(
        "--by",
        choices=("flow", "trace", "pooled"),
        default="trace",
        help="one score per flow, per trace (default) or pooled over all traces",
    )
    p.add_argument(
        "--average",
        choices=("pooled", "mean"),
        default="pooled",
        help="pool the losses of a group (default) or average the flows' metrics (paper 000)",
    )
    p.add_argument(
        "--format",
        choices=("table", "json", "csv", "md"),
        default=None,
        help="table: paper 000 Table II layout (metrics × LDAs); json/csv: the tidy scores; md: "
        "Markdown (default: what -o's extension promises, else table)",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="resamples for the loss-burst bootstrap intervals (0: Wilson only)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument(
        "--route-as",
        choices=ROUTE_AS,
        default="excluded",
        help="losses to routing and mobility (ns-2 wireless NRTE, RTR IFQ, CBK ...): left out of "
        "M_c/M_w (default) or scored as congestion or wireless",
    )
    p.add_argument(
        "--controller",
        default="auto",
        metavar="SPEC",
        help="controller whose modeled throughput is added: 'auto' (default: tfrc, paper 000's "
        "base, where the trace gives RTTs), a controller spec, or 'none'",
    )
    p.add_argument(
        "--flow-at-a-time",
        action="store_true",
        help="captures larger than memory: decode into per-flow files on disk, then read and score "
        "one flow at a time (the clock skew of each pair of hosts fitted on all its flows)",
    )
    p.add_argument("-o", "--output", help="write to this file instead of standard output")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser(
        "sweep",
        parents=[reading, replaying],
        help="one LDA over a grid of its parameters: M_c, M_w per point and the trade-off frontier",
    )
    p.add_argument("swept", metavar="LDA", help="the LDA to sweep (spike, zigzag, mbiaz, ...)")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace files, scored pooled")
    p.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="NAME=START:STOP:STEP",
        help="a parameter and its values (START:STOP:STEP, stop included, or V1,V2,...); repeat for a grid",
    )
    p.add_argument("-o", "--output", help="write the table (.parquet, .csv, .csv.gz or .json)")
    p.add_argument("--plot", metavar="PNG", help="draw M_c against M_w with the frontier and the defaults")
    p.set_defaults(func=cmd_sweep)

    learning = argparse.ArgumentParser(add_help=False)
    learning.add_argument(
        "traces",
        nargs="*",
        metavar="TRACE",
        help="labelled traces: ns-2 files, or one capture with --labels, and/or a --vantage chain",
    )
    learning.add_argument(
        "--model",
        choices=("gbt", "rf", "logistic"),
        default="gbt",
        help="gradient-boosted trees (default), a random forest or a logistic regression",
    )
    learning.add_argument("--seed", type=int, default=0, help="the model's random seed (default 0)")
    p = sub.add_parser(
        "train",
        parents=[reading, replaying, learning],
        help="fit the learned LDA on the losses of labelled traces (a skops model file)",
    )
    p.add_argument("-o", "--output", required=True, help="the model file to write (e.g. model.skops)")
    p.set_defaults(func=cmd_train)
    p = sub.add_parser(
        "evaluate",
        parents=[reading, replaying, learning],
        help="grouped cross-validation of the learned LDA against every heuristic",
    )
    p.add_argument(
        "--group-by",
        required=True,
        metavar="REGEX",
        help="the scenario of each trace, from its path: the regex's first group (or match), e.g. "
        "'(wlh|wb)_' for the topology; traces of one group are never split between train and test",
    )
    p.add_argument("-o", "--output", help="write the scores (.parquet, .csv, .csv.gz or .json)")
    p.add_argument("--plot", metavar="PNG", help="draw the accuracies with their intervals and the importances")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "reproduce", help="paper 000's evaluation from the real ns-2: tables, figures, the paper's statements checked"
    )
    p.add_argument("paper", choices=("paper000",))
    p.add_argument("-o", "--output", required=True, help="the folder to write (traces are cached in it)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a reduced suite (N 1, 2, 4; one seed; 60 s): about half a minute (the closed loop doubles it)",
    )
    p.add_argument("--jobs", type=int, help="worker processes (default: every core)")
    p.add_argument(
        "--closed-loop",
        action="store_true",
        help="also run every TFRC scenario once per LDA with the LDA inside ns-2's TFRC receiver (paper "
        "000 §II; builds a patched ns-2 the first time), and set the open-loop numbers beside them",
    )
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser(
        "report", parents=[reading], help="one self-contained HTML page per set of traces: summary, scores, figures"
    )
    p.add_argument("traces", nargs="*", metavar="TRACE", help="trace files (and/or one --vantage chain)")
    p.add_argument("--lda", default="all", metavar="SPEC,SPEC", help="LDAs to score (default all)")
    p.add_argument("--controller", default="tfrc", metavar="SPEC", help="controller for throughput ('none': skip)")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "batch",
        parents=[_replay_options(defaults=False)],
        help="score every trace under folders/globs (CI: thresholds, baselines, JUnit, summary)",
        description="Exit status: 0 passed; 1 a threshold or regression failed, or a trace could not "
        "be scored; 2 bad usage (or, with --strict, the first bad trace); 130 interrupted "
        "and 143 terminated (SIGTERM), the outputs holding the traces done. Settings may "
        "come from ldanalyze.toml or [tool.ldanalyze] in pyproject.toml in the current "
        "folder; options override them.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="trace files, folders (walked) and globs")
    p.add_argument("--manifest", help="TOML or CSV listing traces with options (chains, labels, payload, flows)")
    p.add_argument("--exclude", action="append", metavar="GLOB", help="leave out matching files (repeatable)")
    p.add_argument("-o", "--output", help="results table: .parquet, .csv, .csv.gz or .json")
    p.add_argument(
        "--errors",
        metavar="FILE",
        help="the traces that failed and why (trace, error): .parquet, .csv, "
        ".csv.gz or .json; written when none failed too",
    )
    p.add_argument("--junit", metavar="XML", help="JUnit XML: one case per trace and per check")
    p.add_argument("--summary", metavar="MD", help="Markdown job summary")
    p.add_argument("--json", metavar="FILE", help="JSON report (schema version 1: ldanalyze.report.ci.JSON_SCHEMA)")
    p.add_argument(
        "--controller", metavar="SPEC", help="controller for the throughput columns: auto (tfrc), a spec, or none"
    )
    p.add_argument(
        "--fail-if",
        action="append",
        metavar="'LDA.METRIC OP X'",
        help="fail when it holds, e.g. 'zbs.M_c > 0.05' (repeatable; LDA may be *)",
    )
    p.add_argument(
        "--fail-scope", choices=("pooled", "trace"), help="thresholds on pooled scores (default) or on each trace's"
    )
    p.add_argument("--baseline", metavar="FILE", help="an earlier results table: fail on a regression")
    p.add_argument("--tolerance", type=float, help="regression margin for --baseline (default 0.02)")
    p.add_argument("--baseline-ci", action="store_true", help="a regression must also leave the baseline's CI")
    p.add_argument("--jobs", "-j", type=int, help="worker processes (default: every core)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask cluster (tcp://host:8786)")
    p.add_argument("--cache-dir", help="parsed-trace cache (default ~/.cache/ldanalyze)")
    p.add_argument("--no-cache", action="store_true", help="read every trace afresh")
    p.add_argument("--bootstrap", type=int, help="burst-bootstrap resamples (default 0: Wilson intervals only)")
    p.add_argument("--strict", action="store_true", help="stop at the first trace that fails (exit 2)")
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar or line per trace: only the traces that fail, as they do, and the summary",
    )
    p.add_argument("--seq-modulus", type=int, metavar="M", help="sequence number wrap")
    p.add_argument(
        "--flow-at-a-time-above",
        metavar="SIZE",
        help="read a capture larger than SIZE (e.g. 512M, 2G; 0: every capture; never) one flow "
        "at a time, its memory bounded by its largest flow (default 1G)",
    )
    p.set_defaults(func=cmd_batch)
    return parser


def ordinary_pages() -> None:
    """Have numpy leave large arrays on ordinary pages, unless ``NUMPY_MADVISE_HUGEPAGE`` says
    otherwise. numpy asks Linux for transparent huge pages, and where THP defrag is ``madvise``
    (common distributions' default) every first touch of such an array waits for the kernel to
    compact memory: on our development VM the 250 MB of records a 2 M-packet capture decodes
    into took 0.5 s to touch instead of 0.1 s, with no gain in the passes that follow, as a
    command streams through its arrays a few times and ends."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    multiarray = getattr(getattr(np, "_core", None) or np.core, "multiarray", None)
    setting = getattr(multiarray, "_set_madvise_hugepage", None)
    if setting is not None:
        setting(False)


class _NoBlasProbe(importlib.abc.MetaPathFinder):
    """Answers numba's one probe for BLAS with "none" (see :func:`no_blas_probe`), then leaves."""

    def find_spec(self, name, path=None, target=None):
        if name == "scipy.linalg" and self._from_numba_probe():
            sys.meta_path.remove(self)
            raise ImportError("ldanalyze's kernels call no BLAS")
        return None

    @staticmethod
    def _from_numba_probe() -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code.co_name == "ensure_blas" and code.co_filename.endswith(os.path.join("numba", "np", "linalg.py")):
                return True
            frame = frame.f_back
        return False


def no_blas_probe() -> None:
    """Spare this process numba's probe for BLAS. The first kernel a process loads makes numba
    import ``scipy.linalg``, where scipy is installed (the ``learn`` and ``test`` extras), only
    to learn whether a kernel's ``np.dot`` may call BLAS: 0.15 s of every command on our
    development VM. No kernel of ours calls BLAS, and a command's process runs only ours, so
    here numba is told there is none; scipy itself imports as ever (the learned LDA's model
    needs it). An interactive session, which may run numba code of its own, is left alone."""
    if "scipy.linalg" not in sys.modules:
        sys.meta_path.insert(0, _NoBlasProbe())


def no_numba_extensions() -> None:
    """Spare this process numba's search for plug-ins. At the first kernel a process loads,
    numba reads the entry points of every installed distribution to run the
    ``numba_extensions`` ones, which teach numba new types: 50 ms of every command on our
    development VM, more the more is installed. Our kernels use no such type, and a command's
    process runs only ours; an interactive session, which may need them, is left alone."""
    from numba.core import entrypoints

    entrypoints._already_initialized = True  # what numba sets once it has run them


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> str:
    """argparse's message for arguments it does not know, with the nearest option of the
    command when one is close (``--ldas`` → ``--lda``)."""
    message = f"unrecognized arguments: {' '.join(unknown)}"
    command = parser.commands.get(args.command, parser)
    options = [o for action in command._actions for o in action.option_strings if o.startswith("--")]
    for word in unknown:
        close = (
            difflib.get_close_matches(word.split("=")[0], options, n=1, cutoff=0.75) if word.startswith("--") else []
        )
        if close:
            return f"{message} (did you mean {close[0]}?)"
    return message


def main(argv: Sequence[str] | None = None) -> int:
    ordinary_pages()
    no_blas_probe()
    no_numba_extensions()
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(_unrecognized(parser, args, unknown))
    with warnings.catch_warnings(record=True) as caught:  # the API's warnings, as one-line notes
        warnings.simplefilter("always")
        try:
            return args.func(args)
        except (TraceError, UsageError) as exc:
            print(f"ldanalyze: error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # the reader of our output left (`ldanalyze inspect X | head`)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        finally:
            for warning in caught:
                print(f"ldanalyze: warning: {warning.message}", file=sys.stderr)


def run() -> None:
    """The ``ldanalyze`` command: :func:`main`, then a quick exit. Python's teardown of the
    interpreter's objects, numba's above all, took 0.25 s of every command on our development
    VM (a tenth of inspecting 2 M packets) and does nothing a finished command needs: the exit
    handlers still run and the output is flushed, then the process ends (mypy ends so, for
    the same reason). A non-daemon thread still running (none of ours) gets the ordinary
    exit, which waits for it; so do ``--help`` and usage errors (they end by SystemExit)."""
    code = main()
    if any(
        thread.is_alive() and not thread.daemon
        for thread in threading.enumerate()
        if thread is not threading.main_thread()
    ):
        sys.exit(code)
    atexit._run_exitfuncs()  # what the ordinary exit runs first (tempfile's cleanup, logging's flush)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left before the last bytes, as in main
        code = code or 1
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
