"""Sparse tensors: creation, format conversion, accessors and the shared helpers.

A Paddle SparseCooTensor is a `jax.experimental.sparse.BCOO` (all sparse
dims unbatched, optional trailing dense dims); a SparseCsrTensor is a
`BCSR`, 2-D, or 3-D with one batch dim. Paddle's argument layout is kept at
the boundary: COO indices are `[sparse_dim, nnz]` (BCOO stores the
transpose), batched CSR `crows` is `[B * (M + 1)]` with `cols`/`values`
concatenated over the batch.

Number of stored entries: eagerly pdx computes it exactly, as Paddle does.
Under a trace it cannot depend on the data, so ops that change the pattern
keep an upper bound and pad (BCOO marks padding with out-of-range indices;
BCSR ignores entries past `crows[-1]`); `to_dense` and every op ignore the
padding.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import sparse as jsparse

from pdx._dtype import convert_dtype
from pdx._args import as_array, op_error

__all__ = [
    "cols", "crows", "indices", "is_sparse", "is_sparse_coo", "is_sparse_csr", "nnz", "sparse_coo_tensor",
    "sparse_csr_tensor", "to_dense", "to_sparse_coo", "to_sparse_csr", "values", "coalesce",
]

BCOO = jsparse.BCOO
BCSR = jsparse.BCSR


# ---------------------------------------------------------------- helpers


def concrete(*arrays) -> bool:
    """True when no array is traced (exact sizes can be read from the data)."""
    return not any(isinstance(a, jax.core.Tracer) for a in arrays)


def fmt(x) -> str | None:
    """"coo", "csr" or None (dense)."""
    if isinstance(x, BCOO):
        return "coo"
    if isinstance(x, BCSR):
        return "csr"
    return None


def require_sparse(x, op: str, name: str = "x"):
    if fmt(x) is None:
        raise TypeError(f"pdx.sparse.{op}: `{name}` must be a sparse tensor (pdx.sparse.sparse_coo_tensor / "
                        f"sparse_csr_tensor, or x.to_sparse_coo(...)); got {type(x).__name__}"
                        f"{' of shape ' + str(tuple(x.shape)) if hasattr(x, 'shape') else ''}")
    return x


def as_coo(x, op: str, name: str = "x") -> BCOO:
    """Any sparse tensor as a BCOO with n_batch=0 (padding kept)."""
    require_sparse(x, op, name)
    if isinstance(x, BCSR):
        return csr_to_coo(x)
    if x.n_batch:
        x = jsparse.bcoo_update_layout(x, n_batch=0)
    return x


def valid_mask(coo: BCOO) -> jax.Array:
    """Which stored entries are real (not padding)."""
    sparse_shape = jnp.asarray(coo.shape[:coo.n_sparse], coo.indices.dtype)
    return jnp.all(coo.indices < sparse_shape, axis=1)


def index_dtype():
    return jnp.int32


# Index bookkeeping runs on the host with numpy whenever the indices are
# concrete (eager, and under jax.grad of the values): no XLA compilation per
# new pattern. Values always go through jnp (one jitted gather / segment-sum),
# so gradients with respect to them flow. Traced indices take the jnp path.


@partial(jax.jit, static_argnames=("n",))
def _gather_segment_sum(data, pos, seg, n: int):
    return jax.ops.segment_sum(data[pos], seg, n)


@jax.jit
def _gather_masked(data, pos, ok):
    vals = data[pos]
    return jnp.where(ok.reshape(ok.shape + (1,) * (vals.ndim - ok.ndim)), vals, jnp.zeros((), data.dtype))


def host_valid(idx: np.ndarray, sparse_shape) -> np.ndarray:
    return np.all(idx < np.asarray(sparse_shape, np.int64), axis=1) if idx.shape[1] else np.ones(idx.shape[0], bool)


def host_keys(idx: np.ndarray, sparse_shape) -> np.ndarray:
    """int64 row-major linear keys of (valid) index rows."""
    return np.ravel_multi_index(tuple(idx.T.astype(np.int64)), tuple(sparse_shape)) if idx.shape[1] \
        else np.zeros(idx.shape[0], np.int64)


def compact(coo: BCOO) -> BCOO:
    """Drop padding entries when the indices are concrete; keep them under a trace."""
    if not concrete(coo.indices) or coo.nse == 0:
        return coo
    keep = host_valid(np.asarray(coo.indices), coo.shape[:coo.n_sparse])
    if keep.all():
        return coo
    pos = np.nonzero(keep)[0]
    return BCOO((coo.data[pos], jnp.asarray(np.asarray(coo.indices)[pos])), shape=coo.shape)


def coalesced(coo: BCOO) -> BCOO:
    """Sorted, duplicates summed; exact nnz for concrete indices, padded under a trace."""
    if not concrete(coo.indices):
        return jsparse.bcoo_sum_duplicates(coo, nse=coo.nse)
    sparse_shape = coo.shape[:coo.n_sparse]
    idx = np.asarray(coo.indices)
    pos = np.nonzero(host_valid(idx, sparse_shape))[0]
    keys = host_keys(idx[pos], sparse_shape)
    uniq, inv = np.unique(keys, return_inverse=True)
    if uniq.shape[0] == keys.shape[0] and pos.shape[0] == coo.nse and (np.diff(keys) > 0).all():
        # already sorted and unique: say so (Paddle's is_coalesced() is True after coalesce())
        return BCOO((coo.data, coo.indices), shape=coo.shape, indices_sorted=True, unique_indices=True)
    new_idx = np.stack(np.unravel_index(uniq, sparse_shape), axis=1) if coo.n_sparse \
        else np.zeros((uniq.shape[0], 0), np.int64)
    data = _gather_segment_sum(coo.data, jnp.asarray(pos, jnp.int32), jnp.asarray(inv.reshape(-1), jnp.int32),
                               n=int(uniq.shape[0]))
    return BCOO((data, jnp.asarray(new_idx, index_dtype())), shape=coo.shape, indices_sorted=True,
                unique_indices=True)


def with_format(coo: BCOO, target: str, op: str):
    """Return `coo` in the format of the op's input ("coo" or "csr")."""
    return coo if target == "coo" else coo_to_csr(coo, op)


# ---------------------------------------------------------------- conversions


def csr_to_coo(x: BCSR) -> BCOO:
    """BCSR (2-D, or 3-D with one batch dim) -> BCOO with n_batch=0 (row-major order)."""
    if concrete(x.indptr, x.indices):
        return _csr_to_coo_host(x)
    shape = x.shape
    if x.n_batch == 0:
        m, n = shape
        nse = x.indices.shape[0]
        j = jnp.arange(nse)
        valid = j < x.indptr[-1]
        row = jnp.searchsorted(x.indptr, j, side="right") - 1
        idx = jnp.stack([jnp.where(valid, row, m), jnp.where(valid, x.indices, n)], axis=1)
        return BCOO((x.data, idx.astype(index_dtype())), shape=shape)
    b, m, n = shape
    nse = x.indices.shape[1]
    j = jnp.arange(nse)
    valid = j[None, :] < x.indptr[:, -1:]
    row = jax.vmap(lambda p: jnp.searchsorted(p, j, side="right") - 1)(x.indptr)
    bidx = jnp.broadcast_to(jnp.arange(b)[:, None], (b, nse))
    idx = jnp.stack([jnp.where(valid, bidx, b), jnp.where(valid, row, m), jnp.where(valid, x.indices, n)], axis=-1)
    return BCOO((x.data.reshape((b * nse,) + x.data.shape[2:]), idx.reshape(b * nse, 3).astype(index_dtype())),
                shape=shape)


def _csr_to_coo_host(x: BCSR) -> BCOO:
    ptr = np.asarray(x.indptr).reshape(-1, x.shape[-2] + 1)
    cols_ = np.asarray(x.indices).reshape(ptr.shape[0], -1)
    nse = cols_.shape[1]
    pos, rows, bs = [], [], []
    for b in range(ptr.shape[0]):
        count = np.diff(ptr[b])
        rows.append(np.repeat(np.arange(ptr.shape[1] - 1), count))
        pos.append(b * nse + np.arange(ptr[b, -1]))
        bs.append(np.full(ptr[b, -1], b))
    pos, rows, bs = np.concatenate(pos), np.concatenate(rows), np.concatenate(bs)
    col = cols_.reshape(-1)[pos]
    idx = np.stack([rows, col], 1) if x.n_batch == 0 else np.stack([bs, rows, col], 1)
    data = x.data.reshape((-1,) + x.data.shape[x.n_batch + 1:])
    if pos.shape[0] != data.shape[0]:
        data = data[jnp.asarray(pos, jnp.int32)]
    return BCOO((data, jnp.asarray(idx, index_dtype())), shape=x.shape)


def coo_to_csr(coo: BCOO, op: str) -> BCSR:
    """BCOO (2-D or 3-D, no dense dims) -> BCSR; coalesces first (CSR is sorted)."""
    if coo.n_dense or coo.ndim not in (2, 3):
        raise op_error(f"sparse.{op}", f"a CSR tensor must be 2-D or 3-D with no dense dims; got shape "
                                       f"{tuple(coo.shape)} with {coo.n_dense} dense dims")
    coo = coalesced(as_coo(coo, op))
    if concrete(coo.indices):
        return _coo_to_csr_host(coo)
    idx, data = coo.indices, coo.data
    if coo.ndim == 2:
        m = coo.shape[0]
        indptr = jnp.searchsorted(idx[:, 0], jnp.arange(m + 1), side="left").astype(index_dtype())
        return BCSR((data, idx[:, 1], indptr), shape=coo.shape)
    b, m, _ = coo.shape
    key = idx[:, 0] * m + idx[:, 1]  # padding sorts last (index b)
    bounds = jnp.searchsorted(key, jnp.arange(b + 1) * m, side="left")
    start, count = bounds[:-1], bounds[1:] - bounds[:-1]
    width = coo.nse
    pos = start[:, None] + jnp.arange(width)[None, :]
    ok = jnp.arange(width)[None, :] < count[:, None]
    safe = jnp.clip(pos, 0, max(coo.nse - 1, 0))
    if coo.nse:
        vals = jnp.where(ok, data[safe], jnp.zeros((), data.dtype))
        cols_ = jnp.where(ok, idx[safe, 2], 0)
    else:
        vals = jnp.zeros((b, width), data.dtype)
        cols_ = jnp.zeros((b, width), index_dtype())
    rows = jnp.searchsorted(key, jnp.arange(b)[:, None] * m + jnp.arange(m + 1)[None, :], side="left")
    indptr = (rows - start[:, None]).astype(index_dtype())
    return BCSR((vals, cols_.astype(index_dtype()), indptr), shape=coo.shape)


def _coo_to_csr_host(coo: BCOO) -> BCSR:
    idx = np.asarray(coo.indices)  # coalesced: sorted, no padding
    if coo.ndim == 2:
        m = coo.shape[0]
        indptr = np.searchsorted(idx[:, 0], np.arange(m + 1), side="left")
        return BCSR((coo.data, jnp.asarray(idx[:, 1], index_dtype()), jnp.asarray(indptr, index_dtype())),
                    shape=coo.shape)
    b, m, _ = coo.shape
    key = idx[:, 0] * m + idx[:, 1]
    bounds = np.searchsorted(idx[:, 0], np.arange(b + 1), side="left")
    start, count = bounds[:-1], np.diff(bounds)
    width = int(count.max(initial=0))
    ar = np.arange(width)
    ok = ar[None, :] < count[:, None]
    pos = np.clip(start[:, None] + ar[None, :], 0, max(coo.nse - 1, 0))
    cols_ = np.where(ok, idx[pos, 2], 0) if coo.nse else np.zeros((b, width), np.int64)
    vals = _gather_masked(coo.data, jnp.asarray(pos, jnp.int32), jnp.asarray(ok)) if coo.nse \
        else jnp.zeros((b, width), coo.data.dtype)
    rows = np.searchsorted(key, np.arange(b)[:, None] * m + np.arange(m + 1)[None, :], side="left")
    indptr = rows - start[:, None]
    return BCSR((vals, jnp.asarray(cols_, index_dtype()), jnp.asarray(indptr, index_dtype())), shape=coo.shape)


# ---------------------------------------------------------------- creation


def _index_array(value, name: str, op: str):
    arr = as_array(value, name=name, op=f"sparse.{op}")
    if not jnp.issubdtype(arr.dtype, jnp.integer):
        raise TypeError(f"pdx.sparse.{op}: `{name}` must be an integer tensor; got dtype {arr.dtype}")
    return arr.astype(index_dtype())


def _values(values, dtype, op: str):
    v = as_array(values, name="values", op=f"sparse.{op}")
    dt = convert_dtype(dtype)
    if dt is not None:
        v = v.astype(dt)
    elif jnp.issubdtype(v.dtype, jnp.floating) and not isinstance(values, (jax.Array, np.ndarray)):
        v = v.astype(jnp.float32)
    return v


def sparse_coo_tensor(indices, values, shape=None, dtype=None, place=None, stop_gradient=True):
    """A COO sparse tensor from Paddle-layout `indices` `[sparse_dim, nnz]` and `values` `[nnz, ...]`.

    Args:
      indices: int tensor `[sparse_dim, nnz]`.
      values: `[nnz]`, or `[nnz, *dense_dims]` for a hybrid tensor.
      shape: the dense shape; default `max(indices, axis=1) + 1` followed by
        values' dense dims (eager only: it reads the data).
      dtype: the values' dtype.
      place, stop_gradient: accepted for Paddle compatibility.

    Returns:
      A `jax.experimental.sparse.BCOO` (duplicates kept until `coalesce`).

    Example:
        >>> import pdx
        >>> x = pdx.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1., 2., 3.], [3, 3])
        >>> pdx.sparse.to_dense(x).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [3.0, 0.0, 0.0]]
    """
    op = "sparse_coo_tensor"
    idx = _index_array(indices, "indices", op)
    v = _values(values, dtype, op)
    if idx.ndim != 2:
        raise op_error(f"sparse.{op}", f"`indices` must be 2-D [sparse_dim, nnz]; got shape {tuple(idx.shape)}")
    if v.ndim < 1 or v.shape[0] != idx.shape[1]:
        raise op_error(f"sparse.{op}", f"`values` must have one row per column of indices ({idx.shape[1]}); "
                                       f"got values.shape={tuple(v.shape)}")
    sparse_dim = idx.shape[0]
    if shape is None:
        if not concrete(idx):
            raise op_error(f"sparse.{op}", "`shape` is required under jit (the default reads max(indices) from the data)")
        top = np.asarray(idx).max(axis=1) + 1 if idx.shape[1] else np.zeros((sparse_dim,), int)
        shape = tuple(int(s) for s in top) + tuple(v.shape[1:])
    shape = tuple(int(s) for s in shape)
    if len(shape) != sparse_dim + v.ndim - 1:
        raise op_error(f"sparse.{op}", f"`shape`={list(shape)} must have sparse_dim ({sparse_dim}) + dense dims "
                                       f"({v.ndim - 1}) entries")
    if tuple(v.shape[1:]) != shape[sparse_dim:]:
        raise op_error(f"sparse.{op}", f"the dense dims of `values` {tuple(v.shape[1:])} must equal "
                                       f"shape[{sparse_dim}:]={shape[sparse_dim:]}")
    if concrete(idx) and idx.shape[1]:
        hi = np.asarray(idx).max(axis=1)
        lo = np.asarray(idx).min(axis=1)
        if (lo < 0).any() or (hi >= np.asarray(shape[:sparse_dim])).any():
            raise op_error(f"sparse.{op}", f"`indices` out of range for shape {list(shape)}: per-dim max {hi.tolist()}")
    return BCOO((v, idx.T), shape=shape)


def sparse_csr_tensor(crows, cols, values, shape, dtype=None, place=None, stop_gradient=True):
    """A CSR sparse tensor (2-D, or 3-D batched) in Paddle's layout.

    Args:
      crows: row pointers, `[M + 1]`, or `[B * (M + 1)]` for 3-D (each
        batch's pointers start at 0).
      cols: column index of each value, `[nnz]` (batches concatenated).
      values: `[nnz]`.
      shape: `[M, N]` or `[B, M, N]`.
      dtype: the values' dtype.

    Returns:
      A `jax.experimental.sparse.BCSR` (3-D: one batch dim, each batch
      padded to the largest nnz eagerly, to the total nnz under jit).

    Example:
        >>> import pdx
        >>> x = pdx.sparse.sparse_csr_tensor([0, 2, 3, 5], [1, 3, 2, 0, 1], [1., 2., 3., 4., 5.], [3, 4])
        >>> pdx.sparse.to_dense(x).tolist()
        [[0.0, 1.0, 0.0, 2.0], [0.0, 0.0, 3.0, 0.0], [4.0, 5.0, 0.0, 0.0]]
    """
    op = "sparse_csr_tensor"
    cr = _index_array(crows, "crows", op)
    co = _index_array(cols, "cols", op)
    v = _values(values, dtype, op)
    shape = tuple(int(s) for s in shape) if shape is not None else None
    if shape is None or len(shape) not in (2, 3):
        raise op_error(f"sparse.{op}", f"`shape` must be [M, N] or [B, M, N]; got {shape!r}")
    if cr.ndim != 1 or co.ndim != 1 or v.ndim != 1 or co.shape[0] != v.shape[0]:
        raise op_error(f"sparse.{op}", f"`crows`, `cols` and `values` must be 1-D with len(cols) == len(values); "
                                       f"got shapes {tuple(cr.shape)}, {tuple(co.shape)}, {tuple(v.shape)}")
    m = shape[-2]
    batches = 1 if len(shape) == 2 else shape[0]
    if cr.shape[0] != batches * (m + 1):
        raise op_error(f"sparse.{op}", f"`crows` must have {'' if batches == 1 else 'B * '}(M + 1) = "
                                       f"{batches * (m + 1)} entries for shape {list(shape)}; got {cr.shape[0]}")
    if len(shape) == 2:
        return BCSR((v, co, cr), shape=shape)
    ptr = cr.reshape(batches, m + 1)
    if concrete(cr, co):
        pn = np.asarray(ptr)
        count = pn[:, -1]
        start = np.concatenate([[0], np.cumsum(count)[:-1]])
        width = int(count.max(initial=0))
        ar = np.arange(width)
        ok = ar[None, :] < count[:, None]
        pos = np.clip(start[:, None] + ar[None, :], 0, max(co.shape[0] - 1, 0))
        cidx = np.where(ok, np.asarray(co)[pos], 0) if co.shape[0] else np.zeros((batches, width), np.int64)
        vals = _gather_masked(v, jnp.asarray(pos, jnp.int32), jnp.asarray(ok)) if co.shape[0] \
            else jnp.zeros((batches, width), v.dtype)
        return BCSR((vals, jnp.asarray(cidx, index_dtype()), ptr), shape=shape)
    count = ptr[:, -1]
    start = jnp.concatenate([jnp.zeros((1,), count.dtype), jnp.cumsum(count)[:-1]])
    nnz_total = co.shape[0]
    width = int(np.asarray(count).max(initial=0)) if concrete(cr) else nnz_total
    pos = start[:, None] + jnp.arange(width)[None, :]
    ok = jnp.arange(width)[None, :] < count[:, None]
    safe = jnp.clip(pos, 0, max(nnz_total - 1, 0))
    if nnz_total:
        vals = jnp.where(ok, v[safe], jnp.zeros((), v.dtype))
        cidx = jnp.where(ok, co[safe], 0)
    else:
        vals, cidx = jnp.zeros((batches, width), v.dtype), jnp.zeros((batches, width), index_dtype())
    return BCSR((vals, cidx, ptr), shape=shape)


# ---------------------------------------------------------------- predicates and accessors


def is_sparse(x) -> bool:
    """Whether `x` is a sparse tensor (COO or CSR); Paddle's `Tensor.is_sparse()`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.is_sparse(pdx.sparse.to_sparse_coo(jnp.eye(2), 2)), pdx.sparse.is_sparse(jnp.eye(2))
        (True, False)
    """
    return fmt(x) is not None


def is_sparse_coo(x) -> bool:
    """Whether `x` is a COO sparse tensor; Paddle's `Tensor.is_sparse_coo()`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.is_sparse_coo(pdx.sparse.to_sparse_coo(jnp.eye(2), 2))
        True
    """
    return fmt(x) == "coo"


def is_sparse_csr(x) -> bool:
    """Whether `x` is a CSR sparse tensor; Paddle's `Tensor.is_sparse_csr()`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.is_sparse_csr(pdx.sparse.to_sparse_csr(jnp.eye(2)))
        True
    """
    return fmt(x) == "csr"


def to_dense(x):
    """The dense array of a sparse tensor (duplicates summed); a dense `x` is returned as is.

    Paddle's `Tensor.to_dense()`.

    Example:
        >>> import pdx
        >>> pdx.sparse.to_dense(pdx.sparse.sparse_coo_tensor([[0, 0], [1, 1]], [1., 2.], [1, 2])).tolist()
        [[0.0, 3.0]]
    """
    if fmt(x) is None:
        return as_array(x, op="sparse.to_dense")
    coo = as_coo(x, "to_dense")
    if coo.data.dtype == jnp.bool_:
        return BCOO((coo.data.astype(jnp.int8), coo.indices), shape=coo.shape).todense() > 0
    return coo.todense()


def to_sparse_coo(x, sparse_dim=None):
    """COO form of a dense tensor (its nonzeros) or of a CSR tensor; Paddle's `Tensor.to_sparse_coo(sparse_dim)`.

    Args:
      x: a dense tensor or a CSR tensor.
      sparse_dim: how many leading dims are sparse (default: all); the rest
        become dense dims of the values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.indices(pdx.sparse.to_sparse_coo(jnp.array([[0., 1.], [2., 0.]]), 2)).tolist()
        [[0, 1], [1, 0]]
    """
    op = "to_sparse_coo"
    if fmt(x) == "coo":
        return x
    if fmt(x) == "csr":
        return csr_to_coo(x)
    x = as_array(x, op=f"sparse.{op}")
    sd = x.ndim if sparse_dim is None else int(sparse_dim)
    if not 1 <= sd <= x.ndim:
        raise op_error(f"sparse.{op}", f"`sparse_dim` must be in [1, {x.ndim}] for a {x.ndim}-D tensor; got {sparse_dim!r}")
    n_dense = x.ndim - sd
    if concrete(x):
        nz = np.asarray(x) != 0
        nz = nz.reshape(nz.shape[:sd] + (-1,)).any(-1) if n_dense else nz
        idx = np.stack(np.nonzero(nz), axis=1)
        return BCOO((x[tuple(jnp.asarray(i, jnp.int32) for i in idx.T)], jnp.asarray(idx, index_dtype())),
                    shape=x.shape)
    return BCOO.fromdense(x, nse=int(np.prod(x.shape[:sd])), n_dense=n_dense, index_dtype=index_dtype())


def to_sparse_csr(x):
    """CSR form of a dense 2-D/3-D tensor (its nonzeros) or of a COO tensor; Paddle's `Tensor.to_sparse_csr()`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_csr(jnp.array([[0., 1.], [2., 0.]]))
        >>> pdx.sparse.crows(x).tolist(), pdx.sparse.cols(x).tolist()
        ([0, 1, 2], [1, 0])
    """
    op = "to_sparse_csr"
    if fmt(x) == "csr":
        return x
    if fmt(x) == "coo":
        return coo_to_csr(x, op)
    x = as_array(x, op=f"sparse.{op}")
    if x.ndim not in (2, 3):
        raise op_error(f"sparse.{op}", f"`x` must be 2-D or 3-D for CSR; got shape {tuple(x.shape)}")
    return coo_to_csr(to_sparse_coo(x), op)


def indices(x):
    """The indices `[sparse_dim, nnz]` of a COO tensor; Paddle's `Tensor.indices()`.

    Example:
        >>> import pdx
        >>> pdx.sparse.indices(pdx.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], [2, 2])).tolist()
        [[0, 1], [1, 0]]
    """
    if fmt(x) != "coo":
        raise TypeError(f"pdx.sparse.indices: `x` must be a COO sparse tensor; got {type(x).__name__} "
                        "(for CSR use crows(x) / cols(x))")
    return as_coo(x, "indices").indices.T


def _csr_parts(x, op: str):
    if x.n_batch == 0:
        return x.indptr, x.indices, x.data
    if not concrete(x.indptr):
        raise op_error(f"sparse.{op}", "a batched CSR tensor's concatenated cols/values have a data-dependent "
                                       "length: call this eagerly (outside jit)")
    count = np.asarray(x.indptr[:, -1])
    width = x.indices.shape[1]
    pos = np.concatenate([b * width + np.arange(c) for b, c in enumerate(count)])
    cols_ = jnp.asarray(np.asarray(x.indices).reshape(-1)[pos])
    vals = x.data.reshape(-1)[jnp.asarray(pos, jnp.int32)]
    return x.indptr.reshape(-1), cols_, vals


def values(x):
    """The stored values of a sparse tensor; Paddle's `Tensor.values()`.

    Example:
        >>> import pdx
        >>> pdx.sparse.values(pdx.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], [2, 2])).tolist()
        [1.0, 2.0]
    """
    f = fmt(require_sparse(x, "values"))
    if f == "coo":
        return x.data
    return _csr_parts(x, "values")[2]


def crows(x):
    """The row pointers of a CSR tensor (`[B * (M + 1)]` when batched); Paddle's `Tensor.crows()`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.crows(pdx.sparse.to_sparse_csr(jnp.eye(2))).tolist()
        [0, 1, 2]
    """
    if fmt(x) != "csr":
        raise TypeError(f"pdx.sparse.crows: `x` must be a CSR sparse tensor; got {type(x).__name__}")
    return x.indptr.reshape(-1)


def cols(x):
    """The column indices of a CSR tensor (batches concatenated); Paddle's `Tensor.cols()`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.cols(pdx.sparse.to_sparse_csr(jnp.eye(2))).tolist()
        [0, 1]
    """
    if fmt(x) != "csr":
        raise TypeError(f"pdx.sparse.cols: `x` must be a CSR sparse tensor; got {type(x).__name__}")
    return _csr_parts(x, "cols")[1]


def nnz(x) -> int:
    """The number of stored entries (including explicit zeros); Paddle's `Tensor.nnz()`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.sparse.nnz(pdx.sparse.to_sparse_coo(jnp.eye(3), 2))
        3
    """
    f = fmt(require_sparse(x, "nnz"))
    if f == "coo":
        return int(compact(as_coo(x, "nnz")).nse)
    if x.n_batch == 0:
        return int(x.indptr[-1]) if concrete(x.indptr) else int(x.nse)
    return int(np.asarray(x.indptr[:, -1]).sum()) if concrete(x.indptr) else int(x.indices.size)


def coalesce(x, name=None):
    """Sort a COO tensor's entries and sum duplicates.

    Example:
        >>> import pdx
        >>> x = pdx.sparse.coalesce(pdx.sparse.sparse_coo_tensor([[1, 0, 1], [0, 1, 0]], [1., 2., 3.], [2, 2]))
        >>> pdx.sparse.indices(x).tolist(), pdx.sparse.values(x).tolist()
        ([[0, 1], [1, 0]], [2.0, 4.0])
    """
    if fmt(x) != "coo":
        raise TypeError(f"pdx.sparse.coalesce: `x` must be a COO sparse tensor (as in Paddle); got {type(x).__name__}")
    return coalesced(as_coo(x, "coalesce"))


def csr_coords(x: BCSR) -> tuple:
    """Index arrays aligned with `x.data` ((row, col), or (batch, row, col) when batched).

    Padding entries (past a row pointer's end) get clipped, in-range indices:
    whatever is computed for them is ignored, since BCSR never reads them.
    """
    m = x.shape[-2]
    nse = x.indices.shape[-1]
    if concrete(x.indptr, x.indices):
        j = np.arange(nse)
        ptr = np.asarray(x.indptr).reshape(-1, m + 1)
        row = np.stack([np.clip(np.searchsorted(p, j, side="right") - 1, 0, m - 1) for p in ptr])
        cols_ = np.clip(np.asarray(x.indices), 0, x.shape[-1] - 1)
        if x.n_batch == 0:
            return jnp.asarray(row[0]), jnp.asarray(cols_)
        b = np.broadcast_to(np.arange(x.shape[0])[:, None], cols_.shape)
        return jnp.asarray(b), jnp.asarray(row), jnp.asarray(cols_)
    j = jnp.arange(nse)
    if x.n_batch == 0:
        row = jnp.clip(jnp.searchsorted(x.indptr, j, side="right") - 1, 0, m - 1)
        return row, x.indices
    row = jax.vmap(lambda p: jnp.clip(jnp.searchsorted(p, j, side="right") - 1, 0, m - 1))(x.indptr)
    b = jnp.broadcast_to(jnp.arange(x.shape[0])[:, None], x.indices.shape)
    return b, row, x.indices


def linear_keys(coo: BCOO):
    """Row-major linear index of each entry's sparse coordinates; padding maps past the end.

    numpy int64 for concrete indices, a jnp int32 array under a trace.
    """
    sparse_shape = coo.shape[:coo.n_sparse]
    total = int(np.prod(sparse_shape, dtype=np.int64))
    if total >= 2 ** 31 - 1:
        raise ValueError(f"pdx.sparse: this op linearizes indices and supports at most 2**31 - 1 positions; "
                         f"got sparse shape {tuple(sparse_shape)}")
    if concrete(coo.indices):
        idx = np.asarray(coo.indices)
        valid = host_valid(idx, sparse_shape)
        keys = np.full(idx.shape[0], total, np.int64)
        keys[valid] = host_keys(idx[valid], sparse_shape)
        return keys
    strides = np.cumprod((1,) + tuple(sparse_shape[::-1]))[:-1][::-1]
    key = (coo.indices * jnp.asarray(strides, coo.indices.dtype)).sum(axis=1) if coo.n_sparse else jnp.zeros((coo.nse,), jnp.int32)
    return jnp.where(valid_mask(coo), key, total)
