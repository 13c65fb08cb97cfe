"""Convolutions and transposed convolutions over 1, 2 or 3 spatial dims.

Weights keep Paddle's layouts whatever the data_format: `[out, in / groups,
*kernel]` for conv and `[in, out / groups, *kernel]` for conv_transpose. Padding
follows Paddle: an int, one int per spatial dim, before/after per dim, pairs
including the batch and channel dims, or 'SAME' / 'VALID'. Paddle's 'SAME'
ignores dilation (it pads as if dilation were 1 and convolves with dilation 1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx import kernels as K
from pdx._amp_policy import cast_inputs  # AMP hook: pdx.amp.auto_cast casts white-list ops
from pdx._lowering import materialized, pointwise_as_matmul
from pdx.nn.functional._args import (
    array, bcast_channel, channel_axis, check_rank, compiled, error, is_int, ntuple, padding_spec, same_pads,
    spatial_format,
)

__all__ = ["conv1d", "conv1d_transpose", "conv2d", "conv2d_transpose", "conv3d", "conv3d_transpose"]

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def _dimension_numbers(n, is_last):
    sp = _SPATIAL[n]
    lhs = ("N" + sp + "C") if is_last else ("NC" + sp)
    return (lhs, "OI" + sp, lhs)


def _common_args(x, weight, stride, dilation, groups, data_format, n, op):
    x = array(x, op=op)
    weight = array(weight, op=op, name="weight")
    is_last = spatial_format(data_format, n, op=op)
    check_rank(x, n + 2, data_format, op=op)
    if weight.ndim != n + 2:
        raise error(op, f"expects a {n + 2}-D weight; got weight.shape={tuple(weight.shape)}")
    if not is_int(groups) or groups < 1:
        raise error(op, f"groups must be a positive int; got groups={groups!r}")
    stride = ntuple(stride, n, op=f"nn.functional.{op}", name="stride", minimum=1)
    dilation = ntuple(dilation, n, op=f"nn.functional.{op}", name="dilation", minimum=1)
    if x.dtype == jnp.int8 and weight.dtype == jnp.int8:
        # Integer inference (pdx.quantization's converted layers): int8 x int8 accumulates in int32.
        return x, weight, is_last, stride, dilation
    dtype = jnp.result_type(x.dtype, weight.dtype)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.float32
    return x.astype(dtype), weight.astype(dtype), is_last, stride, dilation


def _accumulator(x):
    return jnp.int32 if x.dtype == jnp.int8 else None


def _add_bias(out, bias, channels, is_last, op):
    if bias is None:
        return out
    bias = array(bias, op=op, name="bias")
    if bias.size not in (channels, 1):  # one value broadcasts to every channel, as in Paddle
        raise error(op, f"bias.shape={tuple(bias.shape)} must hold one value per output channel ({channels}) "
                        "or a single value")
    return out + bcast_channel(bias.reshape(-1).astype(out.dtype), out.ndim, channel_axis(out.ndim, is_last))


def _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, n, op):
    x, weight, is_last, stride, dilation = _common_args(x, weight, stride, dilation, groups, data_format, n, op)
    in_channels = x.shape[channel_axis(x.ndim, is_last)]
    out_channels, in_per_group = weight.shape[:2]
    if in_channels != in_per_group * groups:
        raise error(op, f"x has in_channels={in_channels} (x.shape={tuple(x.shape)}, data_format={data_format!r}) "
                        f"but weight.shape={tuple(weight.shape)} with groups={groups} expects "
                        f"in_channels = weight.shape[1] * groups = {in_per_group * groups}; weight is "
                        f"[out_channels, in_channels / groups, *kernel]")
    if out_channels % groups:
        raise error(op, f"out_channels={out_channels} (weight.shape[0]) must be divisible by groups={groups}")
    kernel = weight.shape[2:]
    sizes = x.shape[1:-1] if is_last else x.shape[2:]
    pads = padding_spec(padding, n, is_last, op=op)
    if pads == "SAME":
        pads, dilation = same_pads(sizes, kernel, stride), (1,) * n
    for size, k, d, (lo, hi) in zip(sizes, kernel, dilation, pads):
        if size + lo + hi < d * (k - 1) + 1:
            raise error(op, f"the (dilated) kernel {tuple(kernel)} with dilation {tuple(dilation)} is larger than "
                            f"the padded input {tuple(sizes)} (padding {pads})")
    # Channels-first input is computed channels-last: XLA's CPU convolutions work in
    # NHWC, and moving the channel axis here (not inside XLA, around each convolution)
    # lets the moves of neighbouring layers (BatchNorm does the same) cancel, so an
    # NCHW network runs as NHWC with one transpose at each end (benchmarks/RESULTS.md).
    x = x if is_last else jnp.moveaxis(x, 1, -1)
    x, pads = _trim_unread(x, pads, kernel, stride, dilation, True)
    if groups == 1 and all(k == 1 for k in kernel) and all(is_int(p) for pair in pads for p in pair) \
            and pointwise_as_matmul():
        out = _pointwise(x, weight, pads, stride)
    else:
        out = _convolution(x, weight, stride, pads, dilation, groups)
    out = _add_bias(out, bias, out_channels, True, op)
    return out if is_last else jnp.moveaxis(out, -1, 1)


def _conv_xla(x, weight, stride, pads, dilation, groups):
    # Unfused layout changes for the backward (pdx/_lowering.py: 0.83x ResNet-18's step).
    x, weight = materialized(x), materialized(weight)
    out = jax.lax.conv_general_dilated(
        x, weight, window_strides=stride, padding=pads, rhs_dilation=dilation,
        dimension_numbers=_dimension_numbers(x.ndim - 2, True), feature_group_count=groups,
        preferred_element_type=_accumulator(x))
    return materialized(out)  # its gradient too: unfused from BatchNorm's backward


def _conv_kernel_args(x, weight, stride, pads, dilation, groups):
    return (x, weight), {"strides": stride, "padding": pads, "dilation": dilation, "groups": groups}


def _conv_kernel(impl, x, weight, stride, pads, dilation, groups):
    return K.conv2d_nhwc(x, weight, strides=stride, padding=pads, dilation=dilation, groups=groups, impl=impl)


# The implementations registered into pdx.kernels' conv2d_nhwc beyond XLA's (an optional
# backend's) serve 2-D convolutions too, through _conv_kernel.
_CONV2D = K.Op("conv2d_nhwc", {"xla": _conv_xla},
               delegate=K.Delegate(K.OPS["conv2d_nhwc"], _conv_kernel_args, _conv_kernel))


def _convolution(x, weight, stride, pads, dilation, groups):
    """Convolve channels-last x: through pdx.kernels.conv2d_nhwc where a backend registered
    there takes it (the CPU kernels: 2-D, float32/bfloat16, a single CPU device, not
    exporting; 0.88x the XLA step in benchmarks/RESULTS.md), else XLA's convolution."""
    if x.ndim == 4 and all(is_int(p) for pair in pads for p in pair):
        pads = tuple((int(lo), int(hi)) for lo, hi in pads)
        return _CONV2D("auto", x, weight, tuple(int(s) for s in stride), pads, tuple(int(d) for d in dilation), groups)
    return _conv_xla(x, weight, stride, pads, dilation, groups)


def _pointwise(x, weight, pads, stride):
    """A 1x1 convolution (channels-last x) as one 2-D matmul over the strided pixels.

    XLA:CPU runs it faster this way than as a convolution: 0.5-1.1x forward,
    0.5-0.9x forward + backward on ResNet and MobileNet shapes (the weight
    gradient avoids the convolution's transposes; benchmarks/RESULTS.md).

    >>> x, w = jnp.ones((1, 4, 4, 3)), jnp.ones((2, 3, 1, 1))
    >>> _pointwise(x, w, [(0, 0), (0, 0)], (2, 2)).shape
    (1, 2, 2, 2)
    """
    if any(int(lo) or int(hi) for lo, hi in pads):
        x = jnp.pad(x, [(0, 0), *[(int(lo), int(hi)) for lo, hi in pads], (0, 0)])
    if any(s > 1 for s in stride):
        x = x[(slice(None), *(slice(None, None, s) for s in stride))]
    out = jax.lax.dot_general(x.reshape(-1, x.shape[-1]), weight.reshape(weight.shape[0], -1),
                              (((1,), (1,)), ((), ())), preferred_element_type=_accumulator(x))
    return out.reshape(*x.shape[:-1], weight.shape[0])


def _trim_unread(x, pads, kernel, stride, dilation, is_last):
    """Drop trailing padding (then input rows) that no strided window reads.

    Same result and gradient; the convolution's padded input is then exactly
    the windows' span, which IREE's linalg lowering requires (a stride-2
    convolution over a 2x2 map with padding 1 failed to compile without it).
    """
    first = 1 if is_last else 2
    pads, cut = [tuple(p) for p in pads], {}
    for axis, (size, k, s, d) in enumerate(zip(x.shape[first:first + len(kernel)], kernel, stride, dilation)):
        lo, hi = pads[axis]
        if not (isinstance(size, int) and is_int(lo) and is_int(hi)):
            continue  # symbolic sizes: leave the program as written
        lo, hi = int(lo), int(hi)
        span = d * (k - 1) + 1
        excess = (size + lo + hi - span) % s
        if excess:
            trim = min(hi, excess)
            pads[axis] = (lo, hi - trim)
            if excess > trim:
                cut[first + axis] = size - (excess - trim)
    if cut:
        x = x[tuple(slice(0, cut.get(i)) for i in range(x.ndim))]
    return x, pads


def _transpose_kernel(weight, groups, n):
    """[in, out/g, *k] -> the equivalent forward-conv kernel [out, in/g, *k], spatially flipped."""
    c_in, out_per_group = weight.shape[:2]
    kernel = weight.shape[2:]
    w = weight.reshape((groups, c_in // groups, out_per_group) + kernel)
    w = jnp.swapaxes(w, 1, 2).reshape((groups * out_per_group, c_in // groups) + kernel)
    return jnp.flip(w, axis=tuple(range(2, 2 + n)))


def _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                       data_format, n, op):
    x, weight, is_last, stride, dilation = _common_args(x, weight, stride, dilation, groups, data_format, n, op)
    in_channels = x.shape[channel_axis(x.ndim, is_last)]
    if weight.shape[0] != in_channels:
        raise error(op, f"x has in_channels={in_channels} (x.shape={tuple(x.shape)}, data_format={data_format!r}) "
                        f"but weight.shape[0]={weight.shape[0]}; conv_transpose weight is "
                        f"[in_channels, out_channels / groups, *kernel]")
    if in_channels % groups:
        raise error(op, f"in_channels={in_channels} must be divisible by groups={groups}")
    kernel = weight.shape[2:]
    sizes = x.shape[1:-1] if is_last else x.shape[2:]
    pads = padding_spec(padding, n, is_last, op=op)
    if pads == "SAME":
        pads, dilation = same_pads(sizes, kernel, stride), (1,) * n
    base = [(i - 1) * s - lo - hi + d * (k - 1) + 1
            for i, s, (lo, hi), d, k in zip(sizes, stride, pads, dilation, kernel)]
    if output_size is not None:
        if output_padding not in (0, None) and output_padding != [0] * n:
            raise error(op, "output_padding and output_size are mutually exclusive; give only one")
        target = ntuple(output_size, n, op=f"nn.functional.{op}", name="output_size", minimum=1)
        extra = [t - b for t, b in zip(target, base)]
        for t, b, e, s in zip(target, base, extra, stride):
            if not 0 <= e < s:
                raise error(op, f"output_size={tuple(target)} must lie in [{tuple(base)}, "
                                f"{tuple(b + s for b, s in zip(base, stride))}) for these input sizes and strides")
    else:
        extra = list(ntuple(0 if output_padding is None else output_padding, n, op=f"nn.functional.{op}", name="output_padding",
                            minimum=0))
        for e, s, d in zip(extra, stride, dilation):
            if e >= max(s, d):
                raise error(op, f"output_padding={tuple(extra)} must be smaller than max(stride, dilation) "
                                f"per dim (stride={tuple(stride)}, dilation={tuple(dilation)})")
    if any(b + e <= 0 for b, e in zip(base, extra)):
        raise error(op, f"padding {pads} leaves an empty output for input sizes {tuple(sizes)}")
    conv_pads = [(d * (k - 1) - lo, d * (k - 1) - hi + e)
                 for (lo, hi), d, k, e in zip(pads, dilation, kernel, extra)]
    out = jax.lax.conv_general_dilated(
        x, _transpose_kernel(weight, groups, n), window_strides=(1,) * n, padding=conv_pads,
        lhs_dilation=stride, rhs_dilation=dilation,
        dimension_numbers=_dimension_numbers(n, is_last), feature_group_count=groups,
        preferred_element_type=_accumulator(x))
    return _add_bias(out, bias, weight.shape[1] * groups, is_last, op)


@cast_inputs("conv1d", "x", "weight", "bias")
@compiled("x", "weight", "bias")
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", name=None):
    """1-D convolution (cross-correlation) of [N, C, L] (or NLC) with weight [out, in/groups, k].

    Args:
      x: [N, C, L] (or NLC) input.
      weight: [out_channels, in_channels / groups, k].
      bias: optional [out_channels].
      stride: an int or [int].
      padding: int, [int], [before, after], pairs incl. batch/channel, 'SAME' or 'VALID'.
      dilation: an int or [int].
      groups: channel groups.
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Returns:
      The output in the same data_format.

    Example:
      >>> F.conv1d(jnp.ones((1, 2, 5)), jnp.ones((3, 2, 3))).shape
      (1, 3, 3)
    """
    return _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, 1, "conv1d")


@cast_inputs("conv2d", "x", "weight", "bias")
@compiled("x", "weight", "bias")
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    """2-D convolution (cross-correlation), Paddle's `F.conv2d`.

    Args:
      x: [N, C, H, W] (or NHWC) input.
      weight: [out_channels, in_channels / groups, kh, kw] in either data_format.
      bias: optional [out_channels].
      stride, dilation: an int or 2 ints.
      padding: int, 2 ints, 4 ints [top, bottom, left, right], 4 pairs incl. batch/channel, 'SAME' or 'VALID'.
      groups: channel groups (in and out channels must be divisible by it).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored.

    Returns:
      The output in the same data_format.

    Example:
      >>> F.conv2d(jnp.ones((1, 3, 8, 8)), jnp.ones((4, 3, 3, 3)), padding=1).shape
      (1, 4, 8, 8)
    """
    return _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, 2, "conv2d")


@cast_inputs("conv3d", "x", "weight", "bias")
@compiled("x", "weight", "bias")
def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCDHW", name=None):
    """3-D convolution of [N, C, D, H, W] (or NDHWC) with weight [out, in/groups, kd, kh, kw].

    Args:
      x: [N, C, D, H, W] (or NDHWC) input.
      weight: [out_channels, in_channels / groups, kd, kh, kw].
      bias: optional [out_channels].
      stride: an int or 3 ints.
      padding: int, 3 ints, 6 ints, 5 pairs incl. batch/channel, 'SAME' or 'VALID'.
      dilation: an int or 3 ints.
      groups: channel groups.
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      The output in the same data_format.

    Example:
      >>> F.conv3d(jnp.ones((1, 2, 4, 4, 4)), jnp.ones((3, 2, 3, 3, 3))).shape
      (1, 3, 2, 2, 2)
    """
    return _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, 3, "conv3d")


@cast_inputs("conv1d_transpose", "x", "weight", "bias")
@compiled("x", "weight", "bias")
def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCL", name=None):
    """1-D transposed convolution; weight [in, out/groups, k].

    Args:
      x: [N, C_in, L] (or NLC) input.
      weight: [C_in, out_channels / groups, k].
      bias: optional [out_channels].
      stride: an int or [int].
      padding: as conv1d.
      output_padding: extra trailing size, < max(stride, dilation).
      groups: channel groups.
      dilation: an int or [int].
      output_size: optional output length instead of output_padding.
      data_format: 'NCL' or 'NLC'.
      name: ignored (Paddle compatibility).

    Returns:
      The upsampled output in the same data_format.

    Example:
      >>> F.conv1d_transpose(jnp.ones((1, 2, 4)), jnp.ones((2, 3, 3)), stride=2).shape
      (1, 3, 9)
    """
    return _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                              data_format, 1, "conv1d_transpose")


@cast_inputs("conv2d_transpose", "x", "weight", "bias")
@compiled("x", "weight", "bias")
def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                     output_size=None, data_format="NCHW", name=None):
    """2-D transposed convolution (the gradient of conv2d w.r.t. its input), Paddle's `F.conv2d_transpose`.

    Output size per dim: (in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1
    + output_padding; `output_size` picks output_padding for you.

    Args:
      x: [N, C_in, H, W] (or NHWC).
      weight: [C_in, out_channels / groups, kh, kw].
      bias: optional [out_channels].
      stride, dilation: an int or 2 ints.
      padding: as conv2d.
      output_padding: extra size on the trailing side, < max(stride, dilation).
      groups: channel groups.
      output_size: optional [oh, ow] instead of output_padding.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored.

    Returns:
      The upsampled output in the same data_format.

    Example:
      >>> F.conv2d_transpose(jnp.ones((1, 4, 5, 5)), jnp.ones((4, 2, 3, 3)), stride=2).shape
      (1, 2, 11, 11)
    """
    return _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                              data_format, 2, "conv2d_transpose")


@cast_inputs("conv3d_transpose", "x", "weight", "bias")
@compiled("x", "weight", "bias")
def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCDHW", name=None):
    """3-D transposed convolution; weight [in, out/groups, kd, kh, kw].

    Args:
      x: [N, C_in, D, H, W] (or NDHWC) input.
      weight: [C_in, out_channels / groups, kd, kh, kw].
      bias: optional [out_channels].
      stride: an int or 3 ints.
      padding: as conv3d.
      output_padding: extra trailing size, < max(stride, dilation).
      groups: channel groups.
      dilation: an int or 3 ints.
      output_size: optional [od, oh, ow] instead of output_padding.
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      The upsampled output in the same data_format.

    Example:
      >>> F.conv3d_transpose(jnp.ones((1, 2, 2, 2, 2)), jnp.ones((2, 1, 2, 2, 2)), stride=2).shape
      (1, 1, 4, 4, 4)
    """
    return _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                              data_format, 3, "conv3d_transpose")

