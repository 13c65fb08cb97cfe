"""Spatial transformer ops: affine_grid builds sampling grids, grid_sample reads them.

Coordinates are normalized to [-1, 1] (x first, then y, then z), Paddle's
convention: with align_corners=True -1 and 1 are the centers of the corner
pixels, otherwise their outer edges. Both ops work on 4-D (2-D images) and
5-D (volumes) inputs and are differentiable in the input and in the grid.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from pdx.nn.functional._args import array, compiled, error, float_array, is_int

__all__ = ["affine_grid", "grid_sample"]


def _base_coords(size: int, align_corners: bool) -> np.ndarray:
    if size == 1:
        return np.zeros(1, np.float32)
    if align_corners:
        return np.linspace(-1, 1, size, dtype=np.float32)
    return ((np.arange(size, dtype=np.float32) * 2 + 1) / size - 1).astype(np.float32)


@compiled("theta")
def affine_grid(theta, out_shape, align_corners=True, name=None):
    """Sampling grid of an affine map: grid[n, ..., :] = theta[n] @ [x, y, (z,) 1].

    Args:
      theta: [N, 2, 3] (2-D) or [N, 3, 4] (3-D) affine matrices.
      out_shape: [N, C, H, W] or [N, C, D, H, W] (a list or a concrete int tensor).
      align_corners: -1 and 1 are corner pixel centers (True) or edges (False).
      name: ignored (Paddle compatibility).

    Returns:
      [N, H, W, 2] or [N, D, H, W, 3] normalized (x, y[, z]) coordinates.

    Example:
      >>> F.affine_grid(jnp.array([[[1.0, 0, 0], [0, 1.0, 0]]]), [1, 1, 2, 2]).tolist()
      [[[[-1.0, -1.0], [1.0, -1.0]], [[-1.0, 1.0], [1.0, 1.0]]]]
    """
    theta = float_array(theta, op="affine_grid", name="theta")
    if isinstance(out_shape, (jax.Array, np.ndarray)):
        out_shape = np.asarray(out_shape).tolist()
    if not isinstance(out_shape, (list, tuple)) or len(out_shape) not in (4, 5) \
            or not all(is_int(v) and v > 0 for v in out_shape):
        raise error("affine_grid", f"out_shape={out_shape!r} must be 4 or 5 positive ints ([N, C, (D,) H, W])")
    n = len(out_shape) - 2
    if theta.shape != (out_shape[0], n, n + 1):
        raise error("affine_grid", f"theta.shape={tuple(theta.shape)} must be [N, {n}, {n + 1}] with "
                                   f"N={out_shape[0]} for out_shape={list(out_shape)}")
    spatial = list(out_shape[2:])  # (D,) H, W
    axes = [_base_coords(s, align_corners) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # each (D,) H, W
    # Homogeneous coordinates ordered x (W), y (H), (z (D)), 1.
    base = np.stack([*reversed(mesh), np.ones(spatial, np.float32)], axis=-1)
    grid = jnp.einsum("...k,nik->n...i", jnp.asarray(base, theta.dtype), theta)
    return grid


_MODES = ("bilinear", "nearest")
_PADDING = ("zeros", "border", "reflection")


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, lo, hi):
    """Reflect coordinates into [lo, hi] (repeatedly, like a mirror pair)."""
    span = hi - lo
    if span <= 0:
        return jnp.zeros_like(coord)
    c = jnp.abs(coord - lo)
    flips = jnp.floor(c / span)
    extra = c - flips * span
    return jnp.where(jnp.mod(flips, 2) == 0, lo + extra, hi - extra)


def _source_coords(coord, size, padding_mode, align_corners):
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = jnp.clip(c, 0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0.0, size - 1.0) if align_corners else _reflect(c, -0.5, size - 0.5)
        c = jnp.clip(c, 0, size - 1)
    return c


@compiled("x", "grid")
def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True, name=None):
    """Sample x at the normalized (x, y[, z]) positions of `grid` (spatial transformer networks).

    Args:
      x: [N, C, H, W] or [N, C, D, H, W] input.
      grid: [N, H_out, W_out, 2] or [N, D_out, H_out, W_out, 3] coordinates in [-1, 1].
      mode: 'bilinear' (trilinear for 5-D) or 'nearest' (rounds half to even).
      padding_mode: 'zeros', 'border' or 'reflection' for positions outside the input.
      align_corners: -1 and 1 are corner pixel centers (True) or edges (False).
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, H_out, W_out] or [N, C, D_out, H_out, W_out].

    Example:
      >>> x = jnp.arange(4.0).reshape(1, 1, 2, 2)
      >>> F.grid_sample(x, jnp.zeros((1, 1, 1, 2))).tolist()
      [[[[1.5]]]]
    """
    x = float_array(x, op="grid_sample")
    grid = array(grid, op="grid_sample", name="grid").astype(x.dtype)
    if mode not in _MODES:
        raise error("grid_sample", f"mode={mode!r} is not supported; use one of {list(_MODES)}")
    if padding_mode not in _PADDING:
        raise error("grid_sample", f"padding_mode={padding_mode!r} is not supported; use one of {list(_PADDING)}")
    if x.ndim not in (4, 5):
        raise error("grid_sample", f"expects a 4-D or 5-D x; got x.shape={tuple(x.shape)}")
    n = x.ndim - 2
    if grid.ndim != x.ndim or grid.shape[0] != x.shape[0] or grid.shape[-1] != n:
        raise error("grid_sample", f"grid.shape={tuple(grid.shape)} must be [N, *out, {n}] with N={x.shape[0]} "
                                   f"for x.shape={tuple(x.shape)}")
    sizes = x.shape[2:]  # (D,) H, W
    # grid's last axis is (x, y[, z]): reverse it to match the spatial dims (D,) H, W.
    coords = [_source_coords(grid[..., n - 1 - d], sizes[d], padding_mode, align_corners) for d in range(n)]
    xt = jnp.moveaxis(x, 1, -1)  # [N, *spatial, C]
    batch = jnp.arange(x.shape[0]).reshape((-1,) + (1,) * n)

    def gather(indices):
        valid = jnp.ones(indices[0].shape, bool)
        clipped = []
        for idx, size in zip(indices, sizes):
            valid = valid & (idx >= 0) & (idx <= size - 1)
            clipped.append(jnp.clip(idx, 0, size - 1))
        vals = xt[(batch, *clipped)]  # [N, *out, C]
        return jnp.where(valid[..., None], vals, jnp.zeros((), x.dtype))

    if mode == "nearest":
        out = gather([jnp.round(c).astype(jnp.int32) for c in coords])
    else:
        lows = [jnp.floor(c) for c in coords]
        fracs = [c - lo for c, lo in zip(coords, lows)]
        out = None
        for corner in itertools.product((0, 1), repeat=n):
            weight = None
            for bit, f in zip(corner, fracs):
                w = f if bit else 1 - f
                weight = w if weight is None else weight * w
            idx = [(lo + bit).astype(jnp.int32) for lo, bit in zip(lows, corner)]
            term = gather(idx) * weight[..., None]
            out = term if out is None else out + term
    return jnp.moveaxis(out, -1, 1)
