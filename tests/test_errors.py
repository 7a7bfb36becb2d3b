"""The project's errors: what they say, and that they cross a process pool whole."""

from __future__ import annotations

import pickle

from ldanalyze.errors import TraceError
from ldanalyze.io.capture.payload import NoSequenceNumbers


def test_a_trace_error_names_the_place_and_shows_the_text():
    assert str(TraceError("a.tr", "bad field", line=3, text="r 1.0 x")) == "a.tr:3: bad field\n    r 1.0 x"
    assert str(TraceError("a.pcap", "cut short", offset=24)) == "a.pcap: byte 24: cut short"


def test_trace_errors_survive_pickling_with_their_fields():
    """A worker of a process pool (batch, Dask, concurrent.futures) sends its exception back
    pickled; one rebuilt from its rendered message alone failed to unpickle."""
    for error in (
        TraceError("a.tr", "bad field", line=3, text="r 1.0 x"),
        NoSequenceNumbers("b.pcap", "no flow carries sequence numbers", skipped={"f": "why"}),
    ):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error) and back.__dict__ == error.__dict__


def test_no_sequence_numbers_crosses_a_pool_without_its_capture():
    """The decoded capture it carries (for ``inspect`` to describe) stays in the process that read it."""
    error = NoSequenceNumbers("b.pcap", "no flow carries sequence numbers", skipped={}, capture=object())
    back = pickle.loads(pickle.dumps(error))
    assert back.capture is None and str(back) == str(error)
