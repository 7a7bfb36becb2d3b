"""``ldanalyze train`` and ``evaluate``: the learned LDA from labelled traces."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from ..report.text import evaluation_text
from .options import input_paths, read_source, replay_semantics, source_paths
from .writing import write_output, write_table


def _labelled(args: argparse.Namespace, ldas: str) -> list:
    """Every trace named (or the --vantage chain, or one trace with --labels), analysed once
    for the learned LDA: features, labels, the decisions of the LDAs compared (``ldas``)."""
    from .. import learn

    items = []
    for path in source_paths(args):
        items.append(learn.analyse(read_source(args, path), semantics=replay_semantics(args), ldas=ldas))
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
    items = _labelled(args, "unaware")  # the features and labels are what training reads
    balance = _balance(args, items)
    model, gaps = learn.fit(items, args.model, args.seed, balance)
    # with the traces' families named, a model per family without it: the LDA then defers to mBiaz
    # where its call rests on one family (lda/learned)
    held_out = learn.fit_held_out(items, balance, args.model, args.seed) if balance is not None else {}
    names = ["+".join(os.path.basename(part) for part in item.name.split("+")) for item in items]  # chains: a+b+c
    write_output(
        args.output,
        input_paths(args),
        lambda tmp: save_model(model, tmp, kind=args.model, trained_on=names, gaps=gaps, held_out=held_out),
    )
    sets = f", and one model without each of its {len(held_out)} groups" if held_out else ""
    print(
        f"trained a {args.model} model on {gaps} gaps of {len(items)} trace(s){sets}; wrote {args.output} "
        f"(use it as --lda learned:model={args.output})"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .. import learn

    learn.compared(args.lda)  # an LDA unknown or refused is said before any trace is read
    _check_patterns(args)
    items = _labelled(args, args.lda)
    groups = [learn.group_of(item.name, args.group_by) for item in items]
    table, importance = learn.evaluate(
        items, groups, args.model, args.seed, held_out=args.hold_out, balance=_balance(args, items)
    )
    which = "each of " + ", ".join(sorted(args.hold_out)) if args.hold_out else "each group"
    sys.stdout.write(
        evaluation_text(table, learn.verdicts(table), importance, which, learn.left_out(items), len(items))
    )
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
