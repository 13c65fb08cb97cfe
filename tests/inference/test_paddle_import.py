"""Paddle-saved models (paddle 3.3.1 `paddle.jit.save`, PIR JSON) run in pdx as Paddle Inference runs them."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import pdx
from pdx import inference

MODELS = ("resnet18", "mobilenet_v3_small", "shufflenet_v2_x0_25", "bert", "bilstm")


def test_predictor_outputs_equal_paddle_inference(saved_models, paddle_outputs, example_input):
    worst = {}
    for name in MODELS:
        path = saved_models[name]
        predictor = inference.create_predictor(inference.Config(str(path / "model.json"),
                                                                str(path / "model.pdiparams")))
        assert predictor.get_input_names() == (["ids"] if name in ("bert", "bilstm") else ["x"])
        assert predictor.get_output_names() == ["fetch_name_0"]
        for batch in (1, 7):
            (out,) = predictor.run([example_input(name, batch)])
            want = paddle_outputs[name, batch]
            assert out.shape == want.shape, (name, batch)
            worst[name, batch] = float(np.abs(np.asarray(out) - want).max())
    assert max(worst.values()) < 1e-4, worst


def test_translated_layer_eager_jit_and_jit_load(saved_models, paddle_outputs, example_input):
    net = pdx.jit.load(str(saved_models["bert"] / "model"))
    assert isinstance(net, inference.PaddleTranslatedLayer)
    ids = example_input("bert", 7)
    eager = net(ids)
    compiled = pdx.jit(net)(ids)
    np.testing.assert_allclose(np.asarray(eager), paddle_outputs["bert", 7], atol=1e-5)
    np.testing.assert_allclose(np.asarray(compiled), paddle_outputs["bert", 7], atol=1e-5)
    # Paddle's saved names (its global counter numbers them, so the number depends on what was built before)
    assert "tok.w_0" not in net.state_dict() and any(k.startswith("embedding_") and k.endswith(".w_0")
                                                     for k in net.state_dict())
    with pytest.raises(ValueError, match="takes"):
        net(np.zeros((2, 3, 4), "int64"))


def _cnn(paddle):
    nn = paddle.nn
    return nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU(), nn.MaxPool2D(2),
                         nn.Conv2D(8, 8, 3, stride=2, groups=2), nn.BatchNorm2D(8), nn.Hardswish(),
                         nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(8, 5))


def _sgd_steps(net, x, labels, *, steps, lr):
    """SGD on the imported program's nnx.Params (batch-norm statistics are Buffers); the losses, net updated."""
    graphdef, params, rest = nnx.split(net, nnx.Param, ...)
    y = jnp.asarray(labels, jnp.int32)

    def loss_fn(p):
        logits = nnx.merge(graphdef, p, rest)(x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def step(params):
        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    losses = []
    for _ in range(steps):
        params, loss = step(params)
        losses.append(float(loss))
    nnx.update(net, params)
    return losses


def test_finetune_steps_equal_paddle_dygraph(paddle, tmp_path, text_models):
    """SGD on the imported program equals SGD on the same Paddle layer (eval-mode batch norm), step by step."""
    from paddle.static import InputSpec

    paddle.seed(1)
    rng = np.random.default_rng(0)
    cases = {"cnn": (_cnn(paddle), InputSpec([None, 3, 12, 12], "float32", "x"),
                     rng.standard_normal((4, 3, 12, 12)).astype("float32")),
             "bert": (text_models[0](), InputSpec([None, None], "int64", "ids"),
                      rng.integers(0, 100, (4, 6)).astype("int64"))}
    for name, (layer, spec, x) in cases.items():
        layer.eval()
        paddle.jit.save(layer, str(tmp_path / name / "model"), input_spec=[spec])
        net = pdx.jit.load(str(tmp_path / name))
        labels = rng.integers(0, 3, (4,))
        # Paddle: three SGD steps on the dygraph layer, cross-entropy on fixed labels
        opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
        paddle_losses = []
        for _ in range(3):
            loss = paddle.nn.functional.cross_entropy(layer(paddle.to_tensor(x)), paddle.to_tensor(labels))
            loss.backward()
            opt.step()
            opt.clear_grad()
            paddle_losses.append(float(loss))
        pdx_losses = _sgd_steps(net, x, labels, steps=3, lr=0.1)
        np.testing.assert_allclose(pdx_losses, paddle_losses, atol=1e-4, err_msg=name)
        assert pdx_losses[-1] < pdx_losses[0], name
        got = net.state_dict()
        for p in layer.parameters():
            np.testing.assert_allclose(np.asarray(got[p.name]), p.numpy(), atol=1e-4, err_msg=f"{name} {p.name}")


DEMO = """
import numpy as np
{import_line}

config = paddle_infer.Config("{model}/model.json", "{model}/model.pdiparams")
config.disable_gpu()
config.enable_mkldnn()
config.set_cpu_math_library_num_threads(2)
config.switch_ir_optim(True)
predictor = paddle_infer.create_predictor(config)
input_names = predictor.get_input_names()
input_handle = predictor.get_input_handle(input_names[0])
fake_input = np.load("{inp}")
input_handle.reshape(list(fake_input.shape))
input_handle.copy_from_cpu(fake_input)
predictor.run()
output_names = predictor.get_output_names()
output_handle = predictor.get_output_handle(output_names[0])
output_data = output_handle.copy_to_cpu()
print(output_handle.shape(), output_names)
np.save("{out}", output_data)
"""


def test_paddle_inference_demo_runs_with_the_import_changed(saved_models, paddle_outputs, example_input, tmp_path):
    """Paddle Inference's demo flow (the same calls the paddle_outputs fixture makes on Paddle) under pdx."""
    np.save(tmp_path / "input.npy", example_input("bilstm", 7))
    script = tmp_path / "demo.py"
    script.write_text(DEMO.format(import_line="import pdx.inference as paddle_infer", model=saved_models["bilstm"],
                                  inp=tmp_path / "input.npy", out=tmp_path / "out.npy"))
    done = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GLOG_minloglevel": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[7, 2] ['fetch_name_0']" in done.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), paddle_outputs["bilstm", 7], atol=1e-5)


def test_cpu_predictor_runs_convolutions_on_onednn_and_disable_mkldnn_on_xla(saved_models, paddle_outputs,
                                                                             example_input):
    """Paddle's default CPU config (oneDNN on) compiles onto pdx's kept-weight oneDNN convolutions with BatchNorm
    folded; disable_mkldnn() leaves them to XLA. Both equal Paddle Inference, and neither falls back."""
    from pdx import _lowering
    from pdx import kernels as K

    path = saved_models["resnet18"]
    runs = {}
    for onednn in (True, False):
        config = inference.Config(str(path / "model.json"), str(path / "model.pdiparams"))
        assert config.mkldnn_enabled() and config.onednn_enabled()
        if not onednn:
            config.disable_mkldnn()
            assert not config.mkldnn_enabled() and "onednn" in config.summary()
        predictor = inference.create_predictor(config)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no silent fallback to XLA
            runs[onednn] = {batch: predictor.run([example_input("resnet18", batch)])[0] for batch in (1, 7)}
        engine = predictor._engine
        x = jnp.asarray(example_input("resnet18", 1))
        if onednn:
            assert engine.native is not None and engine.compiled_count() == 2
            with _lowering.native():
                text = engine.native.lower(engine.params, engine.token, [x]).as_text()
            assert "pdx_onednn_conv_inference" in text, "no kept-weight oneDNN convolution"
            assert "convolution" not in text, "a convolution was left to XLA"
        else:
            assert engine.native is None
            with _lowering.portable():
                text = engine.compiled.lower(engine.params, [x]).as_text()
            assert not any(t in text for t in K.onednn.TARGETS) and "convolution" in text
        for batch, out in runs[onednn].items():
            np.testing.assert_allclose(out, paddle_outputs["resnet18", batch], atol=1e-4, rtol=1e-4)


def test_predictor_api_surface(saved_models, paddle_outputs, example_input):
    config = inference.Config(str(saved_models["bilstm"]))
    config.enable_memory_optim()
    config.enable_tensorrt_engine()
    config.switch_ir_optim(False)  # op by op
    assert not config.ir_optim() and "enable_tensorrt_engine" in config.summary()
    pool = inference.PredictorPool(config, 2)
    a, b = pool.retrieve(0), pool.retrieve(1)
    assert a._engine is b._engine
    x = example_input("bilstm", 7)
    h = b.get_input_handle("ids")
    h.share_external_data(jnp.asarray(x, jnp.int32))
    assert b.run() is True
    out = b.get_output_handle("fetch_name_0")
    assert out.shape() == [7, 2] and out.type() is inference.DataType.FLOAT32
    np.testing.assert_allclose(out.copy_to_cpu(), paddle_outputs["bilstm", 7], atol=1e-5)
    c = a.clone()
    with pytest.raises(RuntimeError, match="hold no data"):
        c.run()
    with pytest.raises(ValueError, match="does not fit"):
        c.get_input_handle("ids").reshape([2, 3, 4])
    with pytest.raises(KeyError, match="the inputs are"):
        c.get_input_handle("x")
    assert inference.get_num_bytes_of_data_type(inference.DataType.INT64) == 8
    assert inference.get_version().startswith("version:")
    assert inference.PrecisionType.Half.name == "Half" and inference.PlaceType.CPU.name == "CPU"


def test_convert_to_mixed_precision_halves_weights_and_paddle_runs_it(paddle, saved_models, paddle_outputs,
                                                                      example_input, tmp_path):
    src = saved_models["bert"]
    inference.convert_to_mixed_precision(str(src / "model.json"), str(src / "model.pdiparams"),
                                         str(tmp_path / "model.json"), str(tmp_path / "model.pdiparams"),
                                         inference.PrecisionType.Half, inference.PlaceType.CPU,
                                         black_list={"embedding"})
    stored = inference.PaddleProgram(tmp_path / "model.json", tmp_path / "model.pdiparams").values
    kinds = {(name.split("_")[0], str(v.dtype)) for name, v in stored.items()}
    # black-listed embeddings and normalization parameters stay float32, linear weights are halved
    assert kinds == {("embedding", "float32"), ("layer", "float32"), ("linear", "float16")}, kinds
    ids = example_input("bert", 7)
    (ours,) = inference.create_predictor(inference.Config(str(tmp_path))).run([ids])
    config = paddle.inference.Config(str(tmp_path / "model.json"), str(tmp_path / "model.pdiparams"))
    config.disable_gpu()
    config.disable_glog_info()
    theirs = paddle.inference.create_predictor(config)
    handle = theirs.get_input_handle("ids")
    handle.copy_from_cpu(ids)
    theirs.run()
    np.testing.assert_allclose(np.asarray(ours), theirs.get_output_handle("fetch_name_0").copy_to_cpu(), atol=1e-4)
    np.testing.assert_allclose(np.asarray(ours), paddle_outputs["bert", 7], atol=1e-2)
    with pytest.raises(ValueError, match="keep_io_types"):
        inference.convert_to_mixed_precision(str(src / "model.json"), str(src / "model.pdiparams"), "a", "b",
                                             inference.PrecisionType.Half, inference.PlaceType.CPU,
                                             keep_io_types=False)


def test_pdx_artifacts_run_in_the_predictor_and_jit_load_keeps_them(tmp_path):
    net = pdx.nn.Linear(4, 2)
    path = pdx.jit.save(net, tmp_path / "net", [pdx.jit.InputSpec([None, 4], "float32", "x")])
    x = np.ones((3, 4), np.float32)
    out = inference.create_predictor(inference.Config(str(path))).run([x])[0]
    np.testing.assert_allclose(out, np.asarray(net(x)), rtol=1e-6, atol=1e-6)
    assert type(pdx.jit.load(path)).__name__ == "TranslatedLayer"


def test_stacked_bidirectional_gru_and_simple_rnn_equal_paddle(paddle, tmp_path):
    from paddle.static import InputSpec

    nn = paddle.nn

    class Recurrent(nn.Layer):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 8)
            self.gru = nn.GRU(8, 12, num_layers=2, direction="bidirect")
            self.rnn = nn.SimpleRNN(24, 6)

        def forward(self, ids):
            h, _ = self.gru(self.emb(ids))
            h, _ = self.rnn(h)
            return h[:, -1]

    paddle.seed(2)
    layer = Recurrent()
    layer.eval()
    paddle.jit.save(layer, str(tmp_path / "model"), input_spec=[InputSpec([None, None], "int64", "ids")])
    ids = np.random.default_rng(0).integers(0, 50, (3, 7)).astype("int64")
    (out,) = inference.create_predictor(inference.Config(str(tmp_path))).run([ids])
    np.testing.assert_allclose(np.asarray(out), layer(paddle.to_tensor(ids)).numpy(), atol=1e-5)
