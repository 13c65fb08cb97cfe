"""`pdx ckpt`: ls, inspect, verify, convert, reshard, diff, average, prune."""

import json
import subprocess
import sys

import jax
import numpy as np
import pytest
import safetensors.numpy
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from pdx.checkpoint import CheckpointManager
from pdx.cli import main


def _state(rng):
    mesh = Mesh(np.asarray(jax.devices()), ("fsdp",))
    return {"params": {"w": jax.device_put(rng.standard_normal((16, 4)).astype(np.float32), NamedSharding(mesh, P("fsdp"))),
                       "b": rng.standard_normal(4).astype(np.float32)},
            "step": np.int32(0)}


@pytest.fixture
def ckpts(tmp_path, rng):
    """Steps 10 and 20 (different values), plus an interrupted step 30."""
    states = {10: _state(rng), 20: _state(rng)}
    with CheckpointManager(tmp_path / "run", handle_sigterm=False) as mgr:
        for step, state in states.items():
            mgr.save(step, state, data_state={"pos": step})
    (tmp_path / "run" / "30.incomplete" / "state").mkdir(parents=True)
    return tmp_path / "run", {s: jax.tree.map(np.asarray, v) for s, v in states.items()}


def _json(capsys, *argv):
    assert main(["ckpt", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ls_and_inspect(ckpts, capsys):
    run, states = ckpts
    rows = _json(capsys, "ls", str(run))
    assert [(r["step"], r["status"]) for r in rows] == [(10, "committed"), (20, "committed"), (30, "incomplete")]
    assert all(r["bytes"] > 0 for r in rows[:2])
    assert main(["ckpt", "ls", str(run)]) == 0
    table = capsys.readouterr().out
    assert "incomplete" in table and "STEP" in table

    info = _json(capsys, "inspect", str(run / "10"))
    arrays = {a["name"]: a for a in info["arrays"]}
    assert arrays["params/w"]["shape"] == [16, 4] and arrays["params/w"]["dtype"] == "float32"
    assert arrays["params/w"]["bytes"] == 16 * 4 * 4 and "fsdp=8" in arrays["params/w"]["sharding"]
    assert info["total_bytes"] == 16 * 4 * 4 + 4 * 4 + 4
    latest = _json(capsys, "inspect", str(run))
    assert latest["path"] == str(run)


def test_inspect_a_relative_path(ckpts, capsys, monkeypatch):
    run, _ = ckpts
    monkeypatch.chdir(run.parent)
    info = _json(capsys, "inspect", run.name)
    assert {a["name"] for a in info["arrays"]} == {"params/w", "params/b", "step"}


def test_verify_exit_codes(ckpts, capsys):
    run, _ = ckpts
    assert main(["ckpt", "verify", str(run / "10")]) == 0
    capsys.readouterr()
    report = _json(capsys, "verify", str(run))  # committed steps pass; the interrupted one is listed
    assert [r["ok"] for r in report["steps"]] == [True, True] and report["incomplete"] == [str(run / "30.incomplete")]
    assert main(["ckpt", "verify", str(run / "30.incomplete")]) == 1
    capsys.readouterr()
    data = sorted(p for p in (run / "20" / "state" / "d").iterdir())[0]
    blob = bytearray(data.read_bytes())
    blob[len(blob) // 2] ^= 0x10
    data.write_bytes(bytes(blob))
    result = subprocess.run([sys.executable, "-m", "pdx.cli", "ckpt", "verify", str(run / "20")],
                            capture_output=True, text=True)
    assert result.returncode == 1 and data.name in result.stdout
    assert main(["ckpt", "verify", str(run / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["ckpt", "diff", str(run / "10"), str(run / "20")]) == 1  # reading a corrupt step fails


def test_convert_round_trip_and_diff(ckpts, tmp_path, capsys):
    run, states = ckpts
    out = tmp_path / "w.safetensors"
    assert main(["ckpt", "convert", str(run / "10"), str(out)]) == 0
    plain = safetensors.numpy.load_file(str(out))  # the reference reader
    np.testing.assert_array_equal(plain["params/w"], states[10]["params"]["w"])
    assert main(["ckpt", "convert", str(out), str(tmp_path / "back"), "--step", "7"]) == 0
    capsys.readouterr()
    same = _json(capsys, "diff", str(run / "10"), str(tmp_path / "back" / "7"))
    assert same["differ"] == 0
    assert main(["ckpt", "diff", str(run / "10"), str(run / "20"), "--json"]) == 1
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["tensors"]}
    a, b = states[10]["params"]["w"].astype(np.float64), states[20]["params"]["w"].astype(np.float64)
    assert rows["params/w"]["max_abs"] == pytest.approx(np.abs(a - b).max(), rel=1e-12)
    assert rows["params/w"]["rel"] == pytest.approx(np.abs(a - b).max() / np.abs(b).max(), rel=1e-12)
    assert rows["step"]["status"] == "equal"


def test_convert_pdparams(tmp_path, paddle, capsys):
    paddle.seed(0)
    layer = paddle.nn.Linear(3, 2)
    paddle.save(layer.state_dict(), str(tmp_path / "l.pdparams"))
    assert main(["ckpt", "convert", str(tmp_path / "l.pdparams"), str(tmp_path / "ck")]) == 0
    capsys.readouterr()
    info = _json(capsys, "inspect", str(tmp_path / "ck"))
    assert sorted(a["name"] for a in info["arrays"]) == ["bias", "weight"]
    restored = CheckpointManager(tmp_path / "ck", handle_sigterm=False).restore().state
    np.testing.assert_array_equal(np.asarray(restored["weight"]), layer.weight.numpy())


def test_average_reshard_prune(ckpts, tmp_path, capsys):
    run, states = ckpts
    assert main(["ckpt", "average", str(run), "10", "20", "--out", str(tmp_path / "avg")]) == 0
    averaged = CheckpointManager(tmp_path / "avg", handle_sigterm=False).restore(20).state
    want = (states[10]["params"]["w"].astype(np.float64) + states[20]["params"]["w"]) / 2
    np.testing.assert_array_equal(np.asarray(averaged["params"]["w"]), want.astype(np.float32))

    assert main(["ckpt", "reshard", str(run / "20"), str(tmp_path / "rs"), "--mesh", "data=2,fsdp=2"]) == 0
    capsys.readouterr()
    info = {a["name"]: a for a in _json(capsys, "inspect", str(tmp_path / "rs"))["arrays"]}
    assert "data=2,fsdp=2" in info["params/w"]["sharding"]
    assert main(["ckpt", "reshard", str(run), str(tmp_path / "x"), "--mesh", "fsdp"]) == 2
    # the resharded copy restores on its own 4-device layout without shardings, same values
    with CheckpointManager(tmp_path / "rs", handle_sigterm=False) as mgr:
        got = mgr.restore()
        assert got.data_state == {"pos": 20}
        assert len(got.state["params"]["w"].sharding.device_set) == 4
        np.testing.assert_array_equal(np.asarray(got.state["params"]["w"]), states[20]["params"]["w"])

    capsys.readouterr()
    pruned = _json(capsys, "prune", str(run), "--keep", "1")
    assert pruned["kept"] == [20] and len(pruned["deleted"]) == 2
    assert CheckpointManager(run, handle_sigterm=False).all_steps() == [20]
    assert not (run / "30.incomplete").exists()
