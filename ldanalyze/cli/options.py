"""What the command line asks to read, and how: reader options, the traces (files or a --vantage
chain, labels joined), the replay semantics and the path model.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..batch import SPLIT_OPTIONS
from ..control import PathModel
from ..errors import UsageError
from ..io import read_trace
from ..io.capture.chain_truth import with_chain_truth
from ..io.capture.clockrate import ClockRates, doubtful_clocks_note
from ..io.capture.describe import capture_description
from ..io.capture.fields import FieldSpec
from ..io.capture.payload import NoSequenceNumbers
from ..io.capture.source import capture_format
from ..io.capture.split import FlowByFlow, read_capture_flows
from ..io.capture.vantage import parse_vantage, read_vantages
from ..io.detect import NS2_WIRED, PCAP, PCAPNG, QLOG, detect_format
from ..io.labels import apply_labels
from ..lda import Replay
from ..packets import Trace
from ..timeline import build_timeline


def csv_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def byte_size(text: str) -> int | str | None:
    """``512M``, ``2G``, ``1.5G``, ``0`` or a plain byte count (binary units, a trailing B or
    iB allowed); None for ``never``, ``"auto"`` for ``auto``."""
    if text.strip().lower() in ("never", "auto"):
        return None if text.strip().lower() == "never" else "auto"
    number = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = number[-1:] if number[-1:] in "KMGT" else ""
    try:
        value = float(number[: len(number) - len(unit)]) * SIZE_UNITS[unit]
    except ValueError:
        value = -1.0
    if not 0 <= value < float(1 << 62):
        raise UsageError(f"{text!r} is no size: give bytes, or a number with K, M, G or T (1G), 'auto' or 'never'")
    return int(value)


def clock_rates_arg(text: str) -> ClockRates:
    try:
        rates = ClockRates.parse(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    assert rates is not None  # (None is the rates of None only)
    return rates


def drop_cause_arg(text: str) -> tuple[str, str]:
    key, sep, cause = text.rpartition("=")
    if not sep or len(key.split()) != 2:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 'LEVEL REASON=CAUSE', e.g. 'RTR CBK=wireless'")
    return " ".join(key.split()), cause.strip()


def trace_options(args: argparse.Namespace) -> dict:
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


def read_source(args: argparse.Namespace, path: str | None) -> Trace:
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
        trace = _read_chain(args)
    else:
        trace = read_trace(path, **reader_options(args), **_view_option(args, path))
    return apply_labels(trace, args.labels) if args.labels else trace


def _read_chain(args: argparse.Namespace) -> Trace:
    """A ``--vantage`` chain: two qlogs of one connection (the first endpoint's view, the
    second's receipts joined); with ``--view sender``, the first capture read at the sender with
    the chain's truth joined onto it; else the receiver's view along the captures."""
    first = parse_vantage(args.vantage[0]).path
    if detect_format(first) == QLOG:
        if len(args.vantage) != 2 or args.clocks or args.view == "receiver":
            raise UsageError("--vantage with qlogs: the two endpoints' qlogs of one connection, the sender's first")
        return read_trace(first, flows=args.flows, peer=parse_vantage(args.vantage[1]).path)
    if args.view == "sender":
        if args.clocks:
            raise UsageError("--clocks is about a receiver's view along a chain; --view sender reads the first capture")
        at_sender = read_trace(first, vantage="sender", payload=args.payload or "auto", flows=args.flows)
        return with_chain_truth(at_sender, args.vantage)
    chain_options = {"skew_limit_ppm": args.skew_limit} if args.skew_limit is not None else {}
    return read_vantages(
        args.vantage,
        clocks=args.clocks or "separate",
        payload=args.payload or "auto",
        flows=args.flows,
        **chain_options,
    )


def _view_option(args: argparse.Namespace, path: str) -> dict:
    """``--view`` as the reader of ``path`` takes it: a capture's vantage, an ns-2 wired trace's
    view; a qlog and an ns-2 wireless trace have one view only."""
    if args.view == "auto":
        return {}
    fmt = detect_format(path)
    if fmt in (PCAP, PCAPNG):
        return {"vantage": args.view}
    if fmt == NS2_WIRED:
        return {"view": args.view}
    if fmt == QLOG and args.view == "sender":
        return {}
    held = "its endpoint's (the sender's)" if fmt == QLOG else "the receiver's"
    raise UsageError(f"{path} is {fmt}: it holds {held} view only, not --view {args.view}")


def reader_options(args: argparse.Namespace) -> dict:
    """The options ``read_trace`` gets for one file from the command line."""
    options = trace_options(args)
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
    return options


def source_paths(args: argparse.Namespace) -> list[str | None]:
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


def input_paths(args: argparse.Namespace) -> list[str]:
    """Every file the command reads: never to be overwritten."""
    named = [p for p in source_paths(args) if p is not None]
    chain = [parse_vantage(v).path for v in args.vantage or []]
    return named + chain + ([args.labels] if args.labels else [])


def load_timeline(args: argparse.Namespace):
    trace = read_source(args, source_paths(args)[0])
    return trace, build_timeline(trace, seq_modulus=args.seq_modulus)


# the command line's defaults of what the library defaults too
REPLAY_DEFAULTS = {
    "classify_first": not Replay().update_first,
    "gap_delay": Replay().gap_delay,
    "detection": Replay().detection,
}


def replay_semantics(args: argparse.Namespace) -> Replay:
    return Replay(update_first=not args.classify_first, gap_delay=args.gap_delay, detection=args.detection)


def note_unscored(trace: Trace) -> None:
    """Say on standard error which flows of an ns-2 trace are left out of the scores, and why,
    and which streams of a capture rest on a doubtful media clock rate."""
    doubtful = doubtful_clocks_note(trace.meta)
    if doubtful:
        print(f"{trace.path}: note: {doubtful}", file=sys.stderr)
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


def flow_picking(args: argparse.Namespace) -> list[str]:
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


def flow_by_flow(args: argparse.Namespace, path: str | None) -> FlowByFlow:
    """``read_capture_flows`` of the capture at ``path`` with the command line's options
    (``--flow-at-a-time``), or a usage error for an option that picks flows or streams."""
    given = flow_picking(args)
    if given:
        raise UsageError(f"--flow-at-a-time reads whole captures flow by flow; it takes no {', '.join(given)}")
    assert path is not None  # a --vantage chain (None) is refused above, as picking flows
    if capture_format(path) is None:
        raise UsageError(f"--flow-at-a-time reads pcap and pcapng captures; {path} is not one")
    options = {name: value for name, value in reader_options(args).items() if name in SPLIT_OPTIONS}
    return read_capture_flows(path, **options)


def described_capture(args: argparse.Namespace, error: NoSequenceNumbers) -> dict:
    """What a capture none of whose flows carries sequence numbers holds
    (``capture_description``: ``inspect`` shows it, ``score`` tells from it why there is
    nothing to score); the error again where the user named what to read (``--payload``,
    ``--field``, ``--flows``, ``--ssrc``: what they asked for is not there) or the capture was
    read flow by flow (no whole capture to describe)."""
    if error.capture is None or args.payload not in (None, "auto") or args.field:
        raise error
    return capture_description(error.capture, error.skipped)


def path_model_of(args: argparse.Namespace) -> PathModel:
    return PathModel(reverse_delay=args.reverse_delay, base_rtt=args.base_rtt, capacity=args.capacity)


def bits_per_second(text: str) -> float:
    """'150k', '1.5M', '2e6' → bits/s."""
    scale = {"k": 1e3, "m": 1e6, "g": 1e9}.get(text[-1:].lower(), 1.0)
    number = text[:-1] if scale != 1.0 else text
    try:
        return float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a rate in bits/s: {text!r} (e.g. 150k, 1.5M)") from None
