"""Less common pooling: power-average (lp_pool), max unpooling and fractional max pooling.

lp_pool uses the sliding windows of `_pooling` (same padding, ceil_mode and
layout rules). max_unpool scatters values back to the flat in-plane indices
that `max_pool*d(return_mask=True)` returns. Fractional max pooling draws one
offset `u` per call (Paddle: one per call too) and pools over windows whose
starts are `int((i + u) * alpha) - int(u * alpha)`, alpha = in / out, as in
Paddle's kernel; windows are gathered with a static maximum length and masked,
so the op also runs under jit with a traced `u`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from pdx._random import next_key
from pdx.nn.functional._args import (
    array, check_rank, compiled, error, is_int, ntuple, padding_spec,
)
from pdx.nn.functional._pooling import _lowest, _reduce_windows, _window_args

__all__ = [
    "fractional_max_pool2d", "fractional_max_pool3d", "lp_pool1d", "lp_pool2d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d",
]


# ----------------------------------------------------------------------------- lp_pool

def _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, n, op):
    x = array(x, op=op)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float, np.integer, np.floating)) \
            or not norm_type > 0:
        raise error(op, f"norm_type must be a positive number (or float('inf')); got norm_type={norm_type!r}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise error(op, f"expects a floating x; got x.dtype={x.dtype}")
    axes, kernel, stride, pads, outs = _window_args(x, kernel_size, stride, padding, ceil_mode, data_format, n, op)
    if math.isinf(norm_type):
        return _reduce_windows(x, axes, kernel, stride, pads, outs, np.array(-np.inf, x.dtype), jax.lax.max)
    p = float(norm_type)
    powered = x * x if p == 2 else jnp.power(x, jnp.asarray(p, x.dtype))
    total = _reduce_windows(powered, axes, kernel, stride, pads, outs, np.array(0, x.dtype), jax.lax.add)
    if p == 1:
        return total
    return jnp.power(total, jnp.asarray(1 / p, x.dtype))


@compiled("x")
def lp_pool1d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCL", name=None):
    """Power-average pooling over 1-D windows: (sum over the window of x^p)^(1/p).

    Padding contributes zeros; `norm_type=float('inf')` is max pooling, 1 is
    sum pooling. Like Paddle, a negative window sum with a fractional 1/p is NaN.

    Args:
      x: [N, C, L] (or NLC) input.
      norm_type: the power p > 0.
      kernel_size: an int or [k].
      stride: an int or [s]; defaults to kernel_size.
      padding: an int, [p], [before, after], 'SAME' or 'VALID'.
      ceil_mode: add a last, partial window at the trailing edge.
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, L_out] (or NLC).

    Example:
      >>> F.lp_pool1d(jnp.array([[[3.0, 4.0]]]), 2, 2).tolist()
      [[[5.0]]]
    """
    return _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, 1, "lp_pool1d")


@compiled("x")
def lp_pool2d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW", name=None):
    """Power-average pooling over 2-D windows: (sum over the window of x^p)^(1/p).

    Args:
      x: [N, C, H, W] (or NHWC) input.
      norm_type: the power p > 0 (float('inf') is max pooling).
      kernel_size: an int or [kh, kw].
      stride: an int or [sh, sw]; defaults to kernel_size.
      padding: an int, 2 or 4 ints, pairs, 'SAME' or 'VALID'.
      ceil_mode: add partial windows at the trailing edges.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, H_out, W_out] (or NHWC).

    Example:
      >>> F.lp_pool2d(jnp.ones((1, 1, 4, 4)), 1, 2).tolist()
      [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    return _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, 2, "lp_pool2d")


# ----------------------------------------------------------------------------- max_unpool

_UNPOOL_FORMATS = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


def _unpool_sizes(in_sizes, kernel, stride, pads, output_size, n, op):
    default = [(i - 1) * s + k - lo - hi for i, k, s, (lo, hi) in zip(in_sizes, kernel, stride, pads)]
    if output_size is None:
        sizes = default
    else:
        if isinstance(output_size, (jax.Array, np.ndarray)):
            output_size = np.asarray(output_size).tolist()
        if not isinstance(output_size, (list, tuple)) or not all(is_int(v) for v in output_size) \
                or len(output_size) not in (n, n + 2):
            raise error(op, f"output_size={output_size!r} must be {n} ints (or {n + 2} including N and C)")
        sizes = [int(v) for v in output_size[-n:]]
        for d, (size, base, s) in enumerate(zip(sizes, default, stride)):
            if not base - s < size < base + s:
                raise error(op, f"output_size={output_size!r}: dim {d} must lie strictly between "
                                f"{base - s} and {base + s} for this kernel_size/stride/padding")
    if any(s <= 0 for s in sizes):
        raise error(op, f"the unpooled size {sizes} is empty; check kernel_size, stride and padding")
    return sizes


def _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, n, op):
    x = array(x, op=op)
    indices = array(indices, op=op, name="indices")
    if data_format != _UNPOOL_FORMATS[n]:
        raise error(op, f"data_format={data_format!r} is not supported; use {_UNPOOL_FORMATS[n]!r} (as Paddle)")
    check_rank(x, n + 2, data_format, op=op)
    if tuple(indices.shape) != tuple(x.shape):
        raise error(op, f"indices.shape={tuple(indices.shape)} must equal x.shape={tuple(x.shape)} "
                        f"(the mask of max_pool{n}d(return_mask=True))")
    if not jnp.issubdtype(indices.dtype, jnp.integer):
        raise error(op, f"indices must be an integer tensor; got indices.dtype={indices.dtype}")
    kernel = ntuple(kernel_size, n, op=f"nn.functional.{op}", name="kernel_size", minimum=1)
    stride = kernel if stride is None else ntuple(stride, n, op=f"nn.functional.{op}", name="stride", minimum=1)
    pads = padding_spec(padding, n, False, op=op)
    if pads == "SAME":
        raise error(op, "padding='SAME' is not supported by max_unpool; give the pooling's explicit padding")
    sizes = _unpool_sizes(x.shape[2:], kernel, stride, pads, output_size, n, op)
    nb, c = x.shape[:2]
    plane = math.prod(sizes)
    flat_x = x.reshape(nb, c, -1)
    flat_i = indices.reshape(nb, c, -1).astype(jnp.int32)
    out = jnp.zeros((nb, c, plane), x.dtype)
    rows = jnp.arange(nb)[:, None, None]
    cols = jnp.arange(c)[None, :, None]
    # Indices outside the plane are dropped (Paddle raises eagerly; a traced index cannot be checked).
    # Overlapping windows can share a max (same index, same value): the forward writes it once, and
    # the gradient reaches every pooled copy, as in Paddle (the scatter-add's transpose is a gather).
    written = out.at[rows, cols, flat_i].set(flat_x, mode="drop")
    summed = out.at[rows, cols, flat_i].add(flat_x, mode="drop")
    out = summed + jax.lax.stop_gradient(written - summed)
    return out.reshape(nb, c, *sizes)


@compiled("x", "indices")
def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None):
    """Partial inverse of max_pool1d: put each value back at its max position, zeros elsewhere.

    Args:
      x: [N, C, L] pooled values.
      indices: [N, C, L] int mask from `max_pool1d(..., return_mask=True)`.
      kernel_size, stride, padding: the pooling's arguments (stride defaults to kernel_size).
      data_format: 'NCL' only (as Paddle).
      output_size: [L_out] or [N, C, L_out]; default (L - 1) * stride + kernel - 2 * padding.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, L_out].

    Example:
      >>> y, m = F.max_pool1d(jnp.array([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_mask=True)
      >>> F.max_unpool1d(y, m, 2).tolist()
      [[[0.0, 3.0, 2.0, 0.0]]]
    """
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 1, "max_unpool1d")


@compiled("x", "indices")
def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None):
    """Partial inverse of max_pool2d: values go back to their max positions, zeros elsewhere.

    Args:
      x: [N, C, H, W] pooled values.
      indices: int mask from `max_pool2d(..., return_mask=True)`, shaped like x.
      kernel_size, stride, padding: the pooling's arguments (stride defaults to kernel_size).
      data_format: 'NCHW' only (as Paddle).
      output_size: [H_out, W_out] or [N, C, H_out, W_out]; default inverts the pooling's size formula.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, H_out, W_out].

    Example:
      >>> y, m = F.max_pool2d(jnp.ones((1, 1, 4, 4)), 2, return_mask=True)
      >>> F.max_unpool2d(y, m, 2).shape
      (1, 1, 4, 4)
    """
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 2, "max_unpool2d")


@compiled("x", "indices")
def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None, name=None):
    """Partial inverse of max_pool3d: values go back to their max positions, zeros elsewhere.

    Args:
      x: [N, C, D, H, W] pooled values.
      indices: int mask from `max_pool3d(..., return_mask=True)`, shaped like x.
      kernel_size, stride, padding: the pooling's arguments (stride defaults to kernel_size).
      data_format: 'NCDHW' only (as Paddle).
      output_size: 3 ints or 5 including N and C; default inverts the pooling's size formula.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, D_out, H_out, W_out].

    Example:
      >>> y, m = F.max_pool3d(jnp.ones((1, 1, 2, 2, 2)), 2, return_mask=True)
      >>> F.max_unpool3d(y, m, 2).shape
      (1, 1, 2, 2, 2)
    """
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 3, "max_unpool3d")


# ----------------------------------------------------------------------------- fractional max pool

def _fractional_windows(size, out, pool, u):
    """Traced (out,) window starts and ends along one axis, and a static bound on their length."""
    if pool is None:
        alpha = np.float32(size / out)
    else:  # overlapping windows of `pool` spread so the last one ends at the input's end
        alpha = np.float32((size - pool) / (out - 1)) if out > 1 else np.float32(0)
    if pool is None:
        # Paddle rescales u so the last window still ends inside the input.
        base = size // out
        u_max = min(np.float32(base + 2) / alpha - 1, np.float32(size + 1 - base) / alpha - np.float32(out - 1))
        u = u * jnp.float32(u_max)
    i = jnp.arange(out, dtype=jnp.float32)
    shift = jnp.floor(u * alpha).astype(jnp.int32)
    starts = jnp.floor((i + u) * alpha).astype(jnp.int32) - shift
    if pool is None:
        ends = jnp.floor((i + 1 + u) * alpha).astype(jnp.int32) - shift
        length = int(np.floor(alpha)) + 2
    else:
        ends = starts + pool
        length = pool
    starts = jnp.clip(starts, 0, size - 1)
    ends = jnp.clip(ends, starts + 1, size)
    return starts, ends, min(length, size)


def _fractional_max_pool(x, output_size, kernel_size, random_u, return_mask, n, op):
    x = array(x, op=op)
    if x.ndim != n + 2:
        raise error(op, f"expects a {n + 2}-D x in {_UNPOOL_FORMATS[n]} layout; got x.shape={tuple(x.shape)}")
    sizes = list(x.shape[2:])
    if is_int(output_size) or output_size is None:
        outs = [output_size] * n
    elif isinstance(output_size, (list, tuple)) and len(output_size) == n:
        outs = list(output_size)
    else:
        raise error(op, f"output_size={output_size!r} must be an int or {n} ints (None keeps a dim)")
    outs = [s if o is None else o for o, s in zip(outs, sizes)]
    if not all(is_int(o) and 0 < o <= s for o, s in zip(outs, sizes)):
        raise error(op, f"output_size={output_size!r} must be ints in [1, input size] for spatial "
                        f"sizes {sizes} of x.shape={tuple(x.shape)}")
    pools = [None] * n if kernel_size is None else list(ntuple(kernel_size, n, op=f"nn.functional.{op}", name="kernel_size", minimum=1))
    if any(p is not None and p > s for p, s in zip(pools, sizes)):
        raise error(op, f"kernel_size={kernel_size!r} is larger than the spatial sizes {sizes}")
    windows = [_fractional_windows(s, o, p, random_u) for s, o, p in zip(sizes, outs, pools)]
    g = x
    for j in reversed(range(n)):
        starts, _, length = windows[j]
        idx = jnp.clip(starts[:, None] + jnp.arange(length)[None, :], 0, sizes[j] - 1)  # (o, k)
        g = jnp.take(g, idx, axis=2 + j)
    # g: [N, C, o0, k0, o1, k1, ...]; bring the window axes last and flatten them.
    valid = jnp.ones((), bool)
    flat_pos = jnp.zeros((), jnp.int32)
    for j, (starts, ends, length) in enumerate(windows):
        idx = starts[:, None] + jnp.arange(length)[None, :]
        shape = [1] * (2 * n)
        shape[2 * j], shape[2 * j + 1] = idx.shape
        valid = valid & (idx < ends[:, None]).reshape(shape)
        flat_pos = flat_pos * sizes[j] + jnp.clip(idx, 0, sizes[j] - 1).reshape(shape)
    order = [2 * j for j in range(n)] + [2 * j + 1 for j in range(n)]
    interleaved = [d for w in windows for d in (w[0].shape[0], w[2])]
    valid = jnp.broadcast_to(valid, interleaved).transpose(order).reshape(*outs, -1)
    flat_pos = jnp.broadcast_to(flat_pos, interleaved).transpose(order).reshape(*outs, -1)
    g = jnp.transpose(g, [0, 1] + [2 + d for d in order]).reshape(*x.shape[:2], *outs, -1)
    g = jnp.where(valid, g, _lowest(g.dtype))
    best = jnp.argmax(g, axis=-1)[..., None]
    values = jnp.take_along_axis(g, best, axis=-1)[..., 0]
    if not return_mask:
        return values
    mask = jnp.take_along_axis(jnp.broadcast_to(flat_pos, g.shape), best, axis=-1)[..., 0]
    return values, mask.astype(jnp.int32)


def _fractional(x, output_size, kernel_size, random_u, return_mask, key, n, op):
    if random_u is None:
        u = jax.random.uniform(next_key(key, op=op), (), jnp.float32, minval=1e-6, maxval=1.0)
    elif isinstance(random_u, bool) or not isinstance(random_u, (int, float, np.floating)) \
            or not 0 < random_u < 1:
        raise error(op, f"random_u must be a float in (0, 1) or None; got random_u={random_u!r}")
    else:
        u = jnp.float32(random_u)
    return _fractional_core(x, u, output_size, kernel_size, return_mask, n, op)


@compiled("x", "u")
def _fractional_core(x, u, output_size, kernel_size, return_mask, n, op):
    return _fractional_max_pool(x, output_size, kernel_size, u, return_mask, n, op)


def fractional_max_pool2d(x, output_size, kernel_size=None, random_u=None, return_mask=False, name=None, *,
                          key=None):
    """Fractional max pooling (Graham 2015) of an [N, C, H, W] input to `output_size`.

    Window i along a dim of size `in` spans [int((i + u) * a) - int(u * a), end) with
    a = in / out and end the next window's start (or start + kernel_size when given),
    as in Paddle's kernel. `u` is `random_u`, or drawn uniformly in (0, 1) per call.

    Args:
      x: [N, C, H, W] input (NCHW only, as Paddle).
      output_size: an int or [H_out, W_out] (None entries keep that dim).
      kernel_size: None (disjoint windows) or an int / 2 ints (overlapping windows).
      random_u: the offset in (0, 1), or None to draw one.
      return_mask: also return the flat in-plane index of each max (int32).
      name: ignored (Paddle compatibility).
      key: jax PRNG key for `u` when random_u is None; required under jit (pdx-only keyword).

    Returns:
      [N, C, H_out, W_out], plus the mask when return_mask.

    Example:
      >>> F.fractional_max_pool2d(jnp.ones((1, 1, 7, 7)), 3, random_u=0.5).shape
      (1, 1, 3, 3)
    """
    return _fractional(x, output_size, kernel_size, random_u, return_mask, key, 2, "fractional_max_pool2d")


def fractional_max_pool3d(x, output_size, kernel_size=None, random_u=None, return_mask=False, name=None, *,
                          key=None):
    """Fractional max pooling (Graham 2015) of an [N, C, D, H, W] input to `output_size`.

    See `fractional_max_pool2d` for the window rule.

    Args:
      x: [N, C, D, H, W] input (NCDHW only, as Paddle).
      output_size: an int or [D_out, H_out, W_out] (None entries keep that dim).
      kernel_size: None (disjoint windows) or an int / 3 ints (overlapping windows).
      random_u: the offset in (0, 1), or None to draw one.
      return_mask: also return the flat in-volume index of each max (int32).
      name: ignored (Paddle compatibility).
      key: jax PRNG key for `u` when random_u is None; required under jit (pdx-only keyword).

    Returns:
      [N, C, D_out, H_out, W_out], plus the mask when return_mask.

    Example:
      >>> F.fractional_max_pool3d(jnp.ones((1, 1, 5, 5, 5)), 2, random_u=0.3).shape
      (1, 1, 2, 2, 2)
    """
    return _fractional(x, output_size, kernel_size, random_u, return_mask, key, 3, "fractional_max_pool3d")
