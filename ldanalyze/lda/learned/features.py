"""What the learned LDA sees of each gap (``gap_features``) and, for training, what it was
(``gap_labels``).

Loss classifiers learned from labelled data have been reported to beat hand-set thresholds
(Geurts, El Khayat and Leduc, ICDM 2004: boosted decision trees over delay and inter-arrival
features). ``gap_features`` describes each gap by what the receiver knew at its decision
arrival (the state arrival ``si`` of ``docs/ldas.md``, the same contract as every LDA):

``n``            the gap's length (packets);
``ti_tmin``      T_i / T_min: the receive spacing across the gap over the flow's smallest
                 spacing so far (Biaz's statistic);
``rott_position`` the gap's delay between the flow's running minimum (0) and maximum (1) of
                 the one-way delay (Spike's statistic);
``rott_z``       the gap's delay against an EWMA mean, in EWMA mean deviations (gain 1/32 and
                 1/16: ZigZag's statistic);
``jitter_tmin``  the RFC 3550 jitter at ``si`` over T_min;
``trend``        the least-squares slope of the delay over the flow's last ``TREND_ARRIVALS``
                 arrivals, times their count, over the delay range: the rise of the queue;
``since_loss``   the time since the flow's previous gap was revealed, over T_min (NaN for a
                 flow's first gap);
``recent_lost``  packets lost in the flow's gaps revealed within the last ``RECENT_ARRIVALS``
                 arrivals;
``biaz``, ``mbiaz``, ``spike``, ``zigzag``: the four base schemes' decisions (1 wireless,
                 0 congestion; stacking);
``policing``     1 where the policer detector (``lda/policer.py``, its defaults) calls the gap a
                 token-bucket policer's: the drops no delay rise precedes that are not the radio's;
``send_pace``    the send-time spacing of P_i and P_{i+n+1} over (n + 1) times the flow's usual
                 send spacing (the median of the ``PACE_ARRIVALS`` spacings of consecutive
                 arrivals up to P_i): below 1 when the lost packets left in a burst (which
                 overflows a queue), 1 at the flow's usual pace;
``compressed``   the share of the flow's last ``PACE_ARRIVALS`` receive spacings up to ``si``
                 that are under half their send spacing: packets that waited behind a stalled
                 link layer (ARQ retries, a HARQ or RLC reordering wait) and then left its queue
                 back to back (``docs/ldas.md`` shows the ns-3 LTE and Wi-Fi excerpts).

``unseen_on_air`` the 802.11 sequence numbers that went by unseen across the gap (``air_unseen``
                 of the revealing arrival: ``lda/radio.py``) over its losses: 0 when the gap
                 never went on the air, about 1 when the radio lost it; missing without a
                 monitor-mode capture, as on every link but Wi-Fi, where the count is unknown,
                 and where the frame was not QoS data (``air_qos``: its counter also numbered
                 frames to other stations, which a station's radio does not all hear). The
                 radio's own evidence, which no end-to-end LDA had.

These two timing features were kept among eight candidates (delay steps across and before the gap, the delay
before the gap, T_i over the send spacing, ...): each of the others cost some held-out family
several points, these two at most about one (``docs/learned.md`` leaves each feature out in
turn). Both need the packets' own send times, which every input of ldanalyze carries (in-band
timestamps, a chain's first vantage, the simulator).

Only differences of the one-way delay enter, so clock offsets do not matter. The classifier
(``train``) is fitted on gaps whose lost packets have a known cause, labelled wireless when
most of them are (a policer's drops count as congestion: like a full queue's, they ask the
sender to slow down).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from ...tiering import call
from ...timeline import Timeline
from ..base import Features, take
from ..interarrival import Biaz, MBiaz, tmin_state
from ..kernels import network_size, small_median, sorting_network
from ..policer import Policer
from ..rott import Spike, ZigZag

FEATURES = (
    "n",
    "ti_tmin",
    "rott_position",
    "rott_z",
    "jitter_tmin",
    "trend",
    "since_loss",
    "recent_lost",
    "biaz",
    "mbiaz",
    "spike",
    "zigzag",
    "policing",
    "send_pace",
    "compressed",
    "unseen_on_air",
)
STACKED = {"biaz": Biaz(), "mbiaz": MBiaz(), "spike": Spike(), "zigzag": ZigZag()}
EWMA_GAIN = 1 / 32
TREND_ARRIVALS = 8
RECENT_ARRIVALS = 64
PACE_ARRIVALS = 16


@njit(cache=True)
def rolling_slope(x, first, at, k):
    """Per index of ``at`` (−1: none), the least-squares slope of ``x`` against the arrival
    index over the flow's last ``k`` arrivals up to it (fewer at a flow's start: ``first`` is
    each arrival's flow's first); NaN with fewer than 3 or no index."""
    out = np.full(at.shape[0], np.nan)
    for g in range(at.shape[0]):
        i = at[g]
        if i < 0:
            continue
        lo = max(first[i], i - k + 1)
        m = i - lo + 1
        if m < 3:
            continue
        mean_j = (m - 1) / 2.0
        mean_x = 0.0
        for j in range(m):
            mean_x += x[lo + j]
        mean_x /= m
        num = 0.0
        den = 0.0
        for j in range(m):
            num += (j - mean_j) * (x[lo + j] - mean_x)
            den += (j - mean_j) * (j - mean_j)
        out[g] = num / den
    return out


@njit(cache=True)
def pace_state(t, t_send, first, n, prev, rev, si, k, lo, hi):
    """Per gap, ``send_pace`` and ``compressed`` (module docstring) over each flow's last ``k``
    spacings of consecutive arrivals (``first``: each arrival's flow's first arrival); NaN
    where there are fewer than 3 of them, or no positive usual spacing. ``lo``, ``hi``: the
    sorting network over ``k`` values (``kernels.sorting_network``)."""
    pace = np.full(n.shape[0], np.nan)
    share = np.full(n.shape[0], np.nan)
    spacings = np.empty(k)
    window = np.empty(network_size(k))
    for g in range(n.shape[0]):
        p = prev[g]
        if p >= 0 and rev[g] >= 0 and si[g] >= 0:
            start = max(first[p] + 1, p - k + 1)
            m = p - start + 1
            if m >= 3:
                for j in range(m):
                    spacings[j] = t_send[start + j] - t_send[start + j - 1]
                usual = small_median(spacings, m, window, lo, hi)
                if usual > 0:
                    pace[g] = (t_send[rev[g]] - t_send[p]) / ((n[g] + 1) * usual)
        s = si[g]
        if s < 0:
            continue
        start = max(first[s] + 1, s - k + 1)
        counted = 0
        compressed = 0
        for j in range(start, s + 1):
            sent = t_send[j] - t_send[j - 1]
            if sent > 0:
                counted += 1
                if t[j] - t[j - 1] < 0.5 * sent:
                    compressed += 1
        if counted >= 3:
            share[g] = compressed / counted
    return pace, share


def gap_features(f: Features) -> pd.DataFrame:
    """The ``FEATURES`` of every gap of ``f.timeline`` (rows in gap order), from what the
    receiver knew at the gap's decision; NaN where no arrival decides it (module docstring)."""
    return pd.DataFrame(feature_matrix(f), columns=list(FEATURES))


def feature_matrix(f: Features) -> np.ndarray:
    """``gap_features`` as one array, a row per gap (what the trees read)."""
    tmin = take(tmin_state(f), f.si, np.nan)
    lo, hi = (take(state, f.si, np.nan) for state in f.delay_range())
    span = np.where(hi > lo, hi - lo, np.nan)
    mean, dev = (take(state, f.si, np.nan) for state in f.delay_ewma(EWMA_GAIN))
    jitter = f.timeline.arrivals["jitter_rfc3550"].to_numpy(np.float64)
    slope = call(rolling_slope, f.d, f.first, f.si, TREND_ARRIVALS, us_per_item=2)
    out = np.empty((f.n.shape[0], len(FEATURES)))
    with np.errstate(divide="ignore", invalid="ignore"):
        columns = {
            "n": f.n,
            "ti_tmin": f.Ti / tmin,
            "rott_position": (f.gdelay - lo) / span,
            "rott_z": (f.gdelay - mean) / np.where(dev > 0, dev, np.nan),
            "jitter_tmin": take(jitter, f.si, np.nan) / tmin,
            "trend": slope * TREND_ARRIVALS / span,
            **_loss_history(f, tmin),
            **{name: f.verdict(lda).wireless for name, lda in STACKED.items()},
            "policing": Policer().policed(f)[0],
        }
    columns["send_pace"], columns["compressed"] = _pace(f)
    columns["unseen_on_air"] = _unseen_on_air(f)
    for k, name in enumerate(FEATURES):
        out[:, k] = columns[name]
    out[~f.decided] = np.nan
    out[~np.isfinite(out)] = np.nan
    return out


def _loss_history(f: Features, tmin: np.ndarray) -> dict[str, np.ndarray]:
    """``since_loss`` and ``recent_lost``: each gap against the earlier gaps of its flow (all
    revealed at or before its deciding arrival, since they come earlier in the flow)."""
    rev = f.rev
    order = np.argsort(rev, kind="stable")  # arrivals of a flow are contiguous: by flow, then time
    r = rev[order]
    first_gap = np.searchsorted(r, f.first[r])  # the flow's first gap, in sorted order
    k = np.arange(r.shape[0])
    since = np.full(r.shape[0], np.nan)
    earlier = k > first_gap
    t_dec = take(f.t, f.si[order], np.nan)
    since[earlier] = t_dec[earlier] - f.t[r[np.maximum(k - 1, 0)][earlier]]
    lost = np.concatenate([[0], np.cumsum(f.n[order])])
    window_start = np.maximum(np.searchsorted(r, f.si[order] - RECENT_ARRIVALS + 1), first_gap)
    window_start = np.minimum(window_start, k)
    recent = (lost[k] - lost[window_start]).astype(np.float64)
    out_since = np.empty_like(since)
    out_recent = np.empty_like(recent)
    out_since[order], out_recent[order] = since, recent
    return {"since_loss": out_since / tmin, "recent_lost": out_recent}


def _pace(f: Features) -> tuple[np.ndarray, np.ndarray]:
    t_send = f.timeline.arrivals["t_send"].to_numpy(np.float64)
    prev = f.timeline.gaps["prev_arrival"].to_numpy(np.int64)
    lo, hi = sorting_network(PACE_ARRIVALS)
    return call(pace_state, f.t, t_send, f.first, f.n, prev, f.rev, f.si, PACE_ARRIVALS, lo, hi, us_per_item=3)


def _unseen_on_air(f: Features) -> np.ndarray:
    arrivals = f.timeline.arrivals
    if "air_unseen" not in arrivals.columns:
        return np.full(f.n.shape[0], np.nan)
    unseen = take(arrivals["air_unseen"].to_numpy(np.int64), f.rev, -1)
    own_counter = take(arrivals["air_qos"].to_numpy(bool), f.rev, False)
    return np.where((unseen >= 0) & own_counter, unseen / f.n, np.nan)


def gap_labels(timeline: Timeline) -> np.ndarray:
    """Per gap: 1 when most of its lost packets were lost to the radio, 0 when most to
    congestion or a policer, NaN when the causes of most are unknown (or it has none)."""
    losses = timeline.losses
    gap = losses["gap"].to_numpy(np.int64)
    cause = losses["cause"].astype(str).to_numpy()
    n = len(timeline.gaps)
    keep = gap >= 0
    wireless = np.bincount(gap[keep], weights=(cause[keep] == "wireless"), minlength=n)
    congestion = np.bincount(gap[keep], weights=np.isin(cause[keep], ("congestion", "policing")), minlength=n)
    total = np.bincount(gap[keep], minlength=n)
    label = np.where(wireless > congestion, 1.0, 0.0)
    return np.where((wireless + congestion) * 2 > total, label, np.nan)
