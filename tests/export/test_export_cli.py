"""`pdx export` as a real subprocess: a factory from a user module, weights
from a file, IREE targets, the printed summary, and one-line failures."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import safetensors.numpy

import pdx
import pdx.cli
import pdx.export

FACTORY = textwrap.dedent("""
    import pdx
    from pdx import nn

    def make_mlp():
        pdx.seed(7)
        return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
""")


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pdx.cli", "export", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "usermodels.py").write_text(FACTORY)
    return d


def test_export_with_weights_and_iree_target(workdir, rng):
    sys.path.insert(0, str(workdir))
    try:
        import usermodels
    finally:
        sys.path.remove(str(workdir))
    model = usermodels.make_mlp()
    weights = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in model.state_dict().items()}
    safetensors.numpy.save_file(weights, str(workdir / "tuned.safetensors"))  # as another framework writes it

    out = run_cli("usermodels:make_mlp", "--input-spec", "features:None,6:float32", "--weights", "tuned.safetensors",
                  "--target", "xla", "--target", "iree-llvm-cpu", "--iree-batch-split", "--iree-batch-sizes", "1,2",
                  "--out", "art", cwd=workdir)
    assert out.returncode == 0, out.stderr
    assert "exported sequential -> art" in out.stdout
    assert "inputs   features float32[batch, 6]" in out.stdout
    assert "params   83 (83 trainable) in 4 tensors" in out.stdout
    assert "dot_general" in out.stdout and "iree-llvm-cpu.vmfb" in out.stdout

    x = rng.standard_normal((5, 6)).astype(np.float32)
    want = np.maximum(x @ weights["0.weight"] + weights["0.bias"], 0) @ weights["2.weight"] + weights["2.bias"]
    for runtime in ("xla", "iree"):
        np.testing.assert_allclose(pdx.export.load(workdir / "art", runtime=runtime)(x), want, rtol=1e-4, atol=1e-4)
    buckets = pdx.export.load(workdir / "art", runtime="iree").manifest["targets"]["iree-llvm-cpu"]["buckets"]
    assert [b["batch"] for b in buckets] == [1, 2]


@pytest.mark.parametrize("args, code, message", [
    (["nomodule:make", "--input-spec", "None,6"], 1, "ModuleNotFoundError: No module named 'nomodule'"),
    (["usermodels:missing", "--input-spec", "None,6"], 1, "AttributeError"),
    (["usermodels:make_mlp", "--input-spec", "x:None,six:float32"], 2, "is not a list of dims"),
    (["usermodels:make_mlp", "--input-spec", "x:None,6:float99"], 2, "unknown dtype"),
    (["usermodels:make_mlp", "--input-spec", "None,7"], 1, "Error"),
    (["usermodels:make_mlp", "--input-spec", "None,6", "--weights", "nothere.pdparams"], 1, "no file"),
])
def test_failures_exit_nonzero_with_one_line(workdir, args, code, message, monkeypatch, capsys):
    # in-process (the subprocess path is covered above): pdx.cli.main is what the console script runs
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert pdx.cli.main(["export", *args, "--out", "bad"]) == code
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (workdir / "bad").exists()


def test_export_with_paddle_pdparams_matches_paddle(workdir, paddle, rng, monkeypatch, capsys):
    paddle.seed(3)
    ref = paddle.nn.Sequential(paddle.nn.Linear(6, 8), paddle.nn.ReLU(), paddle.nn.Linear(8, 3))
    paddle.save(ref.state_dict(), str(workdir / "paddle.pdparams"))
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert pdx.cli.main(["export", "usermodels:make_mlp", "--input-spec", "x:None,6", "--weights", "paddle.pdparams",
                         "--out", "from_paddle", "--platforms", "cpu"]) == 0
    assert "exported sequential -> from_paddle" in capsys.readouterr().out
    x = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(pdx.export.load(workdir / "from_paddle")(x), ref(paddle.to_tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_export_from_model_save_prefix(workdir, rng, monkeypatch, capsys):
    import pdx.nn.functional as F

    net = pdx.nn.Sequential(pdx.nn.Linear(6, 8), pdx.nn.ReLU(), pdx.nn.Linear(8, 3))  # other weights than make_mlp
    trainer = pdx.Model(net)
    trainer.prepare(pdx.optimizer.Adam(parameters=net.parameters()), F.cross_entropy)
    trainer.save(str(workdir / "ckpt" / "final"))
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert pdx.cli.main(["export", "usermodels:make_mlp", "--input-spec", "x:None,6", "--weights", "ckpt/final",
                         "--out", "from_fit", "--platforms", "cpu"]) == 0, capsys.readouterr().err
    x = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(pdx.export.load(workdir / "from_fit")(x), np.asarray(net(x)), rtol=1e-5, atol=1e-5)


def test_export_a_model_paddle_saved(workdir, paddle, rng):
    """`pdx export paddle:DIR`: a CNN saved by paddle.jit.save (a None batch) becomes an artifact whose XLA and
    IREE programs take batch 1 and 3 without extra flags and equal Paddle Inference on the same files."""
    from paddle.static import InputSpec

    nn = paddle.nn
    paddle.seed(5)
    net = nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU(), nn.MaxPool2D(2),
                        nn.Conv2D(8, 4, 3), nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(4, 5))
    net.eval()
    paddle.jit.save(net, str(workdir / "paddle_cnn" / "model"), input_spec=[InputSpec([None, 3, 12, 12], "float32",
                                                                                        "image")])
    predictor = paddle.inference.create_predictor(paddle.inference.Config(str(workdir / "paddle_cnn" / "model.json"),
                                                                          str(workdir / "paddle_cnn" / "model.pdiparams")))
    out = run_cli("paddle:paddle_cnn", "--target", "xla", "--target", "iree-llvm-cpu", "--out", "from_paddle_save",
                  cwd=workdir)
    assert out.returncode == 0, out.stderr
    assert "inputs   image float32[batch, 3, 12, 12]" in out.stdout, out.stdout
    for batch in (1, 3):
        x = rng.standard_normal((batch, 3, 12, 12)).astype(np.float32)
        handle = predictor.get_input_handle("image")
        handle.reshape(list(x.shape))
        handle.copy_from_cpu(x)
        predictor.run()
        want = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
        for runtime in ("xla", "iree"):
            got = np.asarray(pdx.export.load(workdir / "from_paddle_save", runtime=runtime)(x))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{runtime} batch {batch}")
    bad = run_cli("paddle:nothing_here", "--out", "bad_paddle", cwd=workdir)
    assert bad.returncode == 2 and "holds no model saved by Paddle" in bad.stderr
