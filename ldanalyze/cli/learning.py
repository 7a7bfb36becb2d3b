"""``ldanalyze train`` and ``evaluate``: the learned LDA from labelled traces."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from .. import formatting
from .options import input_paths, read_source, replay_semantics, source_paths
from .writing import write_output, write_table


def _labelled(args: argparse.Namespace) -> list:
    """Every trace named (or the --vantage chain, or one trace with --labels), analysed once
    for the learned LDA: features, labels, the heuristics' decisions."""
    from .. import learn

    items = []
    for path in source_paths(args):
        items.append(learn.analyse(read_source(args, path), semantics=replay_semantics(args)))
        print(
            f"  {items[-1].name}: {len(items[-1].features)} gaps, {int(np.isfinite(items[-1].labels).sum())} with "
            "a known cause",
            file=sys.stderr,
        )
    return items


def _check_patterns(args: argparse.Namespace) -> None:
    """A --group-by or --balance-by pattern that misses a trace is said before any trace is read."""
    from .. import learn

    for option, pattern in (("--group-by", getattr(args, "group_by", None)), ("--balance-by", args.balance_by)):
        if pattern is not None:
            for path in args.traces:
                learn.group_of(path, pattern, option)


def _balance(args: argparse.Namespace, items: list) -> list[str] | None:
    from .. import learn

    if args.balance_by is None:
        return None
    return [learn.group_of(item.name, args.balance_by, "--balance-by") for item in items]


def cmd_train(args: argparse.Namespace) -> int:
    from .. import learn
    from ..lda.learned.models import save_model

    _check_patterns(args)
    items = _labelled(args)
    model, gaps = learn.fit(items, args.model, args.seed, _balance(args, items))
    names = ["+".join(os.path.basename(part) for part in item.name.split("+")) for item in items]  # chains: a+b+c
    write_output(
        args.output, input_paths(args), lambda tmp: save_model(model, tmp, kind=args.model, trained_on=names, gaps=gaps)
    )
    print(
        f"trained a {args.model} model on {gaps} gaps of {len(items)} trace(s); wrote {args.output} "
        f"(use it as --lda learned:model={args.output})"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .. import learn

    _check_patterns(args)
    items = _labelled(args)
    groups = [learn.group_of(item.name, args.group_by) for item in items]
    table, importance = learn.evaluate(
        items, groups, args.model, args.seed, held_out=args.hold_out, balance=_balance(args, items)
    )
    verdicts = learn.verdicts(table)
    which = "each of " + ", ".join(sorted(args.hold_out)) if args.hold_out else "each group"
    print(f"grouped cross-validation: {which} held out in turn, trained on the others")
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
        write_table(table, args.output, input_paths(args), None)
        print(f"wrote {args.output}")
    if args.plot:
        from ..report import plots

        write_output(
            args.plot,
            input_paths(args),
            lambda tmp: plots.evaluation(table, importance).savefig(tmp, format="png", dpi=100),
        )
        print(f"wrote the figure to {args.plot}")
    return 0
