"""The policer detector: its kernel against a plain twin, its parameter checks, and what it
calls on simulated token-bucket, queue and random losses (docstring of ldanalyze/lda/policer.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldanalyze as la
from ldanalyze.errors import UsageError
from ldanalyze.lda import Features, Replay
from ldanalyze.lda.policer import Policer
from ldanalyze.packets import Trace

from ..naive import lda as naive_lda
from ..support.limiters import simulated


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["policing", "congestion", "wireless"]),
    seed=st.integers(0, 10_000),
    n=st.integers(20, 400),
    span=st.integers(2, 24),
    history=st.integers(2, 20),
    min_losses=st.integers(2, 8),
)
def test_the_kernel_against_its_plain_twin(kind, seed, n, span, history, min_losses):
    tl = la.build_timeline(simulated(kind, n=n, seed=seed, p=0.1))
    lda = Policer(span=span, history=history, min_losses=min_losses)
    policed, _ = lda.policed(Features.of(tl, Replay()))
    assert policed.tolist() == naive_lda.policed_gaps(tl, lda)


@pytest.mark.parametrize(
    "kind, lowest, highest",
    [("policing", 0.9, 1.0), ("congestion", 0.0, 0.1), ("wireless", 0.0, 0.1)],  # the targets
)
def test_what_it_calls_policing_on_simulated_losses(kind, lowest, highest):
    """A constant-rate sender at 1.25 times the token rate, through a policer, a queue of ten
    packets, or 5 % random loss: policer drops called policing, the others not."""
    tl = la.build_timeline(simulated(kind))
    d = la.classify(tl, ["policer"])
    share = float((d["scheme"] == "policing").mean())
    assert lowest <= share <= highest, share
    assert not ((d["scheme"] == "policing") & (d["decision"] == "wireless")).any()  # called congestion


def test_the_delay_rise_boundary():
    """From 1 s on every packet arrives ``extra`` later (a standing queue): with 5.1 ms above the
    flow's lowest delay (which the 1 ms of jitter can only raise) no later loss is a policer's;
    with 3.9 ms (at most 4.9 ms with the jitter) the same losses are as without it."""
    lda = Policer()

    def later_policed(extra: float) -> np.ndarray:
        tl = la.build_timeline(_delayed(simulated("policing"), extra))
        f = Features.of(tl, Replay())
        late = (f.t - f.d)[np.maximum(f.si, 0)] > 1.0
        return lda.policed(f)[0] & late & (f.si >= 0)

    baseline = later_policed(0.0)
    assert baseline.sum() > 100
    assert not later_policed(0.0051).any()
    assert (later_policed(0.0039) == baseline).all()


def _delayed(trace: Trace, extra: float) -> Trace:
    """Every packet after the first second arrives ``extra`` seconds later (a standing queue)."""
    packets = trace.packets.copy()
    later = packets["t_send"] > 1.0
    packets.loc[later, "t_recv"] += extra
    return Trace(packets=packets, rtt=trace.rtt, path=trace.path, format=trace.format, meta={})


@pytest.mark.parametrize(
    "params, message",
    [
        ({"span": 1}, "span must be a whole number ≥ 2"),
        ({"history": 2.5}, "history must be a whole number ≥ 2"),
        ({"rate_tolerance": 1.5}, "rate_tolerance"),
        ({"max_delay_rise": 0}, "max_delay_rise"),
    ],
)
def test_bad_parameters_are_refused(params, message):
    with pytest.raises(UsageError, match=message):
        Policer(**params)


def test_named_but_not_in_all():
    from ldanalyze.lda import parse_ldas

    assert "policer" not in [lda.name for lda in parse_ldas("all")]
    assert [lda.spec for lda in parse_ldas("policer:span=8")] == ["policer:span=8"]


def test_it_keeps_the_lda_contract():
    from ldanalyze.testing import check_lda

    check_lda(Policer())
