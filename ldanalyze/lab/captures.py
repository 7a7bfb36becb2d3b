"""tcpdump at the lab's capture points: started (returning once it listens), stopped as Ctrl-C
would (returning what it says the kernel dropped), and a marker datagram through every hop."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from .commands import START_TIMEOUT_S, STEP_TIMEOUT_S, run
from .namespaces import Lab


def mark_capture(lab: Lab, text: str) -> None:
    """One datagram through every hop, before the traffic and after it has drained, so that
    every capture's first and last records show it was running: a chain reader cannot
    otherwise tell a flow's first or last packet dropped upstream of a capture from one that
    passed while the capture was not running (``vantage.py`` calls such a packet unobserved;
    gst's RTCP BYE, sent last, was one). Both go from port 9 to port 9: one flow (in the
    tunnel, when there is one)."""
    family = "AF_INET6" if ":" in lab.receiver_ip else "AF_INET"
    run(
        lab.exec(
            "sender",
            sys.executable,
            "-c",
            f"import socket; s = socket.socket(socket.{family}, "
            f"socket.SOCK_DGRAM); s.bind(('', 9)); s.sendto(b'{text}', ('{lab.receiver_ip}', 9))",
        )
    )
    time.sleep(0.05)


def start_capture(lab: Lab, host: str, dev: str, direction: str, path: Path, snaplen: int) -> subprocess.Popen:
    """Start tcpdump and return once it says it is listening.

    Immediate mode hands every packet to tcpdump at once (libpcap then uses TPACKET_V2 rather
    than V3's block timeout), so nothing is left in the ring when it is stopped; ``-Z root``
    keeps tcpdump from switching to the tcpdump user, who may not write to ``workdir``.
    """
    proc = lab.spawn(
        host,
        "tcpdump",
        "-i",
        dev,
        "-Q",
        direction,
        "-w",
        str(path),
        "-U",
        "-B",
        "8192",
        "-n",
        "-s",
        str(snaplen),
        "--immediate-mode",
        "-Z",
        "root",
    )
    pipe = proc.stderr
    assert pipe is not None  # Lab.spawn pipes it
    stderr = b""
    deadline = time.monotonic() + START_TIMEOUT_S
    with selectors.DefaultSelector() as sel:
        sel.register(pipe, selectors.EVENT_READ)
        while b"listening on" not in stderr:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                raise RuntimeError(f"tcpdump on {host}/{dev} did not start: {stderr.decode()}")
            chunk = os.read(pipe.fileno(), 4096)
            if not chunk:
                proc.wait()
                raise RuntimeError(f"tcpdump on {host}/{dev} exited: {stderr.decode().strip()}")
            stderr += chunk
    return proc


def stop_capture(proc: subprocess.Popen) -> int:
    """Stop tcpdump as Ctrl-C would and return the packets it says the kernel dropped."""
    proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError("tcpdump did not stop on SIGINT") from e
    found = re.search(rb"(\d+) packets? dropped by kernel", stderr)
    if found is None:
        raise RuntimeError(f"tcpdump reported no statistics: {stderr.decode().strip()}")
    return int(found.group(1))
