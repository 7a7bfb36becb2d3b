"""Loss differentiation algorithms, replayed causally over a Timeline.

``classify(timeline, "all")`` gives one decision per lost transmission per LDA (a tidy
DataFrame); ``get_lda("zigzag", alpha=1/16)`` builds one LDA; ``REGISTRY`` maps the names to
the classes. The replay contract every LDA follows is ``docs/ldas.md``; the shared semantics
are switchable with :class:`Replay`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..errors import UsageError, renamed_keyword
from ..packets import label_positions, labels_dtype
from ..specs import asks_for_all, build, parse_specs
from ..timeline import Timeline
from .backlog import Veno
from .base import LDA, VIEWS, Features, Replay, Verdict, take
from .baselines import Omniscient, Unaware
from .interarrival import Biaz, MBiaz, WinLdaPlus
from .learned import REASONS as LEARNED_REASONS
from .learned import Learned
from .policer import POLICING, Policer
from .radio import MacSeq
from .rott import Spike, WroLdaPlus, ZigZag
from .rtt import AdaptiveRtt
from .sender import SpikeRtt, Vegas, VenoSender, WroLdaPlusRtt, ZigZagRtt
from .sender_policer import SenderPolicer, SenderPolicerLab
from .xrtp import Xrtp
from .zbs import SCHEMES as ZBS_SCHEMES
from .zbs import Zbs

REGISTRY: dict[str, type[LDA]] = {
    cls.name: cls
    for cls in (
        Unaware,
        Omniscient,
        Biaz,
        MBiaz,
        Spike,
        ZigZag,
        Zbs,
        WinLdaPlus,
        WroLdaPlus,
        AdaptiveRtt,
        Xrtp,
        Veno,
        Learned,
        Policer,
        MacSeq,
        SpikeRtt,
        ZigZagRtt,
        WroLdaPlusRtt,
        VenoSender,
        Vegas,
        SenderPolicer,
        SenderPolicerLab,
    )
}
# undetected: no arrival revealed the loss; abstained: revealed, but the LDA (the learned one,
# below its ``abstain_below`` confidence) made no call
DECISIONS = ("congestion", "wireless", "undetected", "abstained")
DECISION_DTYPE = pd.CategoricalDtype(list(DECISIONS))
CONGESTION, WIRELESS, UNDETECTED, ABSTAINED = range(4)
# what a decisions table's scheme column names: ZBS's, the policer's, the learned LDA's reasons
SCHEMES = (*ZBS_SCHEMES, POLICING, *LEARNED_REASONS)
SCHEME_DTYPE = pd.CategoricalDtype([*SCHEMES, ""])

__all__ = [
    "LDA",
    "Replay",
    "Features",
    "Verdict",
    "REGISTRY",
    "DECISIONS",
    "get_lda",
    "parse_ldas",
    "classify",
    "lda_state",
    "optional_specs",
    "runnable_ldas",
    "check_view",
    "VIEWS",
]


def get_lda(name: str, **params) -> LDA:
    """The LDA registered as ``name`` with the given parameters (the papers' defaults otherwise)."""
    return build(REGISTRY, "LDA", name, **params)


def parse_ldas(text: str | Iterable[str | LDA] | None) -> list[LDA]:
    """LDAs from ``"all"``, a comma-separated list of specs, or a list of specs / LDA objects
    (see :func:`ldanalyze.specs.parse_specs`)."""
    return parse_specs(text, REGISTRY, "LDA", LDA)


def runnable_ldas(
    timeline: Timeline,
    ldas,
    *,
    optional: set[str] | None = None,
    left_out: dict[str, str] | None = None,
    other_views: bool = False,
) -> list[LDA]:
    """The LDAs asked for, each checked against the timeline. Asked for by name, one that cannot
    run here is an error; brought in by ``"all"`` (alone or in a list: ``all,biaz:upper=1.4``)
    it is left out with a warning (``adaptive_rtt`` needs absolute delays, which a capture on
    two clocks without feedback does not give). An LDA not defined on the timeline's view
    (``LDA.views``) is refused when named, and not part of ``"all"`` there. ``optional``: the specs that may be left out,
    when ``ldas`` is a part of what was asked for (default: ``optional_specs(ldas)``);
    ``left_out``: where given, each one left out is recorded there (spec: why), not warned of;
    ``other_views``: one named and not defined on the timeline's view is passed over, as one of
    ``"all"`` is (a batch over receivers' and senders' traces runs each LDA on those it fits)."""
    chosen = parse_ldas(ldas)
    optional = optional_specs(ldas) if optional is None else optional
    runnable = []
    for lda in chosen:
        if not views_of(timeline) & set(lda.views) and (lda.spec in optional or other_views):
            continue  # "all" is the LDAs defined on the timeline's view: not left out, not there
        try:
            check_view(lda, timeline)
            lda.prepare(timeline)
        except UsageError as exc:
            if lda.spec not in optional:
                raise
            if left_out is None:
                warnings.warn(f"{lda.spec} left out: {exc}", stacklevel=3)
            else:
                left_out[lda.spec] = str(exc)
            continue
        runnable.append(lda)
    return runnable


def check_view(lda: LDA, timeline: Timeline) -> None:
    """Raise UsageError unless ``lda`` is defined on the timeline's view (``LDA.views``; of a
    mixed timeline, on some flow's), naming the form of it that is (``spike`` on a sender's
    view: ``spike@rtt``)."""
    views = views_of(timeline)
    if views & set(lda.views) or not views:
        return
    view = timeline.view if timeline.view != "mixed" else " and ".join(sorted(views))
    family = {lda.name, lda.variant_of} - {""}
    others = [name for name, cls in REGISTRY.items() if views & set(cls.views) and {name, cls.variant_of} & family]
    hint = f"; on a {view}'s view use {' or '.join(others)}" if others else ""
    raise UsageError(
        f"{lda.spec} is defined on the {' and '.join(lda.views)}'s view, and this timeline is a {view}'s{hint}"
    )


def views_of(timeline: Timeline) -> set[str]:
    """The views the timeline's flows were read in (a mixed one's: each flow's)."""
    return set(timeline.flow_views.values()) if timeline.view == "mixed" else {timeline.view}


def decided_losses(lda: LDA, timeline: Timeline) -> np.ndarray:
    """The losses ``lda`` decides: those of the flows read in a view it is defined on (on a
    mixed timeline, some flows' are not; elsewhere, every one)."""
    if timeline.view != "mixed":
        return np.ones(len(timeline.losses), bool)
    mine = [flow for flow, view in timeline.flow_views.items() if view in lda.views]
    return label_positions(timeline.losses["flow"], mine) >= 0


def optional_specs(ldas) -> set[str]:
    """The specs of ``ldas`` that ``"all"`` brought in (all of them for None or ``"all"``):
    those may be left out where they cannot run, an LDA named on its own may not."""
    return {lda.spec for lda in parse_ldas("all")} if asks_for_all(ldas) else set()


@renamed_keyword("replay", "semantics", since="0.5.0")
def classify(
    timeline: Timeline, ldas="all", *, semantics: Replay | None = None, other_views: bool = False
) -> pd.DataFrame:
    """Replay each LDA over the timeline: one row per lost transmission per LDA.

    Columns: ``lda`` (its spec, categorical in the order given), ``flow`` (categorical over
    ``timeline.flows``), ``seq, tx, uid`` of the loss, ``gap`` and ``n`` (the burst it belongs
    to, −1 / 0 when no arrival revealed it), ``cause`` (the truth: congestion, wireless or lost
    = unknown; categorical), ``decision`` (congestion, wireless, undetected, or abstained where
    the LDA was not confident enough to call it), ``t_decide`` (when it was decided: the
    receive time of the deciding arrival, at a sender the detection time if later), ``scheme`` (ZBS: the base scheme that decided; the policer's calls;
    the learned LDA: why it abstained or deferred to mBiaz at a coin's confidence, ``learned.REASONS``; "" for the others; categorical) and
    ``confidence`` (the probability the LDA gave its call, 0.5-1: the learned LDA, calibrated; NaN for the
    others). On a mixed timeline an LDA has rows for the flows in its views only. The table is built once from codes: a batch re-run classifies a trace in a
    few milliseconds, and per-LDA pandas blocks would dominate that.
    """
    semantics = semantics or Replay()
    chosen = runnable_ldas(timeline, ldas, other_views=other_views)
    f = Features.of(timeline, semantics)
    losses = timeline.losses
    gap = losses["gap"].to_numpy(np.int64)
    at = take(f.at, gap, -1)
    detected = at >= 0
    # decided at the deciding arrival, and not before the loss was detected: a sender decides
    # when it acts on the loss, after the ACK sample whose state it decides with
    t_detect = timeline.gaps["t_detect"].to_numpy(np.float64)
    n, k = len(losses), len(chosen)
    decision = np.empty((k, n), np.int8)
    scheme = np.full((k, n), len(SCHEMES), np.int8)  # the code of ""
    confidence = np.full((k, n), np.nan)
    for i, lda in enumerate(chosen):
        verdict = f.verdict(lda)
        per_loss = verdict.wireless if verdict.per_loss else take(verdict.wireless, gap, False)
        decision[i] = np.where(detected, np.where(per_loss, WIRELESS, CONGESTION), UNDETECTED)
        if verdict.scheme is not None:
            scheme[i] = np.where(detected, take(verdict.scheme, gap, -1), -1)  # -1: no gap, ""
        if verdict.confidence is not None:
            confidence[i] = np.where(detected, take(verdict.confidence, gap, np.nan), np.nan)
        if verdict.abstained is not None:
            decision[i] = np.where(detected & take(verdict.abstained, gap, False), ABSTAINED, decision[i])
    scheme[scheme < 0] = len(SCHEMES)
    flows = timeline.flows
    flow = label_positions(losses["flow"], flows)
    # each LDA's rows: the losses of the flows in its views (on a mixed timeline, not all)
    keep = np.array([decided_losses(lda, timeline) for lda in chosen], bool).reshape(k, n)
    whole = bool(keep.all())

    def rows(values: np.ndarray) -> np.ndarray:
        """Per-loss (or per LDA and loss, or per LDA as a column) values, one per row."""
        full = np.broadcast_to(values, (k, n))
        return full.ravel() if whole else full[keep]

    return pd.DataFrame(
        {
            "lda": pd.Categorical.from_codes(
                rows(np.arange(k)[:, None]), dtype=labels_dtype(lda.spec for lda in chosen)
            ),
            "flow": pd.Categorical.from_codes(rows(flow), dtype=labels_dtype(flows)),
            **{name: rows(losses[name].to_numpy()) for name in ("seq", "tx", "uid")},
            "gap": rows(gap),
            "n": rows(losses["n"].to_numpy()),
            "cause": pd.Categorical(losses["cause"]).take(rows(np.arange(n))),
            "decision": pd.Categorical.from_codes(rows(decision), dtype=DECISION_DTYPE),
            "t_decide": rows(np.maximum(take(f.t, at, np.nan), take(t_detect, gap, np.nan))),
            "scheme": pd.Categorical.from_codes(rows(scheme), dtype=SCHEME_DTYPE),
            "confidence": rows(confidence),
        }
    )


@renamed_keyword("replay", "semantics", since="0.5.0")
def lda_state(timeline: Timeline, lda: LDA | str, *, semantics: Replay | None = None) -> pd.DataFrame:
    """The LDA's internal state after every arrival (Spike state, ZigZag mean/dev, ZBS scheme,
    ...), next to the arrival's flow, seq and receive time: for plots."""
    lda = parse_ldas(lda if not isinstance(lda, LDA) else [lda])[0]
    check_view(lda, timeline)
    lda.prepare(timeline)
    f = Features.of(timeline, semantics or Replay())
    base = timeline.arrivals[["flow", "seq", "t_recv"]].reset_index(drop=True)
    return pd.concat([base, lda.state(f).reset_index(drop=True)], axis=1)
