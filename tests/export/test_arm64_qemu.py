"""The arm64 IREE modules run: under qemu user-mode emulation, against the artifact's XLA program.

The reference is the artifact's portable StableHLO program on XLA (oneDNN
off) and, for the MLP, a numpy forward pass. The emulator, the arm64
libraries (apt-get, as root) and the aarch64 `iree-run-module` (pip download
of the aarch64 wheel of the installed iree-base-runtime, cached under
~/.cache/pdx) are installed by the first test that needs them; a failed
install fails the tests, it never skips them.
"""

import json
import time

import numpy as np
import pytest
import scipy.special

import pdx
import pdx.export
from pdx.export import _arm64
from pdx.jit import InputSpec

AARCH64 = 0xB7  # ELF e_machine of aarch64
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def tools():
    try:
        return _arm64.install_tools()
    except RuntimeError as e:
        pytest.fail(f"the arm64 test tools could not be installed: {e}")


def _machines(vmfb: bytes) -> set[int]:
    """e_machine of every ELF image embedded in a .vmfb (the compiled executables)."""
    found, at = set(), vmfb.find(b"\x7fELF")
    while at >= 0:
        found.add(int.from_bytes(vmfb[at + 18:at + 20], "little"))
        at = vmfb.find(b"\x7fELF", at + 1)
    return found


def _export_cnn(path, *, depthwise: bool):
    pdx.seed(11)
    layers = [pdx.nn.Conv2D(3, 8, 3, padding=1, bias_attr=False), pdx.nn.BatchNorm2D(8), pdx.nn.ReLU()]
    if depthwise:  # MobileNet's block: grouped convolutions, weights inline
        layers += [pdx.nn.Conv2D(8, 8, 3, stride=2, padding=1, groups=8), pdx.nn.ReLU6(), pdx.nn.Conv2D(8, 16, 1)]
    else:  # ResNet's: regular convolutions, im2col, weights as arguments
        layers += [pdx.nn.Conv2D(8, 16, 3, stride=2, padding=1), pdx.nn.ReLU()]
    layers += [pdx.nn.AdaptiveAvgPool2D(1), pdx.nn.Flatten(), pdx.nn.Linear(16, 10)]
    net = pdx.nn.Sequential(*layers)
    # Non-trivial BatchNorm statistics, so that eval mode is not the identity.
    rng = np.random.default_rng(1)
    net.set_state_dict({"1._mean": rng.standard_normal(8).astype(np.float32) * 0.1,
                        "1._variance": rng.uniform(0.5, 2.0, 8).astype(np.float32)})
    net.eval()
    return pdx.export.export(net, path, [InputSpec([None, 3, 16, 16], "float32", "image")],
                             targets=("xla", "iree-arm64-android", "iree-arm64-linux"),
                             iree={"batch_sizes": (1, 4), "batch_split": True}, cpu={"onednn": False},
                             differentiable=False)


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_arm64_cnn_matches_xla_under_qemu(tools, tmp_path, depthwise):
    path = _export_cnn(tmp_path / "cnn", depthwise=depthwise)
    manifest = json.loads((path / "manifest.json").read_text())
    xla = pdx.export.load(path)
    assert xla.program == "portable"
    rng = np.random.default_rng(2)
    for target in _arm64.ARM64_TARGETS:
        info = manifest["targets"][target]
        assert info["params"] == ("inline" if depthwise else "arguments")
        assert _machines((path / info["file"]).read_bytes()) == {AARCH64}  # arm64 code, nothing else
        for batch in (1, 4):
            x = rng.standard_normal((batch, 3, 16, 16)).astype(np.float32)
            want = xla(x)
            start = time.perf_counter()
            (got,) = _arm64.run_artifact(path, x, target=target, tools=tools)
            seconds = time.perf_counter() - start
            assert got.shape == want.shape == (batch, 10) and got.dtype == np.float32
            error = float(np.abs(got - want).max())
            print(f"{target} {'depthwise' if depthwise else 'conv'} batch {batch}: max |arm64 - xla| = "
                  f"{error:.2e} (max |xla| {np.abs(want).max():.2f}), one call under qemu {seconds:.3f} s")
            np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE)
            assert np.abs(want).max() > 0.1  # not a vacuous comparison of zeros


def test_arm64_resnet18_matches_xla_under_qemu(tools, tmp_path):
    """A real network: ResNet-18 (32 px, batch 1) on the phone target."""
    from pdx.vision import models

    pdx.seed(0)
    net = models.resnet18(num_classes=10)
    net.eval()
    path = pdx.export.export(net, tmp_path / "resnet18", [InputSpec([None, 3, 32, 32], "float32", "image")],
                             targets=("xla", "iree-arm64-android"), iree={"batch_sizes": (1,)},
                             cpu={"onednn": False}, differentiable=False)
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = pdx.export.load(path)(x)
    start = time.perf_counter()
    (got,) = _arm64.run_artifact(path, x, tools=tools)
    seconds = time.perf_counter() - start
    scale = float(np.abs(want).max())
    error = float(np.abs(got - want).max())
    print(f"resnet18 iree-arm64-android: max |arm64 - xla| = {error:.2e} (max |xla| {scale:.2f}), "
          f"one call under qemu {seconds:.3f} s")
    assert scale > 1.0
    # 11 convolutions deep, summed in another order: within 1e-5 of the largest logit.
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE * scale)


def test_arm64_two_outputs_without_a_batch_dim(tools, tmp_path):
    """A fixed-shape function with two outputs: function "main", both outputs back, against numpy too."""
    pdx.seed(5)
    net = pdx.nn.Sequential(pdx.nn.Linear(12, 32), pdx.nn.GELU(), pdx.nn.Linear(32, 5))
    net.eval()

    def heads(x):
        logits = net(x)
        # (logits, softmax(logits)) does not compile: iree-compile 3.13 fails with "'vector.store' op write
        # affecting operations on global resources ..." on any target when a matmul's result is both an
        # output and a softmax's input.
        return logits, pdx.tanh(logits)

    path = pdx.export.export(heads, tmp_path / "heads", [InputSpec([3, 12], "float32", "x")],
                             targets=("xla", "iree-arm64-android"), iree={"params": "inline"},
                             cpu={"onednn": False}, differentiable=False)
    assert json.loads((path / "manifest.json").read_text())["targets"]["iree-arm64-android"]["params"] == "inline"
    x = np.random.default_rng(3).standard_normal((3, 12)).astype(np.float32)
    logits, squashed = _arm64.run_artifact(path, x, tools=tools)
    want_logits, want_squashed = pdx.export.load(path)(x)
    np.testing.assert_allclose(logits, want_logits, rtol=TOLERANCE, atol=TOLERANCE)
    np.testing.assert_allclose(squashed, want_squashed, rtol=TOLERANCE, atol=TOLERANCE)
    w = {k: np.asarray(v, np.float64) for k, v in net.state_dict().items()}
    h = x.astype(np.float64) @ w["0.weight"] + w["0.bias"]
    h = 0.5 * h * (1 + scipy.special.erf(h / np.sqrt(2)))  # Paddle's GELU default: exact, not tanh
    ref = h @ w["2.weight"] + w["2.bias"]
    np.testing.assert_allclose(logits, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(squashed, np.tanh(ref), rtol=1e-4, atol=1e-5)


def test_arm64_errors_name_the_problem(tools, tmp_path):
    net = pdx.nn.Linear(4, 2)
    net.eval()
    path = pdx.export.export(net, tmp_path / "lin", [InputSpec([None, 4], "float32", "x")],
                             targets=("xla", "iree-arm64-linux", "iree-llvm-cpu"),
                             iree={"batch_sizes": (2,), "batch_split": False}, cpu={"onednn": False},
                             differentiable=False)
    with pytest.raises(ValueError, match=r"batch size 3 .*\[2\]"):
        _arm64.run_artifact(path, np.zeros((3, 4), np.float32), target="iree-arm64-linux", tools=tools)
    with pytest.raises(ValueError, match="no 'iree-arm64-android' target"):
        _arm64.run_artifact(path, np.zeros((2, 4), np.float32), tools=tools)
    with pytest.raises(ValueError, match="target='iree-llvm-cpu' must be one of"):
        _arm64.run_artifact(path, np.zeros((2, 4), np.float32), target="iree-llvm-cpu", tools=tools)
    with pytest.raises(ValueError, match="dtype"):
        _arm64.run_artifact(path, np.zeros((2, 4), np.int32), target="iree-arm64-linux", tools=tools)
    params = list(pdx.export._runtime.Artifact(path).params)
    x = np.ones((2, 4), np.float32)
    # The host (x86-64) module has no arm64 code: the aarch64 runtime refuses it.
    with pytest.raises(RuntimeError, match=r"(?s)iree-run-module failed on main_batch2.*x86_64"):
        _arm64.run_module(path / "iree-llvm-cpu.vmfb", "main_batch2", params + [x], 1, tools=tools)
    with pytest.raises(RuntimeError, match="iree-run-module failed on main_batch7"):
        _arm64.run_module(path / "iree-arm64-linux.vmfb", "main_batch7", params + [x], 1, tools=tools)
    with pytest.raises(ValueError, match="num_outputs=0"):
        _arm64.run_module(path / "iree-arm64-linux.vmfb", "main_batch2", params + [x], 0, tools=tools)
    (got,) = _arm64.run_module(path / "iree-arm64-linux.vmfb", "main_batch2", params + [x], 1, tools=tools)
    w = net.state_dict()
    np.testing.assert_allclose(got, x @ np.asarray(w["weight"]) + np.asarray(w["bias"]), rtol=1e-6, atol=1e-6)
