"""``ldanalyze reproduce paper000``: paper 000's evaluation, from the real ns-2, in one command.

Paper 000 (``../shared/papers/000_*.txt``) §V builds two topologies, Wireless Last Hop (WLH) and
Wireless Backbone (WB), with 1 to 16 TFRC flows under low, medium and high wireless loss
(1 %, 3.1 %, 7.8 %), and §VI reports Tables II and III (one flow) and Figs. 8, 9, 11-13
(metrics against the number of flows). ``reproduce`` simulates that suite with ns-2.35 and the
package's own scenario script (``ldanalyze/data/paper000.tcl``), in parallel and cached by
scenario, for each traffic of the suite (TFRC as in the paper; TCP; constant-rate UDP, the only
one whose timing does not depend on the losses judged), scores every LDA on each trace,
replays TFRC fed by each LDA's decisions, and writes (per traffic, files of TCP and constant-rate
traffic suffixed ``_tcp`` and ``_cbr``):

* ``results.csv``: one row per trace and LDA (scenario parameters, M_c, M_w, accuracy, modeled
  throughput as a share of the bottleneck);
* ``table_II_wlh.md`` and ``table_III_wb.md``: one flow, high uniform loss, mean over seeds;
* ``figure_wlh.png`` and ``figure_wb.png``: modeled throughput, M_c and M_w against the number
  of flows, one line per LDA (ZBS, Figs. 11-12, with the base schemes of Figs. 8-9), the band
  spanning the seeds;
* ``figure_13_zbs.png`` and ``zbs_usage.csv``: the share of time each base scheme was in force
  in ZBS, per topology and number of flows (high uniform loss, mean over flows and seeds);
* ``table_VI_wlh.md``: 128 TFRC flows in WLH, high uniform loss, beside the paper's Table VI;
* ``sweep_{mbiaz,spike,zigzag}_{wlh,wb}.csv`` and ``figure_sweeps_{wlh,wb}.png``: the §III
  parameter sweeps over the TFRC traces at high loss, with the frontier and the defaults;
* ``checks.csv`` and ``README.md``: every ordering and trend the paper states that the suite
  can test, computed from these numbers, whether it holds here, and how each number was made.

The replay is open loop: each trace was recorded with ns-2's own (unaware) TFRC senders, and
each LDA's throughput is what TFRC would have allowed given that LDA's decisions on the same
arrivals (``docs/controllers.md``). The paper ran each LDA in closed loop, so its congestion
rates differ per scheme; here the congestion comes from the trace and is reported once.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import pathlib
import shutil
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from . import batch as batching
from .closedloop import MODELS
from .errors import UsageError
from .simulation import simulate

LDAS = ("unaware", "omniscient", "biaz", "mbiaz", "spike", "zigzag", "zbs")
BASE = ("biaz", "mbiaz", "spike", "zigzag")  # the base schemes ZBS picks among (§VI-D)
HIGH = ("uniform", 0.078)
# constant-rate UDP at 110 % of each flow's bottleneck share: its timing does not depend on the
# losses being judged (no feedback), and its queue stays busy, as a closed-loop sender's would
CBR_SHARE = 1.1
TRAFFIC_NAMES = {"tfrc": "TFRC (the paper's)", "tcp": "TCP NewReno", "cbr": f"constant-rate UDP at {CBR_SHARE:.0%}"}


@dataclasses.dataclass(frozen=True)
class Suite:
    """The scenarios of one run: every combination of topology, flows, loss and seed."""

    topologies: tuple[str, ...]
    flows: tuple[int, ...]
    losses: tuple[tuple[str, float], ...]  # (model, rate)
    seeds: tuple[int, ...]
    duration: int  # simulated seconds after the warm-up
    warmup: int
    traffics: tuple[str, ...] = ("tfrc",)  # tfrc (the paper's), tcp, cbr (constant rate at CBR_SHARE)
    scale: int = 128  # flows of the Table VI run (WLH, TFRC, high uniform loss, the first seed)

    def scale_scenario(self) -> dict:
        return {
            "traffic": "tfrc",
            "topology": "wlh",
            "flows": self.scale,
            "loss": HIGH[0],
            "rate": HIGH[1],
            "seed": self.seeds[0],
            "duration": self.duration,
            "warmup": self.warmup,
        }

    def scenarios(self) -> list[dict]:
        return [
            {
                "traffic": traffic,
                **({"cbr_share": CBR_SHARE} if traffic == "cbr" else {}),
                "topology": t,
                "flows": n,
                "loss": model,
                "rate": rate,
                "seed": seed,
                "duration": self.duration,
                "warmup": self.warmup,
            }
            for traffic, t, n, (model, rate), seed in itertools.product(
                self.traffics, self.topologies, self.flows, self.losses, self.seeds
            )
        ]


# paper 000's sweeps (§III-A, B, C): mBiaz's upper window limit over (n + 1.1 ... 1.8) T_min; Spike's
# beta over [0.05, 0.5] with alpha - beta over [0, 0.9] (alpha < 1: at 1 every loss is wireless);
# ZigZag's alpha = 2^N, N = -8 ... -2
SWEEPS = {
    "mbiaz": {"upper": [round(1.1 + 0.05 * k, 2) for k in range(15)]},
    "spike": {"alpha": [round(0.05 * k, 2) for k in range(1, 20)], "beta": [round(0.05 * k, 2) for k in range(1, 11)]},
    "zigzag": {"alpha": [2.0**n for n in range(-8, -1)]},
}
SPIKE_SPREAD = 0.9  # the largest alpha - beta swept
# Table VI of paper 000 (§IX-B): 128 flows in WLH, in %
PAPER_TABLE_VI = {
    "thput": (99, 99, 99, 99, 99, 99),
    "cong.": (5.3, 8.5, 3.3, 1.9, 0.7, 4.2),
    "M_c": (0, 32, 4.4, 29, 11, 14),
    "M_w": (0, 17, 23, 64, 68, 25),
}
TABLE_VI_LDAS = ("omniscient", "biaz", "mbiaz", "spike", "zigzag", "zbs")

SUITES = {
    "quick": Suite(("wlh", "wb"), (1, 2, 4), (HIGH,), (1,), 60, 5, ("tfrc", "cbr")),
    "full": Suite(
        ("wlh", "wb"),
        (1, 2, 4, 6, 8, 10, 12, 16),
        (("uniform", 0.01), ("uniform", 0.031), HIGH, ("bursty", 0.078)),
        (1, 2, 3),
        200,
        20,
        ("tfrc", "tcp", "cbr"),
    ),
}


def reproduce(
    out: str | os.PathLike, *, quick: bool = False, jobs: int | None = None, ns: str = "ns", closed: str | None = None
) -> dict:
    """Run the suite (``SUITES['quick']`` or ``['full']``) and write the outputs into ``out``
    (module docstring); returns the paths written and the run time. ``closed``: the patched ns
    (``closedloop.patched_ns()``) to also run the suite's TFRC scenarios closed loop
    (:func:`closed_loop`)."""
    if shutil.which(ns) is None:
        raise UsageError(f"reproduce needs the ns-2 simulator ({ns!r} is not on PATH; Debian: apt-get install ns2)")
    start = time.perf_counter()
    out = pathlib.Path(out)
    folder = out / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    suite = SUITES["quick" if quick else "full"]
    scenarios = suite.scenarios()
    workers = jobs or os.cpu_count() or 1
    # the 128-flow run first: the longest, it would otherwise finish last, alone
    everything = [suite.scale_scenario(), *scenarios]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        made = list(pool.map(simulate, everything, itertools.repeat(folder), itertools.repeat(ns)))
    paths = [path for path, _ in made]
    simulated = (time.perf_counter() - start, sum(fresh for _, fresh in made))
    batch_jobs = [batching.Job(name=str(p), path=str(p)) for p in paths]
    outcomes = batching.execute(batch_jobs, batching.Analysis(ldas=",".join(LDAS), controller="tfrc"), workers=workers)
    failed = [o for o in outcomes if o.error]
    if failed:
        raise UsageError(f"{len(failed)} trace(s) of the suite could not be scored: {failed[0].error}")
    scaled = _results(outcomes, everything[:1], paths[:1])
    results = _results(outcomes, scenarios, paths[1:])
    results.to_csv(out / "results.csv", index=False)
    written = {"results": out / "results.csv"}
    checks = []
    for traffic in suite.traffics:
        mine = results[results["traffic"] == traffic]
        suffix = "" if traffic == "tfrc" else f"_{traffic}"
        for topology, table in (("wlh", "table_II_wlh"), ("wb", "table_III_wb")):
            (out / f"{table}{suffix}.md").write_text(_table(mine, topology, traffic))
            figure = out / f"figure_{topology}{suffix}.png"
            _save(_figure(mine, topology, traffic), figure)
            written.update({f"{table}{suffix}.md": out / f"{table}{suffix}.md", figure.name: figure})
        usage = zbs_usage(mine)
        usage.to_csv(out / f"zbs_usage{suffix}.csv", index=False)
        _save(_usage_figure(usage, traffic), out / f"figure_13_zbs{suffix}.png")
        written.update(
            {
                f"zbs_usage{suffix}": out / f"zbs_usage{suffix}.csv",
                f"figure_13_zbs{suffix}.png": out / f"figure_13_zbs{suffix}.png",
            }
        )
        checks.append(paper_checks(mine, usage).assign(traffic=traffic))
    tfrc = results[results["traffic"] == "tfrc"]
    scaled.to_csv(out / "table_VI_results.csv", index=False)
    (out / "table_VI_wlh.md").write_text(_table_vi(scaled, suite.scale))
    sweeps = {}
    for topology in ("wlh", "wb"):
        mine = tfrc[(tfrc["topology"] == topology) & (tfrc["loss"] == HIGH[0]) & (tfrc["rate"] == HIGH[1])]
        for lda, table in paper_sweeps(sorted(mine["trace"].unique())).items():
            sweeps[(lda, topology)] = table
            table.to_csv(out / f"sweep_{lda}_{topology}.csv", index=False)
        _save(_sweep_figure(sweeps, topology), out / f"figure_sweeps_{topology}.png")
        written[f"figure_sweeps_{topology}.png"] = out / f"figure_sweeps_{topology}.png"
    checks.append(scale_checks(scaled, tfrc, suite.scale).assign(traffic="tfrc"))
    checks.append(sweep_checks(sweeps).assign(traffic="tfrc"))
    written.update({"table_VI_wlh.md": out / "table_VI_wlh.md"})
    checks = pd.concat(checks, ignore_index=True)
    checks.to_csv(out / "checks.csv", index=False)
    loop = closed_loop(suite, out, folder, workers, closed) if closed else None
    if loop:
        written.update(loop["written"])
    seconds = time.perf_counter() - start
    readme = _readme(suite, "quick" if quick else "full", results, checks, seconds, simulated, workers)
    (out / "README.md").write_text(readme + (_readme_closed(loop) if loop else ""))
    written.update(checks=out / "checks.csv", readme=out / "README.md")
    return {
        "written": written,
        "seconds": seconds,
        "traces": len(paths) + (loop["runs"] if loop else 0),
        "simulated": simulated[1] + (loop["simulated"] if loop else 0),
        "closed": loop,
    }


def _save(fig, path: pathlib.Path) -> None:
    """Write a figure and let it go (a full run draws dozens)."""
    from .report.plots import pyplot

    fig.savefig(path, dpi=90)
    pyplot().close(fig)


def _results(outcomes, scenarios: list[dict], paths: list[pathlib.Path]) -> pd.DataFrame:
    table = batching.results_table(outcomes)
    table = table[table["scope"] == "trace"]
    by_path = pd.DataFrame(scenarios).assign(trace=[str(p) for p in paths])
    columns = [
        "trace",
        "lda",
        "M_c",
        "M_w",
        "accuracy",
        "congestion",
        "wireless",
        "congestion_rate",
        "wireless_rate",
        "thput",
    ]
    return by_path.merge(table[columns], on="trace").drop(columns=["duration", "warmup"])


def _mean(results: pd.DataFrame, topology: str, loss=HIGH) -> pd.DataFrame:
    """Mean and spread over seeds, per number of flows and LDA, for one topology and loss."""
    mine = results[(results["topology"] == topology) & (results["loss"] == loss[0]) & (results["rate"] == loss[1])]
    return mine.groupby(["flows", "lda"], sort=True)[["M_c", "M_w", "accuracy", "thput", "congestion_rate"]].agg(
        ["mean", "min", "max"]
    )


def _table(results: pd.DataFrame, topology: str, traffic: str = "tfrc") -> str:
    """Paper 000 Table II/III: one flow, high loss, in %: modeled throughput, M_c, M_w per LDA."""
    stats = _mean(results, topology).xs(1, level="flows")
    name = {"wlh": "II, wireless last hop", "wb": "III, wireless backbone"}[topology]
    cong = stats[("congestion_rate", "mean")].iloc[0] * 100
    lines = [
        f"Table {name}: 1 flow of {TRAFFIC_NAMES[traffic]}, high uniform wireless loss (7.8 %), mean over "
        "seeds, in %. Throughput is TFRC's modeled rate fed by each LDA (open loop) as a share of the "
        f"bottleneck; the trace's congestion loss rate (its own sender's) is {cong:.2f} %.",
        "",
        "| | " + " | ".join(LDAS) + " |",
        "|---|" + "---:|" * len(LDAS),
    ]
    for metric, label in (("thput", "thput"), ("M_c", "M_c"), ("M_w", "M_w")):
        cells = [stats.loc[lda, (metric, "mean")] * 100 if lda in stats.index else np.nan for lda in LDAS]
        lines.append(f"| {label} | " + " | ".join("-" if not np.isfinite(c) else f"{c:.1f}" for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _table_vi(scaled: pd.DataFrame, flows: int) -> str:
    """Paper 000 Table VI: WLH, ``flows`` TFRC flows, high loss; ours beside the paper's, in %."""
    stats = scaled.set_index("lda")
    cong = float(scaled["congestion_rate"].iloc[0]) * 100
    lines = [
        f"Table VI, wireless last hop: {flows} flows of TFRC (the paper's), high uniform wireless loss "
        f"(7.8 %), one seed, in %. Ours, then the paper's. Throughput is TFRC's modeled rate fed by each "
        f"LDA (open loop) as a share of the bottleneck; cong. is the trace's congestion loss rate "
        f"({cong:.2f} %, its own senders'), the same for every scheme here, where the paper's closed loop "
        "gave each scheme its own.",
        "",
        "| | " + " | ".join(TABLE_VI_LDAS) + " |",
        "|---|" + "---:|" * len(TABLE_VI_LDAS),
    ]
    for metric in ("thput", "cong.", "M_c", "M_w"):
        column = "congestion_rate" if metric == "cong." else metric
        cells = [stats.loc[lda, column] * 100 if lda in stats.index else np.nan for lda in TABLE_VI_LDAS]
        lines.append(f"| {metric} | " + " | ".join("-" if not np.isfinite(c) else f"{c:.1f}" for c in cells) + " |")
        lines.append(f"| {metric} (paper) | " + " | ".join(f"{v:g}" for v in PAPER_TABLE_VI[metric]) + " |")
    return "\n".join(lines) + "\n"


def paper_sweeps(traces: list[str]) -> dict[str, pd.DataFrame]:
    """Paper 000's three sweeps (``SWEEPS``) over ``traces``, pooled; each trace read once."""
    from .io import read_trace
    from .sweep import sweep

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
    from .sweep import pareto

    attrs = dict(table.attrs)
    table = table.assign(pareto=pareto(table["M_c"].to_numpy(), table["M_w"].to_numpy()))
    table.attrs.update(attrs)
    return table


def _sweep_figure(sweeps: dict, topology: str):
    from .report.plots import pyplot
    from .report.plots import sweep as draw

    plt = pyplot()
    ldas = [lda for lda in SWEEPS if (lda, topology) in sweeps]
    fig, axes = plt.subplots(1, len(ldas), figsize=(5.5 * len(ldas), 6.4), constrained_layout=True, squeeze=False)
    for ax, lda in zip(axes.flat, ldas):
        table = sweeps[(lda, topology)]
        draw(table, ax=ax, title=f"{lda} in {topology.upper()}: sweep of {', '.join(table.attrs.get('params', []))}")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, frameon=False)  # three panels abreast
    return fig


def scale_checks(scaled: pd.DataFrame, tfrc: pd.DataFrame, flows: int) -> pd.DataFrame:
    """Paper 000 §IX-B on Table VI: the schemes match their figures' values at 128 flows, except
    Spike, which does better (a lower M_c)."""
    rows = []
    big = _mean(tfrc, "wlh")
    most = max(big.index.get_level_values("flows"))
    ours = scaled.set_index("lda")
    spike = (float(ours.loc["spike", "M_c"]), float(big.loc[(most, "spike"), ("M_c", "mean")]))
    rows.append(
        {
            "claim": f"WLH, {flows} flows: Spike's M_c is lower than with {most} flows",
            "paper": "§IX-B, Table VI",
            "holds": _verdict(spike[0] < spike[1], spike),
            "evidence": f"{flows} flows {spike[0]:.1%}, {most} flows {spike[1]:.1%}",
        }
    )
    moved = {
        lda: max(abs(float(ours.loc[lda, m]) - float(big.loc[(most, lda), (m, "mean")])) for m in ("M_c", "M_w"))
        for lda in ("biaz", "mbiaz", "zigzag", "zbs")
    }
    rows.append(
        {
            "claim": f"WLH, {flows} flows: the other schemes' M_c and M_w stay within 15 points of their "
            f"values with {most} flows",
            "paper": "§IX-B, Table VI",
            "holds": _verdict(max(moved.values()) <= 0.15, moved.values()),
            "evidence": ", ".join(f"{k} moved {v * 100:.1f}" for k, v in moved.items()),
        }
    )
    return pd.DataFrame(rows)


def sweep_checks(sweeps: dict) -> pd.DataFrame:
    """What paper 000 §III says of its sweeps: the defaults are good trade-offs in WLH (here: on
    the frontier), and mBiaz and Spike are insensitive to their parameters in WB."""
    rows = []
    for lda in SWEEPS:
        table = sweeps.get((lda, "wlh"))
        if table is None:
            continue
        default = table[table["default"]].iloc[0]
        values = [default["M_c"], default["M_w"]]
        names = table.attrs.get("params", [])
        params = ", ".join(f"{p}={default[p]:.3g}" for p in names)
        evidence = (
            f"default M_c {default['M_c']:.1%}, M_w {default['M_w']:.1%}; "
            f"{int(table['pareto'].sum())} of {len(table)} points on the frontier"
        )
        better = table[table["pareto"] & (table["M_c"] <= default["M_c"])].sort_values("M_w")
        if not default["pareto"] and len(better):  # the frontier point that beats it with no more M_c
            b = better.iloc[0]
            evidence += f"; {', '.join(f'{p}={b[p]:.3g}' for p in names)} has M_c {b['M_c']:.1%}, M_w {b['M_w']:.1%}"
        rows.append(
            {
                "claim": f"WLH: {lda}'s default ({params}) is on the M_c-M_w frontier of its sweep",
                "paper": {"mbiaz": "§III-A", "spike": "§III-B", "zigzag": "§III-C"}[lda],
                "holds": _verdict(bool(default["pareto"]), values),
                "evidence": evidence,
            }
        )
    for lda, limit, where in (("mbiaz", 0.10, "§III-A"), ("spike", 0.20, "§III-B")):
        table = sweeps.get((lda, "wb"))
        if table is None:
            continue
        spans = {m: float(table[m].max() - table[m].min()) for m in ("M_c", "M_w")}
        rows.append(
            {
                "claim": f"WB: {lda} is insensitive to its parameters (M_c and M_w each span under "
                f"{limit:.0%} over the sweep)",
                "paper": where,
                "holds": _verdict(max(spans.values()) < limit, spans.values()),
                "evidence": ", ".join(f"{m} spans {v * 100:.1f} points" for m, v in spans.items()),
            }
        )
    return pd.DataFrame(rows)


def _verdict(holds: bool, values) -> str:
    return ("yes" if holds else "no") if all(np.isfinite(v) for v in values) else "untestable"


def _figure(results: pd.DataFrame, topology: str, traffic: str = "tfrc", loop: str = "open"):
    from .report.plots import MARKERS, PALETTE, legend_outside, pyplot, style_axes

    plt = pyplot()
    stats = _mean(results, topology)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), constrained_layout=True)
    for ax, metric, label in zip(
        axes,
        ("thput", "M_c", "M_w"),
        (
            "modeled TFRC throughput (% of bottleneck)"
            if loop == "open"
            else "measured TFRC throughput, closed loop (% of fair share)",
            "M_c (%)",
            "M_w (%)",
        ),
    ):
        for k, lda in enumerate(LDAS):
            if lda not in stats.index.get_level_values("lda"):
                continue
            s = stats.xs(lda, level="lda")
            colour = PALETTE[k % len(PALETTE)]
            ax.plot(
                s.index,
                s[(metric, "mean")] * 100,
                marker=MARKERS[k % len(MARKERS)],
                color=colour,
                label=lda,
                linewidth=1.3,
                markersize=5,
            )
            ax.fill_between(
                s.index, s[(metric, "min")] * 100, s[(metric, "max")] * 100, color=colour, alpha=0.12, linewidth=0
            )
        style_axes(ax, "number of flows", label)
        ax.set_xticks(sorted(stats.index.get_level_values("flows").unique()))
        ax.set_ylim(-3, 105)
    legend_outside(axes[-1])
    name = {"wlh": "wireless last hop (paper 000 Figs. 8, 11)", "wb": "wireless backbone (Figs. 9, 12)"}[topology]
    how = "open loop" if loop == "open" else "closed loop: each LDA steering its own TFRC receiver in ns-2"
    fig.suptitle(
        f"{name}, {TRAFFIC_NAMES[traffic]}, {how}: high uniform loss; line: mean over seeds, band: their range",
        fontsize=10,
    )
    return fig


def zbs_usage(results: pd.DataFrame) -> pd.DataFrame:
    """Paper 000 Fig. 13: per topology and number of flows (high uniform loss), the share of time
    each of ZBS's base schemes was in force, mean over the flows of every seed's trace."""
    from .io import read_trace
    from .lda.zbs import SCHEMES, Zbs
    from .timeline import build_timeline

    zbs = Zbs()
    chosen = results[(results["loss"] == HIGH[0]) & (results["rate"] == HIGH[1]) & (results["lda"] == "zbs")]
    rows = []
    for trace in chosen.itertuples():
        share = zbs.usage(build_timeline(read_trace(trace.trace)))[list(SCHEMES)].mean()
        rows.append({"topology": trace.topology, "flows": trace.flows, "seed": trace.seed, **share.to_dict()})
    return pd.DataFrame(rows).groupby(["topology", "flows"], sort=True)[list(SCHEMES)].mean().reset_index()


def _usage_figure(usage: pd.DataFrame, traffic: str = "tfrc"):
    from .report.plots import pyplot
    from .report.plots import zbs_usage as draw

    plt = pyplot()
    topologies = [t for t in ("wlh", "wb") if t in set(usage["topology"])]
    fig, axes = plt.subplots(
        1, len(topologies), figsize=(6.5 * len(topologies), 4), constrained_layout=True, squeeze=False
    )
    for ax, topology in zip(axes.flat, topologies):
        mine = usage[usage["topology"] == topology].drop(columns="topology")
        draw(mine.assign(flows=mine["flows"].astype(str)).rename(columns={"flows": "number of flows"}), ax=ax)
        ax.set_title(f"ZBS in {topology.upper()}, {TRAFFIC_NAMES[traffic]} (paper 000 Fig. 13)", fontsize=10)
    return fig


def paper_checks(results: pd.DataFrame, usage: pd.DataFrame | None = None) -> pd.DataFrame:
    """The orderings and trends paper 000 §VI states that the suite can test, with whether each
    holds on these results and the numbers it rests on."""
    rows = []

    def check(claim: str, where: str, holds, evidence: str, values=()) -> None:
        """``holds`` is "untestable" when a number it needs is undefined here (no congestion
        loss, say): a statement is never taken as holding on missing numbers."""
        rows.append({"claim": claim, "paper": where, "holds": _verdict(holds, values), "evidence": evidence})

    wlh, wb = _mean(results, "wlh"), _mean(results, "wb")

    def value(stats, flows, lda, metric):
        try:
            return float(stats.loc[(flows, lda), (metric, "mean")])
        except KeyError:
            return float("nan")

    one = {lda: value(wlh, 1, lda, "M_c") for lda in BASE}
    check(
        "WLH, one flow: every base scheme keeps M_c near 0 (below 5 %)",
        "Table II",
        all(v < 0.05 for v in one.values()),
        ", ".join(f"{k} {v:.1%}" for k, v in one.items()),
        one.values(),
    )
    mw = {lda: value(wlh, 1, lda, "M_w") for lda in BASE}
    lowest = sorted(mw, key=lambda k: mw[k])[:2]
    check(
        "WLH, one flow: Biaz and mBiaz have the lowest M_w of the base schemes",
        "Table II",
        set(lowest) == {"biaz", "mbiaz"},
        ", ".join(f"{k} {v:.1%}" for k, v in mw.items()),
        mw.values(),
    )
    flows = sorted(wlh.index.get_level_values("flows").unique())
    biaz_mc = [value(wlh, n, "biaz", "M_c") for n in flows]
    known = [(n, v) for n, v in zip(flows, biaz_mc) if np.isfinite(v)]
    check(
        "WLH: Biaz's M_c rises with the number of flows (over the N where it is defined)",
        "§VI-C, Fig. 8",
        len(known) > 1
        and known[-1][1] > known[0][1]
        and pd.Series([v for _, v in known]).corr(pd.Series([n for n, _ in known]), method="spearman") > 0,
        ", ".join(f"N={n}: {v:.1%}" for n, v in zip(flows, biaz_mc)),
        [len(known) - 1.0 if len(known) > 1 else np.nan],
    )
    wb_flows = [n for n in sorted(wb.index.get_level_values("flows").unique()) if n >= 2]
    biaz_mw = [value(wb, n, "biaz", "M_w") for n in wb_flows]
    check(
        "WB, two flows or more: Biaz's M_w is near 100 % (above 90 %)",
        "§VI-C, Fig. 9",
        bool(wb_flows) and min(biaz_mw) > 0.9,
        ", ".join(f"N={n}: {v:.1%}" for n, v in zip(wb_flows, biaz_mw)),
        biaz_mw or [np.nan],
    )
    for topology, stats in (("WLH", wlh), ("WB", wb)):
        accuracy = stats.xs("accuracy", axis=1, level=0)["mean"].groupby(level="lda").mean()
        best = accuracy[list(BASE)].idxmax()
        check(
            f"{topology}: ZBS stays close to the best base scheme (accuracy within 10 points, mean over N)",
            "§VI-D, Figs. 11-12",
            accuracy["zbs"] >= accuracy[best] - 0.10,
            f"zbs {accuracy['zbs']:.1%}, best base {best} {accuracy[best]:.1%}",
            [accuracy["zbs"], accuracy[best]],
        )
    if usage is not None:
        one = usage[usage["flows"] == 1].set_index("topology")
        shares = {t: float(one.loc[t, "mbiaz"]) if t in one.index else np.nan for t in ("wlh", "wb")}
        check(
            "One flow, both topologies: ZBS uses mBiaz more than 98 % of the time",
            "§VI-D, Fig. 13",
            all(v > 0.98 for v in shares.values()),
            ", ".join(f"{t.upper()} {v:.1%}" for t, v in shares.items()),
            shares.values(),
        )
    return pd.DataFrame(rows)


def _tfrc_extras(suite: Suite) -> list[str]:
    grids = "; ".join(
        f"{lda}: " + ", ".join(f"{p} {min(v):.3g}-{max(v):.3g} ({len(v)} values)" for p, v in g.items())
        for lda, g in SWEEPS.items()
    )
    return [
        f"Table VI (`table_VI_wlh.md`): one run of {suite.scale} TFRC flows in WLH, high uniform loss, "
        f"{suite.duration} s.",
        "",
        f"Sweeps (`sweep_*.csv`), pooled over this traffic's traces at high uniform loss (every N and seed) "
        f"per topology, as §III swept: {grids}; Spike's points with alpha - beta above {SPIKE_SPREAD} left out. "
        "The star is the paper's default.",
        "",
        "![sweeps in WLH](figure_sweeps_wlh.png)",
        "",
        "![sweeps in WB](figure_sweeps_wb.png)",
        "",
    ]


def _readme(
    suite: Suite, name: str, results, checks: pd.DataFrame, seconds: float, simulated: tuple[float, int], workers: int
) -> str:
    sections = []
    for traffic in suite.traffics:
        mine = checks[checks["traffic"] == traffic]
        suffix = "" if traffic == "tfrc" else f"_{traffic}"
        holds = int((mine["holds"] == "yes").sum())
        untestable = int((mine["holds"] == "untestable").sum())
        sections += [
            f"## {TRAFFIC_NAMES[traffic]}",
            "",
            f"Tables: `table_II_wlh{suffix}.md`, `table_III_wb{suffix}.md`.",
            "",
            f"![WLH](figure_wlh{suffix}.png)",
            "",
            f"![WB](figure_wb{suffix}.png)",
            "",
            f"![ZBS scheme usage](figure_13_zbs{suffix}.png)",
            "",
            *(_tfrc_extras(suite) if traffic == "tfrc" else []),
            f"The paper's statements on these numbers: {holds} of {len(mine)} hold, {untestable} cannot be tested.",
            "",
            "| statement | where | holds | numbers |",
            "|---|---|---|---|",
            *[
                f"| {r.claim} | {r.paper} | {'**no**' if r.holds == 'no' else r.holds} | {r.evidence} |"
                for r in mine.itertuples()
            ],
            "",
        ]
    return "\n".join(
        [
            "# Paper 000, reproduced by `ldanalyze reproduce paper000`",
            "",
            f"Suite `{name}`: topologies {', '.join(suite.topologies)}; {', '.join(map(str, suite.flows))} flows of "
            f"{', '.join(TRAFFIC_NAMES[t] for t in suite.traffics)}; wireless loss "
            f"{', '.join(f'{m} {r:g}' for m, r in suite.losses)}; seeds {', '.join(map(str, suite.seeds))}; "
            f"{suite.duration} s after a {suite.warmup} s warm-up. {len(results['trace'].unique())} traces from ns-2.35 "
            f"and `ldanalyze/data/paper000.tcl` (§V), {simulated[1]} of them simulated in this run ({simulated[0]:.0f} s), "
            f"the others taken from the cache; everything, {seconds:.0f} s on {workers} worker(s).",
            "",
            "Scores: every LDA replayed causally over each trace with the default replay semantics "
            "(`docs/ldas.md`); M_c, M_w and accuracy pooled per trace, then averaged over seeds. Throughput: TFRC "
            "replayed open loop, fed each LDA's decisions on the trace's arrivals, as a share of the bottleneck "
            "(`docs/controllers.md`). The traces were recorded with ns-2's own senders (unaware TFRC, TCP, or "
            "constant-rate UDP), so the queue dynamics are theirs, not those of a closed-loop LDA sender as in the "
            "paper. The constant-rate traffic is the one whose timing does not depend on the losses being judged, "
            "and at 110 % of its share it keeps the queue busy, as the paper's LDA senders did.",
            "",
            *sections,
            "Where a statement does not hold, the reasons to look at first are the open-loop replay over traces "
            "recorded by other senders (the paper's LDA senders pushed their queues differently), the loss model "
            "(independent per-packet loss here, Jakes-model error traces there), ns-2's TFRC version, and our "
            "readings of rules the paper leaves open (`docs/ldas.md`).",
            "",
        ]
    )


# --- the closed loop (ldanalyze.closedloop) -------------------------------------------------

# paper 000 Tables II (WLH) and III (WB): one flow, high loss, in %; "unaware" is the paper's TFRC
PAPER_TABLES: dict[str, dict[str, dict[str, float]]] = {
    "wlh": {
        "thput": dict(unaware=84, omniscient=99, biaz=99, mbiaz=99, spike=99, zigzag=98),
        "cong.": dict(unaware=0.2, omniscient=2.3, biaz=2.3, mbiaz=2.3, spike=0.4, zigzag=0.3),
        "M_c": dict(unaware=0, omniscient=0, biaz=0, mbiaz=0, spike=0, zigzag=0),
        "M_w": dict(unaware=100, omniscient=0, biaz=6.3, mbiaz=6.6, spike=58, zigzag=66),
    },
    "wb": {
        "thput": dict(unaware=37, omniscient=99, biaz=97, mbiaz=91, spike=99, zigzag=53),
        "cong.": dict(unaware=0.0, omniscient=0.4, biaz=0.4, mbiaz=0.4, spike=0.0, zigzag=0.0),
        "M_c": dict(unaware=0, omniscient=0, biaz=0, mbiaz=0, spike=0, zigzag=0),
        "M_w": dict(unaware=100, omniscient=0, biaz=2.4, mbiaz=7.0, spike=29, zigzag=60),
    },
}
SCENARIO_KEYS = ["traffic", "topology", "flows", "loss", "rate", "seed"]
MODEL_NAMES = [name for name, _, _ in MODELS]
SPREAD = 0.05  # LDAs' measured throughputs this far apart (share of the bottleneck) make a ranking


def closed_loop(suite: Suite, out: pathlib.Path, folder: pathlib.Path, workers: int, ns: str) -> dict:
    """The suite's TFRC scenarios run once per LDA with every TFRC receiver steered by it (paper
    000 §II, ``ldanalyze.closedloop``); the open-loop numbers are those of the unaware run, which
    is ns-2's own TFRC. Writes ``closed_loop.csv`` (one row per scenario, LDA and loop: M_c, M_w,
    accuracy, throughput, congestion, fairness over the TFRC flows), the closed-loop Tables II and
    III beside the open-loop ones and the paper's, figures, ``model_vs_truth.csv`` and
    ``checks_closed.csv`` (each statement open and closed); returns the frames and paths."""
    from . import closedloop
    from .simulation import fair_share_bps

    base = [s for s in suite.scenarios() if s["traffic"] == "tfrc"]
    runs = [{**s, "lda": lda} for s in base for lda in LDAS]
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
    for topology, name in (("wlh", "table_II_wlh_closed.md"), ("wb", "table_III_wb_closed.md")):
        (out / name).write_text(_table_closed(opened, closed, topology))
        figure = out / f"figure_{topology}_closed.png"
        _save(_figure(closed, topology, "tfrc", loop="closed"), figure)
        written.update({name: out / name, figure.name: figure})
    checks = loop_checks(opened, closed)
    checks.to_csv(out / "checks_closed.csv", index=False)
    (out / "model_error.md").write_text(_model_error(truth_vs_model))
    written.update({"checks_closed.csv": out / "checks_closed.csv", "model_error.md": out / "model_error.md"})
    agreed = (int(closed["decisions_equal"].sum()), int(closed["decisions"].sum()))
    return {
        "frame": frame,
        "checks": checks,
        "model": truth_vs_model,
        "written": written,
        "runs": len(runs),
        "simulated": sum(fresh for _, fresh in made),
        "agreement": agreed,
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
    for column, receive, norm in MODELS:
        error = (both[column] - both["truth"]).abs() * 100
        rho = both.groupby(SCENARIO_KEYS)[[column, "truth"]].apply(
            lambda g: g[column].corr(g["truth"], method="spearman") if g["truth"].nunique() > 1 else np.nan
        )
        rows.append(
            {
                "model": column,
                "X_recv": "the trace's" if receive == "trace" else "the model's",
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


def _model_error(both: pd.DataFrame) -> str:
    errors = model_errors(both)
    lines = [
        "Open-loop modeled TFRC throughput (replay over ns-2's own TFRC trace, fed each LDA's decisions) "
        "against the throughput each LDA's closed-loop run measured, over every scenario and LDA; errors "
        "in points of the bottleneck share, Spearman over the LDAs of each scenario.",
        "",
        "| model | TFRC's X_recv | normalised by | median abs. error | 90th pct abs. error | Spearman (median) "
        f"| scenarios | Spearman where the LDAs differ by > {SPREAD:.0%} | scenarios |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in errors.itertuples():
        lines.append(
            f"| {r.model} | {r.X_recv} | {r._3} | {r.median_abs_error:.1f} | {r.p90_abs_error:.1f} | "
            f"{r.spearman_median:.2f} | {r.scenarios} | {r.spearman_differ:.2f} | {r.scenarios_differ} |"
        )
    per = both.groupby(["topology", "flows"])[[f"error_{name}" for name in MODEL_NAMES]].agg(lambda e: e.abs().median())
    lines += [
        "",
        "Median abs. error per topology and number of flows (points):",
        "",
        "| topology | flows | " + " | ".join(MODEL_NAMES) + " |",
        "|---|---:|" + "---:|" * len(MODEL_NAMES),
    ]
    lines += [f"| {t} | {n} | " + " | ".join(f"{v:.1f}" for v in row) + " |" for (t, n), row in per.iterrows()]
    return "\n".join(lines) + "\n"


def _table_closed(opened: pd.DataFrame, closed: pd.DataFrame, topology: str) -> str:
    """Tables II/III three ways: the closed loop (each LDA's own run), the open-loop replay over
    the unaware run, and the paper, in %."""
    name = {"wlh": "II, wireless last hop", "wb": "III, wireless backbone"}[topology]
    loops = {
        "closed": _mean(closed, topology).xs(1, level="flows"),
        "open": _mean(opened, topology).xs(1, level="flows"),
    }
    lines = [
        f"Table {name}: 1 TFRC flow, high uniform wireless loss (7.8 %), mean over seeds, in %. closed: each "
        "LDA steers its own TFRC receiver inside ns-2 (paper 000 §II), throughput measured as a share of the "
        "bottleneck; open: every LDA replayed over the unaware run's trace, throughput modeled (a share of the "
        "packet-pair capacity, as `score` shows it) and congestion that of the unaware run; paper: Table "
        f"{name.split(',')[0]} (its TFRC column under unaware).",
        "",
        "| | " + " | ".join(LDAS) + " |",
        "|---|" + "---:|" * len(LDAS),
    ]
    paper = PAPER_TABLES[topology]
    for metric, label in (("thput", "thput"), ("congestion_rate", "cong."), ("M_c", "M_c"), ("M_w", "M_w")):
        for loop, stats in loops.items():
            cells = [stats.loc[lda, (metric, "mean")] * 100 if lda in stats.index else np.nan for lda in LDAS]
            lines.append(
                f"| {label} ({loop}) | " + " | ".join("-" if not np.isfinite(c) else f"{c:.1f}" for c in cells) + " |"
            )
        lines.append(
            f"| {label} (paper) | "
            + " | ".join(f"{paper[label][lda]:g}" if lda in paper[label] else "-" for lda in LDAS)
            + " |"
        )
    return "\n".join(lines) + "\n"


def loop_checks(opened: pd.DataFrame, closed: pd.DataFrame) -> pd.DataFrame:
    """Paper 000's statements checked on the open-loop and the closed-loop numbers side by side:
    those of :func:`paper_checks` and the throughput and congestion statements of Tables II and
    III, with a sentence on why a verdict moved."""
    both = {}
    for loop, frame in (("open", opened), ("closed", closed)):
        both[loop] = pd.concat([paper_checks(frame), throughput_checks(frame, loop)], ignore_index=True)
    merged = both["open"].merge(both["closed"], on=["claim", "paper"], suffixes=("_open", "_closed"))
    merged["why"] = [_why(r) for r in merged.itertuples()]
    return merged


def throughput_checks(results: pd.DataFrame, loop: str) -> pd.DataFrame:
    """The throughput and congestion statements of paper 000 Tables II and III (§VI-A, B), one
    flow at high loss. Congestion statements are untestable open loop, where every LDA is judged
    on the same trace and so has the same congestion."""
    rows = []
    wlh, wb = _mean(results, "wlh"), _mean(results, "wb")

    def value(stats, lda, metric):
        try:
            return float(stats.loc[(1, lda), (metric, "mean")])
        except KeyError:
            return float("nan")

    def check(claim, where, holds, evidence, values):
        rows.append({"claim": claim, "paper": where, "holds": _verdict(holds, values), "evidence": evidence})

    for topology, stats, paper in (("WLH", wlh, "Table II"), ("WB", wb, "Table III")):
        thput = {lda: value(stats, lda, "thput") for lda in LDAS}
        text = ", ".join(f"{k} {v:.0%}" for k, v in thput.items())
        schemes = ["omniscient", "biaz", "spike"] if topology == "WB" else ["omniscient", *BASE]
        check(
            f"{topology}, one flow: {', '.join(schemes)} use at least 90 % of the bottleneck",
            paper,
            all(thput[s] >= 0.9 for s in schemes),
            text,
            [thput[s] for s in schemes],
        )
        check(
            f"{topology}, one flow: unaware TFRC's throughput is below every LDA's",
            paper,
            all(thput["unaware"] < thput[s] for s in ("omniscient", *BASE)),
            text,
            thput.values(),
        )
    check(
        "WB, one flow: ZigZag's throughput is the lowest of the base schemes (paper: 53 against 91-99 %)",
        "Table III",
        value(wb, "zigzag", "thput") <= min(value(wb, s, "thput") for s in BASE),
        ", ".join(f"{s} {value(wb, s, 'thput'):.0%}" for s in BASE),
        [value(wb, s, "thput") for s in BASE],
    )
    cong = {lda: value(wlh, lda, "congestion_rate") for lda in LDAS}
    text = ", ".join(f"{k} {v:.2%}" for k, v in cong.items())
    less = max(cong["spike"], cong["zigzag"]) < min(cong["omniscient"], cong["biaz"], cong["mbiaz"])
    check(
        "WLH, one flow: Spike and ZigZag cause less congestion loss than omniscient, Biaz and mBiaz "
        "(paper: 0.3-0.4 against 2.3 %)",
        "Table II, §VI-A",
        less,
        text,
        cong.values() if loop == "closed" else [np.nan],
    )
    return pd.DataFrame(rows)


def _why(r) -> str:
    """A sentence on why a statement's verdict did or did not move between the loops."""
    if r.holds_open == "untestable" and r.holds_closed != "untestable":
        return (
            "open loop every LDA is judged on one trace, so its congestion is the same for all; "
            "only the closed loop tells the schemes' congestion apart"
        )
    if r.holds_open == r.holds_closed:
        return "the same verdict both ways"
    if "throughput" in r.claim or "bottleneck" in r.claim:
        return (
            "the throughput moved: closed loop each LDA's sender fills the queue its decisions allow, where "
            "the open-loop model replays rates over the unaware sender's timing and caps them at the "
            "packet-pair capacity of that trace"
        )
    return (
        "the decisions moved: closed loop each LDA's own sender shapes the queue, and so the delays and "
        "spacings the LDA judges; open loop they are the unaware sender's"
    )


def _readme_closed(loop: dict) -> str:
    checks = loop["checks"]
    counts = {side: f"{int((checks[f'holds_{side}'] == 'yes').sum())} of {len(checks)}" for side in ("open", "closed")}
    return "\n".join(
        [
            "## Closed loop: each LDA inside ns-2's TFRC receiver",
            "",
            f"Every TFRC scenario above was run again once per LDA ({loop['runs']} runs), with every TFRC receiver "
            "steered by that LDA (paper 000 §II: a loss it calls wireless stays out of the loss event rate; the "
            "patched ns-2 of `ldanalyze/data/ns2`). Scores and throughput are over the TFRC flows only; throughput "
            "is measured (what crossed the bottleneck) as a share of each flow's fair share of the bottleneck. The "
            "open-loop numbers beside them are every LDA replayed over the unaware run, which is ns-2's own TFRC.",
            "",
            "Tables: `table_II_wlh_closed.md`, `table_III_wb_closed.md`; all numbers: `closed_loop.csv`.",
            "",
            "![WLH closed loop](figure_wlh_closed.png)",
            "",
            "![WB closed loop](figure_wb_closed.png)",
            "",
            f"The in-simulator decisions against the offline replay of each run's trace (every LDA the receiver "
            f"runs): {loop['agreement'][0]:,} of {loop['agreement'][1]:,} alike.",
            "",
            f"The paper's statements: {counts['open']} hold open loop, {counts['closed']} closed loop.",
            "",
            "| statement | where | holds open | holds closed | open | closed | why |",
            "|---|---|---|---|---|---|---|",
            *[
                f"| {r.claim} | {r.paper} | {r.holds_open} | {r.holds_closed} | {r.evidence_open} | {r.evidence_closed} "
                f"| {r.why} |"
                for r in checks.itertuples()
            ],
            "",
            "### The modeled throughput against the closed loop (`model_vs_truth.csv`)",
            "",
            (pathlib.Path(loop["written"]["model_error.md"]).read_text()),
            "",
        ]
    )
