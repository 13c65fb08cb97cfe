"""pdx: Paddle-style deep learning on a pure-functional JAX/XLA core."""

from pdx import ops
from pdx._dtype import get_default_dtype, set_default_dtype
from pdx._random import get_rng_state, seed, set_rng_state
from pdx.ops import *  # noqa: F401,F403  (Paddle puts its tensor ops at top level)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "get_default_dtype",
    "get_rng_state",
    "ops",
    "seed",
    "set_default_dtype",
    "set_rng_state",
] + list(ops.__all__)
