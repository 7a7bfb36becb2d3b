"""Rate controllers replayed over a Timeline (open loop), and closed-form throughput models.

``replay(timeline, controllers="all", ldas="all")`` feeds every controller every LDA's
decisions and returns the rate each would have allowed over time (``rates``), its time average
per flow (``summary``: modeled throughput, normalised to the bottleneck capacity and compared
with the same controller fed the omniscient and the unaware decisions) and the fairness across
the trace's flows. The replay is open loop: the trace's timing is fixed. The contract is
``docs/controllers.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..errors import UsageError, renamed_keyword
from ..formatting import replay_html
from ..lda import Replay, classify, get_lda, parse_ldas, runnable_ldas
from ..packets import label_positions, labels_dtype
from ..specs import build, parse_specs
from ..timeline import Timeline
from . import ldaplus, newreno, tfrc, westwood, xrtp
from .base import OPEN_LOOP_NOTE, Controller, PathModel, Signals, summarize_rates

#: name -> class, in the order of docs/controllers.md; each module lists its own in CONTROLLERS
REGISTRY: dict[str, type[Controller]] = {
    cls.name: cls for module in (tfrc, ldaplus, westwood, xrtp, newreno) for cls in module.CONTROLLERS
}
BASELINES = ("omniscient", "unaware")
#: the replay ``score``, ``batch`` and ``report`` show by default: TFRC with t_RTO = 2.75R and the
#: loss history discounted, the model that came closest to the closed loop's measured throughput
#: of 36 candidates, chosen on two seeds of a grid where the LDAs differ and reported on two others
#: (docs/paper000/model_grid.md; issue #46 §3). RFC 5348's own (t_RTO = 4R, no discounting) is
#: ``tfrc``.
DEFAULT_CONTROLLER = "tfrc:rto_factor=2.75:discounting=true"

__all__ = [
    "DEFAULT_CONTROLLER",
    "REGISTRY",
    "Controller",
    "PathModel",
    "Signals",
    "ReplayResult",
    "get_controller",
    "parse_controllers",
    "replay",
    "controller_state",
    "OPEN_LOOP_NOTE",
]


def get_controller(name: str, **params) -> Controller:
    """The controller registered as ``name`` with the given parameters (defaults otherwise)."""
    return build(REGISTRY, "controller", name, **params)


def parse_controllers(text: str | Iterable[str | Controller] | None) -> list[Controller]:
    """Controllers from ``"all"``, comma-separated specs (``tfrc:discounting=true``) or objects."""
    return parse_specs(text, REGISTRY, "controller", Controller)


@dataclasses.dataclass
class ReplayResult:
    """What :func:`replay` gives: the rate timelines, their summary per flow, and fairness.

    ``rates``: one row per (lda, controller, arrival): ``flow, t`` (sender-side time, s),
    ``seq`` and ``rate_bps`` (allowed rate after that arrival, bits/s).
    ``summary``: one row per (lda, controller, flow): ``mean_rate_bps`` (time average),
    ``capacity_bps``, ``thput`` (time average of min(rate, capacity) / capacity),
    ``vs_omniscient`` and ``vs_unaware`` (thput over the same controller's thput when fed
    those decisions), ``seconds`` (time covered).
    """

    rates: pd.DataFrame
    summary: pd.DataFrame
    note: str = OPEN_LOOP_NOTE

    def _repr_html_(self) -> str:
        return replay_html(self)


@renamed_keyword("replay", "semantics", since="0.5.0")
def replay(
    timeline: Timeline,
    controllers="all",
    ldas="all",
    *,
    semantics: Replay | None = None,
    path: PathModel | None = None,
    rates: bool = True,
    reference: pd.DataFrame | None = None,
    decisions: pd.DataFrame | None = None,
    signals: Signals | None = None,
) -> ReplayResult:
    """Replay each controller fed each LDA's decisions (see the module docstring).

    ``semantics`` sets the LDA replay semantics (and which arrival decides a loss), ``path`` how
    the sender's RTT, ACK clock and the capacity are reconstructed. ``rates=False`` skips the
    per-arrival table (the summary alone is much smaller). ``reference``: summary rows of the
    baselines from an earlier replay of the same timeline, controllers and semantics (the
    batch cache keeps them), so that the ``vs_`` ratios need no second replay of them: a
    DataFrame, or its columns ``lda, controller, flow, thput`` as a mapping of sequences.
    ``decisions``: ``classify``'s table for these LDAs (and the baselines, without
    ``reference``) on this timeline under ``semantics``, when the caller has it already.
    ``signals``: ``Signals.of(timeline, semantics, path)``, likewise (the batch cache keeps them).
    """
    if timeline.view != "receiver":
        raise UsageError(
            f"the controllers replay a receiver's arrivals, and this timeline is a {timeline.view} view "
            "(a sender's ACK samples are not the arrivals the rate rules are written for)"
        )
    semantics = semantics or Replay()
    sig = signals if signals is not None else Signals.of(timeline, semantics, path)
    chosen = parse_controllers(controllers)
    lda_list = runnable_ldas(timeline, ldas)
    specs = [lda.spec for lda in lda_list]
    extra = [] if reference is not None else [name for name in BASELINES if name not in specs]
    if decisions is None:
        decisions = classify(timeline, lda_list + [get_lda(name) for name in extra], semantics=semantics)
    flows = np.asarray(sig.flows, dtype=object)
    names = specs + extra
    lda_of = label_positions(decisions["lda"], names)  # by the categories, not row by row
    congestion = (decisions["decision"] != "wireless").to_numpy()  # an abstained loss too (Signals.congestion)
    stats, rate_blocks = [], []
    for ctl in chosen:
        for k, spec in enumerate(names):
            rate, _ = ctl.run(sig, sig.congestion(congestion[lda_of == k]))
            stats.append(summarize_rates(sig, rate))
            if rates and spec in specs:
                rate_blocks.append(
                    pd.DataFrame(
                        {
                            "lda": spec,
                            "controller": ctl.spec,
                            "flow": flows[sig.flow],
                            "t": sig.t,
                            "seq": sig.seq,
                            "rate_bps": rate,
                        }
                    )
                )
    summary = _summary_table(stats, [c.spec for c in chosen], names, flows)
    _add_ratios(summary, reference)
    kept = summary["lda"].cat.codes.to_numpy() < len(specs)  # the baselines added for the ratios go
    summary = summary[kept].reset_index(drop=True)
    summary["lda"] = summary["lda"].cat.set_categories(specs)
    columns = ["lda", "controller", "flow", "rate_bps"]
    rate_table = pd.concat(rate_blocks, ignore_index=True) if rate_blocks else pd.DataFrame(columns=columns)
    return ReplayResult(rates=rate_table, summary=summary)


def _summary_table(stats: list[dict], controllers: list[str], ldas: list[str], flows: np.ndarray) -> pd.DataFrame:
    """The summary rows, flows within LDAs within controllers, from each run's per-flow
    statistics (one table built from codes: the replay of one LDA from the batch cache takes a
    few milliseconds, and per-run frames would dominate it)."""
    runs = len(controllers) * len(ldas)
    columns = {name: np.concatenate([s[name] for s in stats]) for name in stats[0]} if stats else {}
    return pd.DataFrame(
        {
            "lda": pd.Categorical.from_codes(
                np.repeat(np.tile(np.arange(len(ldas)), len(controllers)), len(flows)), dtype=labels_dtype(ldas)
            ),
            "controller": pd.Categorical.from_codes(
                np.repeat(np.arange(runs) // max(len(ldas), 1), len(flows)), dtype=labels_dtype(controllers)
            ),
            "flow": np.tile(flows, runs),
            **columns,
        }
    )


def _add_ratios(summary: pd.DataFrame, reference) -> None:
    """Add ``vs_<baseline>`` columns: each row's thput over the same controller's thput on the
    same flow when fed that baseline's decisions (from ``summary``, else ``reference``). The
    tables hold a row per (lda, controller, flow): plain dictionaries beat pandas joins here."""
    thput: dict[tuple, float] = {}
    for table in (summary, reference):
        if table is None:
            continue
        for lda, ctl, flow, value in zip(*(list(table[name]) for name in ("lda", "controller", "flow", "thput"))):
            if lda in BASELINES:
                thput.setdefault((lda, ctl, flow), value)
    keys = list(zip(summary["controller"].tolist(), summary["flow"].tolist()))
    own = summary["thput"].to_numpy(np.float64)
    for base in BASELINES:
        ref = np.array([thput.get((base, *key), np.nan) for key in keys], dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            summary[f"vs_{base}"] = own / ref


@renamed_keyword("replay", "semantics", since="0.5.0")
def controller_state(
    timeline: Timeline,
    controller: Controller | str,
    lda: str = "unaware",
    *,
    semantics: Replay | None = None,
    path: PathModel | None = None,
) -> pd.DataFrame:
    """The controller's rate and internal state after every arrival, fed one LDA: for plots."""
    semantics = semantics or Replay()
    ctl = parse_controllers(controller if not isinstance(controller, Controller) else [controller])[0]
    sig = Signals.of(timeline, semantics, path)
    [lda_obj] = parse_ldas(lda) if isinstance(lda, str) else parse_ldas([lda])
    decisions = classify(timeline, [lda_obj], semantics=semantics)["decision"].astype(str).to_numpy()
    rate, state = ctl.run(sig, sig.congestion(decisions))
    out = pd.DataFrame(
        {"flow": np.asarray(sig.flows, dtype=object)[sig.flow], "t": sig.t, "seq": sig.seq, "rate_bps": rate}
    )
    for key, values in state.items():
        out[key] = values
    return out
