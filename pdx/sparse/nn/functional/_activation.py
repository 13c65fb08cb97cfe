"""Sparse activations: relu, relu6, leaky_relu (on stored values) and softmax (over stored values)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._args import op_error
from pdx.sparse._core import BCOO, as_coo, concrete, fmt, host_valid, require_sparse, valid_mask, with_format
from pdx.sparse._unary import map_values

__all__ = ["leaky_relu", "relu", "relu6", "softmax"]


def relu(x, name=None):
    """Sparse `max(x, 0)` on the stored values (pattern and format kept).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([-1., 0., 2.]), 1)
        >>> pdx.sparse.values(pdx.sparse.nn.functional.relu(x)).tolist()
        [0.0, 2.0]
    """
    return map_values(x, jax.nn.relu, "nn.functional.relu")


def relu6(x, name=None):
    """Sparse `min(max(x, 0), 6)` on the stored values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([-1., 0., 8.]), 1)
        >>> pdx.sparse.values(pdx.sparse.nn.functional.relu6(x)).tolist()
        [0.0, 6.0]
    """
    return map_values(x, lambda v: jnp.clip(v, 0, 6), "nn.functional.relu6")


def leaky_relu(x, negative_slope=0.01, name=None):
    """Sparse leaky ReLU on the stored values: `v if v >= 0 else negative_slope * v`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([-1., 0., 2.]), 1)
        >>> pdx.sparse.values(pdx.sparse.nn.functional.leaky_relu(x, 0.5)).tolist()
        [-0.5, 2.0]
    """
    return map_values(x, lambda v: jnp.where(v >= 0, v, v * negative_slope), "nn.functional.leaky_relu")


def softmax(x, axis=-1, name=None):
    """Softmax over the stored values along `axis` (unstored entries take no part, as in Paddle).

    Each group of stored entries that share every index but `axis` is
    normalised on its own; the pattern and format are kept. Paddle's CSR
    supports axis=-1 only; pdx accepts any axis for both formats.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_csr(jnp.array([[0., 1., 1.], [2., 0., 0.]]))
        >>> pdx.sparse.values(pdx.sparse.nn.functional.softmax(x)).tolist()
        [0.5, 0.5, 1.0]
    """
    op = "nn.functional.softmax"
    target = fmt(require_sparse(x, op))
    if not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise op_error(f"sparse.{op}", f"`axis`={axis!r} is out of range for a {x.ndim}-D tensor")
    axis = int(axis) % x.ndim
    c = as_coo(x, op)
    ns = c.n_sparse
    if axis >= ns:
        out = BCOO((jax.nn.softmax(c.data, axis=1 + axis - ns), c.indices), shape=c.shape)
        return with_format(out, target, op)
    others = [d for d in range(ns) if d != axis]
    sizes = [c.shape[d] for d in others]
    strides = np.cumprod([1] + sizes[::-1])[:-1][::-1] if others else np.zeros((0,), int)
    total = int(np.prod(sizes)) if others else 1
    host = concrete(c.indices)
    xp = np if host else jnp
    idx = np.asarray(c.indices) if host else c.indices
    group = (idx[:, others] * xp.asarray(strides, idx.dtype)).sum(1) if others else xp.zeros((c.nse,), idx.dtype)
    valid = host_valid(idx, c.shape[:ns]) if host else valid_mask(c)
    group = xp.where(valid, group, total)
    order = xp.argsort(group, stable=True)
    sg = group[order]
    seg = xp.cumsum(xp.concatenate([xp.zeros((1,), xp.int32), (sg[1:] != sg[:-1]).astype(xp.int32)]))
    out = _grouped_softmax(c.data, jnp.asarray(order, jnp.int32), jnp.asarray(seg, jnp.int32))
    return with_format(BCOO((out, c.indices), shape=c.shape), target, op)


@jax.jit
def _grouped_softmax(data, order, seg):
    """Softmax of data within groups: `order` sorts entries by group, `seg` numbers the groups in that order."""
    n = max(data.shape[0], 1)
    vals = data[order]
    top = jax.ops.segment_max(vals, seg, n)[seg]
    e = jnp.exp(vals - jax.lax.stop_gradient(top))
    out_sorted = e / jax.ops.segment_sum(e, seg, n)[seg]
    return jnp.zeros_like(out_sorted).at[order].set(out_sorted)
