"""pdx: Paddle-style deep learning on a pure-functional JAX/XLA core.

Eager by default (ops run on `jax.Array`s one by one), compiled on request
with `pdx.jit`. Paddle's tensor ops live at the top level (`pdx.concat`,
`pdx.matmul`, ...); layers in `pdx.nn`, optimizers in `pdx.optimizer`, the
high-level API is `pdx.Model`. `pdx.vision` and `pdx.models` are imported on
first use (`pdx.vision.models.resnet18()` works after `import pdx`).
"""

from pdx import _xla_defaults

_xla_defaults.apply()  # CPU flags, before JAX starts its backends (see pdx/_xla_defaults.py)

from pdx import (
    amp,
    audio,
    autograd,
    callbacks,
    checkpoint,
    device,
    distribution,
    fft,
    geometric,
    hapi,
    io,
    jit,
    linalg,
    metric,
    nn,
    ops,
    optimizer,
    parallel,
    profiler,
    regularizer,
    signal,
    sparse,
    special,
    static,
    train,
    utils,
    version,
)
from pdx.amp import (
    autocast,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_enabled,
)
from pdx._autograd import Gradients, grad, value_and_grad
from pdx.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from pdx._dtype import get_default_dtype, set_default_dtype
from pdx._framework import *  # noqa: F401,F403  (dtype names, constants, execution mode, print options)
from pdx._framework import int, long, short  # noqa: A004  (not in __all__: Paddle's star import skips them)
from pdx._random import get_rng_state, seed, set_rng_state
from pdx._tensor import Tensor
from pdx._typed_tensors import *  # noqa: F401,F403  (FloatTensor, ..., Size)
from pdx.train import TrainState
from pdx.checkpoint import load, save
from pdx.device import (
    CPUPlace,
    CUDAPinnedPlace,
    CUDAPlace,
    CustomPlace,
    XPUPlace,
    device_guard,
    get_cudnn_version,
    get_device,
    get_device_module,
    is_compiled_with_cinn,
    is_compiled_with_cuda,
    is_compiled_with_custom_device,
    is_compiled_with_distribute,
    is_compiled_with_ipu,
    is_compiled_with_rocm,
    is_compiled_with_xpu,
    set_device,
)
from pdx.hapi import Model, flops, summary
from pdx.nn import ParamAttr
from pdx.nn.functional import (  # Paddle 3.x also has these at top level
    adaptive_avg_pool1d,
    conv1d,
    conv2d,
    conv3d,
    group_norm,
    layer_norm,
)
from pdx.ops import *  # noqa: F401,F403  (Paddle puts its tensor ops at top level)

__version__ = version.full_version

_ON_FIRST_USE = ("distributed", "export", "kernels", "models", "quantization", "text", "vision")


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        import importlib

        return importlib.import_module(f"pdx.{name}")
    if name == "DataParallel":  # Paddle's top-level name for pdx.distributed.DataParallel
        from pdx.distributed import DataParallel

        return DataParallel
    raise AttributeError(f"module 'pdx' has no attribute {name!r}")


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
# (pdx.sparse registers Paddle's sparse Tensor methods on BCOO / BCSR itself.)
_tensor.register()
