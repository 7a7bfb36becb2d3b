"""One WebRTC peer (aiortc) for the network lab: ``python webrtc_peer.py offer|answer DIR SECONDS``.

The offering peer sends a video track of changing noise (so the encoder has work and the stream
a real bit rate); the answering peer receives and discards it. The peers signal through files in
DIR (``offer.json``, then ``answer.json``), with host ICE candidates only: no server, no network
beyond the lab's namespaces. aiortc sends what a browser does: STUN, DTLS, SRTP with the
abs-send-time and transport-cc header extensions, RTCP, RTX, all on one port.
"""

from __future__ import annotations

import asyncio
import fractions
import json
import pathlib
import sys

import numpy as np
from aiortc import RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
from aiortc.contrib.media import MediaBlackhole
from av import VideoFrame


class Noise(VideoStreamTrack):
    """320×240 frames of fresh noise at 30 frames a second."""

    def __init__(self) -> None:
        super().__init__()
        self.rng = np.random.default_rng(1)

    async def recv(self) -> VideoFrame:
        pts, time_base = await self.next_timestamp()
        frame = VideoFrame.from_ndarray(self.rng.integers(0, 256, (240, 320, 3), dtype=np.uint8), format="rgb24")
        frame.pts, frame.time_base = pts, time_base or fractions.Fraction(1, 90000)
        return frame


async def wait_for(path: pathlib.Path, seconds: float = 20.0) -> dict:
    for _ in range(int(seconds * 20)):
        if path.exists() and path.stat().st_size:
            return json.loads(path.read_text())
        await asyncio.sleep(0.05)
    raise TimeoutError(f"{path} never came")


async def main(role: str, folder: pathlib.Path, seconds: float) -> None:
    pc = RTCPeerConnection()
    if role == "offer":
        pc.addTrack(Noise())
        await pc.setLocalDescription(await pc.createOffer())
        (folder / "offer.json").write_text(json.dumps({"sdp": pc.localDescription.sdp, "type": "offer"}))
        answer = await wait_for(folder / "answer.json")
        await pc.setRemoteDescription(RTCSessionDescription(**answer))
        await asyncio.sleep(seconds)
    else:
        sink = MediaBlackhole()

        @pc.on("track")
        def on_track(track) -> None:
            sink.addTrack(track)

        offer = await wait_for(folder / "offer.json")
        await pc.setRemoteDescription(RTCSessionDescription(**offer))
        await pc.setLocalDescription(await pc.createAnswer())
        (folder / "answer.json").write_text(json.dumps({"sdp": pc.localDescription.sdp, "type": "answer"}))
        await sink.start()
        await asyncio.sleep(seconds + 2)
        await sink.stop()
    await pc.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], pathlib.Path(sys.argv[2]), float(sys.argv[3])))
