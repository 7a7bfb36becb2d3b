"""The rules of the conformance kit, one public ``check_*`` function each (as scikit-learn's
``estimator_checks``): each takes an LDA, replays it over the small timelines it needs
(``timelines``, in the view the LDA declares), and raises an AssertionError saying what broke.
Each is the replay contract of ``docs/ldas.md`` (the section it cites) made testable, in each view
the LDA declares (``LDA.views``); those that depend on what an LDA declares (``LDA.reads_truth``,
``needs_radio_evidence``, ``may_abstain``) read the declaration, never the name.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..lda import LDA, REGISTRY, Replay, classify, lda_state, parse_ldas
from ..packets import DELIVERED, WIRELESS, make_packet_table
from .timelines import sample_packets, view, view_ends

REPLAYS = (Replay(), Replay(update_first=False, gap_delay="previous"), Replay(detection=3))


def check_deterministic(lda: LDA) -> None:
    """A second replay over a second, equal timeline gives the same decisions, to the last
    column: a replay is a pure function of the timeline ("How the LDAs are replayed"), which
    the offline/closed-loop agreement and the batch cache rely on."""
    for name in lda.views:
        first = classify(view(lda, sample_packets(), as_=name), [lda])
        second = classify(view(lda, sample_packets(), as_=name), [lda])
        pd.testing.assert_frame_equal(first, second, obj=f"a second run's decisions ({name}'s view)")


def check_one_decision_per_lost_packet(lda: LDA) -> None:
    """One decision per lost packet, in the timeline's order of losses; ``undetected`` exactly
    where no arrival revealed the loss, and otherwise congestion or wireless, or ``abstained``
    if the LDA declares it may abstain ("What an LDA sees"): scoring counts each loss once."""
    for name in lda.views:
        tl = view(lda, sample_packets(), as_=name)
        decisions = classify(tl, [lda])
        where = f" ({name}'s view)"
        assert len(decisions) == len(tl.losses), f"{len(decisions)} decisions for {len(tl.losses)} lost packets{where}"
        assert decisions["uid"].tolist() == tl.losses["uid"].tolist(), (
            f"the decisions are not the losses, in order{where}"
        )
        undetected = (decisions["decision"] == "undetected").to_numpy()
        assert (undetected == ~tl.losses["detected"].to_numpy(bool)).all(), (
            f"undetected where a loss was detected{where}"
        )
        allowed = ["congestion", "wireless", *(["abstained"] if lda.may_abstain else [])]
        decided = decisions.loc[~undetected, "decision"].astype(str)
        assert decided.isin(allowed).all(), f"decisions {sorted(set(decided))}{where}" + (
            "" if lda.may_abstain else " (it does not declare may_abstain)"
        )


def check_no_loss_no_decision(lda: LDA) -> None:
    """A flow that lost nothing gets no decision and its state one row per arrival, and an
    empty trace no decision ("What an LDA sees"): an LDA decides losses, nothing else."""
    t = np.arange(40) * 0.01
    clean = make_packet_table(
        flow=["a"] * 40,
        seq=np.arange(40),
        t_send=t,
        t_recv=t + 0.05 + (t % 0.03),
        fate=[DELIVERED] * 40,
        size=[500] * 40,
    )
    for name in lda.views:
        tl = view(lda, clean, as_=name)
        assert classify(tl, [lda]).empty, f"decisions on a flow that lost nothing ({name}'s view)"
        assert len(lda_state(tl, lda)) == 40, f"the state has not one row per arrival ({name}'s view)"
        assert classify(view(lda, clean.iloc[:0], as_=name), [lda]).empty, (
            f"decisions on an empty trace ({name}'s view)"
        )


def check_nothing_arrives_nothing_decided(lda: LDA) -> None:
    """Losses that no arrival reveals are ``undetected`` ("What an LDA sees"): a receiver that
    received nothing cannot have decided anything."""
    lost = make_packet_table(
        flow=["a"] * 5,
        seq=np.arange(5),
        t_send=np.arange(5.0),
        t_recv=[np.nan] * 5,
        fate=[WIRELESS] * 5,
        size=[500] * 5,
    )
    for name in lda.views:
        decisions = classify(view(lda, lost, as_=name), [lda])["decision"].astype(str).tolist()
        assert decisions == ["undetected"] * 5, f"decisions {decisions} where nothing arrived ({name}'s view)"


def check_causal(lda: LDA) -> None:
    """Under each replay semantics, a decision made by time t does not change when the packets
    that arrive after t are added: the LDA decides each loss "with only what it had seen by
    then" ("How the LDAs are replayed"), as a receiver (and the simulator's own LDA) must."""
    packets = sample_packets()
    span = float(packets["t_send"].max())
    for name in lda.views:
        whole = view(lda, packets, as_=name)
        for semantics in REPLAYS:
            full = classify(whole, [lda], semantics=semantics)
            for share in (0.2, 0.55, 0.9):
                keep = packets["t_send"] <= share * span
                ends = view_ends(name, packets, keep)  # the views agree until then
                part = classify(view(lda, packets[keep].reset_index(drop=True), as_=name), [lda], semantics=semantics)
                early = full[full["t_decide"] < ends].merge(part, on=["uid"], how="left", suffixes=("", "_part"))
                changed = early["decision"].astype(str) != early["decision_part"].astype(str)
                assert not changed.any(), (
                    f"{int(changed.sum())} decision(s) made before {ends:.3f} s change when "
                    f"later packets are added ({semantics}, {name}'s view)"
                )


def check_one_decision_per_gap(lda: LDA) -> None:
    """Every lost packet of a gap gets the gap's decision ("What an LDA sees"): a receiver sees
    a hole, not its packets one by one. Not for an LDA that reads the truth (it knows each
    packet's cause, and may decide per packet): ``lda_checks`` leaves it out for those."""
    for name in lda.views:
        decisions = classify(view(lda, sample_packets(), as_=name), [lda])
        gaps = decisions[decisions["gap"] >= 0].groupby(["flow", "gap"], observed=True)["decision"]
        # else the rule holds vacuously
        assert (gaps.size() > 1).any(), f"the sample has no gap of more than one loss ({name}'s view)"
        split = gaps.nunique()
        assert (split <= 1).all(), (
            f"{int((split > 1).sum())} gap(s) whose losses got different decisions ({name}'s view)"
        )


def check_blind_to_the_truth(lda: LDA) -> None:
    """The same decisions when every loss's cause is hidden (``lost``): a receiver does not know
    why a packet went missing ("How the LDAs are replayed"), so only an LDA that declares it
    reads the truth may (``lda_checks`` leaves this rule out for those)."""
    packets = sample_packets()
    for name in lda.views:
        told = classify(view(lda, packets, as_=name), [lda])["decision"]
        blind = classify(view(lda, packets, truth=False, as_=name), [lda])["decision"]
        differ = int((told.astype(str) != blind.astype(str)).sum())
        assert differ == 0, (
            f"{differ} decision(s) change when the losses' causes are hidden ({name}'s view; "
            "it does not declare reads_truth)"
        )


def check_radio_evidence_as_declared(lda: LDA) -> None:
    """Without the radio's evidence (``packets.AIR_COLUMNS``, from a monitor-mode capture: see
    macseq in "The algorithms"), an LDA that declares it needs it refuses the timeline with a
    UsageError saying so, and any other LDA decides every loss: most traces have no such
    evidence, and an LDA that needs it must say so, not fail deep inside."""
    tl = view(lda, sample_packets(), radio=False)  # its first view: a sender's has no radio evidence
    try:
        decisions = classify(tl, [lda])
    except UsageError as refused:
        assert lda.needs_radio_evidence, (
            f"refused a timeline without the radio's evidence, yet does not declare needs_radio_evidence: {refused}"
        )
        return
    assert not lda.needs_radio_evidence, "declares needs_radio_evidence, yet runs without it"
    assert len(decisions) == len(tl.losses), f"{len(decisions)} decisions for {len(tl.losses)} lost packets"


def check_parameters_round_trip(lda: LDA) -> None:
    """``type(lda)(**lda.params()) == lda``, the LDA is frozen and, if registered,
    ``parse_ldas(lda.spec) == [lda]`` ("Your own LDA, held to the same contract"): an LDA is a
    frozen dataclass of its parameters, so a spec, a cache key or a worker rebuilds it."""
    assert dataclasses.is_dataclass(lda), "an LDA is a dataclass of its parameters"
    assert type(lda)(**lda.params()) == lda, "type(lda)(**lda.params()) is another LDA"
    try:
        copy.copy(lda).name = "other"  # a copy: a mutable LDA given is not changed
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("the LDA is not frozen (a dataclass(frozen=True))")
    if REGISTRY.get(lda.name) is type(lda):
        assert parse_ldas(lda.spec) == [lda], f"parse_ldas({lda.spec!r}) gives another LDA"
