"""Training and honest evaluation of the learned LDA (``ldanalyze/lda/learned/``).

The API: ``features`` (what the model sees of each gap), ``analyse`` (a labelled trace read
once), ``fit``, ``evaluate`` and ``verdicts``. ``train`` fits a classifier on the gaps of labelled traces (ns-2 traces, vantage chains,
traces with a labels file). ``evaluate`` runs grouped cross-validation: the traces are split by
scenario (``groups``, e.g. topology), each group in turn is held out, the model is trained on
the others and scored on the held-out traces' losses next to every heuristic on the very same
losses, so that no trace ever has packets on both sides. The verdict per group is "beats"
only when the learned LDA's 95 % Wilson interval on accuracy lies wholly above the best
heuristic's. A policer's drops are scored as congestion there, as the labels train them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .errors import UsageError, renamed_keyword
from .io import read_trace
from .lda import DECISION_DTYPE, Replay, classify
from .lda.base import Features
from .lda.learned import calls
from .lda.learned.features import FEATURES, gap_features, gap_labels
from .lda.learned.models import make_model
from .packets import CONGESTION
from .scoring import score
from .timeline import build_timeline

HEURISTICS = ("biaz", "mbiaz", "spike", "zigzag", "zbs")


@dataclasses.dataclass
class Labelled:
    """One labelled trace, analysed once: its gap features and labels, and the heuristics'
    decisions on its losses (``classify`` rows)."""

    name: str
    features: pd.DataFrame
    labels: np.ndarray
    decisions: pd.DataFrame


@renamed_keyword("replay", "semantics", since="0.5.0")
def features(timeline, semantics: Replay | None = None) -> pd.DataFrame:
    """The learned LDA's features of every gap of ``timeline`` (one row per gap, in gap order;
    NaN where no arrival decides it): what the model sees (``docs/learned.md``)."""
    return gap_features(Features.of(timeline, semantics or Replay()))


@renamed_keyword("replay", "semantics", since="0.5.0")
def analyse(source, *, semantics: Replay | None = None, **read_options) -> Labelled:
    """Features, labels and heuristic decisions of one trace (a path or a Trace)."""
    trace = read_trace(source, **read_options) if not hasattr(source, "packets") else source
    timeline = build_timeline(trace)
    decisions = classify(timeline, list(HEURISTICS), semantics=semantics).assign(trace=str(trace.path))
    return Labelled(str(trace.path), features(timeline, semantics), gap_labels(timeline), decisions)


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


def learned_decisions(item: Labelled, model, abstain_below: float = 0.5) -> pd.DataFrame:
    """``classify`` rows of the learned LDA on ``item``'s losses, from ``model``'s predictions;
    below ``abstain_below`` (the probability of its call) it abstains, as ``Learned`` does, and
    the rows are then named ``learned:abstain_below=...``."""
    base = item.decisions[item.decisions["lda"] == HEURISTICS[0]].copy()
    features = item.features
    called = decided(features)
    probability = np.full(len(features), np.nan)
    if called.any():
        found = model.predict_proba(features.to_numpy()[called])
        probability[called] = found[:, list(model.classes_).index(1)]
    wireless, _, abstained = calls(probability, abstain_below)
    said = np.where(abstained, "abstained", np.where(wireless, "wireless", "congestion"))
    gap = base["gap"].to_numpy(np.int64)
    detected = base["decision"].astype(str).to_numpy() != "undetected"
    base["decision"] = pd.Categorical(np.where(detected, said[np.maximum(gap, 0)], "undetected"), dtype=DECISION_DTYPE)
    base["lda"] = "learned" if abstain_below <= 0.5 else f"learned:abstain_below={abstain_below:g}"
    return base


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
    ``balance``: a group name per trace, each group weighing the same in training (``fit``).

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
        thresholds = [0.5] + ([abstain_below] if abstain_below is not None and abstain_below > 0.5 else [])
        learned = [learned_decisions(item, model, below) for below in thresholds for item in test]
        decisions = pd.concat([item.decisions for item in test] + learned, ignore_index=True)
        names = list(dict.fromkeys(frame["lda"].iat[0] for frame in learned if len(frame)))
        decisions["lda"] = pd.Categorical(decisions["lda"].astype(str), categories=[*HEURISTICS, *names])
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


def verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """Per held-out group: the best heuristic by accuracy, and whether the learned LDA beats
    it beyond the intervals (its lower bound above the heuristic's upper bound)."""
    out = []
    for held, mine in table.groupby("held_out", sort=True):
        mine = mine.set_index(mine["lda"].astype(str))
        heuristics = mine[~mine.index.str.startswith("learned")]
        best = heuristics["accuracy"].idxmax()
        learned = mine.loc["learned"]
        margin = learned["accuracy"] - heuristics.loc[best, "accuracy"]
        beyond = learned["accuracy_lo"] > heuristics.loc[best, "accuracy_hi"]
        verdict = "beats" if beyond else ("ahead within the intervals" if margin > 0 else "does not beat")
        out.append(
            {
                "held_out": held,
                "best_heuristic": best,
                "best_accuracy": heuristics.loc[best, "accuracy"],
                "learned_accuracy": learned["accuracy"],
                "margin": margin,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(out)
