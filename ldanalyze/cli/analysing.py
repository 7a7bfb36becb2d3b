"""The commands over one set of traces: labels, timeline, classify, crosscheck, score, replay,
sweep and report.
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import sys
import warnings

from .. import formatting
from ..analysis import analyze_traces
from ..consensus import agreement
from ..control import DEFAULT_CONTROLLER, OPEN_LOOP_NOTE, replay
from ..control.sent_rate import compare_sent
from ..errors import UsageError
from ..io.capture.payload import NoSequenceNumbers
from ..io.labels import write_labels
from ..lda import classify, runnable_ldas
from ..packets import LOSS_FATES
from ..report import text
from ..scoring import score
from .options import (
    described_capture,
    flow_by_flow,
    input_paths,
    load_timeline,
    note_unscored,
    path_model_of,
    read_source,
    replay_semantics,
    source_paths,
    trace_options,
)
from .writing import check_output_folder, score_format, write_output, write_table


def cmd_labels(args: argparse.Namespace) -> int:
    trace = read_source(args, source_paths(args)[0])
    losses = int(trace.packets["fate"].isin(LOSS_FATES).sum())
    write_output(args.output, input_paths(args), lambda tmp: write_labels(trace, tmp))
    print(f"wrote {losses} labels (the losses of {trace.path}) to {args.output}")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    _, timeline = load_timeline(args)
    table = timeline.per_packet()
    table["fate"] = table["fate"].astype(str)
    table["kind"] = table["kind"].astype(str).replace("nan", "")
    kind = write_table(table, args.output, input_paths(args), args.format)
    print(f"wrote {len(table)} packets of {len(timeline.flows)} flow(s) to {args.output} ({kind})")
    return 0


def cmd_classify(args: argparse.Namespace) -> int:
    trace, timeline = load_timeline(args)
    ldas = runnable_ldas(timeline, args.lda)
    decisions = classify(timeline, ldas, semantics=replay_semantics(args))
    if args.output:
        table = decisions.astype({"lda": str, "flow": str, "decision": str})
        kind = write_table(table, args.output, input_paths(args), args.format)
        print(
            f"wrote {len(table)} decisions ({table['lda'].nunique()} LDAs, "
            f"{len(timeline.losses)} lost packets) to {args.output} ({kind})"
        )
        return 0
    sys.stdout.write(text.classify_text(trace.path, timeline, ldas, decisions))
    return 0


def cmd_crosscheck(args: argparse.Namespace) -> int:
    from .. import closedloop

    if args.command == "agreement":
        warnings.warn(
            "`ldanalyze agreement` is now `ldanalyze crosscheck`; the old name goes in 0.6",
            DeprecationWarning,
            stacklevel=2,
        )
    log = closedloop.read_decision_log(args.log)
    _, timeline = load_timeline(args)
    decisions = classify(timeline, closedloop.options_ldas(args.ldaparams))
    summary, differences = closedloop.crosscheck(decisions, log)
    sys.stdout.write(text.crosscheck_text(args.trace, args.log, log, summary, differences))
    return 0 if differences.empty else 1


def cmd_score(args: argparse.Namespace) -> int:
    if args.average == "mean" and args.by == "flow":
        raise UsageError("--average mean needs --by trace or --by pooled (a flow is its own mean)")
    args.format = score_format(args.output, args.format, input_paths(args))  # before the work: a bad name
    controller = {"none": None, "auto": DEFAULT_CONTROLLER}.get(args.controller, args.controller)
    unreadable: dict[str, dict] = {}  # captures without sequence numbers: path -> their description
    traces = _score_traces(args, unreadable)
    first = next(traces, None)
    if first is None:  # every trace given is a capture without sequence numbers: say why, write nothing
        machine = args.output or args.format != "table"
        (sys.stderr if machine else sys.stdout).write(text.nothing_readable_text(unreadable, written=not machine))
        return 0
    analysed = analyze_traces(
        itertools.chain([first], traces),
        args.lda,
        controller=controller,
        controller_optional=args.controller == "auto",
        semantics=replay_semantics(args),
        path_model=path_model_of(args),
        seq_modulus=args.seq_modulus,
    )
    scores = score(
        analysed.decisions,
        analysed.summary,
        by=args.by,
        average=args.average,
        bootstrap=args.bootstrap,
        seed=args.seed,
        throughput=analysed.throughput,
        route_as=args.route_as,
        policing_as=args.policing_as,
    )
    if not scores.empty:
        keys = {"flow": ("trace", "flow"), "trace": ("trace",), "pooled": ()}[args.by]
        scores = scores.merge(
            agreement(analysed.decisions, keys).drop(columns=["called"]), how="left", on=[*keys, "lda"]
        )
    for path, description in unreadable.items():
        print(f"{path}: note: not scored: {text.unreadable_line(path, description)}", file=sys.stderr)
    if analysed.throughput is not None and args.format == "table":
        print(f"throughput: {OPEN_LOOP_NOTE}", file=sys.stderr)
    flows_read = 0 if analysed.summary is None else len(analysed.summary)
    out = text.score_text(scores, args.format, analysed.decisions, flows_read)
    if args.output:
        write_output(args.output, input_paths(args), lambda tmp: pathlib.Path(tmp).write_text(out))
        print(f"wrote {len(scores)} score rows to {args.output} ({args.format})")
    else:
        sys.stdout.write(out)
    return 0


def _score_traces(args: argparse.Namespace, unreadable: dict[str, dict]):
    """The traces ``score`` reads: one per file, or with ``--flow-at-a-time`` one per flow of
    each capture (``read_capture_flows``: memory bounded by the largest flow); a capture none
    of whose flows carries sequence numbers goes into ``unreadable`` (its description)."""
    for path in source_paths(args):
        try:
            if args.flow_at_a_time:
                yield from flow_by_flow(args, path)
                continue
            trace = read_source(args, path)
        except NoSequenceNumbers as error:
            unreadable[str(error.path)] = described_capture(args, error)
            continue
        note_unscored(trace)
        yield trace


def cmd_replay(args: argparse.Namespace) -> int:
    trace, timeline = load_timeline(args)
    result = replay(timeline, args.controller, args.lda, semantics=replay_semantics(args), path=path_model_of(args))
    if args.output:
        table = result.rates.astype({"lda": str, "controller": str, "flow": str})
        kind = write_table(table, args.output, input_paths(args), args.format)
        print(f"wrote {len(table)} rate steps to {args.output} ({kind}); {OPEN_LOOP_NOTE}")
    sys.stdout.write(text.replay_text(trace.path, result.summary))
    if args.compare_sent:
        capacity = result.summary.drop_duplicates("flow").set_index("flow")["capacity_bps"]
        table = compare_sent(result.rates, timeline, args.compare_sent, capacity_bps=capacity)
        sys.stdout.write(text.compare_sent_text(table, args.compare_sent))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..sweep import parse_param, sweep

    grid = dict(parse_param(text) for text in args.param)
    if args.vantage or args.labels:
        raise UsageError("sweep scores trace files; give them as arguments (no --vantage, --labels)")
    if args.lda != "all":
        raise UsageError(
            f"sweep varies the LDA named first (sweep {args.swept} TRACE --param ...); "
            f"--lda {args.lda} does not apply to it"
        )
    table = sweep(
        args.traces,
        args.swept,
        grid,
        semantics=replay_semantics(args),
        seq_modulus=args.seq_modulus,
        route_as=args.route_as,
        policing_as=args.policing_as,
        **trace_options(args),
    )
    shown = table.drop(columns=["spec"])
    if args.output:
        write_table(table, args.output, input_paths(args), None)
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
        from ..report import plots

        write_output(args.plot, input_paths(args), lambda tmp: plots.sweep(table).savefig(tmp, format="png", dpi=100))
        print(f"wrote the frontier plot to {args.plot}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..report.html import build_report

    check_output_folder(args.output)  # before the work
    traces = [read_source(args, path) for path in source_paths(args)]
    controller = None if args.controller == "none" else args.controller
    page = build_report(
        traces,
        ldas=args.lda,
        controller=controller,
        path=path_model_of(args),
        route_as=args.route_as,
        policing_as=args.policing_as,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    write_output(args.output, input_paths(args), lambda tmp: pathlib.Path(tmp).write_text(page))
    print(f"wrote {args.output} ({len(page) / 1e6:.1f} MB, {len(traces)} trace(s))")
    return 0
