"""The decisions table checked and turned into what scoring counts: integer codes per key
(trace, flow, LDA) and one indicator per count column (``Losses``); the vocabulary of causes,
decisions and mappings; and ``tally``, the same table in far fewer rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..packets import CONGESTION, LOST, POLICING, ROUTE, WIRELESS, natural_sorted

UNDETECTED = "undetected"
ABSTAINED = "abstained"  # revealed, but the LDA made no call (the learned LDA's abstain_below)
EXCLUDED = "excluded"
CAUSES = (CONGESTION, WIRELESS, ROUTE, POLICING, LOST)
ROUTE_AS = (EXCLUDED, CONGESTION, WIRELESS)
POLICING_AS = ROUTE_AS
DECISIONS = (CONGESTION, WIRELESS, UNDETECTED, ABSTAINED)

BY = {"flow": ("trace", "flow", "lda"), "trace": ("trace", "lda"), "pooled": ("lda",)}
AVERAGES = ("pooled", "mean")
REQUIRED = ("flow", "lda", "cause", "decision")

COUNTS = (
    "losses",
    "unknown",
    "route",
    "policing",
    "undetected",
    "abstained",
    "scored",
    "congestion",
    "wireless",
    "congestion_as_wireless",
    "wireless_as_congestion",
    "decided_wireless",
    "policing_decided",
    "policing_as_wireless",
    "called_policing",
)


@dataclasses.dataclass
class Losses:
    """The decisions table as integer codes (in output order) and per-loss indicators."""

    trace: np.ndarray  # codes: traces in order of first appearance
    flow: np.ndarray  # codes: flows in natural order (over all traces)
    lda: np.ndarray  # codes: LDAs in input (or categorical) order
    labels: dict[str, list[str]]
    flags: dict[str, np.ndarray]  # one boolean array per count column
    gap: np.ndarray | None
    weight: np.ndarray | None = None  # losses per row (``tally``); None: one each

    def count(self, name: str, group: np.ndarray, n_groups: int) -> np.ndarray:
        """The losses of each group that have flag ``name``."""
        flag = self.flags[name]
        if self.weight is None:
            return np.bincount(group[flag], minlength=n_groups).astype(np.int64)
        return np.bincount(group[flag], weights=self.weight[flag], minlength=n_groups).astype(np.int64)


def prepare(
    decisions: pd.DataFrame, *, need_gap: bool, route_as: str = EXCLUDED, policing_as: str = EXCLUDED
) -> Losses:
    """Check the decisions table and turn it into codes and indicators (vectorised)."""
    required = REQUIRED + (("gap",) if need_gap else ())
    missing = [c for c in required if c not in decisions.columns]
    if missing:
        raise UsageError(
            f"score: the decisions table has no column {', '.join(map(repr, missing))} "
            f"(it needs {', '.join(required)}; trace is optional)"
        )
    n = len(decisions)
    for col in ("trace",) + required:
        if col in decisions.columns and decisions[col].isna().any():
            raise UsageError(f"score: column {col!r} of the decisions table has missing values")
    cause, decision = decisions["cause"], decisions["decision"]
    for name, values, allowed in (("cause", cause, CAUSES), ("decision", decision, DECISIONS)):
        bad = ~values.isin(allowed).to_numpy(bool)
        if bad.any():
            found = sorted({str(x) for x in pd.unique(values[bad])})
            raise UsageError(
                f"score: column {name!r} has values {', '.join(map(repr, found[:5]))}; expected {', '.join(allowed)}"
            )

    if "trace" in decisions.columns:
        trace_codes, trace_labels = _factorize_text(decisions["trace"])
    else:
        trace_codes, trace_labels = np.zeros(n, np.int64), [""]
    flow_codes, flow_labels = _factorize_text(decisions["flow"])
    flow_labels, flow_codes = _reorder(flow_labels, natural_sorted(flow_labels), flow_codes)
    lda_codes, lda_labels = _factorize_text(decisions["lda"])
    if isinstance(decisions["lda"].dtype, pd.CategoricalDtype):
        categories = [str(x) for x in decisions["lda"].cat.categories]
        lda_labels, lda_codes = _reorder(lda_labels, [c for c in categories if c in set(lda_labels)], lda_codes)

    is_cause = {c: (cause == c).to_numpy(bool) for c in CAUSES}
    policing = is_cause[POLICING].copy()  # before any mapping: how each LDA read the policer's drops
    if route_as != EXCLUDED:
        is_cause[route_as] = is_cause[route_as] | is_cause[ROUTE]
    if policing_as != EXCLUDED:
        is_cause[policing_as] = is_cause[policing_as] | is_cause[POLICING]
    is_decision = {d: (decision == d).to_numpy(bool) for d in DECISIONS}
    decided = is_decision[CONGESTION] | is_decision[WIRELESS]
    true_c = is_cause[CONGESTION] & decided
    true_w = is_cause[WIRELESS] & decided
    flags = {
        "losses": np.ones(n, bool),
        "unknown": is_cause[LOST],
        "route": is_cause[ROUTE],
        "policing": policing,
        "undetected": is_decision[UNDETECTED],
        "abstained": is_decision[ABSTAINED],
        "scored": true_c | true_w,
        "congestion": true_c,
        "wireless": true_w,
        "congestion_as_wireless": true_c & is_decision[WIRELESS],
        "wireless_as_congestion": true_w & is_decision[CONGESTION],
        "decided_wireless": (true_c | true_w) & is_decision[WIRELESS],
        "policing_decided": policing & decided,
        "policing_as_wireless": policing & is_decision[WIRELESS],
        "called_wireless": is_decision[WIRELESS],  # whatever the cause: for ``as_wireless``
        "called_policing": decided & _schemes_policing(decisions),
    }
    weight = None
    if "weight" in decisions.columns:
        weight = decisions["weight"].to_numpy()
        if weight.dtype.kind not in "iu" or (weight < 0).any():
            raise UsageError("score: column 'weight' must hold whole numbers of losses ≥ 0")
        weight = weight.astype(np.float64)
    gap = None
    if "gap" in decisions.columns:
        try:
            gap = decisions["gap"].to_numpy(dtype=np.int64)
        except (TypeError, ValueError):
            if need_gap:
                raise UsageError("score: column 'gap' must hold integers (-1 when undetected)") from None
    return Losses(
        trace=trace_codes,
        flow=flow_codes,
        lda=lda_codes,
        labels={"trace": trace_labels, "flow": flow_labels, "lda": lda_labels},
        flags=flags,
        gap=gap,
        weight=weight,
    )


def _schemes_policing(decisions: pd.DataFrame) -> np.ndarray:
    """Per row, whether the LDA marked its call a policer's (``scheme`` ``policing``: the
    policer detector's three-way view; see ``lda/policer.py``)."""
    if "scheme" not in decisions.columns:
        return np.zeros(len(decisions), bool)
    return (decisions["scheme"] == POLICING).to_numpy(bool)  # the scheme is named as the cause


def taken_as_wireless(losses: Losses) -> Losses:
    """The same losses with every one taken as wireless (the truth-free shares): every decided
    loss is scored, and those called congestion are its "wireless as congestion"."""
    decided = ~(losses.flags["undetected"] | losses.flags["abstained"])
    called_wireless = losses.flags["called_wireless"]
    none = np.zeros_like(decided)
    flags = {name: none for name in losses.flags} | {
        "losses": losses.flags["losses"],
        "undetected": losses.flags["undetected"],
        "abstained": losses.flags["abstained"],
        "scored": decided,
        "wireless": decided,
        "wireless_as_congestion": decided & ~called_wireless,
        "decided_wireless": decided & called_wireless,
        "called_wireless": called_wireless,
    }
    return dataclasses.replace(losses, flags=flags)


def tally(decisions: pd.DataFrame, *, bursts: bool = False) -> pd.DataFrame:
    """The decisions as one row per trace, flow, LDA, true cause and decision (and whether the
    call was a policer's, ``scheme`` kept as ``policing`` or empty; and burst, with
    ``bursts``: the burst bootstrap needs them), with ``weight`` the losses it stands for:
    ``score`` gives the same tables from it. Rows keep the order of their first loss, and a
    loss outside any burst stays a row of its own, so that even the bootstrap's resamples are
    the same. The batch command's workers send their decisions so: a thousand traces' 4.5 M
    decisions were 430 MB in the parent, their tally 5 MB."""
    n = len(decisions)
    keys = [
        c
        for c in ("trace", "flow", "lda", "cause", "decision", "scheme", *(("gap",) if bursts else ()))
        if c in decisions.columns
    ]
    if n == 0:  # nothing to tally (a trace no LDA could run on has only its label columns)
        return decisions[keys].assign(weight=np.zeros(0, np.int64))
    missing = [c for c in REQUIRED + (("gap",) if bursts else ()) if c not in decisions.columns]
    if missing:
        raise UsageError(f"tally: the decisions table has no column {', '.join(map(repr, missing))}")
    weight = np.ones(n, np.int64) if "weight" not in decisions.columns else decisions["weight"].to_numpy(np.int64)
    group = np.zeros(n, np.int64)
    for name in keys:  # each row's group: the keys' codes combined, renumbered at each step
        values = decisions[name]
        if name == "gap":  # a loss outside any burst (gap < 0) is a unit of its own: never merged
            gap = values.to_numpy(np.int64)
            values = np.where(gap >= 0, gap, -1 - np.arange(n))
        elif name == "scheme":  # only whether it was a policer's counts (``called_policing``)
            values = _schemes_policing(decisions)
        codes = pd.factorize(values)[0].astype(np.int64) + 1  # NaN (-1) too
        group = pd.factorize(group * (int(codes.max()) + 1) + codes)[0]
    # factorize numbers groups in the order of their first row
    first = np.unique(group, return_index=True)[1]
    out = decisions[keys].take(first).reset_index(drop=True)
    if "scheme" in out.columns:
        policed = _schemes_policing(out)
        out["scheme"] = pd.Categorical(np.where(policed, POLICING, ""), categories=["", POLICING])
    out["weight"] = np.bincount(group, weights=weight).astype(np.int64)
    return out


def _factorize_text(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Codes and labels (as text, in order of first appearance) of a key column."""
    codes, uniques = pd.factorize(values, sort=False)
    text = [str(x) for x in uniques]
    if len(set(text)) < len(text):  # distinct values with the same text (1 and "1"): merge
        codes_of_text, text = pd.factorize(pd.Series(text, dtype=object), sort=False)
        codes, text = codes_of_text[codes], [str(x) for x in text]
    return np.asarray(codes, np.int64), text


def _reorder(labels: list[str], order: list[str], codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Renumber codes so that label ``order[i]`` has code i."""
    position = {label: i for i, label in enumerate(order)}
    remap = np.array([position[label] for label in labels], dtype=np.int64)
    return order, remap[codes] if len(codes) else codes
