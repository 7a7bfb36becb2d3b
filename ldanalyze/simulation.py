"""Running paper 000's ns-2 scenarios (``ldanalyze/data/paper000.tcl``, §V), open or closed loop.

Every scenario is a dict of the script's ``key=value`` options; its trace is cached by those
options and the script's text, so a suite run twice simulates nothing the second time.
``run_ns2`` and ``script_key`` do the same for any other ns-2 script (the learned LDA's corpus
runs ``traces/wireless/manet.tcl`` with them).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import pathlib
import shutil
import subprocess

from .errors import UsageError
from .output import atomic_write

SCRIPT = pathlib.Path(__file__).parent / "data" / "paper000.tcl"


def decision_log(trace: pathlib.Path) -> pathlib.Path:
    """The decision log written beside a closed-loop trace (``ldanalyze.closedloop``)."""
    return trace.with_name(trace.name.removesuffix(".tr.gz") + ".decisions.csv")


def simulate(scenario: dict, folder: pathlib.Path, ns: str = "ns") -> tuple[pathlib.Path, bool]:
    """The gzipped ns-2 trace of one scenario, simulated unless already there, and whether it was
    simulated now. A scenario with ``lda`` runs closed loop (the patched ns: every TFRC receiver
    steered by that LDA) and also writes its receivers' decision log (:func:`decision_log`); with
    ``wireless_as_received`` 1 as well, those receivers count a loss the LDA calls wireless as
    received in TFRC's receive rate (paper 000 §IV; ``ldanalyze.closedloop``). Every option is
    part of the cache key; that one also names the file (``..._mbiaz-asrcv_KEY``)."""
    s = scenario
    loop = f"_{s['lda']}" if s.get("lda") else ""
    loop += "-asrcv" if loop and int(s.get("wireless_as_received", 0)) else ""
    # a closed-loop run also depends on the patched ns, whose cached path names its patch text
    binary = os.path.realpath(shutil.which(ns) or ns).encode() if loop else b""
    key = script_key(SCRIPT, s, binary)
    name = f"{s['traffic']}_{s['topology']}_n{s['flows']}_{s['loss']}{s['rate']}_s{s['seed']}{loop}_{key}"
    path = folder / f"{name}.tr.gz"
    log = decision_log(path)
    if path.exists() and (not loop or log.exists()):
        return path, False
    if loop:  # the log renamed into place after the trace: a trace without its log is simulated again
        atomic_write(log, lambda partial: run_ns2(SCRIPT, scenario, path, ns, extra=[f"ldalog={partial}"]))
    else:
        run_ns2(SCRIPT, scenario, path, ns)
    return path, True


def script_key(script: pathlib.Path, options: dict, extra: bytes = b"") -> str:
    """A short hash of a script's text and its options: a cached trace's name changes with either."""
    return hashlib.blake2b(
        repr(sorted(options.items())).encode() + script.read_bytes() + extra, digest_size=6
    ).hexdigest()


def run_ns2(
    script: pathlib.Path, options: dict, path: pathlib.Path, ns: str = "ns", extra=(), timeout: float | None = None
) -> None:
    """Run ns-2 on ``script`` with its ``key=value`` ``options`` (and ``extra`` arguments), the
    trace gzipped to ``path`` whole or not at all (a failed or killed run leaves nothing)."""
    raw = path.with_suffix("")  # .tr
    args = [f"{k}={v}" for k, v in options.items()]
    try:
        done = subprocess.run(
            [ns, str(script), *args, *extra, f"out={raw}"], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raw.unlink(missing_ok=True)
        raise UsageError(f"ns-2 ran over {timeout:g} s on {script.name} {options}") from None
    if done.returncode != 0 or not raw.exists():
        raw.unlink(missing_ok=True)
        raise UsageError(f"ns-2 failed on {script.name} {options}: {(done.stdout + done.stderr).strip()[-500:]}")
    try:
        atomic_write(path, lambda partial: _gzip(raw, partial))
    finally:
        raw.unlink(missing_ok=True)


def _gzip(source: pathlib.Path, target: pathlib.Path) -> None:
    with open(source, "rb") as src, gzip.open(target, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def fair_share_bps(scenario: dict) -> float:
    """A flow's share of the bottleneck in bits/s, as ``paper000.tcl`` builds the topology (§V-C):
    WLH: the 150 kb/s wireless last hop alone, else max(N, 2)·130 kb/s shared by N flows; WB: the
    800 kb/s (one flow) or 1600 kb/s wireless backbone shared by N flows. Paper 000 normalises
    throughput by it (§VI-A, "thput")."""
    n = int(scenario["flows"])
    if scenario["topology"] == "wlh":
        shared = 300.0 if n == 1 else max(n, 2) * 130.0
        return 1000.0 * min(150.0, shared / n)
    return 1000.0 * (800.0 if n == 1 else 1600.0) / n
