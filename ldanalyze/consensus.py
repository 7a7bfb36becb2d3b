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
    _check_columns(decisions)
    ldas = voters(decisions) if ldas is None else list(ldas)
    keys = [k for k in LOSS_KEYS if k in decisions.columns]
    column = _voter_columns(decisions, ldas)
    d = decisions[column >= 0]
    column = column[column >= 0]
    loss, first = _loss_ids([_codes(d[k]) for k in keys])
    votes = _votes(d, loss, len(first), column, len(ldas))
    present = np.bincount(column, minlength=len(ldas)) > 0
    index_frame = d[keys].iloc[first].astype({k: str for k in keys if k != "uid"})
    index = pd.MultiIndex.from_frame(index_frame) if len(keys) > 1 else pd.Index(index_frame[keys[0]])
    table = pd.DataFrame(votes[:, present], index=index, columns=[n for n, p in zip(ldas, present) if p])
    if "t_decide" in d.columns:
        first_time = pd.Series(d["t_decide"].to_numpy(np.float64)).groupby(loss).min()
        table.insert(0, "t_decide", first_time.to_numpy())
    return table.reset_index()


def _check_columns(decisions: pd.DataFrame) -> None:
    missing = [c for c in ("flow", "uid", "lda", "decision") if c not in decisions.columns]
    if missing:
        raise UsageError(f"consensus: the decisions table has no column {', '.join(map(repr, missing))}")


def _codes(column: pd.Series) -> np.ndarray:
    """Integers equal where a key column's values are (NaN a value of its own): a categorical's
    codes, else its values factorized. Hashing text per decision cost half a second on a trace
    of 380 000 decisions; the loss keys' text is made once per loss."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(np.int64)
    return pd.factorize(column, use_na_sentinel=False)[0].astype(np.int64)


def _loss_ids(codes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's loss (its key columns' ``codes`` together), numbered in order of first
    appearance as a groupby's ``ngroup`` (sort=False), and the first row of each loss."""
    loss = np.zeros(len(codes[0]) if codes else 0, np.int64)
    for code in codes:
        if len(code):
            code = code - code.min()
            loss = pd.factorize(loss * (int(code.max()) + 1) + code)[0]
    first = np.flatnonzero(np.diff(np.maximum.accumulate(loss), prepend=-1) > 0)
    return loss, first


def _voter_columns(decisions: pd.DataFrame, ldas: list[str]) -> np.ndarray:
    """Each decision's LDA as its place in ``ldas`` (-1: not a voter), read through the
    column's categories."""
    code, names = _text_codes(decisions["lda"])
    place = {name: k for k, name in enumerate(ldas)}
    return np.array([place.get(name, -1) for name in names] + [-1], np.int64)[code]


def _call_values(decisions: pd.DataFrame) -> np.ndarray:
    """Each decision's call: 1.0 wireless, 0.0 congestion, NaN undetected."""
    code, names = _text_codes(decisions["decision"])
    value = {WIRELESS: 1.0, CONGESTION: 0.0}
    return np.array([value.get(name, np.nan) for name in names] + [np.nan])[code]


def _text_codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """A column's codes (-1 for NaN) and the text of each code."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(np.int64), [str(c) for c in column.cat.categories]
    code, names = pd.factorize(column)
    return code.astype(np.int64), [str(c) for c in names]


def _votes(d: pd.DataFrame, loss: np.ndarray, losses: int, column: np.ndarray, width: int) -> np.ndarray:
    """One row per loss, one column per voter: the first call it made on the loss (NaN: none)."""
    call = _call_values(d)
    votes = np.full((losses, width), np.nan)
    called = ~np.isnan(call) & (column >= 0)
    # the first call an LDA made on a loss: the last written wins, so write them last to first
    order = np.flatnonzero(called)[::-1]
    votes[loss[order], column[order]] = call[order]
    return votes


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


def kappa_matrix(decisions: pd.DataFrame, ldas: list[str] | None = None) -> pd.DataFrame:
    """Cohen's kappa of every pair of voting LDAs (a symmetric LDA × LDA table, 1 on the
    diagonal where an LDA decided anything)."""
    counts = agreement_counts(decisions, (), ldas)
    own = (counts["lda"] == counts["other"]).to_numpy()
    names = counts.loc[own, "lda"].tolist()
    position = {name: k for k, name in enumerate(names)}
    i, j = (counts[side].map(position).to_numpy(np.int64) for side in ("lda", "other"))
    called = (counts["wireless_wireless"] + counts["congestion_congestion"]).to_numpy()
    kappa = np.where(own, np.where(called > 0, 1.0, np.nan), _kappa(counts))
    out = np.full((len(names), len(names)), np.nan)
    out[i, j] = out[j, i] = kappa
    return pd.DataFrame(out, index=names, columns=names)


def _kappa(counts: pd.DataFrame) -> np.ndarray:
    """Cohen's kappa of each row's 2×2 counts (``PAIR_COUNTS``): NaN where no loss was decided
    by both, or where the chance agreement is 1 (both called every loss the same way)."""
    ww, wc, cw, cc = (counts[c].to_numpy(np.float64) for c in PAIR_COUNTS)
    n = ww + wc + cw + cc
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (ww + cc) / n
        pa, pb = (ww + wc) / n, (ww + cw) / n
        chance = pa * pb + (1.0 - pa) * (1.0 - pb)
        kappa = (observed - chance) / (1.0 - chance)
    return np.where((n > 0) & (chance < 1.0), kappa, np.nan)


def agreement(decisions: pd.DataFrame, by: tuple[str, ...] = (), ldas: list[str] | None = None) -> pd.DataFrame:
    """Per group (``by``: columns of the decisions, e.g. ``("trace",)``; none: all pooled) and
    voting LDA: ``called`` (losses it decided), ``compared`` (those where the other LDAs have a
    majority: not tied, not silent), ``agrees_with_others`` (the share of the compared whose
    majority it matches) and ``mean_kappa`` with the other LDAs."""
    return agreement_table(agreement_counts(decisions, by, ldas), by)


AGREEMENT_COLUMNS = ["lda", "called", "compared", "agrees_with_others", "mean_kappa"]
# the 2×2 counts of a pair of LDAs over the losses both decided: the first one's call, the other's
PAIR_COUNTS = ("wireless_wireless", "wireless_congestion", "congestion_wireless", "congestion_congestion")
COUNT_COLUMNS = ("compared", "agreeing", *PAIR_COUNTS)


def agreement_counts(decisions: pd.DataFrame, by: tuple[str, ...] = (), ldas: list[str] | None = None) -> pd.DataFrame:
    """How the voting LDAs agree, as counts that add up over disjoint losses: per group of
    ``by`` (as ``agreement``), one row per LDA ``lda`` and LDA ``other`` at or after it in the
    group's voter order, with ``PAIR_COUNTS`` over the losses both decided (``wireless_congestion``:
    ``lda`` called wireless, ``other`` congestion). An LDA's row with itself holds its own
    calls (``wireless_wireless`` + ``congestion_congestion`` = ``called``), and ``compared``
    and ``agreeing``, its calls where the other LDAs have a majority and those that match it
    (0 on the rows of pairs). Summed over a trace's flows they are the trace's: a batch's
    workers send them instead of every decision, and ``agreement_table`` reads them."""
    _check_columns(decisions)
    group_by = list(by)
    names = voters(decisions) if ldas is None else list(ldas)
    # the groups numbered in order of first appearance among every decision, as a groupby's
    group = (
        decisions.groupby(group_by, sort=False, observed=True).ngroup().to_numpy()
        if group_by
        else np.zeros(len(decisions))
    )
    column = _voter_columns(decisions, names)
    voting = (column >= 0) & ~np.isnan(group)  # NaN: no group key
    d, group, column = decisions[voting], group[voting].astype(np.int64), column[voting]
    # each group's voters in ``voters``' order: as named, as the categories, or as first seen in the group
    seen = pd.DataFrame({"group": group, "lda": column}).drop_duplicates()
    if ldas is not None or isinstance(d["lda"].dtype, pd.CategoricalDtype):
        seen = seen.sort_values(["group", "lda"], kind="stable")
    else:
        seen = seen.sort_values("group", kind="stable")
    seen["rank"] = seen.groupby("group").cumcount()
    rows = seen.merge(seen, on="group", suffixes=("", "_other"))
    rows = rows[rows["rank_other"] >= rows["rank"]].sort_values(["group", "rank", "rank_other"], kind="stable")

    keys = [k for k in LOSS_KEYS if k in d.columns and k not in group_by]  # a loss within its group
    loss, first = _loss_ids([group, *(_codes(d[k]) for k in keys)])
    votes = _votes(d, loss, len(first), column, len(names))
    loss_group = group[first]
    wireless, congestion = votes == 1.0, votes == 0.0
    groups = int(group.max()) + 1 if len(group) else 0
    i, j = rows["lda"].to_numpy(), rows["lda_other"].to_numpy()
    g = rows["group"].to_numpy()

    def per_row(mask: np.ndarray, where: np.ndarray) -> np.ndarray:
        return np.bincount(loss_group[mask], minlength=groups)[g[where]]

    out = {name: np.zeros(len(rows), np.int64) for name in COUNT_COLUMNS}
    sides = {WIRELESS: wireless, CONGESTION: congestion}
    for a, b in dict.fromkeys(zip(i.tolist(), j.tolist())):
        where = (i == a) & (j == b)
        for name in PAIR_COUNTS:
            first_call, second_call = name.split("_")
            out[name][where] = per_row(sides[first_call][:, a] & sides[second_call][:, b], where)
        if a == b:
            others_w = wireless.sum(axis=1) - wireless[:, a]
            others_c = congestion.sum(axis=1) - congestion[:, a]
            compared = ~np.isnan(votes[:, a]) & (others_w != others_c)
            out["compared"][where] = per_row(compared, where)
            out["agreeing"][where] = per_row(compared & (wireless[:, a] == (others_w > others_c)), where)
    numbers, first_row = np.unique(group, return_index=True)
    labels = d[group_by].iloc[first_row[np.searchsorted(numbers, g)]].reset_index(drop=True)
    named = np.array(names, dtype=object)
    return pd.concat([labels, pd.DataFrame({"lda": named[i], "other": named[j], **out})], axis=1)


def agreement_table(counts: pd.DataFrame, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """``agreement``'s table from ``agreement_counts`` rows, summed per group of ``by`` (their
    columns; none: all pooled) and pair of LDAs, whichever way round a pair's rows have it:
    each LDA's ``called``, ``compared``, the share agreeing and its mean kappa with the others,
    each kappa from the pair's summed counts."""
    group_by = list(by)
    mirrored = counts[counts["lda"] != counts["other"]].rename(
        columns={
            "lda": "other",
            "other": "lda",
            "wireless_congestion": "congestion_wireless",
            "congestion_wireless": "wireless_congestion",
        }
    )
    summed = (
        pd.concat([counts, mirrored], ignore_index=True)
        .groupby([*group_by, "lda", "other"], sort=False, observed=True)[list(COUNT_COLUMNS)]
        .sum()
        .reset_index()
    )
    is_own = (summed["lda"] == summed["other"]).to_numpy()
    own = summed[is_own].reset_index(drop=True)
    own["rank"] = own.groupby(group_by, sort=False, observed=True).cumcount() if group_by else np.arange(len(own))
    voting = (
        own.groupby(group_by, sort=False, observed=True)["lda"].transform("size").to_numpy() if group_by else len(own)
    )
    voting = np.broadcast_to(voting, len(own))
    pairs = summed[~is_own].merge(own[[*group_by, "lda"]].assign(row=np.arange(len(own))), on=[*group_by, "lda"])
    pairs = pairs.merge(own[[*group_by, "lda", "rank"]].rename(columns={"lda": "other"}), on=[*group_by, "other"])
    # each LDA's kappas with the others, in the others' order (NaN where undefined), averaged
    # as ``Series.mean`` does, over as many as there are others
    others = np.full((len(own), int(voting.max(initial=1)) - 1), np.nan)
    row, rank = pairs["row"].to_numpy(), pairs["rank"].to_numpy()
    others[row, rank - (rank > own["rank"].to_numpy()[row])] = _kappa(pairs)
    mean_kappa = np.full(len(own), np.nan)
    for n in np.unique(voting - 1):
        chosen = voting - 1 == n
        block = others[chosen, :n]
        defined = (~np.isnan(block)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_kappa[chosen] = np.where(defined > 0, np.nan_to_num(block, nan=0.0).sum(axis=1) / defined, np.nan)
    compared = own["compared"].to_numpy()
    out = (
        own[group_by]
        .astype(object)
        .assign(
            lda=own["lda"].astype(str),
            called=own["wireless_wireless"] + own["congestion_congestion"],
            compared=compared,
            agrees_with_others=np.where(compared > 0, own["agreeing"] / np.maximum(compared, 1), np.nan),
            mean_kappa=mean_kappa,
        )
    )
    return out[[*group_by, *AGREEMENT_COLUMNS]]


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
