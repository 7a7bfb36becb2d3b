"""The conformance kit every LDA is held to, shipped for yours (as scikit-learn ships
``check_estimator``). ``check_lda(MyLDA())`` replays it over small generated timelines and raises
one ConformanceError naming every rule it breaks; each rule is a public ``check_*`` function, and
``parametrize_with_checks([lda, ...])`` makes one pytest test per LDA and rule. The rules are the
replay contract of ``docs/ldas.md`` ("The conformance kit" lists them); they consult what an LDA
declares (``LDA.view``, ``reads_truth``, ``needs_radio_evidence``, ``may_abstain``), never its name.

``timelines`` generates the timelines, ``checks`` holds the rules, ``kit`` runs them.
"""

from .checks import (
    check_blind_to_the_truth,
    check_causal,
    check_deterministic,
    check_no_loss_no_decision,
    check_nothing_arrives_nothing_decided,
    check_one_decision_per_gap,
    check_one_decision_per_lost_packet,
    check_parameters_round_trip,
    check_radio_evidence_as_declared,
)
from .kit import ConformanceError, check_lda, lda_checks, parametrize_with_checks
from .timelines import radio_evidence, sample_packets, sample_timeline, sender_trace

__all__ = [
    "check_lda",
    "lda_checks",
    "parametrize_with_checks",
    "ConformanceError",
    "check_deterministic",
    "check_one_decision_per_lost_packet",
    "check_no_loss_no_decision",
    "check_nothing_arrives_nothing_decided",
    "check_causal",
    "check_one_decision_per_gap",
    "check_blind_to_the_truth",
    "check_radio_evidence_as_declared",
    "check_parameters_round_trip",
    "sample_packets",
    "sample_timeline",
    "radio_evidence",
    "sender_trace",
]
