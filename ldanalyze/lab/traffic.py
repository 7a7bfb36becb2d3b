"""The traffic of a run, from the sender's namespace to the receiver's: iperf3 (UDP or TCP),
GStreamer's RTP audio and video, a pair of aiortc WebRTC peers (``webrtc_peer.py``), or a
chunked TCP download (``chunk_peer.py``) with cross traffic from r1 beside it. Each sender
starts the bottleneck's rate steps as it starts, cancels them when it ends, and returns its
report."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from .commands import START_TIMEOUT_S, STEP_TIMEOUT_S, finish, run
from .config import CHUNK_PEER, CROSS_PORT_OFFSET, RECEIVER_IP, RTP_SENDER_PORT, SENDER_IP, bits_per_second
from .namespaces import Lab


@contextlib.contextmanager
def stepping(steps):
    """The bottleneck's rate steps (``threading.Timer``) run while the sender in the block does,
    and are cancelled when it ends, however it ends."""
    for step in steps:
        step.start()
    try:
        yield
    finally:
        for step in steps:
            step.cancel()


def send_iperf3(lab: Lab, steps) -> dict:
    """iperf3's client in the sender against a one-test server in the receiver: UDP datagrams of
    ``length`` bytes, or one TCP transfer, at ``rate``; returns the client's ``-J`` report."""
    c = lab.config
    server = lab.spawn("receiver", "iperf3", "-s", "-1", "-J", "-p", str(c.port))
    wait_listening(lab, server, c.port)
    with stepping(steps):
        udp = ["-u", "-l", str(c.length)] if c.traffic == "iperf3" else []
        client = run(
            lab.exec(
                "sender",
                "iperf3",
                "-c",
                lab.receiver_ip,
                "-p",
                str(c.port),
                *udp,
                "-b",
                c.rate,
                "-t",
                str(c.duration_s),
                "-J",
            ),
            timeout=c.duration_s + 30,
        )
    try:
        server.communicate(timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError("the iperf3 server did not exit after the test") from e
    report = json.loads(client)
    if "error" in report:
        raise RuntimeError(f"iperf3 client: {report['error']}")
    return report


def send_chunks(lab: Lab, steps) -> dict:
    """The chunked download (``chunk_peer.py``): the server in the sender, the client in the
    receiver; returns the client's report, with the cross traffic's iperf3 report (``cross``)
    when there is some. The peers and the cross traffic set TCP cubic per socket (root may: a
    namespace may not make it its default when the host's allowed list lacks it). The client is
    given ten times the chunks' time at the limiter's rate, and more: a policer with a bucket of
    a few packets leaves TCP a small share of its rate (measured: 3 Mbit/s, 8 kB, cross traffic
    at 30 %: more than 50 s for three chunks of 2 s each)."""
    c = lab.config
    peer = str(Path(__file__).parent / CHUNK_PEER)
    lab.spawn("sender", sys.executable, peer, "serve", str(c.port))
    cross = start_cross(lab) if c.cross is not None else None
    bits = c.chunk_count * c.chunk_bytes * 8
    seconds = c.chunk_count * c.chunk_gap_s + (10 * bits / bits_per_second(c.tbf_rate) if c.limiter != "none" else 10)
    with stepping(steps):
        fetch = [peer, "fetch", lab.sender_ip, str(c.port), str(c.chunk_bytes), str(c.chunk_count), str(c.chunk_gap_s)]
        report = json.loads(run(lab.exec("receiver", sys.executable, *fetch), timeout=seconds + 30))
    if cross is not None:
        report["cross"] = stop_cross(cross)
    return report


def start_cross(lab: Lab) -> subprocess.Popen:
    """The cross traffic: an iperf3 client in r1 (TCP cubic, or UDP at ``cross_rate``) against a
    one-test server in the receiver, running until ``stop_cross``."""
    c = lab.config
    port = c.port + CROSS_PORT_OFFSET
    server = lab.spawn("receiver", "iperf3", "-s", "-1", "-p", str(port))
    wait_listening(lab, server, port)
    kind = ["-u", "-b", c.cross_rate, "-l", "1400"] if c.cross == "udp" else ["-C", "cubic"]
    return lab.spawn("r1", "iperf3", "-c", lab.receiver_ip, "-p", str(port), *kind, "-t", "3600", "-J")


def stop_cross(client: subprocess.Popen) -> dict:
    """Stop the cross traffic's client as Ctrl-C would; its ``-J`` report, or why there is none."""
    client.send_signal(signal.SIGINT)
    try:
        out, err = client.communicate(timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        client.kill()
        return {"error": "the cross traffic's iperf3 client did not stop on SIGINT"}
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return {"error": f"no report from the cross traffic's iperf3 client: {err.decode().strip()}"}


def send_rtp_audio(lab: Lab, steps) -> dict:
    """A real RTP stack: GStreamer's rtpbin sends 20 ms G.711 frames (RTP to ``port``, RTCP
    sender reports to ``port + 1``, from fixed ports) to sinks in the receiver namespace."""
    c = lab.config
    for port in (c.port, c.port + 1):
        lab.spawn("receiver", "gst-launch-1.0", "-q", "udpsrc", f"port={port}", "!", "fakesink")
    time.sleep(0.3)
    frames = c.duration_s * 50
    pipeline = [
        "rtpbin",
        "name=rb",
        "audiotestsrc",
        "is-live=true",
        f"num-buffers={frames}",
        "samplesperbuffer=160",
        "!",
        "audio/x-raw,rate=8000,channels=1",
        "!",
        "alawenc",
        "!",
        "rtppcmapay",
        "!",
        *rtpbin_to_receiver(c.port),
    ]
    with stepping(steps):
        ended = finish(lab.spawn("sender", "gst-launch-1.0", "-q", "-e", *pipeline), c.duration_s + 5)
    return {"frames": frames, "sender_ended": ended}


def send_rtp_video(lab: Lab, steps) -> dict:
    """A real video stack: GStreamer's rtpbin sends VP8 (25 frames/s, each over several
    packets of at most 600 bytes, PT 96) with ULPFEC (RFC 5109, PT 122, in the media stream)
    and RFC 4588 retransmission (PT 97, its own SSRC) of what the receiver's rtpbin asks for
    in RTCP NACKs (AVPF); RTCP goes to ``port + 1`` and comes back to the sender's
    ``RTP_SENDER_PORT + 2``."""
    c = lab.config
    back = RTP_SENDER_PORT + 2
    receiver = [
        "rtpbin",
        "name=rb",
        "rtp-profile=avpf",
        "do-retransmission=true",
        "latency=200",
        "udpsrc",
        f"port={c.port}",
        "caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96",
        "!",
        "rb.recv_rtp_sink_0",
        "udpsrc",
        f"port={c.port + 1}",
        "!",
        "rb.recv_rtcp_sink_0",
        "rb.send_rtcp_src_0",
        "!",
        "udpsink",
        f"host={SENDER_IP}",
        f"port={back}",
        "sync=false",
        "async=false",
        "rb.",
        "!",
        "rtpvp8depay",
        "!",
        "fakesink",
    ]
    lab.spawn("receiver", "gst-launch-1.0", "-q", *receiver)
    time.sleep(0.5)
    frames = c.duration_s * 25
    sender = [
        "rtpbin",
        "name=rb",
        "rtp-profile=avpf",
        "videotestsrc",
        "is-live=true",
        f"num-buffers={frames}",
        "pattern=smpte",
        "horizontal-speed=4",
        "!",
        "video/x-raw,width=320,height=240,framerate=25/1",
        "!",
        "vp8enc",
        "deadline=1",
        "target-bitrate=800000",
        "keyframe-max-dist=50",
        "!",
        "rtpvp8pay",
        "mtu=600",
        "pt=96",
        "!",
        "rtpulpfecenc",
        "pt=122",
        "percentage=20",
        "!",
        "rtprtxsend",
        "payload-type-map=application/x-rtp-pt-map,96=(uint)97",
        "max-size-packets=1000",
        "!",
        *rtpbin_to_receiver(c.port),
        "udpsrc",
        f"port={back}",
        "!",
        "rb.recv_rtcp_sink_0",
    ]
    with stepping(steps):  # its RTCP source (udpsrc) never ends, so neither does the pipeline: stopped once sent
        ended = finish(lab.spawn("sender", "gst-launch-1.0", "-q", "-e", *sender), c.duration_s + 1.5)
    return {"frames": frames, "sender_ended": ended}


def send_webrtc(lab: Lab, steps) -> dict:
    """Two aiortc peers, signalling through files in the work folder."""
    c = lab.config
    peer = str(Path(__file__).parent / "webrtc_peer.py")
    signals = lab.workdir / "signals"
    signals.mkdir(exist_ok=True)
    receiver = lab.spawn("receiver", sys.executable, peer, "answer", str(signals), str(c.duration_s))
    with stepping(steps):
        run(
            lab.exec("sender", sys.executable, peer, "offer", str(signals), str(c.duration_s)),
            timeout=c.duration_s + 40,
        )
        receiver.communicate(timeout=STEP_TIMEOUT_S)
    return {"webrtc": True}


def wait_listening(lab: Lab, server: subprocess.Popen, port: int) -> None:
    """Wait until the iperf3 server's control socket listens on ``port`` (``-J`` prints nothing
    until then)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not run(lab.exec("receiver", "ss", "-H", "-l", "-t", "-n", f"sport = :{port}")):
        if server.poll() is not None:
            raise RuntimeError(f"iperf3 server exited: {server.communicate()[0].decode().strip()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"iperf3 server did not listen within {START_TIMEOUT_S} s")
        time.sleep(0.05)


def rtpbin_to_receiver(port: int) -> list[str]:
    """The end of a GStreamer sender pipeline: rtpbin ``rb``'s RTP to the receiver's ``port`` and
    its RTCP to the next one, from the lab's fixed sender ports."""
    return [
        "rb.send_rtp_sink_0",
        "rb.send_rtp_src_0",
        "!",
        "udpsink",
        f"host={RECEIVER_IP}",
        f"port={port}",
        f"bind-port={RTP_SENDER_PORT}",
        "rb.send_rtcp_src_0",
        "!",
        "udpsink",
        f"host={RECEIVER_IP}",
        f"port={port + 1}",
        f"bind-port={RTP_SENDER_PORT + 1}",
        "sync=false",
        "async=false",
    ]
