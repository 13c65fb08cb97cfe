"""Normalization ops: batch/layer/group/instance/RMS norm, normalize, local response norm.

pdx is functional, so batch_norm cannot update running statistics in place as
Paddle does. `batch_norm` keeps Paddle's signature and returns only the
output; `batch_norm_with_stats` is the pure core, returning `(out, new_mean,
new_var)` for the BatchNorm layer to store. Paddle's running-variance update
uses the biased batch variance: `new_var = momentum * var + (1 - momentum) * batch_var`.

Statistics of float16/bfloat16 inputs are computed in float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx import _nnx
from pdx import kernels as K
from pdx.nn.functional._args import array, bcast_channel, channel_axis, compiled, error, float_array, is_int, prod

__all__ = [
    "batch_norm", "batch_norm_with_stats", "group_norm", "instance_norm", "layer_norm",
    "local_response_norm", "normalize", "rms_norm",
]

_BN_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")


def _stat_dtype(dtype):
    return jnp.promote_types(dtype, jnp.float32)


def _per_channel(v, name, channels, ndim, axis, op):
    if v is None:
        return None
    v = array(v, op=op, name=name)
    if v.size != channels:
        raise error(op, f"{name}.shape={tuple(v.shape)} must hold one value per channel ({channels})")
    return bcast_channel(v.reshape(-1), ndim, axis)


@compiled("x", "running_mean", "running_var", "weight", "bias")
def batch_norm_with_stats(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9,
                          epsilon=1e-05, data_format="NCHW", use_global_stats=None):
    """Batch norm that also returns the updated running statistics (the pure core of BatchNorm).

    Batch statistics are used when `use_global_stats` is False, which by default
    (None) means when `training`; then the running stats are updated as
    `momentum * old + (1 - momentum) * batch` with the biased batch variance.
    Otherwise the running stats normalize x and come back unchanged.

    Args:
      x: [N, C, ...] (channel-first formats) or [N, ..., C] (NLC/NHWC/NDHWC).
      running_mean, running_var: [C].
      weight, bias: optional [C] scale and shift.
      training: training mode.
      momentum: running-stat decay.
      epsilon: added to the variance.
      data_format: 'NC', 'NCL', 'NCHW', 'NCDHW', 'NLC', 'NHWC' or 'NDHWC'.
      use_global_stats: force running stats (True) or batch stats (False).

    Returns:
      (out, new_running_mean, new_running_var); the new stats carry no gradient.

    Example:
      >>> out, m, v = F.batch_norm_with_stats(jnp.ones((4, 3)), jnp.zeros(3), jnp.ones(3),
      ...                                     training=True, data_format="NC")
      >>> m.tolist()
      [0.10000000149011612, 0.10000000149011612, 0.10000000149011612]
    """
    op = "batch_norm"
    x = float_array(x, op=op)
    if data_format not in _BN_FORMATS:
        raise error(op, f"data_format={data_format!r} is not supported; use one of {list(_BN_FORMATS)}")
    if x.ndim < 2:
        raise error(op, f"expects x of rank >= 2; got x.shape={tuple(x.shape)}")
    axis = 1 if data_format[1] == "C" else x.ndim - 1
    channels = x.shape[axis]
    running_mean = array(running_mean, op=op, name="running_mean")
    running_var = array(running_var, op=op, name="running_var")
    for name, v in (("running_mean", running_mean), ("running_var", running_var)):
        if v.size != channels:
            raise error(op, f"{name}.shape={tuple(v.shape)} must have {channels} entries, the channels of "
                            f"x.shape={tuple(x.shape)} (data_format={data_format!r})")
    use_batch = training if use_global_stats is None else not use_global_stats
    stat = _stat_dtype(x.dtype)
    xs = x.astype(stat)
    moved = axis == 1 and x.ndim > 2  # channels-first: computed channels-last, as convolutions are
    if moved:
        xs, axis = jnp.moveaxis(xs, 1, -1), x.ndim - 1
    if use_batch:
        mean, var = _batch_moments(xs, axis)
        new_mean = jax.lax.stop_gradient(momentum * running_mean + (1 - momentum) * mean.astype(running_mean.dtype))
        new_var = jax.lax.stop_gradient(momentum * running_var + (1 - momentum) * var.astype(running_var.dtype))
    else:
        mean, var = running_mean.reshape(-1).astype(stat), running_var.reshape(-1).astype(stat)
        new_mean, new_var = running_mean, running_var
    # One multiply-add per element: x * scale + shift (scale = w / sqrt(var + eps), shift =
    # b - mean * scale); its backward pass is 0.7x of the normalize-then-affine form's.
    scale = jax.lax.rsqrt(var + epsilon)
    w = _per_channel(weight, "weight", channels, x.ndim, axis, op)
    b = _per_channel(bias, "bias", channels, x.ndim, axis, op)
    if w is not None:
        scale = scale * w.reshape(-1).astype(stat)
    shift = -mean * scale
    if b is not None:
        shift = shift + b.reshape(-1).astype(stat)
    out = xs * bcast_channel(scale, x.ndim, axis) + bcast_channel(shift, x.ndim, axis)
    if moved:
        out = jnp.moveaxis(out, -1, 1)
    return out.astype(x.dtype), new_mean, new_var


def _batch_moments(xs, axis):
    """Per-channel mean and biased variance of `xs` over every axis but `axis`, in one pass.

    Shifted data: sums of (x - k) and (x - k)^2 with k one sample of each channel
    (the first), so E[(x-k)^2] - E[x-k]^2 does not cancel catastrophically when
    the mean is large against the spread; the variance does not depend on k, so
    k carries no gradient.
    """
    reduce_axes = tuple(i for i in range(xs.ndim) if i != axis)
    if any(isinstance(xs.shape[i], int) and xs.shape[i] == 0 for i in reduce_axes):
        return jnp.mean(xs, axis=reduce_axes), jnp.var(xs, axis=reduce_axes)  # empty batch: nan, as before
    k = jax.lax.stop_gradient(xs[tuple(slice(None) if i == axis else 0 for i in range(xs.ndim))])
    centered = xs - bcast_channel(k, xs.ndim, axis)
    m1 = jnp.mean(centered, axis=reduce_axes)
    m2 = jnp.mean(jnp.square(centered), axis=reduce_axes)
    return m1 + k, jnp.maximum(m2 - jnp.square(m1), 0.0)


@compiled("x", "running_mean", "running_var", "weight", "bias")
def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9, epsilon=1e-05,
               data_format="NCHW", use_global_stats=None, name=None):
    """Batch normalization with Paddle's signature; returns only the output.

    Paddle updates running_mean/running_var in place during training; JAX
    arrays are immutable, so use `batch_norm_with_stats` (or pdx.nn.BatchNorm)
    to get the updated statistics.

    Args:
      see `batch_norm_with_stats`; name is ignored.

    Returns:
      The normalized tensor.

    Example:
      >>> F.batch_norm(jnp.ones((2, 3, 4, 4)), jnp.zeros(3), jnp.ones(3)).shape
      (2, 3, 4, 4)
    """
    out, _, _ = batch_norm_with_stats(x, running_mean, running_var, weight, bias, training, momentum, epsilon,
                                      data_format, use_global_stats)
    return out


def _norm_shape(x, normalized_shape, op):
    if is_int(normalized_shape):
        shape = (int(normalized_shape),)
    elif isinstance(normalized_shape, (list, tuple)) and all(is_int(s) for s in normalized_shape):
        shape = tuple(int(s) for s in normalized_shape)
    else:
        raise error(op, f"normalized_shape must be an int or a list of ints; got {normalized_shape!r}")
    if not shape or x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise error(op, f"normalized_shape={list(shape)} must match the trailing dims of x.shape={tuple(x.shape)}")
    return shape


def _kernel_fits(x, shape):
    """Raise `pdx.kernels.Unsupported` when the fused norm kernels cannot take x."""
    if x.dtype not in (jnp.float32, jnp.bfloat16, jnp.float16):
        raise K.Unsupported(f"the Pallas kernel does not support this call: dtype {x.dtype} is not float32, "
                            "bfloat16 or float16")
    if prod(shape) > K.NORM_MAX_FEATURES or x.size == 0:
        raise K.Unsupported(f"the Pallas kernel does not support this call: normalized size {prod(shape)} is "
                            f"empty or above {K.NORM_MAX_FEATURES}")


def _affine_param(v, name, shape, op):
    if v is None:
        return None
    v = array(v, op=op, name=name)
    if v.size != prod(shape):
        raise error(op, f"{name}.shape={tuple(v.shape)} must match normalized_shape={list(shape)}")
    return v.reshape(shape)


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    """Normalize over the trailing `normalized_shape` dims, then scale and shift.

    Args:
      x: input tensor.
      normalized_shape: int or list of ints equal to x's trailing dims.
      weight, bias: optional, shaped like normalized_shape (or flattened).
      epsilon: added to the variance.
      name: ignored.

    Returns:
      A tensor like x.

    Example:
      >>> F.layer_norm(jnp.arange(6.0).reshape(2, 3), 3).shape
      (2, 3)
    """
    return _layer_norm(x, normalized_shape, weight, bias, epsilon, K.get_impl() or "auto")


@compiled("x", "weight", "bias")
def _layer_norm(x, normalized_shape, weight, bias, epsilon, impl):
    """Validation and the math of `layer_norm`; the fused kernel where the dispatch picks it."""
    op = "layer_norm"
    x = float_array(x, op=op)
    shape = _norm_shape(x, normalized_shape, op)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    w = _affine_param(weight, "weight", shape, op)
    b = _affine_param(bias, "bias", shape, op)
    return _LAYER_NORM(impl, x, shape, axes, w, b, epsilon, impl)


def _layer_norm_kernel(x, shape, axes, w, b, epsilon, impl):
    _kernel_fits(x, shape)
    return _layer_norm_flat(x, shape, w, b, epsilon, impl)


def _layer_norm_flax(x, shape, axes, w, b, epsilon, impl):
    # flax's normalization helpers (float32 statistics, one-pass variance):
    # XLA:CPU fuses their backward pass markedly better than our own
    # formulations of the same math (GPT-mini step 1.01x vs 1.13x of
    # hand-written JAX, benchmarks/RESULTS.md).
    return _nnx.layer_norm(x, axes, w, b, epsilon)


def _layer_norm_flat(x, shape, w, b, epsilon, impl):
    # pdx.kernels.layer_norm over x flattened to its normalized size: with "auto" it takes
    # the implementation its own dispatch picks, the Pallas kernel with "pallas".
    n = prod(shape)
    return K.layer_norm(x.reshape(*x.shape[:x.ndim - len(shape)], n),
                        None if w is None else w.reshape(n), None if b is None else b.reshape(n),
                        eps=epsilon, impl=impl).reshape(x.shape)


def _layer_norm_kernel_args(x, shape, axes, w, b, epsilon, impl):
    # What _layer_norm_flat passes to the kernel op, as shapes: the backends' rules read them.
    n = prod(shape)
    flat = jax.ShapeDtypeStruct((*x.shape[:x.ndim - len(shape)], n), x.dtype)
    w, b = (None if v is None else jax.ShapeDtypeStruct((n,), v.dtype) for v in (w, b))
    return (flat, w, b), {"eps": epsilon, "block_sizes": None}


# The implementations registered into pdx.kernels' layer_norm beyond these (an optional
# backend's) serve F.layer_norm too, through _layer_norm_flat.
_LAYER_NORM = K.Op("layer_norm", {"pallas": _layer_norm_kernel, "xla": _layer_norm_flax},
                   delegate=K.Delegate(K.OPS["layer_norm"], _layer_norm_kernel_args,
                                       lambda impl, x, shape, axes, w, b, epsilon, _: _layer_norm_flat(
                                           x, shape, w, b, epsilon, impl)))


def rms_norm(input, normalized_shape, weight=None, eps=1e-05, name=None):  # noqa: A002  (Paddle's name)
    """Root-mean-square norm over the trailing `normalized_shape` dims (Paddle 3's `F.rms_norm`).

    Like Paddle, returns `(out, invvar)` where invvar = 1 / sqrt(mean(x^2) + eps)
    per normalized row, flattened to [rows] (float32).

    Args:
      input: input tensor.
      normalized_shape: int or list of ints equal to the trailing dims.
      weight: optional scale, shaped like normalized_shape.
      eps: added to the mean square.
      name: ignored.

    Returns:
      (out, invvar).

    Example:
      >>> out, invvar = F.rms_norm(jnp.ones((2, 4)), [4])
      >>> out.shape, invvar.shape
      ((2, 4), (2,))
    """
    return _rms_norm(input, normalized_shape, weight, eps, K.get_impl() or "auto")


@compiled("input", "weight")
def _rms_norm(input, normalized_shape, weight, eps, impl):  # noqa: A002
    """Validation and the math of `rms_norm`; the fused kernel where the dispatch picks it."""
    op = "rms_norm"
    x = float_array(input, op=op, name="input")
    shape = _norm_shape(x, normalized_shape, op)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    return _RMS_NORM(impl, x, shape, axes, weight, eps, impl)


def _rms_norm_kernel(x, shape, axes, weight, eps, impl):
    _kernel_fits(x, shape)
    n = prod(shape)
    w = _affine_param(weight, "weight", shape, "rms_norm")
    out, inv = K.rms_norm_with_rstd(x.reshape(*x.shape[:x.ndim - len(shape)], n),
                                    None if w is None else w.reshape(n), eps=eps, impl=impl)
    return out.reshape(x.shape), inv.reshape(-1)


def _rms_norm_jnp(x, shape, axes, weight, eps, impl):
    xs = x.astype(_stat_dtype(x.dtype))
    inv = jax.lax.rsqrt(jnp.mean(xs * xs, axis=axes, keepdims=True) + eps)
    out = xs * inv
    w = _affine_param(weight, "weight", shape, "rms_norm")
    if w is not None:
        out = out * w.astype(out.dtype)
    return out.astype(x.dtype), inv.reshape(-1).astype(jnp.float32)


_RMS_NORM = K.Op("rms_norm", {"pallas": _rms_norm_kernel, "xla": _rms_norm_jnp})


@compiled("x", "running_mean", "running_var", "weight", "bias")
def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.9, eps=1e-05, data_format="NCHW", name=None):
    """Normalize each (sample, channel) over its spatial dims.

    As in Paddle 3, `running_mean`, `running_var`, `use_input_stats` and
    `momentum` are obsolete and ignored: statistics always come from the input.

    Args:
      x: [N, C, ...] input.
      weight, bias: optional [C].
      eps: added to the variance.
      data_format: 'NC', 'NCL', 'NCHW' or 'NCDHW'.
      name: ignored.

    Returns:
      A tensor like x.

    Example:
      >>> F.instance_norm(jnp.ones((2, 3, 4, 4))).shape
      (2, 3, 4, 4)
    """
    op = "instance_norm"
    x = float_array(x, op=op)
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW"):
        raise error(op, f"data_format={data_format!r} is not supported; use 'NC', 'NCL', 'NCHW' or 'NCDHW'")
    if x.ndim < 2:
        raise error(op, f"expects x of rank >= 2; got x.shape={tuple(x.shape)}")
    axes = tuple(range(2, x.ndim))
    xs = x.astype(_stat_dtype(x.dtype))
    mean = jnp.mean(xs, axis=axes, keepdims=True)
    var = jnp.var(xs, axis=axes, keepdims=True)
    out = (xs - mean) * jax.lax.rsqrt(var + eps)
    w = _per_channel(weight, "weight", x.shape[1], x.ndim, 1, op)
    b = _per_channel(bias, "bias", x.shape[1], x.ndim, 1, op)
    if w is not None:
        out = out * w.astype(out.dtype)
    if b is not None:
        out = out + b.astype(out.dtype)
    return out.astype(x.dtype)


_GN_FORMATS = ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")


@compiled("x", "weight", "bias")
def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format="NCHW", name=None):
    """Normalize over groups of channels (and all spatial positions) per sample.

    Args:
      x: [N, C, *] (or channel-last) input.
      num_groups: number of groups; must divide C.
      epsilon: added to the variance.
      weight, bias: optional [C].
      data_format: 'NCL', 'NCHW', 'NCDHW', 'NLC', 'NHWC' or 'NDHWC'.
      name: ignored.

    Returns:
      A tensor like x.

    Example:
      >>> F.group_norm(jnp.ones((2, 6, 4, 4)), num_groups=3).shape
      (2, 6, 4, 4)
    """
    op = "group_norm"
    x = float_array(x, op=op)
    if data_format not in _GN_FORMATS:
        raise error(op, f"data_format={data_format!r} is not supported; use one of {list(_GN_FORMATS)}")
    if x.ndim < 2:
        raise error(op, f"expects x of rank >= 2; got x.shape={tuple(x.shape)}")
    is_last = data_format[-1] == "C"
    axis = channel_axis(x.ndim, is_last)
    channels = x.shape[axis]
    if not is_int(num_groups) or num_groups <= 0 or channels % num_groups:
        raise error(op, f"num_groups={num_groups!r} must be a positive divisor of the {channels} channels "
                        f"of x.shape={tuple(x.shape)}")
    xs = x.astype(_stat_dtype(x.dtype))
    grouped_shape = x.shape[:axis] + (num_groups, channels // num_groups) + x.shape[axis + 1:]
    g = xs.reshape(grouped_shape)
    axes = tuple(i for i in range(1, g.ndim) if i != axis)
    mean = jnp.mean(g, axis=axes, keepdims=True)
    var = jnp.var(g, axis=axes, keepdims=True)
    out = ((g - mean) * jax.lax.rsqrt(var + epsilon)).reshape(x.shape)
    w = _per_channel(weight, "weight", channels, x.ndim, axis, op)
    b = _per_channel(bias, "bias", channels, x.ndim, axis, op)
    if w is not None:
        out = out * w.astype(out.dtype)
    if b is not None:
        out = out + b.astype(out.dtype)
    return out.astype(x.dtype)


@compiled("x")
def normalize(x, p=2, axis=1, epsilon=1e-12, out=None, name=None):
    """x / max(||x||_p along axis, epsilon).

    Args:
      x: input tensor.
      p: the norm order (p=inf/-inf use max/min of |x|).
      axis: the reduced axis.
      epsilon: floor on the norm.
      out: unsupported (pdx returns a new array); must be None.
      name: ignored.

    Returns:
      A tensor like x.

    Example:
      >>> F.normalize(jnp.array([[3.0, 4.0]])).tolist()
      [[0.6000000238418579, 0.800000011920929]]
    """
    if out is not None:
        raise error("normalize", "out= is not supported: JAX arrays are immutable; use the returned array")
    x = float_array(x, op="normalize")
    if x.ndim == 0:
        raise error("normalize", "x must have at least one dim")
    if not -x.ndim <= axis < x.ndim:
        raise error("normalize", f"axis={axis} is out of range for x.shape={tuple(x.shape)}")
    a = jnp.abs(x)
    if p == float("inf"):
        norm = jnp.max(a, axis=axis, keepdims=True)
    elif p == float("-inf"):
        norm = jnp.min(a, axis=axis, keepdims=True)
    elif p == 2:
        norm = jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=True))
    elif p == 1:
        norm = jnp.sum(a, axis=axis, keepdims=True)
    else:
        norm = jnp.sum(a ** p, axis=axis, keepdims=True) ** (1.0 / p)
    return x / jnp.maximum(norm, epsilon)


_LRN_FORMATS = ("NCL", "NLC", "NCHW", "NHWC", "NCDHW", "NDHWC")


@compiled("x")
def local_response_norm(x, size, alpha=0.0001, beta=0.75, k=1.0, data_format="NCHW", name=None):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta.

    The channel window for channel c spans [c - size // 2, c + (size - 1) // 2],
    zero-padded, and is always divided by `size` (as Paddle does).

    Args:
      x: input of rank >= 3.
      size: number of neighbouring channels.
      alpha: scale.
      beta: exponent.
      k: additive constant.
      data_format: 'NCL', 'NLC', 'NCHW', 'NHWC', 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.local_response_norm(jnp.ones((1, 4, 2, 2)), size=3).shape
      (1, 4, 2, 2)
    """
    op = "local_response_norm"
    x = float_array(x, op=op)
    if data_format not in _LRN_FORMATS:
        raise error(op, f"data_format={data_format!r} is not supported; use one of {list(_LRN_FORMATS)}")
    if x.ndim < 3:
        raise error(op, f"expects x of rank >= 3; got x.shape={tuple(x.shape)}")
    if not is_int(size) or size < 1:
        raise error(op, f"size must be a positive int; got size={size!r}")
    axis = channel_axis(x.ndim, data_format[-1] == "C")
    sq = x * x
    dims = [1] * x.ndim
    dims[axis] = size
    pads = [(0, 0)] * x.ndim
    pads[axis] = (size // 2, (size - 1) // 2)
    window_sum = jax.lax.reduce_window(sq, np.array(0, x.dtype), jax.lax.add, tuple(dims), (1,) * x.ndim, pads)
    return x / (k + alpha * window_sum / size) ** beta
