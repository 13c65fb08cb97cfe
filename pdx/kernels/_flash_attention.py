"""Flash attention (forward and backward) in Pallas, over [batch, seq_len, num_heads, head_dim].

Parts, top to bottom: block sizes, the pure-JAX reference, masking shared by
the kernels, the forward kernel, the two backward kernels (dK/dV over key
blocks, dQ/dbias over query blocks), the custom_vjp that ties them together,
and the validating public wrapper with the dispatch.

The kernels keep logits in base 2 (`exp2`, scale folded with log2(e)) and
masked logits at a large finite negative value, so no row ever produces NaN:
a query that sees no key (possible with segment ids or a -inf bias) gets a
zero output and zero gradients, in the kernel and the reference alike.
Sequence lengths that are not a multiple of the block are padded to one in
the wrapper and the padded keys are masked. Grouped-query attention maps
query head h to key/value head h // (num_heads_q // num_heads_kv); each dK/dV
program walks the query blocks of all the query heads of its group.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.custom_derivatives import CustomVJPPrimal, SymbolicZero
from jax.experimental.pallas import triton as plgpu

from pdx.kernels import _dispatch

__all__ = ["AttentionBlockSizes", "flash_attention", "flash_attention_reference", "flash_attention_unfit"]

# Finite so that fully masked rows stay NaN-free: exp2(MASK - MASK) = 1, and
# any visible logit makes exp2(MASK - m) = 0.
MASK = -0.7 * float(jnp.finfo(jnp.float32).max)
LOG2E = math.log2(math.e)
HEAD_DIMS = (16, 32, 64, 128, 256)


@dataclasses.dataclass(frozen=True)
class AttentionBlockSizes:
    """Tile sizes of the attention kernels (powers of two, at least 16).

    Attributes:
      block_q: query rows per forward program.
      block_k: keys per step of the forward loop.
      block_q_dkv: query rows per step of the dK/dV loop.
      block_k_dkv: keys per dK/dV program.
      block_q_dq: query rows per dQ program.
      block_k_dq: keys per step of the dQ loop.
      num_warps: Triton warps per program (None: 4 for head_dim <= 64, else 8).
      num_stages: Triton software-pipelining stages.
    """

    block_q: int = 128
    block_k: int = 64
    block_q_dkv: int = 64
    block_k_dkv: int = 64
    block_q_dq: int = 64
    block_k_dq: int = 64
    num_warps: int | None = None
    num_stages: int = 2

    def fit(self, sq: int, sk: int) -> AttentionBlockSizes:
        """Shrink blocks to the (power-of-two rounded) sequence lengths of a small call."""
        cap_q = max(16, pl.next_power_of_2(sq))
        cap_k = max(16, pl.next_power_of_2(sk))
        return dataclasses.replace(
            self, block_q=min(self.block_q, cap_q), block_k=min(self.block_k, cap_k),
            block_q_dkv=min(self.block_q_dkv, cap_q), block_k_dkv=min(self.block_k_dkv, cap_k),
            block_q_dq=min(self.block_q_dq, cap_q), block_k_dq=min(self.block_k_dq, cap_k))


# ----------------------------------------------------------------------------- reference

def _segment_pair(segment_ids):
    if segment_ids is None:
        return None, None
    if isinstance(segment_ids, (tuple, list)):
        return segment_ids[0], segment_ids[1]
    return segment_ids, segment_ids


def flash_attention_reference(q, k, v, *, causal=False, segment_ids=None, bias=None, scale=None):
    """Pure-JAX attention with the kernel's semantics; the definition the kernel must match.

    Args:
      q: (B, Sq, Hq, D).
      k, v: (B, Sk, Hk, D) with Hq a multiple of Hk.
      causal: key j visible to query i iff j <= i (top-left aligned).
      segment_ids: None, (B, S) ids shared by queries and keys (Sq == Sk), or a
        pair (q_segment_ids (B, Sq), kv_segment_ids (B, Sk)); a query sees only
        keys with its own id.
      bias: None or an additive (B|1, Hq|1, Sq, Sk) bias on the logits.
      scale: logit scale, default 1 / sqrt(D).

    Returns:
      (B, Sq, Hq, D) in q's dtype; rows that see no key are zero.

    Example:
      >>> q = jnp.ones((1, 8, 2, 16))
      >>> flash_attention_reference(q, q, q, causal=True).shape
      (1, 8, 2, 16)
    """
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    g = hq // hk
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    qg = q.reshape(b, sq, hk, g, d)
    logits = jnp.einsum("bqhgd,bkhd->bhgqk", qg, k, preferred_element_type=jnp.float32,
                        precision=lax.Precision.HIGHEST) * scale
    if bias is not None:
        bb = jnp.broadcast_to(bias, (bias.shape[0], bias.shape[1], sq, sk)).astype(jnp.float32)
        bb = bb.reshape(bb.shape[0], hk if bb.shape[1] == hq else 1, g if bb.shape[1] == hq else 1, sq, sk)
        logits = jnp.maximum(logits + bb, MASK)
    visible = jnp.ones((1, 1, 1, sq, sk), bool)
    if causal:
        visible = visible & (jnp.arange(sk)[None, :] <= jnp.arange(sq)[:, None])
    q_seg, kv_seg = _segment_pair(segment_ids)
    if q_seg is not None:
        visible = visible & (q_seg[:, None, None, :, None] == kv_seg[:, None, None, None, :])
    logits = jnp.where(visible, logits, MASK)
    weights = jax.nn.softmax(logits, axis=-1)
    out = jnp.einsum("bhgqk,bkhd->bqhgd", weights.astype(v.dtype), v, preferred_element_type=jnp.float32,
                     precision=lax.Precision.HIGHEST)
    any_visible = jnp.any(visible & (logits > MASK / 2), axis=-1)          # (B|1, Hk|1, G|1, Sq)
    out = jnp.where(jnp.moveaxis(any_visible, -1, 1)[..., None], out, 0.0)
    return out.reshape(b, sq, hq, d).astype(q.dtype)


# ----------------------------------------------------------------------------- kernels

def _visible(q_pos, k_pos, q_seg, k_seg, *, causal, kv_len):
    """Bool (bq, bk) mask of visible logits, or None when everything is visible."""
    mask = None

    def both(a, b):
        return b if a is None else jnp.logical_and(a, b)

    if causal:
        mask = q_pos[:, None] >= k_pos[None, :]
    if kv_len is not None:
        mask = both(mask, jnp.broadcast_to((k_pos < kv_len)[None, :], (q_pos.shape[0], k_pos.shape[0])))
    if q_seg is not None:
        mask = both(mask, q_seg[:, None] == k_seg[None, :])
    return mask


def _full_k_blocks(i, block_q, block_k, upper, *, causal, kv_len, segments):
    """Key blocks [0, n) that every query of query block i sees in full, so they skip the mask."""
    if segments:
        return 0
    n = upper
    if causal:  # key block j is wholly visible iff its last key <= the block's first query
        n = jnp.minimum(n, lax.div(i * block_q, block_k))
    if kv_len is not None:
        n = jnp.minimum(n, kv_len // block_k)
    return n


def _logits(q, k, bias, mask, *, scale, precision):
    """Base-2 logits of a (bq, D) x (bk, D) tile, bias added, masked."""
    s = plgpu.dot(q, k.T, precision=precision) * (scale * LOG2E)
    if bias is not None:
        s = jnp.maximum(s + bias.astype(jnp.float32) * LOG2E, MASK)  # a -inf bias becomes MASK
    if mask is not None:
        s = jnp.where(mask, s, MASK)
    return s


def _forward_kernel(q_ref, k_ref, v_ref, qseg_ref, kseg_ref, bias_ref, o_ref, lse_ref, *, scale, causal, kv_len,
                    block_k, num_k_blocks, precision):
    block_q = q_ref.shape[0]
    i = pl.program_id(0)
    q = q_ref[...]
    q_pos = i * block_q + jnp.arange(block_q)
    q_seg = None if qseg_ref is None else qseg_ref[...]

    def body(j, carry, masked):
        acc, m, l = carry
        ks = pl.ds(j * block_k, block_k)
        k_pos = j * block_k + jnp.arange(block_k)
        mask = None
        if masked:
            mask = _visible(q_pos, k_pos, q_seg, None if kseg_ref is None else kseg_ref[ks], causal=causal,
                            kv_len=kv_len)
        s = _logits(q, k_ref[ks, :], None if bias_ref is None else bias_ref[:, ks], mask, scale=scale,
                    precision=precision)
        m_new = jnp.maximum(m, jnp.max(s, axis=1))
        alpha = jnp.exp2(m - m_new)
        p = jnp.exp2(s - m_new[:, None])
        v = v_ref[ks, :]
        acc = acc * alpha[:, None] + plgpu.dot(p.astype(v.dtype), v, precision=precision)
        return acc, m_new, l * alpha + jnp.sum(p, axis=1)

    upper = num_k_blocks
    if causal:
        upper = jnp.minimum(lax.div((i + 1) * block_q + block_k - 1, block_k), num_k_blocks)
    acc = jnp.zeros((block_q, q_ref.shape[1]), jnp.float32)
    m = jnp.full((block_q,), MASK, jnp.float32)
    l = jnp.zeros((block_q,), jnp.float32)
    split = _full_k_blocks(i, block_q, block_k, upper, causal=causal, kv_len=kv_len, segments=qseg_ref is not None)
    carry = lax.fori_loop(0, split, functools.partial(body, masked=False), (acc, m, l))
    acc, m, l = lax.fori_loop(split, upper, functools.partial(body, masked=True), carry)
    seen = m > MASK / 2
    o_ref[...] = jnp.where(seen[:, None], acc / l[:, None], 0.0).astype(o_ref.dtype)
    # +inf makes exp2(s - lse) = 0 in the backward pass for rows that saw nothing.
    lse_ref[...] = jnp.where(seen, m + jnp.log2(l), jnp.inf)


def _dkdv_kernel(q_ref, k_ref, v_ref, qseg_ref, kseg_ref, bias_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref, *,
                 scale, causal, kv_len, block_q, num_q_blocks, group, bias_per_head, precision):
    # One key block of one key/value head; q_ref/do_ref hold the `group` query heads
    # that share it, (Sq, G, D), so dK/dV accumulate over the whole group in registers.
    block_k = k_ref.shape[0]
    j = pl.program_id(0)
    k = k_ref[...]
    v = v_ref[...]
    k_pos = j * block_k + jnp.arange(block_k)
    k_seg = None if kseg_ref is None else kseg_ref[...]

    def body(t, carry, masked):
        dk, dv = carry
        i, h = lax.div(t, group), lax.rem(t, group)
        qs = pl.ds(i * block_q, block_q)
        q = q_ref[qs, h, :]
        do = do_ref[qs, h, :]
        mask = None
        if masked:
            mask = _visible(i * block_q + jnp.arange(block_q), k_pos, None if qseg_ref is None else qseg_ref[qs],
                            k_seg, causal=causal, kv_len=kv_len)
        bias = None if bias_ref is None else bias_ref[h if bias_per_head else 0, qs, :]
        s = _logits(q, k, bias, mask, scale=scale, precision=precision)
        p = jnp.exp2(s - lse_ref[h, qs][:, None])
        dv = dv + plgpu.dot(p.astype(do.dtype).T, do, precision=precision)
        dp = plgpu.dot(do, v.T, precision=precision)
        ds = p * (dp - delta_ref[h, qs][:, None])
        dk = dk + plgpu.dot(ds.astype(q.dtype).T, q, precision=precision)
        return dk, dv

    lower = lax.div(j * block_k, block_q) if causal else 0
    # Query blocks from `split` on see every key of this block (no mask needed there).
    split = num_q_blocks
    if qseg_ref is None:
        split = jnp.minimum(lax.div((j + 1) * block_k + block_q - 1, block_q), num_q_blocks) if causal \
            else jnp.int32(0)
        if kv_len is not None:  # a block holding padded keys needs the mask for every query
            # (int32 operands: Triton's lowering rejects a select between two Python ints)
            split = jnp.where((j + 1) * block_k > kv_len, jnp.int32(num_q_blocks), split)
    zeros = jnp.zeros((block_k, k_ref.shape[1]), jnp.float32)
    carry = lax.fori_loop(lower * group, split * group, functools.partial(body, masked=True), (zeros, zeros))
    dk, dv = lax.fori_loop(split * group, num_q_blocks * group, functools.partial(body, masked=False), carry)
    dk_ref[...] = (dk * scale).astype(dk_ref.dtype)
    dv_ref[...] = dv.astype(dv_ref.dtype)


def _dq_kernel(q_ref, k_ref, v_ref, qseg_ref, kseg_ref, bias_ref, do_ref, lse_ref, delta_ref, dq_ref, *dbias, scale,
               causal, kv_len, block_k, num_k_blocks, precision):
    dbias_ref = dbias[0] if dbias else None  # only when there is a bias to differentiate
    block_q = q_ref.shape[0]
    i = pl.program_id(0)
    q = q_ref[...]
    do = do_ref[...]
    lse = lse_ref[...]
    delta = delta_ref[...]
    q_pos = i * block_q + jnp.arange(block_q)
    q_seg = None if qseg_ref is None else qseg_ref[...]

    def body(j, dq, masked):
        ks = pl.ds(j * block_k, block_k)
        k = k_ref[ks, :]
        mask = None
        if masked:
            mask = _visible(q_pos, j * block_k + jnp.arange(block_k), q_seg,
                            None if kseg_ref is None else kseg_ref[ks], causal=causal, kv_len=kv_len)
        s = _logits(q, k, None if bias_ref is None else bias_ref[:, ks], mask, scale=scale, precision=precision)
        p = jnp.exp2(s - lse[:, None])
        dp = plgpu.dot(do, v_ref[ks, :].T, precision=precision)
        ds = p * (dp - delta[:, None])
        if dbias_ref is not None:
            dbias_ref[:, ks] = ds.astype(dbias_ref.dtype)
        return dq + plgpu.dot(ds.astype(k.dtype), k, precision=precision)

    upper = num_k_blocks
    if causal and dbias_ref is None:  # dbias must be written everywhere, so no skipping then
        upper = jnp.minimum(lax.div((i + 1) * block_q + block_k - 1, block_k), num_k_blocks)
    split = _full_k_blocks(i, block_q, block_k, upper, causal=causal, kv_len=kv_len, segments=qseg_ref is not None)
    dq = lax.fori_loop(0, split, functools.partial(body, masked=False), jnp.zeros((block_q, q_ref.shape[1]),
                                                                               jnp.float32))
    dq = lax.fori_loop(split, upper, functools.partial(body, masked=True), dq)
    dq_ref[...] = (dq * scale).astype(dq_ref.dtype)


# ----------------------------------------------------------------------------- pallas_call wrappers

@dataclasses.dataclass(frozen=True)
class _Config:
    scale: float
    causal: bool
    blocks: AttentionBlockSizes
    interpret: bool


def _precision(dtype):
    # fp32 inputs get true fp32 products (no TF32), so the kernel meets fp32 tolerances.
    return lax.Precision.HIGHEST if dtype == jnp.float32 else None


def _specs(d, g, bias_shape, *, q_block, k_block, q_axis_is_grid):
    """BlockSpecs for (q, k, v, q_seg, kv_seg, bias) on a grid (blocks, B, Hq).

    q_axis_is_grid: the grid's first axis walks query blocks (forward, dQ) or key blocks (dK/dV).
    """
    def qmap(n, b, h):
        return (b, n if q_axis_is_grid else 0, h, 0)

    def kmap(n, b, h):
        return (b, 0 if q_axis_is_grid else n, h // g, 0)

    q_spec = pl.BlockSpec((None, q_block, None, d), qmap)
    k_spec = pl.BlockSpec((None, k_block, None, d), kmap)
    qseg = pl.BlockSpec((None, q_block), lambda n, b, h: (b, n if q_axis_is_grid else 0))
    kseg = pl.BlockSpec((None, k_block), lambda n, b, h: (b, 0 if q_axis_is_grid else n))
    bias = None
    if bias_shape is not None:
        bb, bh = bias_shape[0] > 1, bias_shape[1] > 1
        bias = pl.BlockSpec((None, None, q_block, k_block),
                            lambda n, b, h: (b if bb else 0, h if bh else 0, n if q_axis_is_grid else 0,
                                             0 if q_axis_is_grid else n))
    return q_spec, k_spec, qseg, kseg, bias


def _compiler_params(cfg, d):
    warps = cfg.blocks.num_warps or (4 if d <= 64 else 8)
    return plgpu.CompilerParams(num_warps=warps, num_stages=cfg.blocks.num_stages)


def _forward(q, k, v, q_seg, kv_seg, bias, cfg, kv_len):
    """Padded inputs -> (out (B, Sq, Hq, D), lse (B, Hq, Sq) base 2)."""
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    bq, bk = cfg.blocks.block_q, cfg.blocks.block_k
    q_spec, k_spec, qseg_spec, kseg_spec, bias_spec = _specs(
        d, hq // hk, None if bias is None else bias.shape, q_block=bq, k_block=sk,
        q_axis_is_grid=True)
    kernel = functools.partial(_forward_kernel, scale=cfg.scale, causal=cfg.causal, kv_len=kv_len, block_k=bk,
                               num_k_blocks=pl.cdiv(kv_len or sk, bk), precision=_precision(q.dtype))
    return pl.pallas_call(
        kernel,
        grid=(sq // bq, b, hq),
        in_specs=[q_spec, k_spec, k_spec, None if q_seg is None else qseg_spec,
                  None if kv_seg is None else kseg_spec, None if bias is None else bias_spec],
        out_specs=[q_spec, pl.BlockSpec((None, None, bq), lambda n, b, h: (b, h, n))],
        out_shape=[jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct((b, hq, sq), jnp.float32)],
        compiler_params=_compiler_params(cfg, d),
        interpret=cfg.interpret,
        name="pdx_flash_attention_fwd",
    )(q, k, v, q_seg, kv_seg, bias)


def _backward(q, k, v, q_seg, kv_seg, bias, out, lse, do, cfg, kv_len, *, want_dbias):
    """Padded inputs -> (dq, dk, dv, dbias)."""
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    g = hq // hk
    blocks = cfg.blocks
    prec = _precision(q.dtype)
    delta = jnp.einsum("bqhd,bqhd->bhq", out.astype(jnp.float32), do.astype(jnp.float32))
    bias_shape = None if bias is None else bias.shape

    bk = blocks.block_k_dkv
    group_spec = pl.BlockSpec((None, sq, g, d), lambda n, b, h: (b, 0, h, 0))       # the group's query heads
    kv_spec = pl.BlockSpec((None, bk, None, d), lambda n, b, h: (b, n, h, 0))
    rows_spec = pl.BlockSpec((None, g, sq), lambda n, b, h: (b, h, 0))
    bias_spec = None
    if bias is not None:
        bb, per_head = bias.shape[0] > 1, bias.shape[1] > 1
        bias_spec = pl.BlockSpec((None, g if per_head else 1, sq, bk),
                                 lambda n, b, h: (b if bb else 0, h if per_head else 0, 0, n))
    dk, dv = pl.pallas_call(
        functools.partial(_dkdv_kernel, scale=cfg.scale, causal=cfg.causal, kv_len=kv_len,
                          block_q=blocks.block_q_dkv, num_q_blocks=sq // blocks.block_q_dkv, group=g,
                          bias_per_head=bias is not None and bias.shape[1] > 1, precision=prec),
        grid=(sk // bk, b, hk),
        in_specs=[group_spec, kv_spec, kv_spec,
                  None if q_seg is None else pl.BlockSpec((None, sq), lambda n, b, h: (b, 0)),
                  None if kv_seg is None else pl.BlockSpec((None, bk), lambda n, b, h: (b, n)),
                  bias_spec, group_spec, rows_spec, rows_spec],
        out_specs=[kv_spec, kv_spec],
        out_shape=[jax.ShapeDtypeStruct(k.shape, k.dtype), jax.ShapeDtypeStruct(v.shape, v.dtype)],
        compiler_params=_compiler_params(cfg, d),
        interpret=cfg.interpret,
        name="pdx_flash_attention_dkdv",
    )(q, k, v, q_seg, kv_seg, bias, do, lse, delta)

    q_spec, k_spec, qseg_spec, kseg_spec, bias_spec = _specs(
        d, g, bias_shape, q_block=blocks.block_q_dq, k_block=sk, q_axis_is_grid=True)
    lse_spec = pl.BlockSpec((None, None, blocks.block_q_dq), lambda n, b, h: (b, h, n))
    out_specs = [q_spec]
    out_shape = [jax.ShapeDtypeStruct(q.shape, q.dtype)]
    if want_dbias:
        out_specs.append(pl.BlockSpec((None, None, blocks.block_q_dq, sk), lambda n, b, h: (b, h, n, 0)))
        out_shape.append(jax.ShapeDtypeStruct((b, hq, sq, sk), jnp.float32))
    res = pl.pallas_call(
        functools.partial(_dq_kernel, scale=cfg.scale, causal=cfg.causal, kv_len=kv_len,
                          block_k=blocks.block_k_dq, num_k_blocks=pl.cdiv(kv_len or sk, blocks.block_k_dq),
                          precision=prec),
        grid=(sq // blocks.block_q_dq, b, hq),
        in_specs=[q_spec, k_spec, k_spec, None if q_seg is None else qseg_spec,
                  None if kv_seg is None else kseg_spec, None if bias is None else bias_spec,
                  q_spec, lse_spec, lse_spec],
        out_specs=out_specs,
        out_shape=out_shape,
        compiler_params=_compiler_params(cfg, d),
        interpret=cfg.interpret,
        name="pdx_flash_attention_dq",
    )(q, k, v, q_seg, kv_seg, bias, do, lse, delta)
    dq, dbias = (res[0], res[1]) if want_dbias else (res[0], None)
    return dq, dk, dv, dbias


def _pad_axis(x, axis, size, value=0):
    if x is None or x.shape[axis] == size:
        return x
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, size - x.shape[axis])
    return jnp.pad(x, pad, constant_values=value)


def _padded(q, k, v, q_seg, kv_seg, bias, cfg):
    blocks = cfg.blocks
    sq, sk = q.shape[1], k.shape[1]
    sq_pad = -(-sq // max(blocks.block_q, blocks.block_q_dkv, blocks.block_q_dq)) \
        * max(blocks.block_q, blocks.block_q_dkv, blocks.block_q_dq)
    sk_pad = -(-sk // max(blocks.block_k, blocks.block_k_dkv, blocks.block_k_dq)) \
        * max(blocks.block_k, blocks.block_k_dkv, blocks.block_k_dq)
    if bias is not None:
        bias = jnp.broadcast_to(bias, (*bias.shape[:2], sq, sk))
        bias = _pad_axis(_pad_axis(bias, 2, sq_pad), 3, sk_pad)
    padded = (_pad_axis(q, 1, sq_pad), _pad_axis(k, 1, sk_pad), _pad_axis(v, 1, sk_pad),
              _pad_axis(q_seg, 1, sq_pad), _pad_axis(kv_seg, 1, sk_pad), bias)
    return padded, (sk if sk_pad != sk else None)


@functools.partial(jax.custom_vjp, nondiff_argnums=(6,))
def _flash(q, k, v, q_seg, kv_seg, bias, cfg):
    padded, kv_len = _padded(q, k, v, q_seg, kv_seg, bias, cfg)
    return _forward(*padded, cfg, kv_len)[0][:, :q.shape[1]]


def _flash_fwd(q, k, v, q_seg, kv_seg, bias, cfg):
    # symbolic_zeros=True: leaves arrive as CustomVJPPrimal(value, perturbed), which tells
    # whether the bias needs a gradient; a constant bias (a padding mask) skips the
    # O(seq_len_q * seq_len_k) dbias output and keeps causal block skipping.
    want_dbias = bias is not None and bias.perturbed
    q, k, v, q_seg, kv_seg, bias = jax.tree.map(lambda a: a.value, (q, k, v, q_seg, kv_seg, bias),
                                                is_leaf=lambda a: isinstance(a, CustomVJPPrimal))
    padded, kv_len = _padded(q, k, v, q_seg, kv_seg, bias, cfg)
    out, lse = _forward(*padded, cfg, kv_len)
    return out[:, :q.shape[1]], (padded, out, lse, bias if want_dbias else None, q.shape[1], k.shape[1])


def _flash_bwd(cfg, residuals, do):
    padded, out, lse, bias, sq, sk = residuals
    q, k = padded[0], padded[1]
    do = jnp.zeros(out.shape, out.dtype) if isinstance(do, SymbolicZero) else _pad_axis(do, 1, q.shape[1])
    kv_len = sk if k.shape[1] != sk else None
    dq, dk, dv, dbias = _backward(*padded, out, lse, do, cfg, kv_len, want_dbias=bias is not None)
    dq, dk, dv = dq[:, :sq], dk[:, :sk], dv[:, :sk]
    if bias is not None:
        dbias = dbias[:, :, :sq, :sk]
        axes = tuple(a for a in range(4) if bias.shape[a] == 1 and dbias.shape[a] != 1)
        dbias = jnp.sum(dbias, axis=axes, keepdims=True).astype(bias.dtype)
    return dq, dk, dv, None, None, dbias


_flash.defvjp(_flash_fwd, _flash_bwd, symbolic_zeros=True)


# ----------------------------------------------------------------------------- public wrapper

def _err(message):
    return ValueError(f"pdx.kernels.flash_attention: {message}")


def _check_segments(segment_ids, b, sq, sk):
    if segment_ids is None:
        return None, None
    if isinstance(segment_ids, (tuple, list)):
        if len(segment_ids) != 2:
            raise _err(f"segment_ids must be one (batch, seq_len) array or a pair (q_segment_ids, "
                       f"kv_segment_ids); got a sequence of {len(segment_ids)}")
        q_seg, kv_seg = (jnp.asarray(s) for s in segment_ids)
    else:
        if sq != sk:
            raise _err(f"one segment_ids array needs seq_len_q == seq_len_k; got {sq} and {sk}; pass a pair "
                       "(q_segment_ids, kv_segment_ids)")
        q_seg = kv_seg = jnp.asarray(segment_ids)
    if q_seg.shape != (b, sq) or kv_seg.shape != (b, sk):
        raise _err(f"segment ids must be shaped (batch, seq_len) = {(b, sq)} for queries and {(b, sk)} for keys; "
                   f"got {tuple(q_seg.shape)} and {tuple(kv_seg.shape)}")
    if not (jnp.issubdtype(q_seg.dtype, jnp.integer) and jnp.issubdtype(kv_seg.dtype, jnp.integer)):
        raise _err(f"segment ids must be integers; got {q_seg.dtype} and {kv_seg.dtype}")
    return q_seg.astype(jnp.int32), kv_seg.astype(jnp.int32)


def _validate(q, k, v, segment_ids, bias):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise _err(f"q, k, v must be 4-D [batch, seq_len, num_heads, head_dim]; got {q.shape=}, {k.shape=}, "
                   f"{v.shape=}")
    b, sq, hq, d = q.shape
    _, sk, hk, _ = k.shape
    if k.shape[0] != b or v.shape[0] != b:
        raise _err(f"batch sizes differ: {q.shape=}, {k.shape=}, {v.shape=}")
    if k.shape[3] != d or v.shape[3] != d:
        raise _err(f"q, k and v must share head_dim; got {q.shape=}, {k.shape=}, {v.shape=}")
    if v.shape[1:3] != k.shape[1:3]:
        raise _err(f"{v.shape=} must match {k.shape=} in seq_len and num_heads")
    if hk == 0 or hq % hk:
        raise _err(f"q's num_heads={hq} must be a multiple of k/v's num_heads={hk} (grouped-query attention)")
    if not (q.dtype == k.dtype == v.dtype) or not jnp.issubdtype(q.dtype, jnp.floating):
        raise _err(f"q, k, v need one floating dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    q_seg, kv_seg = _check_segments(segment_ids, b, sq, sk)
    if bias is not None:
        if bias.ndim != 4 or bias.shape[0] not in (1, b) or bias.shape[1] not in (1, hq) \
                or bias.shape[2] not in (1, sq) or bias.shape[3] not in (1, sk):
            raise _err(f"bias must broadcast to [batch, num_heads, seq_len_q, seq_len_k] = {(b, hq, sq, sk)} with "
                       f"a batch dim of 1 or {b} and a head dim of 1 or {hq}; got bias.shape={tuple(bias.shape)}")
    return q_seg, kv_seg


def flash_attention_unfit(q):
    """None if the Pallas flash-attention kernel supports q's head_dim and dtype, else the reason it does not.

    Example:
      >>> flash_attention_unfit(jnp.ones((1, 8, 2, 96)))
      'head_dim=96 is not one of (16, 32, 64, 128, 256)'
    """
    d = q.shape[-1]
    if d not in HEAD_DIMS:
        return f"head_dim={d} is not one of {HEAD_DIMS}"
    if q.dtype not in (jnp.float32, jnp.bfloat16, jnp.float16):
        return f"dtype {q.dtype} is not float32, bfloat16 or float16"
    return None


def _attention_xla(q, k, v, q_seg, kv_seg, bias, *, causal, scale, block_sizes):
    del block_sizes
    segments = None if q_seg is None else (q_seg, kv_seg)
    return flash_attention_reference(q, k, v, causal=causal, segment_ids=segments, bias=bias, scale=scale)


def _attention_cudnn(q, k, v, q_seg, kv_seg, bias, *, causal, scale, block_sizes):
    del kv_seg, block_sizes
    if _dispatch.platform() != "gpu":
        raise _dispatch.Unsupported(f"impl='cudnn' needs a GPU but the default backend is {_dispatch.platform()!r}")
    if q_seg is not None:
        raise _dispatch.Unsupported("impl='cudnn' does not take segment_ids", "use impl='pallas' or impl='xla'")
    return jax.nn.dot_product_attention(q, k, v, bias=bias, is_causal=causal, scale=scale, implementation="cudnn")


def _cudnn_preferred(q, k, v, q_seg, kv_seg, bias, **_):
    """"auto" takes cuDNN for bf16/fp16 with head_dim 64 or 128, no segment ids
    (jax.nn.dot_product_attention cannot take them) and no bias (whose gradient
    cuDNN supports only for some shapes)."""
    return q.dtype in (jnp.bfloat16, jnp.float16) and q_seg is None and bias is None and q.shape[-1] in (64, 128)


def _attention_pallas(q, k, v, q_seg, kv_seg, bias, *, causal, scale, block_sizes):
    _dispatch.pallas_fits(flash_attention_unfit(q))
    blocks = (block_sizes or AttentionBlockSizes()).fit(q.shape[1], k.shape[1])
    cfg = _Config(scale=scale, causal=bool(causal), blocks=blocks, interpret=_dispatch.interpret())
    return _flash(q, k, v, q_seg, kv_seg, bias, cfg)


# The CPU backend registers "onednn" (pdx/kernels/onednn/_attention.py).
FLASH_ATTENTION = _dispatch.Op("flash_attention",
                               {"cudnn": _attention_cudnn, "pallas": _attention_pallas, "xla": _attention_xla},
                               prefer_if={"cudnn": _cudnn_preferred})


def flash_attention(q, k, v, *, causal=False, segment_ids=None, bias=None, scale=None, impl="auto",
                    block_sizes=None):
    """Memory-efficient attention softmax(q k^T * scale + bias) v, differentiable.

    Args:
      q: (batch, seq_len_q, num_heads_q, head_dim).
      k, v: (batch, seq_len_k, num_heads_kv, head_dim); num_heads_q must be a
        multiple of num_heads_kv (grouped-query / multi-query attention).
      causal: key j is visible to query i iff j <= i (top-left aligned).
      segment_ids: None; one (batch, seq_len) int array when seq_len_q ==
        seq_len_k (packed sequences); or a pair (q_segment_ids, kv_segment_ids).
        Queries see only keys of their own segment.
      bias: optional additive logit bias broadcastable to (batch, num_heads_q,
        seq_len_q, seq_len_k) with batch and head dims of 1 or full size;
        differentiable (its gradient costs O(seq_len_q * seq_len_k) memory).
      scale: logit scale, default 1 / sqrt(head_dim).
      impl: "auto", "pallas", "xla", "cudnn" or "onednn" (see `pdx.kernels` and the
        module docstring of `pdx.kernels._dispatch`). The Pallas kernel supports head_dim
        in (16, 32, 64, 128, 256); "auto" falls back to XLA for others. On a CPU,
        "auto" takes the oneDNN kernel (`pdx.kernels.onednn`) for calls without
        segment_ids or bias, where native kernels are allowed.
      block_sizes: `AttentionBlockSizes` for the Pallas kernel.

    Returns:
      (batch, seq_len_q, num_heads_q, head_dim) in q's dtype. Queries that see
      no key at all get zeros (never NaN).

    Example:
      >>> q = jnp.ones((1, 24, 4, 64), jnp.float32); kv = jnp.ones((1, 24, 2, 64))
      >>> flash_attention(q, kv, kv, causal=True, impl="pallas").shape
      (1, 24, 4, 64)
    """
    q, k, v = jnp.asarray(q), jnp.asarray(k), jnp.asarray(v)
    bias = None if bias is None else jnp.asarray(bias)
    q_seg, kv_seg = _validate(q, k, v, segment_ids, bias)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return FLASH_ATTENTION(impl, q, k, v, q_seg, kv_seg, bias, causal=causal, scale=scale, block_sizes=block_sizes)
