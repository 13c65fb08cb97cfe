"""RoI pooling: roi_align, roi_pool, psroi_pool and their Layers (Paddle's
`paddle.vision.ops`). Fixed output shapes: all three jit, and roi_align and
psroi_pool differentiate with respect to `x`."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx import nn
from pdx.vision.ops._common import float_array, is_concrete, pair, roi_batch_index

__all__ = ["roi_align", "RoIAlign", "roi_pool", "RoIPool", "psroi_pool", "PSRoIPool"]

_HI = jax.lax.Precision.HIGHEST


def _check(x, boxes, op):
    x = float_array(x, op, "x", ndim=4)
    boxes = float_array(boxes, op, "boxes", ndim=2, last=4).astype(x.dtype)
    return x, boxes


def _bilinear_weights(coord, size):
    """Weights [..., size] of bilinear sampling at `coord` along one axis, with the
    RoIAlign boundary rule: zero beyond [-1, size], clamped to the edge inside."""
    valid = (coord >= -1.0) & (coord <= size)
    c = jnp.maximum(coord, 0.0)
    low = jnp.floor(c).astype(jnp.int32)
    at_edge = low >= size - 1
    low = jnp.where(at_edge, size - 1, low)
    high = jnp.where(at_edge, size - 1, low + 1)
    c = jnp.where(at_edge, low.astype(c.dtype), c)
    frac = c - low
    grid = jnp.arange(size)
    w = (grid == low[..., None]) * (1.0 - frac)[..., None] + (grid == high[..., None]) * frac[..., None]
    return jnp.where(valid[..., None], w, 0.0).astype(coord.dtype)


def roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=True, name=None):
    """RoIAlign (Paddle's `paddle.vision.ops.roi_align`): average of bilinear samples
    in each output bin of each box.

    Args:
      x: [N, C, H, W] features.
      boxes: [K, 4] boxes (x1, y1, x2, y2) in input-image coordinates.
      boxes_num: [N] int, how many of the boxes belong to each image (in order).
      output_size: int or (ph, pw).
      spatial_scale: multiplies box coordinates into feature coordinates. Default 1.0.
      sampling_ratio: samples per bin per axis; -1 (default) means
        ceil(box size / output size), chosen per box from the box values, which
        needs concrete boxes: under `pdx.jit` pass a positive sampling_ratio.
      aligned: shift boxes by half a pixel (pixel-center convention). Default True.

    Returns:
      [K, C, ph, pw]; differentiable with respect to `x`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import roi_align
      >>> x = jnp.arange(16.0).reshape(1, 1, 4, 4)
      >>> roi_align(x, jnp.array([[0.0, 0, 4, 4]]), jnp.array([1]), 2).shape
      (1, 1, 2, 2)
    """
    op = "roi_align"
    x, boxes = _check(x, boxes, op)
    ph, pw = pair(output_size, op, "output_size")
    batch_idx = roi_batch_index(boxes_num, boxes.shape[0], x.shape[0], op)
    if sampling_ratio > 0:
        gh = gw = int(sampling_ratio)
    else:
        if not is_concrete(boxes):
            raise ValueError("roi_align: sampling_ratio=-1 picks the samples per bin from the box values, which "
                             "are not known while tracing (pdx.jit); pass a positive sampling_ratio, e.g. 2")
        b = np.asarray(boxes, np.float64) * spatial_scale
        sizes = b[:, 2:] - b[:, :2]
        if not aligned:
            sizes = np.maximum(sizes, 1.0)
        gh = max(int(np.ceil(sizes[:, 1] / ph).max()) if len(b) else 1, 1)
        gw = max(int(np.ceil(sizes[:, 0] / pw).max()) if len(b) else 1, 1)
    return _roi_align(x, boxes, batch_idx, float(spatial_scale), ph, pw, gh, gw, sampling_ratio <= 0, bool(aligned))


@functools.partial(jax.jit, static_argnums=(3, 4, 5, 6, 7, 8, 9))
def _roi_align(x, boxes, batch_idx, spatial_scale, ph, pw, gh, gw, adaptive, aligned):
    """roi_align on a static sample grid of gh x gw per bin (per-box grids masked inside it when adaptive)."""
    h, w = x.shape[2:]
    k = boxes.shape[0]
    offset = 0.5 if aligned else 0.0
    b = boxes * spatial_scale - offset
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    roi_w, roi_h = x2 - x1, y2 - y1
    if not aligned:
        roi_w, roi_h = jnp.maximum(roi_w, 1.0), jnp.maximum(roi_h, 1.0)
    bin_h, bin_w = roi_h / ph, roi_w / pw
    if adaptive:
        grid_h, grid_w = jnp.ceil(roi_h / ph), jnp.ceil(roi_w / pw)
    else:
        grid_h, grid_w = jnp.full((k,), gh, x.dtype), jnp.full((k,), gw, x.dtype)
    # Sample coordinates [K, ph, gh] and [K, pw, gw]; samples past a box's own grid are masked.
    iy, ix = jnp.arange(gh, dtype=x.dtype), jnp.arange(gw, dtype=x.dtype)
    ys = (y1[:, None, None] + jnp.arange(ph, dtype=x.dtype)[None, :, None] * bin_h[:, None, None]
          + (iy + 0.5)[None, None, :] * (bin_h / jnp.maximum(grid_h, 1.0))[:, None, None])
    xs = (x1[:, None, None] + jnp.arange(pw, dtype=x.dtype)[None, :, None] * bin_w[:, None, None]
          + (ix + 0.5)[None, None, :] * (bin_w / jnp.maximum(grid_w, 1.0))[:, None, None])
    wy = _bilinear_weights(ys, h) * (iy[None, None, :] < grid_h[:, None, None])[..., None]
    wx = _bilinear_weights(xs, w) * (ix[None, None, :] < grid_w[:, None, None])[..., None]
    ay, ax = wy.sum(2), wx.sum(2)  # [K, ph, H], [K, pw, W]
    count = jnp.maximum(grid_h * grid_w, 1.0)
    out = jnp.einsum("kph,kchw,kqw->kcpq", ay, x[batch_idx], ax, precision=_HI)
    return out / count[:, None, None, None]


def _bin_masks(start, end, size):
    """[K, P, size] membership of each pixel in each bin [start, end)."""
    grid = jnp.arange(size)
    return (grid >= start[..., None]) & (grid < end[..., None])


def roi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """RoI max pooling (Paddle's `paddle.vision.ops.roi_pool`): boxes rounded to the
    feature grid, split into bins, max over each bin (0 for an empty bin).

    Args:
      x: [N, C, H, W] features.
      boxes: [K, 4] boxes (x1, y1, x2, y2).
      boxes_num: [N] int, boxes per image.
      output_size: int or (ph, pw).
      spatial_scale: multiplies box coordinates. Default 1.0.

    Returns:
      [K, C, ph, pw].

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import roi_pool
      >>> x = jnp.arange(16.0).reshape(1, 1, 4, 4)
      >>> roi_pool(x, jnp.array([[0.0, 0, 3, 3]]), jnp.array([1]), 2)[0, 0].tolist()
      [[5.0, 7.0], [13.0, 15.0]]
    """
    op = "roi_pool"
    x, boxes = _check(x, boxes, op)
    ph, pw = pair(output_size, op, "output_size")
    batch_idx = roi_batch_index(boxes_num, boxes.shape[0], x.shape[0], op)
    return _roi_pool(x, boxes, batch_idx, float(spatial_scale), ph, pw)


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def _roi_pool(x, boxes, batch_idx, spatial_scale, ph, pw):
    h, w = x.shape[2:]
    r = jnp.round(boxes * spatial_scale)
    x1, y1, x2, y2 = r[:, 0], r[:, 1], r[:, 2], r[:, 3]
    roi_h = jnp.maximum(y2 - y1 + 1, 1.0)
    roi_w = jnp.maximum(x2 - x1 + 1, 1.0)

    def bins(start, length, p, size):
        i = jnp.arange(p, dtype=x.dtype)
        size_bin = length[:, None] / p
        lo = jnp.clip(jnp.floor(i * size_bin) + start[:, None], 0, size)
        hi = jnp.clip(jnp.ceil((i + 1) * size_bin) + start[:, None], 0, size)
        return _bin_masks(lo, hi, size)

    mh, mw = bins(y1, roi_h, ph, h), bins(x1, roi_w, pw, w)  # [K, ph, H], [K, pw, W]
    feats = x[batch_idx]  # [K, C, H, W]
    neg = jnp.array(-jnp.inf, x.dtype)
    t = jnp.max(jnp.where(mw[:, None, None, :, :], feats[:, :, :, None, :], neg), axis=-1)  # [K, C, H, pw]
    out = jnp.max(jnp.where(mh[:, None, :, None, :], jnp.swapaxes(t, 2, 3)[:, :, None], neg), axis=-1)
    return jnp.where(jnp.isneginf(out), 0.0, out).astype(x.dtype)


def psroi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """Position-sensitive RoI average pooling (Paddle's `paddle.vision.ops.psroi_pool`):
    output bin (i, j) of channel c averages input channel (c * ph + i) * pw + j.

    Args:
      x: [N, C, H, W] features with C divisible by ph * pw.
      boxes: [K, 4] boxes (x1, y1, x2, y2).
      boxes_num: [N] int, boxes per image.
      output_size: int or (ph, pw).
      spatial_scale: multiplies box coordinates. Default 1.0.

    Returns:
      [K, C / (ph * pw), ph, pw]; differentiable with respect to `x`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import psroi_pool
      >>> psroi_pool(jnp.ones((1, 8, 6, 6)), jnp.array([[0.0, 0, 5, 5]]), jnp.array([1]), 2).shape
      (1, 2, 2, 2)
    """
    op = "psroi_pool"
    x, boxes = _check(x, boxes, op)
    ph, pw = pair(output_size, op, "output_size")
    n, c, h, w = x.shape
    if c % (ph * pw):
        raise ValueError(f"psroi_pool: the input channels ({c}) must be divisible by output_size[0] * "
                         f"output_size[1] = {ph * pw}")
    batch_idx = roi_batch_index(boxes_num, boxes.shape[0], n, op)
    return _psroi_pool(x, boxes, batch_idx, float(spatial_scale), ph, pw)


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def _psroi_pool(x, boxes, batch_idx, spatial_scale, ph, pw):
    c, h, w = x.shape[1:]
    out_c = c // (ph * pw)
    r = jnp.round(boxes)
    x1, y1 = r[:, 0] * spatial_scale, r[:, 1] * spatial_scale
    x2, y2 = (r[:, 2] + 1.0) * spatial_scale, (r[:, 3] + 1.0) * spatial_scale
    roi_h = jnp.maximum(y2 - y1, 0.1)
    roi_w = jnp.maximum(x2 - x1, 0.1)

    def bins(start, length, p, size):
        i = jnp.arange(p, dtype=x.dtype)
        size_bin = length[:, None] / p
        lo = jnp.clip(jnp.floor(i * size_bin + start[:, None]), 0, size)
        hi = jnp.clip(jnp.ceil((i + 1) * size_bin + start[:, None]), 0, size)
        return _bin_masks(lo, hi, size), hi - lo

    mh, nh = bins(y1, roi_h, ph, h)
    mw, nw = bins(x1, roi_w, pw, w)
    feats = x[batch_idx].reshape(-1, out_c, ph, pw, h, w)
    sums = jnp.einsum("kcpqhw,kph,kqw->kcpq", feats, mh.astype(x.dtype), mw.astype(x.dtype), precision=_HI)
    area = nh[:, :, None] * nw[:, None, :]
    return jnp.where(area[:, None] > 0, sums / jnp.maximum(area, 1.0)[:, None], 0.0).astype(x.dtype)


class _RoILayer(nn.Layer):
    _fn = None

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def extra_repr(self):
        return f"output_size={self._output_size}, spatial_scale={self._spatial_scale}"


class RoIAlign(_RoILayer):
    """Layer form of `roi_align` (Paddle's `paddle.vision.ops.RoIAlign`).

    Args:
      output_size: int or (ph, pw).
      spatial_scale: multiplies box coordinates. Default 1.0.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import RoIAlign
      >>> RoIAlign(2)(jnp.ones((1, 3, 8, 8)), jnp.array([[0.0, 0, 4, 4]]), jnp.array([1])).shape
      (1, 3, 2, 2)
    """

    def forward(self, x, boxes, boxes_num, aligned=True):
        return roi_align(x, boxes, boxes_num, self._output_size, self._spatial_scale, aligned=aligned)


class RoIPool(_RoILayer):
    """Layer form of `roi_pool` (Paddle's `paddle.vision.ops.RoIPool`).

    Args:
      output_size: int or (ph, pw).
      spatial_scale: multiplies box coordinates. Default 1.0.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import RoIPool
      >>> RoIPool(2)(jnp.ones((1, 3, 8, 8)), jnp.array([[0.0, 0, 4, 4]]), jnp.array([1])).shape
      (1, 3, 2, 2)
    """

    def forward(self, x, boxes, boxes_num):
        return roi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)


class PSRoIPool(_RoILayer):
    """Layer form of `psroi_pool` (Paddle's `paddle.vision.ops.PSRoIPool`).

    Args:
      output_size: int or (ph, pw).
      spatial_scale: multiplies box coordinates. Default 1.0.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import PSRoIPool
      >>> PSRoIPool(2)(jnp.ones((1, 8, 8, 8)), jnp.array([[0.0, 0, 4, 4]]), jnp.array([1])).shape
      (1, 2, 2, 2)
    """

    def forward(self, x, boxes, boxes_num):
        return psroi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)
