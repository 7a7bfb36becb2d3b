"""The kernels' cache folder (ldanalyze/kernel_cache.py): a callee edited in another module is
never run from stale machine code, the user's own folder is respected, old folders are pruned."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from ldanalyze import kernel_cache

TOY = {
    "__init__.py": "",
    "callee.py": "from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return {value}\n",
    "caller.py": "from numba import njit\n\nfrom .callee import value\n\n\n@njit(cache=True)\ndef twice():\n"
    "    return 2 * value()\n",
}
RUN = textwrap.dedent(
    """
    import pathlib, sys
    from ldanalyze import kernel_cache
    kernel_cache.choose(pathlib.Path(sys.argv[1]) / "toy", pathlib.Path(sys.argv[1]) / "cache")
    sys.path.insert(0, sys.argv[1])
    from toy.caller import twice
    print(twice())
    """
)


def run_toy(tmp_path, value: int, env: dict) -> str:
    package = tmp_path / "toy"
    package.mkdir(exist_ok=True)
    for name, text in TOY.items():
        if name == "callee.py" or not (package / name).exists():
            (package / name).write_text(text.format(value=value))
    stamp = (1_700_000_000 + value) * 10**9  # an edit gives a later modification time
    os.utime(package / "callee.py", ns=(stamp, stamp))
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_callee_edited_in_another_module_is_recompiled(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    assert run_toy(tmp_path, 1, env) == "2"
    assert run_toy(tmp_path, 1, env) == "2"  # from the cache
    assert run_toy(tmp_path, 5, env) == "10"  # caller.py unchanged: numba alone would say 2
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_the_users_folder_is_left_alone_and_old_folders_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cache.numba.config, "CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    kernel_cache.choose(root=tmp_path / "ours")
    assert kernel_cache.numba.config.CACHE_DIR == str(tmp_path / "mine") and not (tmp_path / "ours").exists()
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    for k in range(5):
        old = tmp_path / "ours" / f"old{k}"
        old.mkdir(parents=True)
        os.utime(old, ns=(k * 10**9, k * 10**9))
    kernel_cache.choose(root=tmp_path / "ours")
    recent = tmp_path / "ours" / "recent"  # another checkout's, in use a minute ago
    recent.mkdir()
    os.utime(recent, (time.time() - 60, time.time() - 60))
    os.utime(tmp_path / "ours" / "old4", (time.time() - 7200, time.time() - 7200))
    kernel_cache.choose(root=tmp_path / "ours")
    kept = sorted(p.name for p in (tmp_path / "ours").iterdir())
    assert kept == sorted(["old4", "recent", kernel_cache.sources_key()])
    assert kernel_cache.numba.config.CACHE_DIR == str(tmp_path / "ours" / kernel_cache.sources_key())
