"""The ``ldanalyze`` command: thin subcommands over the public API.

Exit status: 0 on success, 2 on bad input (the message names the file and line), 1 on any
other failure.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Sequence

from ..errors import TraceError, UsageError
from .parser import build_parser, unrecognized
from .startup import no_blas_probe, no_numba_extensions, ordinary_pages, run_exit_handlers

__all__ = ["main", "run", "ordinary_pages"]


def main(argv: Sequence[str] | None = None) -> int:
    ordinary_pages()
    no_blas_probe()
    no_numba_extensions()
    parser = build_parser()
    with warnings.catch_warnings(record=True) as caught:  # the parser's and the API's warnings, as one-line notes
        warnings.simplefilter("always")
        try:
            args, unknown = parser.parse_known_args(argv)
            if unknown:
                parser.error(unrecognized(parser, args, unknown))
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
    interpreter's objects, numba's above all, is a noticeable share of every short command
    (docs/design.md) and does nothing a finished command needs: the exit
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
    run_exit_handlers()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left before the last bytes, as in main
        code = code or 1
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)
