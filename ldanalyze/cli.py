"""The ``ldanalyze`` command: thin subcommands over the public API.

Exit status: 0 on success, 2 on bad input (the message names the file and line), 1 on any
other failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence

import pandas as pd

from . import __version__
from .errors import TraceError, UsageError
from .io import FORMATS, read_trace
from .timeline import build_timeline


def _csv_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def _trace_options(args: argparse.Namespace) -> dict:
    options = {}
    if args.data_types:
        options["data_types"] = args.data_types
    if args.feedback_types:
        options["feedback_types"] = args.feedback_types
    if args.flow_by:
        options["flow_by"] = args.flow_by
    return options


def _load(args: argparse.Namespace):
    trace = read_trace(args.trace, format=args.format, **_trace_options(args))
    return trace, build_timeline(trace, seq_modulus=args.seq_modulus)


def cmd_inspect(args: argparse.Namespace) -> int:
    trace, timeline = _load(args)
    summary = timeline.summary()
    if args.json:
        payload = {
            "trace": trace.path,
            "format": trace.format,
            "meta": trace.meta,
            "rtt_samples": int(len(trace.rtt)),
            "flows": json.loads(summary.to_json(orient="records")),
        }
        print(json.dumps(payload, indent=2))
        return 0
    print(f"{trace.path}: {trace.format}, {len(summary)} flow(s), {len(trace.packets)} data packets")
    ignored = trace.meta.get("ignored_types")
    if ignored:
        print("ignored packet types: " + ", ".join(f"{k} ({v})" for k, v in ignored.items()))
    if len(trace.rtt):
        rtt = trace.rtt.groupby("flow")["rtt"].agg(["size", "mean", "min"])
        print("RTT samples from feedback: " + ", ".join(
            f"flow {f}: {int(r['size'])} (mean {r['mean'] * 1e3:.1f} ms, min {r['min'] * 1e3:.1f} ms)"
            for f, r in rtt.iterrows()
        ))
    print()
    print(_format_summary(summary))
    return 0


def _format_summary(summary: pd.DataFrame) -> str:
    table = summary.copy()
    for col in ("loss_rate", "congestion_rate", "wireless_rate"):
        table[col] = (table[col] * 100).map(lambda v: "-" if pd.isna(v) else f"{v:.2f}%")
    for col in [c for c in table.columns if c.endswith("_ms")]:
        table[col] = table[col].map(lambda v: "-" if pd.isna(v) else f"{v:.1f}")
    table = table.rename(columns={"loss_rate": "loss", "congestion_rate": "cong", "wireless_rate": "wless"})
    return table.to_string(index=False)


def cmd_timeline(args: argparse.Namespace) -> int:
    _, timeline = _load(args)
    table = timeline.per_packet()
    table["fate"] = table["fate"].astype(str)
    table["kind"] = table["kind"].astype(str).replace("nan", "")
    out = os.path.abspath(args.output)
    if os.path.exists(out) and os.path.samefile(args.trace, out):
        raise UsageError(f"refusing to overwrite the input trace {args.trace} with the timeline")
    kind = args.output_format or ("parquet" if out.endswith(".parquet") else "csv")
    directory = os.path.dirname(out) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ldanalyze-", suffix=".tmp")
    os.close(fd)
    try:
        if kind == "parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False, compression="gzip" if out.endswith(".gz") else None)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    print(f"wrote {len(table)} packets of {len(timeline.flows)} flow(s) to {args.output} ({kind})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ldanalyze",
        description="Offline analysis of loss differentiation algorithms over ns-2 traces.",
    )
    parser.add_argument("--version", action="version", version=f"ldanalyze {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("trace", help="trace file (ns-2 wired or wireless; plain or gzip)")
    common.add_argument("--format", default="auto", choices=("auto",) + FORMATS,
                        help="trace format (default: detected from the content)")
    common.add_argument("--data-types", type=_csv_list, metavar="T,T",
                        help="packet types that are data (default: tcpFriend,cbr,udp,tcp,exp,...)")
    common.add_argument("--feedback-types", type=_csv_list, metavar="T,T",
                        help="packet types that are feedback/ACKs (default: tcpFriendCtl,ack,rtcp)")
    common.add_argument("--flow-by", choices=("auto", "fid", "addr"),
                        help="ns-2 wired: how packets are grouped into flows (default auto)")
    common.add_argument("--seq-modulus", type=int, metavar="M",
                        help="unwrap sequence numbers that wrap modulo M (e.g. 65536)")

    p = sub.add_parser("inspect", parents=[common], help="per-flow packets, losses by cause, ROTT/IAT")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("timeline", parents=[common], help="write the per-packet timeline")
    p.add_argument("-o", "--output", required=True, help="output file (.parquet, .csv or .csv.gz)")
    p.add_argument("--output-format", choices=("parquet", "csv"), help="default: from the extension")
    p.set_defaults(func=cmd_timeline)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (TraceError, UsageError) as exc:
        print(f"ldanalyze: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
