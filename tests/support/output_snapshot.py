"""The outputs a refactor must leave byte-identical: `inspect --json` and `score --format json`
over the bundled traces and the real captures, one file per input and command.

    python -m tests.support.output_snapshot DIR          # write the snapshot
    diff -r BEFORE AFTER                                  # compare two

Run from the repository's top; each command runs as a user runs it (a fresh process).
"""

import subprocess
import sys
from pathlib import Path

INPUTS = sorted(
    [*Path("traces").glob("*.tr.gz"), *Path("traces/wireless").glob("*.tr.gz"), *Path("traces/captures").glob("*.pcap")]
    + [p for p in Path("tests/data/real").rglob("*") if p.is_file() and ".pcap" in p.name]
)
COMMANDS = {"inspect": ["inspect", "--json"], "score": ["score", "--format", "json"]}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for path in INPUTS:
        for name, args in COMMANDS.items():
            run = subprocess.run(
                [sys.executable, "-m", "ldanalyze", *args, str(path)], capture_output=True, text=True, check=False
            )
            stem = str(path).replace("/", "__")
            (out / f"{stem}.{name}.out").write_text(f"rc {run.returncode}\n{run.stdout}")
            (out / f"{stem}.{name}.err").write_text(run.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
