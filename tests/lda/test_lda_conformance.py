"""The conformance suite every registered LDA must pass (in the spirit of scikit-learn's
estimator checks): determinism, no loss → no decision, one decision per lost packet, causal
replay (prefix invariance), parameter round trip, and the two reference points."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pandas as pd
import pytest

import ldanalyze as la
from ldanalyze.lda import LDA, REGISTRY, Features, Replay, Verdict, classify, get_lda, lda_state, parse_ldas
from ldanalyze.packets import make_packet_table
from ldanalyze.testing import check_lda, radio_evidence
from ldanalyze.timeline import build_timeline

from ..conftest import TRACES

NAMES = list(REGISTRY)
REPLAYS = [Replay(), Replay(update_first=False, gap_delay="previous"), Replay(detection=3)]


def _build(source):
    """The timeline of a trace or PacketTable with a monitor-mode capture's radio evidence, so
    that the LDAs that read it (macseq) run too."""
    if isinstance(source, la.Trace):
        return build_timeline(
            dataclasses.replace(source, packets=source.packets.assign(**radio_evidence(source.packets)))
        )
    return build_timeline(source.assign(**radio_evidence(source)))


@functools.cache
def sample(name: str) -> la.Trace:
    return la.read_trace(TRACES / f"{name}.tr.gz")


def timeline(name: str = "wlh_mix_4flow_high"):
    return _build(sample(name))


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_and_one_decision_per_lost_packet(name):
    tl = timeline()
    first = classify(tl, [name])
    second = classify(timeline(), [name])
    pd.testing.assert_frame_equal(first, second)
    assert len(first) == len(tl.losses)
    assert first["uid"].tolist() == tl.losses["uid"].tolist()
    undetected = first["decision"] == "undetected"
    assert (undetected == ~tl.losses["detected"].to_numpy()).all()
    assert first.loc[~undetected, "decision"].isin(["congestion", "wireless"]).all()


@pytest.mark.parametrize("name", NAMES)
def test_no_loss_no_decision_and_empty_trace(name):
    t = np.arange(20) * 0.01
    table = make_packet_table(
        flow=["a"] * 20,
        seq=np.arange(20),
        t_send=t,
        t_recv=t + 0.05 + (t % 0.03),
        fate=["delivered"] * 20,
        size=[500] * 20,
    )
    tl = _build(table)
    tl.meta["clock"] = "common"
    assert classify(tl, [name]).empty
    assert len(lda_state(tl, name)) == 20
    empty = _build(table.iloc[:0])
    assert classify(empty, [name]).empty


@pytest.mark.parametrize("name", NAMES)
def test_all_lost_is_all_undetected(name):
    table = make_packet_table(
        flow=["a"] * 5,
        seq=np.arange(5),
        t_send=np.arange(5.0),
        t_recv=[np.nan] * 5,
        fate=["wireless"] * 5,
        size=[500] * 5,
    )
    d = classify(_build(table), [name])
    assert d["decision"].astype(str).tolist() == ["undetected"] * 5


def prefix(tl_full_packets: pd.DataFrame, rtt: pd.DataFrame, meta: dict, t_cut_send: float):
    """The receiver's view of the trace's packets sent up to ``t_cut_send``, and the time up to
    which it is identical to the full trace's view (the first arrival of a later packet)."""
    p = tl_full_packets
    keep = p["t_send"] <= t_cut_send
    later = p.loc[~keep, "t_recv"].min()
    view_ends = later if later == later else np.inf
    part = _build(p[keep].reset_index(drop=True))
    part = dataclasses.replace(part, rtt=rtt[rtt["t"] < view_ends], meta=dict(meta))
    return part, view_ends


@pytest.mark.parametrize("semantics", REPLAYS, ids=["default", "classify-first-previous", "detect-3"])
@pytest.mark.parametrize("trace", ["wlh_mix_4flow_high", "wlh_cbr_1flow_bursty"])
def test_prefix_invariance(trace, semantics):
    """Decisions made before time t do not change when later packets are appended."""
    full_tl = timeline(trace)
    full = classify(full_tl, "all", semantics=semantics)
    span = full_tl.packets["t_send"].max()
    for frac in (0.2, 0.55, 0.9):
        part_tl, view_ends = prefix(full_tl.packets, full_tl.rtt, full_tl.meta, frac * span)
        part = classify(part_tl, "all", semantics=semantics)
        early = full[full["t_decide"] < view_ends]
        assert len(early) > 0
        merged = early.merge(part, on=["lda", "uid"], how="left", suffixes=("", "_part"))
        pd.testing.assert_series_equal(
            merged["decision"].astype(str), merged["decision_part"].astype(str), check_names=False
        )


@pytest.mark.parametrize("name", NAMES)
def test_parameter_round_trip(name):
    lda = get_lda(name)
    assert type(lda)(**lda.params()) == lda
    assert get_lda(name, **lda.params()) == lda
    assert parse_ldas(lda.spec) == [lda]
    fields = dataclasses.fields(lda)
    if fields:
        changed = {}
        for f in fields:
            value = getattr(lda, f.name)
            if isinstance(value, bool) or value is None or isinstance(value, str):
                continue
            if isinstance(value, tuple):
                changed[f.name] = tuple(v * 0.9 for v in value)
            elif isinstance(value, int):
                changed[f.name] = value + 1
            else:
                changed[f.name] = value * 0.9
        if not changed:  # only text parameters (learned: the model file)
            changed = {f.name: getattr(lda, f.name) + "-other" for f in fields if isinstance(getattr(lda, f.name), str)}
        other = get_lda(name, **changed)
        assert other != lda
        assert parse_ldas(other.spec) == [other]
        assert hash(other) != hash(lda) or other != lda
    with pytest.raises(dataclasses.FrozenInstanceError):
        lda.__setattr__("x", 1)


def test_unaware_and_omniscient_are_the_reference_points():
    tl = timeline()
    d = classify(tl, ["unaware", "omniscient"])
    known = d[d["cause"].isin(["congestion", "wireless"]) & (d["decision"] != "undetected")]
    unaware = known[known["lda"] == "unaware"]
    omni = known[known["lda"] == "omniscient"]
    wireless = unaware["cause"] == "wireless"
    assert wireless.sum() > 0 and (~wireless).sum() > 0
    assert (unaware["decision"] == "congestion").all()  # M_w = 100 %, M_c = 0
    assert (omni["decision"].astype(str) == omni["cause"]).all()  # M_c = M_w = 0


def test_every_loss_of_a_gap_gets_the_gap_decision():
    d = classify(timeline(), "all")
    gaps = d[(d["gap"] >= 0) & (d["lda"] != "omniscient")]
    per_gap = gaps.groupby(["lda", "flow", "gap"], observed=True)["decision"].nunique()
    assert (per_gap == 1).all()
    assert (gaps.groupby(["lda", "flow", "gap"], observed=True).size() > 1).any()


def test_all_specs_in_one_call_keep_their_order():
    d = classify(timeline("wlh_tcp_1flow_high"), "zigzag,mbiaz:upper=1.5,zigzag:dev_factors=[-1,-0.5,0,-0.5]")
    assert list(d["lda"].cat.categories) == ["zigzag", "mbiaz:upper=1.5", "zigzag:dev_factors=[-1.0,-0.5,0.0,-0.5]"]


# --- the shipped kit: ldanalyze.testing.check_lda ------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_lda_passes_the_shipped_kit(name):
    check_lda(get_lda(name))


def test_the_worked_example_of_docs_ldas_md_runs_and_passes(monkeypatch):
    """The custom LDA of docs/ldas.md, run as shown from the repository's root."""
    text = (TRACES.parent / "docs" / "ldas.md").read_text()
    example = text.split("## Your own LDA")[1].split("```python\n")[1].split("```")[0]
    monkeypatch.chdir(TRACES.parent)
    scope: dict = {}
    exec(compile(example, "docs/ldas.md", "exec"), scope)  # the docs' own code
    assert set(scope["decisions"]["lda"].astype(str)) == {"near_the_floor", "spike"}


@dataclasses.dataclass(frozen=True)
class _AboveTheMedian(LDA):
    """Non-causal: judges each gap against the median delay of the whole trace."""

    name = "above_the_median"

    def decide(self, f: Features) -> Verdict:
        return Verdict(wireless=f.gdelay < (np.median(f.d) if len(f.d) else 0.0))


@dataclasses.dataclass(frozen=True)
class _Alternating(LDA):
    """Splits gaps: every other lost packet (by uid) is wireless."""

    name = "alternating"

    def decide(self, f: Features) -> Verdict:
        return Verdict(wireless=f.timeline.losses["uid"].to_numpy() % 2 == 1, per_loss=True)


@dataclasses.dataclass  # not frozen
class _Mutable(LDA):
    name = "mutable"
    margin: float = 0.01

    def decide(self, f: Features) -> Verdict:
        return Verdict(wireless=np.zeros(len(f.n), bool))


@pytest.mark.parametrize(
    ("lda", "rule"),
    [
        (_AboveTheMedian(), "causal: "),
        (_Alternating(), "one decision per gap: "),
        (_Mutable(), "parameters round trip: the LDA is not frozen"),
    ],
)
def test_the_kit_names_the_rule_a_broken_lda_breaks(lda, rule):
    with pytest.raises(AssertionError, match=f"check_lda\\({lda.name}\\): {rule}"):
        check_lda(lda)
    with pytest.raises(TypeError, match="takes an LDA instance"):
        check_lda("spike")
