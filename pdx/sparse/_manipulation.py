"""Sparse sum / transpose / reshape / slice with Paddle's result patterns.

COO results keep the input's entry order where Paddle does (transpose,
reshape, slice); CSR results are rebuilt sorted. `sum` over axes stores one
entry per distinct remaining index (coalesced); over all axes it stores a
single entry (COO shape `[1]`, CSR shape `[1, 1]`, as in Paddle).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype
from pdx._args import op_error
from pdx.sparse._core import (BCOO, BCSR, as_coo, coalesced, compact, concrete, fmt, host_valid, linear_keys,
                              require_sparse, valid_mask, with_format)

__all__ = ["reshape", "slice", "sum", "transpose"]


def _axes(axis, ndim: int, op: str, name: str = "axis") -> list[int]:
    items = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = []
    for a in items:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise op_error(f"sparse.{op}", f"`{name}`={axis!r} is out of range for a {ndim}-D tensor")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise op_error(f"sparse.{op}", f"`{name}`={axis!r} repeats an axis")
    return out


def _sum_coo(c: BCOO, axes: list[int], keepdim: bool) -> BCOO:
    ns = c.n_sparse
    data = c.data
    dense_axes = [a for a in axes if a >= ns]
    if dense_axes:
        data = data.sum(axis=tuple(1 + a - ns for a in dense_axes), keepdims=keepdim)
    sparse_axes = [a for a in axes if a < ns]
    keep = [d for d in range(ns) if d not in sparse_axes]
    dense_shape = tuple(data.shape[1:])
    host = concrete(c.indices)
    xp = np if host else jnp
    idx = np.asarray(c.indices) if host else c.indices
    valid = host_valid(idx, c.shape[:ns]) if host else valid_mask(c)
    if keepdim:
        shape = tuple(1 if d in sparse_axes else c.shape[d] for d in range(ns))
        if sparse_axes:
            idx = idx * xp.asarray([0 if d in sparse_axes else 1 for d in range(ns)], idx.dtype)
        idx = xp.where(valid[:, None], idx, xp.asarray(shape, idx.dtype))
    elif keep:
        idx = idx[:, keep]
        shape = tuple(c.shape[d] for d in keep)
    else:  # every sparse dim reduced: one entry at index 0, as Paddle's shape [1]
        idx = xp.where(valid[:, None], xp.zeros((c.nse, 1), idx.dtype), 1)
        shape = (1,)
    idx = jnp.asarray(idx)
    return coalesced(BCOO((data, idx), shape=shape + dense_shape))


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001  (Paddle's name)
    """Sum of a sparse tensor's values over `axis` (all axes when None), as a sparse tensor.

    Args:
      axis: None, an int or a list of ints. CSR tensors support None and -1
        (as in Paddle).
      dtype: dtype of the result's values.
      keepdim: keep reduced axes with size 1.

    Returns:
      A sparse tensor in x's format: over all axes a single entry (COO shape
      `[1]`, CSR `[1, 1]`); otherwise one entry per distinct remaining index.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 3.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.sum(x, axis=1)).tolist()
        [1.0, 5.0]
    """
    op = "sum"
    target = fmt(require_sparse(x, op))
    c = coalesced(as_coo(x, op))
    dt = convert_dtype(dtype)
    if dt is not None:
        c = BCOO((c.data.astype(dt), c.indices), shape=c.shape)
    if axis is None:
        total = jnp.where(valid_mask(c).reshape((-1,) + (1,) * (c.data.ndim - 1)), c.data,
                          jnp.zeros((), c.data.dtype)).sum()
        if target == "csr":
            return BCSR((total[None], jnp.zeros((1,), jnp.int32), jnp.array([0, 1], jnp.int32)), shape=(1, 1))
        nd = x.ndim if keepdim else 1
        return BCOO((total[None], jnp.zeros((1, nd), jnp.int32)), shape=(1,) * nd)
    axes = _axes(axis, x.ndim, op)
    if target == "csr":
        if axes != [x.ndim - 1]:
            raise op_error(f"sparse.{op}", f"a CSR tensor sums over axis=None or -1 only (as in Paddle); got axis={axis!r}")
        out = _sum_coo(c, axes, True)  # [.., M, 1]
        if x.ndim == 3 and not keepdim:
            out = BCOO((out.data, out.indices[:, :2]), shape=out.shape[:2])
        return with_format(out, "csr", op)
    return _sum_coo(c, axes, keepdim)


def transpose(x, perm, name=None):
    """Permute the dims of a sparse tensor.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.transpose(x, [1, 0])).tolist()
        [[0.0, 2.0], [1.0, 0.0]]
    """
    op = "transpose"
    target = fmt(require_sparse(x, op))
    perm = _axes(perm, x.ndim, op, "perm")
    if len(perm) != x.ndim:
        raise op_error(f"sparse.{op}", f"`perm` must list all {x.ndim} axes; got {perm}")
    c = as_coo(x, op)
    ns = c.n_sparse
    if any(perm[d] != d for d in range(ns, x.ndim)):
        raise op_error(f"sparse.{op}", f"`perm`={perm} must keep the dense dims {list(range(ns, x.ndim))} in place")
    idx = jnp.asarray(np.asarray(c.indices)[:, perm[:ns]]) if concrete(c.indices) else c.indices[:, perm[:ns]]
    out = BCOO((c.data, idx), shape=tuple(x.shape[p] for p in perm))
    return with_format(out, target, op)


def reshape(x, shape, name=None):
    """Reshape a sparse tensor (-1 infers a dim, 0 copies the input's dim, as in Paddle).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.reshape(x, [4])).tolist()
        [0.0, 1.0, 2.0, 0.0]
    """
    op = "reshape"
    target = fmt(require_sparse(x, op))
    c = as_coo(x, op)
    if c.n_dense:
        raise op_error(f"sparse.{op}", "`x` must have no dense dims (values of shape [nnz])")
    dims = [int(s) for s in shape]
    dims = [x.shape[i] if s == 0 else s for i, s in enumerate(dims)]
    total = int(np.prod(x.shape))
    if dims.count(-1) > 1 or any(s < -1 for s in dims):
        raise op_error(f"sparse.{op}", f"`shape`={list(shape)} may hold at most one -1 and no other negative value")
    if -1 in dims:
        rest = int(np.prod([s for s in dims if s != -1]))
        dims[dims.index(-1)] = total // rest if rest else 0
    if int(np.prod(dims)) != total:
        raise op_error(f"sparse.{op}", f"cannot reshape {list(x.shape)} ({total} elements) to {list(shape)}")
    key = linear_keys(c)
    if isinstance(key, np.ndarray):
        new = np.stack(np.unravel_index(np.minimum(key, total - 1), tuple(dims)), axis=1)
        new = np.where((key < total)[:, None], new, np.asarray(dims))
        return with_format(BCOO((c.data, jnp.asarray(new, c.indices.dtype)), shape=tuple(dims)), target, op)
    new = jnp.stack(jnp.unravel_index(jnp.minimum(key, total - 1), tuple(dims)), axis=1).astype(c.indices.dtype)
    new = jnp.where((key < total)[:, None], new, jnp.asarray(dims, c.indices.dtype))
    return with_format(BCOO((c.data, new), shape=tuple(dims)), target, op)


def slice(x, axes, starts, ends, name=None):  # noqa: A001  (Paddle's name)
    """Slice a sparse tensor along `axes` from `starts` to `ends` (negative counts from the end; clamped).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1., 3.], [2., 0., 4.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.slice(x, [1], [1], [3])).tolist()
        [[1.0, 3.0], [0.0, 4.0]]
    """
    op = "slice"
    target = fmt(require_sparse(x, op))
    axes = _axes(axes, x.ndim, op, "axes")
    starts, ends = [int(s) for s in starts], [int(e) for e in ends]
    if not len(axes) == len(starts) == len(ends):
        raise op_error(f"sparse.{op}", f"`axes`, `starts` and `ends` must have the same length; got {axes}, {starts}, {ends}")
    c = as_coo(x, op)
    ns = c.n_sparse
    lo, hi = list(np.zeros(x.ndim, int)), list(x.shape)
    for a, s, e in zip(axes, starts, ends):
        n = x.shape[a]
        s, e = s + n if s < 0 else s, e + n if e < 0 else e
        lo[a], hi[a] = min(max(s, 0), n), max(min(max(e, 0), n), min(max(s, 0), n))
    new_shape = tuple(h - lo_ for lo_, h in zip(lo, hi))
    host = concrete(c.indices)
    xp = np if host else jnp
    idx = np.asarray(c.indices) if host else c.indices
    keep = host_valid(idx, c.shape[:ns]) if host else valid_mask(c)
    for d in range(ns):
        keep = keep & (idx[:, d] >= lo[d]) & (idx[:, d] < hi[d])
    new_idx = idx - xp.asarray(lo[:ns], idx.dtype)
    new_idx = xp.where(keep[:, None], new_idx, xp.asarray(new_shape[:ns], idx.dtype))
    new_idx = jnp.asarray(new_idx)
    data = c.data
    if ns < x.ndim:
        data = data[(np.s_[:],) + tuple(np.s_[lo[d]:hi[d]] for d in range(ns, x.ndim))]
    out = compact(BCOO((data, new_idx), shape=new_shape)) if concrete(keep) else BCOO((data, new_idx), shape=new_shape)
    return with_format(out, target, op)
