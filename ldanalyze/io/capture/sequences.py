"""What reading a flow's payload gives: its sequence spaces, or why it is not of that kind.

Shared by the readers of every kind (``payload.py``, ``rtp_streams.py``, ``tcp.py``): a
``Stream`` (one sequence space: records, numbers, send times), ``NotThisKind``, the test that
numbers read from a field are a packet sequence (``not_a_sequence``), ``distinct`` values and
the count of ``repeats``, and
the reasons a flow or stream was skipped, told in full (``first_reasons``) or in brief.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

MIN_AUTO_PACKETS = 3  # fewer readable packets: too few to recognise a kind
MAX_STEP = 1000  # largest step between consecutive packets that still looks like a sequence


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


def not_a_sequence(seq: np.ndarray) -> str | None:
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


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values, sorted, and the index of each value among them (sort-based:
    quicker than np.unique's hashing on these nearly sorted integers)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.empty(ordered.shape[0], bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    index = np.empty(values.shape[0], np.int64)
    index[order] = np.cumsum(new) - 1
    return ordered[new], index


def repeats(values: np.ndarray) -> int:
    """How many values equal another before them (``len - len(np.unique)``): none when they
    rise strictly, as a sequence read right mostly does (told by one pass, not a hash of every
    value: np.unique took 23 ms on a 250 000-packet flow); else counted on the sorted values."""
    if values.shape[0] < 2 or bool((values[1:] > values[:-1]).all()):
        return 0
    ordered = np.sort(values)
    return int(np.count_nonzero(ordered[1:] == ordered[:-1]))
