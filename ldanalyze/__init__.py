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

from . import kernel_cache

kernel_cache.choose()  # before any kernel is defined (kernel_cache.py says why)

from . import consensus  # noqa: E402
from .batch import score_suite  # noqa: E402
from .clocks import remove_skew  # noqa: E402
from .control import REGISTRY as CONTROLLERS  # noqa: E402
from .control import PathModel, controller_state, get_controller, replay  # noqa: E402
from .errors import TraceError, UsageError  # noqa: E402
from .io import read_trace  # noqa: E402
from .io.capture.vantage import Vantage, read_vantages  # noqa: E402
from .io.labels import apply_labels, read_labels, write_labels  # noqa: E402
from .lda import REGISTRY as LDAS  # noqa: E402
from .lda import Replay, classify, get_lda, lda_state  # noqa: E402
from .packets import FATES, LOSS_FATES, Trace  # noqa: E402
from .report import plots as plot  # noqa: E402
from .report.html import build_report as report_html  # noqa: E402
from .scoring import score  # noqa: E402
from .timeline import Timeline, build_timeline  # noqa: E402
from .version import VERSION as __version__  # noqa: E402

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
