"""pdx.nn.initializer: Paddle's parameter initializers.

An initializer is a callable `init(key, shape, dtype) -> jax.Array`. Fans are
computed as Paddle does: for a 2-D weight `[in, out]` fan_in = in; for a conv
weight `[out, in, *k]` fan_in = in * prod(k), fan_out = out * prod(k).

Example:
    >>> import jax, pdx
    >>> w = pdx.nn.initializer.XavierUniform()(jax.random.key(0), (4, 3), "float32")
    >>> w.shape
    (4, 3)
"""

from pdx.nn.initializer._initializers import (
    Assign,
    Constant,
    Initializer,
    KaimingNormal,
    KaimingUniform,
    Normal,
    Orthogonal,
    TruncatedNormal,
    Uniform,
    XavierNormal,
    XavierUniform,
    calculate_gain,
)
from pdx.nn.initializer._structured import Bilinear, Dirac, global_initializer, set_global_initializer

__all__ = [
    "Assign",
    "Bilinear",
    "Constant",
    "Dirac",
    "Initializer",
    "KaimingNormal",
    "KaimingUniform",
    "Normal",
    "Orthogonal",
    "TruncatedNormal",
    "Uniform",
    "XavierNormal",
    "XavierUniform",
    "calculate_gain",
    "global_initializer",
    "set_global_initializer",
]
