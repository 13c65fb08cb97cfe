"""Comparison, logical, sorting and search ops, plus tensor introspection.

Index results use Paddle's int64, which is int32 unless `jax_enable_x64` is
on. `nonzero` and `unique` are eager only (their output size depends on the
data) unless a keyword-only `size=` fixes the output size, which makes them
usable under `pdx.jit` / `jax.jit`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_int
from pdx.ops._checks import binary_args, broadcast_shapes, int_dtype_arg, reduce_axes, static_int
from pdx.ops._common import as_array, normalize_axis, op_error


def _compare(op, fn):
    def apply(x, y):
        x, y = binary_args(x, y, op=op)
        return fn(x, y)
    return apply


def equal(x, y, name=None):
    """Elementwise `x == y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.equal(pdx.to_tensor([1, 2]), pdx.to_tensor([1, 3])).tolist()
      [True, False]
    """
    return _compare("equal", jnp.equal)(x, y)


def not_equal(x, y, name=None):
    """Elementwise `x != y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.not_equal(pdx.to_tensor([1, 2]), pdx.to_tensor([1, 3])).tolist()
      [False, True]
    """
    return _compare("not_equal", jnp.not_equal)(x, y)


def greater_than(x, y, name=None):
    """Elementwise `x > y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.greater_than(pdx.to_tensor([1, 2]), pdx.to_tensor([1, 1])).tolist()
      [False, True]
    """
    return _compare("greater_than", jnp.greater)(x, y)


def greater_equal(x, y, name=None):
    """Elementwise `x >= y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.greater_equal(pdx.to_tensor([1, 2]), pdx.to_tensor([1, 3])).tolist()
      [True, False]
    """
    return _compare("greater_equal", jnp.greater_equal)(x, y)


def less_than(x, y, name=None):
    """Elementwise `x < y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.less_than(pdx.to_tensor([1, 2]), pdx.to_tensor([1, 3])).tolist()
      [False, True]
    """
    return _compare("less_than", jnp.less)(x, y)


def less_equal(x, y, name=None):
    """Elementwise `x <= y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.less_equal(pdx.to_tensor([1, 4]), pdx.to_tensor([1, 3])).tolist()
      [True, False]
    """
    return _compare("less_equal", jnp.less_equal)(x, y)


def logical_and(x, y, name=None):
    """Elementwise logical AND (non-bool input counts non-zero as True).

    Args:
      x: a tensor.
      y: a tensor.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.logical_and(pdx.to_tensor([True, True]), pdx.to_tensor([True, False])).tolist()
      [True, False]
    """
    return _compare("logical_and", jnp.logical_and)(x, y)


def logical_or(x, y, name=None):
    """Elementwise logical OR.

    Args:
      x: a tensor.
      y: a tensor.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.logical_or(pdx.to_tensor([False, True]), pdx.to_tensor([False, False])).tolist()
      [False, True]
    """
    return _compare("logical_or", jnp.logical_or)(x, y)


def logical_xor(x, y, name=None):
    """Elementwise logical XOR.

    Args:
      x: a tensor.
      y: a tensor.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.logical_xor(pdx.to_tensor([True, True]), pdx.to_tensor([True, False])).tolist()
      [False, True]
    """
    return _compare("logical_xor", jnp.logical_xor)(x, y)


def logical_not(x, name=None):
    """Elementwise logical NOT.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.logical_not(pdx.to_tensor([True, False])).tolist()
      [False, True]
    """
    return jnp.logical_not(as_array(x, op="logical_not"))


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """Whether `|x - y| <= atol + rtol * |y|` holds everywhere.

    Args:
      x: a tensor.
      y: a tensor broadcastable with `x`.
      rtol: relative tolerance.
      atol: absolute tolerance.
      equal_nan: treat NaNs in the same place as equal.
      name: ignored.

    Returns:
      A 0-D bool tensor (not a Python bool, so it works under jit).

    Example:
      >>> import pdx
      >>> bool(pdx.allclose(pdx.to_tensor([1.0]), pdx.to_tensor([1.0 + 1e-7])))
      True
    """
    x = as_array(x, op="allclose")
    y = as_array(y, name="y", op="allclose")
    broadcast_shapes("allclose", x=x, y=y)
    return jnp.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _arg_reduce(op, fn, x, axis, keepdim, dtype):
    x = as_array(x, op=op)
    dt = int_dtype_arg(dtype, op=op)
    if x.size == 0:
        raise op_error(op, f"cannot take {op} of an empty tensor (x.shape={tuple(x.shape)})")
    if axis is None:
        out = fn(x.reshape(-1), axis=0)
        if keepdim:
            out = out.reshape((1,) * x.ndim)
        return out.astype(dt)
    ax = normalize_axis(static_int(axis, op=op, name="axis"), x.ndim, op=op)
    return fn(x, axis=ax, keepdims=keepdim).astype(dt) if x.ndim else fn(x.reshape(1), axis=0).astype(dt)


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the maximum along `axis` (of the flattened tensor when None).

    Args:
      x: a tensor.
      axis: int or None.
      keepdim: keep the reduced axis (all axes, as size 1, when `axis` is None).
      dtype: 'int64' (int32 without x64) or 'int32'.
      name: ignored.

    Returns:
      An integer tensor; the first index wins on ties.

    Example:
      >>> import pdx
      >>> pdx.argmax(pdx.to_tensor([[1, 5], [7, 2]]), axis=1).tolist()
      [1, 0]
    """
    return _arg_reduce("argmax", jnp.argmax, x, axis, keepdim, dtype)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the minimum along `axis` (of the flattened tensor when None).

    Args:
      x: a tensor.
      axis: int or None.
      keepdim: keep the reduced axis (all axes, as size 1, when `axis` is None).
      dtype: 'int64' (int32 without x64) or 'int32'.
      name: ignored.

    Returns:
      An integer tensor; the first index wins on ties.

    Example:
      >>> import pdx
      >>> pdx.argmin(pdx.to_tensor([[1, 5], [7, 2]]), axis=1).tolist()
      [0, 1]
    """
    return _arg_reduce("argmin", jnp.argmin, x, axis, keepdim, dtype)


def _sort_axis(x, axis, op):
    if x.ndim == 0:
        raise op_error(op, "x must have rank >= 1; got a 0-D tensor")
    return normalize_axis(static_int(axis, op=op, name="axis"), x.ndim, op=op)


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    """Indices that sort `x` along `axis`.

    pdx always sorts stably (equal elements keep their order), which is one of
    the orders Paddle may return when `stable=False`.

    Args:
      x: a tensor of rank >= 1.
      axis: the axis to sort.
      descending: sort from largest to smallest.
      stable: accepted; sorting is always stable.
      name: ignored.

    Returns:
      An int64 (int32 without x64) tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.argsort(pdx.to_tensor([3, 1, 2])).tolist()
      [1, 2, 0]
    """
    x = as_array(x, op="argsort")
    ax = _sort_axis(x, axis, "argsort")
    return jnp.argsort(x, axis=ax, stable=True, descending=descending).astype(default_int())


def sort(x, axis=-1, descending=False, stable=False, name=None):
    """Sort `x` along `axis`.

    Args:
      x: a tensor of rank >= 1.
      axis: the axis to sort.
      descending: sort from largest to smallest.
      stable: accepted; sorting is always stable.
      name: ignored.

    Returns:
      The sorted tensor.

    Example:
      >>> import pdx
      >>> pdx.sort(pdx.to_tensor([3, 1, 2]), descending=True).tolist()
      [3, 2, 1]
    """
    x = as_array(x, op="sort")
    ax = _sort_axis(x, axis, "sort")
    return jnp.sort(x, axis=ax, stable=True, descending=descending)


def topk(x, k, axis=None, largest=True, sorted=True, name=None):  # noqa: A002 (Paddle's name)
    """The `k` largest (or smallest) entries along `axis` and their indices.

    Args:
      x: a tensor of rank >= 1.
      k: how many entries (int or 1-element tensor), at most `x.shape[axis]`.
      axis: the axis to search; None means the last.
      largest: take the largest (True) or smallest (False) entries.
      sorted: accepted; results are always sorted (largest first, or smallest
        first when `largest=False`).
      name: ignored.

    Returns:
      A tuple `(values, indices)`; indices are int64 (int32 without x64).

    Example:
      >>> import pdx
      >>> values, indices = pdx.topk(pdx.to_tensor([1.0, 3.0, 2.0]), 2)
      >>> values.tolist(), indices.tolist()
      ([3.0, 2.0], [1, 2])
    """
    x = as_array(x, op="topk")
    ax = _sort_axis(x, -1 if axis is None else axis, "topk")
    k = static_int(k, op="topk", name="k")
    if not 0 < k <= x.shape[ax]:
        raise op_error("topk", f"`k`={k} must be in [1, {x.shape[ax]}] (x.shape[{ax}]) for x.shape={tuple(x.shape)}")
    moved = jnp.moveaxis(x, ax, -1)
    if largest:
        values, indices = jax.lax.top_k(moved, k)
    else:
        indices = jnp.argsort(moved, axis=-1, stable=True)[..., :k]
        values = jnp.take_along_axis(moved, indices, axis=-1)
    return jnp.moveaxis(values, -1, ax), jnp.moveaxis(indices, -1, ax).astype(default_int())


_DATA_DEPENDENT = (
    "pdx.{op} is eager only: its output size depends on the values of `x`, which are unknown "
    "under a trace (pdx.jit, jax.jit, jax.grad). Pass size=N (and optionally fill_value=) for a "
    "fixed-size result that works under jit, or use pdx.where(...) to keep the input's shape."
)


def _concrete(x, op):
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError) as e:
        raise RuntimeError(_DATA_DEPENDENT.format(op=op)) from e


def nonzero(x, as_tuple=False, *, size=None, fill_value=None):
    """Indices of the non-zero elements of `x` (eager only unless `size` is given).

    Args:
      x: a tensor.
      as_tuple: return one 1-D index tensor per dim instead of a `[N, ndim]` tensor.
      size: keyword-only (pdx extension): return exactly `size` indices, padded
        with `fill_value` (default 0) or truncated; this works under jit.
      fill_value: padding index when `size` is given.

    Returns:
      An int64 (int32 without x64) `[N, x.ndim]` tensor, or a tuple of `x.ndim`
      `[N]` tensors when `as_tuple=True`.

    Example:
      >>> import pdx
      >>> pdx.nonzero(pdx.to_tensor([[1, 0], [0, 3]])).tolist()
      [[0, 0], [1, 1]]
    """
    x = as_array(x, op="nonzero")
    if x.ndim == 0:
        x = x.reshape(1)
    if size is None:
        indices = np.nonzero(_concrete(x, "nonzero"))
    else:
        indices = jnp.nonzero(x, size=static_int(size, op="nonzero", name="size"), fill_value=fill_value)
    indices = tuple(jnp.asarray(i, default_int()) for i in indices)
    if as_tuple:
        return indices
    return jnp.stack(indices, axis=1)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, dtype="int64",
           sorted=True, name=None, *, size=None, fill_value=None):  # noqa: A002 (Paddle's name)
    """The sorted unique elements of `x` (eager only unless `size` is given).

    Args:
      x: a tensor.
      return_index: also return the index of each unique value's first occurrence.
      return_inverse: also return, for every element of `x`, the index of its
        unique value (flattened when `axis` is None).
      return_counts: also return how often each unique value occurs.
      axis: None (flatten) or the axis along which to find unique slices.
      dtype: dtype of the index outputs ('int64' -> int32 without x64, or 'int32').
      sorted: accepted; results are always sorted.
      name: ignored.
      size: keyword-only (pdx extension): return exactly `size` unique values,
        padded with `fill_value` (default: the smallest value); works under jit.
      fill_value: padding value when `size` is given.

    Returns:
      The unique tensor, or a tuple `(out, [index], [inverse], [counts])` with
      the requested extras in that order.

    Example:
      >>> import pdx
      >>> pdx.unique(pdx.to_tensor([3, 1, 3, 2])).tolist()
      [1, 2, 3]
    """
    x = as_array(x, op="unique")
    dt = int_dtype_arg(dtype, op="unique")
    ax = None if axis is None else normalize_axis(static_int(axis, op="unique", name="axis"), x.ndim, op="unique")
    if size is None:
        # Eager only, so numpy does the work: one host call instead of many small XLA programs.
        out, index, inverse, counts = np.unique(_concrete(x, "unique"), return_index=True, return_inverse=True,
                                                return_counts=True, axis=ax)
        out = jnp.asarray(out, x.dtype)
    else:
        out, index, inverse, counts = jnp.unique(
            x, return_index=True, return_inverse=True, return_counts=True, axis=ax,
            size=static_int(size, op="unique", name="size"), fill_value=fill_value)
    if ax is None:
        inverse = inverse.reshape(-1)
    extras = [jnp.asarray(v, dt) for v, wanted in ((index, return_index), (inverse, return_inverse),
                                              (counts, return_counts)) if wanted]
    return (out, *extras) if extras else out


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None):
    """Insertion positions of `values` in the sorted last dim of `sorted_sequence`.

    Args:
      sorted_sequence: a 1-D tensor, or an N-D tensor whose leading dims match
        those of `values` (one sorted row per leading index).
      values: the values to place.
      out_int32: return int32 (otherwise int64, i.e. int32 without x64).
      right: place after equal entries (True) or before them (False).
      name: ignored.

    Returns:
      An integer tensor with the shape of `values`.

    Example:
      >>> import pdx
      >>> pdx.searchsorted(pdx.to_tensor([1.0, 2.0, 3.0]), pdx.to_tensor([2.0, 2.5])).tolist()
      [1, 2]
    """
    seq = as_array(sorted_sequence, name="sorted_sequence", op="searchsorted")
    values = as_array(values, name="values", op="searchsorted")
    side = "right" if right else "left"
    dt = jnp.int32 if out_int32 else default_int()
    if seq.ndim == 0:
        raise op_error("searchsorted", "`sorted_sequence` must have rank >= 1; got a 0-D tensor")
    if seq.ndim == 1:
        return jnp.searchsorted(seq, values, side=side).astype(dt)
    if values.ndim != seq.ndim or tuple(values.shape[:-1]) != tuple(seq.shape[:-1]):
        raise op_error("searchsorted", f"sorted_sequence.shape={tuple(seq.shape)} and values.shape="
                                       f"{tuple(values.shape)} must agree on all but the last dim")
    rows = seq.reshape(-1, seq.shape[-1])
    queries = values.reshape(-1, values.shape[-1])
    out = jax.vmap(lambda s, v: jnp.searchsorted(s, v, side=side))(rows, queries)
    return out.reshape(values.shape).astype(dt)


def any(x, axis=None, keepdim=False, name=None):  # noqa: A001 (Paddle's name)
    """Whether any element is True (non-zero) over `axis`.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.any(pdx.to_tensor([[True, False], [False, False]]), axis=1).tolist()
      [True, False]
    """
    x = as_array(x, op="any")
    return jnp.any(x, axis=reduce_axes(axis, x.ndim, op="any"), keepdims=keepdim)


def all(x, axis=None, keepdim=False, name=None):  # noqa: A001 (Paddle's name)
    """Whether every element is True (non-zero) over `axis`.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.all(pdx.to_tensor([[True, False], [True, True]]), axis=1).tolist()
      [False, True]
    """
    x = as_array(x, op="all")
    return jnp.all(x, axis=reduce_axes(axis, x.ndim, op="all"), keepdims=keepdim)


def numel(x, name=None):
    """The number of elements of `x` as a 0-D int64 (int32 without x64) tensor.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A 0-D integer tensor.

    Example:
      >>> import pdx
      >>> int(pdx.numel(pdx.zeros([2, 3])))
      6
    """
    return jnp.asarray(as_array(x, op="numel").size, default_int())


def shape(input):  # noqa: A002 (Paddle's name)
    """The shape of `input` as a 1-D int32 tensor (static, so also fine under jit).

    Under a trace (`pdx.jit`, `jax.jit`) the shape is a numpy int32 array instead: its
    values are known while tracing, so `pdx.reshape(x, pdx.shape(y))`,
    `pdx.tile(x, pdx.shape(y))` and `[pdx.shape(y)[0], -1]` work as shape arguments
    (a traced tensor would have no values to build a shape from).

    Args:
      input: a tensor.

    Returns:
      A 1-D int32 tensor of length `input.ndim` (a numpy array under a trace).

    Example:
      >>> import pdx
      >>> pdx.shape(pdx.zeros([2, 3])).tolist()
      [2, 3]
    """
    x = as_array(input, name="input", op="shape")
    if isinstance(x, jax.core.Tracer):
        return np.asarray(x.shape, np.int32)
    return jnp.asarray(x.shape, jnp.int32)


def is_tensor(x):
    """Whether `x` is a pdx tensor (a `jax.Array`, including traced ones).

    Args:
      x: any object.

    Returns:
      A Python bool; numpy arrays and Python numbers give False, as in Paddle.

    Example:
      >>> import pdx
      >>> pdx.is_tensor(pdx.zeros([1])), pdx.is_tensor([1.0])
      (True, False)
    """
    return isinstance(x, jax.Array)

