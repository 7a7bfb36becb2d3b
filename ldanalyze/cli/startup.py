"""Start-up tweaks that make a command fast to begin and end (numba's BLAS probe and plugin
search skipped, numpy's huge pages left to the system).
"""

from __future__ import annotations

import atexit
import importlib.abc
import os
import sys
from types import FrameType

import numpy as np


def ordinary_pages() -> None:
    """Have numpy leave large arrays on ordinary pages, unless ``NUMPY_MADVISE_HUGEPAGE`` says
    otherwise. numpy asks Linux for transparent huge pages, and where THP defrag is ``madvise``
    (common distributions' default) every first touch of such an array waits for the kernel to
    compact memory, with no gain in the passes that follow, as a command streams through its
    arrays a few times and ends (docs/design.md has the measurement)."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    multiarray = getattr(getattr(np, "_core", None) or np.core, "multiarray", None)
    setting = getattr(multiarray, "_set_madvise_hugepage", None)
    if setting is not None:
        setting(False)


class _NoBlasProbe(importlib.abc.MetaPathFinder):
    """Answers numba's one probe for BLAS with "none" (see :func:`no_blas_probe`), then leaves."""

    def find_spec(self, name, path=None, target=None):
        if name == "scipy.linalg" and self._from_numba_probe():
            sys.meta_path.remove(self)
            raise ImportError("ldanalyze's kernels call no BLAS")
        return None

    @staticmethod
    def _from_numba_probe() -> bool:
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code.co_name == "ensure_blas" and code.co_filename.endswith(os.path.join("numba", "np", "linalg.py")):
                return True
            frame = frame.f_back
        return False


def no_blas_probe() -> None:
    """Spare this process numba's probe for BLAS. The first kernel a process loads makes numba
    import ``scipy.linalg``, where scipy is installed (the ``learn`` and ``test`` extras), only
    to learn whether a kernel's ``np.dot`` may call BLAS, a cost every command pays
    (docs/design.md). No kernel of ours calls BLAS, and a command's process runs only ours, so
    here numba is told there is none; scipy itself imports as ever (the learned LDA's model
    needs it). An interactive session, which may run numba code of its own, is left alone."""
    if "scipy.linalg" not in sys.modules:
        sys.meta_path.insert(0, _NoBlasProbe())


def no_numba_extensions() -> None:
    """Spare this process numba's search for plug-ins. At the first kernel a process loads,
    numba reads the entry points of every installed distribution to run the
    ``numba_extensions`` ones, which teach numba new types: a cost every command pays, the
    larger the more is installed. Our kernels use no such type, and a command's
    process runs only ours; an interactive session, which may need them, is left alone.
    numba has no public switch for it: the flag ``entrypoints.init_all`` sets once it has run
    them is set here only, and tests/test_third_party.py fails, saying so, when an upgrade
    changes it."""
    from numba.core import entrypoints

    entrypoints._already_initialized = True


def run_exit_handlers() -> None:
    """Run the ``atexit`` handlers now, as the ordinary exit does first (tempfile's cleanup,
    logging's flush). Python has no public call for it: ``atexit._run_exitfuncs`` is called
    here only, and tests/test_third_party.py fails, saying so, when an upgrade changes it."""
    atexit._run_exitfuncs()
