"""A stream's in-band clock (RTP timestamp, TCP TSval, a field spec's time): its rate, and the
send times it gives.

The rate is the one the user gave (``ClockRates``: for every stream or per stream; always used,
with a warning that shows the stream's own evidence where its clock disagrees,
``given_rate_evidence``), else the RTP payload type's static rate (RFC 3551), else inferred from
the ticks against capture times (``infer_clock_rate``): a standard media clock where the whole
span's rate is within a few percent of one, else the lower envelope's slope snapped to the
nearest usual rate, else the envelope's slope as it is. An RTP stream's RTCP sender reports, when plausible
(``PLAUSIBLE_RTP_RATES``), come before the last two (``rtp_streams.py``). ``send_seconds`` turns
a field's ticks into seconds.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from ...clocks import ClockWarning, fit_lower_envelope
from ...errors import UsageError
from ...packets import unwrap_sequence
from .fields import COUNTER_UNITS, PAIR_UNITS, RTP, FieldSpec
from .sequences import NotThisKind

USUAL_RTP_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 90000, 96000)
PLAUSIBLE_RTP_RATES = (1000.0, 1e6)  # sender-report rates outside are refused (Hz)
# The media clocks of nearly every audio and video codec: a stream whose timestamps advance within
# SPAN_TOLERANCE of one of these over the whole capture runs at it, whatever a queue that filled
# and drained in between did to the lower envelope (a call through a limiter: 48 kHz over the
# call, 30-80 kHz over 20-second windows, 35.5 kHz on the envelope).
STANDARD_MEDIA_RATES = (8000, 16000, 32000, 44100, 48000, 90000)
SPAN_TOLERANCE = 0.03
# the whole span is read over this much capture time at least: a queue's change of a few hundred
# ms over it stays within SPAN_TOLERANCE (a few packets a second apart tell nothing)
MIN_SPAN_SECONDS = 10.0
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
# A given rate this far off both the rates a stream's own clock shows against capture time (its
# lower envelope's and its whole span's) is probably a mistake (90000 Hz given for every stream of
# a call whose audio runs at 16000 Hz), not skew: it is used, and the reader warns.
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


def given_rate_evidence(
    rate: float, ticks: np.ndarray, times: np.ndarray, name: str, key: str | None = None
) -> str | None:
    """What a stream's own clock says against a clock rate the user gave, in words, when both its
    lower envelope's and its whole span's rates are off the given one beyond :data:`CONTRADICTING`;
    None when either agrees or the stream is too short to tell. The rate is used all the same
    (the user may know better: a clock read across a queue that filled and drained can mislead);
    the reader warns with this text. ``key`` names the stream in the suggested option (its SSRC)."""
    try:
        envelope = clock_slope(ticks, times, name)
    except NotThisKind:
        return None
    span = span_rate(ticks, times)
    if any(CONTRADICTING[0] <= shown / rate <= CONTRADICTING[1] for shown in (envelope, span)):
        return None
    suggested = (nearest_usual(span, STANDARD_MEDIA_RATES, SPAN_TOLERANCE) if span > 0 else None) or nearest_usual(
        envelope, USUAL_RTP_RATES, 0.02
    )
    hint = f"; if it is not, try --clock-rate {key or name}={suggested:g}" if suggested else ""
    return (
        f"clock rate {rate:g} Hz given for stream {name} is used, but its clock advances {span:,.0f} ticks per "
        f"second of capture time over the whole stream and {envelope:,.0f} on its lower envelope. A clock "
        f"rate belongs to one stream: check that {rate:g} Hz is this stream's (give it per stream, keyed by "
        f"SSRC, RTP payload type or stream label){hint}"
    )


def use_given_rate(rate: float, ticks: np.ndarray, times: np.ndarray, name: str, info: dict, key=None) -> None:
    """Record and warn of what the stream's clock says against a rate the user gave
    (``given_rate_evidence``); the rate itself is used as given."""
    evidence = given_rate_evidence(rate, ticks, times, name, key)
    if evidence is not None:
        info["clock_given_disagrees"] = evidence
        warnings.warn(evidence, ClockWarning, stacklevel=2)


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
    stream's own clock, used and warned of where they disagree (``use_given_rate``)."""
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
        rate, source = infer_clock_rate(ticks, times, USUAL_RTP_RATES, 0.02, name, standard=STANDARD_MEDIA_RATES)
        if source == SPAN:
            info["clock_envelope_rate"] = clock_slope(ticks, times, name)
    else:
        rate, source = float(clock_rate if units is None else units), "given"
        if units is None and given:
            use_given_rate(rate, ticks, times, name, info, key)
    info.update(clock_rate=rate, clock_source=source)
    return ticks / rate


def infer_clock_rate(ticks, times, usual, tolerance, name, standard=()) -> tuple[float, str]:
    """Ticks per second of an in-band clock and how it was read: the ``standard`` rate within
    :data:`SPAN_TOLERANCE` of the whole span's rate (``span_rate``; :data:`SPAN` where the envelope
    reads otherwise), else the lower envelope's slope taken as the nearest ``usual`` rate when
    within ``tolerance`` (relative; ``"inferred"``), else the slope itself (:data:`UNUSUAL`).
    Capture time is the send time plus a delay that is never below
    the path's minimum, so the slope of capture time against ticks is read on its lower
    envelope (``clocks.fit_lower_envelope``), which a queue filling or draining over the
    capture does not tilt as it tilts a least-squares line (a TCP transfer through a
    bottleneck read 1024 Hz for Linux's 1000 Hz that way). Raises NotThisKind when the
    capture is too short to tell."""
    slope = clock_slope(ticks, times, name)
    nearest = nearest_usual(slope, usual, tolerance)
    span = span_rate(ticks, times)
    long_enough = np.nanmax(times) - np.nanmin(times) >= MIN_SPAN_SECONDS
    spanned = nearest_usual(span, standard, SPAN_TOLERANCE) if standard and span > 0 and long_enough else None
    if spanned and spanned != nearest:
        return spanned, SPAN
    if nearest:
        return nearest, "inferred"
    return slope, UNUSUAL


def span_rate(ticks, times) -> float:
    """Ticks per second of capture time from the first arrival to the last: what a queue that
    filled and drained in between does not change, unless it holds more at one end."""
    ok = np.isfinite(times)
    t, k = times[ok], ticks[ok].astype(np.float64)
    return float((k[-1] - k[0]) / (t[-1] - t[0]))


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
SPAN = "inferred (whole span)"  # a standard media clock read from the whole span, not the envelope


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
