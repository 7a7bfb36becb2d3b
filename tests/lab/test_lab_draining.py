"""A lab run whose bottleneck drains: the tbf rate steps from above the flow's rate to below it
and back, so the queue fills in the middle of the run and is empty before and after, while r1
drops at random all along. The chain recovers both kernel counters exactly, and the losses to
each cause come with the delays a receiver would see: low for the radio's outside the congested
phase, high for the queue's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ldanalyze as la
from ldanalyze.io.capture.vantage import read_vantages
from ldanalyze.lab import LabConfig, lab_unavailable, run_lab

from ..conftest import IN_CI

LAB_UNAVAILABLE = lab_unavailable()
pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(LAB_UNAVAILABLE is not None and not IN_CI, reason=f"{LAB_UNAVAILABLE} (CI runs it)"),
]
CONFIG = LabConfig(
    duration_s=6, rate="1M", tbf_rate="3mbit", tbf_steps=((2.0, "700kbit"), (3.5, "3mbit")), wireless_drop_percent=4
)


@pytest.fixture(scope="module")
def drained(tmp_path_factory):
    if LAB_UNAVAILABLE:
        pytest.fail(f"the network namespace lab must run in CI, but {LAB_UNAVAILABLE}")
    lab = run_lab(tmp_path_factory.mktemp("drain"), CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_vantages(lab.chain(), clocks="common")
    return lab, trace


def test_the_chain_recovers_both_counters(drained):
    lab, trace = drained
    label = f"{lab.sender_ip}:{lab.sender_port}>{lab.receiver_ip}:{lab.port}/udp"
    fates = trace.packets[trace.packets["flow"] == label]["fate"].value_counts()
    assert fates["wireless"] == lab.wireless_drops > 0
    assert fates["congestion"] == lab.bottleneck_drops > 0


def test_the_queue_drains_so_the_two_causes_look_different(drained):
    lab, trace = drained
    tl = la.build_timeline(trace)
    losses = tl.losses[tl.losses["detected"]]
    # the ROTT of the arrival that revealed each loss
    revealing = tl.arrivals.iloc[tl.gaps.loc[losses["gap"], "arrival"].to_numpy()]["rott"].to_numpy()
    cause = losses["cause"].to_numpy()
    assert np.median(revealing[cause == "wireless"]) < 0.5 * np.median(revealing[cause == "congestion"])
    scores = la.score(la.classify(tl, "spike,zbs,biaz"), tl.summary(), by="trace", bootstrap=0)
    print(scores[["lda", "congestion", "wireless", "M_c", "M_w"]].to_string())
    assert (scores["congestion"] > 0).all() and (scores["wireless"] > 0).all()
