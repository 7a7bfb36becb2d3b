"""The notebooks in notebooks/ run from top to bottom without an error (nbclient, a real
kernel), are committed without outputs, show the figures they promise, and end on a paragraph
that says what they showed. Their executed copies under docs/notebooks/ (for a reader browsing
the repository) are regenerated here and must match their sources:
``LDANALYZE_WRITE_DOCS=1 python -m pytest tests/test_notebooks.py`` rewrites them."""

from __future__ import annotations

import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PUBLISHED = ROOT / "docs" / "notebooks"


def test_the_notebooks_are_committed_without_outputs_and_end_on_what_they_showed():
    assert len(NOTEBOOKS) >= 5
    for path in NOTEBOOKS:
        book = nbformat.read(path, as_version=4)
        assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), path.name
        assert book.cells[-1].cell_type == "markdown" and "showed" in book.cells[-1].source, path.name


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
    for cell in book.cells:
        cell.metadata.pop("execution", None)  # timestamps: no diff between two runs
    published = PUBLISHED / path.name
    if os.environ.get("LDANALYZE_WRITE_DOCS"):
        PUBLISHED.mkdir(exist_ok=True)
        nbformat.write(book, published)
    stale = "stale: LDANALYZE_WRITE_DOCS=1 python -m pytest tests/test_notebooks.py rewrites it"
    assert published.exists(), f"docs/notebooks/{path.name} is missing; {stale}"
    copy = nbformat.read(published, as_version=4)
    assert [c.source for c in copy.cells] == [c.source for c in book.cells], f"docs/notebooks/{path.name} is {stale}"
    assert _kinds(copy) == _kinds(book), f"docs/notebooks/{path.name} shows other outputs; {stale}"
