"""The ldanalyze command on a vantage chain: three synthetic captures of one iperf3 UDP flow.

``s.pcap`` is the sender's (TTL 64) and holds all 300 packets, 10 ms apart; ``r1.pcap`` is
taken after a hop (TTL 63, 2 ms later) and lacks the 11 packets lost on the radio link;
``d.pcap`` is the receiver's (TTL 62) and lacks 7 more, lost in a router's queue. The
receiver's clock is 250 ms ahead of the sender's and runs 50 ppm fast; its queue grows and
drains by 0.4 ms a packet (0 to 10 ms, never reordering).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from ldanalyze.cli import main

from ..support.captures import T0, Endpoints, Record, ip_packet, iperf3_payload, link_frame, write_pcap

PACKETS = 300
SPACING = 0.01
WIRELESS = frozenset(range(17, 250, 23))  # 17, 40, ..., 247: lost between s and r1
CONGESTION = frozenset({120, 121, 122, 123, 124, 230, 231})  # two queue overflows: lost between r1 and d
ENDS = Endpoints(proto="udp", src="10.0.0.1", dst="10.0.0.2", sport=40000, dport=5201)
FLOW = "10.0.0.1:40000>10.0.0.2:5201/udp"
CHAIN = ("s.pcap", "r1.pcap:wireless", "d.pcap:congestion")
COMMON = ["--format", "json", "--bootstrap", "0", "--controller", "none"]


def queue(i: int) -> float:
    """The receiver-side queueing delay of packet i: a triangle wave, 0 at every 50th packet."""
    return 0.0004 * min(i % 50, 50 - i % 50)


def receiver_delay(i: int) -> float:
    """d.pcap's time minus s.pcap's for packet i: 10 ms path, clock offset and skew, queue."""
    return 0.010 + 0.25 + 50e-6 * SPACING * i + queue(i)


def write_capture(path, packets, ttl: int, delay) -> None:
    """The iperf3 packets ``packets`` (seq i + 1, IP ID i) as seen ``delay(i)`` after sending."""
    records = [
        Record(
            T0 * 10**9 + round((SPACING * i + delay(i)) * 1e9),
            link_frame(1, ip_packet(ENDS, iperf3_payload(i + 1, T0 + SPACING * i, size=200), ip_id=i, ttl=ttl)),
        )
        for i in packets
    ]
    write_pcap(path, records, 1)


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """The directory holding s.pcap, r1.pcap and d.pcap."""
    where = tmp_path_factory.mktemp("chain")
    at_r1 = [i for i in range(PACKETS) if i not in WIRELESS]
    write_capture(where / "s.pcap", range(PACKETS), 64, lambda i: 0.0)
    write_capture(where / "r1.pcap", at_r1, 63, lambda i: 0.002)
    write_capture(where / "d.pcap", [i for i in at_r1 if i not in CONGESTION], 62, receiver_delay)
    return where


def vantages(where, chain=CHAIN) -> list[str]:
    return [arg for name in chain for arg in ("--vantage", str(where / name))]


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def section(text: str, title: str) -> list[list[str]]:
    """The rows (split into words) of the table printed after ``title``, up to a blank line."""
    lines = text.splitlines()
    start = lines.index(title) + 2  # past the title and the table's header
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_the_captures_are_as_described():
    """The loss sets the expectations below are computed from."""
    assert len(WIRELESS) == 11 and len(CONGESTION) == 7 and not WIRELESS & CONGESTION
    assert min(WIRELESS | CONGESTION) > 0 and max(WIRELESS | CONGESTION) < PACKETS - 1


def test_inspect_prints_the_losses_of_each_segment(captures, capsys):
    """Each segment's losses take its cause (11 wireless to r1, 7 congestion to d); every
    capture's packets are matched; d's clock fit finds its 260 ms offset and 50 ppm skew."""
    code, out, err = run(capsys, "inspect", *vantages(captures))
    assert code == 0 and "warning" not in err
    assert section(out, "losses per segment:") == [
        ["s.pcap>r1.pcap", "wireless", "11", "0"],
        ["r1.pcap>d.pcap", "congestion", "7", "0"],
    ]
    matched = {
        row[0].rsplit("/", 1)[-1]: row
        for row in section(out, "captures along the path (clock fit against the sender's: minimal delay and skew):")
    }
    numbers = {
        name: [t for t in row[1:] if t.lstrip("-").replace(".", "", 1).isdigit()] for name, row in matched.items()
    }
    assert [numbers[name][:4] for name in ("s.pcap", "r1.pcap", "d.pcap")] == [
        ["300", "300", "0", "0"],
        ["289", "289", "0", "0"],
        ["282", "282", "0", "0"],
    ]  # records, matched, unmatched, missed
    statuses = [
        " ".join(matched[name]).split(numbers[name][-1], 1)[1].strip() for name in ("s.pcap", "r1.pcap", "d.pcap")
    ]
    assert statuses == ["the reference clock", "not applied: only the receiver's clock is corrected", "applied"]
    (fit,) = section(
        out,
        "clock skew and offset fitted per pair of clocks (lower envelope) and removed from the "
        "receive times where the status says applied:",
    )
    # flow, skew ppm, ± ppm, samples, pair samples, offset ms, status
    assert fit[0] == FLOW and float(fit[1]) == pytest.approx(50, abs=0.5) and float(fit[5]) == pytest.approx(260, abs=1)
    assert fit[-1] == "applied" and float(fit[2]) < 5
    summary = out.splitlines()[-2].split()  # the last row of the flow table, above its note
    assert summary[:7] == [FLOW, "300", "282", "7", "11", "0", "0"]  # sent delivered cong. wireless lost unobserved


def test_inspect_json(captures, capsys):
    """--json carries the per-segment counts and the flow's fates."""
    code, out, _ = run(capsys, "inspect", *vantages(captures), "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["format"] == "vantages" and payload["meta"]["vantage"] == "chain"
    assert payload["meta"]["segments"] == [
        {"segment": "s.pcap>r1.pcap", "cause": "wireless", "lost": 11, "unobserved": 0, "cause_unknown": 0},
        {"segment": "r1.pcap>d.pcap", "cause": "congestion", "lost": 7, "unobserved": 0, "cause_unknown": 0},
    ]
    assert [v["matched"] for v in payload["meta"]["vantages"]] == [300, 289, 282]
    (flow,) = payload["flows"]
    assert (flow["flow"], flow["sent"], flow["delivered"], flow["congestion"], flow["wireless"], flow["lost"]) == (
        FLOW,
        300,
        282,
        7,
        11,
        0,
    )


def score_rows(capsys, *argv) -> dict[str, dict]:
    code, out, _ = run(capsys, "score", *argv, *COMMON)
    assert code == 0
    return {row["lda"]: row for row in json.loads(out)}


def test_score_the_chain(captures, capsys):
    """Every LDA is scored on the chain's 18 losses; the omniscient one is always right and
    the unaware one calls every loss congestion. adaptive_rtt needs absolute delays: it runs
    on common clocks only."""
    rows = score_rows(capsys, *vantages(captures))
    assert {"unaware", "omniscient", "biaz", "spike", "zigzag", "mbiaz", "zbs"} <= set(rows)
    assert "adaptive_rtt" not in rows
    assert set(score_rows(capsys, *vantages(captures), "--clocks", "common")) == set(rows) | {"adaptive_rtt"}
    for row in rows.values():
        assert (row["losses"], row["congestion"], row["wireless"], row["unknown"]) == (18, 7, 11, 0)
    assert rows["omniscient"]["accuracy"] == 1.0
    assert (rows["unaware"]["M_c"], rows["unaware"]["M_w"]) == (0.0, 1.0)


def test_labels_from_the_chain_score_the_receiver_capture(captures, tmp_path, capsys):
    """The chain's losses written as labels (iperf3 sequence numbers, the same flow label)
    give a receiver-only read of d.pcap the chain's causes; without them its losses have none."""
    labels = tmp_path / "labels.csv"
    code, out, _ = run(capsys, "labels", *vantages(captures), "-o", labels)
    assert code == 0 and out.startswith(f"wrote 18 labels (the losses of {captures}/s.pcap+")
    written = pd.read_csv(labels)
    assert set(written["flow"]) == {FLOW} and (written["tx"] == 0).all()
    assert dict(zip(written["seq"], written["cause"])) == {
        **{i + 1: "wireless" for i in WIRELESS},
        **{i + 1: "congestion" for i in CONGESTION},
    }
    chain = score_rows(capsys, *vantages(captures))
    receiver = score_rows(capsys, captures / "d.pcap", "--labels", labels)
    assert set(receiver) == set(chain)
    for lda, row in receiver.items():
        counts = ("losses", "congestion", "wireless", "unknown")
        assert [row[c] for c in counts] == [chain[lda][c] for c in counts] == [18, 7, 11, 0]
    assert receiver["omniscient"]["accuracy"] == 1.0
    unlabelled = score_rows(capsys, captures / "d.pcap", "--lda", "omniscient")
    assert (unlabelled["omniscient"]["unknown"], unlabelled["omniscient"]["congestion"]) == (18, 0)


USAGE_ERRORS = {
    "one vantage": (
        "inspect --vantage {d}/s.pcap",
        "--vantage: a chain needs the sender's capture and at least one more",
    ),
    "unknown cause": (
        "inspect --vantage {d}/s.pcap --vantage {d}/r1.pcap:wirless",
        "vantage '{d}/r1.pcap:wirless': unknown cause 'wirless'",
    ),
    "labels onto two traces": (
        "score {d}/s.pcap {d}/d.pcap --labels {d}/labels.csv",
        "--labels joins one labels file onto one trace",
    ),
    "clocks without a chain": ("inspect {d}/d.pcap --clocks common", "--clocks is about a --vantage chain"),
    "a trace and a chain": (
        "inspect {d}/d.pcap --vantage {d}/s.pcap --vantage {d}/d.pcap",
        "give either a trace file or a --vantage chain, not both",
    ),
    "skew on a chain": (
        "inspect --vantage {d}/s.pcap --vantage {d}/d.pcap --skew keep",
        "--skew do(es) not apply to a --vantage chain",
    ),
    "a cause on the sender": (
        "inspect --vantage {d}/s.pcap:wireless --vantage {d}/d.pcap",
        "vantage {d}/s.pcap is the sender's capture: no segment ends there",
    ),
    "reverse order": (
        "inspect --vantage {d}/d.pcap --vantage {d}/r1.pcap --vantage {d}/s.pcap",
        "every flow of {d}/d.pcap that reaches {d}/s.pcap travels the other way (its TTL grows): "
        "give the vantages in path order, sender first",
    ),
}


@pytest.mark.parametrize("name", list(USAGE_ERRORS))
def test_usage_errors(captures, capsys, name):
    """Options that do not fit: exit 2 and one line on stderr saying what is wrong."""
    argv, words = (text.format(d=captures) for text in USAGE_ERRORS[name])
    code, out, err = run(capsys, *argv.split())
    assert code == 2 and out == ""
    assert err.splitlines()[0].startswith(f"ldanalyze: error: {words}")


@pytest.mark.parametrize("target", ["s.pcap", "r1.pcap"])
def test_labels_never_overwrite_an_input(captures, tmp_path, capsys, target):
    """-o naming one of the chain's captures (also one given with a cause) is refused and the
    capture is left as it was."""
    for name in ("s.pcap", "r1.pcap"):
        shutil.copy(captures / name, tmp_path / name)
    before = (tmp_path / target).read_bytes()
    code, _, err = run(capsys, "labels", *vantages(tmp_path, ("s.pcap", "r1.pcap:wireless")), "-o", tmp_path / target)
    assert code == 2 and f"ldanalyze: error: refusing to overwrite the input trace {tmp_path / target}" in err
    assert (tmp_path / target).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1.pcap", "s.pcap"]  # no temporary file left


def delays(captures, tmp_path, capsys, *options) -> tuple[np.ndarray, np.ndarray]:
    """Packet index and t_recv − t_send of each delivered packet, from ``timeline -o`` (whose
    ``owd_s`` holds it where the clocks are one, and is empty where not)."""
    out = tmp_path / "timeline.csv"
    code, _, _ = run(capsys, "timeline", *vantages(captures), *options, "-o", out)
    assert code == 0
    table = pd.read_csv(out)
    delivered = table[table["fate"] == "delivered"]
    delay = (delivered["t_recv_s"] - delivered["t_send_s"]).to_numpy()
    common = "--clocks" in options and options[options.index("--clocks") + 1] == "common"
    np.testing.assert_array_equal(delivered["owd_s"].to_numpy(), delay if common else np.nan)
    return delivered["seq"].to_numpy() - 1, delay


def test_common_clocks_keep_the_receive_times(captures, tmp_path, capsys):
    """--clocks common: the one-way delay is d.pcap's time minus s.pcap's, as written."""
    index, delay = delays(captures, tmp_path, capsys, "--clocks", "common")
    assert sorted(index) == sorted(set(range(PACKETS)) - WIRELESS - CONGESTION)
    np.testing.assert_allclose(delay, [receiver_delay(i) for i in index], rtol=0, atol=1e-6)


def test_separate_clocks_lose_offset_and_skew(captures, tmp_path, capsys):
    """Default (separate clocks): offset and skew are fitted and removed, what is left is the
    queueing delay, 0 at its minimum."""
    index, delay = delays(captures, tmp_path, capsys)
    assert len(index) == 282
    np.testing.assert_allclose(delay, [queue(i) for i in index], rtol=0, atol=1e-6)
    assert abs(delay.min()) < 1e-6 and delay.max() == pytest.approx(0.010, abs=1e-6)
