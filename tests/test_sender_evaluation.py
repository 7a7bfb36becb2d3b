"""docs/make_sender_evaluation.py on the two lab runs bundled in tests/data/lab (copies of two
runs of the grid): its per-run rows are the ones docs/sender.md shows for them, its counts are
the lab's, and its held-out halves split every coordinate of the grid."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter

import pytest

from .conftest import ROOT

LAB = ROOT / "tests" / "data" / "lab"
RUNS = ("policer-0.5M-b64k-r0", "shaper-0.5M-qsmall-r0")


def _script():
    spec = importlib.util.spec_from_file_location("make_sender_evaluation", ROOT / "docs" / "make_sender_evaluation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return _script()


@pytest.fixture(scope="module")
def results(script):
    return [script.evaluate_run(LAB / name) for name in RUNS]


def test_page_shows_the_bundled_runs_rows(script, results):
    page = (ROOT / "docs" / "sender.md").read_text()
    for result in results:
        (line,) = script.markdown([], "", script.run_rows(result))[2:]
        assert line in page, f"docs/sender.md's row of {result.name} is not what the script computes: {line}"


def test_counts_are_the_labs(script, results):
    """Losses are the transmissions the chain's truth dropped, lossy chunks those run.json
    counted (by the client's requests; the reader cuts at idle periods: the same chunks here)."""
    for result in results:
        facts = json.loads((LAB / result.name / "run.json").read_text())
        (row,) = script.run_rows(result)
        dropped = sum(n for cause, n in facts["truth"].items() if cause != "delivered")
        assert row[6] == dropped
        assert row[3] == facts["lossy_chunks"]
        lossy = result.chunks[result.chunks["lossy"]]
        assert (lossy["losses"] > 0).all()  # the sender saw a loss in every chunk the truth says lossy


def test_the_page_fills(script, results):
    """Every generated block has its span on the page, and filling keeps the text around it."""
    page = (ROOT / "docs" / "sender.md").read_text()
    filled = script.fill(page, script.tables(results))
    assert filled.split("<!-- begin grid -->")[0] == page.split("<!-- begin grid -->")[0]
    assert "**Runs**: 2 (1 policed, 1 shaped, 0 random loss)." in filled


def test_halves_split_every_coordinate(script):
    """The held-out rule puts every rate, bucket or queue and cross traffic in both halves,
    and splits the grid in two about equal halves."""
    import sender_grid  # on sys.path by the script

    names = list(sender_grid.grid())
    halves = {name: script.half(name) for name in names}
    counts = Counter(halves.values())
    assert abs(counts["A"] - counts["B"]) <= 2
    for name in names:
        m = script.NAME.match(name)
        for key in ("a", "b", "cross"):
            same = [
                n for n in names if script.NAME.match(n)["kind"] == m["kind"] and script.NAME.match(n)[key] == m[key]
            ]
            assert {halves[n] for n in same} == {"A", "B"}, (name, key)
