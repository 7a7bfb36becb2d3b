"""``python -m ldanalyze``: the ``ldanalyze`` command (where the console script is not on PATH)."""

from .cli import run

run()
