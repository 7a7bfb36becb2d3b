"""One definition of the LDAs' parameters for both implementations: ldanalyze's LDA objects set
the ns-2 receiver's OTcl variables (closedloop.OTCL_PARAMETERS, receiver_options) and the receiver's
defaults are theirs. No ns-2 needed: these read the patch and the receiver's source."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
import pytest

from ldanalyze import closedloop
from ldanalyze.errors import UsageError
from ldanalyze.lda import get_lda

PATCH = closedloop.NS2_DIR / "patches" / "10-lda-tfrc-sink.patch"
SOURCE = closedloop.NS2_DIR / "src" / "tcp" / "tfrc-lda-sink.cc"


def ns_defaults() -> dict[str, str]:
    """The receiver's defaults as ns-default.tcl sets them (the patch's added lines)."""
    found = re.findall(r"^\+Agent/TFRCSink/LDA set (\w+) (.*)$", PATCH.read_text(), re.M)
    return {name: value for name, value in found}


def options(text: str) -> dict[str, str]:
    """``ldaparams=`` text as {variable: value}."""
    tokens = re.findall(r"\{[^{}]*\}|\S+", text)
    return dict(zip(tokens[::2], tokens[1::2]))


def test_every_parameter_of_every_receiver_lda_has_its_otcl_variable():
    assert tuple(closedloop.OTCL_PARAMETERS) == closedloop.LOG_LDAS
    source = SOURCE.read_text()
    for name, variables in closedloop.OTCL_PARAMETERS.items():
        fields = [f.name for f in dataclasses.fields(get_lda(name))]
        assert sorted(variables) == sorted(fields), name  # nothing left to the C++ alone
        for var in (v for vs in variables.values() for v in (vs if isinstance(vs, tuple) else (vs,))):
            assert f'bind("{var}"' in source or f'dev_factors("{var}"' in source, var  # the receiver reads it


def test_the_receivers_defaults_are_ldanalyzes():
    """ns-default.tcl (in the patch) sets every parameter to the value ldanalyze's LDA has by
    default (paper 000 §III and §VII-A for ZBS's own base schemes), to the last digit."""
    defaults = ns_defaults()
    given = options(closedloop.receiver_options(closedloop.receiver_ldas()))
    assert given == {k: defaults[k] for k in given}
    assert given["zbs_mbiaz_upper_"] == "1.25" and given["zbs_spike_beta_"] == "0.3333333333333333"


def test_options_carry_the_parameters_both_ways():
    ldas = closedloop.receiver_ldas(
        ["zbs:spike_alpha=0.6:narr_bounds=[0.8,1.6,2.5]:zigzag_dev_factors=[-1,0,0,1]", "veno:window=5", "biaz:upper=3"]
    )
    text = closedloop.receiver_options(ldas)
    got = options(text)
    assert got["zbs_spike_alpha_"] == "0.6" and got["zbs_b2_"] == "1.6" and got["veno_window_"] == "5"
    assert got["zbs_zigzag_dev_factors_"] == "{-1.0 0.0 0.0 1.0}" and got["spike_alpha_"] == "0.5"
    assert closedloop.options_ldas(text) == ldas
    assert [lda.name for lda in ldas] == list(closedloop.LOG_LDAS)
    assert closedloop.options_ldas("") == closedloop.receiver_ldas()
    one_third = closedloop.options_ldas("spike_beta_ 0.3333333333333333")[4]
    assert one_third == get_lda("spike")  # read back to the same float: the receiver's value


@pytest.mark.parametrize(
    "text, message",
    [
        ("biaz_upper_", "not a list"),
        ("biaz_upper_ {2 3", "not a list"),
        ("nothing_ 2", "no parameter 'nothing_'"),
        ("biaz_upper_ two", "takes numbers, not 'two'"),
        ("veno_window_ 5.5", "takes a whole number"),
        ("spike_alpha_ 0.1", "alpha .* must be ≥ beta"),
    ],
)
def test_bad_options_are_refused(text, message):
    with pytest.raises(UsageError, match=message):
        closedloop.options_ldas(text)


def test_the_receiver_runs_only_its_own_ldas_once_each():
    with pytest.raises(UsageError, match="does not run adaptive_rtt"):
        closedloop.receiver_ldas("adaptive_rtt")
    with pytest.raises(UsageError, match="given twice"):
        closedloop.receiver_ldas("biaz,biaz:upper=3")


def test_the_crosscheck_matches_a_parameterised_lda_to_its_column():
    log = pd.DataFrame(
        {
            "t": [1.0],
            "flow": ["1"],
            "seq": [7],
            "n": [1],
            **{name: [name == "biaz"] for name in closedloop.LOG_LDAS},
            "driver": ["biaz"],
            "driven": [True],
        }
    )
    decisions = pd.DataFrame(
        {
            "lda": [lda.spec for lda in closedloop.receiver_ldas("biaz:upper=3")],
            "flow": "1",
            "seq": 7,
            "decision": ["wireless" if name == "biaz" else "congestion" for name in closedloop.LOG_LDAS],
        }
    )
    summary, differences = closedloop.crosscheck(decisions, log)
    assert differences.empty and (summary["equal"] == 1).all()
    twice = pd.concat([decisions, decisions.assign(lda="biaz")])
    with pytest.raises(UsageError, match="twice: biaz:upper=3, biaz"):
        closedloop.crosscheck(twice, log)
