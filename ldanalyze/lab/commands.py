"""Running the lab's commands: one to completion, its output returned or its failure raised with
the command and its error output; a sender that should end by itself, stopped if it does not."""

from __future__ import annotations

import signal
import subprocess

STEP_TIMEOUT_S = 10  # any single setup or query command
START_TIMEOUT_S = 5  # tcpdump until "listening on", iperf3 server until its socket listens


def run(cmd: list[str], *, input: str | None = None, timeout: float = STEP_TIMEOUT_S) -> str:
    """Run a command to completion and return its output; RuntimeError if it fails."""
    try:
        done = subprocess.run(cmd, check=False, input=input, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"`{' '.join(cmd)}` did not finish in {timeout} s") from e
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def finish(proc: subprocess.Popen, seconds: float) -> str:
    """Wait for a sender that should end by itself after ``seconds``; stop it if it does not.

    gst-launch's ``-e`` sometimes waits forever for an end-of-stream that rtpbin's RTCP branch
    never passes on (about one run in five here), after every frame was sent. Ctrl-C, then a
    kill, ends it; the captures, not the sender, are what the tests count. Returns how it ended.
    """
    for signal_, how, grace in (
        (None, "by itself", seconds),
        (signal.SIGINT, "interrupted", 3),
        (signal.SIGKILL, "killed", STEP_TIMEOUT_S),
    ):
        if signal_ is not None:
            proc.send_signal(signal_)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        if signal_ is None and proc.returncode != 0:
            assert proc.stderr is not None  # a sender's error output is piped (Lab.spawn)
            raise RuntimeError(f"the sender failed ({proc.returncode}): {proc.stderr.read().decode().strip()}")
        return how
    raise RuntimeError("the sender could not be stopped")
