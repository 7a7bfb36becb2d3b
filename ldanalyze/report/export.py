"""The tables the commands write to files (``timeline``, ``classify``, ``replay``, ``sweep``,
``evaluate``, ``batch`` with ``-o``), with their units: a time column's name ends in ``_s``
(seconds) as a rate's ends in ``_bps``, in every format, and a Parquet file's fields carry
their ``unit`` in Arrow field metadata. README's "Exported columns and their units" is the
documented schema; a test holds it to ``UNITS``.

Why the name, and not metadata alone: the unit must reach whoever reads the file, however they
read it. CSV has nowhere to put it but the header (a comment line breaks ``pandas.read_csv``
and Excel alike, a sidecar file is lost at the first copy), JSON records hold only keys, and
``pandas.read_parquet`` drops Arrow field metadata. A suffix is in every reader's hands, and a
file reads the same as its CSV, JSON or Parquet twin. The Python API keeps its short names
(``Timeline.arrivals["owd"]``), as a DataFrame there has its docstring beside it.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

SECONDS = "s"
# every unit-bearing column a command writes, by its name in the Python API; a column of unit
# SECONDS is written as NAME_s, the others' names say their unit already or are counts and labels
UNITS: dict[str, str] = {
    "t_send": SECONDS,
    "t_recv": SECONDS,
    "t_drop": SECONDS,
    "owd": SECONDS,
    "rott": SECONDS,
    "iat": SECONDS,
    "jitter": SECONDS,
    "jitter_rfc3550": SECONDS,
    "t_detect": SECONDS,
    "t_decide": SECONDS,
    "t_air": SECONDS,
    "t_air_last": SECONDS,
    "t": SECONDS,
    "rate_bps": "bit/s",
    "size": "bytes",
}


def exported_name(name: str) -> str:
    """The name a column has in a file: ``owd`` → ``owd_s``; ``rate_bps``, ``seq`` as they are."""
    return f"{name}_s" if UNITS.get(name) == SECONDS else name


def exported(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its columns named as a file names them (:func:`exported_name`)."""
    return table.rename(columns={name: exported_name(name) for name in table.columns if isinstance(name, str)})


def write_parquet(table: pd.DataFrame, path) -> None:
    """Write an :func:`exported` table as Parquet, each field of a known unit with ``unit`` in
    its Arrow metadata (``pyarrow.parquet.read_schema(path).field("owd_s").metadata``)."""
    import pyarrow.parquet as pq  # here: its import is 10 ms every command would pay (tests/test_imports.py)

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    units = {exported_name(name): unit for name, unit in UNITS.items()}
    fields = [
        field.with_metadata({"unit": units[field.name]}) if field.name in units else field for field in arrow.schema
    ]
    pq.write_table(arrow.cast(pa.schema(fields, metadata=arrow.schema.metadata)), path)
