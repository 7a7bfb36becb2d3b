"""Writing what a command made: atomically, never over an input, in the format the file's name
promises.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

import pandas as pd

from ..errors import UsageError
from ..output import atomic_write
from ..report.export import exported, write_parquet
from ..report.text import table_text


def write_output(output: str, inputs: Sequence[str], write) -> None:
    """``output.atomic_write``, never over an input, into a folder that is there."""
    _refuse_overwriting(os.path.abspath(output), inputs)
    check_output_folder(output)
    try:
        atomic_write(output, write)
    except PermissionError as e:
        raise UsageError(f"cannot write {output}: {(e.strerror or str(e)).lower()}") from None


def check_output_folder(output: str) -> None:
    """A clear refusal where ``-o output``'s folder is missing or not a folder."""
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {output}: no folder {folder} (create it first)")


def _refuse_overwriting(output: str, inputs: Sequence[str]) -> None:
    for path in inputs:
        if os.path.exists(output) and os.path.samefile(path, output):
            raise UsageError(f"refusing to overwrite the input trace {path}")


# the formats each kind of output is written in, by the extension that says it
TABLE_SUFFIXES = {".parquet": "parquet", ".csv": "csv", ".csv.gz": "csv", ".json": "json"}
TABLE_KINDS = tuple(dict.fromkeys(TABLE_SUFFIXES.values()))
SCORE_SUFFIXES = {".json": "json", ".csv": "csv", ".md": "md", ".txt": "table"}


def output_format(output: str, given: str | None, suffixes: dict[str, str], what: str) -> str:
    """The format ``-o output`` is written in, by one rule for every command: the name's
    extension says it (``suffixes``); ``--format`` may say it too, but not another; a name whose
    extension says none is refused (a file of one format under another's name is worse than an
    error), unless ``--format`` names the format (``-o /dev/stdout --format csv``)."""
    promised = next((kind for suffix, kind in suffixes.items() if output.lower().endswith(suffix)), None)
    if given and promised and given != promised:
        raise UsageError(f"-o {output} promises {promised}, but --format {given} was given")
    if given or promised:
        return given or promised  # type: ignore[return-value]  # one of them is a format
    names = ", ".join(suffixes)
    hint = (
        f"; for an HTML page with the plots, use `ldanalyze report TRACE -o {output}`"
        if output.lower().endswith((".html", ".htm"))
        else ""
    )
    raise UsageError(f"{output}: {what} is written as {names}; give one of these names{hint}")


def table_kind(output: str, kind: str | None) -> str:
    """The format a table is written in (.parquet, .csv, .csv.gz, .json), by :func:`output_format`."""
    return output_format(output, kind, TABLE_SUFFIXES, "a table")


def write_table(table: pd.DataFrame, output: str, inputs: Sequence[str], kind: str | None) -> str:
    """Write ``table`` as .parquet, .csv or .csv.gz, or .json (an array of records, a record a
    line), by ``kind`` or the extension, its columns named with their units and a Parquet
    file's fields carrying them (``report.export``)."""
    _refuse_overwriting(output, inputs)  # said first: the worse mistake
    kind = table_kind(output, kind)
    table = exported(table)
    if kind == "parquet":
        write_output(output, inputs, lambda tmp: write_parquet(table, tmp))
    elif kind == "json":
        write_output(output, inputs, lambda tmp: pathlib.Path(tmp).write_text(table_text(table)))
    else:
        compression = "gzip" if output.endswith(".gz") else None
        write_output(output, inputs, lambda tmp: table.to_csv(tmp, index=False, compression=compression))
    return kind


def score_format(output: str | None, given: str | None, inputs: Sequence[str]) -> str:
    """What ``score`` writes: to a file (never an input), by :func:`output_format`; to the
    terminal, ``--format`` or its table."""
    if output:
        _refuse_overwriting(output, inputs)  # said first: the worse mistake
        check_output_folder(output)
        return output_format(output, given, SCORE_SUFFIXES, "a score table")
    return given or "table"
