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

from ..errors import UsageError
from ..specs import build, parse_specs
from ..timeline import Timeline
from .base import LDA, Features, Replay, Verdict, take
from .backlog import Veno
from .baselines import Omniscient, Unaware
from .interarrival import Biaz, MBiaz, WinLdaPlus
from .learned import Learned
from .rott import Spike, WroLdaPlus, ZigZag
from .rtt import AdaptiveRtt
from .xrtp import Xrtp
from .zbs import SCHEMES, Zbs

REGISTRY: dict[str, type[LDA]] = {
    cls.name: cls
    for cls in (Unaware, Omniscient, Biaz, MBiaz, Spike, ZigZag, Zbs, WinLdaPlus, WroLdaPlus, AdaptiveRtt, Xrtp,
                Veno, Learned)
}
DECISIONS = ("congestion", "wireless", "undetected")
DECISION_DTYPE = pd.CategoricalDtype(list(DECISIONS))
CONGESTION, WIRELESS, UNDETECTED = range(3)

__all__ = [
    "LDA", "Replay", "Features", "Verdict", "REGISTRY", "DECISIONS", "get_lda", "parse_ldas",
    "classify", "lda_state", "runnable_ldas",
]


def get_lda(name: str, **params) -> LDA:
    """The LDA registered as ``name`` with the given parameters (the papers' defaults otherwise)."""
    return build(REGISTRY, "LDA", name, **params)


def parse_ldas(text: str | Iterable[str | LDA] | None) -> list[LDA]:
    """LDAs from ``"all"``, a comma-separated list of specs, or a list of specs / LDA objects
    (see :func:`ldanalyze.specs.parse_specs`)."""
    return parse_specs(text, REGISTRY, "LDA", LDA)


def runnable_ldas(timeline: Timeline, ldas) -> list[LDA]:
    """The LDAs asked for, each checked against the timeline. Asked for by name, one that cannot
    run here is an error; under ``"all"`` it is left out with a warning (``adaptive_rtt`` needs
    absolute delays, which a capture on two clocks without feedback does not give)."""
    chosen = parse_ldas(ldas)
    runnable = []
    for lda in chosen:
        try:
            lda.prepare(timeline)
        except UsageError as exc:
            if ldas not in (None, "all"):
                raise
            warnings.warn(f"{lda.spec} left out: {exc}", stacklevel=3)
            continue
        runnable.append(lda)
    return runnable


def classify(timeline: Timeline, ldas="all", *, replay: Replay | None = None) -> pd.DataFrame:
    """Replay each LDA over the timeline: one row per lost transmission per LDA.

    Columns: ``lda`` (its spec, categorical in the order given), ``flow, seq, tx, uid`` of the
    loss, ``gap`` and ``n`` (the burst it belongs to, −1 / 0 when no arrival revealed it),
    ``cause`` (the truth: congestion, wireless or lost = unknown), ``decision`` (congestion,
    wireless or undetected), ``t_decide`` (receive time of the deciding arrival) and ``scheme``
    (ZBS: the base scheme that decided; empty for the others).
    """
    replay = replay or Replay()
    chosen = runnable_ldas(timeline, ldas)
    f = Features.of(timeline, replay)
    losses = timeline.losses
    gap = losses["gap"].to_numpy(np.int64)
    at = take(f.at, gap, -1)
    detected = at >= 0
    t_decide = take(f.t, at, np.nan)
    blocks = []
    for lda in chosen:
        verdict = lda.decide(f)
        per_loss = verdict.wireless if verdict.per_loss else take(verdict.wireless, gap, False)
        code = np.where(detected, np.where(per_loss, WIRELESS, CONGESTION), UNDETECTED)
        scheme = np.full(len(losses), "", dtype=object)
        if verdict.scheme is not None:
            chosen_scheme = take(verdict.scheme, gap, -1)  # -1 (no gap) picks the trailing ""
            scheme = np.where(detected, np.asarray(SCHEMES + ("",), dtype=object)[chosen_scheme], "")
        blocks.append(pd.DataFrame({
            "lda": lda.spec,
            "flow": losses["flow"].to_numpy(),
            "seq": losses["seq"].to_numpy(),
            "tx": losses["tx"].to_numpy(),
            "uid": losses["uid"].to_numpy(),
            "gap": gap,
            "n": losses["n"].to_numpy(),
            "cause": losses["cause"].to_numpy(),
            "decision": pd.Categorical.from_codes(code, dtype=DECISION_DTYPE),
            "t_decide": t_decide,
            "scheme": scheme,
        }))
    out = pd.concat(blocks, ignore_index=True)
    out["lda"] = pd.Categorical(out["lda"], categories=[lda.spec for lda in chosen])
    out["flow"] = pd.Categorical(out["flow"].astype(str), categories=timeline.flows)
    return out


def lda_state(timeline: Timeline, lda: LDA | str, *, replay: Replay | None = None) -> pd.DataFrame:
    """The LDA's internal state after every arrival (Spike state, ZigZag mean/dev, ZBS scheme,
    ...), next to the arrival's flow, seq and receive time: for plots."""
    lda = parse_ldas(lda if not isinstance(lda, LDA) else [lda])[0]
    lda.prepare(timeline)
    f = Features.of(timeline, replay or Replay())
    base = timeline.arrivals[["flow", "seq", "t_recv"]].reset_index(drop=True)
    return pd.concat([base, lda.state(f).reset_index(drop=True)], axis=1)
