"""Scatter-style writes and index-based reads that Paddle has beyond scatter/gather.

Every write returns a new tensor (JAX arrays are immutable): `index_put`,
`index_add`, `masked_scatter`, `*_scatter` leave their input unchanged.
"""

from __future__ import annotations

import builtins

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_int
from pdx.ops._checks import check_rank, index_array, index_range, int_list, op_axis, static_int
from pdx.ops._common import as_array, normalize_axis, op_error, shape_list
from pdx.ops._manipulation import _tensor_list, put_along_axis, scatter_nd_add


def _axis(axis, ndim, op, name="axis"):
    return op_axis(axis, ndim, op=op, name=name)


def scatter_nd(index, updates, shape, name=None):
    """Scatter-add `updates` into zeros of `shape` at the N-d positions in `index`.

    Args:
      index: an integer tensor `[..., K]` of positions into the first K dims.
      updates: a tensor `index.shape[:-1] + shape[K:]`.
      shape: the output shape.
      name: ignored.

    Returns:
      A tensor of `shape` with the dtype of `updates`.

    Example:
      >>> import pdx
      >>> pdx.scatter_nd(pdx.to_tensor([[1], [1]]), pdx.to_tensor([2.0, 3.0]), [3]).tolist()
      [0.0, 5.0, 0.0]
    """
    updates = as_array(updates, name="updates", op="scatter_nd")
    return scatter_nd_add(jnp.zeros(shape_list(shape, op="scatter_nd"), updates.dtype), index, updates)


_REDUCE_NAMES = {"sum": "add", "prod": "mul", "mean": "mean", "amin": "amin", "amax": "amax"}


def scatter_add(input, dim, index, src):  # noqa: A002 (Paddle's name)
    """Add `src[i, j, ...]` into `input` at position `index[i, j, ...]` along `dim`.

    Args:
      input: a tensor.
      dim: the axis `index` addresses.
      index: an integer tensor of the same rank, no larger than `src` in any dim.
      src: the values (its leading `index.shape` block is used).

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> pdx.scatter_add(pdx.zeros([3]), 0, pdx.to_tensor([0, 0, 2]), pdx.ones([3])).tolist()
      [2.0, 0.0, 1.0]
    """
    return put_along_axis(input, index, src, dim, reduce="add", broadcast=False)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """Reduce `src` into `input` at `index` along `dim` with 'sum', 'prod', 'mean', 'amin' or 'amax'.

    Args:
      input: a tensor.
      dim: the axis `index` addresses.
      index: an integer tensor of the same rank, no larger than `src` in any dim.
      src: the values.
      reduce: 'sum', 'prod', 'mean', 'amin' or 'amax'.
      include_self: whether `input`'s own values at written positions join the reduction.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> x = pdx.to_tensor([1.0, 5.0])
      >>> pdx.scatter_reduce(x, 0, pdx.to_tensor([0, 0]), pdx.to_tensor([3.0, 2.0]), "amax").tolist()
      [3.0, 5.0]
    """
    if reduce not in _REDUCE_NAMES:
        raise op_error("scatter_reduce", f"`reduce`={reduce!r} must be one of {list(_REDUCE_NAMES)}")
    return put_along_axis(input, index, src, dim, reduce=_REDUCE_NAMES[reduce], include_self=include_self,
                          broadcast=False)


def _index_1d(index, op):
    index = index_array(index, op=op)
    if index.ndim > 1:
        raise op_error(op, f"`index` must be 1-D; got index.shape={tuple(index.shape)}")
    return index.reshape(-1)


def index_add(x, index, axis, value, alpha=1, name=None):
    """Add `alpha * value` into the slices of `x` at `index` along `axis`.

    Args:
      x: a tensor.
      index: a 1-D integer tensor of N positions along `axis`.
      axis: the axis.
      value: a tensor like `x` with N entries along `axis`.
      alpha: scale of `value`.
      name: ignored.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> pdx.index_add(pdx.zeros([3, 2]), pdx.to_tensor([0, 2]), 0, pdx.ones([2, 2])).tolist()
      [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    """
    x = as_array(x, op="index_add")
    index = _index_1d(index, "index_add")
    ax = _axis(axis, x.ndim, "index_add")
    value = as_array(value, name="value", op="index_add")
    expected = x.shape[:ax] + (index.shape[0],) + x.shape[ax + 1:]
    if value.shape != expected:
        raise op_error("index_add", f"value.shape={tuple(value.shape)} must be {expected} (x.shape={tuple(x.shape)} "
                                    f"with len(index)={index.shape[0]} on axis {ax})")
    where = (builtins.slice(None),) * ax + (index,)
    return x.at[where].add((value * alpha).astype(x.dtype))


def index_fill(x, index, axis, value, name=None):
    """Fill the slices of `x` at `index` along `axis` with `value`.

    Args:
      x: a tensor.
      index: a 1-D integer tensor.
      axis: the axis.
      value: a number or 0-D tensor.
      name: ignored.

    Returns:
      The filled tensor.

    Example:
      >>> import pdx
      >>> pdx.index_fill(pdx.zeros([2, 3]), pdx.to_tensor([1]), 1, 7.0).tolist()
      [[0.0, 7.0, 0.0], [0.0, 7.0, 0.0]]
    """
    x = as_array(x, op="index_fill")
    index = _index_1d(index, "index_fill")
    ax = _axis(axis, x.ndim, "index_fill")
    where = (builtins.slice(None),) * ax + (index,)
    return x.at[where].set(jnp.asarray(value).astype(x.dtype))


def index_put(x, indices, value, accumulate=False, name=None):
    """`x[indices] = value` (or `+= value` with `accumulate`), as a new tensor.

    Args:
      x: a tensor.
      indices: a tuple/list of integer index tensors (broadcast together), or of bool masks
        (bool masks are eager-only: their size depends on the data).
      value: a tensor broadcastable to the indexed shape.
      accumulate: add instead of assign (repeated positions all add up).
      name: ignored.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> pdx.index_put(pdx.zeros([3]), (pdx.to_tensor([0, 2]),), pdx.to_tensor(1.0)).tolist()
      [1.0, 0.0, 1.0]
    """
    x = as_array(x, op="index_put")
    if not isinstance(indices, (list, tuple)):
        raise TypeError(f"pdx.index_put: `indices` must be a tuple/list of tensors; got {type(indices).__name__}")
    idx = tuple(as_array(i, name="indices", op="index_put") for i in indices)
    if len(idx) > x.ndim:
        raise op_error("index_put", f"{len(idx)} index tensors for x.shape={tuple(x.shape)}")
    value = as_array(value, name="value", op="index_put").astype(x.dtype)
    return x.at[idx].add(value) if accumulate else x.at[idx].set(value)


def masked_scatter(x, mask, value, name=None):
    """Copy consecutive elements of `value` into `x` where `mask` is True (row-major order).

    Args:
      x: a tensor.
      mask: a bool tensor broadcastable to `x`.
      value: a tensor with at least as many elements as True entries.
      name: ignored.

    Returns:
      The updated tensor (shape of `x`).

    Example:
      >>> import pdx
      >>> m = pdx.to_tensor([True, False, True])
      >>> pdx.masked_scatter(pdx.zeros([3]), m, pdx.to_tensor([5.0, 6.0])).tolist()
      [5.0, 0.0, 6.0]
    """
    x = as_array(x, op="masked_scatter")
    mask = as_array(mask, name="mask", op="masked_scatter")
    if mask.dtype != jnp.bool_:
        raise TypeError(f"pdx.masked_scatter: `mask` must be a bool tensor; got dtype {mask.dtype}")
    value = as_array(value, name="value", op="masked_scatter").astype(x.dtype).reshape(-1)
    shape = np.broadcast_shapes(x.shape, mask.shape)
    x, mask = jnp.broadcast_to(x, shape), jnp.broadcast_to(mask, shape)
    if not isinstance(mask, jax.core.Tracer) and int(jnp.sum(mask)) > value.size:
        raise op_error("masked_scatter", f"`mask` has {int(jnp.sum(mask))} True entries but `value` only "
                                         f"{value.size} elements")
    pos = jnp.clip(jnp.cumsum(mask.reshape(-1)) - 1, 0, builtins.max(value.size - 1, 0))
    return jnp.where(mask, value[pos].reshape(shape), x)


def select_scatter(x, values, axis, index, name=None):
    """Write `values` into the slice of `x` at `index` along `axis`.

    Args:
      x: a tensor.
      values: a tensor of `x.shape` without `axis`.
      axis: the axis.
      index: the position along `axis` (negative counts from the end).
      name: ignored.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> pdx.select_scatter(pdx.zeros([2, 2]), pdx.ones([2]), 0, 1).tolist()
      [[0.0, 0.0], [1.0, 1.0]]
    """
    x = as_array(x, op="select_scatter")
    ax = _axis(axis, x.ndim, "select_scatter")
    i = static_int(index, op="select_scatter", name="index")
    if not -x.shape[ax] <= i < x.shape[ax]:
        raise op_error("select_scatter", f"`index`={i} is out of range for x.shape[{ax}]={x.shape[ax]}")
    values = as_array(values, name="values", op="select_scatter")
    expected = x.shape[:ax] + x.shape[ax + 1:]
    if values.shape != expected:
        raise op_error("select_scatter", f"values.shape={tuple(values.shape)} must be {expected}")
    return x.at[(builtins.slice(None),) * ax + (i,)].set(values.astype(x.dtype))


def slice_scatter(x, value, axes, starts, ends, strides, name=None):
    """Write `value` into the strided slice of `x` given by `axes`/`starts`/`ends`/`strides`.

    Args:
      x: a tensor.
      value: a tensor of the slice's shape.
      axes: axes to slice.
      starts: start per axis.
      ends: end per axis (exclusive).
      strides: step per axis (> 0).
      name: ignored.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> pdx.slice_scatter(pdx.zeros([4]), pdx.ones([2]), [0], [0], [4], [2]).tolist()
      [1.0, 0.0, 1.0, 0.0]
    """
    x = as_array(x, op="slice_scatter")
    ax = [normalize_axis(a, x.ndim, op="slice_scatter", name="axes")
          for a in int_list(axes, op="slice_scatter", name="axes")]
    st, en, sd = (int_list(v, op="slice_scatter", name=n) for v, n in
                  ((starts, "starts"), (ends, "ends"), (strides, "strides")))
    if not len(ax) == len(st) == len(en) == len(sd):
        raise op_error("slice_scatter", f"axes={ax}, starts={st}, ends={en}, strides={sd} must have equal lengths")
    if any(s <= 0 for s in sd):
        raise op_error("slice_scatter", f"`strides`={sd} must be positive")
    where = [builtins.slice(None)] * x.ndim
    for a, s, e, d in zip(ax, st, en, sd):
        where[a] = builtins.slice(s, e, d)
    target = jax.eval_shape(lambda v: v[tuple(where)], x).shape
    value = as_array(value, name="value", op="slice_scatter")
    if value.shape != target:
        raise op_error("slice_scatter", f"value.shape={tuple(value.shape)} must equal the slice shape {target}")
    return x.at[tuple(where)].set(value.astype(x.dtype))


def diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, name=None):
    """Write `y` onto the diagonal of `x` between `axis1` and `axis2` (see `diagonal`).

    Args:
      x: a tensor of rank >= 2.
      y: a tensor of the diagonal's shape (other dims, then the diagonal length).
      offset: diagonal offset (> 0 above the main diagonal).
      axis1: first axis of the plane.
      axis2: second axis of the plane.
      name: ignored.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> pdx.diagonal_scatter(pdx.zeros([2, 2]), pdx.ones([2])).tolist()
      [[1.0, 0.0], [0.0, 1.0]]
    """
    x = as_array(x, op="diagonal_scatter")
    check_rank(x, op="diagonal_scatter", at_least=2)
    a1, a2 = _axis(axis1, x.ndim, "diagonal_scatter", "axis1"), _axis(axis2, x.ndim, "diagonal_scatter", "axis2")
    if a1 == a2:
        raise op_error("diagonal_scatter", f"axis1={axis1} and axis2={axis2} must differ")
    offset = static_int(offset, op="diagonal_scatter", name="offset")
    rows = np.arange(x.shape[a1])
    cols = rows + offset
    keep = (cols >= 0) & (cols < x.shape[a2])
    rows, cols = rows[keep], cols[keep]
    y = as_array(y, name="y", op="diagonal_scatter")
    rest = tuple(d for i, d in enumerate(x.shape) if i not in (a1, a2))
    if y.shape != rest + (rows.size,):
        raise op_error("diagonal_scatter", f"y.shape={tuple(y.shape)} must be {rest + (rows.size,)}")
    moved = jnp.moveaxis(x, (a1, a2), (-2, -1))
    moved = moved.at[..., rows, cols].set(y.astype(x.dtype))
    return jnp.moveaxis(moved, (-2, -1), (a1, a2))


_TAKE_MODES = ("raise", "wrap", "clip")


def take(x, index, mode="raise", name=None):
    """Elements of the flattened `x` at `index`.

    Args:
      x: a tensor.
      index: an integer tensor of any shape.
      mode: 'raise' (negative indices count from the end; out-of-range indices raise eagerly and
        are clamped under jit), 'wrap' (modulo) or 'clip' (clamp into [0, numel - 1]).
      name: ignored.

    Returns:
      A tensor of `index.shape`.

    Example:
      >>> import pdx
      >>> pdx.take(pdx.to_tensor([[1, 2], [3, 4]]), pdx.to_tensor([0, -1])).tolist()
      [1, 4]
    """
    x = as_array(x, op="take").reshape(-1)
    index = index_array(index, op="take")
    if mode not in _TAKE_MODES:
        raise op_error("take", f"`mode`={mode!r} must be one of {_TAKE_MODES}")
    n = x.shape[0]
    if mode == "wrap":
        return x[jnp.mod(index, n)]
    if mode == "clip":
        return x[jnp.clip(index, 0, n - 1)]
    index_range(index, n, op="take", where=f"{n} elements")
    return x[jnp.where(index < 0, index + n, index)]


def index_sample(x, index):
    """Per-row gather: `out[i, j] = x[i, index[i, j]]`.

    Args:
      x: a `[N, M]` tensor.
      index: a `[N, K]` integer tensor.

    Returns:
      A `[N, K]` tensor.

    Example:
      >>> import pdx
      >>> pdx.index_sample(pdx.to_tensor([[1, 2], [3, 4]]), pdx.to_tensor([[1], [0]])).tolist()
      [[2], [3]]
    """
    x = as_array(x, op="index_sample")
    index = index_array(index, op="index_sample")
    check_rank(x, op="index_sample", exactly=2)
    check_rank(index, op="index_sample", name="index", exactly=2)
    if index.shape[0] != x.shape[0]:
        raise op_error("index_sample", f"x.shape={tuple(x.shape)} and index.shape={tuple(index.shape)} must "
                                       "have the same number of rows")
    return jnp.take_along_axis(x, index, axis=1)


def multiplex(inputs, index, name=None):
    """Row `i` of the output is row `i` of `inputs[index[i]]`.

    Args:
      inputs: a list of tensors of equal shape `[N, ...]`.
      index: a `[N, 1]` integer tensor of choices.
      name: ignored.

    Returns:
      A tensor like `inputs[0]`.

    Example:
      >>> import pdx
      >>> a, b = pdx.zeros([2, 2]), pdx.ones([2, 2])
      >>> pdx.multiplex([a, b], pdx.to_tensor([[1], [0]])).tolist()
      [[1.0, 1.0], [0.0, 0.0]]
    """
    arrays = _tensor_list(inputs, "multiplex", "inputs")
    if any(a.shape != arrays[0].shape for a in arrays):
        raise op_error("multiplex", f"all inputs must share one shape; got {[tuple(a.shape) for a in arrays]}")
    index = index_array(index, op="multiplex").reshape(-1)
    if index.shape[0] != arrays[0].shape[0]:
        raise op_error("multiplex", f"`index` has {index.shape[0]} entries for {arrays[0].shape[0]} rows")
    stacked = jnp.stack(arrays)
    return stacked[index, jnp.arange(index.shape[0])]


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):  # noqa: A002 (Paddle's name)
    """Map global ids to ids local to shard `shard_id` (others become `ignore_value`).

    The ids `[0, index_num)` are split into `nshards` contiguous shards of
    `ceil(index_num / nshards)` ids.

    Args:
      input: an integer tensor of ids (last dim 1 in Paddle's usage).
      index_num: total number of ids.
      nshards: number of shards.
      shard_id: this shard.
      ignore_value: value for ids outside this shard.

    Returns:
      An integer tensor like `input`.

    Example:
      >>> import pdx
      >>> pdx.shard_index(pdx.to_tensor([[1], [6]]), 10, 2, 1).tolist()
      [[-1], [1]]
    """
    x = index_array(input, op="shard_index", name="input")
    index_num = static_int(index_num, op="shard_index", name="index_num")
    nshards = static_int(nshards, op="shard_index", name="nshards")
    shard_id = static_int(shard_id, op="shard_index", name="shard_id")
    if nshards <= 0 or not 0 <= shard_id < nshards:
        raise op_error("shard_index", f"need nshards > 0 and 0 <= shard_id < nshards; got nshards={nshards}, "
                                      f"shard_id={shard_id}")
    size = (index_num + nshards - 1) // nshards
    return jnp.where(x // size == shard_id, x - shard_id * size, ignore_value).astype(x.dtype)


def argwhere(input):  # noqa: A002 (Paddle's name)
    """Indices of the non-zero entries, one row per entry (eager-only: the count depends on the data).

    Args:
      input: a tensor.

    Returns:
      An int64 (int32 without x64) tensor `[count, input.ndim]`.

    Example:
      >>> import pdx
      >>> pdx.argwhere(pdx.to_tensor([[0, 1], [2, 0]])).tolist()
      [[0, 1], [1, 0]]
    """
    x = as_array(input, name="input", op="argwhere")
    if isinstance(x, jax.core.Tracer):
        raise op_error("argwhere", "the number of rows depends on the data, so it cannot run under jit; use "
                                   "pdx.nonzero(x, size=...) for a fixed-size result")
    return jnp.argwhere(x).astype(default_int())

