"""Paddle's attention variants beyond scaled_dot_product_attention: packed q/k/v
(flash_attn_qkvpacked), packed variable-length batches (flash_attention_v3_varlen),
FlashMask's column-wise row ranges (flashmask_attention)
and block-sparse CSR layouts (sparse_attention), all as masked dense attention on the
pure-JAX math (XLA fuses it; the Pallas kernels sit behind
`scaled_dot_product_attention`'s dispatch). A query row with no visible key gives zeros."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx._random import next_key
from pdx.nn.functional._args import compiled, error, float_array
from pdx.nn.functional._attention import _sdpa_reference

__all__ = ["flash_attention_v3_varlen", "flash_attn_qkvpacked", "flash_attn_varlen_qkvpacked", "flashmask_attention",
           "sparse_attention"]


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


def _flashmask_visible(startend, causal, window_size, sq, sk, hq):
    """Dense [B, Hq, Sq, Sk] visibility from FlashMask's per-column row ranges and the window."""
    rows = jnp.arange(sq)[:, None]
    cols = jnp.arange(sk)[None, :]
    visible = jnp.ones((sq, sk), bool)
    if causal:
        visible = cols <= rows
    if window_size is not None:
        left, right = (window_size, window_size) if isinstance(window_size, int) else tuple(window_size)
        visible = visible & (cols >= rows - left)
        if not causal:
            visible = visible & (cols <= rows + right)
    visible = visible[None, None]
    if startend is None:
        return visible
    se = jnp.asarray(startend)
    bounds = [se[..., i][:, :, None, :] for i in range(se.shape[-1])]  # each (B, Hm, 1, Sk)
    r = rows[None, None]
    if se.shape[-1] == 1:
        masked = r >= bounds[0]
    elif se.shape[-1] == 2 and causal:
        masked = (r >= bounds[0]) & (r < bounds[1])
    elif se.shape[-1] == 2:
        masked = (r >= bounds[0]) | (r < bounds[1])
    else:
        masked = ((r >= bounds[0]) & (r < bounds[1])) | ((r >= bounds[2]) & (r < bounds[3]))
    if masked.shape[1] not in (1, hq):
        masked = jnp.repeat(masked, hq // masked.shape[1], axis=1)
    return visible & ~masked


def flashmask_attention(query, key, value, startend_row_indices=None, *, dropout=0.0, causal=False,
                        window_size=None, return_softmax_lse=False, return_seed_offset=False,
                        fixed_seed_offset=None, rng_name="", training=True, name=None, softmax_scale=None,
                        block_mask=None, key_rng=None):
    """Attention with FlashMask's column-wise sparse mask (Paddle's `flashmask_attention`).

    For key column j, `startend_row_indices[b, h, j]` masks query rows:
    causal with 1 value: rows >= s0; causal with 2: s0 <= row < s1; non-causal
    with 2: rows >= s0 or rows < s1; non-causal with 4: s0 <= row < s1 or
    s2 <= row < s3. `causal` also hides keys after the query; `window_size`
    keeps keys within [i - left, i (+ right)]. pdx builds the dense mask.

    Args:
      query: [B, Sq, H, D]; key, value: [B, Sk, Hk, D] (Hk divides H: grouped-query attention).
      startend_row_indices: None or int [B, 1 or Hk, Sk, 1 | 2 | 4].
      dropout: dropout rate on the attention weights (when training).
      causal: causal masking.
      window_size: None, an int or (left, right) sliding-window sizes.
      return_softmax_lse: also return the log-sum-exp of the logits [B, H, Sq].
      return_seed_offset, fixed_seed_offset: not supported (Paddle's CUDA RNG state); pass key_rng.
      rng_name: ignored.
      training: apply dropout.
      name: ignored (Paddle compatibility).
      softmax_scale: logit scale; default 1 / sqrt(D).
      block_mask: optional int [B, H, ceil(Sq / 128), ceil(Sk / 128)]; 0 masks a 128 x 128 block.
      key_rng: jax PRNG key for dropout (pdx-only keyword; `key` is the key tensor).

    Returns:
      [B, Sq, H, D], and the log-sum-exp when return_softmax_lse.

    Example:
      >>> q = jnp.ones((1, 4, 2, 8))
      >>> F.flashmask_attention(q, q, q, jnp.full((1, 1, 4, 1), 4, jnp.int32), causal=True).shape
      (1, 4, 2, 8)
    """
    op = "flashmask_attention"
    if return_seed_offset or fixed_seed_offset is not None:
        raise error(op, "return_seed_offset / fixed_seed_offset are not supported; pass a jax PRNG key as key_rng=")
    if not 0.0 <= dropout <= 1.0:
        raise error(op, f"dropout must be in [0, 1]; got dropout={dropout}")
    rate = float(dropout) if training else 0.0
    if rate > 0.0:
        key_rng = next_key(key_rng, op=op)
    window = list(window_size) if isinstance(window_size, (list, tuple)) else window_size
    return _flashmask(query, key, value, startend_row_indices, block_mask, key_rng, rate, bool(causal),
                      tuple(window) if isinstance(window, list) else window, bool(return_softmax_lse), softmax_scale)


@compiled("query", "key", "value", "startend", "block_mask", "rng")
def _flashmask(query, key, value, startend, block_mask, rng, rate, causal, window_size, return_lse, scale):
    op = "flashmask_attention"
    q = float_array(query, op=op, name="query")
    k = float_array(key, op=op, name="key").astype(q.dtype)
    v = float_array(value, op=op, name="value").astype(q.dtype)
    if q.ndim != 4 or k.ndim != 4 or v.shape != k.shape or k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3] \
            or q.shape[2] % k.shape[2]:
        raise error(op, f"need query [B, Sq, H, D] and key/value [B, Sk, Hk, D] with Hk dividing H; got "
                        f"query.shape={tuple(q.shape)}, key.shape={tuple(k.shape)}, value.shape={tuple(v.shape)}")
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    if startend is not None:
        se_shape = tuple(jnp.shape(startend))
        width_ok = se_shape[-1:] in (((1,), (2,)) if causal else ((2,), (4,)))
        if len(se_shape) != 4 or se_shape[0] != b or se_shape[1] not in (1, hk) or se_shape[2] != sk or not width_ok:
            raise error(op, f"startend_row_indices.shape={se_shape} must be [B, 1 or {hk}, {sk}, "
                            f"{'1 or 2' if causal else '2 or 4'}] (causal={causal})")
    visible = _flashmask_visible(startend, causal, window_size, sq, sk, hq)
    if block_mask is not None:
        blocks = jnp.asarray(block_mask) != 0
        blocks = jnp.repeat(jnp.repeat(blocks, 128, axis=2)[:, :, :sq], 128, axis=3)[:, :, :, :sk]
        visible = visible & blocks
    visible = jnp.broadcast_to(visible, (b, hq, sq, sk))
    groups = hq // hk
    scale = 1.0 / d ** 0.5 if not scale else scale
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, jnp.repeat(k, groups, axis=2),
                        preferred_element_type=jnp.promote_types(q.dtype, jnp.float32)) * scale
    logits = jnp.where(visible, logits, -jnp.inf)
    any_visible = visible.any(-1, keepdims=True)
    lse = jax.nn.logsumexp(jnp.where(any_visible, logits, 0.0), axis=-1)
    weights = jnp.where(any_visible, jnp.exp(logits - lse[..., None]), 0.0)
    if rate > 0.0:
        keep = jax.random.bernoulli(rng, 1.0 - rate, weights.shape)
        weights = jnp.where(keep, weights / (1.0 - rate), 0.0)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights.astype(v.dtype), jnp.repeat(v, groups, axis=2)).astype(q.dtype)
    return (out, lse) if return_lse else out


def _segments(cu, total, used):
    """Per token: its sequence id (-1 outside every sequence) and position in the sequence."""
    tokens = jnp.arange(total)
    seg = jnp.sum(cu[None, 1:] <= tokens[:, None], axis=1)
    inside = tokens < cu[-1]
    seg_c = jnp.clip(seg, 0, cu.shape[0] - 2)
    pos = tokens - cu[seg_c]
    if used is not None:
        inside = inside & (pos < jnp.asarray(used)[seg_c])
    return jnp.where(inside, seg_c, -1), pos, seg_c


def flash_attention_v3_varlen(query, key, value, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                              seqused_q=None, seqused_k=None, softmax_scale=None, causal=False, qv=None,
                              q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), softcap=0.0,
                              num_splits=1, pack_gqa=None, sm_margin=0):
    """Attention over variable-length sequences packed along the token axis (FlashAttention-3 varlen).

    Sequence s holds query tokens [cu_seqlens_q[s], cu_seqlens_q[s + 1]) and key
    tokens [cu_seqlens_k[s], cu_seqlens_k[s + 1]); tokens attend only within their
    sequence. `causal` aligns the sequences' ends (query i sees key j iff
    j <= i + len_k - len_q), `window_size=(left, right)` (-1: unbounded) limits
    keys around that diagonal, `softcap > 0` caps logits as softcap * tanh(l / softcap).
    pdx builds the dense [tokens_q, tokens_k] mask; tokens outside every
    sequence (or past `seqused_*`) get zeros.

    Args:
      query: [tokens_q, H, D]; key, value: [tokens_k, Hk, D] (Hk divides H).
      cu_seqlens_q, cu_seqlens_k: [batch + 1] cumulative lengths.
      max_seqlen_q, max_seqlen_k: accepted (Paddle's kernel sizing; not needed here).
      seqused_q, seqused_k: optional [batch] tokens actually used per sequence.
      softmax_scale: logit scale; default 1 / sqrt(D).
      causal: bottom-right aligned causal mask.
      qv, q_descale, k_descale, v_descale: not supported (must be None).
      window_size: (left, right) sliding window; -1 means unbounded.
      softcap: logit soft cap (0 disables).
      num_splits, pack_gqa, sm_margin: kernel tuning; ignored.

    Returns:
      (out [tokens_q, H, D], softmax_lse [H, tokens_q]).

    Example:
      >>> q = jnp.ones((5, 2, 8))
      >>> out, lse = F.flash_attention_v3_varlen(q, q, q, jnp.array([0, 2, 5]), jnp.array([0, 2, 5]), 3, 3,
      ...                                        causal=True)
      >>> out.shape, lse.shape
      ((5, 2, 8), (2, 5))
    """
    op = "flash_attention_v3_varlen"
    if any(a is not None for a in (qv, q_descale, k_descale, v_descale)):
        raise error(op, "qv and the FP8 descale factors are not supported; pass None")
    if not isinstance(window_size, (list, tuple)) or len(window_size) != 2:
        raise error(op, f"window_size must be a (left, right) pair (-1 = unbounded); got {window_size!r}")
    return _varlen(query, key, value, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, softmax_scale, bool(causal),
                   tuple(int(w) for w in window_size), float(softcap))


@compiled("query", "key", "value", "cu_q", "cu_k", "used_q", "used_k")
def _varlen(query, key, value, cu_q, cu_k, used_q, used_k, scale, causal, window, softcap):
    op = "flash_attention_v3_varlen"
    q = float_array(query, op=op, name="query")
    k = float_array(key, op=op, name="key").astype(q.dtype)
    v = float_array(value, op=op, name="value").astype(q.dtype)
    if q.ndim != 3 or k.ndim != 3 or v.shape != k.shape or k.shape[2] != q.shape[2] or q.shape[1] % k.shape[1]:
        raise error(op, f"need query [tokens_q, H, D] and key/value [tokens_k, Hk, D] with Hk dividing H; got "
                        f"query.shape={tuple(q.shape)}, key.shape={tuple(k.shape)}, value.shape={tuple(v.shape)}")
    cu_q, cu_k = jnp.asarray(cu_q), jnp.asarray(cu_k)
    if cu_q.ndim != 1 or cu_q.shape != cu_k.shape or cu_q.shape[0] < 2:
        raise error(op, f"cu_seqlens_q and cu_seqlens_k must both be [batch + 1]; got {tuple(cu_q.shape)} and "
                        f"{tuple(cu_k.shape)}")
    tq, h, d = q.shape
    tk, hk = k.shape[0], k.shape[1]
    seg_q, pos_q, sq = _segments(cu_q, tq, used_q)
    seg_k, pos_k, _ = _segments(cu_k, tk, used_k)
    visible = (seg_q[:, None] == seg_k[None, :]) & (seg_q[:, None] >= 0)
    len_q = (cu_q[1:] - cu_q[:-1])[sq] if used_q is None else jnp.asarray(used_q)[sq]
    len_k = (cu_k[1:] - cu_k[:-1])[sq] if used_k is None else jnp.asarray(used_k)[sq]
    diag = pos_q + len_k - len_q  # the key position aligned with each query (bottom-right)
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    if right >= 0:
        visible = visible & (pos_k[None, :] <= diag[:, None] + right)
    if left >= 0:
        visible = visible & (pos_k[None, :] >= diag[:, None] - left)
    groups = h // hk
    scale = scale if scale else 1.0 / d ** 0.5
    logits = jnp.einsum("qhd,khd->hqk", q, jnp.repeat(k, groups, axis=1),
                        preferred_element_type=jnp.promote_types(q.dtype, jnp.float32)) * scale
    if softcap > 0:
        logits = softcap * jnp.tanh(logits / softcap)
    logits = jnp.where(visible[None], logits, -jnp.inf)
    any_visible = visible.any(-1)[None, :, None]
    lse = jax.nn.logsumexp(jnp.where(any_visible, logits, 0.0), axis=-1)
    weights = jnp.where(any_visible, jnp.exp(logits - lse[..., None]), 0.0)
    out = jnp.einsum("hqk,khd->qhd", weights.astype(v.dtype), jnp.repeat(v, groups, axis=1)).astype(q.dtype)
    return out, jnp.where(any_visible[..., 0], lse, -jnp.inf)


def flash_attn_varlen_qkvpacked(qkv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, dropout=0.0,
                                causal=False, return_softmax=False, fixed_seed_offset=None, rng_name="",
                                varlen_padded=True, training=True, name=None):
    """Variable-length attention over packed [tokens, H / Hk + 2, Hk, D] q/k/v (Paddle's layout).

    With `varlen_padded=True` (Paddle's default) sequence s occupies rows
    [s * max_seqlen_q, s * max_seqlen_q + len_s) with len_s = cu_seqlens_q[s + 1] -
    cu_seqlens_q[s], and the padding rows come out as zeros; with False the
    sequences are contiguous at the cu_seqlens offsets. `causal` aligns the
    sequences' ends, as `flash_attention_v3_varlen`.

    Args:
      qkv: [tokens, num_heads / num_heads_k + 2, num_heads_k, head_dim].
      cu_seqlens_q, cu_seqlens_k: [batch + 1] cumulative lengths.
      max_seqlen_q, max_seqlen_k: the padded length of each sequence (used when varlen_padded).
      scale: logit scale.
      dropout: must be 0 (dropout is not supported here; use scaled_dot_product_attention).
      causal: bottom-right aligned causal mask.
      return_softmax: not supported (must be False).
      fixed_seed_offset, rng_name: not supported / ignored.
      varlen_padded: the layout (see above).
      training: accepted (dropout is 0).
      name: ignored (Paddle compatibility).

    Returns:
      (out [tokens, H, D], None).

    Example:
      >>> qkv = jnp.ones((6, 3, 2, 8))
      >>> out, _ = F.flash_attn_varlen_qkvpacked(qkv, jnp.array([0, 2, 5]), jnp.array([0, 2, 5]), 3, 3, 0.35)
      >>> out.shape
      (6, 2, 8)
    """
    op = "flash_attn_varlen_qkvpacked"
    if return_softmax or fixed_seed_offset is not None or (training and dropout):
        raise error(op, "return_softmax, fixed_seed_offset and dropout > 0 are not supported")
    qkv = float_array(qkv, op=op, name="qkv")
    if qkv.ndim != 4 or qkv.shape[1] < 3:
        raise error(op, f"qkv must be 4-D [tokens, num_heads / num_heads_k + 2, num_heads_k, head_dim]; "
                        f"got qkv.shape={tuple(qkv.shape)}")
    query = qkv[:, :-2].reshape(qkv.shape[0], -1, qkv.shape[-1])
    key, value = qkv[:, -2], qkv[:, -1]
    cu_q, cu_k = jnp.asarray(cu_seqlens_q), jnp.asarray(cu_seqlens_k)
    if varlen_padded:
        starts = jnp.arange(cu_q.shape[0], dtype=cu_q.dtype)
        out, _ = _varlen(query, key, value, starts * max_seqlen_q, starts * max_seqlen_k, cu_q[1:] - cu_q[:-1],
                         cu_k[1:] - cu_k[:-1], scale, bool(causal), (-1, -1), 0.0)
    else:
        out, _ = _varlen(query, key, value, cu_q, cu_k, None, None, scale, bool(causal), (-1, -1), 0.0)
    return out, None
