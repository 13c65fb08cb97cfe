"""Deformable convolution v1/v2 (Paddle's `paddle.vision.ops.deform_conv2d`, `DeformConv2D`)."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from pdx import nn
from pdx._random import as_rngs
from pdx.vision.ops._common import float_array, pair

__all__ = ["deform_conv2d", "DeformConv2D"]

_HI = jax.lax.Precision.HIGHEST


def _sample(img, hs, ws):
    """Bilinear samples of img [Cg, H, W] at hs, ws [P] -> [Cg, P]; corners outside
    the image read 0 and points outside (-1, H) x (-1, W) are 0 (Paddle's rule)."""
    cg, h, w = img.shape
    flat = img.reshape(cg, h * w)
    inside = (hs > -1) & (ws > -1) & (hs < h) & (ws < w)
    h0, w0 = jnp.floor(hs), jnp.floor(ws)
    lh, lw = hs - h0, ws - w0
    h0, w0 = h0.astype(jnp.int32), w0.astype(jnp.int32)
    out = 0.0
    for dh, dw, weight in ((0, 0, (1 - lh) * (1 - lw)), (0, 1, (1 - lh) * lw), (1, 0, lh * (1 - lw)), (1, 1, lh * lw)):
        hh, ww = h0 + dh, w0 + dw
        ok = inside & (hh >= 0) & (hh <= h - 1) & (ww >= 0) & (ww <= w - 1)
        idx = jnp.clip(hh, 0, h - 1) * w + jnp.clip(ww, 0, w - 1)
        out = out + flat[:, idx] * jnp.where(ok, weight, 0.0)
    return out


def deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1, deformable_groups=1, groups=1,
                  mask=None, name=None):
    """Deformable 2-D convolution (Paddle's `paddle.vision.ops.deform_conv2d`): v1
    without `mask`, v2 (modulated) with it.

    Args:
      x: [N, C, H, W] input.
      offset: [N, 2 * deformable_groups * kh * kw, Ho, Wo]; for kernel tap (i, j)
        channels 2*(i*kw+j) and 2*(i*kw+j)+1 of each group are the (dy, dx) shifts.
      weight: [O, C / groups, kh, kw].
      bias: optional [O].
      stride, padding, dilation: int or pair.
      deformable_groups: groups of input channels sharing one offset field. Default 1.
      groups: convolution groups. Default 1.
      mask: optional [N, deformable_groups * kh * kw, Ho, Wo] modulation.

    Returns:
      [N, O, Ho, Wo]; jit-able and differentiable in x, offset, weight, bias and mask.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import deform_conv2d
      >>> x, w = jnp.ones((1, 2, 5, 5)), jnp.ones((4, 2, 3, 3))
      >>> deform_conv2d(x, jnp.zeros((1, 18, 3, 3)), w).shape
      (1, 4, 3, 3)
    """
    op = "deform_conv2d"
    x = float_array(x, op, "x", ndim=4)
    offset = float_array(offset, op, "offset", ndim=4).astype(x.dtype)
    weight = float_array(weight, op, "weight", ndim=4).astype(x.dtype)
    sh, sw = pair(stride, op, "stride")
    ph, pw = pair(padding, op, "padding")
    dh, dw = pair(dilation, op, "dilation")
    n, c, h, w = x.shape
    o, cin_g, kh, kw = weight.shape
    k = kh * kw
    if c % deformable_groups or c // groups != cin_g or o % groups:
        raise ValueError(f"deform_conv2d: x has {c} channels and weight shape {tuple(weight.shape)}; need "
                         f"channels divisible by deformable_groups={deformable_groups}, weight.shape[1] == "
                         f"channels / groups ({groups}) and out channels divisible by groups")
    ho = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    wo = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    if offset.shape != (n, 2 * deformable_groups * k, ho, wo):
        raise ValueError(f"deform_conv2d: offset must have shape {(n, 2 * deformable_groups * k, ho, wo)} "
                         f"(N, 2 * deformable_groups * kh * kw, Ho, Wo); got {tuple(offset.shape)}")
    if mask is not None:
        mask = float_array(mask, op, "mask", ndim=4).astype(x.dtype)
        if mask.shape != (n, deformable_groups * k, ho, wo):
            raise ValueError(f"deform_conv2d: mask must have shape {(n, deformable_groups * k, ho, wo)}; "
                             f"got {tuple(mask.shape)}")
    if bias is not None:
        bias = jnp.asarray(bias, x.dtype).reshape(o)
    return _deform_conv2d(x, offset, weight, bias, mask, (sh, sw), (ph, pw), (dh, dw), deformable_groups, groups)


@functools.partial(jax.jit, static_argnums=(5, 6, 7, 8, 9))
def _deform_conv2d(x, offset, weight, bias, mask, stride, padding, dilation, deformable_groups, groups):
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, w = x.shape
    o, cin_g, kh, kw = weight.shape
    k = kh * kw
    ho, wo = offset.shape[2:]
    off = offset.reshape(n, deformable_groups, k, 2, ho, wo)
    ki, kj = jnp.divmod(jnp.arange(k), kw)
    base_h = (jnp.arange(ho) * sh - ph)[None, :, None] + (ki * dh)[:, None, None]  # [K, Ho, 1]
    base_w = (jnp.arange(wo) * sw - pw)[None, None, :] + (kj * dw)[:, None, None]  # [K, 1, Wo]
    hs = (base_h + off[:, :, :, 0]).reshape(n, deformable_groups, -1)
    ws = (base_w + off[:, :, :, 1]).reshape(n, deformable_groups, -1)
    imgs = x.reshape(n, deformable_groups, c // deformable_groups, h, w)
    cols = jax.vmap(jax.vmap(_sample))(imgs, hs, ws)  # [N, dg, Cg, K*Ho*Wo]
    cols = cols.reshape(n, deformable_groups, c // deformable_groups, k, ho, wo)
    if mask is not None:
        cols = cols * mask.reshape(n, deformable_groups, 1, k, ho, wo)
    cols = cols.reshape(n, groups, cin_g * k, ho * wo)
    wmat = weight.reshape(groups, o // groups, cin_g * k)
    out = jnp.einsum("gok,ngkp->ngop", wmat, cols, precision=_HI).reshape(n, o, ho, wo)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1)
    return out


class DeformConv2D(nn.Layer):
    """Deformable convolution layer (Paddle's `paddle.vision.ops.DeformConv2D`).

    `forward(x, offset, mask=None)`; parameters `weight` [O, C / groups, kh, kw]
    and `bias` [O], as Paddle names them.

    Args:
      in_channels, out_channels: channel counts.
      kernel_size, stride, padding, dilation: int or pair.
      deformable_groups, groups: as `deform_conv2d`.
      weight_attr, bias_attr: ParamAttr (bias_attr=False: no bias).
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import DeformConv2D
      >>> conv = DeformConv2D(2, 4, 3)
      >>> conv(jnp.ones((1, 2, 5, 5)), jnp.zeros((1, 18, 3, 3))).shape
      (1, 4, 3, 3)
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 deformable_groups=1, groups=1, weight_attr=None, bias_attr=None, *, rngs=None):
        super().__init__()
        if in_channels % groups:
            raise ValueError(f"DeformConv2D: in_channels={in_channels} must be divisible by groups={groups}")
        self._kernel_size = pair(kernel_size, "DeformConv2D", "kernel_size")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._deformable_groups, self._groups = deformable_groups, groups
        rngs = as_rngs(rngs)
        std = math.sqrt(2.0 / (in_channels * math.prod(self._kernel_size)))
        self.weight = self.create_parameter((out_channels, in_channels // groups, *self._kernel_size),
                                            attr=weight_attr, default_initializer=nn.initializer.Normal(0.0, std),
                                            rngs=rngs)
        self.bias = self.create_parameter((out_channels,), attr=bias_attr, is_bias=True, rngs=rngs)

    def forward(self, x, offset, mask=None):
        bias = None if self.bias is None else self.bias.get_value()
        return deform_conv2d(x, offset, self.weight.get_value(), bias, self._stride, self._padding, self._dilation,
                             self._deformable_groups, self._groups, mask)
