"""One vocabulary everywhere (#45 §3): files that name their units, an absolute delay only where
the clocks are one, one option name and one rule for a file's format, an ``--lda`` that says what
``all`` holds and guesses a misspelt name, and losses of other causes scored as asked by every
command that scores."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ldanalyze import build_timeline, read_trace
from ldanalyze.cli import main
from ldanalyze.lda import REGISTRY
from ldanalyze.report.export import UNITS, exported_name
from ldanalyze.specs import names_in_all

from ..conftest import ROOT, TRACES

SAMPLE = TRACES / "wlh_cbr_1flow_bursty.tr.gz"
CAPTURE = TRACES / "captures" / "lab_receiver.pcap"  # a receiver's capture: its clock and the sender's
ROUTED = TRACES / "wireless" / "wlan_new.tr.gz"  # ns-2 wireless with losses to routing


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_files_name_the_units_of_their_times_and_rates(tmp_path, capsys):
    """Every format names a time column with ``_s``; a Parquet file's fields carry ``unit``; the
    values are the API's, which keeps its short names."""
    expect = build_timeline(read_trace(SAMPLE)).per_packet()
    tables = {}
    for name in ("t.csv", "t.json", "t.parquet"):
        assert run(capsys, "timeline", SAMPLE, "-o", tmp_path / name)[0] == 0
        tables[name] = (
            pd.read_parquet(tmp_path / name)
            if name.endswith("parquet")
            else pd.read_json(tmp_path / name)
            if name.endswith("json")
            else pd.read_csv(tmp_path / name)
        )
    for table in tables.values():
        assert list(table.columns) == [exported_name(c) for c in expect.columns]
        assert {"t_send_s", "t_recv_s", "owd_s", "rott_s", "iat_s", "jitter_s", "t_detect_s", "size"} <= set(
            table.columns
        )
        np.testing.assert_allclose(table["owd_s"], expect["owd"])  # ns-2: one clock, owd is there
    schema = pq.read_schema(tmp_path / "t.parquet")
    assert schema.field("owd_s").metadata == {b"unit": b"s"} and schema.field("size").metadata == {b"unit": b"bytes"}
    assert schema.field("seq").metadata is None  # a sequence number has no unit
    assert (
        run(capsys, "replay", SAMPLE, "--lda", "unaware", "--controller", "tfrc", "-o", tmp_path / "r.parquet")[0] == 0
    )
    rates = pq.read_schema(tmp_path / "r.parquet")
    assert rates.field("rate_bps").metadata == {b"unit": b"bit/s"} and rates.field("t_s").metadata == {b"unit": b"s"}


def test_the_readme_documents_every_exported_unit():
    """The README's "Exported columns and their units" table names each column of ``UNITS`` as a
    file names it, with its unit, and no other."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Exported columns and their units", 1)[1].split("\n\n| column", 1)[1]
    rows = [line.split("|") for line in section.split("\n\n", 1)[0].splitlines()[2:]]
    documented = {name: row[2].strip() for row in rows for name in re.findall(r"`([a-z_0-9]+)`", row[1])}
    assert documented == {exported_name(name): unit for name, unit in UNITS.items()}


def test_an_absolute_delay_only_where_the_clocks_are_one(tmp_path, capsys):
    """A receiver's capture puts the send times on the sender's clock and the receive times on
    its own: ``owd`` is missing, with a warning, where ``rott`` is there."""
    code, _, err = run(capsys, "timeline", CAPTURE, "--payload", "iperf3", "-o", tmp_path / "t.csv")
    assert code == 0
    assert "owd left empty: the send and receive times are on separate clocks" in err
    table = pd.read_csv(tmp_path / "t.csv")
    delivered = table[table["fate"] == "delivered"]
    assert len(delivered) and delivered["owd_s"].isna().all() and delivered["rott_s"].notna().all()
    timeline = build_timeline(read_trace(SAMPLE))
    with pytest.warns(UserWarning, match="owd left empty"):
        assert build_timeline(timeline.packets).per_packet()["owd"].isna().all()  # no clock known: not one


def test_format_is_one_option_and_output_format_its_old_name(tmp_path, capsys):
    code, _, err = run(capsys, "timeline", SAMPLE, "-o", tmp_path / "t.dat", "--output-format", "csv")
    assert code == 0 and "--output-format is now --format; the old name goes in 0.6" in err
    assert pd.read_csv(tmp_path / "t.dat")["seq"].size
    for command in ("classify", "replay"):
        code, _, err = run(capsys, command, SAMPLE, "--lda", "unaware", "-o", tmp_path / "x.out", "--format", "json")
        assert code == 0 and "--output-format" not in err
    code, _, err = run(capsys, "timeline", SAMPLE, "-o", tmp_path / "t.csv", "--format", "parquet")
    assert code == 2 and "-o " + str(tmp_path / "t.csv") + " promises csv, but --format parquet was given" in err


@pytest.mark.parametrize(
    "argv, said",
    [
        (["score", SAMPLE, "-o", "out.xlsx"], "out.xlsx: a score table is written as .json, .csv, .md, .txt;"),
        (["timeline", SAMPLE, "-o", "x.xlsx"], "x.xlsx: a table is written as .parquet, .csv, .csv.gz, .json;"),
        (["score", SAMPLE, "-o", "s.html"], "use `ldanalyze report TRACE -o s.html`"),
    ],
)
def test_a_name_that_says_no_known_format_is_refused(argv, said, tmp_path, monkeypatch, capsys):
    """One rule: ``score -o out.xlsx`` wrote a text table and exited 0 where ``timeline`` refused."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert code == 2 and said in err
    assert not list(tmp_path.iterdir())


def test_lda_help_says_what_all_holds(capsys):
    with pytest.raises(SystemExit):
        main(["classify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    in_all = names_in_all(REGISTRY)
    named = [name for name in REGISTRY if name not in in_all]
    assert {"learned", "policer", "macseq"} <= set(named)
    assert f"'all' is {', '.join(in_all)}; named only: {', '.join(named)}" in text


def test_a_misspelt_lda_gets_the_nearest_name(capsys):
    code, _, err = run(capsys, "score", SAMPLE, "--lda", "zigzg")
    assert code == 2 and "unknown LDA 'zigzg' (did you mean zigzag?)" in err
    assert "did you mean" not in run(capsys, "score", SAMPLE, "--lda", "nosuch")[2]


def test_route_as_wherever_scores_are_made(tmp_path, capsys):
    """``--route-as`` (and ``--policing-as``) on sweep, batch and report as on score."""
    swept = {}
    for route_as in ("excluded", "wireless"):
        out = tmp_path / f"sweep_{route_as}.csv"
        argv = ["sweep", "spike", ROUTED, "--param", "beta=0.1,0.2", "--route-as", route_as, "-o", out]
        assert run(capsys, *argv)[0] == 0
        swept[route_as] = pd.read_csv(out)
    assert (swept["wireless"]["wireless"] > swept["excluded"]["wireless"]).all()  # the route losses scored
    out = tmp_path / "results.csv"
    argv = ["batch", ROUTED, "--lda", "spike", "--no-cache", "-q", "--route-as", "wireless", "-o", out]
    argv += ["--policing-as", "congestion"]
    assert run(capsys, *argv)[0] == 0
    results = pd.read_csv(out)
    assert set(results["route_as"]) == {"wireless"} and set(results["policing_as"]) == {"congestion"}
    page = tmp_path / "r.html"
    assert (
        run(capsys, "report", ROUTED, "--lda", "spike", "--controller", "none", "--route-as", "wireless", "-o", page)[0]
        == 0
    )
    assert "route losses scored as wireless" in page.read_text()
