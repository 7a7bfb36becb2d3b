"""Many traces at once, as a batch job (``ldanalyze batch``; ``score_suite`` from Python): one
:class:`Job` per trace (``jobs``), each run on its own in this process, a process pool or a Dask
cluster (``running``), parsed traces and results cached by content (``cache``), a trace that
fails reported with its error instead of stopping the others, and the results scored per flow,
per trace and pooled (``results``). Results do not depend on how the jobs were run: they are
combined in job order. The same work in this process, without jobs: ``ldanalyze.analysis``."""

from . import cache, jobs, results, running
from .cache import CACHE_VERSION, cache_key, file_digest
from .jobs import (
    FLOW_AT_A_TIME_ABOVE,
    KEEP,
    MANIFEST_KEYS,
    SPLIT_OPTIONS,
    TRACE_NAMES,
    Analysis,
    Job,
    Outcome,
    discover,
    load_config,
    read_manifest,
    too_big_to_read_whole,
    whole_read_limit,
)
from .results import SCOPES, errors_table, results_table, score_suite
from .running import execute, largest_first, pool_size, run_job

__all__ = [
    "cache",
    "jobs",
    "results",
    "running",
    "CACHE_VERSION",
    "cache_key",
    "file_digest",
    "FLOW_AT_A_TIME_ABOVE",
    "KEEP",
    "MANIFEST_KEYS",
    "TRACE_NAMES",
    "Analysis",
    "Job",
    "Outcome",
    "discover",
    "load_config",
    "read_manifest",
    "too_big_to_read_whole",
    "whole_read_limit",
    "SPLIT_OPTIONS",
    "SCOPES",
    "errors_table",
    "results_table",
    "score_suite",
    "execute",
    "largest_first",
    "pool_size",
    "run_job",
]
