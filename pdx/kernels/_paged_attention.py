"""Attention over a paged KV cache: queries of the newest tokens against keys held in fixed-size blocks.

A serving engine keeps each layer's keys and values in a pool of pages
`[num_blocks, block_size, num_kv_heads, head_dim]`; a sequence owns a list of
block ids (its row of `block_tables`) and `context_lens[b]` tokens, the last
T of which are the queries of this call (T = 1 for decode, a chunk for
prefill). Query t of row b sits at position `context_lens[b] - T + t`, sees
the keys at positions up to its own (causal) and, with a sliding window W,
only the last W of them. A query at a negative position (a padded row) sees
nothing and returns zeros.

Parts, top to bottom: the page writer, the pure-JAX reference (gathers each
row's blocks into one dense sequence), and the validating public wrapper
with the dispatch.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from pdx.kernels import _dispatch

__all__ = ["paged_attention", "paged_attention_reference", "write_kv_pages"]

# Finite so that fully masked rows stay NaN-free (as in _flash_attention.py).
MASK = -0.7 * float(jnp.finfo(jnp.float32).max)


# ----------------------------------------------------------------------------- page writer

def write_kv_pages(k_pages, v_pages, k, v, slot_mapping):
    """Write new keys/values into their slots of the page pools.

    Args:
      k_pages, v_pages: [num_blocks, block_size, num_kv_heads, head_dim] pools.
      k, v: [B, T, num_kv_heads, head_dim] the new tokens' keys and values.
      slot_mapping: [B, T] int flat slots `block_id * block_size + offset`;
        -1 marks a padded token that is not written.

    Returns:
      (k_pages, v_pages) updated, in the pools' dtype.

    Example:
      >>> kp = jnp.zeros((4, 2, 1, 8)); k = jnp.ones((1, 1, 1, 8))
      >>> kp, vp = write_kv_pages(kp, kp, k, k, jnp.array([[3]], jnp.int32))
      >>> float(kp[1, 1].sum())   # slot 3 = block 1, offset 1
      8.0
    """
    k_pages, v_pages, k, v = (jnp.asarray(a) for a in (k_pages, v_pages, k, v))
    slot_mapping = jnp.asarray(slot_mapping)
    _check_writes(k_pages, v_pages, k, v, slot_mapping)
    n, bs, hk, d = k_pages.shape
    flat = slot_mapping.reshape(-1).astype(jnp.int32)
    flat = jnp.where(flat < 0, n * bs, flat)  # out of range: dropped (negative ids would wrap around)

    def write(pages, new):
        rows = pages.reshape(n * bs, hk, d).at[flat].set(new.reshape(-1, hk, d).astype(pages.dtype), mode="drop")
        return rows.reshape(n, bs, hk, d)
    return write(k_pages, k), write(v_pages, v)


def _check_writes(k_pages, v_pages, k, v, slot_mapping):
    err = lambda m: ValueError(f"pdx.kernels.write_kv_pages: {m}")  # noqa: E731
    if k_pages.ndim != 4 or v_pages.shape != k_pages.shape:
        raise err(f"k_pages and v_pages must be one shape [num_blocks, block_size, num_kv_heads, head_dim]; "
                  f"got {k_pages.shape=} and {v_pages.shape=}")
    if k.ndim != 4 or v.shape != k.shape or k.shape[2:] != k_pages.shape[2:]:
        raise err(f"k and v must be [B, T, num_kv_heads, head_dim] = [B, T, {k_pages.shape[2]}, "
                  f"{k_pages.shape[3]}] like the pages; got {k.shape=} and {v.shape=}")
    if slot_mapping.shape != k.shape[:2] or not jnp.issubdtype(slot_mapping.dtype, jnp.integer):
        raise err(f"slot_mapping must be an integer [B, T] = {k.shape[:2]} array of flat slots "
                  f"(block_id * block_size + offset, -1 to skip); got shape {slot_mapping.shape} "
                  f"dtype {slot_mapping.dtype}")


# ----------------------------------------------------------------------------- reference

def query_positions(context_lens, t):
    """[B, T] absolute positions of the T queries of each row (negative: padding)."""
    return context_lens[:, None] - t + jnp.arange(t, dtype=jnp.int32)[None, :]


def visible_keys(q_pos, k_pos, sliding_window):
    """[B, T, S] bool: key position k_pos is visible to query position q_pos."""
    q, k = q_pos[:, :, None], k_pos[None, None, :]
    seen = (k <= q) & (q >= 0)
    if sliding_window is not None:
        seen = seen & (k > q - sliding_window)
    return seen


def paged_attention_reference(q, k_pages, v_pages, block_tables, context_lens, *, scale=None,
                              sliding_window=None):
    """Pure-JAX paged attention: gather each row's blocks, then masked dense attention.

    Args: as `paged_attention`.

    Returns:
      [B, T, num_heads_q, head_dim] in q's dtype (softmax in float32); queries
      that see no key are zero.

    Example:
      >>> kp = jnp.ones((4, 2, 1, 8)); q = jnp.ones((1, 1, 2, 8))
      >>> out = paged_attention_reference(q, kp, kp, jnp.array([[2, 0]]), jnp.array([3]))
      >>> out.shape
      (1, 1, 2, 8)
    """
    b, t, hq, d = q.shape
    _, bs, hk, _ = k_pages.shape
    g = hq // hk
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    s = block_tables.shape[1] * bs
    k = k_pages[block_tables].reshape(b, s, hk, d)  # (B, S, Hk, D)
    v = v_pages[block_tables].reshape(b, s, hk, d)
    qg = q.reshape(b, t, hk, g, d)
    logits = jnp.einsum("bthgd,bshd->bhgts", qg, k, preferred_element_type=jnp.float32,
                        precision=lax.Precision.HIGHEST) * scale
    seen = visible_keys(query_positions(context_lens, t), jnp.arange(s, dtype=jnp.int32), sliding_window)
    logits = jnp.where(seen[:, None, None], logits, MASK)
    weights = jax.nn.softmax(logits, axis=-1)
    out = jnp.einsum("bhgts,bshd->bthgd", weights, v.astype(jnp.float32), preferred_element_type=jnp.float32,
                     precision=lax.Precision.HIGHEST)
    out = jnp.where(jnp.any(seen, axis=-1)[:, :, None, None, None], out, 0.0)
    return out.reshape(b, t, hq, d).astype(q.dtype)


# ----------------------------------------------------------------------------- public wrapper

def _err(message):
    return ValueError(f"pdx.kernels.paged_attention: {message}")


def _validate(q, k_pages, v_pages, block_tables, context_lens, sliding_window):
    if q.ndim != 4:
        raise _err(f"q must be 4-D [batch, T, num_heads_q, head_dim]; got {q.shape=}")
    if k_pages.ndim != 4 or v_pages.shape != k_pages.shape:
        raise _err(f"k_pages and v_pages must be one shape [num_blocks, block_size, num_kv_heads, head_dim]; "
                   f"got {k_pages.shape=} and {v_pages.shape=}")
    b, _, hq, d = q.shape
    hk = k_pages.shape[2]
    if k_pages.shape[3] != d:
        raise _err(f"q and the pages must share head_dim; got {q.shape=} and {k_pages.shape=}")
    if hk == 0 or hq % hk:
        raise _err(f"q's num_heads={hq} must be a multiple of the pages' num_kv_heads={hk} (grouped-query "
                   "attention)")
    if not (q.dtype == k_pages.dtype == v_pages.dtype) or not jnp.issubdtype(q.dtype, jnp.floating):
        raise _err(f"q and the pages need one floating dtype; got {q.dtype}, {k_pages.dtype}, {v_pages.dtype}")
    if block_tables.ndim != 2 or block_tables.shape[0] != b or not jnp.issubdtype(block_tables.dtype, jnp.integer):
        raise _err(f"block_tables must be an integer [batch, max_blocks] array with batch={b}; got shape "
                   f"{block_tables.shape} dtype {block_tables.dtype}")
    if context_lens.shape != (b,) or not jnp.issubdtype(context_lens.dtype, jnp.integer):
        raise _err(f"context_lens must be an integer [batch] = ({b},) array; got shape {context_lens.shape} "
                   f"dtype {context_lens.dtype}")
    if sliding_window is not None and (not isinstance(sliding_window, int) or sliding_window < 1):
        raise _err(f"sliding_window must be None or a positive int (keys seen per query, its own included); "
                   f"got {sliding_window!r}")


def _paged_xla(q, k_pages, v_pages, block_tables, context_lens, *, scale, sliding_window):
    return paged_attention_reference(q, k_pages, v_pages, block_tables, context_lens, scale=scale,
                                     sliding_window=sliding_window)


PAGED_ATTENTION = _dispatch.Op("paged_attention", {"xla": _paged_xla})


def paged_attention(q, k_pages, v_pages, block_tables, context_lens, *, scale=None, sliding_window=None,
                    impl=None):
    """Attention of the newest T tokens of each sequence over its paged KV cache.

    Args:
      q: [B, T, num_heads_q, head_dim] queries of the last T positions of each
        sequence (T = 1 for decode, the chunk length for prefill).
      k_pages, v_pages: [num_blocks, block_size, num_kv_heads, head_dim] one
        layer's page pool; num_heads_q must be a multiple of num_kv_heads (GQA).
      block_tables: [B, max_blocks] int block ids of each sequence in order
        (unused entries: any valid id, e.g. 0).
      context_lens: [B] int tokens held by each sequence, the T new ones
        included (already written, see `write_kv_pages`).
      scale: logit scale, default 1 / sqrt(head_dim).
      sliding_window: None, or W: a query sees only the W latest keys up to
        and including its own position.
      impl: None or "auto" (the dispatch's choice), "pallas", "xla" or
        "reference" (the pure-JAX gather, same as "xla").

    Returns:
      [B, T, num_heads_q, head_dim] in q's dtype; queries at negative positions
      (padding) and queries that see no key are zero.

    Example:
      >>> kp = jnp.ones((4, 16, 2, 64)); q = jnp.ones((3, 1, 8, 64))
      >>> tables = jnp.array([[1, 2], [3, 0], [0, 0]]); lens = jnp.array([20, 5, 1])
      >>> paged_attention(q, kp, kp, tables, lens).shape
      (3, 1, 8, 64)
    """
    q, k_pages, v_pages = jnp.asarray(q), jnp.asarray(k_pages), jnp.asarray(v_pages)
    block_tables, context_lens = jnp.asarray(block_tables), jnp.asarray(context_lens)
    _validate(q, k_pages, v_pages, block_tables, context_lens, sliding_window)
    impl = {None: "auto", "reference": "xla"}.get(impl, impl)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return PAGED_ATTENTION(impl, q, k_pages, v_pages, block_tables.astype(jnp.int32),
                           context_lens.astype(jnp.int32), scale=scale, sliding_window=sliding_window)
