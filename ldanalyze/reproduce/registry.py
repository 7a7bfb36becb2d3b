"""Paper 000's statements, words and tables as printed, read from ``paper000_statements.toml``:
the one place they are defined (issue #46 §1). The file is data only; ``statements`` judges the
statements and ``tables`` sets the paper's cells beside the reproduction's."""

from __future__ import annotations

import functools
import pathlib
import tomllib

from ..errors import UsageError

PATH = pathlib.Path(__file__).with_name("paper000_statements.toml")


@functools.cache
def load(path: pathlib.Path = PATH) -> dict:
    """The registry: ``words`` (each word's rule and threshold), ``tables`` (paper 000 Tables II,
    III and VI in %) and ``statement`` (the list). A statement naming an unknown word, or two
    statements with one id, is refused naming the file."""
    try:
        registry = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: {error}") from None
    ids = [s["id"] for s in registry["statement"]]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    unknown = [s["id"] for s in registry["statement"] if s["word"] not in registry["words"]]
    if twice or unknown:
        raise UsageError(f"{path}: statement id(s) twice: {twice}; with an unknown word: {unknown}")
    return registry


def paper_table(name: str) -> dict[str, dict[str, float]]:
    """One of the paper's tables (``wlh``: Table II, ``wb``: Table III, ``vi``: Table VI) as
    {row: {column: value in %}}."""
    tables = load()["tables"]
    columns = tables[name].get("columns", tables["columns"])
    return {row: dict(zip(columns, values)) for row, values in tables[name].items() if row != "columns"}


def a_priori(metric: str, column: str) -> bool:
    """Whether the paper's cell is known a priori (TCP, TFRC, omniscient's M_c and M_w, §IV)."""
    return f"{metric}/{column}" in load()["tables"]["a_priori"]
