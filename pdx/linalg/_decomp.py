"""Factorizations of `pdx.linalg`: determinants, eigen, LU, Householder, low-rank SVD, least squares."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx._random import in_trace, next_key
from pdx.linalg._linalg import _tri_solve, batch_broadcast, check_matrix, float_input
from pdx._args import as_array, op_error, static_int


def _real_dtype(dtype):
    return jnp.finfo(dtype).dtype


@jax.jit
def _slogdet_kernel(x):
    sign, logabs = jnp.linalg.slogdet(x)
    return jnp.stack([sign, logabs.astype(sign.dtype)])


def slogdet(x, name=None):
    """Sign and log of the absolute determinant, stacked as Paddle returns them.

    Args:
      x: a `[..., N, N]` tensor.
      name: ignored.

    Returns:
      A `[2, ...]` tensor: `out[0]` the sign (a unit complex number for complex input),
      `out[1]` log|det(x)|.

    Example:
      >>> import pdx
      >>> [round(v, 4) for v in pdx.linalg.slogdet(pdx.to_tensor([[-2.0, 0.0], [0.0, 1.0]])).tolist()]
      [-1.0, 0.6931]
    """
    x = float_input(x, "linalg.slogdet")
    check_matrix(x, "linalg.slogdet", square=True)
    return _slogdet_kernel(x)


def svdvals(x, name=None):
    """Singular values of a matrix (or batch), in descending order.

    Example:
      >>> import pdx
      >>> pdx.linalg.svdvals(pdx.to_tensor([[3.0, 0.0], [0.0, -4.0]])).tolist()
      [4.0, 3.0]
    """
    x = float_input(x, "linalg.svdvals")
    check_matrix(x, "linalg.svdvals")
    return jnp.linalg.svd(x, compute_uv=False)


# ------------------------------------------------------------------------------------------------ eigen


def eig(x, name=None):
    """Eigenvalues and right eigenvectors of a general square matrix (or batch).

    Runs on the CPU only (XLA has no general eigensolver on accelerators).
    Eigenvectors have unit norm; their phase is not unique.

    Args:
      x: a `[..., N, N]` tensor.
      name: ignored.

    Returns:
      `(eigenvalues [..., N], eigenvectors [..., N, N])`, both complex.

    Example:
      >>> import pdx
      >>> w, v = pdx.linalg.eig(pdx.to_tensor([[2.0, 0.0], [0.0, 3.0]]))
      >>> w.real.tolist()
      [2.0, 3.0]
    """
    x = float_input(x, "linalg.eig")
    check_matrix(x, "linalg.eig", square=True)
    w, v = jnp.linalg.eig(x)
    return w, v


def eigvals(x, name=None):
    """Eigenvalues of a general square matrix (or batch), complex (CPU only).

    Example:
      >>> import pdx
      >>> pdx.linalg.eigvals(pdx.to_tensor([[2.0, 0.0], [0.0, 3.0]])).real.tolist()
      [2.0, 3.0]
    """
    x = float_input(x, "linalg.eigvals")
    check_matrix(x, "linalg.eigvals", square=True)
    return jnp.linalg.eigvals(x)


def _uplo(UPLO, op):
    if UPLO not in ("L", "U"):
        raise op_error(op, f"`UPLO`={UPLO!r} must be 'L' (read the lower triangle) or 'U' (the upper one)")
    return UPLO


def hermitian_from_triangle(x, uplo):
    """The Hermitian matrix whose `uplo` triangle is that of `x`; gradients pass to `x` unchanged."""
    tri = jnp.tril(x, -1) if uplo == "L" else jnp.triu(x, 1)
    diag = jnp.real(jnp.diagonal(x, axis1=-2, axis2=-1)).astype(x.dtype)
    full = tri + jnp.conj(jnp.swapaxes(tri, -1, -2)) + diag[..., None] * jnp.eye(x.shape[-1], dtype=x.dtype)
    # Forward value from the named triangle (as LAPACK reads it); the gradient goes to the whole input
    # like Paddle's eigh backward.
    return x + jax.lax.stop_gradient(full - x)


@functools.partial(jax.jit, static_argnames=("uplo", "vectors"))
def _eigh_kernel(x, uplo, vectors):
    # The input is already Hermitian; symmetrizing makes the gradient Hermitian, as Paddle's is.
    w, v = jnp.linalg.eigh(hermitian_from_triangle(x, uplo), symmetrize_input=True)
    return (w, v) if vectors else w


def eigh(x, UPLO="L", name=None):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian/symmetric matrix (or batch).

    Only the triangle named by `UPLO` is read. Eigenvector signs (phases) are not unique.

    Args:
      x: a `[..., N, N]` tensor.
      UPLO: 'L' reads the lower triangle, 'U' the upper one.
      name: ignored.

    Returns:
      `(eigenvalues [..., N] real, eigenvectors [..., N, N])`.

    Example:
      >>> import pdx
      >>> w, v = pdx.linalg.eigh(pdx.to_tensor([[2.0, 0.0], [0.0, 1.0]]))
      >>> w.tolist()
      [1.0, 2.0]
    """
    x = float_input(x, "linalg.eigh")
    check_matrix(x, "linalg.eigh", square=True)
    return _eigh_kernel(x, _uplo(UPLO, "linalg.eigh"), True)



@functools.partial(jax.jit, static_argnames=("hermitian", "mode"))
def _rank_kernel(x, a, b, hermitian, mode):
    if hermitian:
        s = jnp.abs(_eigh_kernel(x, "L", False))
    else:
        s = jnp.linalg.svd(x, compute_uv=False)
    smax = jnp.max(s, axis=-1)
    eps = jnp.finfo(s.dtype).eps * max(x.shape[-2:])
    if mode == "default":
        tol = smax * eps
    elif mode == "tol":
        tol = a
    else:  # atol/rtol: max(atol, rtol * smax); a missing rtol is eps*max(M, N), or 0 when atol > 0
        rtol = jnp.where(a > 0, 0.0, eps) if b is None else b
        tol = jnp.maximum(a, rtol * smax)
    return jnp.sum(s > jnp.asarray(tol, s.dtype)[..., None], axis=-1).astype(jnp.int32)


def matrix_rank(x, tol=None, hermitian=False, atol=None, rtol=None, name=None):
    """Numerical rank: the number of singular values (|eigenvalues| when `hermitian`) above a tolerance.

    Use `tol` alone, or `atol`/`rtol` (tolerance `max(atol, rtol * sigma_max)`). With none of
    them the tolerance is `sigma_max * max(M, N) * eps`.

    Args:
      x: a `[..., M, N]` tensor.
      tol: absolute tolerance (a number or a tensor broadcastable to the batch dims).
      hermitian: `x` is Hermitian; only its lower triangle is read.
      atol: absolute tolerance (default 0).
      rtol: relative tolerance (default `max(M, N) * eps`, or 0 when `atol > 0`).
      name: ignored.

    Returns:
      An int32 tensor of shape `x.shape[:-2]` (Paddle returns int64).

    Example:
      >>> import pdx
      >>> int(pdx.linalg.matrix_rank(pdx.ones([3, 3])))
      1
    """
    x = float_input(x, "linalg.matrix_rank")
    check_matrix(x, "linalg.matrix_rank")
    real = _real_dtype(x.dtype)
    if atol is not None or rtol is not None:
        if tol is not None:
            raise op_error("linalg.matrix_rank", "pass either `tol` alone or `atol`/`rtol`; got both "
                                                 f"tol={tol!r} and atol={atol!r}, rtol={rtol!r}")
        a = jnp.asarray(0.0 if atol is None else atol, real)
        b = None if rtol is None else jnp.asarray(rtol, real)
        return _rank_kernel(x, a, b, bool(hermitian), "atol_rtol")
    if tol is None:
        return _rank_kernel(x, None, None, bool(hermitian), "default")
    return _rank_kernel(x, jnp.asarray(tol, real), None, bool(hermitian), "tol")


# --------------------------------------------------------------------------------------------------- LU


@jax.jit
def _lu_pivoted(x):
    lu_, piv, _ = jax.lax.linalg.lu(x)
    return lu_, piv + 1


@jax.jit
def _lu_unpivoted(x):
    m, n = x.shape[-2:]
    rows = jnp.arange(m)
    cols = jnp.arange(n)

    def step(k, a):
        pivot_row = jax.lax.dynamic_index_in_dim(a, k, axis=-2, keepdims=False)  # (..., n)
        pivot = jax.lax.dynamic_index_in_dim(pivot_row, k, axis=-1, keepdims=True)  # (..., 1)
        col = jax.lax.dynamic_index_in_dim(a, k, axis=-1, keepdims=False)  # (..., m)
        below = rows > k
        factors = jnp.where(below, col / pivot, 0)
        right = jnp.where(cols > k, pivot_row, 0)
        a = a - factors[..., :, None] * right[..., None, :]
        return jnp.where(below[:, None] & (cols == k)[None, :], factors[..., :, None], a)

    lu_ = jax.lax.fori_loop(0, min(m, n), step, x)
    piv = jnp.broadcast_to(jnp.arange(1, min(m, n) + 1, dtype=jnp.int32), x.shape[:-2] + (min(m, n),))
    return lu_, piv


def lu(x, pivot=True, get_infos=False, name=None):
    """LU factorization with partial pivoting: `x = P @ L @ U`, packed as LAPACK does.

    Args:
      x: a `[..., M, N]` tensor.
      pivot: pivot rows (True). `pivot=False` factors without row exchanges (it fails on a
        zero pivot; Paddle supports it only on GPU).
      get_infos: also return the LAPACK-style info per matrix.
      name: ignored.

    Returns:
      `(LU, pivots)` or `(LU, pivots, infos)`: `LU` holds U and the unit-lower L below the
      diagonal; `pivots` (int32, 1-based like Paddle) says row i was swapped with row
      `pivots[i]`; `infos` (int32) is 0, or k when `U[k-1, k-1]` is exactly zero.

    Example:
      >>> import pdx
      >>> lu, piv = pdx.linalg.lu(pdx.to_tensor([[1.0, 2.0], [3.0, 4.0]]))
      >>> piv.tolist()
      [2, 2]
    """
    x = float_input(x, "linalg.lu")
    check_matrix(x, "linalg.lu")
    lu_, piv = _lu_pivoted(x) if pivot else _lu_unpivoted(x)
    if not get_infos:
        return lu_, piv
    zero = jnp.diagonal(lu_, axis1=-2, axis2=-1) == 0
    infos = jnp.where(jnp.any(zero, -1), jnp.argmax(zero, -1) + 1, 0).astype(jnp.int32)
    return lu_, piv, infos


def _permutation(pivots, m):
    """Row permutation `perm` with `A[perm] = L @ U`, from 1-based pivots."""
    return jax.lax.linalg.lu_pivots_to_permutation(pivots - 1, m)


@functools.partial(jax.jit, static_argnames=("unpack_ludata", "unpack_pivots"))
def _lu_unpack_kernel(x, y, unpack_ludata, unpack_pivots):
    m, n = x.shape[-2:]
    k = min(m, n)
    if unpack_ludata:
        lower = jnp.tril(x[..., :, :k], -1) + jnp.eye(m, k, dtype=x.dtype)
        upper = jnp.triu(x[..., :k, :])
    else:
        lower = upper = jnp.zeros((0,), x.dtype)
    if unpack_pivots:
        perm = _permutation(y, m)
        # A[perm] = L U, so A = P L U with P[perm[i], i] = 1.
        p = jnp.swapaxes(jax.nn.one_hot(perm, m, dtype=x.dtype), -1, -2)
    else:
        p = jnp.zeros((0,), x.dtype)
    return p, lower, upper


def lu_unpack(x, y, unpack_ludata=True, unpack_pivots=True, name=None):
    """Split the packed LU of `lu` into `P, L, U` with `A = P @ L @ U`.

    Args:
      x: the packed `[..., M, N]` LU from `pdx.linalg.lu`.
      y: its `[..., min(M, N)]` 1-based pivots.
      unpack_ludata: return L (`[..., M, K]`) and U (`[..., K, N]`), K = min(M, N).
      unpack_pivots: return the `[..., M, M]` permutation matrix P.
      name: ignored.

    Returns:
      `(P, L, U)`; a part not asked for is an empty tensor.

    Example:
      >>> import pdx
      >>> a = pdx.to_tensor([[1.0, 2.0], [3.0, 4.0]])
      >>> p, l, u = pdx.linalg.lu_unpack(*pdx.linalg.lu(a))
      >>> (p @ l @ u).round(4).tolist()
      [[1.0, 2.0], [3.0, 4.0]]
    """
    x = float_input(x, "linalg.lu_unpack")
    y = as_array(y, name="y", op="linalg.lu_unpack")
    check_matrix(x, "linalg.lu_unpack")
    k = min(x.shape[-2:])
    if not jnp.issubdtype(y.dtype, jnp.integer) or y.shape != x.shape[:-2] + (k,):
        raise op_error("linalg.lu_unpack", f"`y` must be the integer pivots of shape {x.shape[:-2] + (k,)} "
                                           f"for x.shape={tuple(x.shape)}; got y.shape={tuple(y.shape)}, "
                                           f"dtype {y.dtype}")
    return _lu_unpack_kernel(x, y.astype(jnp.int32), bool(unpack_ludata), bool(unpack_pivots))


@functools.partial(jax.jit, static_argnames=("trans",))
def _lu_solve_kernel(b, lu_, pivots, trans):
    m = lu_.shape[-1]
    perm = _permutation(pivots, m)
    if trans == "N":  # A = P L U: x = U^-1 L^-1 P^T b
        pb = jnp.take_along_axis(b, perm[..., :, None], axis=-2)
        z = _tri_solve(lu_, pb, True, False, False, True)
        return _tri_solve(lu_, z, False, False, False, False)
    conj = trans == "C"  # A^T = U^T L^T P^T: x = P L^-T U^-T b
    z = _tri_solve(lu_, b, False, True, conj, False)
    z = _tri_solve(lu_, z, True, True, conj, True)
    inverse = jnp.argsort(perm, axis=-1)
    return jnp.take_along_axis(z, inverse[..., :, None], axis=-2)


def lu_solve(b, lu, pivots, trans="N", name=None):
    """Solve `op(A) @ out = b` from the packed LU factorization of A.

    Args:
      b: a `[..., N, K]` right-hand side.
      lu: the packed `[..., N, N]` LU from `pdx.linalg.lu`.
      pivots: its `[..., N]` 1-based pivots.
      trans: 'N' (A), 'T' (A^T) or 'C' (A^H).
      name: ignored.

    Returns:
      The `[..., N, K]` solution.

    Example:
      >>> import pdx
      >>> a = pdx.to_tensor([[1.0, 2.0], [3.0, 4.0]])
      >>> lu, piv = pdx.linalg.lu(a)
      >>> pdx.linalg.lu_solve(pdx.to_tensor([[5.0], [11.0]]), lu, piv).round(4).tolist()
      [[1.0], [2.0]]
    """
    b = float_input(b, "linalg.lu_solve", "b")
    lu_ = float_input(lu, "linalg.lu_solve", "lu")
    pivots = as_array(pivots, name="pivots", op="linalg.lu_solve")
    if trans not in ("N", "T", "C"):
        raise op_error("linalg.lu_solve", f"`trans`={trans!r} must be 'N', 'T' or 'C'")
    check_matrix(lu_, "linalg.lu_solve", "lu", square=True)
    check_matrix(b, "linalg.lu_solve", "b")
    n = lu_.shape[-1]
    if b.shape[-2] != n:
        raise op_error("linalg.lu_solve", f"b.shape={tuple(b.shape)} needs {n} rows to match "
                                          f"lu.shape={tuple(lu_.shape)}")
    if not jnp.issubdtype(pivots.dtype, jnp.integer) or pivots.shape[-1:] != (n,):
        raise op_error("linalg.lu_solve", f"`pivots` must be integer with last dim {n}; got "
                                          f"pivots.shape={tuple(pivots.shape)}, dtype {pivots.dtype}")
    dtype = jnp.result_type(b.dtype, lu_.dtype)
    b, lu_ = batch_broadcast(b.astype(dtype), lu_.astype(dtype), "linalg.lu_solve", ("b", "lu"))
    pivots = jnp.broadcast_to(pivots.astype(jnp.int32), lu_.shape[:-1])
    return _lu_solve_kernel(b, lu_, pivots, trans)


# ------------------------------------------------------------------------------------------- Householder


def householder_product(x, tau, name=None):
    """The first N columns of Q = H_1 ... H_K from Householder reflectors (LAPACK's orgqr).

    Args:
      x: a `[..., M, N]` tensor (M >= N); column i below the diagonal holds reflector i.
      tau: the `[..., K]` reflector scales, K <= N.
      name: ignored.

    Returns:
      The `[..., M, N]` matrix.

    Example:
      >>> import pdx
      >>> pdx.linalg.householder_product(pdx.eye(2), pdx.zeros([2])).shape
      (2, 2)
    """
    x = float_input(x, "linalg.householder_product")
    tau = as_array(tau, name="tau", op="linalg.householder_product").astype(x.dtype)
    check_matrix(x, "linalg.householder_product")
    m, n = x.shape[-2:]
    if m < n:
        raise op_error("linalg.householder_product", f"`x` must have at least as many rows as columns; "
                                                     f"got x.shape={tuple(x.shape)}")
    if tau.shape[:-1] != x.shape[:-2] or tau.ndim < 1 or tau.shape[-1] > n:
        raise op_error("linalg.householder_product", f"`tau` must have shape {x.shape[:-2]} + (K,) with K <= "
                                                     f"{n}; got tau.shape={tuple(tau.shape)}")
    return jax.lax.linalg.householder_product(x, tau)


@functools.partial(jax.jit, static_argnames=("left", "transpose"))
def _ormqr_kernel(x, tau, y, left, transpose):
    q = jax.lax.linalg.householder_product(x, tau)  # (..., MN, K)
    if transpose:
        q = jnp.conj(jnp.swapaxes(q, -1, -2))
    return q @ y if left else y @ q


def ormqr(x, tau, y, left=True, transpose=False, name=None):
    """Multiply `y` by the Householder matrix Q of `(x, tau)`: `op(Q) @ y` or `y @ op(Q)`.

    Q is `householder_product(x, tau)`, the `[..., MN, K]` matrix of the first K columns of
    H_1 ... H_K, as Paddle builds it (LAPACK's ormqr uses the square Q; both agree when
    K = MN).

    Args:
      x: a `[..., MN, K]` tensor of reflectors (MN >= K).
      tau: the `[..., K]` reflector scales.
      y: the matrix to multiply; its dims must fit `op(Q)`.
      left: compute `op(Q) @ y` (True) or `y @ op(Q)`.
      transpose: use Q^H instead of Q.
      name: ignored.

    Returns:
      The product.

    Example:
      >>> import pdx
      >>> pdx.linalg.ormqr(pdx.eye(2), pdx.zeros([2]), pdx.ones([2, 3])).tolist()
      [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    x = float_input(x, "linalg.ormqr")
    y = float_input(y, "linalg.ormqr", "y")
    tau = as_array(tau, name="tau", op="linalg.ormqr")
    check_matrix(x, "linalg.ormqr")
    check_matrix(y, "linalg.ormqr", "y")
    mn, k = x.shape[-2:]
    if mn < k:
        raise op_error("linalg.ormqr", f"`x` must have at least as many rows as columns; got x.shape={tuple(x.shape)}")
    if tau.shape != x.shape[:-2] + (k,):
        raise op_error("linalg.ormqr", f"`tau` must have shape {x.shape[:-2] + (k,)}; got tau.shape={tuple(tau.shape)}")
    q_rows, q_cols = (k, mn) if transpose else (mn, k)
    need, have = (q_cols, y.shape[-2]) if left else (q_rows, y.shape[-1])
    if need != have:
        raise op_error("linalg.ormqr", f"y.shape={tuple(y.shape)} does not fit op(Q) of shape ({q_rows}, {q_cols}) "
                                       f"(left={left}, transpose={transpose}, x.shape={tuple(x.shape)})")
    dtype = jnp.result_type(x.dtype, y.dtype)
    return _ormqr_kernel(x.astype(dtype), tau.astype(dtype), y.astype(dtype), bool(left), bool(transpose))


# ------------------------------------------------------------------------------------------- low rank


@functools.partial(jax.jit, static_argnames=("q", "niter"))
def _svd_lowrank_kernel(a, key, q, niter):
    m, n = a.shape[-2:]
    transposed = m < n
    if transposed:
        a = jnp.conj(jnp.swapaxes(a, -1, -2))
        m, n = n, m
    ah = jnp.conj(jnp.swapaxes(a, -1, -2))
    omega = jax.random.normal(key, a.shape[:-2] + (n, q), dtype=_real_dtype(a.dtype)).astype(a.dtype)
    basis = jnp.linalg.qr(a @ omega)[0]
    for _ in range(niter):
        basis = jnp.linalg.qr(ah @ basis)[0]
        basis = jnp.linalg.qr(a @ basis)[0]
    b = jnp.conj(jnp.swapaxes(basis, -1, -2)) @ a  # (..., q, n)
    ub, s, vh = jnp.linalg.svd(b, full_matrices=False)
    u = basis @ ub
    v = jnp.conj(jnp.swapaxes(vh, -1, -2))
    return (v, s, u) if transposed else (u, s, v)


def _lowrank_args(x, q, niter, op):
    x = float_input(x, op)
    check_matrix(x, op)
    m, n = x.shape[-2:]
    q = min(6, m, n) if q is None else static_int(q, op=op, name="q")
    if not 0 < q <= min(m, n):
        raise op_error(op, f"`q`={q} must be in 1 .. min(M, N) = {min(m, n)} for x.shape={tuple(x.shape)}")
    niter = static_int(niter, op=op, name="niter")
    if niter < 0:
        raise op_error(op, f"`niter`={niter} must be >= 0")
    return x, q, niter


def svd_lowrank(x, q=None, niter=2, M=None, name=None, *, key=None):
    """Approximate rank-`q` SVD by randomized subspace iteration: `x - M ~= U diag(S) V^H`.

    Args:
      x: a `[..., M, N]` tensor.
      q: the rank (default `min(6, M, N)`).
      niter: subspace (power) iterations; more is more accurate.
      M: optional tensor broadcastable to `x` subtracted first (e.g. the mean).
      name: ignored.
      key: a `jax.random` key for the random projection; required under jit (eagerly
        one is drawn from the global generator).

    Returns:
      `(U [..., M, q], S [..., q], V [..., N, q])` — V, not V^H, as Paddle returns it.

    Example:
      >>> import pdx, jax
      >>> u, s, v = pdx.linalg.svd_lowrank(pdx.ones([4, 3]), q=1, key=jax.random.key(0))
      >>> round(float(s[0]), 4)
      3.4641
    """
    x, q, niter = _lowrank_args(x, q, niter, "linalg.svd_lowrank")
    if M is not None:
        x = x - as_array(M, name="M", op="linalg.svd_lowrank")
    return _svd_lowrank_kernel(x, next_key(key, op="linalg.svd_lowrank"), q, niter)


def pca_lowrank(x, q=None, center=True, niter=2, name=None, *, key=None):
    """Principal components by randomized low-rank SVD of the (column-centered) data.

    Args:
      x: a `[..., M, N]` tensor of M samples with N features.
      q: the rank (default `min(6, M, N)`).
      center: subtract the mean of each column first.
      niter: subspace iterations.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      `(U [..., M, q], S [..., q], V [..., N, q])`; the columns of V are the principal directions.

    Example:
      >>> import pdx, jax
      >>> u, s, v = pdx.linalg.pca_lowrank(pdx.randn([5, 3]), q=2, key=jax.random.key(0))
      >>> v.shape
      (3, 2)
    """
    x, q, niter = _lowrank_args(x, q, niter, "linalg.pca_lowrank")
    if center:
        x = x - jnp.mean(x, axis=-2, keepdims=True)
    return _svd_lowrank_kernel(x, next_key(key, op="linalg.pca_lowrank"), q, niter)


# -------------------------------------------------------------------------------------- least squares

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@functools.partial(jax.jit, static_argnames=("driver",))
def _lstsq_kernel(x, y, rcond, driver):
    u, s, vh = jnp.linalg.svd(x, full_matrices=False)
    keep = s > rcond * s[..., :1]
    inv_s = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0).astype(x.dtype)
    uhy = jnp.conj(jnp.swapaxes(u, -1, -2)) @ y
    solution = jnp.conj(jnp.swapaxes(vh, -1, -2)) @ (inv_s[..., :, None] * uhy)
    rank = jnp.sum(keep, axis=-1).astype(jnp.int32)
    residuals = jnp.sum(jnp.abs(x @ solution - y) ** 2, axis=-2)
    return solution, residuals, rank, s


def lstsq(x, y, rcond=None, driver=None, name=None):
    """Least-squares solution of `x @ out = y` (minimum norm when `x` is rank-deficient).

    Computed from the SVD for every driver; `driver` only chooses which extra outputs are
    filled, as Paddle's CPU drivers do.

    Args:
      x: a `[..., M, N]` tensor.
      y: a `[..., M, K]` tensor.
      rcond: singular values below `rcond * sigma_max` count as zero (default
        `max(M, N) * 1e-7` for float32, as Paddle).
      driver: None (= 'gelsy'), 'gels', 'gelsy', 'gelsd' or 'gelss'.
      name: ignored.

    Returns:
      `(solution [..., N, K], residuals, rank, singular_values)`:
      residuals `[..., K]` (squared residual norms) when M > N, every matrix has full rank
      and driver is not 'gelsy', else empty; rank `[...]` int32 unless driver is 'gels'
      (empty); singular_values `[..., min(M, N)]` for 'gelsd'/'gelss', else empty.

    Example:
      >>> import pdx
      >>> sol, res, rank, sv = pdx.linalg.lstsq(pdx.to_tensor([[1.0], [1.0]]), pdx.to_tensor([[1.0], [3.0]]))
      >>> sol.round(4).tolist(), rank.tolist()
      ([[2.0]], 1)
    """
    if driver not in (None,) + _DRIVERS:
        raise op_error("linalg.lstsq", f"`driver`={driver!r} is not supported; use None, 'gels', 'gelsy', "
                                       "'gelsd' or 'gelss'")
    driver = driver or "gelsy"
    x = float_input(x, "linalg.lstsq")
    y = float_input(y, "linalg.lstsq", "y")
    check_matrix(x, "linalg.lstsq")
    check_matrix(y, "linalg.lstsq", "y")
    if x.dtype != y.dtype:
        raise TypeError(f"pdx.linalg.lstsq: `x` and `y` must have the same dtype; got {x.dtype} and {y.dtype}")
    m, n = x.shape[-2:]
    if y.shape[-2] != m:
        raise op_error("linalg.lstsq", f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} must have the "
                                       f"same number of rows M")
    x, y = batch_broadcast(x, y, "linalg.lstsq")
    if rcond is None:
        rcond = float(jnp.finfo(x.dtype).eps if x.dtype != jnp.float32 else 1e-7) * max(m, n)
    solution, residuals, rank, s = _lstsq_kernel(x, y, jnp.asarray(rcond, _real_dtype(x.dtype)), driver)
    empty = jnp.zeros((0,), _real_dtype(x.dtype))
    full_rank = m > n and (in_trace() or bool(jnp.all(rank == n)))
    if driver == "gelsy" or not full_rank:
        residuals = empty
    return (solution, residuals, jnp.zeros((0,), jnp.int32) if driver == "gels" else rank,
            s if driver in ("gelsd", "gelss") else empty)
