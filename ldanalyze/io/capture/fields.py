"""Where a payload carries its sequence number and send time.

``Field`` is an integer in the payload (offset, width, byte order); ``FieldSpec`` the fields of
one protocol and the units of its time (a user's own protocol: ``--field``, ``FieldSpec.parse``);
``RTP``, ``IPERF3``, ``IPERF2`` and their 64-bit variants the known kinds (``UDP_SPECS``, in
order of trial). ``payload.py`` tells how each kind is read.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import UsageError

COUNTER_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
PAIR_UNITS = {"sec+usec": 1e-6, "sec+nsec": 1e-9, "ntp": 2.0**-32}


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
        of the records), not combined byte by byte (docs/design.md). Twin:
        ``tests.naive.capture.read_field``."""
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


RTP_SEQ, RTP_TIMESTAMP, RTP_SSRC = Field(2, 2), Field(4, 4), Field(8, 4)  # the RTP header's
RTP = FieldSpec(seq=RTP_SEQ, send_time=RTP_TIMESTAMP, time_units=None, stream=RTP_SSRC, name="rtp")
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
