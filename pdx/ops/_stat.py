"""Statistics: NaN-aware reductions, median, quantiles, mode and k-th values.

Order statistics sort along the axis (`jnp.sort`, NaN last) and pick by
position, so values and gradients flow back to the picked entries, and every
op works under jit.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float, default_int
from pdx.ops._checks import dtype_arg, reduce_axes, static_int
from pdx.ops._common import as_array, normalize_axis, op_error


def _float(x):
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(default_float())


def nansum(x, axis=None, dtype=None, keepdim=False, name=None):
    """Sum over `axis`, treating NaN as zero.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None (all axes).
      dtype: output dtype; integer input defaults to int64 (int32 without x64).
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.nansum(pdx.to_tensor([1.0, float("nan"), 2.0])).tolist()
      3.0
    """
    x = as_array(x, op="nansum")
    axes = reduce_axes(axis, x.ndim, op="nansum")
    dt = dtype_arg(dtype, op="nansum")
    if dt is None and not jnp.issubdtype(x.dtype, jnp.inexact):
        dt = default_int()
    return jnp.nansum(x, axis=axes, dtype=dt, keepdims=keepdim)


def nanmean(x, axis=None, keepdim=False, name=None):
    """Mean over `axis` of the non-NaN entries (NaN where all are NaN).

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.nanmean(pdx.to_tensor([1.0, float("nan"), 2.0])).tolist()
      1.5
    """
    x = as_array(x, op="nanmean")
    return jnp.nanmean(_float(x), axis=reduce_axes(axis, x.ndim, op="nanmean"), keepdims=keepdim)


def count_nonzero(x, axis=None, keepdim=False, name=None):
    """Number of non-zero entries over `axis`.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      An int64 (int32 without x64) tensor.

    Example:
      >>> import pdx
      >>> pdx.count_nonzero(pdx.to_tensor([[1, 0], [2, 3]]), axis=1).tolist()
      [1, 2]
    """
    x = as_array(x, op="count_nonzero")
    axes = reduce_axes(axis, x.ndim, op="count_nonzero")
    return jnp.sum(x != 0, axis=axes, keepdims=keepdim, dtype=default_int())


def _sorted_along(x, axis, op):
    """x moved so the reduced axis is last (flattened when axis is None)."""
    if axis is None:
        return x.reshape(-1), None
    ax = normalize_axis(static_int(axis, op=op, name="axis"), x.ndim, op=op)
    return jnp.moveaxis(x, ax, -1), ax


def _restore(v, ax, keepdim, ndim):
    if not keepdim:
        return v
    return v.reshape((1,) * ndim) if ax is None else jnp.expand_dims(v, ax)


@functools.partial(jax.jit, static_argnames=("ignore_nan", "avg"))
def _median_kernel(xm, ignore_nan, avg):
    n = xm.shape[-1]
    order = jnp.argsort(xm, axis=-1, stable=True)  # NaN sorts last
    s = jnp.take_along_axis(xm, order, -1)
    nan = jnp.isnan(xm)
    m = jnp.sum(~nan, axis=-1, keepdims=True) if ignore_nan else jnp.full(xm.shape[:-1] + (1,), n)
    lo = jnp.clip((m - 1) // 2, 0, n - 1)
    hi = jnp.clip(m // 2, 0, n - 1)
    v_lo = jnp.take_along_axis(s, lo, -1)[..., 0]
    idx = jnp.take_along_axis(order, lo, -1)[..., 0]
    v = (v_lo + jnp.take_along_axis(s, hi, -1)[..., 0]) / 2 if avg else v_lo
    if ignore_nan:
        empty = m[..., 0] == 0
        v = jnp.where(empty, jnp.nan, v)
        idx = jnp.where(empty, 0, idx)
    else:
        has_nan = jnp.any(nan, axis=-1)
        v = jnp.where(has_nan, jnp.nan, v)
        idx = jnp.where(has_nan, jnp.argmax(nan, axis=-1), idx)
    return v, idx


def _median(op, x, axis, keepdim, mode, ignore_nan):
    x = _float(as_array(x, op=op))
    if mode not in ("avg", "min"):
        raise op_error(op, f"`mode`={mode!r} must be 'avg' or 'min'")
    if x.size == 0:
        raise op_error(op, f"cannot take the median of an empty tensor; x.shape={tuple(x.shape)}")
    xm, ax = _sorted_along(x, axis, op)
    v, idx = _median_kernel(xm, ignore_nan, mode == "avg")
    v = _restore(v, ax, keepdim, x.ndim)
    if mode == "avg" or axis is None:
        return v
    return v, _restore(idx.astype(default_int()), ax, keepdim, x.ndim)


def median(x, axis=None, keepdim=False, mode="avg", name=None):
    """Median over `axis` (all elements when None); NaN if the slice holds a NaN.

    Args:
      x: a tensor (integer input gives a floating median).
      axis: int or None.
      keepdim: keep the reduced axis as size 1.
      mode: 'avg' averages the two middle values of an even count; 'min' takes the lower one.
      name: ignored.

    Returns:
      The medians; with `mode='min'` and an `axis`, `(values, indices)`.

    Example:
      >>> import pdx
      >>> pdx.median(pdx.to_tensor([3.0, 1.0, 4.0, 2.0])).tolist()
      2.5
    """
    return _median("median", x, axis, keepdim, mode, ignore_nan=False)


def nanmedian(x, axis=None, keepdim=False, mode="avg", name=None):
    """Median over `axis` of the non-NaN entries (NaN where all are NaN).

    Args:
      x: a tensor.
      axis: int or None.
      keepdim: keep the reduced axis as size 1.
      mode: 'avg' or 'min' (see `median`).
      name: ignored.

    Returns:
      The medians; with `mode='min'` and an `axis`, `(values, indices)`.

    Example:
      >>> import pdx
      >>> pdx.nanmedian(pdx.to_tensor([3.0, float("nan"), 1.0])).tolist()
      2.0
    """
    return _median("nanmedian", x, axis, keepdim, mode, ignore_nan=True)


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, fn, x, q, axis, keepdim, interpolation):
    x = _float(as_array(x, op=op))
    if interpolation not in _METHODS:
        raise op_error(op, f"`interpolation`={interpolation!r} must be one of {_METHODS}")
    qa = jnp.asarray(q, x.dtype)
    if qa.ndim > 1:
        raise op_error(op, f"`q` must be a number or a 1-D list/tensor; got shape {tuple(qa.shape)}")
    if not isinstance(q, jax.core.Tracer):
        qv = np.asarray(q, np.float64)
        if np.any((qv < 0) | (qv > 1)):
            raise op_error(op, f"`q`={q!r} must lie in [0, 1]")
    axes = reduce_axes(axis, x.ndim, op=op)
    return fn(x, qa, axis=axes, keepdims=keepdim, method=interpolation)


def quantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None):
    """The `q`-th quantiles over `axis`.

    Args:
      x: a tensor.
      q: a number in [0, 1], or a list/1-D tensor of them (adds a leading dim).
      axis: int, list of ints, or None (all elements).
      keepdim: keep reduced axes as size 1.
      interpolation: 'linear', 'lower', 'higher', 'midpoint' or 'nearest'.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.quantile(pdx.to_tensor([1.0, 2.0, 3.0, 4.0]), 0.5).tolist()
      2.5
    """
    return _quantile("quantile", jnp.quantile, x, q, axis, keepdim, interpolation)


def nanquantile(x, q, axis=None, keepdim=False, interpolation="linear"):
    """The `q`-th quantiles over `axis`, ignoring NaN.

    Args:
      x: a tensor.
      q: a number in [0, 1], or a list/1-D tensor of them (adds a leading dim).
      axis: int, list of ints, or None.
      keepdim: keep reduced axes as size 1.
      interpolation: 'linear', 'lower', 'higher', 'midpoint' or 'nearest'.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.nanquantile(pdx.to_tensor([1.0, float("nan"), 3.0]), 0.5).tolist()
      2.0
    """
    return _quantile("nanquantile", jnp.nanquantile, x, q, axis, keepdim, interpolation)


def kthvalue(x, k, axis=None, keepdim=False, name=None):
    """The k-th smallest value along `axis` (the last axis when None) and its index.

    Args:
      x: a tensor.
      k: 1-based rank, in [1, x.shape[axis]].
      axis: int or None (-1).
      keepdim: keep the reduced axis as size 1.
      name: ignored.

    Returns:
      `(values, indices)`; indices are int64 (int32 without x64).

    Example:
      >>> import pdx
      >>> [t.tolist() for t in pdx.kthvalue(pdx.to_tensor([3.0, 1.0, 2.0]), 2)]
      [2.0, 2]
    """
    x = as_array(x, op="kthvalue")
    ax = normalize_axis(-1 if axis is None else static_int(axis, op="kthvalue", name="axis"),
                        x.ndim, op="kthvalue")
    x1 = x.reshape(1) if x.ndim == 0 else x
    k = static_int(k, op="kthvalue", name="k")
    if not 1 <= k <= x1.shape[ax]:
        raise op_error("kthvalue", f"`k`={k} must lie in [1, {x1.shape[ax]}] for x.shape={tuple(x.shape)}")
    order = jnp.argsort(x1, axis=ax, stable=True)
    idx = jax.lax.index_in_dim(order, k - 1, axis=ax, keepdims=keepdim and x.ndim > 0)
    vals = jnp.take_along_axis(x1, idx if keepdim and x.ndim > 0 else jnp.expand_dims(idx, ax), ax)
    if not (keepdim and x.ndim > 0):
        vals = jnp.squeeze(vals, ax)
    if x.ndim == 0:
        vals, idx = vals.reshape(()), idx.reshape(())
    return vals, idx.astype(default_int())


@jax.jit
def _mode_kernel(xm):
    n = xm.shape[-1]
    s = jnp.sort(xm, axis=-1)
    pos = jnp.arange(n)
    starts = jnp.concatenate([jnp.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]], -1)
    ends = jnp.concatenate([s[..., 1:] != s[..., :-1], jnp.ones(s.shape[:-1] + (1,), bool)], -1)
    run_start = jax.lax.cummax(jnp.where(starts, pos, 0), axis=s.ndim - 1)
    run_end = jax.lax.cummin(jnp.where(ends, pos, n - 1), axis=s.ndim - 1, reverse=True)
    best = jnp.argmax(run_end - run_start, axis=-1)  # first (smallest) value among the most frequent
    value = jnp.take_along_axis(s, best[..., None], -1)
    last = jnp.max(jnp.where(xm == value, pos, -1), axis=-1)
    return jnp.take_along_axis(xm, last[..., None], -1)[..., 0], last


def mode(x, axis=-1, keepdim=False, name=None):
    """The most frequent value along `axis` (the smallest among ties) and its last index.

    Args:
      x: a tensor.
      axis: the axis to reduce.
      keepdim: keep the reduced axis as size 1.
      name: ignored.

    Returns:
      `(values, indices)`; indices are int64 (int32 without x64).

    Example:
      >>> import pdx
      >>> [t.tolist() for t in pdx.mode(pdx.to_tensor([1.0, 2.0, 2.0, 3.0]))]
      [2.0, 2]
    """
    x = as_array(x, op="mode")
    x1 = x.reshape(1) if x.ndim == 0 else x
    ax = normalize_axis(static_int(axis, op="mode", name="axis"), x1.ndim, op="mode")
    v, idx = _mode_kernel(jnp.moveaxis(x1, ax, -1))
    idx = idx.astype(default_int())
    if x.ndim == 0:
        return v.reshape(()), idx.reshape(())
    if keepdim:
        v, idx = jnp.expand_dims(v, ax), jnp.expand_dims(idx, ax)
    return v, idx
