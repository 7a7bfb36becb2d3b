"""Flach et al.'s policer detector ("PD") on a sender's view: one verdict per chunk of a flow.

Flach, Papageorge, Terzis, Pedrosa, Cheng, Karim, Katz-Bassett, Govindan, "An Internet-wide
analysis of traffic policing", SIGCOMM 2016, §3.1 (the detector, on server-side traces) and
§3.2 (its validation in a lab); the constants are those of the authors' public implementation
(github.com/USC-NSL/policing-detection, ``policing_detector.py``, the paper's supplemental
material [1]), and the verdict codes are theirs, so that a chunk's row here compares with a row
of their ``process_pcap.py``. Per chunk (``packets.SENDER_COLUMNS``' ``chunk``), over its
transmissions in send order, a transmission **lost** when its fate is a loss (the sender sent it
again and it was not delivered: their "retransmitted, not spuriously"):

1. **Enough loss** (code 1, ``too little loss``): a first and a last loss (``cutoff`` losses
   left out at each end: their second run uses 2), at least ``min_samples`` (15) losses and as
   many passed transmissions from the first loss on, in at least ``min_loss_slices`` (3)
   "slices" of one median RTT that start at a loss.
2. **Not late** (code 2): the first loss lies within the chunk's first ``late_loss_bytes``
   (2 MB) of new data.
3. **The token rate**: the goodput between the first and the last loss (bytes of the passed
   transmissions from the first loss up to the last, per second between them) is the policer's
   token rate; the bytes sent before the first loss are its **burst** (the bucket's depth).
   The bucket cannot have held fewer than no tokens when the chunk began (code 3, ``negative
   fill``): the first loss's offset, less the tokens the rate made since the chunk's start, is
   at least ``-pass_rtts`` median RTTs' worth of tokens.
4. **Losses when, and only when, the rate is exceeded**: a bucket filling at that rate from
   empty at the first loss, emptied by every passed transmission, holds on average (mean and
   median) fewer tokens at a loss than at a pass (code 4, ``higher fill on loss``); at most
   ``loss_out_of_range`` (10 %) of the losses find it further than ``loss_rtts`` (2) median
   RTTs' worth of tokens from the losses' median (code 5); at most ``pass_out_of_range`` (3 %)
   of the passes find it more than ``pass_rtts`` (0.75) median RTTs' worth below that median
   (code 6).
5. **No RTT inflation before the losses** (a queue inflates the RTT, a policer does not): a
   loss is preceded by an inflated RTT when the next-to-last RTT sample before it is at least
   the median of the samples so far, above ``inflation`` (1.3) times their 10th percentile and
   at least ``min_inflated_rtt`` (20 ms); at most ``inflated_share`` (20 %) of the losses may be
   (code 7, ``inflated rtt``).

RTT samples, as theirs: a transmission's ACK delay (``t_ack - t_send``) when it was not sent
again (Karn), in send order, leaving out those sent before the data of an earlier retransmitted
transmission was acknowledged (their ACK delays may hold the receiver's wait for the hole); the
median RTT is over all of the chunk's samples. Their percentiles are numpy's (linear). Sizes are
bytes on the wire (theirs: TCP payload bytes), so the rate is the one a policer counting IP
packets enforces. Where a chunk has no RTT sample at all, the tolerances in tokens are not
defined (their code compares with NaN and never rules out): here it is code 8, ``no rtt``.

The variant's knobs (all off by default; ``SenderPolicerLab`` sets those the lab grid supports,
docs/ldas.md "At the sender"): ``loss_segments`` and ``pass_segments`` floor the two token
tolerances at that many segments (the chunk's median transmission size), for paths whose RTT is
too short for an RTT's worth of tokens to cover a segment; ``over_min`` calls an RTT sample
inflated when it is above ``inflation`` times the lowest sample so far and at least that lowest
plus ``queue_segments`` segments' time at the token rate (a standing queue inflates every sample,
so their percentile test finds none inflated); ``capped`` caps the replayed bucket at the
estimated depth (the burst less the tokens made while it was sent); ``refit`` refits the token
rate to the time the bucket was not full: the goodput over the time between the first and the
last loss less the part of each pause in sending beyond what fills a bucket of the estimated
depth at the rate, until the rate settles (a sender in a retransmission timeout sends nothing
while the bucket fills and overflows: the goodput alone falls far below the token rate).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pandas as pd
from numba import njit

from .. import packets as pk
from ..errors import UsageError
from ..specs import Parameterized, check_fraction, check_positive
from ..tiering import call
from .base import LDA, Features, Verdict
from .policer import POLICING_CODE
from .rtt import AdaptiveRtt

# their result codes (policing_detector.py), and the verdict each gives
RULES = (
    "",  # 0: policed
    "too little loss",
    "late loss",
    "negative fill",
    "higher fill on loss",
    "loss fill out of range",
    "pass fill out of range",
    "inflated rtt",
    "no rtt",  # 8: ours, where theirs compares with NaN
)
POLICED, NOT_POLICED, TOO_LITTLE_LOSS, NO_RTT = "policed", "not policed", "too little loss", "no rtt"
VERDICTS = (POLICED, NOT_POLICED, TOO_LITTLE_LOSS, NO_RTT)
REFITS = 100  # at most, refitting the token rate (``refit``); it settles within a few dozen
CHUNK_COLUMNS = ("flow", "chunk", "verdict", "rule", "code", "rate_bps", "burst_bytes", "losses", "transmissions")


@dataclasses.dataclass(frozen=True)
class Flach(Parameterized):
    """The detector's thresholds (module docstring; Flach et al. §3.1, their public code's
    values). ``cutoff``: losses left out at each end when the first and last loss are found."""

    name = "flach"
    cutoff: int = 0
    min_samples: int = 15
    min_loss_slices: int = 3
    late_loss_bytes: float = 2e6
    loss_rtts: float = 2.0
    pass_rtts: float = 0.75
    loss_out_of_range: float = 0.10
    pass_out_of_range: float = 0.03
    inflation: float = 1.3
    min_inflated_rtt: float = 0.020
    inflated_share: float = 0.2
    loss_segments: float = 0.0
    pass_segments: float = 0.0
    over_min: bool = False
    queue_segments: float = 0.0
    capped: bool = False
    refit: bool = False

    def __post_init__(self) -> None:
        check_positive(
            self.name,
            late_loss_bytes=self.late_loss_bytes,
            loss_rtts=self.loss_rtts,
            pass_rtts=self.pass_rtts,
            inflation=self.inflation,
        )
        check_fraction(
            self.name,
            loss_out_of_range=self.loss_out_of_range,
            pass_out_of_range=self.pass_out_of_range,
            inflated_share=self.inflated_share,
        )
        for key in ("cutoff", "min_samples", "min_loss_slices"):
            value = getattr(self, key)
            if not (isinstance(value, (int, np.integer)) and value >= 0):
                raise UsageError(f"{self.name}: {key} must be a whole number ≥ 0, not {value!r}")
            object.__setattr__(self, key, int(value))
        for key in ("over_min", "capped", "refit"):
            if not isinstance(getattr(self, key), (bool, np.bool_)):
                raise UsageError(f"{self.name}: {key} must be true or false, not {getattr(self, key)!r}")
        for key in ("min_inflated_rtt", "loss_segments", "pass_segments", "queue_segments"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and value >= 0):
                raise UsageError(f"{self.name}: {key} must be a number ≥ 0, not {value!r}")

    def thresholds(self) -> tuple:
        """The kernel's threshold arguments, in its order."""
        return (
            self.cutoff,
            self.min_samples,
            self.min_loss_slices,
            float(self.late_loss_bytes),
            float(self.loss_rtts),
            float(self.pass_rtts),
            float(self.loss_out_of_range),
            float(self.pass_out_of_range),
            float(self.inflation),
            float(self.min_inflated_rtt),
            float(self.inflated_share),
            float(self.loss_segments),
            float(self.pass_segments),
            bool(self.over_min),
            float(self.queue_segments),
            bool(self.capped),
            bool(self.refit),
        )


@njit(cache=True)
def _percentile(ordered, n, q):
    """numpy's (linear) ``q``-th percentile of the ``n`` sorted values ``ordered[:n]``."""
    pos = q / 100.0 * (n - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, n - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@njit(cache=True)
def flach_chunks(bounds, t_send, size, offset, lost, resent, settled, ack_delay, cutoff, min_samples, min_slices,
                 late_bytes, loss_rtts, pass_rtts, loss_out, pass_out, inflation, min_inflated, inflated_share,
                 loss_segments, pass_segments, over_min, queue_segments, capped, refit):  # fmt: skip
    """Per chunk (rows ``bounds[c]`` to ``bounds[c + 1]``, in send order): the rule's code (0:
    policed), the token rate (bit/s; NaN unless policed) and the burst (bytes; -1 unless
    policed). Per row: ``offset`` (bytes of new data sent in the chunk before its data),
    ``lost``, ``resent`` (sent again later), ``settled`` (when its data was acknowledged at
    last; NaN never), ``ack_delay`` (its RTT sample; NaN none)."""
    chunks = bounds.shape[0] - 1
    code = np.zeros(chunks, np.int8)
    rate_out = np.full(chunks, np.nan)
    burst_out = np.full(chunks, -1, np.int64)
    for c in range(chunks):
        a, b = bounds[c], bounds[c + 1]
        losses = np.flatnonzero(lost[a:b]) + a
        if losses.shape[0] < 2 * cutoff + 2:  # no first loss, or no last one after it
            code[c] = 1
            continue
        first, last = losses[cutoff], losses[losses.shape[0] - 1 - cutoff]
        if offset[first] > late_bytes:
            code[c] = 2
            continue
        samples = ack_delay[a:b][np.isfinite(ack_delay[a:b])]
        if samples.shape[0] == 0:
            code[c] = 8
            continue
        median_rtt = np.median(samples)
        elapsed = t_send[last] - t_send[first]
        passed = 0.0
        for i in range(first, last):
            if not lost[i]:
                passed += size[i]
        rate = passed / elapsed if elapsed > 0 else 0.0  # bytes per second
        segment = np.median(size[a:b])
        burst = 0
        for i in range(a, losses[0]):
            burst += size[i]
        for _ in range(REFITS if refit and rate > 0 else 0):  # leave out the time a full bucket wasted
            depth = max(burst - rate * (t_send[losses[0]] - t_send[a]), segment)
            wasted = 0.0
            for i in range(first, last):
                wasted += max(t_send[i + 1] - t_send[i] - depth / rate, 0.0)
            refitted = passed / (elapsed - wasted)
            steady = abs(refitted - rate) <= 1e-9 * rate
            rate = refitted
            if steady:
                break
        loss_zero = max(loss_rtts * median_rtt * rate, loss_segments * segment)
        pass_zero = max(pass_rtts * median_rtt * rate, pass_segments * segment)
        queue_wait = queue_segments * segment / rate if rate > 0 else np.inf
        if offset[first] - rate * (t_send[first] - t_send[a]) < -pass_zero:
            code[c] = 3
            continue
        on_loss = np.empty(b - a)
        on_pass = np.empty(b - a)
        n_loss = n_pass = 0
        ordered = np.empty(b - a)  # the RTT samples so far, sorted
        n_rtt = 0
        previous = latest = np.nan  # the last two samples, in send order
        ignore_until = -np.inf
        inflated = slices = 0
        slice_end = t_send[first] + median_rtt
        used = 0.0
        # the bucket's depth: the burst less what the rate added while it was sent (capped)
        depth = max(burst - rate * (t_send[losses[0]] - t_send[a]), segment) if capped else np.inf
        level, last_t = 0.0, t_send[first]  # the capped bucket, empty at the first loss
        for i in range(a, b):
            if resent[i] and settled[i] > ignore_until:
                ignore_until = settled[i]
            if not resent[i] and np.isfinite(ack_delay[i]) and t_send[i] > ignore_until:
                j = n_rtt
                while j > 0 and ordered[j - 1] > ack_delay[i]:
                    ordered[j] = ordered[j - 1]
                    j -= 1
                ordered[j] = ack_delay[i]
                n_rtt += 1
                previous, latest = latest, ack_delay[i]
            if i < first:
                continue
            if capped:
                level, last_t = min(depth, level + rate * (t_send[i] - last_t)), t_send[i]
                tokens = level
            else:
                tokens = rate * (t_send[i] - t_send[first]) - used
            if lost[i]:
                on_loss[n_loss] = tokens
                n_loss += 1
                if n_rtt > 1 and previous >= min_inflated:
                    if over_min:  # above the lowest so far, by a queue of ``queue_segments``
                        high = previous > inflation * ordered[0] and previous >= ordered[0] + queue_wait
                    else:
                        high = previous >= _percentile(ordered, n_rtt, 50.0)
                        high = high and previous > inflation * _percentile(ordered, n_rtt, 10.0)
                    inflated += high
                if i == first:
                    slices = 1
                elif t_send[i] > slice_end:
                    slice_end = t_send[i] + median_rtt
                    slices += 1
            else:
                on_pass[n_pass] = tokens
                n_pass += 1
                used += size[i]
                level -= size[i]
        if slices < min_slices or n_loss < min_samples or n_pass < min_samples:
            code[c] = 1
            continue
        at_loss, at_pass = on_loss[:n_loss], on_pass[:n_pass]
        middle = np.median(at_loss)
        if at_loss.mean() >= at_pass.mean() or middle >= np.median(at_pass):
            code[c] = 4
        elif np.sum(np.abs(at_loss - middle) > loss_zero) > loss_out * n_loss:
            code[c] = 5
        elif np.sum(at_pass - middle < -pass_zero) > pass_out * n_pass:
            code[c] = 6
        elif inflated > inflated_share * n_loss:
            code[c] = 7
        else:
            rate_out[c] = rate * 8.0
            burst_out[c] = burst
    return code, rate_out, burst_out


def _believed_lost(rows: pd.DataFrame) -> np.ndarray:
    """The transmissions the sender itself took for lost: declared lost (``loss_trigger``) and not
    shown spurious by its own evidence (a truth joined on later is not the sender's to read); a
    table without the sender's columns: its fates."""
    if "loss_trigger" not in rows.columns:
        return rows["fate"].isin(pk.LOSS_FATES).to_numpy()
    evidence = rows["spurious"].astype(str).to_numpy()
    return (rows["loss_trigger"].astype(str).to_numpy() != "") & ((evidence == "") | (evidence == "truth"))


def chunk_rows(packets: pd.DataFrame) -> dict[str, np.ndarray]:
    """The kernel's per-row arrays of a sender's PacketTable, its rows in (flow, chunk, send)
    order, with ``bounds`` (each chunk's first row, and the end), and each chunk's ``flow`` and
    ``chunk``. A table without a ``chunk`` column is one chunk per flow."""
    codes = pk.flow_codes(packets["flow"])
    chunk = packets["chunk"].to_numpy(np.int64) if "chunk" in packets.columns else np.zeros(len(packets), np.int64)
    t_send = packets["t_send"].to_numpy(np.float64)
    order = pk.sorting_order(codes, chunk, t_send, packets["uid"].to_numpy(np.int64))
    rows = packets if order is None else packets.take(order)
    if order is not None:
        codes, chunk, t_send = codes[order], chunk[order], t_send[order]
    seq = rows["seq"].to_numpy(np.int64)
    tx = rows["tx"].to_numpy(np.int64)
    size = rows["size"].to_numpy(np.float64)
    t_ack = rows["t_ack"].to_numpy(np.float64) if "t_ack" in rows.columns else np.full(len(rows), np.nan)
    lost = _believed_lost(rows)
    pair = [codes, seq]  # a segment (TCP) or packet (QUIC) of a flow
    resent = tx < pd.Series(tx).groupby(pair, sort=False).transform("max").to_numpy()
    settled = pd.Series(t_ack).groupby(pair, sort=False).transform("max").to_numpy(np.float64)
    ack_delay = np.where(~resent & np.isfinite(t_ack), t_ack - t_send, np.nan)
    starts = np.ones(len(rows), bool)
    starts[1:] = (codes[1:] != codes[:-1]) | (chunk[1:] != chunk[:-1])
    first_row = np.flatnonzero(starts)
    bounds = np.append(first_row, len(rows)).astype(np.int64)
    # each row's offset: the bytes of new data (a pair's earliest transmission in the table)
    # sent in its chunk before its pair's earliest transmission
    earliest = tx == pd.Series(tx).groupby(pair, sort=False).transform("min").to_numpy()
    new = np.where(earliest, size, 0.0)
    before = np.cumsum(new) - new
    before -= np.repeat(before[first_row], np.diff(bounds))
    offset = pd.Series(np.where(earliest, before, np.inf)).groupby(pair, sort=False).transform("min").to_numpy()
    return {
        "bounds": bounds,
        "t_send": t_send,
        "size": size,
        "offset": offset.astype(np.float64),
        "lost": lost,
        "resent": resent,
        "settled": settled,
        "ack_delay": ack_delay,
        "flow": rows["flow"].to_numpy()[first_row],
        "chunk": chunk[first_row],
        "losses": np.add.reduceat(lost.astype(np.int64), first_row) if len(rows) else np.zeros(0, np.int64),
        "transmissions": np.diff(bounds),
    }


def flach_verdicts(packets: pd.DataFrame | pk.Trace, detector: Flach | None = None) -> pd.DataFrame:
    """One row per (flow, chunk) of a sender's PacketTable, or of a sender's-view Trace
    (``CHUNK_COLUMNS``): the verdict (``policed``, ``not policed``, ``too little loss``, ``no
    rtt``), the rule that ruled policing out (``RULES``; "" when policed) and its code (theirs),
    the token rate (bit/s) and burst (bytes) when policed (NaN and -1 otherwise), the losses and
    transmissions."""
    detector = detector or Flach()
    if isinstance(packets, pk.Trace):
        senders = pk.sender_flows(packets)
        if not senders:
            raise UsageError(f"{packets.path}: the policer detector reads a sender's view, and no flow is read in one")
        packets = packets.packets[packets.packets["flow"].astype(str).isin(senders)]
    missing = {"fate", "t_send", "size", "seq", "tx", "uid", "flow"} - set(packets.columns)
    if missing:
        raise UsageError(f"the policer detector needs a sender's PacketTable; it lacks {sorted(missing)}")
    r = chunk_rows(packets)
    code, rate, burst = call(
        flach_chunks,
        r["bounds"],
        r["t_send"],
        r["size"],
        r["offset"],
        r["lost"],
        r["resent"],
        r["settled"],
        r["ack_delay"],
        *detector.thresholds(),
        us_per_item=5.0,
    )
    verdict = np.where(
        code == 0, POLICED, np.where(code == 1, TOO_LITTLE_LOSS, np.where(code == 8, NO_RTT, NOT_POLICED))
    )
    return pd.DataFrame(
        {
            "flow": pd.Series(r["flow"], dtype=object).astype(str),
            "chunk": r["chunk"],
            "verdict": pd.Categorical(verdict, categories=list(VERDICTS)),
            "rule": pd.Categorical(np.asarray(RULES, dtype=object)[code], categories=list(RULES)),
            "code": code.astype(np.int64),
            "rate_bps": rate,
            "burst_bytes": burst,
            "losses": r["losses"],
            "transmissions": r["transmissions"],
        },
        columns=list(CHUNK_COLUMNS),
    )


@dataclasses.dataclass(frozen=True)
class SenderPolicer(LDA, Flach):
    """The detector as an LDA on the sender's view: every loss of a chunk it calls policed is
    decided congestion with scheme ``policing`` (as ``policer.Policer``'s three-way view), the
    others by Lim's adaptive RTT (paper 003 §3.1), a scheme defined on the sender's RTT.

    Its verdict is the chunk's, taken over the whole chunk (Flach et al. judge a chunk once it
    is over): a loss's decision may rest on transmissions after it. ``flach_pd`` is the detector
    as written; ``flach_pd_lab`` the variant the lab grid supports (docs/ldas.md, "At the
    sender")."""

    name = "flach_pd"
    view: ClassVar[str] = "sender"
    in_all: ClassVar[bool] = False
    hindsight: ClassVar[bool] = True  # a chunk's verdict reads the whole chunk, as Flach et al.'s

    def __post_init__(self) -> None:
        Flach.__post_init__(self)

    def chunk_policed(self, f: Features) -> np.ndarray:
        """Per gap, whether its first lost transmission's chunk is called policed."""
        gaps, packets = f.timeline.gaps, f.timeline.packets
        verdicts = flach_verdicts(packets, self)
        policed = verdicts.loc[verdicts["verdict"] == POLICED, ["flow", "chunk"]]
        lost = packets[packets["fate"].isin(pk.LOSS_FATES)]
        first = lost.drop_duplicates(["flow", "seq"])[["flow", "seq", "chunk"]].astype({"flow": str})
        keyed = gaps[["flow", "first_seq"]].astype({"flow": str}).rename(columns={"first_seq": "seq"})
        chunk = keyed.merge(first, on=["flow", "seq"], how="left")
        marked = chunk.merge(policed.assign(policed=True), on=["flow", "chunk"], how="left")["policed"]
        return marked.fillna(False).to_numpy(bool)

    def decide(self, f: Features) -> Verdict:
        policed = self.chunk_policed(f)
        others = f.verdict(AdaptiveRtt()).wireless
        return Verdict(wireless=others & ~policed, scheme=np.where(policed, POLICING_CODE, -1).astype(np.int8))


@dataclasses.dataclass(frozen=True)
class SenderPolicerLab(SenderPolicer):
    """``flach_pd`` with the changes the lab grid supports (docs/ldas.md, "At the sender")."""

    name = "flach_pd_lab"
    min_inflated_rtt: float = 0.0
    inflated_share: float = 0.1
    loss_segments: float = 4.0
    pass_segments: float = 2.0
    over_min: bool = True
    queue_segments: float = 1.0
    capped: bool = True
    refit: bool = True
