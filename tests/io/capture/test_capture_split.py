"""Captures larger than memory, one flow at a time (ldanalyze/io/capture/split.py): the same
packets, fates and counts as ``read_capture``, whatever the block size, on real captures."""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import ldanalyze as la
from ldanalyze.io.capture.split import read_capture_flows

from .test_real_captures import REAL

COLUMNS = ["flow", "seq", "size", "t_send", "t_recv", "fate", "reason"]


def whole_and_split(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = la.read_trace(path, skew="keep", **options)
        parts = list(read_capture_flows(path, skew="keep", block_records=97, **options))
    return whole, parts


def table(packets: pd.DataFrame) -> pd.DataFrame:
    out = packets[COLUMNS].astype({"flow": str, "fate": str, "reason": str})
    return out.sort_values(["flow", "seq", "t_send"]).reset_index(drop=True)


@pytest.mark.parametrize("name", ["discord.pcap", "stun_wa_call.pcapng", "rtp.pcapng"])
def test_one_flow_at_a_time_reads_what_the_whole_capture_reads(name, tmp_path):
    path = REAL / name
    whole, parts = whole_and_split(path)
    assert len(parts) == len({p.packets["flow"].astype(str).str.split("/ssrc=").str[0].iat[0] for p in parts})
    split = pd.concat([p.packets for p in parts], ignore_index=True)
    pd.testing.assert_frame_equal(table(split), table(whole.packets))
    flows = {}
    for part in parts:
        flows.update(part.meta["flows"])
    assert flows.keys() == whole.meta["flows"].keys()
    assert {k: v["lost"] for k, v in flows.items()} == {k: v["lost"] for k, v in whole.meta["flows"].items()}


def test_the_counts_cover_every_record(tmp_path):
    path = REAL / "discord.pcap"
    whole, parts = whole_and_split(path)
    assert parts[0].meta["records"] == whole.meta["records"]


def test_the_per_flow_files_are_removed(tmp_path):
    path = REAL / "stun_wa_call.pcapng"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in read_capture_flows(path, workdir=tmp_path, block_records=50):
            assert len(list(tmp_path.iterdir())) == 1  # its temporary folder, while it reads
    assert list(tmp_path.iterdir()) == []


def test_score_can_read_a_capture_one_flow_at_a_time(capsys):
    from ldanalyze.cli import main

    path = str(REAL / "discord.pcap")
    args = [
        "score",
        path,
        "--skew",
        "keep",
        "--lda",
        "biaz,spike",
        "--controller",
        "none",
        "--bootstrap",
        "0",
        "--by",
        "flow",
        "--format",
        "csv",
    ]
    assert main(args) == 0
    whole = capsys.readouterr().out
    assert main([*args, "--flow-at-a-time"]) == 0
    split = capsys.readouterr().out
    columns = ["flow", "lda", "losses", "M_c", "M_w"]
    # one trace per flow: the same flows' scores, whatever trace each row names
    assert (
        pd.read_csv(io.StringIO(split))[columns]
        .sort_values(["flow", "lda"])
        .reset_index(drop=True)
        .equals(pd.read_csv(io.StringIO(whole))[columns].sort_values(["flow", "lda"]).reset_index(drop=True))
    )
    assert main([*args, "--flow-at-a-time", "--ssrc", "0x1"]) == 2
    assert "takes no --ssrc" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["discord.pcap", "stun_wa_call.pcapng", "rtp.pcapng", "telegram_videocall.pcapng"])
def test_one_flow_at_a_time_fits_each_pair_of_hosts_jointly(name):
    """The skew of a pair of hosts is fitted on all its flows, though they are read one at a
    time: the same fit, status and receive times as the whole capture's."""
    path = REAL / name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = la.read_trace(path)
        parts = list(read_capture_flows(path, block_records=97))
    fit = pd.concat([p.meta["clock_fit"] for p in parts if len(p.meta["clock_fit"])], ignore_index=True)
    fit = fit.sort_values("flow")
    expect = whole.meta["clock_fit"].sort_values("flow")
    assert fit["flow"].tolist() == expect["flow"].tolist()
    assert fit["status"].tolist() == expect["status"].tolist()
    assert fit["samples"].tolist() == expect["samples"].tolist()
    for column in ("skew_ppm", "uncertainty_ppm", "offset_s", "excess_s"):
        np.testing.assert_allclose(fit[column], expect[column], rtol=1e-9, atol=1e-9)
    if name == "telegram_videocall.pcapng":  # two pairs of two flows each: one skew a pair, not 0
        per_pair = fit.groupby("pair")["skew_ppm"]
        assert (per_pair.size() == 2).sum() == 2 and (per_pair.nunique() == 1).all()
        assert (fit["skew_ppm"].abs() > 1).all()
    split = pd.concat([p.packets for p in parts], ignore_index=True)
    a, b = table(split), table(whole.packets)
    np.testing.assert_allclose(a["t_recv"], b["t_recv"], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["discord.pcap", "stun_signal.pcapng", "telegram_videocall.pcapng", "rtp.pcapng"])
def test_the_whole_capture_s_meta_is_gathered_from_its_flows(name):
    """What no one flow's Trace holds, the capture's flow table (every flow, with the packets
    and bytes counted as the records were decoded, in small blocks here), the flows skipped and
    the notes, comes with the result once every flow is read; with the flows' own meta it is
    the whole read's."""
    path = REAL / name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = la.read_trace(path)
        flows = read_capture_flows(path, block_records=97)
        metas = [trace.meta for trace in flows]
    pd.testing.assert_frame_equal(flows.capture_flows, whole.meta["capture_flows"])
    gathered = flows.whole_meta(metas)
    for key in ("flows", "skipped_flows", "skipped_streams", "notes", "records", "capture_host"):
        assert gathered[key] == whole.meta[key], key
    assert gathered["clock_fit"]["flow"].tolist() == whole.meta["clock_fit"]["flow"].tolist()


@pytest.mark.parametrize("name", ["discord.pcap", "stun_signal.pcapng", "telegram_videocall.pcapng"])
def test_inspect_flow_at_a_time_reports_what_the_whole_read_reports(name, capsys):
    """The same report, text and JSON, and the same warnings, read whole or flow by flow."""
    from ldanalyze.cli import main

    path = str(REAL / name)
    reports = []
    for flag in ([], ["--flow-at-a-time"]):
        assert main(["inspect", path, *flag]) == 0
        text = capsys.readouterr()
        assert main(["inspect", path, "--json", *flag]) == 0
        reports.append((text.out, sorted(text.err.splitlines()), json.loads(capsys.readouterr().out)))
    (text, err, js), (split_text, split_err, split_js) = reports
    assert split_text == text and split_err == err
    assert split_js["flows"] == js["flows"] and split_js["meta"].keys() == js["meta"].keys()
    assert "flows in the capture" in text and "streams read" in text


def test_inspect_flow_at_a_time_refuses_what_it_cannot_do(capsys):
    from ldanalyze.cli import main

    from ...conftest import TRACES

    assert main(["inspect", str(TRACES / "wlh_cbr_1flow_bursty.tr.gz"), "--flow-at-a-time"]) == 2
    assert "reads pcap and pcapng captures" in capsys.readouterr().err
    assert main(["inspect", str(REAL / "discord.pcap"), "--flow-at-a-time", "--flows", "x"]) == 2
    assert "takes no --flows" in capsys.readouterr().err
    assert main(["inspect", str(REAL / "discord.pcap"), "--flow-at-a-time", "--payload", "tcp"]) == 2
    err = capsys.readouterr().err  # no flow is TCP with timestamps: the first reasons
    assert "discord.pcap: no flow with sequence numbers (10.0.2.15:42834>162.159.128.233:443/tcp: " in err
    assert "66.22.244.154:50004/udp: not a TCP flow (first packet at byte 4080); ...)" in err


def test_inspect_reads_a_big_capture_flow_by_flow_by_itself(capsys):
    """Above --flow-at-a-time-above (auto by default, as batch: what the memory available
    holds) inspect reads a capture one flow at a time by itself, and says so; the report is the
    whole read's. An option that picks flows or streams, or 'never', keeps the whole read."""
    from ldanalyze.cli import main

    path = str(REAL / "stun_wa_call.pcapng")
    assert main(["inspect", path]) == 0
    whole = capsys.readouterr()
    assert "note" not in whole.err  # a few kB: below the default
    assert main(["inspect", path, "--flow-at-a-time-above", "1K"]) == 0
    split = capsys.readouterr()
    assert split.out == whole.out
    assert "more than --flow-at-a-time-above (1K): read one flow at a time" in split.err
    for options in (["--flow-at-a-time-above", "never"], ["--flow-at-a-time-above", "0", "--ssrc", "0x1"]):
        main(["inspect", path, *options])
        assert "read one flow at a time" not in capsys.readouterr().err
    assert main(["inspect", path, "--flow-at-a-time-above", "lots"]) == 2
    assert "'lots' is no size" in capsys.readouterr().err


def test_auto_reads_whole_what_a_quarter_of_the_memory_available_holds(monkeypatch, capsys):
    """``auto`` allows a capture 4 bytes of memory per byte of file in a quarter of the memory
    available: 16 kB with 256 kB free; a capture is read whole with 16 times its size free, one
    flow at a time with 16 bytes less; 1 GiB where the system does not say."""
    from ldanalyze.batch import jobs
    from ldanalyze.cli import main

    monkeypatch.setattr(jobs, "available_memory", lambda: 256 * 1024)
    assert jobs.whole_read_limit() == 16 * 1024
    path = REAL / "stun_wa_call.pcapng"
    size = path.stat().st_size
    assert jobs.too_big_to_read_whole(str(path), "auto") == (size > 16 * 1024)
    monkeypatch.setattr(jobs, "available_memory", lambda: 16 * size)
    assert not jobs.too_big_to_read_whole(str(path), "auto")
    monkeypatch.setattr(jobs, "available_memory", lambda: 16 * size - 16)
    assert jobs.too_big_to_read_whole(str(path), "auto")
    assert main(["inspect", str(path)]) == 0
    assert f"more than the {(16 * size - 16) // 16 / 1e6:,.0f} MB the memory available holds read whole" in (
        capsys.readouterr().err
    )
    monkeypatch.setattr(jobs, "available_memory", lambda: None)
    assert jobs.whole_read_limit() == 1 << 30
