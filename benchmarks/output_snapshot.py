"""The outputs a speed change must leave byte for byte as they were: ``inspect --json`` and
``score --format json`` (also ``--lda all``) of every bundled trace and real capture, each in a
fresh process as a user runs it, with stdout, stderr and the exit status kept.

``write FOLDER`` stores them (one file per command); ``compare FOLDER`` runs them again and names
every command whose output differs, exiting 1 if any does. Run ``write`` before the change and
``compare`` after it, once with numba's cache warm and once with an empty one (``--cold``: each
command then starts without machine code, so the interpreted runs of ldanalyze/tiering.py are
compared too). Usage: ``python benchmarks/output_snapshot.py {write,compare} FOLDER [--cold]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PATTERNS = (
    "traces/*.tr.gz",
    "traces/closed_loop/*.tr.gz",
    "traces/wireless/*.tr.gz",
    "traces/captures/*.pcap",
    "tests/data/real/*.pcap*",
    "tests/data/real/*/*.pcap*",
    "tests/data/qlog/*.qlog*",
)
COMMANDS = (("inspect", "--json"), ("score", "--format", "json"), ("score", "--format", "json", "--lda", "all"))


def inputs() -> list[pathlib.Path]:
    """The bundled traces and captures, relative to the repository."""
    return sorted({p.relative_to(ROOT) for pattern in PATTERNS for p in ROOT.glob(pattern)})


def outputs(cold: bool):
    """(name, bytes) of every command over every input: stdout, stderr and the exit status."""
    for path in inputs():
        for command in COMMANDS:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, PYTHONPATH=str(ROOT))
                if cold:
                    env["NUMBA_CACHE_DIR"] = cache
                done = subprocess.run(
                    [sys.executable, "-m", "ldanalyze", *command, str(path)], capture_output=True, cwd=ROOT, env=env
                )
            name = "_".join((str(path).replace("/", "_"), *(c.strip("-") for c in command)))
            yield name, done.stdout + b"\n--- stderr\n" + done.stderr + f"\n--- exit {done.returncode}\n".encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("write", "compare"))
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--cold", action="store_true", help="each command with an empty numba cache")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    differ = 0
    count = 0
    for name, data in outputs(args.cold):
        count += 1
        stored = args.folder / name
        if args.action == "write":
            stored.write_bytes(data)
        elif not stored.exists() or stored.read_bytes() != data:
            differ += 1
            print(f"differs: {name} ({hashlib.sha256(data).hexdigest()[:12]})")
    print(f"{count} outputs {'written' if args.action == 'write' else 'compared'}; {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
