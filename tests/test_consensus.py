"""What the LDAs say without truth: kappa against scikit-learn's and by hand, the majority per
loss and each LDA's agreement against plain loops, shares over time, and the score command on a
capture without ground truth."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from ldanalyze.cli import main
from ldanalyze.consensus import agreement, consensus, kappa_matrix, shares_over_time

from .conftest import TRACES

C, W, U = "congestion", "wireless", "undetected"


def decisions(calls: dict[str, list[str]], times=None, flow="1") -> pd.DataFrame:
    """A decisions table: per LDA, its call on losses uid 0, 1, ... (unaware as a baseline)."""
    n = len(next(iter(calls.values())))
    rows = [
        {"flow": flow, "uid": i, "lda": lda, "cause": "lost", "decision": call, "t_decide": (times or range(n))[i]}
        for lda, column in {"unaware": [C] * n, **calls}.items()
        for i, call in enumerate(column)
    ]
    return pd.DataFrame(rows)


def test_kappa_by_hand():
    """a: W W C C, b: W C C C: observed agreement 3/4, chance 1/2 x 1/4 + 1/2 x 3/4 = 1/2, so
    kappa (3/4 - 1/2) / (1 - 1/2) = 1/2. An undetected loss is left out of the pair."""
    d = decisions({"a": [W, W, C, C, W], "b": [W, C, C, C, U]})
    k = kappa_matrix(d)
    assert list(k.columns) == ["a", "b"]  # the baseline does not vote
    assert k.loc["a", "b"] == k.loc["b", "a"] == 0.5 and k.loc["a", "a"] == 1.0


def test_kappa_is_undefined_when_both_call_every_loss_alike():
    k = kappa_matrix(decisions({"a": [C, C, C], "b": [C, C, C], "c": [W, W, W]}))
    assert math.isnan(k.loc["a", "b"]) and k.loc["a", "c"] == 0.0


calls_strategy = st.integers(2, 5).flatmap(
    lambda k: st.integers(1, 30).flatmap(
        lambda n: st.lists(st.lists(st.sampled_from([C, W, U]), min_size=n, max_size=n), min_size=k, max_size=k)
    )
)


@settings(max_examples=150, deadline=None)
@given(calls_strategy)
def test_kappa_consensus_and_agreement_against_plain_loops(columns):
    names = [f"l{j}" for j in range(len(columns))]
    d = decisions(dict(zip(names, columns)))
    n = len(columns[0])
    k = kappa_matrix(d)
    for a in names:
        for b in names:
            pairs = [(x, y) for x, y in zip(columns[names.index(a)], columns[names.index(b)]) if U not in (x, y)]
            if a == b:
                expected = 1.0 if pairs else float("nan")
            elif not pairs or len({x for x, _ in pairs} | {y for _, y in pairs}) == 1:
                expected = float("nan")  # nothing to compare, or one label only: chance agreement 1
            else:
                expected = cohen_kappa_score([x for x, _ in pairs], [y for _, y in pairs])
            assert k.loc[a, b] == pytest.approx(expected, nan_ok=True, abs=1e-12), (a, b)
    votes = consensus(d)
    ours = agreement(d).set_index("lda")
    for i in range(n):
        said = [column[i] for column in columns]
        w, c = said.count(W), said.count(C)
        row = votes.iloc[i]
        assert (row["wireless_votes"], row["congestion_votes"]) == (w, c)
        assert row["consensus"] == (W if w > c else C if c > w else "split" if w else "none")
        assert row["strength"] == pytest.approx(max(w, c) / (w + c)) if w + c else math.isnan(row["strength"])
    for j, name in enumerate(names):
        matches = []
        for i in range(n):
            own = columns[j][i]
            others = [column[i] for m, column in enumerate(columns) if m != j]
            w, c = others.count(W), others.count(C)
            if own != U and w != c:
                matches.append(own == (W if w > c else C))
        assert ours.loc[name, "compared"] == len(matches)
        assert ours.loc[name, "agrees_with_others"] == pytest.approx(
            np.mean(matches) if matches else np.nan, nan_ok=True
        )
        assert ours.loc[name, "called"] == sum(call != U for call in columns[j])


def test_agreement_by_group_keeps_the_groups_apart():
    d = pd.concat([decisions({"a": [W, W], "b": [W, W]}, flow="1"), decisions({"a": [C, C], "b": [W, W]}, flow="2")])
    by_flow = agreement(d, ("flow",)).set_index(["flow", "lda"])
    assert by_flow.loc[("1", "a"), "agrees_with_others"] == 1.0 and by_flow.loc[("2", "a"), "agrees_with_others"] == 0.0
    assert agreement(d).set_index("lda").loc["a", "agrees_with_others"] == 0.5


def test_shares_over_time_by_hand():
    """Losses at 0, 1, 2, 3 s; windows of 2 s: [0, 2) holds two losses, [2, 4) the other two."""
    d = decisions({"a": [W, C, W, W], "b": [U, C, C, C]}, times=[0.0, 1.0, 2.0, 3.0])
    out = shares_over_time(d, window=2.0).set_index(["lda", "t_start"])
    assert out.loc[("a", 0.0), "wireless_share"] == 0.5 and out.loc[("a", 2.0), "wireless_share"] == 1.0
    assert out.loc[("b", 0.0), "called"] == 1 and out.loc[("b", 2.0), "wireless_share"] == 0.0
    assert "unaware" not in set(out.index.get_level_values("lda"))


def test_score_of_a_capture_without_truth_says_what_the_ldas_called(capsys):
    """The lab capture's receiver side alone: no cause is known. No metric rows of dashes: what
    each LDA called, its interval, the agreement between LDAs and the majority per loss."""
    capture = str(TRACES / "captures" / "lab_receiver.pcap")
    assert main(["score", capture, "--controller", "none", "--lda", "spike,zbs,zigzag,biaz"]) == 0
    out = capsys.readouterr().out
    assert "no ground truth" in out and "M_c %" not in out and "omniscient" not in out
    assert "called W %" in out and "95% CI (bursts)" in out and "agrees w/ others %" in out
    assert "Cohen's kappa" in out and "Majority of 4 LDAs per loss" in out and "A majority is not the truth" in out
    assert main(["score", capture, "--controller", "none", "--lda", "spike,zigzag", "--format", "json"]) == 0
    rows = {r["lda"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["spike"]["called"] == rows["spike"]["losses"] - rows["spike"]["undetected"]
    assert 0 <= rows["zigzag"]["wireless_share_boot_lo"] <= rows["zigzag"]["wireless_share"]
    assert rows["zigzag"]["wireless_share"] <= rows["zigzag"]["wireless_share_boot_hi"] <= 1
    assert rows["spike"]["M_c"] is None and rows["spike"]["agrees_with_others"] is not None


flows_strategy = st.integers(2, 4).flatmap(
    lambda k: st.lists(
        st.integers(1, 12).flatmap(
            lambda n: st.lists(st.lists(st.sampled_from([C, W, U]), min_size=n, max_size=n), min_size=k, max_size=k)
        ),
        min_size=1,
        max_size=4,
    )
)


@settings(max_examples=100, deadline=None)
@given(flows_strategy)
def test_agreement_counts_summed_over_flows_give_the_pooled_agreement(flows):
    """Counts per flow, summed, give what the pooled decisions give: the same calls, kappas and
    shares agreeing (what a batch's results table builds from its workers' counts)."""
    from ldanalyze.consensus import agreement_counts, agreement_table

    names = [f"l{j}" for j in range(len(flows[0]))]
    d = pd.concat(
        [decisions(dict(zip(names, columns)), flow=str(f)) for f, columns in enumerate(flows)], ignore_index=True
    )
    per_flow = agreement_counts(d, ("flow",))
    assert set(per_flow["flow"]) == {str(f) for f in range(len(flows))}
    pooled = agreement(d)
    summed = agreement_table(per_flow)
    pd.testing.assert_frame_equal(summed, pooled, check_dtype=False)
    k = kappa_matrix(d)
    own = summed.set_index("lda")
    for name in own.index:
        others = k.loc[name].drop(index=name)
        assert own.loc[name, "mean_kappa"] == pytest.approx(others.mean(), nan_ok=True)


def test_consensus_has_one_row_per_loss_of_several_flows():
    """Losses of two flows with different uids: one row each, no flow × uid rows of nothing."""
    d = pd.concat([decisions({"a": [W, C]}, flow="1"), decisions({"a": [C]}, flow="2").assign(uid=7)])
    votes = consensus(d)
    assert list(zip(votes["flow"], votes["uid"])) == [("1", 0), ("1", 1), ("2", 7)]
