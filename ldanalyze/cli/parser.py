"""The command line's grammar: every subcommand, its options and their help; a misspelt option
gets the nearest one.
"""

from __future__ import annotations

import argparse
import difflib
import warnings

from ..batch import FLOW_AT_A_TIME_ABOVE
from ..control import DEFAULT_CONTROLLER
from ..control import REGISTRY as CONTROLLERS
from ..io import FORMATS
from ..io.capture.payload import KINDS, ORDER
from ..io.capture.pcap import SKEW_CHOICES
from ..io.capture.vantage import CLOCKS
from ..lda import REGISTRY
from ..report.inspect_text import CAPTURE_FLOWS_SHOWN
from ..scoring.losses import POLICING_AS, ROUTE_AS
from ..specs import names_in_all
from ..version import VERSION
from .analysing import (
    cmd_classify,
    cmd_crosscheck,
    cmd_labels,
    cmd_replay,
    cmd_report,
    cmd_score,
    cmd_sweep,
    cmd_timeline,
)
from .inspecting import cmd_inspect
from .learning import cmd_evaluate, cmd_train
from .options import REPLAY_DEFAULTS, bits_per_second, clock_rates_arg, csv_list, drop_cause_arg
from .suites import cmd_batch, cmd_reproduce
from .writing import TABLE_KINDS

LDA_HELP = (
    "LDAs to replay: 'all' (default) or a comma-separated list of NAME or NAME:key=value:... (e.g. mbiaz:upper=1.3)"
)


def _lda_names() -> str:
    """What ``--lda`` takes, from the registry: what 'all' holds, and the LDAs only named."""
    in_all = names_in_all(REGISTRY)
    return f"'all' is {', '.join(in_all)}; named only: {', '.join(n for n in REGISTRY if n not in in_all)}"


def _replay_options(*, defaults: bool, lda_help: str | None = LDA_HELP) -> argparse.ArgumentParser:
    """A parent parser of the LDA and replay options. Without ``defaults`` (``batch``), an
    option not given is None, so that the settings file's value stands (``BATCH_DEFAULTS``
    has the same defaults); parents' actions are shared, so each use makes its own.
    ``lda_help``: what ``--lda`` does for the command (None: the command takes no ``--lda``)."""

    def default(value):
        return value if defaults else None

    replaying = argparse.ArgumentParser(add_help=False)
    if lda_help is not None:
        replaying.add_argument("--lda", default=default("all"), metavar="SPEC,SPEC", help=f"{lda_help}; {_lda_names()}")
    replaying.add_argument(
        "--classify-first",
        action="store_true",
        help="decide a gap with the state before the packet that reveals it (default: fold that packet in first)",
    )
    replaying.add_argument(
        "--gap-delay",
        choices=("revealing", "previous"),
        default=default(REPLAY_DEFAULTS["gap_delay"]),
        help="judge a gap by the delay of the packet after it (default) or before it",
    )
    replaying.add_argument(
        "--detection",
        type=int,
        default=default(REPLAY_DEFAULTS["detection"]),
        metavar="K",
        help="decide a gap at the K-th arrival above it (1: at once, default; 3: RFC 5348's rule)",
    )
    return replaying


def _scoring_options(*, defaults: bool) -> argparse.ArgumentParser:
    """A parent parser of how losses of other causes are scored, for every command that scores
    (without ``defaults``, as ``_replay_options``: batch's settings file stands)."""
    scoring = argparse.ArgumentParser(add_help=False)
    scoring.add_argument(
        "--route-as",
        choices=ROUTE_AS,
        default="excluded" if defaults else None,
        help="losses to routing and mobility (ns-2 wireless NRTE, RTR IFQ, CBK ...): left out of "
        "M_c/M_w (default) or scored as congestion or wireless",
    )
    scoring.add_argument(
        "--policing-as",
        choices=POLICING_AS,
        default="excluded" if defaults else None,
        help="a policer's drops (cause policing): left out of M_c/M_w (default; M_p says how each LDA "
        "read them) or scored as congestion or wireless",
    )
    return scoring


class _RenamedOption(argparse.Action):
    """An option read under its old name too, which warns that it goes (``--output-format``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string != self.option_strings[0]:
            warnings.warn(
                f"{option_string} is now {self.option_strings[0]}; the old name goes in 0.6",
                DeprecationWarning,
                stacklevel=2,
            )
        setattr(namespace, self.dest, values)


def _table_format(command: argparse.ArgumentParser) -> None:
    """``--format`` of a command that writes a table (``--output-format`` until 0.5)."""
    command.add_argument(
        "--format",
        "--output-format",
        action=_RenamedOption,
        choices=TABLE_KINDS,
        help="the file's format (default: what -o's extension says: .parquet, .csv, .csv.gz or .json); "
        "--output-format is its old name, going in 0.6",
    )


class CommandParser(argparse.ArgumentParser):
    """The top parser, which knows each command's parser."""

    commands: dict[str, argparse.ArgumentParser]  # for the suggestions of unrecognized


def build_parser() -> CommandParser:
    parser = CommandParser(
        prog="ldanalyze",
        description="Offline analysis of loss differentiation algorithms over ns-2 traces and pcap/pcapng captures.",
    )
    parser.add_argument("--version", action="version", version=f"ldanalyze {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=argparse.ArgumentParser)
    parser.commands = sub.choices  # each command's parser, for the suggestions of unrecognized

    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument(
        "--trace-format",
        default="auto",
        choices=("auto",) + FORMATS,
        help="trace format (default: detected from the content)",
    )
    reading.add_argument(
        "--data-types",
        type=csv_list,
        metavar="T,T",
        help="packet types that are data (default: tcpFriend,cbr,udp,tcp,exp,...)",
    )
    reading.add_argument(
        "--feedback-types",
        type=csv_list,
        metavar="T,T",
        help="packet types that are feedback/ACKs (default: tcpFriendCtl,ack,rtcp)",
    )
    reading.add_argument(
        "--drop-cause",
        action="append",
        type=drop_cause_arg,
        metavar="'LEVEL REASON=CAUSE'",
        help="ns-2 wireless: amend the drop table, e.g. 'RTR CBK=wireless' (repeatable)",
    )
    reading.add_argument(
        "--flow-by",
        choices=("auto", "fid", "addr"),
        help="ns-2 wired: how packets are grouped into flows (default auto)",
    )
    reading.add_argument(
        "--seq-modulus", type=int, metavar="M", help="unwrap sequence numbers that wrap modulo M (e.g. 65536)"
    )
    reading.add_argument(
        "--payload",
        choices=[k for k in KINDS if k != ORDER],
        help="captures: where sequence numbers and send times come from (default auto)",
    )
    reading.add_argument(
        "--flows",
        type=csv_list,
        metavar="FLOW,FLOW",
        help="the flows to read, by label as `inspect` lists them (an ns-2 fid for all its flows), or "
        "'all' (default: of a capture, all that carry sequence numbers; of an ns-2 trace, all "
        "but background traffic, the exp and pareto generators' flows)",
    )
    reading.add_argument(
        "--field",
        metavar="seq=OFF:W[:ORDER],time=OFF:W:UNITS",
        help="captures: where another protocol's payload carries its sequence number and send "
        "time, e.g. ns-3's SeqTsHeader: seq=0:4,time=4:8:ns (UNITS s, ms, us, ns, "
        "sec+usec, sec+nsec, ntp, a rate in Hz, or ? to infer it)",
    )
    reading.add_argument(
        "--ssrc", type=csv_list, metavar="0xSSRC,...", help="captures: keep only the RTP streams of these SSRCs"
    )
    reading.add_argument(
        "--rtp-sequence",
        choices=("ssrc", "transport-cc"),
        default="ssrc",
        help="captures: one RTP stream per SSRC (default), or per WebRTC flow in the order of "
        "its transport-wide sequence numbers (transport-cc header extension)",
    )
    reading.add_argument(
        "--clock-rate",
        type=clock_rates_arg,
        metavar="HZ|KEY=HZ,...",
        help="captures: the in-band clock's rate (RTP timestamp, TSval) when known: for every "
        "stream (90000), or per stream by SSRC, RTP payload type or label "
        "(0x1234abcd=90000,111=48000); a given rate is used; where a stream's own clock disagrees, a warning shows what it says",
    )
    reading.add_argument(
        "--capture-host",
        metavar="ADDR|none",
        help="receiver captures: the address of the host the capture was taken on; the flows "
        "it sends are read as sent, not as received (default: found from the flows' "
        "ends and TTLs, as `inspect` reports)",
    )
    reading.add_argument(
        "--skew-limit",
        type=float,
        metavar="PPM",
        help="captures: a fitted clock skew beyond this is reported, not applied (default 200)",
    )
    reading.add_argument(
        "--skew",
        choices=SKEW_CHOICES,
        help="receiver captures: remove the clock skew fitted to the delays (default) or keep the capture times",
    )
    reading.add_argument(
        "--vantage",
        action="append",
        metavar="PCAP[:CAUSE]",
        help="one capture of a chain along the path, in path order, sender first; CAUSE "
        "(congestion, wireless, unknown) names what loses packets on the way to it",
    )
    reading.add_argument(
        "--view",
        choices=("auto", "receiver", "sender"),
        default="auto",
        help="the view a flow is read in: a capture's flows that its host sends are read at the sender "
        "when their ACKs are captured (auto); an ns-2 TCP trace at its source node with sender; a "
        "--vantage chain with sender: its first capture at the sender, the chain's truth joined on",
    )
    reading.add_argument(
        "--clocks",
        choices=CLOCKS,
        help="--vantage: the captures have separate clocks (default: skew and offset are "
        "removed) or a common one (one host, PTP: one-way delays are absolute)",
    )
    reading.add_argument(
        "--labels",
        metavar="FILE",
        help="labels file (CSV: flow,seq,cause[,tx]) giving the causes of the trace's losses, or a rules file "
        "(.toml: [[rule]] flow, start, end, cause: weak labels by construction)",
    )

    one = argparse.ArgumentParser(add_help=False, parents=[reading])
    one.add_argument(
        "trace", nargs="?", help="trace file (ns-2 wired or wireless, pcap or pcapng; plain or gzip); or use --vantage"
    )

    replaying = _replay_options(defaults=True)
    scoring = _scoring_options(defaults=True)

    bootstrapping = argparse.ArgumentParser(add_help=False)  # score and report: the same intervals
    bootstrapping.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="resamples for the loss-burst bootstrap intervals (default 1000; 0: Wilson intervals only)",
    )
    bootstrapping.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the bootstrap's seed (default 0); each LDA's draws are seeded by it and what the LDA is "
        "scored on (its traces and flows), so an interval is the same whatever else is scored",
    )

    controlling = argparse.ArgumentParser(add_help=False)
    controlling.add_argument(
        "--reverse-delay",
        type=float,
        metavar="S",
        help="ACK path delay in seconds (default: from feedback or the one-way delay)",
    )
    controlling.add_argument(
        "--base-rtt",
        type=float,
        metavar="S",
        help="RTT at an empty queue, for flows without feedback on separate clocks",
    )
    controlling.add_argument(
        "--capacity",
        type=bits_per_second,
        metavar="BPS",
        help="bottleneck capacity in bits/s, e.g. 150k (default: packet-pair s/T_min per flow)",
    )

    p = sub.add_parser("inspect", parents=[one], help="per-flow packets, losses by cause, ROTT/IAT")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=f"every column of the flow table and every flow of a capture (default: the main columns, "
        f"the first {CAPTURE_FLOWS_SHOWN} flows of a capture's list)",
    )
    p.add_argument(
        "--flow-at-a-time",
        action="store_true",
        help="captures larger than memory: decode into per-flow files on disk, then read and summarise "
        "one flow at a time (the same report; memory bounded by the largest flow)",
    )
    p.add_argument(
        "--flow-at-a-time-above",
        metavar="SIZE",
        default=FLOW_AT_A_TIME_ABOVE,
        help="read a capture larger than SIZE (e.g. 512M, 2G; never; auto: larger than a quarter of the "
        "memory available holds read whole) one flow at a time by itself, unless an option picks flows "
        f"or streams (default {FLOW_AT_A_TIME_ABOVE}, as batch)",
    )
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("labels", parents=[one], help="write the causes of a trace's losses as a labels file")
    p.add_argument("-o", "--output", required=True, help="output labels file (.csv)")
    p.set_defaults(func=cmd_labels)

    p = sub.add_parser("timeline", parents=[one], help="write the per-packet timeline")
    p.add_argument("-o", "--output", required=True, help="output file (.parquet, .csv, .csv.gz or .json)")
    _table_format(p)
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("classify", parents=[one, replaying], help="replay LDAs: one decision per lost packet per LDA")
    p.add_argument("-o", "--output", help="write every decision (.parquet, .csv, .csv.gz or .json)")
    _table_format(p)
    p.set_defaults(func=cmd_classify)

    p = sub.add_parser(
        "crosscheck",
        aliases=["agreement"],  # its name until 0.4, deprecated: "agreement" is the LDAs' with each other
        parents=[one],
        help="a closed-loop run's in-simulator decisions against the offline replay of its trace "
        "(exit 1 on any difference)",
    )
    p.add_argument("--log", required=True, help="the decision log the LDA receiver wrote (paper000.tcl ldalog=)")
    p.add_argument(
        "--ldaparams",
        default="",
        metavar="OPTIONS",
        help="the run's paper000.tcl ldaparams= (the receivers' LDA parameters), if it had one: "
        "the replay runs the same",
    )
    p.set_defaults(func=cmd_crosscheck)

    p = sub.add_parser(
        "replay",
        parents=[one, replaying, controlling],
        help="replay rate controllers fed each LDA's decisions: modeled throughput (open loop)",
    )
    p.add_argument(
        "--controller",
        default="all",
        metavar="SPEC,SPEC",
        help="controllers: 'all' (default) or NAME[:key=value...], e.g. tfrc:discounting=true; "
        "names: " + ", ".join(CONTROLLERS),
    )
    p.add_argument("-o", "--output", help="write the rate timelines (.parquet, .csv, .csv.gz or .json)")
    _table_format(p)
    p.add_argument(
        "--compare-sent",
        type=float,
        nargs="?",
        const=1.0,
        metavar="BIN_S",
        help="also compare the allowed rate with what the trace's sender sent, in bins "
        "(default 1 s): for traces made by the controller under study",
    )
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser(
        "score",
        parents=[reading, replaying, controlling, scoring, bootstrapping],
        help="score LDAs against the true causes (M_c, M_w, accuracy, ...)",
    )
    p.add_argument("traces", nargs="*", metavar="TRACE", help="trace files (and/or one --vantage chain)")
    p.add_argument(
        "--by",
        choices=("flow", "trace", "pooled"),
        default="trace",
        help="one score per flow, per trace (default) or pooled over all traces",
    )
    p.add_argument(
        "--average",
        choices=("pooled", "mean"),
        default="pooled",
        help="pool the losses of a group (default) or average the flows' metrics (paper 000)",
    )
    p.add_argument(
        "--format",
        choices=("table", "json", "csv", "md"),
        default=None,
        help="table: paper 000 Table II layout (metrics × LDAs); json/csv: the tidy scores; md: "
        "Markdown (default: what -o's extension promises, else table)",
    )
    p.add_argument(
        "--controller",
        default="auto",
        metavar="SPEC",
        help="controller whose modeled throughput is added: 'auto' (default: TFRC, paper 000's "
        f"base, as the closed loop chose it, {DEFAULT_CONTROLLER}, where the trace gives "
        "RTTs; docs/paper000/model_grid.md), a controller spec, or 'none'",
    )
    p.add_argument(
        "--flow-at-a-time",
        action="store_true",
        help="captures larger than memory: decode into per-flow files on disk, then read and score "
        "one flow at a time (the clock skew of each pair of hosts fitted on all its flows)",
    )
    p.add_argument(
        "-o",
        "--output",
        help="write to this file (.json, .csv, .md or .txt, the format by the name) instead of standard output",
    )
    p.set_defaults(func=cmd_score)

    p = sub.add_parser(
        "sweep",
        parents=[reading, replaying, scoring],
        help="one LDA over a grid of its parameters: M_c, M_w per point and the trade-off frontier",
    )
    p.add_argument("swept", metavar="LDA", help="the LDA to sweep (spike, zigzag, mbiaz, ...)")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace files, scored pooled")
    p.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="NAME=START:STOP:STEP",
        help="a parameter and its values (START:STOP:STEP, stop included, or V1,V2,...); repeat for a grid",
    )
    p.add_argument("-o", "--output", help="write the table (.parquet, .csv, .csv.gz or .json)")
    p.add_argument("--plot", metavar="PNG", help="draw M_c against M_w with the frontier and the defaults")
    p.set_defaults(func=cmd_sweep)

    learning = argparse.ArgumentParser(add_help=False)
    learning.add_argument(
        "traces",
        nargs="*",
        metavar="TRACE",
        help="labelled traces: ns-2 files, or one capture with --labels, and/or a --vantage chain",
    )
    learning.add_argument(
        "--model",
        choices=("gbt", "rf", "logistic"),
        default="gbt",
        help="gradient-boosted trees (default), a random forest or a logistic regression",
    )
    learning.add_argument("--seed", type=int, default=0, help="the model's random seed (default 0)")
    learning.add_argument(
        "--balance-by",
        metavar="REGEX",
        help="weigh each group of traces the same in training, whatever its number of gaps: the "
        "regex's first group (or match) in each path, e.g. '(wlh|wb|manet)' for the link",
    )
    p = sub.add_parser(
        "train",
        parents=[reading, _replay_options(defaults=True, lda_help=None), learning],
        help="fit the learned LDA on the losses of labelled traces (a skops model file)",
    )
    p.add_argument("-o", "--output", required=True, help="the model file to write (e.g. model.skops)")
    p.set_defaults(func=cmd_train)
    comparing = _replay_options(
        defaults=True,
        lda_help="the LDAs to compare the learned one with, beside the trivial baselines unaware (every loss "
        "congestion) and all wireless (every loss wireless), which are always there: 'all' (default: every LDA "
        "of the registry but omniscient and learned, policer and macseq too, each left out of the traces it "
        "cannot run on) or a comma-separated list of NAME or NAME:key=value:... (each must run on every trace)",
    )
    p = sub.add_parser(
        "evaluate",
        parents=[reading, comparing, learning],
        help="grouped cross-validation of the learned LDA against every heuristic and the trivial baselines",
    )
    p.add_argument(
        "--group-by",
        required=True,
        metavar="REGEX",
        help="the scenario of each trace, from its path: the regex's first group (or match), e.g. "
        "'(wlh|wb)_' for the topology; traces of one group are never split between train and test",
    )
    p.add_argument(
        "--hold-out",
        action="append",
        metavar="GROUP",
        help="hold out only this group (repeat for several; default: each group); the others only train",
    )
    p.add_argument("-o", "--output", help="write the scores (.parquet, .csv, .csv.gz or .json)")
    p.add_argument("--plot", metavar="PNG", help="draw the accuracies with their intervals and the importances")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "reproduce",
        help="paper 000's evaluation from the real ns-2: tables, figures, the paper's statements checked",
        description="Simulates with ns-2 (`ns` on the PATH: apt-get install ns2). --closed-loop first builds ns-2.35 with the LDA receiver "
        "(ldanalyze/data/ns2/build, minutes, once; cached under $LDANALYZE_NS2_CACHE or "
        "~/.cache/ldanalyze/ns2; $LDANALYZE_NS names a built one instead) from Debian's ns2 source "
        "package (apt-get source). Run as root, that build changes the system: it runs apt-get update "
        "and apt-get install of the build dependencies missing (tcl-dev, tk-dev, libotcl1-dev, "
        "libtclcl1-dev, tclcl, libpcap0.8-dev, libxt-dev, libxext-dev, g++, make, xz-utils, patch, "
        "dpkg-dev), and where apt has no deb-src line for ns2 it adds one, copied from the deb lines, in "
        "/etc/apt/sources.list.d/ldanalyze-deb-src.sources (or .list). Not as root, it stops and names "
        "what is missing.",
    )
    p.add_argument("paper", choices=("paper000",))
    p.add_argument("-o", "--output", required=True, help="the folder to write (traces are cached in it)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a reduced suite (N 1, 2, 4; one seed; 60 s): about half a minute (the closed loop doubles it)",
    )
    p.add_argument("--jobs", type=int, help="worker processes (default: every core)")
    p.add_argument(
        "--closed-loop",
        action="store_true",
        help="also run every TFRC scenario once per LDA with the LDA inside ns-2's TFRC receiver (paper "
        "000 §I), and set the open-loop numbers beside them; builds a patched ns-2 the first time, which as "
        "root runs apt-get install and adds a deb-src line to apt's sources (above)",
    )
    p.add_argument(
        "--wireless-as-received",
        action="store_true",
        help="with --closed-loop: the receiver also counts a loss its LDA calls wireless as received in TFRC's "
        'receive rate X_recv (paper 000 §IV: "in the same way as received packets"); default: X_recv counts the '
        "packets that arrived, as ns-2's receiver does (docs/paper000/receiver.md measures both)",
    )
    p.add_argument(
        "--rewrite",
        action="store_true",
        help="simulate nothing: judge the paper's statements (ldanalyze/reproduce/paper000_statements.toml), set "
        "Tables II and III cell by cell and write checks.csv, checks_closed.csv, table_cells.md and README.md again "
        "from the result files a run left in the folder (results.csv, closed_loop.csv, gzipped or not)",
    )
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser(
        "report",
        parents=[reading, controlling, scoring, bootstrapping],
        help="one self-contained HTML page per set of traces: summary, scores, figures",
    )
    p.add_argument("traces", nargs="*", metavar="TRACE", help="trace files (and/or one --vantage chain)")
    p.add_argument(
        "--lda", default="all", metavar="SPEC,SPEC", help="LDAs to score: 'all' (default) or specs; " + _lda_names()
    )
    p.add_argument(
        "--controller",
        default=DEFAULT_CONTROLLER,
        metavar="SPEC",
        help=f"controller for throughput (default {DEFAULT_CONTROLLER}, as the closed loop chose it; 'none': skip)",
    )
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "batch",
        parents=[_replay_options(defaults=False), _scoring_options(defaults=False)],
        help="score every trace under folders/globs (CI: thresholds, baselines, JUnit, summary)",
        description="Exit status: 0 passed; 1 a threshold or regression failed, or a trace could not "
        "be scored; 2 bad usage (or, with --strict, the first bad trace); 130 interrupted "
        "and 143 terminated (SIGTERM), the outputs holding the traces done. Settings may "
        "come from ldanalyze.toml or [tool.ldanalyze] in pyproject.toml in the current "
        "folder; options override them.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="trace files, folders (walked) and globs")
    p.add_argument("--manifest", help="TOML or CSV listing traces with options (chains, labels, payload, flows)")
    p.add_argument("--exclude", action="append", metavar="GLOB", help="leave out matching files (repeatable)")
    p.add_argument("-o", "--output", help="results table: .parquet, .csv, .csv.gz or .json")
    p.add_argument(
        "--errors",
        metavar="FILE",
        help="the traces that failed and why (trace, error): .parquet, .csv, "
        ".csv.gz or .json; written when none failed too",
    )
    p.add_argument("--junit", metavar="XML", help="JUnit XML: one case per trace and per check")
    p.add_argument("--summary", metavar="MD", help="Markdown job summary")
    p.add_argument("--json", metavar="FILE", help="JSON report (schema version 1: ldanalyze.report.ci.JSON_SCHEMA)")
    p.add_argument(
        "--controller",
        metavar="SPEC",
        help=f"controller for the throughput columns: auto ({DEFAULT_CONTROLLER}), a spec, or none",
    )
    p.add_argument(
        "--fail-if",
        action="append",
        metavar="'LDA.METRIC OP X'",
        help="fail when it holds, e.g. 'zbs.M_c > 0.05' (repeatable; LDA may be *)",
    )
    p.add_argument(
        "--fail-scope", choices=("pooled", "trace"), help="thresholds on pooled scores (default) or on each trace's"
    )
    p.add_argument("--baseline", metavar="FILE", help="an earlier results table: fail on a regression")
    p.add_argument("--tolerance", type=float, help="regression margin for --baseline (default 0.02)")
    p.add_argument("--baseline-ci", action="store_true", help="a regression must also leave the baseline's CI")
    p.add_argument("--jobs", "-j", type=int, help="worker processes (default: every core)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask cluster (tcp://host:8786)")
    p.add_argument("--cache-dir", help="parsed-trace cache (default ~/.cache/ldanalyze)")
    p.add_argument("--no-cache", action="store_true", help="read every trace afresh")
    p.add_argument("--bootstrap", type=int, help="burst-bootstrap resamples (default 0: Wilson intervals only)")
    p.add_argument("--strict", action="store_true", help="stop at the first trace that fails (exit 2)")
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar or line per trace: only the traces that fail, as they do, and the summary",
    )
    p.add_argument("--seq-modulus", type=int, metavar="M", help="sequence number wrap")
    p.add_argument(
        "--flow-at-a-time-above",
        metavar="SIZE",
        help="read a capture larger than SIZE (e.g. 512M, 2G; 0: every capture; never; auto: larger than "
        "a quarter of the memory available holds read whole) one flow at a time, its memory bounded by "
        f"its largest flow (default {FLOW_AT_A_TIME_ABOVE})",
    )
    p.set_defaults(func=cmd_batch)
    return parser


def unrecognized(parser: CommandParser, args: argparse.Namespace, unknown: list[str]) -> str:
    """argparse's message for arguments it does not know, with the nearest option of the
    command when one is close (``--ldas`` → ``--lda``)."""
    message = f"unrecognized arguments: {' '.join(unknown)}"
    command = parser.commands.get(args.command, parser)
    options = [o for o in option_strings(command) if o.startswith("--")]
    for word in unknown:
        close = (
            difflib.get_close_matches(word.split("=")[0], options, n=1, cutoff=0.75) if word.startswith("--") else []
        )
        if close:
            return f"{message} (did you mean {close[0]}?)"
    return message


def option_strings(command: argparse.ArgumentParser) -> list[str]:
    """Every option string of a parser (its parents' too). argparse has no public list of them:
    its ``_actions`` is read here only, and tests/test_third_party.py fails, saying so, when an
    upgrade changes it."""
    return [o for action in command._actions for o in action.option_strings]
