"""Ground-truth labels files: the cause of each lost packet, joined onto any trace.

A labels file is CSV with a header line naming at least ``flow``, ``seq`` and ``cause``
(``congestion``, ``wireless``, ``route`` (routing and mobility), or ``unknown``/``lost``), and optionally ``tx`` (which
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
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import warnings

import numpy as np
import pandas as pd

from ..errors import TraceError
from ..packets import CONGESTION, LOSS_FATES, LOST, ROUTE, WIRELESS, Trace
from .text import iter_lines

CAUSE_NAMES = {"congestion": CONGESTION, "wireless": WIRELESS, "route": ROUTE, "unknown": LOST, "lost": LOST}
REQUIRED = ("flow", "seq", "cause")


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
        if cause not in CAUSE_NAMES:
            raise TraceError(
                path,
                f"unknown cause {cause!r} (congestion, wireless, route or unknown)",
                line=number,
                text=",".join(fields),
            )
        flows.append(fields[column["flow"]].strip())
        seqs.append(_integer(fields[column["seq"]], "seq", path, number, fields))
        txs.append(_integer(fields[column["tx"]], "tx", path, number, fields) if "tx" in column else -1)
        causes.append(CAUSE_NAMES[cause])
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


def apply_labels(trace: Trace, labels: pd.DataFrame | str | os.PathLike) -> Trace:
    """A copy of ``trace`` whose lost packets take the causes of ``labels`` (a file or the
    table ``read_labels`` returns); see the module docstring for the rules."""
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


def write_labels(trace: Trace, path: str | os.PathLike | io.TextIOBase) -> int:
    """Write the losses of ``trace`` as a labels file (``flow,seq,tx,cause``); returns the rows."""
    lost = trace.packets[trace.packets["fate"].isin(LOSS_FATES)]
    names = {CONGESTION: "congestion", WIRELESS: "wireless", LOST: "unknown"}
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
