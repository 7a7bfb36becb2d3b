"""What the suite measures on its traces beside the batch's scores: paper 000's §III sweeps
(``SWEEPS``) and ZBS's use of its base schemes (Fig. 13)."""

from __future__ import annotations

import pandas as pd

from .suite import HIGH, SPIKE_SPREAD, SWEEPS


def paper_sweeps(traces: list[str]) -> dict[str, pd.DataFrame]:
    """Paper 000's three sweeps (``SWEEPS``) over ``traces``, pooled; each trace read once."""
    from ..io import read_trace
    from ..sweep import sweep

    read = [read_trace(t) for t in traces]
    tables = {}
    for lda, grid in SWEEPS.items():
        table = sweep(read, lda, grid)
        if lda == "spike":  # the paper's alpha - beta ran up to 0.9 (the default is always kept)
            keep = (table["alpha"] - table["beta"] <= SPIKE_SPREAD + 1e-9) | table["default"]
            table = _refront(table[keep].reset_index(drop=True))
        tables[lda] = table
    return tables


def _refront(table: pd.DataFrame) -> pd.DataFrame:
    """The frontier over the points kept, the sweep's attrs (its parameters) kept too."""
    from ..sweep import pareto

    attrs = dict(table.attrs)
    table = table.assign(pareto=pareto(table["M_c"].to_numpy(), table["M_w"].to_numpy()))
    table.attrs.update(attrs)
    return table


def zbs_usage(results: pd.DataFrame) -> pd.DataFrame:
    """Paper 000 Fig. 13: per topology and number of flows (high uniform loss), the share of time
    each of ZBS's base schemes was in force, mean over the flows of every seed's trace."""
    from ..io import read_trace
    from ..lda.zbs import SCHEMES, Zbs
    from ..timeline import build_timeline

    zbs = Zbs()
    chosen = results[(results["loss"] == HIGH[0]) & (results["rate"] == HIGH[1]) & (results["lda"] == "zbs")]
    rows = []
    for trace in chosen.itertuples():
        share = zbs.usage(build_timeline(read_trace(trace.trace)))[list(SCHEMES)].mean()
        rows.append({"topology": trace.topology, "flows": trace.flows, "seed": trace.seed, **share.to_dict()})
    return pd.DataFrame(rows).groupby(["topology", "flows"], sort=True)[list(SCHEMES)].mean().reset_index()
