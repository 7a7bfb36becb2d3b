"""The conformance suite every registered LDA must pass (in the spirit of scikit-learn's
estimator checks): the shipped kit (``ldanalyze.testing``), one test per LDA and rule, and what
it finds in LDAs that break its rules; beyond it, causal replay (prefix invariance) over the
bundled traces, parameter round trips with other values, and the two reference points."""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import ldanalyze as la
from ldanalyze import testing
from ldanalyze.lda import LDA, REGISTRY, Features, Replay, Verdict, classify, get_lda, parse_ldas
from ldanalyze.lda.baselines import Omniscient
from ldanalyze.lda.radio import MacSeq
from ldanalyze.lda.rott import Spike
from ldanalyze.testing import ConformanceError, check_lda, lda_checks, parametrize_with_checks, radio_evidence
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


def test_all_specs_in_one_call_keep_their_order():
    d = classify(timeline("wlh_tcp_1flow_high"), "zigzag,mbiaz:upper=1.5,zigzag:dev_factors=[-1,-0.5,0,-0.5]")
    assert list(d["lda"].cat.categories) == ["zigzag", "mbiaz:upper=1.5", "zigzag:dev_factors=[-1.0,-0.5,0.0,-0.5]"]


# --- the shipped kit: ldanalyze.testing -------------------------------------------------

LDAS = [get_lda(name) for name in NAMES] + [get_lda("learned", abstain_below=0.8)]  # one that abstains


@parametrize_with_checks(LDAS)
def test_every_lda_of_the_package_passes_the_shipped_kit(lda, check):
    check(lda)


def test_the_ldas_declare_what_they_read_and_may_do():
    declared = {
        name: [flag for flag in ("reads_truth", "needs_radio_evidence", "may_abstain") if getattr(cls, flag)]
        for name, cls in REGISTRY.items()
    }
    assert {name: flags for name, flags in declared.items() if flags} == {
        "omniscient": ["reads_truth"],
        "macseq": ["needs_radio_evidence"],
        "learned": ["may_abstain"],
    }
    both = {name for name, cls in REGISTRY.items() if set(cls.views) == {"receiver", "sender"}}
    assert both == {"unaware", "omniscient", "adaptive_rtt"}
    assert {name for name, cls in REGISTRY.items() if cls.views == ("sender",)} == {
        "spike@rtt",
        "zigzag@rtt",
        "wro_ldaplus@rtt",
        "veno_sender",
        "vegas",
        "flach_pd",
        "flach_pd_lab",
    }


def test_one_test_per_lda_and_rule_and_the_rules_follow_the_declarations():
    (names, pairs), ids = (
        (mark.args, mark.kwargs["ids"])
        for mark in test_every_lda_of_the_package_passes_the_shipped_kit.pytestmark
        if mark.name == "parametrize"
    ).__next__()
    assert names == ("lda", "check") and len(ids) == len(set(ids)) == len(pairs)
    assert "zbs-check_causal" in ids and "learned:abstain_below=0.8-check_one_decision_per_lost_packet" in ids
    assert {check.__name__ for lda, check in pairs if lda.spec == "spike"} == {
        name for name in testing.__all__ if name.startswith("check_") and name != "check_lda"
    }
    omniscient = {check for lda, check in pairs if lda.spec == "omniscient"}
    assert testing.check_one_decision_per_gap not in omniscient and testing.check_blind_to_the_truth not in omniscient


def test_the_package_runs_without_pytest():
    code = "import sys, ldanalyze.testing; assert 'pytest' not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _docs_example(section: str) -> str:
    """The first Python block of ``section`` of docs/ldas.md."""
    text = (TRACES.parent / "docs" / "ldas.md").read_text()
    return text.split(f"\n## {section}")[1].split("```python\n")[1].split("```")[0]


def test_the_worked_example_of_docs_ldas_md_runs_and_passes(monkeypatch):
    """The custom LDA of docs/ldas.md, run as shown from the repository's root."""
    monkeypatch.chdir(TRACES.parent)
    scope: dict = {}
    exec(compile(_docs_example("Your own LDA"), "docs/ldas.md", "exec"), scope)  # the docs' own code
    assert set(scope["decisions"]["lda"].astype(str)) == {"near_the_floor", "spike"}


def test_the_conformance_kit_example_of_docs_ldas_md_runs_as_it_says():
    """docs/ldas.md's worked example of the kit: an LDA that abstains holds every rule, one that
    peeks at the future and is not frozen breaks those two, and its pytest helper's tests pass."""
    scope: dict = {}
    exec(compile(_docs_example("The conformance kit"), "docs/ldas.md", "exec"), scope)  # the docs' own code
    assert scope["broken"] == ["check_causal", "check_parameters_round_trip"]
    unsure = scope["Unsure"]()
    tl = timeline()
    assert (classify(tl, [unsure])["decision"] == "abstained").any()  # it does abstain, as declared
    (mark,) = scope["test_unsure"].pytestmark
    assert "unsure-check_causal" in mark.kwargs["ids"] and "unsure:margin=0.02-check_causal" in mark.kwargs["ids"]
    for lda, check in mark.args[1]:
        scope["test_unsure"](lda, check)


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


def _declaring(base: type[LDA], name: str, **declared) -> LDA:
    """An LDA that runs as ``base`` does, named ``name``, and declares ``declared`` instead."""
    return dataclasses.dataclass(frozen=True)(type(name, (base,), {"name": name, **declared}))()


@dataclasses.dataclass(frozen=True)
class _Hesitant(LDA):
    """Abstains on every gap without declaring that it may."""

    name = "hesitant"

    def decide(self, f: Features) -> Verdict:
        return Verdict(wireless=np.zeros(len(f.n), bool), abstained=np.ones(len(f.n), bool))


@dataclasses.dataclass(frozen=True)
class _Crashing(LDA):
    """Fails inside its replay."""

    name = "crashing"

    def decide(self, f: Features) -> Verdict:
        raise KeyError("air_unseen")


@pytest.mark.parametrize(
    ("lda", "broken"),
    [
        (_AboveTheMedian(), {"check_causal": "change when later packets are added"}),
        (_Alternating(), {"check_one_decision_per_gap": "got different decisions"}),
        (_Mutable(), {"check_parameters_round_trip": "the LDA is not frozen"}),
        (
            _declaring(Omniscient, "peeking", reads_truth=False),  # reads the truth undeclared
            {
                "check_one_decision_per_gap": "got different decisions",
                "check_blind_to_the_truth": "does not declare reads_truth",
            },
        ),
        (
            _declaring(MacSeq, "undeclared", needs_radio_evidence=False),
            {"check_radio_evidence_as_declared": "does not declare needs_radio_evidence"},
        ),
        (
            _declaring(Spike, "pretending", needs_radio_evidence=True),
            {"check_radio_evidence_as_declared": "declares needs_radio_evidence, yet runs"},
        ),
        (_Hesitant(), {"check_one_decision_per_lost_packet": "does not declare may_abstain"}),
    ],
    ids=["above_the_median", "alternating", "mutable", "peeking", "undeclared", "pretending", "hesitant"],
)
def test_the_kit_names_every_rule_an_lda_breaks(lda, broken):
    with pytest.raises(ConformanceError, match=f"^check_lda\\({lda.name}\\) broke {len(broken)} of ") as error:
        check_lda(lda)
    assert list(error.value.failures) == list(broken)
    for rule, what in broken.items():
        assert what in error.value.failures[rule], error.value.failures[rule]
        assert f"\n  {rule}: " in str(error.value)
        with pytest.raises(AssertionError, match=what):
            getattr(testing, rule)(lda)  # each rule, alone, breaks as check_lda says


def test_an_error_inside_a_replay_breaks_each_rule_it_happens_in():
    with pytest.raises(ConformanceError) as error:
        check_lda(_Crashing())
    assert "check_parameters_round_trip" not in error.value.failures  # it replays nothing
    assert error.value.failures["check_causal"] == "KeyError('air_unseen')"
    assert len(error.value.failures) == len(lda_checks(_Crashing())) - 1


def test_the_kit_takes_an_lda_instance_in_a_view_it_builds():
    with pytest.raises(TypeError, match="takes an LDA instance"):
        check_lda("spike")
    with pytest.raises(TypeError, match="takes an LDA instance"):
        parametrize_with_checks(["spike"])

    @dataclasses.dataclass(frozen=True)
    class Elsewhere(LDA):
        name = "elsewhere"
        views = ("satellite",)

    with pytest.raises(TypeError, match="the kit builds the receiver and the sender's"):
        check_lda(Elsewhere())


def test_an_lda_deciding_with_hindsight_is_not_held_to_causality_and_says_so():
    from ldanalyze.lda.sender_policer import SenderPolicer

    names = [rule.__name__ for rule in lda_checks(SenderPolicer())]
    assert SenderPolicer.hindsight and "check_causal" not in names and "check_deterministic" in names
    assert all(not cls.hindsight for name, cls in la.lda.REGISTRY.items() if not name.startswith("flach_pd"))
