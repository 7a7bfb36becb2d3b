"""Bad input: a clear TraceError naming the file and the line, never a deep traceback."""

from __future__ import annotations

import gzip
import subprocess
import sys
import zlib

import pytest

from ldanalyze import TraceError, read_trace
from ldanalyze.cli import main

GOOD = [
    "+ 1.000 0 1 cbr 762 ------- 1 0.1 2.1 0 0",
    "- 1.000 0 1 cbr 762 ------- 1 0.1 2.1 0 0",
    "r 1.010 0 1 cbr 762 ------- 1 0.1 2.1 0 0",
]


def expect_error(path, line, *fragments, **options):
    with pytest.raises(TraceError) as info:
        read_trace(path, **options)
    message = str(info.value)
    assert str(path) in message
    if line is not None:
        assert info.value.line == line and f":{line}:" in message
    for fragment in fragments:
        assert fragment in message, message
    return info.value


def test_wrong_number_of_fields(write_trace):
    path = write_trace(GOOD + ["r 1.020 0 1 cbr 762 ------- 1 0.1 2.1 0"])
    expect_error(path, 4, "expected 12 space-separated fields", "got 11", "r 1.020 0 1 cbr")


def test_field_that_is_not_a_number(write_trace):
    path = write_trace(GOOD + ["r 1.0x0 0 1 cbr 762 ------- 1 0.1 2.1 0 0"])
    expect_error(path, 4, "field 'time' is not a valid float", "'1.0x0'")


def test_unknown_event_letter(write_trace):
    path = write_trace(GOOD + ["q 1.020 0 1 cbr 762 ------- 1 0.1 2.1 0 0"])
    expect_error(path, 4, "unknown event letter 'q'")


def test_time_going_backwards(write_trace):
    path = write_trace(GOOD + ["r 0.500 0 1 cbr 762 ------- 1 0.1 2.1 0 0"])
    expect_error(path, 4, "time goes backwards")


@pytest.mark.parametrize("time", ["nan", "-0.5", "inf", "1e20", "4503599628"])
def test_time_outside_what_ns2_can_write(write_trace, time):
    """A time past 2**52 us (a float64 no longer holds ns-2's microseconds there) is damage:
    the last line of a trace with such a time gave delays of 1e23 ms, or infinite ones."""
    path = write_trace(GOOD + [f"r {time} 0 1 cbr 762 ------- 1 0.1 2.1 0 0"])
    expect_error(path, 4, "time is not a number of seconds from 0 to 4.5e9")


@pytest.mark.parametrize("time", ["-0.5", "1e20"])
def test_wireless_time_outside_what_ns2_can_write(write_trace, time):
    path = write_trace([f"s {time} _0_ AGT  --- 0 cbr 512 [0 0 0 0] ------- [0:0 1:0 32 0] [0] 0 0"])
    expect_error(path, 1, "a time is not a number of seconds from 0 to 4.5e9")


def test_the_latest_time_ns2_can_write_is_read(write_trace):
    late = [line.replace("1.000", "4503599627.000").replace("1.010", "4503599627.370") for line in GOOD]
    assert read_trace(write_trace(late)).packets["t_send"].iloc[0] == 4503599627.0


def test_uid_reused_for_another_packet(write_trace):
    path = write_trace(GOOD + ["+ 1.020 1 2 cbr 762 ------- 1 0.1 2.1 7 0"])
    expect_error(path, 4, "uid reappears")


def test_hierarchical_address_is_refused(write_trace):
    path = write_trace([line.replace("0.1 2.1", "0.0.1 0.2.1") for line in GOOD])
    expect_error(path, 1, "not a flat 'node.port' address")


def whole_lines_before_damage(path) -> int:
    """The oracle: lines Python's own gzip module yields before the damage stops it."""
    lines = 0
    with pytest.raises((EOFError, gzip.BadGzipFile, zlib.error)):
        with gzip.open(path, "rb") as f:
            for _ in f:
                lines += 1
    return lines


def test_damaged_gzip_is_located_by_line(tmp_path):
    """The error names the line where the text stops (it said 'byte 0': the failing read was
    the first block of megabytes), as Python's gzip module finds it."""
    text = "".join(f"+ {i / 1000:.3f} 0 1 cbr 762 ------- 1 0.1 2.1 {i} {i}\n" for i in range(60000))
    blob = gzip.compress(text.encode())
    path = tmp_path / "cut.tr.gz"
    path.write_bytes(blob[: len(blob) // 2])
    lines = whole_lines_before_damage(path)
    assert 10000 < lines < 50000
    expect_error(path, lines + 1, f"the file is cut short: its text stops after line {lines}, at compressed byte")
    path.write_bytes(blob[:10] + b"\xff" + blob[11:])  # the first deflate block of an invalid type
    expect_error(
        path, 1, "corrupt gzip data: its text stops after line 0, at compressed byte 0 of", "invalid block type"
    )
    path.write_bytes(blob[:-8] + bytes(4) + blob[-4:])  # the trailer's CRC-32 zeroed: the text is whole
    expect_error(path, None, "corrupt gzip data: its 60000 lines decompress, but its checksum does not match")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.tr"
    path.write_text("")
    expect_error(path, None, "empty")
    path.write_text("\n\n")
    expect_error(path, None, "empty")


def test_no_data_packets(write_trace):
    path = write_trace([line.replace("cbr", "rtProtoDV") for line in GOOD])
    expect_error(path, None, "no data packets", "rtProtoDV (3)")


def test_missing_file(tmp_path):
    expect_error(tmp_path / "nope.tr", None, "cannot open")


def test_unknown_format(write_trace):
    expect_error(write_trace(["hello world this is not a trace"]), 1, "unknown trace format")


def test_wireless_trace_read_as_wired(write_trace):
    path = write_trace(["s 1.000000000 _0_ AGT  --- 0 cbr 512 [0 0 0 0] ------- [0:0 1:0 32 0] [0] 0 0"])
    assert read_trace(path).format == "ns2-wireless-old"
    expect_error(path, 1, "looks like an ns-2 wireless trace", format="ns2-wired")


def test_wired_trace_read_as_wireless(write_trace):
    expect_error(write_trace(GOOD), 1, "looks like an ns-2 wired trace", format="ns2-wireless-old")


def test_wireless_line_with_bad_sequence_number(write_trace):
    path = write_trace(["s 1.000000000 _0_ AGT  --- 0 cbr 512 [0 0 0 0] ------- [0:0 1:0 32 0] [x7] 0 0"])
    expect_error(path, 1, "sequence number 'x7'")


def test_cli_reports_file_and_line_and_exits_2(write_trace, capsys):
    path = write_trace(GOOD + ["r 1.020 0 1"])
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ldanalyze: error: ") and f"{path}:4:" in err and "Traceback" not in err


def test_cli_as_a_process_has_no_traceback(write_trace):
    path = write_trace(GOOD + ["q 1.020 0 1 cbr 762 ------- 1 0.1 2.1 0 0"])
    run = subprocess.run([sys.executable, "-m", "ldanalyze.cli", "inspect", str(path)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr and ":4:" in run.stderr


def test_timeline_refuses_to_overwrite_its_input(write_trace, capsys):
    path = write_trace(GOOD)
    before = path.read_bytes()
    assert main(["timeline", str(path), "-o", str(path)]) == 2
    assert "refusing to overwrite the input trace" in capsys.readouterr().err
    assert path.read_bytes() == before
