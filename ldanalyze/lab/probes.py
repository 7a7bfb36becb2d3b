"""Whether the lab can run here (root, its commands, network namespaces) and whether each kind of
tunnel can be made, and if not, why not: a caller skips or says so rather than fail mid-run."""

from __future__ import annotations

import dataclasses
import gzip
import os
import secrets
import shutil
import subprocess

from .commands import run
from .config import TUNNELS

COMMANDS = ("ip", "ss", "tc", "nft", "sysctl", "iperf3", "tcpdump")


def lab_unavailable() -> str | None:
    """Why the lab cannot run here (not root, a command missing, no namespaces), else None."""
    if os.geteuid() != 0:
        return "the network namespace lab needs root"
    missing = [name for name in COMMANDS if shutil.which(name) is None]
    if missing:
        return f"the network namespace lab needs {', '.join(missing)}"
    probe = f"ldlab-probe-{os.getpid()}-{secrets.token_hex(3)}"
    added = subprocess.run(["ip", "netns", "add", probe], check=False, capture_output=True, text=True)
    if added.returncode != 0:
        return f"`ip netns add` fails: {added.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], check=False, capture_output=True)
    return None


@dataclasses.dataclass(frozen=True)
class TunnelUnavailable:
    """Why a kind of tunnel cannot be made here; ``absent`` when the kernel was built without
    its driver (its option "is not set" in /proc/config.gz), rather than a module missing."""

    reason: str
    absent: bool


def tunnel_unavailable(kind: str) -> TunnelUnavailable | None:
    """Whether ``ip link add ... type {kind}`` works in a namespace (after ``modprobe`` of its
    module where there is one), else why not; the lab must be available (``lab_unavailable``)."""
    tunnel = TUNNELS[kind]
    probe = f"ldlab-probe-{os.getpid()}-{secrets.token_hex(3)}"
    add = ["ip", "-n", probe, "link", "add", "probe", "type", tunnel.link_type]
    add += ["local", "10.0.0.1", "remote", "10.0.0.2", *tunnel.options]
    run(["ip", "netns", "add", probe])
    try:
        failed = subprocess.run(add, check=False, capture_output=True, text=True)
        if failed.returncode != 0 and shutil.which("modprobe"):
            subprocess.run(["modprobe", tunnel.module], check=False, capture_output=True)
            failed = subprocess.run(add, check=False, capture_output=True, text=True)
    finally:
        subprocess.run(["ip", "netns", "delete", probe], check=False, capture_output=True)
    if failed.returncode == 0:
        return None
    said = f"`{' '.join(add[3:])}` fails: {failed.stderr.strip()}"
    options = {name: _kernel_option(name) for name in tunnel.kernel_options}
    unset = [name for name, value in options.items() if value == "is not set"]
    if unset:
        built = f"# {unset[0]} is not set, in /proc/config.gz"
        return TunnelUnavailable(f"{said}; the kernel was built without the {kind} driver ({built})", True)
    found = ", ".join(
        f"{name}={value}" if value else f"{name}: no line in /proc/config.gz" for name, value in options.items()
    )
    return TunnelUnavailable(f"{said} ({found}; module {tunnel.module})", False)


def _kernel_option(name: str) -> str | None:
    """A kernel build option's value in /proc/config.gz ("y", "m", "is not set"), or None when
    the file or the option's line is missing."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            for line in f:
                if line.startswith(f"{name}="):
                    return line.strip().partition("=")[2]
                if line.strip() == f"# {name} is not set":
                    return "is not set"
    except OSError:
        return None
    return None
