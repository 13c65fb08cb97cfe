"""pdx.load / load_safetensors on hostile files: reference bombs, malformed `pdx.tree` skeletons and
headers, special files. Every failure is one typed error (CheckpointCorruptError)."""

import json
import os
import struct
import threading

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy

import pdx
from pdx.checkpoint import CheckpointCorruptError, load, load_safetensors, save


def _pdx_file(path, tree, tensors) -> None:
    """A safetensors file with `tree` as its pdx.tree (written by the reference writer)."""
    text = tree if isinstance(tree, str) else json.dumps(tree)
    safetensors.numpy.save_file(tensors, str(path), metadata={"format": "pdx", "pdx.tree": text})


def _raw_file(path, header: dict, data: bytes = b"") -> None:
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def test_one_tensor_referenced_many_times_is_refused(tmp_path):
    big = np.zeros(1 << 18, np.float32)  # 1 MiB
    path = tmp_path / "bomb.pdparams"
    _pdx_file(path, {"__dict__": {f"k{i}": {"__tensor__": "t"} for i in range(20000)}}, {"t": big})
    assert 1 << 20 < path.stat().st_size < 2 << 20
    for return_numpy in (True, False):
        with pytest.raises(CheckpointCorruptError, match="more than once") as err:
            load(path, return_numpy=return_numpy)
        assert str(path) in str(err.value)
    # the same file with each tensor used once loads
    _pdx_file(path, {"__dict__": {"a": {"__tensor__": "t"}, "b": [1, "x", None]}}, {"t": big})
    got = load(path)
    assert got["b"] == [1, "x", None] and got["a"].shape == big.shape


def test_malformed_trees_give_one_typed_error(tmp_path):
    t = {"t": np.arange(3, dtype=np.float32)}
    deep_lists = "[" * 5000 + "]" * 5000
    deep_dicts = '{"__dict__": {"a": ' * 300 + "1" + "}}" * 300
    deep_tuples = '{"__tuple__": [' * 300 + "1" + "]}" * 300
    bad = {
        "tensor name not a str": {"__tensor__": 5},
        "tensor name unknown": {"__tensor__": "nope"},
        "tensor name a list": {"__tensor__": ["t"]},
        "dict payload a list": {"__dict__": [1]},
        "dict payload a str": {"__dict__": "abc"},
        "tuple payload a str": {"__tuple__": "x"},
        "tuple payload a dict": {"__tuple__": {"a": 1}},
        "unknown node kind": {"__dict__": {"a": {"__bogus__": 1}}},
        "empty node": {},
        "two kinds in one node": {"__dict__": {}, "__tensor__": "t"},
        "unused tensor": {"__dict__": {}},
        "deep lists": deep_lists,
        "deep dicts": deep_dicts,
        "deep tuples": deep_tuples,
        "not JSON": "{'__tensor__': 't'}",
        "truncated JSON": '{"__tensor__": "t"',
    }
    for name, tree in bad.items():
        path = tmp_path / "bad.pdparams"
        _pdx_file(path, tree, t)
        for return_numpy in (True, False):
            with pytest.raises(CheckpointCorruptError) as err:
                load(path, return_numpy=return_numpy)
            assert "pdx.tree" in str(err.value) and str(path) in str(err.value), (name, err.value)
    # sanity: the well-formed version of each container kind loads
    _pdx_file(tmp_path / "ok", {"__tuple__": [{"__tensor__": "t"}, {"__dict__": {"n": 2.5}}]}, t)
    got = load(tmp_path / "ok", return_numpy=True)
    assert isinstance(got, tuple) and got[1] == {"n": 2.5}
    np.testing.assert_array_equal(got[0], t["t"])


def test_malformed_headers_give_one_typed_error(tmp_path):
    data = np.arange(4, dtype=np.float32).tobytes()
    good = {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    bad_headers = {
        "offsets past the data": {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 32]}},
        "size not shape times itemsize": {"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}},
        "negative dim": {"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}},
        "unknown dtype": {"w": {"dtype": "F99", "shape": [4], "data_offsets": [0, 16]}},
        "object dtype name": {"w": {"dtype": "O", "shape": [4], "data_offsets": [0, 16]}},
        "shape not a list": {"w": {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]}},
        "bool in shape": {"w": {"dtype": "F32", "shape": [True, 4], "data_offsets": [0, 16]}},
        "offsets reversed": {"w": {"dtype": "F32", "shape": [0], "data_offsets": [16, 0]}},
        "entry not a dict": {"w": [1, 2]},
        "metadata not a dict": {"__metadata__": [1], **good},
        "metadata value not a str": {"__metadata__": {"format": 1}, **good},
        "overlapping tensors": {**good, "v": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
        "huge shape": {"w": {"dtype": "F32", "shape": [1 << 40, 1 << 40], "data_offsets": [0, 16]}},
    }
    path = tmp_path / "bad.safetensors"
    for name, header in bad_headers.items():
        _raw_file(path, header, data)
        for reader in (load, load_safetensors):
            with pytest.raises(CheckpointCorruptError) as err:
                reader(path)
            assert str(path) in str(err.value), (name, err.value)
    for name, blob in {
        "empty file": b"",
        "short header length": b"\x05\x00",
        "header length past the end": struct.pack("<Q", 1 << 40) + b"{}",
        "header not UTF-8": struct.pack("<Q", 4) + b"{\xff}\x00",
        "header deep": struct.pack("<Q", 20000) + b"[" * 10000 + b"]" * 10000,
        "header a list": struct.pack("<Q", 2) + b"[]",
    }.items():
        path.write_bytes(blob)
        with pytest.raises(CheckpointCorruptError):
            load_safetensors(path)
        with pytest.raises(CheckpointCorruptError):
            load(path)
    _raw_file(path, good, data)
    np.testing.assert_array_equal(load_safetensors(path)["w"], np.arange(4, dtype=np.float32))


def test_special_files_are_refused_without_hanging(tmp_path):
    fifo = tmp_path / "weights.pdparams"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.safetensors"
    os.symlink("/dev/zero", zero)
    for path in (fifo, zero, tmp_path):
        for reader in (load, load_safetensors):
            out = {}
            thread = threading.Thread(target=lambda: out.setdefault("e", _raises(reader, path)), daemon=True)
            thread.start()
            thread.join(20)
            if thread.is_alive():
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            assert not thread.is_alive(), f"{reader.__name__} hangs on {path}"
            assert isinstance(out["e"], CheckpointCorruptError), (path, out["e"])
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.pdparams")


def _raises(fn, *args):
    try:
        fn(*args)
    except BaseException as e:  # noqa: BLE001 -- handed back to the test
        return e
    return None


def test_pdx_save_round_trips_every_node_kind_and_refuses_what_load_refuses(tmp_path, rng):
    obj = {"a": [np.float32(1.5), (np.arange(3), {"x": None, "y": True})], "b": "s", "c": (), "d": [],
           "e": {}, "bf": np.asarray([1, 2], ml_dtypes.bfloat16), "nan": float("nan")}
    save(obj, tmp_path / "o")
    back = pdx.load(tmp_path / "o", return_numpy=True)
    assert back["b"] == "s" and back["c"] == () and back["d"] == [] and back["e"] == {}
    assert back["a"][1][1] == {"x": None, "y": True} and np.isnan(back["nan"])
    np.testing.assert_array_equal(back["a"][1][0], np.arange(3))
    assert back["bf"].dtype == ml_dtypes.bfloat16 and back["bf"].tolist() == [1, 2]
    deep = 1
    for _ in range(200):
        deep = {"k": deep}
    with pytest.raises(ValueError, match="nest"):
        save(deep, tmp_path / "deep")
    assert not (tmp_path / "deep").exists()
