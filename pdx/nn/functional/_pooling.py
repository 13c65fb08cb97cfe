"""Max/average pooling and their adaptive forms over 1, 2 or 3 spatial dims.

Window semantics follow Paddle's CPU pooling kernels: a window starts at
`o * stride - pad_before` and is clipped to the input, so padding never wins a
max; with `exclusive=True` an average divides by the number of input elements
in the clipped window, otherwise by the window clipped at `size + pad_before`
(the kernel size unless ceil_mode or asymmetric padding cut it). `ceil_mode`
only adds output positions at the trailing edge. Adaptive bins span
[floor(i * in / out), ceil((i + 1) * in / out)).

`return_mask=True` also returns, per output, the flat index of the max within
its (batch, channel) spatial plane (int32; Paddle returns int32 too).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from pdx.nn.functional._args import (
    CHANNEL_FIRST, array, check_rank, compiled, concrete_ints, error, is_int, ntuple, padding_spec, same_pads, spatial_format,
)

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "max_pool1d", "max_pool2d", "max_pool3d",
]


def _lowest(dtype):
    # Paddle starts a max at the lowest finite value, which is what a window lying
    # wholly in the padding (possible with ceil_mode) returns.
    # A concrete (numpy) value, so reduce_window sees a known init and stays differentiable.
    if jnp.issubdtype(dtype, jnp.floating):
        return np.array(jnp.finfo(dtype).min, dtype)
    return np.array(jnp.iinfo(dtype).min, dtype)


def _window_args(x, kernel_size, stride, padding, ceil_mode, data_format, n, op):
    """Validate and resolve pooling arguments -> (spatial axes, kernel, stride, pads, out sizes)."""
    is_last = spatial_format(data_format, n, op=op)
    check_rank(x, n + 2, data_format, op=op)
    kernel = ntuple(kernel_size, n, op=f"nn.functional.{op}", name="kernel_size", minimum=1)
    stride = kernel if stride is None else ntuple(stride, n, op=f"nn.functional.{op}", name="stride", minimum=1)
    axes = list(range(1, n + 1)) if is_last else list(range(2, n + 2))
    sizes = [x.shape[a] for a in axes]
    if isinstance(padding, str) and padding.upper() == "VALID" and ceil_mode:
        raise error(op, "padding='VALID' cannot be combined with ceil_mode=True")
    pads = padding_spec(padding, n, is_last, op=op)
    if pads == "SAME":
        pads = same_pads(sizes, kernel, stride)
    outs = []
    for size, k, s, (lo, hi) in zip(sizes, kernel, stride, pads):
        span = size + lo + hi - k
        out = (span + (s - 1 if ceil_mode else 0)) // s + 1
        if span < 0 or out <= 0:
            raise error(op, f"kernel_size={tuple(kernel)} is larger than the padded input {tuple(sizes)} "
                            f"(padding {pads}) of x.shape={tuple(x.shape)}")
        outs.append(out)
    return axes, kernel, stride, pads, outs


def _reduce_windows(x, axes, kernel, stride, pads, outs, init, computation):
    dims = [1] * x.ndim
    strides = [1] * x.ndim
    padding = [(0, 0)] * x.ndim
    for a, k, s, (lo, _), o in zip(axes, kernel, stride, pads, outs):
        dims[a], strides[a] = k, s
        # Exactly `o` windows: ceil_mode may need more trailing padding than `hi`, and
        # floor mode may leave trailing elements unused (sliced off: JAX cannot
        # differentiate reduce_window with negative padding).
        hi = (o - 1) * s + k - x.shape[a] - lo
        if hi < 0:
            x = jax.lax.slice_in_dim(x, 0, x.shape[a] + hi, axis=a)
            hi = 0
        padding[a] = (lo, hi)
    return jax.lax.reduce_window(x, init, computation, tuple(dims), tuple(strides), padding)


def _window_index(spec):
    """(out, k) input indices of each window along one axis, and which lie inside the input.

    `spec` is ("slide", size, kernel, stride, pad_before, out) or ("adapt", size, out).
    """
    if spec[0] == "slide":
        _, size, k, s, lo, out = spec
        idx = (np.arange(out) * s - lo)[:, None] + np.arange(k)[None, :]
        return idx, (idx >= 0) & (idx < size)
    _, size, out = spec
    starts = (np.arange(out) * size) // out
    ends = -((-(np.arange(out) + 1) * size) // out)
    idx = starts[:, None] + np.arange(int((ends - starts).max()))[None, :]
    return idx, idx < ends[:, None]


def _max_with_mask(x, specs):
    """Max over windows of the trailing spatial axes, plus the flat spatial index of the first max.

    x is channel-first ([N, C, *spatial]); `specs` holds one window spec per spatial axis.
    """
    n = len(specs)
    lead = x.ndim - n
    windows = [_window_index(spec) for spec in specs]
    g = x
    for j in reversed(range(n)):  # last axis first, so earlier axis numbers stay valid
        idx, _ = windows[j]
        g = jnp.take(g, jnp.asarray(np.clip(idx, 0, x.shape[lead + j] - 1), jnp.int32), axis=lead + j)
    # g: [*lead, o0, k0, o1, k1, ...] -> [*lead, o0, o1, ..., k0 * k1 * ...]
    valid = np.ones((), bool)
    flat_pos = np.zeros((), np.int64)
    for j, (idx, ok) in enumerate(windows):
        # Broadcast (o_j, k_j) into the interleaved [o0, k0, o1, k1, ...] layout.
        shape = [1] * (2 * n)
        shape[2 * j], shape[2 * j + 1] = idx.shape
        valid = valid & ok.reshape(shape)
        flat_pos = flat_pos * x.shape[lead + j] + np.clip(idx, 0, None).reshape(shape)
    order = [2 * j for j in range(n)] + [2 * j + 1 for j in range(n)]
    outs = [w[0].shape[0] for w in windows]
    interleaved = [d for w in windows for d in w[0].shape]
    valid = np.broadcast_to(valid, interleaved).transpose(order).reshape(*outs, -1)
    flat_pos = np.broadcast_to(flat_pos, interleaved).transpose(order).reshape(*outs, -1)
    g = jnp.transpose(g, list(range(lead)) + [lead + d for d in order]).reshape(*x.shape[:lead], *outs, -1)
    g = jnp.where(jnp.asarray(valid), g, _lowest(g.dtype))
    best = jnp.argmax(g, axis=-1)
    values = jnp.take_along_axis(g, best[..., None], axis=-1)[..., 0]
    positions = jnp.broadcast_to(jnp.asarray(flat_pos, jnp.int32), g.shape)
    mask = jnp.take_along_axis(positions, best[..., None], axis=-1)[..., 0]
    return values, mask


def _max_pool_with_mask(x, axes, specs):
    if axes[0] == 1:  # channel-last: move channels next to the batch dim and back
        values, mask = _max_with_mask(jnp.moveaxis(x, -1, 1), specs)
        return jnp.moveaxis(values, 1, -1), jnp.moveaxis(mask, 1, -1)
    return _max_with_mask(x, specs)


def _max_pool(x, kernel_size, stride, padding, return_mask, ceil_mode, data_format, n, op):
    x = array(x, op=op)
    axes, kernel, stride, pads, outs = _window_args(x, kernel_size, stride, padding, ceil_mode, data_format, n, op)
    if return_mask:
        specs = tuple(("slide", x.shape[a], k, s, lo, o)
                      for a, k, s, (lo, _), o in zip(axes, kernel, stride, pads, outs))
        return _max_pool_with_mask(x, axes, specs)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return _reduce_windows(x, axes, kernel, stride, pads, outs, _lowest(x.dtype), jax.lax.max)
    # An -inf start lets JAX differentiate the max; Paddle's start is the lowest finite value.
    out = _reduce_windows(x, axes, kernel, stride, pads, outs, np.array(-np.inf, x.dtype), jax.lax.max)
    return jnp.where(out == -jnp.inf, _lowest(x.dtype), out)


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format, n, op):
    x = array(x, op=op)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    axes, kernel, stride, pads, outs = _window_args(x, kernel_size, stride, padding, ceil_mode, data_format, n, op)
    total = _reduce_windows(x, axes, kernel, stride, pads, outs, np.array(0, x.dtype), jax.lax.add)
    count = np.ones([1] * x.ndim, np.float32)
    for a, k, s, (lo, _), o in zip(axes, kernel, stride, pads, outs):
        if exclusive:
            _, valid = _window_index(("slide", x.shape[a], k, s, lo, o))
            per_dim = valid.sum(axis=1)
        else:
            # Paddle's CPU kernel clips a window's end at size + pad_before (even for the
            # trailing side) and counts the leading padding.
            start = np.arange(o) * s - lo
            per_dim = np.minimum(start + k, x.shape[a] + lo) - start
        shape = [1] * x.ndim
        shape[a] = o
        count = count * per_dim.reshape(shape)
    # An exclusive window wholly in the padding has count 0 and averages to NaN, as in Paddle.
    out = total / jnp.asarray(count, x.dtype)
    if divisor_override:
        out = out * (math.prod(kernel) / divisor_override)
    return out


def _adaptive_avg(x, axes, specs):
    out = x
    # Averages are separable: average each spatial axis over its bins in turn.
    for a, spec in zip(axes, specs):
        _, size, bins = spec
        if size % bins == 0:  # equal, disjoint bins: a mean over a reshape (no gather)
            shape = out.shape[:a] + (bins, size // bins) + out.shape[a + 1:]
            out = jnp.mean(out.reshape(shape), axis=a + 1)
            continue
        idx, valid = _window_index(spec)
        g = jnp.take(out, jnp.asarray(np.minimum(idx, out.shape[a] - 1), jnp.int32), axis=a)  # (..., o, w, ...)
        shape = [1] * g.ndim
        shape[a], shape[a + 1] = valid.shape
        weights = (valid / valid.sum(axis=1, keepdims=True)).reshape(shape)
        out = jnp.sum(g * jnp.asarray(weights, x.dtype), axis=a + 1)
    return out


def _adaptive_pool(x, output_size, data_format, kind, return_mask, n, op):
    x = array(x, op=op)
    is_last = spatial_format(data_format, n, op=op)
    check_rank(x, n + 2, data_format, op=op)
    axes = tuple(range(1, n + 1)) if is_last else tuple(range(2, n + 2))
    sizes = [x.shape[a] for a in axes]
    output_size = concrete_ints(output_size)
    if is_int(output_size):
        outs = [int(output_size)] * n
    elif isinstance(output_size, (list, tuple)) and len(output_size) == n:
        outs = [sizes[i] if o is None else int(o) for i, o in enumerate(output_size)]
    else:
        raise error(op, f"output_size={output_size!r} must be an int or {n} ints (None keeps that input size)")
    if any(o <= 0 for o in outs):
        raise error(op, f"output_size={output_size!r} must be positive")
    specs = tuple(("adapt", s, o) for s, o in zip(sizes, outs))
    if kind == "max":
        values, mask = _max_pool_with_mask(x, axes, specs)
        return (values, mask) if return_mask else values
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    return _adaptive_avg(x, axes, specs)


# ----------------------------------------------------------------------------- public API

@compiled("x")
def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
    """1-D max pooling over [N, C, L].

    Args:
      x: [N, C, L] input.
      kernel_size, stride: an int or [int]; stride defaults to kernel_size.
      padding: int, [int], [before, after], [[0,0],[0,0],[b,a]], 'SAME' or 'VALID'.
      return_mask: also return the argmax indices.
      ceil_mode: use ceil for the output length.
      name: ignored.

    Returns:
      [N, C, L_out] (and int32 indices when return_mask).

    Example:
      >>> F.max_pool1d(jnp.arange(6.0).reshape(1, 1, 6), 2).tolist()
      [[[1.0, 3.0, 5.0]]]
    """
    return _max_pool(x, kernel_size, stride, padding, return_mask, ceil_mode, "NCL", 1, "max_pool1d")


@compiled("x")
def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
               name=None):
    """2-D max pooling.

    Args:
      x: [N, C, H, W] (or NHWC) input.
      kernel_size, stride: an int or 2 ints; stride defaults to kernel_size.
      padding: int, 2 ints, 4 ints [top, bottom, left, right], 4 pairs incl. batch/channel, 'SAME' or 'VALID'.
      return_mask: also return the flat (h * W + w) argmax indices.
      ceil_mode: use ceil for the output size.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored.

    Returns:
      The pooled tensor (and int32 indices when return_mask).

    Example:
      >>> F.max_pool2d(jnp.ones((1, 1, 4, 4)), 2).shape
      (1, 1, 2, 2)
    """
    return _max_pool(x, kernel_size, stride, padding, return_mask, ceil_mode, data_format, 2, "max_pool2d")


@compiled("x")
def max_pool3d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
               name=None):
    """3-D max pooling over [N, C, D, H, W] (or NDHWC).

    Args:
      x: [N, C, D, H, W] (or NDHWC) input.
      kernel_size: window size: an int or one int per spatial dim.
      stride: window step: an int or one int per spatial dim (default: kernel_size).
      padding: an int, one int per spatial dim, before/after per dim, pairs incl. batch/channel, 'SAME' or 'VALID'.
      return_mask: also return the int32 flat spatial index of each max.
      ceil_mode: use ceil instead of floor for the output size.
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor (and int32 indices when return_mask).

    Example:
      >>> F.max_pool3d(jnp.ones((1, 1, 2, 4, 4)), 2).shape
      (1, 1, 1, 2, 2)
    """
    return _max_pool(x, kernel_size, stride, padding, return_mask, ceil_mode, data_format, 3, "max_pool3d")


@compiled("x")
def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
    """1-D average pooling over [N, C, L] (note Paddle's order: exclusive before ceil_mode).

    Args:
      x: [N, C, L] input.
      kernel_size: window size: an int or one int per spatial dim.
      stride: window step: an int or one int per spatial dim (default: kernel_size).
      padding: an int, one int per spatial dim, before/after per dim, pairs incl. batch/channel, 'SAME' or 'VALID'.
      exclusive: divide by the count of non-padding elements (True) or the clipped window size.
      ceil_mode: use ceil instead of floor for the output size.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor.

    Example:
      >>> F.avg_pool1d(jnp.arange(4.0).reshape(1, 1, 4), 2).tolist()
      [[[0.5, 2.5]]]
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive, None, "NCL", 1, "avg_pool1d")


@compiled("x")
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    """2-D average pooling.

    Args:
      x: [N, C, H, W] (or NHWC) input.
      kernel_size, stride, padding, ceil_mode: as in max_pool2d.
      exclusive: divide by the count of non-padding elements (True) or the kernel size.
      divisor_override: if set, divide every window sum by this instead.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored.

    Returns:
      The pooled tensor.

    Example:
      >>> F.avg_pool2d(jnp.ones((1, 1, 4, 4)), 2).tolist()[0][0][0]
      [1.0, 1.0]
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format, 2,
                     "avg_pool2d")


@compiled("x")
def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCDHW", name=None):
    """3-D average pooling over [N, C, D, H, W] (or NDHWC).

    Args:
      x: [N, C, D, H, W] (or NDHWC) input.
      kernel_size: window size: an int or one int per spatial dim.
      stride: window step: an int or one int per spatial dim (default: kernel_size).
      padding: an int, one int per spatial dim, before/after per dim, pairs incl. batch/channel, 'SAME' or 'VALID'.
      ceil_mode: use ceil instead of floor for the output size.
      exclusive: divide by the count of non-padding elements (True) or the clipped window size.
      divisor_override: if set, rescale averages by kernel_size / divisor_override (Paddle's rule).
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor.

    Example:
      >>> F.avg_pool3d(jnp.ones((1, 1, 2, 2, 2)), 2).shape
      (1, 1, 1, 1, 1)
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format, 3,
                     "avg_pool3d")


@compiled("x")
def adaptive_avg_pool1d(x, output_size, name=None):
    """Average [N, C, L] into `output_size` bins.

    Args:
      x: [N, C, L] input.
      output_size: output spatial size: an int or one per spatial dim (None keeps that dim).
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor.

    Example:
      >>> F.adaptive_avg_pool1d(jnp.arange(4.0).reshape(1, 1, 4), 2).tolist()
      [[[0.5, 2.5]]]
    """
    return _adaptive_pool(x, output_size, "NCL", "avg", False, 1, op="adaptive_avg_pool1d")


@compiled("x")
def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    """Average the H and W dims into `output_size` bins (an int or [oh, ow]; None keeps a dim).

    Args:
      x: [N, C, H, W] (or NHWC) input.
      output_size: output spatial size: an int or one per spatial dim (None keeps that dim).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor.

    Example:
      >>> F.adaptive_avg_pool2d(jnp.ones((1, 3, 7, 5)), 1).shape
      (1, 3, 1, 1)
    """
    return _adaptive_pool(x, output_size, data_format, "avg", False, 2, op="adaptive_avg_pool2d")


@compiled("x")
def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", name=None):
    """Average the D, H and W dims into `output_size` bins.

    Args:
      x: [N, C, D, H, W] (or NDHWC) input.
      output_size: output spatial size: an int or one per spatial dim (None keeps that dim).
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor.

    Example:
      >>> F.adaptive_avg_pool3d(jnp.ones((1, 1, 4, 4, 4)), 2).shape
      (1, 1, 2, 2, 2)
    """
    return _adaptive_pool(x, output_size, data_format, "avg", False, 3, op="adaptive_avg_pool3d")


@compiled("x")
def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    """Max of [N, C, L] over `output_size` bins.

    Args:
      x: [N, C, L] input.
      output_size: output spatial size: an int or one per spatial dim (None keeps that dim).
      return_mask: also return the int32 flat spatial index of each max.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor (and int32 indices when return_mask).

    Example:
      >>> F.adaptive_max_pool1d(jnp.arange(4.0).reshape(1, 1, 4), 2).tolist()
      [[[1.0, 3.0]]]
    """
    return _adaptive_pool(x, output_size, "NCL", "max", return_mask, 1, op="adaptive_max_pool1d")


@compiled("x")
def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    """Max of [N, C, H, W] over `output_size` bins (NCHW only, like Paddle).

    Args:
      x: [N, C, H, W] input.
      output_size: output spatial size: an int or one per spatial dim (None keeps that dim).
      return_mask: also return the int32 flat spatial index of each max.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor (and int32 indices when return_mask).

    Example:
      >>> F.adaptive_max_pool2d(jnp.ones((1, 3, 7, 5)), [2, 3]).shape
      (1, 3, 2, 3)
    """
    return _adaptive_pool(x, output_size, CHANNEL_FIRST[2], "max", return_mask, 2, op="adaptive_max_pool2d")


@compiled("x")
def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    """Max of [N, C, D, H, W] over `output_size` bins.

    Args:
      x: [N, C, D, H, W] input.
      output_size: output spatial size: an int or one per spatial dim (None keeps that dim).
      return_mask: also return the int32 flat spatial index of each max.
      name: ignored (Paddle compatibility).

    Returns:
      The pooled tensor (and int32 indices when return_mask).

    Example:
      >>> F.adaptive_max_pool3d(jnp.ones((1, 1, 4, 4, 4)), 2).shape
      (1, 1, 2, 2, 2)
    """
    return _adaptive_pool(x, output_size, CHANNEL_FIRST[3], "max", return_mask, 3, op="adaptive_max_pool3d")
