"""Products, diagonals and distances at Paddle's top level (tensordot, addmm, trace, cdist, ...).

These are plain contractions and gathers over `jax.numpy`; all work under jit
and differentiate.
"""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

from pdx.ops._checks import broadcast_shapes, check_rank, int_dtype_arg, static_int
from pdx.ops._common import as_array, normalize_axis, op_error
from pdx.ops._elementwise import _to_float
from pdx.ops._manipulation import _tensor_list


def _pair(x, y, op, xname="x", yname="y"):
    return as_array(x, name=xname, op=op), as_array(y, name=yname, op=op)


def tensordot(x, y, axes=2, name=None):
    """Contract the last `axes` dims of `x` with the first of `y`, or explicit axis lists.

    Args:
      x: a tensor.
      y: a tensor.
      axes: an int N; a list of ints (the same axes of x and y); or `[x axes, y axes]`, the shorter
        extended by the longer one's tail (Paddle's rule). A contracted dim of size 1 matches any size.
      name: ignored.

    Returns:
      The contracted tensor.

    Example:
      >>> import pdx
      >>> pdx.tensordot(pdx.ones([2, 3, 4]), pdx.ones([3, 4, 5]), axes=2).shape
      (2, 5)
    """
    x, y = _pair(x, y, "tensordot")
    if hasattr(axes, "tolist"):
        axes = np.asarray(axes).tolist()
    if not isinstance(axes, (list, tuple)):
        n = static_int(axes, op="tensordot", name="axes")
        if n < 0 or n > min(x.ndim, y.ndim) or x.shape[x.ndim - n:] != y.shape[:n]:
            raise op_error("tensordot", f"cannot contract the last {n} dims of x.shape={tuple(x.shape)} "
                                        f"with the first of y.shape={tuple(y.shape)} (axes={axes})")
        return jnp.tensordot(x, y, axes=n)
    xa, ya = _tensordot_axes(axes)
    xa = [normalize_axis(static_int(a, op="tensordot", name="axes"), x.ndim, op="tensordot", name="axes") for a in xa]
    ya = [normalize_axis(static_int(a, op="tensordot", name="axes"), y.ndim, op="tensordot", name="axes") for a in ya]
    # Paddle's rule: a size-1 dim contracts with any size (the other side is summed over that dim).
    for a, b in zip(xa, ya):
        if x.shape[a] == 1 and y.shape[b] != 1:
            y = y.sum(axis=b, keepdims=True)
        elif y.shape[b] == 1 and x.shape[a] != 1:
            x = x.sum(axis=a, keepdims=True)
        elif x.shape[a] != y.shape[b]:
            raise op_error("tensordot", f"x.shape[{a}]={x.shape[a]} and y.shape[{b}]={y.shape[b]} differ "
                                        f"(axes={axes}); contracted dims must match or be 1")
    return jnp.tensordot(x, y, axes=(tuple(xa), tuple(ya)))


def _tensordot_axes(axes):
    """Paddle's axes lists: a flat list names the same axes of x and y; of a list of lists the first two
    count, and the shorter one is extended by the longer one's tail."""
    axes = list(axes)
    if not axes or not isinstance(axes[0], (list, tuple, np.ndarray)) and not hasattr(axes[0], "tolist"):
        xa, ya = axes, []
    else:
        xa, ya = axes[0], axes[1] if len(axes) > 1 else []
    xa = np.asarray(xa).tolist() if hasattr(xa, "tolist") else list(xa) if isinstance(xa, (list, tuple)) else [xa]
    ya = np.asarray(ya).tolist() if hasattr(ya, "tolist") else list(ya) if isinstance(ya, (list, tuple)) else [ya]
    if len(xa) < len(ya):
        xa = xa + ya[len(xa):]
    elif len(ya) < len(xa):
        ya = ya + xa[len(ya):]
    return xa, ya


def inner(x, y, name=None):
    """Inner product over the last dim: `out[..., ...] = sum(x[..., k] * y[..., k])`.

    Args:
      x: a tensor.
      y: a tensor with the same last dim.
      name: ignored.

    Returns:
      A tensor of shape `x.shape[:-1] + y.shape[:-1]`.

    Example:
      >>> import pdx
      >>> pdx.inner(pdx.ones([2, 3]), pdx.ones([4, 3])).shape
      (2, 4)
    """
    x, y = _pair(x, y, "inner")
    if x.ndim and y.ndim and x.shape[-1] != y.shape[-1]:
        raise op_error("inner", f"last dims differ: x.shape={tuple(x.shape)}, y.shape={tuple(y.shape)}")
    return jnp.inner(x, y)


def vecdot(x, y, axis=-1, name=None):
    """Dot product of vectors along `axis` (conjugating `x`), with broadcasting.

    Args:
      x: a tensor.
      y: a tensor broadcastable with `x`.
      axis: the vector axis.
      name: ignored.

    Returns:
      The broadcast tensor without `axis`.

    Example:
      >>> import pdx
      >>> pdx.vecdot(pdx.to_tensor([[1.0, 2.0]]), pdx.to_tensor([3.0, 4.0])).tolist()
      [11.0]
    """
    x, y = _pair(x, y, "vecdot")
    shape = broadcast_shapes("vecdot", x=x, y=y)
    ax = normalize_axis(static_int(axis, op="vecdot", name="axis"), len(shape), op="vecdot")
    return jnp.sum(jnp.conj(x) * y, axis=ax)


def _mm_check(op, x, y, batched):
    rank = 3 if batched else 2
    check_rank(x, op=op, exactly=rank)
    check_rank(y, op=op, name="y", exactly=rank)
    if x.shape[-1] != y.shape[-2] or (batched and x.shape[0] != y.shape[0]):
        raise op_error(op, f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} do not multiply")


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002 (Paddle's name)
    """`beta * input + alpha * (x @ y)` for 2-D `x` and `y`.

    Args:
      input: a tensor broadcastable to `[M, N]`.
      x: a `[M, K]` tensor.
      y: a `[K, N]` tensor.
      beta: scale of `input`.
      alpha: scale of the product.
      name: ignored.

    Returns:
      A `[M, N]` tensor.

    Example:
      >>> import pdx
      >>> pdx.addmm(pdx.ones([2, 2]), pdx.ones([2, 3]), pdx.ones([3, 2]), beta=0.5).tolist()
      [[3.5, 3.5], [3.5, 3.5]]
    """
    inp = as_array(input, name="input", op="addmm")
    if inp.ndim not in (1, 2):
        raise op_error("addmm", f"`input` must be 1-D or 2-D (broadcast to the [M, N] product); "
                                f"got input.shape={tuple(inp.shape)}")
    x, y = _pair(x, y, "addmm")
    _mm_check("addmm", x, y, batched=False)
    broadcast_shapes("addmm", input=inp, product=jnp.zeros((x.shape[0], y.shape[1]), bool))
    return beta * inp + alpha * jnp.matmul(x, y)


def baddbmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002 (Paddle's name)
    """`beta * input + alpha * bmm(x, y)` for 3-D `x` and `y`.

    Args:
      input: a tensor broadcastable to `[B, M, N]`.
      x: a `[B, M, K]` tensor.
      y: a `[B, K, N]` tensor.
      beta: scale of `input`.
      alpha: scale of the product.
      name: ignored.

    Returns:
      A `[B, M, N]` tensor.

    Example:
      >>> import pdx
      >>> pdx.baddbmm(pdx.zeros([2, 1, 1]), pdx.ones([2, 1, 3]), pdx.ones([2, 3, 1])).shape
      (2, 1, 1)
    """
    inp = as_array(input, name="input", op="baddbmm")
    x, y = _pair(x, y, "baddbmm")
    _mm_check("baddbmm", x, y, batched=True)
    broadcast_shapes("baddbmm", input=inp, product=jnp.zeros((x.shape[0], x.shape[1], y.shape[2]), bool))
    return beta * inp + alpha * jnp.matmul(x, y)


def mv(x, vec, name=None):
    """Matrix-vector product `x @ vec`.

    Args:
      x: a `[M, N]` tensor.
      vec: a `[N]` tensor.
      name: ignored.

    Returns:
      A `[M]` tensor.

    Example:
      >>> import pdx
      >>> pdx.mv(pdx.ones([2, 3]), pdx.ones([3])).tolist()
      [3.0, 3.0]
    """
    x, vec = _pair(x, vec, "mv", yname="vec")
    check_rank(x, op="mv", exactly=2)
    check_rank(vec, op="mv", name="vec", exactly=1)
    if x.shape[1] != vec.shape[0]:
        raise op_error("mv", f"x.shape={tuple(x.shape)} and vec.shape={tuple(vec.shape)} do not multiply")
    return jnp.matmul(x, vec)


def ger(x, y, name=None):
    """Outer product of two 1-D tensors.

    Args:
      x: a `[M]` tensor.
      y: a `[N]` tensor.
      name: ignored.

    Returns:
      A `[M, N]` tensor.

    Example:
      >>> import pdx
      >>> pdx.ger(pdx.to_tensor([1, 2]), pdx.to_tensor([3, 4])).tolist()
      [[3, 4], [6, 8]]
    """
    x, y = _pair(x, y, "ger")
    return jnp.outer(x, y)


def cross(x, y, axis=9, name=None):
    """Cross product of 3-vectors along `axis` (default 9: the first dim of size 3).

    Args:
      x: a tensor.
      y: a tensor of the same shape.
      axis: the vector axis, or 9 for the first dim of size 3.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.cross(pdx.to_tensor([1.0, 0.0, 0.0]), pdx.to_tensor([0.0, 1.0, 0.0])).tolist()
      [0.0, 0.0, 1.0]
    """
    x, y = _pair(x, y, "cross")
    if x.shape != y.shape:
        raise op_error("cross", f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} must be equal")
    if axis == 9:
        threes = [i for i, d in enumerate(x.shape) if d == 3]
        if not threes:
            raise op_error("cross", f"no dim of size 3 in x.shape={tuple(x.shape)}; pass `axis`")
        ax = threes[0]
    else:
        ax = normalize_axis(static_int(axis, op="cross", name="axis"), x.ndim, op="cross")
    if x.shape[ax] != 3:
        raise op_error("cross", f"x.shape[{ax}]={x.shape[ax]} must be 3")
    return jnp.cross(x, y, axis=ax)


def _plane(x, axis1, axis2, op):
    check_rank(x, op=op, at_least=2)
    a1 = normalize_axis(static_int(axis1, op=op, name="axis1"), x.ndim, op=op, name="axis1")
    a2 = normalize_axis(static_int(axis2, op=op, name="axis2"), x.ndim, op=op, name="axis2")
    if a1 == a2:
        raise op_error(op, f"axis1={axis1} and axis2={axis2} name the same axis")
    return a1, a2


def diagonal(x, offset=0, axis1=0, axis2=1, name=None):
    """The diagonal of the plane (`axis1`, `axis2`), moved to the last dim.

    Args:
      x: a tensor of rank >= 2.
      offset: > 0 above the main diagonal, < 0 below.
      axis1: first axis of the plane.
      axis2: second axis of the plane.
      name: ignored.

    Returns:
      A tensor of the other dims plus the diagonal.

    Example:
      >>> import pdx
      >>> pdx.diagonal(pdx.to_tensor([[1, 2], [3, 4]])).tolist()
      [1, 4]
    """
    x = as_array(x, op="diagonal")
    a1, a2 = _plane(x, axis1, axis2, "diagonal")
    return jnp.diagonal(x, offset=static_int(offset, op="diagonal", name="offset"), axis1=a1, axis2=a2)


def trace(x, offset=0, axis1=0, axis2=1, name=None):
    """Sum of the diagonal of the plane (`axis1`, `axis2`).

    Args:
      x: a tensor of rank >= 2.
      offset: diagonal offset.
      axis1: first axis of the plane.
      axis2: second axis of the plane.
      name: ignored.

    Returns:
      A tensor of the other dims.

    Example:
      >>> import pdx
      >>> pdx.trace(pdx.to_tensor([[1, 2], [3, 4]])).tolist()
      5
    """
    x = as_array(x, op="trace")
    a1, a2 = _plane(x, axis1, axis2, "trace")
    return jnp.trace(x, offset=static_int(offset, op="trace", name="offset"), axis1=a1, axis2=a2)


def diagflat(x, offset=0, name=None):
    """A 2-D tensor with the flattened `x` on diagonal `offset`.

    Args:
      x: a tensor (flattened first).
      offset: diagonal offset.
      name: ignored.

    Returns:
      A square 2-D tensor.

    Example:
      >>> import pdx
      >>> pdx.diagflat(pdx.to_tensor([1, 2])).tolist()
      [[1, 0], [0, 2]]
    """
    x = as_array(x, op="diagflat")
    return jnp.diag(x.reshape(-1), k=static_int(offset, op="diagflat", name="offset"))


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002 (Paddle's name)
    """Put the last dim of `input` on the diagonal of a new plane (`dim1`, `dim2`).

    Args:
      input: a tensor `[..., N]`.
      offset: diagonal offset.
      dim1: first dim of the new plane in the output.
      dim2: second dim of the new plane in the output.

    Returns:
      A tensor of rank `input.ndim + 1`.

    Example:
      >>> import pdx
      >>> pdx.diag_embed(pdx.to_tensor([[1, 2]])).tolist()
      [[[1, 0], [0, 2]]]
    """
    x = as_array(input, name="input", op="diag_embed")
    check_rank(x, op="diag_embed", name="input", at_least=1)
    offset = static_int(offset, op="diag_embed", name="offset")
    nd = x.ndim + 1
    d1 = normalize_axis(static_int(dim1, op="diag_embed", name="dim1"), nd, op="diag_embed", name="dim1")
    d2 = normalize_axis(static_int(dim2, op="diag_embed", name="dim2"), nd, op="diag_embed", name="dim2")
    if d1 == d2:
        raise op_error("diag_embed", f"dim1={dim1} and dim2={dim2} name the same dim")
    n = x.shape[-1] + abs(offset)
    rows = np.arange(x.shape[-1]) + max(-offset, 0)
    cols = np.arange(x.shape[-1]) + max(offset, 0)
    out = jnp.zeros(x.shape[:-1] + (n, n), x.dtype).at[..., rows, cols].set(x)
    return jnp.moveaxis(out, (-2, -1), (d1, d2))


def _pnorm(d, p, axis):
    p = float(p)
    a = jnp.abs(d)
    if p == 0:
        return jnp.sum(a != 0, axis=axis).astype(d.dtype)
    if p == float("inf"):
        return jnp.max(a, axis=axis)
    if p == float("-inf"):
        return jnp.min(a, axis=axis)
    if p == 2:
        sq = jnp.sum(a * a, axis=axis)
        safe = jnp.where(sq == 0, 1, sq)
        return jnp.where(sq == 0, 0, jnp.sqrt(safe))
    if p == 1:
        return jnp.sum(a, axis=axis)
    return jnp.sum(a ** p, axis=axis) ** (1 / p)


def dist(x, y, p=2, name=None):
    """The p-norm of `x - y` (broadcast, flattened): p = 0 counts non-zeros, inf/-inf take max/min.

    Args:
      x: a tensor.
      y: a tensor broadcastable with `x`.
      p: the norm order.
      name: ignored.

    Returns:
      A 0-D floating tensor.

    Example:
      >>> import pdx
      >>> pdx.dist(pdx.to_tensor([3.0, 0.0]), pdx.to_tensor([0.0, 4.0])).tolist()
      5.0
    """
    x, y = _pair(x, y, "dist")
    broadcast_shapes("dist", x=x, y=y)
    return _pnorm((_to_float(x) - _to_float(y)).reshape(-1), p, None)


def cdist(x, y, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None):
    """Pairwise p-norm distances between the rows of `x` `[..., P, M]` and `y` `[..., R, M]`.

    Args:
      x: a tensor `[..., P, M]`.
      y: a tensor `[..., R, M]` (batch dims broadcast).
      p: the norm order (>= 0).
      compute_mode: accepted for Paddle; pdx always computes the differences directly.
      name: ignored.

    Returns:
      A tensor `[..., P, R]`.

    Example:
      >>> import pdx
      >>> pdx.cdist(pdx.to_tensor([[0.0, 0.0]]), pdx.to_tensor([[3.0, 4.0]])).tolist()
      [[5.0]]
    """
    x, y = _pair(x, y, "cdist")
    check_rank(x, op="cdist", at_least=2)
    check_rank(y, op="cdist", name="y", at_least=2)
    if x.shape[-1] != y.shape[-1]:
        raise op_error("cdist", f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} differ in the last dim")
    if p < 0:
        raise op_error("cdist", f"`p`={p} must be >= 0")
    d = _to_float(x)[..., :, None, :] - _to_float(y)[..., None, :, :]
    return _pnorm(d, p, -1)


def pdist(x, p=2.0, name=None):
    """Distances between every pair of rows `i < j` of a 2-D tensor, in row-major order.

    Args:
      x: a `[N, M]` tensor.
      p: the norm order.
      name: ignored.

    Returns:
      A `[N * (N - 1) / 2]` tensor.

    Example:
      >>> import pdx
      >>> pdx.pdist(pdx.to_tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
      [5.0, 1.0, 4.242640495300293]
    """
    x = _to_float(as_array(x, op="pdist"))
    check_rank(x, op="pdist", exactly=2)
    i, j = np.triu_indices(x.shape[0], k=1)
    return _pnorm(x[i] - x[j], p, -1)


def renorm(x, p, axis, max_norm):
    """Rescale each slice along `axis` whose p-norm exceeds `max_norm` down to `max_norm`.

    Args:
      x: a tensor.
      p: the norm order (> 0).
      axis: slices are taken along this axis (the norm covers the other dims).
      max_norm: the largest norm kept.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.renorm(pdx.to_tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0).tolist()
      [[0.6000000238418579, 0.800000011920929], [0.30000001192092896, 0.4000000059604645]]
    """
    x = _to_float(as_array(x, op="renorm"))
    ax = normalize_axis(static_int(axis, op="renorm", name="axis"), x.ndim, op="renorm")
    others = tuple(i for i in range(x.ndim) if i != ax)
    norms = jnp.sum(jnp.abs(x) ** p, axis=others, keepdims=True) ** (1.0 / p)
    scale = jnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    return x * scale


def vander(x, n=None, increasing=False, name=None):
    """Vandermonde matrix of a 1-D tensor: columns are powers of `x`.

    Args:
      x: a 1-D tensor.
      n: number of columns (default len(x)).
      increasing: powers increase left to right (default: decrease).
      name: ignored.

    Returns:
      A `[len(x), n]` tensor.

    Example:
      >>> import pdx
      >>> pdx.vander(pdx.to_tensor([2, 3]), 3, increasing=True).tolist()
      [[1, 2, 4], [1, 3, 9]]
    """
    x = as_array(x, op="vander")
    check_rank(x, op="vander", exactly=1)
    n = x.shape[0] if n is None else static_int(n, op="vander", name="n")
    if n < 0:
        raise op_error("vander", f"`n`={n} must be >= 0")
    return jnp.vander(x, n, increasing=increasing)


def cartesian_prod(x, name=None):
    """Cartesian product of 1-D tensors, one row per combination.

    Args:
      x: a list of 1-D tensors.
      name: ignored.

    Returns:
      A `[prod(len), len(x)]` tensor (the tensor itself for a single input).

    Example:
      >>> import pdx
      >>> pdx.cartesian_prod([pdx.to_tensor([1, 2]), pdx.to_tensor([3, 4])]).tolist()
      [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    arrays = _tensor_list(x, "cartesian_prod")
    for i, a in enumerate(arrays):
        check_rank(a, op="cartesian_prod", name=f"x[{i}]", exactly=1)
    if len(arrays) == 1:
        return arrays[0]
    dt = jnp.result_type(*arrays)
    grids = jnp.meshgrid(*[a.astype(dt) for a in arrays], indexing="ij")
    return jnp.stack([g.reshape(-1) for g in grids], axis=1)


def combinations(x, r=2, with_replacement=False, name=None):
    """All length-`r` combinations of the elements of a 1-D tensor, in lexicographic order.

    Args:
      x: a 1-D tensor.
      r: combination length.
      with_replacement: allow repeated elements.
      name: ignored.

    Returns:
      A `[count, r]` tensor (`[0]` for r = 0).

    Example:
      >>> import pdx
      >>> pdx.combinations(pdx.to_tensor([1, 2, 3])).tolist()
      [[1, 2], [1, 3], [2, 3]]
    """
    x = as_array(x, op="combinations")
    check_rank(x, op="combinations", exactly=1)
    r = static_int(r, op="combinations", name="r")
    if r < 0:
        raise op_error("combinations", f"`r`={r} must be >= 0")
    if r == 0:
        return jnp.zeros((0,), x.dtype)
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(make(range(x.shape[0]), r)), np.int32).reshape(-1, r)
    return x[idx]


def block_diag(inputs, name=None):
    """Block-diagonal matrix from 0-D, 1-D (a row) or 2-D tensors.

    Args:
      inputs: a list of tensors.
      name: ignored.

    Returns:
      A 2-D tensor.

    Example:
      >>> import pdx
      >>> pdx.block_diag([pdx.to_tensor([[1]]), pdx.to_tensor([[2, 3]])]).tolist()
      [[1, 0, 0], [0, 2, 3]]
    """
    arrays = _tensor_list(inputs, "block_diag", "inputs")
    arrays = [a.reshape(1, -1) if a.ndim < 2 else a for a in arrays]
    if any(a.ndim != 2 for a in arrays):
        raise op_error("block_diag", f"inputs must be 0-D, 1-D or 2-D; got shapes {[tuple(a.shape) for a in arrays]}")
    dt = jnp.result_type(*arrays)
    rows, cols = sum(a.shape[0] for a in arrays), sum(a.shape[1] for a in arrays)
    out = jnp.zeros((rows, cols), dt)
    r = c = 0
    for a in arrays:
        out = out.at[r:r + a.shape[0], c:c + a.shape[1]].set(a.astype(dt))
        r, c = r + a.shape[0], c + a.shape[1]
    return out


def _tri_indices(op, fn, row, col, offset, dtype):
    row = static_int(row, op=op, name="row")
    col = row if col is None else static_int(col, op=op, name="col")
    if row < 0 or col < 0:
        raise op_error(op, f"`row`={row} and `col`={col} must be >= 0")
    i, j = fn(row, static_int(offset, op=op, name="offset"), col)
    return jnp.asarray(np.stack([i, j]), int_dtype_arg(dtype, op=op))


def tril_indices(row, col, offset=0, dtype="int64"):
    """Row and column indices of the lower triangle (diagonal `offset` and below) of a `[row, col]` matrix.

    Args:
      row: number of rows.
      col: number of columns.
      offset: diagonal offset.
      dtype: 'int32' or 'int64' (int32 without x64).

    Returns:
      A `[2, count]` integer tensor.

    Example:
      >>> import pdx
      >>> pdx.tril_indices(2, 2).tolist()
      [[0, 1, 1], [0, 0, 1]]
    """
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype)


def triu_indices(row, col=None, offset=0, dtype="int64"):
    """Row and column indices of the upper triangle (diagonal `offset` and above) of a `[row, col]` matrix.

    Args:
      row: number of rows.
      col: number of columns (default `row`).
      offset: diagonal offset.
      dtype: 'int32' or 'int64' (int32 without x64).

    Returns:
      A `[2, count]` integer tensor.

    Example:
      >>> import pdx
      >>> pdx.triu_indices(2, 2).tolist()
      [[0, 0, 1], [0, 1, 1]]
    """
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype)
