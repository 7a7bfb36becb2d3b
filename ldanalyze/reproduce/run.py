"""``reproduce``: simulate the suite with ns-2 (in parallel, cached by scenario), score every
LDA on each trace with the batch runner, and write the results, tables, figures, sweeps, the
paper's statements checked and the README (the package's docstring lists them); with the
patched ns-2, the closed loop's too."""

from __future__ import annotations

import itertools
import os
import pathlib
import shutil
import time
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

from .. import batch as batching
from ..errors import UsageError
from ..simulation import simulate
from .closed_suite import closed_loop
from .figures import metrics_figure, save, sweep_figure, usage_figure
from .measures import paper_sweeps, zbs_usage
from .readme import closed_section, readme
from .statements import loop_checks, paper_checks, scale_checks, sweep_checks
from .suite import HIGH, LDAS, SUITES
from .tables import closed_table, model_error_table, one_flow_table, table_vi


def reproduce(
    out: str | os.PathLike, *, quick: bool = False, jobs: int | None = None, ns: str = "ns", closed: str | None = None
) -> dict:
    """Run the suite (``SUITES['quick']`` or ``['full']``) and write the outputs into ``out`` (the
    package docstring lists them); returns the paths written and the run time. ``closed``: the
    patched ns (``closedloop.patched_ns()``) to also run the suite's TFRC scenarios closed loop
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
            (out / f"{table}{suffix}.md").write_text(one_flow_table(mine, topology, traffic))
            figure = out / f"figure_{topology}{suffix}.png"
            save(metrics_figure(mine, topology, traffic), figure)
            written.update({f"{table}{suffix}.md": out / f"{table}{suffix}.md", figure.name: figure})
        usage = zbs_usage(mine)
        usage.to_csv(out / f"zbs_usage{suffix}.csv", index=False)
        save(usage_figure(usage, traffic), out / f"figure_13_zbs{suffix}.png")
        written.update(
            {
                f"zbs_usage{suffix}": out / f"zbs_usage{suffix}.csv",
                f"figure_13_zbs{suffix}.png": out / f"figure_13_zbs{suffix}.png",
            }
        )
        checks.append(paper_checks(mine, usage).assign(traffic=traffic))
    tfrc = results[results["traffic"] == "tfrc"]
    scaled.to_csv(out / "table_VI_results.csv", index=False)
    (out / "table_VI_wlh.md").write_text(table_vi(scaled, suite.scale))
    sweeps = {}
    for topology in ("wlh", "wb"):
        mine = tfrc[(tfrc["topology"] == topology) & (tfrc["loss"] == HIGH[0]) & (tfrc["rate"] == HIGH[1])]
        for lda, table in paper_sweeps(sorted(mine["trace"].unique())).items():
            sweeps[(lda, topology)] = table
            table.to_csv(out / f"sweep_{lda}_{topology}.csv", index=False)
        save(sweep_figure(sweeps, topology), out / f"figure_sweeps_{topology}.png")
        written[f"figure_sweeps_{topology}.png"] = out / f"figure_sweeps_{topology}.png"
    checks.append(scale_checks(scaled, tfrc, suite.scale).assign(traffic="tfrc"))
    checks.append(sweep_checks(sweeps).assign(traffic="tfrc"))
    written.update({"table_VI_wlh.md": out / "table_VI_wlh.md"})
    checks = pd.concat(checks, ignore_index=True)
    checks.to_csv(out / "checks.csv", index=False)
    loop = _closed_outputs(closed_loop(suite, out, folder, workers, closed), out) if closed else None
    if loop:
        written.update(loop["written"])
    seconds = time.perf_counter() - start
    text = readme(suite, "quick" if quick else "full", results, checks, seconds, simulated, workers)
    (out / "README.md").write_text(text + (closed_section(loop) if loop else ""))
    written.update(checks=out / "checks.csv", readme=out / "README.md")
    return {
        "written": written,
        "seconds": seconds,
        "traces": len(paths) + (loop["runs"] if loop else 0),
        "simulated": simulated[1] + (loop["simulated"] if loop else 0),
        "closed": loop,
    }


def _results(outcomes, scenarios: list[dict], paths: list[pathlib.Path]) -> pd.DataFrame:
    """One row per trace and LDA: the scenario's parameters beside the trace's pooled scores."""
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


def _closed_outputs(loop: dict, out: pathlib.Path) -> dict:
    """The closed loop's Tables II and III, figures, statements (open and closed) and model errors
    written beside its numbers: ``loop`` (:func:`closed_loop`) with the checks and every path."""
    opened, closed = loop["opened"], loop["closed"]
    written = dict(loop["written"])
    for topology, name in (("wlh", "table_II_wlh_closed.md"), ("wb", "table_III_wb_closed.md")):
        (out / name).write_text(closed_table(opened, closed, topology))
        figure = out / f"figure_{topology}_closed.png"
        save(metrics_figure(closed, topology, "tfrc", loop="closed"), figure)
        written.update({name: out / name, figure.name: figure})
    checks = loop_checks(opened, closed)
    checks.to_csv(out / "checks_closed.csv", index=False)
    (out / "model_error.md").write_text(model_error_table(loop["model"]))
    written.update({"checks_closed.csv": out / "checks_closed.csv", "model_error.md": out / "model_error.md"})
    return {**loop, "checks": checks, "written": written}
