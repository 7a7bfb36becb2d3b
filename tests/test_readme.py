"""Every command the README shows runs as shown, over the bundled files, and exits 0: the
first two set-up lines, each ``ldanalyze ...`` line of its bash blocks (continuation lines
joined, globs expanded as a shell would), and its Python API block. They run in a fresh folder
where ``traces/`` and ``tests/data/`` are the repository's, so what they write lands there."""

from __future__ import annotations

import glob
import os
import re
import shlex

import pytest

from ldanalyze.cli import main

from .conftest import ROOT, needs_binary

README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


def _commands() -> list[str]:
    """The ``ldanalyze`` command lines of the README's set-up and bash blocks."""
    setup = re.search(r"^```\n(.*?)^```", README, flags=re.S | re.M).group(1)
    lines = [line.split("&&", 1)[1].strip() for line in setup.splitlines() if "&& ldanalyze" in line]
    for block in _blocks("bash"):
        lines += [line for line in block.replace("\\\n", " ").splitlines() if line.startswith("ldanalyze ")]
    return lines


COMMANDS = _commands()


@pytest.fixture
def repository_view(tmp_path, monkeypatch):
    """A folder that sees the bundled files as the repository's root does, and keeps what the
    commands write."""
    (tmp_path / "tests").mkdir()
    os.symlink(ROOT / "traces", tmp_path / "traces")
    os.symlink(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_shows_commands_of_every_kind():
    shown = {shlex.split(line)[1] for line in COMMANDS}
    assert shown >= {
        "inspect",
        "timeline",
        "classify",
        "replay",
        "score",
        "labels",
        "batch",
        "sweep",
        "report",
        "reproduce",
        "crosscheck",
        "train",
        "evaluate",
    }


@needs_binary("ns")  # reproduce runs the real ns-2
def test_every_readme_command_runs_as_shown(repository_view, capsys):
    """In order: later commands read what earlier ones wrote (labels.csv, model.skops)."""
    for line in COMMANDS:
        argv = []
        for word in shlex.split(line, comments=True)[1:]:
            quoted = f"'{word}'" in line or f'"{word}"' in line
            argv += sorted(glob.glob(word)) if glob.has_magic(word) and not quoted else [word]
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse's usage errors
            code = stop.code
        captured = capsys.readouterr()
        assert code == 0, f"{line}\n{captured.err[-2000:]}"
    for name in (
        "packets.parquet",
        "decisions.parquet",
        "rates.parquet",
        "scores.md",
        "labels.csv",
        "junit.xml",
        "summary.md",
        "results.parquet",
        "spike.png",
        "spike.csv",
        "report.html",
        "model.skops",
        "lab_labels.csv",
        "out",
    ):
        assert (repository_view / name).exists(), name


def test_the_readme_python_block_runs(repository_view):
    for block in _blocks("python"):
        if block.lstrip().startswith("import ldanalyze as la"):
            exec(compile(block, "README.md", "exec"), {})  # the README's own code, nothing read from input
            return
    pytest.fail("the README has no Python block starting with `import ldanalyze as la`")
