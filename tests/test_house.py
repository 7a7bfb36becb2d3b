"""The house's structure holds: the layers contract in pyproject.toml (import-linter) is kept,
no module imports one that imports it back, even inside a function, and the tools beside the
package (benchmarks, traces, docs) do not import the tests."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ldanalyze"
TOOLS = ("benchmarks", "traces", "docs")  # run beside the package, by users too


def test_the_layers_contract_is_kept():
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "0 broken" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every module's imports of the package's modules, at any depth of its code."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                named = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
                targets = named + ([base] if len(named) < len(node.names) else [])  # names from base itself
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def test_no_import_circle():
    edges = _imports()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (circle := visit(target)):
                return circle
        state[module] = 2
        path.pop()
        return None

    for module in sorted(edges):
        if module not in state:
            circle = visit(module)
            assert circle is None, " -> ".join(circle)


def _imports_of_tests(source: str) -> list[tuple[int, str]]:
    """(line, module) of each import of the test tree (``tests`` or a module in it) in a file's
    source, at any depth of its code."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        found += [(node.lineno, name) for name in names if name.split(".")[0] == "tests"]
    return found


def test_the_tools_beside_the_package_do_not_import_the_tests():
    """benchmarks/, traces/ and docs/ run where the package is installed and the test tree is not:
    what they need lives in the package (the network lab is ``ldanalyze.lab``); the plain twins
    and the tests' helpers stay in tests/."""
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for folder in TOOLS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, name in _imports_of_tests(path.read_text())
    ]
    assert not found, "\n".join(found)


def test_the_check_of_the_tools_sees_every_form_of_import():
    source = (
        "import tests.naive\nfrom tests import support\nimport os, tests as t\nfrom testsuite import x\n"
        "from .tests import y\ndef f():\n    from tests.support.limiters import simulated\n"
    )
    assert _imports_of_tests(source) == [(1, "tests.naive"), (2, "tests"), (3, "tests"), (7, "tests.support.limiters")]


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True)


def test_ruff_finds_nothing_and_the_code_is_formatted():
    """ruff's rules and line length are in pyproject.toml (``ruff format`` fixes the layout)."""
    linted = _run("ruff", "check", "ldanalyze", "tests", "benchmarks", "docs", "notebooks")
    assert linted.returncode == 0, linted.stdout[-3000:]
    formatted = _run("ruff", "format", "--check", "ldanalyze", "tests", "benchmarks", "docs", "notebooks")
    assert formatted.returncode == 0, formatted.stdout[-3000:]


def test_mypy_passes_on_the_whole_package():
    """[tool.mypy] checks every module of the package (files = ["ldanalyze"])."""
    checked = _run("mypy")
    assert checked.returncode == 0, checked.stdout[-3000:]


MODULE_LINES = 700  # a module past this has usually taken on a second job: split it along the data flow


def test_no_module_is_over_its_size():
    big = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert not big, f"modules over {MODULE_LINES} lines (one job per module): {big}"
