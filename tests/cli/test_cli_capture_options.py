"""The command line reads captures as the API can: --field for another protocol's payload (ns-3's
SeqTsHeader here), --clock-rate, --skew-limit."""

from __future__ import annotations

import json
import re
import struct

import pytest

from ldanalyze.cli import main

from ..conftest import TRACES
from ..support.captures import T0, Endpoints, Record, ip_packet, link_frame, write_pcap


def seqts_capture(path, lost=(3, 7)):
    """A receiver capture of a flow whose payload starts with ns-3's SeqTsHeader: seq (u32) and
    the send time in ns (u64); 20 ms spacing, 5 ms delay."""
    ends = Endpoints(proto="udp", src="10.1.1.1", dst="10.1.1.2", sport=49153, dport=9)
    records = []
    for seq in range(20):
        if seq in lost:
            continue
        sent_ns = 1_000_000_000 + seq * 20_000_000
        payload = struct.pack(">IQ", seq, sent_ns) + bytes(20)
        records.append(Record(T0 * 10**9 + sent_ns + 5_000_000, link_frame(1, ip_packet(ends, payload))))
    write_pcap(path, records, 1)
    return path


def test_field_reads_another_protocol(tmp_path, capsys):
    path = seqts_capture(tmp_path / "ns3.pcap")
    assert main(["inspect", str(path), "--field", "seq=0:4,time=4:8:ns", "--json"]) == 0
    (flow,) = json.loads(capsys.readouterr().out)["flows"]
    assert (flow["sent"], flow["delivered"], flow["lost"]) == (20, 18, 2)
    assert flow["rott_max_ms"] == pytest.approx(0.0, abs=1e-3)  # the 5 ms delay is constant
    assert main(["inspect", str(path), "--field", "seq=0:4,time=4:8:parsecs"]) == 2
    assert "unknown time units 'parsecs'" in capsys.readouterr().err
    assert main(["inspect", str(path), "--field", "seq=0:4", "--payload", "rtp"]) == 2
    assert "either --payload or --field" in capsys.readouterr().err


def test_skew_limit_and_clock_rate_reach_the_reader(capsys):
    lab = str(TRACES / "captures" / "lab_receiver.pcap")
    assert main(["inspect", lab, "--json"]) == 0
    fits = json.loads(capsys.readouterr().out)["meta"]["clock_fit"]
    assert {f["status"] for f in fits} == {"not applied: beyond 200 ppm"}
    assert main(["inspect", lab, "--json", "--skew-limit", "50000"]) == 0
    fits = json.loads(capsys.readouterr().out)["meta"]["clock_fit"]
    assert {f["status"] for f in fits} == {"applied"}
    assert (
        main(["inspect", lab, "--json", "--clock-rate", "1000", "--flows", "10.231.1.1:47300>10.231.3.2:5201/tcp"]) == 0
    )
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert list(meta["flows"].values())[0]["clock_rate"] == 1000


def test_inspect_lists_streams_with_their_send_time_source_and_what_was_skipped(capsys):
    from ..io.capture.test_real_captures import REAL

    assert main(["inspect", str(REAL / "stun_signal.pcapng")]) == 0
    out = capsys.readouterr().out
    assert "streams read (send times from the best source each carries; view: sender" in out
    assert "out without a view: sent by the capture host" in out
    assert (
        "capture host: 192.168.12.169 (an end of the flows carrying 100.0% of the packets; it sends with TTL 64)" in out
    )
    # five or six packets over 0.1 s: the rate is a guess, and says so
    assert re.search(r"RTP timestamp at \d+\.\d Hz \(inferred \(not a usual rate\)\)", out)
    assert "noise: 2 one- or two-packet SSRCs" in out
    assert "skipped stream 18.195.131.143:61498>192.168.12.169:47767/udp/ssrc=0x000007dd: padding probes" in out


def test_a_doubtful_inferred_clock_rate_is_said_where_the_scores_and_the_report_are(capsys, tmp_path):
    """rtp.pcapng's streams whose timestamps give no usual rate: their delays may be off, so
    score says so on standard error, and the report beside the trace, with the option to use."""
    from ..io.capture.test_real_captures import REAL

    assert main(["score", str(REAL / "rtp.pcapng"), "--controller", "none"]) == 0
    err = capsys.readouterr().err
    assert re.search(
        r"note: 3 stream\(s\) on a media clock rate inferred .* matches no usual rate: \S+ \([\d,]+ Hz\)", err
    )
    assert "--clock-rate 0xSSRC=HZ" in err
    page = tmp_path / "rtp.html"
    assert main(["report", str(REAL / "rtp.pcapng"), "-o", str(page), "--controller", "none"]) == 0
    assert "matches no usual rate" in page.read_text()
    assert main(["score", str(REAL / "telegram_videocall.pcapng"), "--controller", "none"]) == 0
    assert "matches no usual rate" not in capsys.readouterr().err  # every stream on a usual rate


def test_ssrc_picks_rtp_streams(capsys):
    from ..io.capture.test_real_captures import REAL

    path = str(REAL / "stun_wa_call.pcapng")
    assert main(["inspect", path, "--ssrc", "0x34aa98ba", "--json"]) == 0
    flows = json.loads(capsys.readouterr().out)["flows"]
    assert len(flows) == 2 and all(f["flow"].startswith(("157.240.203.62:3478", "93.33.118.87:41107")) for f in flows)
    assert main(["inspect", path, "--ssrc", "0x1"]) == 2
    assert "no RTP stream with SSRC 0x00000001" in capsys.readouterr().err


def test_capture_host_names_or_disowns_the_capturing_host(capsys):
    from ..io.capture.test_real_captures import REAL

    path = str(REAL / "stun_wa_call.pcapng")
    outgoing = "192.168.12.156:46652>93.57.123.227:3478/udp"
    for option, direction in (
        ([], "out"),
        (["--capture-host", "none"], "in"),
        (["--capture-host", "93.57.123.227"], "in"),
    ):
        assert main(["inspect", path, "--json", *option]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert meta["flows"][outgoing]["outgoing"] == (direction == "out"), option
    assert meta["capture_host"] == {"address": "93.57.123.227", "how": "given"}
    assert meta["flows"]["93.57.123.227:3478>192.168.12.156:46652/udp"]["outgoing"]
    assert main(["inspect", path, "--capture-host", "10.0.0.300"]) == 2
    assert "capture host must be an IP address, auto or none, not '10.0.0.300'" in capsys.readouterr().err
