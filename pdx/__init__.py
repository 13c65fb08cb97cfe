"""pdx: Paddle-style deep learning on a pure-functional JAX/XLA core.

Eager by default (ops run on `jax.Array`s one by one), compiled on request
with `pdx.jit`. Paddle's tensor ops live at the top level (`pdx.concat`,
`pdx.matmul`, ...); layers in `pdx.nn`, optimizers in `pdx.optimizer`, the
high-level API is `pdx.Model`. `pdx.vision` and `pdx.models` are imported on
first use (`pdx.vision.models.resnet18()` works after `import pdx`).
"""

from pdx import (
    amp,
    autograd,
    callbacks,
    checkpoint,
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
)
from pdx._autograd import Gradients, grad, no_grad, value_and_grad
from pdx._dtype import get_default_dtype, set_default_dtype
from pdx._random import get_rng_state, seed, set_rng_state
from pdx._tensor import Tensor
from pdx._train_state import TrainState
from pdx.checkpoint import load, save
from pdx.hapi import Model, flops, summary
from pdx.nn._layer import ParamAttr
from pdx.ops import *  # noqa: F401,F403  (Paddle puts its tensor ops at top level)

__version__ = "0.1.0"

_ON_FIRST_USE = ("export", "kernels", "models", "vision")


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        import importlib

        return importlib.import_module(f"pdx.{name}")
    raise AttributeError(f"module 'pdx' has no attribute {name!r}")


__all__ = [
    "Gradients",
    "Model",
    "ParamAttr",
    "Tensor",
    "TrainState",
    "__version__",
    "amp",
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
] + list(ops.__all__)

# Last, after every op above exists: Paddle's Tensor methods on jax.Array
# (PDX_TENSOR_METHODS=0 turns this off; see pdx/_tensor.py).
_tensor.register()
