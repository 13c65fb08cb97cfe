"""Padding layers: Pad1D/2D/3D and their fixed-mode forms (ZeroPad, ConstantPad,
ReflectionPad, ReplicationPad, CircularPad), each a call to `F.pad`.

`padding` is an int (the same on every side) or 2 * n ints ordered from the last
spatial dim: (left, right[, top, bottom[, front, back]]), as in Paddle. It is
stored as a static tuple, so the layer compiles once per padding.
"""

from __future__ import annotations

import jax
import numpy as np

import pdx.nn.functional as F
from pdx._args import is_int
from pdx.nn._common import layer_error, reprlist
from pdx.nn._layer import Layer

__all__ = [
    "CircularPad1D",
    "CircularPad2D",
    "CircularPad3D",
    "ConstantPad1D",
    "ConstantPad2D",
    "ConstantPad3D",
    "Pad1D",
    "Pad2D",
    "Pad3D",
    "ReflectionPad1D",
    "ReflectionPad2D",
    "ReflectionPad3D",
    "ReplicationPad1D",
    "ReplicationPad2D",
    "ReplicationPad3D",
    "ZeroPad1D",
    "ZeroPad2D",
    "ZeroPad3D",
]

_FORMATS = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
_ALL_FORMATS = tuple(f for formats in _FORMATS.values() for f in formats)
_MODES = ("constant", "reflect", "replicate", "circular")


def _pairs(padding, n: int, layer: str) -> tuple[int, ...]:
    if isinstance(padding, (jax.Array, np.ndarray)):
        padding = np.asarray(padding).reshape(-1).tolist()
    if is_int(padding):
        return (int(padding),) * (2 * n)
    # a list goes to F.pad as given, as in Paddle (which checks it against the input's rank and layout)
    if isinstance(padding, (list, tuple)) and padding and len(padding) % 2 == 0 and all(is_int(p) for p in padding):
        return tuple(int(p) for p in padding)
    raise layer_error(layer, f"padding must be an int or {2 * n} ints (before/after per spatial dim, last dim "
                             f"first); got padding={padding!r}")


class _PadNd(Layer):
    """Base of the padding layers: validated padding, mode, value and layout."""

    _n = 1

    def __init__(self, padding, mode="constant", value=0.0, data_format=None, name=None, *, rngs=None):
        super().__init__()
        layer = type(self).__name__
        if mode not in _MODES:
            raise layer_error(layer, f"mode={mode!r} is not supported; use one of {list(_MODES)}")
        if data_format not in _ALL_FORMATS:  # any of F.pad's, as in Paddle: the layout names the input's rank
            raise layer_error(layer, f"data_format={data_format!r} is not supported; use one of "
                                     f"{list(_FORMATS[self._n])} (or another rank's: {list(_ALL_FORMATS)})")
        self.padding = _pairs(padding, self._n, layer)
        self._mode = mode
        self.value = value
        self._data_format = data_format
        self._name = name

    def forward(self, x):
        if x.ndim != len(self._data_format):
            raise layer_error(type(self).__name__, f"expects a {len(self._data_format)}-D input in "
                                                   f"{self._data_format} layout; got x.shape={tuple(x.shape)}")
        return F.pad(x, list(self.padding), mode=self._mode, value=self.value, data_format=self._data_format)

    def extra_repr(self) -> str:
        name = f", name={self._name}" if self._name else ""
        return (f"padding={reprlist(self.padding)}, mode={self._mode}, value={self.value}, "
                f"data_format={self._data_format}{name}")


class Pad1D(_PadNd):
    """Pad a 3-D input's spatial dims (Paddle's `nn.Pad1D`).

    Args:
      padding: an int, or 2 ints ordered from the last spatial dim (left, right).
      mode: 'constant', 'reflect', 'replicate' or 'circular'.
      value: fill value for 'constant'.
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Pad1D(1)(jnp.ones((1, 1, 3))).shape
      (1, 1, 5)
    """

    _n = 1

    def __init__(self, padding, mode="constant", value=0.0, data_format="NCL", name=None, *, rngs=None):
        super().__init__(padding, mode, value, data_format, name)


class ZeroPad1D(Pad1D):
    """Pad with zeros (Paddle's `nn.ZeroPad1D`).

    Args:
      padding: an int, or 2 ints ordered from the last spatial dim (left, right).
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ZeroPad1D(1)(jnp.ones((1, 1, 3))).shape
      (1, 1, 5)
    """

    def __init__(self, padding, data_format="NCL", name=None, *, rngs=None):
        super().__init__(padding, "constant", 0.0, data_format, name)


class ConstantPad1D(Pad1D):
    """Pad with a constant `value` (Paddle's `nn.ConstantPad1D`).

    Args:
      padding: an int, or 2 ints ordered from the last spatial dim (left, right).
      value: the fill value.
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ConstantPad1D(1, 0.5)(jnp.ones((1, 1, 3))).shape
      (1, 1, 5)
    """

    def __init__(self, padding, value, data_format="NCL", name=None, *, rngs=None):
        super().__init__(padding, "constant", value, data_format, name)


class ReflectionPad1D(Pad1D):
    """Pad by reflecting the input at its edges (Paddle's `nn.ReflectionPad1D`).

    Args:
      padding: an int, or 2 ints ordered from the last spatial dim (left, right).
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReflectionPad1D(1)(jnp.ones((1, 1, 3))).shape
      (1, 1, 5)
    """

    def __init__(self, padding, data_format="NCL", name=None, *, rngs=None):
        super().__init__(padding, "reflect", 0.0, data_format, name)


class ReplicationPad1D(Pad1D):
    """Pad by repeating the edge values (Paddle's `nn.ReplicationPad1D`).

    Args:
      padding: an int, or 2 ints ordered from the last spatial dim (left, right).
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReplicationPad1D(1)(jnp.ones((1, 1, 3))).shape
      (1, 1, 5)
    """

    def __init__(self, padding, data_format="NCL", name=None, *, rngs=None):
        super().__init__(padding, "replicate", 0.0, data_format, name)


class CircularPad1D(Pad1D):
    """Pad by wrapping the input around (Paddle's `nn.CircularPad1D`).

    Args:
      padding: an int, or 2 ints ordered from the last spatial dim (left, right).
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.CircularPad1D(1)(jnp.ones((1, 1, 3))).shape
      (1, 1, 5)
    """

    def __init__(self, padding, data_format="NCL", name=None, *, rngs=None):
        super().__init__(padding, "circular", 0.0, data_format, name)


class Pad2D(_PadNd):
    """Pad a 4-D input's spatial dims (Paddle's `nn.Pad2D`).

    Args:
      padding: an int, or 4 ints ordered from the last spatial dim (left, right, top, bottom).
      mode: 'constant', 'reflect', 'replicate' or 'circular'.
      value: fill value for 'constant'.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Pad2D(1)(jnp.ones((1, 1, 2, 3))).shape
      (1, 1, 4, 5)
    """

    _n = 2

    def __init__(self, padding, mode="constant", value=0.0, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(padding, mode, value, data_format, name)


class ZeroPad2D(Pad2D):
    """Pad with zeros (Paddle's `nn.ZeroPad2D`).

    Args:
      padding: an int, or 4 ints ordered from the last spatial dim (left, right, top, bottom).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ZeroPad2D(1)(jnp.ones((1, 1, 2, 3))).shape
      (1, 1, 4, 5)
    """

    def __init__(self, padding, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(padding, "constant", 0.0, data_format, name)


class ConstantPad2D(Pad2D):
    """Pad with a constant `value` (Paddle's `nn.ConstantPad2D`).

    Args:
      padding: an int, or 4 ints ordered from the last spatial dim (left, right, top, bottom).
      value: the fill value.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ConstantPad2D(1, 0.5)(jnp.ones((1, 1, 2, 3))).shape
      (1, 1, 4, 5)
    """

    def __init__(self, padding, value, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(padding, "constant", value, data_format, name)


class ReflectionPad2D(Pad2D):
    """Pad by reflecting the input at its edges (Paddle's `nn.ReflectionPad2D`).

    Args:
      padding: an int, or 4 ints ordered from the last spatial dim (left, right, top, bottom).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReflectionPad2D(1)(jnp.ones((1, 1, 2, 3))).shape
      (1, 1, 4, 5)
    """

    def __init__(self, padding, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(padding, "reflect", 0.0, data_format, name)


class ReplicationPad2D(Pad2D):
    """Pad by repeating the edge values (Paddle's `nn.ReplicationPad2D`).

    Args:
      padding: an int, or 4 ints ordered from the last spatial dim (left, right, top, bottom).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReplicationPad2D(1)(jnp.ones((1, 1, 2, 3))).shape
      (1, 1, 4, 5)
    """

    def __init__(self, padding, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(padding, "replicate", 0.0, data_format, name)


class CircularPad2D(Pad2D):
    """Pad by wrapping the input around (Paddle's `nn.CircularPad2D`).

    Args:
      padding: an int, or 4 ints ordered from the last spatial dim (left, right, top, bottom).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.CircularPad2D(1)(jnp.ones((1, 1, 2, 3))).shape
      (1, 1, 4, 5)
    """

    def __init__(self, padding, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(padding, "circular", 0.0, data_format, name)


class Pad3D(_PadNd):
    """Pad a 5-D input's spatial dims (Paddle's `nn.Pad3D`).

    Args:
      padding: an int, or 6 ints ordered from the last spatial dim (left, right, top, bottom, front, back).
      mode: 'constant', 'reflect', 'replicate' or 'circular'.
      value: fill value for 'constant'.
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Pad3D(1)(jnp.ones((1, 1, 2, 2, 3))).shape
      (1, 1, 4, 4, 5)
    """

    _n = 3

    def __init__(self, padding, mode="constant", value=0.0, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(padding, mode, value, data_format, name)


class ZeroPad3D(Pad3D):
    """Pad with zeros (Paddle's `nn.ZeroPad3D`).

    Args:
      padding: an int, or 6 ints ordered from the last spatial dim (left, right, top, bottom, front, back).
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ZeroPad3D(1)(jnp.ones((1, 1, 2, 2, 3))).shape
      (1, 1, 4, 4, 5)
    """

    def __init__(self, padding, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(padding, "constant", 0.0, data_format, name)


class ConstantPad3D(Pad3D):
    """Pad with a constant `value` (Paddle's `nn.ConstantPad3D`).

    Args:
      padding: an int, or 6 ints ordered from the last spatial dim (left, right, top, bottom, front, back).
      value: the fill value.
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ConstantPad3D(1, 0.5)(jnp.ones((1, 1, 2, 2, 3))).shape
      (1, 1, 4, 4, 5)
    """

    def __init__(self, padding, value, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(padding, "constant", value, data_format, name)


class ReflectionPad3D(Pad3D):
    """Pad by reflecting the input at its edges (Paddle's `nn.ReflectionPad3D`).

    Args:
      padding: an int, or 6 ints ordered from the last spatial dim (left, right, top, bottom, front, back).
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReflectionPad3D(1)(jnp.ones((1, 1, 2, 2, 3))).shape
      (1, 1, 4, 4, 5)
    """

    def __init__(self, padding, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(padding, "reflect", 0.0, data_format, name)


class ReplicationPad3D(Pad3D):
    """Pad by repeating the edge values (Paddle's `nn.ReplicationPad3D`).

    Args:
      padding: an int, or 6 ints ordered from the last spatial dim (left, right, top, bottom, front, back).
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReplicationPad3D(1)(jnp.ones((1, 1, 2, 2, 3))).shape
      (1, 1, 4, 4, 5)
    """

    def __init__(self, padding, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(padding, "replicate", 0.0, data_format, name)


class CircularPad3D(Pad3D):
    """Pad by wrapping the input around (Paddle's `nn.CircularPad3D`).

    Args:
      padding: an int, or 6 ints ordered from the last spatial dim (left, right, top, bottom, front, back).
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.CircularPad3D(1)(jnp.ones((1, 1, 2, 2, 3))).shape
      (1, 1, 4, 4, 5)
    """

    def __init__(self, padding, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(padding, "circular", 0.0, data_format, name)
