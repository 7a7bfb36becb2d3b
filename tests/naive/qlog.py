"""Plain twin of ldanalyze/io/qlog/fates.py's ACK coverage: every range of every ACK frame walked
packet by packet."""

from __future__ import annotations

from . import twin_of


@twin_of("ldanalyze.io.qlog.fates.ack_coverage")
def ack_coverage(first, stop, frame_of_range, n_frames, size):
    """``acked_by`` (the first frame acknowledging each packet, -1 none), ``newly`` (bytes each
    frame acknowledged first) and ``lowest`` (after each frame, the lowest packet index not yet
    acknowledged; the packet count when all are)."""
    n = len(size)
    acked_by = [-1] * n
    newly = [0] * n_frames
    lowest = [0] * n_frames
    for f in range(n_frames):
        for r in range(len(frame_of_range)):
            if frame_of_range[r] != f:
                continue
            for i in range(first[r], stop[r]):
                if acked_by[i] == -1:
                    acked_by[i] = f
                    newly[f] += size[i]
        lowest[f] = next((i for i in range(n) if acked_by[i] == -1), n)
    return acked_by, newly, lowest
