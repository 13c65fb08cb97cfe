"""pdx.quantization: observers and quanters against numpy and paddle, PTQ/QAT accuracy on digits,
integer programs in the exported StableHLO, weight-only int8/int4 on llama, and bad input."""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn
from pdx.quantization import PTQ, QAT, QuantConfig, fake_quant, weight_dequantize, weight_quantize
from pdx.quantization.observers import (
    AbsmaxObserver,
    KLObserver,
    MinMaxObserver,
    MovingAverageAbsmaxObserver,
    PercentileObserver,
    PerChannelAbsmaxObserver,
)
from pdx.quantization.quanters import FakeQuanterChannelWiseAbsMaxObserver, FakeQuanterWithAbsMaxObserver


class DigitsNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2D(16, 16, 3, padding=1, groups=16), nn.ReLU(), nn.MaxPool2D(2),   # depthwise
            nn.Conv2D(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def _loss(model, x, y):
    return F.cross_entropy(model(x), y)


def _train(model, x, y, epochs, lr, batch=64, seed=0):
    opt = pdx.optimizer.Adam(learning_rate=lr, parameters=model.parameters())

    @pdx.jit
    def step(model, opt, xb, yb):
        loss, grads = pdx.value_and_grad(_loss)(model, xb, yb)
        opt.step(grads)
        return loss

    rng = np.random.RandomState(seed)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x) - batch + 1, batch):
            idx = order[i:i + batch]
            step(model, opt, x[idx], y[idx])
    return model


def _accuracy(model, x, y):
    model.eval()
    logits = pdx.jit(lambda m, a: m(a))(model, x)
    return float(np.mean(np.argmax(np.asarray(logits), -1) == y))


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    y = d.target.astype(np.int32)
    return jnp.asarray(x[:1400]), y[:1400], jnp.asarray(x[1400:]), y[1400:]


@pytest.fixture(scope="module")
def trained(digits):
    xtr, ytr, _, _ = digits
    pdx.seed(0)
    return _train(DigitsNet(), xtr, ytr, epochs=12, lr=3e-3)


def test_fake_quant_matches_numpy_and_passes_gradients_straight_through():
    x = np.linspace(-2, 2, 41, dtype=np.float32)
    out = np.asarray(fake_quant(jnp.asarray(x), 1.5, bits=8))
    ref = np.clip(np.round(np.clip(x, -1.5, 1.5) / 1.5 * 127), -127, 127) * 1.5 / 127
    np.testing.assert_allclose(out, ref, atol=1e-6)
    g = jax.grad(lambda v: jnp.sum(fake_quant(v, 1.5, bits=4) * jnp.arange(41.0)))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), np.arange(41.0))
    w = np.random.RandomState(0).randn(3, 5).astype(np.float32)
    per = np.abs(w).max(axis=0)
    np.testing.assert_allclose(np.asarray(fake_quant(jnp.asarray(w), per, bits=8, axis=1)),
                               np.round(w / per * 127) * per / 127, atol=1e-6)


def test_observers_against_numpy():
    rng = np.random.RandomState(0)
    batches = [rng.randn(4, 6).astype(np.float32) * s for s in (1.0, 3.0, 0.5)]
    lin = nn.Linear(6, 6)

    def run(factory, layer=lin):
        obs = factory._instance(layer)
        for b in batches:
            np.testing.assert_array_equal(np.asarray(obs(jnp.asarray(b))), b)   # observers pass values through
        return obs

    allx = np.concatenate(batches)
    np.testing.assert_allclose(float(run(AbsmaxObserver()).scales()), np.abs(allx).max(), rtol=1e-6)
    state = accum = 0.0
    for b in batches:
        state, accum = 0.9 * state + 1, 0.9 * accum + np.abs(b).max()
    np.testing.assert_allclose(float(run(MovingAverageAbsmaxObserver()).scales()), accum / state, rtol=1e-6)
    obs = run(MinMaxObserver())
    params = obs.quant_params()
    lo, hi = min(allx.min(), 0), max(allx.max(), 0)
    np.testing.assert_allclose(float(params.step), (hi - lo) / 255, rtol=1e-6)
    codes = np.clip(np.round(allx / float(params.step)) + int(params.zero_point), -128, 127)
    np.testing.assert_allclose((codes - int(params.zero_point)) * float(params.step), allx, atol=float(params.step))
    # Weights: per output channel ([in, out] Linear -> axis 1).
    w = np.asarray(lin.weight.get_value())
    per = PerChannelAbsmaxObserver()._instance(lin)
    per(jnp.asarray(w))
    np.testing.assert_allclose(np.asarray(per.scales()), np.abs(w).max(axis=0), rtol=1e-6)
    assert per.quant_axis() == 1
    # Histograms: re-binning as the range grows keeps every count; the percentile is within one bin.
    big = rng.randn(20000).astype(np.float32)
    pct = PercentileObserver(percentile=0.99, bins=1024)._instance(None)
    for chunk in np.array_split(big * np.linspace(0.5, 1.0, 20000), 5):
        pct(jnp.asarray(chunk))
    assert float(pct._hist.get_value().sum()) == 20000
    ref = np.quantile(np.abs(big * np.linspace(0.5, 1.0, 20000)), 0.99)
    width = float(pct._hist_max.get_value()) / 1024
    assert abs(float(pct.scales()) - ref) <= 3 * width + 0.02 * ref
    kl = KLObserver(bins=512)._instance(None)
    kl(jnp.asarray(big))
    t = float(kl.scales())
    assert 0.3 * np.abs(big).max() < t <= np.abs(big).max() + 1e-6   # clips the tail, keeps the bulk


def test_fake_quanter_matches_paddle(paddle):
    import paddle.quantization.quanters as pq

    rng = np.random.RandomState(1)
    batches = [rng.randn(3, 7).astype(np.float32) * s for s in (1.0, 2.0, 0.7, 1.3)]
    ours = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)._instance(nn.Linear(7, 7))
    theirs = pq.FakeQuanterWithAbsMaxObserver(moving_rate=0.9)._instance(paddle.nn.Linear(7, 7))
    ours.train()
    theirs.train()
    for b in batches:
        out = np.asarray(ours(jnp.asarray(b)))
        ref = theirs(paddle.to_tensor(b)).numpy()
        np.testing.assert_allclose(out, ref, atol=1e-5)
        np.testing.assert_allclose(float(ours.scales()), float(theirs.scales().numpy().reshape(-1)[0]), rtol=1e-5)
    ours.eval()
    theirs.eval()
    b = rng.randn(3, 7).astype(np.float32) * 5
    np.testing.assert_allclose(np.asarray(ours(jnp.asarray(b))), theirs(paddle.to_tensor(b)).numpy(), atol=1e-5)


def test_ptq_and_qat_int8_keep_digits_accuracy(digits, trained):
    xtr, ytr, xte, yte = digits
    fp32 = _accuracy(trained, xte, yte)
    assert fp32 > 0.9, fp32

    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=PerChannelAbsmaxObserver()))
    calib = ptq.quantize(trained)
    assert calib is not trained and type(calib.features[2]).__name__ == "QuantedConv"
    run = pdx.jit(lambda m, a: m(a))
    for i in range(0, 256, 64):                       # calibration batches, compiled: observers update as buffers
        run(calib, xtr[i:i + 64])
    int8 = ptq.convert(calib)
    assert int8.features[2].weight.get_value().dtype == jnp.int8
    ptq_acc = _accuracy(int8, xte, yte)

    qat = QAT(QuantConfig(activation=FakeQuanterWithAbsMaxObserver(moving_rate=0.9),
                          weight=FakeQuanterChannelWiseAbsMaxObserver()))
    qmodel = _train(qat.quantize(trained), xtr, ytr, epochs=2, lr=3e-4, seed=1)
    qat_acc = _accuracy(qat.convert(qmodel), xte, yte)
    print(f"digits: fp32 {fp32:.4f}  PTQ int8 {ptq_acc:.4f}  QAT int8 {qat_acc:.4f}")
    assert ptq_acc >= fp32 - 0.01
    assert qat_acc >= fp32 - 0.005


def test_converted_model_exports_integer_program(tmp_path, digits, trained):
    from pdx.jit import InputSpec

    _, _, xte, _ = digits
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=PerChannelAbsmaxObserver()))
    calib = ptq.quantize(trained)
    calib(xte[:128])
    int8 = ptq.convert(calib)
    spec = [InputSpec([None, 1, 8, 8], "float32", "image")]
    pdx.export.export(int8, tmp_path / "int8", spec)
    pdx.export.export(copy.deepcopy(trained).eval(), tmp_path / "fp32", spec)
    program = (tmp_path / "int8" / "program.jaxexport").read_bytes()
    from jax import export as jax_export

    mlir = jax_export.deserialize(bytearray(program)).mlir_module()
    conv_lines = [l for l in mlir.splitlines() if "stablehlo.convolution" in l]
    dot_lines = [l for l in mlir.splitlines() if "stablehlo.dot_general" in l]
    assert conv_lines and all("xi8>" in l and "-> tensor<" in l and "xi32>" in l for l in conv_lines), conv_lines
    assert dot_lines and all("xi8>" in l and "xi32>" in l for l in dot_lines), dot_lines
    from safetensors.numpy import load_file

    stored = {k: load_file(str(tmp_path / k / "params.safetensors")) for k in ("int8", "fp32")}
    data = {k: sum(a.nbytes for a in v.values()) for k, v in stored.items()}
    assert {a.dtype for n, a in stored["int8"].items() if n.endswith(".weight")} == {np.dtype(np.int8)}
    print(f"artifact tensor bytes: fp32 {data['fp32']}, int8 {data['int8']} ({data['fp32'] / data['int8']:.2f}x)")
    assert data["fp32"] / data["int8"] >= 3.5, data
    xla = pdx.export.load(tmp_path / "int8")
    np.testing.assert_allclose(np.asarray(xla(np.asarray(xte[:16]))), np.asarray(int8(xte[:16])), atol=1e-4)


def test_weight_only_int8_int4_scales_and_llama_generation(paddle):
    w = np.random.RandomState(0).randn(64, 32).astype(np.float32)
    # Paddle's scale rule (its CPU kernel emits a CUDA layout, so only scales are comparable).
    q_pd, s_pd = paddle.nn.quant.weight_quantize(paddle.to_tensor(w).astype("float16"), algo="weight_only_int8", arch=80)
    _, s8 = weight_quantize(jnp.asarray(w), "weight_only_int8")
    np.testing.assert_allclose(np.asarray(s8), s_pd.numpy().astype(np.float32), rtol=2e-3)
    for algo, tol in (("weight_only_int8", 1 / 127), ("weight_only_int4", 1 / 7)):
        for group in (-1, 32):
            codes, scale = weight_quantize(jnp.asarray(w), algo, group_size=group)
            assert codes.dtype == jnp.int8 and codes.shape == ((32, 64) if algo.endswith("8") else (32, 32))
            back = np.asarray(weight_dequantize(codes, scale, algo, group_size=group))
            bound = np.abs(w).max(axis=0) if group == -1 else np.repeat(np.abs(w.reshape(2, 32, 32)).max(1), 32, 0)
            assert np.all(np.abs(back - w) <= bound * tol * 0.57 + 1e-6)   # half a step + float16 scale rounding

    from pdx.models.llama import LlamaForCausalLM, generate
    from pdx.quantization import weight_only_quantize

    pdx.seed(0)
    model = LlamaForCausalLM("tiny")
    ids = jnp.asarray(np.random.RandomState(1).randint(0, 256, (2, 8)))
    ref = np.asarray(generate(model, ids, 6))

    def linear_bytes(m):
        return sum(v.get_value().nbytes for n, v in m.named_buffers() if n.endswith("weight")) + \
            sum(p.get_value().nbytes for n, p in m.named_parameters() if "proj" in n)

    bf16_bytes = sum(p.get_value().size * 2 for n, p in model.named_parameters() if "proj" in n)
    q8 = weight_only_quantize(copy.deepcopy(model), "weight_only_int8")
    q4 = weight_only_quantize(copy.deepcopy(model), "weight_only_int4", group_size=16)
    assert bf16_bytes / linear_bytes(q8) >= 1.9
    assert bf16_bytes / linear_bytes(q4) >= 3.0          # int4 codes + one float32 scale per 16 rows
    out8 = np.asarray(generate(q8, ids, 6))
    np.testing.assert_array_equal(out8[:, :10], ref[:, :10])   # greedy: the first generated tokens agree
    logits = np.asarray(model(ids))
    assert np.abs(np.asarray(q4(ids)) - logits).max() < 0.25 * np.abs(logits).max()


def test_bad_input_errors(digits, trained):
    config = QuantConfig(activation=AbsmaxObserver(), weight=PerChannelAbsmaxObserver())
    with pytest.raises(ValueError, match=r"supported layer types: \[.*Linear"):
        config.add_type_config(nn.LSTM, activation=AbsmaxObserver())
    named = QuantConfig()
    named.add_name_config("features.1", activation=AbsmaxObserver())       # a ReLU
    with pytest.raises(ValueError, match="features.1.*ReLU.*supported layer types"):
        PTQ(named).quantize(trained)
    ptq = PTQ(config)
    with pytest.raises(RuntimeError, match="before calibration.*PTQ: run calibration batches"):
        ptq.convert(ptq.quantize(trained))                                  # zero calibration batches
    with pytest.raises(ValueError, match="no quantized layer"):
        ptq.convert(trained)
    with pytest.raises(ValueError, match="no layer to quantize"):
        PTQ(QuantConfig()).quantize(trained)
    with pytest.raises(ValueError, match="algo='int3'"):
        weight_quantize(jnp.ones((4, 4)), "int3")
    with pytest.raises(ValueError, match="group_size=3 must divide"):
        weight_quantize(jnp.ones((4, 4)), group_size=3)


def test_cli_export_quantize_ptq_int8(tmp_path, monkeypatch, capsys, digits):
    import pdx.cli
    from jax import export as jax_export

    _, _, xte, _ = digits
    np.savez(tmp_path / "calib.npz", image=np.asarray(xte[:64]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    base = ["export", "recipes.quickstart:LeNet", "--input-spec", "image:None,1,8,8:float32"]
    assert pdx.cli.main([*base, "--quantize", "ptq-int8", "--calib", "calib.npz", "--out", "int8"]) == 0
    mlir = jax_export.deserialize(bytearray((tmp_path / "int8" / "program.jaxexport").read_bytes())).mlir_module()
    assert "xi8>" in mlir and "stablehlo.convolution" in mlir
    assert pdx.cli.main([*base, "--quantize", "weight-only-int4", "--out", "w4"]) == 0
    capsys.readouterr()
    assert pdx.cli.main([*base, "--quantize", "ptq-int8", "--out", "bad"]) == 1
    assert "needs --calib FILE" in capsys.readouterr().err
    np.savez(tmp_path / "wrong.npz", pixels=np.asarray(xte[:4]))
    assert pdx.cli.main([*base, "--quantize", "ptq-int8", "--calib", "wrong.npz", "--out", "bad"]) == 1
    assert "inputs are named ['image']" in capsys.readouterr().err


def test_transposed_grouped_conv_1d_conv_and_embedding_convert_close_to_float():
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(20, 8, padding_idx=0)
            self.conv1d = nn.Conv1D(8, 6, 3, padding=1)
            self.up = nn.Conv2DTranspose(6, 4, 3, stride=2, groups=2)
            self.nhwc = nn.Conv2D(4, 4, 3, padding=1, padding_mode="reflect", data_format="NHWC")

        def forward(self, ids):
            h = self.conv1d(self.embed(ids).transpose([0, 2, 1]))          # (B, 6, L)
            h = self.up(h[:, :, None, :])                                   # (B, 4, 3, 2L+1)
            return self.nhwc(h.transpose([0, 2, 3, 1]))

    pdx.seed(0)
    net = Net().eval()
    ids = jnp.asarray(np.random.RandomState(0).randint(0, 20, (4, 7)))
    ref = np.asarray(net(ids))
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=PerChannelAbsmaxObserver()))
    calib = ptq.quantize(net)
    calib(ids)
    q = ptq.convert(calib)
    assert [type(getattr(q, n)).__name__ for n in ("embed", "conv1d", "up", "nhwc")] == \
        ["QuantizedEmbedding", "QuantizedConv", "QuantizedConv", "QuantizedConv"]
    assert q.up.weight.get_value().dtype == jnp.int8
    out = np.asarray(q(ids))
    assert np.abs(out - ref).max() < 0.03 * np.abs(ref).max(), np.abs(out - ref).max() / np.abs(ref).max()
    np.testing.assert_array_equal(np.asarray(q.embed(jnp.zeros((1, 2), jnp.int32))), 0.0)   # padding row
