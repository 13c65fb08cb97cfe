"""Paddle PIR ops as pure JAX functions: the registry the program translator looks ops up in.

Each entry takes the op's input values (a `jax.Array`; a `numpy.ndarray` for
values the program computes from constants and shapes, so that reshape targets
and slice bounds stay static; a list for `builtin.combine`; `None` for an absent
optional input) and its attributes, and returns its outputs (one value or a
tuple; outputs the program never reads, such as batch norm's saved statistics,
are `None`).
"""

from __future__ import annotations

import math
from types import MappingProxyType

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from pdx.inference._detection_ops import PaddedRows, matrix_nms, multiclass_nms3, yolo_box
from pdx.nn import functional as F

__all__ = ["OPS", "PaddedRows", "is_static"]


def is_static(v) -> bool:
    """True for values known at trace time (numpy arrays and lists of them)."""
    if isinstance(v, list):
        return all(is_static(x) for x in v)
    return v is None or isinstance(v, (np.ndarray, np.generic, int, float))


def _jdt(name):
    """The JAX dtype for a Paddle dtype name (int64/float64 narrow when jax_enable_x64 is off)."""
    return jax.dtypes.canonicalize_dtype(np.dtype(name) if name != "bfloat16" else jnp.bfloat16)


def _ints(v):
    """Python ints of an int list value: one array, or a list of scalar / 1-element pieces (builtin.combine)."""
    if isinstance(v, list):
        return [int(x) for part in v for x in np.asarray(part).reshape(-1)]
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _axis(v):
    return int(np.asarray(v).reshape(-1)[0])


def _pairs(paddings, n, data, kernel, strides, dilations, algorithm):
    """[(lo, hi)] * n from Paddle's paddings (n or 2n numbers) and padding_algorithm."""
    if algorithm == "VALID":
        return [(0, 0)] * n
    if algorithm == "SAME":
        out = []
        for size, k, s, d in zip(data, kernel, strides, dilations):
            total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
            out.append((total // 2, total - total // 2))
        return out
    p = [int(x) for x in paddings]
    if len(p) == n:
        return [(x, x) for x in p]
    if len(p) == 2 * n:
        return [(p[2 * i], p[2 * i + 1]) for i in range(n)]
    raise ValueError(f"paddings={p} must hold {n} or {2 * n} numbers")


# ---- convolution and pooling -------------------------------------------------------------


def _conv(ins, a):
    x, w = ins[0], ins[1]
    nhwc = a.get("data_format", "NCHW") in ("NHWC", "NDHWC")
    n = x.ndim - 2
    spatial = x.shape[1:-1] if nhwc else x.shape[2:]
    strides = [int(s) for s in a.get("strides", [1] * n)]
    dilations = [int(d) for d in a.get("dilations", [1] * n)]
    pads = _pairs(a.get("paddings", [0] * n), n, spatial, w.shape[2:], strides, dilations,
                  a.get("padding_algorithm", "EXPLICIT"))
    groups = int(a.get("groups", 1))
    if n == 2 and all(lo >= 0 and hi >= 0 for lo, hi in pads):
        # pdx's own 2-D convolution: on CPU it reaches the oneDNN kernels (and the predictor's kept weights)
        padding = [(0, 0), *pads, (0, 0)] if nhwc else [(0, 0), (0, 0), *pads]
        return F.conv2d(x, w, None, strides, padding, dilations, groups, "NHWC" if nhwc else "NCHW")
    spec = "N" + "DHW"[-n:] + "C" if nhwc else "NC" + "DHW"[-n:]
    dn = lax.conv_dimension_numbers(x.shape, w.shape, (spec, "OI" + "DHW"[-n:], spec))
    return lax.conv_general_dilated(x, w, strides, pads, rhs_dilation=dilations, dimension_numbers=dn,
                                    feature_group_count=groups)


def _conv_transpose(ins, a):
    """Paddle's conv{2,3}d_transpose: filter (C_in, C_out / groups, *k), optional output_size (ints)."""
    x, w = ins[0], ins[1]
    out_size = _ints(ins[2]) if len(ins) > 2 and ins[2] is not None else []
    nhwc = a.get("data_format", "NCHW") in ("NHWC", "NDHWC")
    n = x.ndim - 2
    if nhwc:
        perm = (0, n + 1, *range(1, n + 1))
        y = _conv_transpose([jnp.transpose(x, perm), w, ins[2] if len(ins) > 2 else None],
                            {**a, "data_format": "NCHW"})
        return jnp.transpose(y, (0, *range(2, n + 2), 1))
    spatial, kernel = x.shape[2:], w.shape[2:]
    strides = [int(s) for s in a.get("strides", [1] * n)]
    dilations = [int(d) for d in a.get("dilations", [1] * n)]
    algorithm = a.get("padding_algorithm", "EXPLICIT")
    if algorithm == "SAME":
        dilations = [1] * n  # Paddle resets the dilation of a SAME-padded transposed convolution
    pads = _pairs(a.get("paddings", [0] * n), n, spatial, kernel, strides, dilations, algorithm)
    extra = [int(p) for p in a.get("output_padding", [])] or [0] * n
    if out_size:
        base = [(i - 1) * s - lo - hi + d * (k - 1) + 1
                for i, s, (lo, hi), d, k in zip(spatial, strides, pads, dilations, kernel)]
        extra = [o - b for o, b in zip(out_size, base)]
        if any(not 0 <= e < max(s, d) for e, s, d in zip(extra, strides, dilations)):
            raise ValueError(f"output_size={out_size} does not fit the input {list(spatial)} with strides={strides}"
                             f" and paddings={a.get('paddings')}: the size without output padding is {base}")
    g = int(a.get("groups", 1))
    c_in, c_out_g = w.shape[0], w.shape[1]
    # (C_in, C_out/g, *k) -> (C_out, C_in/g, *k), spatially flipped: a convolution of the dilated input
    wg = w.reshape(g, c_in // g, c_out_g, *kernel)
    wg = jnp.swapaxes(wg, 1, 2).reshape(g * c_out_g, c_in // g, *kernel)
    wg = jnp.flip(wg, axis=tuple(range(2, n + 2)))
    padding = [(d * (k - 1) - lo, d * (k - 1) - hi + e) for (lo, hi), d, k, e in zip(pads, dilations, kernel, extra)]
    spec = "NC" + "DHW"[-n:]
    dn = lax.conv_dimension_numbers(x.shape, wg.shape, (spec, "OI" + "DHW"[-n:], spec))
    return lax.conv_general_dilated(x, wg, [1] * n, padding, lhs_dilation=strides, rhs_dilation=dilations,
                                    dimension_numbers=dn, feature_group_count=g)


def _interp_size(ins, a, in_h, in_w):
    """(out_h, out_w, scale_h, scale_w) as Paddle's 2-D interpolate kernel resolves them (scale -1: none)."""
    out_size, size_tensor, scale_tensor = (list(ins) + [None] * 4)[1:4]
    out_h, out_w = int(a.get("out_h", -1)), int(a.get("out_w", -1))
    scale_h = scale_w = -1.0
    if size_tensor is not None and size_tensor != []:
        out_h, out_w = _ints(size_tensor)[:2]
        return out_h, out_w, scale_h, scale_w
    if scale_tensor is not None:
        scale = [float(v) for v in np.asarray(scale_tensor, np.float32).reshape(-1)]
        scale_h, scale_w = (scale[0], scale[1]) if len(scale) > 1 else (scale[0], scale[0])
    elif len(a.get("scale", [])) > 1:
        scale_h, scale_w = (float(v) for v in a["scale"][:2])
    if scale_h > 0 and scale_w > 0:  # float32 product truncated, as Paddle's static_cast<int>(in_h * scale_h)
        out_h = int(np.float32(in_h) * np.float32(scale_h))
        out_w = int(np.float32(in_w) * np.float32(scale_w))
    if out_size is not None:
        out_h, out_w = _ints(out_size)[:2]
    if out_h <= 0 or out_w <= 0:
        raise ValueError(f"the output size {[out_h, out_w]} (out_h/out_w, scale={a.get('scale')}) must be positive")
    return out_h, out_w, scale_h, scale_w


def _interp_ratio(size, out, scale, align_corners):
    """Paddle's source step per output pixel (float32)."""
    if out <= 1:
        return np.float32(0.0)
    if align_corners:
        return np.float32(size - 1) / np.float32(out - 1)
    return np.float32(1.0 / scale) if scale > 0 else np.float32(size) / np.float32(out)


def _linear_taps(size, out, ratio, align_flag):
    """(lower index, upper index, upper weight) per output pixel, with Paddle's float32/float64 rounding."""
    k = np.arange(out)
    if align_flag:
        src = np.float64(ratio) * (k + 0.5) - 0.5
        lo = np.maximum(src.astype(np.int64), 0)  # C++ truncation, then clamped at 0
        frac = np.maximum(src.astype(np.float32), 0) - lo.astype(np.float32)
    else:
        src = (ratio * k.astype(np.float32)).astype(np.float32)
        lo = np.maximum(src.astype(np.int64), 0)
        frac = src - lo.astype(np.float32)
    hi = np.minimum(lo + 1, size - 1)
    return lo, hi, frac.astype(np.float32)


# Paddle's layouts per rank for the modes resampled by pdx's F.interpolate
_RESIZE_FORMATS = {3: {"NCHW": "NCW", "NCW": "NCW", "NHWC": "NWC", "NWC": "NWC"},
                   4: {"NCHW": "NCHW", "NHWC": "NHWC"},
                   5: {"NCHW": "NCDHW", "NCDHW": "NCDHW", "NHWC": "NDHWC", "NDHWC": "NDHWC"}}


def _resize(ins, a):
    """pd_op.bicubic_interp / trilinear_interp / linear_interp (and 5-D nearest) through pdx's F.interpolate,
    which follows Paddle's kernels (ratio 1 / scale when a scale is given, in / out otherwise)."""
    x, method = ins[0], a.get("interp_method", "bilinear")
    n = x.ndim - 2
    fmt = _RESIZE_FORMATS.get(x.ndim, {}).get(a.get("data_format", "NCHW"))
    if fmt is None:
        raise ValueError(f"{method} interpolation of a {x.ndim}-D input in layout {a.get('data_format')!r} is not "
                         "supported")
    out_size, size_tensor, scale_tensor = (list(ins) + [None] * 4)[1:4]
    sizes, scale = None, None
    if size_tensor is not None and size_tensor != []:
        sizes = _ints(size_tensor)[:n]
    elif out_size is not None:
        sizes = _ints(out_size)[:n]
    else:
        if scale_tensor is not None:
            scale = [float(v) for v in np.asarray(scale_tensor, np.float32).reshape(-1)]
        elif a.get("scale"):
            scale = [float(v) for v in a["scale"]]
        if scale and all(v > 0 for v in scale):
            scale = scale * n if len(scale) == 1 else scale[:n]
        else:
            scale, sizes = None, [int(a.get(k, -1)) for k in ("out_d", "out_h", "out_w")[-n:]]
    if sizes is not None and any(v <= 0 for v in sizes):
        raise ValueError(f"the output size {sizes} (out_d/out_h/out_w, scale={a.get('scale')}) must be positive")
    return F.interpolate(x, size=sizes, scale_factor=scale, mode=method, align_corners=bool(a.get("align_corners",
                         False)), align_mode=int(a.get("align_mode", 1)), data_format=fmt)


def _interp(ins, a):
    """pd_op.nearest_interp / bilinear_interp on a 4-D input, with Paddle's index and weight arithmetic."""
    x = ins[0]
    method = a.get("interp_method", "bilinear")
    if x.ndim != 4 or method not in ("nearest", "bilinear"):
        return _resize(ins, a)
    nhwc = a.get("data_format", "NCHW") == "NHWC"
    h_axis, w_axis = (1, 2) if nhwc else (2, 3)
    in_h, in_w = x.shape[h_axis], x.shape[w_axis]
    out_h, out_w, scale_h, scale_w = _interp_size(ins, a, in_h, in_w)
    if (out_h, out_w) == (in_h, in_w):
        return x
    align_corners = bool(a.get("align_corners", False))
    ratio_h = _interp_ratio(in_h, out_h, scale_h, align_corners)
    ratio_w = _interp_ratio(in_w, out_w, scale_w, align_corners)
    if method == "nearest":
        def index(ratio, out):
            src = ratio * np.arange(out).astype(np.float32)
            return (np.float64(src) + 0.5).astype(np.int64) if align_corners else src.astype(np.int64)
        return jnp.take(jnp.take(x, index(ratio_h, out_h), axis=h_axis), index(ratio_w, out_w), axis=w_axis)
    align_flag = int(a.get("align_mode", 1)) == 0 and not align_corners
    y_lo, y_hi, dy = _linear_taps(in_h, out_h, ratio_h, align_flag)
    x_lo, x_hi, dx = _linear_taps(in_w, out_w, ratio_w, align_flag)
    shape_h = [1] * 4
    shape_h[h_axis] = out_h
    shape_w = [1] * 4
    shape_w[w_axis] = out_w
    dy, dx = jnp.asarray(dy.reshape(shape_h), x.dtype), jnp.asarray(dx.reshape(shape_w), x.dtype)
    rows_lo, rows_hi = jnp.take(x, y_lo, axis=h_axis), jnp.take(x, y_hi, axis=h_axis)

    def across(rows):
        return jnp.take(rows, x_lo, axis=w_axis) * (1 - dx) + jnp.take(rows, x_hi, axis=w_axis) * dx
    return across(rows_lo) * (1 - dy) + across(rows_hi) * dy


def _adaptive_bins(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _pool2d(ins, a):
    x, kernel = ins[0], _ints(ins[1])
    if a.get("data_format", "NCHW") == "NHWC":
        return jnp.transpose(_pool2d([jnp.transpose(x, (0, 3, 1, 2)), ins[1]], {**a, "data_format": "NCHW"}),
                             (0, 2, 3, 1))
    kind = a.get("pooling_type", "max")
    reduce = jnp.max if kind == "max" else jnp.mean
    h, w = x.shape[2], x.shape[3]
    if a.get("global_pooling", False) or (a.get("adaptive", False) and kernel == [1, 1]):
        return reduce(x, axis=(2, 3), keepdims=True)
    if a.get("adaptive", False):
        rows = [jnp.stack([reduce(x[:, :, h0:h1, w0:w1], axis=(2, 3)) for (w0, w1) in _adaptive_bins(w, kernel[1])],
                          axis=-1) for (h0, h1) in _adaptive_bins(h, kernel[0])]
        return jnp.stack(rows, axis=-2)
    strides = [int(s) for s in a.get("strides", kernel)]
    pads = _pairs(a.get("paddings", [0, 0]), 2, (h, w), kernel, strides, [1, 1], a.get("padding_algorithm",
                                                                                       "EXPLICIT"))
    if a.get("ceil_mode", False):
        pads = [(lo, hi + (-(size + lo + hi - k) % s)) for (lo, hi), size, k, s in zip(pads, (h, w), kernel, strides)]
    window, step, padding = (1, 1, *kernel), (1, 1, *strides), ((0, 0), (0, 0), *pads)
    if kind == "max":
        return lax.reduce_window(x, -jnp.inf, lax.max, window, step, padding)
    total = lax.reduce_window(x, 0.0, lax.add, window, step, padding)
    if a.get("exclusive", True):
        ones = jnp.ones((1, 1, h, w), x.dtype)
        return total / lax.reduce_window(ones, 0.0, lax.add, window, step, padding)
    return total / (kernel[0] * kernel[1])


# ---- normalization -------------------------------------------------------------------------


def _batch_norm(ins, a):
    x, mean, var, scale, bias = ins
    axis = x.ndim - 1 if a.get("data_format", "NCHW") in ("NHWC", "NDHWC", "NLC") else min(1, x.ndim - 1)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    if not (a.get("is_test", False) or a.get("use_global_stats", False)):
        reduce_axes = tuple(i for i in range(x.ndim) if i != axis)
        mean, var = jnp.mean(x, axis=reduce_axes), jnp.var(x, axis=reduce_axes)
    # x * s + t per channel: a form the CPU program folds into a preceding convolution's weights
    s = lax.rsqrt(var + a.get("epsilon", 1e-5))
    if scale is not None:
        s = s * scale
    t = -mean * s if bias is None else bias - mean * s
    return (x * s.reshape(shape) + t.reshape(shape),) + (None,) * 5


def _layer_norm(ins, a):
    x, scale, bias = ins
    begin = int(a.get("begin_norm_axis", 1))
    axes = tuple(range(begin, x.ndim))
    mean = jnp.mean(x, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) * lax.rsqrt(var + a.get("epsilon", 1e-5))
    if scale is not None:
        y = y * scale.reshape(x.shape[begin:])
    if bias is not None:
        y = y + bias.reshape(x.shape[begin:])
    return y, None, None


def _group_norm(ins, a):
    x, scale, bias = ins
    g = int(a["groups"])
    n, c = x.shape[0], x.shape[1]
    xg = x.reshape(n, g, -1)
    mean = xg.mean(-1, keepdims=True)
    var = jnp.square(xg - mean).mean(-1, keepdims=True)
    y = ((xg - mean) * lax.rsqrt(var + a.get("epsilon", 1e-5))).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if scale is not None:
        y = y * scale.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y, None, None


# ---- shapes and constants -------------------------------------------------------------------


def _full(ins, a):
    return np.full(tuple(int(s) for s in a["shape"]), a["value"], np.dtype(a["dtype"]))


def _full_int_array(ins, a):
    return np.asarray(a["value"], np.dtype(a.get("dtype", "int64"))).reshape(-1)


def _reshape(ins, a):
    x, target = ins[0], _ints(ins[1])
    target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
    return jnp.reshape(x, target), None


def _flatten(ins, a):
    x = ins[0]
    if x.ndim == 0:
        return jnp.reshape(x, (1,)), None
    start, stop = int(a["start_axis"]) % x.ndim, int(a["stop_axis"]) % x.ndim
    shape = (*x.shape[:start], math.prod(x.shape[start:stop + 1]), *x.shape[stop + 1:])
    return jnp.reshape(x, shape), None


def _slice(ins, a):
    x = ins[0]
    starts, ends = _ints(ins[1]), _ints(ins[2])
    index = [slice(None)] * x.ndim
    for axis, s, e in zip(a["axes"], starts, ends):
        size = x.shape[axis]
        s, e = s + size if s < 0 else s, e + size if e < 0 else e
        index[axis] = slice(max(min(s, size), 0), max(min(e, size), 0))
    out = x[tuple(index)]
    decrease = [int(d) for d in a.get("decrease_axis", [])]
    return out.reshape([d for i, d in enumerate(out.shape) if i not in decrease]) if decrease else out


def _strided_slice(ins, a):
    """Python slicing per axis (Paddle clamps out-of-range bounds the same way); legacy decrease_axis squeezes."""
    x = ins[0]
    index = [slice(None)] * x.ndim
    for axis, s, e, st in zip(a["axes"], _ints(ins[1]), _ints(ins[2]), _ints(ins[3])):
        if st == 0:
            raise ValueError(f"strided_slice: the stride of axis {axis} is 0")
        index[int(axis) % x.ndim] = slice(s, e, st)
    out = x[tuple(index)]
    decrease = {int(d) % x.ndim for d in a.get("decrease_axis", [])}
    return out.reshape([d for i, d in enumerate(out.shape) if i not in decrease]) if decrease else out


def _unsqueeze(ins, a):
    x = ins[0]
    for axis in _ints(ins[1]):
        x = (np if isinstance(x, np.ndarray) else jnp).expand_dims(x, axis if axis >= 0 else axis + x.ndim + 1)
    return x, None


def _squeeze(ins, a):
    x, axes = ins[0], _ints(ins[1])
    axes = [ax % x.ndim for ax in axes] if axes else [i for i, d in enumerate(x.shape) if d == 1]
    return x.reshape([d for i, d in enumerate(x.shape) if not (i in axes and d == 1)]), None


def _concat(ins, a):
    parts = ins[0]
    xp = np if all(isinstance(p, np.ndarray) for p in parts) else jnp
    return xp.concatenate(parts, axis=_axis(ins[1]))


def _split(ins, a):
    x, sections, axis = ins[0], _ints(ins[1]), _axis(ins[2])
    size = x.shape[axis]
    if -1 in sections:
        sections[sections.index(-1)] = size - (sum(sections) + 1)
    cuts = np.cumsum(sections)[:-1].tolist()
    return list(jnp.split(x, cuts, axis=axis))


def _split_with_num(ins, a):
    return list(jnp.split(ins[0], int(a["num"]), axis=_axis(ins[1])))


def _arange(ins, a):
    start, end, step = (np.asarray(v).reshape(()) for v in ins)
    return np.arange(start, end, step, dtype=np.dtype(a["dtype"]))


def _assign_value(ins, a):
    # int64 constants come as floats in PIR's JSON ("values": [-1.0])
    return np.asarray(a["values"]).astype(np.dtype(a["dtype"])).reshape([int(d) for d in a["shape"]])


def _numel(ins, a):
    return np.asarray(math.prod(ins[0].shape), np.int64)


def _cumsum(ins, a):
    x = ins[0]
    xp = np if isinstance(x, np.ndarray) else jnp
    axis = _axis(ins[1]) if len(ins) > 1 and ins[1] is not None else -1
    if a.get("flatten", False):
        x, axis = x.reshape(-1), 0
    if a.get("reverse", False):
        x = xp.flip(x, axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if a.get("exclusive", False):
        out = out - x
    return xp.flip(out, axis) if a.get("reverse", False) else out


def _triangle(lower):
    def op(ins, a):
        x = ins[0]
        xp = np if isinstance(x, np.ndarray) else jnp
        return (xp.tril if lower else xp.triu)(x, int(a.get("diagonal", 0)))
    return op


def _masked_fill(ins, a):
    x, mask, value = ins
    return jnp.where(mask, jnp.asarray(value, x.dtype).reshape(()), x)


def _full_with_tensor(ins, a):
    value, shape = ins
    return jnp.broadcast_to(jnp.asarray(value, _jdt(a["dtype"])).reshape(()), tuple(_ints(shape)))


def _full_like(ins, a):
    return jnp.full(ins[0].shape, jnp.asarray(ins[1]).reshape(()), _jdt(a["dtype"]) if a.get("dtype") else
                    ins[0].dtype)


def _stack(ins, a):
    parts = ins[0]
    xp = np if all(isinstance(p, np.ndarray) for p in parts) else jnp
    return xp.stack(parts, axis=int(a.get("axis", 0)))


def _expand(ins, a):
    x, shape = ins[0], _ints(ins[1])
    lead = len(shape) - x.ndim
    shape = [x.shape[i - lead] if d == -1 else d for i, d in enumerate(shape)]
    return jnp.broadcast_to(x, shape)


def _cast(ins, a):
    x = ins[0]
    if isinstance(x, np.ndarray):
        return x.astype(a["dtype"])
    return x.astype(_jdt(a["dtype"]))


def _scale(ins, a):
    x, s = ins[0], ins[1]
    s = a.get("scale", 1.0) if s is None else (s.reshape(()) if getattr(s, "size", 2) == 1 else s)
    b = a.get("bias", 0.0)
    xp = np if isinstance(x, np.ndarray) else jnp
    dtype = x.dtype
    out = x * s + b if a.get("bias_after_scale", True) else (x + b) * s
    return xp.asarray(out).astype(dtype)


def _reduce(fn):
    def op(ins, a):
        x = ins[0]
        axes = _ints(ins[1]) if len(ins) > 1 and ins[1] is not None else list(a.get("axis", []))
        axis = tuple(ax % max(x.ndim, 1) for ax in axes) if axes and not a.get("reduce_all", False) else None
        return fn(x, axis=axis, keepdims=bool(a.get("keepdim", False)))
    return op


def _arg(fn):
    def op(ins, a):
        x, axis = ins[0], _axis(ins[1])
        if a.get("flatten", False):
            x, axis = x.reshape(-1), 0
        out = fn(x, axis=axis, keepdims=bool(a.get("keepdims", False)))
        return out.astype(_jdt(a.get("dtype", "int64")))
    return op


def _matmul(ins, a):
    x, y = ins
    if a.get("transpose_x", False) and x.ndim >= 2:
        x = jnp.swapaxes(x, -1, -2)
    if a.get("transpose_y", False) and y.ndim >= 2:
        y = jnp.swapaxes(y, -1, -2)
    return jnp.matmul(x, y)


def _embedding(ins, a):
    ids, w = ins
    out = jnp.take(w, jnp.asarray(ids), axis=0)
    pad = int(a.get("padding_idx", -1))
    if pad >= 0:
        out = jnp.where((jnp.asarray(ids) == pad)[..., None], 0, out)
    return out


def _dropout(ins, a):
    x, p = ins[0], ins[2] if len(ins) > 2 else None
    if a.get("mode", "upscale_in_train") == "upscale_in_train":
        return x, None
    rate = float(np.asarray(p).reshape(-1)[0]) if p is not None else float(a.get("p", 0.5))
    return x * (1.0 - rate), None


def _elementwise(fn):
    def op(ins, a):
        x, y = ins
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            return np.asarray(fn(x, y)).astype(np.result_type(x, y))
        return fn(x, y)
    return op


def _unary(fn):
    return lambda ins, a: fn(ins[0])


def _softmax(ins, a):
    return jax.nn.softmax(ins[0], axis=int(a.get("axis", -1)))


def _log_softmax(ins, a):
    return jax.nn.log_softmax(ins[0], axis=int(a.get("axis", -1)))


def _clip(ins, a):
    return jnp.clip(ins[0], jnp.asarray(ins[1]).reshape(()), jnp.asarray(ins[2]).reshape(()))


def _gather(ins, a):
    x, index = ins[0], ins[1]
    axis = _axis(ins[2]) if len(ins) > 2 and ins[2] is not None else int(a.get("axis", 0))
    return jnp.take(x, jnp.asarray(index), axis=axis)


def _tile(ins, a):
    return jnp.tile(ins[0], _ints(ins[1]))


def _where(ins, a):
    return jnp.where(*ins)


def _transpose(ins, a):
    x = ins[0]
    return (np if isinstance(x, np.ndarray) else jnp).transpose(x, [int(p) for p in a["perm"]])


def _shape(dtype):
    return lambda ins, a: np.asarray(ins[0].shape, dtype)


# ---- recurrent layers (pd_op.rnn: Paddle's cuDNN-style fused RNN) --------------------------


def _lstm_cell(x_gates, h, c, w_hh, b_hh):
    gates = x_gates + h @ w_hh.T + b_hh
    i, f, g, o = jnp.split(gates, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jax.nn.sigmoid(o) * jnp.tanh(c), c


def _gru_cell(x_gates, h, w_hh, b_hh):
    xr, xz, xc = jnp.split(x_gates, 3, axis=-1)
    hr, hz, hc = jnp.split(h @ w_hh.T + b_hh, 3, axis=-1)
    r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
    cand = jnp.tanh(xc + r * hc)
    return (h - cand) * z + cand


def _rnn(ins, a):
    """Time-major input (T, B, I); weights [w_ih, w_hh] per layer and direction, then [b_ih, b_hh] likewise."""
    x, init, weights, seq_len = ins[0], ins[1], ins[2], ins[3]
    if seq_len is not None:
        raise ValueError("pd_op.rnn with sequence_length is not supported yet; save the model without it")
    mode = a["mode"]
    dirs = 2 if a.get("is_bidirec", False) else 1
    layers = int(a["num_layers"])
    n = layers * dirs
    ws, bs = weights[:2 * n], weights[2 * n:]
    h0 = init[0]
    c0 = init[1] if mode == "LSTM" else None
    finals_h, finals_c = [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh = ws[2 * k], ws[2 * k + 1]
            b_ih, b_hh = (bs[2 * k], bs[2 * k + 1]) if bs else (0.0, 0.0)
            seq = x[::-1] if d == 1 else x
            x_gates = seq @ w_ih.T + b_ih  # (T, B, G*H)
            if mode == "LSTM":
                def step(carry, xg, w_hh=w_hh, b_hh=b_hh):
                    h, c = _lstm_cell(xg, *carry, w_hh, b_hh)
                    return (h, c), h
                (h, c), ys = lax.scan(step, (h0[k], c0[k]), x_gates)
                finals_c.append(c)
            elif mode == "GRU":
                def step(h, xg, w_hh=w_hh, b_hh=b_hh):
                    h = _gru_cell(xg, h, w_hh, b_hh)
                    return h, h
                h, ys = lax.scan(step, h0[k], x_gates)
            elif mode in ("RNN_TANH", "RNN_RELU"):
                act = jnp.tanh if mode == "RNN_TANH" else jax.nn.relu
                def step(h, xg, w_hh=w_hh, b_hh=b_hh, act=act):
                    h = act(xg + h @ w_hh.T + b_hh)
                    return h, h
                h, ys = lax.scan(step, h0[k], x_gates)
            else:
                raise ValueError(f"pd_op.rnn mode={mode!r} is not one of LSTM, GRU, RNN_TANH, RNN_RELU")
            finals_h.append(h)
            outs.append(ys[::-1] if d == 1 else ys)
        x = jnp.concatenate(outs, axis=-1) if dirs == 2 else outs[0]
    states = [jnp.stack(finals_h)] + ([jnp.stack(finals_c)] if mode == "LSTM" else [])
    return x, None, states, None


# ---- builtin -----------------------------------------------------------------------------------


def _combine(ins, a):
    return list(ins)


def _builtin_split(ins, a):
    return tuple(ins[0])


def _builtin_slice(ins, a):
    return ins[0][int(a["index"])]


def _identity(ins, a):
    return ins[0]


def _gelu(ins, a):
    return jax.nn.gelu(ins[0], approximate=bool(a.get("approximate", False)))


def _hardsigmoid(ins, a):
    return jnp.clip(ins[0] * a.get("slope", 1 / 6) + a.get("offset", 0.5), 0.0, 1.0)


def _leaky_relu(ins, a):
    return jax.nn.leaky_relu(ins[0], a.get("negative_slope", 0.02))


def _stanh(ins, a):
    return a.get("scale_b", 1.7159) * jnp.tanh(a.get("scale_a", 0.67) * ins[0])


def _pow(ins, a):
    return jnp.power(ins[0], a.get("y", 1.0))


def _logical(fn):
    return lambda ins, a: fn(*ins)


_UNARY = {
    "relu": jax.nn.relu, "relu6": jax.nn.relu6, "sigmoid": jax.nn.sigmoid, "tanh": jnp.tanh,
    "hardswish": lambda x: x * jnp.clip(x + 3.0, 0.0, 6.0) / 6.0, "silu": jax.nn.silu, "swish": jax.nn.silu,
    "exp": jnp.exp, "log": jnp.log, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt, "abs": jnp.abs, "square": jnp.square,
    "floor": jnp.floor, "ceil": jnp.ceil, "erf": jax.scipy.special.erf, "sin": jnp.sin, "cos": jnp.cos,
    "softplus": jax.nn.softplus, "mish": lambda x: x * jnp.tanh(jax.nn.softplus(x)), "logical_not": jnp.logical_not,
    "elu": jax.nn.elu, "sign": jnp.sign, "reciprocal": jnp.reciprocal, "isnan": jnp.isnan,
}
_BINARY = {
    "add": jnp.add, "subtract": jnp.subtract, "multiply": jnp.multiply, "divide": jnp.divide,
    "maximum": jnp.maximum, "minimum": jnp.minimum, "elementwise_pow": jnp.power, "remainder": jnp.remainder,
    "floor_divide": jnp.floor_divide, "equal": jnp.equal, "not_equal": jnp.not_equal, "less_than": jnp.less,
    "less_equal": jnp.less_equal, "greater_than": jnp.greater, "greater_equal": jnp.greater_equal,
    "logical_and": jnp.logical_and, "logical_or": jnp.logical_or,
}

_TABLE = {
    "pd_op.conv2d": _conv, "pd_op.depthwise_conv2d": _conv, "pd_op.conv3d": _conv, "pd_op.pool2d": _pool2d,
    "pd_op.conv2d_transpose": _conv_transpose, "pd_op.depthwise_conv2d_transpose": _conv_transpose,
    "pd_op.conv3d_transpose": _conv_transpose, "pd_op.nearest_interp": _interp, "pd_op.bilinear_interp": _interp,
    "pd_op.bicubic_interp": _resize, "pd_op.trilinear_interp": _resize, "pd_op.linear_interp": _resize,
    "pd_op.batch_norm": _batch_norm, "pd_op.batch_norm_": _batch_norm, "pd_op.layer_norm": _layer_norm,
    "pd_op.group_norm": _group_norm,
    "pd_op.full": _full, "pd_op.full_int_array": _full_int_array, "pd_op.full_with_tensor": _full_with_tensor,
    "pd_op.full_like": _full_like, "pd_op.shape64": _shape(np.int64), "pd_op.shape": _shape(np.int32),
    "pd_op.reshape": _reshape, "pd_op.flatten": _flatten, "pd_op.slice": _slice,
    "pd_op.strided_slice": _strided_slice, "pd_op.unsqueeze": _unsqueeze, "pd_op.squeeze": _squeeze,
    "pd_op.concat": _concat, "pd_op.split": _split, "pd_op.split_with_num": _split_with_num,
    "pd_op.assign_value_": _assign_value, "pd_op.assign_value": _assign_value, "pd_op.numel": _numel,
    "pd_op.cumsum": _cumsum, "pd_op.triu": _triangle(False), "pd_op.tril": _triangle(True),
    "pd_op.masked_fill": _masked_fill, "pd_op.stanh": _stanh,
    "pd_op.arange": _arange, "pd_op.stack": _stack, "pd_op.expand": _expand, "pd_op.tile": _tile,
    "pd_op.transpose": _transpose, "pd_op.cast": _cast, "pd_op.scale": _scale,
    "pd_op.mean": _reduce(jnp.mean), "pd_op.sum": _reduce(jnp.sum), "pd_op.max": _reduce(jnp.max),
    "pd_op.min": _reduce(jnp.min), "pd_op.prod": _reduce(jnp.prod),
    "pd_op.argmax": _arg(jnp.argmax), "pd_op.argmin": _arg(jnp.argmin),
    "pd_op.matmul": _matmul, "pd_op.embedding": _embedding, "pd_op.dropout": _dropout,
    "pd_op.softmax": _softmax, "pd_op.log_softmax": _log_softmax, "pd_op.gelu": _gelu,
    "pd_op.hardsigmoid": _hardsigmoid, "pd_op.leaky_relu": _leaky_relu, "pd_op.pow": _pow, "pd_op.clip": _clip,
    "pd_op.gather": _gather, "pd_op.index_select": _gather, "pd_op.where": _where, "pd_op.rnn": _rnn,
    "pd_op.yolo_box": yolo_box, "pd_op.multiclass_nms3": multiclass_nms3, "pd_op.matrix_nms": matrix_nms,
    "pd_op.assign": _identity, "pd_op.share_data_": _identity,
    "builtin.combine": _combine, "builtin.split": _builtin_split, "builtin.slice": _builtin_slice,
    **{f"pd_op.{k}": _unary(f) for k, f in _UNARY.items()},
    **{f"pd_op.{k}": _elementwise(f) for k, f in _BINARY.items()},
}
OPS = MappingProxyType(_TABLE)
