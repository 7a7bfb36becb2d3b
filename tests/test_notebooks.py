"""The notebooks in notebooks/ run from top to bottom without an error (nbclient, a real
kernel), are committed without outputs, show the figures they promise, and end on a paragraph
that says what they showed; what a paragraph quotes of the outputs above it (``<!-- output
-->`text```, as in the docs: tests/support/quoted.py) is what they print, and no output shows a
local absolute path. Their executed copies under docs/notebooks/ (for a reader browsing
the repository) are regenerated here and must match their sources:
``LDANALYZE_WRITE_DOCS=1 python -m pytest tests/test_notebooks.py`` rewrites them."""

from __future__ import annotations

import os
import pathlib
import re

import nbformat
import pytest
from nbclient import NotebookClient

import ldanalyze

from .support.quoted import quotes, shown_in

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PUBLISHED = ROOT / "docs" / "notebooks"


def test_the_notebooks_are_committed_without_outputs_and_end_on_what_they_showed():
    assert len(NOTEBOOKS) >= 5
    for path in NOTEBOOKS:
        book = nbformat.read(path, as_version=4)
        assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), path.name
        assert book.cells[-1].cell_type == "markdown" and "showed" in book.cells[-1].source, path.name


def _text(cell) -> str:
    """What a code cell printed and showed as text."""
    return "".join(out.get("text", "") + out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", []))


def _check_the_text(book, name: str) -> None:
    """Each quote is shown by a cell above it; no output names this machine's folders or a
    source line by its absolute path (a warning's location, on whatever machine ran it)."""
    above = ""
    for cell in book.cells:
        if cell.cell_type == "code":
            above += _text(cell)
        for _, quote in quotes(cell.source) if cell.cell_type == "markdown" else ():
            assert shown_in(quote, above), f"{name}: no cell above prints `{quote}`"
    for folder in (str(ROOT), str(pathlib.Path(ldanalyze.__file__).parent)):
        assert folder not in above, f"{name} shows the local path {folder}"
    located = re.search(r"(?:^|\s)/\S+\.py:\d+:", above)
    assert not located, f"{name} shows a local path: {located and located.group().strip()}"


def _kinds(book) -> list[list[str]]:
    """Per code cell, the kinds of its outputs (stream name, or the richest data type)."""
    kinds = []
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        kinds.append(
            [
                out.get("name") or ("image/png" if "image/png" in out.get("data", {}) else out["output_type"])
                for out in cell.get("outputs", [])
            ]
        )
    return kinds


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_its_published_copy_is_current(path):
    book = nbformat.read(path, as_version=4)
    NotebookClient(
        book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    images = sum(1 for kinds in _kinds(book) for kind in kinds if kind == "image/png")
    assert images >= 1, f"{path.name} drew no figure"
    errors = [out for cell in book.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
    _check_the_text(book, path.name)
    for cell in book.cells:
        cell.metadata.pop("execution", None)  # timestamps: no diff between two runs
    published = PUBLISHED / path.name
    if os.environ.get("LDANALYZE_WRITE_DOCS"):
        PUBLISHED.mkdir(exist_ok=True)
        nbformat.write(book, published)
    stale = "stale: LDANALYZE_WRITE_DOCS=1 python -m pytest tests/test_notebooks.py rewrites it"
    assert published.exists(), f"docs/notebooks/{path.name} is missing; {stale}"
    copy = nbformat.read(published, as_version=4)
    _check_the_text(copy, f"docs/notebooks/{path.name}")
    assert [c.source for c in copy.cells] == [c.source for c in book.cells], f"docs/notebooks/{path.name} is {stale}"
    assert _kinds(copy) == _kinds(book), f"docs/notebooks/{path.name} shows other outputs; {stale}"
