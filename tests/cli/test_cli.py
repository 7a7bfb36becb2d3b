"""The ldanalyze command on the bundled traces."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from ldanalyze import build_timeline, classify, read_trace, score
from ldanalyze.cli import main
from ldanalyze.lda import parse_ldas

from ..conftest import TRACES

SAMPLE = TRACES / "wlh_cbr_1flow_bursty.tr.gz"


def test_inspect_table(capsys):
    assert main(["inspect", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "ns2-wired" in out and "congestion" in out and "wireless" in out
    row = next(line for line in out.splitlines() if line.split()[:1] == ["1"])
    # flow 1: sent, delivered, congestion, wireless as in traces/README.md
    assert row.split()[1:5] == ["1292", "1150", "41", "101"]


def test_inspect_json(capsys):
    assert main(["inspect", str(SAMPLE), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    flows = {f["flow"]: f for f in payload["flows"]}
    assert flows["1"]["wireless"] == 101 and flows["101"]["congestion"] == 8
    assert payload["format"] == "ns2-wired"


def test_inspect_wireless(capsys):
    assert main(["inspect", str(TRACES / "wireless" / "wlan_new.tr.gz")]) == 0
    assert "ns2-wireless-new" in capsys.readouterr().out


def test_timeline_parquet_and_csv(tmp_path, capsys):
    expect = build_timeline(read_trace(SAMPLE)).per_packet()
    for name in ("t.parquet", "t.csv", "t.csv.gz"):
        out = tmp_path / name
        assert main(["timeline", str(SAMPLE), "-o", str(out)]) == 0
        got = pd.read_parquet(out) if name.endswith("parquet") else pd.read_csv(out, dtype={"flow": str})
        assert len(got) == len(expect) == expect["uid"].nunique()
        assert got["fate"].value_counts().to_dict() == expect["fate"].astype(str).value_counts().to_dict()
        assert abs(got["rott_s"].sum() - expect["rott"].sum()) < 1e-9  # the file names the unit
    assert "wrote" in capsys.readouterr().out


def test_options_that_do_not_fit_the_format(capsys):
    assert main(["inspect", str(TRACES / "wireless" / "wlan_old.tr.gz"), "--flow-by", "fid"]) == 2
    assert "takes no option(s) flow_by" in capsys.readouterr().err


def test_classify_writes_every_decision(tmp_path, capsys):
    out = tmp_path / "d.parquet"
    assert main(["classify", str(SAMPLE), "--lda", "biaz,zbs", "-o", str(out)]) == 0
    got = pd.read_parquet(out)
    losses = build_timeline(read_trace(SAMPLE)).losses
    assert len(got) == 2 * len(losses)
    assert set(got["lda"]) == {"biaz", "zbs"} and set(got.loc[got["lda"] == "zbs", "scheme"]) <= {
        "zigzag",
        "mbiaz",
        "spike",
        "",
    }
    assert main(["classify", str(SAMPLE), "--lda", "spike,zbs", "--detection", "3"]) == 0
    out = capsys.readouterr().out
    assert "undetected" in out and "share of time each base scheme" in out


def test_score_table_json_md_csv(tmp_path, capsys):
    assert main(["score", str(SAMPLE), "--lda", "unaware,omniscient,mbiaz", "--bootstrap", "200"]) == 0
    table = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[2:] for line in table.splitlines() if line.startswith("M_")}
    assert rows["M_w"][:2] == ["100.0", "0.0"] and rows["M_c"][:2] == ["0.0", "0.0"]
    assert float(rows["M_w"][2]) not in (0.0, 100.0)
    assert "95% CI (bursts)" in table and "congestion 3.17 %" in table
    assert (
        main(
            [
                "score",
                str(SAMPLE),
                str(TRACES / "wlh_tcp_1flow_high.tr.gz"),
                "--by",
                "flow",
                "--format",
                "json",
                "--lda",
                "zigzag",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert [(r["trace"].rsplit("/", 1)[-1], r["flow"]) for r in rows] == [
        ("wlh_cbr_1flow_bursty.tr.gz", "1"),
        ("wlh_tcp_1flow_high.tr.gz", "1"),
    ]  # not the background flow 101
    out = tmp_path / "s.md"
    assert main(["score", str(SAMPLE), "--format", "md", "--by", "pooled", "-o", str(out)]) == 0
    on_a_receiver = [lda for lda in parse_ldas("all") if "receiver" in lda.views]  # what "all" holds there
    assert f"wrote {len(on_a_receiver)} score rows" in capsys.readouterr().out
    md = out.read_text()
    assert md.count("| M_c % |") == 1 and "| called C, was W % of scored |" in md
    assert main(["score", str(SAMPLE), "--format", "csv", "--average", "mean", "--by", "trace", "--flows", "all"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(frame) == len(on_a_receiver) and (frame["flows"] == 2).all()


def test_score_usage_errors(capsys):
    assert main(["score", str(SAMPLE), "--lda", "bias"]) == 2
    assert "unknown LDA 'bias'" in capsys.readouterr().err
    assert main(["score", str(SAMPLE), "--average", "mean", "--by", "flow"]) == 2
    assert "--average mean" in capsys.readouterr().err
    assert main(["classify", str(SAMPLE), "--detection", "0"]) == 2
    assert main(["score", str(SAMPLE), "-o", str(SAMPLE)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_an_output_in_a_missing_folder_is_refused_by_name(tmp_path, capsys):
    """Before the work where the command can (score, report), at the write where it cannot."""
    missing = tmp_path / "no" / "such"
    for command, name in (("score", "s.json"), ("report", "r.html"), ("timeline", "t.csv")):
        assert main([command, str(SAMPLE), "-o", str(missing / name)]) == 2
        assert f"cannot write {missing / name}: no folder {missing} (create it first)" in capsys.readouterr().err
    assert not missing.parent.exists()


def test_replay_prints_the_modeled_throughput_and_writes_the_rates(tmp_path, capsys):
    out = tmp_path / "rates.parquet"
    assert (
        main(
            [
                "replay",
                str(SAMPLE),
                "--controller",
                "tfrc,newreno",
                "--lda",
                "unaware,omniscient",
                "--capacity",
                "150k",
                "-o",
                str(out),
                "--compare-sent",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "open-loop replay" in text and "allowed rate against the rate the trace's sender sent" in text
    rates = pd.read_parquet(out)
    assert set(rates["controller"]) == {"tfrc", "newreno"} and set(rates["lda"]) == {"unaware", "omniscient"}
    assert list(rates.columns) == ["lda", "controller", "flow", "t_s", "seq", "rate_bps"]
    summary_lines = [line.split() for line in text.splitlines() if line.split()[:3] == ["omniscient", "tfrc", "1"]]
    assert summary_lines and float(summary_lines[0][4]) == 150.0  # the capacity given, in kb/s


def test_score_shows_the_modeled_throughput(capsys):
    assert main(["score", str(SAMPLE), "--lda", "unaware,omniscient", "--bootstrap", "0"]) == 0
    captured = capsys.readouterr()
    assert "open-loop" in captured.err
    rows = {" ".join(line.split()[:-2]): line.split()[-2:] for line in captured.out.splitlines()}
    unaware, omniscient = (float(v) for v in rows["thput % (mean over flows)"])  # by trace (the default)
    assert 0 < unaware < omniscient <= 100
    assert rows["vs unaware (ratio of means)"][0] == "1.00"
    assert float(rows["vs unaware (ratio of means)"][1]) == pytest.approx(omniscient / unaware, abs=0.006)
    assert "Jain index" in rows and "the modeled throughput of tfrc:discounting=true:rto_factor=2.75" in captured.out
    assert main(["score", str(SAMPLE), "--lda", "unaware", "--controller", "none", "--bootstrap", "0"]) == 0
    assert "thput" not in capsys.readouterr().out


def test_replay_usage_errors(capsys):
    assert main(["replay", str(SAMPLE), "--controller", "tfrc:n=1"]) == 2
    assert "n must be" in capsys.readouterr().err
    assert main(["replay", str(SAMPLE), "--controller", "vegas"]) == 2
    assert "unknown controller 'vegas'" in capsys.readouterr().err
    assert main(["replay", str(SAMPLE), "--capacity", "-3"]) == 2


def _biaz_mc_interval(rows: list[dict]) -> str:
    row = next(r for r in rows if r["lda"] == "biaz")
    return f"{100 * row['M_c_boot_lo']:.1f}–{100 * row['M_c_boot_hi']:.1f}"


def test_an_ldas_interval_is_the_same_in_every_command(tmp_path, capsys):
    """Biaz's M_c interval on the bundled CBR trace was 72.7-97.1 from `score`, 72.9-97.3 from
    `score --lda biaz,zbs` and 73.8-97.1 from `report`: one generator for every LDA, and 200
    resamples in the report. Seeded by what each LDA is scored on, it is one interval in all,
    by flow or by trace, through the command and the Python API."""
    assert main(["score", str(SAMPLE), "--format", "json", "--controller", "none"]) == 0
    alone = _biaz_mc_interval(json.loads(capsys.readouterr().out))
    assert main(["score", str(SAMPLE), "--lda", "zbs,biaz", "--by", "flow", "--format", "json"]) == 0
    assert _biaz_mc_interval(json.loads(capsys.readouterr().out)) == alone
    out = tmp_path / "r.html"
    assert main(["report", str(SAMPLE), "--lda", "spike,biaz", "--controller", "none", "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    page = out.read_text()
    header = re.findall(r"<th>([^<]*)</th>", page[page.index("<thead>", page.index("<h3>Scores")) :])
    ldas = header[1 : header.index("losses")]
    ci = page[page.index("95% CI (bursts)", page.index("<th>M_c %</th>")) :]
    cells = re.findall(r"<td>([^<]*)</td>", ci)[: len(ldas)]
    assert dict(zip(ldas, cells))["biaz"] == alone

    timeline = build_timeline(read_trace(SAMPLE))
    decisions = classify(timeline, "biaz,mbiaz,spike").assign(trace=str(SAMPLE))
    scores = score(decisions, by="flow").query("flow == '1'")
    assert _biaz_mc_interval(scores.to_dict("records")) == alone
    scores = score(decisions[decisions["lda"] == "biaz"].assign(trace=str(SAMPLE.resolve())), by="trace")
    assert _biaz_mc_interval(scores.to_dict("records")) == alone  # however the trace's path is spelled
    # the seed still moves it, in the command as in the API
    assert main(["score", str(SAMPLE), "--lda", "biaz", "--seed", "1", "--format", "json"]) == 0
    moved = _biaz_mc_interval(json.loads(capsys.readouterr().out))
    assert moved != alone and moved == _biaz_mc_interval(score(decisions, by="flow", seed=1).to_dict("records"))


@pytest.mark.parametrize("command", ["score", "report"])
def test_the_bootstrap_options_state_their_defaults(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--bootstrap N resamples for the loss-burst bootstrap intervals (default 1000;" in text
    assert "--seed SEED the bootstrap's seed (default 0)" in text


def test_captures_work_wherever_traces_do(tmp_path, capsys):
    from ..support.captures import Endpoints, Record, ip_packet, link_frame, rtp_payload, write_pcap

    records = [
        Record(10**9 + seq * 20_000_000, link_frame(1, ip_packet(Endpoints(), rtp_payload(seq, seq * 160, 7))))
        for seq in range(200)
        if seq % 50 != 25
    ]  # four packets lost
    capture = tmp_path / "rtp.pcap"
    write_pcap(capture, records, 1)
    assert main(["inspect", str(capture)]) == 0
    out = capsys.readouterr().out
    assert "pcap, 1 flow(s) in the capture, 1 read as sequenced flows or streams" in out
    assert "10.0.0.1:5004>10.0.0.2:6000/udp" in out and " rtp" in out
    assert "1970-01-01 00:00:01.000000" in out  # the first packet's time (10^9 ns), in UTC
    # every LDA that can run on two clocks without feedback; no throughput without an RTT
    assert main(["score", str(capture), "--bootstrap", "0"]) == 0
    captured = capsys.readouterr()
    assert "adaptive_rtt left out" in captured.err and "no modeled throughput" in captured.err
    losses = next(line for line in captured.out.splitlines() if line.startswith("losses "))
    assert set(losses.split()[1:]) == {"4"} and "thput" not in captured.out
    assert main(["replay", str(capture), "--base-rtt", "0.05", "--controller", "tfrc", "--lda", "unaware"]) == 0
    assert "unaware       tfrc" in capsys.readouterr().out
    assert main(["timeline", str(capture), "-o", str(tmp_path / "t.csv")]) == 0
    assert "wrote 200 packets" in capsys.readouterr().out


def _kernels_run_fresh(before: str, after: str) -> list[list[str]]:
    """The last words ``after`` prints in two fresh interpreters that run ``before``, then
    compiled kernels on the sample capture: through the CLI, and through the library."""
    import subprocess
    import sys

    env = {**os.environ, "LDANALYZE_KERNELS": "compiled"}
    runs = (
        "from ldanalyze.cli import main\nassert main(['inspect', sys.argv[1]]) == 0",
        "from ldanalyze import read_trace, build_timeline\nbuild_timeline(read_trace(sys.argv[1]))",
    )
    return [
        subprocess.run(
            [sys.executable, "-c", f"import sys\n{before}\n{run}\n{after}\n", str(SAMPLE)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for run in runs
    ]


def test_a_command_spares_numba_its_blas_probe_and_scipy_still_imports():
    """A command's process runs compiled kernels without numba importing scipy.linalg to
    probe for BLAS (no kernel of ours calls it); scipy.linalg imports as ever afterwards. The
    same kernels called from the library (no CLI) probe as numba always does."""
    pytest.importorskip("scipy")
    after = (
        "from numba.np import arraymath\n"
        "probed = 'scipy.linalg' in sys.modules\n"
        "import scipy.linalg\n"
        "print(probed, arraymath._HAVE_BLAS, scipy.linalg.__name__)"
    )
    outputs = [words[-3:] for words in _kernels_run_fresh("", after)]
    assert outputs == [["False", "False", "scipy.linalg"], ["True", "True", "scipy.linalg"]]


def test_a_command_spares_numba_its_search_for_plugins():
    """A command's process runs compiled kernels without numba reading every distribution's
    entry points for ``numba_extensions``; the same kernels called from the library search as
    numba always does."""
    before = (
        "import importlib.metadata as md\n"
        "calls, real = [], md.entry_points\n"
        "md.entry_points = lambda *a, **k: calls.append(1) or real(*a, **k)"
    )
    after = "from numba.core import entrypoints\nprint(len(calls), entrypoints._already_initialized)"
    outputs = [words[-2:] for words in _kernels_run_fresh(before, after)]
    assert outputs == [["0", "True"], ["1", "True"]]


def test_the_cli_leaves_numpy_on_ordinary_pages_unless_told(monkeypatch):
    """numpy's transparent-huge-page advice is turned off by the CLI, and left as the user set
    it when NUMPY_MADVISE_HUGEPAGE is in the environment."""
    import numpy as np

    from ldanalyze.cli import ordinary_pages

    setting = np._core.multiarray._set_madvise_hugepage
    before = setting(True)
    try:
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
        ordinary_pages()
        assert setting(True) is True  # left alone
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        ordinary_pages()
        assert setting(True) is False
    finally:
        setting(before)


def _command(argv: list[str], extra: str = "") -> subprocess.CompletedProcess[str]:
    """``ldanalyze ARGV`` run as the installed command runs it (``cli.run``), in a fresh
    interpreter that also ran ``extra`` and holds an object that says when Python's teardown
    destroys it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Witness:\n"
        "    def __del__(self): print('torn down', flush=True)\n"
        "witness = Witness()\n"
        f"{extra}\n"
        "from ldanalyze.cli import run\n"
        f"sys.argv = ['ldanalyze', *{argv!r}]\n"
        "run()\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_the_command_skips_teardown_but_keeps_its_output_exit_code_and_exit_handlers(capsys):
    """The command ends without Python's teardown (a quarter second of every command), yet
    prints all it would, returns main's exit code and runs the exit handlers registered."""
    assert main(["inspect", "--json", str(SAMPLE)]) == 0
    in_process = json.loads(capsys.readouterr().out)
    done = _command(["inspect", "--json", str(SAMPLE)], "import atexit; atexit.register(print, 'handler ran')")
    assert done.returncode == 0, done.stderr
    *report, last = done.stdout.splitlines()
    assert json.loads("\n".join(report)) == in_process
    assert last == "handler ran" and "torn down" not in done.stdout
    failed = _command(["inspect", str(TRACES / "no_such_trace.tr")])
    assert failed.returncode == 2 and "ldanalyze: error:" in failed.stderr and "torn down" not in failed.stdout


def test_the_command_waits_for_a_thread_still_running():
    """A non-daemon thread that outlives main gets the ordinary exit, which waits for it."""
    thread = (
        "import threading, time, ldanalyze.cli as cli\n"
        "main, ended = cli.main, threading.Event()\n"
        "cli.main = lambda *args: (main(*args), ended.set())[0]\n"
        "threading.Thread(target=lambda: (ended.wait(), time.sleep(0.2), print('thread done', flush=True))).start()"
    )
    done = _command(["inspect", str(SAMPLE)], thread)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["thread done", "torn down"]


# --- a newcomer's mistakes get an error that points to the fix (issue: the first hour) -------

TFRC_TRACE = str(TRACES / "wlh_tfrc_1flow_high.tr.gz")


def error_of(argv, capsys) -> str:
    """The one-line error of a command that must fail with exit status 2."""
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        code = stop.code
    assert code == 2
    return capsys.readouterr().err


def test_parameters_joined_by_a_comma_are_explained(capsys):
    err = error_of(["score", TFRC_TRACE, "--lda", "spike:alpha=0.6,beta=0.4"], capsys)
    assert "'beta=0.4' is a parameter, not an LDA" in err and "spike:alpha=0.6:beta=0.4" in err


def test_a_folder_points_to_batch(capsys):
    err = error_of(["score", str(TRACES)], capsys)
    assert "is a folder" in err and f"ldanalyze batch {TRACES}" in err


def test_a_misspelt_option_gets_the_nearest_one(capsys):
    assert "(did you mean --lda?)" in error_of(["score", TFRC_TRACE, "--ldas", "spike"], capsys)
    assert "did you mean" not in error_of(["score", TFRC_TRACE, "--nothing-like-it"], capsys)


def test_an_error_model_trace_is_not_scored(capsys):
    err = error_of(["score", str(TRACES / "wlh_tfrc_1flow_high.em.gz")], capsys)
    assert "only drop events" in err and "error model's drop trace" in err


def test_score_writes_what_the_extension_promises_or_refuses(tmp_path, capsys):
    assert "ldanalyze report TRACE -o" in error_of(["score", TFRC_TRACE, "-o", str(tmp_path / "s.html")], capsys)
    assert not (tmp_path / "s.html").exists()
    assert "promises json" in error_of(["score", TFRC_TRACE, "-o", str(tmp_path / "s.json"), "--format", "csv"], capsys)
    assert main(["score", TFRC_TRACE, "--lda", "spike", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())[0]["lda"] == "spike"
    assert main(["score", TFRC_TRACE, "--lda", "spike", "-o", str(tmp_path / "s.md")]) == 0
    assert (tmp_path / "s.md").read_text().startswith("#### ")


def test_sweep_varies_its_named_lda_only(capsys):
    err = error_of(["sweep", "spike", TFRC_TRACE, "--lda", "zbs", "--param", "beta=0.2:0.3:0.1"], capsys)
    assert "sweep varies the LDA named first" in err
    assert main(["sweep", "spike", TFRC_TRACE, "--lda", "all", "--param", "beta=0.2:0.3:0.1"]) == 0
    assert "refused by spike" in capsys.readouterr().out


def test_hints_name_the_option_the_user_types(tmp_path, capsys):
    """A capture with separate clocks and no feedback: adaptive_rtt needs its propagation delay,
    and the replay the round-trip time; the hints give the command-line form."""
    capture = str(TRACES / "captures" / "lab_receiver.pcap")
    err = error_of(["score", capture, "--lda", "adaptive_rtt", "--controller", "none"], capsys)
    assert "--lda adaptive_rtt:propagation_delay=SECONDS" in err
    err = error_of(["replay", capture, "--lda", "unaware", "--controller", "tfrc"], capsys)
    assert "--base-rtt SECONDS" in err


def test_classify_shows_zbs_usage_only_where_it_decided(capsys):
    """The four-flow trace: usage rows for the flows with losses, not for the warm-up traffic."""
    assert main(["classify", str(TRACES / "wlh_mix_4flow_high.tr.gz"), "--lda", "zbs"]) == 0
    out = capsys.readouterr().out
    assert "in the 4 flow(s) with losses" in out and "100:" not in out.split("share of time")[1]
    capture = str(TRACES.parent / "tests" / "data" / "real" / "stun_wa_call.pcapng")
    assert main(["classify", capture, "--lda", "zbs"]) == 0  # a real call without losses: no usage table
    assert "share of time" not in capsys.readouterr().out


def test_score_leaves_background_traffic_out_and_says_which_flows_it_scored(capsys):
    """The README's first command: the CBR sample's 142 losses of flow 1 (41 congestion, 101
    wireless: traces/README.md's reference counts), not the 18 of the exp cross traffic."""
    cbr = str(TRACES / "wlh_cbr_1flow_bursty.tr.gz")
    assert main(["score", cbr, "--lda", "spike", "--format", "json", "--controller", "none"]) == 0
    captured = capsys.readouterr()
    row = json.loads(captured.out)[0]
    assert (row["losses"], row["congestion"], row["wireless"], row["flows_scored"]) == (142, 41, 101, "1")
    assert "flows not scored: 100:4.0>1.0, 100:4.1>1.0, 101 (background traffic: exp)" in captured.err
    assert "--flows all" in captured.err
    assert main(["score", cbr, "--lda", "spike", "--controller", "none"]) == 0
    assert "flows scored: 1 (true loss rates of the flows scored: congestion 3.17 %" in capsys.readouterr().out
    assert main(["score", cbr, "--lda", "spike", "--format", "json", "--flows", "all", "--controller", "none"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["losses"] == 160
    assert main(["score", cbr, "--lda", "spike", "--format", "json", "--flows", "101", "--controller", "none"]) == 0
    captured = capsys.readouterr()
    assert (
        json.loads(captured.out)[0]["losses"] == 18 and "1, 100:4.0>1.0, 100:4.1>1.0 (not in --flows)" in captured.err
    )
    err = error_of(["score", cbr, "--flows", "7"], capsys)
    assert "has no flow '7' (flows: 1, 100:4.0>1.0, 100:4.1>1.0, 101; 'all' for every one)" in err


def test_a_fid_names_all_its_flows_and_inspect_shows_the_background(capsys):
    mix = str(TRACES / "wlh_mix_4flow_high.tr.gz")
    assert read_trace(mix).flows == ["1", "2", "3", "4"]
    assert read_trace(mix, flows=["100"]).flows == ["100:10.0>1.0", "100:10.1>1.0"]
    assert read_trace(mix, flows="all").meta["unscored_flows"] == {}
    assert main(["inspect", mix]) == 0
    out = capsys.readouterr().out
    assert "6 flow(s)" in out and "background traffic (exp)" in out and "100:10.0>1.0, 100:10.1>1.0" in out


def test_a_trace_of_background_traffic_only_scores_it(tmp_path):
    """With nothing else to study, the generators' flows are what the trace is about."""
    only = tmp_path / "exp_only.tr"
    lines = [
        f"+ {0.1 * i:.1f} 0 1 exp 210 ------- 7 0.0 1.0 {i} {i}\n- {0.1 * i:.1f} 0 1 exp 210 ------- 7 0.0 1.0 {i} {i}\n"
        f"r {0.1 * i + 0.05:.2f} 0 1 exp 210 ------- 7 0.0 1.0 {i} {i}\n"
        for i in range(5)
    ]
    only.write_text("".join(lines))
    trace = read_trace(only)
    assert trace.flows == ["7"] and trace.meta["unscored_flows"] == {}


def test_score_says_when_nothing_was_lost(capsys):
    capture = str(TRACES.parent / "tests" / "data" / "real" / "stun_wa_call.pcapng")
    assert main(["score", capture, "--lda", "spike"]) == 0
    assert capsys.readouterr().out == "nothing to score: no flow lost a packet (7 flow(s) read; `inspect` shows them)\n"


def test_a_clock_rate_belongs_to_a_stream(capsys):
    """90000 Hz for every stream of a real call whose audio clock runs at 16 kHz is used as
    given (issue 45: a value the user gives is obeyed), with a warning naming the stream, what
    its clock shows and the per-stream option; given per SSRC, it is applied to that one."""
    capture = str(TRACES.parent / "tests" / "data" / "real" / "stun_wa_call.pcapng")
    assert main(["inspect", capture, "--json", "--clock-rate", "90000"]) == 0
    out, err = capsys.readouterr()
    audio = json.loads(out)["meta"]["flows"]["93.57.123.227:3478>192.168.12.156:46652/udp"]
    assert (audio["clock_rate"], audio["clock_source"]) == (90000, "given")
    assert "clock rate 90000 Hz given for stream 93.57.123.227:3478>192.168.12.156:46652/udp is used" in err
    assert "advances 15,99" in err and "16,000 on its lower envelope" in err and "--clock-rate 0xe17231aa=16000" in err
    assert main(["inspect", capture, "--json", "--clock-rate", "0xE17231AA=16000"]) == 0
    out, err = capsys.readouterr()
    flows = json.loads(out)["meta"]["flows"]
    audio = flows["93.57.123.227:3478>192.168.12.156:46652/udp"]
    assert (audio["clock_rate"], audio["clock_source"]) == (16000, "given") and "is used, but" not in err
    others = [info for label, info in flows.items() if not label.startswith("93.57") and "clock_source" in info]
    assert others and all(info["clock_source"] != "given" for info in others)
    assert "KEY=HZ pairs" in error_of(["score", capture, "--clock-rate", "fast"], capsys)
    assert "is no SSRC" in error_of(["score", capture, "--clock-rate", "0xzz=8000"], capsys)


def test_inspect_shows_the_main_columns_unless_verbose(capsys):
    mix = str(TRACES / "wlh_mix_4flow_high.tr.gz")
    assert main(["inspect", mix]) == 0
    short = capsys.readouterr().out
    header = next(line for line in short.splitlines() if line.split()[:2] == ["flow", "sent"])
    assert "loss % cong % wless %" in header and "rott_max_ms" not in header and "inspect -v shows all" in short
    assert main(["inspect", mix, "-v"]) == 0
    assert "rott_max_ms" in capsys.readouterr().out
    discord = str(TRACES.parent / "tests" / "data" / "real" / "discord.pcap")
    assert main(["inspect", discord]) == 0
    out = capsys.readouterr().out
    listed = out.split("first and last: UTC):\n")[1].split("\n\n")[0].splitlines()
    assert len(listed) == 1 + 20 + 1 and listed[-1].startswith("... and ") and "inspect -v lists them all" in listed[-1]


def test_a_capture_without_truth_says_so_instead_of_loss_rates(capsys):
    discord = str(TRACES.parent / "tests" / "data" / "real" / "discord.pcap")
    assert main(["score", discord, "--lda", "spike"]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    assert "no ground truth: the cause of each of its 1 losses is unknown" in title and "true loss rates" not in title
    assert "and 36 more" in title  # 37 streams, named as far as 80 characters go


def test_batch_shows_how_far_the_ldas_agree_on_a_capture_without_truth(tmp_path, capsys):
    """Without truth the batch table shows each LDA's agreement with the others, with the
    caveat that it is no sign of being right; the JSON report has the columns, null for a
    baseline, and fits its schema."""
    import jsonschema

    from ldanalyze.report.ci import JSON_SCHEMA

    capture, report = str(TRACES / "captures" / "lab_receiver.pcap"), tmp_path / "report.json"
    args = ["batch", capture, "--no-cache", "--controller", "none", "--lda", "spike,zbs,zigzag,biaz,unaware"]
    assert main([*args, "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "agrees w/ others %" in out and "mean kappa w/ others" in out and "no sign of being right" in out
    rows = json.loads(report.read_text())
    jsonschema.validate(rows, JSON_SCHEMA)
    pooled = {r["lda"]: r for r in rows["results"] if r["scope"] == "pooled"}
    assert pooled["unaware"]["agrees_with_others"] is None and pooled["unaware"]["mean_kappa"] is None
    assert all(0 <= pooled[lda]["agrees_with_others"] <= 1 for lda in ("spike", "zbs", "zigzag", "biaz"))
    assert pooled["zigzag"]["compared"] <= pooled["zigzag"]["called"]


def test_python_dash_m_runs_the_command():
    """``python -m ldanalyze`` (and ``python -m ldanalyze.cli``) is the ``ldanalyze`` command."""
    for module in ("ldanalyze", "ldanalyze.cli"):
        done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.startswith("ldanalyze "), (module, done.stderr)
