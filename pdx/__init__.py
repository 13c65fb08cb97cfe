"""pdx: Paddle-style deep learning on a pure-functional JAX/XLA core.

Eager by default (ops run on `jax.Array`s one by one), compiled on request
with `pdx.jit`. Paddle's tensor ops live at the top level (`pdx.concat`,
`pdx.matmul`, ...); layers in `pdx.nn`, optimizers in `pdx.optimizer`, the
high-level API is `pdx.Model`.

`import pdx` loads JAX, flax.nnx and the top-level ops and registers Paddle's
Tensor methods on `jax.Array`; every subpackage (`pdx.nn`, `pdx.vision`, ...)
and the top-level names defined in one (`pdx.Model`, `pdx.save`, ...) load on
first use, so `pdx.vision.models.resnet18()` works right after `import pdx`.
"""

from pdx import _malloc_defaults
from pdx import _xla_defaults

_xla_defaults.apply()  # CPU flags, before JAX starts its backends (see pdx/_xla_defaults.py)
_malloc_defaults.apply()  # steps reuse their pages instead of faulting them in (pdx/_malloc_defaults.py)

import importlib as _importlib
import sys as _sys

from pdx import _paddle_tree

_paddle_tree.install()  # `import pdx.nn.layer.conv`, `pdx.tensor.math`: Paddle's module paths (pdx/_paddle_tree.py)

# Subpackages load on first attribute access (PEP 562): `import pdx` costs JAX,
# flax.nnx and the top-level ops only, and a DataLoader worker that unpickles a
# pdx object imports no more than that. `pdx.nn.Linear`, `from pdx import nn`
# and `from pdx import *` import what they name.
_SUBPACKAGES = frozenset({
    "amp", "audio", "autograd", "callbacks", "checkpoint", "device", "distributed", "distribution", "export",
    "fft", "geometric", "hapi", "hub", "incubate", "inference", "io", "jit", "kernels", "linalg", "metric", "models",
    "nn", "onnx", "optimizer", "parallel", "profiler", "quantization", "regularizer", "signal", "sparse", "special", "static",
    "text", "train", "utils", "vision",
})

# Top-level names that live in a subpackage: name -> the module defining it.
_NAMES_ELSEWHERE = {
    **dict.fromkeys(["autocast", "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype",
                     "is_autocast_enabled"], "pdx.amp"),
    **dict.fromkeys(["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"], "pdx.autograd"),
    **dict.fromkeys(["load", "save"], "pdx.checkpoint"),
    **dict.fromkeys(["CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "CustomPlace", "XPUPlace", "device_guard",
                     "get_cudnn_version", "get_device", "get_device_module", "is_compiled_with_cinn",
                     "is_compiled_with_cuda", "is_compiled_with_custom_device", "is_compiled_with_distribute",
                     "is_compiled_with_ipu", "is_compiled_with_rocm", "is_compiled_with_xpu", "set_device"],
                    "pdx.device"),
    "DataParallel": "pdx.distributed",  # Paddle's top-level name for pdx.distributed.DataParallel
    **dict.fromkeys(["Model", "flops", "summary"], "pdx.hapi"),
    "ParamAttr": "pdx.nn",
    **dict.fromkeys(["adaptive_avg_pool1d", "conv1d", "conv2d", "conv3d", "group_norm", "layer_norm"],
                    "pdx.nn.functional"),  # Paddle 3.x also has these at top level
    "TrainState": "pdx.train",
}


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"pdx.{name}")  # the import machinery sets it on pdx
    if name in _paddle_tree.TOP_LEVEL:  # Paddle's module paths pdx has no file for: pdx.tensor, pdx.base, ...
        return _importlib.import_module(f"pdx.{name}")
    if name in _NAMES_ELSEWHERE:
        value = getattr(_importlib.import_module(_NAMES_ELSEWHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pdx' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBPACKAGES | set(_NAMES_ELSEWHERE))


class _IPythonUnimported:
    """Hides IPython from the imports below while IPython is not loaded.

    flax.nnx imports IPython (a third of a second) only to ask `get_ipython()`,
    which is None in a process that has not imported IPython; the import is in a
    `try: ... except ImportError`, so the answer is the same without it. Inside
    IPython or Jupyter (IPython already loaded) nothing is hidden.
    """

    def __enter__(self):
        self.hide = "IPython" not in _sys.modules
        if self.hide:
            _sys.modules["IPython"] = None  # makes `import IPython` raise ImportError

    def __exit__(self, *exc):
        if self.hide and _sys.modules.get("IPython", 0) is None:
            del _sys.modules["IPython"]


with _IPythonUnimported():
    from pdx import ops, version
    from pdx._autograd import Gradients, grad, value_and_grad
    from pdx._dtype import get_default_dtype, set_default_dtype
    from pdx._framework import *  # noqa: F401,F403  (dtype names, constants, execution mode, print options)
    from pdx._framework import int, long, short  # noqa: A004  (not in __all__: Paddle's star import skips them)
    from pdx._random import get_rng_state, seed, set_rng_state
    from pdx._tensor import Tensor
    from pdx._typed_tensors import *  # noqa: F401,F403  (FloatTensor, ..., Size)
    from pdx.ops import *  # noqa: F401,F403  (Paddle puts its tensor ops at top level)

__version__ = version.full_version

__all__ = [
    "DataParallel",
    "device_guard",
    "get_device_module",
    "Gradients",
    "Model",
    "ParamAttr",
    "Tensor",
    "TrainState",
    "__version__",
    "amp",
    "audio",
    "autograd",
    "callbacks",
    "checkpoint",
    "distribution",
    "fft",
    "flops",
    "geometric",
    "get_default_dtype",
    "get_rng_state",
    "grad",
    "hapi",
    "io",
    "jit",
    "linalg",
    "load",
    "metric",
    "nn",
    "no_grad",
    "ops",
    "optimizer",
    "parallel",
    "profiler",
    "regularizer",
    "save",
    "seed",
    "set_default_dtype",
    "set_rng_state",
    "signal",
    "sparse",
    "special",
    "static",
    "summary",
    "value_and_grad",
] + list(ops.__all__) + list(_typed_tensors.__all__) + list(_framework.__all__) + [
    "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "CustomPlace", "XPUPlace", "adaptive_avg_pool1d", "autocast",
    "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype", "is_autocast_enabled", "conv1d",
    "conv2d", "conv3d", "device", "enable_grad", "get_cudnn_version", "get_device", "group_norm",
    "is_compiled_with_cinn", "is_grad_enabled", "set_grad_enabled",
    "is_compiled_with_cuda", "is_compiled_with_custom_device", "is_compiled_with_distribute",
    "is_compiled_with_ipu", "is_compiled_with_rocm", "is_compiled_with_xpu", "layer_norm", "set_device", "utils",
    "version",
]

# Last, after every op above exists: Paddle's Tensor methods on jax.Array
# (PDX_TENSOR_METHODS=0 turns this off; see pdx/_tensor.py).
# (pdx.sparse registers Paddle's sparse Tensor methods on BCOO / BCSR itself, below.)
_tensor.register()


class _SparseMethodsWithJaxSparse:
    """Loads pdx.sparse (Paddle's sparse Tensor methods on BCOO / BCSR) right after jax.experimental.sparse.

    A BCOO exists only once jax.experimental.sparse is loaded (a quarter of a
    second, skipped by `import pdx`), so its Paddle methods (`sp.nnz()`,
    `sp.values()`, ...) are registered then, whoever imported it.
    """

    _NAME = "jax.experimental.sparse"

    def find_spec(self, fullname, path, target=None):
        if fullname != self._NAME:
            return None
        _sys.meta_path.remove(self)  # one module, loaded once
        for finder in _sys.meta_path:
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                spec.loader = _LoaderThen(spec.loader, "pdx.sparse")
                return spec
        return None


class _LoaderThen:
    """A module loader that imports `then` once the module it loads has run."""

    def __init__(self, loader, then: str):
        self._loader, self._then = loader, then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _importlib.import_module(self._then)

    def __getattr__(self, name):  # get_resource_reader, get_source, ...
        return getattr(self._loader, name)


if _SparseMethodsWithJaxSparse._NAME in _sys.modules:
    from pdx import sparse
else:
    _sys.meta_path.insert(0, _SparseMethodsWithJaxSparse())
