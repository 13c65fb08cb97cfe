"""Tensor creation ops: to_tensor, constants, ranges, identity, triangles, diag, meshgrid.

Floating results default to `pdx.get_default_dtype()` ('float32'); integer
results default to Paddle's int64, which is int32 unless `jax_enable_x64` is on.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float, default_int
from pdx._args import attr_error
from pdx.ops._checks import check_rank, dtype_arg, static_int
from pdx.ops._common import as_array, op_error, shape_list


def _shape_arg(shape, op):
    dims = shape_list(shape, op=op)
    if any(d < 0 for d in dims):
        raise op_error(op, f"`shape`={list(dims)} has a negative dim; every dim must be >= 0")
    return dims


def _python_dtype(data):
    """Paddle's dtype for Python data: floats -> default float, ints -> int64, bools -> bool."""
    kind = np.asarray(data).dtype.kind
    if kind == "f":
        return default_float()
    if kind in "iu":
        return default_int()
    if kind == "c":
        return jnp.complex64
    return None


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """Create a tensor from Python data, a numpy array or another tensor.

    Python floats become the default float dtype and Python ints become int64
    (int32 without x64), as in Paddle. numpy arrays keep their dtype (float64
    narrows to float32 without x64). `place` is accepted and ignored: placement
    is JAX's business (`jax.device_put`). `stop_gradient=True` (Paddle's default)
    wraps the result in `jax.lax.stop_gradient`, so no gradient flows back into
    `data` when it is traced.

    Args:
      data: a scalar, (nested) list/tuple, numpy array or tensor.
      dtype: optional target dtype ('float32', 'int64', ...).
      place: ignored.
      stop_gradient: block gradients into `data` (Paddle semantics).

    Returns:
      A jax.Array.

    Example:
      >>> import pdx
      >>> pdx.to_tensor([1.0, 2.0]).dtype
      dtype('float32')
    """
    del place
    target = dtype_arg(dtype, op="to_tensor")
    if isinstance(data, (jax.Array, np.ndarray, np.generic)):
        out = as_array(data, name="data", op="to_tensor", dtype=target)
    else:
        try:
            inferred = _python_dtype(data)
        except (TypeError, ValueError):
            inferred = None  # e.g. a list holding traced tensors: let jnp decide
        out = as_array(data, name="data", op="to_tensor", dtype=target or inferred)
    return jax.lax.stop_gradient(out) if stop_gradient else out


def zeros(shape, dtype=None, name=None):
    """A tensor of zeros.

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      dtype: output dtype; default float.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor of `shape` filled with 0.

    Example:
      >>> import pdx
      >>> pdx.zeros([2, 3]).shape
      (2, 3)
    """
    return jnp.zeros(_shape_arg(shape, "zeros"), dtype_arg(dtype, op="zeros") or default_float())


def ones(shape, dtype=None, name=None):
    """A tensor of ones.

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      dtype: output dtype; default float.
      name: ignored.

    Returns:
      A tensor of `shape` filled with 1.

    Example:
      >>> import pdx
      >>> pdx.ones([2]).tolist()
      [1.0, 1.0]
    """
    return jnp.ones(_shape_arg(shape, "ones"), dtype_arg(dtype, op="ones") or default_float())


def empty(shape, dtype=None, name=None):
    """An "uninitialized" tensor; pdx returns zeros (XLA has no uninitialized memory).

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      dtype: output dtype; default float.
      name: ignored.

    Returns:
      A tensor of `shape` filled with 0.

    Example:
      >>> import pdx
      >>> pdx.empty([2, 2]).shape
      (2, 2)
    """
    return jnp.zeros(_shape_arg(shape, "empty"), dtype_arg(dtype, op="empty") or default_float())


def _fill_scalar(fill_value, op):
    if isinstance(fill_value, str):
        try:
            return float(fill_value)
        except ValueError:
            raise op_error(op, f"`fill_value`={fill_value!r} is not a number (strings like 'inf' "
                               "or '1.5' are accepted)") from None
    return fill_value


def full(shape, fill_value, dtype=None, name=None):
    """A tensor filled with `fill_value`.

    With `dtype=None` Paddle gives bool for a bool fill value and the default
    float dtype for every other number (also for ints).

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      fill_value: a number, a numeric string such as 'inf', or a 0-D tensor.
      dtype: output dtype.
      name: ignored.

    Returns:
      A tensor of `shape` filled with `fill_value`.

    Example:
      >>> import pdx
      >>> pdx.full([2], 3).tolist()
      [3.0, 3.0]
    """
    fill_value = _fill_scalar(fill_value, "full")
    dt = dtype_arg(dtype, op="full")
    if dt is None:
        is_bool = isinstance(fill_value, (bool, np.bool_)) or (
            isinstance(fill_value, jax.Array) and fill_value.dtype == jnp.bool_)
        dt = jnp.bool_ if is_bool else default_float()
    return jnp.full(_shape_arg(shape, "full"), fill_value, dt)


def zeros_like(x, dtype=None, name=None):
    """Zeros with the shape (and by default the dtype) of `x`.

    Args:
      x: a tensor.
      dtype: output dtype; default `x.dtype`.
      name: ignored.

    Returns:
      A tensor like `x` filled with 0.

    Example:
      >>> import pdx
      >>> pdx.zeros_like(pdx.ones([2])).tolist()
      [0.0, 0.0]
    """
    x = as_array(x, op="zeros_like")
    return jnp.zeros(x.shape, dtype_arg(dtype, op="zeros_like") or x.dtype)


def ones_like(x, dtype=None, name=None):
    """Ones with the shape (and by default the dtype) of `x`.

    Args:
      x: a tensor.
      dtype: output dtype; default `x.dtype`.
      name: ignored.

    Returns:
      A tensor like `x` filled with 1.

    Example:
      >>> import pdx
      >>> pdx.ones_like(pdx.zeros([2])).tolist()
      [1.0, 1.0]
    """
    x = as_array(x, op="ones_like")
    return jnp.ones(x.shape, dtype_arg(dtype, op="ones_like") or x.dtype)


def full_like(x, fill_value, dtype=None, name=None):
    """A tensor like `x` filled with `fill_value` (cast to `x.dtype` unless `dtype` is given).

    Args:
      x: a tensor.
      fill_value: a number, numeric string or 0-D tensor.
      dtype: output dtype; default `x.dtype`.
      name: ignored.

    Returns:
      A tensor with `x`'s shape.

    Example:
      >>> import pdx
      >>> pdx.full_like(pdx.zeros([2]), 7.0).tolist()
      [7.0, 7.0]
    """
    x = as_array(x, op="full_like")
    fill_value = _fill_scalar(fill_value, "full_like")
    return jnp.full(x.shape, fill_value, dtype_arg(dtype, op="full_like") or x.dtype)


def _scalar_arg(value, op, name):
    if isinstance(value, (jax.Array, np.ndarray)):
        if value.size != 1:
            raise op_error(op, f"`{name}` must be a scalar or a 1-element tensor; got shape {tuple(value.shape)}")
        try:
            return np.asarray(value).reshape(()).item()
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as e:
            raise TypeError(f"pdx.{op}: `{name}` decides the output shape, so it must be known at "
                            "trace time; pass a Python number under jit") from e
    return value


def arange(start=0, end=None, step=1, dtype=None, *, name=None):
    """Evenly spaced values in [start, end) with spacing `step`.

    With `dtype=None` the result is int64 (int32 without x64) when start, end
    and step are all integers, and the default float otherwise.

    Args:
      start: first value; the end when `end` is None.
      end: exclusive upper bound.
      step: spacing (non-zero).
      dtype: output dtype.
      name: ignored.

    Returns:
      A 1-D tensor.

    Example:
      >>> import pdx
      >>> pdx.arange(5).tolist()
      [0, 1, 2, 3, 4]
    """
    start, end, step = (_scalar_arg(v, "arange", n) for v, n in ((start, "start"), (end, "end"), (step, "step")))
    if end is None:
        start, end = 0, start
    if step == 0:
        raise op_error("arange", "`step` must be non-zero")
    dt = dtype_arg(dtype, op="arange")
    if dt is None:
        all_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end, step))
        dt = default_int() if all_int else default_float()
    if jnp.issubdtype(dt, jnp.floating):
        # Paddle computes start + i * step; jnp.arange on floats can drift for long ranges.
        n = max(int(np.ceil((end - start) / step)), 0)
        return (start + jnp.arange(n, dtype=jnp.float32) * step).astype(dt)
    return jnp.arange(start, end, step, dtype=dt)


def linspace(start, stop, num, dtype=None, name=None):
    """`num` evenly spaced values from `start` to `stop`, both included.

    Integer dtypes truncate the floating values toward zero, as Paddle does.

    Args:
      start: first value (number or 1-element tensor).
      stop: last value.
      num: number of values (int or 1-element tensor).
      dtype: output dtype; default float.
      name: ignored.

    Returns:
      A 1-D tensor of length `num`.

    Example:
      >>> import pdx
      >>> pdx.linspace(0, 1, 3).tolist()
      [0.0, 0.5, 1.0]
    """
    num = static_int(num, op="linspace", name="num")
    if num < 1:
        raise op_error("linspace", f"`num`={num} must be >= 1")
    start = _scalar_arg(start, "linspace", "start")
    stop = _scalar_arg(stop, "linspace", "stop")
    dt = dtype_arg(dtype, op="linspace") or default_float()
    values = jnp.linspace(start, stop, num, dtype=jnp.float32)
    return values.astype(dt)


def _eye_size(value, name: str) -> int:
    """eye's sizes as Paddle reads them: a non-negative int, or a 1-element tensor of any real dtype
    (truncated, `paddle.eye(paddle.to_tensor([5.0]))` is 5x5); a float or a negative int is a TypeError."""
    if isinstance(value, (jax.Array, np.ndarray)) and value.size == 1 and jnp.issubdtype(value.dtype, jnp.floating):
        value = value.astype(np.int32)
    size = static_int(value, op="eye", name=name)
    if size < 0:
        raise attr_error("eye", f"`{name}` must be a non-negative int; got {name}={size}")
    return size


def eye(num_rows, num_columns=None, dtype=None, name=None):
    """A 2-D tensor with ones on the diagonal.

    Args:
      num_rows: number of rows: a non-negative int or a 1-element tensor.
      num_columns: number of columns (the same forms); default `num_rows`.
      dtype: output dtype; default float.
      name: ignored.

    Returns:
      A `[num_rows, num_columns]` tensor.

    Example:
      >>> import pdx
      >>> pdx.eye(2).tolist()
      [[1.0, 0.0], [0.0, 1.0]]
    """
    rows = _eye_size(num_rows, "num_rows")
    cols = rows if num_columns is None else _eye_size(num_columns, "num_columns")
    return jnp.eye(rows, cols, dtype=dtype_arg(dtype, op="eye") or default_float())


def tril(x, diagonal=0, name=None):
    """The lower triangle of the last two dims of `x`; the rest is zeroed.

    Args:
      x: a tensor of rank >= 2.
      diagonal: 0 keeps the main diagonal; > 0 keeps more, < 0 fewer.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.tril(pdx.ones([2, 2])).tolist()
      [[1.0, 0.0], [1.0, 1.0]]
    """
    x = as_array(x, op="tril")
    check_rank(x, op="tril", at_least=2)
    return jnp.tril(x, k=static_int(diagonal, op="tril", name="diagonal"))


def triu(x, diagonal=0, name=None):
    """The upper triangle of the last two dims of `x`; the rest is zeroed.

    Args:
      x: a tensor of rank >= 2.
      diagonal: 0 keeps the main diagonal; > 0 keeps fewer, < 0 more.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.triu(pdx.ones([2, 2])).tolist()
      [[1.0, 1.0], [0.0, 1.0]]
    """
    x = as_array(x, op="triu")
    check_rank(x, op="triu", at_least=2)
    return jnp.triu(x, k=static_int(diagonal, op="triu", name="diagonal"))


def meshgrid(*args, **kwargs):
    """Coordinate grids from 1-D tensors, with 'ij' (matrix) indexing as in Paddle.

    Args:
      *args: 1-D tensors, or a single list/tuple of them.
      **kwargs: `name` only (ignored).

    Returns:
      A list of N tensors, each of shape `[len(args[0]), ..., len(args[-1])]`.

    Example:
      >>> import pdx
      >>> a, b = pdx.meshgrid(pdx.arange(2), pdx.arange(3))
      >>> a.shape
      (2, 3)
    """
    unknown = set(kwargs) - {"name"}
    if unknown:
        raise TypeError(f"pdx.meshgrid: unexpected keyword argument(s) {sorted(unknown)}")
    if len(args) == 1 and isinstance(args[0], Sequence):
        args = tuple(args[0])
    arrays = [as_array(a, name=f"args[{i}]", op="meshgrid") for i, a in enumerate(args)]
    for i, a in enumerate(arrays):
        if a.ndim > 1:
            raise op_error("meshgrid", f"every input must be 0-D or 1-D; args[{i}].shape={tuple(a.shape)}")
    return list(jnp.meshgrid(*[a.reshape(-1) for a in arrays], indexing="ij"))


def diag(x, offset=0, padding_value=0, name=None):
    """Build a diagonal matrix from a vector, or take a diagonal of a matrix.

    Args:
      x: a 1-D tensor (builds a square matrix) or a 2-D tensor (extracts).
      offset: which diagonal: 0 main, > 0 above, < 0 below.
      padding_value: fill for the off-diagonal entries when `x` is 1-D.
      name: ignored.

    Returns:
      A 2-D tensor for 1-D `x`, a 1-D tensor for 2-D `x`.

    Example:
      >>> import pdx
      >>> pdx.diag(pdx.to_tensor([1, 2])).tolist()
      [[1, 0], [0, 2]]
    """
    x = as_array(x, op="diag")
    offset = static_int(offset, op="diag", name="offset")
    if x.ndim == 0:
        x = x.reshape(1)
    if x.ndim == 1:
        n = x.shape[0] + abs(offset)
        out = jnp.diag(x, k=offset)
        if padding_value != 0:
            on_diag = jnp.eye(n, k=offset, dtype=jnp.bool_)
            out = jnp.where(on_diag, out, jnp.asarray(padding_value, dtype=x.dtype))
        return out
    if x.ndim == 2:
        return jnp.diagonal(x, offset=offset)
    raise op_error("diag", f"`x` must be 1-D or 2-D; got x.shape={tuple(x.shape)}")
