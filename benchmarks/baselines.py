"""What the benchmarks time ldanalyze against, without the test tree (its plain twins are the
tests' reference, and a user who runs a benchmark has the package, not the tests): the very same
code with its numba kernels interpreted, and the least a line-by-line Python reader does.

``python benchmarks/baselines.py FILE FIELD VALUE...`` runs ``kept_lines`` in a process of its
own and prints its count.
"""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def kernels(mode: str):
    """Inside the block ldanalyze runs its numba kernels ``compiled`` or ``interpreted`` (their
    Python source run by CPython: ``LDANALYZE_KERNELS``, ldanalyze/tiering.py)."""
    before = os.environ.get("LDANALYZE_KERNELS")
    os.environ["LDANALYZE_KERNELS"] = mode
    try:
        yield
    finally:
        if before is None:
            del os.environ["LDANALYZE_KERNELS"]
        else:
            os.environ["LDANALYZE_KERNELS"] = before


def kept_lines(lines, field: int, values) -> int:
    """The least any line-by-line Python reader of a text trace does: split every line into
    fields and count those whose ``field``-th is one of ``values`` (no numbers parsed, nothing
    kept)."""
    kept = 0
    for line in lines:
        fields = line.split()
        if len(fields) > field and fields[field] in values:
            kept += 1
    return kept


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        print(kept_lines(f, int(sys.argv[2]), {value.encode() for value in sys.argv[3:]}))
