"""Linear algebra: norms, inverse, factorizations and solves (Paddle's `paddle.linalg` names at top level).

Matrix ops act on the last two dims and broadcast over leading batch dims.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float
from pdx.ops._checks import int_list, static_int
from pdx.ops._common import as_array, normalize_axis, op_error

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _float_input(x, op, name="x"):
    x = as_array(x, name=name, op=op)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(default_float())
    return x


def _square(x, op, name="x"):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise op_error(op, f"`{name}` must be a square matrix or a batch of them ([..., N, N]); "
                           f"got {name}.shape={tuple(x.shape)}")


# Norms run as one jitted kernel each, so an eager call compiles one program.
@functools.partial(jax.jit, static_argnames=("p", "axes", "keepdim"))
def _vector_norm(x, p, axes, keepdim):
    a = jnp.abs(x)
    if p == math.inf:
        return jnp.max(a, axis=axes, keepdims=keepdim)
    if p == -math.inf:
        return jnp.min(a, axis=axes, keepdims=keepdim)
    if p == 0:
        return jnp.sum((a != 0).astype(a.dtype), axis=axes, keepdims=keepdim)
    if p == 2:
        return jnp.sqrt(jnp.sum(a * a, axis=axes, keepdims=keepdim))
    if p == 1:
        return jnp.sum(a, axis=axes, keepdims=keepdim)
    return jnp.sum(a ** p, axis=axes, keepdims=keepdim) ** (1.0 / p)


def _singular_values(x, axes, keepdim):
    moved = jnp.moveaxis(x, axes, (-2, -1))
    s = jnp.linalg.svd(moved, compute_uv=False)
    return s, (lambda v: jnp.expand_dims(v, axes) if keepdim else v)


@functools.partial(jax.jit, static_argnames=("p", "axes", "keepdim"))
def _matrix_norm(x, p, axes, keepdim):
    r, c = axes
    if p == "fro":
        return jnp.sqrt(jnp.sum(jnp.abs(x) ** 2, axis=axes, keepdims=keepdim))
    if p in ("nuc", 2, -2):
        s, restore = _singular_values(x, axes, keepdim)
        value = {"nuc": lambda: jnp.sum(s, -1), 2: lambda: jnp.max(s, -1), -2: lambda: jnp.min(s, -1)}[p]()
        return restore(value)
    a = jnp.abs(x)
    if p in (1, -1):  # max/min over columns of the column sums
        sums = jnp.sum(a, axis=r, keepdims=True)
        pick = jnp.max if p == 1 else jnp.min
    else:  # +-inf: max/min over rows of the row sums
        sums = jnp.sum(a, axis=c, keepdims=True)
        pick = jnp.max if p == math.inf else jnp.min
    out = pick(sums, axis=axes, keepdims=True)
    return out if keepdim else jnp.squeeze(out, axis=axes)


def norm(x, p=None, axis=None, keepdim=False, name=None):
    """Vector or matrix norm (Paddle 3 `paddle.linalg.norm` rules).

    - `axis=None`: the vector norm of the flattened tensor (`p=None`/'fro' -> 2),
      except `p='nuc'`, the nuclear norm of a 2-D `x`.
    - `axis` an int or one-element list: vector norm along it.
    - `axis` a pair: matrix norm; `p` in 'fro', 'nuc', 1, -1, 2, -2, inf, -inf.
    - `axis` with more entries: vector norm over those axes (numeric `p`).

    Vector `p` may be any number: inf (max |x|), -inf (min |x|), 0 (count of
    non-zeros) or `(sum |x|^p)^(1/p)`.

    Args:
      x: a floating tensor.
      p: None, 'fro', 'nuc' or a number.
      axis: None, an int, or a list/tuple of ints.
      keepdim: keep the reduced axes as size 1.
      name: ignored.

    Returns:
      The norm.

    Example:
      >>> import pdx
      >>> float(pdx.norm(pdx.to_tensor([3.0, 4.0])))
      5.0
    """
    x = _float_input(x, "norm")
    if not (p is None or p in ("fro", "nuc") or (isinstance(p, (int, float)) and not isinstance(p, bool))):
        raise op_error("norm", f"`p`={p!r} is not supported; use None, 'fro', 'nuc' or a number")
    if axis is None:
        if p == "nuc":
            if x.ndim != 2:
                raise op_error("norm", f"p='nuc' with axis=None needs a 2-D x; got x.shape={tuple(x.shape)} "
                                       "(pass axis=[-2, -1] for a batch of matrices)")
            return _matrix_norm(x, "nuc", (0, 1), bool(keepdim))
        return _vector_norm(x, 2 if p in (None, "fro") else p, None, bool(keepdim))
    axes = [normalize_axis(a, x.ndim, op="norm") for a in int_list(axis, op="norm", name="axis")]
    if len(set(axes)) != len(axes) or not axes:
        raise op_error("norm", f"`axis`={axis} must list distinct axes")
    if len(axes) == 2:
        ord_ = "fro" if p is None else p
        if ord_ not in _MATRIX_ORDS:
            raise op_error("norm", f"`p`={p!r} is not a matrix norm; with two axes use one of "
                                   "'fro', 'nuc', 1, -1, 2, -2, inf, -inf")
        return _matrix_norm(x, ord_, tuple(axes), bool(keepdim))
    if p == "nuc":
        raise op_error("norm", f"p='nuc' needs exactly two axes; got axis={axis}")
    if p == "fro" and len(axes) > 2:
        raise op_error("norm", f"p='fro' needs one or two axes; got axis={axis}")
    return _vector_norm(x, 2 if p in (None, "fro") else p, tuple(axes), bool(keepdim))


def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None, *, dtype=None, out=None):
    """Vector p-norm over one or several axes (all axes when `axis` is None).

    `p` may be any number: inf (max |x|), -inf (min |x|), 0 (count of non-zeros),
    otherwise `(sum |x|^p)^(1/p)`. Complex inputs give real norms.

    Args:
      x: a floating or complex tensor.
      p: the order (a number).
      axis: None, an int, or a list/tuple of ints (the norm is over all of them).
      keepdim: keep the reduced axes as size 1.
      name: ignored.
      dtype: cast `x` to this dtype first.
      out: not supported (arrays are immutable); must be None.

    Returns:
      The norm, a real tensor.

    Example:
      >>> import pdx
      >>> float(pdx.linalg.vector_norm(pdx.to_tensor([[3.0, 0.0], [0.0, 4.0]])))
      5.0
    """
    if out is not None:
        raise TypeError("pdx.linalg.vector_norm: `out=` is not supported (arrays are immutable); use the return value")
    x = _float_input(x, "linalg.vector_norm")
    if dtype is not None:
        x = x.astype(dtype)
    if not (isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, bool)):
        raise op_error("linalg.vector_norm", f"`p`={p!r} must be a number (inf, -inf, 0 or any float); "
                                             "use matrix_norm for 'fro'/'nuc'")
    if axis is None:
        axes = None
    else:
        axes = [normalize_axis(a, x.ndim, op="linalg.vector_norm")
                for a in int_list(axis, op="linalg.vector_norm", name="axis")]
        if len(set(axes)) != len(axes):
            raise op_error("linalg.vector_norm", f"`axis`={axis} repeats an axis")
        axes = tuple(axes) if axes else None
    return _vector_norm(x, float(p), axes, bool(keepdim))


def matrix_norm(x, p="fro", axis=[-2, -1], keepdim=False, name=None):  # noqa: B006 (Paddle's default)
    """Matrix norm over two axes: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf.

    Args:
      x: a floating or complex tensor of rank >= 2.
      p: the norm: 'fro' (Frobenius), 'nuc' (sum of singular values), 2/-2 (largest/smallest
        singular value), 1/-1 (max/min column abs sum), inf/-inf (max/min row abs sum).
      axis: the two axes holding the matrices.
      keepdim: keep the reduced axes as size 1.
      name: ignored.

    Returns:
      The norm over the two axes.

    Example:
      >>> import pdx
      >>> float(pdx.linalg.matrix_norm(pdx.to_tensor([[3.0, 0.0], [0.0, 4.0]])))
      5.0
    """
    x = _float_input(x, "linalg.matrix_norm")
    axes = int_list(axis, op="linalg.matrix_norm", name="axis")
    if len(axes) != 2:
        raise op_error("linalg.matrix_norm", f"`axis`={axis} must name exactly two axes")
    if p not in _MATRIX_ORDS:
        raise op_error("linalg.matrix_norm", f"`p`={p!r} is not a matrix norm; use one of 'fro', 'nuc', "
                                             "1, -1, 2, -2, inf, -inf")
    return norm(x, p=p, axis=axes, keepdim=keepdim)


def inverse(x, name=None):
    """Inverse of a square matrix (or of each matrix in a batch).

    Args:
      x: a `[..., N, N]` floating tensor.
      name: ignored.

    Returns:
      The inverse, same shape as `x`.

    Example:
      >>> import pdx
      >>> pdx.inverse(pdx.to_tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
      [[0.5, 0.0], [0.0, 0.25]]
    """
    x = _float_input(x, "inverse")
    _square(x, "inverse")
    return jnp.linalg.inv(x)


def cholesky(x, upper=False, name=None):
    """Cholesky factor of a symmetric positive-definite matrix (or batch).

    Args:
      x: a `[..., N, N]` floating tensor.
      upper: return the upper factor U with x = U^T U instead of the lower L with x = L L^T.
      name: ignored.

    Returns:
      The triangular factor (NaN where `x` is not positive-definite).

    Example:
      >>> import pdx
      >>> pdx.cholesky(pdx.to_tensor([[4.0, 0.0], [0.0, 9.0]])).tolist()
      [[2.0, 0.0], [0.0, 3.0]]
    """
    x = _float_input(x, "cholesky")
    _square(x, "cholesky")
    lower = jnp.linalg.cholesky(x)
    return jnp.swapaxes(lower, -1, -2).conj() if upper else lower


def qr(x, mode="reduced", name=None):
    """QR decomposition of a matrix (or batch).

    Args:
      x: a `[..., M, N]` floating tensor.
      mode: 'reduced' (Q is [M, K], K = min(M, N)), 'complete' (Q is [M, M])
        or 'r' (only R).
      name: ignored.

    Returns:
      `(Q, R)`, or only `R` for mode 'r'.

    Example:
      >>> import pdx
      >>> q, r = pdx.qr(pdx.ones([3, 2]))
      >>> q.shape, r.shape
      ((3, 2), (2, 2))
    """
    x = _float_input(x, "qr")
    if x.ndim < 2:
        raise op_error("qr", f"`x` must have rank >= 2; got x.shape={tuple(x.shape)}")
    if mode not in ("reduced", "complete", "r"):
        raise op_error("qr", f"`mode`={mode!r} is not supported; use 'reduced', 'complete' or 'r'")
    return jnp.linalg.qr(x, mode=mode)


def svd(x, full_matrices=False, name=None):
    """Singular value decomposition x = U @ diag(S) @ VH.

    Args:
      x: a `[..., M, N]` floating tensor.
      full_matrices: return full square U and VH instead of the reduced ones.
      name: ignored.

    Returns:
      `(U, S, VH)` with S sorted in descending order.

    Example:
      >>> import pdx
      >>> u, s, vh = pdx.svd(pdx.ones([3, 2]))
      >>> u.shape, s.shape, vh.shape
      ((3, 2), (2,), (2, 2))
    """
    x = _float_input(x, "svd")
    if x.ndim < 2:
        raise op_error("svd", f"`x` must have rank >= 2; got x.shape={tuple(x.shape)}")
    u, s, vh = jnp.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


def det(x, name=None):
    """Determinant of a square matrix (or of each matrix in a batch).

    Args:
      x: a `[..., N, N]` floating tensor.
      name: ignored.

    Returns:
      A tensor of shape `x.shape[:-2]`.

    Example:
      >>> import pdx
      >>> float(pdx.det(pdx.to_tensor([[1.0, 2.0], [3.0, 4.0]])))  # doctest: +ELLIPSIS
      -2.0...
    """
    x = _float_input(x, "det")
    _square(x, "det")
    return jnp.linalg.det(x)


def solve(x, y, left=True, name=None):
    """Solve `x @ out = y` (or `out @ x = y` when `left=False`).

    Args:
      x: a `[..., N, N]` floating tensor of coefficients.
      y: a `[..., N, K]` right-hand side, or a `[N]` vector.
      left: solve x @ out = y (True) or out @ x = y (False).
      name: ignored.

    Returns:
      The solution, shaped like `y` (batch dims broadcast).

    Example:
      >>> import pdx
      >>> pdx.solve(pdx.to_tensor([[2.0, 0.0], [0.0, 4.0]]), pdx.to_tensor([2.0, 4.0])).tolist()
      [1.0, 1.0]
    """
    x = _float_input(x, "solve")
    y = _float_input(y, "solve", "y")
    _square(x, "solve")
    n = x.shape[-1]
    if y.ndim == 1:
        if y.shape[0] != n:
            raise op_error("solve", f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} do not agree ({n} vs "
                                    f"{y.shape[0]})")
        return jnp.linalg.solve(x, y[..., None])[..., 0] if x.ndim > 2 else jnp.linalg.solve(x, y)
    dim = -2 if left else -1
    if y.shape[dim] != n:
        raise op_error("solve", f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} do not agree on the "
                                f"solved dim ({n} vs {y.shape[dim]}, left={left})")
    if left:
        return jnp.linalg.solve(x, y)
    return jnp.swapaxes(jnp.linalg.solve(jnp.swapaxes(x, -1, -2), jnp.swapaxes(y, -1, -2)), -1, -2)


def pinv(x, rcond=1e-15, hermitian=False, name=None):
    """Moore-Penrose pseudo-inverse.

    Args:
      x: a `[..., M, N]` floating tensor.
      rcond: singular values below `rcond * max(S)` are treated as zero.
      hermitian: `x` is Hermitian (symmetric), which allows a faster method.
      name: ignored.

    Returns:
      A `[..., N, M]` tensor.

    Example:
      >>> import pdx
      >>> pdx.pinv(pdx.to_tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
      [[0.5, 0.0], [0.0, 0.0]]
    """
    x = _float_input(x, "pinv")
    if x.ndim < 2:
        raise op_error("pinv", f"`x` must have rank >= 2; got x.shape={tuple(x.shape)}")
    return jnp.linalg.pinv(x, rtol=rcond, hermitian=hermitian)


def matrix_power(x, n, name=None):
    """Raise a square matrix (or batch) to an integer power; n < 0 inverts first.

    Args:
      x: a `[..., N, N]` floating tensor.
      n: the exponent (int).
      name: ignored.

    Returns:
      A tensor like `x` (the identity for n = 0).

    Example:
      >>> import pdx
      >>> pdx.matrix_power(pdx.to_tensor([[2.0, 0.0], [0.0, 1.0]]), 3).tolist()
      [[8.0, 0.0], [0.0, 1.0]]
    """
    x = _float_input(x, "matrix_power")
    _square(x, "matrix_power")
    return jnp.linalg.matrix_power(x, static_int(n, op="matrix_power", name="n"))
