"""Scaled dot-product attention in Paddle 3's [batch, seq_len, num_heads, head_dim] layout.

`scaled_dot_product_attention` validates and normalizes its arguments, then
calls `_sdpa_reference`, the pure-JAX definition, or, when the pdx.kernels
dispatch picks one (a GPU, a CPU process with native kernels and no mask, or
`pdx.kernels.use_impl("pallas")`), the fused `pdx.kernels.flash_attention`
kernel, which matches the reference forward and backward. The kernel takes
calls without dropout, with equal query/value head dims and with no mask or a
float (additive) mask; the others always run the reference.

Semantics (as Paddle's math backend): logits = (q * scale) @ k^T with
scale = 1 / sqrt(head_dim) by default; a bool mask keeps True positions (False
becomes -inf, so a fully masked row gives NaN as in Paddle); a float mask is
added to the logits; is_causal hides keys after each query position (top-left
aligned, key j visible to query i iff j <= i); grouped-query attention shares
each key/value head among num_heads_q / num_heads_kv consecutive query heads.
Unlike Paddle's CPU math backend, which drops `attn_mask` when is_causal is
set, pdx applies both (as Paddle's GPU flash backend does).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from pdx._random import next_key
from pdx import kernels as K
from pdx.nn.functional._args import array, compiled, error

__all__ = ["scaled_dot_product_attention"]


def _sdpa_reference(query, key, value, *, mask=None, is_causal=False, scale, dropout_p=0.0, dropout_key=None):
    """Pure-JAX attention over [B, S, H, D] inputs; the definition kernels must match.

    Args:
      query: (B, Sq, Hq, D).
      key: (B, Sk, Hk, D), Hq divisible by Hk.
      value: (B, Sk, Hk, Dv).
      mask: None, or bool (True = attend) / additive float, broadcastable to
        (B, Hq, Sq, Sk) with a head dim of 1 or Hq.
      is_causal: hide keys j > i from query i.
      scale: logit scale.
      dropout_p: attention-weight dropout rate (upscale_in_train); needs dropout_key if > 0.
      dropout_key: jax PRNG key for the dropout mask.

    Returns:
      (B, Sq, Hq, Dv) in query's dtype.
    """
    b, sq, hq, d = query.shape
    sk, hk = key.shape[1], key.shape[2]
    groups = hq // hk
    # Heads first, so both products are batched matmuls in the layout CPU and GPU
    # libraries take directly (batch dims leading, contracting the last or second-last).
    q = (query * jnp.asarray(scale, query.dtype)).reshape(b, sq, hk, groups, d).transpose(0, 2, 3, 1, 4)
    k_heads, v_heads = key.transpose(0, 2, 1, 3), value.transpose(0, 2, 1, 3)  # (B, Hk, Sk, D)
    # (B, Hk, G, Sq, Sk) logits in float32 at least, so low-precision inputs stay stable.
    logits = jnp.einsum("bhgqd,bhkd->bhgqk", q, k_heads,
                        preferred_element_type=jnp.promote_types(query.dtype, jnp.float32))
    if mask is not None:
        m = mask.reshape(mask.shape[0], hk if mask.shape[1] == hq else 1, groups if mask.shape[1] == hq else 1,
                         *mask.shape[2:])
        if m.dtype == jnp.bool_:
            logits = jnp.where(m, logits, -jnp.inf)
        else:
            logits = logits + m.astype(logits.dtype)
    if is_causal:
        visible = jnp.arange(sk)[None, :] <= jnp.arange(sq)[:, None]
        logits = jnp.where(visible, logits, -jnp.inf)
    weights = jax.nn.softmax(logits, axis=-1)
    if dropout_p > 0.0:
        keep = jax.random.bernoulli(dropout_key, 1.0 - dropout_p, weights.shape)
        weights = jnp.where(keep, weights / (1.0 - dropout_p), 0.0)
    out = jnp.einsum("bhgqk,bhkd->bhgqd", weights.astype(value.dtype), v_heads,
                     preferred_element_type=jnp.promote_types(value.dtype, jnp.float32))
    return out.transpose(0, 3, 1, 2, 4).reshape(b, sq, hq, value.shape[-1]).astype(query.dtype)


def _attention_mask(attn_mask, b, hq, sq, sk):
    """Paddle's accepted mask ranks -> a 4-D (B|1, Hq|1, Sq, Sk) mask, validated."""
    op = "scaled_dot_product_attention"
    mask = array(attn_mask, op=op, name="attn_mask")
    if mask.ndim == 2:
        mask = mask[None, None]
    elif mask.ndim == 3:  # (B, Sq, Sk), as Paddle's flash backend reads it
        mask = mask[:, None]
    elif mask.ndim != 4:
        raise error(op, f"attn_mask must be 2-D, 3-D or 4-D; got attn_mask.shape={tuple(attn_mask.shape)}")
    if mask.shape[0] not in (1, b) or mask.shape[1] not in (1, hq) or mask.shape[2] not in (1, sq) \
            or mask.shape[3] not in (1, sk):
        raise error(op, f"attn_mask.shape={tuple(attn_mask.shape)} does not broadcast to "
                        f"[batch, num_heads, seq_len_q, seq_len_k] = {(b, hq, sq, sk)}")
    return jnp.broadcast_to(mask, (mask.shape[0], mask.shape[1], sq, sk))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, training=True,
                                 backend=None, scale=None, enable_gqa=True, name=None, *, key_rng=None):
    """softmax(q k^T * scale + mask) v over [batch, seq_len, num_heads, head_dim] tensors.

    Args:
      query: [B, Sq, Hq, D] (or unbatched [Sq, Hq, D]).
      key: [B, Sk, Hk, D]; Hk divides Hq (grouped-query attention) when enable_gqa.
      value: [B, Sk, Hk, Dv].
      attn_mask: optional bool (True = keep) or additive float mask broadcastable to
        [B, Hq, Sq, Sk]; 2-D [Sq, Sk] and 3-D [B, Sq, Sk] masks are accepted.
      dropout_p: dropout rate on the attention weights (only when training).
      is_causal: causal masking (key j visible to query i iff j <= i).
      training: apply dropout.
      backend: ignored (pdx picks the implementation).
      scale: logit scale; None (or 0) means 1 / sqrt(head_dim).
      enable_gqa: allow fewer key/value heads than query heads.
      name: ignored.
      key_rng: jax PRNG key for attention dropout (the argument `key` is the key
        tensor, as in Paddle); from the global generator if None, required under jit.

    Returns:
      [B, Sq, Hq, Dv] (unbatched in, unbatched out).

    Example:
      >>> q = jnp.ones((2, 5, 4, 8))
      >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
      (2, 5, 4, 8)
    """
    op = "scaled_dot_product_attention"
    if not 0.0 <= dropout_p <= 1.0:
        raise error(op, f"dropout_p must be in [0, 1]; got dropout_p={dropout_p}")
    if training and 0.0 < dropout_p < 1.0:
        key_rng = next_key(key_rng, op=op)
    return _sdpa(query, key, value, attn_mask, dropout_p if training else 0.0, is_causal, scale, enable_gqa, key_rng,
                 K.get_impl() or "auto")


@compiled("query", "key", "value", "attn_mask", "key_rng")
def _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, key_rng, impl):
    """Validation, layout handling and the call into `_sdpa_reference` (one compiled program)."""
    op = "scaled_dot_product_attention"
    query = array(query, op=op, name="query")
    key = array(key, op=op, name="key")
    value = array(value, op=op, name="value")
    batched = query.ndim == 4
    if not batched:
        if query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
            raise error(op, f"query/key/value must all be 4-D [batch, seq_len, num_heads, head_dim] (or 3-D "
                            f"unbatched); got {tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
        query, key, value = query[None], key[None], value[None]
    if key.ndim != 4 or value.ndim != 4:
        raise error(op, f"key and value must be 4-D like query; got key.shape={tuple(key.shape)}, "
                        f"value.shape={tuple(value.shape)}")
    b, sq, hq, d = query.shape
    _, sk, hk, dk = key.shape
    if key.shape[0] != b or value.shape[0] != b:
        raise error(op, f"batch sizes differ: query {b}, key {key.shape[0]}, value {value.shape[0]}")
    if dk != d:
        raise error(op, f"query.shape={tuple(query.shape)} and key.shape={tuple(key.shape)} must agree on head_dim")
    if value.shape[1] != sk or value.shape[2] != hk:
        raise error(op, f"value.shape={tuple(value.shape)} must match key.shape={tuple(key.shape)} in seq_len "
                        "and num_heads")
    if enable_gqa:
        if hk == 0 or hq % hk:
            raise error(op, f"query's num_heads={hq} must be a multiple of key/value's num_heads={hk} for "
                            "grouped-query attention")
    elif hq != hk:
        raise error(op, f"query has {hq} heads but key/value have {hk}; pass enable_gqa=True for grouped-query "
                        "attention")
    mask = None if attn_mask is None else _attention_mask(attn_mask, b, hq, sq, sk)
    scale = scale or (1.0 / math.sqrt(d) if d else 1.0)
    fused = dropout_p == 0.0 and value.shape[-1] == d and (mask is None or mask.dtype != jnp.bool_) \
        and query.dtype == key.dtype == value.dtype
    args = (query, key, value, mask, is_causal, scale, dropout_p, key_rng, impl)
    if dropout_p >= 1.0:
        out = jnp.zeros((b, sq, hq, value.shape[-1]), query.dtype)
    elif fused:
        out = _ATTENTION(impl, *args)
    else:
        out = _attention_reference(*args)
    return out if batched else out[0]


def _attention_kernel(query, key, value, mask, is_causal, scale, dropout_p, key_rng, impl):
    if K.flash_attention_unfit(query) is not None:  # a head_dim the GPU kernels do not take
        return _attention_reference(query, key, value, mask, is_causal, scale, dropout_p, key_rng, impl)
    # pdx.kernels.flash_attention picks cuDNN or its Pallas kernel for `impl` itself.
    return K.flash_attention(query, key, value, causal=is_causal, bias=mask, scale=scale, impl=impl)


def _attention_reference(query, key, value, mask, is_causal, scale, dropout_p, key_rng, impl):
    return _sdpa_reference(query, key, value, mask=mask, is_causal=is_causal, scale=scale, dropout_p=dropout_p,
                           dropout_key=key_rng)


def _attention_kernel_args(query, key, value, mask, is_causal, scale, dropout_p, key_rng, impl):
    # What pdx.kernels.flash_attention passes to its op (no segments; the mask as the bias).
    return (query, key, value, None, None, mask), {"causal": is_causal, "scale": scale, "block_sizes": None}


def _attention_delegated(impl, query, key, value, mask, is_causal, scale, dropout_p, key_rng, _):
    # A registered backend's call (only where its rules take it: they see the mask as the bias).
    return K.flash_attention(query, key, value, causal=is_causal, bias=mask, scale=scale, impl=impl)


# The implementations registered into pdx.kernels' flash_attention beyond these (an
# optional backend's) serve this op too, through _attention_delegated.
_ATTENTION = K.Op("flash_attention", {"cudnn": _attention_kernel, "pallas": _attention_kernel,
                                      "xla": _attention_reference},
                  delegate=K.Delegate(K.OPS["flash_attention"], _attention_kernel_args, _attention_delegated))
