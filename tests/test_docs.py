"""Every command README.md and docs/**/*.md show runs as shown over the bundled files, and what
their text quotes of its output is what it prints. How a document is read, the rules a writer
follows:

- A *command block* is a fenced block without a language or marked ``bash``, ``sh`` or
  ``shell``. Each of its lines (``\\`` continuations joined, blank and ``#`` lines dropped;
  ``A && B`` as A then B) is a command. ``ldanalyze ...`` runs in process, globs expanded as a
  shell would, and must exit 0 and write every file it names (``-o``, ``--junit``, ``--plot``,
  ...). ``pip install ...`` and ``python -m pytest`` are taken as done: this test runs where
  ldanalyze is installed, inside that suite. Any other command fails the test.
- A document's blocks run in order in one fresh folder where ``traces/`` and ``tests/data/``
  are the repository's, so a command reads what one above it wrote there.
- ``<!-- not run: REASON -->`` on the line before a block leaves it out: a run of many minutes,
  a simulator or a capture the repository does not hold. Each such block is reported as a
  skipped test with its reason (``pytest -ra`` lists them); keep them few.
- ``<!-- output -->`` right before a backticked span in the text quotes the output (stdout and
  stderr) of the nearest command block above it, which must show it (``tests/support/quoted.py``:
  spaces loose, ``...`` any text). Quote numbers so and they cannot go stale.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import pathlib
import re
import shlex
import shutil

import pytest

from ldanalyze.cli import main
from ldanalyze.cli.parser import build_parser

from .conftest import IN_CI, ROOT
from .support.quoted import quotes, shown_in

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)
COMMAND_BLOCK = {"", "bash", "sh", "shell"}
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")
TAKEN_AS_DONE = ("pip install ", "python -m pytest")
NEEDS = {"reproduce": "ns"}  # a subcommand and the program it runs
WRITES = ("output", "junit", "summary", "json", "plot", "errors")  # options naming a file written


@dataclasses.dataclass(frozen=True)
class Block:
    document: str
    line: int
    start: int
    commands: tuple[str, ...]
    not_run: str | None

    def __str__(self) -> str:
        return f"{self.document}:{self.line}"


def _blocks(path: pathlib.Path) -> list[Block]:
    """The command blocks of one document, in order."""
    text = path.read_text()
    blocks = []
    for found in FENCE.finditer(text):
        if found.group(1) not in COMMAND_BLOCK:
            continue
        before = text[: found.start()].rstrip().rsplit("\n", 1)[-1]
        marker = NOT_RUN.match(before.strip())
        lines = found.group(2).replace("\\\n", " ").splitlines()
        commands = tuple(
            part.strip()
            for line in lines
            if line.strip() and not line.lstrip().startswith("#")
            for part in line.split("&&")
        )
        line = text.count("\n", 0, found.start()) + 1
        blocks.append(Block(str(path.relative_to(ROOT)), line, found.start(), commands, marker and marker.group(1)))
    return blocks


BLOCKS = {path: _blocks(path) for path in DOCUMENTS}
RUN = [path for path, blocks in BLOCKS.items() if any(not block.not_run for block in blocks)]
NOT_RUN_BLOCKS = [block for blocks in BLOCKS.values() for block in blocks if block.not_run]
NOT_RUN_HERE = {
    "docs/captures.md: needs your own captures (a sender's, a monitor-mode one of the air, the station's): none is bundled",
    "docs/ns3.md: needs ns-3 (libns3-dev) and a minute of simulation; FOLDER is what the first line prints",
}


def _argv(command: str) -> list[str]:
    """The words after ``ldanalyze``, as a shell passes them (a glob matching nothing is kept)."""
    argv = []
    for word in shlex.split(command, comments=True)[1:]:
        quoted = f"'{word}'" in command or f'"{word}"' in command
        argv += (sorted(glob.glob(word)) or [word]) if glob.has_magic(word) and not quoted else [word]
    return argv


def _run(block: Block, command: str, capsys) -> str:
    """What one command printed, once it exited 0 and wrote the files it names."""
    if command.startswith(TAKEN_AS_DONE):
        return ""
    if not command.startswith("ldanalyze "):
        pytest.fail(f"{block}: cannot run `{command}` here; mark the block <!-- not run: REASON -->")
    argv = _argv(command)
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's usage errors
        code = stop.code
    said = capsys.readouterr()
    assert code == 0, f"{block}: {command}\n{said.err[-2000:]}"
    args, _ = build_parser().parse_known_args(argv)
    for name in WRITES:
        written = getattr(args, name, None)
        assert not isinstance(written, str) or pathlib.Path(written).exists(), f"{block}: {command}: no {written}"
    return said.out + said.err


@pytest.fixture
def repository_view(tmp_path, monkeypatch):
    """A folder that sees the bundled files as the repository's root does, and keeps what the
    commands write."""
    (tmp_path / "tests").mkdir()
    os.symlink(ROOT / "traces", tmp_path / "traces")
    os.symlink(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _missing_programs(path: pathlib.Path) -> list[str]:
    """The programs a document's commands run that this machine lacks (``NEEDS``)."""
    words = [c.split() for b in BLOCKS[path] if not b.not_run for c in b.commands if c.startswith("ldanalyze ")]
    return sorted({NEEDS[w[1]] for w in words if w[1] in NEEDS and shutil.which(NEEDS[w[1]]) is None})


def _runnable(path: pathlib.Path):
    """A document to run; outside CI one whose programs are missing is skipped with them named
    (in CI it runs, and fails naming what is missing)."""
    missing = _missing_programs(path)
    reason = f"`{'`, `'.join(missing)}` not installed (CI installs it)"
    return pytest.param(path, marks=pytest.mark.skipif(bool(missing) and not IN_CI, reason=reason))


@pytest.mark.parametrize("path", [_runnable(path) for path in RUN], ids=lambda path: str(path.relative_to(ROOT)))
def test_every_command_runs_as_shown_and_prints_what_the_text_quotes(path, repository_view, capsys):
    """In order: later commands read what earlier ones wrote (labels.csv, model.skops, a baseline)."""
    blocks = [block for block in BLOCKS[path] if not block.not_run]
    printed = {block.start: "".join(_run(block, command, capsys) for command in block.commands) for block in blocks}
    for at, quote in quotes(path.read_text()):
        above = [block for block in BLOCKS[path] if block.start < at]
        assert above, f"{path.name}: `{quote}` quotes the output of no command block above it"
        block = above[-1]
        assert not block.not_run, f"{block}: `{quote}` quotes the output of a block not run"
        assert shown_in(quote, printed[block.start]), (
            f"{block} does not print `{quote}`:\n{printed[block.start][-3000:]}"
        )


def test_the_blocks_not_run_are_few_and_say_why():
    """The command blocks that cannot run here (ns-3 for a minute, a user's own capture) are
    listed with their reasons; a new one needs a reason and a place on this list."""
    assert {f"{block.document}: {block.not_run}" for block in NOT_RUN_BLOCKS} == NOT_RUN_HERE


def test_every_marker_sits_where_it_is_read():
    """A ``not run`` marker before no command block, or an ``output`` marker before no
    backticked span, would leave a block run or a quote unchecked in silence."""
    for path in DOCUMENTS:
        text = path.read_text()
        not_run = sum(1 for block in BLOCKS[path] if block.not_run)
        assert len(re.findall(r"<!--\s*not run", text)) == not_run, (
            f"{path.name}: a `not run` marker (with a reason) goes on the line before a command block"
        )
        assert len(re.findall(r"<!--\s*output", text)) == len(quotes(text)), (
            f"{path.name}: an `output` marker goes right before a backticked span"
        )


def test_the_docs_quote_outputs():
    assert sum(len(quotes(path.read_text())) for path in RUN) >= 2


def test_the_readme_shows_commands_of_every_kind():
    shown = {
        shlex.split(command)[1]
        for block in BLOCKS[ROOT / "README.md"]
        for command in block.commands
        if command.startswith("ldanalyze ")
    }
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


def test_the_readme_python_block_runs(repository_view):
    readme = (ROOT / "README.md").read_text()
    for block in re.findall(r"^```python\n(.*?)^```", readme, flags=re.S | re.M):
        if block.lstrip().startswith("import ldanalyze as la"):
            exec(compile(block, "README.md", "exec"), {})  # the README's own code, nothing read from input
            return
    pytest.fail("the README has no Python block starting with `import ldanalyze as la`")


def test_the_lda_table_names_every_lda_the_commands_take():
    """The README's table of the LDAs has a row for each name ``--lda`` accepts, and no other."""
    from ldanalyze.lda import REGISTRY

    readme = (ROOT / "README.md").read_text()
    table = readme.split("## The LDAs", 1)[1].split("\n\n", 2)[1]
    named = [name for line in table.splitlines()[2:] for name in re.findall(r"`([\w@]+)`", line.split("|")[1])]
    assert sorted(named) == sorted(REGISTRY)
