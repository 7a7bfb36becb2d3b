"""Rate controllers: every numba kernel against its plain twin in tests/naive/control.py.

Hypothesis draws packet tables (losses, reordering, duplicates, pauses), RTT samples from
feedback or none, and for every detected loss a congestion/wireless decision; kernel and twin
must then allow the same rate after every arrival.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.control import PathModel, Signals, get_controller

from ..lda.test_lda_twins import timeline
from ..naive import control as naive_control
from ..support.strategies import packet_tables, rtt_samples

#: controller name -> parameter sets to replay (the defaults first)
VARIANTS = {
    "tfrc": [
        {},
        {"discounting": True},
        {"n": 4, "b": 2.0, "rto_factor": 2.5, "t_mbi": 1.0},
        {"receive": "trace"},
        {"receive": "trace", "discounting": True},
    ],
    "ldaplus": [{}, {"T": 0.05}, {"T": 0.02, "r_0": 400_000.0, "A_0": 2_000.0, "D": 2.0}],
    "westwood_be": [
        {},
        {"tau": 0.01, "initial_window": 1.0, "max_window": 4.0, "min_rto": 0.01},
        {"tau": 0.05, "lda_in_slow_start": False},
    ],
    "westwood_abse": [
        {},
        {"beta": 0.0, "N": 2.0, "history": 1, "min_rto": 0.01},
        {"beta": 1.0, "history": 3, "max_window": 3.0, "lda_in_slow_start": False},
    ],
    "xrtp": [
        {},
        {"estimator": "ewma", "alpha": 0.6},
        {"pair_gap": 0.001, "n": 3, "width": 0.6, "jitters": 1, "halving": "loss"},
        {"estimator": "ewma", "alpha": 0.0, "pair_gap": 2**-10, "jitters": 2},
    ],
    "newreno": [{}, {"initial_window": 1.0, "max_window": 4.0, "min_rto": 0.01}],
}


def twin_inputs(sig: Signals, congestion: np.ndarray):
    """The twin's plain input: one dict per arrival, one per detected loss."""
    keys = (
        "start",
        "t_recv",
        "t_send",
        "t",
        "seq",
        "size",
        "s",
        "R",
        "srtt",
        "rttvar",
        "rtt_min",
        "rtt",
        "jitter",
        "new",
    )
    columns = {k: getattr(sig, k).tolist() for k in keys}
    columns["capacity"] = sig.capacity[sig.flow].tolist()  # bytes/s of the arrival's flow
    arrivals = [{k: columns[k][i] for k in (*keys, "capacity")} for i in range(len(sig.t))]
    losses = [
        {"at": int(a), "seq": int(q), "t": float(t), "congestion": bool(c)}
        for a, q, t, c in zip(sig.loss_at, sig.loss_seq, sig.loss_t, congestion, strict=True)
    ]
    return arrivals, losses


def check(sig: Signals, congestion: np.ndarray, name: str, params: dict) -> None:
    arrivals, losses = twin_inputs(sig, congestion)
    want = np.asarray(naive_control.CONTROLLER_TWINS[name](arrivals, losses, **params), dtype=float) * 8
    got, _ = get_controller(name, **params).run(sig, congestion)
    np.testing.assert_allclose(got, want, rtol=1e-7, equal_nan=True, err_msg=f"{name} {params}")


@pytest.mark.parametrize("name", sorted(VARIANTS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_twin_kernels_match(name, data):
    packets = data.draw(packet_tables(max_packets=120), label="packets")
    feedback = data.draw(st.booleans(), label="feedback")
    rtt = data.draw(rtt_samples(packets), label="rtt") if feedback else ()
    sig = Signals.of(timeline(packets, rtt))
    congestion = np.array(
        data.draw(st.lists(st.booleans(), min_size=len(sig.loss_at), max_size=len(sig.loss_at))), dtype=bool
    )
    for params in VARIANTS[name]:
        check(sig, congestion, name, params)


@pytest.mark.parametrize("name", sorted(VARIANTS))
@settings(max_examples=15, deadline=None)
@given(packets=packet_tables(max_packets=80))
def test_twin_kernels_match_on_separate_clocks(name, packets):
    sig = Signals.of(timeline(packets, (), clock="separate"), path=PathModel(base_rtt=0.05))
    congestion = np.ones(len(sig.loss_at), bool)
    for params in VARIANTS[name]:
        check(sig, congestion, name, params)


def test_every_registered_controller_has_a_twin_and_variants():
    from ldanalyze.control import REGISTRY

    assert set(REGISTRY) == set(VARIANTS) == set(naive_control.CONTROLLER_TWINS)
    assert all(v and v[0] == {} for v in VARIANTS.values())


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.booleans(),  # a flow starts here
            st.sampled_from([0.0, 0.001, 0.25, 1.0]),  # time since the arrival before
            st.sampled_from([0.0, 1.5e5, 2e6, 8e6, np.inf, np.nan]),  # the rate
        ),
        min_size=1,
        max_size=40,
    ),
    caps=st.lists(st.sampled_from([1e6, 4e6, np.nan]), min_size=1, max_size=4),
)
def test_rate_averages_as_the_twin(steps, caps):
    from ldanalyze.control.base import rate_averages

    start = np.array([True] + [s for s, _, _ in steps[1:]])
    flow = np.minimum(np.cumsum(start) - 1, len(caps) - 1)
    start |= np.r_[True, flow[1:] != flow[:-1]]  # a flow's arrivals contiguous
    t = np.cumsum([dt for _, dt, _ in steps])
    rate = np.array([r for _, _, r in steps])
    cap = np.array(caps)
    with np.errstate(invalid="ignore", divide="ignore"):
        got = rate_averages(t, start, flow, len(caps), rate, cap)
        interpreted = rate_averages.py_func(t, start, flow, len(caps), rate, cap)
    twin = naive_control.rate_averages(t, start, flow.tolist(), len(caps), rate.tolist(), cap.tolist())
    for mine, plain, theirs in zip(got, interpreted, twin, strict=True):
        np.testing.assert_array_equal(mine, np.array(theirs))
        np.testing.assert_array_equal(plain, np.array(theirs))
