"""The bundled ns-2 samples: ground truth cross-checked against the error models' own traces."""

from __future__ import annotations

import gzip

import pytest

from ldanalyze import build_timeline, read_trace

from .conftest import TRACES

WIRED = sorted(p.name[: -len(".tr.gz")] for p in TRACES.glob("*.tr.gz"))
WIRELESS = sorted(p.name for p in (TRACES / "wireless").glob("*.tr.gz"))


def test_there_are_samples():
    assert len(WIRED) >= 5 and len(WIRELESS) >= 4


@pytest.mark.parametrize("name", WIRED)
def test_wireless_labels_are_exactly_the_error_model_drops(name):
    """Every packet the error model dropped (its own trace) is labelled wireless, and no other."""
    trace = read_trace(TRACES / f"{name}.tr.gz", flows="all")  # the em file has every flow's drops
    with gzip.open(TRACES / f"{name}.em.gz", "rt") as f:
        em_uids = {int(line.split()[11]) for line in f if line.strip()}
    p = trace.packets
    assert set(p.loc[p["fate"] == "wireless", "uid"]) == em_uids
    # nothing is left unexplained: the scenarios drain the network before they stop
    assert set(p["fate"].astype(str)) <= {"delivered", "congestion", "wireless"}
    assert (p.loc[p["fate"] == "congestion", "reason"] == "queue").all()
    assert (p.loc[p["fate"] == "wireless", "reason"] == "link-error").all()


# counts from traces/README.md, made with awk (traces/tracestats.awk) from the raw files
README_COUNTS = {
    ("wlh_tfrc_1flow_high", "1"): (2114, 1945, 0, 169),
    ("wlh_cbr_1flow_bursty", "1"): (1292, 1150, 41, 101),
    ("wlh_cbr_1flow_bursty", "101"): (132, 114, 8, 10),
    ("wb_tfrc_2flow_medium", "1"): (5625, 5427, 0, 198),
    ("wb_tfrc_2flow_medium", "2"): (6221, 6028, 0, 193),
    ("wlh_tcp_1flow_high", "1"): (2028, 1862, 6, 160),
    ("wlh_mix_4flow_high", "1"): (1950, 1794, 4, 152),
    ("wlh_mix_4flow_high", "4"): (1970, 1790, 18, 162),
}


@pytest.mark.parametrize(("name", "flow"), sorted(README_COUNTS))
def test_counts_agree_with_awk(name, flow):
    s = build_timeline(read_trace(TRACES / f"{name}.tr.gz", flows="all")).summary().set_index("flow")
    row = s.loc[flow]
    assert (row["sent"], row["delivered"], row["congestion"], row["wireless"]) == README_COUNTS[(name, flow)]


# counts from traces/wireless/FORMAT.md (traces/wireless/flowcounts.awk)
WIRELESS_COUNTS = {
    # flow: (sent, delivered, last drop IFQ/--- (interface queue), MAC/RET, RTR/CBK+IFQ+NRTE (routing))
    "0.0>1.0": (1121, 453, 0, 6, 120 + 478 + 64),
    "2.0>1.1": (4584, 3042, 1111, 5, 241 + 121),
    "3.0>1.2": (59, 38, 0, 4, 10 + 6),
}


@pytest.mark.parametrize("fmt", ["old", "new"])
def test_wireless_sample_counts(fmt):
    trace = read_trace(TRACES / "wireless" / f"wlan_{fmt}.tr.gz")
    assert trace.format == f"ns2-wireless-{fmt}"
    s = build_timeline(trace).summary().set_index("flow")
    for flow, (sent, got, congestion, wireless, route) in WIRELESS_COUNTS.items():
        assert (s.loc[flow, "sent"], s.loc[flow, "delivered"]) == (sent, got)
        assert (s.loc[flow, "congestion"], s.loc[flow, "wireless"], s.loc[flow, "route"]) == (
            congestion,
            wireless,
            route,
        )


@pytest.mark.parametrize("name", ["wlan", "wlan_simple"])
def test_old_and_new_wireless_formats_agree(name):
    old = read_trace(TRACES / "wireless" / f"{name}_old.tr.gz").packets
    new = read_trace(TRACES / "wireless" / f"{name}_new.tr.gz").packets
    assert old.equals(new)


def test_mac_simple_sample_has_err_drops_and_energy_fields():
    p = read_trace(TRACES / "wireless" / "wlan_simple_old.tr.gz").packets
    reasons = p.loc[p["fate"] == "wireless", "reason"].value_counts()
    assert reasons["MAC ERR"] == 134 and reasons["MAC COL"] == 466
