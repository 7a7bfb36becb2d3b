"""What a batch runs: its jobs (a trace file, or a chain of captures, with labels and reader
options), found under folders and globs or listed in a manifest, the analysis every job gets,
what each job gave, and the settings file.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import glob
import os
import pathlib
from collections.abc import Sequence
from typing import Any

from ..analysis import Analysed
from ..control import parse_controllers
from ..errors import TraceError, UsageError
from ..io.detect import detect_format
from ..lda import Replay, parse_ldas

# a capture larger than this is read one flow at a time (Analysis): bytes, None (never), or
# "auto": larger than ``whole_read_limit`` says the memory available holds
FLOW_AT_A_TIME_ABOVE = "auto"
# a capture read whole holds up to this many bytes of memory per byte of file at its peak (a
# record's columns, ~290 bytes, over the smallest packets' 76 bytes of pcap; measured:
# benchmarks/capture_memory.py), and may take this share of the memory available (a second
# worker of a batch, the rest of the machine)
WHOLE_READ_BYTES_PER_FILE_BYTE = 4
WHOLE_READ_MEMORY_SHARE = 0.25
# the reader options a capture read one flow at a time takes (``read_capture_flows``'); one that
# picks flows or streams, or names the trace format, has the capture read whole
SPLIT_OPTIONS = frozenset({"payload", "clock_rate", "skew", "skew_limit_ppm", "capture_host", "vantage"})


def too_big_to_read_whole(path: str, limit: int | str | None) -> bool:
    """Whether ``path`` is a pcap or pcapng file larger than ``limit`` bytes (None: no limit;
    ``"auto"``: ``whole_read_limit()``): ``batch`` and ``inspect`` read such a capture one flow
    at a time by themselves, memory bounded by its largest flow. A file that cannot be read is
    not: the reader says why."""
    from ..io.capture.source import capture_format

    if limit is None:
        return False
    try:
        size = os.path.getsize(path)
        return size > (whole_read_limit() if limit == "auto" else int(limit)) and capture_format(path) is not None
    except OSError:
        return False


def whole_read_limit() -> int:
    """The largest capture ``"auto"`` reads whole: one whose peak memory read whole
    (``WHOLE_READ_BYTES_PER_FILE_BYTE``) fits in ``WHOLE_READ_MEMORY_SHARE`` of the memory the
    system has available now (1 GiB where it does not say)."""
    available = available_memory()
    if available is None:
        return 1 << 30
    return int(available * WHOLE_READ_MEMORY_SHARE / WHOLE_READ_BYTES_PER_FILE_BYTE)


def available_memory() -> int | None:
    """Bytes of memory the system can give without swapping (Linux's ``MemAvailable``; else
    the free pages), or None where neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


@dataclasses.dataclass(frozen=True)
class Job:
    """One trace of a batch: a file, or a chain of captures (``vantage``), with a labels file
    to join and the reader's options (sorted ``(name, value)`` pairs)."""

    name: str
    path: str | None = None
    vantage: tuple[str, ...] = ()
    labels: str | None = None
    read_options: tuple[tuple[str, Any], ...] = ()  # the reader's keyword arguments

    @property
    def files(self) -> list[str]:
        from ..io.capture.vantage import parse_vantage

        return ([self.path] if self.path else []) + [parse_vantage(v).path for v in self.vantage]


@dataclasses.dataclass(frozen=True)
class Analysis:
    """What every job of a batch computes (picklable: it travels to the workers). Unknown LDAs
    or controllers, or bad parameters, are refused here, before any trace is read."""

    ldas: str = "all"
    controller: str | None = None
    semantics: Replay = dataclasses.field(default_factory=Replay)
    seq_modulus: int | None = None
    cache_dir: str | None = None
    flow_at_a_time_above: int | str | None = FLOW_AT_A_TIME_ABOVE
    keep: str = "decisions"  # what each job's result keeps: one of KEEP

    def __post_init__(self) -> None:
        parse_ldas(self.ldas)
        if self.controller is not None:
            parse_controllers(self.controller)
        limit = self.flow_at_a_time_above
        if not (limit is None or limit == "auto" or (isinstance(limit, int) and limit >= 0)):
            raise UsageError(f"flow_at_a_time_above must be a byte count, 'auto' or None, not {limit!r}")
        if self.keep not in KEEP:
            raise UsageError(f"keep must be one of {', '.join(KEEP)}, not {self.keep!r}")


# What a job's result keeps (``_kept``): every row of its tables; or what the results table reads,
# the decisions tallied per burst (``scoring.losses.tally``: the burst bootstrap needs them) or per flow,
# LDA, cause and decision (every other score). The command keeps a tally, so that its parent, or
# a Dask client, holds a few rows per flow and LDA instead of one per loss.
KEEP = ("decisions", "bursts", "counts")


@dataclasses.dataclass
class Outcome:
    """What one job gave: its tables (None on error), the error, packets read, seconds taken
    and whether the parsed trace came from the cache."""

    job: Job
    result: Analysed | None
    error: str | None
    packets: int
    seconds: float
    cached: bool


TRACE_NAMES = (".tr", ".pcap", ".pcapng", ".cap")  # and these gzipped: a file named as a trace


def discover(paths: Sequence[str], exclude: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """Every trace under ``paths`` (files, directories walked recursively, globs), in a stable
    order, decided by content; and the files passed over, each with why (excluded, or no
    supported format). A file named as a trace (``TRACE_NAMES``) whose content fits no format
    is kept, to fail as a broken trace when read: a damaged trace must not leave a suite
    unnoticed, which would change its pooled scores."""
    found: list[str] = []
    for given in paths:
        matches = sorted(glob.glob(given, recursive=True)) if glob.has_magic(given) else [given]
        if not matches:
            raise UsageError(f"{given}: no such file, directory or match")
        for match in matches:
            if os.path.isdir(match):
                found += sorted(str(p) for p in pathlib.Path(match).rglob("*") if p.is_file())
            elif os.path.exists(match):
                found.append(match)
            else:
                raise UsageError(f"{match}: no such file or directory")
    traces, passed = [], {}
    for path in dict.fromkeys(found):
        pattern = next(
            (
                pattern
                for pattern in exclude
                if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern)
            ),
            None,
        )
        if pattern is not None:
            passed[path] = f"excluded by {pattern}"
            continue
        try:
            detect_format(path)
        except TraceError:
            if not _named_as_trace(path):
                passed[path] = "empty" if os.path.getsize(path) == 0 else "no known trace format"
                continue
        traces.append(path)
    return traces, passed


def _named_as_trace(path: str) -> bool:
    name = path.lower().removesuffix(".gz")
    return name.endswith(TRACE_NAMES)


MANIFEST_KEYS = ("name", "path", "vantage", "labels", "payload", "field", "flows", "clocks", "skew", "format")


def read_manifest(path: str) -> list[Job]:
    """Jobs from a manifest: TOML (``[[trace]]`` tables) or CSV (a header naming the keys;
    ``vantage`` and ``flows`` separated by ``;``). Keys: ``path`` or ``vantage`` (a chain,
    sender first, ``PCAP[:CAUSE]``), and optionally ``name``, ``labels``, ``payload`` or
    ``field`` (a field spec, as ``--field`` takes it), ``flows``, ``clocks`` (chains), ``skew``,
    ``format``. Relative paths are taken from the manifest's folder."""
    import csv
    import tomllib

    from ..io.capture.fields import FieldSpec

    base = os.path.dirname(os.path.abspath(path))
    try:
        if path.endswith(".toml"):
            with open(path, "rb") as f:
                entries = tomllib.load(f).get("trace", [])
        else:
            with open(path, newline="", encoding="utf-8-sig") as text:
                entries = [
                    {k: v for k, v in row.items() if v not in (None, "")}
                    for row in csv.DictReader(line for line in text if not line.startswith("#"))
                ]
                for entry in entries:
                    for key in ("vantage", "flows"):
                        if key in entry:
                            entry[key] = [part.strip() for part in entry[key].split(";") if part.strip()]
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"--manifest {path}: {exc}") from None
    jobs = []
    for number, entry in enumerate(entries, 1):
        unknown = sorted(set(entry) - set(MANIFEST_KEYS))
        if unknown:
            raise UsageError(
                f"--manifest {path}: entry {number}: unknown key(s) {', '.join(unknown)} "
                f"(known: {', '.join(MANIFEST_KEYS)})"
            )
        if ("path" in entry) == ("vantage" in entry):
            raise UsageError(f"--manifest {path}: entry {number}: give a path or a vantage chain, one of them")

        def local(p: str) -> str:
            return p if os.path.isabs(p) else os.path.join(base, p)

        vantage = tuple(local(v) for v in entry.get("vantage", []))
        options = {k: entry[k] for k in ("payload", "flows", "clocks", "skew", "format") if k in entry}
        if "field" in entry:
            if "payload" in entry:
                raise UsageError(f"--manifest {path}: entry {number}: give either payload or field")
            try:
                options["payload"] = FieldSpec.parse(str(entry["field"]))
            except UsageError as exc:
                raise UsageError(f"--manifest {path}: entry {number}: field: {exc}") from None
        if "flows" in options:
            options["flows"] = list(options["flows"])
        name = entry.get("name") or entry.get("path") or " > ".join(entry["vantage"])
        jobs.append(
            Job(
                name=name,
                path=local(entry["path"]) if "path" in entry else None,
                vantage=vantage,
                labels=local(entry["labels"]) if "labels" in entry else None,
                read_options=tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items())),
            )
        )
    return jobs


def load_config(folder: str = ".") -> tuple[dict, str | None]:
    """The batch settings of ``ldanalyze.toml`` (top level) or of ``pyproject.toml``'s
    ``[tool.ldanalyze]`` in ``folder``, and which file they came from."""
    import tomllib

    for name, section in (("ldanalyze.toml", ()), ("pyproject.toml", ("tool", "ldanalyze"))):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        try:
            with open(path, "rb") as f:
                config = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: {exc}") from None
        for key in section:
            config = config.get(key, {})
        if config:
            return config, path
    return {}, None
