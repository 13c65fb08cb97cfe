"""Round trips through an exported artifact: XLA runtime, IREE host runtime
and pdx.jit.load all match the eager model; the manifest describes the program."""

import json
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.export
from pdx import nn
from pdx.jit import InputSpec


class SmallCNN(nn.Layer):
    """LeNet-like: conv/BN/ReLU/pool twice, then two linears."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, padding=1), nn.BatchNorm2D(6), nn.ReLU(), nn.MaxPool2D(2),
            nn.Conv2D(6, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(8 * 2 * 2, 16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, image):
        return self.classifier(self.features(image))


@pytest.fixture(scope="module")
def cnn_artifact(tmp_path_factory):
    pdx.seed(3)
    net = SmallCNN()
    # Non-trivial BatchNorm statistics, so buffers matter.
    net.features[1]._mean.set_value(jnp.linspace(-0.5, 0.5, 6))
    net.features[1]._variance.set_value(jnp.linspace(0.5, 2.0, 6))
    net.eval()
    path = pdx.export.export(net, tmp_path_factory.mktemp("cnn") / "cnn",
                             [InputSpec([None, 1, 8, 8], "float32", "image")],
                             targets=("xla", "iree-llvm-cpu", "iree-arm64-android"), iree={"batch_split": True})
    return net, path


@pytest.mark.parametrize("batch", [1, 3, 17])
def test_xla_runtime_matches_eager_for_any_batch(cnn_artifact, rng, batch):
    net, path = cnn_artifact
    predictor = pdx.export.load(path, runtime="xla")
    x = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(predictor(x), np.asarray(net(x)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch", [1, 3, 17])
def test_iree_host_runtime_matches_eager(cnn_artifact, rng, batch):
    net, path = cnn_artifact
    predictor = pdx.export.load(path, runtime="iree")
    x = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(predictor(x), np.asarray(net(x)), rtol=1e-4, atol=1e-4)


def test_jit_load_gives_translated_layer_equal_to_eager(cnn_artifact, rng):
    net, path = cnn_artifact
    layer = pdx.jit.load(path)
    assert isinstance(layer, pdx.jit.TranslatedLayer) and isinstance(layer, pdx.nn.Layer)
    assert list(layer.state_dict()) == sorted(net.state_dict(), key=list(layer.state_dict()).index)
    assert set(layer.state_dict()) == set(net.state_dict())
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(np.asarray(layer.state_dict()[name]), np.asarray(value))
    x = jnp.asarray(rng.standard_normal((5, 1, 8, 8)).astype(np.float32))
    np.testing.assert_allclose(np.asarray(layer(x)), np.asarray(net(x)), rtol=1e-5, atol=1e-5)
    compiled = pdx.jit(lambda v: layer(v) * 2)
    np.testing.assert_allclose(np.asarray(compiled(x)), 2 * np.asarray(net(x)), rtol=1e-5, atol=1e-5)


def test_translated_layer_gradients_match_eager(cnn_artifact, rng):
    net, path = cnn_artifact
    layer = pdx.jit.load(path)
    x = jnp.asarray(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
    loss = lambda m, v: (m(v) ** 2).mean()  # noqa: E731
    grad = pdx.jit(lambda m, v: pdx.grad(loss)(m, v))
    got, want = grad(layer, x), grad(net, x)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]), rtol=1e-4, atol=1e-6)


def test_manifest_describes_program(cnn_artifact):
    net, path = cnn_artifact
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["name"] == "smallcnn"
    assert manifest["inputs"] == [{"name": "image", "shape": ["batch", 1, 8, 8], "dtype": "float32"}]
    assert manifest["outputs"] == [{"name": "output", "shape": ["batch", 10], "dtype": "float32"}]
    assert manifest["versions"]["jax"] == jax.__version__
    assert manifest["targets"]["xla"]["platforms"] == ["cpu", "cuda"]
    assert manifest["targets"]["iree-llvm-cpu"]["dims"] == {"batch": 1}
    kinds = {p["name"]: p["kind"] for p in manifest["params"]}
    assert kinds["features.1._mean"] == "buffer" and kinds["features.0.weight"] == "parameter"
    assert manifest["program"]["ops"]["stablehlo.convolution"] >= 2  # once per platform branch
    for name in ("program.jaxexport", "params.safetensors", "iree-llvm-cpu.vmfb", "iree-arm64-android.vmfb"):
        assert manifest["files"][name]["size"] == (path / name).stat().st_size > 0
    predictor = pdx.export.load(path)
    assert predictor.name == "smallcnn" and predictor.output_names == ("output",)
    assert predictor.input_specs == (InputSpec([None, 1, 8, 8], "float32", "image"),)


def test_arm64_android_module_is_an_iree_vmfb(cnn_artifact):
    _, path = cnn_artifact
    with zipfile.ZipFile(path / "iree-arm64-android.vmfb") as vmfb:
        assert vmfb.read("module.fb")[8:12] == b"IREE"  # the VM flatbuffer's identifier
        elf = vmfb.read(next(n for n in vmfb.namelist() if n.endswith(".so")))
    assert elf[:4] == b"\x7fELF" and int.from_bytes(elf[18:20], "little") == 183  # EM_AARCH64
    with pytest.raises(ValueError, match="another device"):
        pdx.export.load(path, runtime="iree", target="iree-arm64-android")


def test_function_with_closure_control_flow_and_two_inputs(tmp_path, rng):
    pdx.seed(0)
    proj = nn.Linear(4, 3)

    def score(x, mask):
        h = proj(x)
        # data-dependent branch: must be in the program, not baked at trace time
        h = jax.lax.cond(h.sum() > 0, lambda v: v * 2.0, lambda v: -v, h)
        return {"masked": h * mask, "total": (h * mask).sum(axis=-1)}

    path = pdx.export.export(score, tmp_path / "score", [InputSpec([None, 4], "float32", "x"),
                                                           InputSpec([None, 3], "float32", "mask")],
                             targets=("xla", "iree-llvm-cpu"))
    w, b = np.asarray(proj.weight[...]), np.asarray(proj.bias[...])

    def reference(x, mask):  # numpy, independent of pdx
        h = x @ w + b
        h = h * 2.0 if h.sum() > 0 else -h
        return h * mask, (h * mask).sum(-1)

    # The function sums over the batch, so IREE (static shapes) runs batch 1 only.
    for runtime, batch in (("xla", 6), ("iree", 1)):
        predictor = pdx.export.load(path, runtime=runtime)
        assert predictor.output_names == ("masked", "total")
        assert [s.name for s in predictor.input_specs] == ["x", "mask"]
        for sign in (1.0, -1.0):
            x = (sign * np.abs(rng.standard_normal((batch, 4)))).astype(np.float32)
            mask = (rng.random((batch, 3)) > 0.5).astype(np.float32)
            for got, want in zip(predictor(x, mask), reference(x, mask)):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    iree = pdx.export.load(path, runtime="iree")
    assert iree.input_specs[0].shape == (1, 4)
    with pytest.raises(ValueError, match=r"dim 0 must be 1, got 6.*|specialized"):
        iree(np.ones((6, 4), np.float32), np.ones((6, 3), np.float32))
    layer = pdx.jit.load(path)
    assert sorted(layer.state_dict()) == ["proj.bias", "proj.weight"]


def test_jit_save_uses_to_static_input_spec(tmp_path, rng):
    net = nn.Linear(3, 2)
    pdx.jit.to_static(net, input_spec=[InputSpec([None, 3], "float32", "x")])
    path = pdx.jit.save(net, tmp_path / "linear")
    x = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(pdx.jit.load(path)(jnp.asarray(x))),
                               x @ np.asarray(net.weight[...]) + np.asarray(net.bias[...]), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="input_spec is required"):
        pdx.jit.save(nn.Linear(3, 2), tmp_path / "other")


class Gate(nn.Layer):
    """Python `if` on a traced value: pdx.jit's control-flow conversion makes it a lax.cond."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            h = h * 2.0
        else:
            h = -h
        for _ in range(3):
            h = pdx.tanh(h) + x
        return h


def test_layer_with_python_control_flow_exports(tmp_path):
    pdx.seed(1)
    net = Gate()
    path = pdx.export.export(net, tmp_path / "gate", [InputSpec([None, 4], "float32", "x")],
                             targets=("xla", "iree-llvm-cpu"))
    w, b = np.asarray(net.fc.weight[...]), np.asarray(net.fc.bias[...])

    def reference(x):  # numpy
        h = x @ w + b
        h = h * 2.0 if h.mean() > 0 else -h
        for _ in range(3):
            h = np.tanh(h) + x
        return h

    xla, iree = pdx.export.load(path), pdx.export.load(path, runtime="iree")
    taken = set()
    for sign in (1.0, -1.0):
        x = (sign * 3 * np.abs(np.linspace(0.1, 1, 20, dtype=np.float32))).reshape(5, 4)
        taken.add(bool((x @ w + b).mean() > 0))
        np.testing.assert_allclose(xla(x), reference(x), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(iree(x[:1]), reference(x[:1]), rtol=1e-5, atol=1e-5)
    assert taken == {True, False}  # both branches ran from the one artifact


def test_arm64_linux_and_vulkan_targets_compile(tmp_path):
    path = pdx.export.export(lambda x: pdx.tanh(x) * 2, tmp_path / "tanh", [InputSpec([None, 4], "float32", "x")],
                             targets=("iree-arm64-linux", "iree-vulkan"))
    with zipfile.ZipFile(path / "iree-arm64-linux.vmfb") as vmfb:
        elf = vmfb.read(next(n for n in vmfb.namelist() if n.endswith(".so")))
    assert elf[:4] == b"\x7fELF" and int.from_bytes(elf[18:20], "little") == 183  # EM_AARCH64
    with zipfile.ZipFile(path / "iree-vulkan.vmfb") as vmfb:
        spirv = vmfb.read(next(n for n in vmfb.namelist() if "spirv" in n))
    assert (0x07230203).to_bytes(4, "little") in spirv  # SPIR-V magic number
    manifest = pdx.export.load(path).manifest
    assert manifest["targets"]["iree-vulkan"]["backend"] == "vulkan-spirv"
    flags = manifest["targets"]["iree-arm64-linux"]["flags"]
    assert "--iree-llvmcpu-target-triple=aarch64-none-linux-gnu" in flags and "--iree-opt-level=O3" in flags
