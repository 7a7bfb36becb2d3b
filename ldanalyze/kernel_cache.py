"""Where numba keeps the compiled kernels: one folder per state of the package's sources.

numba checks a cached kernel against the file that defines it only, so a kernel whose callee in
another module changed (``walk.py``'s record walks calling ``frame.py``'s frame decoder) would
run the old machine code after an edit or a ``git pull`` in an editable install. The folder is
named by the path, size and modification time of every module of the package, so any change
starts a fresh cache; the few newest folders are kept, and so is any folder used in the last
hour (another checkout's, or this one's before an edit, may still be running and writing to it);
older ones are removed. A cache folder the user chose (``NUMBA_CACHE_DIR``) is left alone.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil

import numba

PACKAGE = pathlib.Path(__file__).resolve().parent
KEPT = 3  # cache folders kept (the newest): a few branches or versions side by side
IN_USE = 3600.0  # seconds: a folder used this recently may belong to a process still running


def sources_key(package: pathlib.Path = PACKAGE) -> str:
    """A short name for the current state of the package's modules."""
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


def user_cache() -> pathlib.Path:
    """The user's cache folder of ldanalyze (``$XDG_CACHE_HOME/ldanalyze``, else ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "ldanalyze"


def cache_root() -> pathlib.Path:
    return user_cache() / "numba"


def choose(package: pathlib.Path = PACKAGE, root: pathlib.Path | None = None) -> None:
    """Point numba's cache at the folder of ``package``'s current state (before any of its
    kernels is defined), and remove all but the newest ``KEPT`` folders under ``root`` and those
    used within ``IN_USE`` seconds."""
    if os.environ.get("NUMBA_CACHE_DIR"):  # the user's choice
        return
    root = root or cache_root()
    folder = root / sources_key(package)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)  # in use: the newest
        others = sorted((p for p in root.iterdir() if p.is_dir() and p != folder), key=lambda p: p.stat().st_mtime)
        idle_since = folder.stat().st_mtime - IN_USE
        for old in others[: max(0, len(others) - (KEPT - 1))]:
            if old.stat().st_mtime < idle_since:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:  # no writable home: numba keeps its caches beside the modules, as it would
        return
    numba.config.CACHE_DIR = str(folder)  # type: ignore[attr-defined]  # numba's options: globals set from the environment
