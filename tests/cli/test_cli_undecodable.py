"""Captures whose flows carry no sequence numbers are described, not refused (#45): ``inspect``
says what they hold (records, link types, time span, snap length and records cut, 802.11 frames
and those protected, a protocol hierarchy) and why nothing is read, with rc 0, and agrees with
tshark on the counts; ``score`` says there is nothing to score, and why."""

from __future__ import annotations

import json
import pathlib
import shlex
import subprocess
import warnings

import pytest

from ldanalyze.cli import main
from ldanalyze.io.capture.describe import capture_description
from ldanalyze.io.capture.pcap import decode_capture, read_capture
from ldanalyze.report.inspect_text import DECRYPT_COMMAND

from ..conftest import needs_binary, require_binary

REAL = pathlib.Path(__file__).parents[1] / "data" / "real"
WPA = REAL / "wifi" / "wpa-Induction.pcap.gz"
WLTRACE = REAL / "wifi" / "wltrace_trace.pcap"
CUT = REAL / "wifi" / "wltrace_non_radiotap.pcap"  # bare 802.11, 56 records cut to 60 bytes
VXLAN = REAL / "tunnels" / "vxlan.pcap"


def _inspect(capsys, path, *options):
    code = main(["inspect", str(path), *options])
    return code, capsys.readouterr().out


def test_protected_80211_is_described_with_how_to_decrypt(capsys):
    code, out = _inspect(capsys, WPA)
    assert code == 0
    assert "1093 records over 40.76 s" in out and "radiotap       127    65535     1093    0" in out
    assert "802.11 frames: 442 management, 285 data, 356 control, 10 unreadable; 280 protected (encrypted)" in out
    assert "      protected (encrypted)        280" in out  # under 802.11 data in the hierarchy
    assert "280 of 1093 records are protected (encrypted) 802.11 frames" in out
    assert "-o wlan.enable_decryption:TRUE" in out and "-U IP -w decrypted.pcapng" in out
    assert "no record decoded into a flow" in out


def test_a_capture_cut_by_its_snap_length_says_so(capsys):
    code, out = _inspect(capsys, CUT)
    assert code == 0
    assert "56 record(s) cut by the snap length, to at most 60 bytes" in out
    assert "802.11       105   262144     2001   56" in out


def test_icmp_in_vxlan_is_described_with_each_flows_reason(capsys):
    code, out = _inspect(capsys, VXLAN)
    assert code == 0
    assert "    tunnel vxlan          8\n      ipv4                8\n        icmp              8" in out
    assert "2 flow(s), none with sequence numbers: 2 flows: no payload kind is known for IP protocol 1" in out
    assert "--field seq=OFF:W,time=OFF:W:UNITS" in out  # flows there are: perhaps a layout of their own


@pytest.mark.parametrize("path", [WPA, WLTRACE, VXLAN], ids=lambda p: p.name)
def test_inspect_json_gives_the_same_facts(capsys, path):
    code, out = _inspect(capsys, path, "--json")
    assert code == 0
    payload = json.loads(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        capture = decode_capture(path, head_bytes=48)
    described = payload["description"]
    assert payload["flows"] == [] and described["records"] == len(capture.records)
    assert described["decode"] == {k: v for k, v in capture.counts.items() if k in described["decode"]}
    assert payload["why"] and described["protocols"][0]["records"] == len(capture.records)


def test_a_payload_the_user_names_is_still_an_error(capsys):
    """--payload rtp on a capture without RTP: what was asked for is not there."""
    assert main(["inspect", str(VXLAN), "--payload", "rtp"]) == 2
    assert "no decodable flow with sequence numbers" in capsys.readouterr().err


def test_score_says_there_is_nothing_to_score_and_why(capsys):
    assert main(["score", str(WPA)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"nothing to score: {WPA} holds 1093 records, no flow with sequence numbers")
    assert "280 of 1093 records are protected (encrypted) 802.11 frames" in out
    assert main(["score", str(WPA), "--format", "json"]) == 0  # no table to write: said on standard error
    captured = capsys.readouterr()
    assert captured.out == "" and "nothing to score" in captured.err and "nothing written" in captured.err


def _tshark(path, *options) -> str:
    cmd = [require_binary("tshark"), "-n", "-r", str(path), *options]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def _tshark_count(path, display_filter: str) -> int:
    return len(_tshark(path, "-Y", display_filter).splitlines())


def _node(description, *layers) -> int:
    return next((row["records"] for row in description["protocols"] if row["layers"] == list(layers)), 0)


@pytest.mark.parametrize("path", [WPA, WLTRACE, CUT, VXLAN], ids=lambda p: p.name)
@needs_binary("tshark")
def test_the_description_agrees_with_tshark(path):
    """Records, protected frames (``wlan.fc.protected``), records cut (``frame.cap_len <
    frame.len``) and the hierarchy's 802.11 frame types and transports as tshark counts them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        capture = decode_capture(path)
    d = capture_description(capture, {})
    assert d["records"] == len(_tshark(path).splitlines())
    assert d["cut"] == _tshark_count(path, "frame.cap_len < frame.len")
    if d["wifi"] is not None:
        assert d["wifi"]["protected"] == _tshark_count(path, "wlan.fc.protected == 1")
        link = d["links"][0]["link"]
        # management and data frames as tshark reads them (frames of another protocol version: none)
        for kind, type_ in (("management", 0), ("data", 2)):
            assert _node(d, link, f"802.11 {kind}") == _tshark_count(
                path, f"wlan.fc.type == {type_} && wlan.fc.version == 0"
            ), kind
    if path == VXLAN:
        assert _node(d, "ethernet", "tunnel vxlan", "ipv4", "icmp") == _tshark_count(path, "vxlan && icmp")
        assert _node(d, "ethernet", "ipv4", "udp", "not_ip") == _tshark_count(path, "vxlan && arp")


@needs_binary("tshark")
def test_the_decryption_hint_gives_a_capture_with_flows(tmp_path):
    """The command ``inspect`` suggests, with wpa-Induction's published passphrase (Wireshark's
    sample captures page: Induction, SSID Coherer), writes the decrypted IP packets, which read."""
    out = tmp_path / "decrypted.pcapng"
    hint = DECRYPT_COMMAND.format(path=WPA).replace("PASSPHRASE:SSID", "Induction:Coherer")
    cmd = shlex.split(hint.replace("decrypted.pcapng", str(out)))
    subprocess.run([require_binary("tshark"), *cmd[1:]], check=True, capture_output=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_capture(out)
    assert len(trace.meta["flows"]) >= 1
