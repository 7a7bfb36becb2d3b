"""What every rate controller shares: the open-loop replay inputs, the base class, the summary.

A controller replay is **open loop**: the trace's timing is fixed (the real sender sent what it
sent, whatever rate our controller would have allowed). A controller sees the receiver's
arrivals, the losses with one LDA's decision for each, and the round-trip times the sender
would have measured, and yields after every arrival the rate it would have allowed. The
contract (which arrival carries which loss, where the RTT and the ACK clock come from) is
``docs/controllers.md``; :class:`Signals` builds its arrays once per timeline.

Every rate a controller gives is in **bits per second** (``rate_bps``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from ..errors import UsageError
from ..lda.base import Features, Replay, take
from ..lda.kernels import ewma_mean_dev, running_min_max
from ..packets import label_positions
from ..specs import Parameterized, check_positive
from ..tiering import call
from ..timeline import KIND_DUPLICATE, Timeline

OPEN_LOOP_NOTE = (
    "open-loop replay: the trace's timing is fixed; rates are what each controller would have "
    "allowed, not what was sent"
)


@dataclasses.dataclass(frozen=True)
class PathModel:
    """How the sender's side is reconstructed from a receiver's view (``docs/controllers.md``).

    ``reverse_delay`` (s): the ACK/feedback path delay; ``None`` derives it per flow (from the
    trace's feedback, else the minimum one-way delay on a common clock, else half the base
    RTT). ``base_rtt`` (s): the round-trip time at an empty queue, needed only for flows with
    neither feedback nor a common clock (RTT = ROTT + base_rtt). ``capacity`` (bits/s): the
    bottleneck capacity that caps and normalises the modeled throughput; ``None`` estimates it
    per flow by packet pair, s / T_min.
    """

    reverse_delay: float | None = None
    base_rtt: float | None = None
    capacity: float | None = None

    def __post_init__(self) -> None:
        for key in ("reverse_delay", "base_rtt"):
            value = getattr(self, key)
            if value is not None and not (isinstance(value, (int, float)) and value >= 0):
                raise UsageError(f"{key} must be a number of seconds ≥ 0, not {value!r}")
        if self.capacity is not None:
            check_positive("path", capacity=self.capacity)


@dataclasses.dataclass(frozen=True)
class Signals:
    """The arrays of one timeline that every controller reads (flows contiguous, arrival order).

    Per arrival: ``start`` (a flow's first), ``flow`` (index into ``flows``), ``t`` (sender-side
    time the ACK of the arrival reaches the sender: t_recv + reverse delay), ``t_recv``,
    ``t_send``, ``seq``, ``size`` (bytes), ``new`` (False for duplicates), ``s`` (the flow's
    segment size, bytes), ``rtt`` (the last RTT sample the sender had at ``t``; NaN before the
    first), ``R`` (RFC 5348 §4.3 EWMA of the samples, q = 0.9), ``srtt``/``rttvar`` (RFC 6298),
    ``rtt_min``, ``jitter`` (paper 001 eq. 7).

    Per detected loss, sorted by deciding arrival then sequence number: ``loss_at`` (the arrival
    that decides it), ``loss_seq``, ``loss_t`` (its nominal receive time, interpolated from the
    arrivals around its gap as in RFC 5348 §5.2), ``loss_row`` (its row in ``timeline.losses``).

    Per flow: ``flows``, ``capacity`` (bytes/s, NaN when unknown), ``reverse_delay`` (s),
    ``rtt_source`` (feedback, owd or base_rtt).
    """

    timeline: Timeline
    semantics: Replay
    path: PathModel
    flows: list[str]
    start: np.ndarray
    flow: np.ndarray
    t: np.ndarray
    t_recv: np.ndarray
    t_send: np.ndarray
    seq: np.ndarray
    size: np.ndarray
    new: np.ndarray
    s: np.ndarray
    rtt: np.ndarray
    R: np.ndarray
    srtt: np.ndarray
    rttvar: np.ndarray
    rtt_min: np.ndarray
    jitter: np.ndarray
    spacing: np.ndarray
    loss_at: np.ndarray
    loss_seq: np.ndarray
    loss_t: np.ndarray
    loss_row: np.ndarray
    capacity: np.ndarray
    reverse_delay: np.ndarray
    rtt_source: list[str]

    @classmethod
    def of(cls, timeline: Timeline, semantics: Replay | None = None, path: PathModel | None = None) -> Signals:
        semantics = semantics or Replay()
        path = path or PathModel()
        f = Features.of(timeline, semantics)
        a = timeline.arrivals
        flows = list(a["flow"].cat.categories)
        code = a["flow"].cat.codes.to_numpy(np.int64)
        size = a["size"].to_numpy(np.float64)
        seg = _segment_sizes(timeline, flows)
        rev, source, samples = _rtt_plan(timeline, flows, code, f, path)
        t = f.t + rev[code]
        rtt, R, srtt, rttvar, rtt_min = _rtt_at_arrivals(samples, code, f.start, t, len(flows))
        cap = _capacities(f, code, seg, len(flows), path)
        loss_at, loss_seq, loss_t, loss_row = _loss_events(timeline, f)
        return cls(
            timeline=timeline,
            semantics=semantics,
            path=path,
            flows=flows,
            start=f.start,
            flow=code,
            t=t,
            t_recv=f.t,
            t_send=a["t_send"].to_numpy(np.float64),
            seq=a["seq"].to_numpy(np.int64),
            size=size,
            new=(a["kind"] != KIND_DUPLICATE).to_numpy(),
            s=seg[code],
            rtt=rtt,
            R=R,
            srtt=srtt,
            rttvar=rttvar,
            rtt_min=rtt_min,
            jitter=f.jitter,
            spacing=f.spacing,
            loss_at=loss_at,
            loss_seq=loss_seq,
            loss_t=loss_t,
            loss_row=loss_row,
            capacity=cap,
            reverse_delay=rev,
            rtt_source=source,
        )

    def save(self, file: str | os.PathLike) -> None:
        """Write the arrays to one file: an 8-byte little-endian length, a JSON header (each
        array's name, dtype, shape and offset; the lists of strings), then the arrays' bytes.
        No pickle; read back with one ``read`` and no parsing per array (``.npz`` took ten times
        as long, a batch re-run's every trace loading them)."""
        layout, data, offset = [], [], 0
        lists = {}
        for field in dataclasses.fields(self):
            if field.name in _NOT_SAVED:
                continue
            value = getattr(self, field.name)
            if isinstance(value, list):
                lists[field.name] = [str(x) for x in value]
                continue
            value = np.ascontiguousarray(value)
            layout.append([field.name, value.dtype.str, list(value.shape), offset])
            data.append(value.tobytes())
            offset += value.nbytes
        header = json.dumps({"arrays": layout, "lists": lists}).encode()
        with open(file, "wb") as f:
            f.write(len(header).to_bytes(8, "little"))
            f.write(header)
            for chunk in data:
                f.write(chunk)

    @classmethod
    def load(cls, file: str | os.PathLike, timeline: Timeline, semantics: Replay, path: PathModel) -> Signals:
        """Signals saved by :meth:`save` for this timeline, replay semantics and path model."""
        with open(file, "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
            data = bytearray(f.read())  # writable arrays, as computed ones are
        values: dict[str, Any] = dict(header["lists"])
        for name, dtype, shape, offset in header["arrays"]:
            dtype = np.dtype(dtype)
            if dtype.hasobject:
                raise ValueError(f"{file}: {name} has an object dtype")
            values[name] = np.frombuffer(data, dtype, int(np.prod(shape)), offset).reshape(shape)
        return cls(timeline=timeline, semantics=semantics, path=path, **values)

    def congestion(self, decision: np.ndarray) -> np.ndarray:
        """Per detected loss (in ``loss_*`` order): does the sender take it as congestion? Yes
        unless the LDA called it wireless: a loss it abstained on is congestion to a sender
        that cannot tell (as to TFRC without an LDA).

        ``decision`` is the LDA's decision per row of ``timeline.losses`` (classify's order),
        or whether it was congestion (booleans).
        """
        decision = np.asarray(decision)
        return (decision if decision.dtype == bool else decision != "wireless")[self.loss_row]


_NOT_SAVED = ("timeline", "semantics", "path")


def _segment_sizes(timeline: Timeline, flows: list[str]) -> np.ndarray:
    """Each flow's segment size s: the median size of its packets (bytes; NaN for a flow with
    none)."""
    p = timeline.packets
    size = p["size"].to_numpy(np.float64)
    return np.array(
        [
            np.median(size[rows]) if rows.size else np.nan
            for rows in _rows_of(label_positions(p["flow"], [str(x) for x in flows]), len(flows))
        ]
    )


def _rows_of(position: np.ndarray, n: int) -> list[np.ndarray]:
    """The row indices of each of ``n`` groups (``position``: each row's group, -1 none), in
    row order: one stable sort, not a pass over the rows per group."""
    order = np.argsort(position, kind="stable")
    bounds = np.searchsorted(position[order], np.arange(n + 1))
    return [order[bounds[k] : bounds[k + 1]] for k in range(n)]


def _rtt_plan(timeline, flows, code, f, path):
    """Per flow: the reverse delay, where its RTT samples come from, and the samples.

    Returns (reverse delay per flow, source name per flow, samples) where samples is a list per
    flow of (sender time, rtt) arrays: the trace's feedback samples, else one sample per arrival
    (one-way delay + reverse delay on a common clock; ROTT + base_rtt otherwise).
    """
    rtt = timeline.rtt
    feedback = _rows_of(label_positions(rtt["flow"], [str(x) for x in flows]), len(flows))
    fb_t, fb_rtt, fb_seq = (
        rtt[name].to_numpy(dtype) for name, dtype in (("t", np.float64), ("rtt", np.float64), ("seq", np.int64))
    )
    a_seq, a_owd = timeline.arrivals["seq"].to_numpy(np.int64), timeline.arrivals["owd"].to_numpy(np.float64)
    rev = np.zeros(len(flows))
    sources, samples = [], []
    lo, _ = f.delay_range()
    for k, flow in enumerate(flows):
        rows = np.flatnonzero(code == k)
        fb = feedback[k]
        if fb.size:
            if path.reverse_delay is not None:
                rev[k] = path.reverse_delay
            elif timeline.clock_common:  # the feedback's RTT less the data's one-way delay
                back = fb_rtt[fb] - _first_owd(a_seq[rows], a_owd[rows], fb_seq[fb])
                back = back[np.isfinite(back)]
                rev[k] = float(np.median(back)) if back.size else float(fb_rtt[fb].min()) / 2
            else:
                rev[k] = float(fb_rtt[fb].min()) / 2
            sources.append("feedback")
            samples.append((fb_t[fb], fb_rtt[fb]))
            continue
        d = f.d[rows]
        if timeline.clock_common:
            rev[k] = path.reverse_delay if path.reverse_delay is not None else (float(d.min()) if d.size else 0.0)
            x = d + rev[k]
            sources.append("owd")
        elif path.base_rtt is not None:
            rev[k] = path.reverse_delay if path.reverse_delay is not None else path.base_rtt / 2
            x = d - lo[rows] + path.base_rtt
            sources.append("base_rtt")
        else:
            raise UsageError(
                f"flow {flow}: the trace has no feedback for it and its clocks are not common, so "
                "the round-trip time is unknown; give the round-trip time at an empty queue (command line: "
                "--base-rtt SECONDS; Python: PathModel(base_rtt=...))"
            )
        samples.append((f.t[rows] + rev[k], x))
    return rev, sources, samples


def _first_owd(seq: np.ndarray, owd: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The one-way delay of the first arrival of each ``wanted`` seqno (NaN if none arrived)."""
    order = np.argsort(seq, kind="stable")  # a seqno's arrivals in arrival order
    seq, owd = seq[order], owd[order]
    at = np.searchsorted(seq, wanted)  # the first of them
    found = at < seq.size
    found[found] = seq[at[found]] == wanted[found]
    return np.where(found, owd[np.minimum(at, max(seq.size - 1, 0))] if seq.size else np.nan, np.nan)


def _rtt_at_arrivals(samples, code, start, t, n_flows):
    """The sender's RTT estimators at each arrival time: the last sample, RFC 5348's R, RFC 6298's
    SRTT/RTTVAR and the minimum, each over the samples that reached the sender by then."""
    out = [np.full(t.shape[0], np.nan) for _ in range(5)]
    for k in range(n_flows):
        rows = np.flatnonzero(code == k)
        if rows.size == 0:
            continue
        ts, x = samples[k]
        order = np.argsort(ts, kind="stable")
        ts, x = ts[order], x[order]
        first = np.zeros(x.shape[0], bool)
        first[:1] = True
        R, _ = call(ewma_mean_dev, x, first, 0.1, 0.25, True)
        srtt, rttvar = call(ewma_mean_dev, x, first, 1 / 8, 1 / 4, True)
        lo, _ = call(running_min_max, x, first)
        idx = np.searchsorted(ts, t[rows], side="right") - 1
        for target, values in zip(out, (x, R, srtt, rttvar, lo), strict=True):
            target[rows] = take(values, idx, np.nan)
    return tuple(out)


def _capacities(f: Features, code, seg, n_flows, path: PathModel) -> np.ndarray:
    """Bottleneck capacity per flow in bytes/s: given, or s / T_min by packet pair (NaN if none)."""
    if path.capacity is not None:
        return np.full(n_flows, path.capacity / 8.0)
    tmin = pd.Series(f.spacing).groupby(code).min().reindex(range(n_flows)).to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = seg / tmin
    return np.where(np.isfinite(cap) & (cap > 0), cap, np.nan)


def _loss_events(timeline: Timeline, f: Features):
    """Detected losses sorted by deciding arrival and seq, with RFC 5348 §5.2 nominal times."""
    losses, gaps = timeline.losses, timeline.gaps
    gap = losses["gap"].to_numpy(np.int64)
    at = take(f.at, gap, -1)
    rows = np.flatnonzero(at >= 0)
    g = gap[rows]
    seq = losses["seq"].to_numpy(np.int64)[rows]
    prev_seq = gaps["prev_seq"].to_numpy(np.float64)[g]
    next_seq = gaps["next_seq"].to_numpy(np.float64)[g]
    t_prev = gaps["t_prev_recv"].to_numpy(np.float64)[g]
    t_next = gaps["t_next_recv"].to_numpy(np.float64)[g]
    with np.errstate(invalid="ignore", divide="ignore"):
        t_nom = t_prev + (t_next - t_prev) * (seq - prev_seq) / (next_seq - prev_seq)
    t_nom = np.where(np.isnan(prev_seq), t_next, t_nom)
    order = np.lexsort((seq, at[rows]))
    return at[rows][order], seq[order], t_nom[order], rows[order]


class Controller(Parameterized):
    """Base of every rate controller: a frozen dataclass of its parameters.

    ``run(signals, congestion)`` replays it over the arrivals, told which detected losses are
    congestion, and returns the allowed rate after each arrival (bits/s, NaN while the
    controller has no rate yet) and its state arrays for plots (a mapping, usually a
    :class:`LazyState`).
    """

    name: ClassVar[str]

    def run(self, sig: Signals, congestion: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        raise NotImplementedError


class LazyState(Mapping):
    """A run's state arrays, computed on first access by ``compute()`` (a dict of arrays):
    ``replay`` reads only the rates, so a replay does not pay for them."""

    def __init__(self, keys: tuple[str, ...], compute):
        self._keys = keys
        self._compute = compute
        self._arrays: dict[str, np.ndarray] | None = None

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._keys:
            raise KeyError(key)
        if self._arrays is None:
            self._arrays = self._compute()
        return self._arrays[key]

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


@njit(cache=True)
def rate_averages(t, start, flow, n_flows, rate, cap):
    """Per flow: the time averages of a step function (``rate[i]`` holds from ``t[i]`` to
    ``t[i+1]`` within the flow) and of it capped at the flow's ``cap`` (NaN where the cap is),
    each over the time it is defined, and the first one's time. One pass: every controller's
    rates are averaged twice per LDA, 24 passes of numpy temporaries costing a third of a
    ``score``'s replay."""
    area = np.zeros(n_flows)
    span = np.zeros(n_flows)
    capped_area = np.zeros(n_flows)
    capped_span = np.zeros(n_flows)
    n = t.shape[0]
    for i in range(n - 1):
        if start[i + 1]:
            continue
        dt = t[i + 1] - t[i]
        if not dt > 0.0:
            continue
        f = flow[i]
        v = rate[i]
        if np.isfinite(v):
            area[f] += v * dt
            span[f] += dt
        c = cap[f]
        if not (np.isnan(v) or np.isnan(c)):
            c = v if v < c else c
            if np.isfinite(c):
                capped_area[f] += c * dt
                capped_span[f] += dt
    return area / span, capped_area / capped_span, span


def summarize_rates(sig: Signals, rate_bps: np.ndarray) -> dict[str, Any]:
    """Per flow: time-averaged allowed rate (bits/s), capped at the capacity and normalised to
    it (paper 000 §VI-A, Table II: "thput"), the time it covers, and whether the capacity was
    given (``PathModel.capacity``) or estimated by packet pair."""
    cap_bps = sig.capacity * 8.0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean, mean_capped, span = call(
            rate_averages, sig.t, sig.start, sig.flow, len(sig.flows), rate_bps, cap_bps, us_per_item=1.5
        )
        thput = mean_capped / cap_bps
    given = np.full(len(sig.flows), sig.path.capacity is not None)
    return {"mean_rate_bps": mean, "capacity_bps": cap_bps, "thput": thput, "seconds": span, "capacity_given": given}
