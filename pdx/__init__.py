"""pdx: Paddle-style deep learning on a pure-functional JAX/XLA core.

Eager by default (ops run on `jax.Array`s one by one), compiled on request
with `pdx.jit`. Paddle's tensor ops live at the top level (`pdx.concat`,
`pdx.matmul`, ...); layers in `pdx.nn`, optimizers in `pdx.optimizer`.
"""

from pdx import io, jit, nn, ops, optimizer, parallel, regularizer, static
from pdx._autograd import Gradients, grad, no_grad, value_and_grad
from pdx._dtype import get_default_dtype, set_default_dtype
from pdx._random import get_rng_state, seed, set_rng_state
from pdx.nn._layer import ParamAttr
from pdx.ops import *  # noqa: F401,F403  (Paddle puts its tensor ops at top level)
from pdx import amp, callbacks, hapi, metric, profiler  # noqa: E402  (after nn: they build on it)
from pdx._train_state import TrainState  # noqa: E402
from pdx.hapi import Model, flops, summary  # noqa: E402
from pdx import checkpoint  # noqa: E402
from pdx.checkpoint import load, save  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "checkpoint",
    "load",
    "save",
    "Gradients",
    "Model",
    "TrainState",
    "ParamAttr",
    "__version__",
    "amp",
    "callbacks",
    "flops",
    "hapi",
    "metric",
    "profiler",
    "summary",
    "get_default_dtype",
    "get_rng_state",
    "grad",
    "io",
    "jit",
    "nn",
    "no_grad",
    "ops",
    "optimizer",
    "parallel",
    "regularizer",
    "seed",
    "set_default_dtype",
    "set_rng_state",
    "static",
    "value_and_grad",
] + list(ops.__all__)
