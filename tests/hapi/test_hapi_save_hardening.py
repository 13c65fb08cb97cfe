"""Model.load verifies every file against the checksum table Model.save wrote:
no table, an empty table, flipped bytes, FIFOs, devices, outside symlinks and
deep JSON are one ModelFileError; Paddle-written weights load by an explicit call."""

import json
import os
import shutil
import threading
import time

import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn
from pdx.hapi import ModelFileError


def _model(seed=0):
    pdx.seed(seed)
    net = nn.Linear(4, 3)
    model = pdx.Model(net)
    model.prepare(pdx.optimizer.Adam(1e-2, parameters=net), F.mse_loss)
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A trained model saved with its optimizer state: (model, directory, prefix name)."""
    model = _model(0)
    x, y = np.ones((8, 4), np.float32), np.zeros((8, 3), np.float32)
    model.fit((x, y), batch_size=8, epochs=2, verbose=0)
    root = tmp_path_factory.mktemp("saved")
    model.save(str(root / "m"))
    return model, root


@pytest.fixture
def copy(saved, tmp_path):
    _, root = saved
    target = tmp_path / "copy"
    shutil.copytree(root, target)
    return target


def _flip(file, rng):
    data = bytearray(file.read_bytes())
    data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
    file.write_bytes(bytes(data))


def _mkfifo_unblocked_later(path, seconds=2.0):
    """A FIFO whose write end opens after `seconds`: a loader blocked on it returns (and the test fails on time)."""
    os.mkfifo(path)

    def run():
        time.sleep(seconds)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader: the loader refused the FIFO without opening it for reading
            pass
    threading.Thread(target=run, daemon=True).start()


def _weights(model):
    return {k: np.asarray(v) for k, v in model.train_state.params.items()}


def test_intact_copy_loads_bitwise(saved, copy):
    model, _ = saved
    fresh = _model(1)
    fresh.load(str(copy / "m"))
    for name, value in _weights(model).items():
        np.testing.assert_array_equal(_weights(fresh)[name], value)
    assert int(fresh.train_state.step) == int(model.train_state.step) == 2


@pytest.mark.parametrize("table", ["missing", "empty files", "no files entry", "params entry missing"])
def test_flipped_files_without_a_checksum_table_are_refused(saved, tmp_path, table):
    rng = np.random.default_rng(len(table))
    fresh = _model(1)
    for trial in range(10):
        for suffix in ("pdparams", "pdopt"):
            target = tmp_path / f"{suffix}{trial}"
            shutil.copytree(saved[1], target)
            _flip(target / f"m.{suffix}.safetensors", rng)
            manifest = json.loads((target / "m.json").read_text())
            if table == "missing":
                (target / "m.json").unlink()
            else:
                if table == "empty files":
                    manifest["files"] = {}
                elif table == "no files entry":
                    del manifest["files"]
                else:
                    del manifest["files"]["params"]
                (target / "m.json").write_text(json.dumps(manifest))
            with pytest.raises(ModelFileError, match=r"set_state_dict\(pdx\.load"):
                fresh.load(str(target / "m"))


def test_flipped_files_with_their_table_are_refused(saved, tmp_path):
    rng = np.random.default_rng(7)
    fresh = _model(1)
    before = _weights(fresh)
    for trial in range(10):
        for suffix in ("pdparams", "pdopt"):
            target = tmp_path / f"{suffix}{trial}"
            shutil.copytree(saved[1], target)
            _flip(target / f"m.{suffix}.safetensors", rng)
            with pytest.raises(ModelFileError, match="sha256"):
                fresh.load(str(target / "m"))
    for name, value in before.items():  # nothing changed
        np.testing.assert_array_equal(_weights(fresh)[name], value)


def test_size_is_checked_before_reading(copy):
    with open(copy / "m.pdparams.safetensors", "ab") as f:
        f.write(b"\0" * 64)
    with pytest.raises(ModelFileError, match="bytes were recorded"):
        _model(1).load(str(copy / "m"))


def test_fifo_device_and_outside_symlinks_are_refused_fast(copy, tmp_path):
    fresh = _model(1)
    params, table = copy / "m.pdparams.safetensors", copy / "m.json"
    outside = tmp_path / "outside.json"
    shutil.copy(table, outside)
    for victim, make, pattern in [
        (params, _mkfifo_unblocked_later, "a FIFO"),
        (table, _mkfifo_unblocked_later, "a FIFO"),
        (table, lambda p: os.symlink("/dev/zero", p), "outside"),
        (params, lambda p: os.symlink("/dev/zero", p), "outside"),
        (table, lambda p: os.symlink(outside, p), "outside"),
    ]:
        saved_bytes = victim.read_bytes()
        victim.unlink()
        make(victim)
        t0 = time.monotonic()
        with pytest.raises(ModelFileError, match=pattern):
            fresh.load(str(copy / "m"))
        assert time.monotonic() - t0 < 1.0, (victim.name, pattern)
        victim.unlink()
        victim.write_bytes(saved_bytes)
    # a symlink that stays inside the directory is fine
    os.rename(params, copy / "real.safetensors")
    os.symlink("real.safetensors", params)
    fresh.load(str(copy / "m"))


@pytest.mark.parametrize("text", ["[" * 100000, '{"format": "pdx-model/1", "files": ' + "[" * 50 + "]" * 50 + "}",
                                  "\xff\xfe", "null", '{"format": "pdx-model/1", "files": {"params": "x"}}'],
                         ids=["deep", "deep files", "not utf-8", "null", "entry not a dict"])
def test_malformed_tables_are_one_typed_error(copy, text):
    (copy / "m.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(ModelFileError):
        _model(1).load(str(copy / "m"))


def test_optimizer_file_follows_the_table(saved, copy):
    model, _ = saved
    (copy / "m.pdopt.safetensors").unlink()  # listed in the table: its absence is an error
    with pytest.raises(ModelFileError, match="listed in the checksum table but missing"):
        _model(1).load(str(copy / "m"))
    fresh = _model(1)
    fresh.load(str(copy / "m"), reset_optimizer=True)
    np.testing.assert_array_equal(_weights(fresh)["weight"], _weights(model)["weight"])
    # a parameters-only save over an older training save: the stale optimizer file is not in the table
    shutil.copy(saved[1] / "m.pdopt.safetensors", copy / "m.pdopt.safetensors")
    model.save(str(copy / "m"), training=False)
    _flip(copy / "m.pdopt.safetensors", np.random.default_rng(0))
    fresh = _model(1)
    fresh.load(str(copy / "m"))
    assert int(fresh.train_state.step) == 0
    np.testing.assert_array_equal(_weights(fresh)["weight"], _weights(model)["weight"])


def test_paddle_written_weights_load(tmp_path):
    """Model.load(path) of Paddle's `path.pdparams` reads it through pdx.load's pickle parser, as Paddle's
    Model.load does; pdx's own save is checked against its sha256 table, and a broken pickle is refused."""
    import paddle

    paddle.seed(3)
    ref = paddle.nn.Linear(4, 3)
    paddle.save(ref.state_dict(), str(tmp_path / "m.pdparams"))  # Paddle's Model.save layout: a pickle, no table
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    expected = ref(paddle.to_tensor(x)).numpy()
    model = _model(1)
    model.load(str(tmp_path / "m"))
    got = model.predict((x,), batch_size=2, stack_outputs=True, verbose=0)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    net = nn.Linear(4, 3)  # the explicit form works as well
    net.set_state_dict(pdx.load(str(tmp_path / "m.pdparams")))
    np.testing.assert_array_equal(np.asarray(net.weight[...]), ref.weight.numpy())
    paddle.save(paddle.nn.Linear(4, 5).state_dict(), str(tmp_path / "wide.pdparams"))
    with pytest.raises(ModelFileError, match="shape"):
        _model(1).load(str(tmp_path / "wide"))
    data = (tmp_path / "m.pdparams").read_bytes()
    (tmp_path / "cut.pdparams").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="cut.pdparams"):
        _model(1).load(str(tmp_path / "cut"))


def test_fuzz_model_load(saved, tmp_path):
    """Random byte edits and truncations of the three files: ModelFileError, or (unchanged bytes) a bitwise load."""
    import hypothesis.strategies as st
    from hypothesis import HealthCheck, given, settings

    model, root = saved
    fresh = _model(1)
    expected = _weights(model)
    counter = iter(range(10**6))
    outcomes = {"refused": 0, "loaded": 0}

    @settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        target = tmp_path / f"f{next(counter)}"
        shutil.copytree(root, target)
        victim = target / data.draw(st.sampled_from(["m.json", "m.pdparams.safetensors", "m.pdopt.safetensors"]))
        original = victim.read_bytes()
        blob = bytearray(original)
        for _ in range(data.draw(st.integers(0, 3))):
            blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
        cut = data.draw(st.sampled_from([None, 0, 1, len(blob) // 2]))
        blob = bytes(blob[:cut] if cut is not None else blob)
        victim.write_bytes(blob)
        try:
            fresh.load(str(target / "m"))
        except ModelFileError:
            assert blob != original, "an intact save was refused"
            outcomes["refused"] += 1
        else:
            if blob != original:  # only an edit of the table that keeps every size and sum may load
                sums = [{role: (e["size"], e["sha256"]) for role, e in json.loads(b)["files"].items()}
                        for b in (blob, original)]
                assert victim.name == "m.json" and sums[0] == sums[1], blob
            for name, value in expected.items():
                np.testing.assert_array_equal(_weights(fresh)[name], value)
            outcomes["loaded"] += 1
        shutil.rmtree(target)

    run()
    assert outcomes["refused"] > 0, outcomes
