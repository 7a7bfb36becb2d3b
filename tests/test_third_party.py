"""The few internals of other projects the package reads, each behind one small function: these
tests fail, saying which and where, when an upgrade of Python, argparse or numba changes one."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap

from ldanalyze.cli.parser import build_parser, option_strings

UPGRADE = "an upgrade changed {what}: {where} relies on it; find the new way (or a public API) and update it"


def test_argparse_still_lists_a_parsers_options():
    options = option_strings(build_parser().commands["score"])
    assert {"-o", "--output", "--lda", "--format"} <= set(options), UPGRADE.format(
        what="argparse's ArgumentParser._actions", where="ldanalyze.cli.parser.option_strings"
    )


def test_atexit_still_runs_the_exit_handlers_on_demand():
    script = textwrap.dedent(
        """
        import atexit, os
        from ldanalyze.cli.startup import run_exit_handlers
        atexit.register(print, "handler ran")
        run_exit_handlers()
        os._exit(0)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "handler ran\n", (
        UPGRADE.format(what="atexit._run_exitfuncs", where="ldanalyze.cli.startup.run_exit_handlers")
        + f"\n{done.stderr[-2000:]}"
    )


def test_numba_still_skips_its_plugin_search_when_told(monkeypatch):
    from numba.core import entrypoints

    searched = []
    monkeypatch.setattr(
        importlib.metadata, "entry_points", lambda *a, **k: searched.append(1) or importlib.metadata.EntryPoints(())
    )
    monkeypatch.setattr(entrypoints, "_already_initialized", False)
    entrypoints.init_all()  # not told: numba searches
    monkeypatch.setattr(entrypoints, "_already_initialized", False)
    from ldanalyze.cli.startup import no_numba_extensions

    no_numba_extensions()
    entrypoints.init_all()  # told: it does not
    assert searched == [1], UPGRADE.format(
        what="numba.core.entrypoints._already_initialized", where="ldanalyze.cli.startup.no_numba_extensions"
    )


def test_numbas_cache_index_still_lists_the_builds_on_disk(tmp_path):
    """In a fresh process with a cache of its own: a kernel compiled is on disk, built here."""
    script = textwrap.dedent(
        """
        import numpy as np
        from ldanalyze import tiering
        from ldanalyze.timeline import rfc3550_jitter
        rfc3550_jitter(np.ones(4), np.array([True, False, False, False]))
        print(tiering.cached_builds(rfc3550_jitter))
        """
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "LDANALYZE_KERNELS": "compiled"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "True)]" in done.stdout, (
        UPGRADE.format(
            what="numba's cache index (Dispatcher._cache._cache_file._load_index, keys: signature, magic tuple)",
            where="ldanalyze.tiering.cached_builds",
        )
        + f"\n{done.stdout[-500:]}{done.stderr[-2000:]}"
    )
