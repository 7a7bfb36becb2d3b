"""Flach et al.'s policer detector on a sender's view (ldanalyze/lda/sender_policer.py): its
kernel against a plain twin, each rule at its boundary on hand-made chunks, and its verdicts on
simulated policer, shaper and random losses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldanalyze.errors import UsageError
from ldanalyze.lda.sender_policer import CHUNK_COLUMNS, Flach, flach_verdicts
from ldanalyze.packets import make_packet_table

from ..naive import sender_policer as naive
from ..support.sender_limiters import sender_chunk


def _rows(verdicts: pd.DataFrame) -> list[tuple]:
    return [(r.flow, r.chunk, r.code, r.rate_bps, r.burst_bytes) for r in verdicts.itertuples()]


def _same(fast: list[tuple], plain: list[tuple]) -> None:
    assert [r[:3] for r in fast] == [r[:3] for r in plain]
    np.testing.assert_allclose([r[3] for r in fast], [r[3] for r in plain], rtol=1e-9)
    assert [r[4] for r in fast] == [r[4] for r in plain]


@settings(max_examples=30, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["policing", "congestion", "wireless"]), min_size=1, max_size=3),
    seed=st.integers(0, 10_000),
    n=st.integers(5, 400),
    offered=st.floats(150_000, 600_000),
    bucket=st.floats(1500, 60_000),
    jitter=st.floats(0.0, 0.05),
    cutoff=st.integers(0, 3),
    min_samples=st.integers(0, 20),
    segments=st.floats(0, 4),
    over_min=st.booleans(),
    capped=st.booleans(),
    refit=st.booleans(),
    pause=st.floats(0.0, 1.0),
)
def test_the_kernel_against_its_plain_twin(kinds, seed, n, offered, bucket, jitter, cutoff, min_samples, segments,
                                           over_min, capped, refit, pause):  # fmt: skip
    """Several chunks of two flows, each of a mechanism, with and without the thresholds' defaults;
    the sender pauses ``pause`` seconds in mid-chunk (a timeout: what ``refit`` leaves out)."""
    chunks = [
        sender_chunk(
            kind,
            n=n,
            seed=seed + i,
            offered=offered,
            bucket=bucket,
            jitter=jitter,
            p=0.05,
            flow=f"f{i % 2}",
            chunk=i,
            start=100.0 * i,
        )  # fmt: skip
        for i, kind in enumerate(kinds)
    ]
    for p in chunks:
        later = (p["t_send"] > p["t_send"].median()).to_numpy()
        p.loc[later, ["t_send", "t_ack"]] += pause
    packets = make_packet_table(**{c: pd.concat([p[c] for p in chunks], ignore_index=True) for c in chunks[0].columns})
    tuned = Flach(
        cutoff=cutoff,
        min_samples=min_samples,
        min_loss_slices=1,
        min_inflated_rtt=0.0,
        loss_segments=segments,
        pass_segments=segments / 2,
        over_min=over_min,
        queue_segments=segments,
        capped=capped,
        refit=refit,
    )
    for detector in (Flach(), tuned):
        _same(_rows(flach_verdicts(packets, detector)), naive.flach_chunks(packets, detector))


@pytest.mark.parametrize("kind, expected", [("policing", "policed"), ("congestion", "inflated rtt")])
def test_a_policer_and_a_shaper(kind, expected):
    """250 kB/s offered to a 200 kB/s policer (15 kB bucket) or shaper (30 kB queue: 150 ms of
    queueing on a 50 ms RTT): the policer's chunk is called policed at its token rate with its
    bucket's burst; the shaper's is ruled out by the RTT inflation before its losses."""
    v = flach_verdicts(sender_chunk(kind)).iloc[0]
    assert expected in (v["verdict"], v["rule"])
    if kind == "policing":
        assert v["rate_bps"] == pytest.approx(1.6e6, rel=0.01)
        # the bucket (15 kB) less a segment, and what the token rate added meanwhile (the
        # sender earns 1200 bytes of each 1500 it sends), plus the first segment lost
        assert v["burst_bytes"] == pytest.approx((15_000 - 1500) / (1 - 200 / 250) + 1500)


def _chunk(t_send, lost, *, size=1000, rtt=0.05, acked_again=True) -> pd.DataFrame:
    """One chunk: transmissions at ``t_send`` (new data each), those ``lost`` sent again after
    all and acknowledged 50 ms later (``acked_again``; else never in the trace), ACK delay
    ``rtt`` (a scalar or per row)."""
    t_send = np.asarray(t_send, float)
    lost = np.asarray(lost, bool)
    n = len(t_send)
    again = np.flatnonzero(lost)
    resend_at = t_send[-1] + 1.0 + 0.001 * np.arange(len(again))
    rtt = np.broadcast_to(np.asarray(rtt, float), (n,))
    fate_again = "delivered" if acked_again else "unobserved"
    return make_packet_table(
        flow=np.full(n + len(again), "a", dtype=object),
        seq=np.concatenate([np.arange(n), again]),
        size=np.full(n + len(again), size),
        t_send=np.concatenate([t_send, resend_at]),
        t_recv=np.full(n + len(again), np.nan),
        fate=np.concatenate([np.where(lost, "lost", "delivered"), np.full(len(again), fate_again)]),
        t_ack=np.concatenate([np.where(lost, np.nan, t_send + rtt), resend_at + (0.05 if acked_again else np.nan)]),
        chunk=np.zeros(n + len(again), np.int64),
    )


def _policed(losses: int = 20, period: int = 5, spacing: float = 0.01, **kw) -> pd.DataFrame:
    """Every ``period``-th transmission lost from the 10th on: what a 1000-byte sender every
    ``spacing`` s through a policer at (period - 1)/period of its rate loses."""
    n = 10 + losses * period
    lost = np.zeros(n, bool)
    lost[10::period] = True
    return _chunk(np.arange(n) * spacing, lost, **kw)


def _verdict(packets: pd.DataFrame, **params) -> tuple[str, str]:
    v = flach_verdicts(packets, Flach(**params)).iloc[0]
    return str(v["verdict"]), str(v["rule"])


def test_regular_losses_at_a_token_rate_are_policed():
    v = flach_verdicts(_policed()).iloc[0]
    assert v["verdict"] == "policed"
    assert v["rate_bps"] == pytest.approx(4 / 5 * 1000 * 8 / 0.01)  # 4 passes in 5 slots, first to last loss
    assert v["burst_bytes"] == 10_000  # the ten sent before the first loss
    assert v["losses"] == 20


def test_enough_losses_and_passes():
    """§3.1's enough loss: 15 losses (and passes) from the first loss on; 14 are too few."""
    assert _verdict(_policed(losses=15)) == ("policed", "")
    assert _verdict(_policed(losses=14)) == ("too little loss", "too little loss")
    assert _verdict(_policed(losses=14), min_samples=14) == ("policed", "")
    assert _verdict(_chunk([0.0, 0.1], [True, False])) == ("too little loss", "too little loss")  # no last loss


def test_losses_in_three_rtt_slices():
    """Losses all within one median RTT of the first loss make one slice: too little loss."""
    burst = _policed(spacing=0.001, rtt=1.0)  # 20 losses over 0.1 s, RTT 1 s
    assert _verdict(burst) == ("too little loss", "too little loss")
    assert _verdict(burst, min_loss_slices=1) == ("policed", "")


def test_a_late_first_loss():
    """The first loss after 2 MB of new data is late; at 2 MB it is not."""
    on_time = _policed(size=200_000)  # the first loss at 10 × 200 kB = 2 MB
    assert _verdict(on_time) == ("policed", "")
    assert _verdict(on_time, late_loss_bytes=1_999_999) == ("not policed", "late loss")


def test_a_negative_fill():
    """Too few bytes before the first loss for the rate since the chunk began: the bucket would
    have started below empty. Ten transmissions at the rate's pace before it, then a pause of
    1 s: the rate's tokens over that second are far above what passed."""
    lost = np.zeros(110, bool)
    lost[10::5] = True
    t = np.arange(110) * 0.01
    late = _chunk(np.where(np.arange(110) >= 10, t + 1.0, t), lost)
    assert _verdict(late) == ("not policed", "negative fill")
    assert _verdict(_chunk(t, lost)) == ("policed", "")


def test_more_tokens_at_losses_than_at_passes():
    """Losses that come when the bucket is fullest (each loss after a pause) are no policer's."""
    n = 110
    t = np.arange(n) * 0.01
    lost = np.zeros(n, bool)
    lost[10::5] = True
    t = t + np.cumsum(lost) * 0.05  # a 50 ms pause before every loss: tokens pile up
    assert _verdict(_chunk(t, lost)) == ("not policed", "higher fill on loss")


def test_the_inflated_rtt_share():
    """Losses preceded by an RTT 1.3 times the 10th percentile and at least 20 ms: 4 of 20 (20 %)
    are allowed, 5 are not; below 20 ms none counts. (The retransmissions are never acknowledged
    here: an acknowledged one holds back the RTT samples of what was sent before its ACK.)"""

    def with_inflation(count: int, base: float) -> pd.DataFrame:
        n = 110
        rtt = np.full(n, base)
        for k, loss in enumerate(range(10, n, 5)):
            if k < count:
                rtt[loss - 2 : loss] = 2 * base  # the two samples before the loss
        lost = np.zeros(n, bool)
        lost[10::5] = True
        return _chunk(np.arange(n) * 0.01, lost, rtt=rtt, acked_again=False)

    assert _verdict(with_inflation(4, 0.05)) == ("policed", "")
    assert _verdict(with_inflation(5, 0.05)) == ("not policed", "inflated rtt")
    assert _verdict(with_inflation(5, 0.0099)) == ("policed", "")
    assert _verdict(with_inflation(5, 0.0099), min_inflated_rtt=0.0) == ("not policed", "inflated rtt")


def test_no_rtt_sample():
    packets = _policed()
    packets["t_ack"] = np.nan
    assert _verdict(packets) == ("no rtt", "no rtt")


def test_the_table_without_loss_or_chunks():
    packets = _chunk(np.arange(5) * 0.01, np.zeros(5, bool)).drop(columns="chunk")
    v = flach_verdicts(packets)
    assert list(v.columns) == list(CHUNK_COLUMNS)
    assert v[["verdict", "losses", "transmissions", "burst_bytes"]].values.tolist() == [["too little loss", 0, 5, -1]]
    assert flach_verdicts(packets.iloc[:0]).empty


@pytest.mark.parametrize(
    "params, message",
    [
        ({"cutoff": -1}, "cutoff must be a whole number"),
        ({"min_samples": 2.5}, "min_samples must be a whole number"),
        ({"loss_out_of_range": 1.5}, "loss_out_of_range"),
        ({"inflation": 0}, "inflation"),
        ({"min_inflated_rtt": -0.1}, "min_inflated_rtt"),
    ],
)
def test_bad_parameters_are_refused(params, message):
    with pytest.raises(UsageError, match=message):
        Flach(**params)


def test_a_receivers_table_is_refused():
    with pytest.raises(UsageError, match="sender's PacketTable"):
        flach_verdicts(pd.DataFrame({"flow": [], "seq": []}))


def test_the_lda_marks_the_losses_of_policed_chunks():
    """Per gap of a sender's timeline (its flow and first lost segment), whether that segment's
    chunk is called policed: chunk 0 of flow a is a policer's, chunk 1 a shaper's."""
    from types import SimpleNamespace

    from ldanalyze.lda.sender_policer import SenderPolicer, SenderPolicerLab

    policed = sender_chunk("policing", n=600, flow="a", chunk=0)
    shaped = sender_chunk("congestion", n=600, flow="a", chunk=1, start=100.0)
    shaped["seq"] += 10_000
    packets = make_packet_table(**{c: pd.concat([policed[c], shaped[c]], ignore_index=True) for c in policed.columns})
    lost = packets[packets["fate"] != "delivered"].drop_duplicates("seq")
    gaps = pd.DataFrame({"flow": lost["flow"].astype(str).to_numpy(), "first_seq": lost["seq"].to_numpy()})
    f = SimpleNamespace(timeline=SimpleNamespace(gaps=gaps, packets=packets))
    assert SenderPolicer().chunk_policed(f).tolist() == (lost["chunk"] == 0).tolist()
    assert SenderPolicer.view == SenderPolicerLab.view == "sender"
    assert SenderPolicerLab().over_min and not SenderPolicer().over_min


def test_a_senders_trace_is_read_and_a_receivers_refused():
    from ldanalyze.packets import Trace, empty_rtt

    packets = sender_chunk("policing")
    sender = Trace(packets=packets, rtt=empty_rtt(), path="s.pcap", format="pcap", meta={"view": "sender"})
    assert flach_verdicts(sender).equals(flach_verdicts(packets))
    receiver = Trace(packets=packets, rtt=empty_rtt(), path="r.pcap", format="pcap")
    with pytest.raises(
        UsageError, match="r.pcap: the policer detector reads a sender's view, and no flow is read in one"
    ):
        flach_verdicts(receiver)


def test_the_lab_variants_knobs():
    """A 1 ms RTT leaves Flach et al.'s tolerances at 160 bytes of tokens: 5 ms of jitter in the
    sending times spreads the losses' tokens over 400 and rules the policer out, unless the
    tolerance is floored at a segment. A 1 s pause in mid-chunk (a timeout: the policer's bucket
    fills up and overflows) halves the goodput: the policer is found again only with the rate
    refitted to the time the bucket was not full and the bucket capped at its depth."""
    rng = np.random.default_rng(0)
    lost = np.zeros(110, bool)
    lost[10::5] = True
    jittered = _chunk(np.arange(110) * 0.01 + rng.uniform(0, 0.005, 110), lost, rtt=0.001)
    assert _verdict(jittered) == ("not policed", "loss fill out of range")
    assert _verdict(jittered, loss_segments=1) == ("policed", "")
    before = sender_chunk("policing", n=400)
    after = sender_chunk("policing", n=400, seed=2, start=before["t_send"].max() + 1.0)
    after["seq"] += 400
    paused = make_packet_table(**{c: pd.concat([before[c], after[c]], ignore_index=True) for c in before.columns})
    for knobs in ({}, {"refit": True}, {"capped": True}):
        assert _verdict(paused, **knobs) == ("not policed", "loss fill out of range")
    v = flach_verdicts(paused, Flach(capped=True, refit=True)).iloc[0]
    assert (v["verdict"], v["burst_bytes"]) == ("policed", 69_000)
    assert v["rate_bps"] == pytest.approx(1.6e6, rel=0.01)


def test_the_detector_reads_what_the_sender_believed_not_the_truth_joined_on():
    """A drop the sender never declared (the chain's truth marks it) is no loss to the detector;
    a declared loss the truth shows spurious still is (the sender did not know)."""
    from ldanalyze.lda.sender_policer import chunk_rows

    packets = sender_chunk("policing")
    declared = packets["fate"].isin(["congestion", "wireless", "policing", "lost"]).to_numpy()
    table = packets.assign(
        loss_trigger=pd.Categorical(np.where(declared, "rto", "")), spurious=pd.Categorical(np.full(len(packets), ""))
    )
    assert chunk_rows(table)["lost"].sum() == declared.sum()
    first = int(np.flatnonzero(declared)[0])
    hidden = table.assign(loss_trigger=table["loss_trigger"].astype(str).where(np.arange(len(table)) != first, ""))
    assert chunk_rows(hidden)["lost"].sum() == declared.sum() - 1
    truth = table.assign(spurious=np.where(np.arange(len(table)) == first, "truth", ""))
    assert chunk_rows(truth)["lost"].sum() == declared.sum()
