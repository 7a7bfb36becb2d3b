"""``ldanalyze reproduce paper000 --quick`` with the real ns-2: the outputs are there, the
numbers finite where defined, the paper's statements computed from them, the cache used."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ldanalyze.cli import main
from ldanalyze.reproduce import LDAS, SUITES, paper_checks

from .conftest import needs_binary


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("paper000")
    assert main(["reproduce", "paper000", "-o", str(out), "--quick", "--jobs", "2"]) == 0
    return out


@needs_binary("ns")
def test_the_quick_suite_writes_every_output(quick):
    for suffix in ("", "_cbr"):  # TFRC (the paper's), constant-rate UDP
        for name in ("table_II_wlh{}.md", "table_III_wb{}.md", "figure_wlh{}.png", "figure_wb{}.png",
                     "zbs_usage{}.csv", "figure_13_zbs{}.png"):
            assert (quick / name.format(suffix)).stat().st_size > 200, name.format(suffix)
    for name in ("README.md", "results.csv", "checks.csv"):
        assert (quick / name).stat().st_size > 200, name
    results = pd.read_csv(quick / "results.csv")
    assert len(results) == len(SUITES["quick"].scenarios()) * len(LDAS)
    assert set(results["traffic"]) == {"tfrc", "cbr"}
    assert results["thput"].between(0, 1.05).all() and results["M_w"].between(0, 1).all()
    assert results["M_c"].dropna().between(0, 1).all()
    usage = pd.read_csv(quick / "zbs_usage.csv")
    assert len(usage) == 2 * 3  # topologies × numbers of flows
    np.testing.assert_allclose(usage[["zigzag", "mbiaz", "spike"]].sum(axis=1), 1.0)
    table = (quick / "table_II_wlh.md").read_text()
    assert all(lda in table for lda in LDAS) and "| M_w |" in table


@needs_binary("ns")
def test_the_papers_statements_are_computed_from_the_numbers(quick):
    results = pd.read_csv(quick / "results.csv")
    checks = pd.read_csv(quick / "checks.csv")
    assert len(checks) == 2 * 7 and set(checks["holds"]) <= {"yes", "no", "untestable"}
    for traffic, suffix in (("tfrc", ""), ("cbr", "_cbr")):
        mine = checks[checks["traffic"] == traffic].drop(columns="traffic").reset_index(drop=True)
        computed = paper_checks(results[results["traffic"] == traffic], pd.read_csv(quick / f"zbs_usage{suffix}.csv"))
        pd.testing.assert_frame_equal(computed, mine)
    # a statement flips with the numbers it rests on
    flipped = results.copy()
    flipped = flipped[flipped["traffic"] == "tfrc"]
    flipped.loc[(flipped["topology"] == "wb") & (flipped["lda"] == "biaz"), "M_w"] = 0.5
    row = paper_checks(flipped).set_index("claim").filter(like="WB, two flows", axis=0)
    assert row["holds"].tolist() == ["no"]
    readme = (quick / "README.md").read_text()
    assert "cannot be tested" in readme and "open loop" in readme and "constant-rate UDP at 110%" in readme


@needs_binary("ns")
def test_a_second_run_takes_the_traces_from_the_cache(quick, capsys):
    before = {p.name: p.stat().st_mtime for p in (quick / "traces").iterdir()}
    assert main(["reproduce", "paper000", "-o", str(quick), "--quick", "--jobs", "2"]) == 0
    assert {p.name: p.stat().st_mtime for p in (quick / "traces").iterdir()} == before
    assert "12 traces (0 simulated now, the rest from the cache)" in capsys.readouterr().out
    assert np.isfinite(pd.read_csv(quick / "results.csv")["M_w"]).all()
