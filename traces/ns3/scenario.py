"""Build and run the ns-3 scenarios of this folder against Debian's ``libns3-dev`` (ns-3.37).

Each scenario is one C++ program (``wifi.cc``, ``lte.cc``, and ``heldout.cc``, for evaluation
only: see their headers for what they simulate and write). ``build`` compiles it once per source text into the cache folder; ``run`` runs it once
per parameter set and keeps the output folder there too, so a second call with the same
parameters costs nothing (like ``traces/generate`` for ns-2, but on demand).

    python traces/ns3/scenario.py wifi --duration 10 --stations 3 --seed 2
    python traces/ns3/scenario.py wifi --stations 1 --speed 8 --policer 1600kbps   # a policed subscriber
    python traces/ns3/scenario.py wifi --standard n --qos 1 --manager minstrel --cross tcp-down
    python traces/ns3/scenario.py lte --rlc am --scheduler rr

prints the output folder: per receiver (``sta-<i>``, for LTE ``ue-<i>``) a ``.pcap`` (its IP
packets as received, SeqTsHeader payloads: read them with ``--field seq=0:4,time=4:8:ns``) and
a ``.labels.csv`` (the cause of each of its packets that was sent and never received), plus
``sent.csv`` (the ledger of every packet sent) and ``stats.csv``. The cache is ``$LDANALYZE_NS3_CACHE`` or
``~/.cache/ldanalyze/ns3``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
MODULES = {
    "wifi": (
        "wifi",
        "applications",
        "internet",
        "point-to-point",
        "mobility",
        "traffic-control",
        "propagation",
        "network",
        "core",
    ),
    "lte": ("lte", "applications", "internet", "point-to-point", "mobility", "traffic-control", "network", "core"),
}
MODULES["heldout"] = MODULES["wifi"]  # evaluation only (issue #48): never in the training corpus

RECEIVERS = {"wifi": ("stations", "sta"), "lte": ("ues", "ue")}  # the count parameter, the file prefix
RECEIVERS["heldout"] = RECEIVERS["wifi"]
WIFI_DEFAULTS = {
    "duration": 10,
    "stations": 3,
    "spacing": 12,
    "bottleneck": "6Mbps",
    "queue": 20,
    "interval": 0.004,
    "size": 1000,
    "per": 0.0,
    "retries": 1,
    "speed": 3.0,
    "seed": 1,
    "policer": "0",
    "policer_burst": 3000,
    "sniffer": 0.0,
    "qos": 0,
    "standard": "a",
    "manager": "aarf",
    "mac_queue": 0,
    "cross": "none",
}  # policer "0": none, the FIFO bottleneck; mac_queue 0: ns-3's own
LTE_DEFAULTS = {
    "duration": 10,
    "ues": 3,
    "spacing": 60,
    "bottleneck": "2500kbps",
    "queue": 30,
    "buffer": 20000,
    "interval": 0.005,
    "size": 600,
    "speed": 30.0,
    "rlc": "um",
    "scheduler": "pf",
    "seed": 1,
}
HELDOUT_DEFAULTS = {
    "duration": 12,
    "stations": 1,
    "distance": 20.0,
    "spacing": 15.0,
    "speed": 0.0,
    "standard": "n",
    "width": 20,
    "ampdu": 65535,
    "retries": 2,
    "lifetime": 500,
    "doppler": 15.0,
    "bottleneck": "20Mbps",
    "delay": 30,
    "queue": 100,
    "apqueue": 60,
    "tcp": 1,
    "uplink": "0",
    "burst": "0",
    "interval": 0.003,
    "size": 1200,
    "seed": 1,
}  # uplink, burst "0": no competing station, no bursts
DEFAULTS = {"wifi": WIFI_DEFAULTS, "lte": LTE_DEFAULTS, "heldout": HELDOUT_DEFAULTS}


class ScenarioError(RuntimeError):
    """ns-3 is missing, or a scenario failed to build or run (the message holds its output)."""


def cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("LDANALYZE_NS3_CACHE", pathlib.Path.home() / ".cache" / "ldanalyze" / "ns3"))


def unavailable() -> str | None:
    """Why the scenarios cannot be built here, or None."""
    if shutil.which("g++") is None or shutil.which("pkg-config") is None:
        return "g++ and pkg-config are needed to build the ns-3 scenarios"
    if subprocess.run(["pkg-config", "--exists", "ns3-core"], capture_output=True).returncode != 0:
        return "ns-3 is not installed (Debian: apt-get install libns3-dev libgsl-dev)"
    return None


def build(name: str) -> pathlib.Path:
    """The compiled program of scenario ``name``, compiled if its source (or a header of this
    folder) changed."""
    why = unavailable()
    if why:
        raise ScenarioError(why)
    source = HERE / f"{name}.cc"
    libraries = subprocess.run(
        ["pkg-config", "--libs", *(f"ns3-{m}" for m in MODULES[name])], capture_output=True, text=True, check=True
    ).stdout.split()
    command = ["g++", "-std=c++17", "-O1", "-o", "PROGRAM", str(source), *libraries]
    texts = b"".join(path.read_bytes() for path in (source, *sorted(HERE.glob("*.h"))))  # truth.h too
    key = hashlib.blake2b(texts + repr(command).encode(), digest_size=10).hexdigest()
    program = cache_dir() / "bin" / f"{name}-{key}"
    if not program.exists():
        program.parent.mkdir(parents=True, exist_ok=True)
        partial = program.with_suffix(f".{os.getpid()}.tmp")
        done = subprocess.run([partial if c == "PROGRAM" else c for c in command], capture_output=True, text=True)
        if done.returncode != 0:
            raise ScenarioError(f"building {source} failed:\n{done.stderr[-3000:]}")
        os.replace(partial, program)
    return program


def run(name: str, **params) -> pathlib.Path:
    """The output folder of scenario ``name`` under ``params`` (the defaults for the rest)."""
    unknown = set(params) - set(DEFAULTS[name])
    if unknown:
        raise ScenarioError(f"{name} takes no parameter {sorted(unknown)[0]!r} (it takes {sorted(DEFAULTS[name])})")
    program = build(name)
    values = {**DEFAULTS[name], **params}
    key = hashlib.blake2b(repr((program.name, sorted(values.items()))).encode(), digest_size=10).hexdigest()
    out = cache_dir() / "runs" / f"{name}-{key}"
    if not (out / "stats.csv").exists():  # written last: a folder without it is an interrupted run
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        done = subprocess.run(
            [str(program), *(f"--{k}={v}" for k, v in values.items()), f"--out={out}"], capture_output=True, text=True
        )
        if done.returncode != 0 or not (out / "stats.csv").exists():
            shutil.rmtree(out, ignore_errors=True)
            raise ScenarioError(f"{name} {values} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", choices=sorted(DEFAULTS))
    options, rest = parser.parse_known_args()
    sub = argparse.ArgumentParser(prog=f"scenario.py {options.scenario}")
    for key, default in DEFAULTS[options.scenario].items():
        sub.add_argument(f"--{key}", type=type(default), default=default)
    try:
        print(run(options.scenario, **vars(sub.parse_args(rest))))
    except ScenarioError as e:
        sys.exit(f"scenario.py: {e}")


if __name__ == "__main__":
    main()
