"""Fused RMSNorm and LayerNorm over the last axis, forward and backward, in Pallas.

Parts: block sizes, the pure-JAX references, the forward kernel (one read of
x, one write of y, per-row statistics kept for the backward), the backward
kernel (one read of x and dy, one write of dx; weight/bias gradients are
accumulated per program in registers and summed over programs afterwards),
the custom_vjp and the validating wrappers.

Statistics are float32 whatever the input dtype (bf16/fp16 inputs under AMP
stay stable); the output has x's dtype. A row of `n` features is held in one
power-of-two tile of `n_pad >= n` columns with masked loads, so any `n` up to
`NORM_MAX_FEATURES` works without padding copies; rows beyond the array are masked
too.
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

__all__ = ["NORM_MAX_FEATURES", "NormBlockSizes", "layer_norm", "layer_norm_reference", "rms_norm",
           "rms_norm_reference", "rms_norm_with_rstd"]

NORM_MAX_FEATURES = 65536  # the largest last axis the Pallas norm kernels take


@dataclasses.dataclass(frozen=True)
class NormBlockSizes:
    """Tiling of the norm kernels.

    Attributes:
      tile_elements: rows per tile = tile_elements // n_pad (at least 1), so a
        tile holds about this many values.
      max_programs: the backward pass runs at most this many programs; each
        loops over several tiles and writes one partial weight gradient.
      num_warps: Triton warps (None: from the tile size).
    """

    tile_elements: int = 8192
    max_programs: int = 1024
    num_warps: int | None = None

    def rows(self, n_pad: int) -> int:
        return max(1, pl.next_power_of_2(max(1, self.tile_elements // n_pad) + 1) // 2)

    def warps(self, rows: int, n_pad: int) -> int:
        return self.num_warps or min(max(rows * n_pad // 1024, 1), 8)


# ----------------------------------------------------------------------------- references

def rms_norm_reference(x, weight=None, *, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (float32 statistics).

    Args:
      x: (..., n).
      weight: optional (n,) scale.
      eps: added to the mean square.

    Returns:
      Like x (same dtype).

    Example:
      >>> rms_norm_reference(jnp.ones((2, 4))).shape
      (2, 4)
    """
    xf = x.astype(jnp.float32)
    y = xf * lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight.astype(jnp.float32)
    return y.astype(x.dtype)


def layer_norm_reference(x, weight=None, bias=None, *, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (float32 statistics).

    Args:
      x: (..., n).
      weight, bias: optional (n,) scale and shift.
      eps: added to the (biased) variance.

    Returns:
      Like x (same dtype).

    Example:
      >>> layer_norm_reference(jnp.arange(6.0).reshape(2, 3)).shape
      (2, 3)
    """
    xf = x.astype(jnp.float32)
    xc = xf - jnp.mean(xf, axis=-1, keepdims=True)
    y = xc * lax.rsqrt(jnp.mean(xc * xc, axis=-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight.astype(jnp.float32)
    if bias is not None:
        y = y + bias.astype(jnp.float32)
    return y.astype(x.dtype)


# ----------------------------------------------------------------------------- kernels

def _masks(row0, rows, n_rows, n_pad, n):
    row_ok = (row0 + jnp.arange(rows)) < n_rows
    col_ok = jnp.arange(n_pad) < n
    return row_ok, col_ok, row_ok[:, None] & col_ok[None, :]


def _forward_kernel(x_ref, w_ref, b_ref, y_ref, mean_ref, rstd_ref, *, n, n_rows, centered, eps):
    rows, n_pad = x_ref.shape
    row_ok, col_ok, mask = _masks(pl.program_id(0) * rows, rows, n_rows, n_pad, n)
    x = plgpu.load(x_ref, mask=mask, other=0.0).astype(jnp.float32)
    mean = jnp.sum(x, axis=1) / n if centered else jnp.zeros((rows,), jnp.float32)
    xc = jnp.where(col_ok[None, :], x - mean[:, None], 0.0)  # exact two-pass variance, both passes in registers
    rstd = lax.rsqrt(jnp.sum(xc * xc, axis=1) / n + eps)
    y = xc * rstd[:, None] * plgpu.load(w_ref, mask=col_ok, other=0.0).astype(jnp.float32)[None, :]
    if centered:
        y = y + plgpu.load(b_ref, mask=col_ok, other=0.0).astype(jnp.float32)[None, :]
    plgpu.store(y_ref, y.astype(y_ref.dtype), mask=mask)
    plgpu.store(mean_ref, mean, mask=row_ok)
    plgpu.store(rstd_ref, rstd, mask=row_ok)


def _backward_kernel(x_ref, w_ref, mean_ref, rstd_ref, drstd_ref, dy_ref, dx_ref, dw_ref, db_ref, *, n, n_rows,
                     rows, centered):
    span, n_pad = x_ref.shape
    first = pl.program_id(0) * span
    col_ok = jnp.arange(n_pad) < n
    w = plgpu.load(w_ref, mask=col_ok, other=0.0).astype(jnp.float32)[None, :]

    def body(t, carry):
        dw, db = carry
        rs = pl.ds(t * rows, rows)
        row_ok, _, mask = _masks(first + t * rows, rows, n_rows, n_pad, n)
        x = plgpu.load(x_ref.at[rs, :], mask=mask, other=0.0).astype(jnp.float32)
        dy = plgpu.load(dy_ref.at[rs, :], mask=mask, other=0.0).astype(jnp.float32)
        mean = plgpu.load(mean_ref.at[rs], mask=row_ok, other=0.0)[:, None]
        rstd = plgpu.load(rstd_ref.at[rs], mask=row_ok, other=0.0)[:, None]
        xhat = jnp.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = jnp.sum(xhat * wdy, axis=1, keepdims=True) / n
        dx = wdy - xhat * c1
        if centered:
            dx = dx - jnp.sum(wdy, axis=1, keepdims=True) / n
        dx = dx * rstd
        if drstd_ref is not None:  # rms_norm also returns rstd; d rstd / dx = -rstd^3 x / n
            drstd = plgpu.load(drstd_ref.at[rs], mask=row_ok, other=0.0)[:, None]
            dx = dx - drstd * rstd * rstd * rstd * x / n
        plgpu.store(dx_ref.at[rs, :], dx.astype(dx_ref.dtype), mask=mask)
        return dw + jnp.sum(dy * xhat, axis=0), db + jnp.sum(dy, axis=0)

    zeros = jnp.zeros((n_pad,), jnp.float32)
    dw, db = lax.fori_loop(0, span // rows, body, (zeros, zeros))
    plgpu.store(dw_ref, dw, mask=col_ok)
    plgpu.store(db_ref, db, mask=col_ok)


# ----------------------------------------------------------------------------- pallas_call wrappers

@dataclasses.dataclass(frozen=True)
class _Config:
    eps: float
    centered: bool
    blocks: NormBlockSizes
    interpret: bool


def _forward(x, w, b, cfg):
    """(R, n) -> (y, mean, rstd)."""
    n_rows, n = x.shape
    n_pad = pl.next_power_of_2(n)
    rows = cfg.blocks.rows(n_pad)
    tile = pl.BlockSpec((rows, n_pad), lambda i: (i, 0))
    vec = pl.BlockSpec((n_pad,), lambda i: (0,))
    stat = pl.BlockSpec((rows,), lambda i: (i,))
    return pl.pallas_call(
        functools.partial(_forward_kernel, n=n, n_rows=n_rows, centered=cfg.centered, eps=cfg.eps),
        grid=(pl.cdiv(n_rows, rows),),
        in_specs=[tile, vec, vec],
        out_specs=[tile, stat, stat],
        out_shape=[jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((n_rows,), jnp.float32),
                   jax.ShapeDtypeStruct((n_rows,), jnp.float32)],
        compiler_params=plgpu.CompilerParams(num_warps=cfg.blocks.warps(rows, n_pad)),
        interpret=cfg.interpret,
        name="pdx_layer_norm_fwd" if cfg.centered else "pdx_rms_norm_fwd",
    )(x, w, b)


def _backward(x, w, mean, rstd, drstd, dy, cfg):
    """-> (dx, dw, db) with dw/db summed over the per-program partials."""
    n_rows, n = x.shape
    n_pad = pl.next_power_of_2(n)
    rows = cfg.blocks.rows(n_pad)
    tiles = pl.cdiv(n_rows, rows)
    span = rows * pl.cdiv(tiles, min(tiles, cfg.blocks.max_programs))
    programs = pl.cdiv(n_rows, span)
    tile = pl.BlockSpec((span, n_pad), lambda i: (i, 0))
    stat = pl.BlockSpec((span,), lambda i: (i,))
    part = pl.BlockSpec((None, n_pad), lambda i: (i, 0))
    dx, dw, db = pl.pallas_call(
        functools.partial(_backward_kernel, n=n, n_rows=n_rows, rows=rows, centered=cfg.centered),
        grid=(programs,),
        in_specs=[tile, pl.BlockSpec((n_pad,), lambda i: (0,)), stat, stat, None if drstd is None else stat, tile],
        out_specs=[tile, part, part],
        out_shape=[jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((programs, n), jnp.float32),
                   jax.ShapeDtypeStruct((programs, n), jnp.float32)],
        compiler_params=plgpu.CompilerParams(num_warps=cfg.blocks.warps(rows, n_pad)),
        interpret=cfg.interpret,
        name="pdx_layer_norm_bwd" if cfg.centered else "pdx_rms_norm_bwd",
    )(x, w, mean, rstd, drstd, dy)
    return dx, jnp.sum(dw, axis=0), jnp.sum(db, axis=0)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _norm(x, w, b, cfg):
    """(R, n) x -> (y, rstd); differentiable in x, w, b and through rstd."""
    y, _, rstd = _forward(x, w, b, cfg)
    return y, rstd


def _norm_fwd(x, w, b, cfg):
    y, mean, rstd = _forward(x, w, b, cfg)
    return (y, rstd), (x, w, b, mean, rstd)


def _norm_bwd(cfg, residuals, cotangents):
    x, w, b, mean, rstd = residuals
    dy, drstd = cotangents
    dx, dw, db = _backward(x, w, mean, rstd, None if cfg.centered else drstd.astype(jnp.float32), dy, cfg)
    return dx, dw.astype(w.dtype), db.astype(b.dtype)


_norm.defvjp(_norm_fwd, _norm_bwd)


# ----------------------------------------------------------------------------- public wrappers

def _check(op, x, params):
    if x.ndim == 0 or not jnp.issubdtype(x.dtype, jnp.floating):
        raise ValueError(f"pdx.kernels.{op}: x must be a floating array with at least one dim; got "
                         f"x.shape={tuple(x.shape)}, x.dtype={x.dtype}")
    n = x.shape[-1]
    for name, p in params.items():
        if p is not None and tuple(p.shape) != (n,):
            raise ValueError(f"pdx.kernels.{op}: {name}.shape={tuple(p.shape)} must be (n,) = ({n},), the size of "
                             f"x's last axis (x.shape={tuple(x.shape)})")


def _unfit(x):
    """None if the Pallas norm kernels take x, else the reason they do not."""
    n = x.shape[-1]
    if n > NORM_MAX_FEATURES:
        return f"the last axis has {n} > {NORM_MAX_FEATURES} features"
    if x.size == 0:
        return "x is empty"
    return None


def _run(x, w, b, *, centered, eps, block_sizes):
    n = x.shape[-1]
    w = jnp.ones((n,), x.dtype) if w is None else w
    b = jnp.zeros((n,), x.dtype) if b is None else b
    cfg = _Config(eps=float(eps), centered=centered, blocks=block_sizes or NormBlockSizes(),
                  interpret=_dispatch.interpret())
    y, rstd = _norm(x.reshape(-1, n), w, b, cfg)
    return y.reshape(x.shape), rstd.reshape(x.shape[:-1])


def _rms_norm_xla(x, weight, *, eps, block_sizes):
    del block_sizes
    xf = x.astype(jnp.float32)
    rstd = lax.rsqrt(jnp.mean(xf * xf, axis=-1) + eps)
    return rms_norm_reference(x, weight, eps=eps), rstd


def _rms_norm_pallas(x, weight, *, eps, block_sizes):
    _dispatch.pallas_fits(_unfit(x))
    return _run(x, weight, None, centered=False, eps=eps, block_sizes=block_sizes)


def _layer_norm_xla(x, weight, bias, *, eps, block_sizes):
    del block_sizes
    return layer_norm_reference(x, weight, bias, eps=eps)


def _layer_norm_pallas(x, weight, bias, *, eps, block_sizes):
    _dispatch.pallas_fits(_unfit(x))
    return _run(x, weight, bias, centered=True, eps=eps, block_sizes=block_sizes)[0]


# rms_norm_with_rstd's implementations return (y, rstd); layer_norm's return y. The CPU
# backend registers layer_norm's "onednn" (pdx/kernels/onednn/_norm.py).
RMS_NORM = _dispatch.Op("rms_norm", {"pallas": _rms_norm_pallas, "xla": _rms_norm_xla})
LAYER_NORM = _dispatch.Op("layer_norm", {"pallas": _layer_norm_pallas, "xla": _layer_norm_xla})


def rms_norm_with_rstd(x, weight=None, *, eps=1e-6, impl="auto", block_sizes=None):
    """`rms_norm` that also returns rstd = 1 / sqrt(mean(x^2) + eps) per row, differentiably.

    Args:
      x, weight, eps, impl, block_sizes: as for `rms_norm`.

    Returns:
      (y like x, rstd float32 of shape x.shape[:-1]).

    Example:
      >>> y, rstd = rms_norm_with_rstd(jnp.ones((4, 8)))
      >>> rstd.shape
      (4,)
    """
    x = jnp.asarray(x)
    weight = None if weight is None else jnp.asarray(weight)
    _check("rms_norm", x, {"weight": weight})
    return RMS_NORM(impl, x, weight, eps=eps, block_sizes=block_sizes)


def rms_norm(x, weight=None, *, eps=1e-6, impl="auto", block_sizes=None):
    """Fused RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * weight.

    Args:
      x: (..., n), any float dtype; statistics are float32.
      weight: optional (n,) scale.
      eps: added to the mean square.
      impl: "auto", "pallas" or "xla" (see `pdx.kernels`).
      block_sizes: `NormBlockSizes` for the Pallas kernel.

    Returns:
      Like x.

    Example:
      >>> rms_norm(jnp.ones((4, 8)), jnp.ones(8), impl="pallas").shape
      (4, 8)
    """
    return rms_norm_with_rstd(x, weight, eps=eps, impl=impl, block_sizes=block_sizes)[0]


def layer_norm(x, weight=None, bias=None, *, eps=1e-5, impl="auto", block_sizes=None):
    """Fused LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * weight + bias.

    Args:
      x: (..., n), any float dtype; statistics are float32.
      weight, bias: optional (n,) scale and shift.
      eps: added to the biased variance.
      impl: "auto", "pallas", "onednn" or "xla" (see `pdx.kernels`); on a CPU
        "auto" takes oneDNN's layer normalization for float32 where native
        kernels are allowed (registered by `pdx.kernels.onednn`).
      block_sizes: `NormBlockSizes` for the Pallas kernel.

    Returns:
      Like x.

    Example:
      >>> layer_norm(jnp.ones((4, 8)), impl="pallas").shape
      (4, 8)
    """
    x = jnp.asarray(x)
    weight = None if weight is None else jnp.asarray(weight)
    bias = None if bias is None else jnp.asarray(bias)
    _check("layer_norm", x, {"weight": weight, "bias": bias})
    return LAYER_NORM(impl, x, weight, bias, eps=eps, block_sizes=block_sizes)
