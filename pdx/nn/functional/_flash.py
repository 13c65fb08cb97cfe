"""Paddle's attention variants beyond scaled_dot_product_attention: packed q/k/v
(flash_attn_qkvpacked) and block-sparse CSR layouts (sparse_attention), on the
pure-JAX attention math (XLA fuses it; the Pallas kernels sit behind
`scaled_dot_product_attention`'s dispatch)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx._random import next_key
from pdx.nn.functional._args import compiled, error, float_array
from pdx.nn.functional._attention import _sdpa_reference

__all__ = ["flash_attn_qkvpacked", "sparse_attention"]


def flash_attn_qkvpacked(qkv, dropout=0.0, causal=False, return_softmax=False, *, fixed_seed_offset=None,
                         rng_name="", training=True, name=None, key=None):
    """Attention over a packed [B, S, H / Hk + 2, Hk, D] tensor: queries, then key, then value.

    Queries are `qkv[:, :, :-2]` flattened to H = (H / Hk) * Hk heads, keys
    `qkv[:, :, -2]`, values `qkv[:, :, -1]` (Paddle's unpacking); with Hk < H
    each key/value head serves H / Hk consecutive query heads.

    Args:
      qkv: [batch, seq_len, num_heads / num_heads_k + 2, num_heads_k, head_dim].
      dropout: dropout rate on the attention weights (when training).
      causal: hide keys after each query.
      return_softmax: also return the attention weights [B, H, S, S].
      fixed_seed_offset: not supported (must be None); pass `key`.
      rng_name: ignored.
      training: apply dropout.
      name: ignored (Paddle compatibility).
      key: jax PRNG key for dropout; from the global generator if None, required under jit
        (pdx-only keyword).

    Returns:
      (out [B, S, H, D], softmax or None).

    Example:
      >>> out, _ = F.flash_attn_qkvpacked(jnp.ones((2, 5, 3, 2, 8)), causal=True)
      >>> out.shape
      (2, 5, 2, 8)
    """
    op = "flash_attn_qkvpacked"
    if fixed_seed_offset is not None:
        raise error(op, "fixed_seed_offset is not supported; pass a jax PRNG key as key=")
    if not 0.0 <= dropout <= 1.0:
        raise error(op, f"dropout must be in [0, 1]; got dropout={dropout}")
    rate = float(dropout) if training else 0.0
    if rate > 0.0:
        key = next_key(key, op=op)
    return _qkvpacked(qkv, key, rate, bool(causal), bool(return_softmax))


@compiled("qkv", "key")
def _qkvpacked(qkv, key, rate, causal, return_softmax):
    op = "flash_attn_qkvpacked"
    qkv = float_array(qkv, op=op, name="qkv")
    if qkv.ndim != 5 or qkv.shape[2] < 3:
        raise error(op, f"qkv must be 5-D [batch, seq_len, num_heads / num_heads_k + 2, num_heads_k, head_dim]; "
                        f"got qkv.shape={tuple(qkv.shape)}")
    b, s, _, hk, d = qkv.shape
    query = qkv[:, :, :-2].reshape(b, s, -1, d)
    k, v = qkv[:, :, -2], qkv[:, :, -1]
    scale = 1.0 / d ** 0.5
    out = _sdpa_reference(query, k, v, is_causal=causal, scale=scale, dropout_p=rate, dropout_key=key)
    if not return_softmax:
        return out, None
    groups = query.shape[2] // hk
    logits = jnp.einsum("bqhd,bkhd->bhqk", query * scale, jnp.repeat(k, groups, axis=2))
    if causal:
        logits = jnp.where(jnp.tril(jnp.ones((s, s), bool)), logits, -jnp.inf)
    return out, jax.nn.softmax(logits, axis=-1)


@compiled("query", "key", "value", "sparse_csr_offset", "sparse_csr_columns", "key_padding_mask", "attn_mask")
def sparse_attention(query, key, value, sparse_csr_offset, sparse_csr_columns, key_padding_mask=None, attn_mask=None,
                     name=None):
    """softmax(q k^T / sqrt(d)) v over the positions a CSR layout keeps, per batch and head.

    Row i of head (b, h) attends to the columns
    `sparse_csr_columns[b, h, offset[b, h, i]:offset[b, h, i + 1]]`; a 0 in
    `key_padding_mask` [B, S] or `attn_mask` [S, S] masks a position too. pdx
    builds the dense mask and runs dense attention (Paddle's CUDA kernel skips
    the masked blocks); a row with no visible key gives zeros.

    Args:
      query, key, value: [batch, num_heads, seq_len, head_dim].
      sparse_csr_offset: [batch, num_heads, seq_len + 1] int row offsets.
      sparse_csr_columns: [batch, num_heads, nnz] int column indices.
      key_padding_mask: optional [batch, seq_len]; 0 masks a key.
      attn_mask: optional [seq_len, seq_len]; 0 masks a (query, key) pair.
      name: ignored (Paddle compatibility).

    Returns:
      [batch, num_heads, seq_len, head_dim].

    Example:
      >>> q = jnp.ones((1, 1, 2, 4))
      >>> F.sparse_attention(q, q, q, jnp.array([[[0, 1, 3]]]), jnp.array([[[0, 0, 1]]])).shape
      (1, 1, 2, 4)
    """
    op = "sparse_attention"
    q = float_array(query, op=op, name="query")
    k = float_array(key, op=op, name="key").astype(q.dtype)
    v = float_array(value, op=op, name="value").astype(q.dtype)
    if q.ndim != 4 or k.shape != q.shape or v.shape[:3] != q.shape[:3]:
        raise error(op, f"query, key and value must be [batch, num_heads, seq_len, head_dim] alike; got "
                        f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    b, h, s, d = q.shape
    offset = jnp.asarray(sparse_csr_offset)
    columns = jnp.asarray(sparse_csr_columns)
    if offset.shape != (b, h, s + 1) or columns.ndim != 3 or columns.shape[:2] != (b, h):
        raise error(op, f"sparse_csr_offset must be [batch, num_heads, seq_len + 1] = {(b, h, s + 1)} and "
                        f"sparse_csr_columns [batch, num_heads, nnz]; got {tuple(offset.shape)} and "
                        f"{tuple(columns.shape)}")
    nnz = columns.shape[2]
    slot = jnp.arange(nnz)
    # Row of each stored entry: the last row whose offset is <= the entry's position.
    rows = jnp.sum(offset[..., 1:, None] <= slot, axis=-2)  # (B, H, nnz)
    stored = slot < offset[..., -1:]  # entries past the last offset are padding
    bi = jnp.arange(b)[:, None, None]
    hi = jnp.arange(h)[None, :, None]
    visible = jnp.zeros((b, h, s, s), bool).at[bi, hi, jnp.clip(rows, 0, s - 1), columns].max(stored, mode="drop")
    if key_padding_mask is not None:
        visible = visible & (jnp.asarray(key_padding_mask) != 0)[:, None, None, :]
    if attn_mask is not None:
        visible = visible & (jnp.asarray(attn_mask) != 0)[None, None]
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.asarray(d, q.dtype))
    logits = jnp.where(visible, logits, -jnp.inf)
    weights = jax.nn.softmax(logits, axis=-1)
    weights = jnp.where(visible.any(-1, keepdims=True), weights, 0.0)
    return jnp.einsum("bhqk,bhkd->bhqd", weights, v)
