"""LDAs that read the radio's own evidence: 802.11 sequence numbers in a monitor-mode capture.

No LDA of the papers had this: they see only the IP packets' times (``../shared/papers/``
README; paper 000 §II and paper 001 §II survey them). A receiver's own radiotap capture, or a
chain's air vantage, also holds the 802.11 header of every frame the radio decoded
(``io.capture.air``), and with it the transmitter's sequence counter: a frame the access point
sent takes the next number whether or not it arrives, while a packet its queue (or a queue
before it) dropped takes none. ``air_unseen`` of an arrival counts the numbers that went by
since its flow's previous frame and that no frame of the capture carries.

``macseq``: a gap whose revealing arrival has ``air_unseen`` = 0 was never on the air, so its
losses are congestion; a gap with as many unseen numbers as half its losses or more is called
wireless (the radio lost that many frames); in between, more of its losses were never sent
than lost on the air: congestion. A gap whose count is unknown (the flow's first frame, a
change of counter) is called wireless: nothing proves it was never sent.

Exact when the counter numbers only the receiver's frames (QoS data, per receiver and TID: every
802.11n and later network). With one counter per sender (non-QoS), frames to other stations
that the receiver did not decode count as unseen too, and congestion losses near them are
called wireless; measured on the ns-3 Wi-Fi scenario in docs/ldas.md. Each packet says which
kind of frame it came in (``air_qos``), and the reader warns of a capture with non-QoS frames.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from ..errors import UsageError
from ..timeline import Timeline
from .base import LDA, Features, Verdict, take


@dataclasses.dataclass(frozen=True)
class MacSeq(LDA):
    """Congestion where the 802.11 sequence numbers prove a gap never went on the air (module
    docstring); needs a timeline with ``air_unseen`` (a monitor-mode capture)."""

    name = "macseq"
    in_all: ClassVar[bool] = False  # needs a monitor-mode capture: named, not brought in by "all"
    needs_radio_evidence = True

    def prepare(self, timeline: Timeline) -> None:
        if "air_unseen" not in timeline.arrivals.columns:
            raise UsageError(
                "macseq reads 802.11 sequence numbers: give a receiver's own monitor-mode capture "
                "(radiotap, PPI or 802.11), or a chain with an air vantage (--vantage air.pcap:air)"
            )

    def decide(self, f: Features) -> Verdict:
        unseen = take(f.timeline.arrivals["air_unseen"].to_numpy(np.int64), f.rev, -1)
        return Verdict(wireless=(unseen < 0) | ((unseen > 0) & (2 * unseen >= f.n)))
