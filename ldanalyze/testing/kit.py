"""Running the rules: ``check_lda`` holds an LDA to every rule that fits what it declares and
reports every rule it breaks at once; ``parametrize_with_checks`` makes one pytest test per LDA
and rule (scikit-learn's ``parametrize_with_checks``). pytest is imported only there: the package
does not depend on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..lda import LDA, VIEWS
from . import checks

Check = Callable[[LDA], None]


class ConformanceError(AssertionError):
    """The rules an LDA broke: ``failures`` maps each broken rule's name (``check_causal``) to
    what broke; the message lists them all."""

    def __init__(self, lda: LDA, failures: dict[str, str], rules: int) -> None:
        self.failures = failures
        lines = "".join(f"\n  {rule}: {what}" for rule, what in failures.items())
        super().__init__(f"check_lda({lda.spec}) broke {len(failures)} of {rules} rules:{lines}")


def lda_checks(lda: LDA) -> list[Check]:
    """The rules that fit ``lda``, by what it declares: every rule, but one decision per gap and
    blindness to the truth for an LDA that reads the truth, and causality for one that decides
    with hindsight."""
    if not isinstance(lda, LDA):
        raise TypeError(f"the conformance kit takes an LDA instance, not {type(lda).__name__}")
    if not lda.views or not set(lda.views) <= set(VIEWS):
        raise TypeError(f"{lda.spec} declares the views {lda.views!r}; the kit builds the {' and the '.join(VIEWS)}'s")
    not_for_the_truth = [] if lda.reads_truth else [checks.check_one_decision_per_gap, checks.check_blind_to_the_truth]
    return [
        checks.check_deterministic,
        checks.check_one_decision_per_lost_packet,
        checks.check_no_loss_no_decision,
        checks.check_nothing_arrives_nothing_decided,
        *([] if lda.hindsight else [checks.check_causal]),
        *not_for_the_truth,
        checks.check_radio_evidence_as_declared,
        checks.check_parameters_round_trip,
    ]


def check_lda(lda: LDA) -> None:
    """Hold ``lda`` (an instance of an LDA subclass) to every rule of ``lda_checks``; raise one
    ConformanceError naming every rule broken (an error a rule's replay raised counts as
    breaking it)."""
    rules = lda_checks(lda)
    failures = {}
    for rule in rules:
        try:
            rule(lda)
        except Exception as broken:  # each rule's failure is reported, whatever it raised
            failures[rule.__name__] = str(broken) if isinstance(broken, AssertionError) else repr(broken)
    if failures:
        raise ConformanceError(lda, failures, len(rules))


def parametrize_with_checks(ldas: Iterable[LDA]) -> Any:
    """A ``pytest.mark.parametrize`` decorator over ``(lda, check)``: one test per LDA and rule,
    named ``spec-check_name`` (``zbs-check_causal``); the test calls ``check(lda)``."""
    import pytest  # only where tests run: the package does not depend on pytest

    pairs = [(lda, check) for lda in ldas for check in lda_checks(lda)]
    ids = [f"{lda.spec}-{check.__name__}" for lda, check in pairs]
    return pytest.mark.parametrize(("lda", "check"), pairs, ids=ids)
