"""Every public name of every pdx package imports and is documented."""

import importlib

import pytest

PACKAGES = ["pdx", "pdx.checkpoint", "pdx.nn", "pdx.nn.functional", "pdx.nn.initializer", "pdx.optimizer",
            "pdx.optimizer.lr", "pdx.jit", "pdx.parallel", "pdx.models", "pdx.models.llama", "pdx.static", "pdx.regularizer", "pdx.vision.models",
            "pdx.io", "pdx.vision", "pdx.vision.datasets", "pdx.vision.ops", "pdx.vision.transforms", "pdx.kernels",
            "pdx.amp", "pdx.callbacks", "pdx.hapi", "pdx.train", "pdx.metric", "pdx.profiler", "pdx.export",
            "pdx.geometric", "pdx.autograd",
            "pdx.device", "pdx.device.cuda", "pdx.utils", "pdx.utils.unique_name", "pdx.utils.dlpack", "pdx.version",
            "pdx.sparse", "pdx.sparse.nn", "pdx.sparse.nn.functional", "pdx.distribution", "pdx.linalg", "pdx.fft", "pdx.signal", "pdx.special", "pdx.audio", "pdx.audio.functional", "pdx.audio.features",
            "pdx.quantization", "pdx.quantization.observers", "pdx.quantization.quanters",
            "pdx.distributed", "pdx.distributed.fleet", "pdx.distributed.fleet.meta_parallel", "pdx.text"]


@pytest.mark.parametrize("package", PACKAGES)
def test_public_names_import_and_have_docstrings(package):
    module = importlib.import_module(package)
    assert module.__doc__, f"{package} needs a module docstring"
    names = module.__all__
    assert len(names) == len(set(names)), f"duplicate names in {package}.__all__"
    undocumented = []
    for name in names:
        obj = getattr(module, name)  # AttributeError here = a broken __all__
        if callable(obj) and not isinstance(obj, type(importlib)) and not (obj.__doc__ or "").strip():
            undocumented.append(name)
    assert not undocumented, f"{package}: public names without a docstring: {undocumented}"


def test_jit_is_decorator_and_namespace():
    import pdx

    assert callable(pdx.jit) and pdx.jit.to_static is not None
    from pdx.jit import to_static

    assert to_static(lambda x: x)(1) == 1
