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
row's blocks into one dense sequence), the Pallas kernel (Triton on GPU,
interpret mode elsewhere), the validating public wrapper with the
dispatch, and `paged_attention_with_new` (the same attention with the new
tokens' keys/values passed beside read-only pages, for a serving step that
writes the pool in a separate donated call).

The kernel runs one program per (row, key/value head, tile of query rows):
the G = num_heads_q // num_kv_heads query heads of a key/value head and the
T query tokens are laid out as T * G rows of one tile, so every page is
loaded once per group. A program walks only the blocks its queries can see
(from the sliding window's first key to its last query's position, never
past `context_lens`), reading each block id from the row's `block_tables`,
with an online softmax in float32 (base 2, masked logits at a large finite
value, as in `_flash_attention.py`). Forward only: paged attention serves
inference; differentiate the reference (`impl="xla"`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

from pdx.kernels import _dispatch

__all__ = ["PagedAttentionBlockSizes", "paged_attention", "paged_attention_reference", "paged_attention_unfit",
           "paged_attention_with_new", "write_kv_pages"]

# Finite so that fully masked rows stay NaN-free (as in _flash_attention.py).
MASK = -0.7 * float(jnp.finfo(jnp.float32).max)
LOG2E = math.log2(math.e)
HEAD_DIMS = (16, 32, 64, 128, 256)
BLOCK_SIZES = (16, 32, 64, 128, 256)  # page sizes the kernel takes (Triton dots need >= 16 keys)


@dataclasses.dataclass(frozen=True)
class PagedAttentionBlockSizes:
    """Tile sizes of the paged-attention kernel.

    Attributes:
      block_rows: query rows (tokens x grouped heads) per program, a power of
        two >= 16; shrunk to the call's T * G rows when fewer.
      num_warps: Triton warps per program (None: 4 for head_dim <= 64, else 8).
      num_stages: Triton software-pipelining stages.
    """

    block_rows: int = 64
    num_warps: int | None = None
    num_stages: int = 2

    def fit(self, rows: int) -> int:
        """The rows per program for a call with `rows` = T * G query rows."""
        return min(self.block_rows, max(16, pl.next_power_of_2(rows)))


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
    k, v = _gather_rows(k_pages, block_tables), _gather_rows(v_pages, block_tables)
    return _dense_attention(q, k, v, context_lens, scale, sliding_window)


def _gather_rows(pages, block_tables):
    """[B, max_blocks * block_size, Hk, D]: each row's blocks, in order, as one dense sequence."""
    b, w = block_tables.shape
    return pages[block_tables].reshape(b, w * pages.shape[1], *pages.shape[2:])


def _dense_attention(q, k, v, context_lens, scale, sliding_window):
    """Masked attention of q [B, T, Hq, D] over dense rows k, v [B, S, Hk, D] holding positions 0..S-1."""
    b, t, hq, d = q.shape
    s, hk = k.shape[1], k.shape[2]
    g = hq // hk
    scale = 1.0 / math.sqrt(d) if scale is None else scale
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


# ----------------------------------------------------------------------------- kernel

def _visible_tile(q_pos, k_pos, sliding_window):
    """(rows, block_size) bool: like `visible_keys`, for one tile and one page."""
    q, k = q_pos[:, None], k_pos[None, :]
    seen = (k <= q) & (q >= 0)
    if sliding_window is not None:
        seen = seen & (k > q - sliding_window)
    return seen


def _block_range(ctx, first_pos, last_pos, *, block_size, max_blocks, sliding_window):
    """Blocks [lower, upper) that some query of a tile at positions first_pos..last_pos sees."""
    upper = jnp.minimum(lax.div(jnp.maximum(jnp.minimum(last_pos + 1, ctx), 0) + block_size - 1, block_size),
                        max_blocks)
    lower = jnp.int32(0)
    if sliding_window is not None:
        lower = lax.div(jnp.maximum(first_pos - sliding_window + 1, 0), block_size)
    return lower, upper


def _paged_kernel(tables_ref, lens_ref, q_ref, k_ref, v_ref, o_ref, *, scale, t, group, sliding_window,
                  precision):
    # q_ref/o_ref: (rows, D), row r = token r // group, grouped head r % group; k_ref/v_ref: the whole
    # pool of this key/value head, (num_blocks, block_size, D); tables_ref: this row's (max_blocks,).
    rows = q_ref.shape[0]
    block_size = k_ref.shape[1]
    b, i = pl.program_id(0), pl.program_id(2)
    ctx = lens_ref[b]
    row = i * rows + jnp.arange(rows, dtype=jnp.int32)
    q_pos = jnp.where(row < t * group, ctx - t + lax.div(row, jnp.int32(group)), -1)  # -1: padding rows
    first_pos = ctx - t + lax.div(i * rows, group)
    last_pos = ctx - t + lax.div(jnp.minimum(i * rows + rows, t * group) - 1, group)
    lower, upper = _block_range(ctx, first_pos, last_pos, block_size=block_size,
                                max_blocks=tables_ref.shape[0], sliding_window=sliding_window)
    q = q_ref[...]

    def body(j, carry):
        acc, m, l = carry
        page = tables_ref[j]
        k = k_ref[page, :, :]
        v = v_ref[page, :, :]
        s = plgpu.dot(q, k.T, precision=precision) * (scale * LOG2E)
        k_pos = j * block_size + jnp.arange(block_size, dtype=jnp.int32)
        s = jnp.where(_visible_tile(q_pos, k_pos, sliding_window), s, MASK)
        m_new = jnp.maximum(m, jnp.max(s, axis=1))
        alpha = jnp.exp2(m - m_new)
        p = jnp.exp2(s - m_new[:, None])
        acc = acc * alpha[:, None] + plgpu.dot(p.astype(v.dtype), v, precision=precision)
        return acc, m_new, l * alpha + jnp.sum(p, axis=1)

    carry = (jnp.zeros(q.shape, jnp.float32), jnp.full((rows,), MASK, jnp.float32),
             jnp.zeros((rows,), jnp.float32))
    acc, m, l = lax.fori_loop(lower, upper, body, carry)
    seen = m > MASK / 2
    o_ref[...] = jnp.where(seen[:, None], acc / jnp.where(seen, l, 1.0)[:, None], 0.0).astype(o_ref.dtype)


def _paged_pallas_call(q, k_pages, v_pages, block_tables, context_lens, *, scale, sliding_window, blocks,
                       interpret):
    b, t, hq, d = q.shape
    n, bs, hk, _ = k_pages.shape
    g = hq // hk
    rows = t * g
    block_rows = blocks.fit(rows)
    padded = pl.cdiv(rows, block_rows) * block_rows
    # (B, T, Hq, D) -> (B, Hk, T * G, D): the query rows of one key/value head side by side.
    qr = q.reshape(b, t, hk, g, d).transpose(0, 2, 1, 3, 4).reshape(b, hk, rows, d)
    qr = jnp.pad(qr, ((0, 0), (0, 0), (0, padded - rows), (0, 0)))
    q_spec = pl.BlockSpec((None, None, block_rows, d), lambda r, h, i: (r, h, i, 0))
    page_spec = pl.BlockSpec((n, bs, None, d), lambda r, h, i: (0, 0, h, 0))
    kernel = functools.partial(_paged_kernel, scale=scale, t=t, group=g, sliding_window=sliding_window,
                               precision=lax.Precision.HIGHEST if q.dtype == jnp.float32 else None)
    out = pl.pallas_call(
        kernel,
        grid=(b, hk, padded // block_rows),
        in_specs=[pl.BlockSpec((None, block_tables.shape[1]), lambda r, h, i: (r, 0)),
                  pl.BlockSpec((b,), lambda r, h, i: (0,)), q_spec, page_spec, page_spec],
        out_specs=q_spec,
        out_shape=jax.ShapeDtypeStruct(qr.shape, q.dtype),
        compiler_params=plgpu.CompilerParams(num_warps=blocks.num_warps or (4 if d <= 64 else 8),
                                             num_stages=blocks.num_stages),
        interpret=interpret,
        name="pdx_paged_attention",
    )(block_tables, context_lens, qr, k_pages, v_pages)
    return out[:, :, :rows].reshape(b, hk, t, g, d).transpose(0, 2, 1, 3, 4).reshape(b, t, hq, d)


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


def paged_attention_unfit(q, k_pages):
    """None if the Pallas paged-attention kernel takes q and the pages, else the reason it does not.

    Example:
      >>> paged_attention_unfit(jnp.ones((1, 1, 4, 64)), jnp.ones((8, 8, 2, 64)))
      'block_size=8 is not one of (16, 32, 64, 128, 256)'
    """
    d, bs = q.shape[-1], k_pages.shape[1]
    if d not in HEAD_DIMS:
        return f"head_dim={d} is not one of {HEAD_DIMS}"
    if bs not in BLOCK_SIZES:
        return f"block_size={bs} is not one of {BLOCK_SIZES}"
    if q.dtype not in (jnp.float32, jnp.bfloat16, jnp.float16):
        return f"dtype {q.dtype} is not float32, bfloat16 or float16"
    return None


def _paged_xla(q, k_pages, v_pages, block_tables, context_lens, *, scale, sliding_window, block_sizes):
    del block_sizes
    return paged_attention_reference(q, k_pages, v_pages, block_tables, context_lens, scale=scale,
                                     sliding_window=sliding_window)


def _paged_pallas(q, k_pages, v_pages, block_tables, context_lens, *, scale, sliding_window, block_sizes):
    _dispatch.pallas_fits(paged_attention_unfit(q, k_pages))
    return _paged_pallas_call(q, k_pages, v_pages, block_tables, context_lens, scale=scale,
                              sliding_window=sliding_window, blocks=block_sizes or PagedAttentionBlockSizes(),
                              interpret=_dispatch.interpret())


PAGED_ATTENTION = _dispatch.Op("paged_attention", {"pallas": _paged_pallas, "xla": _paged_xla})


def paged_attention(q, k_pages, v_pages, block_tables, context_lens, *, scale=None, sliding_window=None,
                    impl=None, block_sizes=None):
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
      impl: None or "auto" (the dispatch's choice: the Pallas kernel on a GPU
        where `paged_attention_unfit` is None, else XLA), "pallas" (on a CPU
        in Pallas interpret mode), "xla" or "reference" (the pure-JAX gather,
        same as "xla"). The kernel is forward only: differentiate "xla".
      block_sizes: `PagedAttentionBlockSizes` for the Pallas kernel.

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
                           context_lens.astype(jnp.int32), scale=scale, sliding_window=sliding_window,
                           block_sizes=block_sizes)


# ----------------------------------------------------------------------------- new tokens beside read-only pages

def _with_new_xla(q, k, v, k_pages, v_pages, block_tables, context_lens, valid, *, scale, sliding_window,
                  block_sizes):
    """Each row's blocks gathered once into a dense sequence, the new tokens placed at their positions."""
    del block_sizes
    keys, values = _gather_rows(k_pages, block_tables), _gather_rows(v_pages, block_tables)
    pos = jnp.where(valid, query_positions(context_lens, q.shape[1]), keys.shape[1])   # padding: dropped
    rows = jnp.arange(q.shape[0], dtype=jnp.int32)[:, None]
    keys = keys.at[rows, pos].set(k.astype(keys.dtype), mode="drop")
    values = values.at[rows, pos].set(v.astype(values.dtype), mode="drop")
    return _dense_attention(q, keys, values, context_lens, scale, sliding_window)


def _with_new_pallas(q, k, v, k_pages, v_pages, block_tables, context_lens, valid, *, scale, sliding_window,
                     block_sizes):
    """Each row's blocks gathered into a small pool of its own, the new tokens written there, then the kernel."""
    b, w = block_tables.shape
    bs = k_pages.shape[1]
    local = lambda p: p[block_tables].reshape(b * w, *p.shape[1:])  # noqa: E731 - row r's blocks
    tables = jnp.arange(b, dtype=jnp.int32)[:, None] * w + jnp.arange(w, dtype=jnp.int32)
    slots = jnp.where(valid, tables[:, :1] * bs + query_positions(context_lens, q.shape[1]), -1)
    kp, vp = write_kv_pages(local(k_pages), local(v_pages), k, v, slots)
    return _paged_pallas(q, kp, vp, tables, context_lens, scale=scale, sliding_window=sliding_window,
                         block_sizes=block_sizes)


PAGED_ATTENTION_WITH_NEW = _dispatch.Op("paged_attention_with_new", {"pallas": _with_new_pallas,
                                                                     "xla": _with_new_xla})


def paged_attention_with_new(q, k, v, k_pages, v_pages, block_tables, context_lens, valid, *, scale=None,
                             sliding_window=None, impl=None, block_sizes=None):
    """`paged_attention` with the newest T tokens' keys/values passed beside pages that are only read.

    The same attention as `write_kv_pages` followed by `paged_attention`, but
    the pages are not updated: a serving step can read the pool in one
    compiled call and write the new keys/values in another, donated, in
    place (a program that both reads and updates a large buffer copies it).

    Args:
      q, k, v: [B, T, num_heads_q | num_kv_heads, head_dim]: the T newest
        tokens of each row, at positions `context_lens - T + t`.
      k_pages, v_pages, block_tables, context_lens: as `paged_attention`
        (the pages hold every earlier key, not these T).
      valid: [B, T] bool; False marks a padded token, whose key is not seen
        (the pages' content at that position is).
      scale, sliding_window, impl, block_sizes: as `paged_attention` ("xla":
        each row's blocks gathered once into a dense sequence; "pallas": into
        a small pool of its own for the kernel).

    Example:
      >>> kp = jnp.ones((4, 16, 2, 64)); q = jnp.ones((3, 1, 8, 64)); k = jnp.ones((3, 1, 2, 64))
      >>> tables = jnp.array([[1, 2], [3, 0], [0, 0]]); lens = jnp.array([20, 5, 1])
      >>> paged_attention_with_new(q, k, k, kp, kp, tables, lens, jnp.ones((3, 1), bool)).shape
      (3, 1, 8, 64)
    """
    q, k, v = jnp.asarray(q), jnp.asarray(k), jnp.asarray(v)
    k_pages, v_pages = jnp.asarray(k_pages), jnp.asarray(v_pages)
    block_tables, context_lens, valid = jnp.asarray(block_tables), jnp.asarray(context_lens), jnp.asarray(valid)
    _validate(q, k_pages, v_pages, block_tables, context_lens, sliding_window)
    if k.ndim != 4 or v.shape != k.shape or k.shape[:2] != q.shape[:2] or k.shape[2:] != k_pages.shape[2:]:
        raise _err(f"k and v must be [B, T, num_kv_heads, head_dim] = {q.shape[:2] + k_pages.shape[2:]} (q's rows "
                   f"and tokens, the pages' heads); got {k.shape=} and {v.shape=}")
    if valid.shape != q.shape[:2] or valid.dtype != jnp.bool_:
        raise _err(f"valid must be a bool [B, T] = {q.shape[:2]} array (False: a padded token); got shape "
                   f"{valid.shape} dtype {valid.dtype}")
    impl = {None: "auto", "reference": "xla"}.get(impl, impl)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return PAGED_ATTENTION_WITH_NEW(impl, q, k, v, k_pages, v_pages, block_tables.astype(jnp.int32),
                                    context_lens.astype(jnp.int32), valid, scale=scale,
                                    sliding_window=sliding_window, block_sizes=block_sizes)
