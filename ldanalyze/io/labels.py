"""Ground-truth labels files: the cause of each lost packet, joined onto any trace.

A labels file is CSV with a header line naming at least ``flow``, ``seq`` and ``cause``
(``congestion``, ``wireless``, ``route`` (routing and mobility), ``policing`` (a rate limiter's drop), or ``unknown``/``lost``), and optionally ``tx`` (which
transmission of the sequence number; without it a label applies to every lost transmission
of that ``(flow, seq)``). Other columns are ignored; lines starting with ``#`` are comments.
``write_labels`` writes one from a trace whose losses have causes (a vantage chain, an ns-2
trace), so that a receiver-only capture of the same flow can be scored against it.

Joining is strict, because a label silently put on the wrong packet is a wrong score: a label
for a packet the trace does not have, or has as delivered, is an error naming the file and line;
two lines that disagree on a packet are too. Only labels beyond the trace's sequence range of
their flow (a receiver capture that started later or stopped earlier than the labels' source)
are left out, with a warning, and counted in ``meta['labels']['outside']``. Lost packets without a label keep their fate
(``lost`` if the trace did not know the cause), with a warning counting them; labels that
change a cause the trace already had are counted in ``meta['labels']``.

Weak labels by construction. An experimenter often knows the cause of most losses without a
per-packet truth: a limiter in the path, a window with the radio switched off, a lab link with
only random loss. A rules file (TOML: its first line that is not a comment opens a table) says
so::

    [[rule]]
    flow = "*:5004/udp"     # fnmatch pattern over flow labels (default "*": every flow)
    start = 30              # seconds since the trace's first arrival (default: its start),
    end = 90                #   or TOML dates with a time zone for a capture's clock
    cause = "congestion"    # congestion, wireless, route, policing or unknown
    why = "tc police 200 kbit/s at the access link"   # optional, kept in meta

A loss of unknown cause takes the cause of the first rule it matches; its time is the receive
time of the flow's last arrival before it (the first after it when none is before), on the
receiver's clock, where a window is visible in a capture. Losses whose cause the trace already
knows keep it. Such causes are **weak**: their packets' ``reason`` is ``weak-label``, every flow
summary counts them (``weak_labels``) and every score computed on them says so. A rule that
matches no loss is warned about (a pattern or window that misses is the likely mistake).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import fnmatch
import io
import os
import re
import warnings

import numpy as np
import pandas as pd

from ..errors import TraceError
from ..packets import CAUSE_WORDS, LOSS_FATES, LOST, WEAK_LABEL, Trace
from .text import iter_lines

REQUIRED = ("flow", "seq", "cause")
RULE_KEYS = ("flow", "start", "end", "cause", "why")


@dataclasses.dataclass(frozen=True)
class Rule:
    """One weak-label rule: losses of the flows matching ``flow`` between ``start`` and ``end``
    (seconds since the trace's first arrival, or absolute epoch seconds when ``absolute``)."""

    flow: str
    start: float
    end: float
    cause: str
    why: str
    absolute: bool
    line: int  # the rule's index in the file (1-based), for messages


@dataclasses.dataclass(frozen=True)
class LabelRules:
    """The rules of a rules file, in order (the first a loss matches gives its cause)."""

    path: str
    rules: tuple[Rule, ...]


def read_label_rules(path: str | os.PathLike) -> LabelRules:
    """The rules of a TOML rules file (module docstring); bad content is a TraceError naming
    the file and the rule."""
    import tomllib

    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            document = tomllib.load(f)
    except OSError as exc:
        raise TraceError(path, f"cannot read the rules file: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TraceError(path, f"not valid TOML: {exc}") from None
    unknown = sorted(set(document) - {"rule"})
    if unknown or not isinstance(document.get("rule"), list) or not document["rule"]:
        raise TraceError(path, "a rules file holds [[rule]] tables only (flow, start, end, cause, why)")
    rules = []
    for k, entry in enumerate(document["rule"], 1):

        def bad(message: str, k=k) -> TraceError:
            return TraceError(path, f"rule {k}: {message}")

        extra = sorted(set(entry) - set(RULE_KEYS))
        if extra:
            raise bad(f"unknown key(s) {', '.join(extra)} (a rule takes {', '.join(RULE_KEYS)})")
        cause = str(entry.get("cause", "")).strip().lower()
        if cause not in CAUSE_WORDS:
            raise bad(f"cause {entry.get('cause')!r}: give congestion, wireless, route, policing or unknown")
        bounds = [entry.get("start"), entry.get("end")]
        absolute = any(isinstance(b, datetime.datetime) for b in bounds)
        values = []
        for name, value, default in (("start", bounds[0], -np.inf), ("end", bounds[1], np.inf)):
            if value is None:
                values.append(default)
            elif isinstance(value, datetime.datetime):
                if value.tzinfo is None:
                    raise bad(f"{name} {value} has no time zone (write e.g. {value.isoformat()}Z)")
                values.append(value.timestamp())
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value):
                if absolute:
                    raise bad("start and end must both be dates or both seconds since the trace's start")
                values.append(float(value))
            else:
                raise bad(f"{name} {value!r}: give seconds since the trace's first arrival, or a date with a time zone")
        if values[0] > values[1]:
            raise bad(f"start {bounds[0]} is after end {bounds[1]}")
        flow = entry.get("flow", "*")
        if not isinstance(flow, str) or not flow:
            raise bad(f'flow {flow!r}: give a pattern over flow labels, e.g. "*/udp" or "1"')
        rules.append(Rule(flow, values[0], values[1], CAUSE_WORDS[cause], str(entry.get("why", "")), absolute, k))
    return LabelRules(path, tuple(rules))


def is_rules_file(path: str | os.PathLike) -> bool:
    """Whether a labels file is a rules file, by its content: its first line that is neither
    blank nor a comment opens a TOML table (``[[rule]]``) or sets a key, where a labels file
    has its CSV header."""
    try:
        for _, text in iter_lines(path):
            stripped = text.strip()
            if stripped and not stripped.startswith("#"):
                return stripped.startswith("[") or re.match(r"[A-Za-z_][\w-]*\s*=", stripped) is not None
    except (OSError, TraceError):
        return False  # the reader says what is wrong with the file
    return False


class LabelWarning(UserWarning):
    """Some losses of a trace have no label."""


def read_labels(path: str | os.PathLike) -> pd.DataFrame:
    """The labels of a file: columns ``flow, seq, tx`` (-1: every transmission), ``cause`` and
    ``line`` (its line in the file)."""
    path = os.fspath(path)
    rows = (
        (number, next(csv.reader([text])))
        for number, text in iter_lines(path)
        if text.strip() and not text.lstrip().startswith("#")
    )
    header_line, header = next(rows, (None, None))
    if header is None:
        raise TraceError(path, "the labels file has no header line (flow,seq,cause)")
    names = [h.strip().lstrip("\ufeff") for h in header]  # a byte-order mark, as spreadsheets write
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise TraceError(
            path,
            f"the header lacks column(s) {', '.join(missing)} (it needs flow, seq, cause; tx is optional)",
            line=header_line,
            text=",".join(header),
        )
    column = {name: names.index(name) for name in (*REQUIRED, "tx") if name in names}
    flows, seqs, txs, causes, lines = [], [], [], [], []
    for number, fields in rows:
        if len(fields) < len(names):
            raise TraceError(
                path, f"{len(fields)} fields where the header has {len(names)}", line=number, text=",".join(fields)
            )
        cause = fields[column["cause"]].strip().lower()
        if cause not in CAUSE_WORDS:
            raise TraceError(
                path,
                f"unknown cause {cause!r} (congestion, wireless, route, policing or unknown)",
                line=number,
                text=",".join(fields),
            )
        flows.append(fields[column["flow"]].strip())
        seqs.append(_integer(fields[column["seq"]], "seq", path, number, fields))
        txs.append(_integer(fields[column["tx"]], "tx", path, number, fields) if "tx" in column else -1)
        causes.append(CAUSE_WORDS[cause])
        lines.append(number)
    labels = pd.DataFrame(
        {
            "flow": flows,
            "seq": np.array(seqs, np.int64),
            "tx": np.array(txs, np.int64),
            "cause": causes,
            "line": np.array(lines, np.int64),
        }
    )
    _check_agreement(labels, path)
    return labels


def _integer(text: str, name: str, path: str, line: int, fields: list[str]) -> int:
    """A non-negative decimal integer that fits int64 (no sign, no underscores)."""
    digits = text.strip()
    if digits.startswith("-") and digits[1:].isdigit():
        raise TraceError(path, f"{name} {digits} is negative", line=line, text=",".join(fields))
    if not (digits.isascii() and digits.isdigit()):
        raise TraceError(path, f"{name} {digits!r} is not an integer", line=line, text=",".join(fields))
    value = int(digits)
    if value >= 2**63:
        raise TraceError(path, f"{name} {digits} is too large (at most 2**63 - 1)", line=line, text=",".join(fields))
    return value


def _check_agreement(labels: pd.DataFrame, path: str) -> None:
    """Two lines naming the same packet must give the same cause."""
    first = labels.drop_duplicates(["flow", "seq", "tx"])
    merged = labels.merge(first, on=["flow", "seq", "tx"], suffixes=("", "_first"))
    clash = merged[merged["cause"] != merged["cause_first"]]
    if not clash.empty:
        row = clash.iloc[0]
        raise TraceError(
            path,
            f"flow {row['flow']} seq {row['seq']}: cause {row['cause']} here but "
            f"{row['cause_first']} on line {row['line_first']}",
            line=int(row["line"]),
        )


def apply_labels(trace: Trace, labels: pd.DataFrame | LabelRules | str | os.PathLike) -> Trace:
    """A copy of ``trace`` whose lost packets take the causes of ``labels``: a labels file or
    the table ``read_labels`` returns, or a rules file (TOML) or the ``LabelRules``
    ``read_label_rules`` returns (weak labels); see the module docstring."""
    if isinstance(labels, LabelRules) or (not isinstance(labels, pd.DataFrame) and is_rules_file(labels)):
        return apply_label_rules(trace, labels if isinstance(labels, LabelRules) else read_label_rules(labels))
    source = "<labels>" if isinstance(labels, pd.DataFrame) else os.fspath(labels)
    table = labels if isinstance(labels, pd.DataFrame) else read_labels(labels)
    packets = trace.packets.copy()
    rows = pd.DataFrame(
        {
            "flow": packets["flow"].astype(str).to_numpy(),
            "seq": packets["seq"].to_numpy(),
            "tx": packets["tx"].to_numpy(),
            "row": np.arange(len(packets)),
            "loss": packets["fate"].isin(LOSS_FATES).to_numpy(),
        }
    )
    any_tx = table[table["tx"] < 0].drop(columns="tx").merge(rows, on=["flow", "seq"], how="left")
    one_tx = table[table["tx"] >= 0].merge(rows, on=["flow", "seq", "tx"], how="left")
    joined = pd.concat([any_tx, one_tx], ignore_index=True)
    joined, outside = _check_targets(joined, trace, source)
    joined = _one_cause_per_packet(joined[joined["loss"].astype(bool)], source)
    target = joined["row"].to_numpy(np.int64)
    before = packets["fate"].to_numpy()[target].astype(str)
    changed = int(((before != LOST) & (before != joined["cause"].to_numpy())).sum())
    packets.loc[target, "fate"] = joined["cause"].to_numpy()
    if "label" not in packets["reason"].cat.categories:
        packets["reason"] = packets["reason"].cat.add_categories(["label"])
    packets.loc[target, "reason"] = "label"
    lost = packets["fate"].isin(LOSS_FATES).to_numpy()
    unlabeled = int(lost.sum() - target.shape[0])
    if unlabeled:
        warnings.warn(
            f"{trace.path}: {unlabeled} lost packet(s) have no label in {source}; they keep their fate",
            LabelWarning,
            stacklevel=2,
        )
    meta = {
        **trace.meta,
        "labels": {
            "path": source,
            "labels": len(table),
            "labeled": int(target.shape[0]),
            "unlabeled": unlabeled,
            "changed": changed,
            "outside": outside,
        },
    }
    return dataclasses.replace(trace, packets=packets, meta=meta)


def _check_targets(joined: pd.DataFrame, trace: Trace, source: str) -> tuple[pd.DataFrame, int]:
    """Every label must name a lost packet of the trace, or one outside the sequence range of
    its flow (the trace began later or ended earlier): those are dropped and counted."""
    absent = joined["row"].isna().to_numpy()
    span = trace.packets.groupby("flow", observed=True)["seq"].agg(["min", "max"])
    low = joined["flow"].map(span["min"]).to_numpy(np.float64)
    high = joined["flow"].map(span["max"]).to_numpy(np.float64)
    seq = joined["seq"].to_numpy(np.float64)
    outside = absent & ((seq < low) | (seq > high))
    inside = absent & ~outside  # includes flows the trace does not have (NaN bounds)
    if inside.any():
        bad = joined[inside].sort_values("line").iloc[0]
        flows = trace.flows
        hint = "" if bad["flow"] in flows else f" (its flows: {', '.join(flows[:5])}{' ...' if len(flows) > 5 else ''})"
        raise TraceError(
            source,
            f"{int(inside.sum())} label(s) name packets {trace.path} does not have; this one: "
            f"flow {bad['flow']} seq {bad['seq']}{hint}",
            line=int(bad["line"]),
        )
    joined = joined[~outside]
    per_line = joined.groupby("line")["loss"].any()
    not_lost = per_line[~per_line.astype(bool)]
    if not not_lost.empty:
        line = int(not_lost.index.min())
        bad = joined[joined["line"] == line].iloc[0]
        raise TraceError(
            source,
            f"{len(not_lost)} label(s) name packets {trace.path} does not have as lost; this "
            f"one: flow {bad['flow']} seq {bad['seq']}",
            line=line,
        )
    if outside.any():
        warnings.warn(
            f"{source}: {int(outside.sum())} label(s) name packets outside the sequence range of their flow "
            f"in {trace.path} (before its first or after its last packet); they are left out",
            LabelWarning,
            stacklevel=3,
        )
    return joined, int(outside.sum())


def _one_cause_per_packet(joined: pd.DataFrame, source: str) -> pd.DataFrame:
    """One label row per packet: a label with ``tx`` and one without may both name a packet,
    and must then agree."""
    joined = joined.sort_values("line", kind="stable")
    first = joined.drop_duplicates("row")
    clash = joined.merge(first[["row", "cause", "line"]], on="row", suffixes=("", "_first"))
    clash = clash[clash["cause"] != clash["cause_first"]]
    if not clash.empty:
        row = clash.iloc[0]
        raise TraceError(
            source,
            f"flow {row['flow']} seq {row['seq']}: cause {row['cause']} here but "
            f"{row['cause_first']} on line {row['line_first']}",
            line=int(row["line"]),
        )
    return first


def apply_label_rules(trace: Trace, rules: LabelRules) -> Trace:
    """A copy of ``trace`` whose losses of unknown cause take the cause of the first rule they
    match, as weak labels (module docstring)."""
    packets = trace.packets.copy()
    fate = packets["fate"].astype(str).to_numpy()
    unknown = fate == LOST
    when = _loss_times(packets)
    flow = packets["flow"].astype(str).to_numpy()
    first = np.nanmin(packets["t_recv"].to_numpy(np.float64)) if packets["t_recv"].notna().any() else 0.0
    cause = np.full(len(packets), "", dtype=object)
    per_rule = []
    for rule in rules.rules:
        names = [name for name in pd.unique(flow) if fnmatch.fnmatchcase(name, rule.flow)]
        t = when if rule.absolute else when - first
        hit = unknown & (cause == "") & np.isin(flow, names) & (t >= rule.start) & (t <= rule.end)
        cause[hit] = rule.cause
        per_rule.append(int(hit.sum()))
        if not hit.any():
            warnings.warn(
                f"{rules.path}: rule {rule.line} (flow {rule.flow!r}, cause {rule.cause}) matches no loss of "
                f"unknown cause in {trace.path}"
                + ("" if names else f" (no flow matches {rule.flow!r}; flows: {', '.join(trace.flows[:5])})"),
                LabelWarning,
                stacklevel=3,
            )
    target = np.flatnonzero(cause != "")
    packets.loc[target, "fate"] = cause[target]
    if WEAK_LABEL not in packets["reason"].cat.categories:
        packets["reason"] = packets["reason"].cat.add_categories([WEAK_LABEL])
    packets.loc[target, "reason"] = WEAK_LABEL
    meta = {
        **trace.meta,
        "labels": {
            "path": rules.path,
            "weak": True,
            "rules": [dataclasses.asdict(r) | {"losses": n} for r, n in zip(rules.rules, per_rule)],
            "labeled": int(len(target)),
            "unlabeled": int(unknown.sum() - len(target)),
            "kept": int((np.isin(fate, LOSS_FATES) & ~unknown).sum()),
        },
    }
    return dataclasses.replace(trace, packets=packets, meta=meta)


def _loss_times(packets: pd.DataFrame) -> np.ndarray:
    """Per packet, its receive time, or for one never received the receive time of its flow's
    last arrival before it in send order (the first after it when none is before)."""
    order = np.lexsort((packets["t_send"].to_numpy(np.float64), packets["flow"].cat.codes.to_numpy()))
    frame = pd.DataFrame(
        {"flow": packets["flow"].cat.codes.to_numpy()[order], "t": packets["t_recv"].to_numpy(np.float64)[order]}
    )
    grouped = frame.groupby("flow", sort=False)["t"]
    filled = grouped.ffill().fillna(grouped.bfill()).to_numpy()
    out = np.empty(len(packets))
    out[order] = filled
    return out


def write_labels(trace: Trace, path: str | os.PathLike | io.TextIOBase) -> int:
    """Write the losses of ``trace`` as a labels file (``flow,seq,tx,cause``); returns the rows."""
    lost = trace.packets[trace.packets["fate"].isin(LOSS_FATES)]
    names = {fate: word for word, fate in CAUSE_WORDS.items() if word != LOST}  # lost: "unknown"
    table = pd.DataFrame(
        {
            "flow": lost["flow"].astype(str),
            "seq": lost["seq"],
            "tx": lost["tx"],
            "cause": lost["fate"].astype(str).map(names),
        }
    )
    table.to_csv(path, index=False)
    return len(table)
