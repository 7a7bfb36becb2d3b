"""Scoring: hand-computed counts and metrics, intervals, the burst bootstrap, averages, rates."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldanalyze.scoring.bootstrap as bootstrap_module
from ldanalyze.cli import main
from ldanalyze.errors import UsageError
from ldanalyze.report.tables import blocks, text_table
from ldanalyze.scoring import score
from ldanalyze.scoring.losses import BY, COUNTS, tally
from ldanalyze.scoring.metrics import METRICS

from .conftest import TRACES

C, W, L, U = "congestion", "wireless", "lost", "undetected"


def table(rows, *, trace: bool = False) -> pd.DataFrame:
    """Decisions from tuples ``(flow, lda, gap, cause, decision)``, or with a leading trace."""
    cols = (["trace"] if trace else []) + ["flow", "lda", "gap", "cause", "decision"]
    df = pd.DataFrame(rows, columns=cols)
    df.insert(len(cols) - 3, "uid", np.arange(len(df), dtype=np.int64))
    return df


def losses(flow, lda, cause, decision, count, *, gap=None, first_gap=0, trace=None):
    """``count`` identical losses; each its own burst unless ``gap`` is given."""
    out = []
    for i in range(count):
        g = gap if gap is not None else first_gap + i
        out.append(((trace,) if trace is not None else ()) + (flow, lda, g, cause, decision))
    return out


def wilson_by_hand(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = k / n
    centre = p + z**2 / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return (centre - spread) / (1 + z**2 / n), (centre + spread) / (1 + z**2 / n)


def one(frame: pd.DataFrame, **keys) -> pd.Series:
    mask = np.ones(len(frame), bool)
    for k, v in keys.items():
        mask &= (frame[k] == v).to_numpy()
    assert mask.sum() == 1, (keys, frame)
    return frame[mask].iloc[0]


# --- counts and metrics --------------------------------------------------------------------

MIXED = table(
    # 4 congestion losses, 1 decided wireless
    [("1", "x", 0, C, C), ("1", "x", 0, C, W), ("1", "x", 1, C, C), ("1", "x", 2, C, C)]
    # 3 wireless losses, 2 decided wireless
    + [("1", "x", 3, W, W), ("1", "x", 3, W, W), ("1", "x", 4, W, C)]
    # unknown cause (decided), undetected wireless, unknown and undetected: counted, not scored
    + [("1", "x", 5, L, C), ("1", "x", -1, W, U), ("1", "x", -1, L, U)]
)


ROUTED = table(
    # 2 congestion losses decided congestion, 1 wireless decided wireless, 3 route losses decided
    # wireless, congestion, wireless; 1 undetected route loss
    [("1", "x", 0, C, C), ("1", "x", 1, C, C), ("1", "x", 2, W, W)]
    + [("1", "x", 3, "route", W), ("1", "x", 4, "route", C), ("1", "x", 5, "route", W), ("1", "x", -1, "route", U)]
)


@pytest.mark.parametrize(
    "route_as, expected",
    [
        # (scored, congestion, wireless, M_c, M_w)
        ("excluded", (3, 2, 1, 0.0, 0.0)),
        ("wireless", (6, 2, 4, 0.0, 1 / 4)),
        ("congestion", (6, 5, 1, 2 / 5, 0.0)),
    ],
)
def test_route_losses_are_left_out_or_scored_as_asked(route_as, expected):
    row = one(score(ROUTED, bootstrap=0, route_as=route_as), flow="1", lda="x")
    assert (row["losses"], row["route"], row["undetected"], row["route_as"]) == (7, 4, 1, route_as)
    assert (row["scored"], row["congestion"], row["wireless"]) == expected[:3]
    assert (row["M_c"], row["M_w"]) == pytest.approx(expected[3:])


def test_route_mapping_is_checked_and_named_in_the_table():
    with pytest.raises(UsageError, match="route_as"):
        score(ROUTED, route_as="radio")
    assert "route losses left out of M_c/M_w" in text_table(score(ROUTED, bootstrap=0))
    assert "route losses scored as wireless" in text_table(score(ROUTED, bootstrap=0, route_as="wireless"))


def test_counts_and_metrics_by_hand():
    row = one(score(MIXED, bootstrap=0), flow="1", lda="x")
    counts = {
        "losses": 10,
        "unknown": 2,
        "route": 0,
        "undetected": 2,
        "abstained": 0,
        "scored": 7,
        "congestion": 4,
        "wireless": 3,
        "congestion_as_wireless": 1,
        "wireless_as_congestion": 1,
        "decided_wireless": 3,
        "policing": 0,
        "policing_decided": 0,
        "policing_as_wireless": 0,
        "called_policing": 0,
    }
    assert {k: row[k] for k in COUNTS} == counts
    expected = {
        "M_c": 0.25,
        "M_w": 1 / 3,
        "accuracy": 5 / 7,
        "A_c": 0.75,
        "A_w": 2 / 3,
        "accuracy_ratio": 1.0,
        "CC": 3 / 7,
        "CW": 1 / 7,
        "WC": 1 / 7,
        "WW": 2 / 7,
    }
    for name, value in expected.items():
        assert row[name] == pytest.approx(value), name


def test_column_types_and_order():
    out = score(MIXED, bootstrap=10)
    assert list(out.columns[:3]) == ["trace", "flow", "lda"]
    assert out["trace"].tolist() == [""]
    for name in COUNTS:
        assert out[name].dtype == np.int64, name
    for name in METRICS:
        assert out[name].dtype == np.float64, name
    assert [c for c in out.columns if c.endswith(("_lo", "_hi"))] == [
        "M_c_lo", "M_c_hi", "M_w_lo", "M_w_hi", "accuracy_lo", "accuracy_hi",
        "M_c_boot_lo", "M_c_boot_hi", "M_w_boot_lo", "M_w_boot_hi", "accuracy_boot_lo", "accuracy_boot_hi",
        "wireless_share_lo", "wireless_share_hi", "wireless_share_boot_lo", "wireless_share_boot_hi",
    ]  # fmt: skip
    assert out["called"].dtype == out["called_wireless"].dtype == np.int64


def test_abstained_losses_are_counted_apart_and_not_scored():
    """An LDA's abstention (the learned LDA below its confidence) is neither call: counted in
    ``abstained``, left out of M_c and M_w, and out of the truth-free shares."""
    rows = losses("1", "x", C, C, 3) + losses("1", "x", C, W, 1, first_gap=3)
    rows += losses("1", "x", C, "abstained", 2, first_gap=4) + losses("1", "x", W, "abstained", 1, first_gap=6)
    row = score(table(rows), bootstrap=0).iloc[0]
    assert (row["losses"], row["abstained"], row["undetected"], row["scored"]) == (7, 3, 0, 4)
    assert row["M_c"] == pytest.approx(0.25) and np.isnan(row["M_w"])
    assert row["called"] == 4 and row["wireless_share"] == pytest.approx(0.25)


def test_accuracy_ratio_can_exceed_one():
    rows = losses("1", "x", W, W, 2) + losses("1", "x", C, W, 2, first_gap=10)
    row = score(table(rows), bootstrap=0).iloc[0]
    assert row["accuracy_ratio"] == 2.0  # 4 measured wireless, 2 actual
    assert row["A_w"] == 1.0 and row["M_c"] == 1.0


def test_wilson_interval_against_the_formula():
    rows = [("1", "x", 0, C, W), ("1", "x", 1, C, C), ("1", "x", 2, C, C), ("1", "x", 3, C, C)]
    row = score(table(rows), bootstrap=0).iloc[0]
    assert row["M_c"] == 0.25
    lo, hi = wilson_by_hand(1, 4)
    assert (row["M_c_lo"], row["M_c_hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert (lo, hi) == (pytest.approx(0.04559, abs=1e-5), pytest.approx(0.69936, abs=1e-5))
    acc_lo, acc_hi = wilson_by_hand(3, 4)  # accuracy 3/4
    assert (row["accuracy_lo"], row["accuracy_hi"]) == (pytest.approx(acc_lo), pytest.approx(acc_hi))
    row90 = score(table(rows), bootstrap=0, confidence=0.9).iloc[0]
    lo90, hi90 = wilson_by_hand(1, 4, 0.9)
    assert (row90["M_c_lo"], row90["M_c_hi"]) == (pytest.approx(lo90), pytest.approx(hi90))
    assert lo < lo90 < hi90 < hi


def test_wilson_interval_at_the_edges():
    rows = losses("1", "x", C, C, 5)  # 0 of 5 misclassified
    row = score(table(rows), bootstrap=0).iloc[0]
    assert row["M_c"] == 0.0 and row["M_c_lo"] == 0.0
    assert row["M_c_hi"] == pytest.approx(wilson_by_hand(0, 5)[1])
    assert row["accuracy_hi"] == 1.0


def test_undefined_metrics_are_nan_not_zero():
    rows = losses("1", "x", C, C, 3) + losses("2", "x", W, U, 2, gap=-1) + losses("3", "x", L, C, 2)
    out = score(table(rows), bootstrap=50)
    only_congestion = one(out, flow="1")
    for name in ("M_w", "A_w", "accuracy_ratio", "M_w_lo", "M_w_hi", "M_w_boot_lo", "M_w_boot_hi"):
        assert math.isnan(only_congestion[name]), name
    assert only_congestion["M_c"] == 0.0 and only_congestion["accuracy"] == 1.0
    for flow in ("2", "3"):  # nothing scored: undetected, or cause unknown
        row = one(out, flow=flow)
        assert row["scored"] == 0 and row["losses"] == 2
        for name in out.columns[out.columns.get_loc("M_c") : out.columns.get_loc("called")]:
            assert math.isnan(row[name]), (flow, name)
    assert one(out, flow="2")["undetected"] == 2 and one(out, flow="3")["unknown"] == 2
    assert math.isnan(one(out, flow="2")["wireless_share"])  # nothing called: all undetected
    assert one(out, flow="3")["wireless_share"] == 0.0  # cause unknown, yet called congestion


def test_unaware_and_omniscient_like_decisions():
    causes = [C, W, W, C, W, C, C, W, W]
    unaware = [("1", "unaware", i, cause, C) for i, cause in enumerate(causes)]
    omniscient = [("1", "omniscient", i, cause, cause) for i, cause in enumerate(causes)]
    out = score(table(unaware + omniscient), bootstrap=20)
    u, o = one(out, lda="unaware"), one(out, lda="omniscient")
    assert (u["M_c"], u["M_w"], u["accuracy_ratio"]) == (0.0, 1.0, 0.0)
    assert (u["CC"], u["CW"], u["WC"], u["WW"]) == (4 / 9, 5 / 9, 0.0, 0.0)
    assert (u["M_w_boot_lo"], u["M_w_boot_hi"]) == (1.0, 1.0)
    assert (o["M_c"], o["M_w"], o["accuracy"], o["accuracy_ratio"]) == (0.0, 0.0, 1.0, 1.0)
    assert (o["accuracy_boot_lo"], o["accuracy_boot_hi"]) == (1.0, 1.0)
    assert out["lda"].tolist() == ["unaware", "omniscient"]  # input order


def test_categorical_columns():
    df = MIXED.copy()
    df["flow"] = df["flow"].astype("category")
    df["cause"] = pd.Categorical(df["cause"], categories=["delivered", C, W, L, "unobserved"])
    df["decision"] = pd.Categorical(df["decision"], categories=[C, W, U])
    plain, categorical = score(MIXED, bootstrap=30), score(df, bootstrap=30)
    pd.testing.assert_frame_equal(plain, categorical)


# --- grouping and order --------------------------------------------------------------------


def test_row_order_traces_flows_ldas():
    rows = []
    for trace in ("run-b", "run-a"):
        for flow in ("10", "2", "1"):
            for lda in ("zbs", "biaz"):
                rows.append((trace, flow, lda, 0, C, C))
    out = score(table(rows, trace=True), bootstrap=0)
    keys = list(zip(out["trace"], out["flow"], out["lda"]))
    assert keys == [(t, f, lda) for t in ("run-b", "run-a") for f in ("1", "2", "10") for lda in ("zbs", "biaz")]
    assert list(score(table(rows, trace=True), by="trace", bootstrap=0).columns[:2]) == ["trace", "lda"]
    pooled = score(table(rows, trace=True), by="pooled", bootstrap=0)
    assert list(pooled.columns[:4]) == ["lda", "route_as", "policing_as", "losses"]
    assert pooled["lda"].tolist() == ["zbs", "biaz"] and pooled["losses"].tolist() == [6, 6]

    df = table(rows, trace=True)
    df["lda"] = pd.Categorical(df["lda"], categories=["spike", "biaz", "zbs"])  # spike unused
    assert score(df, by="pooled", bootstrap=0)["lda"].tolist() == ["biaz", "zbs"]


def test_by_trace_pooled_and_mean_differ():
    rows = (
        losses("1", "x", C, W, 1)  # flow 1: M_c = 1
        + losses("2", "x", C, C, 9)  # flow 2: M_c = 0
        + losses("3", "x", W, C, 2)
        + losses("3", "x", W, W, 2, first_gap=5)  # flow 3: M_c undefined
    )
    df = table(rows)
    pooled = score(df, by="trace", bootstrap=0).iloc[0]
    mean = score(df, by="trace", average="mean").iloc[0]
    assert pooled["M_c"] == pytest.approx(0.1)
    assert mean["M_c"] == pytest.approx(0.5)  # flow 3 skipped
    assert mean["M_w"] == pytest.approx(0.5) and pooled["M_w"] == pytest.approx(0.5)  # only flow 3 defines it
    assert mean["accuracy"] == pytest.approx((0 + 1 + 0.5) / 3)
    assert pooled["accuracy"] == pytest.approx(11 / 14)  # 3 of 14 wrong
    assert mean["flows"] == 3 and mean["losses"] == pooled["losses"] == 14
    assert {k: mean[k] for k in COUNTS} == {k: pooled[k] for k in COUNTS}
    mean_frame = score(df, by="pooled", average="mean")
    assert not any(c.endswith(("_lo", "_hi")) for c in mean_frame.columns)
    assert mean_frame["flows"].dtype == np.int64
    assert mean_frame.iloc[0]["M_c"] == pytest.approx(0.5)


def test_mean_is_nan_when_no_flow_defines_it():
    out = score(table(losses("1", "x", C, C, 2) + losses("2", "x", C, W, 2)), by="pooled", average="mean")
    assert math.isnan(out.iloc[0]["M_w"]) and out.iloc[0]["M_c"] == 0.5


def test_pooled_over_traces_sums_the_flows():
    rows = (
        losses("1", "x", C, W, 2, trace="a")
        + losses("1", "x", C, C, 6, trace="b")
        + losses("1", "y", W, W, 3, trace="b")
    )
    df = table(rows, trace=True)
    by_flow = score(df, bootstrap=0)
    pooled = score(df, by="pooled", bootstrap=0)
    summed = by_flow.groupby("lda", sort=False)[list(COUNTS)].sum().reset_index()
    pd.testing.assert_frame_equal(pooled[["lda", *COUNTS]], summed, check_dtype=False)
    assert one(pooled, lda="x")["M_c"] == 0.25


def test_empty_decisions():
    out = score(table([]))
    assert len(out) == 0 and "M_c_boot_lo" in out.columns and "M_c" in out.columns


# --- burst bootstrap -----------------------------------------------------------------------


def bursts(n_bursts, size, wrong, *, flow="1", lda="x", cause=C):
    """``n_bursts`` bursts of ``size`` losses of ``cause``; the first ``wrong`` bursts misclassified."""
    other = W if cause == C else C
    rows = []
    for b in range(n_bursts):
        rows += [(flow, lda, b, cause, other if b < wrong else cause)] * size
    return rows


def typical(seed=3):
    """Several flows and LDAs with random burst sizes and outcomes."""
    rng = np.random.default_rng(seed)
    rows = []
    for flow in ("1", "2"):
        for b in range(60):
            cause = C if rng.random() < 0.5 else W
            for _ in range(int(rng.integers(1, 6))):
                for lda, p_wrong in (("a", 0.2), ("b", 0.45)):
                    wrong = rng.random() < p_wrong
                    rows.append((flow, lda, b, cause, (W if cause == C else C) if wrong else cause))
    return table(rows)


def test_bootstrap_is_deterministic_for_a_seed():
    df = typical()
    first, again = score(df, bootstrap=200, seed=7), score(df, bootstrap=200, seed=7)
    pd.testing.assert_frame_equal(first, again)
    other = score(df, bootstrap=200, seed=8)
    assert not np.allclose(first["M_c_boot_lo"], other["M_c_boot_lo"])


def test_bootstrap_does_not_depend_on_the_chunk_size(monkeypatch):
    df = typical()
    whole = score(df, by="pooled", bootstrap=100, seed=1)
    monkeypatch.setattr(bootstrap_module, "BOOTSTRAP_CHUNK", 7)  # one resample per chunk
    pd.testing.assert_frame_equal(whole, score(df, by="pooled", bootstrap=100, seed=1))


BOOT = [f"{m}_boot_{end}" for m in ("M_c", "M_w", "accuracy") for end in ("lo", "hi")]


def boot(scores: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The bootstrap intervals (and the called-wireless share's), indexed by the group's keys."""
    return scores.set_index(keys)[BOOT + ["wireless_share_boot_lo", "wireless_share_boot_hi"]]


def test_an_ldas_interval_does_not_depend_on_what_is_scored_beside_it():
    """Each group draws from its own seed: scoring another LDA, flow or trace beside it leaves
    its interval as it was (one generator for every group gave Biaz 72.7-97.1 alone and
    72.9-97.3 beside zbs)."""
    both = pd.concat([typical().assign(trace="a"), typical(seed=4).assign(trace="b")], ignore_index=True)
    for by, keys in (("flow", ["trace", "flow", "lda"]), ("trace", ["trace", "lda"]), ("pooled", ["lda"])):
        whole = boot(score(both, by=by, bootstrap=200, seed=5), keys)
        alone = boot(score(both[both["lda"] == "a"], by=by, bootstrap=200, seed=5), keys)
        pd.testing.assert_frame_equal(alone, whole.loc[alone.index])
        if by != "pooled":  # another trace beside it: by flow and by trace, the same intervals
            first = boot(score(both[both["trace"] == "a"], by=by, bootstrap=200, seed=5), keys)
            pd.testing.assert_frame_equal(first, whole.loc[first.index])
    # and a flow scored alone: its interval by flow is the one it has beside the other flow
    by_flow = boot(score(both, bootstrap=200, seed=5), ["trace", "flow", "lda"])
    flow_1 = boot(score(both[both["flow"] == "1"], bootstrap=200, seed=5), ["trace", "flow", "lda"])
    pd.testing.assert_frame_equal(flow_1, by_flow.loc[flow_1.index])


def test_a_one_flow_trace_has_the_same_interval_by_flow_by_trace_and_pooled():
    """What a group is scored on seeds its draws: one flow of one trace is the same bursts by
    flow, by trace and pooled, so the same interval (``score`` by trace, ``score --by flow``
    and the report agree)."""
    df = typical().query("flow == '1'").assign(trace="only")
    by_flow = score(df, by="flow", bootstrap=200).set_index("lda")[BOOT]
    by_trace = score(df, by="trace", bootstrap=200).set_index("lda")[BOOT]
    pooled = score(df, by="pooled", bootstrap=200).set_index("lda")[BOOT]
    pd.testing.assert_frame_equal(by_flow, by_trace)
    pd.testing.assert_frame_equal(by_flow, pooled)


def test_a_trace_named_by_another_path_draws_the_same():
    df = typical().assign(trace="traces/x.tr.gz")
    relative = score(df, bootstrap=200).set_index(["flow", "lda"])[BOOT]
    absolute = score(df.assign(trace="/home/me/traces/x.tr.gz"), bootstrap=200).set_index(["flow", "lda"])[BOOT]
    pd.testing.assert_frame_equal(relative, absolute)
    other = score(df.assign(trace="traces/y.tr.gz"), bootstrap=200).set_index(["flow", "lda"])[BOOT]
    assert not np.allclose(relative, other)


def test_the_seed_changes_every_groups_draws():
    df = typical()
    first, other = score(df, bootstrap=200, seed=7), score(df, bootstrap=200, seed=8)
    for name in ("M_c", "M_w", "accuracy"):
        moved = (first[f"{name}_boot_lo"] != other[f"{name}_boot_lo"]) | (
            first[f"{name}_boot_hi"] != other[f"{name}_boot_hi"]
        )
        assert moved.all(), name


def test_a_groups_seed_is_stable_across_processes():
    """A stable hash (not Python's salted ``hash``): the seed of a key is pinned, the same in
    every process (and a change to the key's form, which moves every interval, shows here)."""
    state = bootstrap_module.group_seed(0, bootstrap_module.group_key("biaz", [("x.tr", "1")])).generate_state(2)
    assert state.tolist() == [2682893430, 4003170351]


def test_bootstrap_interval_contains_the_point_estimate():
    for by in ("flow", "trace", "pooled"):
        out = score(typical(), by=by, bootstrap=300)
        for name in ("M_c", "M_w", "accuracy"):
            lo, hi, point = out[f"{name}_boot_lo"], out[f"{name}_boot_hi"], out[name]
            assert ((lo <= point) & (point <= hi) & (lo < hi)).all(), (by, name)
            assert ((out[f"{name}_lo"] <= point) & (point <= out[f"{name}_hi"])).all()


def test_degenerate_bootstrap_has_zero_width():
    # every burst: 4 congestion losses, 2 of them decided wireless -> every resample gives 0.5
    rows = []
    for b in range(10):
        rows += [("1", "x", b, C, W)] * 2 + [("1", "x", b, C, C)] * 2
    row = score(table(rows), bootstrap=200).iloc[0]
    assert row["M_c"] == 0.5
    assert row["M_c_boot_lo"] == row["M_c_boot_hi"] == 0.5
    assert row["M_c_lo"] < 0.5 < row["M_c_hi"]  # Wilson, treating losses as independent


def test_bootstrap_resamples_bursts_not_losses():
    rows = bursts(20, 10, 5)  # 200 losses in 20 bursts; whole bursts misclassified
    by_burst = score(table(rows), bootstrap=500).iloc[0]
    iid = table(rows)
    iid["gap"] = np.arange(len(iid))  # every loss its own burst
    by_loss = score(iid, bootstrap=500).iloc[0]
    assert by_burst["M_c"] == by_loss["M_c"] == 0.25
    burst_width = by_burst["M_c_boot_hi"] - by_burst["M_c_boot_lo"]
    loss_width = by_loss["M_c_boot_hi"] - by_loss["M_c_boot_lo"]
    assert burst_width > 2 * loss_width
    # the i.i.d. bootstrap agrees with Wilson over 200 losses, the burst one with Wilson over 20 bursts
    assert loss_width == pytest.approx(by_loss["M_c_hi"] - by_loss["M_c_lo"], rel=0.25)
    lo20, hi20 = wilson_by_hand(5, 20)
    assert burst_width == pytest.approx(hi20 - lo20, rel=0.3)


def test_bursts_are_distinct_per_flow_and_trace():
    # gap 0 of flow 1 (all right) and gap 0 of flow 2 (all wrong) are two bursts when pooled
    rows = bursts(1, 10, 0, flow="1") + bursts(1, 10, 1, flow="2")
    out = score(table(rows), by="pooled", bootstrap=200).iloc[0]
    assert out["M_c"] == 0.5
    assert (out["M_c_boot_lo"], out["M_c_boot_hi"]) == (0.0, 1.0)
    rows = [("a",) + r for r in bursts(1, 10, 0)] + [("b",) + r for r in bursts(1, 10, 1)]
    out = score(table(rows, trace=True), by="pooled", bootstrap=200).iloc[0]
    assert (out["M_c_boot_lo"], out["M_c_boot_hi"]) == (0.0, 1.0)


def test_scored_losses_outside_bursts_are_units_of_their_own():
    rows = losses("1", "x", C, W, 5, gap=-1) + losses("1", "x", C, C, 5, gap=-1)
    row = score(table(rows), bootstrap=300).iloc[0]
    assert row["M_c_boot_lo"] < 0.5 < row["M_c_boot_hi"]


def test_bootstrap_ignores_resamples_with_zero_denominator():
    # one congestion burst among 9 wireless ones: most resamples have no congestion loss
    rows = bursts(1, 3, 1) + [(f, lda, g + 1, c, d) for f, lda, g, c, d in bursts(9, 1, 0, cause=W)]
    row = score(table(rows), bootstrap=300).iloc[0]
    assert (row["M_c_boot_lo"], row["M_c_boot_hi"]) == (1.0, 1.0)


def test_bootstrap_zero_and_mean_omit_the_columns():
    assert not any("boot" in c for c in score(MIXED, bootstrap=0).columns)
    assert "M_c_lo" in score(MIXED, bootstrap=0).columns
    assert not any(c.endswith(("_lo", "_hi")) for c in score(MIXED, by="trace", average="mean").columns)


def test_gap_needed_only_for_the_bootstrap():
    df = MIXED.drop(columns=["gap", "uid"])
    assert score(df, bootstrap=0).iloc[0]["M_c"] == 0.25
    with pytest.raises(UsageError, match="gap"):
        score(df)


# --- true loss rates -----------------------------------------------------------------------


def test_summary_rates():
    rows = (
        losses("1", "x", C, C, 2, trace="a") + losses("1", "y", C, W, 2, trace="a")
        + losses("2", "x", W, W, 1, trace="a") + losses("2", "y", W, W, 1, trace="a")
        + losses("1", "x", C, C, 1, trace="b") + losses("1", "y", C, C, 1, trace="b")
    )  # fmt: skip
    df = table(rows, trace=True)
    summary = pd.DataFrame(
        {
            "trace": ["a", "a", "a", "b", "c"],
            "flow": ["1", "2", "3", "1", "1"],  # a/3 has no loss; c is not scored
            "sent": [100, 50, 50, 40, 999],
            "unobserved": [0, 10, 0, 0, 0],
            "congestion": [2, 0, 0, 1, 500],
            "wireless": [0, 1, 0, 0, 0],
        }
    )
    by_flow = score(df, summary, bootstrap=0)
    assert one(by_flow, trace="a", flow="1", lda="x")["congestion_rate"] == pytest.approx(0.02)
    assert one(by_flow, trace="a", flow="1", lda="y")["congestion_rate"] == pytest.approx(0.02)
    assert one(by_flow, trace="a", flow="2", lda="x")["wireless_rate"] == pytest.approx(1 / 40)
    by_trace = score(df, summary, by="trace", bootstrap=0)
    a = one(by_trace, trace="a", lda="x")
    assert (a["congestion_rate"], a["wireless_rate"]) == (pytest.approx(2 / 190), pytest.approx(1 / 190))
    assert one(by_trace, trace="b", lda="y")["congestion_rate"] == pytest.approx(1 / 40)
    pooled = score(df, summary, by="pooled", average="mean")
    assert pooled["congestion_rate"].tolist() == pytest.approx([3 / 230, 3 / 230])
    assert pooled["wireless_rate"].tolist() == pytest.approx([1 / 230, 1 / 230])


def test_summary_without_trace_column_and_empty_denominator():
    summary = pd.DataFrame({"flow": ["1"], "sent": [5], "unobserved": [5], "congestion": [0], "wireless": [0]})
    out = score(table(losses("1", "x", C, C, 1)), summary, bootstrap=0)
    assert math.isnan(out.iloc[0]["congestion_rate"]) and math.isnan(out.iloc[0]["wireless_rate"])


def test_summary_mismatches_are_usage_errors():
    df = table(losses("1", "x", C, C, 1, trace="a") + losses("1", "x", C, C, 1, trace="b"), trace=True)
    summary = pd.DataFrame({"flow": ["1"], "sent": [5], "unobserved": [0], "congestion": [1], "wireless": [0]})
    with pytest.raises(UsageError, match="trace"):
        score(df, summary, bootstrap=0)
    with pytest.raises(UsageError, match="no row for flow '1' of trace 'b'"):
        score(df, summary.assign(trace="a"), bootstrap=0)
    with pytest.raises(UsageError, match="wireless"):
        score(df, summary.drop(columns="wireless").assign(trace="a"), bootstrap=0)


# --- bad arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"by": "packet"}, "by="),
        ({"average": "median"}, "average="),
        ({"by": "flow", "average": "mean"}, "mean"),
        ({"confidence": 0}, "confidence"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 95}, "confidence"),
        ({"confidence": "0.9"}, "confidence"),
        ({"bootstrap": -1}, "bootstrap"),
        ({"bootstrap": 10.5}, "bootstrap"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": None}, "seed"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(UsageError, match=message):
        score(MIXED, **kwargs)


def test_bad_tables():
    with pytest.raises(UsageError, match="'decision'"):
        score(MIXED.drop(columns="decision"))
    with pytest.raises(UsageError, match="'delivered'"):
        score(MIXED.assign(cause="delivered"))
    with pytest.raises(UsageError, match="decision"):
        score(MIXED.assign(decision="maybe"))
    with pytest.raises(UsageError, match="missing values"):
        score(MIXED.assign(flow=None))
    with pytest.raises(UsageError, match="DataFrame"):
        score([("1", "x", 0, C, C)])


# --- properties ----------------------------------------------------------------------------

row_strategy = st.tuples(
    st.sampled_from(["a", "b"]),
    st.sampled_from(["1", "2", "10"]),
    st.sampled_from(["x", "y"]),
    st.integers(-1, 3),
    st.sampled_from([C, W, L]),
    st.sampled_from([C, W, U]),
)


def naive(rows, by):
    """Per-row Python counts per group, keyed as score() keys its rows."""
    out = {}
    for trace, flow, lda, _gap, cause, decision in rows:
        key = {"flow": (trace, flow, lda), "trace": (trace, lda), "pooled": (lda,)}[by]
        c = out.setdefault(key, dict.fromkeys(COUNTS, 0))
        c["losses"] += 1
        c["unknown"] += cause == L
        c["undetected"] += decision == U
        if cause != L and decision != U:
            c["scored"] += 1
            c[cause] += 1
            c["congestion_as_wireless"] += cause == C and decision == W
            c["wireless_as_congestion"] += cause == W and decision == C
            c["decided_wireless"] += decision == W
    return out


def nan_or(num, den):
    return num / den if den else math.nan


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(row_strategy, min_size=1, max_size=40), by=st.sampled_from(["flow", "trace", "pooled"]))
def test_matches_a_naive_count(rows, by):
    out = score(table(rows, trace=True), by=by, bootstrap=0)
    expected = naive(rows, by)
    keys = list(BY[by])
    assert len(out) == len(expected)
    for _, row in out.iterrows():
        c = expected[tuple(row[k] for k in keys)]
        assert {k: row[k] for k in COUNTS} == c
        metrics = {
            "M_c": nan_or(c["congestion_as_wireless"], c["congestion"]),
            "M_w": nan_or(c["wireless_as_congestion"], c["wireless"]),
            "accuracy": nan_or(c["scored"] - c["congestion_as_wireless"] - c["wireless_as_congestion"], c["scored"]),
            "accuracy_ratio": nan_or(c["decided_wireless"], c["wireless"]),
            "WC": nan_or(c["congestion_as_wireless"], c["scored"]),
        }
        for name, value in metrics.items():
            assert row[name] == pytest.approx(value, nan_ok=True), name
        if c["scored"]:
            assert row["CC"] + row["CW"] + row["WC"] + row["WW"] == pytest.approx(1.0)
        for name in ("M_c", "M_w", "accuracy"):
            if math.isnan(row[name]):
                assert math.isnan(row[f"{name}_lo"]) and math.isnan(row[f"{name}_hi"])
            else:
                assert 0 <= row[f"{name}_lo"] <= row[name] <= row[f"{name}_hi"] <= 1


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(row_strategy, min_size=1, max_size=40), seed=st.integers(0, 2**32))
def test_bootstrap_intervals_are_sane(rows, seed):
    out = score(table(rows, trace=True), by="trace", bootstrap=40, seed=seed)
    for name in ("M_c", "M_w", "accuracy"):
        lo, hi, point = out[f"{name}_boot_lo"], out[f"{name}_boot_hi"], out[name]
        assert (lo.isna() == point.isna()).all() and (hi.isna() == point.isna()).all()
        ok = point.notna()
        assert ((0 <= lo[ok]) & (lo[ok] <= hi[ok]) & (hi[ok] <= 1)).all()


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(row_strategy, min_size=1, max_size=40),
    by=st.sampled_from(["flow", "trace", "pooled"]),
    seed=st.integers(0, 2**32),
)
def test_a_tally_scores_as_its_decisions(rows, by, seed):
    """Tallied (per flow, LDA, cause and decision, or per burst too), the decisions give the same
    tables, the burst bootstrap's resamples included; tallied again, the same tally."""
    decisions = table(rows, trace=True)
    counts, bursts = tally(decisions), tally(decisions, bursts=True)
    assert counts["weight"].sum() == bursts["weight"].sum() == len(decisions)
    assert len(counts) == len(decisions.drop_duplicates(["trace", "flow", "lda", "cause", "decision"]))
    assert score(counts, by=by, bootstrap=0).equals(score(decisions, by=by, bootstrap=0))
    assert score(bursts, by=by, bootstrap=30, seed=seed).equals(score(decisions, by=by, bootstrap=30, seed=seed))
    if by != "flow":
        assert score(counts, by=by, average="mean").equals(score(decisions, by=by, average="mean"))
    assert tally(counts).equals(counts)
    # the policer detector's three-way view (``scheme`` policing) survives the tally, other schemes merge
    schemes = np.random.default_rng(seed).choice(["", "policing", "spike", "zigzag"], len(decisions))
    schemed = decisions.assign(scheme=schemes)
    scores = score(schemed, by=by, bootstrap=0)
    assert score(tally(schemed), by=by, bootstrap=0).equals(scores)
    decided = schemed["decision"].isin(["congestion", "wireless"])
    assert scores["called_policing"].sum() == int(((schemes == "policing") & decided).sum())


def test_a_tally_by_hand():
    decisions = table(
        [
            ("a", "1", "x", 0, C, W),
            ("a", "1", "x", 0, C, W),
            ("a", "1", "x", -1, C, W),
            ("a", "1", "x", -1, C, W),
            ("a", "1", "x", 2, W, W),
        ],
        trace=True,
    )
    assert tally(decisions)[["cause", "decision", "weight"]].values.tolist() == [[C, W, 4], [W, W, 1]]
    # per burst: burst 0 is one row of two; each loss outside a burst (gap -1) a row of its own
    assert tally(decisions, bursts=True)[["gap", "weight"]].values.tolist() == [[0, 2], [-1, 1], [-1, 1], [2, 1]]
    with pytest.raises(UsageError, match="weight"):
        score(tally(decisions).assign(weight=-1), bootstrap=0)


def test_a_throughput_above_omniscient_with_ignored_congestion_is_flagged():
    """Above the omniscient receiver's while calling congestion losses wireless: only ignored
    congestion can lift it there (the boundary cases: equal to omniscient, and M_c = 0)."""
    from ldanalyze.scoring.throughput import rests_on_ignored_congestion

    flags = rests_on_ignored_congestion([0.9, 0.9, 0.0, 0.1, float("nan")], [1.49, 1.0, 1.2, 1.0001, 1.3])
    assert flags.tolist() == [True, False, False, True, False]


def test_score_marks_the_throughput_that_rests_on_ignored_congestion(capsys):
    """The bundled CBR trace: veno ignores nine congestion losses in ten and its modeled TFRC
    runs above omniscient's (1.14x); the table says so where the number is shown."""
    assert main(["score", str(TRACES / "wlh_cbr_1flow_bursty.tr.gz"), "--lda", "omniscient,veno,spike"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("omniscient")).split()
    label = "thput % (mean over flows)"  # by trace (the default): the mean over the trace's flows
    thput = next(line for line in lines if line.startswith(label)).removeprefix(label).split()
    cells = dict(zip(header, " ".join(thput).replace(" †", "†").split()))
    assert cells["veno"].endswith("†") and not cells["omniscient"].endswith("†") and not cells["spike"].endswith("†")
    assert "rests on ignored congestion" in out


def replayed(flows: dict[str, dict[str, float]], capacity_given: bool = True) -> pd.DataFrame:
    """A controller replay's summary: per LDA, each flow's thput (omniscient's and unaware's
    among them), with the ratios to the baselines the replay computes."""
    rows = []
    for lda, per_flow in flows.items():
        for flow, thput in per_flow.items():
            rows.append(
                {
                    "lda": lda,
                    "controller": "tfrc",
                    "flow": flow,
                    "capacity_bps": 1e6,
                    "capacity_given": capacity_given,
                    "thput": thput,
                }
            )
    t = pd.DataFrame(rows)
    for base in ("omniscient", "unaware"):
        t[f"vs_{base}"] = t["thput"] / t["flow"].map(flows[base])
    return t


def test_a_group_of_flows_compares_mean_throughputs_and_flags_what_it_shows():
    """x calls congestion wireless (M_c > 0). Flow 1: omniscient crawls (0.1), x gets 0.2;
    flow 2: omniscient 0.9, x 0.5. The mean of x's per-flow ratios, (2.0 + 0.56) / 2 = 1.28,
    flagged x above omniscient while its mean thput, 0.35, is below omniscient's 0.5: the
    ratio shown is that of the means (0.7), and the flag follows it."""
    flows = {"omniscient": {"1": 0.1, "2": 0.9}, "unaware": {"1": 0.05, "2": 0.75}, "x": {"1": 0.2, "2": 0.5}}
    rows = [("a",) + r for r in losses("1", "x", C, W, 2) + losses("2", "x", C, C, 2)]
    rows += [("a",) + r for lda in ("omniscient", "unaware") for r in losses("1", lda, C, C, 2)]
    decisions = table(rows, trace=True)
    by_flow = score(decisions, bootstrap=0, throughput=replayed(flows).assign(trace="a"))
    assert one(by_flow, flow="1", lda="x")["vs_omniscient"] == pytest.approx(2.0)  # a flow's own ratio
    for by in ("trace", "pooled"):
        row = one(score(decisions, by=by, bootstrap=0, throughput=replayed(flows)), lda="x")
        assert row["thput"] == pytest.approx(0.35)
        assert row["vs_omniscient"] == pytest.approx(0.35 / 0.5) and row["vs_unaware"] == pytest.approx(0.35 / 0.4)
        assert row["M_c"] > 0 and not row["ignored_congestion"]
    flows["x"] = {"1": 0.05, "2": 0.99}  # now above omniscient on the mean (0.52), below it on flow 1
    row = one(score(decisions, by="trace", bootstrap=0, throughput=replayed(flows)), lda="x")
    assert row["vs_omniscient"] == pytest.approx(0.52 / 0.5) and row["ignored_congestion"]


def test_a_throughput_outside_the_validated_model_is_flagged_where_shown():
    """Two flows of one trace, each normalised by its own packet-pair capacity, may share a
    bottleneck: the model was validated against the closed loop only on the flow's share
    (docs/paper000/model_grid.md), so the thput row carries ‡ and the block its note; one flow
    alone, or a capacity the user gave, is inside it."""
    two = {"omniscient": {"1": 0.1, "2": 0.9}, "unaware": {"1": 0.05, "2": 0.75}, "x": {"1": 0.2, "2": 0.5}}
    one_flow = {lda: {"1": per["1"]} for lda, per in two.items()}
    decisions = table(losses("1", "x", C, W, 2) + losses("2", "x", C, C, 2))
    cases = [(two, False, True), (two, True, False), (one_flow, False, False)]
    for flows, stated, flagged in cases:
        mine = decisions[decisions["flow"].isin(list(flows["x"]))]
        scores = score(mine, by="trace", bootstrap=0, throughput=replayed(flows, capacity_given=stated))
        assert bool(scores["share_unknown"].all()) is flagged
        [(_, block, note)] = list(blocks(scores))
        assert ("thput % (mean over flows) ‡" in block.index) is flagged
        assert ("packet-pair capacity" in note) is flagged
    by_flow = score(decisions, by="flow", bootstrap=0, throughput=replayed(two, capacity_given=False))
    assert by_flow["share_unknown"].all()  # each flow of the two is flagged in its own block too


def test_the_throughput_rows_name_their_mean():
    """A flow's rows are its own; a trace's or the pool's say which mean they show."""
    flows = {"omniscient": {"1": 0.1, "2": 0.9}, "unaware": {"1": 0.05, "2": 0.75}, "x": {"1": 0.2, "2": 0.5}}
    decisions = table(losses("1", "x", C, W, 2) + losses("2", "x", C, C, 2))
    labels = {
        by: {
            label.strip()
            for _, block, _ in blocks(score(decisions, by=by, bootstrap=0, throughput=replayed(flows)))
            for label in block.index
        }
        for by in ("flow", "trace", "pooled")
    }
    assert {"thput %", "vs omniscient", "vs unaware"} <= labels["flow"]
    assert not any("mean" in label for label in labels["flow"])
    for by in ("trace", "pooled"):
        assert {"thput % (mean over flows)", "vs omniscient (ratio of means)", "vs unaware (ratio of means)"} <= labels[
            by
        ]
    assert {"fairness std %", "Jain index"} <= labels["trace"]  # over the trace's flows
    assert {"fairness std % (mean over traces)", "Jain index (mean over traces)"} <= labels["pooled"]


# --- what the LDAs say, truth or not ---------------------------------------------------------


def test_wireless_share_counts_every_decided_loss_whatever_its_cause():
    """3 unknown-cause losses called W, 1 called C, 1 undetected; 2 known congestion losses
    called W: called 6, called wireless 5 (the undetected one is not called)."""
    rows = (
        losses("1", "x", L, W, 3)
        + losses("1", "x", L, C, 1, first_gap=3)
        + losses("1", "x", L, U, 1, gap=-1)
        + losses("1", "x", C, W, 2, first_gap=4)
    )
    row = score(table(rows), bootstrap=0).iloc[0]
    assert (row["losses"], row["scored"], row["called"], row["called_wireless"]) == (7, 2, 6, 5)
    assert row["wireless_share"] == 5 / 6
    lo, hi = wilson_by_hand(5, 6)
    assert (row["wireless_share_lo"], row["wireless_share_hi"]) == (pytest.approx(lo), pytest.approx(hi))


def test_wireless_share_bootstrap_resamples_bursts():
    """One burst of 4 losses called wireless and one of 4 called congestion: every resample
    draws two bursts, so the share is 0, 1/2 or 1; the interval spans 0-1 at 95 %. All one
    burst: the interval is the point."""
    rows = losses("1", "x", L, W, 4, gap=0) + losses("1", "x", L, C, 4, gap=1)
    row = score(table(rows), bootstrap=2000).iloc[0]
    assert row["wireless_share"] == 0.5
    assert (row["wireless_share_boot_lo"], row["wireless_share_boot_hi"]) == (0.0, 1.0)
    row = score(table(losses("1", "x", L, W, 4, gap=0)), bootstrap=200).iloc[0]
    assert (row["wireless_share_boot_lo"], row["wireless_share_boot_hi"]) == (1.0, 1.0)


def test_wireless_share_by_mean_averages_the_flows_shares():
    rows = losses("1", "x", L, W, 3) + losses("2", "x", L, W, 1) + losses("2", "x", L, C, 1, first_gap=1)
    row = score(table(rows), by="pooled", average="mean").iloc[0]
    assert row["wireless_share"] == pytest.approx((1.0 + 0.5) / 2)
    assert row["called"] == 5


def test_policer_drops_are_kept_apart_and_how_each_lda_read_them_counted():
    """4 policer drops: 3 called wireless, 1 undetected; 2 congestion losses called congestion.
    Excluded (default): M_c over the 2 congestion losses only, M_p = 3 / 3. Scored as
    congestion: M_c = 3 / 5 (the 3 called wireless are now congestion called wireless)."""
    P = "policing"
    rows = losses("1", "x", P, W, 3) + losses("1", "x", P, U, 1, gap=-1) + losses("1", "x", C, C, 2, first_gap=3)
    row = score(table(rows), bootstrap=0).iloc[0]
    assert (row["policing"], row["policing_decided"], row["policing_as_wireless"], row["scored"]) == (4, 3, 3, 2)
    assert (row["M_c"], row["M_p"], row["policing_as"]) == (0.0, 1.0, "excluded")
    mapped = score(table(rows), bootstrap=0, policing_as="congestion").iloc[0]
    assert (mapped["scored"], mapped["congestion"], mapped["M_c"], mapped["M_p"]) == (5, 5, 0.6, 1.0)
    with pytest.raises(UsageError, match="policing_as"):
        score(table(rows), policing_as="queue")
    assert "policer drops left out of M_c/M_w" in text_table(score(table(rows), bootstrap=0))


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.lists(st.integers(0, 3), min_size=4, max_size=4), min_size=1, max_size=40))
def test_resampling_distinct_rows_draws_as_unit_by_unit(counts):
    """Drawing the multiplicities of the distinct rows is drawing the rows one by one: the
    totals' mean and variance are the unit-by-unit bootstrap's exactly (k times the rows' mean
    and population variance per column), within five standard errors over 4,000 resamples."""
    rows = np.array(counts)
    k, resamples = len(rows), 4000
    totals = bootstrap_module.resampled_totals(rows, resamples, np.random.default_rng(11))
    assert totals.shape == (resamples, 4) and totals.dtype.kind == "i"
    mean, var = k * rows.mean(axis=0), k * rows.var(axis=0)
    assert np.all(np.abs(totals.mean(axis=0) - mean) <= 5 * np.sqrt(var / resamples) + 1e-9)
    # the variance of a sample variance, bounded with the fourth moment of a total (<= its range^4)
    spread = np.sqrt(((k * rows.max(axis=0)) ** 4) / resamples)
    assert np.all(np.abs(totals.var(axis=0) - var) <= 5 * spread + 1e-9)
    assert np.all(totals.sum(axis=1) <= k * rows.sum(axis=1).max())


def test_resampled_totals_by_hand_and_against_the_plain_bootstrap():
    """Units all alike: every resample is k times the unit. Two kinds of unit, 3 and 1 of 4:
    the first column's total is 4 minus a Binomial(4, 1/4) count, so 4 with probability
    (3/4)^4; the plain unit-by-unit bootstrap's percentiles agree over 20,000 resamples."""
    alike = bootstrap_module.resampled_totals(np.array([[2, 1, 0, 0]] * 5), 50, np.random.default_rng(1))
    assert (alike == [10, 5, 0, 0]).all()
    rows = np.array([[1, 0, 0, 0]] * 3 + [[0, 0, 1, 1]])
    totals = bootstrap_module.resampled_totals(rows, 20000, np.random.default_rng(2))
    assert (totals[:, 0] == 4).mean() == pytest.approx(0.75**4, abs=0.01)
    assert (totals[:, 0] + totals[:, 2] == 4).all() and (totals[:, 2] == totals[:, 3]).all()
    from .naive import scoring as naive_scoring

    plain = np.array(naive_scoring.resample_units(rows.tolist(), 20000, seed=3))
    for q in (2.5, 10, 50, 97.5):  # each well inside one value's step of the distribution
        assert np.percentile(totals, q, axis=0).tolist() == np.percentile(plain, q, axis=0).tolist()
