"""pdx.onnx.export: ONNX files run by onnxruntime give pdx's outputs (batch 1 and 7 from one file)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest

import pdx
from pdx import nn
from pdx.static import InputSpec

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run_both(layer, path, spec, inputs_by_batch):
    """Export `layer`, then compare onnxruntime with pdx's compiled forward on each input list; returns the file."""
    layer.eval()
    file = pdx.onnx.export(layer, str(path), spec)
    assert file == pathlib.Path(str(path) + ".onnx") and file.is_file()
    onnx.checker.check_model(str(file))
    session = ort.InferenceSession(str(file), providers=["CPUExecutionProvider"])
    compiled = pdx.jit.to_static(layer)
    for inputs in inputs_by_batch:
        want = [np.asarray(o) for o in jax.tree.leaves(compiled(*[pdx.to_tensor(x) for x in inputs]))]
        got = session.run(None, {i.name: x for i, x in zip(session.get_inputs(), inputs)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            scale = float(np.abs(w).max())
            err = float(np.abs(g - w).max())
            assert err <= 1e-4 and err <= 1e-4 * max(scale, 1e-30) + 1e-12, (err, scale)
    return file


def _images(rng, shape):
    return [[rng.standard_normal((b, *shape)).astype("float32")] for b in (1, 7)]


def _ids(rng, vocab, seq):
    return [[rng.integers(0, vocab, (b, seq)).astype("int32")] for b in (1, 7)]


def test_mlp_has_a_symbolic_batch_dim(tmp_path, rng):
    mlp = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 3), nn.Softmax())
    file = _run_both(mlp, tmp_path / "mlp", [InputSpec([None, 4], "float32", "x")], _images(rng, (4,)))
    model = onnx.load(str(file))
    (x,), (y,) = model.graph.input, model.graph.output
    assert x.name == "x" and x.type.tensor_type.shape.dim[0].dim_param == "batch"
    assert y.type.tensor_type.shape.dim[0].dim_param == "batch"
    assert {t.name for t in model.graph.initializer} >= {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_cnn_conv_batchnorm_pools_groups(tmp_path, rng):
    cnn = nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU(), nn.MaxPool2D(2),
                        nn.Conv2D(8, 8, 3, stride=2, groups=2, dilation=1), nn.AvgPool2D(2), nn.Flatten(),
                        nn.Linear(8, 4))
    _run_both(cnn, tmp_path / "cnn", [InputSpec([None, 3, 12, 12], "float32", "x")], _images(rng, (3, 12, 12)))


def test_resnet18(tmp_path, rng):
    net = pdx.vision.models.resnet18(num_classes=10)
    _run_both(net, tmp_path / "r18", [InputSpec([None, 3, 32, 32], "float32", "x")], _images(rng, (3, 32, 32)))


def test_mobilenet_v3_small(tmp_path, rng):
    net = pdx.vision.models.mobilenet_v3_small(num_classes=10)
    _run_both(net, tmp_path / "mnv3", [InputSpec([None, 3, 32, 32], "float32", "x")], _images(rng, (3, 32, 32)))


class _Bert(nn.Layer):
    """A BERT-style encoder: token + position embeddings, 2 post-norm layers, tanh pooler, classifier."""

    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(50, 32), nn.Embedding(16, 32)
        self.norm = nn.LayerNorm(32)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu"), 2)
        self.head = nn.Linear(32, 3)

    def forward(self, ids):
        pos = pdx.arange(ids.shape[1]).unsqueeze(0)
        h = self.encoder(self.norm(self.tok(ids) + self.pos(pos)))
        return self.head(pdx.tanh(h[:, 0]))


class _LSTMClassifier(nn.Layer):
    """A bidirectional LSTM over embeddings, mean-pooled, softmax head."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.lstm = nn.LSTM(8, 12, direction="bidirect")
        self.fc = nn.Linear(24, 2)

    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        return nn.functional.softmax(self.fc(h.mean(axis=1)))


def test_bert_style_encoder(tmp_path, rng):
    _run_both(_Bert(), tmp_path / "bert", [InputSpec([None, 9], "int32", "ids")], _ids(rng, 50, 9))


def test_lstm_classifier_is_unrolled(tmp_path, rng):
    file = _run_both(_LSTMClassifier(), tmp_path / "lstm", [InputSpec([None, 9], "int32", "ids")], _ids(rng, 50, 9))
    assert "Loop" not in {n.op_type for n in onnx.load(str(file)).graph.node}  # 9 steps written out


def test_lstm_over_a_dynamic_length_is_refused(tmp_path):
    net = _LSTMClassifier()
    net.eval()
    with pytest.raises(pdx.onnx.UnsupportedPrimitiveError, match=r"scan over a dynamic length .*fixed size"):
        pdx.onnx.export(net, str(tmp_path / "lstm"), [InputSpec([None, None], "int32", "ids")])


def test_paddle_saved_resnet18_through_pdx_inference(paddle, tmp_path, rng):
    paddle.seed(0)
    layer = paddle.vision.models.resnet18(num_classes=10)
    layer.eval()
    paddle.jit.save(layer, str(tmp_path / "paddle" / "model"),
                    input_spec=[paddle.static.InputSpec([None, 3, 32, 32], "float32", "x")])
    net = pdx.inference.PaddleTranslatedLayer(tmp_path / "paddle")
    inputs = _images(rng, (3, 32, 32))
    file = _run_both(net, tmp_path / "r18", [InputSpec([None, 3, 32, 32], "float32", "x")], inputs)
    session = ort.InferenceSession(str(file), providers=["CPUExecutionProvider"])
    for (x,) in inputs:  # and Paddle's own forward on the same weights
        want = layer(paddle.to_tensor(x)).numpy()
        got = session.run(None, {"x": x})[0]
        assert float(np.abs(got - want).max()) <= 1e-4 * float(np.abs(want).max())


def test_cli_target_onnx(tmp_path):
    out = tmp_path / "art"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pdx.cli", "export", "pdx.nn:Softmax", "--input-spec",
                           "x:None,5:float32", "--target", "onnx", "--out", str(out), "--platforms", "cpu"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "model.onnx" in proc.stdout
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = ort.InferenceSession(str(out / "model.onnx")).run(None, {"x": x})[0]
    want = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(-1, keepdims=True), rtol=1e-6)
    assert pdx.export.load(out)(x).shape == (2, 5)  # the artifact beside it still loads


# ---- refusals ---------------------------------------------------------------------------------------------------

class _Sorter(nn.Layer):
    def forward(self, x):
        return pdx.sort(x, axis=-1)


def test_unsupported_primitive_names_itself_and_the_line(tmp_path):
    with pytest.raises(pdx.onnx.UnsupportedPrimitiveError, match=r"primitive 'sort'.*test_onnx_export.py.*Supported"):
        pdx.onnx.export(_Sorter(), str(tmp_path / "s"), [InputSpec([None, 4], "float32", "x")])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_is_refused_with_the_fix(tmp_path, dtype):
    net = nn.Linear(4, 2)
    net.to(dtype=dtype)
    with pytest.raises(pdx.onnx.OnnxExportError, match=rf"{dtype}.*layer.float\(\)"):
        pdx.onnx.export(net, str(tmp_path / "h"), [InputSpec([None, 4], dtype, "x")])


def test_bad_arguments(tmp_path):
    net = nn.Linear(4, 2)
    spec = [InputSpec([None, 4], "float32", "x")]
    with pytest.raises(ValueError, match=r"opset_version=9 .*13\.\."):
        pdx.onnx.export(net, str(tmp_path / "a"), spec, opset_version=9)
    with pytest.raises(ValueError, match=r"file_prefix is empty"):
        pdx.onnx.export(net, str(tmp_path) + "/", spec)
    with pytest.raises(TypeError, match=r"output_spec"):
        pdx.onnx.export(net, str(tmp_path / "a"), spec, output_spec=["y"])
    with pytest.raises(pdx.onnx.OnnxExportError, match=r"input_spec=None"):
        pdx.onnx.export(nn.Linear(4, 2), str(tmp_path / "a"))
    with pytest.raises(TypeError, match=r"input_spec\[0\]"):
        pdx.onnx.export(net, str(tmp_path / "a"), [True])


def test_input_spec_none_uses_the_last_to_static_call(tmp_path, rng):
    net = nn.Linear(4, 2)
    pdx.jit.to_static(net)
    x = rng.standard_normal((3, 4)).astype("float32")
    want = np.asarray(net(pdx.to_tensor(x)))
    file = pdx.onnx.export(net, str(tmp_path / "last"))
    session = ort.InferenceSession(str(file))
    assert [i.name for i in session.get_inputs()] == ["input"]  # Linear.forward's argument
    got = session.run(None, {"input": x})[0]
    np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("opset", [13, 18])
def test_other_opsets(tmp_path, rng, opset):
    net = nn.Sequential(nn.Conv2D(3, 4, 3), nn.ReLU(), nn.MaxPool2D(2), nn.Flatten(), nn.Linear(16, 2))
    net.eval()
    file = pdx.onnx.export(net, str(tmp_path / "o"), [InputSpec([None, 3, 6, 6], "float32", "x")],
                           opset_version=opset)
    assert onnx.load(str(file)).opset_import[0].version == opset
    x = rng.standard_normal((2, 3, 6, 6)).astype("float32")
    got = ort.InferenceSession(str(file)).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, np.asarray(net(pdx.to_tensor(x))), atol=1e-5)


class _DynamicShapes(nn.Layer):
    """Reshapes through batch * length, broadcasts to the runtime batch, slices with static bounds."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        import jax.numpy as jnp

        b, t, d = x.shape
        y = self.fc(x.reshape([b * t, d])).reshape([b, t, 6])
        return y[:, :, :3] + jnp.zeros((b, t, 1)) + jnp.arange(t, dtype=y.dtype)[None, :, None]


def test_symbolic_dim_arithmetic(tmp_path, rng):
    """Two dynamic dims (batch, dim1) combined at run time (batch * dim1) in one file."""
    net = _DynamicShapes()
    file = pdx.onnx.export(net, str(tmp_path / "dyn"), [InputSpec([None, None, 4], "float32", "x")])
    session = ort.InferenceSession(str(file))
    assert [d.dim_param for d in onnx.load(str(file)).graph.input[0].type.tensor_type.shape.dim[:2]] == ["batch", "dim1"]
    for b, t in ((1, 5), (7, 11)):
        x = rng.standard_normal((b, t, 4)).astype("float32")
        got = session.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, np.asarray(net(pdx.to_tensor(x))), atol=1e-5)


def test_branches_and_loops_become_if_and_loop(tmp_path, rng):
    """Python `if` / `while` on tensors, converted under pdx.jit to lax.cond / lax.while_loop, are written as
    ONNX If and Loop (no trip limit); inputs take both branches and loops of different lengths."""

    class Gated(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            if y.mean() > 0:
                y = pdx.tanh(y) * 2.0 + 1.0
            else:
                y = y - 3.0
            steps = pdx.zeros([], "float32")
            while y.abs().max() > 0.1:  # halves until small: the trip count depends on the data
                y = y * 0.5
                steps = steps + 1.0
            return y, steps

    pdx.seed(3)
    layer = Gated()
    inputs = [[np.abs(rng.standard_normal((b, 4))).astype("float32") * s] for b in (1, 7) for s in (1.0, -1.0, 40.0)]
    file = _run_both(layer, tmp_path / "gated", [InputSpec([None, 4], "float32", "x")], inputs)
    ops = {n.op_type for n in onnx.load(str(file)).graph.node}
    assert {"If", "Loop"} <= ops, ops
    session = ort.InferenceSession(str(file), providers=["CPUExecutionProvider"])
    steps = {float(session.run(None, {"x": x})[1]) for (x,) in inputs}
    assert len(steps) >= 2, steps  # the inputs scaled by 40 loop longer
