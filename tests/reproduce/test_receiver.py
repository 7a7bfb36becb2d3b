"""The closed loop's two receivers on paper (issue #46 §2), without ns-2: the README names the
reading of §IV its runs used, and the both-ways page sets each beside the paper's Tables II and
III with its own count of cells within 5 points."""

from __future__ import annotations

import pandas as pd

from ldanalyze.reproduce import LDAS, registry
from ldanalyze.reproduce.readme import _receiver
from ldanalyze.reproduce.tables import receiver_page


def _closed(shift: float) -> pd.DataFrame:
    """One flow, uniform 7.8 %, one seed: every cell at the paper's value (ZBS, which the tables
    leave out, at 50 %), thput moved by ``shift`` points for every LDA."""
    rows = []
    for topology in ("wlh", "wb"):
        paper = registry.paper_table(topology)
        for lda in LDAS:
            rows.append(
                {
                    "topology": topology,
                    "flows": 1,
                    "loss": "uniform",
                    "rate": 0.078,
                    "seed": 1,
                    "lda": lda,
                    "thput": (paper["thput"].get(lda, 50) + shift) / 100,
                    "congestion_rate": paper["cong."].get(lda, 0) / 100,
                    "M_c": paper["M_c"].get(lda, 0) / 100,
                    "M_w": paper["M_w"].get(lda, 0) / 100,
                    "accuracy": 1.0,
                }
            )
    return pd.DataFrame(rows)


def test_the_page_sets_both_receivers_beside_the_paper():
    page = receiver_page(_closed(0.0), _closed(-10.0), "Made by hand.")
    assert page.startswith("### The receiver of §IV both ways")
    assert "Made by hand." in page and "--wireless-as-received" in page
    # 10 thput cells per topology pair (TFRC, omniscient, four LDAs in II and III) move 10 points
    assert "- ns2 loop: **40 of 40 cells within 5 points**" in page
    assert "- iv loop: **28 of 40 cells within 5 points**" in page
    assert "gaps added up (absolute, points): ns2 0.0, iv 120.0" in page
    assert "mBiaz's throughput in WB (Table III, the issue's question): ns2 91.0 %, iv 81.0 %, the paper's 91 %" in page
    assert "closer to the paper (more cells within 5 points, then the smaller summed gap) is **ns2**" in page
    assert "closer to the paper" in receiver_page(_closed(0.0), _closed(0.0), "") and "is **ns2**" in page
    assert "is **iv**" in receiver_page(_closed(-10.0), _closed(0.0), "")
    assert "| thput (ns2) | 84.0 | 99.0 | 99.0 | 99.0 | 99.0 | 98.0 |" in page
    assert "| thput (iv) | 74.0 | 89.0 | 89.0 | 89.0 | 89.0 | 88.0 |" in page
    assert "bursty" not in page  # a loss model without runs is left out


def test_the_readme_names_the_receiver_its_runs_used():
    assert "counted the packets that arrived only" in _receiver(pd.DataFrame({"lda": ["biaz"]}))  # before the option
    assert "counted the packets that arrived only" in _receiver(pd.DataFrame({"wireless_as_received": [0, 0]}))
    assert "also counted as received" in _receiver(pd.DataFrame({"wireless_as_received": [1, 1]}))
    assert "mix both" in _receiver(pd.DataFrame({"wireless_as_received": [0, 1]}))
