"""pcap and pcapng captures: the reader, from a file to its records, flows and Traces.

``decode_capture`` reads a capture (plain or gzip, detected by content) a window at a time
(``source.py``), and a numba kernel walks the records of each window (``walk.py``, which lists
what of each container is read), decoding every frame (``frame.decode_frame``) into a packed
record array: capture time (integer ns), flow id, IP length and ID, TCP fields, a payload hash
and the first payload bytes. Memory grows with the packets (about 90 bytes each), not with the
file. That array is the base for everything else: ``list_flows`` summarises it per flow
(``flows.py``), ``read_capture`` turns one-point captures into a
:class:`~ldanalyze.packets.Trace` (see ``payload.py`` for where sequence numbers and send times
come from), and matching across captures can join on its columns (flow 5-tuple, ``ip_id``,
``payload_hash``).

Bad input raises :class:`~ldanalyze.errors.TraceError` naming the file and the byte offset
(of the decompressed stream for gzip files). A capture that ends inside a record (a capture
program killed mid-write) or a gzip stream cut short keeps the records before it, with a
:class:`CaptureWarning` saying where. Frames that cannot be decoded are counted by cause in
``Capture.counts``; those too short for their headers are also warned about.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...clocks import PLAUSIBLE_SKEW_PPM, remove_skew
from ...errors import TraceError, UsageError
from ...packets import Trace, empty_acks, empty_rtt
from ...tiering import call
from . import payload as payloads
from .air import is_air_capture, radio_note, received_air_columns, shared_counter_note
from .fields import FieldSpec, payload_name
from .flows import SSRC, flow_extents, flow_listing, flow_table, tunnel_counts, tunnel_table
from .outages import capture_outages, mark_outages
from .record import NO_TIME, S_TOO_SHORT, S_UNSUPPORTED_LINK, STATUS_NAMES
from .sequences import reasons_in_brief
from .source import PCAP, PCAPNG, ByteWindow, container
from .tcp import ACKS_ONLY
from .tcp_sender_kernel import SACK_HEAD_BYTES
from .walk import KNOWN_BLOCKS, Output, PcapngWalk, PcapWalk

CHUNK_BYTES = 16 << 20  # input window: memory does not grow with the file
DEFAULT_HEAD_BYTES = 16
RTP_HEAD_BYTES = 48  # an RTP header, its CSRCs and extensions, and the first payload words (RTX)
SKEW_CHOICES = ("remove", "keep")


class CaptureWarning(UserWarning):
    """Something in a capture was skipped or is doubtful; the message names file and byte."""


@dataclasses.dataclass
class Capture:
    """A decoded capture: one record per captured frame, the flow table, what was skipped.

    ``records`` is a packed array (``record.record_dtype``): ``records["flow"]`` indexes
    ``flows`` (one row per 5-tuple, direction and tunnel: ``label, ip_ver, proto, src, sport,
    dst, dport, tunnel``), -1 for frames without a flow; ``records["tunnel"]`` and
    ``flows["tunnel"]`` index ``tunnels`` (``flows.tunnel_table``). ``counts`` holds records by
    decode status (see ``record.STATUS_NAMES``), by tunnel kind opened (``tunnels``), the
    tunnel messages not opened (``tunnel_other``) and the tunnels too deep to open
    (``tunnel_too_deep``), and skipped pcapng blocks; ``notes`` the warnings issued.
    """

    path: str
    format: str
    records: np.ndarray
    flows: pd.DataFrame
    tunnels: pd.DataFrame
    interfaces: pd.DataFrame
    counts: dict
    notes: list[str]

    def times(self) -> np.ndarray:
        """Capture times in seconds since the epoch; NaN for records without one (SPB)."""
        ts = self.records["ts_ns"]
        seconds = ts / 1e9
        seconds[ts == NO_TIME] = np.nan  # in place: np.where's second array took three times as long
        return seconds


def head_bytes_for(payload) -> int:
    """Payload bytes to keep per record for reading ``payload`` (RTP: its header and extensions)."""
    return max(
        DEFAULT_HEAD_BYTES,
        payload.needed_bytes if isinstance(payload, FieldSpec) else 0,
        RTP_HEAD_BYTES if payload in ("auto", "rtp") else 0,
        SACK_HEAD_BYTES if payload in ("auto", "tcp") else 0,  # a TCP sender's view reads 4 SACK blocks
    )


def decode_capture(
    path: str | os.PathLike, *, head_bytes: int = DEFAULT_HEAD_BYTES, chunk_bytes: int = CHUNK_BYTES
) -> Capture:
    """Decode every record of a pcap or pcapng capture (plain or gzip) into columns.

    ``head_bytes`` payload bytes of each packet are kept (enough for RTP, iperf2 and iperf3
    headers by default). Memory holds one ``chunk_bytes`` buffer of the file plus the records.
    """
    if not 1 <= head_bytes <= 255:
        raise UsageError(f"head_bytes must be between 1 and 255, not {head_bytes}")
    return decode_into(path, Output(head_bytes), chunk_bytes)


def decode_into(path: str | os.PathLike, output: Output, chunk_bytes: int = CHUNK_BYTES) -> Capture:
    """Decode a capture into ``output`` (its record blocks and flow table); the Capture holds
    the records ``output.records()`` keeps (all of them, unless the output spills them)."""
    path = os.fspath(path)
    with ByteWindow(path, chunk_bytes) as stream:
        stream.refill(0, 64)
        if stream.filled == 0:
            raise TraceError(path, "the capture is empty")
        if stream.filled < 4:
            raise TraceError(path, f"not a capture: only {stream.filled} bytes", offset=0)
        fmt = container(path, stream)
        walk = PcapWalk(stream) if fmt == PCAP else PcapngWalk(stream)
        walk.run(output)
        records = output.records()
        tunnels = tunnel_table(output.tunnels[: output.n_tunnels])
        capture = Capture(
            path=path,
            format=fmt,
            records=records,
            flows=flow_table(output.keys[: output.n_flows], tunnels),
            tunnels=tunnels,
            interfaces=pd.DataFrame(walk.interfaces),
            counts=walk.counts,
            notes=[],
        )
        _account(capture, walk, stream, output.tunnel_records())
    return capture


def _account(capture: Capture, walk, stream: ByteWindow, by_tunnel: np.ndarray) -> None:
    """Counts of what was decoded and skipped (``by_tunnel``: ``Output.tunnel_records``), and a
    warning for each problem found."""
    path, records, counts = capture.path, capture.records, capture.counts
    status = records["status"]
    counts["records"] = len(records)
    by_status = np.bincount(status, minlength=len(STATUS_NAMES))
    counts.update({name: int(c) for name, c in zip(STATUS_NAMES, by_status)})
    counts.update(tunnel_counts(by_tunnel, capture.tunnels))

    def note(message: str) -> None:
        capture.notes.append(f"{path}: {message}")
        warnings.warn(f"{path}: {message}", CaptureWarning, stacklevel=3)

    def first_offset(mask) -> int:
        return int(records["offset"][np.argmax(mask)])

    if counts["too_short"]:
        note(
            f"{counts['too_short']} packets too short to decode (cut by the snap length before the headers "
            f"their flow needs; first at byte {first_offset(status == S_TOO_SHORT)}): they have no flow"
        )
    if counts["unsupported_link"]:
        for iface in capture.interfaces.itertuples():
            mask = (status == S_UNSUPPORTED_LINK) & (records["iface"] == iface.iface)
            if mask.any():
                note(
                    f"{int(mask.sum())} packets on interface {iface.iface} (link type {iface.linktype}, "
                    f"described at byte {iface.offset}) skipped: link type not supported"
                )
    no_time = int((records["ts_ns"] == NO_TIME).sum())
    counts["no_timestamp"] = no_time
    if no_time:
        note(
            f"{no_time} packets from simple packet blocks carry no timestamp: their time is NaN "
            f"(first at byte {first_offset(records['ts_ns'] == NO_TIME)})"
        )
    if capture.format == PCAPNG:
        counts["blocks_skipped"] = {f"0x{t:x}": c for t, (c, _) in sorted(walk.skipped.items())}
        for btype, (count, offset) in sorted(walk.skipped.items()):
            if btype not in KNOWN_BLOCKS:
                note(f"skipped {count} pcapng block(s) of unknown type 0x{btype:x} (first at byte {offset})")
    counts["truncated_records"] = 0
    if walk.truncated is not None:
        offset, present, needed = walk.truncated
        counts["truncated_records"] = 1
        unit = "block" if capture.format == PCAPNG else "record"
        note(f"the capture ends inside a {unit} at byte {offset} ({present} of {needed} bytes): that {unit} is ignored")
    if stream.gzip_cut_at is not None:
        note(
            f"the gzip stream ends early, at byte {stream.gzip_cut_at} of the decompressed capture: "
            "records after it are missing"
        )


# -- flows and traces --------------------------------------------------------------------------
def list_flows(
    source: Capture | str | os.PathLike, *, kinds: dict[int, str] | None = None, **decode_options
) -> pd.DataFrame:
    """One row per flow (5-tuple and direction), in order of first appearance.

    Columns: ``flow`` (the label ``read_capture(flows=...)`` takes), ``proto``, ``src``,
    ``sport``, ``dst``, ``dport``, ``packets``, ``bytes`` (IP bytes), ``first``/``last``
    (capture times, s), ``payload`` (the kind ``read_capture`` would read: ``rtp``,
    ``iperf3``, ``iperf3-64``, ``iperf2``, ``iperf2-64``, ``tcp``, or empty; ``kinds`` (flow
    id → kind) when the caller read the flows already). ``read_capture`` keeps this table in
    ``meta['capture_flows']``.
    """
    capture = source if isinstance(source, Capture) else decode_capture(source, **decode_options)
    records = capture.records
    extents = call(flow_extents, records["flow"], records["ts_ns"], records["ip_len"], len(capture.flows))
    return flow_listing(capture.flows, extents, payloads.detect_kinds(capture) if kinds is None else kinds)


def kinds_read(capture: Capture, streams: dict[str, dict]) -> dict[int, str]:
    """Flow id → the kind its streams were read as (flows not read: absent)."""
    index = {label: i for i, label in enumerate(capture.flows["label"])}
    kinds = {}
    for label, info in streams.items():
        flow = index.get(label.partition(SSRC)[0])
        if flow is not None:
            kinds[flow] = info.get("kind", "")
    return kinds


def read_capture(
    path: str | os.PathLike,
    *,
    payload: str | FieldSpec = "auto",
    vantage: str = "receiver",
    flows: Iterable[str] | str | None = None,
    ssrc: Iterable[str | int] | str | int | None = None,
    rtp_sequence: str = "ssrc",
    clock_rate: float | None = None,
    skew: str = "remove",
    skew_limit_ppm: float = PLAUSIBLE_SKEW_PPM,
    capture_host: str | None = "auto",
    chunk_bytes: int = CHUNK_BYTES,
) -> Trace:
    """Read a one-point capture (pcap or pcapng, plain or gzip) into a Trace.

    ``payload`` says where sequence numbers and send times come from (``auto``, ``rtp``,
    ``iperf3``, ``iperf2``, ``tcp`` or a :class:`~ldanalyze.io.capture.fields.FieldSpec`);
    ``vantage`` whether the capture was taken at the ``receiver`` (arrivals; gaps in the
    sequence become lost rows) or at the ``sender`` (transmissions, fate ``unobserved``);
    ``flows`` picks flows by label (see :func:`list_flows`), all that fit otherwise; ``ssrc``
    picks RTP streams by SSRC; ``rtp_sequence="transport-cc"`` reads each WebRTC flow as one
    stream in transport-wide sequence order (timed by abs-send-time) instead of one per SSRC;
    ``clock_rate`` is the rate (Hz) of the in-band clock (RTP timestamp, TSval) when known.
    The two ends' clocks are separate: only relative delays (ROTT) mean something, and at the
    receiver ``skew="remove"`` (the default) fits each flow's delays with
    :func:`~ldanalyze.clocks.remove_skew` and takes the skew out of the receive times, which
    stay the capture times at the flow's first packet (``meta['clock_fit']`` reports offset
    and skew; ``meta['clock']`` becomes ``skew-removed``); ``skew="keep"`` leaves them as
    they are; a fitted skew beyond ``skew_limit_ppm`` is reported and not applied.
    ``capture_host`` is the address of the host the capture was taken on (``auto``: found
    from the flows' ends and TTLs, see ``flows.host_of``; ``"none"``: no host): at a
    receiver, the flows it sends are read as sent (fate ``unobserved``), not as arrivals;
    ``meta['capture_host']`` says which address and how. Capture times are float seconds
    since the epoch (a resolution of about 0.24 µs today; ``decode_capture`` keeps the integer
    nanoseconds); RTP and TSval send times count from their own clock's origin. ``size`` is the
    IP datagram's length. ``meta`` also holds
    per-flow kinds, clock rates and exclusions, the skipped flows, the record counts by
    decode status and the warnings issued.
    """
    if skew not in SKEW_CHOICES:
        raise UsageError(f"skew must be one of {SKEW_CHOICES}, not {skew!r}")
    capture = decode_capture(path, head_bytes=head_bytes_for(payload), chunk_bytes=chunk_bytes)
    packets, taken = payloads.capture_packets(
        capture,
        payload=payload,
        vantage=vantage,
        flows=flows,
        clock_rate=clock_rate,
        ssrc=ssrc,
        rtp_sequence=rtp_sequence,
        host=host_option(capture_host),
        sender_side=True,
    )
    return capture_trace(
        capture, packets, taken, payload=payload, vantage=vantage, skew=skew, skew_limit_ppm=skew_limit_ppm
    )


def host_option(capture_host: str | None) -> str | None:
    """``capture_host`` as ``capture_packets`` takes it: ``auto``, None, or a checked address."""
    if capture_host in (None, "none"):
        return None
    if capture_host == "auto":
        return "auto"
    try:
        return str(ipaddress.ip_address(capture_host))
    except ValueError:
        raise UsageError(f"capture host must be an IP address, auto or none, not {capture_host!r}") from None


def _tell(capture: Capture, message: str, stacklevel: int) -> None:
    """Keep a note in the capture's notes and warn of it (``stacklevel`` as warnings.warn's)."""
    capture.notes.append(message)
    warnings.warn(message, CaptureWarning, stacklevel=stacklevel + 1)


def _outages_unobserved(capture: Capture, packets: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """The receiver's packets with those missed in the capture's outages read as not observed
    (``outages.py``); ``meta['capture_outages']`` lists the outages and how many packets each hid
    (``not_observed``); a warning says so, and ``formatting.capture_caveat`` in the displays."""
    silences = capture_outages(capture.records, capture.flows)
    packets, hidden, hid = mark_outages(packets, silences)
    found, hid = silences[hid > 0], hid[hid > 0]
    origin = np.nanmin(capture.times()) if capture.records.shape[0] else 0.0
    meta["capture_outages"] = [
        {
            "start": float(start),
            "end": float(end),
            "start_s": float(start - origin),
            "seconds": float(end - start),
            "not_observed": int(n),
        }
        for (start, end), n in zip(found, hid)
    ]
    for label, n in hidden.items():
        info = meta["flows"][label]
        info.update(lost=info["lost"] - n, capture_gap=n)
    if found.shape[0]:
        spans = ", ".join(f"{start - origin:.2f}-{end - origin:.2f} s" for start, end in found[:3])
        more = f" and {found.shape[0] - 3} more" if found.shape[0] > 3 else ""
        message = (
            f"{capture.path}: the capture recorded nothing of its streams in either direction at {spans}{more} "
            f"(a capture outage, not the path's): {sum(hidden.values())} sequence number(s) missed there are read "
            "as not observed (reason 'capture gap'), not as lost"
        )
        warnings.warn(message, CaptureWarning, stacklevel=4)
    return packets


def _capture_drops(capture: Capture, meta: dict) -> None:
    """Warn where the capture's own counters (pcapng interface statistics: ``ifdrop``, ``osdrop``)
    say it dropped packets: some losses shown may be the capture's. When is not recorded, so no
    loss is read otherwise; ``meta['capture_dropped']`` holds the count, which
    ``formatting.capture_caveat`` shows in the displays."""
    interfaces = capture.interfaces
    dropped = {
        name: int(interfaces[name].fillna(0).sum()) if name in interfaces else 0 for name in ("ifdrop", "osdrop")
    }
    meta["capture_dropped"] = sum(dropped.values())
    if meta["capture_dropped"]:
        message = (
            f"{capture.path}: the capture's interface statistics say it dropped {meta['capture_dropped']} packet(s) "
            f"(ifdrop {dropped['ifdrop']}, osdrop {dropped['osdrop']}): some of the losses shown may be the "
            "capture's, not the path's (the file does not say when they were dropped)"
        )
        warnings.warn(message, CaptureWarning, stacklevel=4)


def capture_trace(
    capture: Capture,
    packets: pd.DataFrame,
    taken: dict,
    *,
    payload,
    vantage: str,
    skew: str,
    skew_limit_ppm: float,
    pairs: str = "hosts",
) -> Trace:
    """The Trace of what ``capture_packets`` took from a capture: warnings for what it skipped,
    the meta ``read_capture`` documents, and the clock skew removed (per ``pairs``)."""
    # the acknowledgements of a TCP connection carry no data by nature: no need to warn
    skipped = {k: v for k, v in taken["skipped_flows"].items() if not v.startswith(ACKS_ONLY)}
    if skipped:
        message = (
            f"{capture.path}: {len(skipped)} flow(s) without sequence numbers skipped ({reasons_in_brief(skipped)})"
        )
        _tell(capture, message, stacklevel=3)
    if taken["skipped_streams"]:
        message = (
            f"{capture.path}: {len(taken['skipped_streams'])} RTP stream(s) skipped "
            f"({reasons_in_brief(taken['skipped_streams'])})"
        )
        _tell(capture, message, stacklevel=3)
    views = {info.get("view", "receiver") for info in taken["flows"].values()}
    meta = {
        "format": capture.format,
        "vantage": vantage,
        "view": "mixed" if len(views) > 1 else views.pop() if views else "receiver",
        "clock": "separate",
        "payload": payload_name(payload),
        "flows": taken["flows"],
        "skipped_flows": taken["skipped_flows"],
        "skipped_streams": taken["skipped_streams"],
        "capture_host": taken["capture_host"],
        "records": capture.counts,
        "interfaces": capture.interfaces.to_dict("records"),
        "notes": capture.notes,
        "capture_flows": list_flows(capture, kinds=kinds_read(capture, taken["flows"])),
    }
    if vantage == "receiver" and is_air_capture(capture):
        on_air = received_air_columns(capture, packets)
        packets = packets.assign(**on_air)
        meta["radio"] = radio_note(capture.path, on_air)
        capture.notes.append(meta["radio"])
        shared = shared_counter_note(capture.path, on_air)
        if shared:
            capture.notes.append(shared)
            warnings.warn(shared, CaptureWarning, stacklevel=3)
    if vantage == "receiver":
        packets = _outages_unobserved(capture, packets, meta)
        _capture_drops(capture, meta)
    acks, rtt = taken.get("acks"), taken.get("rtt")
    trace = Trace(
        packets=packets,
        rtt=empty_rtt() if rtt is None else rtt,
        path=capture.path,
        format=capture.format,
        meta=meta,
        acks=empty_acks() if acks is None else acks,
    )
    if skew == "remove" and vantage == "receiver" and meta["view"] != "sender":
        return remove_skew(trace, skew_limit_ppm=skew_limit_ppm, pairs=pairs)
    return trace
