"""Real captures nobody on the team made (tests/data/real/SOURCES.md), read as a capture analyst
would, against tshark's RTP stream table (``-o rtp.heuristic_rtp:TRUE -z rtp,streams``).

Every stream tshark lists with 5 packets or more must be one of ldanalyze's streams with the
same packet count and the same number of missing sequence numbers, or be skipped by ldanalyze
for a reason stated here (``EXPLAINED``)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import warnings

import pytest

import ldanalyze as la
from ldanalyze.errors import TraceError

from ...conftest import needs_binary, require_binary

REAL = pathlib.Path(__file__).parents[2] / "data" / "real"
CAPTURES = sorted(p for p in REAL.iterdir() if p.suffix in (".pcap", ".pcapng"))
# (capture, src port, ssrc) → why ldanalyze does not read that stream as media
EXPLAINED = {
    ("stun_signal.pcapng", 61498, "0x000007dd"): "padding probes",
    ("stun_signal.pcapng", 61156, "0x000007dd"): "padding probes",
    ("stun_dtls_rtp.pcapng", 3478, "0x321d28bb"): "TCP",  # RTP framed in TURN over TCP (RFC 4571)
}
MAIN_STREAMS = 5


def tshark_streams(path: pathlib.Path) -> list[dict]:
    out = subprocess.run(
        [require_binary("tshark"), "-r", str(path), "-o", "rtp.heuristic_rtp:TRUE", "-q", "-z", "rtp,streams"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 12 or not re.fullmatch(r"0x[0-9A-Fa-f]{8}", f[6]):
            continue
        i = 7
        while not (f[i].isdigit() and f[i + 2].startswith("(")):
            i += 1
        rows.append(
            {
                "src": f[2],
                "sport": int(f[3]),
                "dst": f[4],
                "dport": int(f[5]),
                "ssrc": f[6].lower(),
                "packets": int(f[i]),
                "lost": int(f[i + 1]),
            }
        )
    return rows


def our_streams(path: pathlib.Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = la.read_trace(path, payload="rtp", skew="keep")
    found = {}
    for label, info in trace.meta["flows"].items():
        m = re.match(r"([\d.]+):(\d+)>([\d.]+):(\d+)/udp", label)
        found[(m.group(1), int(m.group(2)), m.group(3), int(m.group(4)), info["ssrc"])] = info
    return trace, found


@pytest.mark.parametrize("path", [p for p in CAPTURES if p.name != "telegram_videocall.pcapng"], ids=lambda p: p.name)
@needs_binary("tshark")
def test_every_main_stream_matches_tshark(path):
    trace, found = our_streams(path)
    main = [s for s in tshark_streams(path) if s["packets"] >= MAIN_STREAMS]
    assert main
    for s in main:
        key = (s["src"], s["sport"], s["dst"], s["dport"], s["ssrc"])
        why = EXPLAINED.get((path.name, s["sport"], s["ssrc"]))
        if why:
            assert key not in found
            skipped = " ".join(
                f"{k} {v}" for k, v in {**trace.meta["skipped_streams"], **trace.meta["skipped_flows"]}.items()
            )
            assert why in skipped and s["ssrc"] in skipped or why == "TCP" and "TCP flow cannot carry rtp" in skipped
            continue
        assert key in found, f"{key} missing"
        ours = found[key]
        # a stream the capture host sent was captured before the path: the numbers missing
        # from it are tshark's "lost", but not losses
        missing = ours["missing"] if ours["outgoing"] else ours["lost"]
        assert (ours["packets"], missing) == (s["packets"], s["lost"]), key
        assert ours["outgoing"] == (s["src"] == trace.meta["capture_host"]["address"])


# the host each capture was taken on, read by hand from the files: its private address is an end
# of every flow and its packets carry TTL 64, where the peers' arrive lowered; no single address
# is an end of every flow in the others (discord: a server's view; rtp: two hosts on one LAN)
HOSTS = {
    "stun_wa_call.pcapng": "192.168.12.156",
    "skype-conference-call.pcap": "192.168.2.20",
    "stun_signal.pcapng": "192.168.12.169",
    "telegram_videocall.pcapng": "192.168.12.169",
    "discord.pcap": None,
    "rtp.pcapng": None,
    "stun_dtls_rtp.pcapng": None,
}


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_the_capture_host_is_found(name):
    from ldanalyze.io.capture.flows import capture_host
    from ldanalyze.io.capture.pcap import decode_capture

    address, how = capture_host(decode_capture(REAL / name))
    assert address == HOSTS[name], how


def test_the_lost_sequence_numbers_are_rows_of_the_trace():
    """The capture host's own stream has unknown fates; read as received (the analyst says
    there is no capture host), its missing sequence number is a lost row."""
    for host, fates in (("auto", {"unobserved": 140}), ("none", {"delivered": 140, "lost": 1})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = la.read_trace(REAL / "stun_wa_call.pcapng", payload="rtp", skew="keep", capture_host=host)
        (label,) = [k for k, v in trace.meta["flows"].items() if v["ssrc"] == "0x1b9f01ee"]
        p = trace.packets[trace.packets["flow"] == label]
        assert p["fate"].value_counts()[lambda c: c > 0].to_dict() == fates
    assert p.loc[p["fate"] == "lost", "reason"].tolist() == ["seq-gap"]


@needs_binary("tshark")
def test_one_packet_pseudo_streams_are_noise_not_streams():
    """Telegram's encrypted packets often start with a byte that reads as RTP version 2: each
    such packet is a "stream" of one to tshark's heuristic; to ldanalyze, noise."""
    from ldanalyze.io.capture import payload
    from ldanalyze.io.capture.flows import flow_groups
    from ldanalyze.io.capture.pcap import decode_capture
    from ldanalyze.io.capture.sequences import NotThisKind

    path = REAL / "telegram_videocall.pcapng"
    pseudo = tshark_streams(path)
    assert len(pseudo) >= 10 and all(s["packets"] == 1 for s in pseudo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TraceError, match="no decodable flow"):
            la.read_trace(path, payload="rtp")
    capture = decode_capture(path, head_bytes=48)
    noise = 0
    for flow, rows, records in flow_groups(capture.records):
        try:
            payload.flow_streams(capture, flow, rows, records, "rtp", capture.times())
        except NotThisKind as why:
            found = re.search(r"(\d+) one-off SSRCs", str(why))
            noise += int(found.group(1)) if found else 0
    # tshark's heuristic also rejects some of these packets by other checks (payload type,
    # other dissectors); every one it took for a stream is noise to us, with some more
    assert noise >= len(pseudo)


def test_the_flows_a_capture_skips_are_told_in_brief():
    """A real WebRTC signalling capture: 38 flows without sequence numbers and 2 padding-probe
    streams are counted by reason in a short warning; each flow's full reasons stay in the meta."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = la.read_trace(REAL / "stun_signal.pcapng")
    told = [str(w.message) for w in caught if "skipped" in str(w.message)]
    assert len(told) == 2 and all(len(message) < 500 for message in told)
    assert "34 flows: no sequence numbers found; 4 flows: no payload kind is known" in told[0]
    assert "inspect --json" in told[0]
    assert len(trace.meta["skipped_flows"]) == 38
    assert all("not rtp" in why for why in trace.meta["skipped_flows"].values() if "sequence numbers" in why)
