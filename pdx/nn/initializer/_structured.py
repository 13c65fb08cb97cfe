"""Initializers with a fixed structure (Bilinear upsampling kernels, Dirac
identity kernels) and Paddle's process-wide default initializers."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype
from pdx.nn.initializer._initializers import Initializer

__all__ = ["Bilinear", "Dirac", "global_initializer", "set_global_initializer"]


class Bilinear(Initializer):
    """Bilinear-interpolation kernels for a transposed convolution that upsamples
    (Paddle's `nn.initializer.Bilinear`): weight `[C_out, C_in, K, K]`, every
    `K x K` slice `(1 - |x / f - c|) * (1 - |y / f - c|)` with `f = ceil(K / 2)`,
    `x = i % K`, `y = (i / K) % K` over the flat index `i` (Paddle's float division),
    `c = (2f - 1 - f % 2) / 2f`.

    Example:
      >>> import jax, pdx
      >>> w = pdx.nn.initializer.Bilinear()(jax.random.key(0), (1, 1, 4, 4), "float32")
      >>> [round(v, 4) for v in w[0, 0, 0].tolist()]
      [0.0625, 0.2812, 0.375, 0.1562]
    """

    def __call__(self, key, shape, dtype="float32"):
        shape = tuple(int(s) for s in shape)
        if len(shape) != 4:
            raise ValueError(f"Bilinear: the weight must be 4-D [C_out, C_in, K, K]; got shape={shape}")
        if shape[2] != shape[3]:
            raise ValueError(f"Bilinear: shape[2] must be equal to shape[3]; got shape={shape}")
        size = shape[3]
        f = np.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        i = np.arange(int(np.prod(shape)))
        x = i % size
        y = (i / size) % size  # Paddle's float division: y is not an integer, kept as it computes it
        weight = ((1 - np.abs(x / f - c)) * (1 - np.abs(y / f - c))).astype(np.float32).reshape(shape)
        return jnp.asarray(weight).astype(convert_dtype(dtype))


class Dirac(Initializer):
    """Identity kernels for 3/4/5-D convolution weights (Paddle's `nn.initializer.Dirac`):
    zeros, with a 1 at the spatial center of `weight[g * n + j, j]` for each
    group `g` and `j < min(n, C_in)` (`n = C_out / groups`), so the convolution
    passes its input channels through.

    Args:
      groups: split the output channels into this many identity blocks.
      name: ignored.

    Example:
      >>> import jax, pdx
      >>> w = pdx.nn.initializer.Dirac()(jax.random.key(0), (2, 2, 3), "float32")
      >>> w[:, :, 1].tolist()
      [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(self, groups: int = 1, name: str | None = None) -> None:
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"Dirac: groups must be a positive int; got groups={groups!r}")
        self.groups = groups

    def __call__(self, key, shape, dtype="float32"):
        shape = tuple(int(s) for s in shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"Dirac: only 3/4/5-D weights can be initialized; got shape={shape}")
        if shape[0] % self.groups:
            raise ValueError(f"Dirac: shape[0]={shape[0]} must be divisible by groups={self.groups}")
        per_group = shape[0] // self.groups
        weight = np.zeros(shape, np.float32)
        center = tuple(s // 2 for s in shape[2:])
        for g in range(self.groups):
            for j in range(min(per_group, shape[1])):
                weight[(g * per_group + j, j, *center)] = 1.0
        return jnp.asarray(weight).astype(convert_dtype(dtype))


_GLOBAL = {"weight": None, "bias": None}


def set_global_initializer(weight_init: Initializer | None, bias_init: Initializer | None = None) -> None:
    """Set the initializers every parameter created afterwards defaults to
    (Paddle's `nn.initializer.set_global_initializer`): they replace the layers'
    own defaults; a `ParamAttr` / `weight_attr` initializer still wins.
    `set_global_initializer(None)` restores the layers' defaults.

    Example:
      >>> import pdx
      >>> pdx.nn.initializer.set_global_initializer(pdx.nn.initializer.Constant(0.5), pdx.nn.initializer.Constant(0.0))
      >>> pdx.nn.Linear(2, 2).weight[...].tolist()
      [[0.5, 0.5], [0.5, 0.5]]
      >>> pdx.nn.initializer.set_global_initializer(None)
    """
    for arg, value in (("weight_init", weight_init), ("bias_init", bias_init)):
        if value is not None and not isinstance(value, Initializer):
            raise TypeError(f"set_global_initializer: {arg} must be a pdx.nn.initializer.Initializer or None; got {value!r}")
    _GLOBAL["weight"], _GLOBAL["bias"] = weight_init, bias_init


def global_initializer(is_bias: bool) -> Initializer | None:
    """The initializer `set_global_initializer` set for biases (`is_bias`) or weights, or None."""
    return _GLOBAL["bias" if is_bias else "weight"]


