"""Writing results so that nobody reads half of one: ``atomic_write`` fills a temporary file
beside the target and renames it into place (removed if writing fails; the mode of the file it
replaces, or of a new file, not a temporary file's 0600), ``atomic_folder`` the same for a
folder of files (a cache entry); ``table_records`` and ``json_default``
write tables and what a trace's meta holds (numpy numbers and arrays) as exact JSON."""

from __future__ import annotations

import os
import pathlib
import shutil
import stat
import tempfile
from collections.abc import Callable

import numpy as np
import pandas as pd


def atomic_write(path: str | os.PathLike, write: Callable[[pathlib.Path], object]) -> None:
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


def atomic_folder(path: str | os.PathLike, write: Callable[[pathlib.Path], object]) -> bool:
    """Call ``write(tmp)`` on a temporary folder beside ``path``, then rename it to ``path``: a
    reader sees no folder or the whole one. When ``path`` is there already (another worker
    wrote it first), the new folder is dropped and False returned. Removed if writing fails."""
    target = os.path.abspath(path)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(target), prefix=".ldanalyze-", suffix=".tmp")
    try:
        write(pathlib.Path(tmp))
        os.chmod(tmp, 0o777 & ~_umask())  # a new folder's mode, not a temporary folder's 0700
        try:
            os.replace(tmp, target)
        except OSError:  # a folder with files there: the other worker's, as good as ours
            return False
        return True
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)


def _new_file_mode() -> int:
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask: read where Linux tells it, else set and put back (for an instant
    the process's umask is 0, which another thread creating a file would get)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        umask = os.umask(0)
        os.umask(umask)
        return umask


def table_records(table: pd.DataFrame) -> list[dict]:
    """The rows as dicts of plain Python values, a missing value (or an infinity, which JSON
    lacks) as None. Floats stay exact: ``json.dumps`` writes the shortest text that reads back
    the same double, where pandas' ``to_json`` keeps 10 digits."""
    columns = []
    for name in table.columns:
        column = table[name]
        values = column.to_numpy(dtype=object, copy=True)  # numpy numbers become Python ones
        missing = column.isna().to_numpy()
        if column.dtype.kind == "f":
            missing = missing | np.isinf(column.to_numpy())
        values[missing] = None
        columns.append(values)
    names = [str(name) for name in table.columns]
    return [dict(zip(names, row)) for row in zip(*columns)]


def json_default(value):
    """What ``json`` cannot write by itself: a table as its exact records, a numpy number as
    (or array) as its Python value (or list), anything else as its text."""
    if isinstance(value, pd.DataFrame):
        return table_records(value)
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return str(value)
