"""ldanalyze: offline, trace-driven analysis of end-to-end loss differentiation algorithms.

The data flow is one way: ``read_trace`` (a file → :class:`Trace` with its PacketTable) →
``build_timeline`` (→ :class:`Timeline`: arrivals, gaps, losses per flow) → ``classify``
(every LDA's decision per lost packet) → ``score`` (M_c, M_w, accuracy, ... per flow or pooled);
and ``replay`` (every rate controller fed every LDA's decisions, open loop → the rate each would
have allowed: the modeled throughput). ``read_vantages`` reads a chain of captures along a
path into one Trace with ground truth per segment; ``apply_labels``/``write_labels`` join and
write labels files; ``remove_skew`` fits and removes a clock skew; ``score_suite`` scores a folder of traces as
``ldanalyze batch`` does; ``report_html`` makes the page of ``ldanalyze report``; ``consensus``
says how far the LDAs agree where no truth says which is right.
"""

import gc

# The imports below (numba, pandas and ours) make 160,000 objects that stay: the cyclic collector,
# left on, scans them again and again as they are made (250 collections, 0.1 s, a tenth of a
# command's start). So it is off while they are made, and they then go to the oldest generation
# unscanned (freeze, then unfreeze): the next full collection looks at them as it would have, and
# garbage made before this import is still collected (tests/test_imports.py). Objects a caller
# froze before (gc.freeze) are left frozen.
_collecting, _frozen = gc.isenabled(), gc.get_freeze_count()
gc.disable()
try:
    from . import kernel_cache

    kernel_cache.choose()  # before any kernel is defined (kernel_cache.py says why)

    from . import consensus
    from .batch import score_suite
    from .clocks import remove_skew
    from .control import REGISTRY as CONTROLLERS
    from .control import PathModel, controller_state, get_controller, replay
    from .errors import TraceError, UsageError
    from .io import read_trace
    from .io.capture.vantage import Vantage, read_vantages
    from .io.labels import apply_labels, read_labels, write_labels
    from .lda import REGISTRY as LDAS
    from .lda import Replay, classify, get_lda, lda_state
    from .packets import FATES, LOSS_FATES, Trace
    from .report import plots as plot
    from .report.html import build_report as report_html
    from .scoring import score
    from .timeline import Timeline, build_timeline
    from .version import VERSION as __version__
finally:
    if not _frozen:
        gc.freeze()
        gc.unfreeze()
    if _collecting:
        gc.enable()

__all__ = [
    "__version__",
    "plot",
    "consensus",
    "report_html",
    "read_trace",
    "read_vantages",
    "Vantage",
    "apply_labels",
    "read_labels",
    "write_labels",
    "remove_skew",
    "build_timeline",
    "classify",
    "score",
    "score_suite",
    "get_lda",
    "lda_state",
    "Replay",
    "LDAS",
    "replay",
    "controller_state",
    "get_controller",
    "PathModel",
    "CONTROLLERS",
    "Trace",
    "Timeline",
    "TraceError",
    "UsageError",
    "FATES",
    "LOSS_FATES",
]
