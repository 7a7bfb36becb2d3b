"""Writing results so that nobody reads half of one: ``atomic_write`` fills a temporary file
beside the target and renames it into place (removed if writing fails; the mode of the file it
replaces, or of a new file, not a temporary file's 0600), and ``json_default`` turns what a
trace's meta holds (tables, numpy numbers) into JSON."""

from __future__ import annotations

import json
import os
import pathlib
import stat
import tempfile
from collections.abc import Callable

import pandas as pd


def atomic_write(path: str | os.PathLike, write: Callable[[pathlib.Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path`` (same suffix), then move it onto
    ``path``: a reader, or another worker, sees the old file or the whole new one."""
    target = os.path.abspath(path)
    fd, tmp = tempfile.mkstemp(
        dir=os.path.dirname(target), prefix=".ldanalyze-", suffix=".tmp" + os.path.splitext(target)[1]
    )
    os.close(fd)
    try:
        write(pathlib.Path(tmp))
        os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode) if os.path.exists(target) else _new_file_mode())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _new_file_mode() -> int:
    """0666 less the umask: read where Linux tells it, else set and put back (for an instant
    the process's umask is 0, which another thread creating a file would get)."""
    try:
        with open("/proc/self/status") as f:
            umask = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        umask = os.umask(0)
        os.umask(umask)
    return 0o666 & ~umask


def json_default(value):
    """What ``json`` cannot write by itself in a trace's meta: tables as records, numpy numbers
    as numbers, anything else as its text."""
    if isinstance(value, pd.DataFrame):
        return json.loads(value.to_json(orient="records"))
    if hasattr(value, "item"):
        return value.item()
    return str(value)
