"""The real ns-2 simulator: run a short scenario and check the labels against what was configured.

Needs the `ns` binary (Debian package ns2); in CI its absence is a failure, elsewhere a skip.
"""

from __future__ import annotations

import math
import subprocess

import pytest

from ldanalyze import read_trace

from ..conftest import TRACES, needs_binary, require_binary

pytestmark = [pytest.mark.ns2, needs_binary("ns")]


def run_scenario(tmp_path, **params):
    ns = require_binary("ns")
    out, em = tmp_path / "run.tr", tmp_path / "run.em"
    args = [f"{k}={v}" for k, v in params.items()] + [f"out={out}", f"emtrace={em}"]
    subprocess.run(
        [ns, str(TRACES.parent / "ldanalyze" / "data" / "paper000.tcl"), *args],
        check=True,
        capture_output=True,
        timeout=300,
    )
    with open(em) as f:
        em_uids = {int(line.split()[11]) for line in f if line.strip()}
    return out, em_uids


@pytest.mark.parametrize("emplace,reason", [("link", "link-error"), ("queue", "ingress-error")])
def test_labelled_wireless_loss_rate_matches_configured_rate(tmp_path, emplace, reason):
    rate = 0.1
    path, em_uids = run_scenario(
        tmp_path,
        topology="wlh",
        flows=1,
        traffic="cbr",
        loss="uniform",
        rate=rate,
        duration=60,
        seed=4242,
        cbr_share=0.9,
        emplace=emplace,
    )
    p = read_trace(path).packets
    p = p[p["flow"] == "1"]
    wireless = int((p["fate"] == "wireless").sum())
    crossed = wireless + int((p["fate"] == "delivered").sum())  # reached the wireless link's error model
    measured = wireless / crossed
    sigma = math.sqrt(rate * (1 - rate) / crossed)
    assert abs(measured - rate) < 4 * sigma, (measured, rate, crossed)
    assert set(p.loc[p["fate"] == "wireless", "uid"]) == em_uids
    assert (p.loc[p["fate"] == "wireless", "reason"] == reason).all()


def test_bottleneck_drops_happen_only_at_full_queues(tmp_path):
    """A TCP flow and bursty cross traffic overflow the 6-packet wireless-link queue."""
    path, em_uids = run_scenario(
        tmp_path, topology="wlh", flows=1, traffic="tcp", loss="uniform", rate=0.02, duration=40, seed=99, cross="expoo"
    )
    trace = read_trace(path)
    p = trace.packets
    congestion = p[p["fate"] == "congestion"]
    assert len(congestion) > 0
    # replay the queue of every link from the raw trace: each queue drop met a full queue
    # WLH with one flow: the shared (300 kb/s) and wireless (150 kb/s) links have limit 6, and
    # ns-2's DropTail drops an arriving packet when length + 1 >= limit (queue/drop-tail.cc)
    queue = {}
    full_at_drop = []
    dropped = set(congestion["uid"])
    with open(path) as f:
        for line in f:
            ev, _, a, b, *_rest, uid = line.split()
            link, uid = (int(a), int(b)), int(uid)
            if ev == "+":
                queue[link] = queue.get(link, 0) + 1
            elif ev == "-":
                queue[link] -= 1
            elif ev == "d" and uid in dropped:
                queue[link] -= 1  # it was counted by its own '+'
                full_at_drop.append(queue[link] >= 6 - 1)
    assert full_at_drop and all(full_at_drop)
    assert not (set(congestion["uid"]) & em_uids)
