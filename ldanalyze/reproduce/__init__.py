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
* ``checks.csv`` and ``README.md``: every statement of the paper the suite can test, as the
  registry ``paper000_statements.toml`` writes it (section, the paper's numbers, the LDAs it
  names, a test whose words are defined there once), whether it holds here, and how each number
  was made; ``table_cells.md``: Tables II and III cell by cell against the paper's, whose count
  of cells within 5 points is the README's headline. ``rewrite`` writes these again from a run's
  result files without simulating.

The replay is open loop: each trace was recorded with ns-2's own (unaware) TFRC senders, and
each LDA's throughput is what TFRC would have allowed given that LDA's decisions on the same
arrivals (``docs/controllers.md``). The paper ran each LDA in closed loop, so its congestion
rates differ per scheme; here the congestion comes from the trace and is reported once.

The package, one module per job, each importing only those below it: ``run`` (the command's work:
simulate, score, write); ``readme``, ``tables``, ``figures`` and ``statements`` (what is written,
and the paper's statements judged); ``closed_suite`` (the closed-loop runs and the throughput models
against them), ``model_grid`` (a grid where the LDAs differ, to choose and judge those models on,
``docs/make_paper000_model_grid.py``) and ``measures`` (the sweeps, ZBS's usage); ``suite`` (the
scenarios, the LDAs, the mean over seeds) and ``registry`` (the paper's statements, words and
tables, read from ``paper000_statements.toml``).
"""

from .closed_suite import closed_loop, model_errors, model_vs_truth
from .measures import paper_sweeps, zbs_usage
from .run import reproduce, rewrite
from .statements import judge, loop_checks
from .suite import CBR_SHARE, LDAS, SPIKE_SPREAD, SUITES, SWEEPS, Suite
from .tables import cell_summary, cells_headline, table_cells

__all__ = [
    "CBR_SHARE",
    "LDAS",
    "SPIKE_SPREAD",
    "SUITES",
    "SWEEPS",
    "Suite",
    "cell_summary",
    "cells_headline",
    "closed_loop",
    "judge",
    "loop_checks",
    "model_errors",
    "model_vs_truth",
    "paper_sweeps",
    "reproduce",
    "rewrite",
    "table_cells",
    "zbs_usage",
]
