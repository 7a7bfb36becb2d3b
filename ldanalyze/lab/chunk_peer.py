"""A chunked TCP download for the network lab, as a video player fetches its segments:
``python chunk_peer.py serve PORT`` in the sender, ``python chunk_peer.py fetch HOST PORT BYTES
COUNT GAP`` in the receiver.

The client connects, asks for a chunk of BYTES (a line ``BYTES``), reads all of it, waits GAP
seconds and asks for the next, COUNT times, then closes and prints its report (JSON: its port,
the server's congestion control, each chunk's request and completion times). The server answers
each request with that many bytes and ends when the client closes. Both use TCP cubic (Linux's
default elsewhere; these kernels default to BBR), with SACK and timestamps as the namespace has
them (on). The bytes of the stream are its offsets, as little-endian 64-bit words, so that no two
segments carry the same payload (``record.payload_hash`` tells them apart).
"""

from __future__ import annotations

import json
import socket
import sys
import time

import numpy as np

CONGESTION_CONTROL = b"cubic"
CONNECT_S = 5.0


def stream_bytes(start: int, length: int) -> bytes:
    """Bytes ``start`` to ``start + length`` of the stream (``start`` and ``length`` multiples of 8)."""
    return np.arange(start // 8, (start + length) // 8, dtype="<u8").tobytes()


def serve(port: int) -> None:
    with socket.create_server(("", port)) as listener:
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL)
        conn, _ = listener.accept()
    with conn, conn.makefile("rb") as requests:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL)
        sent = 0
        for line in requests:
            length = int(line)
            conn.sendall(stream_bytes(sent, length))
            sent += length


def fetch(host: str, port: int, length: int, count: int, gap: float) -> dict:
    deadline = time.monotonic() + CONNECT_S
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=CONNECT_S)
            break
        except ConnectionRefusedError:  # the server is not listening yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    chunks = []
    with conn:
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL)
        buffer = bytearray(length)
        for k in range(count):
            if k:
                time.sleep(gap)
            asked = time.time()
            conn.sendall(b"%d\n" % length)
            view, got = memoryview(buffer), 0
            while got < length:
                n = conn.recv_into(view[got:])
                if n == 0:
                    raise ConnectionError(f"the server closed the connection in chunk {k} after {got} bytes")
                got += n
            chunks.append({"chunk": k, "asked": asked, "done": time.time(), "bytes": got})
        return {
            "local_port": conn.getsockname()[1],
            "congestion_control": conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode(),
            "chunks": chunks,
        }


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        host, port, length, count, gap = sys.argv[2:7]
        print(json.dumps(fetch(host, int(port), int(length), int(count), float(gap))))
