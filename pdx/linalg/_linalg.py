"""Norms, products, statistics and solves of `pdx.linalg` (Paddle's `paddle.linalg`).

Matrix functions act on the last two dims and broadcast over leading batch dims.
Functions built from several primitives run through one jitted kernel, so an
eager call compiles one XLA program.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float
from pdx._args import as_array, op_error

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def float_input(x, op, name="x"):
    """`x` as a floating or complex array (integers become the default float)."""
    x = as_array(x, name=name, op=op)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(default_float())
    return x


def check_matrix(x, op, name="x", square=False):
    """Raise unless `x` is `[..., M, N]` (and square when asked)."""
    if x.ndim < 2:
        raise op_error(op, f"`{name}` must have rank >= 2 ([..., M, N]); got {name}.shape={tuple(x.shape)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise op_error(op, f"`{name}` must be a square matrix or a batch of them ([..., N, N]); "
                           f"got {name}.shape={tuple(x.shape)}")


def batch_broadcast(a, b, op, names=("x", "y")):
    """Broadcast the batch dims (all but the last two) of two matrix stacks."""
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise op_error(op, f"the batch dims of {names[0]}.shape={tuple(a.shape)} and {names[1]}.shape="
                           f"{tuple(b.shape)} cannot be broadcast together") from None
    return jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])


def _cond_p(p):
    if p is None:
        return 2
    if p not in _MATRIX_ORDS:
        raise op_error("linalg.cond", f"`p`={p!r} is not supported; use None, 'fro', 'nuc', 1, -1, 2, -2, "
                                      "inf or -inf")
    return p


@functools.partial(jax.jit, static_argnames=("p",))
def _cond_kernel(x, p):
    if p in (2, -2):
        s = jnp.linalg.svd(x, compute_uv=False)
        return s[..., 0] / s[..., -1] if p == 2 else s[..., -1] / s[..., 0]
    inv = jnp.linalg.inv(x)
    axes = (x.ndim - 2, x.ndim - 1)

    def mnorm(m):
        if p == "fro":
            return jnp.sqrt(jnp.sum(jnp.abs(m) ** 2, axis=axes))
        if p == "nuc":
            return jnp.sum(jnp.linalg.svd(m, compute_uv=False), axis=-1)
        a = jnp.abs(m)
        if p in (1, -1):
            sums = jnp.sum(a, axis=-2)
            return jnp.max(sums, -1) if p == 1 else jnp.min(sums, -1)
        sums = jnp.sum(a, axis=-1)
        return jnp.max(sums, -1) if p == math.inf else jnp.min(sums, -1)

    return mnorm(x) * mnorm(inv)


def cond(x, p=None, name=None):
    """Condition number of a matrix (or batch) with respect to the matrix norm `p`.

    Args:
      x: a `[..., M, N]` tensor; square and invertible unless `p` is None, 2 or -2.
      p: None (= 2), 'fro', 'nuc', 1, -1, 2, -2, inf or -inf.
      name: ignored.

    Returns:
      A real tensor of shape `x.shape[:-2]`.

    Example:
      >>> import pdx
      >>> float(pdx.linalg.cond(pdx.to_tensor([[2.0, 0.0], [0.0, 1.0]])))
      2.0
    """
    x = float_input(x, "linalg.cond")
    p = _cond_p(p)
    check_matrix(x, "linalg.cond", square=p not in (2, -2))
    return _cond_kernel(x, p)


# ------------------------------------------------------------------------------------------------ misc


def multi_dot(x, name=None):
    """Product of a chain of matrices, multiplied in the cheapest order.

    The first tensor may be 1-D (a row vector) and the last 1-D (a column vector);
    the others are 2-D.

    Args:
      x: a list of at least two tensors.
      name: ignored.

    Example:
      >>> import pdx
      >>> pdx.linalg.multi_dot([pdx.ones([2, 3]), pdx.ones([3, 4]), pdx.ones([4])]).tolist()
      [12.0, 12.0]
    """
    if not isinstance(x, (list, tuple)) or len(x) < 2:
        raise op_error("linalg.multi_dot", f"`x` must be a list of at least two tensors; got {type(x).__name__}"
                                           f"{'' if not isinstance(x, (list, tuple)) else f' of {len(x)}'}")
    arrays = [as_array(a, name=f"x[{i}]", op="linalg.multi_dot") for i, a in enumerate(x)]
    for i, a in enumerate(arrays):
        allowed = (1, 2) if i in (0, len(arrays) - 1) else (2,)
        if a.ndim not in allowed:
            raise op_error("linalg.multi_dot", f"x[{i}] must be {' or '.join(f'{d}-D' for d in allowed)}; "
                                               f"got shape {tuple(a.shape)}")
    for i in range(len(arrays) - 1):
        if arrays[i].shape[-1] != arrays[i + 1].shape[0]:
            raise op_error("linalg.multi_dot", f"x[{i}].shape={tuple(arrays[i].shape)} and x[{i + 1}].shape="
                                               f"{tuple(arrays[i + 1].shape)} do not chain")
    return jnp.linalg.multi_dot(arrays)


def matrix_exp(x, name=None):
    """Matrix exponential of a square matrix (or batch), by scaling and squaring with Pade.

    Example:
      >>> import pdx
      >>> pdx.linalg.matrix_exp(pdx.zeros([2, 2])).tolist()
      [[1.0, 0.0], [0.0, 1.0]]
    """
    x = float_input(x, "linalg.matrix_exp")
    check_matrix(x, "linalg.matrix_exp", square=True)
    return jax.scipy.linalg.expm(x)


# ----------------------------------------------------------------------------------------- statistics


def cov(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None):
    """Covariance matrix of the variables in `x` (numpy's `cov` with Paddle's arguments).

    Args:
      x: a 1-D or 2-D tensor; rows are variables (columns when `rowvar=False`).
      rowvar: rows are variables and columns observations.
      ddof: True divides by N - 1 (unbiased), False by N.
      fweights: optional 1-D integer frequency weights per observation.
      aweights: optional 1-D observation weights.
      name: ignored.

    Returns:
      The `[V, V]` covariance matrix (a scalar for a single variable).

    Example:
      >>> import pdx
      >>> float(pdx.linalg.cov(pdx.to_tensor([1.0, 2.0, 3.0])))
      1.0
    """
    x = float_input(x, "linalg.cov")
    if x.ndim not in (1, 2):
        raise op_error("linalg.cov", f"`x` must be 1-D or 2-D; got x.shape={tuple(x.shape)}")
    n_obs = x.shape[-1] if (rowvar or x.ndim == 1) else x.shape[0]
    weights = {}
    for wname, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        w = as_array(w, name=wname, op="linalg.cov")
        if w.ndim != 1 or w.shape[0] != n_obs:
            raise op_error("linalg.cov", f"`{wname}` must be 1-D with one weight per observation ({n_obs}); "
                                         f"got {wname}.shape={tuple(w.shape)}")
        if wname == "fweights" and not jnp.issubdtype(w.dtype, jnp.integer):
            raise TypeError(f"pdx.linalg.cov: `fweights` must be an integer tensor; got dtype {w.dtype}")
        weights[wname] = w
    return jnp.cov(x, rowvar=rowvar, bias=not ddof, **weights).astype(x.dtype)


def corrcoef(x, rowvar=True, name=None):
    """Pearson correlation coefficients of the variables in `x` (values clipped to [-1, 1]).

    Args:
      x: a 1-D or 2-D tensor; rows are variables (columns when `rowvar=False`).
      rowvar: rows are variables and columns observations.
      name: ignored.

    Example:
      >>> import pdx
      >>> pdx.linalg.corrcoef(pdx.to_tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])).round(4).tolist()
      [[1.0, 1.0], [1.0, 1.0]]
    """
    x = float_input(x, "linalg.corrcoef")
    if x.ndim not in (1, 2):
        raise op_error("linalg.corrcoef", f"`x` must be 1-D or 2-D; got x.shape={tuple(x.shape)}")
    return jnp.corrcoef(x, rowvar=rowvar).astype(x.dtype)


# ---------------------------------------------------------------------------------------------- solves


@functools.partial(jax.jit, static_argnames=("lower", "transpose", "conjugate", "unit"))
def _tri_solve(a, b, lower, transpose, conjugate, unit):
    return jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose,
                                           conjugate_a=conjugate, unit_diagonal=unit)


def _rhs(x, y, op, xname="x", yname="y"):
    """Check `[..., N, N]` coefficients against a `[..., N, K]` right-hand side and broadcast batches."""
    check_matrix(x, op, xname, square=True)
    check_matrix(y, op, yname)
    if x.shape[-1] != y.shape[-2]:
        raise op_error(op, f"{xname}.shape={tuple(x.shape)} and {yname}.shape={tuple(y.shape)} do not agree: "
                           f"{yname} needs {x.shape[-1]} rows")
    dtype = jnp.result_type(x.dtype, y.dtype)
    return batch_broadcast(x.astype(dtype), y.astype(dtype), op, (xname, yname))


def triangular_solve(x, y, upper=True, transpose=False, unitriangular=False, name=None):
    """Solve `op(x) @ out = y` for a triangular `x` (only its `upper`/lower triangle is read).

    Args:
      x: a `[..., N, N]` triangular matrix (or batch).
      y: a `[..., N, K]` right-hand side; batch dims broadcast.
      upper: `x` is upper (True) or lower (False) triangular.
      transpose: solve with `x^T` instead of `x`.
      unitriangular: assume ones on the diagonal of `x` (its diagonal is not read).
      name: ignored.

    Returns:
      The `[..., N, K]` solution.

    Example:
      >>> import pdx
      >>> pdx.linalg.triangular_solve(pdx.to_tensor([[2.0, 1.0], [0.0, 1.0]]), pdx.to_tensor([[3.0], [1.0]])).tolist()
      [[1.0], [1.0]]
    """
    x = float_input(x, "linalg.triangular_solve")
    y = float_input(y, "linalg.triangular_solve", "y")
    x, y = _rhs(x, y, "linalg.triangular_solve")
    return _tri_solve(x, y, not upper, bool(transpose), False, bool(unitriangular))


@functools.partial(jax.jit, static_argnames=("upper",))
def _cholesky_solve_kernel(b, factor, upper):
    if upper:  # A = U^H U
        z = _tri_solve(factor, b, False, True, True, False)
        return _tri_solve(factor, z, False, False, False, False)
    z = _tri_solve(factor, b, True, False, False, False)  # A = L L^H
    return _tri_solve(factor, z, True, True, True, False)


def cholesky_solve(x, y, upper=False, name=None):
    """Solve `A @ out = x` given the Cholesky factor `y` of A.

    Note Paddle's argument order: `x` is the right-hand side, `y` the factor.

    Args:
      x: a `[..., N, K]` right-hand side.
      y: a `[..., N, N]` Cholesky factor of A: lower L with A = L L^H, or upper U with
        A = U^H U when `upper=True`.
      upper: `y` is the upper factor.
      name: ignored.

    Returns:
      The `[..., N, K]` solution.

    Example:
      >>> import pdx
      >>> pdx.linalg.cholesky_solve(pdx.to_tensor([[8.0], [9.0]]), pdx.to_tensor([[2.0, 0.0], [0.0, 3.0]])).tolist()
      [[2.0], [1.0]]
    """
    x = float_input(x, "linalg.cholesky_solve")
    y = float_input(y, "linalg.cholesky_solve", "y")
    y, x = _rhs(y, x, "linalg.cholesky_solve", "y", "x")
    return _cholesky_solve_kernel(x, y, bool(upper))


def cholesky_inverse(x, upper=False, name=None):
    """Inverse of A from its Cholesky factor `x` (A = L L^H, or U^H U when `upper=True`).

    Args:
      x: a `[..., N, N]` triangular Cholesky factor.
      upper: `x` is the upper factor.
      name: ignored.

    Example:
      >>> import pdx
      >>> pdx.linalg.cholesky_inverse(pdx.to_tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
      [[0.25, 0.0], [0.0, 1.0]]
    """
    x = float_input(x, "linalg.cholesky_inverse")
    check_matrix(x, "linalg.cholesky_inverse", square=True)
    eye = jnp.broadcast_to(jnp.eye(x.shape[-1], dtype=x.dtype), x.shape)
    return _cholesky_solve_kernel(eye, x, bool(upper))
