"""One run of the lab: build the namespaces, capture at every point while the traffic runs, read
the kernel's drop counters, and remove everything again."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import MappingProxyType

from .captures import mark_capture, start_capture, stop_capture
from .config import CAPTURE_POINTS, OVERLAY_POINTS, RTP_SENDER_PORT, LabConfig, LabRun, bits_per_second
from .namespaces import Lab
from .traffic import send_chunks, send_iperf3, send_rtp_audio, send_rtp_video, send_webrtc

DRAIN_S = 1.0  # after the traffic: the tbf queue (10 kB) empties at any of the lab's rates


def run_lab(workdir: Path, config: LabConfig | None = None) -> LabRun:
    """Build the lab, send one flow through it (``LabConfig()`` when no ``config`` is given), and
    return the captures and counters.

    The pcap files go to ``workdir`` (sender.pcap, r1.pcap, r2.pcap, receiver.pcap). Raises
    RuntimeError, naming the command and its error output, if any step fails; the namespaces and
    every process started in them are gone when this returns or raises.
    """
    lab = Lab(Path(workdir), LabConfig() if config is None else config)
    try:
        lab.build()
        return _measure(lab)
    finally:
        lab.teardown()


def drain_s(c: LabConfig) -> float:
    """How long the bottleneck's queue takes to empty: DRAIN_S, or more for a tbf queue that
    cross traffic may have left full and that takes longer at its rate."""
    if c.cross is None or c.limiter != "tbf":
        return DRAIN_S
    return max(DRAIN_S, c.tbf_limit_bytes * 8 / bits_per_second(c.tbf_rate) + 0.5)


def _measure(lab: Lab) -> LabRun:
    """Capture at every point while the traffic runs, then read the counters."""
    c = lab.config
    overlay = OVERLAY_POINTS if lab.tunnel is not None else {}
    captures = {name: lab.workdir / f"{name}.pcap" for name in [*CAPTURE_POINTS, *overlay]}
    points = {
        name: (host, dev, "inout" if c.both_ways and name in ("sender", "receiver") else way)
        for name, (host, dev, way) in {**CAPTURE_POINTS, **overlay}.items()
    }
    # the outer packets' captures take the tunnel's header more: the same inner bytes
    underlay = c.snaplen + (lab.tunnel.header if lab.tunnel is not None else 0)
    tcpdumps = {
        name: start_capture(lab, *points[name], captures[name], underlay if name in CAPTURE_POINTS else c.snaplen)
        for name in captures
    }
    mark_capture(lab, "start")
    steps = [threading.Timer(at, lab.set_bottleneck_rate, (rate,)) for at, rate in c.tbf_steps]
    if c.traffic == "rtp-audio":
        report, sender_port = send_rtp_audio(lab, steps), RTP_SENDER_PORT
    elif c.traffic == "rtp-video":
        report, sender_port = send_rtp_video(lab, steps), RTP_SENDER_PORT
    elif c.traffic == "webrtc":
        report, sender_port = send_webrtc(lab, steps), 0  # ICE picks the ports
    elif c.traffic == "chunks":
        report, sender_port = send_chunks(lab, steps), c.port
    else:
        report = send_iperf3(lab, steps)
        sender_port = report["start"]["connected"][0]["local_port"]
    time.sleep(drain_s(c))  # the bottleneck's queue empties
    mark_capture(lab, "end")
    capture_drops = {name: stop_capture(proc) for name, proc in tcpdumps.items()}
    return LabRun(
        captures=MappingProxyType({name: captures[name] for name in CAPTURE_POINTS}),
        wireless_drops=lab.wireless_drops(),
        bottleneck_drops=lab.bottleneck_drops(),
        capture_drops=MappingProxyType(capture_drops),
        iperf3=report,
        limiter=c.limiter,
        sender_ip=lab.sender_ip,
        sender_port=sender_port,
        receiver_ip=lab.receiver_ip,
        port=report["local_port"] if c.traffic == "chunks" else c.port,
        tunnel=c.tunnel,
        cross=c.cross,
        cross_drops=lab.cross_drops(),
        overlay=MappingProxyType({name: captures[name] for name in overlay}),
    )
