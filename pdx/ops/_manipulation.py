"""Shape and indexing ops: reshape, concat, split, gather/scatter, slicing, padding.

All shape arguments are static (Python ints, lists, or concrete tensors in
eager mode) because XLA compiles for fixed shapes. `masked_select` is the one
eager-only op here: its output size depends on the mask's values.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx.ops._checks import (
    broadcast_shapes, check_rank, dtype_arg, index_array, index_range, int_list, op_axis, prod_int, static_int,
)
from pdx._args import ShapeError, argument_error
from pdx.ops._common import as_array, normalize_axis, op_error, shape_list
from pdx.ops._logic import nonzero

# Ops built from several primitives run their array math through one jitted kernel: eager
# (Paddle-style) calls then dispatch and compile one XLA program instead of one per primitive.
def _static_kernel(*names):
    return functools.partial(jax.jit, static_argnames=names)


def _axis(axis, ndim, op, name="axis"):
    return op_axis(axis, ndim, op=op, name=name)


def _tensor_list(x, op, name="x"):
    if isinstance(x, (jax.Array, np.ndarray)) or not isinstance(x, Sequence):
        raise argument_error(op, f"`{name}` must be a list or tuple of tensors; got {type(x).__name__}")
    if len(x) == 0:
        raise op_error(op, f"`{name}` is empty; pass at least one tensor")
    return [as_array(t, name=f"{name}[{i}]", op=op) for i, t in enumerate(x)]


def reshape(x, shape, name=None):
    """Reshape `x`; a 0 in `shape` copies that dim of `x`, one -1 is inferred.

    Args:
      x: a tensor.
      shape: list/tuple of ints or 1-D integer tensor.
      name: ignored.

    Returns:
      A tensor with the same elements in row-major order.

    Example:
      >>> import pdx
      >>> pdx.reshape(pdx.zeros([2, 3, 4]), [0, -1]).shape
      (2, 12)
    """
    x = as_array(x, op="reshape")
    dims = list(shape_list(shape, op="reshape"))
    for i, d in enumerate(dims):
        if d == 0:
            if i >= x.ndim:
                raise op_error("reshape", f"shape={dims} has 0 at position {i}, but x.shape={tuple(x.shape)} "
                                          f"has no dim {i} to copy")
            dims[i] = x.shape[i]
        elif d < -1:
            raise op_error("reshape", f"shape={dims} has an invalid dim {d}; use -1 to infer one dim")
    if dims.count(-1) > 1:
        raise op_error("reshape", f"shape={dims} has more than one -1; only one dim can be inferred")
    if any(map(jax.export.is_symbolic_dim, (*dims, *x.shape))):
        return jnp.reshape(x, dims)  # dims unknown until run (export with None dims): JAX checks sizes
    known = prod_int(d for d in dims if d != -1)
    if -1 in dims:
        if known == 0 or x.size % known:
            raise ShapeError(f"pdx.reshape: cannot reshape x.shape={tuple(x.shape)} ({x.size} elements) to "
                             f"shape={list(shape_list(shape, op='reshape'))}")
        dims[dims.index(-1)] = x.size // known
    elif known != x.size:
        raise ShapeError(f"pdx.reshape: cannot reshape x.shape={tuple(x.shape)} ({x.size} elements) to "
                         f"shape={dims} ({known} elements)")
    return jnp.reshape(x, dims)


def transpose(x, perm, name=None):
    """Permute the dims of `x`.

    Args:
      x: a tensor.
      perm: a permutation of range(x.ndim); negative entries count from the end.
      name: ignored.

    Returns:
      A tensor whose dim i is `x`'s dim `perm[i]`.

    Example:
      >>> import pdx
      >>> pdx.transpose(pdx.zeros([2, 3, 4]), [2, 0, 1]).shape
      (4, 2, 3)
    """
    x = as_array(x, op="transpose")
    perm_list = int_list(perm, op="transpose", name="perm")
    if len(perm_list) != x.ndim:
        raise op_error("transpose", f"`perm`={perm_list} has {len(perm_list)} entries but x.shape={tuple(x.shape)} "
                                    f"has rank {x.ndim}")
    normalized = [normalize_axis(p, x.ndim, op="transpose", name="perm") for p in perm_list]
    if sorted(normalized) != list(range(x.ndim)):
        raise op_error("transpose", f"`perm`={perm_list} is not a permutation of range({x.ndim})")
    return jnp.transpose(x, normalized)


def concat(x, axis=0, name=None):
    """Join tensors along an existing axis.

    Args:
      x: a list/tuple of tensors with equal rank and equal dims except along `axis`.
      axis: the axis to join along (int or 1-element tensor).
      name: ignored.

    Returns:
      The concatenated tensor.

    Example:
      >>> import pdx
      >>> pdx.concat([pdx.zeros([2, 3]), pdx.ones([1, 3])]).shape
      (3, 3)
    """
    arrays = _tensor_list(x, "concat")
    ndim = arrays[0].ndim
    if ndim == 0:
        raise op_error("concat", "0-D tensors cannot be concatenated; use pdx.stack or reshape them to [1]")
    ax = _axis(axis, ndim, "concat")
    first = tuple(arrays[0].shape)
    for i, a in enumerate(arrays[1:], start=1):
        if a.ndim != ndim:
            raise op_error("concat", f"all inputs must have the same rank; x[0].shape={first} but "
                                     f"x[{i}].shape={tuple(a.shape)}")
        others = [d for j, d in enumerate(a.shape) if j != ax]
        if others != [d for j, d in enumerate(first) if j != ax]:
            raise op_error("concat", f"x[0].shape={first} and x[{i}].shape={tuple(a.shape)} differ outside "
                                     f"axis={ax}")
    return jnp.concatenate(arrays, axis=ax)


def stack(x, axis=0, name=None):
    """Join equally shaped tensors along a new axis.

    Args:
      x: a list/tuple of tensors with identical shapes.
      axis: where the new axis goes, in [-(ndim + 1), ndim].
      name: ignored.

    Returns:
      A tensor of rank ndim + 1.

    Example:
      >>> import pdx
      >>> pdx.stack([pdx.zeros([2]), pdx.ones([2])], axis=1).shape
      (2, 2)
    """
    arrays = _tensor_list(x, "stack")
    first = tuple(arrays[0].shape)
    for i, a in enumerate(arrays[1:], start=1):
        if tuple(a.shape) != first:
            raise op_error("stack", f"all inputs must have the same shape; x[0].shape={first} but "
                                    f"x[{i}].shape={tuple(a.shape)}")
    ax = _axis(axis, len(first) + 1, "stack")
    return jnp.stack(arrays, axis=ax)


def split(x, num_or_sections, axis=0, name=None):
    """Split `x` along `axis` into equal parts or into given section sizes.

    Args:
      x: a tensor.
      num_or_sections: an int (the axis must divide evenly) or a list of sizes,
        one of which may be -1 (inferred).
      axis: the axis to split.
      name: ignored.

    Returns:
      A list of tensors.

    Example:
      >>> import pdx
      >>> [t.shape[0] for t in pdx.split(pdx.zeros([9]), [2, -1, 3])]
      [2, 4, 3]
    """
    x = as_array(x, op="split")
    check_rank(x, op="split", at_least=1)
    ax = _axis(axis, x.ndim, "split")
    size = x.shape[ax]
    if isinstance(num_or_sections, (int, np.integer)) and not isinstance(num_or_sections, bool):
        n = int(num_or_sections)
        if n <= 0 or size % n:
            raise op_error("split", f"x.shape[{ax}]={size} cannot be split evenly into "
                                    f"num_or_sections={n} parts; pass a list of section sizes instead")
        sections = [size // n] * n
    else:
        sections = int_list(num_or_sections, op="split", name="num_or_sections")
        if sections.count(-1) > 1 or any(s < -1 for s in sections):
            raise op_error("split", f"`num_or_sections`={sections} may contain at most one -1 and no other "
                                    "negative sizes")
        if -1 in sections:
            rest = size - builtins.sum(s for s in sections if s != -1)
            if rest < 0:
                raise op_error("split", f"sections {sections} exceed x.shape[{ax}]={size}")
            sections[sections.index(-1)] = rest
        if builtins.sum(sections) != size:
            raise op_error("split", f"sections {sections} sum to {builtins.sum(sections)}, but x.shape[{ax}]={size}")
    offsets = np.cumsum(sections)[:-1].tolist()
    return list(jnp.split(x, offsets, axis=ax))


def chunk(x, chunks, axis=0, name=None):
    """Split `x` into `chunks` equal parts along `axis` (the size must divide evenly).

    Args:
      x: a tensor.
      chunks: number of parts.
      axis: the axis to split.
      name: ignored.

    Returns:
      A list of `chunks` tensors.

    Example:
      >>> import pdx
      >>> len(pdx.chunk(pdx.zeros([6, 2]), 3))
      3
    """
    x = as_array(x, op="chunk")
    check_rank(x, op="chunk", at_least=1)
    n = static_int(chunks, op="chunk", name="chunks")
    ax = _axis(axis, x.ndim, "chunk")
    if n <= 0 or x.shape[ax] % n:
        raise op_error("chunk", f"x.shape[{ax}]={x.shape[ax]} cannot be split evenly into chunks={n}")
    return split(x, n, ax)


def squeeze(x, axis=None, name=None):
    """Remove size-1 dims: all of them, or those listed in `axis` (others are left as is).

    Args:
      x: a tensor.
      axis: None, an int or a list of ints; listed dims whose size is not 1 are kept.
      name: ignored.

    Returns:
      A tensor with the selected size-1 dims removed.

    Example:
      >>> import pdx
      >>> pdx.squeeze(pdx.zeros([1, 3, 1]), axis=[0, 1]).shape
      (3, 1)
    """
    x = as_array(x, op="squeeze")
    if axis is None:
        return jnp.squeeze(x)
    axes = {normalize_axis(a, x.ndim, op="squeeze") for a in int_list(axis, op="squeeze", name="axis")}
    drop = tuple(a for a in sorted(axes) if x.ndim and x.shape[a] == 1)
    return jnp.squeeze(x, axis=drop) if drop else x


def unsqueeze(x, axis, name=None):
    """Insert size-1 dims; a list of axes is applied one after another, as in Paddle.

    Args:
      x: a tensor.
      axis: an int or a list of ints; each is in [-(rank + 1), rank] for the rank
        reached so far.
      name: ignored.

    Returns:
      A tensor with the new dims.

    Example:
      >>> import pdx
      >>> pdx.unsqueeze(pdx.zeros([2, 3]), [0, 2]).shape
      (1, 2, 1, 3)
    """
    x = as_array(x, op="unsqueeze")
    for a in int_list(axis, op="unsqueeze", name="axis"):
        rank = x.ndim + 1
        if not -rank <= a < rank:
            raise op_error("unsqueeze", f"`axis`={a} is out of range for inserting into x of rank {x.ndim} "
                                        f"(valid: {-rank} .. {rank - 1})")
        x = jnp.expand_dims(x, a % rank)
    return x


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    """Merge the dims from `start_axis` to `stop_axis` (inclusive) into one.

    Args:
      x: a tensor (0-D input gives shape [1]).
      start_axis: first dim to merge.
      stop_axis: last dim to merge.
      name: ignored.

    Returns:
      The flattened tensor.

    Example:
      >>> import pdx
      >>> pdx.flatten(pdx.zeros([2, 3, 4]), start_axis=1).shape
      (2, 12)
    """
    x = as_array(x, op="flatten")
    if x.ndim == 0:
        return x.reshape(1)
    start = _axis(start_axis, x.ndim, "flatten", "start_axis")
    stop = _axis(stop_axis, x.ndim, "flatten", "stop_axis")
    if start > stop:
        raise op_error("flatten", f"`start_axis`={start_axis} comes after `stop_axis`={stop_axis} "
                                  f"for x.shape={tuple(x.shape)}")
    merged = prod_int(x.shape[start:stop + 1])
    return x.reshape(*x.shape[:start], merged, *x.shape[stop + 1:])


def gather(x, index, axis=None, name=None):
    """Pick slices of `x` along `axis` (default 0) at the positions in `index`.

    Args:
      x: a tensor.
      index: a 0-D or 1-D integer tensor (a `[N, 1]` index is accepted too).
      axis: the axis to gather along; None means 0.
      name: ignored.

    Returns:
      A tensor whose `axis` dim has len(index) entries (removed for a 0-D index).

    Example:
      >>> import pdx
      >>> pdx.gather(pdx.to_tensor([[1, 2], [3, 4], [5, 6]]), pdx.to_tensor([2, 0])).tolist()
      [[5, 6], [1, 2]]
    """
    x = as_array(x, op="gather")
    index = index_array(index, op="gather")
    check_rank(x, op="gather", at_least=1)
    ax = 0 if axis is None else _axis(axis, x.ndim, "gather")
    if index.ndim == 2 and index.shape[1] == 1:
        index = index.reshape(-1)
    if index.ndim > 1:
        raise op_error("gather", f"`index` must be 0-D or 1-D; got index.shape={tuple(index.shape)} "
                                 "(use gather_nd or take_along_axis for multi-dim indices)")
    return jnp.take(x, index, axis=ax)


def gather_nd(x, index, name=None):
    """Gather slices of `x` addressed by the last dim of `index`.

    Args:
      x: a tensor.
      index: an integer tensor `[..., K]` with K <= x.ndim; each row addresses
        x[i0, ..., iK-1].
      name: ignored.

    Returns:
      A tensor of shape `index.shape[:-1] + x.shape[K:]`.

    Example:
      >>> import pdx
      >>> pdx.gather_nd(pdx.to_tensor([[1, 2], [3, 4]]), pdx.to_tensor([[1, 0]])).tolist()
      [3]
    """
    x = as_array(x, op="gather_nd")
    index = index_array(index, op="gather_nd")
    check_rank(index, op="gather_nd", name="index", at_least=1)
    k = index.shape[-1]
    if k > x.ndim:
        raise op_error("gather_nd", f"index.shape[-1]={k} exceeds x's rank {x.ndim} (x.shape={tuple(x.shape)})")
    return _gather_nd_kernel(x, index)


@jax.jit
def _gather_nd_kernel(x, index):
    return x[tuple(index[..., i] for i in range(index.shape[-1]))]


def scatter(x, index, updates, overwrite=True, name=None):
    """Write `updates` into the rows of `x` listed in `index` (a new tensor; `x` is unchanged).

    With `overwrite=True` a repeated index keeps one of its updates (the last
    on CPU, as in Paddle). With `overwrite=False` the indexed rows are first
    zeroed and then every update is added, which is Paddle's accumulate mode.

    Args:
      x: a tensor of rank >= 1.
      index: a 1-D integer tensor of N row indices.
      updates: a tensor of shape `[N] + x.shape[1:]`.
      overwrite: overwrite (True) or accumulate (False).
      name: ignored.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> pdx.scatter(pdx.zeros([3]), pdx.to_tensor([1]), pdx.ones([1])).tolist()
      [0.0, 1.0, 0.0]
    """
    x = as_array(x, op="scatter")
    index = index_array(index, op="scatter")
    updates = as_array(updates, name="updates", op="scatter")
    check_rank(x, op="scatter", at_least=1)
    if index.ndim == 2 and index.shape[1] == 1:
        index = index.reshape(-1)
    if index.ndim != 1:
        raise op_error("scatter", f"`index` must be 1-D; got index.shape={tuple(index.shape)}")
    expected = (index.shape[0], *x.shape[1:])
    if tuple(updates.shape) != expected:
        raise op_error("scatter", f"updates.shape={tuple(updates.shape)} must be {expected} "
                                  f"(len(index), *x.shape[1:]) for x.shape={tuple(x.shape)}")
    return _scatter_kernel(x, index, updates.astype(x.dtype), overwrite=bool(overwrite))


@_static_kernel("overwrite")
def _scatter_kernel(x, index, updates, overwrite):
    if overwrite:
        return x.at[index].set(updates)
    return x.at[index].set(0).at[index].add(updates)


def scatter_nd_add(x, index, updates, name=None):
    """Add `updates` into `x` at the positions addressed by the last dim of `index`.

    Args:
      x: a tensor.
      index: an integer tensor `[..., K]` with K <= x.ndim.
      updates: a tensor of shape `index.shape[:-1] + x.shape[K:]`.
      name: ignored.

    Returns:
      A new tensor; repeated positions accumulate.

    Example:
      >>> import pdx
      >>> pdx.scatter_nd_add(pdx.zeros([3]), pdx.to_tensor([[1], [1]]), pdx.ones([2])).tolist()
      [0.0, 2.0, 0.0]
    """
    x = as_array(x, op="scatter_nd_add")
    index = index_array(index, op="scatter_nd_add")
    updates = as_array(updates, name="updates", op="scatter_nd_add")
    check_rank(index, op="scatter_nd_add", name="index", at_least=1)
    k = index.shape[-1]
    if k > x.ndim:
        raise op_error("scatter_nd_add", f"index.shape[-1]={k} exceeds x's rank {x.ndim}")
    expected = (*index.shape[:-1], *x.shape[k:])
    if tuple(updates.shape) != expected:
        raise op_error("scatter_nd_add", f"updates.shape={tuple(updates.shape)} must be {expected} "
                                         "(index.shape[:-1] + x.shape[index.shape[-1]:])")
    return _scatter_nd_add_kernel(x, index, updates.astype(x.dtype))


@jax.jit
def _scatter_nd_add_kernel(x, index, updates):
    return x.at[tuple(index[..., i] for i in range(index.shape[-1]))].add(updates)


def index_select(x, index, axis=0, name=None):
    """Select entries of `x` along `axis` at the positions in a 1-D `index`.

    Args:
      x: a tensor.
      index: a 1-D integer tensor.
      axis: the axis to select along.
      name: ignored.

    Returns:
      A tensor whose `axis` dim has len(index) entries.

    Example:
      >>> import pdx
      >>> pdx.index_select(pdx.to_tensor([[1, 2], [3, 4]]), pdx.to_tensor([1]), axis=1).tolist()
      [[2], [4]]
    """
    x = as_array(x, op="index_select")
    index = index_array(index, op="index_select")
    check_rank(x, op="index_select", at_least=1)
    if index.ndim != 1:
        raise op_error("index_select", f"`index` must be 1-D; got index.shape={tuple(index.shape)}")
    ax = _axis(axis, x.ndim, "index_select")
    index_range(index, x.shape[ax], op="index_select", where=f"x.shape[{ax}]={x.shape[ax]}")
    return jnp.take(x, index, axis=ax)


def _along_axis_grid(indices, ax):
    """Full index tuple addressing `arr[i0, .., indices[i], .., in]` for every position of `indices`."""
    grid = list(jnp.indices(indices.shape, sparse=True))
    grid[ax] = indices
    return tuple(grid)


def take_along_axis(arr, indices, axis, broadcast=True):
    """Pick values of `arr` along `axis` at `indices`.

    With `broadcast=True`, `indices` and `arr` broadcast against each other in
    every dim except `axis`. With `broadcast=False`, `indices` may be smaller
    than `arr` in the other dims and addresses the leading part of them.

    Args:
      arr: a tensor.
      indices: an integer tensor of the same rank as `arr`.
      axis: the axis to index along.
      broadcast: broadcast `indices` and `arr` (Paddle's default).

    Returns:
      A tensor with the (broadcast) shape of `indices`.

    Example:
      >>> import pdx
      >>> x = pdx.to_tensor([[1, 2, 3], [4, 5, 6]])
      >>> pdx.take_along_axis(x, pdx.to_tensor([[2], [0]]), axis=1).tolist()
      [[3], [4]]
    """
    arr = as_array(arr, name="arr", op="take_along_axis")
    indices = index_array(indices, op="take_along_axis", name="indices")
    if arr.ndim != indices.ndim:
        raise op_error("take_along_axis", f"`indices` and `arr` must have the same rank; got "
                                          f"arr.shape={tuple(arr.shape)} and indices.shape={tuple(indices.shape)}")
    ax = _axis(axis, arr.ndim, "take_along_axis")
    if broadcast:
        target = []
        for i, (a, b) in enumerate(zip(arr.shape, indices.shape)):
            if i == ax:
                target.append(b)
            elif a != b and 1 not in (a, b):
                raise op_error("take_along_axis", f"arr.shape={tuple(arr.shape)} and indices.shape="
                                                  f"{tuple(indices.shape)} cannot be broadcast at dim {i}")
            else:
                target.append(0 if 0 in (a, b) else builtins.max(a, b))
        indices = jnp.broadcast_to(indices, target)
        arr = jnp.broadcast_to(arr, [arr.shape[ax] if i == ax else d for i, d in enumerate(target)])
    else:
        for i, (a, b) in enumerate(zip(arr.shape, indices.shape)):
            if i != ax and b > a:
                raise op_error("take_along_axis", f"indices.shape={tuple(indices.shape)} is larger than "
                                                  f"arr.shape={tuple(arr.shape)} at dim {i}")
    return _take_along_kernel(arr, indices, ax=ax)


@_static_kernel("ax")
def _take_along_kernel(arr, indices, ax):
    return arr[_along_axis_grid(indices, ax)]


_PUT_REDUCES = ("assign", "add", "mul", "multiply", "mean", "amin", "amax")


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True):
    """Write `values` into `arr` along `axis` at `indices` (a new tensor).

    `reduce` combines values that land on the same position: 'assign'
    (a repeated index keeps one of its values), 'add', 'mul'/'multiply',
    'mean', 'amin', 'amax'. With `include_self=False` the old values at the
    written positions do not take part in the reduction.

    Args:
      arr: a tensor.
      indices: an integer tensor of the same rank as `arr`.
      values: a number or tensor broadcastable to the indexed shape.
      axis: the axis to index along.
      reduce: how to combine, see above.
      include_self: whether `arr`'s own values join the reduction.
      broadcast: broadcast `indices`/`values` to `arr`'s shape outside `axis`.

    Returns:
      The updated tensor.

    Example:
      >>> import pdx
      >>> x = pdx.zeros([2, 3])
      >>> pdx.put_along_axis(x, pdx.to_tensor([[1], [2]]), 1.0, axis=1).tolist()
      [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    op = "put_along_axis"
    arr = as_array(arr, name="arr", op=op)
    indices = index_array(indices, op=op, name="indices")
    if reduce not in _PUT_REDUCES:
        raise op_error(op, f"`reduce`={reduce!r} is not supported; use one of {list(_PUT_REDUCES)}")
    if arr.ndim != indices.ndim:
        raise op_error(op, f"`indices` and `arr` must have the same rank; got arr.shape={tuple(arr.shape)} "
                           f"and indices.shape={tuple(indices.shape)}")
    ax = _axis(axis, arr.ndim, op)
    values = as_array(values, name="values", op=op).astype(arr.dtype)
    fits = all(b <= a for a, b in zip(arr.shape, indices.shape))
    if broadcast and fits:
        target = tuple(indices.shape[ax] if i == ax else d for i, d in enumerate(arr.shape))
        for name, shape in (("indices", indices.shape), ("values", values.shape)):
            try:
                np.broadcast_to(np.empty(shape, np.bool_), target)
            except ValueError:
                raise op_error(op, f"{name}.shape={tuple(shape)} cannot be broadcast to {target} (arr.shape "
                                   f"with indices.shape[{ax}] on axis {ax}); pass broadcast=False to index "
                                   "a sub-block") from None
        indices = jnp.broadcast_to(indices, target)
        values = jnp.broadcast_to(values, target)
    elif values.size == 1:
        values = jnp.broadcast_to(values.reshape(()), indices.shape)
    else:
        if values.ndim != indices.ndim or any(v < i for v, i in zip(values.shape, indices.shape)):
            raise op_error(op, f"values.shape={tuple(values.shape)} must be at least indices.shape="
                               f"{tuple(indices.shape)} in every dim")
        values = values[tuple(builtins.slice(0, s) for s in indices.shape)]
        for i, (a, b) in enumerate(zip(arr.shape, indices.shape)):
            if i != ax and b > a:
                raise op_error(op, f"indices.shape={tuple(indices.shape)} is larger than arr.shape="
                                   f"{tuple(arr.shape)} at dim {i}")
    return _put_along_kernel(arr, indices, values, ax=ax, reduce=reduce, include_self=bool(include_self))


@_static_kernel("ax", "reduce", "include_self")
def _put_along_kernel(arr, indices, values, ax, reduce, include_self):
    where = _along_axis_grid(indices, ax)
    if reduce == "assign":
        return arr.at[where].set(values)
    if reduce == "add":
        base = arr if include_self else arr.at[where].set(0)
        return base.at[where].add(values)
    if reduce in ("mul", "multiply"):
        base = arr if include_self else arr.at[where].set(1)
        return base.at[where].multiply(values)
    if reduce == "amax":
        base = arr if include_self else arr.at[where].set(_lowest(arr.dtype))
        return base.at[where].max(values)
    if reduce == "amin":
        base = arr if include_self else arr.at[where].set(_highest(arr.dtype))
        return base.at[where].min(values)
    # mean: sum of the contributions over their count (the old value counts once when included)
    base = arr if include_self else arr.at[where].set(0)
    total = base.at[where].add(values)
    counts = jnp.zeros(arr.shape, jnp.int32).at[where].add(1)
    written = counts > 0
    counts = jnp.maximum(counts + (1 if include_self else 0), 1).astype(arr.dtype)
    if jnp.issubdtype(arr.dtype, jnp.inexact):
        mean_value = total / counts
    else:
        mean_value = jnp.floor_divide(total, counts)
    return jnp.where(written, mean_value, arr)


def _lowest(dtype):
    return jnp.finfo(dtype).min if jnp.issubdtype(dtype, jnp.inexact) else jnp.iinfo(dtype).min


def _highest(dtype):
    return jnp.finfo(dtype).max if jnp.issubdtype(dtype, jnp.inexact) else jnp.iinfo(dtype).max


def where(condition, x=None, y=None, name=None):
    """Choose `x` where `condition` is True and `y` elsewhere, with broadcasting.

    With only `condition`, returns `nonzero(condition, as_tuple=True)`; that
    form is eager only.

    Args:
      condition: a bool tensor.
      x: a tensor or number (chosen where True).
      y: a tensor or number (chosen where False).
      name: ignored.

    Returns:
      The broadcast selection, or a tuple of index tensors.

    Example:
      >>> import pdx
      >>> pdx.where(pdx.to_tensor([True, False]), 1.0, 2.0).tolist()
      [1.0, 2.0]
    """
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    if x is None or y is None:
        raise op_error("where", "pass both `x` and `y`, or neither (to get the indices of True values)")
    condition = as_array(condition, name="condition", op="where")
    xs = x if isinstance(x, (int, float)) and not isinstance(x, bool) else as_array(x, op="where")
    ys = y if isinstance(y, (int, float)) and not isinstance(y, bool) else as_array(y, name="y", op="where")
    broadcast_shapes("where", condition=condition, x=xs, y=ys)
    return jnp.where(condition.astype(jnp.bool_), xs, ys)


def masked_fill(x, mask, value, name=None):
    """Replace the elements of `x` where `mask` is True with `value`.

    Args:
      x: a tensor.
      mask: a bool tensor broadcastable with `x`.
      value: a number or 0-D tensor.
      name: ignored.

    Returns:
      A tensor with the broadcast shape of `x` and `mask` and `x`'s dtype.

    Example:
      >>> import pdx
      >>> pdx.masked_fill(pdx.zeros([2]), pdx.to_tensor([True, False]), 5.0).tolist()
      [5.0, 0.0]
    """
    x = as_array(x, op="masked_fill")
    mask = as_array(mask, name="mask", op="masked_fill")
    if mask.dtype != jnp.bool_:
        raise TypeError(f"pdx.masked_fill: `mask` must be a bool tensor; got dtype {mask.dtype}")
    broadcast_shapes("masked_fill", x=x, mask=mask)
    value = jnp.asarray(value).astype(x.dtype)
    if value.ndim:
        raise op_error("masked_fill", f"`value` must be a number or 0-D tensor; got shape {tuple(value.shape)}")
    return jnp.where(mask, value, x)


_MASKED_SELECT_UNDER_TRACE = (
    "pdx.masked_select is eager only: its output size depends on the mask's values, which "
    "are unknown under a trace (pdx.jit, jax.jit, jax.grad). Use pdx.where(mask, x, 0) to keep "
    "the shape, or pdx.nonzero(mask, size=...) to gather a fixed number of elements."
)


def masked_select(x, mask, name=None):
    """The elements of `x` where `mask` is True, as a 1-D tensor (eager only).

    Args:
      x: a tensor.
      mask: a bool tensor broadcastable with `x`.
      name: ignored.

    Returns:
      A 1-D tensor in row-major order of the broadcast shape.

    Example:
      >>> import pdx
      >>> pdx.masked_select(pdx.to_tensor([1, 2, 3]), pdx.to_tensor([True, False, True])).tolist()
      [1, 3]
    """
    x = as_array(x, op="masked_select")
    mask = as_array(mask, name="mask", op="masked_select")
    if mask.dtype != jnp.bool_:
        raise TypeError(f"pdx.masked_select: `mask` must be a bool tensor; got dtype {mask.dtype}")
    shape = broadcast_shapes("masked_select", x=x, mask=mask)
    try:
        flat_mask = np.asarray(jnp.broadcast_to(mask, shape)).reshape(-1)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError) as e:
        raise RuntimeError(_MASKED_SELECT_UNDER_TRACE) from e
    return jnp.broadcast_to(x, shape).reshape(-1)[np.flatnonzero(flat_mask)]


def tile(x, repeat_times, name=None):
    """Repeat `x` `repeat_times[i]` times along each dim.

    Args:
      x: a tensor.
      repeat_times: list/tuple of ints or 1-D tensor; the shorter of `x.shape`
        and `repeat_times` is padded with leading 1s.
      name: ignored.

    Returns:
      The tiled tensor.

    Example:
      >>> import pdx
      >>> pdx.tile(pdx.to_tensor([1, 2]), [2]).tolist()
      [1, 2, 1, 2]
    """
    x = as_array(x, op="tile")
    reps = int_list(repeat_times, op="tile", name="repeat_times")
    if any(r < 0 for r in reps):
        raise op_error("tile", f"`repeat_times`={reps} must be non-negative")
    return jnp.tile(x, reps)


def _expand_target(x, shape, op):
    dims = list(shape_list(shape, op=op))
    if len(dims) < x.ndim:
        raise op_error(op, f"`shape`={dims} has fewer dims than x.shape={tuple(x.shape)}")
    lead = len(dims) - x.ndim
    for i, d in enumerate(dims):
        if d == -1:
            if i < lead:
                raise op_error(op, f"`shape`={dims}: -1 (keep the dim) is not allowed for the new leading dim {i}")
            dims[i] = x.shape[i - lead]
        elif d < 0:
            raise op_error(op, f"`shape`={dims} has an invalid dim {d}")
        elif i >= lead and x.shape[i - lead] not in (1, d):
            raise op_error(op, f"cannot expand x.shape={tuple(x.shape)} to shape={list(shape_list(shape, op=op))}: "
                               f"dim {i - lead} has size {x.shape[i - lead]}, which is neither 1 nor {d}")
    return dims


def expand(x, shape, name=None):
    """Broadcast `x` to `shape`; -1 keeps the corresponding dim of `x`.

    Args:
      x: a tensor.
      shape: the target shape (list/tuple or 1-D tensor).
      name: ignored.

    Returns:
      The expanded tensor.

    Example:
      >>> import pdx
      >>> pdx.expand(pdx.zeros([2, 1]), [3, -1, 4]).shape
      (3, 2, 4)
    """
    x = as_array(x, op="expand")
    return jnp.broadcast_to(x, _expand_target(x, shape, "expand"))


def broadcast_to(x, shape, name=None):
    """Broadcast `x` to `shape` (same rules as `expand`, -1 keeps a dim).

    Args:
      x: a tensor.
      shape: the target shape.
      name: ignored.

    Returns:
      The broadcast tensor.

    Example:
      >>> import pdx
      >>> pdx.broadcast_to(pdx.zeros([3]), [2, 3]).shape
      (2, 3)
    """
    x = as_array(x, op="broadcast_to")
    return jnp.broadcast_to(x, _expand_target(x, shape, "broadcast_to"))


def expand_as(x, y, name=None):
    """Broadcast `x` to the shape of `y`.

    Args:
      x: a tensor.
      y: a tensor whose shape is the target.
      name: ignored.

    Returns:
      The broadcast tensor.

    Example:
      >>> import pdx
      >>> pdx.expand_as(pdx.zeros([1, 3]), pdx.ones([2, 3])).shape
      (2, 3)
    """
    x = as_array(x, op="expand_as")
    y = as_array(y, name="y", op="expand_as")
    return jnp.broadcast_to(x, _expand_target(x, y.shape, "expand_as"))


def flip(x, axis, name=None):
    """Reverse the order of elements along the given axes.

    Args:
      x: a tensor.
      axis: an int or list of ints.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.flip(pdx.to_tensor([1, 2, 3]), 0).tolist()
      [3, 2, 1]
    """
    x = as_array(x, op="flip")
    axes = tuple(normalize_axis(a, x.ndim, op="flip") for a in int_list(axis, op="flip", name="axis"))
    return jnp.flip(x, axis=axes) if axes else x


def roll(x, shifts, axis=None, name=None):
    """Shift elements cyclically along `axis`; with `axis=None` the flattened tensor is rolled.

    Args:
      x: a tensor.
      shifts: an int or list of ints (one per axis).
      axis: None, an int, or a list of ints.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.roll(pdx.to_tensor([1, 2, 3]), 1).tolist()
      [3, 1, 2]
    """
    x = as_array(x, op="roll")
    shift_list = int_list(shifts, op="roll", name="shifts")
    if axis is None:
        if len(shift_list) != 1:
            raise op_error("roll", f"`shifts`={shift_list} must be a single int when axis is None")
        return jnp.roll(x.reshape(-1), shift_list[0]).reshape(x.shape)
    axes = [normalize_axis(a, x.ndim, op="roll") for a in int_list(axis, op="roll", name="axis")]
    if len(axes) != len(shift_list):
        raise op_error("roll", f"`shifts`={shift_list} and `axis`={axes} must have the same length")
    return jnp.roll(x, shift_list, axis=axes)


def cast(x, dtype):
    """Convert `x` to `dtype` (float -> int truncates toward zero; into an 8- or 16-bit integer the
    truncated value wraps, as in Paddle: -1.2 -> uint8 255).

    Args:
      x: a tensor.
      dtype: the target dtype ('float32', 'int64', 'bool', ...).

    Returns:
      The converted tensor.

    Example:
      >>> import pdx
      >>> pdx.cast(pdx.to_tensor([1.7, -1.7]), "int32").tolist()
      [1, -1]
    """
    x = as_array(x, op="cast")
    dt = dtype_arg(dtype, op="cast")
    if dt is None:
        raise TypeError("pdx.cast: `dtype` is required, e.g. 'float32' or 'int64'")
    dt = np.dtype(dt)
    if jnp.issubdtype(x.dtype, jnp.floating) and dt.kind in "iu" and dt.itemsize < 4:
        # Paddle (and numpy) truncate to a wide integer, then wrap into the narrow one
        # (-1.2 -> uint8 255, 300.7 -> int8 44); XLA's direct conversion saturates instead.
        return x.astype(jnp.int32).astype(dt)
    return x.astype(dt)


def _slice_spec(x, axes, starts, ends, strides, op):
    axes = int_list(axes, op=op, name="axes")
    starts = int_list(starts, op=op, name="starts")
    ends = int_list(ends, op=op, name="ends")
    strides = [1] * len(axes) if strides is None else int_list(strides, op=op, name="strides")
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise op_error(op, f"`axes`, `starts`, `ends`{', `strides`' if op == 'strided_slice' else ''} must have "
                           f"the same length; got {len(axes)}, {len(starts)}, {len(ends)}"
                           + (f", {len(strides)}" if op == "strided_slice" else ""))
    index = [builtins.slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, strides):
        if st == 0:
            raise op_error(op, f"`strides` must be non-zero; got {strides}")
        index[normalize_axis(a, x.ndim, op=op, name="axes")] = builtins.slice(s, e, st)
    return tuple(index)


def slice(input, axes, starts, ends):  # noqa: A001,A002 (Paddle's names)
    """Take `input[starts:ends]` along each of `axes` (Python-style clamping of the bounds).

    Args:
      input: a tensor.
      axes: the axes to slice.
      starts: start per axis (negative counts from the end).
      ends: exclusive end per axis (clamped to the dim size).

    Returns:
      The sliced tensor.

    Example:
      >>> import pdx
      >>> pdx.slice(pdx.zeros([4, 5]), axes=[0, 1], starts=[1, 0], ends=[3, -1]).shape
      (2, 4)
    """
    x = as_array(input, name="input", op="slice")
    return x[_slice_spec(x, axes, starts, ends, None, "slice")]


def strided_slice(x, axes, starts, ends, strides, name=None):
    """Take `x[starts:ends:strides]` along each of `axes` (negative strides walk backward).

    Args:
      x: a tensor.
      axes: the axes to slice.
      starts: start per axis.
      ends: exclusive end per axis.
      strides: non-zero step per axis.
      name: ignored.

    Returns:
      The sliced tensor.

    Example:
      >>> import pdx
      >>> pdx.strided_slice(pdx.arange(6), [0], [5], [0], [-2]).tolist()
      [5, 3, 1]
    """
    x = as_array(x, op="strided_slice")
    return x[_slice_spec(x, axes, starts, ends, strides, "strided_slice")]


def unbind(input, axis=0):  # noqa: A002 (Paddle's name)
    """Split `input` along `axis` into a list of tensors with that dim removed.

    Args:
      input: a tensor of rank >= 1.
      axis: the axis to unbind.

    Returns:
      A list of `input.shape[axis]` tensors.

    Example:
      >>> import pdx
      >>> [t.shape for t in pdx.unbind(pdx.zeros([2, 3]), axis=1)]
      [(2,), (2,), (2,)]
    """
    x = as_array(input, name="input", op="unbind")
    check_rank(x, op="unbind", name="input", at_least=1)
    ax = _axis(axis, x.ndim, "unbind")
    # slices, not gathers: their gradient is one concatenate, not a scatter-add per piece
    return [jax.lax.index_in_dim(x, i, axis=ax, keepdims=False) for i in range(x.shape[ax])]


def repeat_interleave(x, repeats, axis=None, name=None):
    """Repeat each element (or slice along `axis`) `repeats` times.

    A tensor `repeats` gives a count per element; its values set the output
    size, so under jit they must be concrete (eager) or use an int.

    Args:
      x: a tensor.
      repeats: an int or a 1-D integer tensor with one count per entry along `axis`.
      axis: the axis to repeat along; None flattens first.
      name: ignored.

    Returns:
      The repeated tensor.

    Example:
      >>> import pdx
      >>> pdx.repeat_interleave(pdx.to_tensor([1, 2]), 2).tolist()
      [1, 1, 2, 2]
    """
    x = as_array(x, op="repeat_interleave")
    if axis is None:
        x, ax = x.reshape(-1), 0
    else:
        ax = _axis(axis, x.ndim, "repeat_interleave")
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        if repeats < 0:
            raise op_error("repeat_interleave", f"`repeats`={repeats} must be >= 0")
        return jnp.repeat(x, int(repeats), axis=ax)
    reps = index_array(repeats, op="repeat_interleave", name="repeats").reshape(-1)
    if reps.shape[0] == 1:
        return jnp.repeat(x, static_int(reps, op="repeat_interleave", name="repeats"), axis=ax)
    if reps.shape[0] != x.shape[ax]:
        raise op_error("repeat_interleave", f"`repeats` has {reps.shape[0]} entries but x has {x.shape[ax]} "
                                            f"along axis {ax}")
    try:
        total = int(np.asarray(reps).sum())
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as e:
        raise TypeError("pdx.repeat_interleave: a traced `repeats` tensor gives an unknown output size; "
                        "pass repeats as a Python int or a concrete tensor") from e
    return jnp.repeat(x, reps, axis=ax, total_repeat_length=total)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
_CHANNEL_LAST = {"NLC": 3, "NHWC": 4, "NDHWC": 5}
_CHANNEL_FIRST = {"NCL": 3, "NCHW": 4, "NCDHW": 5}


def _pad_pairs(x, pad, mode, data_format, pad_from_left_axis):
    """Per-axis (before, after) pairs following Paddle's pad rules."""
    ndim = x.ndim
    pad = int_list(pad, op="pad", name="pad")
    if len(pad) % 2:
        raise op_error("pad", f"`pad`={pad} must have an even length (before/after pairs)")
    if mode == "constant" and len(pad) != 2 * (ndim - 2):
        # Generic constant padding: pairs run from the last axis backward, unless a full
        # 2*ndim list is given with pad_from_left_axis=True (then from the first axis).
        if len(pad) > 2 * ndim:
            raise op_error("pad", f"`pad`={pad} has {len(pad)} entries; at most 2 * x.ndim = {2 * ndim}")
        pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
        if len(pad) == 2 * ndim and pad_from_left_axis:
            return pairs
        out = [(0, 0)] * ndim
        for i, p in enumerate(pairs):
            out[ndim - 1 - i] = p
        return out
    # Spatial padding of a 3-D/4-D/5-D NC* or N*C tensor: pairs run from the last spatial axis backward.
    if ndim not in (3, 4, 5):
        raise op_error("pad", f"mode={mode!r} (or a pad list of length 2*(ndim-2)) needs a 3-D, 4-D or 5-D x; "
                              f"got x.shape={tuple(x.shape)}")
    if data_format is None:
        data_format = {3: "NCL", 4: "NCHW", 5: "NCDHW"}[ndim]
    fmt = data_format.upper() if isinstance(data_format, str) else data_format
    expected = _CHANNEL_FIRST.get(fmt) or _CHANNEL_LAST.get(fmt)
    if expected != ndim:
        valid = [k for k, v in {**_CHANNEL_FIRST, **_CHANNEL_LAST}.items() if v == ndim]
        raise op_error("pad", f"`data_format`={data_format!r} does not fit a {ndim}-D x; use one of {valid}")
    if len(pad) != 2 * (ndim - 2):
        raise op_error("pad", f"mode={mode!r} needs `pad` of length {2 * (ndim - 2)} (two per spatial dim) "
                              f"for x.shape={tuple(x.shape)}; got {len(pad)}")
    spatial = list(range(2, ndim)) if fmt in _CHANNEL_FIRST else list(range(1, ndim - 1))
    out = [(0, 0)] * ndim
    for i, a in enumerate(reversed(spatial)):
        out[a] = (pad[2 * i], pad[2 * i + 1])
    return out


def pad(x, pad, mode="constant", value=0.0, data_format=None, pad_from_left_axis=True, name=None):
    """Pad a tensor (Paddle's `paddle.nn.functional.pad` rules).

    Which axes `pad` applies to:
    - mode 'constant' with a list whose length is not 2*(ndim-2): the list is
      (before, after) pairs for the last axis, then the one before it, and so
      on; a list of exactly 2*ndim with `pad_from_left_axis=True` instead pairs
      up with axes 0, 1, ... in order.
    - mode 'reflect', 'replicate', 'circular', or a list of length 2*(ndim-2):
      x must be 3-D/4-D/5-D and the pairs apply to the spatial axes given by
      `data_format`, last spatial axis first: [left, right, top, bottom, front, back].

    Args:
      x: a tensor.
      pad: list/tuple of ints or 1-D tensor, see above.
      mode: 'constant', 'reflect', 'replicate' or 'circular'.
      value: fill value for 'constant'.
      data_format: 'NCL', 'NLC', 'NCHW', 'NHWC', 'NCDHW', 'NDHWC' or None (channel-first by rank).
      pad_from_left_axis: see above.
      name: ignored.

    Returns:
      The padded tensor.

    Example:
      >>> import pdx
      >>> pdx.pad(pdx.ones([1, 1, 2, 2]), [1, 1, 0, 0]).shape
      (1, 1, 2, 4)
    """
    x = as_array(x, op="pad")
    if mode not in _PAD_MODES:
        raise op_error("pad", f"`mode`={mode!r} is not supported; use one of {list(_PAD_MODES)}")
    pairs = _pad_pairs(x, pad, mode, data_format, pad_from_left_axis)
    if mode == "constant":
        config = [(lo, hi, 0) for lo, hi in pairs]
        return jax.lax.pad(x, jnp.asarray(value, x.dtype), config)
    for axis_i, (lo, hi) in enumerate(pairs):
        if lo < 0 or hi < 0:
            raise op_error("pad", f"mode={mode!r} needs non-negative padding; got {pairs[axis_i]} for axis {axis_i}")
        if mode == "reflect" and (lo >= x.shape[axis_i] or hi >= x.shape[axis_i]) and (lo or hi):
            raise op_error("pad", f"mode='reflect' needs padding < the dim size; axis {axis_i} has size "
                                  f"{x.shape[axis_i]} but padding {(lo, hi)}")
        if mode == "circular" and (lo > x.shape[axis_i] or hi > x.shape[axis_i]):
            raise op_error("pad", f"mode='circular' needs padding <= the dim size; axis {axis_i} has size "
                                  f"{x.shape[axis_i]} but padding {(lo, hi)}")
    return _pad_kernel(x, pairs=tuple(pairs), mode=_PAD_MODES[mode])


@_static_kernel("pairs", "mode")
def _pad_kernel(x, pairs, mode):
    return jnp.pad(x, pairs, mode=mode)
