"""Rebuild docs/sender.md's tables: Flach et al.'s policer detector and every sender-side LDA
against the truth of the lab grid (issue #44 §2, "Target").

The grid is ``traces/sender_grid.py``'s cache (its docstring has the layout): per run, the
sender's capture is read by the package's reader (``ldanalyze.read_trace``: the sender's view),
the chain's truth joined onto it (``with_chain_truth``: sender.pcap, r1.pcap as ``wireless``,
r2.pcap as ``policing`` behind a policer and ``congestion`` otherwise, receiver.pcap), and

* ``flach_verdicts`` runs on the sender's view *without* the truth (what the sender knew), as
  written (``Flach()``, and their second run ``Flach(cutoff=2)``) and as the lab variant
  (``SenderPolicerLab()``); a chunk is lossy when
  the truth dropped some transmission of it;
* every sender-side LDA (``--lda all`` on a sender's trace) and ``flach_pd`` / ``flach_pd_lab``
  classify the truth-joined timeline's losses, scored by ``ldanalyze.score`` with a policer's
  drops counted as congestion (``policing_as="congestion"``).

    python docs/make_sender_evaluation.py [GRID] [--held-out HELD_OUT_GRID] [--out docs/sender.md]

``--held-out`` also judges the detectors on the held-out grid (``sender_grid.py --grid
held-out``: values none of the training grid's, run after ``flach_pd_lab``'s thresholds were
fixed), the page's "A held-out grid" blocks.

Nothing is run in the lab: the cache is read. The page's text around the tables is written
here, so that every number on it comes from the grid.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import re
import sys
import time
import warnings

import numpy as np
import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "traces"))
sys.path.insert(0, str(ROOT))

import sender_grid  # noqa: E402

import ldanalyze as la  # noqa: E402
from ldanalyze.io.capture.chain_truth import with_chain_truth  # noqa: E402
from ldanalyze.lda.sender_policer import POLICED, Flach, SenderPolicerLab, flach_verdicts  # noqa: E402

CACHE = pathlib.Path.home() / ".cache" / "ldanalyze" / "sender_grid"
HELD_OUT = pathlib.Path.home() / ".cache" / "ldanalyze" / "sender_grid_held-out"
# as written (their two runs: cutoff 0 and 2, Flach et al. §3.2) and the lab variant
DETECTORS = {"flach_pd": Flach(), "flach_pd cutoff=2": Flach(cutoff=2), "flach_pd_lab": SenderPolicerLab()}
MAIN = ("flach_pd", "flach_pd_lab")  # the detectors of the held-out, rule and rate tables
LDAS = "all,flach_pd,flach_pd_lab"
HINDSIGHT = ("flach_pd", "flach_pd_lab")
R2_CAUSE = {"nft-policer": "policing", "tbf": "congestion", "none": "congestion"}  # r2 limits nothing: no drops
KINDS = {"policer": "policed", "shaper": "shaped", "random": "random loss"}
CROSS = ("none", "udp", "tcp")
TARGET_POLICED, TARGET_OTHER = 0.80, 0.01
PUBLISHED = {"policer": "about half", "shaper": "under 1 %"}  # Flach et al.'s detector on their lab, as #44 states it
NAME = re.compile(
    r"^(?P<kind>policer|shaper|random)-(?P<a>[^-]+)(?:-(?P<b>[bq][^-]+))?(?:-(?P<cross>udp|tcp))?-r(?P<r>\d+)$"
)


def half(name: str, values: sender_grid.Values = sender_grid.TRAINING) -> str:
    """The held-out half of a run of the grid of ``values``, "A" or "B", by a rule fixed before
    any verdict was looked at: a checkerboard over the grid's coordinates, the parity of the sum
    of the run's indices (rate, bucket or queue, cross traffic, repeat; random loss: percent and
    repeat) in ``traces/sender_grid.py``'s orders, so that each half holds every rate, size and
    cross traffic."""
    m = NAME.match(name)
    if m is None:
        raise ValueError(f"{name}: not a run of traces/sender_grid.py")
    if m["kind"] == "random":
        index = values.random.index(int(m["a"].removesuffix("pct")))
    else:
        sizes = list(values.buckets if m["kind"] == "policer" else values.queues_s)
        index = list(values.rates).index(m["a"]) + sizes.index(m["b"][1:])
    index += CROSS.index(m["cross"] or "none") + int(m["r"])
    return "AB"[index % 2]


@dataclasses.dataclass
class RunResult:
    """One run's evaluation: per chunk and detector the verdict and truth (``chunks``), per
    loss and LDA the decision (``decisions``, with ``trace`` the run), the greedy cross flow's
    throughput in each of its seconds as a share of the policer's rate (``cross_shares``: empty
    unless a policer and TCP cross traffic), and the wall time."""

    name: str
    kind: str
    cross: str
    half: str
    chunks: pd.DataFrame
    decisions: pd.DataFrame
    seconds: float
    cross_shares: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))


def evaluate_run(folder: pathlib.Path, values: sender_grid.Values = sender_grid.TRAINING) -> RunResult:
    """The evaluation of one run folder of the grid of ``values`` (module docstring)."""
    started = time.monotonic()
    folder = pathlib.Path(folder)
    facts = json.loads((folder / "run.json").read_text())
    cause = R2_CAUSE[facts["config"]["limiter"]]
    with warnings.catch_warnings():  # the captures' ICMP and UDP probes, skipped and said so
        warnings.simplefilter("ignore")
        view = la.read_trace(folder / "sender.pcap")
        chain = [folder / "sender.pcap", f"{folder / 'r1.pcap'}:wireless", f"{folder / 'r2.pcap'}:{cause}"]
        truth = with_chain_truth(view, [*chain, folder / "receiver.pcap"])
    dropped = truth.packets["fate"].isin(["policing", "congestion", "wireless"])
    lossy = set(map(tuple, truth.packets.loc[dropped, ["flow", "chunk"]].astype({"flow": str}).to_numpy()))
    true_rate = facts["limiter"].get("policed_rate_bps", np.nan)
    rows = []
    for name, detector in DETECTORS.items():
        v = flach_verdicts(view, detector)
        v["lossy"] = [(f, c) in lossy for f, c in zip(v["flow"], v["chunk"])]
        v["rate_error"] = v["rate_bps"] / true_rate - 1
        rows.append(v.assign(detector=name))
    decisions = la.classify(la.build_timeline(truth), LDAS)
    m = NAME.match(folder.name)
    cross = (m["cross"] if m else None) or "none"
    return RunResult(
        name=folder.name,
        kind=facts["kind"],
        cross=cross,
        half=half(folder.name, values),
        chunks=pd.concat(rows, ignore_index=True).assign(run=folder.name, kind=facts["kind"], cross=cross),
        decisions=decisions.assign(trace=folder.name, kind=facts["kind"]),
        cross_shares=cross_shares(facts),
        seconds=time.monotonic() - started,
    )


def cross_shares(facts: dict) -> np.ndarray:
    """The greedy TCP cross flow's throughput in each of its seconds (iperf3's intervals) as a
    share of the policer's rate: the tokens it took, which the flow under test could not."""
    rate = facts["limiter"].get("policed_rate_bps")
    cross = facts.get("cross") or {}
    if not rate or facts["config"]["cross"] != "tcp" or "intervals" not in cross:
        return np.zeros(0)
    return np.array([i["sum"]["bits_per_second"] / rate for i in cross["intervals"]])


def share_lines(results: list[RunResult]) -> list[str]:
    """Over the policed runs with a greedy TCP flow: the share of the policer's rate it took,
    per second, pooled, and the median over runs of its coefficient of variation."""
    runs = [r.cross_shares for r in results if len(r.cross_shares)]
    if not runs:
        return []
    pooled = np.concatenate(runs)
    p10, p50, p90 = np.percentile(pooled, [10, 50, 90])
    cv = np.median([x.std() / x.mean() for x in runs if x.mean() > 0])
    return markdown(
        [
            "runs",
            "seconds",
            "its share of the policed rate: median",
            "10th to 90th percentile",
            "cv within a run (median)",
        ],
        "|---:|---:|---:|---|---:|",
        [(len(runs), len(pooled), percent(p50), f"{percent(p10)} to {percent(p90)}", f"{cv:.2f}")],
    )


def percent(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{100 * x:.1f} %"


def markdown(header: list[str], align: str, rows) -> list[str]:
    return ["| " + " | ".join(header) + " |", align, *("| " + " | ".join(str(c) for c in row) + " |" for row in rows)]


def called(chunks: pd.DataFrame, detector: str) -> tuple[int, int]:
    """Lossy chunks, and those the detector called policed."""
    lossy = chunks[(chunks["detector"] == detector) & chunks["lossy"]]
    return len(lossy), int((lossy["verdict"] == POLICED).sum())


def share(n: int, k: int) -> str:
    return f"{k} ({percent(k / n)})" if n else "–"


def detector_lines(chunks: pd.DataFrame, lab_label: str = "flach_pd_lab (in-sample)") -> list[str]:
    """Per kind and cross traffic: lossy chunks, those each detector called policed."""
    rows = []
    for kind, label in KINDS.items():
        for cross in (*CROSS, "all"):
            these = chunks[(chunks["kind"] == kind) & ((chunks["cross"] == cross) | (cross == "all"))]
            if these.empty:
                continue
            n, written = called(these, "flach_pd")
            _, second = called(these, "flach_pd cutoff=2")
            _, lab = called(these, "flach_pd_lab")
            target = f"≥ {100 * TARGET_POLICED:.0f} %" if kind == "policer" else f"≤ {100 * TARGET_OTHER:.0f} %"
            name, published = (f"**{label}, all**", PUBLISHED.get(kind, "–")) if cross == "all" else (label, "")
            rows.append(
                (
                    name,
                    "" if cross == "all" else cross,
                    n,
                    share(n, written),
                    share(n, second),
                    share(n, lab),
                    target,
                    published,
                )
            )
    return markdown(
        [
            "losses through",
            "cross traffic",
            "lossy chunks",
            "flach_pd (as written)",
            "cutoff=2 (their second run)",
            lab_label,
            "target",
            "Flach et al.'s lab",
        ],
        "|---|---|---:|---:|---:|---:|---|---|",
        rows,
    )


def held_out_lines(chunks: pd.DataFrame) -> list[str]:
    """Per half of the grid (``half``): lossy policed chunks called policed, lossy shaped or
    random-loss chunks called policed, each detector."""
    rows = []
    for h in ("A", "B"):
        these = chunks[chunks["half"] == h]
        runs = these["run"].nunique()
        for detector in MAIN:
            n_p, k_p = called(these[these["kind"] == "policer"], detector)
            n_o, k_o = called(these[these["kind"] != "policer"], detector)
            rows.append((h, runs, detector, n_p, share(n_p, k_p), n_o, share(n_o, k_o)))
    return markdown(
        [
            "half",
            "runs",
            "detector",
            "lossy policed chunks",
            "called policed",
            "lossy shaped or random",
            "called policed",
        ],
        "|---|---:|---|---:|---:|---:|---:|",
        rows,
    )


def rate_lines(chunks: pd.DataFrame) -> list[str]:
    """For the policed chunks called policed: the token rate's error against the policer's."""
    rows = []
    for detector in MAIN:
        for cross in CROSS:
            c = chunks[
                (chunks["detector"] == detector)
                & (chunks["kind"] == "policer")
                & (chunks["cross"] == cross)
                & (chunks["verdict"] == POLICED)
            ]["rate_error"]
            if c.empty:
                rows.append((detector, cross, 0, "–", "–", "–"))
                continue
            within = int((c.abs() <= 0.1).sum())
            rows.append(
                (detector, cross, len(c), f"{100 * c.median():+.1f} %", f"{within} ({percent(within / len(c))})",
                 f"{100 * c.min():+.1f} to {100 * c.max():+.1f} %")
            )  # fmt: skip
    return markdown(
        ["detector", "cross traffic", "policed chunks called policed", "median rate error", "within ±10 %", "range"],
        "|---|---|---:|---:|---:|---|",
        rows,
    )


def rule_lines(chunks: pd.DataFrame) -> list[str]:
    """Per detector and kind, what ruled policing out on the lossy chunks it did not call
    policed: its verdict's rule, counted."""
    rows = []
    for detector in MAIN:
        for kind, label in KINDS.items():
            c = chunks[(chunks["detector"] == detector) & (chunks["kind"] == kind) & chunks["lossy"]]
            out = c[c["verdict"] != POLICED]
            why = out["rule"].astype(str).where(out["rule"].astype(str) != "", out["verdict"].astype(str))
            counts = why.value_counts()
            rows.append(
                (detector, label, len(c), len(out), ", ".join(f"{rule} {n}" for rule, n in counts.items()) or "–")
            )
    return markdown(
        ["detector", "losses through", "lossy chunks", "not called policed", "the rule that ruled policing out"],
        "|---|---|---:|---:|---|",
        rows,
    )


def verdict_line(chunks: pd.DataFrame, in_sample: bool = True) -> str:
    """The issue's target against each detector: met or not, with the figures; ``in_sample``:
    the chunks are those ``flach_pd_lab``'s thresholds were chosen on."""
    lines = ["**Against the target** (≥ 80 % of the lossy policed chunks, ≤ 1 % of the others):", ""]
    for detector in DETECTORS:
        n_p, k_p = called(chunks[chunks["kind"] == "policer"], detector)
        n_o, k_o = called(chunks[chunks["kind"] != "policer"], detector)
        met = n_p and n_o and k_p / n_p >= TARGET_POLICED and k_o / n_o <= TARGET_OTHER
        lines.append(
            f"- `{detector}`{' (in-sample)' if in_sample and detector == 'flach_pd_lab' else ''}: {k_p} of {n_p} policed "
            f"({percent(k_p / n_p if n_p else np.nan)}), {k_o} of {n_o} shaped or random-loss "
            f"({percent(k_o / n_o if n_o else np.nan)}): **{'met' if met else 'not met'}**."
        )
    return "\n".join(lines)


def lda_lines(decisions: pd.DataFrame) -> list[str]:
    """Per LDA: M_c on the policed and the shaped losses, M_w on the random ones, and the
    pooled accuracy; a policer's drops counted as congestion."""
    kinds = [k for k in KINDS if (decisions["kind"] == k).any()]
    tables = {}
    for kind in (*kinds, "all"):
        these = decisions if kind == "all" else decisions[decisions["kind"] == kind]
        tables[kind] = la.score(these, by="pooled", bootstrap=0, policing_as="congestion").set_index("lda")
    ldas = [str(x) for x in decisions["lda"].cat.categories if x in tables["all"].index]
    metric = {"policer": "M_c", "shaper": "M_c", "random": "M_w"}
    header = ["LDA"]
    for kind in kinds:
        t = tables[kind]
        header.append(f"{KINDS[kind]}: {int(t['losses'].max())} losses, {int(t['scored'].max())} scored")
    header += ["all: M_c", "M_w", "accuracy"]
    rows = []
    for lda in ldas:
        name = f"{lda} †" if lda in HINDSIGHT else lda
        cells = [f"{metric[k]} {percent(tables[k].loc[lda, metric[k]])}" for k in kinds]
        a = tables["all"].loc[lda]
        rows.append((name, *cells, percent(a["M_c"]), percent(a["M_w"]), percent(a["accuracy"])))
    return markdown(header, "|---|" + "---:|" * (len(header) - 1), rows)


def run_rows(result: RunResult) -> list[tuple]:
    """The per-run table's row of one run: chunks, lossy chunks, those each detector called
    policed, the losses by truth and the LDAs' decisions scored, and the lab variant's median
    token rate error on the chunks it called policed."""
    c = result.chunks
    n, written = called(c, "flach_pd")
    _, lab = called(c, "flach_pd_lab")
    errors = c.loc[(c["detector"] == "flach_pd_lab") & (c["verdict"] == POLICED), "rate_error"].dropna()
    losses = result.decisions.drop_duplicates("uid")
    return [
        (
            result.name,
            result.half,
            int((c["detector"] == "flach_pd").sum()),
            n,
            written,
            lab,
            len(losses),
            f"{100 * errors.median():+.1f} %" if len(errors) else "–",
        )
    ]


def run_lines(results: list[RunResult]) -> list[str]:
    return markdown(
        ["run", "half", "chunks", "lossy", "flach_pd", "flach_pd_lab", "losses", "lab rate error"],
        "|---|---|---:|---:|---:|---:|---:|---:|",
        [row for r in results for row in run_rows(r)],
    )


def runtime_line(results: list[RunResult]) -> str:
    s = np.array([r.seconds for r in results])
    slowest = results[int(np.argmax(s))].name
    return (
        f"**Runtime**: {len(s)} runs in {s.sum():.0f} s: {np.median(s):.1f} s a run (median; {s.min():.1f} to "
        f"{s.max():.1f} s, the slowest {slowest}), "
        "reading the four captures, joining the truth, building the timeline, the detector's three settings and "
        f"every LDA ({LDAS}), one process on a shared 2-core machine, the numba cache warm."
    )


def evaluate_grid(grid: pathlib.Path, values: sender_grid.Values = sender_grid.TRAINING) -> list[RunResult]:
    runs = sorted(p.parent for p in pathlib.Path(grid).glob("*/run.json"))
    if not runs:
        raise SystemExit(f"{grid}: no run of traces/sender_grid.py (no */run.json)")
    results = []
    for k, folder in enumerate(runs, 1):
        results.append(evaluate_run(folder, values))
        print(f"{k}/{len(runs)} {folder.name}: {results[-1].seconds:.1f} s", file=sys.stderr, flush=True)
    return results


def all_chunks(results: list[RunResult]) -> pd.DataFrame:
    return pd.concat([r.chunks.assign(half=r.half) for r in results], ignore_index=True)


def held_out_tables(results: list[RunResult]) -> dict[str, str]:
    """The page's blocks of the held-out grid: its runs, the detector table, the target, the
    rules."""
    chunks = all_chunks(results)
    kinds = pd.Series([r.kind for r in results]).value_counts()
    grid = ", ".join(f"{kinds.get(k, 0)} {label}" for k, label in KINDS.items())
    return {
        "fresh-grid": f"**Runs**: {len(results)} ({grid}).",
        "fresh-detector": "\n".join(detector_lines(chunks, "flach_pd_lab (held out)")),
        "fresh-target": verdict_line(chunks, in_sample=False),
        "fresh-rules": "\n".join(rule_lines(chunks)),
        "fresh-share": "\n".join(share_lines(results)),
    }


def tables(results: list[RunResult]) -> dict[str, str]:
    """The page's generated blocks, by the marker they replace."""
    chunks = all_chunks(results)
    decisions = pd.concat([r.decisions for r in results], ignore_index=True)
    decisions["lda"] = decisions["lda"].astype(pd.CategoricalDtype([str(c) for c in decisions["lda"].cat.categories]))
    kinds = pd.Series([r.kind for r in results]).value_counts()
    grid = ", ".join(f"{kinds.get(k, 0)} {label}" for k, label in KINDS.items())
    return {
        "grid": f"**Runs**: {len(results)} ({grid}).",
        "detector": "\n".join(detector_lines(chunks)),
        "held-out": "\n".join(held_out_lines(chunks)),
        "rules": "\n".join(rule_lines(chunks)),
        "target": verdict_line(chunks),
        "rate": "\n".join(rate_lines(chunks)),
        "share": "\n".join(share_lines(results)),
        "ldas": "\n".join(lda_lines(decisions)),
        "runtime": runtime_line(results),
        "runs": "\n".join(run_lines(results)),
    }


BLOCKS = ("grid", "detector", "target", "held-out", "rules", "share", "rate", "ldas", "runtime", "runs")
HELD_OUT_BLOCKS = ("fresh-grid", "fresh-detector", "fresh-target", "fresh-rules", "fresh-share")


def fill(page: str, blocks: dict[str, str]) -> str:
    """``page`` with each ``<!-- begin NAME -->...<!-- end NAME -->`` span's inside replaced."""
    for name, text in blocks.items():
        pattern = re.compile(rf"(<!-- begin {name} -->\n)(?:.*?\n)?(<!-- end {name} -->)", flags=re.S)
        if not pattern.search(page):
            raise SystemExit(f"the page has no <!-- begin {name} --> ... <!-- end {name} --> span")
        page = pattern.sub(lambda m: m[1] + (text + "\n" if text else "") + m[2], page)
    return page


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid", nargs="?", type=pathlib.Path, default=CACHE, help=f"the grid's cache (default {CACHE})")
    ap.add_argument("--held-out", type=pathlib.Path, help=f"the held-out grid's cache (e.g. {HELD_OUT})")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "sender.md")
    args = ap.parse_args(argv)
    names = BLOCKS + (HELD_OUT_BLOCKS if args.held_out else ())
    fill(args.out.read_text(), dict.fromkeys(names, ""))  # every span there, before the runs are read
    blocks = tables(evaluate_grid(args.grid))
    if args.held_out:
        blocks |= held_out_tables(evaluate_grid(args.held_out, sender_grid.HELD_OUT))
    args.out.write_text(fill(args.out.read_text(), blocks))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
