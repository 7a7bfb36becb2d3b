"""Plain, line-by-line twins of the fast kernels, written for reading, not for speed.

Tests compare every numba kernel and vectorised routine against these on generated input. One
module per area of the package: ``packets``, ``timeline``, ``clocks``, ``lda``, ``control``,
``capture`` and ``rtp`` (ldanalyze/io/capture), ``ns2`` (ldanalyze/io/ns2). Importers name the
module: ``from ..naive import lda as naive_lda``.
"""
