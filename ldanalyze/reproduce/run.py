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
from .closed_suite import RECEIVER_PAGE, closed_loop
from .figures import metrics_figure, save, sweep_figure, usage_figure
from .measures import paper_sweeps, zbs_usage
from .readme import closed_section, readme
from .statements import judge, loop_checks
from .suite import CELL_LOSSES, HIGH, LDAS, SUITES, SWEEPS, Suite
from .tables import cells_headline, cells_table, closed_table, model_error_table, one_flow_table, table_cells, table_vi


def reproduce(
    out: str | os.PathLike,
    *,
    quick: bool = False,
    jobs: int | None = None,
    ns: str = "ns",
    closed: str | None = None,
    wireless_as_received: bool = False,
) -> dict:
    """Run the suite (``SUITES['quick']`` or ``['full']``) and write the outputs into ``out`` (the
    package docstring lists them); returns the paths written and the run time. ``closed``: the
    patched ns (``closedloop.patched_ns()``) to also run the suite's TFRC scenarios closed loop
    (:func:`closed_loop`), its receivers counting a loss called wireless as received in TFRC's
    receive rate too with ``wireless_as_received`` (paper 000 §IV's reading)."""
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
    scaled.to_csv(out / "table_VI_results.csv", index=False)
    written = {"results": out / "results.csv", "table_VI_results.csv": out / "table_VI_results.csv"}
    usages = {}
    for traffic in suite.traffics:
        mine = results[results["traffic"] == traffic]
        suffix = "" if traffic == "tfrc" else f"_{traffic}"
        for topology, table in (("wlh", "table_II_wlh"), ("wb", "table_III_wb")):
            (out / f"{table}{suffix}.md").write_text(one_flow_table(mine, topology, traffic))
            figure = out / f"figure_{topology}{suffix}.png"
            save(metrics_figure(mine, topology, traffic), figure)
            written.update({f"{table}{suffix}.md": out / f"{table}{suffix}.md", figure.name: figure})
        usages[traffic] = usage = zbs_usage(mine)
        usage.to_csv(out / f"zbs_usage{suffix}.csv", index=False)
        save(usage_figure(usage, traffic), out / f"figure_13_zbs{suffix}.png")
        written.update(
            {
                f"zbs_usage{suffix}": out / f"zbs_usage{suffix}.csv",
                f"figure_13_zbs{suffix}.png": out / f"figure_13_zbs{suffix}.png",
            }
        )
    tfrc = results[results["traffic"] == "tfrc"]
    (out / "table_VI_wlh.md").write_text(table_vi(scaled, suite.scale))
    sweeps = {}
    for topology in ("wlh", "wb"):
        mine = tfrc[(tfrc["topology"] == topology) & (tfrc["loss"] == HIGH[0]) & (tfrc["rate"] == HIGH[1])]
        for lda, table in paper_sweeps(sorted(mine["trace"].unique())).items():
            sweeps[(lda, topology)] = table
            table.to_csv(out / f"sweep_{lda}_{topology}.csv", index=False)
        save(sweep_figure(sweeps, topology), out / f"figure_sweeps_{topology}.png")
        written[f"figure_sweeps_{topology}.png"] = out / f"figure_sweeps_{topology}.png"
    written.update({"table_VI_wlh.md": out / "table_VI_wlh.md"})
    loop = closed_loop(suite, out, folder, workers, closed, wireless_as_received) if closed else None
    if loop:
        loop = _closed_outputs(loop, out)
        written.update(loop["written"])
        loop["usage"] = zbs_usage(loop["closed"])  # the closed loop's own ZBS runs (Fig. 13)
        loop["usage"].to_csv(out / "zbs_usage_closed.csv", index=False)
        written["zbs_usage_closed.csv"] = out / "zbs_usage_closed.csv"
    seconds = time.perf_counter() - start
    how = (
        f"{len(results['trace'].unique())} traces from ns-2.35 and `ldanalyze/data/paper000.tcl` (§V), "
        f"{simulated[1]} of them simulated in this run ({simulated[0]:.0f} s), the others taken from the cache; "
        f"everything, {seconds:.0f} s on {workers} worker(s)."
    )
    written.update(
        judge_and_write(out, suite, "quick" if quick else "full", results, scaled, sweeps, usages, loop, how)
    )
    return {
        "written": written,
        "seconds": seconds,
        "traces": len(paths) + (loop["runs"] if loop else 0),
        "simulated": simulated[1] + (loop["simulated"] if loop else 0),
        "closed": loop,
    }


def judge_and_write(
    out: pathlib.Path,
    suite: Suite,
    name: str,
    results: pd.DataFrame,
    scaled: pd.DataFrame,
    sweeps: dict,
    usages: dict,
    loop: dict | None,
    made: str,
) -> dict:
    """The statements of the registry judged per traffic open loop and, with ``loop`` (the closed
    loop's frames), closed loop beside the open loop of TFRC; Tables II and III cell by cell;
    ``checks.csv``, ``checks_closed.csv``, ``table_cells.md``, ``table_cells.csv`` and the README,
    whose headline is the cell-by-cell count. Returns the paths written."""
    checks = []
    for traffic in suite.traffics:
        tfrc = traffic == "tfrc"
        judged = judge(
            results[results["traffic"] == traffic],
            "open",
            usage=usages.get(traffic),
            scaled=scaled if tfrc else None,
            sweeps=sweeps if tfrc else None,
        )
        checks.append(judged.assign(traffic=traffic))
    checks = pd.concat(checks, ignore_index=True)
    checks.to_csv(out / "checks.csv", index=False)
    written = {"checks": out / "checks.csv"}
    tfrc = results[results["traffic"] == "tfrc"]
    loops = {"open": tfrc, **({"closed": loop["closed"]} if loop else {})}
    names = tuple(reversed(loops))  # the closed loop first: it is the paper's method
    cells = {loss: table_cells(loops, loss) for loss in CELL_LOSSES if (tfrc["loss"] == loss[0]).any()}
    pd.concat([c.assign(loss=loss[0], rate=loss[1]) for loss, c in cells.items()]).to_csv(
        out / "table_cells.csv", index=False
    )
    (out / "table_cells.md").write_text("\n".join(cells_table(c, names, loss) for loss, c in cells.items()))
    headline = "\n\n".join(
        f"Tables II and III cell by cell, one TFRC flow, {loss[0]} wireless loss {loss[1] * 100:g} % (`table_cells.md`; "
        "counted: the cells the paper measured and the suite reproduces, thput and cong. of TFRC, omniscient and the "
        "four LDAs, M_c and M_w of the four LDAs; not counted: the a-priori M_c and M_w of TFRC and omniscient, and "
        "the TCP column):\n\n" + cells_headline(c, names)
        for loss, c in cells.items()
    )
    written.update({"table_cells.md": out / "table_cells.md", "table_cells.csv": out / "table_cells.csv"})
    text = readme(suite, name, results, checks, made, headline)
    if loop:
        opened = checks[checks["traffic"] == "tfrc"].drop(columns="traffic")
        both = loop_checks(opened, judge(loop["closed"], "closed", usage=loop.get("usage")))
        both.to_csv(out / "checks_closed.csv", index=False)
        written["checks_closed.csv"] = out / "checks_closed.csv"
        loop["checks"] = both
        text += closed_section(loop)
    (out / "README.md").write_text(text)
    written["readme"] = out / "README.md"
    return written


def rewrite(out: str | os.PathLike, name: str = "full") -> dict:
    """The judgments, the cell-by-cell tables, the closed-loop tables and the README written again
    from the result files a ``reproduce`` run left in ``out`` (``results.csv``, ``closed_loop.csv``,
    each possibly gzipped, the sweeps, ZBS's usage, Table VI's run), simulating nothing: for a new
    registry or README over numbers already made. Returns the paths written."""
    out = pathlib.Path(out)
    suite = SUITES[name]

    def read(stem: str) -> pd.DataFrame | None:
        for path in (out / stem, out / f"{stem}.gz"):
            if path.exists():
                return pd.read_csv(path)
        return None

    results, scaled = read("results.csv"), read("table_VI_results.csv")
    if results is None or scaled is None:
        raise UsageError(f"{out}: no results.csv or table_VI_results.csv of a reproduce run to rewrite from")
    sweeps = {}
    for (lda, grid), topology in itertools.product(SWEEPS.items(), ("wlh", "wb")):
        table = read(f"sweep_{lda}_{topology}.csv")
        if table is not None:
            table.attrs["params"] = list(grid)
            sweeps[(lda, topology)] = table
    usages = {t: read(f"zbs_usage{'' if t == 'tfrc' else '_' + t}.csv") for t in suite.traffics}
    frame, model = read("closed_loop.csv"), read("model_vs_truth.csv")
    loop = None
    if frame is not None and model is not None:
        closed = frame[frame["loop"] == "closed"]
        loop = {
            "frame": frame,
            "opened": frame[frame["loop"] == "open"],
            "closed": closed,
            "model": model,
            "written": {},
            "runs": len(closed),
            "crosscheck": (int(closed["decisions_equal"].sum()), int(closed["decisions"].sum())),
            "usage": read("zbs_usage_closed.csv"),
        }
        loop = _closed_outputs(loop, out, figures=False)
    how = (
        f"{len(results['trace'].unique())} traces from ns-2.35 and `ldanalyze/data/paper000.tcl` (§V); the "
        "statements, the cell-by-cell tables and this README were written again from that run's result files, "
        "nothing simulated again."
    )
    return judge_and_write(out, suite, name, results, scaled, sweeps, usages, loop, how)


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


def _closed_outputs(loop: dict, out: pathlib.Path, *, figures: bool = True) -> dict:
    """The closed loop's Tables II and III (and, with ``figures``, its figures) and model errors
    written beside its numbers: ``loop`` (:func:`closed_loop`) with every path."""
    opened, closed = loop["opened"], loop["closed"]
    written = dict(loop["written"])
    for topology, name in (("wlh", "table_II_wlh_closed.md"), ("wb", "table_III_wb_closed.md")):
        (out / name).write_text(closed_table(opened, closed, topology))
        written[name] = out / name
        if figures:
            figure = out / f"figure_{topology}_closed.png"
            save(metrics_figure(closed, topology, "tfrc", loop="closed"), figure)
            written[figure.name] = figure
    (out / "model_error.md").write_text(model_error_table(loop["model"]))
    written["model_error.md"] = out / "model_error.md"
    # both readings of §IV's receiver on Tables II and III (docs/make_paper000_receiver.py), if made
    both = out / RECEIVER_PAGE
    return {**loop, "written": written, "receiver": both.read_text() if both.exists() else None}
