"""``ldanalyze reproduce paper000 --quick`` with the real ns-2: the outputs are there, the
numbers finite where defined, the paper's statements computed from them, the cache used."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest

from ldanalyze.cli import main
from ldanalyze.reproduce import LDAS, SPIKE_SPREAD, SUITES, SWEEPS, judge, registry
from ldanalyze.sweep import pareto

from ..conftest import ROOT, needs_binary


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("paper000")
    assert main(["reproduce", "paper000", "-o", str(out), "--quick", "--jobs", "2", "--closed-loop"]) == 0
    return out


@needs_binary("ns")
def test_the_quick_suite_writes_every_output(quick):
    for suffix in ("", "_cbr"):  # TFRC (the paper's), constant-rate UDP
        for name in (
            "table_II_wlh{}.md",
            "table_III_wb{}.md",
            "figure_wlh{}.png",
            "figure_wb{}.png",
            "zbs_usage{}.csv",
            "figure_13_zbs{}.png",
        ):
            assert (quick / name.format(suffix)).stat().st_size > 200, name.format(suffix)
    for name in ("README.md", "results.csv", "checks.csv", "table_cells.md", "table_cells.csv"):
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
def test_table_vi_runs_128_flows_beside_the_papers_numbers(quick):
    scaled = pd.read_csv(quick / "table_VI_results.csv")
    assert set(scaled["flows"]) == {128} and set(scaled["lda"]) == set(LDAS)
    assert scaled["M_w"].between(0, 1).all() and scaled["thput"].between(0, 1.05).all()
    table = (quick / "table_VI_wlh.md").read_text()
    assert "| M_c (paper) | 0 | 32 | 4.4 | 29 | 11 | 14 |" in table
    ours = next(line for line in table.splitlines() if line.startswith("| M_w |"))
    spike = scaled.set_index("lda").loc["spike", "M_w"] * 100
    assert f"{spike:.1f}" in ours


@needs_binary("ns")
def test_the_sweeps_cover_the_papers_grids_with_the_defaults_and_their_frontier(quick):
    for topology in ("wlh", "wb"):
        assert (quick / f"figure_sweeps_{topology}.png").stat().st_size > 10_000
        for lda, grid in SWEEPS.items():
            table = pd.read_csv(quick / f"sweep_{lda}_{topology}.csv")
            assert table["default"].sum() == 1
            assert np.array_equal(table["pareto"].to_numpy(), pareto(table["M_c"].to_numpy(), table["M_w"].to_numpy()))
            for name, values in grid.items():
                assert set(table.loc[~table["default"], name]) <= set(values)
            if lda == "spike":
                spread = table["alpha"] - table["beta"]
                assert (spread[~table["default"]] <= SPIKE_SPREAD + 1e-9).all() and (spread >= 0).all()
                assert len(table) > 100


@needs_binary("ns")
def test_the_papers_statements_are_computed_from_the_numbers(quick):
    """Every statement of the registry judged per traffic from the files the run wrote, and the
    README's headline the Tables II/III cell-by-cell count."""
    results = pd.read_csv(quick / "results.csv")
    checks = pd.read_csv(quick / "checks.csv", keep_default_na=False)
    statements = registry.load()["statement"]
    assert len(checks) == 2 * len(statements) and set(checks["holds"]) <= {"yes", "no", "untestable"}
    sweeps = {}
    for (lda, grid), topology in itertools.product(SWEEPS.items(), ("wlh", "wb")):
        sweeps[(lda, topology)] = pd.read_csv(quick / f"sweep_{lda}_{topology}.csv")
        sweeps[(lda, topology)].attrs["params"] = list(grid)
    for traffic, suffix in (("tfrc", ""), ("cbr", "_cbr")):
        mine = checks[checks["traffic"] == traffic].drop(columns="traffic").reset_index(drop=True)
        tfrc = traffic == "tfrc"
        computed = judge(
            results[results["traffic"] == traffic],
            "open",
            usage=pd.read_csv(quick / f"zbs_usage{suffix}.csv"),
            scaled=pd.read_csv(quick / "table_VI_results.csv") if tfrc else None,
            sweeps=sweeps if tfrc else None,
        )
        pd.testing.assert_frame_equal(computed, mine)
    # a statement flips with the numbers it rests on
    flipped = results[results["traffic"] == "tfrc"].copy()
    flipped.loc[(flipped["topology"] == "wb") & (flipped["lda"] == "biaz"), "M_w"] = 0.5
    row = judge(flipped, "open").set_index("id").loc["wb-biaz-mw-full"]
    assert row["holds"] == "no"
    readme = (quick / "README.md").read_text()
    assert "cannot be tested" in readme and "open loop" in readme and "constant-rate UDP at 110%" in readme
    assert readme.splitlines()[4].startswith("- closed loop: **") and "cells within 5 points" in readme.splitlines()[4]


@needs_binary("ns")
def test_the_closed_loop_stands_beside_the_open_loop_and_the_paper(quick):
    frame = pd.read_csv(quick / "closed_loop.csv")
    tfrc = [s for s in SUITES["quick"].scenarios() if s["traffic"] == "tfrc"]
    assert (frame["loop"] == "closed").sum() == (frame["loop"] == "open").sum() == len(tfrc) * len(LDAS)
    closed = frame[frame["loop"] == "closed"]
    assert closed["thput"].between(0, 1.2).all() and closed["M_w"].dropna().between(0, 1).all()
    # the paper's headline (Table II): knowing the cause lets one TFRC flow fill the wireless last hop
    one = closed[(closed["topology"] == "wlh") & (closed["flows"] == 1)].set_index("lda")
    assert one.loc["omniscient", "thput"] > 0.95 > one.loc["unaware", "thput"]
    assert one.loc["omniscient", "M_w"] == 0 and one.loc["unaware", "M_w"] == 1
    table = (quick / "table_II_wlh_closed.md").read_text()
    for row in (
        "| thput (closed) |",
        "| thput (open) |",
        "| thput (paper) | 84 | 99 | 99 | 99 | 99 | 98 | - |",
        "| M_w (paper) | 100 | 0 | 6.3 | 6.6 | 58 | 66 | - |",
    ):
        assert row in table
    checks = pd.read_csv(quick / "checks_closed.csv")
    assert {"holds_open", "holds_closed", "why"} <= set(checks.columns)
    assert len(checks) == len(registry.load()["statement"])
    congestion = checks[checks["id"] == "wlh1-cong-spike-zigzag-less"]
    assert congestion["holds_open"].tolist() == ["untestable"]  # one trace for every LDA open loop
    usage = checks[checks["id"] == "zbs-usage-mbiaz-one-flow"]  # the closed loop's own ZBS runs
    assert usage["holds_closed"].isin(["yes", "no"]).all()
    assert (closed["decisions_equal"] == closed["decisions"]).all() and closed["decisions"].sum() > 1000
    model = pd.read_csv(quick / "model_vs_truth.csv")
    assert len(model) == len(tfrc) * len(LDAS) and model["truth"].notna().all()
    readme = (quick / "README.md").read_text()
    assert "## Closed loop" in readme and "| model_share |" in readme and "| model_trace_rx |" in readme
    # the default receiver: X_recv counts arrivals only (§IV's reading is --wireless-as-received)
    assert (frame["wireless_as_received"] == 0).all()
    assert "counted the packets that arrived only" in readme


@needs_binary("ns")
def test_a_second_run_takes_the_traces_from_the_cache(quick, capsys):
    before = {p.name: p.stat().st_mtime for p in (quick / "traces").iterdir()}
    assert main(["reproduce", "paper000", "-o", str(quick), "--quick", "--jobs", "2", "--closed-loop"]) == 0
    assert {p.name: p.stat().st_mtime for p in (quick / "traces").iterdir()} == before
    assert "55 traces (0 simulated now, the rest from the cache)" in capsys.readouterr().out
    assert np.isfinite(pd.read_csv(quick / "results.csv")["M_w"]).all()


def test_the_receivers_reading_needs_the_closed_loop(tmp_path, capsys):
    assert main(["reproduce", "paper000", "-o", str(tmp_path), "--wireless-as-received"]) != 0
    assert "give --closed-loop too" in capsys.readouterr().err


def test_the_help_says_what_the_closed_loop_build_does_to_the_system_as_root(capsys):
    """ldanalyze/data/ns2/build, run as root, installs packages and adds an apt source: --help
    says so, naming the packages the script installs."""
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    script = (ROOT / "ldanalyze" / "data" / "ns2" / "build").read_text()
    packages = re.search(r"^deps=\((.*?)\)", script, flags=re.S | re.M).group(1).split()
    assert "apt-get install" in script and "deb-src" in script
    assert f"apt-get install of the build dependencies missing ({', '.join(packages)})" in shown
    assert "adds one, copied from the deb lines, in /etc/apt/sources.list.d/ldanalyze-deb-src.sources" in shown
    assert "root runs apt-get install and adds a deb-src line" in shown  # the --closed-loop option's own help
    assert "$LDANALYZE_NS names a built one instead" in shown
