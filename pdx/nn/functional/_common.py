"""Common layer ops: linear, bilinear, dropout family, pad, interpolate, unfold/fold,
cosine_similarity, label_smooth (Paddle's `nn/functional/common.py`).

Dropout draws its mask from `pdx._random.next_key(key, op=...)`: eager code
uses the global generator seeded by `pdx.seed`; traced code must pass `key=`
(the Dropout layer threads its own RNG state). Nothing random happens, and no
key is needed, when `training` is False or `p` is 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx import kernels as K
from pdx._random import next_key
from pdx._amp_policy import cast_inputs  # AMP hook: pdx.amp.auto_cast casts white-list ops
from pdx._args import normalize_axis
from pdx.nn.functional._args import (
    CHANNEL_FIRST, CHANNEL_LAST, array, compiled, error, float_array, is_int, ntuple, spatial_format,
)

__all__ = [
    "alpha_dropout", "bilinear", "cosine_similarity", "dropout", "dropout1d", "dropout2d",
    "dropout3d", "feature_alpha_dropout", "fold", "interpolate", "label_smooth", "linear",
    "pad", "unfold", "upsample", "zeropad2d",
]


# x @ weight through pdx.kernels.matmul where a backend registered there takes it (the
# CPU kernels: float32/bfloat16 on a single CPU device, not exporting: 0.96x XLA's
# GPT-mini step, 0.68x in bfloat16), else XLA's.
_MATMUL = K.Op("matmul", {"xla": jnp.matmul},
               delegate=K.Delegate(K.OPS["matmul"], lambda x, w: ((x, w), {"transpose_a": False, "transpose_b": False}),
                                   lambda impl, x, w: K.matmul(x, w, impl=impl)))


@cast_inputs("linear", "x", "weight", "bias")
@compiled("x", "weight", "bias")
def linear(x, weight, bias=None, name=None):
    """x @ weight + bias, with Paddle's weight layout `[in_features, out_features]`.

    Args:
      x: input of shape [..., in_features].
      weight: [in_features, out_features].
      bias: optional [out_features].
      name: ignored.

    Returns:
      A tensor of shape [..., out_features].

    Example:
      >>> F.linear(jnp.ones((2, 3)), jnp.ones((3, 4))).shape
      (2, 4)
    """
    x = array(x, op="linear")
    weight = array(weight, op="linear", name="weight")
    if weight.ndim != 2:
        raise error("linear", f"weight must be 2-D [in_features, out_features]; got weight.shape={tuple(weight.shape)}")
    if x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise error("linear", f"x.shape={tuple(x.shape)} and weight.shape={tuple(weight.shape)} do not agree on "
                              f"in_features (x.shape[-1] must equal weight.shape[0]; weight is [in, out] in Paddle)")
    if x.ndim > 2:
        # One 2-D matmul over the flattened leading dims: its weight gradient is a plain
        # x2d^T @ g2d that XLA:CPU runs on its fast dot path (benchmarks/HISTORY.md,
        # "Linear as a 2-D matmul": 0.69x of the batched form's step, bit-identical).
        lead = x.shape[:-1]
        out = _MATMUL("auto", x.reshape((math.prod(lead), x.shape[-1])), weight).reshape((*lead, weight.shape[1]))
    else:
        out = _MATMUL("auto", x, weight) if x.ndim == 2 else jnp.matmul(x, weight)
    if bias is not None:
        bias = array(bias, op="linear", name="bias")
        if bias.size != weight.shape[1]:
            raise error("linear", f"bias.shape={tuple(bias.shape)} must have out_features={weight.shape[1]} entries")
        out = out + bias.reshape(-1)
    return out


@compiled("x1", "x2", "weight", "bias")
def bilinear(x1, x2, weight, bias=None, name=None):
    """out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o].

    Args:
      x1: [N, in1]; x2: [N, in2].
      weight: [out, in1, in2].
      bias: optional [1, out].
      name: ignored.

    Returns:
      A tensor [N, out].

    Example:
      >>> F.bilinear(jnp.ones((2, 3)), jnp.ones((2, 4)), jnp.ones((5, 3, 4))).shape
      (2, 5)
    """
    x1 = array(x1, op="bilinear", name="x1")
    x2 = array(x2, op="bilinear", name="x2")
    weight = array(weight, op="bilinear", name="weight")
    if x1.ndim != 2 or x2.ndim != 2 or weight.ndim != 3 or x1.shape[0] != x2.shape[0] \
            or weight.shape[1:] != (x1.shape[1], x2.shape[1]):
        raise error("bilinear", f"need x1 [N, in1], x2 [N, in2] and weight [out, in1, in2]; got "
                                f"x1.shape={tuple(x1.shape)}, x2.shape={tuple(x2.shape)}, "
                                f"weight.shape={tuple(weight.shape)}")
    out = jnp.einsum("ni,oij,nj->no", x1, weight, x2)
    if bias is not None:
        out = out + array(bias, op="bilinear", name="bias").reshape(1, -1)
    return out


# ----------------------------------------------------------------------------- dropout

_DROPOUT_MODES = ("upscale_in_train", "downscale_in_infer")


def _check_p(p, op):
    """p as a Python float: a number, or (as Paddle takes it) a concrete one-element tensor."""
    if isinstance(p, jax.Array) and not isinstance(p, jax.core.Tracer) and p.size == 1:
        p = float(np.asarray(p).reshape(()))
    if isinstance(p, bool) or not isinstance(p, (int, float, np.floating, np.integer)):
        raise TypeError(f"pdx.nn.functional.{op}: p must be a Python number in [0, 1] (or a one-element tensor "
                        f"outside jit); got {type(p).__name__}")
    if not 0 <= p <= 1:
        raise error(op, f"p must be in [0, 1]; got p={p}")
    return p


def dropout(x, p=0.5, axis=None, training=True, inplace=False, mode="upscale_in_train", name=None, *, key=None):
    """Randomly zero elements with probability `p` (Paddle's dropout).

    'upscale_in_train' scales kept values by 1 / (1 - p) in training and is the
    identity in eval; 'downscale_in_infer' keeps values unscaled in training and
    multiplies by (1 - p) in eval. With `axis`, one mask value is drawn per index
    of those axes and broadcast over the others. `inplace` is ignored.

    Args:
      x: input tensor.
      p: drop probability in [0, 1].
      axis: None (independent mask per element), an int or a list of ints.
      training: apply the random mask (True) or the eval-time transform (False).
      inplace: ignored (JAX arrays are immutable).
      mode: 'upscale_in_train' or 'downscale_in_infer'.
      name: ignored.
      key: optional jax PRNG key; required under jit when training and p > 0.

    Returns:
      A tensor like `x`.

    Example:
      >>> y = F.dropout(jnp.ones((4, 4)), p=0.5, key=jax.random.key(0))
      >>> sorted(set(y.ravel().tolist())) <= [0.0, 2.0]
      True
    """
    p = _check_p(p, "dropout")
    if mode not in _DROPOUT_MODES:
        raise error("dropout", f"mode={mode!r} is not supported; use 'upscale_in_train' or 'downscale_in_infer'")
    if p == 0:
        return array(x, op="dropout")
    if training and p < 1:
        key = next_key(key, op="dropout")
    return _dropout(x, key, p, axis, training, mode)


@compiled("x", "key")
def _dropout(x, key, p, axis, training, mode):
    x = array(x, op="dropout")
    if axis is not None:
        axes = [axis] if is_int(axis) else list(axis)
        if not axes or not all(is_int(a) and 0 <= a < x.ndim for a in axes) or len(set(axes)) != len(axes):
            raise error("dropout", f"axis={axis!r} must hold distinct dims in [0, {x.ndim}) of "
                                   f"x.shape={tuple(x.shape)}")
        mask_shape = tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim))
    else:
        mask_shape = x.shape
    if not training:
        return x * (1 - p) if mode == "downscale_in_infer" else x
    if p == 1:
        return jnp.zeros_like(x)
    keep = jax.random.bernoulli(key, 1 - p, mask_shape)
    kept = x / (1 - p) if mode == "upscale_in_train" else x
    return jnp.where(keep, kept, jnp.zeros((), x.dtype)).astype(x.dtype)


def dropout1d(input, p=0.5, training=True, inplace=False, *, key=None):  # noqa: A002  (Paddle's name)
    """Zero whole channels of a [N, C, L] (or [C, L]) input with probability `p`.

    Args:
      input: [N, C, L] or [C, L] input.
      p: drop probability in [0, 1].
      training: apply the random mask (True) or return x unchanged (False).
      inplace: ignored (JAX arrays are immutable).
      key: optional jax PRNG key; from the global generator if None (required under jit).

    Returns:
      A tensor like `input`.

    Example:
      >>> F.dropout1d(jnp.ones((2, 3, 4)), training=False).shape
      (2, 3, 4)
    """
    x = array(input, op="dropout1d", name="input")
    if x.ndim not in (2, 3):
        raise error("dropout1d", f"expects a 2-D [C, L] or 3-D [N, C, L] input; got input.shape={tuple(x.shape)}")
    axis = 0 if x.ndim == 2 else 1
    return dropout(x, p=p, axis=axis, training=training, key=key)


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None, *, key=None):
    """Zero whole feature maps (one mask value per [N, C]) of a 4-D input.

    Args:
      x: 4-D input.
      p: drop probability in [0, 1].
      training: apply the random mask (True) or return x unchanged (False).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).
      key: optional jax PRNG key; from the global generator if None (required under jit).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.dropout2d(jnp.ones((2, 3, 4, 4)), training=False).shape
      (2, 3, 4, 4)
    """
    x = array(x, op="dropout2d")
    is_last = spatial_format(data_format, 2, op="dropout2d")
    if x.ndim != 4:
        raise error("dropout2d", f"expects a 4-D x; got x.shape={tuple(x.shape)}")
    return dropout(x, p=p, axis=[0, 3] if is_last else [0, 1], training=training, key=key)


def dropout3d(x, p=0.5, training=True, data_format="NCDHW", name=None, *, key=None):
    """Zero whole 3-D feature maps (one mask value per [N, C]) of a 5-D input.

    Args:
      x: 5-D input.
      p: drop probability in [0, 1].
      training: apply the random mask (True) or return x unchanged (False).
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).
      key: optional jax PRNG key; from the global generator if None (required under jit).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.dropout3d(jnp.ones((1, 2, 2, 2, 2)), training=False).shape
      (1, 2, 2, 2, 2)
    """
    x = array(x, op="dropout3d")
    is_last = spatial_format(data_format, 3, op="dropout3d")
    if x.ndim != 5:
        raise error("dropout3d", f"expects a 5-D x; got x.shape={tuple(x.shape)}")
    return dropout(x, p=p, axis=[0, 4] if is_last else [0, 1], training=training, key=key)


def _alpha_dropout(x, p, training, feature, key, op):
    p = _check_p(p, op)
    if training and 0 < p < 1:
        key = next_key(key, op=op)
    return _alpha_dropout_core(x, key, p, training, feature, op)


@compiled("x", "key")
def _alpha_dropout_core(x, key, p, training, feature, op):
    x = float_array(x, op=op)
    if not training or p == 0:
        return x
    if p == 1:
        return jnp.zeros_like(x)
    if feature and x.ndim < 2:
        raise error(op, f"needs an input of rank >= 2; got x.shape={tuple(x.shape)}")
    alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if feature else x.shape
    keep = jax.random.bernoulli(key, 1 - p, shape)
    return (jnp.where(keep, x, alpha_p) * a + b).astype(x.dtype)


def alpha_dropout(x, p=0.5, training=True, name=None, *, key=None):
    """Dropout that keeps SELU's self-normalizing mean and variance.

    Args:
      x: input tensor.
      p: drop probability in [0, 1].
      training: apply the random mask (True) or return x unchanged (False).
      name: ignored (Paddle compatibility).
      key: optional jax PRNG key; from the global generator if None (required under jit).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.alpha_dropout(jnp.ones(3), training=False).tolist()
      [1.0, 1.0, 1.0]
    """
    return _alpha_dropout(x, p, training, False, key, "alpha_dropout")


def feature_alpha_dropout(x, p=0.5, training=True, name=None, *, key=None):
    """alpha_dropout with one mask value per [N, C] feature map.

    Args:
      x: input tensor.
      p: drop probability in [0, 1].
      training: apply the random mask (True) or return x unchanged (False).
      name: ignored (Paddle compatibility).
      key: optional jax PRNG key; from the global generator if None (required under jit).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.feature_alpha_dropout(jnp.ones((1, 2, 3)), training=False).shape
      (1, 2, 3)
    """
    return _alpha_dropout(x, p, training, True, key, "feature_alpha_dropout")


# ----------------------------------------------------------------------------- pad

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _static_ints(values, *, op, name):
    if isinstance(values, (jax.Array, np.ndarray)):
        if isinstance(values, jax.core.Tracer):
            raise error(op, f"`{name}` must be static (a list of ints or a concrete tensor), not a traced value")
        return [int(v) for v in np.asarray(values).reshape(-1)]
    if isinstance(values, Sequence) and all(is_int(v) or isinstance(v, (jax.Array, np.ndarray)) for v in values):
        return [int(v) for v in values]
    raise error(op, f"`{name}` must be a list/tuple of ints or a 1-D int tensor; got {name}={values!r}")


@compiled("x")
def pad(x, pad, mode="constant", value=0.0, data_format=None, pad_from_left_axis=True, name=None):  # noqa: A002
    """Pad a tensor like Paddle's `F.pad`.

    Two conventions, exactly as Paddle:
    * 'constant' mode with a list whose length is not 2 * (x.ndim - 2): the list
      is padded with zeros to 2 * x.ndim; a full-length list pads axis 0 first
      (`[before_0, after_0, before_1, ...]`) when `pad_from_left_axis`, otherwise
      (and for shorter lists) the pairs start from the last axis.
    * otherwise (reflect/replicate/circular, a tensor `pad`, or a list of length
      2 * (x.ndim - 2)): x must be 3/4/5-D and the pairs pad the spatial dims of
      `data_format` from the last one backwards: (left, right[, top, bottom[, front, back]]).

    Args:
      x: input tensor.
      pad: list/tuple of ints or a 1-D int tensor (static values).
      mode: 'constant', 'reflect', 'replicate' or 'circular'.
      value: fill value for 'constant'.
      data_format: 'NCL'/'NLC', 'NCHW'/'NHWC', 'NCDHW'/'NDHWC'; default from x.ndim.
      pad_from_left_axis: see above.
      name: ignored.

    Returns:
      The padded tensor.

    Example:
      >>> F.pad(jnp.ones((1, 1, 2, 3)), [1, 1, 0, 0]).shape
      (1, 1, 2, 5)
    """
    if mode not in _PAD_MODES:
        raise error("pad", f"mode={mode!r} is not supported; use one of {list(_PAD_MODES)}")
    x = array(x, op="pad")
    is_tensor = isinstance(pad, (jax.Array, np.ndarray))
    pads = _static_ints(pad, op="pad", name="pad")
    n = x.ndim
    if mode == "constant" and not is_tensor and len(pads) != 2 * (n - 2):
        if len(pads) % 2 or len(pads) > 2 * n:
            raise error("pad", f"pad={list(pads)} must have an even length <= 2 * x.ndim = {2 * n}")
        full = pads + [0] * (2 * n - len(pads))
        pairs = [(full[2 * i], full[2 * i + 1]) for i in range(n)]
        if not (len(pads) == 2 * n and pad_from_left_axis):
            pairs = pairs[::-1]
        # lax.pad also crops for negative widths, like Paddle's pad kernel.
        return jax.lax.pad(x, jnp.asarray(value, x.dtype), [(lo, hi, 0) for lo, hi in pairs])
    if n not in (3, 4, 5):
        raise error("pad", f"mode={mode!r} (or a spatial-style pad list) needs a 3-D, 4-D or 5-D x; "
                           f"got x.shape={tuple(x.shape)}")
    spatial = n - 2
    if data_format is None:
        data_format = CHANNEL_FIRST[spatial]
    is_last = spatial_format(data_format, spatial, op="pad")
    if len(pads) != 2 * spatial:
        raise error("pad", f"pad={list(pads)} must have {2 * spatial} values (before/after for each spatial dim "
                           f"from the last) for a {n}-D x in mode={mode!r}")
    if any(v < 0 for v in pads):
        raise error("pad", f"pad={list(pads)} must be non-negative in mode={mode!r}")
    first = 1 if is_last else 2
    widths = [(0, 0)] * n
    for i in range(spatial):
        axis = first + spatial - 1 - i
        widths[axis] = (pads[2 * i], pads[2 * i + 1])
        if mode == "reflect" and max(widths[axis]) > x.shape[axis] - 1:
            raise error("pad", f"reflect padding {widths[axis]} must be smaller than the padded dim "
                               f"(size {x.shape[axis]}) of x.shape={tuple(x.shape)}")
    if mode == "constant":
        return jnp.pad(x, widths, mode="constant", constant_values=jnp.asarray(value, x.dtype))
    return jnp.pad(x, widths, mode=_PAD_MODES[mode])


@compiled("x")
def zeropad2d(x, padding, data_format="NCHW", name=None):
    """Zero-pad the H and W dims of a 4-D tensor: padding = [left, right, top, bottom] or an int.

    Args:
      x: 4-D input.
      padding: [left, right, top, bottom] or an int.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      The padded tensor.

    Example:
      >>> F.zeropad2d(jnp.ones((1, 1, 2, 3)), [1, 2, 1, 1]).shape
      (1, 1, 4, 6)
    """
    if is_int(padding):
        padding = [int(padding)] * 4
    return pad(x, padding, mode="constant", value=0.0, data_format=data_format)


# ----------------------------------------------------------------------------- interpolate

_INTERP_FORMATS = {3: ("NCW", "NWC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}
_INTERP_RANKS = {"linear": (3,), "bilinear": (4,), "bicubic": (4,), "trilinear": (5,),
                 "nearest": (4, 5), "area": (3, 4, 5)}


def _interp_ratio(in_size, out_size, scale, align_corners):
    """Paddle's source-step per output step, computed in float32 like its kernels."""
    if out_size <= 1:
        return np.float32(0.0)
    if align_corners:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    if scale is not None:
        return np.float32(1.0 / np.float64(np.float32(scale)))
    return np.float32(in_size) / np.float32(out_size)


def _linear_taps(in_size, out_size, ratio, align_corners, align_mode):
    """Two source indices and their weights per output index (linear/bilinear/trilinear)."""
    k = np.arange(out_size)
    half_pixel = align_mode == 0 and not align_corners
    r64 = np.float64(ratio)
    src_half = r64 * (k + 0.5) - 0.5
    lo = np.trunc(src_half if half_pixel else (ratio * k.astype(np.float32)).astype(np.float64)).astype(np.int64)
    lo = np.maximum(lo, 0)
    hi = np.minimum(lo + 1, in_size - 1)
    src = np.maximum(src_half.astype(np.float32), np.float32(0))
    frac = (src - lo.astype(np.float32)) if half_pixel else (ratio * k.astype(np.float32) - lo.astype(np.float32))
    frac = frac.astype(np.float32)
    return [(lo, np.float32(1) - frac), (hi, frac)]


def _cubic_taps(in_size, out_size, ratio, align_corners):
    """Four clamped source indices and Keys-cubic (A = -0.75) weights per output index."""
    k = np.arange(out_size)
    if align_corners:
        src = (ratio * k.astype(np.float32)).astype(np.float32)
    else:
        src = (np.float64(ratio) * (k + 0.5) - 0.5).astype(np.float32)
    base = np.floor(src).astype(np.int64)
    t = (src - base.astype(np.float32)).astype(np.float32)
    a = np.float32(-0.75)

    def near(d):  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    weights = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    return [(np.clip(base - 1 + i, 0, in_size - 1), w.astype(np.float32)) for i, w in enumerate(weights)]


def _apply_taps(x, axis, taps, dtype):
    out = None
    for idx, w in taps:
        shape = [1] * x.ndim
        shape[axis] = -1
        term = jnp.take(x, jnp.asarray(idx, jnp.int32), axis=axis) * jnp.asarray(w, dtype).reshape(shape)
        out = term if out is None else out + term
    return out


def _interp_sizes(x_shape, spatial_axes, size, scale_factor, recompute_scale_factor):
    """Resolve output sizes and the per-dim scales Paddle's kernels see (None when sized)."""
    n = len(spatial_axes)
    in_sizes = [x_shape[a] for a in spatial_axes]
    if size is not None:
        if scale_factor is not None:
            raise error("interpolate", "give only one of `size` and `scale_factor`")
        if recompute_scale_factor:
            raise error("interpolate", "recompute_scale_factor=True needs scale_factor, not an explicit size")
        sizes = _static_ints(size if not is_int(size) else [size], op="interpolate", name="size")
        if len(sizes) != n:
            raise error("interpolate", f"size={size!r} must have {n} entries for a {len(x_shape)}-D input")
        if any(s <= 0 for s in sizes):
            raise error("interpolate", f"every entry of size must be > 0; got size={size!r}")
        return in_sizes, sizes, [None] * n
    if scale_factor is None:
        raise error("interpolate", "one of `size` and `scale_factor` must be given")
    if isinstance(scale_factor, (jax.Array, np.ndarray)):
        scale_factor = np.asarray(scale_factor).tolist()
    scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * n
    if len(scales) != n:
        raise error("interpolate", f"scale_factor={scale_factor!r} must have {n} entries for a {len(x_shape)}-D input")
    if any(float(s) <= 0 for s in scales):
        raise error("interpolate", f"scale_factor must be > 0; got scale_factor={scale_factor!r}")
    if recompute_scale_factor:
        return in_sizes, [int(np.floor(float(i) * float(s))) for i, s in zip(in_sizes, scales)], [None] * n
    sizes = [int(np.float32(i) * np.float32(s)) for i, s in zip(in_sizes, scales)]
    if any(s <= 0 for s in sizes):
        raise error("interpolate", f"scale_factor={scale_factor!r} gives an empty output for input sizes {in_sizes}")
    return in_sizes, sizes, [float(s) for s in scales]


@compiled("x")
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format=None, recompute_scale_factor=None, antialias=False, name=None):
    """Resize the spatial dims of a 3-D/4-D/5-D tensor (Paddle's coordinate conventions).

    'nearest' uses floor(ratio * i); the linear modes use half-pixel centers
    (`ratio * (i + 0.5) - 0.5`, clamped at 0) when align_mode=0 and
    align_corners=False, `ratio * i` otherwise; align_corners=True maps corner
    pixel centers onto each other. With `scale_factor`, ratio = 1 / scale as in
    Paddle (not in / out). 'area' is adaptive average pooling.

    Args:
      x: [N, C, W], [N, C, H, W] or [N, C, D, H, W] (or channel-last).
      size: output spatial size (ints), or None.
      scale_factor: a float or one per spatial dim, used when size is None.
      mode: 'nearest' (4-D/5-D), 'linear' (3-D), 'bilinear'/'bicubic' (4-D), 'trilinear' (5-D), 'area'.
      align_corners: align corner pixel centers (not for 'nearest').
      align_mode: 0 (half-pixel) or 1 (asymmetric) for the linear modes.
      data_format: 'NCW'/'NWC', 'NCHW'/'NHWC', 'NCDHW'/'NDHWC'; default from x.ndim.
      recompute_scale_factor: compute the output size from scale_factor, then resample by sizes.
      antialias: not supported (raises).
      name: ignored.

    Returns:
      The resized tensor, same layout as x.

    Example:
      >>> F.interpolate(jnp.ones((1, 1, 2, 2)), scale_factor=2, mode="bilinear").shape
      (1, 1, 4, 4)
    """
    x = array(x, op="interpolate")
    if x.ndim not in _INTERP_FORMATS:
        raise error("interpolate", f"expects a 3-D, 4-D or 5-D x; got x.shape={tuple(x.shape)}")
    if not isinstance(mode, str) or mode.lower() not in _INTERP_RANKS:
        raise error("interpolate", f"mode={mode!r} is not supported; use one of {list(_INTERP_RANKS)}")
    mode = mode.lower()
    if x.ndim not in _INTERP_RANKS[mode]:
        raise error("interpolate", f"mode={mode!r} supports {[r for r in _INTERP_RANKS[mode]]}-D inputs; "
                                   f"got x.shape={tuple(x.shape)}")
    if not isinstance(align_corners, bool):
        raise TypeError(f"pdx.nn.functional.interpolate: align_corners must be a bool; got {align_corners!r}")
    if align_mode not in (0, 1):
        raise error("interpolate", f"align_mode={align_mode!r} must be 0 or 1")
    if align_corners and mode == "nearest":
        raise error("interpolate", "align_corners=True only applies to 'linear', 'bilinear', 'bicubic' or 'trilinear'")
    if antialias:
        raise NotImplementedError("pdx.nn.functional.interpolate: antialias=True is not supported")
    if data_format is None:
        data_format = _INTERP_FORMATS[x.ndim][0]
    if data_format not in _INTERP_FORMATS[x.ndim]:
        raise error("interpolate", f"data_format={data_format!r} is not valid for a {x.ndim}-D x; "
                                   f"use one of {list(_INTERP_FORMATS[x.ndim])}")
    is_last = data_format[-1] == "C"
    n = x.ndim - 2
    spatial_axes = list(range(1, n + 1)) if is_last else list(range(2, n + 2))
    if mode == "area":
        if size is None:
            raise error("interpolate", "mode='area' needs `size`")
        from pdx.nn.functional._pooling import _adaptive_pool

        fmt = (CHANNEL_LAST if is_last else CHANNEL_FIRST)[n]
        return _adaptive_pool(x, size, fmt, "avg", False, n, op="interpolate")
    in_sizes, out_sizes, scales = _interp_sizes(x.shape, spatial_axes, size, scale_factor, recompute_scale_factor)
    if in_sizes == out_sizes:
        return x
    out = x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.float32)
    for axis, i, o, s in zip(spatial_axes, in_sizes, out_sizes, scales):
        ratio = _interp_ratio(i, o, s, align_corners)
        if mode == "nearest":
            idx = np.trunc(ratio * np.arange(o, dtype=np.float32)).astype(np.int64)
            out = jnp.take(out, jnp.asarray(np.minimum(idx, i - 1), jnp.int32), axis=axis)
        elif mode == "bicubic":
            out = _apply_taps(out, axis, _cubic_taps(i, o, ratio, align_corners), out.dtype)
        else:
            out = _apply_taps(out, axis, _linear_taps(i, o, ratio, align_corners, align_mode), out.dtype)
    return out.astype(x.dtype) if mode == "nearest" else out


@compiled("x")
def upsample(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
             data_format=None, name=None):
    """Alias of `interpolate` (Paddle's `F.upsample`).

    Args:
      x: input tensor.
      size: output spatial size, or None.
      scale_factor: scale per spatial dim, used when size is None.
      mode: 'nearest', 'linear', 'bilinear', 'bicubic', 'trilinear' or 'area'.
      align_corners: align corner pixel centers.
      align_mode: 0 (half-pixel) or 1 for the linear modes.
      data_format: layout; default from x.ndim.
      name: ignored (Paddle compatibility).

    Returns:
      The resized tensor.

    Example:
      >>> F.upsample(jnp.ones((1, 1, 2, 2)), size=[3, 3]).shape
      (1, 1, 3, 3)
    """
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


# ----------------------------------------------------------------------------- unfold / fold

def _unfold_args(kernel_sizes, strides, paddings, dilations, op):
    kernel = ntuple(kernel_sizes, 2, op=f"nn.functional.{op}", name="kernel_sizes", minimum=1)
    stride = ntuple(strides, 2, op=f"nn.functional.{op}", name="strides", minimum=1)
    dilation = ntuple(dilations, 2, op=f"nn.functional.{op}", name="dilations", minimum=1)
    if is_int(paddings):
        pads = [int(paddings)] * 4
    elif isinstance(paddings, (list, tuple)) and len(paddings) in (2, 4) and all(is_int(p) for p in paddings):
        pads = list(paddings) * (2 if len(paddings) == 2 else 1)
    else:
        raise error(op, f"paddings={paddings!r} must be an int or 2 or 4 ints ([top, left, bottom, right])")
    top, left, bottom, right = pads
    return kernel, stride, [(top, bottom), (left, right)], dilation


@compiled("x")
def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: sliding [kh, kw] blocks of a [N, C, H, W] input -> [N, C * kh * kw, L].

    Args:
      x: 4-D NCHW input.
      kernel_sizes, strides, dilations: an int or 2 ints.
      paddings: an int, [ph, pw] or [top, left, bottom, right].
      name: ignored.

    Returns:
      [N, C * kh * kw, L] with L the number of block positions; features ordered (C, kh, kw).

    Example:
      >>> F.unfold(jnp.ones((1, 2, 4, 4)), 2).shape
      (1, 8, 9)
    """
    x = array(x, op="unfold")
    if x.ndim != 4:
        raise error("unfold", f"expects a 4-D NCHW x; got x.shape={tuple(x.shape)}")
    kernel, stride, pads, dilation = _unfold_args(kernel_sizes, strides, paddings, dilations, "unfold")
    n, c, h, w = x.shape
    xp = jnp.pad(x, [(0, 0), (0, 0), *pads])
    oh = (xp.shape[2] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    if oh <= 0 or ow <= 0:
        raise error("unfold", f"kernel_sizes={kernel} (dilation {dilation}) is larger than the padded input "
                              f"{tuple(xp.shape[2:])} of x.shape={tuple(x.shape)}")
    rows = (np.arange(oh) * stride[0])[:, None] + np.arange(kernel[0]) * dilation[0]  # (oh, kh)
    cols = (np.arange(ow) * stride[1])[:, None] + np.arange(kernel[1]) * dilation[1]  # (ow, kw)
    patches = xp[:, :, rows[:, :, None, None], cols[None, None, :, :]]  # (N, C, oh, kh, ow, kw)
    patches = patches.transpose(0, 1, 3, 5, 2, 4)  # (N, C, kh, kw, oh, ow)
    return patches.reshape(n, c * kernel[0] * kernel[1], oh * ow)


@compiled("x")
def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """col2im, the adjoint of `unfold`: sums [N, C * kh * kw, L] blocks into [N, C, H, W].

    Args:
      x: [N, C * kh * kw, L] blocks.
      output_sizes: [H, W] of the result.
      kernel_sizes: an int or 2 ints.
      strides: an int or 2 ints.
      paddings: an int, [ph, pw] or [top, left, bottom, right].
      dilations: an int or 2 ints.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, H, W] with overlapping blocks summed.

    Example:
      >>> F.fold(jnp.ones((1, 8, 9)), [4, 4], 2).shape
      (1, 2, 4, 4)
    """
    x = array(x, op="fold")
    out_hw = ntuple(output_sizes, 2, op="nn.functional.fold", name="output_sizes", minimum=1)
    kernel = ntuple(kernel_sizes, 2, op="nn.functional.fold", name="kernel_sizes", minimum=1)
    if x.ndim != 3 or x.shape[1] % (kernel[0] * kernel[1]):
        raise error("fold", f"expects x of shape [N, C * kh * kw, L] with kernel {kernel}; "
                            f"got x.shape={tuple(x.shape)}")
    c = x.shape[1] // (kernel[0] * kernel[1])
    template = jax.ShapeDtypeStruct((x.shape[0], c, *out_hw), x.dtype)
    blocks = jax.eval_shape(lambda t: unfold(t, kernel, strides, paddings, dilations), template)
    if blocks.shape != x.shape:
        raise error("fold", f"x.shape={tuple(x.shape)} does not match the {blocks.shape[2]} blocks of "
                            f"output_sizes={out_hw} with kernel {kernel}; expected {tuple(blocks.shape)}")
    (out,) = jax.linear_transpose(lambda t: unfold(t, kernel, strides, paddings, dilations), template)(x)
    return out


# ----------------------------------------------------------------------------- similarity

@compiled("x1", "x2")
def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    """Cosine similarity along `axis`: x1 . x2 / max(|x1| |x2|, eps).

    Args:
      x1, x2: tensors broadcastable to each other.
      axis: the reduced axis.
      eps: floor on the norm product.

    Returns:
      The similarity, with `axis` removed.

    Example:
      >>> F.cosine_similarity(jnp.array([[1.0, 0.0]]), jnp.array([[1.0, 0.0]])).tolist()
      [1.0]
    """
    x1 = float_array(x1, op="cosine_similarity", name="x1")
    x2 = float_array(x2, op="cosine_similarity", name="x2")
    try:
        shape = jnp.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise error("cosine_similarity", f"x1.shape={tuple(x1.shape)} and x2.shape={tuple(x2.shape)} "
                                         "do not broadcast") from None
    x1, x2 = jnp.broadcast_to(x1, shape), jnp.broadcast_to(x2, shape)
    ax = normalize_axis(axis, len(shape), op="nn.functional.cosine_similarity")
    w12 = jnp.sum(x1 * x2, axis=ax)
    w1 = jnp.sum(x1 * x1, axis=ax)
    w2 = jnp.sum(x2 * x2, axis=ax)
    return w12 / jnp.sqrt(jnp.maximum(w1 * w2, eps * eps))


@compiled("label", "prior_dist")
def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    """(1 - epsilon) * label + epsilon * prior (uniform 1 / num_classes by default).

    Args:
      label: one-hot (or soft) labels, classes on the last axis.
      prior_dist: optional [1, num_classes] prior.
      epsilon: smoothing weight in [0, 1].
      name: ignored.

    Returns:
      The smoothed labels.

    Example:
      >>> F.label_smooth(jnp.array([[0.0, 1.0]]), epsilon=0.5).tolist()
      [[0.25, 0.75]]
    """
    if not 0 <= epsilon <= 1:
        raise error("label_smooth", f"epsilon must be in [0, 1]; got epsilon={epsilon}")
    label = float_array(label, op="label_smooth", name="label")
    if prior_dist is None:
        return (1 - epsilon) * label + epsilon / label.shape[-1]
    prior = array(prior_dist, op="label_smooth", name="prior_dist").astype(label.dtype)
    return (1 - epsilon) * label + epsilon * prior.reshape(-1)
