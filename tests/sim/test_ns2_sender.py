"""The sender's LDAs on the real simulator: four TCP NewReno flows of paper 000's WLH and WB
topologies (2 % uniform radio loss), read at their source nodes (``read_trace(view="sender")``).
The sender's view holds the receiver's truth; every sender LDA decides every loss its sender
acted on; and the figures docs/ldas.md quotes ("The sender's view", the table) are these runs'.

Needs the `ns` binary (Debian package ns2); in CI its absence is a failure, elsewhere a skip.
"""

from __future__ import annotations

import functools
import re
import subprocess

import pandas as pd
import pytest

import ldanalyze as la

from ..conftest import TRACES, needs_binary, require_binary

pytestmark = [pytest.mark.ns2, needs_binary("ns")]

SCENARIO = {"flows": 4, "traffic": "tcp", "loss": "uniform", "rate": 0.02, "duration": 100, "seed": 1}
SENDER_LDAS = ["unaware", "adaptive_rtt", "spike@rtt", "zigzag@rtt", "wro_ldaplus@rtt", "veno_sender", "vegas"]


@functools.cache
def run(topology: str, folder: str) -> str:
    out = f"{folder}/{topology}.tr"
    args = [f"{k}={v}" for k, v in {**SCENARIO, "topology": topology}.items()]
    subprocess.run(
        [require_binary("ns"), str(TRACES.parent / "ldanalyze" / "data" / "paper000.tcl"), *args, f"out={out}"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("ns2_sender"))
    return {topology: run(topology, folder) for topology in ("wlh", "wb")}


def docs_table() -> pd.DataFrame:
    """docs/ldas.md's table of the sender's LDAs on these runs: one row per LDA and topology."""
    text = (TRACES.parent / "docs" / "ldas.md").read_text()
    table = text.split("<!-- ns-2 sender table -->\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    rows = []
    for line in table:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        name = re.sub(r"`", "", cells[0])
        for topology, m_c, m_w in (("wlh", cells[1], cells[2]), ("wb", cells[3], cells[4])):
            rows.append({"lda": name, "topology": topology, "M_c": float(m_c), "M_w": float(m_w)})
    return pd.DataFrame(rows)


def test_the_sender_view_holds_the_truth_and_every_sender_lda_decides(traces):
    for path in traces.values():
        sender, receiver = la.read_trace(path, view="sender"), la.read_trace(path)
        joined = receiver.packets.merge(sender.packets, on="uid", suffixes=("", "_s"))
        assert len(joined) == len(receiver.packets) and (joined["fate"] == joined["fate_s"]).all()
        tl = la.build_timeline(sender)
        decisions = la.classify(tl, SENDER_LDAS)
        detected = decisions[decisions["decision"] != "undetected"]
        assert len(detected) == len(SENDER_LDAS) * int(tl.losses["detected"].sum())
        assert (~tl.losses["detected"]).mean() < 0.02  # TCP acts on nearly every loss
        assert set(detected["decision"].astype(str)) == {"congestion", "wireless"}


def test_the_docs_table_is_these_runs(traces):
    quoted = docs_table()
    assert set(quoted["lda"]) == set(SENDER_LDAS) - {"unaware"}
    for topology, path in traces.items():
        tl = la.build_timeline(la.read_trace(path, view="sender"))
        scores = la.score(la.classify(tl, SENDER_LDAS), tl.summary(), by="pooled", bootstrap=0).set_index("lda")
        mine = quoted[quoted["topology"] == topology].set_index("lda")
        for lda, row in mine.iterrows():
            assert round(100 * scores.loc[lda, "M_c"], 1) == row["M_c"], (topology, lda, "M_c")
            assert round(100 * scores.loc[lda, "M_w"], 1) == row["M_w"], (topology, lda, "M_w")
