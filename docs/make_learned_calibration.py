"""Write the calibration section of docs/learned.md: does the learned LDA's confidence mean what it
says on a family it has not seen (issue #48 §2)?

A separate script from ``make_learned_evaluation.py`` because that one rebuilds and re-scores the
whole corpus against every LDA of the registry (565 s and more on a free machine, and every lab
run as root); this one needs only each trace's features, labels and the causes of its losses,
kept per trace in a folder of npz files (arrays only: ``--features``), so that it reruns in
minutes. It replaces the section between its two markers in docs/learned.md.

Each family is held out in turn. Trees are trained on the others (each family weighing the same,
as ``traces/train_learned`` trains); the calibration map is fitted as ``traces/train_learned``
fits it, on the others alone: each of them held out in turn from trees trained on the rest
(``learn.held_out_probabilities``, ``learn.calibration``), so neither the trees nor the map saw
the family they are judged on. Scored per loss (the unit of every score), a loss counting when
an arrival revealed it and its cause is known (a policer's drops as congestion):

* the expected calibration error (ECE): the confidences of the losses in ten bins of equal width
  over [0.5, 1] (the confidence of a call is at least 1/2), the mean over bins, weighed by their
  losses, of |accuracy - mean confidence|; before (the trees' own probability) and after the map;
* the accuracy of the calls made at a confidence of 0.8 or more and the share of losses below it
  (abstained with ``learned:abstain_below=0.8``), and the issue's target: right >= 90 % and no
  more than half the losses abstained, on every held-out family;
* the losses far outside the training range (``calibration.out_of_range``), whose confidence
  is 0.5.

    python docs/make_learned_calibration.py --features DIR [--build --cache DIR --families F,F --seeds 1]
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
import time
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "traces"))
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ldanalyze import learn  # noqa: E402
from ldanalyze.lda.learned import DISAGREE_CODE, OUT_OF_RANGE_CODE, REASON_CODE, judge  # noqa: E402
from ldanalyze.lda.learned.calibration import RADIO, RANGE_MARGIN, training_range  # noqa: E402
from ldanalyze.lda.learned.features import FEATURES  # noqa: E402
from ldanalyze.lda.learned.models import BUNDLED_MODEL, load_model  # noqa: E402

CONFIDENT = 0.8  # the confident calls, and the abstention threshold of the model card
TARGET_ACCURACY, TARGET_ABSTAINED = 0.90, 0.5
BINS = np.linspace(0.5, 1.0, 11)  # ten bins of equal width over the confidence of a call
BEGIN, END = "<!-- calibration: begin -->", "<!-- calibration: end -->"
HEURISTICS = ("biaz", "mbiaz", "spike", "zigzag")  # the base schemes whose decisions are among the features
MARGIN = 0.02  # #48 §1: the learned LDA's accuracy at least the best heuristic's minus 2 points
IMAGE = ROOT / "docs" / "images" / "learned_reliability.png"


def save(folder: pathlib.Path, family: str, name: str, item) -> None:
    """Keep what the calibration needs of one labelled trace as plain arrays (npz, no pickle)."""
    rows = item.decisions[item.decisions["lda"] == "unaware"]
    np.savez(
        folder / f"{family}__{re.sub(r'[^A-Za-z0-9._-]', '_', name)}.npz",
        features=item.features.to_numpy(),
        labels=item.labels,
        loss_gap=rows["gap"].to_numpy(np.int64),
        loss_cause=rows["cause"].astype(str).to_numpy().astype("U16"),
    )


def load(folder: pathlib.Path) -> tuple[list[learn.Labelled], list[str]]:
    """The labelled traces kept in ``folder`` (``save``), as ``learn`` takes them, and each one's family."""
    items, families = [], []
    for path in sorted(folder.glob("*__*.npz")):
        with np.load(path, allow_pickle=False) as saved:
            decisions = pd.DataFrame(
                {"lda": "unaware", "gap": saved["loss_gap"], "cause": saved["loss_cause"].astype(str)}
            )
            features = pd.DataFrame(saved["features"], columns=list(FEATURES))
            items.append(learn.Labelled(path.stem, features, saved["labels"], decisions))
        families.append(path.stem.split("__")[0])
    return items, families


def per_loss(
    item: learn.Labelled, wireless: np.ndarray, confidence: np.ndarray, off: np.ndarray, **extra: np.ndarray
) -> pd.DataFrame:
    """Per loss of ``item`` that an arrival revealed, with a known cause: whether its gap's call
    was right, the call's confidence, which feature was out of range (−1: none), and ``extra``
    per-gap columns (a boolean ``right_<name>`` is whether that call per gap was right)."""
    gap = item.decisions["gap"].to_numpy(np.int64)
    cause = item.decisions["cause"].astype(str).to_numpy()
    keep = (gap >= 0) & np.isin(cause, ("congestion", "wireless", "policing"))
    gap, cause = gap[keep], cause[keep]
    keep = np.isfinite(confidence[gap])
    gap, cause = gap[keep], cause[keep]
    radio = cause == "wireless"
    columns = {"right": wireless[gap] == radio, "confidence": confidence[gap], "off": off[gap]}
    for name, values in extra.items():
        columns[name] = (values[gap] == radio) if name.startswith("right_") else values[gap]
    return pd.DataFrame(columns)


def ece(losses: pd.DataFrame) -> float:
    """Expected calibration error over ``BINS`` (module docstring)."""
    which = np.clip(np.digitize(losses["confidence"], BINS[1:-1]), 0, len(BINS) - 2)
    table = losses.assign(bin=which).groupby("bin")[["right", "confidence"]].agg(["mean", "size"])
    weight = table[("right", "size")] / len(losses)
    return float((weight * (table[("right", "mean")] - table[("confidence", "mean")]).abs()).sum())


def reliability(losses: pd.DataFrame) -> pd.DataFrame:
    """Per confidence bin: its losses, their mean confidence and the accuracy of their calls."""
    which = np.clip(np.digitize(losses["confidence"], BINS[1:-1]), 0, len(BINS) - 2)
    return (
        losses.assign(bin=which)
        .groupby("bin")
        .agg(losses=("right", "size"), confidence=("confidence", "mean"), accuracy=("right", "mean"))
    )


def judged_losses(item: learn.Labelled, model, variants: dict) -> dict[str, pd.DataFrame]:
    """``item``'s losses (``per_loss``) as each variant judges them: ``{name: (calibration map,
    training range, held-out models)}``; a variant named "timing" without the radio's evidence."""
    x = item.features.to_numpy()
    blind = x.copy()
    blind[:, RADIO] = np.nan  # as without a monitor-mode capture
    out = {}
    for name, (calibration, bounds, models) in variants.items():
        seen = blind if name == "timing" else x
        bundle = {"calibration": calibration, "ranges": bounds}
        p, sets = learn.probability(model, seen), learn.held_out_matrix(models, seen)
        wireless, confidence, _, reason = judge(p, seen, bundle, 0.5, sets)
        off = np.where(reason >= OUT_OF_RANGE_CODE, reason - OUT_OF_RANGE_CODE, -1)
        heuristics = {f"right_{h}": x[:, FEATURES.index(h)] > 0.5 for h in HEURISTICS}
        heuristics["right_all_wireless"] = np.ones(x.shape[0], bool)
        out[name] = per_loss(
            item, wireless, confidence, off, deferred=reason >= DISAGREE_CODE, radio=seen[:, RADIO], **heuristics
        )
    return out


def held_out(items, families) -> dict[str, dict[str, pd.DataFrame]]:
    """Per held-out family, its losses judged by the trees' own probability ("raw"), mapped
    ("calibrated"), as the LDA judges them with a map ("lda": mapped, and 0.5 out of range), as
    the range check alone, without one ("range"), and as a model kept with its families does
    ("families"; "timing": the same without the radio's evidence)."""
    out = {}
    for held in sorted(set(families)):
        train = [item for item, f in zip(items, families) if f != held]
        groups = [f for f in families if f != held]
        model, _ = learn.fit(train, "gbt", 0, balance=groups)
        mapping = learn.calibration(train, groups, learn.held_out_probabilities(train, groups))
        ranges = training_range(model)
        sets = list(learn.fit_held_out(train, groups).values())
        variants = {
            "raw": ({}, None, ()),
            "calibrated": (mapping, None, ()),
            "lda": (mapping, ranges, ()),
            "range": ({}, ranges, ()),
            "families": ({}, ranges, sets),
            "timing": ({}, ranges, sets),
        }
        judged = [judged_losses(item, model, variants) for item, f in zip(items, families) if f == held]
        out[held] = {name: pd.concat([j[name] for j in judged], ignore_index=True) for name in variants}
        print(held, {k: len(v) for k, v in out[held].items()}, flush=True)
    return out


def generator(items, families, generated) -> pd.DataFrame:
    """The held-out generator's losses (``generated``: traces of ``ns3-heldout``, never trained
    on) judged by trees trained here on every family of ``items`` and by the bundled model, each
    by its trees alone and deferring (with its held-out models), against the best heuristic
    there (#48 §1 and §2)."""
    model, _ = learn.fit(items, "gbt", 0, balance=families)
    here = (model, training_range(model), list(learn.fit_held_out(items, families).values()))
    bundle = load_model(BUNDLED_MODEL)
    bundled = (bundle["model"], bundle["ranges"], bundle["held_out"])
    rows = []
    for name, (trees, ranges, sets) in (
        (f"trained here on {len(set(families))} families", here),
        (f"bundled (format {bundle['version']}, {len(bundle['held_out'])} held-out models)", bundled),
    ):
        variants = {"trees": ({}, None, ()), "deferring": ({}, ranges, sets)}
        judged = [judged_losses(item, trees, variants) for item in generated]
        trees_alone, deferring = (pd.concat([j[v] for j in judged], ignore_index=True) for v in variants)
        sure = deferring["confidence"] >= CONFIDENT
        best = max(HEURISTICS, key=lambda h: deferring[f"right_{h}"].mean())
        row = {
            "model": name,
            "losses": len(deferring),
            "radio_share": deferring["right_all_wireless"].mean(),  # calling every loss wireless is right there
            "best": best,
            "best_accuracy": deferring[f"right_{best}"].mean(),
            "accuracy_trees": trees_alone["right"].mean(),
            "accuracy": deferring["right"].mean(),
            "deferred": deferring["deferred"].mean(),
            "ece": ece(deferring[~deferring["deferred"]]),
            "sure": deferring.loc[sure, "right"].mean() if sure.any() else np.nan,
            "abstained": 1.0 - sure.mean(),
        }
        row["met_accuracy"] = bool(row["accuracy"] >= row["best_accuracy"] - MARGIN)
        row["met_confident"] = bool(row["sure"] >= TARGET_ACCURACY and row["abstained"] <= TARGET_ABSTAINED)
        rows.append(row)
    return pd.DataFrame(rows)


def summary(judged: dict[str, dict[str, pd.DataFrame]]) -> pd.DataFrame:
    rows = []
    for held, both in judged.items():
        raw, cal, lda, ranged = both["raw"], both["calibrated"], both["lda"], both["range"]
        kept = ranged["confidence"] >= CONFIDENT
        sure = lda["confidence"] >= CONFIDENT
        off = lda["off"][lda["off"] >= 0]
        row = {
            "held_out": held,
            "losses": len(cal),
            "ece_raw": ece(raw),
            "ece_calibrated": ece(cal),
            "accuracy_raw": raw["right"].mean(),
            "sure_raw": raw.loc[raw["confidence"] >= CONFIDENT, "right"].mean(),
            "sure_calibrated": lda.loc[sure, "right"].mean() if sure.any() else np.nan,
            "sure_losses": int(sure.sum()),
            "abstained_raw": (raw["confidence"] < CONFIDENT).mean(),
            "abstained": 1.0 - sure.mean(),
            "off": len(off) / len(lda),
            "off_right": lda.loc[lda["off"] >= 0, "right"].mean() if len(off) else np.nan,
            "off_feature": FEATURES[int(off.mode().iat[0])] if len(off) else "",
        }
        row["met"] = bool(row["sure_calibrated"] >= TARGET_ACCURACY and row["abstained"] <= TARGET_ABSTAINED)
        row["met_raw"] = bool(row["sure_raw"] >= TARGET_ACCURACY and row["abstained_raw"] <= TARGET_ABSTAINED)
        families = both["families"]
        sure = families["confidence"] >= CONFIDENT
        best = max(HEURISTICS, key=lambda h: families[f"right_{h}"].mean())
        row.update(
            {
                "accuracy_families": families["right"].mean(),
                "ece_families": ece(families[~families["deferred"] & families["confidence"].notna()]),
                "sure_families": families.loc[sure, "right"].mean() if sure.any() else np.nan,
                "abstained_families": 1.0 - sure.mean(),
                "deferred": families["deferred"].mean(),
                "best": best,
                "best_accuracy": families[f"right_{best}"].mean(),
            }
        )
        radio = np.isfinite(families["radio"]).any()
        row["accuracy_timing"] = both["timing"]["right"].mean() if radio else np.nan
        row["met_accuracy"] = bool(row["accuracy_families"] >= row["best_accuracy"] - MARGIN)
        row["met_accuracy_trees"] = bool(row["accuracy_raw"] >= row["best_accuracy"] - MARGIN)
        row["met_families"] = bool(
            row["sure_families"] >= TARGET_ACCURACY and row["abstained_families"] <= TARGET_ABSTAINED
        )
        row["sure_range"] = ranged.loc[kept, "right"].mean() if kept.any() else np.nan
        row["abstained_range"] = 1.0 - kept.mean()
        row["met_range"] = bool(row["sure_range"] >= TARGET_ACCURACY and row["abstained_range"] <= TARGET_ABSTAINED)
        rows.append(row)
    return pd.DataFrame(rows)


def figure(judged) -> None:
    """The reliability diagram per held-out family: accuracy against confidence per bin, before
    and after the map, each point's area its share of the family's losses."""
    names = list(judged)
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 4.0 * rows), squeeze=False)
    for ax, held in zip(axes.ravel(), names):
        ax.plot([0.5, 1.0], [0.5, 1.0], color="0.6", lw=1, ls="--", label="perfectly calibrated")
        for name, colour, label in (
            ("raw", "tab:grey", "trees"),
            ("calibrated", "tab:blue", "mapped"),
            ("families", "tab:orange", "deferring LDA"),
        ):
            losses = judged[held][name]
            if name == "families":
                losses = losses[~losses["deferred"]]
            table = reliability(losses)
            share = table["losses"] / table["losses"].sum()
            ax.plot(
                table["confidence"], table["accuracy"], color=colour, lw=1.5, label=f"{label}, ECE {ece(losses):.3f}"
            )
            ax.scatter(table["confidence"], table["accuracy"], s=10 + 400 * share, color=colour, alpha=0.6)
        ax.axvline(CONFIDENT, color="tab:red", lw=0.8, ls=":")
        ax.set_title(f"{held} held out ({len(judged[held]['raw']):,} losses)", fontsize=10)
        ax.set_xlim(0.48, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("confidence of the call")
        ax.set_ylabel("share of calls right")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    for ax in axes.ravel()[len(names) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(IMAGE, dpi=80)
    plt.close(fig)


def markdown(header: list[str], align: str, rows: list[list[str]]) -> list[str]:
    """A Markdown table: ``align`` one character per column (``l`` left, ``r`` right)."""
    rule = "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"
    return ["| " + " | ".join(header) + " |", rule, *("| " + " | ".join(row) + " |" for row in rows)]


def met(flag: bool) -> str:
    return "met" if flag else "missed"


def percent(x: float) -> str:
    return "n/a" if pd.isna(x) else f"{100 * x:.1f}"


def in_corpus_rate(items, families) -> str:
    """How often the bundled model's range check fires on these traces (families it was trained
    on, other seeds): its false alarms in the corpus."""
    bundle = load_model(BUNDLED_MODEL)
    fired = Counter()
    total = Counter()
    for item, f in zip(items, families):
        x = item.features.to_numpy()
        p = learn.probability(bundle["model"], x)
        _, confidence, _, reason = judge(p, x, bundle, 0.5)
        losses = per_loss(item, np.zeros(len(x), bool), confidence, np.where(reason > REASON_CODE, 0, -1))
        fired[f] += int((losses["off"] >= 0).sum())
        total[f] += len(losses)
    return ", ".join(f"`{f}` {percent(fired[f] / max(total[f], 1))} %" for f in sorted(total))


def section(table: pd.DataFrame, counts: Counter, seconds: float, in_corpus: str, extra: list[str]) -> str:
    lines = [
        BEGIN,
        "## Does its confidence mean what it says? (calibration, out of range)",
        "",
        f"Made by `python docs/make_learned_calibration.py` in {seconds:.0f} s (not by "
        "`make_learned_evaluation.py`: that one rebuilds and scores the whole corpus against every LDA; this one "
        "needs only the features and the causes of the losses). **On part of the corpus:** "
        + ", ".join(f"`{f}` {n}" for f, n in sorted(counts.items()))
        + " traces, evaluation seed 1 (the lab families need root and real time, and the machine was shared; "
        "the held-out figures above are on all eight). So each model here is trained on fewer families "
        "than the bundled one, and the maps are fitted on fewer still.",
        "",
        "Each family is held out in turn: trees trained on the others, and a calibration map (isotonic, per group: "
        "`ldanalyze/lda/learned/calibration.py`) fitted on the others alone, each of them held out in turn from "
        "trees trained on the rest, as `traces/train_learned` fits the bundled model's. Scored per loss revealed "
        "by an arrival, of a known cause (a policer's drops as congestion). ECE: the losses' confidences in ten "
        "bins of equal width over [0.5, 1], the mean of |accuracy − mean confidence| over the bins weighed by "
        "their losses; *trees*: the trees' own confidence, *mapped*: through the map (which leaves the calls "
        "as they are, so the accuracy is the same). *Sure*: the calls made at a confidence of 0.8 "
        "or more, *abstained*: the losses below it (`learned:abstain_below=0.8`), by the trees' own confidence, "
        "as the LDA with a map judges (mapped, and mBiaz at 0.5 out of range), and with the range check alone "
        "(no map). *Right there*: the share of the out-of-range losses whose call (mBiaz's: the LDA defers there) was right. *Out of range*: losses whose gap has a feature beyond the training "
        f"data's outer bin edges by {RANGE_MARGIN:g} times their distance (the feature most often so in brackets). "
        "The target (#48): sure calls right ≥ 90 % and no more than half the losses abstained, on every held-out "
        "family.",
        "",
    ]
    lines += markdown(
        ["held out", "losses", "ECE, trees", "ECE, mapped", "accuracy", "sure right, trees", "sure right, mapped LDA",
         "sure calls", "abstained, trees", "abstained, mapped LDA", "out of range", "right there", "target, trees",
         "target, mapped LDA", "sure right, range check", "abstained, range check", "target, range check"],
        "lrrrrrrrrrrrllrrl",
        [[r.held_out, f"{r.losses:,}", f"{r.ece_raw:.3f}", f"{r.ece_calibrated:.3f}", percent(r.accuracy_raw),
          percent(r.sure_raw), percent(r.sure_calibrated), f"{r.sure_losses:,}", percent(r.abstained_raw),
          percent(r.abstained), percent(r.off) + (f" ({r.off_feature})" if r.off_feature else ""),
          percent(r.off_right), met(r.met_raw), met(r.met), percent(r.sure_range), percent(r.abstained_range),
          met(r.met_range)] for r in table.itertuples()],
    )  # fmt: skip
    better = [r.held_out for r in table.itertuples() if r.ece_calibrated < r.ece_raw]
    worse = [r.held_out for r in table.itertuples() if r.ece_calibrated >= r.ece_raw]
    lines += [
        "",
        f"**What it shows.** Held out, the map lowers the ECE on {len(better)} families of {len(table)} "
        f"({', '.join(f'`{g}`' for g in better) or 'none'}) and raises it on {len(worse)} "
        f"({', '.join(f'`{g}`' for g in worse) or 'none'}): the trees are over-confident on some unseen "
        "families and under-confident on others, and a map fitted on the other families moves each one towards "
        "their average, the wrong way for those unlike the rest. The target is met on "
        + (", ".join(f"`{r.held_out}`" for r in table.itertuples() if r.met_raw) or "none")
        + " by the trees' own confidence and on "
        + (", ".join(f"`{r.held_out}`" for r in table.itertuples() if r.met) or "none")
        + " by the LDA with the map and the range check (the map's lower confidences send more losses below 0.8), "
        "and on "
        + (", ".join(f"`{r.held_out}`" for r in table.itertuples() if r.met_range) or "none")
        + " with the range check alone (the trees' confidence, mBiaz at 0.5 out of range). "
        "So the bundled model carries the range check and no map (`traces/train_learned --calibrate` fits one). "
        "The range check fires where a family's features are new to the trees, but not on the family where the "
        "trees are most wrong (`ns3-lte`, whose features lie within the others' range): the features one by one "
        "do not say when this model is wrong there; its families' trees, which disagree there, do (below).",
        "",
        *deferring_section(table),
        *extra,
        "",
        "![Reliability per held-out family](images/learned_reliability.png)",
        "",
        "The reliability diagram: per held-out family, the share of calls right against their confidence, "
        "per bin, with the trees' own probability (grey), mapped (blue) and the deferring LDA's (orange: the "
        "median of the held-out sets, its calls not deferred); each point's area is its share of "
        "the family's losses, the dashed line perfect calibration, the dotted one the 0.8 of a sure call.",
        "",
        f"In the corpus, the bundled model's range check fires on these shares of the losses of these traces, of "
        f"families it was trained on (other seeds): {in_corpus}.",
        END,
    ]
    return "\n".join(lines)


def deferring_section(table: pd.DataFrame) -> list[str]:
    """The deferring LDA (a model kept with its families, format 6) held out by family, against
    the best heuristic there and the targets of #48 §1 and §2."""
    lines = [
        "",
        "### The LDA that defers: a model kept with its families",
        "",
        "Each family held out is judged as a model trained with its families named judges it (format 6, "
        "`traces/train_learned`): trees trained on the other families and, per one of those, the same trees "
        "without it. Where one of them gives the call a probability below 0.7, or a feature is out of range, the "
        "call is mBiaz's at a confidence of 0.5 (*deferred*); elsewhere its confidence is their median "
        "(`ldanalyze/lda/learned/__init__.py`). *Best heuristic*: the best of Biaz, mBiaz, Spike and ZigZag on "
        "the held-out family itself (their calls are among the features), the comparison most favourable to "
        "them. The targets of #48: §1, an accuracy at least the best heuristic's minus 2 points; §2, the calls "
        "at 0.8 or more right 90 % of the time, no more than half the losses abstained. *ECE* over the calls "
        "not deferred. *Without the radio's evidence*: the deferring LDA's accuracy with `unseen_on_air` removed, as "
        "on a capture without a monitor-mode vantage (n/a: the family has no such evidence).",
        "",
    ]
    lines += markdown(
        ["held out", "losses", "best heuristic", "its accuracy", "trees alone", "§1, trees", "deferring LDA",
         "deferred", "§1, deferring", "without the radio's evidence", "ECE", "sure right", "abstained below 0.8", "§2"],
        "lrlrrlrrlrrrrl",
        [[r.held_out, f"{r.losses:,}", r.best, percent(r.best_accuracy), percent(r.accuracy_raw),
          met(r.met_accuracy_trees), percent(r.accuracy_families), percent(r.deferred), met(r.met_accuracy),
          percent(r.accuracy_timing), f"{r.ece_families:.3f}", percent(r.sure_families),
          percent(r.abstained_families), met(r.met_families)] for r in table.itertuples()],
    )  # fmt: skip
    first = [r.held_out for r in table.itertuples() if r.met_accuracy]
    second = [r.held_out for r in table.itertuples() if r.met_families]
    cost = [
        f"`{r.held_out}` {percent(r.accuracy_raw)} → {percent(r.accuracy_families)}"
        for r in table.itertuples()
        if r.accuracy_families < r.accuracy_raw - 0.005
    ]
    lines += [
        "",
        f"**What it shows.** Deferring meets §1 on {len(first)} families of {len(table)}, the trees alone on "
        f"{int(table['met_accuracy_trees'].sum())}. It meets §2 on {len(second)} "
        f"({', '.join(f'`{g}`' for g in second) or 'none'}): where the families' trees disagree the LDA abstains, "
        "so its sure calls are right more often than the trees' and it abstains more. Deferring costs where the "
        "trees were right and the families' trees still disagree: " + (", ".join(cost) or "nowhere") + ". The "
        "threshold 0.7 was chosen on the corpus before it was widened (these six families, seed 1): among 0.6, 0.7 "
        "and 0.8, 0.6 missed §1 on `ns3-lte` and 0.8 on `ns2-wlh`, and no rule tried there (the lowest, lower "
        "quartile, median or mean of the held-out sets' probabilities, thresholds 0.5-0.8) met §1 on `ns3-lte` "
        "without those costs: the features alone do not tell `ns3-lte`'s wrong calls from the other families' "
        "right ones. This table, on the widened corpus, and the held-out generator judge it afresh.",
    ]
    return lines


def generator_section(table: pd.DataFrame, traces: int) -> list[str]:
    """The held-out generator's table (``generator``)."""
    lines = [
        "",
        "### The held-out generator",
        "",
        f"`traces/ns3/heldout.cc` ({traces} receivers of the evaluation-only family `ns3-heldout`, "
        "`traces/corpus.py` `heldout_cases`): written for evaluation alone, never trained on, its ranges unlike "
        "the training ones (802.11n/ac with Minstrel-HT and A-MPDU, time-correlated Rayleigh fading, a faster "
        "wired bottleneck with longer queues, TCP and bursty cross traffic). Judged by trees trained here on every "
        "family above and by the bundled model, each by its trees alone and deferring; the best heuristic chosen "
        "on the generator's own losses.",
        "",
    ]
    lines += markdown(
        ["model", "losses", "the radio's", "best heuristic", "its accuracy", "trees alone", "deferring LDA",
         "deferred", "§1", "ECE", "sure right", "abstained below 0.8", "§2"],
        "lrrlrrrrlrrrl",
        [[r.model, f"{r.losses:,}", percent(r.radio_share), r.best, percent(r.best_accuracy),
          percent(r.accuracy_trees), percent(r.accuracy), percent(r.deferred), met(r.met_accuracy), f"{r.ece:.3f}",
          percent(r.sure), percent(r.abstained), met(r.met_confident)] for r in table.itertuples()],
    )  # fmt: skip
    said = [
        f"{r.model}: trees alone {percent(r.accuracy_trees)} %, deferring {percent(r.accuracy)} % "
        f"({percent(r.deferred)} % of the losses deferred)"
        for r in table.itertuples()
    ]
    lines += [
        "",
        "On the generator the trees carry over (" + "; ".join(said) + "); `learned:defer_below=0` keeps the trees' "
        "call wherever the features are in range, for a link known to be like the corpus's.",
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", required=True, help="folder of the per-trace npz files (read, or written by --build)")
    ap.add_argument("--build", action="store_true", help="build the corpus first (traces/corpus.py)")
    ap.add_argument("--cache", help="with --build: folder for the ns-2 traces and lab runs")
    ap.add_argument("--families", default="ns2-wlh,ns2-wb,ns2-manet,ns3-wifi,ns3-lte,ns3-policed")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--generator", action="store_true", help="with --build: the held-out generator too (ns3-heldout)")
    args = ap.parse_args()
    start = time.perf_counter()
    folder = pathlib.Path(args.features)
    folder.mkdir(parents=True, exist_ok=True)
    if args.build:
        import corpus

        seeds = tuple(int(s) for s in args.seeds.split(","))
        cache = pathlib.Path(args.cache or folder / "traces")
        built = args.families.split(",") + (list(corpus.HELD_OUT_FAMILIES) if args.generator else [])
        for family, name, _, item in corpus.items(cache, built, jobs=args.jobs, seeds=seeds):
            save(folder, family, name, item)
    items, families = load(folder)
    generated = [item for item, f in zip(items, families) if f == "ns3-heldout"]
    chosen = set(args.families.split(","))
    items, families = zip(*[(i, f) for i, f in zip(items, families) if f in chosen])
    judged = held_out(list(items), list(families))
    table = summary(judged)
    table.to_csv(folder / "summary.csv", index=False)
    figure(judged)
    in_corpus = in_corpus_rate(items, families)
    extra = generator_section(generator(items, families, generated), len(generated)) if generated else []
    text = section(table, Counter(families), time.perf_counter() - start, in_corpus, extra)
    doc = ROOT / "docs" / "learned.md"
    old = doc.read_text()
    if BEGIN in old:
        old = old[: old.index(BEGIN)] + text + old[old.index(END) + len(END) :]
    else:
        marker = "\n## Held out by family\n"
        old = old.replace(marker, "\n" + text + "\n" + marker, 1)
    doc.write_text(old)
    print(text)


if __name__ == "__main__":
    main()
