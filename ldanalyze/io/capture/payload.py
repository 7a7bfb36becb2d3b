"""Where sequence numbers and send times come from in a one-point capture.

A capture shows packets at one place. The PacketTable needs, per packet, the sequence number
the receiver sees and the time it was sent on the sender's clock. This module reads both from
each flow's packets (``decode_capture`` keeps the first payload bytes of every packet):

``rtp``
    RFC 3550 header: 16-bit sequence number and 32-bit timestamp, both unwrapped in capture
    order. A flow is first taken apart (``rtp.py``): STUN, DTLS, TURN and RTCP packets set aside
    (RFC 7983), one stream per SSRC (labelled ``<flow>/ssrc=0x...`` when the flow has more than
    one), one-off SSRCs counted as noise, padding probes left out, retransmission (RTX) streams
    joined to their media stream, and a stream that cannot be read skipped with its reason
    (``meta['skipped_streams']``), never failing its flow. The timestamp is the sender's
    media clock: its rate is ``clock_rate`` when given, else what the stream's RTCP sender
    reports say (when between 1 kHz and 1 MHz; ``sender_report_refused`` says why not), else
    the payload type's static rate (RFC 3551: 8000 Hz for PCMU, 90000 Hz for JPEG, ...), else
    (dynamic types) inferred from timestamp increments against capture times and taken as the
    nearest usual rate (8000, 16000, 48000, 90000, ...) when within 2 %.
    ``meta['flows']`` says which (``clock_source``).
``iperf3``
    UDP payload starts with tv_sec, tv_usec (32 bits each) and a packet counter of 32 bits,
    or 64 bits with ``--udp-counters-64bit``: inferred from which layout counts packets.
``iperf2``
    UDP payload starts with a signed 32-bit packet id, tv_sec, tv_usec and (iperf 2.0.10 on)
    the upper 32 bits of a 64-bit id. Negative ids mark the end of a test and are skipped.
``tcp``
    The byte sequence number is turned into a segment index per flow: distinct segment starts
    are numbered in byte order, and a hole in the byte space between two starts counts
    ceil(hole / MSS) missing segments (MSS from the SYN's option, else the most common segment
    size). A segment seen again at the same start (a retransmission) keeps its index, so it
    becomes the next transmission (``tx``) of that ``seq``; segments whose bytes were all sent
    before (keep-alives, partial retransmissions) take the index of the segment before them.
    The timestamps option's TSval is the sender clock, its tick rate inferred and snapped to
    the usual ones (1000 Hz, ...) within 10 %.
``order``
    No field at all: the k-th packet of the flow in the capture gets sequence number k. Only
    at the sender of a multi-point capture (``vantage.py``), where capture order is send order
    and the other captures say what arrived; a receiver cannot number what it never saw.
a :class:`FieldSpec`
    Any other protocol: where the sequence number and the send time sit in the payload
    (offset, width, byte order) and the time's units.

Vantage. ``receiver`` (the default): each captured packet is an arrival (``t_recv`` = capture
time, ``t_send`` = the in-band send time). Sequence numbers never seen between the first and
the last seen become ``lost`` rows (``reason`` ``seq-gap``; size the flow's median; ``t_send``
interpolated between the in-order arrivals around them); none is invented after the last one.
For TCP, a segment that arrives to fill a hole with a TSval later than the packet that opened
the hole is a retransmission: its first transmission was lost (a ``lost`` row with ``reason``
``retransmitted``). With 1 ms TSval ticks, a retransmission sent within the same tick as that
packet cannot be told from reordering. ``sender``: each captured packet is a transmission
(``t_send`` = capture time, ``t_recv`` NaN, ``fate`` ``unobserved``).

Which flows: with ``payload="auto"`` each flow gets the first kind that fits it (RTP, iperf3,
iperf2 for UDP; TCP for TCP flows that carry data); a kind fits when its fields read as a
sequence (steps between consecutive packets mostly small and forward, and the numbers span
not much more than the packets). When each kind that fits leaves packets out or repeats
numbers, the one that misreads fewest packets is taken (a 64-bit iperf counter read as 32 bits
is its high word, which repeats, or a signed id, which goes negative). Flows nothing fits are
skipped with a warning; flows named in ``flows`` must fit, or the reader raises a TraceError
naming the flow and its first byte.
"""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np
import pandas as pd
from numba import njit

from ...clocks import fit_lower_envelope
from ...errors import TraceError, UsageError
from ...packets import DELIVERED, FATE_DTYPE, FATES, LOST, UNOBSERVED, make_packet_table, named_flows, unwrap_sequence
from . import rtp
from .linklayer import F_TCP_MSS, F_TCP_TIMESTAMP, S_DECODED

VANTAGES = ("receiver", "sender")
KINDS = ("auto", "rtp", "iperf3", "iperf2", "tcp", "order")
ORDER = "order"
COUNTER_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
PAIR_UNITS = {"sec+usec": 1e-6, "sec+nsec": 1e-9, "ntp": 2.0**-32}
USUAL_RTP_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 90000, 96000)
PLAUSIBLE_RTP_RATES = (1000.0, 1e6)  # sender-report rates outside are refused (Hz)
USUAL_TSVAL_RATES = (1, 10, 100, 250, 300, 1000, 1024, 10_000, 100_000, 1_000_000, 1_000_000_000)
# RFC 3551 static payload types and their clock rates
RTP_STATIC_RATES = {
    0: 8000,
    3: 8000,
    4: 8000,
    5: 8000,
    6: 16000,
    7: 8000,
    8: 8000,
    9: 8000,
    10: 44100,
    11: 44100,
    12: 8000,
    13: 8000,
    14: 90000,
    15: 8000,
    16: 11025,
    17: 22050,
    18: 8000,
    25: 90000,
    26: 90000,
    28: 90000,
    31: 90000,
    32: 90000,
    33: 90000,
    34: 90000,
}
MIN_AUTO_PACKETS = 3  # fewer readable packets: too few to recognise a kind
MAX_STEP = 1000  # largest step between consecutive packets that still looks like a sequence
MIN_CLOCK_SPAN = 0.02  # seconds of capture time needed to infer a clock rate
SSRC = "/ssrc="  # joins a flow label and an RTP stream's SSRC
ACKS_ONLY = "no TCP payload (acknowledgements only)"
GAP = "seq-gap"
RETRANSMITTED = "retransmitted"
RTX_REPAIRED = "rtx-repaired"
TRANSPORT_CC = "transport-cc"
HOST_SHARE = 0.98  # the capture host is an end of the flows carrying this share of the packets
INITIAL_TTLS = (64, 128, 255)  # what hosts send with; a packet routed on has less
RTP_SEQUENCES = ("ssrc", TRANSPORT_CC)  # an RTP stream per SSRC, or one per flow in transport-wide order
REASONS = ("", GAP, RETRANSMITTED, RTX_REPAIRED)


@dataclasses.dataclass(frozen=True)
class Field:
    """An integer in the payload: ``width`` bytes from ``offset``, in ``order`` byte order."""

    offset: int
    width: int
    order: str = "big"
    signed: bool = False

    def __post_init__(self) -> None:
        if self.width not in (1, 2, 4, 8):
            raise UsageError(f"a payload field is 1, 2, 4 or 8 bytes wide, not {self.width}")
        if self.order not in ("big", "little"):
            raise UsageError(f"byte order is 'big' or 'little', not {self.order!r}")
        if self.offset < 0:
            raise UsageError(f"payload offset must be >= 0, not {self.offset}")

    @property
    def end(self) -> int:
        return self.offset + self.width

    def read(self, head: np.ndarray) -> np.ndarray:
        """The field of every row of ``head`` (payload bytes, one row a packet), as int64. The
        field's bytes are viewed as one integer a row, in place (``head`` may be a strided view
        of the records): five times faster than combining them byte by byte. Twin:
        ``tests/naive.read_field``."""
        column = head[:, self.offset : self.end]
        if column.shape[1] != self.width:
            raise IndexError(f"a {self.width}-byte field at {self.offset} lies beyond the {head.shape[1]} bytes kept")
        kind = f"{'>' if self.order == 'big' else '<'}{'i' if self.signed else 'u'}{self.width}"
        return column.view(kind)[:, 0].astype(np.int64)

    def halves(self) -> tuple[Field, Field]:
        """The two 32-bit words of an 8-byte field, first word first."""
        return Field(self.offset, 4, self.order), Field(self.offset + 4, 4, self.order)


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """Where a payload carries its sequence number and send time.

    ``time_units``: ``"s"``, ``"ms"``, ``"us"``, ``"ns"`` (a counter of that unit);
    ``"sec+usec"``, ``"sec+nsec"`` or ``"ntp"`` (an 8-byte field: seconds, then microseconds,
    nanoseconds or 2^-32 fractions); a number (ticks per second); or None (ticks of a clock
    whose rate is inferred). Counters narrower than 8 bytes are unwrapped. ``stream`` splits a
    flow into sequence spaces (RTP's SSRC); ``seq_high`` holds the upper 32 bits of a split
    64-bit sequence number (iperf2).
    """

    seq: Field
    send_time: Field | None = None
    time_units: str | float | None = "s"
    stream: Field | None = None
    seq_high: Field | None = None
    name: str = "custom"

    def __post_init__(self) -> None:
        units = self.time_units
        if isinstance(units, str) and units not in COUNTER_UNITS and units not in PAIR_UNITS:
            raise UsageError(
                f"unknown time units {units!r}; use one of "
                f"{', '.join([*COUNTER_UNITS, *PAIR_UNITS])}, a rate in Hz, or None"
            )
        if isinstance(units, str) and units in PAIR_UNITS and self.send_time is not None and self.send_time.width != 8:
            raise UsageError(f"time units {units!r} need an 8-byte send_time field")
        if units is not None and not isinstance(units, str) and not units > 0:
            raise UsageError(f"a clock rate must be positive, not {units!r}")

    @classmethod
    def parse(cls, text: str) -> FieldSpec:
        """``seq=OFFSET:WIDTH[:ORDER],time=OFFSET:WIDTH:UNITS[:ORDER][,stream=OFFSET:WIDTH[:ORDER]]``
        (the command line's ``--field``): UNITS one of s, ms, us, ns, sec+usec, sec+nsec, ntp, a
        clock rate in Hz, or ``?`` (a clock whose rate is inferred); ORDER big (default) or
        little. ns-3's SeqTsHeader, for one: ``seq=0:4,time=4:8:ns``."""
        parts: dict[str, list[str]] = {}
        for item in text.split(","):
            name, sep, value = item.strip().partition("=")
            if not sep or name not in ("seq", "time", "stream") or name in parts:
                raise UsageError(
                    f"--field {text!r}: expected seq=OFFSET:WIDTH[:ORDER],time=OFFSET:WIDTH:UNITS"
                    "[:ORDER][,stream=OFFSET:WIDTH]"
                )
            parts[name] = value.split(":")
        if "seq" not in parts:
            raise UsageError(f"--field {text!r}: the sequence number (seq=OFFSET:WIDTH) is needed")

        def field(values: list[str], order_at: int) -> Field:
            try:
                offset, width = int(values[0]), int(values[1])
            except (ValueError, IndexError):
                raise UsageError(f"--field {text!r}: OFFSET and WIDTH are whole numbers") from None
            order = values[order_at] if len(values) > order_at else "big"
            return Field(offset, width, order)

        units: str | float | None = "s"
        send_time = None
        if "time" in parts:
            values = parts["time"]
            if len(values) < 3:
                raise UsageError(f"--field {text!r}: time=OFFSET:WIDTH:UNITS")
            raw = values[2]
            try:
                units = None if raw == "?" else float(raw) if raw[0].isdigit() else raw
            except ValueError:
                raise UsageError(f"--field {text!r}: units {raw!r}") from None
            send_time = field(values, 3)
        if len(parts["seq"]) > 3 or ("stream" in parts and len(parts["stream"]) > 3):
            raise UsageError(f"--field {text!r}: too many parts")
        return cls(
            seq=field(parts["seq"], 2),
            send_time=send_time,
            time_units=units,
            stream=field(parts["stream"], 2) if "stream" in parts else None,
            name="field",
        )

    @property
    def needed_bytes(self) -> int:
        """Payload bytes a packet must carry for every field to be read."""
        fields = (self.seq, self.send_time, self.stream, self.seq_high)
        return max(f.end for f in fields if f is not None)


RTP = FieldSpec(seq=Field(2, 2), send_time=Field(4, 4), time_units=None, stream=Field(8, 4), name="rtp")
IPERF3 = FieldSpec(seq=Field(8, 4), send_time=Field(0, 8), time_units="sec+usec", name="iperf3")
IPERF3_64 = FieldSpec(seq=Field(8, 8), send_time=Field(0, 8), time_units="sec+usec", name="iperf3-64")
IPERF2 = FieldSpec(seq=Field(0, 4, signed=True), send_time=Field(4, 8), time_units="sec+usec", name="iperf2")
IPERF2_64 = FieldSpec(
    seq=Field(0, 4), send_time=Field(4, 8), time_units="sec+usec", seq_high=Field(12, 4), name="iperf2-64"
)
UDP_SPECS = {"rtp": (RTP,), "iperf3": (IPERF3, IPERF3_64), "iperf2": (IPERF2_64, IPERF2)}  # in order of trial
TCP, UDP = 6, 17


def payload_name(payload) -> str:
    return payload.name if isinstance(payload, FieldSpec) else str(payload)


@dataclasses.dataclass
class Stream:
    """One sequence space of a flow, in capture order: the records, their sequence numbers
    and in-band send times (NaN when not read), and how they were obtained."""

    label: str
    kind: str
    rows: np.ndarray
    seq: np.ndarray
    sent: np.ndarray
    info: dict
    repaired: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, np.int64))  # seqs RTX carried


class NotThisKind(Exception):
    """The flow's payload does not fit a kind; the message says why."""


class NoSequenceNumbers(TraceError):
    """No flow of the capture carries sequence numbers; ``skipped``: each flow's label → why."""

    def __init__(self, path: str, message: str, *, skipped: dict[str, str]) -> None:
        super().__init__(path, message)
        self.skipped = skipped


# -- clock rates the user gave -------------------------------------------------------------------
# A given rate this far off the rate a stream's own clock shows against capture time is a
# mistake (90000 Hz given for every stream of a call whose audio runs at 16000 Hz), not skew.
CONTRADICTING = (0.8, 1.25)


@dataclasses.dataclass(frozen=True)
class ClockRates:
    """In-band clock rates (Hz) the user knows: ``every`` stream's, or per stream, keyed by
    SSRC (``0x1234abcd``), RTP payload type (``96``) or stream label. Parsed from ``90000`` or
    ``0x1234abcd=90000,111=48000``."""

    every: float | None = None
    by_key: tuple[tuple[str, float], ...] = ()

    @classmethod
    def parse(cls, given) -> ClockRates | None:
        """None, a ClockRates, a number of Hz, a ``{key: Hz}`` mapping or the command line's text."""
        if given is None or isinstance(given, ClockRates):
            return given
        if isinstance(given, dict):
            pairs = [(str(k).strip(), v) for k, v in given.items()]
            every = None
        elif isinstance(given, str) and "=" in given:
            pairs = [tuple(part.split("=", 1)) for part in given.split(",") if part.strip()]
            every = None
        else:
            pairs, every = [], cls._hz(given, given)
        return cls(every, tuple((cls._key(key.strip(), given), cls._hz(value, given)) for key, value in pairs))

    @staticmethod
    def _hz(value, given) -> float:
        try:
            hz = float(value)
        except (TypeError, ValueError):
            hz = math.nan
        if not (math.isfinite(hz) and hz > 0):
            raise UsageError(
                f"clock rate {given!r}: give a positive number of Hz (90000), or KEY=HZ pairs joined "
                "by commas where KEY is an SSRC (0x1234abcd), an RTP payload type (96) or a stream "
                "label"
            )
        return hz

    @staticmethod
    def _key(key: str, given) -> str:
        if key.lower().startswith("0x"):
            try:
                return f"0x{int(key, 16):08x}"
            except ValueError:
                raise UsageError(f"clock rate {given!r}: {key!r} is no SSRC") from None
        if not key:
            raise UsageError(f"clock rate {given!r}: a KEY=HZ pair has no key")
        return key

    def of(self, label: str, ssrc: int | None = None, payload_type: int | None = None) -> float | None:
        """The rate given for a stream: by its SSRC, else its payload type, else its label, else
        the rate for every stream; None when none applies."""
        keys = dict(self.by_key)
        for key in (
            f"0x{ssrc:08x}" if ssrc is not None else None,
            str(payload_type) if payload_type is not None else None,
            label,
        ):
            if key is not None and key in keys:
                return keys[key]
        return self.every


def check_given_rate(rate: float, ticks: np.ndarray, times: np.ndarray, name: str, key: str | None = None) -> None:
    """Refuse a given clock rate that the stream's own clock contradicts (:data:`CONTRADICTING`),
    read as ``infer_clock_rate`` reads it; a stream too short to tell is taken at its word.
    ``key`` names the stream in the suggested per-stream option (its SSRC; else its name)."""
    try:
        shown = clock_slope(ticks, times, name)
    except NotThisKind:
        return
    if not CONTRADICTING[0] <= shown / rate <= CONTRADICTING[1]:
        raise UsageError(
            f"clock rate {rate:g} Hz contradicts stream {name}: its clock advances {shown:,.0f} ticks "
            f"per second of capture time. A clock rate belongs to one stream: give it per stream "
            f"(--clock-rate {key or name}={nearest_usual(shown, USUAL_RTP_RATES, 0.02) or round(shown):g}, keyed by SSRC, RTP payload type or "
            "stream label), or leave it out to have it read from the stream"
        )


def nearest_usual(rate: float, usual, tolerance: float) -> float | None:
    """The ``usual`` clock rate nearest ``rate`` (on a log scale) when within ``tolerance``
    (relative), else None."""
    nearest = min(usual, key=lambda candidate: abs(math.log(rate / candidate)))
    return float(nearest) if abs(rate / nearest - 1) <= tolerance else None


# -- the entry points --------------------------------------------------------------------------
def capture_packets(
    capture,
    *,
    payload="auto",
    vantage: str = "receiver",
    flows=None,
    clock_rate=None,
    fallback: str | None = None,
    ssrc=None,
    rtp_sequence: str = "ssrc",
    reports=None,
    host: str | tuple | None = "auto",
) -> tuple[pd.DataFrame, dict]:
    """The PacketTable of a decoded one-point capture, and what was taken and skipped
    (``meta['skipped_flows']``: flow label → why).

    See the module docstring for ``payload`` and ``vantage``; ``flows`` names flows by label
    (as ``list_flows`` prints them) and makes them mandatory; ``ssrc`` keeps the RTP streams of
    these SSRCs (``"0x1234abcd"`` or integers) only; ``clock_rate`` is the rate of the in-band
    clock (RTP timestamp, TCP TSval) when you know it, for every stream or per stream
    (:class:`ClockRates`; a rate the stream's clock contradicts is refused). ``fallback`` (a kind)
    reads the data-carrying flows that ``payload`` does not fit instead of skipping them.
    ``reports``: the clock rates RTCP sender reports give (``capture_sender_reports``) when the
    caller took them from more of the capture than ``capture`` holds. ``host``: the address of
    the host the capture was taken on (``auto``: ``capture_host`` finds it, ``None``: none, or
    ``host_of``'s (address, how));
    at a receiver, the flows it sends are read as sent (fate ``unobserved``, streams marked
    ``outgoing``): they were captured before the path, so a receiver learns nothing of them.
    """
    if vantage not in VANTAGES:
        raise UsageError(f"vantage must be one of {VANTAGES}, not {vantage!r}")
    if not isinstance(payload, FieldSpec) and payload not in KINDS:
        raise UsageError(f"payload must be a FieldSpec or one of {KINDS}, not {payload!r}")
    clock_rate = ClockRates.parse(clock_rate) or ClockRates()
    if rtp_sequence not in RTP_SEQUENCES:
        raise UsageError(f"rtp_sequence must be one of {RTP_SEQUENCES}, not {rtp_sequence!r}")
    receiver = vantage == "receiver"
    chosen, wanted = _chosen_flows(capture, flows)
    times = capture.times()
    reports = capture_sender_reports(capture) if reports is None else reports
    if isinstance(host, tuple):  # host_of's answer, found from more of the capture than this
        found = host
    else:
        found = capture_host(capture) if host == "auto" else (host, "given") if host else (None, "none given")
    outgoing = set(np.flatnonzero((capture.flows["src"] == found[0]).to_numpy())) if receiver and found[0] else set()
    streams, skipped = [], {}
    for flow, rows, records in flow_groups(capture.records):
        if chosen is not None and flow not in chosen:
            continue
        try:
            mine = flow_streams(
                capture,
                flow,
                rows,
                records,
                payload,
                times,
                clock_rate=clock_rate,
                forced=chosen is not None and fallback is None,
                send_times=receiver and flow not in outgoing,
                rtp_sequence=rtp_sequence,
                reports=reports,
            )
            for stream in mine:
                stream.info["outgoing"] = flow in outgoing
            streams += mine
        except NotThisKind as why:
            if fallback is not None and not str(why).startswith(ACKS_ONLY):
                streams += flow_streams(capture, flow, rows, records, fallback, times, forced=True, send_times=receiver)
                continue
            label = capture.flows["label"].iat[flow]
            first = int(records["offset"][0])
            if chosen is not None:
                raise TraceError(capture.path, f"flow {label}: {why}", offset=first) from None
            skipped[label] = f"{why} (first packet at byte {first})"
    if wanted is not None:  # a named RTP stream leaves out the other streams of its flow
        streams = [s for s in streams if s.label in wanted or s.label.partition(SSRC)[0] in wanted]
    if ssrc is not None:  # RTP streams by SSRC, on whatever flow they travel
        chosen_ssrcs = {f"0x{int(str(x), 0):08x}" for x in ([ssrc] if isinstance(ssrc, (str, int)) else ssrc)}
        streams = [s for s in streams if s.info.get("ssrc") in chosen_ssrcs]
        if not streams:
            raise TraceError(capture.path, f"no RTP stream with SSRC {', '.join(sorted(chosen_ssrcs))}")
    if not streams:
        counts = capture.counts
        raise NoSequenceNumbers(
            capture.path,
            f"no decodable flow with sequence numbers: {counts['records']} "
            f"records, {counts['decoded']} decoded into {len(capture.flows)} flows"
            + (f"; {first_reasons(skipped)}" if skipped else "")
            + FIELD_HINT,
            skipped=skipped,
        )
    skipped_streams = {}
    for stream in streams:
        skipped_streams.update(stream.info.pop("skipped_streams", {}))
    table, per_stream = _packet_rows(capture, streams, times, receiver)
    meta = {
        "flows": per_stream,
        "skipped_flows": skipped,
        "skipped_streams": skipped_streams,
        "capture_host": {"address": found[0], "how": found[1]},
    }
    return table, meta


def capture_host(capture) -> tuple[str | None, str]:
    """The address of the host the capture was taken on, and how it was told (``host_of``)."""
    return host_of(capture.flows, flow_ttls(capture.records, len(capture.flows)))


def flow_ttls(records: np.ndarray, n_flows: int) -> np.ndarray:
    """Decoded packets by flow (rows, ``n_flows`` of them) and TTL (256 columns)."""
    return _count_ttls(records["flow"], records["status"], records["ttl"], n_flows, S_DECODED)


@njit(cache=True)
def _count_ttls(flow, status, ttl, n_flows, decoded):
    """One pass over the records' fields (a numpy mask and gathers read them three times).
    Twin: ``tests/naive.flow_ttls``."""
    out = np.zeros((n_flows, 256), np.int64)
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= 0:
            out[flow[i], ttl[i]] += 1
    return out


def host_of(flows: pd.DataFrame, ttls: np.ndarray) -> tuple[str | None, str]:
    """The capture host's address from the flow table and each flow's packets by TTL (a row
    per flow, a column per TTL), and how it was told (or why not).

    It is the one address at an end of the flows carrying ``HOST_SHARE`` of the packets whose
    own packets (if any) mostly leave with an initial TTL (``INITIAL_TTLS``), not one lowered
    by a router. When every flow joins the same two addresses, both must have sent and exactly
    one with an initial TTL; otherwise there is no telling (a one-hop LAN keeps TTLs whole).
    """
    packets = ttls.sum(axis=1)
    if packets.sum() == 0:
        return None, "no decoded packet"
    src, dst = flows["src"].to_numpy(), flows["dst"].to_numpy()
    share = {a: packets[(src == a) | (dst == a)].sum() / packets.sum() for a in set(src) | set(dst)}
    ends = [a for a in share if share[a] >= HOST_SHARE]
    sent_ttl = {}
    for a in ends:
        mine = ttls[src == a].sum(axis=0)
        sent_ttl[a] = int(mine.argmax()) if mine.sum() else None
    unrouted = [a for a in ends if sent_ttl[a] is None or sent_ttl[a] in INITIAL_TTLS]
    if len(ends) == 2 and None not in sent_ttl.values() and len(unrouted) == 1:
        a = unrouted[0]
        b = ends[1] if ends[0] == a else ends[0]
        return a, f"every flow joins {a} and {b}; {a} sends with TTL {sent_ttl[a]}, {b}'s arrive with {sent_ttl[b]}"
    if len(ends) == 1 and unrouted:
        a = ends[0]
        ttl = f"; it sends with TTL {sent_ttl[a]}" if sent_ttl[a] is not None else "; it sends nothing"
        return a, f"an end of the flows carrying {share[a]:.1%} of the packets{ttl}"
    if len(ends) == 2:
        return None, f"every flow joins {' and '.join(sorted(ends))}, and their TTLs do not tell which one captured"
    return None, "no address is an end of (nearly) every flow, or its packets were routed"


def detect_kinds(capture) -> dict[int, str]:
    """The payload kind of every flow (flow id → ``rtp``, ``iperf3``, ..., or ``""``)."""
    kinds = {}
    for flow, rows, records in flow_groups(capture.records):
        try:
            streams = flow_streams(capture, flow, rows, records, "auto", None, send_times=False)
            kinds[flow] = streams[0].kind
        except NotThisKind:
            kinds[flow] = ""
    return kinds


def flow_groups(records: np.ndarray):
    """(flow id, record indices, those records as :class:`FlowRecords`) of each flow,
    decoded records only, in capture order within a flow."""
    order, starts = _rows_by_flow(records["flow"], records["status"], S_DECODED)
    for flow in range(starts.shape[0] - 1):
        if starts[flow + 1] > starts[flow]:
            rows = order[starts[flow] : starts[flow + 1]]
            yield flow, rows, FlowRecords(records, rows)


class FlowRecords:
    """One flow's records, a field at a time: ``flow["ip_len"]`` is the field's values in the
    flow's rows, gathered on first use (contiguous) and kept. A flow reader uses a handful of
    the record's 20-odd fields, and gathering whole records copied them all into fresh pages,
    which cost most here (``inspect`` of a 2 M-packet capture of 8 flows: 20,000 page faults
    and 22 MB of peak more). A flow that is every record (a capture of one flow; a flow file
    of ``split``) gives the records' own fields, not copies."""

    def __init__(self, records: np.ndarray, rows: np.ndarray) -> None:
        self.records = records
        self.rows = None if rows.shape[0] == records.shape[0] else rows  # else rows is 0, 1, ..., n - 1
        self.dtype = records.dtype
        self.shape = (rows.shape[0],)
        self._fields: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, field: str) -> np.ndarray:
        values = self._fields.get(field)
        if values is None:
            values = self.records[field] if self.rows is None else gather_rows(self.records[field], self.rows)
            self._fields[field] = values
        return values


def gather_rows(column: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``column[rows]``, contiguous. A field of several values a record (the payload head's
    bytes) is moved as one opaque item a row, not value by value: twice as fast on 48-byte
    heads (9 against 16 ms for 250,000 rows)."""
    if column.ndim != 2 or column.strides[1] != column.itemsize:
        return column[rows]
    whole = np.dtype((np.void, column.shape[1] * column.itemsize))
    return column.view(whole)[rows].view(column.dtype).reshape(-1, column.shape[1])


@njit(cache=True)
def _rows_by_flow(flow, status, decoded):
    """The indices of the decoded records that have a flow, grouped by flow, in record order
    within a flow, and where each flow's run starts (one more: the end): a counting sort,
    one pass to count and one to place. Twin: a stable argsort (``tests/test_pcap_payload.py``)."""
    n_flows = 0
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= n_flows:
            n_flows = flow[i] + 1
    starts = np.zeros(n_flows + 1, np.int64)
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= 0:
            starts[flow[i] + 1] += 1
    for f in range(n_flows):
        starts[f + 1] += starts[f]
    order = np.empty(starts[n_flows], np.int64)
    at = starts[:n_flows].copy()
    for i in range(flow.shape[0]):
        if status[i] == decoded and flow[i] >= 0:
            order[at[flow[i]]] = i
            at[flow[i]] += 1
    return order, starts


def _chosen_flows(capture, flows) -> tuple[set[int] | None, set[str] | None]:
    """The flow ids and the labels (flows or RTP streams) asked for; (None, None): all."""
    wanted = named_flows(flows)
    if wanted is None:
        return None, None
    index = {label: i for i, label in enumerate(capture.flows["label"])}
    unknown = sorted(f for f in wanted if f.partition(SSRC)[0] not in index)
    if unknown:
        shown = ", ".join(list(index)[:5]) + (" ..." if len(index) > 5 else "")
        raise UsageError(f"{capture.path} has no flow {unknown[0]!r} (flows: {shown or 'none'})")
    return {index[f.partition(SSRC)[0]] for f in wanted}, wanted


# What to do when no known payload fits: say where the protocol keeps its numbers.
FIELD_HINT = (
    ". If the packets carry a sequence number and a send time in a layout of their own, say where: "
    "--field seq=OFF:W,time=OFF:W:UNITS (Python: payload=FieldSpec.parse(...); docs/captures.md)"
)


def first_reasons(skipped: dict[str, str], shown: int = 3) -> str:
    """The first few skipped flows with why, in full: for an error, which leaves nothing else
    to look at."""
    items = [f"{label}: {why}" for label, why in list(skipped.items())[:shown]]
    return "; ".join(items) + ("; ..." if len(skipped) > shown else "")


def reasons_in_brief(skipped: dict[str, str], shown: int = 3) -> str:
    """Why flows were skipped, for a warning: one flow with its whole reason; several counted by
    the gist of their reasons, the first few named (the detectors' details stay in the trace's
    meta, which ``inspect --json`` prints)."""
    if len(skipped) == 1:
        return first_reasons(skipped)
    gists = collections.Counter(_gist(why) for why in skipped.values())
    named = ", ".join(list(skipped)[:shown]) + (", ..." if len(skipped) > shown else "")
    counted = "; ".join(f"{n} flow{'s' if n > 1 else ''}: {gist}" for gist, n in gists.most_common())
    return f"{counted}; {named}; each one's reasons: inspect --json"


def _gist(why: str) -> str:
    """A skip reason without its details: the text before its first parenthesis, less the name
    of the stream it speaks of."""
    gist = why.split(" (")[0]
    return gist.split(": ", 1)[1] if gist.startswith("stream ") and ": " in gist else gist


# -- one flow ----------------------------------------------------------------------------------
def sender_report_candidates(records: np.ndarray) -> np.ndarray:
    """Records that may be RTCP sender reports: decoded UDP, version 2, packet type 200.
    The rare second byte 200 is looked for first, the other fields only where it is."""
    out = records["head"][:, 1] == 200  # a strided view: one column is read
    rows = np.flatnonzero(out)
    some = records[rows]
    out[rows] = (
        (some["status"] == S_DECODED)
        & (some["proto"] == UDP)
        & (some["head_len"] >= 20)
        & (some["head"][:, 0] >> 6 == 2)
    )
    return out


def capture_sender_reports(capture) -> dict[int, tuple[float, int]]:
    """The media clock rates that RTCP sender reports anywhere in the capture give, by SSRC:
    RTCP travels on the RTP port (muxed) or on the next one (a flow of its own)."""
    records = capture.records
    reports = sender_report_candidates(records)
    if not reports.any():
        return {}
    head = np.ascontiguousarray(records["head"][reports])
    head_len = records["head_len"][reports].astype(np.int64)
    kinds = rtp.header_fields(head, head_len, records["payload_len"][reports].astype(np.int64))[0]
    return rtp.sender_report_rates(head, head_len, kinds == rtp.RTCP)


def flow_streams(
    capture,
    flow: int,
    rows: np.ndarray,
    records: FlowRecords,
    payload,
    times,
    *,
    clock_rate: ClockRates = ClockRates(),
    forced=False,
    send_times=True,
    rtp_sequence="ssrc",
    reports=None,
) -> list[Stream]:
    """The sequence spaces of one flow (its records and their indices) under ``payload``;
    raises NotThisKind when it does not fit.

    ``send_times`` asks for the in-band send times (a receiver-side trace needs them).
    """
    label = capture.flows["label"].iat[flow]
    proto = int(capture.flows["proto"].iat[flow])
    custom = isinstance(payload, FieldSpec)
    if payload == ORDER:
        return [
            Stream(
                label,
                ORDER,
                rows,
                np.arange(rows.shape[0], dtype=np.int64),
                np.full(rows.shape[0], np.nan),
                {"kind": ORDER},
            )
        ]
    if proto == TCP:
        if payload in ("auto", "tcp"):
            return [_tcp_stream(label, rows, records, times, clock_rate.of(label), send_times)]
        if not (custom and forced):
            raise NotThisKind(
                f"a TCP flow (name it in flows to read it with a {payload_name(payload)} spec)"
                if custom
                else f"a TCP flow cannot carry {payload} packets"
            )
    elif payload == "tcp":
        raise NotThisKind("not a TCP flow")
    elif not custom and proto != UDP:
        raise NotThisKind(
            f"no payload kind is known for IP protocol {proto}"
            if payload == "auto"
            else f"{payload} is carried over UDP, not IP protocol {proto}"
        )
    if custom:
        specs = (payload,)
    elif payload == "auto":
        specs = tuple(s for group in UDP_SPECS.values() for s in group)
    else:
        specs = UDP_SPECS[payload]
    reasons, fits = [], []
    for spec in specs:
        try:
            if spec is RTP:
                return _rtp_streams(label, rows, records, times, clock_rate, send_times, rtp_sequence, reports=reports)
            streams = _spec_streams(
                spec,
                label,
                rows,
                records,
                times,
                clock_rate,
                send_times,
                min_packets=1 if forced or payload != "auto" else MIN_AUTO_PACKETS,
            )
        except NotThisKind as why:
            reasons.append(f"not {spec.name}: {why}")
            continue
        if not _misread(streams, rows.shape[0]):
            return streams
        fits.append(streams)
    if fits:  # the reading that misreads fewest packets, the first tried of equals
        return min(fits, key=lambda streams: _misread(streams, rows.shape[0]))
    why = "; ".join(reasons)
    raise NotThisKind(why if payload != "auto" else f"no sequence numbers found ({why})")


def _rtp_streams(
    label, rows, records, times, clock_rate, send_times, rtp_sequence="ssrc", abs_send_time_id=None, reports=None
) -> list[Stream]:
    """The RTP streams of one UDP flow (``rtp.py``: demultiplexing, noise, padding probes,
    retransmission streams); a stream that cannot be read is skipped with its reason, which
    the first stream's ``info['skipped_streams']`` carries. NotThisKind when none is left."""
    head = records["head"]  # a capture of one flow: the records' own bytes, read in place
    head_len = records["head_len"].astype(np.int64)
    payload_len = records["payload_len"].astype(np.int64)
    kinds, _, padding, osn, fec = rtp.header_fields(head, head_len, payload_len)
    demux = rtp.kind_counts(kinds)
    is_rtp = (kinds == rtp.RTP) & (payload_len >= 12)
    excluded = {
        "short_payload": int((payload_len < 12).sum()),
        "cut_by_snaplen": int(((payload_len >= 12) & (head_len < 12)).sum()),
        "not_rtp": int(((kinds != rtp.RTP) & (head_len >= 12)).sum()),
    }
    excluded = {k: v for k, v in excluded.items() if v}  # of the whole flow
    if not is_rtp.any():
        raise NotThisKind(f"no RTP packets ({', '.join(f'{k} {n}' for k, n in demux.items())})")
    if rtp_sequence == TRANSPORT_CC:
        return [_transport_wide_stream(label, rows, head, head_len, is_rtp, times, send_times, demux)]
    probe = is_rtp & padding
    ssrc = RTP.stream.read(head)
    seq16 = RTP.seq.read(head)
    skipped: dict[str, str] = {}
    candidates, small = [], []
    keys, counts = _ssrc_counts(ssrc[is_rtp])
    for key, count in zip(keys, counts):
        name = f"{label}{SSRC}0x{int(key):08x}"
        mine = is_rtp & (ssrc == key)
        media = mine & ~probe
        if int(count) <= rtp.NOISE_PACKETS:  # noise, unless it is a short retransmission stream
            small.append(
                {
                    "name": name,
                    "ssrc": f"0x{int(key):08x}",
                    "small": True,
                    "packets": int(count),
                    "pt": int(head[mine, 1][0] & 0x7F),
                    "osn": osn[mine],
                    "seq16": np.empty(0, np.int64),
                }
            )
            continue
        if int(media.sum()) < MIN_AUTO_PACKETS:
            skipped[name] = f"{int(media.sum())} media packets ({int((mine & probe).sum())} padding-only probes)"
            continue
        padded = (head[media, 0] & 0x20) != 0
        if padded.all() and np.ptp(RTP.send_time.read(head[media])) == 0:
            skipped[name] = f"padding probes: every packet padded, the timestamp never advances ({int(count)} packets)"
            continue
        keep = _selection(media)  # views, not copies, when the stream is the whole flow
        own = unwrap_sequence(seq16[keep], 1 << 16)
        problem = _not_a_sequence(own)
        if problem:
            skipped[name] = f"{problem} ({int(count)} packets)"
            continue
        candidates.append(
            {
                "name": name,
                "ssrc": f"0x{int(key):08x}",
                "mask": media,
                "seq": own,
                "probes": int((mine & probe).sum()),
                "pt": int(np.bincount(head[keep, 1] & 0x7F).argmax()),
                "packets": int(media.sum()),
                "osn": osn[keep],
            }
        )
    if reports is None:  # this flow's own RTCP
        reports = rtp.sender_report_rates(head, head_len, kinds == rtp.RTCP)
    if len(candidates) + len(small) > 1:  # what a retransmission stream would refer to
        for c in candidates:
            seen = np.unique(c["seq"])
            c["holes"] = np.setdiff1d(np.arange(seen[0], seen[-1] + 1), seen, assume_unique=True)
            c["seq16"] = np.concatenate((seen, c["holes"])) % (1 << 16)
    pairs = rtp.rtx_pairs(candidates + small)
    noise = [c for k, c in enumerate(small, start=len(candidates)) if k not in pairs]
    noise_ssrcs, noise_packets = len(noise), sum(c["packets"] for c in noise)
    candidates += small
    if len(candidates) - len(small) == 1 and not skipped and not noise_ssrcs and not pairs:
        candidates[0]["name"] = label  # one SSRC on the flow: the flow's own label, as before
    streams = []
    for i, c in enumerate(candidates):
        if i in pairs or c.get("small"):
            continue
        pick = _selection(c["mask"])
        mine_head, mine_len, mine_rows = head[pick], head_len[pick], rows[pick]
        info = {
            "kind": "rtp",
            "ssrc": c["ssrc"],
            "excluded": excluded,
            "payload_type": c["pt"],
            "padding_only": c["probes"],
            **_fec_report(mine_head, fec[pick], c["pt"]),
        }
        repaired = np.empty(0, np.int64)
        for r, m in pairs.items():
            if m == i:
                carried = candidates[r]["osn"][candidates[r]["osn"] >= 0]
                repaired = c["holes"][np.isin(c["holes"] % (1 << 16), carried)]
                info.update(
                    rtx_stream=candidates[r]["name"],
                    rtx_packets=candidates[r]["packets"],
                    rtx_payload_type=candidates[r]["pt"],
                    rtx_repaired=int(repaired.size),
                )
        sent = np.full(c["packets"], np.nan)
        given = clock_rate.of(c["name"], ssrc=int(c["ssrc"], 16), payload_type=int(c["pt"]))
        rate = given
        report = reports.get(int(c["ssrc"], 16))
        if given is None and report is not None:  # the sender said how fast its media clock runs
            measured, count = report
            info.update(sender_reports=count, sender_report_rate=measured)
            if PLAUSIBLE_RTP_RATES[0] <= measured <= PLAUSIBLE_RTP_RATES[1]:
                rate = nearest_usual(measured, USUAL_RTP_RATES, 0.01) or measured
            else:  # reports whose NTP and RTP times do not belong together: not a clock to use
                report = None
                info["sender_report_refused"] = (
                    f"{measured:.3g} Hz is no media clock rate "
                    f"({PLAUSIBLE_RTP_RATES[0]:g}-{PLAUSIBLE_RTP_RATES[1]:g} Hz)"
                )
        extension = None
        if send_times:
            mine_times = times[mine_rows]
            extension = rtp.abs_send_time_id(mine_head, mine_len, mine_times, abs_send_time_id)
        if extension is not None:  # the sender's own send time, better than the media clock
            stamps = rtp.extension_values(mine_head, mine_len, 3, extension)
            sent = unwrap_sequence(stamps, 1 << 24) * rtp.ABS_SEND_TIME_UNITS
            info.update(send_time="abs-send-time", abs_send_time_id=extension)
        elif send_times:
            try:
                sent = _send_seconds(
                    RTP, mine_head, mine_times, rate, info, c["name"], given=given is not None, key=c["ssrc"]
                )
                if given is None and report is not None:
                    info["clock_source"] = "RTCP sender reports"
                sent = _per_frame(sent, mine_times, info)
            except NotThisKind as why:
                skipped[c["name"]] = f"{why} ({c['packets']} packets)"
                continue
        streams.append(Stream(c["name"], "rtp", mine_rows, c["seq"], sent, info, repaired))
    if not streams:
        raise NotThisKind(
            "no readable RTP stream"
            + (f" ({first_reasons(skipped)})" if skipped else "")
            + (f"; {noise_ssrcs} one-off SSRCs" if noise_ssrcs else "")
        )
    streams[0].info.update(demux=demux, noise_ssrcs=noise_ssrcs, noise_packets=noise_packets, skipped_streams=skipped)
    return streams


def _ssrc_counts(ssrc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct SSRCs, ascending, and their packet counts; a flow of one SSRC (the usual
    case) without sorting its packets' SSRCs."""
    if (ssrc == ssrc[0]).all():
        return ssrc[:1], np.array([ssrc.shape[0]])
    return np.unique(ssrc, return_counts=True)


def _selection(mask: np.ndarray) -> slice | np.ndarray:
    """What indexes the rows ``mask`` keeps: a slice (views, no copy) when it keeps them all,
    as it does on a flow of one stream, else their indices."""
    return slice(None) if mask.all() else np.flatnonzero(mask)


def _fec_report(head, fec, media_pt: int) -> dict:
    """The stream's payload types other than its media's that carry RFC 5109 FEC headers
    (``fec``: ``rtp.header_fields``): ``fec_payload_type`` and ``fec_packets``. FEC packets sent in the
    media stream take sequence numbers of it, so they stay in its sequence space (a lost one
    is a loss on the path like any other); they are counted here, not hidden."""
    pt = (head[:, 1] & 0x7F).astype(np.int64)
    for other in np.unique(pt[pt != media_pt]):
        mine = pt == other
        if fec[mine].mean() >= rtp.FEC_SHARE:
            return {"fec_payload_type": int(other), "fec_packets": int(mine.sum())}
    return {}


def _per_frame(sent: np.ndarray, arrivals: np.ndarray, info: dict) -> np.ndarray:
    """Send times from the media clock, per frame: all packets of a video frame carry its one
    timestamp, and the sender (or its pacer) spreads them over time, so each packet's delay
    against that timestamp grows through the frame with sending, not with the path. The ROTT
    of a frame is taken from its first arrival, and its other packets keep that ROTT (their
    send time moves with their arrival). Streams with a timestamp per packet are unchanged;
    ``info['frames']`` counts the frames when some span several packets."""
    stamps, first = np.unique(sent, return_inverse=True)
    if stamps.shape[0] == sent.shape[0]:
        return sent
    earliest = np.full(stamps.shape[0], np.inf)
    np.minimum.at(earliest, first, arrivals)
    info.update(frames=int(stamps.shape[0]), rott="per frame (its first arrival)")
    return sent + (arrivals - earliest[first])


def _transport_wide_stream(label, rows, head, head_len, is_rtp, times, send_times, demux) -> Stream:
    """Every RTP packet of the flow in one sequence space: the transport-wide sequence number
    (the transport-cc header extension, 2 bytes, one counter across all SSRCs, padding probes
    and retransmissions included), the loss signal a WebRTC receiver itself uses. Its send
    times come from abs-send-time, the one clock all those packets share."""
    rtp_head, rtp_len = head[is_rtp], head_len[is_rtp]
    counts = rtp.extension_counts(rtp_head, rtp_len, 2)
    chosen = seq = None
    for ident in np.flatnonzero(counts >= max(MIN_AUTO_PACKETS, 0.99 * rtp_head.shape[0])):
        values = rtp.extension_values(rtp_head, rtp_len, 2, int(ident))
        candidate = unwrap_sequence(values[values >= 0], 1 << 16)
        if _not_a_sequence(candidate) is None and np.mean(np.diff(candidate) == 1) >= 0.5:
            chosen, present, seq = int(ident), values >= 0, candidate
            break
    if chosen is None:
        raise NotThisKind("no transport-wide sequence number (a 2-byte header extension counting every packet)")
    keep = np.flatnonzero(is_rtp)[present]
    info = {"kind": "rtp", "sequence": TRANSPORT_CC, "transport_cc_id": chosen, "demux": demux}
    sent = np.full(keep.size, np.nan)
    if send_times:
        ident = rtp.abs_send_time_id(head[keep], head_len[keep], times[rows[keep]])
        if ident is None:
            raise NotThisKind("transport-wide sequence numbers, but no abs-send-time to time them")
        clocks = rtp.extension_values(head[keep], head_len[keep], 3, ident)
        sent = unwrap_sequence(clocks, 1 << 24) * rtp.ABS_SEND_TIME_UNITS
        info.update(send_time="abs-send-time", abs_send_time_id=ident)
    return Stream(f"{label}/{TRANSPORT_CC}", "rtp", rows[keep], seq, sent, info)


def _spec_streams(spec: FieldSpec, label, rows, records, times, clock_rate, send_times, min_packets):
    """Apply a field spec to one flow's records."""
    need = spec.needed_bytes
    if need > records.dtype["head"].shape[0]:
        raise UsageError(f"the payload spec reads {need} payload bytes; decode with head_bytes >= {need}")
    head = records["head"]
    long_enough = records["payload_len"] >= need
    captured = records["head_len"] >= need
    valid = long_enough & captured
    excluded = {"short_payload": int((~long_enough).sum()), "cut_by_snaplen": int((long_enough & ~captured).sum())}
    if spec is RTP:
        version_2 = head[:, 0] >> 6 == 2
        rtcp = (head[:, 1] >= 200) & (head[:, 1] <= 204)  # RTCP multiplexed on the port
        excluded["not_rtp"] = int((valid & ~(version_2 & ~rtcp)).sum())
        valid &= version_2 & ~rtcp
    if spec.time_units in PAIR_UNITS and spec.send_time is not None:
        fraction = spec.send_time.halves()[1].read(head)
        out_of_range = valid & (fraction >= round(1 / PAIR_UNITS[spec.time_units])) & (spec.time_units != "ntp")
        if out_of_range.any():
            raise NotThisKind(f"{int(out_of_range.sum())} packets have a sub-second field out of range")
    seq = spec.seq.read(head)
    if spec.seq_high is not None:  # in use when nonzero and small, or negative (an end marker)
        high = spec.seq_high.read(head)
        if not (valid & (high > 0)).any() or (valid & (high > 0xFFFF) & (high < 1 << 31)).any():
            raise NotThisKind("no upper sequence word in use")
        seq = ((high.astype(np.uint64) << np.uint64(32)) | seq.astype(np.uint64)).view(np.int64)
    if spec.seq.signed or spec.seq_high is not None:
        excluded["end_of_test"] = int((valid & (seq < 0)).sum())
        valid &= seq >= 0
    if int(valid.sum()) < min_packets:
        raise NotThisKind(f"{int(valid.sum())} packets carry the fields (payload of {need} bytes or more)")
    rows, head, seq = rows[valid], head[valid], seq[valid]
    keys = spec.stream.read(head) if spec.stream is not None else np.zeros(seq.shape[0], np.int64)
    distinct_keys = pd.unique(keys)
    info = {"kind": spec.name, "excluded": {k: v for k, v in excluded.items() if v}}  # of the whole flow
    streams = []
    for key in distinct_keys:
        mine = keys == key if len(distinct_keys) > 1 else slice(None)
        own = seq[mine]
        if spec.seq.width < 8 and not spec.seq.signed and spec.seq_high is None:
            own = unwrap_sequence(own, 1 << (8 * spec.seq.width))
        if own.shape[0] >= min_packets:
            problem = _not_a_sequence(own)
            if problem:
                raise NotThisKind(problem)
        name = label if len(distinct_keys) == 1 else f"{label}{SSRC}0x{int(key):08x}"
        own_info = dict(info)
        sent = np.full(own.shape[0], np.nan)
        if send_times and spec.send_time is not None:
            sent = _send_seconds(spec, head[mine], times[rows[mine]], clock_rate.of(name), own_info, name)
        streams.append(Stream(name, spec.name, rows[mine], own, sent, own_info))
    return streams


def _misread(streams: list[Stream], packets: int) -> int:
    """Packets of the flow (``packets`` of them) that a reading leaves out, plus those whose
    number another packet of their stream had. Neither is common in a packet sequence read
    right; a 64-bit counter read as 32 bits (its high word) repeats, and read as a signed 32-bit
    id leaves out the 'negative' ones, yet either can pass the sequence checks on a short flow."""
    read = sum(s.seq.shape[0] for s in streams)
    return packets - read + sum(s.seq.shape[0] - np.unique(s.seq).shape[0] for s in streams)


def _not_a_sequence(seq: np.ndarray) -> str | None:
    """Why these numbers (in capture order) are not a packet sequence, or None when they are."""
    steps = np.diff(seq)
    moving = steps[steps != 0]
    if seq.shape[0] > 1 and moving.shape[0] == 0:
        return "the field never changes"
    if moving.shape[0] < steps.shape[0] / 2:
        return "most packets repeat the number of the packet before"
    if moving.shape[0]:
        small = np.mean(np.abs(moving) <= MAX_STEP)
        if small < 0.9:
            return f"only {small:.0%} of the steps between consecutive packets are small"
        if np.mean(moving > 0) < 0.5:
            return "the numbers mostly go backwards"
    span = int(seq.max() - seq.min()) + 1
    if span > 10 * seq.shape[0] + MAX_STEP:
        return f"the numbers span {span} values for {seq.shape[0]} packets"
    return None


def _send_seconds(
    spec: FieldSpec, head, times, clock_rate, info, name, given: bool = True, key: str | None = None
) -> np.ndarray:
    """In-band send times in seconds (on the sender's clock, its own origin) from the
    packets' first payload bytes; a ``clock_rate`` the user ``given`` is checked against the
    stream's own clock (``check_given_rate``)."""
    units, field = spec.time_units, spec.send_time
    if units in PAIR_UNITS:
        whole, fraction = (f.read(head) for f in field.halves())
        return whole + fraction * PAIR_UNITS[units]
    ticks = field.read(head)
    if field.width < 8:
        ticks = unwrap_sequence(ticks, 1 << (8 * field.width))
    if units in COUNTER_UNITS:
        return ticks * COUNTER_UNITS[units]
    static = RTP_STATIC_RATES.get(int(np.bincount(head[:, 1] & 0x7F).argmax())) if spec is RTP else None
    if units is None and clock_rate is None and static is not None:
        rate, source = float(static), "payload type"
    elif units is None and clock_rate is None:
        rate, source = infer_clock_rate(ticks, times, USUAL_RTP_RATES, 0.02, name)
    else:
        rate, source = float(clock_rate if units is None else units), "given"
        if units is None and given:
            check_given_rate(rate, ticks, times, name, key)
    info.update(clock_rate=rate, clock_source=source)
    return ticks / rate


def infer_clock_rate(ticks, times, usual, tolerance, name) -> tuple[float, str]:
    """Ticks per second of an in-band clock, taken as the nearest ``usual`` rate when within
    ``tolerance`` (relative). Capture time is the send time plus a delay that is never below
    the path's minimum, so the slope of capture time against ticks is read on its lower
    envelope (``clocks.fit_lower_envelope``), which a queue filling or draining over the
    capture does not tilt as it tilts a least-squares line (a TCP transfer through a
    bottleneck read 1024 Hz for Linux's 1000 Hz that way). Raises NotThisKind when the
    capture is too short to tell."""
    slope = clock_slope(ticks, times, name)
    nearest = nearest_usual(slope, usual, tolerance)
    return (nearest, "inferred") if nearest else (slope, "inferred (not a usual rate)")


def clock_slope(ticks, times, name) -> float:
    """Ticks per second of capture time on the lower envelope (see ``infer_clock_rate``)."""
    ok = np.isfinite(times)
    t, k = times[ok], ticks[ok].astype(np.float64)
    if t.shape[0] >= 2 and np.ptp(k) == 0:
        raise NotThisKind(f"stream {name}: its clock never advances")
    if t.shape[0] < 2 or np.ptp(t) < MIN_CLOCK_SPAN:
        raise NotThisKind(
            f"stream {name}: too few packets over too short a time to infer the clock rate; "
            "give its clock rate (command line: --clock-rate HZ)"
        )
    seconds_per_tick = fit_lower_envelope(k - k.min(), t - t.min()).skew
    if seconds_per_tick <= 0:
        raise NotThisKind(f"stream {name}: the in-band clock does not advance with capture time")
    return 1.0 / seconds_per_tick


def _tcp_stream(label, rows, records, times, clock_rate, send_times) -> Stream:
    """Segment indices (and TSval send times) of one direction of a TCP connection."""
    data = records["payload_len"] > 0
    if not data.any():
        raise NotThisKind(ACKS_ONLY)
    flags = records["flags"]
    syn = (records["tcp_flags"] & 0x02) != 0
    byte = unwrap_sequence(records["tcp_seq"].astype(np.int64), 1 << 32)
    base = byte[syn][0] + 1 if syn.any() else byte[data].min()
    lengths = records["payload_len"][data].astype(np.int64)
    with_mss = syn & ((flags & F_TCP_MSS) != 0)
    mss = int(records["tcp_mss"][with_mss][0]) if with_mss.any() else int(np.bincount(lengths).argmax())
    start, inverse = distinct(byte[data] - base)
    seg_len = np.zeros(start.shape[0], np.int64)
    np.maximum.at(seg_len, inverse, lengths)
    seq = segment_index(start, seg_len, max(mss, 1))[inverse]
    problem = _not_a_sequence(seq)  # e.g. a second connection on the same ports
    if problem:
        raise NotThisKind(f"segment numbers: {problem}")
    info = {"kind": "tcp", "mss": mss}
    sent = np.full(seq.shape[0], np.nan)
    if send_times:
        stamped = (flags[data] & F_TCP_TIMESTAMP) != 0
        if not stamped.all():
            raise NotThisKind(
                f"{int((~stamped).sum())} of {stamped.shape[0]} data segments carry no TCP "
                "timestamps option: no sender clock"
            )
        ticks = unwrap_sequence(records["tcp_tsval"][data].astype(np.int64), 1 << 32)
        if clock_rate is None:
            rate, source = infer_clock_rate(ticks, times[rows[data]], USUAL_TSVAL_RATES, 0.1, label)
        else:
            rate, source = float(clock_rate), "given"
            check_given_rate(rate, ticks, times[rows[data]], label)
        info.update(clock_rate=rate, clock_source=source)
        sent = ticks / rate
    return Stream(label, "tcp", rows[data], seq, sent, info)


def segment_index(start: np.ndarray, length: np.ndarray, mss: int) -> np.ndarray:
    """Packet index of each distinct segment start (sorted, relative to the first data byte).

    A new start is one more than the previous new start, plus ceil(hole / mss) for a hole in
    the bytes before it; a start whose bytes were all covered before takes the index of the
    last new start.
    """
    end = start + length
    covered_to = np.maximum.accumulate(np.concatenate(([start[0]], end[:-1])))
    new = end > covered_to
    new[0] = True
    hole = np.maximum(start - covered_to, 0)
    step = np.where(new, 1 + -(-hole // mss), 0)
    step[0] = -(-max(int(start[0]), 0) // mss)
    index = np.cumsum(step)
    last_new = np.maximum.accumulate(np.where(new, np.arange(start.shape[0]), 0))
    return index[last_new]


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values, sorted, and the index of each value among them (sort-based:
    faster than np.unique's hashing on these nearly sorted integers)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.empty(ordered.shape[0], bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    index = np.empty(values.shape[0], np.int64)
    index[order] = np.cumsum(new) - 1
    return ordered[new], index


# -- rows --------------------------------------------------------------------------------------
def _packet_rows(capture, streams: list[Stream], times, receiver: bool) -> tuple[pd.DataFrame, dict]:
    """The PacketTable of all streams, with lost rows at the receiver. Each stream's rows are
    written into the table's columns in place: the columns are the biggest arrays of a read,
    and fresh memory costs more than the work (see ``flow_groups``)."""
    records = capture.records
    plans, per_stream = [], {}
    for s in streams:
        t = times[s.rows]
        if np.isnan(t).any():
            first = int(records["offset"][s.rows[np.argmax(np.isnan(t))]])
            raise TraceError(
                capture.path,
                f"flow {s.label}: {int(np.isnan(t).sum())} packets come from simple "
                "packet blocks, which carry no timestamp; a trace needs their capture times",
                offset=first,
            )
        if receiver and not s.info.get("outgoing"):
            if np.isnan(s.sent).any():
                raise TraceError(
                    capture.path,
                    f"flow {s.label}: its {s.kind} packets carry no send time, which a receiver-side trace needs",
                    offset=int(records["offset"][s.rows[0]]),
                )
            plans.append((t, True, *_lost_rows(s, t)))
        else:
            plans.append((t, False, None, *_NO_LOSSES))
            if s.info.get("outgoing"):  # numbers the host skipped, or the capture missed: not path losses
                s.info["missing"] = int(s.seq.max() - s.seq.min() + 1 - np.unique(s.seq).shape[0])
        per_stream[s.label] = {**s.info, "packets": int(s.rows.shape[0]), "lost": int(plans[-1][3].shape[0])}
    total = sum(s.rows.shape[0] + plan[3].shape[0] for s, plan in zip(streams, plans))
    out = {
        "flow": np.empty(total, np.int32),
        "seq": np.empty(total, np.int64),
        "uid": np.empty(total, np.int64),
        "size": np.empty(total, np.int64),
        "t_send": np.empty(total),
        "t_recv": np.empty(total),
        "fate": np.empty(total, np.int8),
        "reason": np.empty(total, np.int8),
    }
    at, next_uid = 0, len(records)
    for i, (s, (t, received, order, lost, lost_reason, lost_sent)) in enumerate(zip(streams, plans)):
        n, k = s.rows.shape[0], lost.shape[0]
        seen, gone = slice(at, at + n), slice(at + n, at + n + k)
        out["flow"][at : at + n + k] = i
        rows = s.rows if order is None else s.rows[order]
        out["size"][seen] = records["ip_len"][rows]
        sent, arrived = (s.sent, t) if received else (t, None)
        for name, values in (("seq", s.seq), ("t_send", sent), ("t_recv", arrived)):
            out[name][seen] = np.nan if values is None else values if order is None else values[order]
        out["uid"][seen] = rows
        out["fate"][seen] = FATES.index(DELIVERED if received else UNOBSERVED)
        out["reason"][seen] = 0
        out["seq"][gone], out["uid"][gone] = lost, next_uid + np.arange(k)
        out["size"][gone] = int(np.median(out["size"][seen])) if k else 0
        out["t_send"][gone], out["t_recv"][gone] = lost_sent, np.nan
        out["fate"][gone], out["reason"][gone] = FATES.index(LOST), lost_reason
        at, next_uid = at + n + k, next_uid + k
    table = make_packet_table(
        flow=pd.Categorical.from_codes(out["flow"], categories=[s.label for s in streams]),
        seq=out["seq"],
        uid=out["uid"],
        size=out["size"],
        t_send=out["t_send"],
        t_recv=out["t_recv"],
        fate=pd.Categorical.from_codes(out["fate"], dtype=FATE_DTYPE),
        reason=pd.Categorical.from_codes(out["reason"], categories=list(REASONS)),
    )
    return table, per_stream


_NO_LOSSES = (np.empty(0, np.int64), np.empty(0, np.int8), np.empty(0))


def _lost_rows(s: Stream, t_recv) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A received stream's arrival order (indices into its packets; None when they came in
    capture order), and its lost rows: a sequence number never seen inside the range seen, and
    a TCP retransmission that fills a hole; their numbers, reasons and send times (interpolated
    between in-order arrivals)."""
    order = None if (t_recv[1:] >= t_recv[:-1]).all() else np.argsort(t_recv, kind="stable")
    seq, sent = (s.seq, s.sent) if order is None else (s.seq[order], s.sent[order])
    best_before = np.maximum.accumulate(np.concatenate(([seq[0] - 1], seq[:-1])))
    in_order = seq > best_before
    io_seq, io_sent = seq[in_order], sent[in_order]
    seen, _ = distinct(seq)
    missing = np.setdiff1d(np.arange(seen[0], seen[-1] + 1), seen, assume_unique=True)
    reason = np.where(np.isin(missing, s.repaired), REASONS.index(RTX_REPAIRED), REASONS.index(GAP)).astype(np.int8)
    lost_seq, lost_reason = [missing], [reason]
    if s.kind == "tcp":
        by_seq = np.argsort(seq, kind="stable")
        ordered = seq[by_seq]
        fills = np.zeros(seq.shape[0], bool)
        fills[by_seq[np.diff(ordered, prepend=ordered[0] - 1) != 0]] = True  # first arrival of its seq
        fills &= ~in_order
        opener = np.searchsorted(io_seq, seq[fills], side="right")  # first in-order arrival above it
        resent = seq[fills][sent[fills] > io_sent[opener]]
        lost_seq.append(resent)
        lost_reason.append(np.full(resent.shape[0], REASONS.index(RETRANSMITTED), np.int8))
    lost = np.concatenate(lost_seq)
    return order, lost, np.concatenate(lost_reason), np.interp(lost, io_seq, io_sent)
