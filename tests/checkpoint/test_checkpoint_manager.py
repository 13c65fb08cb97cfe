"""CheckpointManager in one process: round trips, retention, integrity, resharding, partial restore."""

import json
import shutil
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from pdx.checkpoint import (
    CheckpointCorruptError,
    CheckpointManager,
    CheckpointNotFoundError,
)


class TrainState(NamedTuple):
    params: dict
    opt_state: dict
    rng: jax.Array
    step: jax.Array


def _state(rng, step=0) -> TrainState:
    return TrainState(
        params={"fc.weight": jnp.asarray(rng.standard_normal((16, 8)), jnp.float32),
                "fc.bias": jnp.asarray(rng.standard_normal(8), jnp.float32)},
        opt_state={"mu": jnp.asarray(rng.standard_normal((16, 8)), jnp.bfloat16)},
        rng=jax.random.key(step),
        step=jnp.int32(step),
    )


def _manager(path, **kwargs) -> CheckpointManager:
    return CheckpointManager(path, handle_sigterm=False, **kwargs)


def _assert_same(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("async_save", [True, False])
def test_round_trip_is_bitwise_with_side_items(tmp_path, rng, async_save):
    state = _state(rng, step=7)
    with _manager(tmp_path, async_save=async_save) as mgr:
        assert mgr.save(7, state, data_state={"epoch": 1, "position": 123}, metadata={"run": "a"})
        mgr.wait_until_finished()
        assert mgr.all_steps() == [7] and mgr.latest_step() == 7
        ckpt = mgr.restore(target=state)
    assert isinstance(ckpt.state, TrainState) and ckpt.step == 7
    _assert_same(ckpt.state, state)
    assert jax.random.key_data(ckpt.state.rng).tolist() == jax.random.key_data(jax.random.key(7)).tolist()
    assert ckpt.data_state == {"epoch": 1, "position": 123} and ckpt.metadata == {"run": "a"}


def test_interval_force_and_bad_arguments(tmp_path, rng):
    state = _state(rng)
    with _manager(tmp_path, save_interval_steps=10) as mgr:
        assert mgr.save(3, state) is False
        assert mgr.save(3, state, force=True) is True
        mgr.wait_until_finished()
        assert mgr.all_steps() == [3]
        with pytest.raises(ValueError, match="step 3 already exists"):
            mgr.save(3, state, force=True)
        with pytest.raises(TypeError, match="data_state"):
            mgr.save(10, state, data_state={"x": np.zeros(2)})
        with pytest.raises(CheckpointNotFoundError, match="no step 4"):
            mgr.restore(4)
    with pytest.raises(ValueError, match="max_to_keep"):
        _manager(tmp_path, max_to_keep=0)


def test_retention_keeps_newest_and_period_steps(tmp_path, rng):
    state = _state(rng)
    with _manager(tmp_path, max_to_keep=2, keep_period=4) as mgr:
        for step in range(1, 10):
            mgr.save(step, state)
        mgr.wait_until_finished()
        assert mgr.all_steps() == [4, 8, 9]  # newest two (8, 9) + every 4th (4, 8)


def test_unsaveable_leaf_is_rejected_before_writing(tmp_path, rng):
    state = _state(rng)
    with _manager(tmp_path, max_to_keep=1) as mgr:
        mgr.save(1, state)
        with pytest.raises(TypeError, match="'opt/bad' is a object"):
            mgr.save(2, {"opt": {"bad": object()}})
        assert mgr.all_steps() == [1] and not list(tmp_path.glob("2*"))
        mgr.save(3, state)
        mgr.wait_until_finished()
        assert mgr.all_steps() == [3]


def test_bit_flip_in_any_data_file_is_caught(tmp_path, rng):
    state = _state(rng)
    with _manager(tmp_path) as mgr:
        mgr.save(1, state)
        mgr.wait_until_finished()
        step_dir = tmp_path / "1"
        data_files = sorted(p for p in (step_dir / "state").rglob("*") if p.is_file() and p.stat().st_size)
        assert any("/d/" in str(p) for p in data_files)  # ocdbt data shards are among them
        picker = np.random.default_rng(0)
        for _ in range(10):
            path = data_files[picker.integers(len(data_files))]
            blob = bytearray(path.read_bytes())
            offset, bit = int(picker.integers(len(blob))), int(picker.integers(8))
            blob[offset] ^= 1 << bit
            original = path.read_bytes()
            path.write_bytes(bytes(blob))
            with pytest.raises(CheckpointCorruptError) as err:
                mgr.verify(1)
            assert err.value.path == path and path.name in str(err.value)
            with pytest.raises(CheckpointCorruptError):
                mgr.restore(1, target=state)
            path.write_bytes(original)
        mgr.verify(1)
        _assert_same(mgr.restore(1, target=state).state, state)


def test_missing_extra_and_tampered_manifest_are_corrupt(tmp_path, rng):
    with _manager(tmp_path) as mgr:
        mgr.save(1, _state(rng))
        mgr.wait_until_finished()
    step_dir = tmp_path / "1"
    (step_dir / "stray.bin").write_bytes(b"x")
    with pytest.raises(CheckpointCorruptError, match="stray.bin"):
        _manager(tmp_path).verify(1)
    (step_dir / "stray.bin").unlink()
    manifest = json.loads((step_dir / "MANIFEST.json").read_text())
    victim = next(iter(manifest["files"]))
    manifest["files"][victim]["sha256"] = "0" * 64
    (step_dir / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointCorruptError, match="COMMITTED"):
        _manager(tmp_path).verify(1)


def test_copied_directory_verifies_and_restores(tmp_path, rng):
    state = _state(rng, step=2)
    with _manager(tmp_path / "a") as mgr:
        mgr.save(2, state, data_state={"pos": 5})
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    shutil.rmtree(tmp_path / "a")
    with _manager(tmp_path / "b") as mgr:
        mgr.verify()
        ckpt = mgr.restore(target=state)
    _assert_same(ckpt.state, state)
    assert ckpt.data_state == {"pos": 5}


def test_save_fsdp_on_8_restore_on_1_2_4_devices(tmp_path, rng):
    devices = jax.devices()
    assert len(devices) == 8
    mesh8 = Mesh(np.asarray(devices).reshape(8), ("fsdp",))
    w = rng.standard_normal((32, 16)).astype(np.float32)
    e = rng.standard_normal((8, 24)).astype(np.float32)
    state = {"w": jax.device_put(w, NamedSharding(mesh8, P("fsdp", None))),
             "e": jax.device_put(e, NamedSharding(mesh8, P(None, "fsdp")))}
    with _manager(tmp_path) as mgr:
        mgr.save(1, state)
        mgr.wait_until_finished()
        layouts = [
            Mesh(np.asarray(devices[:1]).reshape(1), ("x",)),
            Mesh(np.asarray(devices[2:4]).reshape(2), ("x",)),
            Mesh(np.asarray(devices[4:]).reshape(2, 2), ("x", "y")),
        ]
        for mesh in layouts:
            spec = P(*mesh.axis_names) if len(mesh.axis_names) == 2 else P(None, "x")
            shardings = {"w": NamedSharding(mesh, spec), "e": NamedSharding(mesh, P(mesh.axis_names[0]))}
            restored = mgr.restore(shardings=shardings).state
            for name, want in (("w", w), ("e", e)):
                assert restored[name].sharding == shardings[name]
                np.testing.assert_array_equal(np.asarray(restored[name]), want)


def test_partial_restore_with_dtype_cast(tmp_path, rng):
    state = _state(rng)
    with _manager(tmp_path) as mgr:
        mgr.save(1, state)
        mgr.wait_until_finished()
        target = {"params": {"fc.weight": jax.ShapeDtypeStruct((16, 8), jnp.float32)}}
        restored = mgr.restore(target=target, dtype=jnp.bfloat16).state
        assert list(restored) == ["params"] and list(restored["params"]) == ["fc.weight"]
        got = restored["params"]["fc.weight"]
        assert got.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(got), np.asarray(state.params["fc.weight"].astype(jnp.bfloat16)))
        with pytest.raises(KeyError, match="not in the checkpoint"):
            mgr.restore(target={"params": {"nope": jax.ShapeDtypeStruct((2,), jnp.float32)}})
        with pytest.raises(ValueError, match="shape"):
            mgr.restore(target={"params": {"fc.bias": jax.ShapeDtypeStruct((9,), jnp.float32)}})


def test_pdx_train_state_round_trip(tmp_path, rng):
    import pdx

    pdx.seed(0)
    net = pdx.nn.Sequential(pdx.nn.Linear(3, 4), pdx.nn.Dropout(0.5), pdx.nn.Linear(4, 1))
    opt = pdx.optimizer.AdamW(1e-2, parameters=net.parameters())
    state = pdx.TrainState.create(net, opt)
    grads = jax.tree.map(lambda p: jnp.ones_like(p), state.params)
    state = state.apply_gradients(grads)
    with _manager(tmp_path) as mgr:
        mgr.save(int(state.step), state)
        fresh = pdx.TrainState.create(net, opt)
        ckpt = mgr.restore(target=fresh)
    assert type(ckpt.state) is pdx.TrainState and int(ckpt.state.step) == 1
    _assert_same(ckpt.state, state)
