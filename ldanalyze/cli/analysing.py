"""The commands over one set of traces: labels, timeline, classify, agreement, score, replay,
sweep and report.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import pandas as pd

from .. import formatting
from ..analysis import analyze_traces
from ..consensus import agreement as lda_agreement
from ..consensus import consensus, kappa_matrix, majority_line
from ..control import OPEN_LOOP_NOTE, replay
from ..control.agreement import agreement
from ..errors import UsageError
from ..io.labels import write_labels
from ..lda import classify, runnable_ldas
from ..lda.zbs import Zbs
from ..packets import LOSS_FATES
from ..report.ci import table_text
from ..report.tables import markdown_table, text_table
from ..scoring import score
from .options import (
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
from .writing import score_format, write_output, write_table


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
    kind = write_table(table, args.output, input_paths(args), args.output_format)
    print(f"wrote {len(table)} packets of {len(timeline.flows)} flow(s) to {args.output} ({kind})")
    return 0


def cmd_classify(args: argparse.Namespace) -> int:
    trace, timeline = load_timeline(args)
    ldas = runnable_ldas(timeline, args.lda)
    decisions = classify(timeline, ldas, semantics=replay_semantics(args))
    if args.output:
        table = decisions.astype({"lda": str, "flow": str, "decision": str})
        kind = write_table(table, args.output, input_paths(args), args.output_format)
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
    from .. import closedloop

    log = closedloop.read_decision_log(args.log)
    _, timeline = load_timeline(args)
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


def cmd_score(args: argparse.Namespace) -> int:
    if args.average == "mean" and args.by == "flow":
        raise UsageError("--average mean needs --by trace or --by pooled (a flow is its own mean)")
    controller = {"none": None, "auto": "tfrc"}.get(args.controller, args.controller)
    batch = analyze_traces(
        _score_traces(args),
        args.lda,
        controller=controller,
        controller_optional=args.controller == "auto",
        semantics=replay_semantics(args),
        path_model=path_model_of(args),
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
        policing_as=args.policing_as,
    )
    if not scores.empty:
        keys = {"flow": ("trace", "flow"), "trace": ("trace",), "pooled": ()}[args.by]
        scores = scores.merge(
            lda_agreement(batch.decisions, keys).drop(columns=["called"]), how="left", on=[*keys, "lda"]
        )
    args.format = score_format(args.output, args.format)
    if batch.throughput is not None and args.format == "table":
        print(f"throughput: {OPEN_LOOP_NOTE}", file=sys.stderr)
    if args.format == "json":
        text = table_text(scores)
    elif args.format == "csv":
        text = scores.to_csv(index=False)
    elif args.format == "md":
        text = markdown_table(scores)
    elif scores.empty:
        flows = 0 if batch.summary is None else len(batch.summary)
        text = f"nothing to score: no flow lost a packet ({flows} flow(s) read; `inspect` shows them)\n"
    else:
        text = text_table(scores) + _disagreement_text(batch.decisions)
    if args.output:
        write_output(args.output, input_paths(args), lambda tmp: pathlib.Path(tmp).write_text(text))
        print(f"wrote {len(scores)} score rows to {args.output} ({args.format})")
    else:
        sys.stdout.write(text)
    return 0


def _disagreement_text(decisions) -> str:
    """Without any ground truth: how far the LDAs agree (Cohen's kappa, pooled) and the
    majority call per loss, with its caveat."""
    if decisions.empty or {str(c) for c in pd.unique(decisions["cause"])} != {"lost"}:
        return ""
    kappa = kappa_matrix(decisions)
    if kappa.empty:
        return ""
    shown = kappa.map(lambda k: "-" if pd.isna(k) else f"{k:.2f}")
    return (
        "\nagreement between the LDAs (Cohen's kappa over the losses both called: 1 alike, 0 as by chance, "
        "- undefined: both called every loss the same way):\n"
        f"{shown.to_string()}\n\n{majority_line(consensus(decisions), len(kappa))}\n"
    )


def _score_traces(args: argparse.Namespace):
    """The traces ``score`` reads: one per file, or with ``--flow-at-a-time`` one per flow of
    each capture (``read_capture_flows``: memory bounded by the largest flow)."""
    if not args.flow_at_a_time:
        for path in source_paths(args):
            trace = read_source(args, path)
            note_unscored(trace)
            yield trace
        return
    for path in source_paths(args):
        yield from flow_by_flow(args, path)


def cmd_replay(args: argparse.Namespace) -> int:
    trace, timeline = load_timeline(args)
    result = replay(timeline, args.controller, args.lda, semantics=replay_semantics(args), path=path_model_of(args))
    if args.output:
        table = result.rates.astype({"lda": str, "controller": str, "flow": str})
        kind = write_table(table, args.output, input_paths(args), args.output_format)
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

    traces = [read_source(args, path) for path in source_paths(args)]
    controller = None if args.controller == "none" else args.controller
    page = build_report(traces, ldas=args.lda, controller=controller, path=path_model_of(args))
    write_output(args.output, input_paths(args), lambda tmp: pathlib.Path(tmp).write_text(page))
    print(f"wrote {args.output} ({len(page) / 1e6:.1f} MB, {len(traces)} trace(s))")
    return 0
