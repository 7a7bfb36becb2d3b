"""Atomic writes: a reader sees the old file (or no folder) or the whole new one, and a write
that fails leaves nothing behind, not even its temporary file or folder."""

from __future__ import annotations

import pytest

from ldanalyze.output import atomic_folder, atomic_write


def _fail(tmp):
    tmp.write_text("half")
    raise OSError("disk full")


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, _fail)
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"] and target.read_text() == "old"


def test_a_write_in_bytes_or_by_a_writer_replaces_the_file_whole(tmp_path):
    target = tmp_path / "out.bin"
    atomic_write(target, lambda tmp: tmp.write_bytes(b"\x00\x01"))
    assert target.read_bytes() == b"\x00\x01" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_failed_folder_leaves_nothing(tmp_path):
    with pytest.raises(OSError, match="disk full"):
        atomic_folder(tmp_path / "entry", lambda tmp: _fail(tmp / "meta.json"))
    assert list(tmp_path.iterdir()) == []


def test_a_folder_written_first_stands(tmp_path):
    entry = tmp_path / "entry"
    assert atomic_folder(entry, lambda tmp: (tmp / "meta.json").write_text("first"))
    assert not atomic_folder(entry, lambda tmp: (tmp / "meta.json").write_text("second"))
    assert (entry / "meta.json").read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["entry"]
