"""The closed loop: ns-2.35 with LDA-driven TFRC receivers, and the check that it and ldanalyze
decide alike.

Paper 000 (``../shared/papers/000_*.txt``) §I: when a TFRC receiver detects losses it invokes
the LDA; a loss the LDA calls congestion enters TFRC's loss event rate, one it calls wireless
does not. ``ldanalyze/data/ns2/`` holds that receiver (``Agent/TFRCSink/LDA``, a patch to ns-2.35
built by ``ldanalyze/data/ns2/build``). It runs every LDA side by side, lets the one named by
``lda_`` steer TFRC, and logs each lost packet it detects with every LDA's decision
(:func:`read_decision_log`) and, if asked, each report it sends (:func:`read_report_log`).

§IV says more: a loss called wireless is treated "in the same way as received packets". ns-2's
receiver also reports a receive rate X_recv (``est_thput``: the packets received since the last
report, or in the last RTT), which caps the sender at 2·X_recv and seeds the first loss interval
when slow start ends; by default (``wireless_as_received`` 0) it counts only the packets that
arrived, so a loss called wireless still lowers it. With ``wireless_as_received`` 1 a loss the
steering LDA calls wireless counts there too, as if it had arrived when its loss was detected
(docs/paper000/receiver.md measures both on Tables II and III).

Both it and ldanalyze's kernels follow ``docs/ldas.md``; replaying the closed-loop run's trace
offline must give the decisions the receiver logged, loss for loss (:func:`crosscheck`). Any
difference is a bug in one of the two. The parameters are one definition: ldanalyze's LDA
objects set the receiver's (:data:`OTCL_PARAMETERS`, :func:`receiver_options`) and replay the
trace (:func:`receiver_ldas`). A loss is a packet of a gap that never arrives: a packet that
arrives late, after its gap was decided, is in neither (the receiver's log drops it).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess

import numpy as np
import pandas as pd

from .errors import UsageError
from .lda import LDA, get_lda, parse_ldas
from .simulation import decision_log

NS2_DIR = pathlib.Path(__file__).parent / "data" / "ns2"
BUILD = NS2_DIR / "build"
# the LDAs the in-simulator receiver runs, in the order of its log's columns
LOG_LDAS = (
    "unaware",
    "omniscient",
    "biaz",
    "mbiaz",
    "spike",
    "wro_ldaplus",
    "zigzag",
    "zbs",
    "win_ldaplus",
    "veno",
    "xrtp",
)
LOG_COLUMNS = ("t", "flow", "seq", "n", *LOG_LDAS, "driver", "driven")
# per LDA of the receiver, each of its parameters and the OTcl variable(s) of Agent/TFRCSink/LDA
# that hold it (their defaults: ns-default.tcl in patches/10-lda-tfrc-sink.patch); a tuple
# spreads a tuple parameter over several variables, a list parameter held in one is a Tcl list
OTCL_PARAMETERS: dict[str, dict[str, str | tuple[str, ...]]] = {
    "unaware": {},
    "omniscient": {},
    "biaz": {"upper": "biaz_upper_"},
    "mbiaz": {"upper": "mbiaz_upper_"},
    "spike": {"alpha": "spike_alpha_", "beta": "spike_beta_"},
    "wro_ldaplus": {"K": "wro_K_", "B": "wro_B_"},
    "zigzag": {"alpha": "zigzag_alpha_", "dev_factors": "zigzag_dev_factors_"},
    "zbs": {
        "delay_frac": "zbs_delay_frac_",
        "narr_bounds": ("zbs_b1_", "zbs_b2_", "zbs_b3_"),
        "gain": "zbs_gain_",
        "lock_time": "zbs_lock_time_",
        "lock_packets": "zbs_lock_packets_",
        "mbiaz_upper": "zbs_mbiaz_upper_",
        "spike_alpha": "zbs_spike_alpha_",
        "spike_beta": "zbs_spike_beta_",
        "zigzag_alpha": "zbs_zigzag_alpha_",
        "zigzag_dev_factors": "zbs_zigzag_dev_factors_",
    },
    "win_ldaplus": {"T_obs": "win_T_obs_"},
    "veno": {"beta": "veno_beta_", "window": "veno_window_"},
    "xrtp": {
        "positive_jitters": "xrtp_positive_jitters_",
        "threshold": "xrtp_threshold_",
        "n": "xrtp_n_",
        "l1": "xrtp_l1_",
        "alpha": "xrtp_alpha_",
    },
}
# the report log: per report sent, its time, the highest sequence number received, the sender's
# RTT, p and X_recv (packets/s) as sent, the packets counted received since the last report,
# whether slow start has ended, the lost packets detected so far, how many of them the steering
# LDA called wireless, and the receiver's wireless_as_received
REPORT_COLUMNS = ("t", "flow", "seq", "rtt", "p", "x_recv", "rcvd", "loss_seen", "losses", "wireless", "as_received")


def receiver_ldas(ldas=None) -> list[LDA]:
    """The LDAs the receiver runs (:data:`LOG_LDAS`, in its order) as ldanalyze's objects: those
    given (specs or LDA objects, ``parse_ldas``' forms; each an LDA of the receiver, once), the
    others with their defaults. Replay a closed-loop run's trace with them."""
    chosen = [] if ldas is None else parse_ldas(ldas)  # parse_ldas(None) is every LDA
    given = {lda.name: lda for lda in chosen}
    foreign = sorted(set(given) - set(LOG_LDAS))
    if foreign:
        raise UsageError(f"the LDA receiver does not run {', '.join(foreign)} (it runs {', '.join(LOG_LDAS)})")
    if len(chosen) != len(given):
        raise UsageError(f"an LDA of the receiver is given twice: {', '.join(lda.spec for lda in chosen)}")
    return [given.get(name) or get_lda(name) for name in LOG_LDAS]


def _tcl(value) -> str:
    """A parameter value as Tcl reads it back exactly: the shortest repr of a float, a list
    in braces."""
    if isinstance(value, tuple):
        return "{" + " ".join(_tcl(v) for v in value) + "}"
    return repr(float(value)) if isinstance(value, float) else str(int(value))


def receiver_options(ldas=None) -> str:
    """``paper000.tcl``'s ``ldaparams=`` for :func:`receiver_ldas` ``(ldas)``: every parameter
    of every LDA of the receiver, as OTcl variable names and values (:data:`OTCL_PARAMETERS`),
    so that the receiver runs the very parameters the offline replay does."""
    pairs = []
    for lda in receiver_ldas(ldas):
        params = lda.params()
        for field, variables in OTCL_PARAMETERS[lda.name].items():
            value = params[field]
            if isinstance(variables, tuple):
                pairs += [f"{var} {_tcl(v)}" for var, v in zip(variables, value, strict=True)]
            else:
                pairs.append(f"{variables} {_tcl(value)}")
    return " ".join(pairs)


def options_ldas(options: str) -> list[LDA]:
    """The receiver's LDAs that ``ldaparams=`` ``options`` (:func:`receiver_options`' text) sets,
    as :func:`receiver_ldas` gives them: the replay of a run made with those options."""
    where = {
        var: (name, field, k if isinstance(variables, tuple) else None)
        for name, fields in OTCL_PARAMETERS.items()
        for field, variables in fields.items()
        for k, var in enumerate(variables if isinstance(variables, tuple) else (variables,))
    }
    tokens = re.findall(r"\{[^{}]*\}|[^\s{}]+", options)
    if len(tokens) % 2 or re.sub(r"\s", "", "".join(tokens)) != re.sub(r"\s", "", options):
        raise UsageError(f"ldaparams {options!r}: not a list of OTcl variable names and values")
    params: dict[str, dict] = {}
    for var, text in zip(tokens[::2], tokens[1::2]):
        if var not in where:
            raise UsageError(f"ldaparams: the LDA receiver has no parameter {var!r}")
        name, field, k = where[var]
        default = get_lda(name).params()[field]
        value: float | tuple[float, ...]
        try:
            if text.startswith("{"):
                value = tuple(float(v) for v in text.strip("{}").split())
            else:  # a whole number where the LDA takes one (a count)
                value = int(text) if isinstance(default, int) else float(text)
        except ValueError:
            kind = "a whole number" if isinstance(default, int) else "numbers"
            raise UsageError(f"ldaparams: {var} takes {kind}, not {text!r}") from None
        mine = params.setdefault(name, {})
        if k is None:
            mine[field] = value
        else:  # one of a tuple parameter's variables
            mine[field] = tuple(value if i == k else v for i, v in enumerate(mine.get(field, default)))
    return receiver_ldas([get_lda(name, **p) for name, p in params.items()] or None)


def patched_ns(rebuild: bool = False) -> str:
    """The path of ns-2.35 built with the LDA receiver: ``$LDANALYZE_NS`` if set, else built
    once per patch text by ``ldanalyze/data/ns2/build`` (minutes the first time, then cached)."""
    given = os.environ.get("LDANALYZE_NS")
    if given:
        if not os.access(given, os.X_OK):
            raise UsageError(f"LDANALYZE_NS={given!r} is not an executable file")
        return given
    done = subprocess.run(["bash", str(BUILD), *(["--rebuild"] if rebuild else [])], capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not os.access(lines[-1], os.X_OK):
        raise UsageError(f"building the patched ns-2 failed ({BUILD}): {done.stderr.strip()[-800:]}")
    return lines[-1]


def _checked_header(path: str | os.PathLike, what: str, columns: tuple[str, ...]) -> pathlib.Path:
    """``path`` as a Path, once its first line is the header ``columns`` of the receiver's ``what``."""
    path = pathlib.Path(path)
    try:
        with open(path) as f:
            header = f.readline().rstrip("\n")
    except OSError as e:
        raise UsageError(f"{path}: cannot read the {what}: {e.strerror}") from None
    if tuple(header.split(",")) != columns:
        raise UsageError(
            f"{path}, line 1: not a {what} of the LDA receiver (expected the header {','.join(columns)!r})"
        )
    return path


def read_decision_log(path: str | os.PathLike) -> pd.DataFrame:
    """The receiver's decision log: one row per lost packet it detected (a gap's packet that
    had not arrived when the run ended; ``t`` the gap's detection time, ``flow``, ``seq``, ``n``
    the size of its gap when detected), one boolean column per LDA (True: wireless), the LDA
    that steered TFRC (``driver``) and its decision (``driven``)."""
    path = _checked_header(path, "decision log", LOG_COLUMNS)
    dtypes = {
        "t": np.float64,
        "flow": str,
        "seq": np.int64,
        "n": np.int64,
        "driver": str,
        "driven": np.int8,
        **{name: np.int8 for name in LOG_LDAS},
    }
    try:
        log = pd.read_csv(path, dtype=dtypes, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as e:
        raise UsageError(f"{path}: a line of the decision log is malformed: {e}") from None
    for name in (*LOG_LDAS, "driven"):
        bad = ~log[name].isin((0, 1))
        if bad.any():
            raise UsageError(f"{path}, line {int(np.flatnonzero(bad)[0]) + 2}: {name} must be 0 or 1")
        log[name] = log[name].astype(bool)
    return log


def read_report_log(path: str | os.PathLike) -> pd.DataFrame:
    """The receiver's report log (``ldareports=`` of ``paper000.tcl``; :data:`REPORT_COLUMNS`):
    one row per report it sent, ``flow`` as a string like the traces'."""
    path = _checked_header(path, "report log", REPORT_COLUMNS)
    try:
        return pd.read_csv(path, dtype={"flow": str})
    except (ValueError, pd.errors.ParserError) as e:
        raise UsageError(f"{path}: a line of the report log is malformed: {e}") from None


def crosscheck(decisions: pd.DataFrame, log: pd.DataFrame, flows=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compare ldanalyze's decisions (``classify(timeline, receiver_ldas(...))`` over the
    closed-loop run's trace, the LDAs with the run's parameters; an LDA is matched to its log
    column by name) with the receiver's log, per LDA and lost packet.

    ``flows``: the flows the receiver ran on (default: those in the log); losses of other flows
    (cross traffic, TCP) are left out. Returns a summary, one row per LDA (``losses`` in either,
    ``both``: detected by both, ``equal``: same decision, ``only_replay``/``only_log``,
    ``alike``: the share of ``losses`` decided the same), and the
    differing rows (``lda, flow, seq, replay, log``; ``replay``/``log`` are ``wireless``,
    ``congestion`` or ``missing``).
    """
    flows = sorted(set(log["flow"])) if flows is None else sorted(str(f) for f in flows)
    d = decisions[decisions["decision"].isin(("wireless", "congestion"))]
    names = d["lda"].astype(str).str.partition(":")[0]  # the spec's name: biaz:upper=2.5 is biaz
    specs = pd.Series(d["lda"].astype(str).unique())
    bases = specs.str.partition(":")[0]
    twice = specs[bases.isin(LOG_LDAS) & bases.duplicated(keep=False)]
    if len(twice):
        raise UsageError(f"the decisions hold one LDA of the receiver twice: {', '.join(twice)}")
    keep = d["flow"].astype(str).isin(flows) & names.isin(LOG_LDAS)
    d, names = d[keep], names[keep]
    replay = pd.DataFrame(
        {
            "lda": names.to_numpy(),
            "flow": d["flow"].astype(str).to_numpy(),
            "seq": d["seq"].to_numpy(np.int64),
            "replay": np.where(d["decision"].to_numpy() == "wireless", "wireless", "congestion"),
        }
    )
    logged = log[log["flow"].isin(flows)].melt(
        id_vars=["flow", "seq"], value_vars=list(LOG_LDAS), var_name="lda", value_name="wireless"
    )
    logged = pd.DataFrame(
        {
            "lda": logged["lda"].to_numpy(),
            "flow": logged["flow"].to_numpy(),
            "seq": logged["seq"].to_numpy(np.int64),
            "log": np.where(logged["wireless"].to_numpy(), "wireless", "congestion"),
        }
    )
    both = replay.merge(logged, on=["lda", "flow", "seq"], how="outer")
    both[["replay", "log"]] = both[["replay", "log"]].fillna("missing")
    same = both["replay"] == both["log"]
    rows = []
    for name in LOG_LDAS:
        mine = both["lda"] == name
        rows.append(
            {
                "lda": name,
                "losses": int(mine.sum()),
                "both": int((mine & (both["replay"] != "missing") & (both["log"] != "missing")).sum()),
                "equal": int((mine & same).sum()),
                "only_replay": int((mine & (both["log"] == "missing")).sum()),
                "only_log": int((mine & (both["replay"] == "missing")).sum()),
            }
        )
    summary = pd.DataFrame(rows)
    summary["alike"] = summary["equal"] / summary["losses"].where(summary["losses"] > 0)
    return summary, both[~same].sort_values(["lda", "flow", "seq"]).reset_index(drop=True)


def tfrc_flows(scenario: dict) -> list[str]:
    """The TFRC flows of a ``paper000.tcl`` scenario (``mix``: all but the last, which is TCP)."""
    n = int(scenario["flows"])
    last = n - 1 if scenario.get("traffic") == "mix" else n
    return [str(i) for i in range(1, last + 1)]


def measured(packets: pd.DataFrame, flows: list[str], fair_share_bps: float) -> pd.DataFrame:
    """What a closed-loop run's TFRC flows really carried: per flow, the bits that crossed the
    bottleneck (delivered, or lost to the radio after it) per second between its first and last
    send, as a share of its fair share of the bottleneck (paper 000 §VI-A's "thput"), and its
    congestion loss rate (queue drops over packets sent)."""
    mine = packets[packets["flow"].astype(str).isin(flows)]
    fate = mine["fate"].astype(str)
    grouped = mine.assign(
        carried=np.where(fate.isin(("delivered", "wireless")), mine["size"] * 8.0, 0.0), congestion=fate == "congestion"
    ).groupby(mine["flow"].astype(str), sort=True)
    span = grouped["t_send"].max() - grouped["t_send"].min()
    out = pd.DataFrame(
        {
            "carried_bps": grouped["carried"].sum() / span.where(span > 0),
            "congestion_rate": grouped["congestion"].mean(),
        }
    )
    out["thput"] = out["carried_bps"] / fair_share_bps
    return out.rename_axis("flow").reset_index()


def left_share_bps(packets: pd.DataFrame, scenario: dict, fair_share_bps: float) -> float:
    """What the traffic not under study leaves each TFRC flow of a ``paper000.tcl`` run: the
    bottleneck (the fair share times the flows) less the rate the other flows carried
    (:func:`measured`), over the TFRC flows; the fair share itself when every flow is TFRC."""
    flows = tfrc_flows(scenario)
    others = [str(i) for i in range(1, int(scenario["flows"]) + 1) if str(i) not in flows]
    if not others:
        return fair_share_bps
    taken = float(measured(packets, others, fair_share_bps)["carried_bps"].sum())
    return (fair_share_bps * int(scenario["flows"]) - taken) / len(flows)


# the open-loop models held to the closed loop in paper 000's suite: (name, the TFRC replay's spec,
# the normaliser); RFC 5348's TFRC, X_recv from the model or the trace. ``score``'s default was
# chosen among more on a grid where the LDAs differ (``reproduce.model_grid``)
MODELS = (
    ("model", "tfrc:receive=model", "capacity"),
    ("model_share", "tfrc:receive=model", "share"),
    ("model_trace_rx", "tfrc:receive=trace", "capacity"),
    ("model_trace_rx_share", "tfrc:receive=trace", "share"),
)


def modeled(timeline, ldas, fair_share_bps: float, models=MODELS, left_bps: float | None = None) -> pd.DataFrame:
    """Open-loop models of each LDA's TFRC throughput over one trace (``replay``), per LDA and
    flow, one column per model of ``models`` (``MODELS``: ``model`` is RFC 5348's TFRC limited by
    twice its modelled receive rate; ``_trace_rx``: by twice the trace's receive rate instead):
    the time average of the replayed rate
    capped at and divided by the flow's packet-pair capacity (``capacity``) or by its fair share
    of the bottleneck (``share``), the normaliser of the closed-loop truth, or capped at what the
    traffic not under study leaves the flow (``left``: ``left_bps``, :func:`left_share_bps`) and
    divided by the fair share. Each spec is replayed once, whichever normalisers read it."""
    from .control import replay

    rows: dict[tuple[str, str], dict[str, float]] = {}
    for spec in dict.fromkeys(spec for _, spec, _ in models):
        result = replay(timeline, spec, list(ldas))
        capacity = result.summary.astype({"lda": str, "flow": str}).set_index(["lda", "flow"])["capacity_bps"]
        for (lda, flow), r in result.rates.groupby(["lda", "flow"], sort=False, observed=True):
            key = (str(lda), str(flow))
            rate = r["rate_bps"].to_numpy()[:-1]
            held = np.diff(r["t"].to_numpy())  # each rate holds until the flow's next arrival
            ok = np.isfinite(rate)
            total = held[ok].sum()
            for name, of, norm in models:
                if of != spec:
                    continue
                share = fair_share_bps if left_bps is None or norm == "share" else left_bps
                cap = capacity.get(key, np.nan) if norm == "capacity" else share
                divisor = cap if norm == "capacity" else fair_share_bps
                value = (np.minimum(rate[ok], cap) * held[ok]).sum() / total / divisor if total > 0 else np.nan
                rows.setdefault(key, {})[name] = value
    return pd.DataFrame([{"lda": k[0], "flow": k[1], **v} for k, v in rows.items()])


def pooled_scores(flow_rows: pd.DataFrame, flows: list[str]) -> pd.DataFrame:
    """M_c, M_w and accuracy per LDA pooled over ``flows`` (a results table's ``flow`` rows of one
    trace), and the mean of their modeled ``thput``: the flows under study, not the warm-up or
    cross traffic that shares the trace."""
    mine = flow_rows[flow_rows["flow"].astype(str).isin(flows)]
    counts = ["congestion", "wireless", "congestion_as_wireless", "wireless_as_congestion", "scored"]
    table = mine.groupby(mine["lda"].astype(str), sort=False)[counts].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        out = pd.DataFrame(
            {
                "M_c": table["congestion_as_wireless"] / table["congestion"].where(table["congestion"] > 0),
                "M_w": table["wireless_as_congestion"] / table["wireless"].where(table["wireless"] > 0),
                "accuracy": 1
                - (table["congestion_as_wireless"] + table["wireless_as_congestion"])
                / table["scored"].where(table["scored"] > 0),
            }
        )
    if "thput" in mine:
        out["model"] = mine.groupby(mine["lda"].astype(str), sort=False)["thput"].mean()
    return out.rename_axis("lda").reset_index()


def truth(path: str, scenario: dict, fair_share_bps: float, ldas=None, models=MODELS) -> dict:
    """What one closed-loop run measured (:func:`measured`, pooled over its TFRC flows: mean
    ``thput``, ``congestion_rate`` over every packet sent, ``fairness_std`` of the flows'
    throughputs each over their mean, paper 000 §VIII Fig. 14); with its decision log beside it,
    how many of the logged decisions (every LDA) the offline replay made alike
    (``decisions_equal`` of ``decisions``; the LDAs with the scenario's ``ldaparams``); given
    ``ldas``, the open-loop model of each over this run's trace (:func:`modeled` with ``models``
    and this run's :func:`left_share_bps`, mean over the TFRC flows)."""
    from .io import read_trace
    from .lda import classify
    from .timeline import build_timeline

    trace = read_trace(path)
    timeline = build_timeline(trace)
    flows = tfrc_flows(scenario)
    m = measured(trace.packets, flows, fair_share_bps)
    sent = trace.packets[trace.packets["flow"].astype(str).isin(flows)]
    carried = m["carried_bps"].to_numpy()
    out = {
        "thput": float(m["thput"].mean()),
        "congestion_rate": float((sent["fate"].astype(str) == "congestion").mean()),
        "fairness_std": float(np.std(carried / carried.mean(), ddof=1)) if len(carried) > 1 else np.nan,
    }
    log = decision_log(pathlib.Path(path))
    if log.exists():  # a closed-loop run: its receivers' decisions against the offline replay
        receivers = options_ldas(scenario.get("ldaparams", ""))
        summary, _ = crosscheck(classify(timeline, receivers), read_decision_log(log), flows=flows)
        out["decisions"] = int(summary["losses"].sum())
        out["decisions_equal"] = int(summary["equal"].sum())
    if ldas:
        left = left_share_bps(trace.packets, scenario, fair_share_bps)
        model = modeled(timeline, ldas, fair_share_bps, models, left)
        names = [name for name, _, _ in models]
        out["model"] = model[model["flow"].isin(flows)].groupby("lda")[names].mean().reset_index()
    return out
