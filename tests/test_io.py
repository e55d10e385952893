# SPDX-License-Identifier: MIT
"""The one atomic writer and the table reader (``sklearn_betacal._io``)."""

import os

import pandas as pd
import pytest

from sklearn_betacal._io import TableReadError, atomic_write, file_kind, read_table


@pytest.mark.parametrize(
    "content, expected",
    [("héllo\nwörld\n", "héllo\nwörld\n".encode()), (b"\x00\x01raw", b"\x00\x01raw")],
)
def test_atomic_write_text_and_bytes(tmp_path, content, expected):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    atomic_write(target, content)
    assert target.read_bytes() == expected
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_atomic_write_callable_gets_binary_file(tmp_path):
    target = tmp_path / "out.bin"
    atomic_write(target, lambda fh: fh.write(b"via callable"))
    assert target.read_bytes() == b"via callable"


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_atomic_write_failure_keeps_old_file_and_leaves_no_temp(tmp_path, error):
    target = tmp_path / "report.md"
    target.write_text("old report")

    def half_then_fail(fh):
        fh.write(b"half of the new rep")
        raise error

    with pytest.raises(type(error)):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_atomic_write_failing_replace_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "new.txt"

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(target, "text")
    assert list(tmp_path.iterdir()) == []


def test_file_kind_and_read_table(tmp_path):
    assert file_kind(tmp_path / "a.CSV.gz") == "csv"
    assert file_kind(tmp_path / "a.tsv") == "tsv"
    assert file_kind(tmp_path / "a.pq") == "parquet"
    with pytest.raises(TableReadError, match="cannot tell the format"):
        file_kind(tmp_path / "a.xlsx")
    path = tmp_path / "t.tsv"
    pd.DataFrame({"p": [0.1, 0.9], "y": [0, 1], "z": ["a", "b"]}).to_csv(
        path, sep="\t", index=False
    )
    frame = read_table(path, ["y", "p"])
    assert sorted(frame.columns) == ["p", "y"] and frame["y"].tolist() == [0, 1]
    with pytest.raises(TableReadError, match="column 'q' not found"):
        read_table(path, ["q"])
    # a TableReadError is a ValueError: library callers need no new except
    assert issubclass(TableReadError, ValueError)


def test_table_not_in_utf8_says_how_to_fix(tmp_path):
    # a Latin-1 export (Excel's default in Western Europe) gave only the
    # codec's message; the error must say to re-save the file as UTF-8
    path = tmp_path / "latin.csv"
    path.write_bytes(b"conf,ok,note\n0.7,1,caf\xe9\n0.2,0,x\n")
    with pytest.raises(TableReadError, match="not UTF-8") as info:
        read_table(path, ["conf", "ok", "note"])
    assert "save it as UTF-8" in str(info.value)
