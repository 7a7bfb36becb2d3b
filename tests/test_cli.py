"""The ldanalyze command on the bundled traces."""

from __future__ import annotations

import json

import pandas as pd

from ldanalyze import build_timeline, read_trace
from ldanalyze.cli import main

from .conftest import TRACES

SAMPLE = TRACES / "wlh_cbr_1flow_bursty.tr.gz"


def test_inspect_table(capsys):
    assert main(["inspect", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "ns2-wired" in out and "congestion" in out and "wireless" in out
    row = next(line for line in out.splitlines() if line.split()[:1] == ["1"])
    # flow 1: sent, delivered, congestion, wireless as in traces/README.md
    assert row.split()[1:5] == ["1292", "1150", "41", "101"]


def test_inspect_json(capsys):
    assert main(["inspect", str(SAMPLE), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    flows = {f["flow"]: f for f in payload["flows"]}
    assert flows["1"]["wireless"] == 101 and flows["101"]["congestion"] == 8
    assert payload["format"] == "ns2-wired"


def test_inspect_wireless(capsys):
    assert main(["inspect", str(TRACES / "wireless" / "wlan_new.tr.gz")]) == 0
    assert "ns2-wireless-new" in capsys.readouterr().out


def test_timeline_parquet_and_csv(tmp_path, capsys):
    expect = build_timeline(read_trace(SAMPLE)).per_packet()
    for name in ("t.parquet", "t.csv", "t.csv.gz"):
        out = tmp_path / name
        assert main(["timeline", str(SAMPLE), "-o", str(out)]) == 0
        got = pd.read_parquet(out) if name.endswith("parquet") else pd.read_csv(out, dtype={"flow": str})
        assert len(got) == len(expect) == expect["uid"].nunique()
        assert got["fate"].value_counts().to_dict() == expect["fate"].astype(str).value_counts().to_dict()
        assert got["rott"].sum() == expect["rott"].sum() or abs(got["rott"].sum() - expect["rott"].sum()) < 1e-9
    assert "wrote" in capsys.readouterr().out


def test_options_that_do_not_fit_the_format(capsys):
    assert main(["inspect", str(TRACES / "wireless" / "wlan_old.tr.gz"), "--flow-by", "fid"]) == 2
    assert "takes no option(s) flow_by" in capsys.readouterr().err
