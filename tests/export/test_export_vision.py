"""pdx.vision.models through the artifact: pdx.jit.load equals eager within
1e-5, the IREE host module within 1e-4, the arm64-android module compiles.

Spatial sizes are CIFAR's 32x32, where the ImageNet networks' last stage
runs a padded stride-2 3x3 conv on a 2x2 map (its unread padding is trimmed
before lowering, which IREE needs), and 64x64. One artifact serves batch 1,
3 and 17 (IREE: batch buckets 1 and 4, so 17 = 4 x 4 + 1 calls). The XLA
Predictor runs the same program as pdx.jit.load and is covered in
test_export_roundtrip.py; 224 px runs in benchmarks/export_matrix.py.
"""

import zipfile

import numpy as np
import pytest

import pdx
import pdx.export
from pdx.jit import InputSpec
from pdx.vision import models

MODELS = {
    # name: (constructor, input shape without batch, IREE targets)
    "lenet": (lambda: models.LeNet(num_classes=10), (1, 28, 28), ("iree-llvm-cpu", "iree-arm64-android")),
    "resnet18": (lambda: models.resnet18(num_classes=10), (3, 32, 32), ("iree-llvm-cpu", "iree-arm64-android")),
    "mobilenet_v2": (lambda: models.mobilenet_v2(scale=0.5, num_classes=10), (3, 32, 32), ("iree-llvm-cpu",)),
    "resnet18@64": (lambda: models.resnet18(num_classes=10), (3, 64, 64), ("iree-llvm-cpu",)),
    "mobilenet_v2@64": (lambda: models.mobilenet_v2(scale=0.5, num_classes=10), (3, 64, 64), ("iree-llvm-cpu",)),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def exported(request, tmp_path_factory):
    ctor, shape, targets = MODELS[request.param]
    pdx.seed(11)
    net = ctor()
    net.eval()
    directory = request.param.replace("@", "_")
    path = pdx.export.export(net, tmp_path_factory.mktemp(directory) / directory,
                             [InputSpec([None, *shape], "float32", "image")], targets=("xla", *targets),
                             platforms=("cpu",), iree={"batch_split": True, "batch_sizes": (1, 4)})
    return request.param, net, shape, path


def _close(got, want, tol):
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(scale, 1e-3))


def test_vision_model_round_trip(exported, rng):
    name, net, shape, path = exported
    x = rng.standard_normal((17, *shape)).astype(np.float32)
    # Reference: the model compiled by pdx.jit, which tests/jit holds equal to eager;
    # eager op-by-op dispatch of these networks costs a compile per op shape. Rows of
    # an eval-mode model are independent: one reference batch serves every batch size.
    want = np.asarray(pdx.jit(lambda v: net(v))(x))
    if name == "lenet":
        _close(np.asarray(net(x[:3])), want[:3], 1e-5)
    _close(np.asarray(pdx.jit.load(path)(x[:3])), want[:3], 1e-5)
    iree = pdx.export.load(path, runtime="iree")
    assert [b["batch"] for b in iree.manifest["targets"]["iree-llvm-cpu"]["buckets"]] == [1, 4]
    # weights as constants where that measured faster: programs with depthwise convolutions
    assert iree.manifest["targets"]["iree-llvm-cpu"]["params"] == ("inline" if name.startswith("mobilenet_v2") else "arguments")
    for batch in (1, 3, 17):
        _close(iree(x[:batch]), want[:batch], 1e-4)
    if "iree-arm64-android" in MODELS[name][2]:
        with zipfile.ZipFile(path / "iree-arm64-android.vmfb") as vmfb:
            elf = vmfb.read(next(n for n in vmfb.namelist() if n.endswith(".so")))
        assert int.from_bytes(elf[18:20], "little") == 183  # EM_AARCH64
