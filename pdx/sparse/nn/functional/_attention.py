"""Sparse-pattern attention (Paddle's `paddle.sparse.nn.functional.attention`)."""

from __future__ import annotations

import jax.numpy as jnp

from pdx._args import as_array, op_error
from pdx.sparse._binary import _coo_coords, matmul
from pdx.sparse._core import BCOO, as_coo, require_sparse
from pdx.sparse.nn.functional._activation import softmax

__all__ = ["attention"]


def attention(query, key, value, sparse_mask, key_padding_mask=None, attn_mask=None, name=None):
    """`softmax(Q K^T / sqrt(d)) V` with scores computed only at the stored positions of `sparse_mask`.

    Args:
      query, key, value: dense `[batch, heads, seq_len, head_dim]`.
      sparse_mask: sparse (CSR, as in Paddle, or COO) `[batch * heads, seq_len, seq_len]`;
        its stored positions are the scores computed.
      key_padding_mask: optional `[batch, seq_len]`; keys where it is 0 are masked out.
      attn_mask: optional `[seq_len, seq_len]`; positions where it is 0 are masked out.

    Returns:
      Dense `[batch, heads, seq_len, head_dim]`; rows with no stored position are 0.
      (Paddle runs this on CUDA only.)

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> q = jnp.ones((1, 1, 2, 4))
        >>> mask = pdx.sparse.to_sparse_csr(jnp.ones((1, 2, 2)))
        >>> pdx.sparse.nn.functional.attention(q, q, q, mask).shape
        (1, 1, 2, 4)
    """
    op = "sparse.nn.functional.attention"
    q, k, v = (as_array(t, name=n, op=op) for t, n in ((query, "query"), (key, "key"), (value, "value")))
    if q.ndim != 4 or k.shape != q.shape or v.shape[:3] != q.shape[:3]:
        raise op_error(op, f"`query`, `key`, `value` must be [batch, heads, seq_len, head_dim] with matching shapes; "
                           f"got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
    b, h, s, d = q.shape
    require_sparse(sparse_mask, "nn.functional.attention", "sparse_mask")
    if tuple(sparse_mask.shape) != (b * h, s, s):
        raise op_error(op, f"`sparse_mask` must have shape [batch * heads, seq_len, seq_len] = {[b * h, s, s]}; "
                           f"got {list(sparse_mask.shape)}")
    m = as_coo(sparse_mask, "nn.functional.attention")
    bh, r, c = _coo_coords(m)
    q3, k3 = q.reshape(b * h, s, d), k.reshape(b * h, s, d)
    scores = (q3[bh, r] * k3[bh, c]).sum(-1) / jnp.sqrt(jnp.asarray(d, q.dtype))
    keep = jnp.ones(scores.shape, bool)
    if key_padding_mask is not None:
        kp = as_array(key_padding_mask, name="key_padding_mask", op=op)
        if kp.shape != (b, s):
            raise op_error(op, f"`key_padding_mask` must be [batch, seq_len] = {[b, s]}; got {list(kp.shape)}")
        keep = keep & (kp[bh // h, c] != 0)
    if attn_mask is not None:
        am = as_array(attn_mask, name="attn_mask", op=op)
        if am.shape != (s, s):
            raise op_error(op, f"`attn_mask` must be [seq_len, seq_len] = {[s, s]}; got {list(am.shape)}")
        keep = keep & (am[r, c] != 0)
    scores = jnp.where(keep, scores, -jnp.inf)
    probs = softmax(BCOO((scores, m.indices), shape=m.shape), axis=-1)
    return matmul(probs, v.reshape(b * h, s, -1)).reshape(b, h, s, -1)
