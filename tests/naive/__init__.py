"""Plain, line-by-line twins of the fast kernels, written for reading, not for speed.

Tests compare every numba kernel and vectorised routine against these on generated input. One
module per area of the package: ``packets``, ``timeline``, ``clocks``, ``lda``, ``control``,
``capture`` and ``rtp`` (ldanalyze/io/capture), ``ns2`` (ldanalyze/io/ns2), ``scoring``. Importers name the
module: ``from ..naive import lda as naive_lda``.

``@twin_of(...)`` names what a twin is held against: tests/test_twins_registry.py checks that
every numba kernel of the package has a twin here or a reason in its ``NO_TWIN``, and that every
name given here exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T", bound=Callable)

TWINS: dict[str, list[str]] = {}
"""Qualified name in ldanalyze (``ldanalyze.lda.rott.hysteresis``) -> the twins registered for it."""


def twin_of(*targets: str) -> Callable[[_T], _T]:
    """Register the decorated function as the plain twin of ``targets`` (qualified names of
    kernels or vectorised routines of ldanalyze); the function itself is left as it is."""

    def register(twin: _T) -> _T:
        for target in targets:
            TWINS.setdefault(target, []).append(f"{twin.__module__}.{twin.__qualname__}")
        return twin

    return register
