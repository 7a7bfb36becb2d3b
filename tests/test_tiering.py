"""The interpreted runs of the kernels (ldanalyze/tiering.py) give what the compiled kernels give,
byte for byte: on every real capture, on damaged real captures (same records or the same error),
on the clock and jitter kernels, and in every LDA and controller (generated captures of every
link type and container: tests/io/capture/test_pcap_read.py's twin test)."""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

import ldanalyze as la
from ldanalyze import clocks, tiering, timeline
from ldanalyze.errors import TraceError, UsageError
from ldanalyze.io.capture import pcap, walk

from .conftest import TRACES
from .io.capture.test_fuzz_captures import DATA, damaged

REAL = sorted((pathlib.Path(__file__).parent / "data" / "real").glob("**/*.pcap*")) + sorted(
    (TRACES / "captures").glob("*.pcap")
)


REAL_CALLS = sorted((pathlib.Path(__file__).parent / "data" / "real").glob("*.pcap*")) + [
    TRACES / "captures" / "lab_receiver.pcap"
]


def both(monkeypatch, call):
    """``call()`` with compiled kernels, then with interpreted ones: (result or error text) each."""
    outcomes = []
    for mode in ("compiled", "interpreted"):
        monkeypatch.setenv("LDANALYZE_KERNELS", mode)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcomes.append(call())
        except (TraceError, UsageError) as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
    return outcomes


def same_decode(monkeypatch, path) -> None:
    compiled, interpreted = both(monkeypatch, lambda: pcap.decode_capture(path))
    if isinstance(compiled, str):
        assert interpreted == compiled
        return
    assert interpreted.records.tobytes() == compiled.records.tobytes()
    assert interpreted.flows.equals(compiled.flows)
    assert interpreted.counts == compiled.counts


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_captures_decode_the_same_interpreted(monkeypatch, path):
    same_decode(monkeypatch, path)


@pytest.mark.parametrize("path", REAL_CALLS, ids=lambda p: p.name)
def test_real_calls_read_the_same_interpreted(monkeypatch, path):
    """Past the decode: the flows' rows, TTLs, extents and RTP headers (``_rows_by_flow``,
    ``_count_ttls``, ``flow_extents``, ``rtp.header_fields``) run interpreted on a small capture;
    the same packet table and meta either way."""
    compiled, interpreted = both(monkeypatch, lambda: la.read_trace(str(path)))
    if isinstance(compiled, str):
        assert interpreted == compiled
        return
    pd.testing.assert_frame_equal(interpreted.packets, compiled.packets)
    assert interpreted.meta["flows"] == compiled.meta["flows"]


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.tr.gz")), ids=lambda p: p.name)
def test_ns2_wired_traces_read_the_same_interpreted(monkeypatch, path):
    """The wired reader's kernels (scan_rows, first_sightings, walk_events) run interpreted on
    a small trace; the same packets either way, and the same error on a damaged line."""
    compiled, interpreted = both(monkeypatch, lambda: la.read_trace(str(path)))
    pd.testing.assert_frame_equal(interpreted.packets, compiled.packets)
    assert interpreted.rtt is None or interpreted.rtt.equals(compiled.rtt)


def test_ns2_wired_errors_are_the_same_interpreted(monkeypatch, tmp_path):
    good = "+ 0.1 0 1 cbr 500 ------- 1 0.0 1.0 0 0\n- 0.1 0 1 cbr 500 ------- 1 0.0 1.0 0 0\n"
    for bad in ("+ 0.05 0 1 cbr 500 ------- 1 0.0 1.0 0 1\n", "+ 0.2 0 1 cbr 500 ------- 1 0.0 1.0 7 0\n"):
        path = tmp_path / "bad.tr"
        path.write_text(good + bad)
        compiled, interpreted = both(monkeypatch, lambda: la.read_trace(str(path)))
        assert isinstance(compiled, str) and interpreted == compiled


@pytest.mark.parametrize("name", sorted(DATA))
def test_damaged_captures_decode_or_fail_the_same_interpreted(tmp_path_factory, name):
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(damaged(name))
    def run(data):
        path = tmp_path_factory.mktemp("tierfuzz") / name
        path.write_bytes(data)
        with pytest.MonkeyPatch.context() as monkeypatch:
            same_decode(monkeypatch, path)

    run()


finite = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e3, allow_nan=False), finite), min_size=2, max_size=60))
def test_envelope_line_interpreted(points):
    points.sort()
    t = np.array([p[0] for p in points])
    d = np.array([p[1] for p in points])
    with np.errstate(all="ignore"):  # (5e-324, 1.0): a slope of inf, an intercept of NaN, in both
        hull = clocks._lower_hull(t, d)
        np.testing.assert_array_equal(
            clocks._envelope_line(t, d, hull),
            tiering.interpreted(clocks._envelope_line)(t, d, tiering.interpreted(clocks._lower_hull)(t, d)),
        )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e6, allow_nan=False), st.booleans()), max_size=80))
def test_rfc3550_jitter_interpreted(values):
    abs_d = np.array([v[0] for v in values], np.float64)
    starts = np.array([v[1] for v in values], bool)
    assert np.array_equal(
        timeline.rfc3550_jitter(abs_d, starts), tiering.interpreted(timeline.rfc3550_jitter)(abs_d, starts)
    )


# -- the choice ----------------------------------------------------------------------------------
def test_the_choice_follows_the_setting_and_the_estimate(monkeypatch):
    @njit
    def kernel(x):
        return x + 1

    monkeypatch.setenv("LDANALYZE_KERNELS", "compiled")
    assert tiering.pick(kernel, 1e-9) is kernel
    monkeypatch.setenv("LDANALYZE_KERNELS", "interpreted")
    assert tiering.pick(kernel, 1e9) is not kernel
    monkeypatch.setenv("LDANALYZE_KERNELS", "auto")
    cost = tiering.compile_s(kernel)

    def fresh(on_disk: bool) -> None:  # no interpreted time spent yet
        monkeypatch.setattr(tiering, "_SPENT", {})
        monkeypatch.setattr(tiering, "_on_disk", lambda k: on_disk)

    fresh(False)
    assert tiering.pick(kernel, cost * 2) is kernel  # long work: compile
    assert tiering.pick(kernel, cost / 2)(1) == 2 and not kernel.overloads
    fresh(True)  # cached: loading beats that work
    assert tiering.pick(kernel, cost / 2) is kernel
    assert tiering.pick(kernel, cost * tiering.CACHE_LOAD_SHARE / 2) is not kernel
    fresh(False)  # short calls run interpreted until their sum would pay for compiling
    calls = [tiering.pick(kernel, cost / 4) is not kernel for _ in range(5)]
    assert calls == [True, True, True, False, False]
    fresh(False)
    items = int(cost * 1e6 / 3)  # call() estimates 1 us an element: 3x under the cost, then 3x over
    assert tiering.call(kernel, np.zeros(items))[0] == 1 and not kernel.overloads
    assert tiering.call(kernel, np.zeros(items * 9))[0] == 1 and kernel.overloads
    monkeypatch.setenv("LDANALYZE_KERNELS", "auto")
    kernel(1)
    assert tiering.pick(kernel, 1e-9) is kernel  # machine code at hand is always used
    monkeypatch.setenv("LDANALYZE_KERNELS", "fast")
    with pytest.raises(ValueError, match="LDANALYZE_KERNELS must be one of"):
        tiering.pick(kernel, 1.0)


def test_compile_cost_counts_the_kernels_called():
    assert (
        tiering.compile_s(walk.walk_pcap)
        > tiering.compile_s(walk.decode_frame)
        > tiering.compile_s(walk.decode_frame.py_func.__globals__["network_start"])
        > tiering.COMPILE_BASE_S
    )


def test_twins_call_twins_not_compiled_kernels():
    twin = tiering._interpreted_function(walk.walk_pcap)
    assert not isinstance(twin.__globals__["decode_frame"], type(walk.walk_pcap))
    assert twin.__globals__["decode_frame"].__globals__["network_start"] is tiering._interpreted_function(
        walk.decode_frame.py_func.__globals__["network_start"]
    )


@pytest.mark.parametrize("name", ["wlh_mix_4flow_high.tr.gz", "wb_tfrc_2flow_medium.tr.gz"])
def test_every_lda_and_controller_replays_the_same_interpreted(monkeypatch, name):
    tl = la.build_timeline(la.read_trace(TRACES / name))

    def run():
        decisions = la.classify(tl, "all")
        result = la.replay(tl, "all", "all")
        return decisions, result.rates, result.summary

    compiled, interpreted = both(monkeypatch, run)
    for a, b in zip(compiled, interpreted, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_preload_loads_from_the_cache_only_what_pick_would_take(monkeypatch):
    """``preload`` starts a thread only for kernels on disk and not yet loaded, and only where
    the work would make ``pick`` take machine code; it never compiles."""
    started = []
    monkeypatch.setattr(tiering.threading, "Thread", lambda target, args, daemon: started.append(args[0]) or _Idle())
    monkeypatch.setattr(tiering, "_on_disk", lambda kernel: kernel is _cached)
    monkeypatch.setenv("LDANALYZE_KERNELS", "auto")
    tiering.preload([_cached, _not_cached], 0.0)  # too little work: interpreted runs are cheaper
    assert started == []
    tiering.preload([_cached, _not_cached], 100.0)
    assert started == [[_cached]]
    monkeypatch.setenv("LDANALYZE_KERNELS", "interpreted")
    tiering.preload([_cached], 100.0)
    assert len(started) == 1


class _Idle:
    def start(self) -> None:
        pass


@njit
def _cached(x):
    return x + 1


@njit
def _not_cached(x):
    return x + 2
