"""`load_pdparams` against real `paddle.save` files, hand-made hostile pickles, and a fuzz pass."""

from __future__ import annotations

import os
import pickle
import re
import struct
import time
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pdparams_craft as craft
from pdx.checkpoint import CheckpointCorruptError, PickleRefusedError, load_pdparams
from pdx.checkpoint._pdparams_parser import parse


@pytest.fixture(scope="module")
def pd(paddle):
    """The installed paddlepaddle (conftest's `paddle`): the reference reader and writer."""
    return paddle


@pytest.fixture(scope="module")
def real_files(pd, tmp_path_factory):
    return craft.paddle_files(pd, tmp_path_factory.mktemp("pdparams"))


def assert_same(mine, ref, where="root"):
    """Same structure, container types, keys (in order), values; arrays bitwise with dtype and layout."""
    if isinstance(ref, np.ndarray):
        assert isinstance(mine, np.ndarray), f"{where}: {type(mine)}"
        assert (mine.dtype, mine.shape) == (ref.dtype, ref.shape), where
        assert mine.tobytes(order="A") == ref.tobytes(order="A"), where
        assert mine.flags.f_contiguous == ref.flags.f_contiguous and mine.flags.writeable, where
        return
    assert type(mine) is type(ref), f"{where}: {type(mine)} vs {type(ref)}"
    if isinstance(ref, dict):
        assert list(mine) == list(ref), where
        for k in ref:
            assert_same(mine[k], ref[k], f"{where}[{k!r}]")
    elif isinstance(ref, (list, tuple)):
        assert len(mine) == len(ref), where
        for i, (a, b) in enumerate(zip(mine, ref)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert mine == ref, f"{where}: {mine!r} vs {ref!r}"


def test_every_kind_of_paddle_save_file_loads_like_paddle_load(pd, real_files):
    assert len(real_files) == 3 * len(craft.paddle_objects(pd))
    for name, path in real_files.items():
        assert_same(load_pdparams(path), pd.load(str(path), return_numpy=True), name)
    # the kinds the brief names are really in there
    adamw = load_pdparams(real_files["adamw.p4"])
    assert set(adamw["LR_Scheduler"]) == {"last_epoch", "last_lr"} and adamw["LR_Scheduler"]["last_epoch"] == 2
    assert all(v.dtype == np.float32 for v in load_pdparams(real_files["master_weights.p2"])["master_weights"].values())
    assert "StructuredToParameterName@@" not in load_pdparams(real_files["fp32.p3"])
    assert load_pdparams(real_files["int_buffers.p4"])["ids"].dtype == np.int64


def test_bfloat16_comes_back_as_paddle_stores_it(pd, real_files):
    for proto in craft.PROTOCOLS:
        path = real_files[f"bfloat16.p{proto}"]
        mine = load_pdparams(path)
        tensors = pd.load(str(path))  # Paddle tensors, dtype bfloat16
        for key, tensor in tensors.items():
            assert str(tensor.dtype) == "paddle.bfloat16" and mine[key].dtype == np.uint16
            np.testing.assert_array_equal(mine[key].view(ml_dtypes.bfloat16).astype(np.float32),
                                          tensor.astype("float32").numpy())


def test_numpy_protocol5_and_split_big_params_load_like_paddle_load(pd, tmp_path, rng):
    arrays = {"a": rng.standard_normal((3, 4)).astype(np.float32), "f": np.asfortranarray(np.ones((2, 3))),
              "b": np.asarray([True, False]), "z": np.zeros((0,), np.int16)}
    path = tmp_path / "p5.pdparams"
    path.write_bytes(pickle.dumps(arrays, protocol=5))
    assert_same(load_pdparams(path), pd.load(str(path), return_numpy=True))
    # protocol 2/3 files keep tensors over 1 GiB as 1-D slices plus an index; paddle.load joins them
    w = rng.standard_normal((4, 5)).astype(np.float32)
    flat = w.reshape(-1)
    saved = {"w@@.0": flat[:8], "w@@.1": flat[8:16], "w@@.2": flat[16:], "b": np.arange(3.0),
             "UnpackBigParamInfor@@": {"w": {"OriginShape": (4, 5), "slices": ["w@@.0", "w@@.1", "w@@.2"]}},
             "StructuredToParameterName@@": {"w": "linear_0.w_0", "b": "linear_0.b_0"}}
    path.write_bytes(pickle.dumps(saved, protocol=2))
    mine = load_pdparams(path)
    assert list(mine) == ["b", "w"]
    assert_same(mine, pd.load(str(path), return_numpy=True))
    np.testing.assert_array_equal(mine["w"], w)


def test_loading_never_touches_pickle_or_numpy_reconstruction(real_files, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the .pdparams reader called into pickle/numpy unpickling")

    for name in ("Unpickler", "_Unpickler", "load", "loads", "_loads", "_load"):
        monkeypatch.setattr(pickle, name, forbidden, raising=False)
    core = getattr(np, "_core", None) or np.core  # numpy 2 renamed numpy.core
    for module in (core.multiarray, core.numeric):
        for name in ("_reconstruct", "scalar", "_frombuffer"):
            monkeypatch.setattr(module, name, forbidden, raising=False)
    for path in real_files.values():
        load_pdparams(path)


def _refused(path, pattern, **limits):
    """Load `path` expecting PickleRefusedError; returns (error, seconds, peak traced bytes)."""
    start = time.monotonic()
    with pytest.raises(PickleRefusedError) as info:
        load_pdparams(path, **limits)
    seconds = time.monotonic() - start
    tracemalloc.start()  # a second run for memory: tracing slows allocation down several times
    try:
        with pytest.raises(PickleRefusedError):
            load_pdparams(path, **limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = info.value
    assert re.search(pattern, str(err)), f"{path.name}: {err}"
    assert isinstance(err, CheckpointCorruptError) and isinstance(err, ValueError)
    assert err.path == str(path) and str(path) in str(err)
    return err, seconds, peak


def test_hostile_files_are_refused_quickly_with_one_typed_error(tmp_path):
    table = []
    for name, (data, pattern) in craft.hostile_files().items():
        path = tmp_path / f"{name}.pdparams"
        path.write_bytes(data)
        err, seconds, peak = _refused(path, pattern)
        if name == "big_params_bad":  # checked after parsing: about the file as a whole
            assert err.offset is None
        elif data[:1] == b"\x80" and len(data) > 2:
            assert isinstance(err.offset, int) and 0 <= err.offset <= len(data) and err.opcode, name
        table.append((name, len(data), seconds, peak))
        # loose bounds (machines vary); each is milliseconds and well under 100 MB where measured alone
        assert seconds < 2.0 and peak < 200e6, (name, seconds, peak)
    print("\n".join(f"{n:28s} {size:>9d} B {s * 1e3:8.1f} ms {p / 1e6:7.1f} MB" for n, size, s, p in table))
    # the reference bombs are as small as a real attack's (3**40 values from under 800 bytes)
    assert all(len(craft.hostile_files()[n][0]) < 800 for n in ("reference_bomb_40", "reference_bomb_strings"))


def test_limits_apply_to_real_files_and_files_that_are_not_regular(real_files, tmp_path):
    fp32 = real_files["fp32.p4"]
    _refused(fp32, r"over the limit of 100", max_bytes=100)
    _refused(fp32, r"more than max_elements=50", max_elements=50)
    _refused(fp32, r"nest more than max_depth=1", max_depth=1)
    memo_flood = tmp_path / "memo_flood.pdparams"  # memo entries grow without pushing values
    memo_flood.write_bytes(b"\x80\x04N" + b"\x94" * 5000 + b".")
    _refused(memo_flood, r"more than max_elements=1000 memo entries", max_elements=1000)
    fifo = tmp_path / "fifo.pdparams"
    os.mkfifo(fifo)
    _refused(fifo, r"is a FIFO")
    zero = tmp_path / "zero.pdparams"
    zero.symlink_to("/dev/zero")
    _refused(zero, r"is a character device")
    _refused(tmp_path / "missing.pdparams", r"does not exist")
    link = tmp_path / "link.pdparams"
    link.symlink_to(fp32)  # a link the caller names is followed to a regular file
    assert_same(load_pdparams(link), load_pdparams(fp32))


def test_every_truncation_of_real_files_is_refused(real_files, tmp_path):
    path = tmp_path / "cut.pdparams"
    for name in ("fp32.p2", "adam.p4", "dense_tensor.p3", "numpy.p4"):
        data = real_files[name].read_bytes()
        for cut in range(len(data)):  # the parser on every prefix, the whole reader on some
            with pytest.raises(PickleRefusedError, match="cut.pdparams"):
                parse(data[:cut], str(path), max_depth=64, max_elements=10_000)
            if cut % 50 == 0:
                path.write_bytes(data[:cut])
                with pytest.raises(PickleRefusedError, match="cut.pdparams"):
                    load_pdparams(path)


def _mutate(data: bytes, kind: str, pos: int, value: int, size: int) -> bytes:
    if not data and kind in ("flip", "set"):  # nothing to change in an empty file (an earlier cut)
        return data
    pos %= max(len(data), 1)
    if kind == "flip":
        return data[:pos] + bytes([data[pos] ^ (1 << (value % 8))]) + data[pos + 1:]
    if kind == "set":
        return data[:pos] + bytes([value % 256]) + data[pos + 1:]
    if kind == "cut":
        return data[:pos]
    if kind == "insert":
        return data[:pos] + bytes([value % 256]) * size + data[pos:]
    if kind == "delete":
        return data[:pos] + data[pos + size:]
    return data[:pos] + struct.pack("<I", value % 2**32) + data[pos + 4:]  # a length field rewritten


def test_fuzzed_paddle_files_load_or_raise_the_typed_error(real_files, tmp_path):
    seeds = [real_files[n].read_bytes() for n in ("fp32.p2", "fp32.p4", "adam.p3", "nested.p4", "numpy.p4",
                                                     "dense_tensor.p4", "training_checkpoint.p2")]
    path = tmp_path / "fuzz.pdparams"
    outcomes = {"loaded": 0, "refused": 0}

    @settings(max_examples=200, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.sampled_from(range(len(seeds))),
           edits=st.lists(st.tuples(st.sampled_from(["flip", "set", "cut", "insert", "delete", "word"]),
                                    st.integers(0, 2**20), st.integers(0, 2**32), st.integers(1, 64)),
                          min_size=1, max_size=4),
           soup=st.binary(max_size=64))
    def check(seed, edits, soup):
        data = seeds[seed]
        for kind, pos, value, size in edits:
            data = _mutate(data, kind, pos, value, size)
        for candidate in (data, b"\x80\x04" + soup):
            path.write_bytes(candidate)
            try:
                load_pdparams(path)
                outcomes["loaded"] += 1
            except PickleRefusedError:
                outcomes["refused"] += 1

    check()
    assert outcomes["refused"] > 100  # the mutations do reach the checks
