"""What the LDAs say about the same losses when no truth says which is right.

Most captures have no ground truth: one receiver-side capture of a call. What can be said is how
the LDAs split its losses (``scoring``'s ``wireless_share``) and how far they agree with each
other:

``kappa_matrix``
    Cohen's kappa of every pair of LDAs over the losses both decided (J. Cohen, "A coefficient
    of agreement for nominal scales", 1960): 1 when they call every loss alike, 0 when they
    agree no more than two independent raters with the same shares would, negative below that.
    NaN where it is undefined (no loss decided by both, or both call every loss the same way).
``consensus``
    Per loss, the votes of the LDAs (``congestion_votes``, ``wireless_votes``), the majority
    call (``congestion``, ``wireless``, ``split`` on a tie, ``none`` when no LDA decided it) and
    its ``strength``, the majority's share of the votes (0.5-1).
``agreement``
    Per LDA (and group), the share of its calls that match the majority of the *other* LDAs
    (losses where the others tie or are silent left out), and its mean kappa with the others.
``shares_over_time``
    Each LDA's share of losses called wireless per time window (by the deciding arrival's time).

A consensus is not the truth: LDAs of one family share their blind spots (the delay-based ones
all call a policer's drops, which come without a delay rise, wireless), so a strong consensus of
similar schemes says little. The voters are every LDA given except the baselines (``unaware``
calls every loss congestion; ``omniscient`` knows the truth, which here is unknown).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import UsageError
from .packets import CONGESTION, WIRELESS

BASELINES = ("unaware", "omniscient")
SPLIT = "split"
NONE = "none"
LOSS_KEYS = ("trace", "flow", "uid")


def voters(decisions: pd.DataFrame) -> list[str]:
    """The LDAs of the decisions that vote, in their order: all but the baselines."""
    column = decisions["lda"]
    names = (
        [str(c) for c in column.cat.categories if (column == c).any()]
        if isinstance(column.dtype, pd.CategoricalDtype)
        else list(dict.fromkeys(column.astype(str)))
    )
    return [name for name in names if name not in BASELINES]


def calls(decisions: pd.DataFrame, ldas: list[str] | None = None) -> pd.DataFrame:
    """One row per loss (``trace, flow, uid`` and the first ``t_decide``), one column per voting
    LDA: 1.0 called wireless, 0.0 called congestion, NaN undetected."""
    missing = [c for c in ("flow", "uid", "lda", "decision") if c not in decisions.columns]
    if missing:
        raise UsageError(f"consensus: the decisions table has no column {', '.join(map(repr, missing))}")
    ldas = voters(decisions) if ldas is None else list(ldas)
    d = decisions[decisions["lda"].astype(str).isin(ldas)]
    keys = [k for k in LOSS_KEYS if k in d.columns]
    decision = d["decision"].astype(str).to_numpy()
    value = np.where(decision == WIRELESS, 1.0, np.where(decision == CONGESTION, 0.0, np.nan))
    frame = d[keys].astype({k: str for k in keys if k != "uid"}).assign(lda=d["lda"].astype(str).to_numpy(), call=value)
    table = frame.pivot_table(index=keys, columns="lda", values="call", aggfunc="first", dropna=False, sort=False)
    table = table.reindex(columns=[name for name in ldas if name in table.columns])
    table.columns.name = None
    if "t_decide" in d.columns:
        times = d.assign(**{k: d[k].astype(str) for k in keys if k != "uid"}).groupby(keys, sort=False)["t_decide"]
        table.insert(0, "t_decide", times.min().reindex(table.index).to_numpy())
    return table.reset_index()


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    both = ~(np.isnan(a) | np.isnan(b))
    if not both.any():
        return float("nan")
    a, b = a[both], b[both]
    observed = float(np.mean(a == b))
    pa, pb = float(a.mean()), float(b.mean())
    chance = pa * pb + (1.0 - pa) * (1.0 - pb)
    return float("nan") if chance >= 1.0 else (observed - chance) / (1.0 - chance)


def kappa_matrix(decisions: pd.DataFrame, ldas: list[str] | None = None) -> pd.DataFrame:
    """Cohen's kappa of every pair of voting LDAs (a symmetric LDA × LDA table, 1 on the
    diagonal where an LDA decided anything)."""
    table = calls(decisions, ldas)
    names = [c for c in table.columns if c not in (*LOSS_KEYS, "t_decide")]
    values = {name: table[name].to_numpy(np.float64) for name in names}
    out = pd.DataFrame(np.nan, index=names, columns=names)
    for i, x in enumerate(names):
        for y in names[i:]:
            k = (1.0 if (~np.isnan(values[x])).any() else np.nan) if x == y else _kappa(values[x], values[y])
            out.loc[x, y] = out.loc[y, x] = k
    return out


def consensus(decisions: pd.DataFrame, ldas: list[str] | None = None) -> pd.DataFrame:
    """Per loss: the votes, the majority call and its strength (module docstring)."""
    table = calls(decisions, ldas)
    names = [c for c in table.columns if c not in (*LOSS_KEYS, "t_decide")]
    votes = table[names].to_numpy(np.float64) if names else np.zeros((len(table), 0))
    wireless = np.nansum(votes == 1.0, axis=1).astype(np.int64)
    congestion = np.nansum(votes == 0.0, axis=1).astype(np.int64)
    out = table.drop(columns=names)
    out["congestion_votes"], out["wireless_votes"] = congestion, wireless
    out["consensus"] = np.select(
        [wireless > congestion, congestion > wireless, wireless + congestion > 0], [WIRELESS, CONGESTION, SPLIT], NONE
    )
    total = wireless + congestion
    out["strength"] = np.where(total > 0, np.maximum(wireless, congestion) / np.maximum(total, 1), np.nan)
    return out


def majority_line(votes: pd.DataFrame, voters: int) -> str:
    """One sentence on ``consensus``'s table: the majority calls, how many are strong (80 % of
    the votes or more), and the caveat that goes with them wherever they are shown."""
    counts = votes["consensus"].value_counts()
    strong = int((votes["strength"] >= 0.8).sum())
    return (
        f"Majority of {voters} LDAs per loss: wireless {int(counts.get(WIRELESS, 0))}, congestion "
        f"{int(counts.get(CONGESTION, 0))}, tied {int(counts.get(SPLIT, 0))}; {strong} of {len(votes)} losses "
        "with 80 % of the votes or more. A majority is not the truth: schemes of one family share their blind "
        "spots (a policer's drops come without a delay rise, which delay-based LDAs call wireless)."
    )


def agreement(decisions: pd.DataFrame, by: tuple[str, ...] = (), ldas: list[str] | None = None) -> pd.DataFrame:
    """Per group (``by``: columns of the decisions, e.g. ``("trace",)``; none: all pooled) and
    voting LDA: ``called`` (losses it decided), ``compared`` (those where the other LDAs have a
    majority: not tied, not silent), ``agrees_with_others`` (the share of the compared whose
    majority it matches) and ``mean_kappa`` with the other LDAs."""
    if by:
        parts = [
            _agreement(group, ldas).assign(**dict(zip(by, key if isinstance(key, tuple) else (key,))))
            for key, group in decisions.groupby(list(by), sort=False, observed=True)
        ]
        columns = [*by, *AGREEMENT_COLUMNS]
        return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
    return _agreement(decisions, ldas)


AGREEMENT_COLUMNS = ["lda", "called", "compared", "agrees_with_others", "mean_kappa"]


def _agreement(decisions: pd.DataFrame, ldas: list[str] | None) -> pd.DataFrame:
    table = calls(decisions, ldas)
    names = [c for c in table.columns if c not in (*LOSS_KEYS, "t_decide")]
    votes = table[names].to_numpy(np.float64) if names else np.zeros((len(table), 0))
    wireless = np.nansum(votes == 1.0, axis=1)
    congestion = np.nansum(votes == 0.0, axis=1)
    kappa = kappa_matrix(decisions, names) if names else pd.DataFrame()
    rows = []
    for j, name in enumerate(names):
        own = votes[:, j]
        decided = ~np.isnan(own)
        others_w = wireless - (own == 1.0)
        others_c = congestion - (own == 0.0)
        majority = np.where(others_w > others_c, 1.0, np.where(others_c > others_w, 0.0, np.nan))
        compared = decided & ~np.isnan(majority)
        others = kappa.loc[name].drop(index=name)
        rows.append(
            {
                "lda": name,
                "called": int(decided.sum()),
                "compared": int(compared.sum()),
                "agrees_with_others": float(np.mean(own[compared] == majority[compared])) if compared.any() else np.nan,
                "mean_kappa": float(others.mean()) if others.notna().any() else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def shares_over_time(decisions: pd.DataFrame, window: float | None = None, *, windows: int = 20) -> pd.DataFrame:
    """Per voting LDA and time window (``window`` seconds; by default the decided losses' span
    cut into ``windows``): ``t_start``, ``called`` and ``wireless_share`` (NaN where none was
    called), over every flow of the decisions. Where some causes are known, a first row
    ``truth`` gives the true share of the losses of known cause."""
    if "t_decide" not in decisions.columns:
        raise UsageError("shares_over_time: the decisions table has no column 't_decide'")
    d = decisions[decisions["lda"].astype(str).isin(voters(decisions))]
    decision = d["decision"].astype(str).to_numpy()
    called = (decision == WIRELESS) | (decision == CONGESTION)
    t = d["t_decide"].to_numpy(np.float64)
    known = called & np.isfinite(t)
    if not known.any():
        return pd.DataFrame(columns=["lda", "t_start", "called", "wireless_share"])
    start, end = float(t[known].min()), float(t[known].max())
    if window is None:
        window = max(end - start, 1e-9) / windows
    if not window > 0:
        raise UsageError(f"shares_over_time: the window must be a positive number of seconds, not {window!r}")
    n_bins = int(np.floor((end - start) / window)) + 1
    bins = np.minimum(((t[known] - start) // window).astype(np.int64), n_bins - 1)
    lda = d["lda"].astype(str).to_numpy()[known]
    wireless = decision[known] == WIRELESS
    names = voters(d)
    if "cause" in d.columns and names:
        cause = d["cause"].astype(str).to_numpy()[known]
        true = (lda == names[0]) & np.isin(cause, (CONGESTION, WIRELESS))  # each loss once: one LDA's rows
        if true.any():
            lda = np.concatenate([np.where(true, "truth", "")[true], lda])
            wireless = np.concatenate([cause[true] == WIRELESS, wireless])
            bins = np.concatenate([bins[true], bins])
            names = ["truth", *names]
    rows = []
    for name in names:
        mine = lda == name
        n = np.bincount(bins[mine], minlength=n_bins)
        w = np.bincount(bins[mine], weights=wireless[mine], minlength=n_bins)
        share = np.full(n_bins, np.nan)
        np.divide(w, n, out=share, where=n > 0)
        rows.append(
            pd.DataFrame(
                {"lda": name, "t_start": start + window * np.arange(n_bins), "called": n, "wireless_share": share}
            )
        )
    return pd.concat(rows, ignore_index=True)
