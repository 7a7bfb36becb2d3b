"""The traffic of a run, from the sender's namespace to the receiver's: iperf3 (UDP or TCP),
GStreamer's RTP audio and video, or a pair of aiortc WebRTC peers (``webrtc_peer.py``). Each
sender starts the bottleneck's rate steps as it starts, cancels them when it ends, and returns
its report."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

from .commands import START_TIMEOUT_S, STEP_TIMEOUT_S, finish, run
from .config import RECEIVER_IP, RTP_SENDER_PORT, SENDER_IP
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
    wait_listening(lab, server)
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


def wait_listening(lab: Lab, server: subprocess.Popen) -> None:
    """Wait until the iperf3 server's control socket listens (``-J`` prints nothing until then)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not run(lab.exec("receiver", "ss", "-H", "-l", "-t", "-n", f"sport = :{lab.config.port}")):
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
