"""The installed version of ldanalyze, from its package metadata (pyproject.toml's ``version``):
one place for the number, read by every module that records it (cache keys, reports)."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

try:
    VERSION = _distribution_version("ldanalyze")
except PackageNotFoundError:  # a source tree that was never installed
    VERSION = "0+unknown"
