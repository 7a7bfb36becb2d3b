"""Training and honest evaluation of the learned LDA (``ldanalyze/lda/learned/``).

The API: ``features`` (what the model sees of each gap), ``analyse`` (a labelled trace read
once), ``fit``, ``evaluate`` and ``verdicts``. ``train`` fits a classifier on the gaps of labelled traces (ns-2 traces, vantage chains,
traces with a labels file). ``evaluate`` runs grouped cross-validation: the traces are split by
scenario (``groups``, e.g. topology), each group in turn is held out, the model is trained on
the others and scored on the held-out traces' losses next to the LDAs it is compared with on
the very same losses, so that no trace ever has packets on both sides: every heuristic of the
registry that can run on the traces (``compared``), and the two trivial baselines, every loss
congestion (``unaware``) and every loss wireless (``all wireless``). The verdict per group is
"beats" only when the learned LDA's 95 % Wilson interval on accuracy lies wholly above the
best of them all's, and it says so where the learned LDA does no better than the better
trivial baseline. A policer's drops are scored as congestion there, as the labels train them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .errors import UsageError, renamed_keyword
from .io import read_trace
from .lda import DECISION_DTYPE, LDA, REGISTRY, Replay, classify, parse_ldas, runnable_ldas
from .lda.base import Features, take
from .lda.learned import calls, family_confidence, judge
from .lda.learned.calibration import fit_calibration, training_range
from .lda.learned.calibration import group_of as radio_group
from .lda.learned.features import FEATURES, gap_features, gap_labels
from .lda.learned.models import make_model
from .packets import CONGESTION
from .scoring import score
from .specs import asks_for_all
from .timeline import build_timeline

ALL_WIRELESS = "all wireless"  # the trivial baseline no LDA of the registry is: every loss called wireless
BASELINES = {"unaware": "calling every loss congestion", ALL_WIRELESS: "calling every loss wireless"}
NOT_COMPARED = ("omniscient", "learned")  # the truth itself; the LDA under evaluation


def compared(ldas=None) -> tuple[list[LDA], set[str]]:
    """The LDAs the learned one is compared with (``unaware`` always among them, for the
    trivial baselines), and the specs among them that may be left out of a trace they cannot
    run on. ``ldas``: ``"all"`` or None, alone or beside other specs (``all,biaz:upper=1.4``),
    brings in every LDA of the registry but ``NOT_COMPARED``, those the other commands' ``all``
    leaves out (``policer``, ``macseq``) too, each left out where it cannot run; named, an LDA
    must run, and ``omniscient`` or ``learned`` is refused."""
    chosen = parse_ldas(ldas)
    optional: set[str] = set()
    if asks_for_all(ldas):
        every = [cls() for name, cls in REGISTRY.items() if name not in NOT_COMPARED]
        optional = {lda.spec for lda in every}
        chosen = [lda for lda in chosen if lda.name not in NOT_COMPARED]
        chosen += [lda for lda in every if lda.spec not in {c.spec for c in chosen}]
    refused = [lda.spec for lda in chosen if lda.name in NOT_COMPARED]
    if refused:
        raise UsageError(
            f"evaluate compares the learned LDA it trains with other LDAs; {', '.join(refused)} cannot be "
            "one of them (omniscient is the truth; score another model file with score --lda learned:model=...)"
        )
    unaware = [lda for lda in chosen if lda.spec == "unaware"] or parse_ldas("unaware")
    return unaware + [lda for lda in chosen if lda.spec != "unaware"], optional


@dataclasses.dataclass
class Labelled:
    """One labelled trace, analysed once: its gap features and labels, and the decisions of the
    LDAs compared on its losses (``classify`` rows); ``left_out``: those that cannot run on it
    (spec: why)."""

    name: str
    features: pd.DataFrame
    labels: np.ndarray
    decisions: pd.DataFrame
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)


@renamed_keyword("replay", "semantics", since="0.5.0")
def features(timeline, semantics: Replay | None = None) -> pd.DataFrame:
    """The learned LDA's features of every gap of ``timeline`` (one row per gap, in gap order;
    NaN where no arrival decides it): what the model sees (``docs/learned.md``)."""
    return gap_features(Features.of(timeline, semantics or Replay()))


@renamed_keyword("replay", "semantics", since="0.5.0")
def analyse(source, *, semantics: Replay | None = None, ldas=None, **read_options) -> Labelled:
    """Features, labels and the decisions of the LDAs compared (``compared(ldas)``) of one
    trace (a path or a Trace)."""
    trace = read_trace(source, **read_options) if not hasattr(source, "packets") else source
    timeline = build_timeline(trace)
    chosen, optional = compared(ldas)
    left_out: dict[str, str] = {}
    try:
        runnable = runnable_ldas(timeline, chosen, optional=optional, left_out=left_out)
    except UsageError as exc:  # an LDA named that cannot run on this trace
        raise UsageError(f"{trace.path}: {exc}") from None
    decisions = classify(timeline, runnable, semantics=semantics).assign(trace=str(trace.path))
    return Labelled(str(trace.path), features(timeline, semantics), gap_labels(timeline), decisions, left_out)


def left_out(labelled: Iterable[Labelled]) -> dict[str, tuple[int, str]]:
    """The LDAs left out of some traces (spec: how many traces, why on the first), so not
    compared on a held-out group that holds one of those."""
    out: dict[str, tuple[int, str]] = {}
    for item in labelled:
        for spec, why in item.left_out.items():
            count, first = out.get(spec, (0, why))
            out[spec] = (count + 1, first)
    return out


def decided(features: pd.DataFrame) -> np.ndarray:
    """The gaps an arrival decides: those with any feature (``gap_features`` leaves the others
    wholly NaN)."""
    return features.notna().any(axis=1).to_numpy()


def rows(labelled: Iterable[Labelled]) -> tuple[np.ndarray, np.ndarray, int]:
    """Training matrix and labels: the decided gaps with a known cause."""
    x, y, _ = _rows_of_traces(labelled)
    return x, y, int(y.shape[0])


def _rows_of_traces(labelled: Iterable[Labelled]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rows``, with the index of the trace each row comes from."""
    xs, ys, traces = [], [], []
    for k, item in enumerate(labelled):
        keep = np.isfinite(item.labels) & decided(item.features)
        xs.append(item.features.to_numpy()[keep])
        ys.append(item.labels[keep].astype(np.int64))
        traces.append(np.full(int(keep.sum()), k))
    x = np.concatenate(xs) if xs else np.empty((0, len(FEATURES)))
    y = np.concatenate(ys) if ys else np.empty(0, np.int64)
    return x, y, np.concatenate(traces) if traces else np.empty(0, np.int64)


def group_weights(groups: np.ndarray) -> np.ndarray:
    """Per training row, the weight that gives every group (e.g. every link layer) the same
    total weight whatever its number of gaps, the mean weight staying 1: a family with many
    gaps then does not drown the others' patterns (measured in docs/learned.md)."""
    names, group, counts = np.unique(groups, return_inverse=True, return_counts=True)
    return groups.shape[0] / (names.shape[0] * counts[group])


def fit(labelled: Sequence[Labelled], kind: str = "gbt", seed: int = 0, balance: Sequence[str] | None = None):
    """A classifier (``make_model(kind)``) fitted on the labelled gaps; (model, gaps used).
    ``balance``: a group name per trace; each group then weighs the same (``group_weights``)."""
    x, y, trace = _rows_of_traces(labelled)
    count = int(y.shape[0])
    if count == 0:
        raise UsageError("no gap with a known cause to learn from: give labelled traces (ns-2, chains, labels files)")
    if np.unique(y).shape[0] < 2:
        raise UsageError(f"every one of the {count} labelled gaps has the same cause; a classifier needs both")
    if balance is not None and len(balance) != len(labelled):
        raise UsageError(f"{len(labelled)} traces but {len(balance)} groups to balance: give each trace its group")
    model = make_model(kind, seed)
    # a feature no training gap has (e.g. ``compressed`` on short flows) carries nothing; the
    # binning of the trees and the imputer of the others fail on it, so it is fitted as a constant
    x[:, ~np.isfinite(x).any(axis=0)] = 0.0
    if balance is None:
        model.fit(x, y)
    else:
        weights = group_weights(np.asarray(balance, dtype=object)[trace].astype(str))
        step = {"gbt": "", "rf": "forest__", "logistic": "logistic__"}[kind]  # a pipeline's last step takes them
        model.fit(x, y, **{f"{step}sample_weight": weights})
    return model, count


def fit_held_out(
    labelled: Sequence[Labelled], families: Sequence[str], kind: str = "gbt", seed: int = 0
) -> dict[str, object]:
    """Per family of ``families`` (one name per trace), the classifier ``fit`` makes without that
    family's traces, the others weighing the same: what the learned LDA judges a call's reliance
    on one family by (``lda.learned``). Empty with fewer than three families (a set trained on
    one family alone says nothing of the others)."""
    names = sorted(set(families))
    if len(families) != len(labelled):
        raise UsageError(f"{len(labelled)} traces but {len(families)} families: give each trace its family")
    if len(names) < 3:
        return {}
    out = {}
    for name in names:
        keep = [k for k, f in enumerate(families) if f != name]
        try:
            out[name], _ = fit([labelled[k] for k in keep], kind, seed, [families[k] for k in keep])
        except UsageError as error:
            raise UsageError(f"the model without the traces of {name}: {error}") from None
    return out


def _calls_per_gap(item: Labelled, name: str, said: np.ndarray) -> pd.DataFrame:
    """``classify`` rows named ``name`` on ``item``'s losses: each detected loss called as
    ``said`` (one decision per gap) says; laid on ``unaware``'s rows, which every trace has."""
    base = item.decisions[item.decisions["lda"] == "unaware"].copy()
    gap = base["gap"].to_numpy(np.int64)
    detected = base["decision"].astype(str).to_numpy() != "undetected"
    base["decision"] = pd.Categorical(
        np.where(detected, take(said, gap, "undetected"), "undetected"), dtype=DECISION_DTYPE
    )
    base["lda"] = name
    return base


def all_wireless(item: Labelled) -> pd.DataFrame:
    """``classify`` rows of the trivial baseline that calls every loss wireless (``ALL_WIRELESS``)."""
    return _calls_per_gap(item, ALL_WIRELESS, np.full(len(item.features), "wireless"))


def learned_decisions(
    item: Labelled, model, abstain_below: float = 0.5, calibration: dict | None = None, held_out: Sequence = ()
) -> pd.DataFrame:
    """``classify`` rows of the learned LDA on ``item``'s losses, from ``model``'s predictions
    and those of its ``held_out`` models (``fit_held_out``), through ``calibration`` (a map of
    ``calibration.fit_calibration``; none: the trees' own) and the model's training range, as
    ``Learned`` judges them (``judge``); below ``abstain_below`` (the probability of its call) it
    abstains, and the rows are then named ``learned:abstain_below=...``."""
    return learned_decisions_at(item, model, [abstain_below], calibration, held_out)[0]


def learned_decisions_at(
    item: Labelled, model, thresholds: Sequence[float], calibration: dict | None = None, held_out: Sequence = ()
) -> list[pd.DataFrame]:
    """``learned_decisions`` at each of ``thresholds``, the models' predictions made once."""
    x = item.features.to_numpy()
    bundle = {"calibration": calibration or {}, "ranges": training_range(model)}
    p, sets = probability(model, x), held_out_matrix(held_out, x)
    out = []
    for below in thresholds:
        wireless, _, abstained, _ = judge(p, x, bundle, below, sets)
        said = np.where(abstained, "abstained", np.where(wireless, "wireless", "congestion"))
        out.append(_calls_per_gap(item, "learned" if below <= 0.5 else f"learned:abstain_below={below:g}", said))
    return out


def probability(model, features: np.ndarray) -> np.ndarray:
    """``model``'s probability of the radio per row of features (NaN where no arrival decides
    the gap: ``decided``)."""
    out = np.full(features.shape[0], np.nan)
    called = np.isfinite(features).any(axis=1)
    if called.any():
        out[called] = model.predict_proba(features[called])[:, list(model.classes_).index(1)]
    return out


def held_out_matrix(models: Sequence, features: np.ndarray) -> np.ndarray:
    """Each of ``models``' probability of the radio per row of features (K × rows), as ``judge``
    takes it."""
    return np.array([probability(m, features) for m in models]).reshape(len(models), features.shape[0])


def gap_causes(item: Labelled) -> tuple[np.ndarray, np.ndarray]:
    """Per gap of ``item``: its losses of a known cause, and how many of those were the radio's
    (a policer's drops count as congestion, as the labels have them)."""
    rows = item.decisions[item.decisions["lda"] == "unaware"]
    gap = rows["gap"].to_numpy(np.int64)
    cause = rows["cause"].astype(str).to_numpy()
    known = (gap >= 0) & np.isin(cause, ("congestion", "wireless", "policing"))
    n = len(item.features)
    return (
        np.bincount(gap[known], minlength=n).astype(np.float64),
        np.bincount(gap[known], weights=cause[known] == "wireless", minlength=n),
    )


def held_out_probabilities(
    labelled: Sequence[Labelled], groups: Sequence[str], kind: str = "gbt", seed: int = 0, sets: bool = False
) -> list[np.ndarray]:
    """Per trace, the probability of the radio per gap from trees trained without its group
    (each group held out in turn, the others weighing the same, as ``traces/train_learned``
    trains): predictions on data held out from training, for ``calibration``. With ``sets``, a
    (1 + K) × gaps array per trace: those trees' probability, then the K probabilities of their
    own held-out models (``fit_held_out`` on the same training groups), as a model trained with
    its families is judged."""
    out: list[np.ndarray] = [np.empty(0)] * len(labelled)
    for held in sorted(set(groups)):
        train = [item for item, g in zip(labelled, groups) if g != held]
        names = [g for g in groups if g != held]
        model, _ = fit(train, kind, seed, names)
        others = list(fit_held_out(train, names, kind, seed).values()) if sets else None
        for k, (item, g) in enumerate(zip(labelled, groups)):
            if g == held:
                x = item.features.to_numpy()
                out[k] = (
                    probability(model, x)
                    if others is None
                    else np.vstack([probability(model, x)[None], held_out_matrix(others, x)])
                )
    return out


def calibration(
    labelled: Sequence[Labelled], groups: Sequence[str], probabilities: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """The calibration map (``calibration.fit_calibration``) of the calls that ``probabilities``
    make (per trace, per gap: from a model that never saw the trace, e.g.
    ``held_out_probabilities``; with held-out sets, each call's confidence their median and the
    calls deferred to mBiaz left out, as ``judge`` maps them) against the share of each gap's
    losses its call got right, each gap weighing its losses of a known cause and each group the
    same in all: the map is fitted to the losses, the unit every score counts."""
    confidence, right, weight, group, family = [], [], [], [], []
    for item, g, prob in zip(labelled, groups, probabilities):
        known, radio = gap_causes(item)
        prob = np.atleast_2d(prob)
        wireless, sure, _ = calls(prob[0], 0.5)
        sure, deferred = family_confidence(wireless, sure, prob[1:])
        with np.errstate(invalid="ignore", divide="ignore"):
            right.append(np.where(wireless, radio, known - radio) / known)
        confidence.append(sure)
        weight.append(np.where(deferred, 0.0, known))
        group.append(radio_group(item.features.to_numpy()))
        family.append(np.full(known.shape[0], g, dtype=object))
    weights, families = np.concatenate(weight), np.concatenate(family).astype(str)
    names, index = np.unique(families, return_inverse=True)
    totals = np.bincount(index, weights=weights)
    balanced = weights / np.where(totals > 0, totals, 1.0)[index] * weights.sum() / max(len(names), 1)
    return fit_calibration(np.concatenate(confidence), np.concatenate(right), balanced, np.concatenate(group))


def group_of(name: str, pattern: str, option: str = "--group-by") -> str:
    """The scenario group of a trace: the first group (or the whole match) of ``pattern`` in
    its path (``option``: the command-line option that gave it, for the error)."""
    found = re.search(pattern, name)
    if found is None:
        raise UsageError(f"{option} {pattern!r} does not match {name}: every trace needs a group")
    return found.group(1) if found.groups() else found.group(0)


def evaluate(
    labelled: Sequence[Labelled],
    groups: Sequence[str],
    kind: str = "gbt",
    seed: int = 0,
    importance_repeats: int = 3,
    held_out: Sequence[str] | None = None,
    abstain_below: float | None = None,
    balance: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leave-one-group-out cross-validation (module docstring); ``held_out`` names the groups
    to hold out in turn (default: every one; the others only ever train), e.g. one parameter
    range of one family at a time. With ``abstain_below``, the learned LDA is scored a second
    time abstaining below that confidence (its own rows; ``abstained`` counts those losses).
    ``balance``: a group name per trace, each group weighing the same in training (``fit``), and
    the learned LDA judged with its held-out models per such group (``fit_held_out``), as a
    model trained with its families is.

    Returns the scores (one row per held-out group and LDA: losses, M_c, M_w, accuracy with
    Wilson intervals, ``train_gaps``) and the permutation importance of each feature on each
    held-out group (mean drop of the gap accuracy over ``importance_repeats`` shuffles; 0: none).
    """
    from sklearn.inspection import permutation_importance

    if len(groups) != len(labelled):
        raise UsageError(f"{len(labelled)} traces but {len(groups)} groups: give each trace its group")
    names = sorted(set(groups))
    if len(names) < 2:
        raise UsageError(
            f"grouped cross-validation needs two groups or more; the traces form {len(names)}: {', '.join(names)}"
        )
    unknown = sorted(set(held_out or ()) - set(names))
    if unknown:
        raise UsageError(f"no trace is in the group(s) to hold out: {', '.join(unknown)} (groups: {', '.join(names)})")
    scores, importances = [], []
    for held in sorted(held_out) if held_out else names:
        train = [item for item, g in zip(labelled, groups) if g != held]
        test = [item for item, g in zip(labelled, groups) if g == held]
        weighed = None if balance is None else [b for b, g in zip(balance, groups) if g != held]
        model, count = fit(train, kind, seed, weighed)
        sets = list(fit_held_out(train, weighed, kind, seed).values()) if weighed is not None else []
        thresholds = [0.5] + ([abstain_below] if abstain_below is not None and abstain_below > 0.5 else [])
        judged = [learned_decisions_at(item, model, thresholds, held_out=sets) for item in test]
        learned = [frames[k] for k in range(len(thresholds)) for frames in judged]
        names = list(dict.fromkeys(frame["lda"].iat[0] for frame in learned if len(frame)))
        # an LDA left out of one held-out trace is not compared on the group: its losses would differ
        ran = [list(item.decisions["lda"].cat.categories) for item in test]
        others = ["unaware", ALL_WIRELESS] + [
            spec for spec in ran[0] if spec != "unaware" and all(spec in r for r in ran)
        ]
        decisions = pd.concat(
            [item.decisions for item in test] + [all_wireless(item) for item in test] + learned, ignore_index=True
        )
        named = decisions["lda"].astype(str)
        keep = named.isin(others + names).to_numpy()
        decisions = decisions[keep].assign(lda=pd.Categorical(named[keep], categories=[*others, *names]))
        table = score(decisions, by="pooled", bootstrap=0, policing_as=CONGESTION)  # as the labels have it
        scores.append(table.assign(held_out=held, train_gaps=count, test_traces=len(test)))
        x, y, test_count = rows(test)
        if importance_repeats and test_count and np.unique(y).shape[0] == 2:
            found = permutation_importance(model, x, y, n_repeats=importance_repeats, random_state=seed)
            importances.append(
                pd.DataFrame({"held_out": held, "feature": FEATURES, "importance": found.importances_mean})
            )
    table = pd.concat(scores, ignore_index=True)
    columns = [
        "held_out",
        "lda",
        "losses",
        "scored",
        "M_c",
        "M_w",
        "accuracy",
        "accuracy_lo",
        "accuracy_hi",
        "abstained",
        "M_c_lo",
        "M_c_hi",
        "M_w_lo",
        "M_w_hi",
        "train_gaps",
        "test_traces",
    ]
    table = table[[c for c in columns if c in table.columns]]
    return table, (
        pd.concat(importances, ignore_index=True)
        if importances
        else pd.DataFrame(columns=["held_out", "feature", "importance"])
    )


def _standing(learned: pd.Series, other: pd.Series) -> str:
    """Where the learned LDA's accuracy stands against another's: beyond both Wilson intervals,
    ahead within them, or not ahead."""
    if learned["accuracy_lo"] > other["accuracy_hi"]:
        return "beats"
    return "ahead within the intervals" if learned["accuracy"] > other["accuracy"] else "does not beat"


def verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """Per held-out group: the best of the LDAs compared by accuracy (a trivial baseline on a
    tie), the better of the two trivial baselines (``BASELINES``), the learned LDA's standing
    against the best (``standing``: "beats" beyond the intervals, its lower bound above the
    other's upper bound; "ahead within the intervals"; "does not beat"), and the ``verdict``
    ("does not beat xrtp"), which adds that it does no better than the better trivial baseline
    (or is ahead of it only within the intervals) where it does not beat that; with each one's
    M_c and M_w, so that an accuracy won by calling every loss one way shows it."""
    out = []
    for held, mine in table.groupby("held_out", sort=True):
        mine = mine.set_index(mine["lda"].astype(str))
        others = mine[~mine.index.str.startswith("learned") & mine["accuracy"].notna()]
        learned = mine.loc["learned"]
        if others.empty or pd.isna(learned["accuracy"]):
            out.append({"held_out": held, "verdict": "no loss scored"})
            continue
        trivial_rows = others.index.isin(list(BASELINES))
        if not trivial_rows.any():
            raise UsageError(
                f"held out {held}: the scores have no trivial baseline ({', '.join(BASELINES)}) to judge by"
            )
        best = others["accuracy"].idxmax()  # the baselines come first: a tie goes to them
        baseline = others.loc[trivial_rows, "accuracy"].idxmax()
        standing = _standing(learned, others.loc[best])
        verdict = {"beats": f"beats {best}", "does not beat": f"does not beat {best}"}.get(
            standing, f"ahead of {best} within the intervals"
        )
        trivial = _standing(learned, others.loc[baseline])
        if trivial != "beats":
            words = BASELINES[baseline]
            said = (
                f"no better than {words}"
                if trivial == "does not beat"
                else f"ahead of {words} only within the intervals"
            )
            verdict = said if best == baseline else f"{verdict}; {said}"
        out.append(
            {
                "held_out": held,
                "best": best,
                "best_accuracy": others.loc[best, "accuracy"],
                "best_M_c": others.loc[best, "M_c"],
                "best_M_w": others.loc[best, "M_w"],
                "learned_accuracy": learned["accuracy"],
                "learned_M_c": learned["M_c"],
                "learned_M_w": learned["M_w"],
                "margin": learned["accuracy"] - others.loc[best, "accuracy"],
                "baseline": baseline,
                "baseline_accuracy": others.loc[baseline, "accuracy"],
                "compared": len(others),
                "standing": standing,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(out)
