"""``python -m ldanalyze.cli``: the ``ldanalyze`` command."""

from . import run

run()
