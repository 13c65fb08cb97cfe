"""`pdx export --quantize ptq-int8 --calib FILE`: calibration files read with the loader rules, values checked."""

import io
import os
import struct
import time
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx.export import _cli
from pdx.jit import InputSpec

SPECS = [InputSpec([None, 4], "float32", name="x")]


def _batches(path, specs=SPECS, batch_size=2):
    return _cli._calibration_batches(str(path), specs, batch_size)


def _bomb(path, declared: int):
    """A small .npz whose zip directory declares `declared` inflated bytes for its one member."""
    buf = io.BytesIO()
    np.save(buf, np.zeros((8, 4), np.float32))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x.npy", buf.getvalue())
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x01\x02")  # the central directory record: uncompressed size at offset 24
    data[at + 24:at + 28] = struct.pack("<I", declared)
    path.write_bytes(bytes(data))


def test_calibration_files_follow_the_loader_rules(tmp_path, rng):
    good = rng.standard_normal((5, 4)).astype(np.float32)
    np.save(tmp_path / "good.npy", good)
    batches = _batches(tmp_path / "good.npy")
    assert [b[0].shape for b in batches] == [(2, 4), (2, 4), (1, 4)]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), good)
    np.savez_compressed(tmp_path / "good.npz", x=good)
    np.testing.assert_array_equal(_batches(tmp_path / "good.npz", batch_size=8)[0][0], good)

    fifo = tmp_path / "fifo.npy"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(ValueError, match="FIFO"):
        _batches(fifo)
    assert time.monotonic() - start < 1.0
    os.symlink("/dev/zero", tmp_path / "zero.npy")
    with pytest.raises(ValueError, match="symlink"):
        _batches(tmp_path / "zero.npy")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="not numeric"):
        _batches(tmp_path / "obj.npy")
    np.save(tmp_path / "str.npy", np.array(["a", "b"]))
    with pytest.raises(ValueError, match="not numeric"):
        _batches(tmp_path / "str.npy")
    np.save(tmp_path / "scalar.npy", np.float32(1.0))
    with pytest.raises(ValueError, match="batch dimension"):
        _batches(tmp_path / "scalar.npy")
    np.save(tmp_path / "empty.npy", np.zeros((0, 4), np.float32))
    with pytest.raises(ValueError, match="batch dimension"):
        _batches(tmp_path / "empty.npy")
    np.save(tmp_path / "rank.npy", np.zeros((2, 4, 1), np.float32))
    with pytest.raises(ValueError, match="rank 2"):
        _batches(tmp_path / "rank.npy")
    np.save(tmp_path / "dims.npy", np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"shape \(2, 5\)"):
        _batches(tmp_path / "dims.npy")
    for batch_size in (0, -1):
        with pytest.raises(ValueError, match="--calib-batch-size must be an integer >= 1"):
            _batches(tmp_path / "good.npy", batch_size=batch_size)
    for bad, index in ((np.nan, [3, 1]), (np.inf, [0, 2])):
        x = good.copy()
        x[tuple(index)] = bad
        x[4, 3] = bad
        np.savez(tmp_path / "nan.npz", x=x)
        with pytest.raises(ValueError, match=rf"array 'x' holds 2 non-finite.*at index \{index}"):
            _batches(tmp_path / "nan.npz")
    # a small zip whose directory declares 4 GB inflated is refused from that header, before inflating
    _bomb(tmp_path / "bomb.npz", 0xFFFFFFF0)
    assert (tmp_path / "bomb.npz").stat().st_size < 4096
    with pytest.raises(ValueError, match="declare 4294967280 bytes"):
        _batches(tmp_path / "bomb.npz")
    # a .npy header that declares more data than the file holds
    raw = bytearray((tmp_path / "good.npy").read_bytes())
    (tmp_path / "short.npy").write_bytes(bytes(raw[:-8]))
    with pytest.raises(ValueError, match="truncated|over the calibration limit"):
        _batches(tmp_path / "short.npy")
    (tmp_path / "junk.npy").write_bytes(b"hello")
    with pytest.raises(ValueError, match="neither a .npy nor a .npz"):
        _batches(tmp_path / "junk.npy")
    np.savez(tmp_path / "names.npz", pixels=good)
    with pytest.raises(ValueError, match=r"the inputs are named \['x'\]"):
        _batches(tmp_path / "names.npz")
    two = [InputSpec([None, 4], "float32", name="a"), InputSpec([None, 2], "float32", name="b")]
    np.savez(tmp_path / "two.npz", a=good, b=np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="holds 4 examples, the others 5"):
        _batches(tmp_path / "two.npz", two)


def test_a_quantized_model_with_non_finite_outputs_is_not_written(tmp_path, rng):
    import pdx
    from pdx import nn

    pdx.seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    model.eval()
    x = rng.standard_normal((6, 4)).astype(np.float32)
    np.save(tmp_path / "ok.npy", x)
    converted = _cli._quantize(model, "ptq-int8", SPECS, str(tmp_path / "ok.npy"), 4)
    float_out, int8_out = np.asarray(model(pdx.to_tensor(x))), np.asarray(converted(pdx.to_tensor(x)))
    assert np.isfinite(int8_out).all() and np.abs(int8_out - float_out).max() < 0.1 * np.abs(float_out).max() + 1e-3
    np.save(tmp_path / "huge.npy", np.full((6, 4), 3e38, np.float32))  # finite inputs whose products overflow
    with pytest.raises(ValueError, match="non-finite value.*artifact was not written"):
        _cli._quantize(model, "ptq-int8", SPECS, str(tmp_path / "huge.npy"), 4)


@st.composite
def _calib_file(draw):
    kind = draw(st.sampled_from(["<f4", "<f8", "<i4", "|b1", "<U3", "<c8", "|O"]))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    arr = np.zeros(shape, dtype=np.dtype(kind) if kind != "|O" else object)
    if arr.size and kind in ("<f4", "<f8") and draw(st.booleans()):
        arr.flat[draw(st.integers(0, arr.size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf, 1e30]))
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    data = bytearray(buf.getvalue())
    if draw(st.booleans()):
        member = io.BytesIO()
        with zipfile.ZipFile(member, "w", draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))) as zf:
            zf.writestr(draw(st.sampled_from(["x.npy", "y.npy", "x"])), bytes(data))
        data = bytearray(member.getvalue())
    for _ in range(draw(st.integers(0, 3))):  # flip, cut or overwrite bytes (headers included)
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.integers(0, 2))
        if op == 0:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == 1:
            data = data[:at]
        else:
            data[at:at + 4] = b"\xff\xff\xff\x7f"
    return bytes(data)


def test_fuzzed_calibration_files_give_only_value_errors(tmp_path, peak_rss):
    specs = [InputSpec([None, 3], "float32", name="x")]
    path = tmp_path / "calib.bin"
    worst = [0.0]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(_calib_file(), st.integers(-1, 3))
    def fuzz(data, batch_size):
        path.write_bytes(data)
        start = time.monotonic()
        try:
            for batch in _cli._calibration_batches(str(path), specs, batch_size):
                assert batch[0].ndim == 2 and batch[0].shape[1] == 3
                assert np.isfinite(batch[0].astype(np.float64)).all()
        except ValueError:
            pass
        worst[0] = max(worst[0], time.monotonic() - start)

    with peak_rss() as rss:
        fuzz()
    assert worst[0] < 2.0 and rss.grown_mb < 200, (worst[0], rss.grown_mb)
