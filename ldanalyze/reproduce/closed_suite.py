"""Paper 000's suite run closed loop (§I, §IV): each TFRC scenario once per LDA inside ns-2's TFRC
receiver (``ldanalyze.closedloop``: the patched ns-2 and its decision log), scored over the TFRC
flows, beside the open-loop replay over the unaware run; and the open-loop throughput models
measured against what each closed-loop run delivered."""

from __future__ import annotations

import itertools
import pathlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from .. import batch as batching
from .. import closedloop
from ..errors import UsageError
from ..simulation import fair_share_bps, simulate
from .suite import LDAS, SCENARIO_KEYS, Suite

MODEL_NAMES = [name for name, _, _ in closedloop.MODELS]
SPREAD = 0.05  # LDAs' measured throughputs this far apart (share of the bottleneck) make a ranking
RECEIVER_PAGE = "receiver.md"  # the closed loop's Tables II and III with both receivers (tables.receiver_page)


def closed_loop(
    suite: Suite, out: pathlib.Path, folder: pathlib.Path, workers: int, ns: str, wireless_as_received: bool = False
) -> dict:
    """The suite's TFRC scenarios run once per LDA with every TFRC receiver steered by it (paper
    000 §I, §IV, ``ldanalyze.closedloop``); the open-loop numbers are those of the unaware run, which
    is ns-2's own TFRC. ``wireless_as_received``: the receivers also count a loss the LDA calls
    wireless as received in TFRC's receive rate (§IV's reading; ``ldanalyze.closedloop``).
    Writes ``closed_loop.csv`` (one row per scenario, LDA and loop: M_c, M_w,
    accuracy, throughput, congestion, fairness over the TFRC flows, the receiver's
    ``wireless_as_received``) and ``model_vs_truth.csv``
    (:func:`model_vs_truth`); returns the frames, the paths written, the runs and how many were
    simulated now, and how many in-simulator decisions the offline replay matched."""
    base = [s for s in suite.scenarios() if s["traffic"] == "tfrc"]
    receiver = {"wireless_as_received": 1} if wireless_as_received else {}
    runs = [{**s, "lda": lda, **receiver} for s in base for lda in LDAS]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        made = list(pool.map(simulate, runs, itertools.repeat(folder), itertools.repeat(ns)))
        paths = [str(path) for path, _ in made]
        truths = list(
            pool.map(
                closedloop.truth,
                paths,
                runs,
                [fair_share_bps(r) for r in runs],
                [LDAS if r["lda"] == "unaware" else None for r in runs],
            )
        )
    outcomes = batching.execute(
        [batching.Job(name=p, path=p) for p in paths],
        batching.Analysis(ldas=",".join(LDAS), keep="counts"),
        workers=workers,
    )
    failed = [o for o in outcomes if o.error]
    if failed:
        raise UsageError(f"{len(failed)} closed-loop trace(s) could not be scored: {failed[0].error}")
    table = batching.results_table(outcomes)
    flow_rows = table[table["scope"] == "flow"]
    rows = []
    for run, path, measured in zip(runs, paths, truths):
        scenario = {k: run[k] for k in SCENARIO_KEYS}
        scores = closedloop.pooled_scores(flow_rows[flow_rows["trace"] == path], closedloop.tfrc_flows(run))
        scores = scores.set_index("lda")
        own = scores.loc[run["lda"]] if run["lda"] in scores.index else pd.Series(np.nan, ["M_c", "M_w", "accuracy"])
        rows.append(
            {
                **scenario,
                "lda": run["lda"],
                "loop": "closed",
                "wireless_as_received": int(wireless_as_received),
                "M_c": own["M_c"],
                "M_w": own["M_w"],
                "accuracy": own["accuracy"],
                "thput": measured["thput"],
                "congestion_rate": measured["congestion_rate"],
                "fairness_std": measured["fairness_std"],
                "decisions": measured.get("decisions"),
                "decisions_equal": measured.get("decisions_equal"),
                "trace": path,
            }
        )
        if run["lda"] == "unaware":  # ns-2's own TFRC: the trace an open-loop replay is given
            model = measured["model"].set_index("lda")
            for lda in LDAS:
                got = scores.loc[lda] if lda in scores.index else pd.Series(np.nan, ["M_c", "M_w", "accuracy"])
                rows.append(
                    {
                        **scenario,
                        "lda": lda,
                        "loop": "open",
                        "wireless_as_received": int(wireless_as_received),
                        "M_c": got["M_c"],
                        "M_w": got["M_w"],
                        "accuracy": got["accuracy"],
                        "thput": model.loc[lda, "model"],
                        **model.loc[lda, MODEL_NAMES].to_dict(),
                        "congestion_rate": measured["congestion_rate"],
                        "fairness_std": np.nan,
                        "trace": path,
                    }
                )
    frame = pd.DataFrame(rows)
    frame.to_csv(out / "closed_loop.csv", index=False)
    opened, closed = frame[frame["loop"] == "open"], frame[frame["loop"] == "closed"]
    truth_vs_model = model_vs_truth(opened, closed)
    truth_vs_model.to_csv(out / "model_vs_truth.csv", index=False)
    written = {"closed_loop.csv": out / "closed_loop.csv", "model_vs_truth.csv": out / "model_vs_truth.csv"}
    agreed = (int(closed["decisions_equal"].sum()), int(closed["decisions"].sum()))
    return {
        "frame": frame,
        "opened": opened,
        "closed": closed,
        "model": truth_vs_model,
        "written": written,
        "runs": len(runs),
        "simulated": sum(fresh for _, fresh in made),
        "crosscheck": agreed,
    }


def model_vs_truth(opened: pd.DataFrame, closed: pd.DataFrame) -> pd.DataFrame:
    """Per scenario and LDA: the open-loop models of the LDA's TFRC throughput over the unaware
    run's trace (``closedloop.MODELS``; ``model`` is what ``score`` shows) beside the throughput
    the LDA's own closed-loop run measured (``truth``), and each model's error in points."""
    keys = [*SCENARIO_KEYS, "lda"]
    both = opened[[*keys, *MODEL_NAMES]].merge(
        closed[[*keys, "thput", "congestion_rate"]].rename(columns={"thput": "truth"}), on=keys
    )
    for name in MODEL_NAMES:
        both[f"error_{name}"] = (both[name] - both["truth"]) * 100
    return both


def model_errors(both: pd.DataFrame) -> pd.DataFrame:
    """Per model: the median and 90th percentile of |model − truth| (points), and the median over
    scenarios of the Spearman correlation between the model's ranking of the LDAs and the truth's:
    over all scenarios, and over those where the LDAs' measured throughputs differ by more than
    ``SPREAD`` (elsewhere every LDA fills the bottleneck and the ranking is one of ties)."""
    rows = []
    spread = both.groupby(SCENARIO_KEYS)["truth"].agg(lambda t: t.max() - t.min())
    differ = spread[spread > SPREAD].index
    for column, spec, norm in closedloop.MODELS:
        error = (both[column] - both["truth"]).abs() * 100
        rho = both.groupby(SCENARIO_KEYS)[[column, "truth"]].apply(
            lambda g: g[column].corr(g["truth"], method="spearman") if g["truth"].nunique() > 1 else np.nan
        )
        rows.append(
            {
                "model": column,
                "X_recv": "the trace's" if spec.endswith("=trace") else "the model's",
                "normalised by": "packet-pair capacity" if norm == "capacity" else "fair share",
                "median_abs_error": error.median(),
                "p90_abs_error": error.quantile(0.9),
                "spearman_median": rho.median(),
                "scenarios": int(rho.notna().sum()),
                "spearman_differ": rho.reindex(differ).median(),
                "scenarios_differ": len(differ),
            }
        )
    return pd.DataFrame(rows)
