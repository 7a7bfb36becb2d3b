"""Parameter sweeps (ldanalyze/sweep.py): the grid, the frontier against a plain twin, the
default point equal to plain scoring, and paper 000 §III-B's limits of Spike's thresholds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze.cli import main
from ldanalyze.errors import UsageError
from ldanalyze.sweep import pareto, parse_param, sweep

TRACE = "traces/wlh_mix_4flow_high.tr.gz"


def test_param_ranges_include_their_end_and_lists_are_taken_as_given():
    assert parse_param("beta=0.05:0.5:0.05") == ("beta", [round(0.05 * k, 12) for k in range(1, 11)])
    assert parse_param("upper=1.1:1.8:0.1")[1][-1] == 1.8
    assert parse_param("alpha=0.25,0.125") == ("alpha", [0.25, 0.125])
    for bad in ("alpha", "alpha=", "alpha=1:0:0.1", "alpha=0:1:0", "alpha=a,b"):
        with pytest.raises(UsageError):
            parse_param(bad)


def pareto_naive(m_c, m_w):
    """A point is on the frontier when no other point is at most as large in both and smaller
    in one."""
    out = []
    for i in range(len(m_c)):
        if not (np.isfinite(m_c[i]) and np.isfinite(m_w[i])):
            out.append(False)
            continue
        out.append(
            not any(
                np.isfinite(m_c[j])
                and np.isfinite(m_w[j])
                and m_c[j] <= m_c[i]
                and m_w[j] <= m_w[i]
                and (m_c[j] < m_c[i] or m_w[j] < m_w[i])
                for j in range(len(m_c))
            )
        )
    return np.array(out)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, np.nan]), st.sampled_from([0.0, 0.2, 0.5, 0.75, 1.0, np.nan])
        ),
        min_size=1,
        max_size=30,
    )
)
def test_the_frontier_matches_its_twin(points):
    m_c, m_w = (np.array(v, float) for v in zip(*points))
    np.testing.assert_array_equal(pareto(m_c, m_w), pareto_naive(m_c, m_w))


def test_a_sweep_scores_each_point_as_plain_scoring_does():
    table = sweep([TRACE], "spike", {"beta": [0.2, 0.4], "alpha": [0.3, 0.5, 0.9]})
    assert table.attrs["refused"] == 1  # alpha 0.3 < beta 0.4
    assert len(table) == 2 * 3 - 1 + 1  # the default (1/3, 1/2) is added
    assert table["default"].sum() == 1
    timeline = la.build_timeline(la.read_trace(TRACE))
    plain = la.score(
        la.classify(timeline, "spike:alpha=0.9:beta=0.2,spike"), timeline.summary(), by="pooled", bootstrap=0
    ).set_index("lda")
    got = table.set_index("spec")
    for spec in ("spike:alpha=0.9:beta=0.2", "spike"):
        assert (got.loc[spec, "M_c"], got.loc[spec, "M_w"]) == (plain.loc[spec, "M_c"], plain.loc[spec, "M_w"])
    np.testing.assert_array_equal(table["pareto"], pareto_naive(table["M_c"].to_numpy(), table["M_w"].to_numpy()))


def test_spikes_thresholds_at_their_limits():
    """Paper 000 §III-B: 'If α ≥ 1, M_c is 100% while M_w is 0%; if β ≤ 0, then M_c is 0% and
    M_w is 100%'. With α = β = 0 a flow enters the spike state as soon as its ROTT rises above
    its minimum and never leaves it; only a loss decided before that rise is called wireless."""
    table = sweep([TRACE], "spike", {"alpha": [0.0, 1.0], "beta": [0.0]}).set_index("alpha")
    assert (table.loc[1.0, "M_c"], table.loc[1.0, "M_w"]) == (1.0, 0.0)
    assert table.loc[0.0, "M_c"] < 0.05 and table.loc[0.0, "M_w"] > 0.99


def test_a_grid_the_lda_refuses_or_does_not_know_is_an_error():
    with pytest.raises(UsageError, match="refuses every point"):
        sweep([TRACE], "spike", {"alpha": [0.1], "beta": [0.5]})
    with pytest.raises(UsageError, match="unknown parameter"):
        sweep([TRACE], "spike", {"gamma": [0.1]})


def test_the_command_line_sweep(tmp_path, capsys):
    out, png = tmp_path / "zigzag.csv", tmp_path / "zigzag.png"
    assert (
        main(["sweep", "zigzag", TRACE, "--param", "alpha=0.0078125,0.03125,0.125", "-o", str(out), "--plot", str(png)])
        == 0
    )
    printed = capsys.readouterr().out
    table = pd.read_csv(out)
    assert list(table["alpha"]) == [0.0078125, 0.03125, 0.125] and table["default"].sum() == 1
    assert "3 points (0 refused by zigzag)" in printed and png.stat().st_size > 10_000


def test_the_frontier_plot_shows_the_grid_the_frontier_and_the_defaults():
    table = sweep([TRACE], "zigzag", {"alpha": [0.0078125, 0.03125, 0.125]})
    fig = la.plot.sweep(table)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    on = "on" if table.loc[table["default"], "pareto"].iloc[0] else "off"
    front = table[table["pareto"]]
    assert labels == [
        "grid points (3)",
        f"frontier ({len(front)}, labelled with its parameters)",
        f"default alpha=0.0312 ({on} the frontier)",
    ]
    # each frontier point named by its parameter (none closer than 5 points to another here)
    assert sorted(t.get_text() for t in fig.axes[0].texts) == sorted(f"{a:.3g}" for a in front["alpha"])
