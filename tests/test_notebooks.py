"""The notebooks in notebooks/ run from top to bottom without an error (nbclient, a real
kernel), are committed without outputs, and show the figures they promise."""

from __future__ import annotations

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_four_notebooks_committed_without_outputs():
    assert len(NOTEBOOKS) >= 4
    for path in NOTEBOOKS:
        book = nbformat.read(path, as_version=4)
        assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    book = nbformat.read(path, as_version=4)
    NotebookClient(book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    images = sum(1 for cell in book.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
                 if "image/png" in out.get("data", {}))
    assert images >= 1, f"{path.name} drew no figure"
    errors = [out for cell in book.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
