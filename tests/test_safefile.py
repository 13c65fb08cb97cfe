"""The shared loader rule: regular files only, symlinks inside root, sizes and JSON depth capped."""

import os
import time

import pytest

from pdx._safefile import UnsafeFileError, json_depth, load_json, read_file


class MyError(Exception):
    pass


def test_regular_file_reads_and_caps(tmp_path):
    p = tmp_path / "a.bin"
    p.write_bytes(b"x" * 100)
    assert read_file(p, max_bytes=100) == b"x" * 100
    with pytest.raises(MyError, match="100 bytes, over the limit of 99"):
        read_file(p, max_bytes=99, what="params", error=MyError)


def test_fifo_device_directory_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device"), (tmp_path, "a directory")):
        with pytest.raises(UnsafeFileError, match=kind):
            read_file(path, max_bytes=1 << 20)
    assert time.monotonic() - t0 < 1.0


def test_symlinks_only_inside_root(tmp_path):
    root = tmp_path / "artifact"
    root.mkdir()
    (root / "real.json").write_text("{}")
    outside = tmp_path / "secret"
    outside.write_text("{}")
    os.symlink(root / "real.json", root / "inside.json")
    os.symlink(outside, root / "escape.json")
    assert read_file(root / "inside.json", max_bytes=10, root=root) == b"{}"
    with pytest.raises(UnsafeFileError, match="outside"):
        read_file(root / "escape.json", max_bytes=10, root=root)
    with pytest.raises(UnsafeFileError, match="symlink"):
        read_file(root / "inside.json", max_bytes=10)
    os.symlink("/dev/zero", root / "zero")
    with pytest.raises(UnsafeFileError, match="outside"):
        read_file(root / "zero", max_bytes=10, root=root)


def test_json_depth_counts_outside_strings_and_utf16_is_refused():
    assert json_depth('{"a": "[[[[", "b": [[1]]}') == 3
    with pytest.raises(UnsafeFileError, match="levels deep"):
        load_json(b"[" * 100_000, max_depth=64)
    for enc in ("utf-16-le", "utf-16", "utf-32"):  # json.loads(bytes) would auto-detect these
        with pytest.raises(UnsafeFileError, match="levels deep|not UTF-8"):
            load_json(("[" * 500 + "]" * 500).encode(enc))
    with pytest.raises(UnsafeFileError, match="not UTF-8"):
        load_json(b'{"a": "\xff"}')
    with pytest.raises(UnsafeFileError, match="not valid JSON"):
        load_json(b'{"a": ')
    assert load_json('{"a": [1, {"b": 2}]}', max_depth=3) == {"a": [1, {"b": 2}]}


def test_recorded_size_is_checked_before_reading(tmp_path):
    p = tmp_path / "params.bin"
    p.write_bytes(b"y" * 10)
    assert read_file(p, max_bytes=100, size=10) == b"y" * 10
    for recorded in (9, 11):
        with pytest.raises(MyError, match=f"10 bytes but {recorded} bytes were recorded"):
            read_file(p, max_bytes=100, size=recorded, what="params", error=MyError)
