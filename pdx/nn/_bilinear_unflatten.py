"""Bilinear (a learned form of two inputs) and Unflatten (split one dim into several)."""

from __future__ import annotations

import math

import jax
import numpy as np

import pdx.nn.functional as F
from pdx.nn import axes
from pdx._args import is_int
from pdx.nn._common import float_dtype, layer_error, reprlist, value_of
from pdx.nn._layer import Layer, as_rngs
from pdx._args import as_array, normalize_axis

__all__ = ["Bilinear", "Unflatten"]


class Bilinear(Layer):
    """out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o] (Paddle's `nn.Bilinear`).

    `weight` is `[out_features, in1_features, in2_features]` (XavierUniform),
    `bias` is `[1, out_features]` (zeros), as in Paddle.

    Args:
      in1_features: size of x1's last dim.
      in2_features: size of x2's last dim.
      out_features: output size.
      weight_attr: None, a ParamAttr or an initializer for `weight`.
      bias_attr: as weight_attr for `bias`; False means no bias.
      name: ignored (Paddle compatibility).
      dtype: keyword-only parameter dtype.
      rngs: keyword-only None (global generator), an int seed, a key or nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Bilinear(3, 4, 5)(jnp.ones((2, 3)), jnp.ones((2, 4))).shape
      (2, 5)
    """

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None, bias_attr=None, name=None, *,
                 dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        for arg, value in (("in1_features", in1_features), ("in2_features", in2_features),
                           ("out_features", out_features)):
            if not is_int(value) or value <= 0:
                raise layer_error("Bilinear", f"`{arg}` must be a positive int; got {arg}={value!r}")
        rngs = as_rngs(rngs)
        self.weight = self.create_parameter((out_features, in1_features, in2_features), attr=weight_attr,
                                            axis_names=(axes.MLP, axes.EMBED, None), rngs=rngs)
        self.bias = self.create_parameter((1, out_features), attr=bias_attr, is_bias=True,
                                          axis_names=(None, axes.MLP), rngs=rngs)
        self._name = name

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, value_of(self.weight), value_of(self.bias))

    def extra_repr(self) -> str:
        out_features, in1, in2 = self.weight.shape
        name = f", name={self._name}" if self._name else ""
        return f"in1_features={in1}, in2_features={in2}, out_features={out_features}, dtype={self._dtype}{name}"


class Unflatten(Layer):
    """Split dim `axis` into `shape` (Paddle's `nn.Unflatten`; one entry may be -1).

    Args:
      axis: the dim to split.
      shape: the new dims; their product must equal the size of `axis`.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Unflatten(1, [2, -1])(jnp.ones((3, 8))).shape
      (3, 2, 4)
    """

    def __init__(self, axis, shape, name=None, *, rngs=None):
        super().__init__()
        if isinstance(shape, (jax.Array, np.ndarray)):
            shape = np.asarray(shape).tolist()
        if not is_int(axis):
            raise layer_error("Unflatten", f"axis must be an int; got axis={axis!r}")
        if not isinstance(shape, (list, tuple)) or not shape or not all(is_int(s) for s in shape) \
                or sum(s == -1 for s in shape) > 1 or any(s < -1 or s == 0 for s in shape):
            raise layer_error("Unflatten", f"shape must be a non-empty list of positive ints (one may be -1); "
                                           f"got shape={shape!r}")
        self.axis = int(axis)
        self.shape = tuple(int(s) for s in shape)
        self.name = name

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        x = as_array(input, name="input", op="nn.Unflatten")
        ax = normalize_axis(self.axis, x.ndim, op="nn.Unflatten")
        size = x.shape[ax]
        known = math.prod(s for s in self.shape if s != -1)
        if (-1 in self.shape and size % known) or (-1 not in self.shape and known != size):
            raise layer_error("Unflatten", f"shape={list(self.shape)} does not split dim {self.axis} of size {size} "
                                           f"(x.shape={tuple(x.shape)})")
        return x.reshape(*x.shape[:ax], *self.shape, *x.shape[ax + 1:])

    def extra_repr(self) -> str:
        name = f", name={self.name}" if self.name else ""
        return f"axis={self.axis}, shape={reprlist(self.shape)}{name}"
