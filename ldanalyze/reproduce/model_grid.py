"""The open-loop throughput model held to the closed loop where the LDAs differ (issue #46 §3).

The suite of paper 000 mostly asks easy questions: in most of its closed-loop runs every LDA
fills the bottleneck, and a constant "100 %" predicts them as well as any model. This grid is
built to make the LDAs differ: wireless loss from 1 to 10 %, uniform and bursty; 1 to 16 flows;
TFRC alone and beside a TCP NewReno flow; WLH and WB (paper 000 §V-A); the shared link's delay
from 10 to 100 ms (§V-C has 20 ms). Each scenario runs closed loop once per LDA (every TFRC
receiver steered by it, paper 000 §I and §IV; ``ldanalyze.closedloop``), with four seeds: the
candidate models are chosen on the runs of the first two and reported on the other two's, which
nothing was fitted or looked at on.

Each candidate is an open-loop replay over the unaware run's trace (``closedloop.modeled``: TFRC
fed the LDA's decisions, its receive rate from the model or the trace, capped at the packet-pair
capacity, the fair share or what the traffic not under study leaves). Baselines on every table:
a constant 100 %; and the same replay over the LDA's own closed-loop trace, the best any replay
of that LDA can do, since that trace has the timing its decisions produced.
"""

from __future__ import annotations

import itertools
import pathlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from .. import closedloop
from ..simulation import fair_share_bps, simulate
from .suite import LDAS

# what varies, and how many scenarios are drawn (``grid_scenarios``)
FACTORS = {
    "topology": ("wlh", "wb"),
    "flows": (1, 2, 4, 8, 16),
    "traffic": ("tfrc", "mix"),  # mix: TFRC flows 1..N-1 beside one TCP NewReno flow (N >= 2)
    "loss": (
        ("uniform", 0.01),
        ("uniform", 0.03),
        ("uniform", 0.06),
        ("uniform", 0.1),
        ("bursty", 0.03),
        ("bursty", 0.06),
        ("bursty", 0.1),
    ),
    "shared_delay": (0.01, 0.02, 0.05, 0.1),
}
SCENARIOS = 64
DRAW_SEED = 46
# the model is chosen on the first seeds and reported on the others. Seed 2 was the held-out seed
# of a first round (24 candidates, no "left" normaliser); "left" was proposed after its misses
# were seen, so it chooses now, and 3 and 4 are held out.
CHOOSE_SEEDS, HELD_OUT_SEEDS = (1, 2), (3, 4)
DURATION, WARMUP = 100, 10
KEYS = ["traffic", "topology", "flows", "loss", "rate", "shared_delay", "seed"]  # one scenario, whichever LDA
DIFFER = 0.10  # a scenario's LDAs differ when their closed-loop throughputs span more than this
# the candidates: TFRC replayed with X_recv from the model or the trace (``control.tfrc``), t_RTO
# of 4R (RFC 5348 §3.1), 2.75R or 2R (ns-2.35's TFRC takes a TCP-style RTO, srtt + 4 rttvar in
# ticks of 0.1 s: tfrc.cc, update_rtt), loss history discounted or not (RFC 5348 §5.5; ns-2 turns
# it on), capped at and divided by the packet-pair capacity (what ``score`` knows without
# ``--capacity``), capped at and divided by the fair share, or capped at the share the traffic not
# under study leaves (the TCP flow of "mix", ``closedloop.left_share_bps``) and divided by the fair share
MODELS = tuple(
    (
        f"{receive}_rto{rto:g}{'_disc' if discount else ''}_{norm}",
        f"tfrc:receive={receive}:rto_factor={rto:g}" + (":discounting=true" if discount else ""),
        norm,
    )
    for receive, rto, discount, norm in itertools.product(
        ("model", "trace"), (4, 2.75, 2), (False, True), ("capacity", "share", "left")
    )
)
CANDIDATES = [name for name, _, _ in MODELS]
CONSTANT = "constant"  # the baseline that predicts 100 % of the share
OWN = "own_trace"  # the baseline that replays the winner over each LDA's own closed-loop trace


def grid_scenarios(count: int = SCENARIOS, seeds=CHOOSE_SEEDS + HELD_OUT_SEEDS) -> list[dict]:
    """``count`` scenarios with each factor's levels spread evenly over them (each factor's
    levels repeated to ``count`` and shuffled on their own: a fixed draw, the same grid every
    run), each with every seed of ``seeds``. A draw of one flow beside TCP runs TFRC alone (one
    TCP flow needs two flows at least); a draw met before is left out."""
    rng = np.random.default_rng(DRAW_SEED)
    columns = {name: rng.permutation(np.resize(np.arange(len(levels)), count)) for name, levels in FACTORS.items()}
    drawn: list[tuple] = []
    for i in range(count):
        topology, flows, traffic, loss, delay = (FACTORS[name][columns[name][i]] for name in FACTORS)
        scenario = (topology, flows, traffic if flows >= 2 else "tfrc", loss, delay)
        if scenario not in drawn:
            drawn.append(scenario)
    return [
        {
            "traffic": traffic,
            "topology": topology,
            "flows": flows,
            "loss": loss,
            "rate": rate,
            "shared_delay": delay,
            "seed": seed,
            "duration": DURATION,
            "warmup": WARMUP,
        }
        for topology, flows, traffic, (loss, rate), delay in drawn
        for seed in seeds
    ]


def _evaluate(path: str, run: dict, models=MODELS) -> dict:
    """One closed-loop run: what it measured, its decisions against the replay's, and, on the
    unaware run, every candidate of ``models`` for every LDA over its trace."""
    unaware = run["lda"] == "unaware"
    return closedloop.truth(path, run, fair_share_bps(run), LDAS if unaware else None, models)


def _own(path: str, run: dict, model: tuple) -> float:
    """``model`` replayed with the run's own LDA over the run's own trace (mean over its TFRC
    flows; ``left``: what the other traffic of that trace left)."""
    from ..io import read_trace
    from ..timeline import build_timeline

    trace, share = read_trace(path), fair_share_bps(run)
    left = closedloop.left_share_bps(trace.packets, run, share)
    got = closedloop.modeled(build_timeline(trace), (run["lda"],), share, (model,), left)
    return float(got[got["flow"].isin(closedloop.tfrc_flows(run))][model[0]].mean())


def run_grid(scenarios: list[dict], folder: pathlib.Path, workers: int, ns: str) -> tuple[pd.DataFrame, int]:
    """Every scenario closed loop once per LDA (``LDAS``), simulated unless cached in ``folder``;
    the model chosen (:func:`choose`) and replayed over each LDA's own trace. Returns one row per
    scenario and LDA, and how many runs were simulated now. Columns: ``KEYS``, ``lda``, ``trace``,
    ``truth`` (the closed-loop throughput, a share of the fair share), each candidate over the
    unaware run's trace, ``own_trace`` (the winner over the LDA's own trace), the congestion loss
    rate, and the receivers' decisions the offline replay made alike."""
    runs = [{**s, "lda": lda} for s in scenarios for lda in LDAS]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        made = list(pool.map(simulate, runs, itertools.repeat(folder), itertools.repeat(ns)))
        paths = [str(path) for path, _ in made]
        measured = list(pool.map(_evaluate, paths, runs))
        models = {
            tuple(r[k] for k in KEYS): got["model"].set_index("lda") for r, got in zip(runs, measured) if "model" in got
        }
        rows = [
            {
                **{k: run[k] for k in KEYS},
                "lda": run["lda"],
                "trace": path,
                "truth": got["thput"],
                **models[tuple(run[k] for k in KEYS)].loc[run["lda"], CANDIDATES].to_dict(),
                "congestion_rate": got["congestion_rate"],
                "decisions": got.get("decisions"),
                "decisions_equal": got.get("decisions_equal"),
            }
            for run, path, got in zip(runs, paths, measured)
        ]
        frame = pd.DataFrame(rows)
        winner = dict((m[0], m) for m in MODELS)[choose(frame)[0]]
        frame[OWN] = list(pool.map(_own, paths, runs, itertools.repeat(winner)))
    return frame, sum(fresh for _, fresh in made)


def differing(frame: pd.DataFrame, spread: float = DIFFER) -> pd.DataFrame:
    """The rows of the scenarios whose LDAs' closed-loop throughputs span more than ``spread``."""
    span = frame.groupby(KEYS)["truth"].transform(lambda t: t.max() - t.min())
    return frame[span > spread]


def scores(frame: pd.DataFrame, prediction: pd.Series) -> dict:
    """A prediction of ``frame``'s ``truth`` judged: median and 90th percentile of the absolute
    error (points of the share) over its rows, and the median over scenarios of the Spearman
    correlation between the prediction's ranking of the LDAs and the truth's (NaN for a
    prediction that ranks nothing, such as a constant)."""
    if frame.empty:
        return dict.fromkeys(("median_abs_error", "p90_abs_error", "spearman_median"), np.nan) | {
            "rows": 0,
            "scenarios": 0,
        }
    error = (prediction - frame["truth"]).abs() * 100
    both = frame[KEYS].assign(p=prediction.to_numpy(), t=frame["truth"].to_numpy())
    rho = both.groupby(KEYS)[["p", "t"]].apply(
        lambda g: g["p"].corr(g["t"], method="spearman") if g["p"].nunique() > 1 and g["t"].nunique() > 1 else np.nan
    )
    return {
        "median_abs_error": float(error.median()),
        "p90_abs_error": float(error.quantile(0.9)),
        "spearman_median": float(rho.median()) if rho.notna().any() else np.nan,
        "rows": len(frame),
        "scenarios": int(frame.groupby(KEYS).ngroups),
    }


def predictions(frame: pd.DataFrame, candidate: str) -> dict[str, pd.Series]:
    """The candidate's prediction beside the two baselines: the constant 100 % and the winner
    replayed over each LDA's own closed-loop trace (``OWN``: made for the winner alone)."""
    return {candidate: frame[candidate], CONSTANT: pd.Series(1.0, index=frame.index), OWN: frame[OWN]}


def choose(frame: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The candidate with the smallest median absolute error over the choosing seeds' scenarios
    whose LDAs differ (ties: the larger Spearman; none differ: over all their scenarios), and
    every candidate's scores there."""
    seed = frame[frame["seed"].isin(CHOOSE_SEEDS)]
    mine = differing(seed) if not differing(seed).empty else seed
    table = pd.DataFrame([{"model": name, **scores(mine, mine[name])} for name in CANDIDATES])
    best = table.sort_values(["median_abs_error", "spearman_median"], ascending=[True, False]).iloc[0]["model"]
    return str(best), table


def held_out(frame: pd.DataFrame, winner: str) -> pd.DataFrame:
    """The winner and its baselines on the held-out seeds: over the scenarios whose LDAs differ,
    and over all."""
    mine = frame[frame["seed"].isin(HELD_OUT_SEEDS)]
    rows = []
    for scope, part in (("LDAs differ", differing(mine)), ("all", mine)):
        for name, prediction in predictions(part, winner).items():
            rows.append({"scope": scope, "model": name, **scores(part, prediction)})
    return pd.DataFrame(rows)


def breakdown(frame: pd.DataFrame, winner: str, by: list[str]) -> pd.DataFrame:
    """The winner's and the own-trace replay's median absolute error on the held-out seeds'
    differing scenarios, per value of ``by``: where the model misses."""
    mine = differing(frame[frame["seed"].isin(HELD_OUT_SEEDS)])
    error = mine.assign(
        model=(mine[winner] - mine["truth"]).abs() * 100,
        own=(mine[OWN] - mine["truth"]).abs() * 100,
        constant=(1.0 - mine["truth"]).abs() * 100,
    )
    grouped = error.groupby(by)
    return pd.DataFrame(
        {
            "scenarios": mine.drop_duplicates([*KEYS, *by]).groupby(by).size(),
            "model": grouped["model"].median(),
            OWN: grouped["own"].median(),
            CONSTANT: grouped["constant"].median(),
        }
    ).reset_index()
