"""pdx.save / pdx.load, safetensors import/export and Paddle .pdparams import."""

import os
import pickle

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy

import pdx
from pdx import nn
from pdx.checkpoint import PickleRefusedError, load, load_pdparams, load_safetensors, save, save_safetensors


def test_save_load_round_trip_of_nested_object(tmp_path, rng):
    w = rng.standard_normal((3, 4)).astype(np.float32)
    obj = {"model": {"fc.weight": jnp.asarray(w), "scale": jnp.asarray([1.5, 2.5], jnp.bfloat16)},
           "epoch": 3, "lr": 0.1, "name": "run", "flags": [True, None], "shape": (2, np.int32(7)),
           "count": np.asarray(5, np.int32)}
    path = tmp_path / "ckpt.pdparams"
    save(obj, path)
    with open(path, "rb") as f:
        assert f.read(1) != b"\x80"  # not a pickle
    back = load(path)
    np.testing.assert_array_equal(np.asarray(back["model"]["fc.weight"]), w)
    assert back["model"]["scale"].dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(back["model"]["scale"], np.float32), [1.5, 2.5])
    assert back["epoch"] == 3 and back["lr"] == 0.1 and back["name"] == "run" and back["flags"] == [True, None]
    assert isinstance(back["shape"], tuple) and back["shape"][0] == 2 and int(back["shape"][1]) == 7
    assert back["count"].shape == () and int(back["count"]) == 5
    numpy_back = load(path, return_numpy=True)
    assert isinstance(numpy_back["model"]["fc.weight"], np.ndarray)


def test_saved_state_dict_is_standard_safetensors(tmp_path, rng):
    pdx.seed(0)
    layer = nn.Linear(4, 3)
    path = tmp_path / "linear.safetensors"
    pdx.save(layer.state_dict(), path)
    plain = safetensors.numpy.load_file(str(path))  # the reference reader
    assert sorted(plain) == ["bias", "weight"]
    np.testing.assert_array_equal(plain["weight"], np.asarray(layer.weight[...]))
    other = nn.Linear(4, 3)
    other.set_state_dict(pdx.load(path))
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(other(x)), np.asarray(layer(x)))


def test_save_refuses_what_has_no_safe_format(tmp_path):
    with pytest.raises(TypeError, match=r"state_dict\(\) instead of the Layer"):
        save(nn.Linear(2, 2), tmp_path / "x")
    with pytest.raises(TypeError, match="'opt/fn' is a builtin_function_or_method"):
        save({"opt": {"fn": len}}, tmp_path / "x")
    with pytest.raises(TypeError, match="keys must be str"):
        save({1: 2}, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_safetensors_export_import_with_name_and_value_maps(tmp_path, rng):
    pdx.seed(1)
    layer = nn.Linear(4, 3)
    path = tmp_path / "hf.safetensors"
    # HF / PyTorch naming and layout: "dense.weight" with weight [out, in]
    save_safetensors(layer.state_dict(), path, name_map=lambda n: "dense." + n,
                     value_map=lambda n, a: a.T if n.endswith("weight") else a, metadata={"format": "pt"})
    plain = safetensors.numpy.load_file(str(path))
    assert sorted(plain) == ["dense.bias", "dense.weight"]
    np.testing.assert_array_equal(plain["dense.weight"], np.asarray(layer.weight[...]).T)

    imported = load_safetensors(path, name_map=lambda n: n.removeprefix("dense."),
                                value_map=lambda n, a: a.T if n == "weight" else a)
    fresh = nn.Linear(4, 3)
    missing, unexpected = fresh.set_state_dict(imported)
    assert missing == [] and unexpected == []
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(fresh(x)), np.asarray(layer(x)))
    dropped = load_safetensors(path, name_map={"dense.bias": None}.get)  # None drops a tensor
    assert list(dropped) == []


def test_bfloat16_safetensors_from_other_writers_load(tmp_path):
    data = np.asarray([1.0, -2.0, 0.5], ml_dtypes.bfloat16)
    safetensors.numpy.save_file({"w": data}, str(tmp_path / "bf16.safetensors"))
    got = load_safetensors(tmp_path / "bf16.safetensors")["w"]
    assert got.dtype == ml_dtypes.bfloat16 and got.tolist() == data.tolist()


def test_pdparams_from_real_paddle_loads_into_pdx_layer(tmp_path, paddle, rng):
    paddle.seed(3)
    ref = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.BatchNorm1D(8), paddle.nn.ReLU(),
                               paddle.nn.Linear(8, 3))
    ref.train()
    for _ in range(2):  # move the running statistics away from their init
        ref(paddle.to_tensor(rng.standard_normal((6, 4)).astype(np.float32)))
    ref.eval()
    path = tmp_path / "model.pdparams"
    paddle.save(ref.state_dict(), str(path))

    state = load_pdparams(path)
    assert sorted(state) == sorted(ref.state_dict())
    mine = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1D(8), nn.ReLU(), nn.Linear(8, 3))
    missing, unexpected = mine.set_state_dict(state)
    assert missing == [] and unexpected == []
    mine.eval()
    x = rng.standard_normal((5, 4)).astype(np.float32)
    want = ref(paddle.to_tensor(x)).numpy()
    np.testing.assert_allclose(np.asarray(mine(x)), want, rtol=1e-5, atol=1e-6)
    # pdx.load reads the same file through the same allow-list unpickler
    np.testing.assert_array_equal(np.asarray(pdx.load(path)["0.weight"]), state["0.weight"])


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pdparams"
    path.write_bytes(pickle.dumps({"fc.weight": np.zeros(2, np.float32), "x": _Exploit(marker)}, protocol=4))
    with pytest.raises(PickleRefusedError, match=r"refusing to load global (posix|os)\.system"):
        load_pdparams(path)
    with pytest.raises(PickleRefusedError):
        pdx.load(path)
    assert not marker.exists()
    # an object array would let a pickle smuggle arbitrary objects in
    path.write_bytes(pickle.dumps({"w": np.asarray([1, "a"], dtype=object)}, protocol=4))
    with pytest.raises(PickleRefusedError):
        load_pdparams(path)
