"""Shared fixtures: tiny traces written to temporary files, and paths to the bundled samples."""

from __future__ import annotations

import gzip
import os
import pathlib
import shutil

import pytest
from hypothesis import settings

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# the tests check the compiled kernels (small inputs would otherwise run interpreted, see
# ldanalyze/tiering.py); tests/test_tiering.py checks the interpreted runs against them
os.environ.setdefault("LDANALYZE_KERNELS", "compiled")
# CI draws the same examples every run (a red CI is reproducible; random exploration happens on
# developers' machines, where hypothesis keeps the failures it finds)
settings.register_profile("ci", derandomize=True, print_blob=True)
if IN_CI:
    settings.load_profile("ci")


def write_text(path: pathlib.Path, text: str, *, gz: bool = False) -> pathlib.Path:
    """Write ``text`` to ``path``, gzipped when ``gz``."""
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def write_trace(tmp_path):
    """Write lines (a list or one string) to a trace file; ``gz=True`` gzips it."""
    counter = iter(range(1_000_000))

    def write(lines, *, gz: bool = False, name: str | None = None) -> pathlib.Path:
        text = lines if isinstance(lines, str) else "\n".join(lines) + "\n"
        return write_text(tmp_path / (name or f"trace{next(counter)}.tr" + (".gz" if gz else "")), text, gz=gz)

    return write


def needs_binary(name: str):
    """Mark for tests that run an external program: skipped where it is not installed,
    except in CI, where the test runs and fails (CI must install it: see .ci/run)."""
    return pytest.mark.skipif(
        shutil.which(name) is None and not IN_CI, reason=f"`{name}` is not installed (CI installs it)"
    )


def require_binary(name: str) -> str:
    """Path of an executable, or a test failure naming what is missing."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not installed (CI must install it: see .ci/run)")
    return path
