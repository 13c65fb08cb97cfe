"""Paddle's flash-attention entry points that take packed inputs, on the pure-JAX
attention of `_attention` (XLA fuses it; the Pallas kernels sit behind
`scaled_dot_product_attention`'s dispatch)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx._random import next_key
from pdx.nn.functional._args import compiled, error, float_array
from pdx.nn.functional._attention import _sdpa_reference

__all__ = ["flash_attn_qkvpacked"]


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
