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
from ..report.text import table_text


def write_output(output: str, inputs: Sequence[str], write) -> None:
    """``output.atomic_write``, never over an input."""
    _refuse_overwriting(os.path.abspath(output), inputs)
    atomic_write(output, write)


def _refuse_overwriting(output: str, inputs: Sequence[str]) -> None:
    for path in inputs:
        if os.path.exists(output) and os.path.samefile(path, output):
            raise UsageError(f"refusing to overwrite the input trace {path}")


TABLE_KINDS = ("parquet", "csv", "json")


def table_kind(output: str, kind: str | None) -> str:
    """The format a table is written in: ``kind``, else by the name (.parquet, .csv, .csv.gz,
    .json)."""
    if kind:
        return kind
    if output.endswith(".parquet"):
        return "parquet"
    if output.endswith((".csv", ".csv.gz")):
        return "csv"
    if output.endswith(".json"):
        return "json"
    raise UsageError(f"{output}: a table is written as .parquet, .csv, .csv.gz or .json; give one of these names")


def write_table(table: pd.DataFrame, output: str, inputs: Sequence[str], kind: str | None) -> str:
    """Write ``table`` as .parquet, .csv or .csv.gz, or .json (an array of records, a record a
    line), by ``kind`` or the extension."""
    _refuse_overwriting(output, inputs)  # said first: the worse mistake
    kind = table_kind(output, kind)
    if kind == "parquet":
        write_output(output, inputs, lambda tmp: table.to_parquet(tmp, index=False))
    elif kind == "json":
        write_output(output, inputs, lambda tmp: pathlib.Path(tmp).write_text(table_text(table)))
    else:
        compression = "gzip" if output.endswith(".gz") else None
        write_output(output, inputs, lambda tmp: table.to_csv(tmp, index=False, compression=compression))
    return kind


SCORE_FORMATS = {".json": "json", ".csv": "csv", ".md": "md", ".txt": "table"}


def score_format(output: str | None, given: str | None) -> str:
    """What ``score`` writes: ``--format``, else what ``-o``'s extension promises (text for
    another); an extension that promises something else is refused."""
    suffix = pathlib.Path(output).suffix.lower() if output else ""
    if suffix in (".html", ".htm"):
        raise UsageError(
            f"score writes a table (text, JSON, CSV or Markdown), not {output}: for an HTML page "
            f"with the plots, use `ldanalyze report TRACE -o {output}`"
        )
    promised = SCORE_FORMATS.get(suffix)
    if given and promised and given != promised:
        raise UsageError(f"-o {output} promises {promised}, but --format {given} was given")
    return given or promised or "table"
