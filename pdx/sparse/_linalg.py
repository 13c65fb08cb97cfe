"""pca_lowrank: principal components of a sparse matrix (Paddle's `paddle.sparse.pca_lowrank`)."""

from __future__ import annotations

import jax.numpy as jnp

from pdx._args import op_error
from pdx.sparse._core import as_coo, require_sparse

__all__ = ["pca_lowrank"]


def pca_lowrank(x, q=None, center=True, niter=2, name=None):
    """`(U, S, V)` of the (column-centered) sparse matrix `x` `[N, M]`, truncated to rank `q`.

    `x ≈ U @ diag(S) @ V.T` after centering. Paddle runs a randomized range
    finder (`niter` power iterations, CUDA only); pdx computes the exact
    truncated SVD of the densified matrix, which the randomized method
    approximates, so `niter` is accepted and unused and no RNG is needed.
    Signs of singular vector pairs are arbitrary, as with any SVD.

    Args:
      x: a sparse (COO or CSR) `[N, M]` matrix.
      q: rank, default `min(6, N, M)`.
      center: subtract the column means first.

    Returns:
      U `[N, q]`, S `[q]`, V `[M, q]`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> U, S, V = pdx.sparse.pca_lowrank(pdx.sparse.to_sparse_coo(jnp.eye(3) * 2.0), q=2, center=False)
        >>> S.tolist()
        [2.0, 2.0]
    """
    op = "pca_lowrank"
    require_sparse(x, op)
    if x.ndim != 2:
        raise op_error(f"sparse.{op}", f"`x` must be a 2-D [N, M] matrix; got shape {list(x.shape)}")
    n, m = x.shape
    q = min(6, n, m) if q is None else q
    if not isinstance(q, int) or not 0 < q <= min(n, m):
        raise op_error(f"sparse.{op}", f"`q` must be an int in [1, min(N, M)={min(n, m)}]; got {q!r}")
    a = as_coo(x, op).todense()
    if center:
        a = a - a.mean(axis=0, keepdims=True)
    u, s, vt = jnp.linalg.svd(a, full_matrices=False)
    return u[:, :q], s[:q], vt[:q].T
