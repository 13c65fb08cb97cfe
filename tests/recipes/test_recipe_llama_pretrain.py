"""recipes/llama_pretrain.py runs out of the box, its loss falls, and a resumed run continues the curve:
exactly on the same mesh, within float32 rounding when the TrainState checkpoint is restored onto another mesh."""

import importlib.util
import json
import os
import shutil
import sys

import numpy as np
import pytest

RECIPE = os.path.join(os.path.dirname(__file__), "..", "..", "recipes", "llama_pretrain.py")
COMMON = ["--preset", "tiny", "--layers", "1", "--steps", "24", "--batch_size", "8", "--seq_len", "32",
          "--warmup_steps", "4", "--log_every", "4", "--eval_every", "0", "--eval_batches", "1", "--dp", "1"]


@pytest.fixture(scope="module")
def recipe():
    spec = importlib.util.spec_from_file_location("llama_pretrain", RECIPE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _run(recipe, tmp_path, name, *extra):
    log = tmp_path / f"{name}.jsonl"
    import jax

    devices = ["--dp", "1"] if jax.device_count() == 1 else ["--dp", "1", "--sharding", str(jax.device_count())]
    assert recipe.main(COMMON + devices + ["--log_file", str(log), *extra]) == 0
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_loss_falls_and_resume_continues_the_curve(recipe, tmp_path):
    straight = _run(recipe, tmp_path, "straight")
    losses = {r["step"]: r["loss"] for r in straight if "loss" in r}
    assert losses[24] < losses[4] - 0.5, losses
    assert any("perplexity" in r for r in straight)

    ckpt = str(tmp_path / "ckpt")
    first = _run(recipe, tmp_path, "first", "--ckpt_dir", ckpt, "--stop_after", "12")
    assert max(r["step"] for r in first if "loss" in r) == 12
    other_mesh = str(tmp_path / "ckpt_other_mesh")
    shutil.copytree(ckpt, other_mesh)
    second = _run(recipe, tmp_path, "second", "--ckpt_dir", ckpt)
    assert second[0] == {"event": "resumed", "step": 12}
    resumed = {r["step"]: r["loss"] for r in second if "loss" in r}
    assert resumed == {s: losses[s] for s in (16, 20, 24)}  # the same batches, state and layout: the same losses

    # The TrainState saved under ZeRO over every device resumes onto a data x tensor-parallel mesh.
    import jax

    assert jax.device_count() >= 4, "tests/conftest.py provides 8 host devices"
    layout = ["--sharding", "1", "--dp", str(jax.device_count() // 2), "--mp", "2"]
    third = _run(recipe, tmp_path, "third", "--ckpt_dir", other_mesh, *layout)
    assert third[0] == {"event": "resumed", "step": 12}
    moved = {r["step"]: r["loss"] for r in third if "loss" in r}
    assert sorted(moved) == [16, 20, 24]
    # another layout sums in another order: equal within float32 rounding, not bitwise
    np.testing.assert_allclose([moved[s] for s in (16, 20, 24)], [losses[s] for s in (16, 20, 24)], rtol=0, atol=2e-5)


def test_config_flags_and_presets(recipe):
    cfg = recipe.parse_config(["--preset", "1b", "--mp", "2", "--scan_layers", "false"])
    assert cfg.seq_len == 2048 and cfg.mp == 2 and cfg.scan_layers is False and cfg.dtype == "bfloat16"
    with pytest.raises(SystemExit):
        recipe.parse_config(["--preset", "13b"])
    from pdx.models.llama import LlamaConfig

    tiny = LlamaConfig.from_preset("tiny")
    n = tiny.num_params() - tiny.vocab_size * tiny.hidden_size
    assert recipe.flops_per_token(tiny, 64) == 6 * n + 12 * tiny.num_hidden_layers * tiny.hidden_size * 64


def test_runs_under_pdx_launch_with_tensor_parallel(tmp_path):
    import subprocess

    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    log = tmp_path / "metrics.jsonl"
    cmd = [sys.executable, "-m", "pdx.cli", "launch", "--nproc_per_node", "2", "--devices_per_proc", "2",
           "--log_dir", str(tmp_path / "log"), RECIPE, "--steps", "8", "--log_every", "4", "--eval_every", "0",
           "--eval_batches", "1", "--mp", "2", "--batch_size", "8", "--seq_len", "32", "--layers", "1",
           "--log_file", str(log)]
    result = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in log.read_text().splitlines()]  # written by rank 0 only
    assert [r["step"] for r in records if "loss" in r] == [4, 8]
    assert any("perplexity" in r for r in records)


def test_bfloat16_run_checkpoints_float32_master_weights(recipe, tmp_path):
    """--dtype bfloat16 trains bf16 parameters with float32 masters (multi_precision): the checkpoint
    holds them beside float32 moments, and `pdx ckpt inspect` lists them under the parameters' names."""
    import subprocess

    ckpt = str(tmp_path / "ckpt_bf16")
    records = _run(recipe, tmp_path, "bf16", "--dtype", "bfloat16", "--ckpt_dir", ckpt, "--stop_after", "8")
    assert max(r["step"] for r in records if "loss" in r) == 8
    out = subprocess.run([sys.executable, "-m", "pdx.cli", "ckpt", "inspect", "--json", ckpt],
                         capture_output=True, text=True, check=True)
    arrays = {a["name"]: a for a in json.loads(out.stdout)["arrays"]}
    params = {n[len("params/"):]: a for n, a in arrays.items() if n.startswith("params/")}
    masters = {n[len("opt_state/masters/"):]: a for n, a in arrays.items() if n.startswith("opt_state/masters/")}
    assert params and set(masters) == set(params), (sorted(masters), sorted(params))
    for name, master in masters.items():
        assert master["dtype"] == "float32" and params[name]["dtype"] == "bfloat16", (name, master, params[name])
        assert master["shape"] == params[name]["shape"]
    moments = [a for n, a in arrays.items() if "/adam/mu/" in n or "/adam/nu/" in n]
    assert len(moments) == 2 * len(params) and all(a["dtype"] == "float32" for a in moments)
