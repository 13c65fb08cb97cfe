"""numpy-style stacking and splitting: atleast_Nd, h/v/d/column stacks, tensor_split and friends.

Sizes come from Python ints and array shapes, so every op works under jit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx.ops._checks import check_rank, int_list, static_int
from pdx.ops._common import as_array, normalize_axis, op_error
from pdx.ops._manipulation import _tensor_list, concat


def _axis(axis, ndim, op, name="axis"):
    return normalize_axis(static_int(axis, op=op, name=name), ndim, op=op, name=name)


def _at_least(op, rank, inputs):
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    out = []
    for i, t in enumerate(inputs):
        t = as_array(t, name=f"inputs[{i}]", op=op)
        if t.ndim < rank:
            t = {1: jnp.atleast_1d, 2: jnp.atleast_2d, 3: jnp.atleast_3d}[rank](t)
        out.append(t)
    return out[0] if len(out) == 1 else out


def atleast_1d(*inputs, name=None):
    """View each input with at least one dim (0-D becomes `[1]`).

    Args:
      *inputs: tensors (or one list of tensors).
      name: ignored.

    Returns:
      One tensor for one input, else a list.

    Example:
      >>> import pdx
      >>> pdx.atleast_1d(pdx.to_tensor(3.0)).shape
      (1,)
    """
    return _at_least("atleast_1d", 1, inputs)


def atleast_2d(*inputs, name=None):
    """View each input with at least two dims (`[N]` becomes `[1, N]`).

    Args:
      *inputs: tensors (or one list of tensors).
      name: ignored.

    Returns:
      One tensor for one input, else a list.

    Example:
      >>> import pdx
      >>> pdx.atleast_2d(pdx.zeros([3])).shape
      (1, 3)
    """
    return _at_least("atleast_2d", 2, inputs)


def atleast_3d(*inputs, name=None):
    """View each input with at least three dims (`[N]` -> `[1, N, 1]`, `[M, N]` -> `[M, N, 1]`).

    Args:
      *inputs: tensors (or one list of tensors).
      name: ignored.

    Returns:
      One tensor for one input, else a list.

    Example:
      >>> import pdx
      >>> pdx.atleast_3d(pdx.zeros([2, 3])).shape
      (2, 3, 1)
    """
    return _at_least("atleast_3d", 3, inputs)


def hstack(x, name=None):
    """Stack tensors horizontally: along axis 1, or axis 0 for 1-D tensors.

    Args:
      x: a list/tuple of tensors.
      name: ignored.

    Returns:
      The joined tensor.

    Example:
      >>> import pdx
      >>> pdx.hstack([pdx.zeros([2, 1]), pdx.ones([2, 2])]).shape
      (2, 3)
    """
    arrays = [jnp.atleast_1d(a) for a in _tensor_list(x, "hstack")]
    return concat(arrays, axis=0 if arrays[0].ndim == 1 else 1)


def vstack(x, name=None):
    """Stack tensors vertically (along axis 0, 1-D tensors become rows).

    Args:
      x: a list/tuple of tensors.
      name: ignored.

    Returns:
      The joined tensor.

    Example:
      >>> import pdx
      >>> pdx.vstack([pdx.zeros([3]), pdx.ones([3])]).shape
      (2, 3)
    """
    return concat([jnp.atleast_2d(a) for a in _tensor_list(x, "vstack")], axis=0)


def row_stack(x, name=None):
    """Alias of `vstack`.

    Args:
      x: a list/tuple of tensors.
      name: ignored.

    Returns:
      The joined tensor.

    Example:
      >>> import pdx
      >>> pdx.row_stack([pdx.zeros([3]), pdx.ones([3])]).shape
      (2, 3)
    """
    return concat([jnp.atleast_2d(a) for a in _tensor_list(x, "row_stack")], axis=0)


def dstack(x, name=None):
    """Stack tensors depth-wise (along axis 2, after `atleast_3d`).

    Args:
      x: a list/tuple of tensors.
      name: ignored.

    Returns:
      The joined tensor.

    Example:
      >>> import pdx
      >>> pdx.dstack([pdx.zeros([2, 3]), pdx.ones([2, 3])]).shape
      (2, 3, 2)
    """
    return concat([jnp.atleast_3d(a) for a in _tensor_list(x, "dstack")], axis=2)


def column_stack(x, name=None):
    """Stack tensors as columns: 1-D (and 0-D) tensors become `[N, 1]`, then join along axis 1.

    Args:
      x: a list/tuple of tensors.
      name: ignored.

    Returns:
      The joined 2-D (or higher) tensor.

    Example:
      >>> import pdx
      >>> pdx.column_stack([pdx.zeros([3]), pdx.ones([3])]).shape
      (3, 2)
    """
    arrays = _tensor_list(x, "column_stack")
    return concat([a.reshape(-1, 1) if a.ndim < 2 else a for a in arrays], axis=1)


def _split_points(total, num_or_indices, op):
    if isinstance(num_or_indices, (int, np.integer)) and not isinstance(num_or_indices, bool):
        n = int(num_or_indices)
        if n <= 0:
            raise op_error(op, f"`num_or_indices`={n} must be a positive int or a list of indices")
        base, extra = divmod(total, n)
        sizes = [base + 1] * extra + [base] * (n - extra)
        return [(sum(sizes[:i]), sum(sizes[:i + 1])) for i in range(n)]
    indices = int_list(num_or_indices, op=op, name="num_or_indices")
    bounds, start = [], 0
    for end in [*indices, total]:
        s = start + total if start < 0 else start
        e = end + total if end < 0 else end
        s, e = min(max(s, 0), total), min(max(e, 0), total)
        bounds.append((s, max(s, e)))
        start = end
    return bounds


def tensor_split(x, num_or_indices, axis=0, name=None):
    """Split into `n` nearly equal parts (the first `size % n` one longer) or at given indices.

    Args:
      x: a tensor of rank >= 1.
      num_or_indices: an int number of parts, or a list of split indices.
      axis: the axis to split.
      name: ignored.

    Returns:
      A list of tensors.

    Example:
      >>> import pdx
      >>> [t.shape[0] for t in pdx.tensor_split(pdx.zeros([7]), 3)]
      [3, 2, 2]
    """
    x = as_array(x, op="tensor_split")
    check_rank(x, op="tensor_split", at_least=1)
    ax = _axis(axis, x.ndim, "tensor_split")
    bounds = _split_points(x.shape[ax], num_or_indices, "tensor_split")
    return [jax.lax.slice_in_dim(x, s, e, axis=ax) for s, e in bounds]


def _named_split(op, x, num_or_indices, rank, axis):
    x = as_array(x, op=op)
    if x.ndim < rank:
        raise op_error(op, f"`x` must have rank >= {rank}; got x.shape={tuple(x.shape)}")
    return tensor_split(x, num_or_indices, axis=axis)


def hsplit(x, num_or_indices, name=None):
    """`tensor_split` along axis 1 (axis 0 for 1-D tensors).

    Args:
      x: a tensor of rank >= 1.
      num_or_indices: an int number of parts, or a list of split indices.
      name: ignored.

    Returns:
      A list of tensors.

    Example:
      >>> import pdx
      >>> len(pdx.hsplit(pdx.zeros([2, 4]), 2))
      2
    """
    x = as_array(x, op="hsplit")
    return _named_split("hsplit", x, num_or_indices, 1, 1 if x.ndim > 1 else 0)


def vsplit(x, num_or_indices, name=None):
    """`tensor_split` along axis 0 of a tensor of rank >= 2.

    Args:
      x: a tensor of rank >= 2.
      num_or_indices: an int number of parts, or a list of split indices.
      name: ignored.

    Returns:
      A list of tensors.

    Example:
      >>> import pdx
      >>> len(pdx.vsplit(pdx.zeros([4, 2]), [1]))
      2
    """
    return _named_split("vsplit", x, num_or_indices, 2, 0)


def dsplit(x, num_or_indices, name=None):
    """`tensor_split` along axis 2 of a tensor of rank >= 3.

    Args:
      x: a tensor of rank >= 3.
      num_or_indices: an int number of parts, or a list of split indices.
      name: ignored.

    Returns:
      A list of tensors.

    Example:
      >>> import pdx
      >>> len(pdx.dsplit(pdx.zeros([1, 2, 4]), 2))
      2
    """
    return _named_split("dsplit", x, num_or_indices, 3, 2)


def unstack(x, axis=0, num=None):
    """Split `x` into its slices along `axis` (each without that axis).

    Args:
      x: a tensor.
      axis: the axis to unstack.
      num: optional check: must equal `x.shape[axis]` (Paddle allows fewer; pdx asks for all).

    Returns:
      A list of `x.shape[axis]` tensors.

    Example:
      >>> import pdx
      >>> len(pdx.unstack(pdx.zeros([3, 2]), axis=0))
      3
    """
    x = as_array(x, op="unstack")
    ax = _axis(axis, x.ndim, "unstack")
    if num is not None and static_int(num, op="unstack", name="num") != x.shape[ax]:
        raise op_error("unstack", f"`num`={num} must equal x.shape[{ax}]={x.shape[ax]}")
    return [jnp.squeeze(s, ax) for s in jnp.split(x, x.shape[ax], axis=ax)] if x.shape[ax] else []
