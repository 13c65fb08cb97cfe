"""Pooling layers beyond max/avg: MaxUnPool1D/2D/3D, LPPool1D/2D and
FractionalMaxPool2D/3D, each a call to the matching `F` op.

FractionalMaxPool* without `random_u` draws a fresh offset on every call from
its own `RngState` (seeded from `rngs=` or the global generator), like
Dropout, so the draws are the same eagerly and inside a compiled step that
threads the layer's state.
"""

from __future__ import annotations

import pdx.nn.functional as F
from pdx.nn._common import init_rng_state, layer_error, next_rng, reprlist
from pdx.nn._layer import Layer, as_rngs

__all__ = ["FractionalMaxPool2D", "FractionalMaxPool3D", "LPPool1D", "LPPool2D", "MaxUnPool1D", "MaxUnPool2D",
           "MaxUnPool3D"]


def _static(value):
    if isinstance(value, list):
        return tuple(_static(v) for v in value)
    return value


def _arg(value):
    return [_arg(v) for v in value] if isinstance(value, tuple) else value


class _MaxUnPool(Layer):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None,
                 *, rngs=None):
        super().__init__()
        self.ksize = _static(kernel_size)
        self.stride = _static(stride)
        self.padding = _static(padding)
        self.data_format = data_format
        self.output_size = _static(output_size)
        self.name = name

    def forward(self, x, indices, output_size=None):
        size = output_size if output_size else _arg(self.output_size)
        return type(self)._fn(x, indices, kernel_size=_arg(self.ksize), stride=_arg(self.stride),
                              padding=_arg(self.padding), data_format=self.data_format, output_size=size)

    def extra_repr(self) -> str:
        return f"output_size={reprlist(self.output_size)}"


class _LPPool(Layer):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW",
                 name=None, *, rngs=None):
        super().__init__()
        if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or not norm_type > 0:
            raise layer_error(type(self).__name__, f"norm_type must be a number > 0; got norm_type={norm_type!r}")
        self.norm_type = float(norm_type)
        self.ksize = _static(kernel_size)
        self.stride = self.ksize if stride is None else _static(stride)
        self.padding = _static(padding)
        self.ceil_mode = ceil_mode
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        return type(self)._fn(x, self.norm_type, _arg(self.ksize), _arg(self.stride), _arg(self.padding),
                              self.ceil_mode, self.data_format)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={reprlist(self.ksize)}, stride={reprlist(self.stride)}, "
                f"padding={reprlist(self.padding)}")


class _FractionalMaxPool(Layer):
    _fn = None

    def __init__(self, output_size, kernel_size=None, random_u=None, return_mask=False, name=None, *, rngs=None):
        super().__init__()
        if random_u is not None and (isinstance(random_u, bool) or not isinstance(random_u, (int, float))
                                     or not 0 < random_u < 1):
            raise layer_error(type(self).__name__, f"random_u must be a float in (0, 1) or None; got {random_u!r}")
        self._output_size = _static(output_size)
        self._kernel_size = _static(kernel_size)
        self._random_u = random_u
        self._return_mask = return_mask
        self._name = name
        self.rng = init_rng_state(as_rngs(rngs), op=type(self).__name__) if random_u is None else None

    def forward(self, x):
        key = next_rng(self.rng) if self._random_u is None else None
        return type(self)._fn(x, _arg(self._output_size), _arg(self._kernel_size), self._random_u,
                              self._return_mask, key=key)

    def extra_repr(self) -> str:
        return f"output_size={reprlist(self._output_size)}, return_mask={self._return_mask}"


class MaxUnPool1D(_MaxUnPool):
    """Partial inverse of MaxPool1D: values back at their max positions, zeros elsewhere
    (Paddle's `nn.MaxUnPool1D`).

    Args:
      kernel_size, stride, padding: the pooling's arguments (stride defaults to kernel_size).
      data_format: 'NCL' only (as Paddle).
      output_size: the unpooled spatial size (1 ints, or 3 with N and C); default inverts the
        pooling's size formula. `forward(x, indices, output_size)` may override it.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> y, mask = pdx.nn.functional.max_pool1d(jnp.ones((1, 1, 4)), 2, return_mask=True)
      >>> pdx.nn.MaxUnPool1D(2)(y, mask).shape
      (1, 1, 4)
    """

    _fn = staticmethod(F.max_unpool1d)

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None,
                 *, rngs=None):
        super().__init__(kernel_size, stride, padding, data_format, output_size, name)


class MaxUnPool2D(_MaxUnPool):
    """Partial inverse of MaxPool2D: values back at their max positions, zeros elsewhere
    (Paddle's `nn.MaxUnPool2D`).

    Args:
      kernel_size, stride, padding: the pooling's arguments (stride defaults to kernel_size).
      data_format: 'NCHW' only (as Paddle).
      output_size: the unpooled spatial size (2 ints, or 4 with N and C); default inverts the
        pooling's size formula. `forward(x, indices, output_size)` may override it.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> y, mask = pdx.nn.functional.max_pool2d(jnp.ones((1, 1, 4, 4)), 2, return_mask=True)
      >>> pdx.nn.MaxUnPool2D(2)(y, mask).shape
      (1, 1, 4, 4)
    """

    _fn = staticmethod(F.max_unpool2d)

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None,
                 *, rngs=None):
        super().__init__(kernel_size, stride, padding, data_format, output_size, name)


class MaxUnPool3D(_MaxUnPool):
    """Partial inverse of MaxPool3D: values back at their max positions, zeros elsewhere
    (Paddle's `nn.MaxUnPool3D`).

    Args:
      kernel_size, stride, padding: the pooling's arguments (stride defaults to kernel_size).
      data_format: 'NCDHW' only (as Paddle).
      output_size: the unpooled spatial size (3 ints, or 5 with N and C); default inverts the
        pooling's size formula. `forward(x, indices, output_size)` may override it.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> y, mask = pdx.nn.functional.max_pool3d(jnp.ones((1, 1, 2, 2, 2)), 2, return_mask=True)
      >>> pdx.nn.MaxUnPool3D(2)(y, mask).shape
      (1, 1, 2, 2, 2)
    """

    _fn = staticmethod(F.max_unpool3d)

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None, name=None,
                 *, rngs=None):
        super().__init__(kernel_size, stride, padding, data_format, output_size, name)


class LPPool1D(_LPPool):
    """Power-average pooling (sum of x^p over each window)^(1/p) (Paddle's `nn.LPPool1D`).

    Args:
      norm_type: the power p > 0 (float('inf') is max pooling).
      kernel_size: an int or 1 ints.
      stride: defaults to kernel_size.
      padding: an int, 1 or 2 ints, pairs, 'SAME' or 'VALID'.
      ceil_mode: add partial windows at the trailing edges.
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.LPPool1D(2, 2)(jnp.ones((1, 1, 4))).shape
      (1, 1, 2)
    """

    _fn = staticmethod(F.lp_pool1d)

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCL",
                 name=None, *, rngs=None):
        super().__init__(norm_type, kernel_size, stride, padding, ceil_mode, data_format, name)
        self.stride = _static(stride)  # Paddle's LPPool1D keeps None (F defaults it to kernel_size)


class LPPool2D(_LPPool):
    """Power-average pooling (sum of x^p over each window)^(1/p) (Paddle's `nn.LPPool2D`).

    Args:
      norm_type: the power p > 0 (float('inf') is max pooling).
      kernel_size: an int or 2 ints.
      stride: defaults to kernel_size.
      padding: an int, 2 or 4 ints, pairs, 'SAME' or 'VALID'.
      ceil_mode: add partial windows at the trailing edges.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.LPPool2D(2, 2)(jnp.ones((1, 1, 4, 4))).shape
      (1, 1, 2, 2)
    """

    _fn = staticmethod(F.lp_pool2d)

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW",
                 name=None, *, rngs=None):
        super().__init__(norm_type, kernel_size, stride, padding, ceil_mode, data_format, name)


class FractionalMaxPool2D(_FractionalMaxPool):
    """Fractional max pooling to `output_size` (Graham 2015; Paddle's `nn.FractionalMaxPool2D`).

    Args:
      output_size: an int or 2 ints (None entries keep that dim).
      kernel_size: None (disjoint windows) or an int / 2 ints (overlapping windows).
      random_u: a fixed offset in (0, 1), or None to draw one per call from the layer's key.
      return_mask: also return the flat index of each max.
      name: ignored (Paddle compatibility).
      rngs: keyword-only seed of the layer's key: None (global generator), an int, a key or nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.FractionalMaxPool2D(3)(jnp.ones((1, 1, 7, 7))).shape
      (1, 1, 3, 3)
    """

    _fn = staticmethod(F.fractional_max_pool2d)

    def __init__(self, output_size, kernel_size=None, random_u=None, return_mask=False, name=None, *, rngs=None):
        super().__init__(output_size, kernel_size, random_u, return_mask, name, rngs=rngs)


class FractionalMaxPool3D(_FractionalMaxPool):
    """Fractional max pooling to `output_size` (Graham 2015; Paddle's `nn.FractionalMaxPool3D`).

    Args:
      output_size: an int or 3 ints (None entries keep that dim).
      kernel_size: None (disjoint windows) or an int / 3 ints (overlapping windows).
      random_u: a fixed offset in (0, 1), or None to draw one per call from the layer's key.
      return_mask: also return the flat index of each max.
      name: ignored (Paddle compatibility).
      rngs: keyword-only seed of the layer's key: None (global generator), an int, a key or nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.FractionalMaxPool3D(3)(jnp.ones((1, 1, 5, 5, 5))).shape
      (1, 1, 3, 3, 3)
    """

    _fn = staticmethod(F.fractional_max_pool3d)

    def __init__(self, output_size, kernel_size=None, random_u=None, return_mask=False, name=None, *, rngs=None):
        super().__init__(output_size, kernel_size, random_u, return_mask, name, rngs=rngs)
