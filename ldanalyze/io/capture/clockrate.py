"""A stream's in-band clock (RTP timestamp, TCP TSval, a field spec's time): its rate, and the
send times it gives.

The rate is the one the user gave (``ClockRates``: for every stream or per stream; refused when
the stream's own clock contradicts it, ``check_given_rate``), else the RTP payload type's static
rate (RFC 3551), else inferred from the ticks against capture times and snapped to the nearest
usual rate (``infer_clock_rate``). An RTP stream's RTCP sender reports, when plausible
(``PLAUSIBLE_RTP_RATES``), come before the last two (``rtp_streams.py``). ``send_seconds`` turns
a field's ticks into seconds.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...clocks import fit_lower_envelope
from ...errors import UsageError
from ...packets import unwrap_sequence
from .fields import COUNTER_UNITS, PAIR_UNITS, RTP, FieldSpec
from .sequences import NotThisKind

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

MIN_CLOCK_SPAN = 0.02  # seconds of capture time needed to infer a clock rate
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
            # a part without "=" has no rate: an empty one, refused by _hz as any bad rate is
            pairs = [
                (key, value) for key, _, value in (part.partition("=") for part in given.split(",") if part.strip())
            ]
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


def send_seconds(
    spec: FieldSpec, head, times, clock_rate, info, name, given: bool = True, key: str | None = None
) -> np.ndarray:
    """In-band send times in seconds (on the sender's clock, its own origin) from the
    packets' first payload bytes; a ``clock_rate`` the user ``given`` is checked against the
    stream's own clock (``check_given_rate``)."""
    units, field = spec.time_units, spec.send_time
    assert field is not None  # asked of a spec with a send time only
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
    return (nearest, "inferred") if nearest else (slope, UNUSUAL)


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


UNUSUAL = "inferred (not a usual rate)"  # a clock rate inferred that matches no usual one


def doubtful_clocks_note(meta: dict) -> str | None:
    """What to say of a capture's streams whose media clock rate was inferred and matches no
    usual rate: their send times, so their delays and every delay-based call, may be off."""
    flows = meta.get("flows") or {}
    doubtful = {label: info.get("clock_rate") for label, info in flows.items() if info.get("clock_source") == UNUSUAL}
    if not doubtful:
        return None
    shown = ", ".join(f"{label} ({rate:,.0f} Hz)" for label, rate in list(doubtful.items())[:3])
    more = f" and {len(doubtful) - 3} more" if len(doubtful) > 3 else ""
    return (
        f"{len(doubtful)} stream(s) on a media clock rate inferred from their timestamps that matches no usual "
        f"rate: {shown}{more}. Their send times, and so their delays and the delay-based LDAs' calls, may be "
        "off; give the rate if you know it (--clock-rate 0xSSRC=HZ)"
    )
