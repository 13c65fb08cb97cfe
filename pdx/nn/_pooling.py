"""Pooling layers (Paddle's MaxPool*/AvgPool*/AdaptiveAvgPool*/AdaptiveMaxPool*).

Stateless: each layer keeps its (hashable, static) configuration and calls the
functional op; see `pdx.nn.functional` for the exact padding and ceil_mode rules.
"""

from __future__ import annotations

import pdx.nn.functional as F
from pdx.nn._layer import Layer

__all__ = ["AdaptiveAvgPool1D", "AdaptiveAvgPool2D", "AdaptiveAvgPool3D", "AdaptiveMaxPool1D",
           "AdaptiveMaxPool2D", "AdaptiveMaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "MaxPool1D",
           "MaxPool2D", "MaxPool3D"]


def _static(value):
    """Lists become tuples so the configuration stays hashable (nnx static state)."""
    if isinstance(value, list):
        return tuple(_static(v) for v in value)
    return value


def _call(value):
    """Back to Paddle's list form for the functional call."""
    if isinstance(value, tuple):
        return [_call(v) for v in value]
    return value


class _Pool(Layer):
    """kernel_size/stride/padding pooling; subclasses name the F op and its extras."""

    _fn = ""

    def __init__(self, kernel_size, stride, padding, name, **options):
        super().__init__()
        self.ksize = _static(kernel_size)
        self.stride = _static(stride)
        self.padding = _static(padding)
        self.name = name
        self._options = tuple(options.items())

    def forward(self, x):
        return getattr(F, self._fn)(x, kernel_size=_call(self.ksize), stride=_call(self.stride),
                                    padding=_call(self.padding), **dict(self._options))

    def extra_repr(self) -> str:
        return f"kernel_size={_call(self.ksize)}, stride={_call(self.stride)}, padding={_call(self.padding)}"


_POOL_ARGS = """
    Args:
      kernel_size: int or one int per spatial dim.
      stride: int, one int per spatial dim, or None (= kernel_size).
      padding: int, ints per spatial dim, (before, after) per dim, 'SAME' or 'VALID'.
"""


class MaxPool1D(_Pool):
    __doc__ = f"""1-D max pooling over [N, C, L] inputs (Paddle's `nn.MaxPool1D`).
{_POOL_ARGS}
      return_mask: also return the argmax indices.
      ceil_mode: round the output size up.
      name: ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.MaxPool1D(2)(jnp.ones((1, 2, 6))).shape
      (1, 2, 3)
    """
    _fn = "max_pool1d"

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None, *, rngs=None):
        super().__init__(kernel_size, stride, padding, name, return_mask=return_mask, ceil_mode=ceil_mode)


class MaxPool2D(_Pool):
    __doc__ = f"""2-D max pooling (Paddle's `nn.MaxPool2D`).
{_POOL_ARGS}
      return_mask: also return the argmax indices.
      ceil_mode: round the output size up.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.MaxPool2D(2, 2)(jnp.ones((1, 3, 8, 8))).shape
      (1, 3, 4, 4)
    """
    _fn = "max_pool2d"

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format="NCHW", name=None, *, rngs=None):
        super().__init__(kernel_size, stride, padding, name, return_mask=return_mask, ceil_mode=ceil_mode,
                         data_format=data_format)


class MaxPool3D(_Pool):
    __doc__ = f"""3-D max pooling (Paddle's `nn.MaxPool3D`).
{_POOL_ARGS}
      return_mask: also return the argmax indices.
      ceil_mode: round the output size up.
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.MaxPool3D(2)(jnp.ones((1, 1, 4, 4, 4))).shape
      (1, 1, 2, 2, 2)
    """
    _fn = "max_pool3d"

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(kernel_size, stride, padding, name, return_mask=return_mask, ceil_mode=ceil_mode,
                         data_format=data_format)


class AvgPool1D(_Pool):
    __doc__ = f"""1-D average pooling over [N, C, L] inputs (Paddle's `nn.AvgPool1D`).
{_POOL_ARGS}
      exclusive: leave padded positions out of the average.
      ceil_mode: round the output size up.
      name: ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AvgPool1D(2)(jnp.ones((1, 2, 6))).shape
      (1, 2, 3)
    """
    _fn = "avg_pool1d"

    # Paddle's 1-D signature puts exclusive before ceil_mode (the 2-D/3-D ones do not).
    def __init__(self, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None, *, rngs=None):
        super().__init__(kernel_size, stride, padding, name, exclusive=exclusive, ceil_mode=ceil_mode)


class AvgPool2D(_Pool):
    __doc__ = f"""2-D average pooling (Paddle's `nn.AvgPool2D`).
{_POOL_ARGS}
      ceil_mode: round the output size up.
      exclusive: leave padded positions out of the average.
      divisor_override: divide by this instead of the window size.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AvgPool2D(2)(jnp.ones((1, 3, 8, 8))).shape
      (1, 3, 4, 4)
    """
    _fn = "avg_pool2d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
                 divisor_override=None, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(kernel_size, stride, padding, name, ceil_mode=ceil_mode, exclusive=exclusive,
                         divisor_override=divisor_override, data_format=data_format)


class AvgPool3D(_Pool):
    __doc__ = f"""3-D average pooling (Paddle's `nn.AvgPool3D`).
{_POOL_ARGS}
      ceil_mode: round the output size up.
      exclusive: leave padded positions out of the average.
      divisor_override: divide by this instead of the window size.
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AvgPool3D(2)(jnp.ones((1, 1, 4, 4, 4))).shape
      (1, 1, 2, 2, 2)
    """
    _fn = "avg_pool3d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
                 divisor_override=None, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(kernel_size, stride, padding, name, ceil_mode=ceil_mode, exclusive=exclusive,
                         divisor_override=divisor_override, data_format=data_format)


class _AdaptivePool(Layer):
    """Pooling to a fixed output size; subclasses name the F op and its extras."""

    _fn = ""

    def __init__(self, output_size, name, **options):
        super().__init__()
        self._output_size = _static(output_size)
        self._name = name
        self._options = tuple(options.items())

    @property
    def output_size(self):
        return _call(self._output_size)

    def forward(self, x):
        return getattr(F, self._fn)(x, output_size=self.output_size, **dict(self._options))

    def extra_repr(self) -> str:
        extras = "".join(f", {k}={v}" for k, v in self._options if k == "return_mask")
        return f"output_size={self.output_size}{extras}"


class AdaptiveAvgPool1D(_AdaptivePool):
    """Average pooling of [N, C, L] to length `output_size` (Paddle's `nn.AdaptiveAvgPool1D`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AdaptiveAvgPool1D(2)(jnp.ones((1, 3, 7))).shape
      (1, 3, 2)
    """

    _fn = "adaptive_avg_pool1d"

    def __init__(self, output_size, name=None, *, rngs=None):
        super().__init__(output_size, name)


class AdaptiveAvgPool2D(_AdaptivePool):
    """Average pooling to `output_size` (int, or [H, W] with None keeping a dim) (Paddle's `nn.AdaptiveAvgPool2D`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AdaptiveAvgPool2D(1)(jnp.ones((2, 3, 5, 7))).shape
      (2, 3, 1, 1)
    """

    _fn = "adaptive_avg_pool2d"

    def __init__(self, output_size, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(output_size, name, data_format=data_format)


class AdaptiveAvgPool3D(_AdaptivePool):
    """Average pooling to `output_size` over [N, C, D, H, W] (Paddle's `nn.AdaptiveAvgPool3D`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AdaptiveAvgPool3D(1)(jnp.ones((1, 2, 3, 3, 3))).shape
      (1, 2, 1, 1, 1)
    """

    _fn = "adaptive_avg_pool3d"

    def __init__(self, output_size, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(output_size, name, data_format=data_format)


class AdaptiveMaxPool1D(_AdaptivePool):
    """Max pooling of [N, C, L] to length `output_size` (Paddle's `nn.AdaptiveMaxPool1D`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AdaptiveMaxPool1D(2)(jnp.ones((1, 3, 7))).shape
      (1, 3, 2)
    """

    _fn = "adaptive_max_pool1d"

    def __init__(self, output_size, return_mask=False, name=None, *, rngs=None):
        super().__init__(output_size, name, return_mask=return_mask)


class AdaptiveMaxPool2D(_AdaptivePool):
    """Max pooling to `output_size` over [N, C, H, W] (Paddle's `nn.AdaptiveMaxPool2D`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AdaptiveMaxPool2D(2)(jnp.ones((1, 3, 5, 5))).shape
      (1, 3, 2, 2)
    """

    _fn = "adaptive_max_pool2d"

    def __init__(self, output_size, return_mask=False, name=None, *, rngs=None):
        super().__init__(output_size, name, return_mask=return_mask)


class AdaptiveMaxPool3D(_AdaptivePool):
    """Max pooling to `output_size` over [N, C, D, H, W] (Paddle's `nn.AdaptiveMaxPool3D`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AdaptiveMaxPool3D(1)(jnp.ones((1, 2, 3, 3, 3))).shape
      (1, 2, 1, 1, 1)
    """

    _fn = "adaptive_max_pool3d"

    def __init__(self, output_size, return_mask=False, name=None, *, rngs=None):
        super().__init__(output_size, name, return_mask=return_mask)
