"""Softmax cross-entropy over large vocabularies: a fused Pallas kernel on logits, and a
chunked variant fused with the output projection that never builds the full logits.

Parts: block sizes, the pure-JAX reference, the Pallas forward kernel (one
pass over the logits per row block: online max / sum-exp over vocabulary
tiles and the label's logit), the Pallas backward kernel (dlogits written tile
by tile, fully parallel), their custom_vjp, and the projection-fused variant
(`linear_softmax_cross_entropy`): a loop over vocabulary chunks of the weight
computing `hidden @ W[:, chunk]` in float32, carrying the running
log-sum-exp forward, and recomputing each chunk's logits in the backward pass,
so peak memory is O(tokens x chunk) instead of O(tokens x vocab).

Per-token loss: lse - logit[label] + z_loss * lse^2 (z_loss as in PaLM),
zero where label == ignore_index. Labels outside [0, vocab) other than
ignore_index cannot be checked inside compiled code and give a loss with no
label term.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

from pdx.kernels import _dispatch

__all__ = ["CrossEntropyBlockSizes", "linear_softmax_cross_entropy", "linear_softmax_cross_entropy_reference",
           "softmax_cross_entropy", "softmax_cross_entropy_reference"]

MASK = -0.7 * float(jnp.finfo(jnp.float32).max)


@dataclasses.dataclass(frozen=True)
class CrossEntropyBlockSizes:
    """Tiling of the cross-entropy kernel on logits.

    Attributes:
      block_t: tokens (rows) per program.
      block_v: vocabulary entries per tile of the forward loop and per backward program.
      num_warps: Triton warps.
    """

    block_t: int = 16
    block_v: int = 1024
    num_warps: int = 4


# ----------------------------------------------------------------------------- references

def _per_token(lse, picked, valid, z_loss):
    loss = lse - picked
    if z_loss:
        loss = loss + z_loss * lse * lse
    return jnp.where(valid, loss, 0.0)


def softmax_cross_entropy_reference(logits, labels, *, ignore_index=-100, z_loss=0.0):
    """Per-token softmax cross-entropy in pure JAX (float32 math).

    Args:
      logits: (..., vocab).
      labels: (...) int class ids; `ignore_index` marks tokens with no loss.
      ignore_index: label value that contributes zero loss and gradient.
      z_loss: weight of the lse^2 penalty.

    Returns:
      (...) float32 losses.

    Example:
      >>> softmax_cross_entropy_reference(jnp.zeros((2, 4)), jnp.array([1, -100]))
      Array([1.3862944, 0.       ], dtype=float32)
    """
    x = logits.astype(jnp.float32)
    lse = jax.nn.logsumexp(x, axis=-1)
    valid = labels != ignore_index
    safe = jnp.where(valid, labels, 0).astype(jnp.int32)
    picked = jnp.take_along_axis(x, safe[..., None], axis=-1)[..., 0]
    return _per_token(lse, picked, valid, z_loss)


def linear_softmax_cross_entropy_reference(hidden, weight, labels, *, ignore_index=-100, z_loss=0.0):
    """Unfused reference of `linear_softmax_cross_entropy`: full logits = hidden @ weight, then the loss.

    Args:
      hidden: (..., H).
      weight: (H, vocab).
      labels: (...) int class ids.
      ignore_index: label value with zero loss.
      z_loss: weight of the lse^2 penalty.

    Returns:
      (...) float32 losses.

    Example:
      >>> linear_softmax_cross_entropy_reference(jnp.ones((2, 3)), jnp.zeros((3, 5)), jnp.array([0, 4])).shape
      (2,)
    """
    logits = jnp.dot(hidden, weight, preferred_element_type=jnp.float32)
    return softmax_cross_entropy_reference(logits, labels, ignore_index=ignore_index, z_loss=z_loss)


# ----------------------------------------------------------------------------- Pallas kernels on logits

def _forward_kernel(x_ref, y_ref, loss_ref, lse_ref, *, n_rows, vocab, block_v, ignore_index, z_loss):
    rows = x_ref.shape[0]
    row_ok = pl.program_id(0) * rows + jnp.arange(rows) < n_rows
    label = plgpu.load(y_ref, mask=row_ok, other=ignore_index)

    def body(c, carry):
        m, s, picked = carry
        cols = c * block_v + jnp.arange(block_v)
        mask = row_ok[:, None] & (cols < vocab)[None, :]
        x = plgpu.load(x_ref.at[:, pl.ds(c * block_v, block_v)], mask=mask, other=0.0).astype(jnp.float32)
        x = jnp.where(mask, x, MASK)
        m_new = jnp.maximum(m, jnp.max(x, axis=1))
        s = s * jnp.exp(m - m_new) + jnp.sum(jnp.exp(x - m_new[:, None]), axis=1)
        picked = picked + jnp.sum(jnp.where(cols[None, :] == label[:, None], x, 0.0), axis=1)
        return m_new, s, picked

    init = (jnp.full((rows,), MASK, jnp.float32), jnp.zeros((rows,), jnp.float32), jnp.zeros((rows,), jnp.float32))
    m, s, picked = lax.fori_loop(0, pl.cdiv(vocab, block_v), body, init)
    lse = m + jnp.log(s)
    plgpu.store(loss_ref, _per_token(lse, picked, label != ignore_index, z_loss), mask=row_ok)
    plgpu.store(lse_ref, lse, mask=row_ok)


def _backward_kernel(x_ref, y_ref, lse_ref, g_ref, dx_ref, *, n_rows, vocab, ignore_index, z_loss):
    rows, block_v = x_ref.shape
    row_ok = pl.program_id(0) * rows + jnp.arange(rows) < n_rows
    cols = pl.program_id(1) * block_v + jnp.arange(block_v)
    mask = row_ok[:, None] & (cols < vocab)[None, :]
    label = plgpu.load(y_ref, mask=row_ok, other=ignore_index)
    lse = plgpu.load(lse_ref, mask=row_ok, other=0.0)
    g = jnp.where(label != ignore_index, plgpu.load(g_ref, mask=row_ok, other=0.0), 0.0)
    x = plgpu.load(x_ref, mask=mask, other=0.0).astype(jnp.float32)
    p = jnp.exp(x - lse[:, None])
    if z_loss:
        p = p * (1.0 + 2.0 * z_loss * lse)[:, None]
    dx = (p - (cols[None, :] == label[:, None]).astype(jnp.float32)) * g[:, None]
    plgpu.store(dx_ref, dx.astype(dx_ref.dtype), mask=mask)


@dataclasses.dataclass(frozen=True)
class _Config:
    ignore_index: int
    z_loss: float
    blocks: CrossEntropyBlockSizes
    interpret: bool


def _tiles(cfg, vocab):
    block_v = min(cfg.blocks.block_v, pl.next_power_of_2(vocab))
    return cfg.blocks.block_t, block_v, pl.cdiv(vocab, block_v) * block_v


def _ce_forward(x, y, cfg):
    n_rows, vocab = x.shape
    bt, bv, v_pad = _tiles(cfg, vocab)
    row = pl.BlockSpec((bt,), lambda i: (i,))
    return pl.pallas_call(
        functools.partial(_forward_kernel, n_rows=n_rows, vocab=vocab, block_v=bv, ignore_index=cfg.ignore_index,
                          z_loss=cfg.z_loss),
        grid=(pl.cdiv(n_rows, bt),),
        in_specs=[pl.BlockSpec((bt, v_pad), lambda i: (i, 0)), row],
        out_specs=[row, row],
        out_shape=[jax.ShapeDtypeStruct((n_rows,), jnp.float32)] * 2,
        compiler_params=plgpu.CompilerParams(num_warps=cfg.blocks.num_warps),
        interpret=cfg.interpret,
        name="pdx_cross_entropy_fwd",
    )(x, y)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _ce(x, y, cfg):
    return _ce_forward(x, y, cfg)[0]


def _ce_fwd(x, y, cfg):
    loss, lse = _ce_forward(x, y, cfg)
    return loss, (x, y, lse)


def _ce_bwd(cfg, residuals, g):
    x, y, lse = residuals
    n_rows, vocab = x.shape
    bt, bv, _ = _tiles(cfg, vocab)
    row = pl.BlockSpec((bt,), lambda i, j: (i,))
    tile = pl.BlockSpec((bt, bv), lambda i, j: (i, j))
    dx = pl.pallas_call(
        functools.partial(_backward_kernel, n_rows=n_rows, vocab=vocab, ignore_index=cfg.ignore_index,
                          z_loss=cfg.z_loss),
        grid=(pl.cdiv(n_rows, bt), pl.cdiv(vocab, bv)),
        in_specs=[tile, row, row, row],
        out_specs=tile,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        compiler_params=plgpu.CompilerParams(num_warps=cfg.blocks.num_warps),
        interpret=cfg.interpret,
        name="pdx_cross_entropy_bwd",
    )(x, y, lse, g.astype(jnp.float32))
    return dx, None


_ce.defvjp(_ce_fwd, _ce_bwd)


# ----------------------------------------------------------------------------- chunked projection + loss

@dataclasses.dataclass(frozen=True)
class _Chunks:
    size: int
    ignore_index: int
    z_loss: float


def _chunk_split(vocab, size):
    """(number of full chunks, width of the narrower tail chunk, 0 if none); both static."""
    full = vocab // size
    return full, (vocab - full * size)


def _chunk_logits(h, w, start, width):
    return jnp.dot(h, lax.dynamic_slice_in_dim(w, start, width, axis=1), preferred_element_type=jnp.float32)


def _linear_forward(h, w, y, ch):
    """-> (loss, lse) without materializing (T, vocab) logits."""
    vocab = w.shape[1]
    full, tail = _chunk_split(vocab, ch.size)

    def absorb(carry, z, start):
        m, s, picked = carry
        m_new = jnp.maximum(m, jnp.max(z, axis=1))
        s = s * jnp.exp(m - m_new) + jnp.sum(jnp.exp(z - m_new[:, None]), axis=1)
        local = y - start
        hit = (local >= 0) & (local < z.shape[1])
        got = jnp.take_along_axis(z, jnp.clip(local, 0, z.shape[1] - 1)[:, None], axis=1)[:, 0]
        return m_new, s, picked + jnp.where(hit, got, 0.0)

    t = h.shape[0]
    carry = (jnp.full((t,), MASK, jnp.float32), jnp.zeros((t,), jnp.float32), jnp.zeros((t,), jnp.float32))
    if full:
        carry = lax.fori_loop(0, full, lambda i, c: absorb(c, _chunk_logits(h, w, i * ch.size, ch.size),
                                                           i * ch.size), carry)
    if tail:
        carry = absorb(carry, _chunk_logits(h, w, full * ch.size, tail), full * ch.size)
    m, s, picked = carry
    lse = m + jnp.log(s)
    return _per_token(lse, picked, y != ch.ignore_index, ch.z_loss), lse


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _linear_ce(h, w, y, ch):
    return _linear_forward(h, w, y, ch)[0]


def _linear_ce_fwd(h, w, y, ch):
    loss, lse = _linear_forward(h, w, y, ch)
    return loss, (h, w, y, lse)


def _linear_ce_bwd(ch, residuals, g):
    h, w, y, lse = residuals
    vocab = w.shape[1]
    full, tail = _chunk_split(vocab, ch.size)
    g = jnp.where(y != ch.ignore_index, g.astype(jnp.float32), 0.0)
    scale = (1.0 + 2.0 * ch.z_loss * lse) if ch.z_loss else None

    def chunk_grads(carry, start, width):
        dh, dw = carry
        wc = lax.dynamic_slice_in_dim(w, start, width, axis=1)
        p = jnp.exp(jnp.dot(h, wc, preferred_element_type=jnp.float32) - lse[:, None])
        if scale is not None:
            p = p * scale[:, None]
        d = (p - jax.nn.one_hot(y - start, width, dtype=jnp.float32)) * g[:, None]   # (T, width)
        dh = dh + jnp.dot(d.astype(h.dtype), wc.T, preferred_element_type=jnp.float32)
        dwc = jnp.dot(h.T, d.astype(h.dtype), preferred_element_type=jnp.float32)
        return dh, lax.dynamic_update_slice_in_dim(dw, dwc.astype(w.dtype), start, axis=1)

    carry = (jnp.zeros(h.shape, jnp.float32), jnp.zeros(w.shape, w.dtype))
    if full:
        carry = lax.fori_loop(0, full, lambda i, c: chunk_grads(c, i * ch.size, ch.size), carry)
    if tail:
        carry = chunk_grads(carry, full * ch.size, tail)
    dh, dw = carry
    return dh.astype(h.dtype), dw, None


_linear_ce.defvjp(_linear_ce_fwd, _linear_ce_bwd)


# ----------------------------------------------------------------------------- public wrappers

def _labels(op, labels, lead_shape):
    labels = jnp.asarray(labels)
    if not jnp.issubdtype(labels.dtype, jnp.integer):
        raise ValueError(f"pdx.kernels.{op}: labels must be integer class ids; got labels.dtype={labels.dtype}")
    if tuple(labels.shape) != tuple(lead_shape):
        raise ValueError(f"pdx.kernels.{op}: labels.shape={tuple(labels.shape)} must equal the leading dims "
                         f"{tuple(lead_shape)} of the input (one label per token)")
    return labels.astype(jnp.int32)


def softmax_cross_entropy(logits, labels, *, ignore_index=-100, z_loss=0.0, chunk_size=None, impl="auto",
                          block_sizes=None):
    """Per-token softmax cross-entropy, fused forward and backward (no float32 copy of the logits).

    Args:
      logits: (..., vocab) in any float dtype; math is float32.
      labels: (...) int class ids.
      ignore_index: label value with zero loss and zero gradient.
      z_loss: weight of the lse^2 penalty (0 disables it).
      chunk_size: vocabulary tile of the Pallas kernel (default
        `CrossEntropyBlockSizes.block_v`); the XLA path ignores it.
      impl: "auto", "pallas" or "xla" (see `pdx.kernels`).
      block_sizes: `CrossEntropyBlockSizes` for the Pallas kernel.

    Returns:
      (...) float32 per-token losses; reduce them as you like (e.g. sum over
      valid tokens / their count).

    Example:
      >>> softmax_cross_entropy(jnp.zeros((2, 4)), jnp.array([1, 3]), impl="pallas")
      Array([1.3862944, 1.3862944], dtype=float32)
    """
    logits = jnp.asarray(logits)
    if logits.ndim == 0 or not jnp.issubdtype(logits.dtype, jnp.floating):
        raise ValueError(f"pdx.kernels.softmax_cross_entropy: logits must be a float array (..., vocab); got "
                         f"shape={tuple(logits.shape)}, dtype={logits.dtype}")
    labels = _labels("softmax_cross_entropy", labels, logits.shape[:-1])
    return SOFTMAX_CROSS_ENTROPY(impl, logits, labels, ignore_index=ignore_index, z_loss=z_loss,
                                 chunk_size=chunk_size, block_sizes=block_sizes)


def _softmax_ce_xla(logits, labels, *, ignore_index, z_loss, chunk_size, block_sizes):
    del chunk_size, block_sizes
    return softmax_cross_entropy_reference(logits, labels, ignore_index=ignore_index, z_loss=z_loss)


def _softmax_ce_pallas(logits, labels, *, ignore_index, z_loss, chunk_size, block_sizes):
    _dispatch.pallas_fits("logits are empty" if logits.size == 0 else None)
    blocks = block_sizes or CrossEntropyBlockSizes()
    if chunk_size is not None:
        blocks = dataclasses.replace(blocks, block_v=pl.next_power_of_2(int(chunk_size)))
    cfg = _Config(ignore_index=int(ignore_index), z_loss=float(z_loss), blocks=blocks,
                  interpret=_dispatch.interpret())
    vocab = logits.shape[-1]
    return _ce(logits.reshape(-1, vocab), labels.reshape(-1), cfg).reshape(labels.shape)


SOFTMAX_CROSS_ENTROPY = _dispatch.Op("softmax_cross_entropy",
                                     {"pallas": _softmax_ce_pallas, "xla": _softmax_ce_xla})


def linear_softmax_cross_entropy(hidden, weight, labels, *, ignore_index=-100, z_loss=0.0, chunk_size=8192,
                                 impl="auto"):
    """Cross-entropy of `hidden @ weight` without building the (tokens, vocab) logits.

    The vocabulary is processed in chunks of `chunk_size` columns of `weight`,
    forward and backward (each chunk's logits are recomputed in the backward
    pass), so the peak extra memory is O(tokens x chunk_size). The matmuls run
    on XLA's GEMMs; "pallas" and "xla" select the same chunked program.

    Args:
      hidden: (..., H) final hidden states.
      weight: (H, vocab) output projection (Paddle's Linear layout [in, out]).
      labels: (...) int class ids.
      ignore_index: label value with zero loss and zero gradient.
      z_loss: weight of the lse^2 penalty.
      chunk_size: vocabulary columns per chunk.
      impl: "auto", "pallas", "xla" (all chunked) or, for the unfused
        reference that materializes the logits, use
        `linear_softmax_cross_entropy_reference`.

    Returns:
      (...) float32 per-token losses.

    Example:
      >>> h = jnp.ones((4, 8)); w = jnp.zeros((8, 100))
      >>> linear_softmax_cross_entropy(h, w, jnp.arange(4), chunk_size=32).shape
      (4,)
    """
    hidden, weight = jnp.asarray(hidden), jnp.asarray(weight)
    if hidden.ndim == 0 or weight.ndim != 2 or weight.shape[0] != hidden.shape[-1]:
        raise ValueError(f"pdx.kernels.linear_softmax_cross_entropy: need hidden (..., H) and weight (H, vocab); got "
                         f"hidden.shape={tuple(hidden.shape)}, weight.shape={tuple(weight.shape)}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"pdx.kernels.linear_softmax_cross_entropy: chunk_size must be a positive int; got "
                         f"chunk_size={chunk_size!r}")
    labels = _labels("linear_softmax_cross_entropy", labels, hidden.shape[:-1])
    ch = _Chunks(size=min(chunk_size, weight.shape[1]), ignore_index=int(ignore_index), z_loss=float(z_loss))
    return LINEAR_SOFTMAX_CROSS_ENTROPY(impl, hidden, weight, labels, ch)


def _linear_ce_chunked(hidden, weight, labels, ch):
    h = hidden.reshape(-1, hidden.shape[-1])
    return _linear_ce(h, weight, labels.reshape(-1), ch).reshape(labels.shape)


# One chunked program of XLA GEMMs: every impl name runs it.
LINEAR_SOFTMAX_CROSS_ENTROPY = _dispatch.Op("linear_softmax_cross_entropy", {"xla": _linear_ce_chunked})
