"""More creation ops: copies and sums (assign, clone, add_n), ranges, DLPack, windows, parameters.

Paddle's in-place forms (`assign(x, output)`, `increment`) return a new
array in pdx: JAX arrays are immutable, so rebind the result
(`x = pdx.increment(x)`).
"""

from __future__ import annotations

import math

import jax
import jax.dlpack
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float
from pdx.ops._checks import dtype_arg, static_int
from pdx.ops._common import as_array, op_error
from pdx.ops._creation import to_tensor
from pdx.ops._manipulation import _tensor_list


def assign(x, output=None):
    """A copy of `x` (a tensor, numpy array, number or nested list) as a tensor.

    Paddle writes into `output` in place; pdx cannot mutate arrays, so it
    returns the new value (use the return value, `output` is ignored).

    Args:
      x: a tensor, numpy array, number or nested list (numbers become shape `[1]`).
      output: ignored (see above).

    Returns:
      A new tensor.

    Example:
      >>> import pdx
      >>> pdx.assign([1.0, 2.0]).tolist()
      [1.0, 2.0]
    """
    if isinstance(x, (int, float, bool)):
        x = [x]
    if isinstance(x, (jax.Array, np.ndarray)):
        return jnp.array(x, copy=True)
    return to_tensor(x)


def clone(x, name=None):
    """A copy of `x` (gradients flow through it, unlike `detach`).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A tensor equal to `x`.

    Example:
      >>> import pdx
      >>> pdx.clone(pdx.ones([2])).tolist()
      [1.0, 1.0]
    """
    return jnp.array(as_array(x, op="clone"), copy=True)


def add_n(inputs, name=None):
    """Elementwise sum of a list of equally shaped tensors.

    Args:
      inputs: a tensor or a list/tuple of tensors with one shape and dtype.
      name: ignored.

    Returns:
      The sum.

    Example:
      >>> import pdx
      >>> pdx.add_n([pdx.ones([2]), pdx.ones([2])]).tolist()
      [2.0, 2.0]
    """
    if isinstance(inputs, (jax.Array, np.ndarray)):
        inputs = [inputs]
    arrays = _tensor_list(inputs, "add_n", "inputs")
    for i, a in enumerate(arrays[1:], start=1):
        if a.shape != arrays[0].shape:
            raise op_error("add_n", f"inputs[0].shape={tuple(arrays[0].shape)} and inputs[{i}].shape="
                                    f"{tuple(a.shape)} differ; add_n does not broadcast")
    out = arrays[0]
    for a in arrays[1:]:
        out = out + a
    return out


def increment(x, value=1.0, name=None):
    """`x + value` for a 1-element tensor (Paddle's loop counter op), as a new tensor.

    Args:
      x: a tensor with one element.
      value: the increment.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.increment(pdx.to_tensor([1.0])).tolist()
      [2.0]
    """
    x = as_array(x, op="increment")
    if x.size != 1:
        raise op_error("increment", f"`x` must have exactly one element; got x.shape={tuple(x.shape)}")
    return (x + value).astype(x.dtype)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """A new trainable parameter (an `nnx.Param`), like `Layer.create_parameter`.

    Assign it to a Layer attribute to register it. The initial value comes from
    `attr`'s initializer, else `default_initializer`, else XavierUniform
    (Constant(0) when `is_bias`), drawing from the global generator (`pdx.seed`).

    Args:
      shape: the parameter shape.
      dtype: the parameter dtype.
      name: optional parameter name (recorded in the metadata).
      attr: None, a `ParamAttr` or an initializer.
      is_bias: use the bias default initializer.
      default_initializer: initializer used when `attr` names none.

    Returns:
      An `nnx.Param`.

    Example:
      >>> import pdx
      >>> pdx.create_parameter([2, 3], "float32").shape
      (2, 3)
    """
    from pdx.nn import Layer  # pdx.nn builds on pdx.ops
    from pdx.nn import ParamAttr

    if attr is None and name is not None:
        attr = ParamAttr(name=name)
    return Layer(dtype=dtype).create_parameter(shape, attr=attr, dtype=dtype, is_bias=is_bias,
                                               default_initializer=default_initializer)


def logspace(start, stop, num, base=10.0, dtype=None, name=None):
    """`num` values `base ** t` for `t` evenly spaced over [start, stop].

    Args:
      start: first exponent.
      stop: last exponent.
      num: number of values.
      base: the base.
      dtype: output dtype; default float.
      name: ignored.

    Returns:
      A 1-D tensor.

    Example:
      >>> import pdx
      >>> pdx.logspace(0, 2, 3).tolist()
      [1.0, 10.0, 100.0]
    """
    num = static_int(num, op="logspace", name="num")
    if num < 0:
        raise op_error("logspace", f"`num`={num} must be >= 0")
    dt = dtype_arg(dtype, op="logspace") or default_float()
    vals = jnp.logspace(float(start), float(stop), num, base=float(base), dtype=jnp.float32)
    return (jnp.round(vals) if jnp.issubdtype(dt, jnp.integer) else vals).astype(dt)


def range(start=0, end=None, step=1, dtype=None, *, name=None):  # noqa: A001 (Paddle's name)
    """Values from `start` to `end` *inclusive* in steps of `step` (Paddle's deprecated `range`).

    Prefer `pdx.arange`, which excludes `end`.

    Args:
      start: first value (or `end` when `end` is None, starting at 0).
      end: last value, included when reached.
      step: the step (non-zero).
      dtype: output dtype; default float.
      name: ignored.

    Returns:
      A 1-D tensor.

    Example:
      >>> import pdx
      >>> pdx.range(0, 3).tolist()
      [0.0, 1.0, 2.0, 3.0]
    """
    if end is None:
        start, end = 0, start
    start, end, step = (float(np.asarray(v)) for v in (start, end, step))
    if step == 0:
        raise op_error("range", "`step` must be non-zero")
    n = max(int(math.floor((end - start) / step + 1e-9)) + 1, 0)
    dt = dtype_arg(dtype, op="range") or default_float()
    return (start + step * jnp.arange(n, dtype=jnp.float32)).astype(dt)


def empty_like(x, dtype=None, name=None):
    """A tensor shaped like `x` (zeros: XLA has no uninitialized memory).

    Args:
      x: a tensor.
      dtype: output dtype; default `x.dtype`.
      name: ignored.

    Returns:
      A zero tensor of `x.shape`.

    Example:
      >>> import pdx
      >>> pdx.empty_like(pdx.ones([2, 3])).shape
      (2, 3)
    """
    x = as_array(x, op="empty_like")
    return jnp.zeros(x.shape, dtype_arg(dtype, op="empty_like") or x.dtype)


def from_dlpack(dlpack):
    """A tensor from any object with `__dlpack__` (torch, paddle, numpy, cupy arrays).

    Args:
      dlpack: an object implementing the DLPack protocol.

    Returns:
      A `jax.Array` (zero-copy where the device allows).

    Example:
      >>> import numpy as np, pdx
      >>> pdx.from_dlpack(np.arange(3)).tolist()
      [0, 1, 2]
    """
    if not hasattr(dlpack, "__dlpack__"):
        raise TypeError("pdx.from_dlpack: `dlpack` must implement __dlpack__ (a torch/paddle/numpy array); "
                        f"got {type(dlpack).__name__}. Raw capsules are not accepted by JAX.")
    if hasattr(dlpack, "__dlpack_device__"):
        kind, index = dlpack.__dlpack_device__()
        if index is None:  # paddle reports no device index for CPU tensors
            dlpack = _DeviceIndexed(dlpack, (kind, 0))
    return jax.dlpack.from_dlpack(dlpack)


class _DeviceIndexed:
    """A DLPack producer with its device index filled in."""

    def __init__(self, source, device):
        self._source, self._device = source, device

    def __dlpack__(self, *args, **kwargs):
        return self._source.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._device


def to_dlpack(x):
    """A DLPack capsule for `x` (most libraries now accept the array itself: `torch.from_dlpack(x)`).

    Args:
      x: a tensor.

    Returns:
      A PyCapsule named 'dltensor'.

    Example:
      >>> import pdx
      >>> type(pdx.to_dlpack(pdx.ones([2]))).__name__
      'PyCapsule'
    """
    return as_array(x, op="to_dlpack").__dlpack__()


def from_numpy(ndarray):
    """A tensor from a numpy array, keeping its dtype (64-bit types narrow without x64).

    Args:
      ndarray: a numpy array.

    Returns:
      A `jax.Array`.

    Example:
      >>> import numpy as np, pdx
      >>> pdx.from_numpy(np.array([1, 2], np.int32)).tolist()
      [1, 2]
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"pdx.from_numpy: `ndarray` must be a numpy array; got {type(ndarray).__name__}")
    return jnp.asarray(ndarray)


def as_tensor(data, dtype=None):
    """A tensor from data (like `to_tensor`; an existing tensor of the right dtype is returned as is).

    Args:
      data: a tensor, numpy array, number or nested list.
      dtype: optional dtype.

    Returns:
      A `jax.Array`.

    Example:
      >>> import pdx
      >>> pdx.as_tensor([1, 2]).tolist()
      [1, 2]
    """
    if isinstance(data, jax.Array) and (dtype is None or dtype_arg(dtype, op="as_tensor") == data.dtype):
        return data
    return to_tensor(data, dtype=dtype)


def asarray(obj, *, dtype=None, copy=None):
    """A tensor from array-like data (the array API's `asarray`).

    Args:
      obj: a tensor, numpy array, number or nested list.
      dtype: optional dtype.
      copy: True always copies; None/False reuse an existing tensor when possible.

    Returns:
      A `jax.Array`.

    Example:
      >>> import pdx
      >>> pdx.asarray([1.0, 2.0]).tolist()
      [1.0, 2.0]
    """
    out = as_tensor(obj, dtype=dtype)
    return jnp.array(out, copy=True) if copy else out


def _window(op, n, periodic, dtype, fn):
    n = static_int(n, op=op, name="window_length")
    if n < 0:
        raise op_error(op, f"`window_length`={n} must be >= 0")
    dt = dtype_arg(dtype, op=op) or default_float()
    if n <= 1:
        return jnp.ones((n,), dt)
    m = n + 1 if periodic else n
    w = fn(np.arange(m, dtype=np.float64), m)
    return jnp.asarray(w[:n], dt)


def _cosine(*coeffs):
    def fn(k, m):
        t = 2 * np.pi * k / (m - 1)
        return sum(c * np.cos(i * t) * (-1) ** i for i, c in enumerate(coeffs))
    return fn


def hann_window(window_length, periodic=True, *, dtype="float32"):
    """Hann window `0.5 - 0.5 cos(2 pi k / (M - 1))` (periodic: of length N + 1, last point dropped).

    Args:
      window_length: N.
      periodic: a periodic window for spectral analysis (True) or a symmetric one.
      dtype: output dtype.

    Returns:
      A 1-D tensor of length N.

    Example:
      >>> import pdx
      >>> pdx.hann_window(4).tolist()
      [0.0, 0.5, 1.0, 0.5]
    """
    return _window("hann_window", window_length, periodic, dtype, _cosine(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype="float32"):
    """Hamming window `alpha - beta cos(2 pi k / (M - 1))`.

    Args:
      window_length: N.
      periodic: periodic (True) or symmetric window.
      alpha: constant term.
      beta: cosine coefficient.
      dtype: output dtype.

    Returns:
      A 1-D tensor of length N.

    Example:
      >>> import pdx
      >>> [round(v, 2) for v in pdx.hamming_window(4).tolist()]
      [0.08, 0.54, 1.0, 0.54]
    """
    return _window("hamming_window", window_length, periodic, dtype, _cosine(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype="float32"):
    """Blackman window `0.42 - 0.5 cos(t) + 0.08 cos(2t)`.

    Args:
      window_length: N.
      periodic: periodic (True) or symmetric window.
      dtype: output dtype.

    Returns:
      A 1-D tensor of length N.

    Example:
      >>> import pdx
      >>> [round(v, 2) for v in pdx.blackman_window(4).tolist()]
      [-0.0, 0.34, 1.0, 0.34]
    """
    return _window("blackman_window", window_length, periodic, dtype, _cosine(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype="float32"):
    """Bartlett (triangular) window `1 - |2k / (M - 1) - 1|`.

    Args:
      window_length: N.
      periodic: periodic (True) or symmetric window.
      dtype: output dtype.

    Returns:
      A 1-D tensor of length N.

    Example:
      >>> import pdx
      >>> [round(v, 2) for v in pdx.bartlett_window(5).tolist()]
      [0.0, 0.4, 0.8, 0.8, 0.4]
    """
    return _window("bartlett_window", window_length, periodic, dtype,
                   lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype="float32"):
    """Kaiser window `I0(beta sqrt(1 - (2k / (M - 1) - 1)^2)) / I0(beta)`.

    Args:
      window_length: N.
      periodic: periodic (True) or symmetric window.
      beta: shape parameter.
      dtype: output dtype.

    Returns:
      A 1-D tensor of length N.

    Example:
      >>> import pdx
      >>> pdx.kaiser_window(3, periodic=False).tolist()[1]
      1.0
    """
    return _window("kaiser_window", window_length, periodic, dtype,
                   lambda k, m: np.i0(beta * np.sqrt(1 - (2 * k / (m - 1) - 1) ** 2)) / np.i0(beta))
