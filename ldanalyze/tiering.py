"""Run a numba kernel as plain Python when compiling it would cost more than the work.

numba compiles a kernel the first time it is called with new argument types: seconds for the
capture decoder, paid on every fresh install, while a small capture decodes in the interpreter
in a fraction of that (docs/design.md). ``pick`` (and ``call``) chooses
per call between the compiled kernel and its *interpreted run* (the same Python source run by
CPython, its calls to other kernels rebound to their interpreted runs): the same code, so the same results
(``tests/test_tiering.py`` checks that they agree byte for byte on real and generated captures).

The environment variable ``LDANALYZE_KERNELS`` overrides the choice: ``compiled`` or
``interpreted`` (``auto``, the default, decides by the cost estimate).
"""

from __future__ import annotations

import functools
import os
import threading
import types
from collections.abc import Callable, Sequence

import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher

# the cost model of compiling a kernel, per bytecode instruction of it and the kernels it calls,
# and of loading it from numba's disk cache (measured: docs/design.md)
COMPILE_BASE_S = 0.1
COMPILE_PER_INSTRUCTION_S = 7e-4
CACHE_LOAD_SHARE = 0.1
MODES = ("auto", "compiled", "interpreted")


def mode() -> str:
    """The ``LDANALYZE_KERNELS`` setting (``auto`` when unset)."""
    value = os.environ.get("LDANALYZE_KERNELS", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(f"LDANALYZE_KERNELS must be one of {', '.join(MODES)}, not {value!r}")
    return value


def pick(kernel: Dispatcher, interpreted_s: float, instead: Callable | None = None) -> Callable:
    """``kernel`` or its interpreted run, whichever should finish first.

    ``interpreted_s`` is the caller's estimate of the interpreted run time; ``instead``, another
    function that does the kernel's work without machine code (vectorised numpy, quick on small
    input), runs where the interpreted run would, ``interpreted_s`` its estimate. Machine code already
    loaded in this process is always used; otherwise the interpreted run is taken while the interpreted time
    this process has spent on the kernel, this call included, stays below the estimated cost of
    compiling it (or of loading it from numba's cache). Like renting until the rent paid would
    buy: a long-lived process (a batch) compiles a kernel it keeps calling, and never pays more
    than twice what knowing its future calls would have cost.
    """
    chosen = mode()
    if chosen == "compiled" or (chosen == "auto" and kernel.overloads):
        return kernel
    without = interpreted(kernel) if instead is None else instead
    if chosen == "interpreted":
        return without
    spent = _SPENT.get(kernel, 0.0) + interpreted_s
    if spent < _budget(kernel):
        _SPENT[kernel] = spent
        return without
    return kernel


def preload(kernels: Sequence[Dispatcher], interpreted_s: float) -> None:
    """Load the machine code of those ``kernels`` that ``pick`` would take for work estimated at
    ``interpreted_s`` interpreted (each) from numba's cache, on a thread of its own: for a
    caller about to wait on work that releases the GIL (pyarrow parsing a block). The first
    kernel a process loads pays numba's own start, 0.3-0.5 s of Python, which then overlaps
    the wait. Only machine code built for this CPU is loaded, nothing compiled; a kernel
    called before its load ends waits on numba's lock for it."""
    chosen = mode()
    if chosen == "interpreted":
        return
    wanted = [
        k for k in kernels if not k.overloads and _on_disk(k) and (chosen == "compiled" or interpreted_s > _budget(k))
    ]
    if wanted:
        threading.Thread(target=_load, args=(wanted,), daemon=True).start()


def _load(kernels: Sequence[Dispatcher]) -> None:
    for kernel in kernels:
        try:
            for signature, here in cached_builds(kernel):
                if here:
                    kernel.compile(signature)  # found in the cache: loaded, not compiled
        except Exception:  # a head start only: the call itself loads or compiles as ever
            return


def call(kernel: Dispatcher, *args, us_per_item: float = 1.0):
    """``pick(kernel, ...)(*args)``, the interpreted time estimated as ``us_per_item`` per
    element of the longest array argument (most kernels loop once over their arrays, at
    0.2-0.5 us an element in the interpreter)."""
    items = max((a.shape[0] for a in args if isinstance(a, np.ndarray) and a.ndim), default=0)
    return pick(kernel, items * us_per_item * 1e-6)(*args)


def _budget(kernel: Dispatcher) -> float:
    """The interpreted seconds worth machine code: the cost of compiling ``kernel``, or of
    loading it from numba's cache."""
    return compile_s(kernel) * (CACHE_LOAD_SHARE if _on_disk(kernel) else 1.0)


def compile_s(kernel: Dispatcher) -> float:
    """The estimated time to compile ``kernel`` (see ``COMPILE_PER_INSTRUCTION_S``)."""
    return COMPILE_BASE_S + COMPILE_PER_INSTRUCTION_S * _instructions(kernel, set())


def _instructions(kernel: Dispatcher, seen: set) -> int:
    if kernel in seen:
        return 0
    seen.add(kernel)
    code = kernel.py_func.__code__
    callees = (kernel.py_func.__globals__.get(name) for name in code.co_names)
    return len(code.co_code) // 2 + sum(_instructions(c, seen) for c in callees if isinstance(c, CPUDispatcher))


def interpreted(kernel: Dispatcher) -> Callable:
    """The kernel's Python function, run with numpy's integer wraparound silenced (compiled
    code wraps without a word) and with the kernels it calls replaced by their interpreted runs."""
    function = _interpreted_function(kernel)

    @functools.wraps(kernel.py_func)
    def run(*args):
        with np.errstate(over="ignore"):
            return function(*args)

    return run


_INTERPRETED: dict[Dispatcher, types.FunctionType] = {}
_SPENT: dict[Dispatcher, float] = {}  # estimated interpreted seconds so far, per kernel


def _interpreted_function(kernel: Dispatcher) -> types.FunctionType:
    """A copy of the kernel's function whose global names point at interpreted kernels."""
    function = _INTERPRETED.get(kernel)
    if function is None:
        source = kernel.py_func
        namespace = dict(source.__globals__)
        function = types.FunctionType(
            source.__code__, namespace, source.__name__, source.__defaults__, source.__closure__
        )
        _INTERPRETED[kernel] = function  # before the callees: kernels may call each other
        for name in source.__code__.co_names:
            value = namespace.get(name)
            if isinstance(value, CPUDispatcher):
                namespace[name] = _interpreted_function(value)
    return function


@functools.cache
def _on_disk(kernel: Dispatcher) -> bool:
    """Whether numba's cache holds machine code for ``kernel`` (for any argument types)."""
    try:
        return bool(cached_builds(kernel))
    except (AttributeError, OSError, ValueError, EOFError):
        return False


def cached_builds(kernel: Dispatcher) -> list[tuple[tuple, bool]]:
    """What numba's cache on disk holds for ``kernel``: per build, its signature and whether it
    was built for this CPU. numba has no public call for it; its cache index (keys: signature,
    target's magic tuple and, in numba 0.68, the source's hashes) is read here only,
    and tests/test_third_party.py fails, saying so, when an upgrade changes it."""
    magic = kernel.targetctx.codegen().magic_tuple()  # type: ignore[attr-defined]
    index = kernel._cache._cache_file._load_index()  # type: ignore[attr-defined]
    return [(key[0], key[1] == magic) for key in index]
