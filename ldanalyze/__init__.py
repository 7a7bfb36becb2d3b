"""ldanalyze: offline, trace-driven analysis of end-to-end loss differentiation algorithms.

The data flow is one way: ``read_trace`` (a file → :class:`Trace` with its PacketTable) →
``build_timeline`` (→ :class:`Timeline`: arrivals, gaps, losses per flow) → ``classify``
(every LDA's decision per lost packet) → ``score`` (M_c, M_w, accuracy, ... per flow or pooled).
"""

from .errors import TraceError, UsageError
from .io import read_trace
from .lda import REGISTRY as LDAS
from .lda import Replay, classify, get_lda, lda_state
from .packets import FATES, LOSS_FATES, Trace
from .scoring import score
from .timeline import Timeline, build_timeline

__all__ = [
    "read_trace", "build_timeline", "classify", "score", "get_lda", "lda_state", "Replay", "LDAS",
    "Trace", "Timeline", "TraceError", "UsageError", "FATES", "LOSS_FATES",
]
__version__ = "0.2.0"
