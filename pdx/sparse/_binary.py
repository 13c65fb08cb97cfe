"""Sparse binary ops and products: add / subtract / multiply / divide, matmul, masked_matmul, mv, addmm, mask_as.

Results follow Paddle's patterns: add, subtract and multiply of two sparse
tensors store the union of both patterns (coalesced); divide stores every
position (0 / 0 is nan, as in Paddle); sparse @ dense is dense; sparse @
sparse stores the structural product pattern; masked_matmul and mask_as keep
the mask's pattern. The format (COO / CSR) of the sparse input is kept.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from pdx._args import as_array, op_error
from pdx.sparse._core import (BCOO, BCSR, _gather_masked, as_coo, coalesced, concrete, csr_coords, fmt, linear_keys,
                              require_sparse, with_format)
from pdx.sparse._unary import map_values

__all__ = ["add", "addmm", "divide", "is_same_shape", "mask_as", "masked_matmul", "matmul", "multiply", "mv",
           "subtract"]


def _pair(x, y, op: str):
    require_sparse(x, op, "x")
    if fmt(y) is None:
        raise TypeError(f"pdx.sparse.{op}: `y` must be a sparse tensor in the same format as x ({fmt(x).upper()}), "
                        f"as in Paddle; got {type(y).__name__}. Convert with to_sparse_coo / to_sparse_csr, or "
                        "compute densely with to_dense")
    if fmt(x) != fmt(y):
        raise op_error(f"sparse.{op}", f"`x` and `y` must have the same format; got {fmt(x).upper()} and {fmt(y).upper()}")
    if tuple(x.shape) != tuple(y.shape):
        raise op_error(f"sparse.{op}", f"`x` and `y` must have the same shape; got {list(x.shape)} and {list(y.shape)}")
    return as_coo(x, op, "x"), as_coo(y, op, "y")


def _concat(a: BCOO, b: BCOO, b_data) -> BCOO:
    dtype = jnp.result_type(a.data, b.data)
    data = jnp.concatenate([a.data.astype(dtype), b_data.astype(dtype)])
    if concrete(a.indices, b.indices):
        idx = jnp.asarray(np.concatenate([np.asarray(a.indices), np.asarray(b.indices)]))
    else:
        idx = jnp.concatenate([a.indices, b.indices])
    return BCOO((data, idx), shape=a.shape)


def _lookup(c: BCOO, keys):
    """Values of coalesced `c` at linear keys (0 where not stored)."""
    ck = linear_keys(c)
    if c.nse == 0:
        return jnp.zeros(keys.shape + c.data.shape[1:], c.data.dtype)
    if isinstance(ck, np.ndarray) and isinstance(keys, np.ndarray):
        pos = np.clip(np.searchsorted(ck, keys), 0, c.nse - 1)
        return _gather_masked(c.data, jnp.asarray(pos, jnp.int32), jnp.asarray(ck[pos] == keys))
    pos = jnp.clip(jnp.searchsorted(ck, keys), 0, c.nse - 1)
    hit = (ck[pos] == keys).reshape(keys.shape + (1,) * (c.data.ndim - 1))
    return jnp.where(hit, c.data[pos], jnp.zeros((), c.data.dtype))


def add(x, y, name=None):
    """Sparse `x + y` (both COO or both CSR, same shape); stores the union of both patterns.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.add(x, x)).tolist()
        [[0.0, 2.0], [4.0, 0.0]]
    """
    target = fmt(x)
    a, b = _pair(x, y, "add")
    return with_format(coalesced(_concat(a, b, b.data)), target, "add")


def subtract(x, y, name=None):
    """Sparse `x - y` (both COO or both CSR, same shape); stores the union of both patterns.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.subtract(x, x)).tolist()
        [[0.0, 0.0], [0.0, 0.0]]
    """
    target = fmt(x)
    a, b = _pair(x, y, "subtract")
    return with_format(coalesced(_concat(a, b, -b.data)), target, "subtract")


def multiply(x, y, name=None):
    """Sparse `x * y` (both sparse, same format and shape), or `x * scalar`.

    Two sparse tensors give the union of their patterns (entries present in
    only one are stored as 0, as in Paddle); a Python number scales the
    stored values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.multiply(x, 3.0)).tolist()
        [[0.0, 3.0], [6.0, 0.0]]
    """
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return map_values(x, lambda v: v * jnp.asarray(y, v.dtype), "multiply")
    target = fmt(x)
    a, b = _pair(x, y, "multiply")
    ca, cb = coalesced(a), coalesced(b)
    union = coalesced(_concat(ca, cb, cb.data))
    keys = linear_keys(union)
    vals = _lookup(ca, keys) * _lookup(cb, keys)
    return with_format(BCOO((vals, union.indices), shape=union.shape), target, "multiply")


def _all_positions(dense, n_sparse: int) -> BCOO:
    sparse_shape = dense.shape[:n_sparse]
    grid = np.indices(sparse_shape).reshape(n_sparse, -1).T.astype(np.int32)
    vals = dense.reshape((-1,) + dense.shape[n_sparse:])
    return BCOO((vals, jnp.asarray(grid)), shape=dense.shape)


def divide(x, y, name=None):
    """Sparse `x / y` (both sparse, same format and shape), or `x / scalar`.

    Two sparse tensors give a result that stores every position (Paddle's
    behaviour: 0 / 0 is nan, v / 0 is inf); a Python number divides the
    stored values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.divide(x, 2.0)).tolist()
        [[0.0, 0.5], [1.0, 0.0]]
    """
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return map_values(x, lambda v: v / jnp.asarray(y, v.dtype), "divide")
    target = fmt(x)
    a, b = _pair(x, y, "divide")
    return with_format(_all_positions(a.todense() / b.todense(), a.n_sparse), target, "divide")


def is_same_shape(x, y) -> bool:
    """Whether two tensors (sparse or dense) have the same shape.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.is_same_shape(pdx.sparse.to_sparse_coo(jnp.eye(2), 2), jnp.ones((2, 2)))
        True
    """
    return tuple(x.shape) == tuple(y.shape)


def _spmm(coo: BCOO, y, op: str):
    """Sparse (2-D or 3-D, no dense dims) @ dense."""
    if coo.n_dense:
        raise op_error(f"sparse.{op}", "`x` must have no dense dims (values of shape [nnz])")
    if coo.ndim != y.ndim or coo.ndim not in (2, 3) or coo.shape[-1] != y.shape[-2] or coo.shape[:-2] != y.shape[:-2]:
        raise op_error(f"sparse.{op}", f"x.shape={list(coo.shape)} and y.shape={list(y.shape)} must be [*, M, K] and "
                                       "[*, K, N] with the same batch dims (no broadcasting, as in Paddle)")
    return _spmm_kernel(coo.data, coo.indices, y, coo.shape[:-1])


@partial(jax.jit, static_argnums=3)
def _spmm_kernel(data, idx, y, rows_shape):
    dtype = jnp.result_type(data, y)
    out = jnp.zeros(tuple(rows_shape) + y.shape[-1:], dtype)
    if len(rows_shape) == 1:
        contrib = data[:, None].astype(dtype) * y[idx[:, 1]].astype(dtype)
        return out.at[idx[:, 0]].add(contrib, mode="drop")
    contrib = data[:, None].astype(dtype) * y[idx[:, 0], idx[:, 2]].astype(dtype)
    return out.at[idx[:, 0], idx[:, 1]].add(contrib, mode="drop")


def _pattern_from_dense(dense, mask, op: str) -> BCOO:
    if concrete(mask):
        pos = np.nonzero(np.asarray(mask))
        idx = np.stack(pos, axis=1)
        return BCOO((dense[tuple(jnp.asarray(p, jnp.int32) for p in pos)], jnp.asarray(idx, jnp.int32)), shape=dense.shape)
    else:
        nse = int(np.prod(mask.shape))
    pos = jnp.nonzero(mask, size=nse, fill_value=tuple(mask.shape))
    idx = jnp.stack(pos, axis=1).astype(jnp.int32)
    vals = dense[tuple(jnp.minimum(p, s - 1) for p, s in zip(pos, mask.shape))]
    return BCOO((vals, idx), shape=dense.shape)


def matmul(x, y, name=None):
    """Sparse matrix product: sparse @ dense -> dense, sparse @ sparse -> sparse (same format).

    `x` is `[M, K]` or `[B, M, K]` (COO or CSR); `y` is `[*, K, N]` with the
    same batch dim (no broadcasting). sparse @ sparse stores the structural
    product pattern. Gradients flow to x's values and to a dense y.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_csr(jnp.array([[0., 1.], [2., 0.]]))
        >>> pdx.sparse.matmul(x, jnp.ones((2, 3))).tolist()
        [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    """
    op = "matmul"
    if fmt(x) is None:
        raise TypeError(f"pdx.sparse.matmul: `x` must be a sparse tensor (COO or CSR); got {type(x).__name__}. "
                        "For dense @ dense use pdx.matmul")
    cx = as_coo(x, op, "x")
    if fmt(y) is None:
        return _spmm(cx, as_array(y, name="y", op=f"sparse.{op}"), op)
    if fmt(y) != fmt(x):
        raise op_error(f"sparse.{op}", f"`x` and `y` must have the same format; got {fmt(x).upper()} and {fmt(y).upper()}")
    cy = as_coo(y, op, "y")
    dense = _spmm(cx, cy.todense(), op)
    ones_x = BCOO((jnp.ones(cx.data.shape, jnp.float32), cx.indices), shape=cx.shape)
    struct = _spmm(ones_x, (BCOO((jnp.ones(cy.data.shape, jnp.float32), cy.indices), shape=cy.shape)).todense() > 0,
                   op) > 0
    return with_format(_pattern_from_dense(dense, struct, op), fmt(x), op)


def mv(x, vec, name=None):
    """Sparse matrix `[M, N]` times dense vector `[N]` -> dense `[M]`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)
        >>> pdx.sparse.mv(x, jnp.array([1., 10.])).tolist()
        [10.0, 2.0]
    """
    require_sparse(x, "mv")
    vec = as_array(vec, name="vec", op="sparse.mv")
    if x.ndim != 2 or vec.ndim != 1 or x.shape[1] != vec.shape[0]:
        raise op_error("sparse.mv", f"`x` must be [M, N] and `vec` [N]; got {list(x.shape)} and {list(vec.shape)}")
    return _spmm(as_coo(x, "mv"), vec[:, None], "mv")[:, 0]


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002  (Paddle's name)
    """`beta * input + alpha * (x @ y)` with sparse `x`.

    Dense input with dense y gives a dense result; sparse input, x and y
    (same format) give a sparse result.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.eye(2), 2)
        >>> pdx.sparse.addmm(jnp.ones((2, 2)), x, jnp.full((2, 2), 2.), beta=0.5, alpha=2.0).tolist()
        [[4.5, 4.5], [4.5, 4.5]]
    """
    product = matmul(x, y)
    if fmt(input) is None:
        if fmt(product) is not None:
            raise TypeError("pdx.sparse.addmm: a dense `input` needs a dense `y` (sparse @ dense); got a sparse y")
        return beta * as_array(input, name="input", op="sparse.addmm") + alpha * product
    if fmt(product) is None:
        raise TypeError("pdx.sparse.addmm: a sparse `input` needs sparse `x` and `y`; got a dense y")
    return add(multiply(input, float(beta)), multiply(product, float(alpha)))


def _coo_coords(m: BCOO) -> tuple:
    """Per-dim index arrays of a COO tensor's entries, padding clipped into range."""
    hi = np.asarray(m.shape[:m.n_sparse]) - 1
    if concrete(m.indices):
        idx = np.minimum(np.asarray(m.indices), hi)
        return tuple(jnp.asarray(idx[:, d]) for d in range(m.n_sparse))
    idx = jnp.minimum(m.indices, jnp.asarray(hi, m.indices.dtype))
    return tuple(idx[:, d] for d in range(m.n_sparse))


def masked_matmul(x, y, mask, name=None):
    """`(x @ y)` evaluated only at the stored positions of `mask` (sampled dense-dense product).

    Args:
      x: dense `[*, M, K]`; y: dense `[*, K, N]`; mask: sparse `[*, M, N]`.

    Returns:
      A sparse tensor with mask's pattern and format.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> mask = pdx.sparse.to_sparse_coo(jnp.eye(2), 2)
        >>> out = pdx.sparse.masked_matmul(jnp.ones((2, 3)), jnp.ones((3, 2)), mask)
        >>> pdx.sparse.to_dense(out).tolist()
        [[3.0, 0.0], [0.0, 3.0]]
    """
    op = "masked_matmul"
    require_sparse(mask, op, "mask")
    x = as_array(x, name="x", op=f"sparse.{op}")
    y = as_array(y, name="y", op=f"sparse.{op}")
    if x.ndim != mask.ndim or y.ndim != mask.ndim or x.shape[-1] != y.shape[-2] or \
            x.shape[:-1] + y.shape[-1:] != tuple(mask.shape):
        raise op_error(f"sparse.{op}", f"x.shape={list(x.shape)} @ y.shape={list(y.shape)} must give mask.shape="
                                       f"{list(mask.shape)}")
    if fmt(mask) == "coo":
        m = as_coo(mask, op, "mask")
        coords = _coo_coords(m)
    else:
        coords = csr_coords(mask)
    rows = x[coords[:-1]]  # (..., K)
    colsT = jnp.moveaxis(y, -1, -2)[coords[:-2] + coords[-1:]]  # (..., K)
    vals = (rows * colsT).sum(-1)
    if fmt(mask) == "coo":
        return BCOO((vals, m.indices), shape=m.shape)
    return BCSR((vals, mask.indices, mask.indptr), shape=mask.shape)


def mask_as(x, mask, name=None):
    """The entries of dense `x` at the stored positions of `mask` (mask's pattern and format).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> mask = pdx.sparse.to_sparse_coo(jnp.eye(2), 2)
        >>> pdx.sparse.values(pdx.sparse.mask_as(jnp.array([[1., 2.], [3., 4.]]), mask)).tolist()
        [1.0, 4.0]
    """
    op = "mask_as"
    require_sparse(mask, op, "mask")
    x = as_array(x, name="x", op=f"sparse.{op}")
    if tuple(x.shape) != tuple(mask.shape):
        raise op_error(f"sparse.{op}", f"`x` and `mask` must have the same shape; got {list(x.shape)} and {list(mask.shape)}")
    if fmt(mask) == "coo":
        m = as_coo(mask, op, "mask")
        coords = _coo_coords(m)
        return BCOO((x[coords], m.indices), shape=m.shape)
    return BCSR((x[csr_coords(mask)], mask.indices, mask.indptr), shape=mask.shape)

