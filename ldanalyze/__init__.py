"""ldanalyze: offline, trace-driven analysis of end-to-end loss differentiation algorithms.

The data flow is one way: ``read_trace`` (a file → :class:`Trace` with its PacketTable) →
``build_timeline`` (→ :class:`Timeline`: arrivals, gaps, losses per flow) → LDAs and scores.
"""

from .errors import TraceError
from .io import read_trace
from .packets import FATES, LOSS_FATES, Trace
from .timeline import Timeline, build_timeline

__all__ = ["read_trace", "build_timeline", "Trace", "Timeline", "TraceError", "FATES", "LOSS_FATES"]
__version__ = "0.1.0"
