"""What paper 000's suite is (§V): the scenarios of a run, the LDAs judged, the grids of the §III
sweeps, and the mean over seeds that every table, figure and statement reads."""

from __future__ import annotations

import dataclasses
import itertools

import pandas as pd

LDAS = ("unaware", "omniscient", "biaz", "mbiaz", "spike", "zigzag", "zbs")
BASE = ("biaz", "mbiaz", "spike", "zigzag")  # the base schemes ZBS picks among (§VII-A)
HIGH = ("uniform", 0.078)
# paper 000 Tables II and III (§VI-A: high wireless loss, 7.8 %, Jakes-model fading): set cell by
# cell against the suite's uniform loss (the Bernoulli model §V-B says matched it) and its bursty one
CELL_LOSSES = (HIGH, ("bursty", 0.078))
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
# what names a scenario, whichever LDA ran it
SCENARIO_KEYS = ["traffic", "topology", "flows", "loss", "rate", "seed"]


def mean_over_seeds(results: pd.DataFrame, topology: str, loss=HIGH) -> pd.DataFrame:
    """Mean and spread over seeds, per number of flows and LDA, for one topology and loss."""
    mine = results[(results["topology"] == topology) & (results["loss"] == loss[0]) & (results["rate"] == loss[1])]
    return mine.groupby(["flows", "lda"], sort=True)[["M_c", "M_w", "accuracy", "thput", "congestion_rate"]].agg(
        ["mean", "min", "max"]
    )
