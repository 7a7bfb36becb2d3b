"""The LDAs that read the radio's evidence (``ldanalyze/lda/radio.py``): ``macseq``'s rule at each
boundary, on hand-built timelines whose arrivals carry ``air_unseen``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ldanalyze.errors import UsageError
from ldanalyze.lda import classify
from ldanalyze.packets import AIR_COLUMNS, make_packet_table
from ldanalyze.timeline import build_timeline


def timeline(fates: str, unseen: dict[int, int], qos: bool = True):
    """One flow, a packet every 10 ms: ``fates`` a letter each (``d`` delivered, ``c``
    congestion, ``w`` wireless); ``unseen`` the air_unseen of an arrival by its sequence
    number (0 for the others); ``qos`` whether its frames were QoS data."""
    n = len(fates)
    t = np.arange(n) * 0.01
    got = np.array([f == "d" for f in fates])
    table = make_packet_table(
        flow=["a"] * n,
        seq=np.arange(n),
        t_send=t,
        t_recv=np.where(got, t + 0.02, np.nan),
        fate=[{"d": "delivered", "c": "congestion", "w": "wireless"}[f] for f in fates],
        size=[500] * n,
    )
    air_unseen = np.array([unseen.get(k, 0) if got[k] else -1 for k in range(n)], np.int64)
    values = (got.astype(np.int64), np.zeros(n, bool), table["t_recv"], table["t_recv"], air_unseen, got & qos)
    return build_timeline(table.assign(**dict(zip(AIR_COLUMNS, values, strict=True))))


@pytest.mark.parametrize(
    ("fates", "unseen", "calls"),
    [
        ("dcd", {2: 0}, ["congestion"]),  # every number seen: never on the air
        ("dwd", {2: 1}, ["wireless"]),  # one number unseen for one loss
        ("dwcd", {3: 1}, ["wireless"] * 2),  # one of two: half, called wireless
        ("dwccd", {4: 1}, ["congestion"] * 3),  # one of three: most never went out
        ("dwwcd", {4: 2}, ["wireless"] * 3),  # two of three
        ("dwd", {2: 5}, ["wireless"]),  # more unseen than lost: other frames missed too
        ("dwd", {2: -1}, ["wireless"]),  # not known: nothing proves it never went out
    ],
)
def test_macseq_calls_by_the_numbers_unseen(fates, unseen, calls):
    decisions = classify(timeline(fates, unseen), "macseq")
    assert decisions["decision"].astype(str).tolist() == calls


def test_macseq_needs_the_radio_evidence():
    plain = build_timeline(
        make_packet_table(
            flow=["a"] * 3,
            seq=[0, 1, 2],
            t_send=[0, 1, 2],
            t_recv=[1, np.nan, 3],
            fate=["delivered", "wireless", "delivered"],
            size=[1] * 3,
        )
    )
    with pytest.raises(UsageError, match="monitor-mode capture"):
        classify(plain, "macseq")
    assert "macseq" not in set(pd.unique(classify(plain, "all")["lda"]))  # named, not in "all"
