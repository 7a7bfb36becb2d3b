"""The closed loop: ns-2.35 with LDA-driven TFRC receivers, and the check that it and ldanalyze
decide alike.

Paper 000 (``../shared/papers/000_*.txt``) §II: when a TFRC receiver detects losses it invokes
the LDA; a loss the LDA calls congestion enters TFRC's loss event rate, one it calls wireless
does not. ``ldanalyze/data/ns2/`` holds that receiver (``Agent/TFRCSink/LDA``, a patch to ns-2.35
built by ``ldanalyze/data/ns2/build``). It runs every LDA side by side, lets the one named by
``lda_`` steer TFRC, and logs each lost packet it detects with every LDA's decision.

Both it and ldanalyze's kernels follow ``docs/ldas.md``; replaying the closed-loop run's trace
offline must give the decisions the receiver logged, loss for loss (:func:`agreement`). Any
difference is a bug in one of the two.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import numpy as np
import pandas as pd

from .errors import UsageError

NS2_DIR = pathlib.Path(__file__).parent / "data" / "ns2"
BUILD = NS2_DIR / "build"
# the LDAs the in-simulator receiver runs, in the order of its log's columns
LOG_LDAS = ("unaware", "omniscient", "biaz", "mbiaz", "spike", "wro_ldaplus", "zigzag", "zbs",
            "win_ldaplus", "veno", "xrtp")
LOG_COLUMNS = ("t", "flow", "seq", "n", *LOG_LDAS, "driver", "driven")


def patched_ns(rebuild: bool = False) -> str:
    """The path of ns-2.35 built with the LDA receiver: ``$LDANALYZE_NS`` if set, else built
    once per patch text by ``ldanalyze/data/ns2/build`` (minutes the first time, then cached)."""
    given = os.environ.get("LDANALYZE_NS")
    if given:
        if not os.access(given, os.X_OK):
            raise UsageError(f"LDANALYZE_NS={given!r} is not an executable file")
        return given
    done = subprocess.run(["bash", str(BUILD), *(["--rebuild"] if rebuild else [])],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not os.access(lines[-1], os.X_OK):
        raise UsageError(f"building the patched ns-2 failed ({BUILD}): {done.stderr.strip()[-800:]}")
    return lines[-1]


def read_decision_log(path: str | os.PathLike) -> pd.DataFrame:
    """The receiver's decision log: one row per lost packet it detected (``t`` its detection
    time, ``flow``, ``seq``, ``n`` the size of its gap), one boolean column per LDA (True:
    wireless), the LDA that steered TFRC (``driver``) and its decision (``driven``)."""
    path = pathlib.Path(path)
    try:
        with open(path) as f:
            header = f.readline().rstrip("\n")
    except OSError as e:
        raise UsageError(f"{path}: cannot read the decision log: {e.strerror}") from None
    if tuple(header.split(",")) != LOG_COLUMNS:
        raise UsageError(f"{path}, line 1: not a decision log of the LDA receiver "
                         f"(expected the header {','.join(LOG_COLUMNS)!r})")
    dtypes = {"t": np.float64, "flow": str, "seq": np.int64, "n": np.int64, "driver": str,
              "driven": np.int8, **{name: np.int8 for name in LOG_LDAS}}
    try:
        log = pd.read_csv(path, dtype=dtypes, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as e:
        raise UsageError(f"{path}: a line of the decision log is malformed: {e}") from None
    for name in (*LOG_LDAS, "driven"):
        bad = ~log[name].isin((0, 1))
        if bad.any():
            raise UsageError(f"{path}, line {int(np.flatnonzero(bad)[0]) + 2}: {name} must be 0 or 1")
        log[name] = log[name].astype(bool)
    return log


def agreement(decisions: pd.DataFrame, log: pd.DataFrame, flows=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compare ldanalyze's decisions (``classify(timeline, LOG_LDAS)`` over the closed-loop
    run's trace) with the receiver's log, per LDA and lost packet.

    ``flows``: the flows the receiver ran on (default: those in the log); losses of other flows
    (cross traffic, TCP) are left out. Returns a summary, one row per LDA (``losses`` in either,
    ``both``: detected by both, ``equal``: same decision, ``only_replay``/``only_log``), and the
    differing rows (``lda, flow, seq, replay, log``; ``replay``/``log`` are ``wireless``,
    ``congestion`` or ``missing``).
    """
    flows = sorted(set(log["flow"])) if flows is None else sorted(str(f) for f in flows)
    d = decisions[decisions["decision"].isin(("wireless", "congestion"))]
    d = d[d["flow"].astype(str).isin(flows) & d["lda"].astype(str).isin(LOG_LDAS)]
    replay = pd.DataFrame({"lda": d["lda"].astype(str).to_numpy(), "flow": d["flow"].astype(str).to_numpy(),
                           "seq": d["seq"].to_numpy(np.int64),
                           "replay": np.where(d["decision"].to_numpy() == "wireless", "wireless", "congestion")})
    logged = log[log["flow"].isin(flows)].melt(id_vars=["flow", "seq"], value_vars=list(LOG_LDAS),
                                               var_name="lda", value_name="wireless")
    logged = pd.DataFrame({"lda": logged["lda"].to_numpy(), "flow": logged["flow"].to_numpy(),
                           "seq": logged["seq"].to_numpy(np.int64),
                           "log": np.where(logged["wireless"].to_numpy(), "wireless", "congestion")})
    both = replay.merge(logged, on=["lda", "flow", "seq"], how="outer")
    both[["replay", "log"]] = both[["replay", "log"]].fillna("missing")
    same = both["replay"] == both["log"]
    rows = []
    for name in LOG_LDAS:
        mine = both["lda"] == name
        rows.append({"lda": name, "losses": int(mine.sum()),
                     "both": int((mine & (both["replay"] != "missing") & (both["log"] != "missing")).sum()),
                     "equal": int((mine & same).sum()),
                     "only_replay": int((mine & (both["log"] == "missing")).sum()),
                     "only_log": int((mine & (both["replay"] == "missing")).sum())})
    summary = pd.DataFrame(rows)
    summary["agreement"] = summary["equal"] / summary["losses"].where(summary["losses"] > 0)
    return summary, both[~same].sort_values(["lda", "flow", "seq"]).reset_index(drop=True)
