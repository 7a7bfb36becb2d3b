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
A scored loss outside any burst (``gap < 0``) is a unit of its own.

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
with ``trace`` when several traces are scored) adds ``controller``; ``thput``, ``vs_omniscient``
and ``vs_unaware`` (per flow; by trace or pooled the mean over the flows of the group, every
flow the replay covered, not only those with losses); and by trace ``fairness_std`` (paper 000
§VIII-A: the sample standard deviation of the flows' throughputs normalised by their mean) and
``jain`` (paper 003 eq. 12) over the trace's flows, pooled their means over the traces. The
replay is open loop: these are the rates the controller would have allowed on the trace's
timing, not what was sent.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from statistics import NormalDist

import numpy as np
import pandas as pd
from numba import njit

from .control.models import fairness_by_group
from .errors import UsageError
from .packets import CONGESTION, LOST, POLICING, ROUTE, WIRELESS, natural_sorted
from .tiering import pick

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
SUMMARY_REQUIRED = ("flow", "sent", "unobserved", CONGESTION, WIRELESS)
SUMMARY_READ = (*SUMMARY_REQUIRED, "weak_labels")  # what scoring reads of a summary: the rest optional

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
METRICS = ("M_c", "M_w", "accuracy", "A_c", "A_w", "accuracy_ratio", "CC", "CW", "WC", "WW", "M_p")
INTERVAL_METRICS = ("M_c", "M_w", "accuracy")

# Bootstrap memory bound: resampled unit indices drawn per chunk (int64 and float64 arrays of
# this many elements exist at once).
BOOTSTRAP_CHUNK = 1 << 21


@dataclasses.dataclass
class _Losses:
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


def score(
    decisions: pd.DataFrame,
    summary: pd.DataFrame | None = None,
    *,
    by: str = "flow",
    average: str = "pooled",
    confidence: float = 0.95,
    bootstrap: int = 1000,
    seed=0,
    throughput: pd.DataFrame | None = None,
    route_as: str = EXCLUDED,
    policing_as: str = EXCLUDED,
) -> pd.DataFrame:
    """Counts, metrics and confidence intervals per group and LDA (see the module docstring).

    ``by``: ``"flow"`` (rows keyed trace, flow, lda), ``"trace"`` (trace, lda) or ``"pooled"``
    (lda). ``average``: ``"pooled"`` pools the counts; ``"mean"`` (by trace or pooled) averages
    per-flow metrics and adds ``flows``, without intervals. ``bootstrap``: resamples for the
    burst bootstrap (0 = no bootstrap columns), drawn from ``numpy.random.default_rng(seed)``.
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
    if not isinstance(decisions, pd.DataFrame):
        raise UsageError(f"score: decisions must be a DataFrame, not {type(decisions).__name__}")

    with_boot = bootstrap > 0 and average == "pooled"
    losses = _prepare(decisions, need_gap=with_boot, route_as=route_as, policing_as=policing_as)
    out, codes = _counted(losses, by, average, float(confidence), bootstrap if with_boot else 0, seed)
    called = _as_wireless(losses)
    as_wireless = _counted(called, by, average, float(confidence), bootstrap if with_boot else 0, seed)[0]
    _share_columns(out, as_wireless, float(confidence))
    if summary is not None:
        _rate_columns(out, codes, losses, summary, by)
        if by != "flow":
            _scored_flows_column(out, summary)
    if throughput is not None:
        out = _throughput_columns(out, throughput, by)
    out.insert(out.columns.get_loc("lda") + 1, "route_as", route_as)
    out.insert(out.columns.get_loc("route_as") + 1, "policing_as", policing_as)
    return out


def _counted(
    losses: _Losses, by: str, average: str, confidence: float, bootstrap: int, seed
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Counts and metrics per group (with intervals when pooled), and the groups' key codes."""
    if average != "pooled":
        return _mean(losses, BY[by])
    out, codes, gid = _pooled(losses, BY[by])
    _wilson_columns(out, confidence)
    if bootstrap:
        _bootstrap_columns(out, gid, losses, confidence, bootstrap, seed)
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


# --- input ---------------------------------------------------------------------------------


def _prepare(
    decisions: pd.DataFrame, *, need_gap: bool, route_as: str = EXCLUDED, policing_as: str = EXCLUDED
) -> _Losses:
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
        "called_wireless": is_decision[WIRELESS],  # whatever the cause: for ``_as_wireless``
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
    return _Losses(
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


def _as_wireless(losses: _Losses) -> _Losses:
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


def _group_ids(codes: dict[str, np.ndarray], keys: tuple[str, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Group id per row, groups numbered in output order, and the key codes of each group."""
    n = len(next(iter(codes.values())))
    if n == 0:
        return np.zeros(0, np.int64), {k: np.zeros(0, np.int64) for k in keys}
    sizes = [int(codes[k].max()) + 1 for k in keys]
    combined = np.ravel_multi_index(tuple(codes[k] for k in keys), sizes)
    space = math.prod(sizes)
    if space <= 4 * n + (1 << 20):  # numbered through a table of every key: no sort (np.unique's)
        present = np.zeros(space, bool)
        present[combined] = True
        uniq = np.flatnonzero(present)
        number = np.cumsum(present) - 1
        gid = number[combined]
    else:
        uniq, gid = np.unique(combined, return_inverse=True)
    group_codes = dict(zip(keys, np.unravel_index(uniq, sizes)))
    return gid.astype(np.int64), {k: np.asarray(v, np.int64) for k, v in group_codes.items()}


def _key_frame(group_codes: dict[str, np.ndarray], labels: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            k: pd.Series(np.asarray(labels[k], dtype=object)[c] if len(c) else [], dtype=str)
            for k, c in group_codes.items()
        }
    )


def _ratio(num, den) -> np.ndarray:
    """num / den, NaN where den is 0."""
    num = np.asarray(num, np.float64)
    den = np.asarray(den, np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


# --- pooled counts and metrics -------------------------------------------------------------


def _pooled(losses: _Losses, keys: tuple[str, ...]) -> tuple[pd.DataFrame, dict[str, np.ndarray], np.ndarray]:
    """Counts summed per group and the metrics of the pooled counts; the group keys' codes and
    each loss's group (its row in the output)."""
    codes = {"trace": losses.trace, "flow": losses.flow, "lda": losses.lda}
    gid, group_codes = _group_ids(codes, keys)
    ng = len(next(iter(group_codes.values())))
    out = _key_frame(group_codes, losses.labels)
    for name in COUNTS:
        out[name] = losses.count(name, gid, ng)
    for name, values in _metrics(out).items():
        out[name] = values
    return out, group_codes, gid


def _metrics(counts: pd.DataFrame) -> dict[str, np.ndarray]:
    c, w = counts["congestion"].to_numpy(), counts["wireless"].to_numpy()
    cw, wc = counts["congestion_as_wireless"].to_numpy(), counts["wireless_as_congestion"].to_numpy()
    scored = counts["scored"].to_numpy()
    m_c, m_w = _ratio(cw, c), _ratio(wc, w)
    return {
        "M_c": m_c,
        "M_w": m_w,
        "accuracy": _ratio(scored - cw - wc, scored),
        "A_c": 1.0 - m_c,
        "A_w": 1.0 - m_w,
        "accuracy_ratio": _ratio(counts["decided_wireless"].to_numpy(), w),
        "CC": _ratio(c - cw, scored),
        "CW": _ratio(wc, scored),
        "WC": _ratio(cw, scored),
        "WW": _ratio(w - wc, scored),
        "M_p": _ratio(counts["policing_as_wireless"].to_numpy(), counts["policing_decided"].to_numpy()),
    }


def _interval_fractions(counts: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(successes, trials) behind each metric that gets an interval."""
    scored = counts["scored"].to_numpy()
    wrong = counts["congestion_as_wireless"].to_numpy() + counts["wireless_as_congestion"].to_numpy()
    return {
        "M_c": (counts["congestion_as_wireless"].to_numpy(), counts["congestion"].to_numpy()),
        "M_w": (counts["wireless_as_congestion"].to_numpy(), counts["wireless"].to_numpy()),
        "accuracy": (scored - wrong, scored),
    }


def wilson_interval(successes, trials, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for successes / trials (arrays); NaN where trials is 0."""
    k = np.asarray(successes, np.float64)
    n = np.asarray(trials, np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
        lo = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
        hi = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lo, hi


def _wilson_columns(out: pd.DataFrame, confidence: float) -> None:
    for name, (k, n) in _interval_fractions(out).items():
        out[f"{name}_lo"], out[f"{name}_hi"] = wilson_interval(k, n, confidence)


# --- burst bootstrap -----------------------------------------------------------------------


def _bootstrap_columns(
    out: pd.DataFrame, group: np.ndarray, losses: _Losses, confidence: float, resamples: int, seed
) -> None:
    """Percentile intervals of M_c, M_w and accuracy, resampling the bursts of each group.

    ``group`` is each loss's row in ``out``.
    """
    ng = len(out)
    rows = np.flatnonzero(losses.flags["scored"])
    gid = group[rows]
    codes = {"trace": losses.trace[rows], "flow": losses.flow[rows]}
    assert losses.gap is not None  # prepared with need_gap
    gap = losses.gap[rows]
    gap = np.where(gap >= 0, gap, -1 - rows)  # a loss outside any burst is a unit of its own
    order = np.lexsort((gap, codes["flow"], codes["trace"], gid))
    g, t, f, b = gid[order], codes["trace"][order], codes["flow"][order], gap[order]
    new = np.ones(len(order), bool)
    if len(order):
        new[1:] = (g[1:] != g[:-1]) | (t[1:] != t[:-1]) | (f[1:] != f[:-1]) | (b[1:] != b[:-1])
    unit = np.cumsum(new) - 1
    n_units = int(new.sum())
    unit_group = g[new]
    weight = np.ones(len(rows)) if losses.weight is None else losses.weight[rows]
    per_unit = {
        name: np.bincount(unit, weights=(losses.flags[name][rows] * weight)[order], minlength=n_units).astype(np.int64)
        for name in RESAMPLED_COUNTS
    }
    tails = np.array([0.5 - confidence / 2.0, 0.5 + confidence / 2.0]) * 100.0
    result = {name: np.full((2, ng), np.nan) for name in INTERVAL_METRICS}
    if n_units:
        samples = _resample(unit_group, per_unit, ng, resamples, seed)
        present = np.unique(unit_group)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN groups: NaN interval
            for name in INTERVAL_METRICS:
                result[name][:, present] = np.nanpercentile(samples[name], tails, axis=0)
    for name in INTERVAL_METRICS:
        out[f"{name}_boot_lo"], out[f"{name}_boot_hi"] = result[name]


def _resample(
    unit_group: np.ndarray, per_unit: dict[str, np.ndarray], ng: int, resamples: int, seed
) -> dict[str, np.ndarray]:
    """Resampled M_c, M_w and accuracy, shape (resamples, groups that have units).

    Units are sorted by group. All groups are resampled together: one resample draws, for every
    position of every group, a unit of that group uniformly (one float64 of the generator a
    position, scaled by the group's size); the per-group sums of the drawn units' counts give
    the resample's ratios. Draws come in chunks of resamples (bounded memory), which does not
    change the stream; ``resample_totals`` sums a chunk's draws in one pass.
    """
    size = np.bincount(unit_group, minlength=ng)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    present = np.flatnonzero(size)
    counts = np.stack([per_unit[name] for name in RESAMPLED_COUNTS], axis=1)
    rng = np.random.default_rng(seed)
    out = {name: np.empty((resamples, len(present))) for name in INTERVAL_METRICS}
    n = len(unit_group)
    chunk = max(1, BOOTSTRAP_CHUNK // n)
    buffer = np.empty((min(chunk, resamples), n))  # one block of memory for every chunk's draws
    for s in range(0, resamples, chunk):
        m = min(chunk, resamples - s)
        draws = rng.random(out=buffer[:m])
        how = pick(resample_totals, draws.size * 25e-9, instead=_resample_totals_vectorised)
        totals = how(draws, start[present], size[present], counts)
        t_c, t_cw, t_w, t_wc = (totals[:, :, k] for k in range(4))
        out["M_c"][s : s + m] = _ratio(t_cw, t_c)
        out["M_w"][s : s + m] = _ratio(t_wc, t_w)
        out["accuracy"][s : s + m] = _ratio(t_c + t_w - t_cw - t_wc, t_c + t_w)
    return out


def _resample_totals_vectorised(draws, first, size, counts) -> np.ndarray:
    """``resample_totals`` in numpy, with no machine code to compile or load: 25 ns a draw
    against the kernel's 3, for a small bootstrap (tiering.pick chooses)."""
    high = np.repeat(size, size)  # per position: its group's size
    unit = (draws * high).astype(np.int64)
    np.minimum(unit, high - 1, out=unit)
    unit += np.repeat(first, size)
    totals = np.empty((draws.shape[0], first.shape[0], counts.shape[1]), np.int64)
    for j in range(counts.shape[1]):
        totals[:, :, j] = np.add.reduceat(counts[:, j][unit], first, axis=1)
    return totals


# the per-unit counts a resample sums, in ``resample_totals``' last axis
RESAMPLED_COUNTS = ("congestion", "congestion_as_wireless", "wireless", "wireless_as_congestion")


@njit(cache=True)
def resample_totals(draws, first, size, counts):
    """For each resample (a row of ``draws``, uniform in [0, 1) per position) and each group
    (units ``first .. first + size``, laid end to end in group order): each of the group's
    positions draws unit ``first + min(int(draw * size), size - 1)``, and the group sums its
    drawn units' ``counts`` (four columns). Shape (resamples, groups, 4). One pass, the sums in
    registers: numpy's (resamples x positions) temporaries, four gathers and reductions a
    chunk, took 3 of a 2 M-packet capture's 7 s of ``score``."""
    m = draws.shape[0]
    groups = first.shape[0]
    totals = np.zeros((m, groups, 4), np.int64)
    for r in range(m):
        for g in range(groups):
            a, k = first[g], size[g]
            s0 = s1 = s2 = s3 = 0
            for p in range(a, a + k):
                pick = np.int64(draws[r, p] * k)
                unit = a + (pick if pick < k else k - 1)
                s0 += counts[unit, 0]
                s1 += counts[unit, 1]
                s2 += counts[unit, 2]
                s3 += counts[unit, 3]
            totals[r, g, 0] = s0
            totals[r, g, 1] = s1
            totals[r, g, 2] = s2
            totals[r, g, 3] = s3
    return totals


# --- averages over flows -------------------------------------------------------------------


def _mean(losses: _Losses, keys: tuple[str, ...]) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Per-flow metrics averaged over the group's flows (NaN flows skipped); counts summed."""
    per_flow, flow_codes, _ = _pooled(losses, BY["flow"])
    gid, group_codes = _group_ids(flow_codes, keys)
    ng = len(next(iter(group_codes.values())))
    out = _key_frame(group_codes, losses.labels)
    out["flows"] = np.bincount(gid, minlength=ng).astype(np.int64)
    for name in COUNTS:
        out[name] = np.bincount(gid, weights=per_flow[name].to_numpy(), minlength=ng).astype(np.int64)
    for name in METRICS:
        values = per_flow[name].to_numpy(np.float64)
        defined = ~np.isnan(values)
        total = np.bincount(gid, weights=np.where(defined, values, 0.0), minlength=ng)
        out[name] = _ratio(total, np.bincount(gid, weights=defined, minlength=ng))
    return out, group_codes


# --- true loss rates -----------------------------------------------------------------------


def _rate_columns(
    out: pd.DataFrame, group_codes: dict[str, np.ndarray], losses: _Losses, summary: pd.DataFrame, by: str
) -> None:
    """congestion_rate and wireless_rate of the group's flows, from the timeline summary."""
    if not isinstance(summary, pd.DataFrame):
        raise UsageError(f"score: summary must be a DataFrame, not {type(summary).__name__}")
    missing = [c for c in SUMMARY_REQUIRED if c not in summary.columns]
    if missing:
        raise UsageError(
            f"score: the summary has no column {', '.join(map(repr, missing))} "
            f"(it needs {', '.join(SUMMARY_REQUIRED)}; trace is optional)"
        )
    traces = losses.labels["trace"]
    if "trace" in summary.columns:
        s_trace = summary["trace"].astype(str).to_numpy(object)
        if traces == [""] and len(set(s_trace)) == 1:
            s_trace = np.full(len(summary), "", dtype=object)  # decisions of one unnamed trace
    elif len(traces) == 1:
        s_trace = np.full(len(summary), traces[0], dtype=object)
    else:
        raise UsageError("score: the decisions cover several traces, so the summary needs a 'trace' column")
    try:
        numbers = {c: summary[c].to_numpy(np.float64) for c in ("sent", "unobserved", CONGESTION, WIRELESS)}
    except (TypeError, ValueError):
        raise UsageError("score: summary columns sent, unobserved, congestion, wireless must be numbers") from None
    numbers["known"] = numbers["sent"] - numbers["unobserved"]

    trace_pos = {label: i for i, label in enumerate(traces)}
    flow_pos = {label: i for i, label in enumerate(losses.labels["flow"])}
    t = np.array([trace_pos.get(x, -1) for x in s_trace], dtype=np.int64)
    f = np.array([flow_pos.get(str(x), -1) for x in summary["flow"]], dtype=np.int64)
    sizes = (len(traces), len(losses.labels["flow"]))
    known_pair = (t >= 0) & (f >= 0)
    have = np.ravel_multi_index((t[known_pair], f[known_pair]), sizes)
    absent = np.setdiff1d(np.ravel_multi_index((losses.trace, losses.flow), sizes), have)
    if len(absent):
        ti, fi = np.unravel_index(absent[0], sizes)
        where = f" of trace {traces[ti]!r}" if traces != [""] else ""
        raise UsageError(
            f"score: the summary has no row for flow {losses.labels['flow'][fi]!r}{where} "
            f"({len(absent)} flow(s) with losses missing)"
        )
    keep = t >= 0  # summary rows of traces that were scored
    if by == "flow":
        keep &= f >= 0
        row_key = np.ravel_multi_index((t[keep], f[keep]), sizes)
        out_key = np.ravel_multi_index((group_codes["trace"], group_codes["flow"]), sizes)
    elif by == "trace":
        row_key, out_key = t[keep], group_codes["trace"]
    else:
        row_key, out_key = np.zeros(int(keep.sum()), np.int64), np.zeros(len(out), np.int64)
    # every group has a flow with losses, and the summary has a row for each such flow
    uniq, inverse = np.unique(row_key, return_inverse=True)
    at = np.searchsorted(uniq, out_key)
    known = np.bincount(inverse, weights=numbers["known"][keep], minlength=len(uniq))[at]
    for name, cause in (("congestion_rate", CONGESTION), ("wireless_rate", WIRELESS)):
        lost = np.bincount(inverse, weights=numbers[cause][keep], minlength=len(uniq))[at]
        out[name] = _ratio(lost, known)
    if "weak_labels" in summary.columns:  # losses whose cause came from a rule (io.labels)
        weak = pd.to_numeric(summary["weak_labels"], errors="coerce").fillna(0).to_numpy(np.float64)
        out["weak_labels"] = np.bincount(inverse, weights=weak[keep], minlength=len(uniq))[at].astype(np.int64)


def _scored_flows_column(out: pd.DataFrame, summary: pd.DataFrame, width: int = 80) -> None:
    """``flows_scored``: the flows a group pools, named (by trace, as many as fit in ``width``
    characters, then a count) or counted (pooled), so that no table hides what it pooled."""
    traces = summary["trace"].astype(str) if "trace" in summary.columns else pd.Series("", index=summary.index)
    flows = summary["flow"].astype(str)
    if "trace" in out.columns:
        named = {}
        for trace, group in flows.groupby(traces.to_numpy(), sort=False):
            labels = natural_sorted(group.unique())
            shown = [label for k, label in enumerate(labels) if len(", ".join(labels[: k + 1])) <= width] or labels[:1]
            more = f" and {len(labels) - len(shown)} more" if len(shown) < len(labels) else ""
            named[trace] = ", ".join(shown) + more
        out["flows_scored"] = out["trace"].astype(str).map(named).fillna("")
    else:
        n_traces = traces.nunique()
        out["flows_scored"] = f"{len(set(zip(traces, flows)))} flows" + (
            f" of {n_traces} traces" if n_traces > 1 else ""
        )


# --- modeled throughput --------------------------------------------------------------------

THROUGHPUT_COLUMNS = ("thput", "vs_omniscient", "vs_unaware")
THROUGHPUT_REQUIRED = ("lda", "controller", "flow", "capacity_bps", *THROUGHPUT_COLUMNS)  # trace is optional
FAIRNESS_COLUMNS = ("fairness_std", "jain")

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


def _throughput_columns(out: pd.DataFrame, throughput: pd.DataFrame, by: str) -> pd.DataFrame:
    """Join a controller replay's per-flow summary onto the score rows (module docstring)."""
    if not isinstance(throughput, pd.DataFrame):
        raise UsageError(f"score: throughput must be a DataFrame, not {type(throughput).__name__}")
    missing = [c for c in THROUGHPUT_REQUIRED if c not in throughput]
    if missing:
        raise UsageError(
            f"score: the throughput table has no column {', '.join(map(repr, missing))} (pass ReplayResult.summary)"
        )
    controllers = pd.unique(throughput["controller"].astype(str))
    if len(controllers) != 1:
        raise UsageError(f"score: throughput must come from one controller, not {', '.join(controllers)}")
    t = throughput.astype({"lda": str, "flow": str}).copy()
    traces = sorted(set(out["trace"].astype(str))) if "trace" in out else [""]
    if "trace" not in t:
        if len(traces) > 1:
            raise UsageError("score: several traces are scored, so the throughput table needs a 'trace' column")
        t["trace"] = traces[0]
    t["trace"] = t["trace"].astype(str)
    t["bps"] = t["thput"] * t["capacity_bps"]
    keys = list(BY[by])
    table = t.groupby(keys, sort=False)[list(THROUGHPUT_COLUMNS)].mean()
    if by != "flow":
        per_trace = t.groupby(["trace", "lda"], sort=False)
        sizes = per_trace.size()  # the groups, in the order ngroup numbers them
        deviation, jain = fairness_by_group(t["bps"].to_numpy(), per_trace.ngroup().to_numpy(), len(sizes))
        fair = pd.DataFrame({"fairness_std": deviation, "jain": jain}, index=sizes.index)
        fair = fair if by == "trace" else fair.groupby("lda").mean()
        table = table.join(fair)
    key_frame = out[keys].astype(str)
    joined = key_frame.join(table, on=keys)
    result = out.copy()
    result.insert(len(keys), "controller", controllers[0])
    for column in joined.columns.difference(keys, sort=False):
        result[column] = joined[column].to_numpy()
    result["ignored_congestion"] = rests_on_ignored_congestion(result["M_c"], result["vs_omniscient"])
    return result


def rests_on_ignored_congestion(m_c, vs_omniscient) -> np.ndarray:
    """Whether a modeled throughput rests on congestion the LDA ignored: above the omniscient
    receiver's, which counts exactly the congestion losses, while calling some congestion losses
    wireless (M_c > 0). Open loop the trace's queue stays as it was; closed loop such a sender
    fills the queue and loses more (``docs/controllers.md``, the closed loop)."""
    m_c = np.asarray(m_c, dtype=float)
    gain = np.asarray(vs_omniscient, dtype=float)
    return (m_c > 0) & (gain > 1.0)
