"""Scoring loss differentiation: how often each LDA named the true cause of a loss.

``score(decisions)`` turns the decisions table (one row per lost transmission per LDA) into one
row per group (flow, trace or everything) per LDA, with counts, metrics and confidence intervals.

The decisions table
-------------------
``trace`` (optional; absent = one trace named ""), ``flow``, ``lda`` (str or categorical),
``uid``, ``gap`` (the loss burst within ``(trace, flow)``; -1 when undetected), ``cause`` (the
true cause: ``congestion``, ``wireless``, ``route``, ``policing`` or ``lost`` = unknown) and ``decision``
(``congestion``, ``wireless``, ``undetected`` or ``abstained``); optionally ``weight``, the number of losses a
row stands for (1 when absent): ``tally`` makes such a table, which scores the same in a
fraction of the rows.

Which losses are scored
-----------------------
Every row is counted in ``losses``. A loss of unknown cause (``unknown``), a loss to routing and
mobility (``route``), one the receiver never detected (``undetected``) or one the LDA made no
call on (``abstained``: the learned LDA below its ``abstain_below`` confidence) is counted but
not scored (a loss can be two of these). ``route_as="wireless"`` or ``"congestion"`` scores the route
losses as that cause instead (some MANET studies count link breaks as wireless losses); the
``route`` column still counts them, and every table's ``route_as`` column says which mapping
was used (``excluded`` by default). A policer's drop (``policing``) is kept apart the same way
(``policing_as``; a policer limits the rate as a full queue does, without the queue, so
``"congestion"`` is the mapping that matches what a sender should do), and ``policing``,
``policing_as_wireless`` and ``M_p`` (= policing_as_wireless over the policing losses decided)
say how each LDA read them. The ``scored``
losses have cause congestion or wireless *and* decision congestion or wireless; ``congestion``
and ``wireless`` split them by true cause, ``congestion_as_wireless``, ``wireless_as_congestion``
and ``decided_wireless`` count the scored losses so decided. Every metric is over scored losses.

Metrics (NaN whenever the denominator is 0, never 0)
----------------------------------------------------
==============  ======================================================================================
M_c             congestion_as_wireless / congestion: the congestion loss misclassification rate,
                "the fraction of packets lost to congestion that are misclassified as wireless loss"
                (paper 000 §IV, Table II caption in §VI-A)
M_w             wireless_as_congestion / wireless: the wireless loss misclassification rate (paper
                000 §IV)
accuracy        correctly classified / scored
A_c, A_w        1 − M_c and 1 − M_w: congestion (wireless) losses correctly inferred over all
                congestion (wireless) losses (paper 003 §3.1)
accuracy_ratio  decided_wireless / wireless: losses the scheme "measured" as wireless over the
                "actual" wireless losses (paper 002 §4.2.1, Table 1); can exceed 1
CC, CW, WC, WW  paper 001 Table I as fractions of the scored losses: first letter the decision,
                second the true cause (CW = decided congestion, truly wireless: the paper's C|T)
==============  ======================================================================================

``average="mean"`` (by trace or pooled) gives each metric as the mean over the group's flows of
the per-flow metric, flows where it is undefined skipped: paper 000 §VI-C reports
"misclassification rates ... averages over all flows". ``average="pooled"`` (the default) pools the
counts of the group first.

What the LDAs say, with or without truth
----------------------------------------
``called`` counts the losses an LDA decided (congestion or wireless, whatever their true cause,
known or not) and ``called_wireless`` those it called wireless; ``wireless_share`` is
called_wireless / called, with the same intervals as the metrics (``wireless_share_lo/hi``,
``wireless_share_boot_lo/hi``; by ``average="mean"`` the mean of the flows' shares);
``called_policing`` those it marked a policer's (``scheme`` ``policing``: the policer
detector's three-way view) and ``policing_share`` called_policing / called. On a trace
without ground truth it is what there is to say: how the LDAs split the same losses, and how
sure each split is given how bursty the losses were (``ldanalyze.consensus`` compares the LDAs
with each other).

Confidence intervals (``average="pooled"`` only)
-------------------------------------------------
``M_c_lo/hi``, ``M_w_lo/hi``, ``accuracy_lo/hi``: Wilson score intervals, which treat the losses
as independent. They are not: every loss of a burst (gap) gets the burst's decision. So
``*_boot_lo/hi`` bootstrap over bursts: the distinct ``(trace, flow, gap)`` units among the scored
losses of the group are resampled with replacement ``bootstrap`` times, and the interval is the
percentile interval of the resampled ratios (resamples where the ratio is undefined are ignored).
A scored loss outside any burst (``gap < 0``) is a unit of its own. Each group draws from its own
generator, seeded by ``seed`` and the group's LDA, traces and flows: an LDA's interval is the same
whatever is scored beside it, and a one-flow trace's is the same by flow, by trace and pooled.

``summary`` (a ``Timeline.summary()`` table) adds ``flows_scored`` (by trace the flows the group
pools, by name; pooled their count) and the true loss rates of the group's flows,
``congestion_rate`` and ``wireless_rate``: lost packets of that cause over the packets whose fate
is known (``sent − unobserved``), pooled over the group's flows (by trace: every flow of the trace
in the summary; pooled: every flow of every trace scored). Where the summary counts them, ``weak_labels``
is how many of the group's losses have a cause from a rule, not per-packet truth
(``io.labels``: weak labels by construction); scores resting on them are only as good as the
rules.

Modeled throughput
------------------
``throughput`` (the summary of one controller's open-loop replay, one row per lda and flow,
with ``trace`` when several traces are scored) adds ``controller``; ``thput`` (per flow; by
trace or pooled the mean over the flows of the group, every flow the replay covered, not only
those with losses), ``vs_omniscient`` and ``vs_unaware`` (per flow the flow's ratio; by trace or
pooled the ratio of the group's mean thput to the baseline's on the same flows, not the mean of
the flows' ratios: ``throughput.ratios_of_means`` says why); and by trace ``fairness_std`` (paper 000
§VIII-A: the sample standard deviation of the flows' throughputs normalised by their mean) and
``jain`` (paper 003 eq. 12) over the trace's flows, pooled their means over the traces. The
replay is open loop: these are the rates the controller would have allowed on the trace's
timing, not what was sent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import UsageError
from .bootstrap import bootstrap_columns
from .losses import AVERAGES, BY, COUNTS, EXCLUDED, POLICING_AS, ROUTE_AS, Losses, prepare, taken_as_wireless
from .metrics import INTERVAL_METRICS, METRICS, mean, pooled, wilson_columns, wilson_interval
from .rates import rate_columns, scored_flows_column
from .throughput import FAIRNESS_COLUMNS, THROUGHPUT_COLUMNS, throughput_columns

# every number a score table may hold: what a threshold (``batch --fail-if``) can name
NUMBER_COLUMNS = (
    *COUNTS,
    *METRICS,
    *(f"{m}_{end}" for m in INTERVAL_METRICS for end in ("lo", "hi")),
    *(f"{m}_boot_{end}" for m in INTERVAL_METRICS for end in ("lo", "hi")),
    "called",
    "called_wireless",
    *(f"wireless_share{end}" for end in ("", "_lo", "_hi", "_boot_lo", "_boot_hi")),
    "policing_share",
    *("compared", "agrees_with_others", "mean_kappa"),  # the batch's: the LDAs' agreement (consensus)
    "congestion_rate",
    "wireless_rate",
    "weak_labels",
    *THROUGHPUT_COLUMNS,
    *FAIRNESS_COLUMNS,
)


def score(
    decisions: pd.DataFrame,
    summary: pd.DataFrame | None = None,
    *,
    by: str = "flow",
    average: str = "pooled",
    confidence: float = 0.95,
    bootstrap: int = 1000,
    seed: int = 0,
    throughput: pd.DataFrame | None = None,
    route_as: str = EXCLUDED,
    policing_as: str = EXCLUDED,
) -> pd.DataFrame:
    """Counts, metrics and confidence intervals per group and LDA (see the module docstring).

    ``by``: ``"flow"`` (rows keyed trace, flow, lda), ``"trace"`` (trace, lda) or ``"pooled"``
    (lda). ``average``: ``"pooled"`` pools the counts; ``"mean"`` (by trace or pooled) averages
    per-flow metrics and adds ``flows``, without intervals. ``bootstrap``: resamples for the
    burst bootstrap (0 = no bootstrap columns); ``seed`` (a whole number >= 0) and what each
    group is scored on (its LDA, traces and flows) seed the group's draws, so a group's interval
    does not depend on what else is scored (``scoring.bootstrap.group_seed``).
    ``throughput``: a controller replay's summary (:func:`ldanalyze.control.replay`) adds the
    modeled-throughput columns (see the module docstring). ``route_as``: ``"excluded"`` leaves
    route losses out of the metrics; ``"wireless"``/``"congestion"`` scores them as that cause;
    ``policing_as`` likewise for a policer's drops.
    """
    if route_as not in ROUTE_AS:
        raise UsageError(f"score: unknown route_as={route_as!r}; expected one of {', '.join(map(repr, ROUTE_AS))}")
    if policing_as not in POLICING_AS:
        raise UsageError(
            f"score: unknown policing_as={policing_as!r}; expected one of {', '.join(map(repr, POLICING_AS))}"
        )
    if by not in BY:
        raise UsageError(f"score: unknown by={by!r}; expected one of {', '.join(map(repr, BY))}")
    if average not in AVERAGES:
        raise UsageError(f"score: unknown average={average!r}; expected one of {', '.join(map(repr, AVERAGES))}")
    if average == "mean" and by == "flow":
        raise UsageError('score: average="mean" averages over flows: it needs by="trace" or by="pooled"')
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.integer, np.floating)):
        raise UsageError(f"score: confidence must be a number in (0, 1), not {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise UsageError(f"score: confidence must be in (0, 1) (e.g. 0.95), not {confidence!r}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise UsageError(f"score: bootstrap must be a whole number of resamples >= 0, not {bootstrap!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UsageError(f"score: seed must be a whole number >= 0, not {seed!r}")
    if not isinstance(decisions, pd.DataFrame):
        raise UsageError(f"score: decisions must be a DataFrame, not {type(decisions).__name__}")

    with_boot = bootstrap > 0 and average == "pooled"
    losses = prepare(decisions, need_gap=with_boot, route_as=route_as, policing_as=policing_as)
    out, codes = _counted(losses, by, average, float(confidence), bootstrap if with_boot else 0, seed)
    called = taken_as_wireless(losses)
    as_wireless = _counted(called, by, average, float(confidence), bootstrap if with_boot else 0, seed)[0]
    _share_columns(out, as_wireless, float(confidence))
    if summary is not None:
        rate_columns(out, codes, losses, summary, by)
        if by != "flow":
            scored_flows_column(out, summary)
    if throughput is not None:
        out = throughput_columns(out, throughput, by)
    out.insert(out.columns.get_loc("lda") + 1, "route_as", route_as)
    out.insert(out.columns.get_loc("route_as") + 1, "policing_as", policing_as)
    return out


def _counted(
    losses: Losses, by: str, average: str, confidence: float, bootstrap: int, seed
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Counts and metrics per group (with intervals when pooled), and the groups' key codes."""
    if average != "pooled":
        return mean(losses, BY[by])
    out, codes, gid = pooled(losses, BY[by])
    wilson_columns(out, confidence)
    if bootstrap:
        bootstrap_columns(out, gid, losses, confidence, bootstrap, seed)
    return out, codes


def _share_columns(out: pd.DataFrame, as_wireless: pd.DataFrame, confidence: float) -> None:
    """``called``, ``called_wireless`` and ``wireless_share`` (with its intervals) from the
    scores of the same groups with every loss taken as wireless: there M_w is the share called
    congestion, so the share called wireless is 1 − M_w, its interval 1 − M_w's."""
    out["called"] = as_wireless["scored"].to_numpy()
    out["called_wireless"] = as_wireless["scored"].to_numpy() - as_wireless["wireless_as_congestion"].to_numpy()
    out["wireless_share"] = 1.0 - as_wireless["M_w"].to_numpy()
    if "M_w_lo" in as_wireless.columns:
        out["wireless_share_lo"], out["wireless_share_hi"] = wilson_interval(
            out["called_wireless"].to_numpy(), out["called"].to_numpy(), confidence
        )
    if "M_w_boot_lo" in as_wireless.columns:
        out["wireless_share_boot_lo"] = 1.0 - as_wireless["M_w_boot_hi"].to_numpy()
        out["wireless_share_boot_hi"] = 1.0 - as_wireless["M_w_boot_lo"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):  # an LDA that called nothing: NaN
        out["policing_share"] = out["called_policing"].to_numpy(np.float64) / out["called"].to_numpy(np.float64)
