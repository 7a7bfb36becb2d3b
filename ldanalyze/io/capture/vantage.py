"""Several captures of the same packets along their path: delays across clocks, and the cause
of every loss from where the packet was last seen.

A *vantage chain* is a list of captures in path order: the sender's (its egress), then one
after each hop of interest, the receiver's last. Each later vantage names the cause of the
losses of the segment that ends at it: a packet last seen at vantage k−1 and never at k was
lost between them, by that segment's cause (a router's queue: ``congestion``; a radio link or
a random drop: ``wireless``; not known: ``lost``). Two captures (sender and receiver) with no
cause give a trace with exact send and receive times and losses of unknown cause.

Matching. A packet is recognised in another capture by its 5-tuple (the flow label), its IPv4
identification and a hash of its first payload bytes (``record.payload_hash``): routers
change neither (TTL and checksum are not used). Where IDs are useless (IPv6; 0 on unconnected
UDP sockets with DF) the payload hash still tells packets apart, as long as payloads differ
(RTP, iperf and TCP payloads carry a sequence number). Packets that share all three (identical
retransmitted payloads with repeated IDs) are matched in capture order and counted in
``meta['vantages'][k]['ambiguous']``. NAT between the vantages is not supported (the 5-tuple
changes).

Rows. One row per packet the sender capture holds (``uid`` its record index there): ``seq``
from the payload as in ``read_capture`` (``payload``; flows no kind fits are numbered in
capture order, ``order``), ``t_send`` its capture time at the sender, ``t_recv`` its capture
time at the last vantage. Each capture's clock is fitted against the sender's
(``clocks.fit_lower_envelope``) and reported; with ``clocks="separate"`` the receive times
are then moved onto the sender's clock per flow, offset and skew removed
(``clocks.remove_skew``). A packet missing at vantage k is ``unobserved``, not lost, when k
may not have been capturing as it passed: sent before every packet k saw and with its
earliest plausible arrival (send time plus the smallest delay to k seen) before k's first
record, or sent after every packet k saw and with its latest plausible arrival (plus the
largest delay seen) after k's last record. Delays here are across the two clocks, so no
clock model is extrapolated.

Flows. The sender capture's flows that carry data and reach the last vantage, unless
``flows`` names them. A flow whose TTL is larger downstream travels the other way (the
acknowledgements of a capture taken in both directions): it is left out with a note, and when
every flow does, the vantages were given in the wrong order.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ...clocks import PLAUSIBLE_SKEW_PPM, fit_lower_envelope, remove_skew
from ...errors import TraceError, UsageError
from ...packets import (
    CAUSE_WORDS,
    CONGESTION,
    DELIVERED,
    FATE_DTYPE,
    FATES,
    LOST,
    UNOBSERVED,
    WIRELESS,
    Trace,
    empty_rtt,
    named_flows,
)
from . import air
from . import payload as payloads
from .fields import FieldSpec, payload_name
from .pcap import CHUNK_BYTES, DEFAULT_HEAD_BYTES, CaptureWarning, decode_capture

CLOCKS = ("separate", "common")
VANTAGE_FORMAT = "vantages"
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@dataclasses.dataclass(frozen=True)
class Vantage:
    """One capture of a chain and the cause of losses on the segment that ends at it
    (ignored for the first capture, the sender's); ``air``: a monitor-mode capture of the
    radio (``io.capture.air``)."""

    path: str
    cause: str = LOST
    air: bool = False

    def __post_init__(self) -> None:
        if self.cause not in set(CAUSE_WORDS.values()):
            raise UsageError(f"vantage {self.path}: cause must be one of {', '.join(CAUSE_WORDS)}, not {self.cause!r}")


def parse_vantage(text: str | os.PathLike) -> Vantage:
    """``PATH`` or ``PATH:CAUSE`` (cause ``congestion``, ``wireless``, ``policing``, ``route`` or
    ``unknown``), or ``PATH:air``: a monitor-mode capture of the radio, what is lost before it
    congestion; a colon that is part of an existing file's name stays in the path."""
    text = os.fspath(text)
    path, colon, cause = text.rpartition(":")
    cause = cause.lower()
    if not colon or os.path.exists(text):
        return Vantage(text)
    if cause == "air":
        return Vantage(path, CONGESTION, air=True)
    if cause not in CAUSE_WORDS:
        raise UsageError(f"vantage {text!r}: unknown cause {cause!r} (say {', '.join(CAUSE_WORDS)}, or air)")
    return Vantage(path, CAUSE_WORDS[cause])


def read_vantages(
    vantages: Sequence[Vantage | str | os.PathLike],
    *,
    payload: str | FieldSpec = "auto",
    flows: Iterable[str] | str | None = None,
    clocks: str = "separate",
    skew_limit_ppm: float = PLAUSIBLE_SKEW_PPM,
    chunk_bytes: int = CHUNK_BYTES,
) -> Trace:
    """One Trace from a chain of captures along the path, sender first (module docstring).

    ``vantages``: :class:`Vantage` objects or ``PATH[:CAUSE]`` strings. ``clocks``:
    ``separate`` (each capture has its own clock: delays are relative, skew is removed) or
    ``common`` (the captures share a clock, e.g. one host or PTP: times are kept and
    ``meta['clock']`` is ``common``, so one-way delays are absolute). With separate clocks
    the flows share one skew (the sender's and the receiver's capture clocks), which is not
    applied beyond ``skew_limit_ppm``.
    """
    chain = [v if isinstance(v, Vantage) else parse_vantage(v) for v in vantages]
    flows = named_flows(flows)
    if len(chain) < 2:
        raise UsageError("a vantage chain needs at least two captures: the sender's and the receiver's")
    if clocks not in CLOCKS:
        raise UsageError(f"clocks must be one of {CLOCKS}, not {clocks!r}")
    if chain[0].cause != LOST:
        raise UsageError(
            f"vantage {chain[0].path} is the sender's capture: no segment ends there, so it takes no "
            f"cause ({chain[0].cause} given)"
        )
    head_bytes = max(DEFAULT_HEAD_BYTES, payload.needed_bytes if isinstance(payload, FieldSpec) else 0)
    captures = [decode_capture(v.path, head_bytes=head_bytes, chunk_bytes=chunk_bytes) for v in chain]
    chain = _with_air(chain, captures)
    sender = captures[0]
    table, taken = payloads.capture_packets(
        sender, payload=payload, vantage="sender", flows=flows, fallback=payloads.ORDER if payload == "auto" else None
    )
    rows = table["uid"].to_numpy()
    five_tuple = sender.flows["label"].to_numpy()[sender.records["flow"][rows]]
    label_code = {label: i for i, label in enumerate(pd.unique(five_tuple))}
    keys = [_match_keys(c, label_code) for c in captures]
    folded = {k: air.fold_retries(captures[k].records, keys[k]) for k, v in enumerate(chain) if v.air}
    for k, frames in folded.items():
        keys[k] = frames.keys
    sender_time = sender.times()[rows]
    seen, arrival, record_at, ttl_gap, reports = _follow(chain, captures, keys, rows, sender_time)
    keep, left_out = _chosen(table["flow"], seen, ttl_gap, chain, named=flows is not None)
    reverse = _reverse_delays(captures[0], captures[-1], pd.unique(five_tuple[keep])) if clocks == "separate" else ()
    if not keep.all():
        table, seen, arrival, record_at, sender_time = (
            table[keep].reset_index(drop=True),
            seen[keep],
            arrival[keep],
            record_at[keep],
            sender_time[keep],
        )
        table["flow"] = table["flow"].cat.remove_unused_categories()
    flow_codes = table["flow"].cat.codes.to_numpy()
    furthest = seen.shape[1] - 1 - np.argmax(seen[:, ::-1], axis=1)  # the last vantage that saw each row
    proven = {
        k: air.never_transmitted(captures[k].records, record_at[:, k], flow_codes, furthest > k, furthest == k - 1)
        for k in folded
    }
    fate, reason, segments = _fates(chain, seen, furthest, sender_time, reports, proven)
    # the sender's table is a PacketTable already (t_send: capture time at the sender), in order
    on_air = {k: air.air_columns(captures[k], frames, record_at[:, k], flow_codes) for k, frames in folded.items()}
    for k, columns in on_air.items():
        shared = air.shared_counter_note(captures[k].path, columns)
        if shared:
            captures[k].notes.append(shared)
            warnings.warn(shared, CaptureWarning, stacklevel=3)
    packets = table.assign(
        t_recv=np.where(fate == FATES.index(DELIVERED), arrival[:, -1], np.nan),
        fate=pd.Categorical.from_codes(fate, dtype=FATE_DTYPE),
        reason=reason,
        **{name: values for columns in on_air.values() for name, values in columns.items()},
    )
    meta = {
        "format": VANTAGE_FORMAT,
        "vantage": "chain",
        "clock": clocks,
        "payload": payload_name(payload),
        "flows": {k: v for k, v in taken["flows"].items() if k not in left_out},
        "skipped_flows": {**taken["skipped_flows"], **left_out},
        "vantages": reports,
        "segments": segments,
        "notes": [n for c in captures for n in c.notes],
    }
    trace = Trace(
        packets=packets, rtt=empty_rtt(), path="+".join(v.path for v in chain), format=VANTAGE_FORMAT, meta=meta
    )
    if clocks == "separate":
        trace = remove_skew(trace, offset=True, pairs="all", skew_limit_ppm=skew_limit_ppm, reverse=reverse)
    _say_which_skew_is_applied(reports, trace.meta)
    return trace


def _with_air(chain: list[Vantage], captures) -> list[Vantage]:
    """The chain with its air vantage found: one said so (``PATH:air``) or a middle capture of
    802.11 frames. The segment after it ends in the radio's losses: ``wireless`` unless its
    cause was given. At most one air vantage."""
    chain = [
        dataclasses.replace(v, air=True) if 0 < k < len(chain) - 1 and air.is_air_capture(c) else v
        for k, (v, c) in enumerate(zip(chain, captures, strict=True))
    ]
    on_air = [k for k, v in enumerate(chain) if v.air]
    if len(on_air) > 1:
        raise UsageError(f"a chain takes one air vantage; {', '.join(chain[k].path for k in on_air)} are each one")
    if on_air:
        k = on_air[0]
        if k in (0, len(chain) - 1):
            raise UsageError(
                f"vantage {chain[k].path} is the air's: it goes between the sender's capture and the receiver's"
            )
        if chain[k + 1].cause == LOST:
            chain[k + 1] = dataclasses.replace(chain[k + 1], cause=WIRELESS)
    return chain


def _say_which_skew_is_applied(reports: list[dict], meta: dict) -> None:
    """``skew_status`` of every capture's clock fit: only the receiver's clock is corrected
    (with the status of ``meta['clock_fit']``), and none under a common clock; the others' fits
    are shown, never applied."""
    fits = meta.get("clock_fit")
    receiver = "not applied: one common clock" if fits is None or not len(fits) else str(fits["status"].iloc[0])
    for i, report in enumerate(reports):
        if i == 0:
            report["skew_status"] = "the reference clock"
        elif i == len(reports) - 1:
            report["skew_status"] = receiver
        else:
            report["skew_status"] = "not applied: only the receiver's clock is corrected"


def _reverse_delays(first, last, labels) -> list[tuple[np.ndarray, np.ndarray]]:
    """(time at the first capture, its time minus the time at the last capture) of every packet
    that travels the chosen flows' 5-tuples backwards (acknowledgements, RTCP, the other
    direction of a call) and both captures hold: the same two clocks crossed the other way,
    which ``remove_skew`` sets against the forward fit (Paxson 1998). Empty when none."""
    code = {_reversed_label(label): i for i, label in enumerate(labels)}
    near, far = _match_keys(first, code), _match_keys(last, code)
    keyed, candidate = np.flatnonzero(near != 0), np.flatnonzero(far != 0)
    at = pd.Index(_ranked(near[keyed])).get_indexer(_ranked(far[candidate]))
    found = at >= 0
    if not found.any():
        return []
    t_first = first.times()[keyed[at[found]]]
    t_last = last.times()[candidate[found]]
    ok = np.isfinite(t_first) & np.isfinite(t_last)
    return [(t_first[ok], t_first[ok] - t_last[ok])]


def _reversed_label(label: str) -> str:
    """``a:1>b:2/udp`` → ``b:2>a:1/udp``."""
    ends, sep, proto = str(label).partition("/")
    src, _, dst = ends.partition(">")
    return f"{dst}>{src}{sep}{proto}"


def _match_keys(capture, label_code: dict[str, int]) -> np.ndarray:
    """One 64-bit key per record from (flow label, IP ID, payload hash); 0 for records of
    flows the sender does not have."""
    code = np.array([label_code.get(label, -1) for label in capture.flows["label"]] + [-1], np.int64)
    records = capture.records
    flow_code = code[records["flow"]]  # flow -1 (no flow) reads the appended -1
    key = (flow_code.astype(np.uint64) + np.uint64(1)) * _GOLDEN
    key ^= records["ip_id"].astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9)
    key ^= records["payload_hash"]
    key ^= key >> np.uint64(31)
    key *= np.uint64(0x94D049BB133111EB)
    key ^= key >> np.uint64(29)
    key |= np.uint64(1)  # never 0
    key[flow_code < 0] = 0
    return key


def _ranked(keys: np.ndarray) -> np.ndarray:
    """Keys made unique by their occurrence: the k-th record (in record order) with a key gets
    that key mixed with k, so that repeats match repeats in order; 0 stays 0."""
    if pd.Index(keys).is_unique:  # a hash table: the common case costs no sort
        return keys
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.ones(keys.shape[0], bool)
    first[1:] = ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(first)
    rank = np.arange(keys.shape[0]) - np.repeat(starts, np.diff(np.append(starts, keys.shape[0])))
    ranked = np.empty_like(keys)
    ranked[order] = (ordered ^ (rank.astype(np.uint64) * _GOLDEN)) | np.uint64(1)
    ranked[keys == 0] = 0
    return ranked


def _follow(chain, captures, keys, rows, sender_time):
    """For each sender row and later vantage: seen there? at what time? in which record? and
    the TTL drop.

    Every sender record of the chosen flows' 5-tuples takes part in the matching (also those
    that are not rows, like pure acknowledgements), so that only packets the sender capture
    lacks count as unmatched."""
    n, k_all = rows.shape[0], len(chain)
    seen = np.zeros((n, k_all), bool)
    seen[:, 0] = True
    arrival = np.full((n, k_all), np.nan)
    arrival[:, 0] = sender_time
    record_at = np.full((n, k_all), -1, np.int64)
    record_at[:, 0] = rows
    ttl_gap = np.zeros(n, np.int64)  # TTL at the sender minus TTL at the furthest vantage seen
    sender = captures[0]
    row_of = np.full(sender.records.shape[0], -1, np.int64)
    row_of[rows] = np.arange(n)
    keyed = np.flatnonzero(keys[0] != 0)
    ranked = _ranked(keys[0][keyed])
    left = pd.Index(ranked)
    left_rows = row_of[keyed]
    repeated = ranked != keys[0][keyed]
    ambiguous = int((repeated | np.isin(keys[0][keyed], keys[0][keyed][repeated])).sum() if repeated.any() else 0)
    reports = [_report(chain[0], sender, sender_time, sender_time, 0)]
    reports[0]["cause"] = ""  # the sender ends no segment
    reports[0]["ambiguous"] = ambiguous
    if ambiguous:
        _warn(
            f"{sender.path}: {ambiguous} packets share flow, IP ID and payload with another packet; they are "
            "matched across captures in capture order"
        )
    for k in range(1, k_all):
        capture = captures[k]
        candidate = np.flatnonzero(keys[k] != 0)
        at = left.get_indexer(_ranked(keys[k][candidate]))
        found = at >= 0
        unmatched = int((~found).sum())
        row, record = left_rows[at[found]], candidate[found]
        record = record[row >= 0]
        row = row[row >= 0]
        if row.size == 0:
            raise TraceError(
                capture.path,
                f"none of the {n} packets of {sender.path}'s flows appear in it: is it a capture of the same packets?",
            )
        seen[row, k] = True
        arrival[row, k] = capture.times()[record]
        record_at[row, k] = record
        ttl_gap[row] = sender.records["ttl"][rows[row]].astype(np.int64) - capture.records["ttl"][record]
        reports.append(_report(chain[k], capture, sender_time[row], arrival[row, k], unmatched))
        if unmatched:
            _warn(
                f"{capture.path}: {unmatched} packet(s) of the sender's flows were never seen in "
                f"{sender.path} (it started later, ended earlier or dropped packets)"
            )
    return seen, arrival, record_at, ttl_gap, reports


def _report(vantage: Vantage, capture, sent: np.ndarray, seen_at: np.ndarray, unmatched: int) -> dict:
    """What ``meta['vantages']`` says of one capture: its span (``first``, ``last``), the
    packets matched (sent from ``first_sent`` to ``last_sent``, with delays across the two
    clocks from ``delay_min_s`` to ``delay_max_s``), and its clock fit against the sender's
    (``offset_s`` + ``skew_ppm``·1e-6·(t_send − ``t0``) is the minimal delay; ``excess_s``
    the deepest queue above it)."""
    times = capture.times()
    finite = times[np.isfinite(times)]
    delay = seen_at - sent
    fit = fit_lower_envelope(sent, delay) if sent.size else None
    return {
        "path": capture.path,
        "cause": vantage.cause,
        "records": int(capture.records.shape[0]),
        "first": float(finite.min()) if finite.size else np.nan,
        "last": float(finite.max()) if finite.size else np.nan,
        "matched": int(sent.shape[0]),
        "unmatched": unmatched,
        "missed": 0,
        "first_sent": float(sent.min()) if sent.size else np.nan,
        "last_sent": float(sent.max()) if sent.size else np.nan,
        "delay_min_s": float(delay.min()) if sent.size else np.nan,
        "delay_max_s": float(delay.max()) if sent.size else np.nan,
        "offset_s": fit.offset if fit else np.nan,
        "skew_ppm": fit.skew * 1e6 if fit else np.nan,
        "excess_s": fit.excess if fit else np.nan,
        "t0": fit.t0 if fit else np.nan,
    }


def _chosen(flow: pd.Series, seen: np.ndarray, ttl_gap: np.ndarray, chain, *, named: bool):
    """Rows of the flows to keep, and the flows left out with why."""
    codes = flow.cat.codes.to_numpy()
    keep = np.ones(codes.shape[0], bool)
    left_out = {}
    last = chain[-1].path
    downstream = seen[:, 1:].any(axis=1)
    for code, label in enumerate(flow.cat.categories):
        mine = codes == code
        if not mine.any():
            continue
        ahead = mine & downstream
        if ahead.any() and np.median(ttl_gap[ahead]) < 0:
            if named:
                raise UsageError(
                    f"flow {label} travels from {last} towards {chain[0].path} (its TTL grows): "
                    "give the vantages in path order, sender first"
                )
            left_out[label] = f"travels the other way: its TTL grows from {chain[0].path} to {last}"
        elif not named and not (mine & seen[:, -1]).any():
            left_out[label] = f"never reaches {last}"
        else:
            continue
        keep &= ~mine
    if not keep.any():  # every vantage matched something, so some flow got through: backwards
        raise UsageError(
            f"every flow of {chain[0].path} that reaches {last} travels the other way (its TTL "
            "grows): give the vantages in path order, sender first"
        )
    return keep, left_out


def _names(chain) -> list[str]:
    """Short names of the vantages for reasons and reports: file names, whole paths if those clash."""
    short = [os.path.basename(v.path) for v in chain]
    return short if len(set(short)) == len(short) else [v.path for v in chain]


def _fates(
    chain,
    seen: np.ndarray,
    furthest: np.ndarray,
    sender_time: np.ndarray,
    reports: list[dict],
    proven: dict[int, np.ndarray],
):
    """Fate codes (``FATES`` order) and reasons of the rows from the furthest vantage that saw
    each; per-segment counts. ``proven``: for an air vantage k, the rows proven never to have
    been on the air (``air.never_transmitted``); the other rows lost before it have no known
    cause."""
    n, k_all = seen.shape
    names = _names(chain)
    fate = np.full(n, FATES.index(DELIVERED), np.int8)
    reason = np.zeros(n, np.int64)  # index into labels
    labels = [""]
    segments = []
    for k in range(1, k_all):
        report = reports[k]
        missed = ~seen[:, k] & (furthest > k)
        report["missed"] = int(missed.sum())
        if report["missed"] and chain[k].air:
            on_air = int((seen[:, k] | (furthest > k)).sum())
            _warn(
                f"{report['path']}: the sniffer missed {report['missed']} of the {on_air} packets of the flows read "
                f"known to have gone on the air ({report['missed'] / on_air:.1%}); a loss it may have missed "
                "has no known cause"
            )
        elif report["missed"]:
            _warn(
                f"{report['path']}: {report['missed']} packet(s) seen further down the path are missing from it "
                "(it started later, ended earlier or dropped packets)"
            )
        index = np.flatnonzero(furthest == k - 1)
        t = sender_time[index]
        outside = ((t < report["first_sent"]) & (t + report["delay_min_s"] < report["first"])) | (
            (t > report["last_sent"]) & (t + report["delay_max_s"] > report["last"])
        )
        segment = f"{names[k - 1]}>{names[k]}"
        fate[index] = FATES.index(chain[k].cause)
        reason[index] = len(labels)
        unknown = np.zeros(index.shape[0], bool) if k not in proven else ~proven[k][index] & ~outside
        fate[index[unknown]] = FATES.index(LOST)
        reason[index[unknown]] = len(labels) + 2
        fate[index[outside]] = FATES.index(UNOBSERVED)
        reason[index[outside]] = len(labels) + 1
        labels += [segment, f"outside {names[k]}"] + ([f"{segment}: {air.NOT_SEEN_IN_AIR}"] if k in proven else [])
        segments.append(
            {
                "segment": segment,
                "cause": chain[k].cause,
                "lost": int((~outside & ~unknown).sum()),
                "unobserved": int(outside.sum()),
                "cause_unknown": int(unknown.sum()),
            }
        )
    return fate, pd.Categorical.from_codes(reason, categories=labels), segments


def _warn(message: str) -> None:
    warnings.warn(message, CaptureWarning, stacklevel=4)
