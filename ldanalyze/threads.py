"""Whether one analysis may use more than one core.

Alone, a read uses a second core where it can: pyarrow parses CSV and Parquet on its thread
pool, and the ns-2 wired reader parses the next block on a thread while it folds in the last.
A pool of one worker per core (``batch -j``, Dask) already keeps every core busy, and these
threads then only contend with the other workers: on the 2-core machine of
``benchmarks/batch_scaling.py`` a 2-worker pool finished 10 % sooner once each worker ran on
one thread. ``one_per_worker`` is what each worker process calls first.
"""

from __future__ import annotations

_alone = True


def one_per_worker() -> None:
    """Keep this process to one thread of work: pyarrow's CPU and I/O pools get one thread
    and the readers do not start their own."""
    global _alone
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    _alone = False


def may_spread() -> bool:
    """True unless :func:`one_per_worker` was called in this process."""
    return _alone
