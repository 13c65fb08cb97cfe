"""Inference-only oneDNN calls of exported programs: weights kept per token, max pools.

An exported artifact's CPU program (`pdx.export`, `pdx/kernels/_rewrite.py`) calls these
instead of the training primitives in `_conv_matmul.py`, from the same
handler library (`_build.py`):

- `kept_conv`: a convolution whose weight, scaled by a folded BatchNorm, is
  reordered into oneDNN's layout on the first call with a token and kept
  under (token, call site); bias, residual add and ReLU / ReLU6 are post-ops.
- `kept_matmul`: a Linear's matmul whose weight is kept the same way.
- `max_pool_nhwc`: a max pool of channels-last activations.
- `new_weights_token` / `forget_weights`: a loaded artifact's token, and
  freeing what was kept under it.

None has a derivative rule; non-CPU lowerings use the references.

Example:
  >>> max_pool_nhwc(jnp.ones((1, 4, 4, 2)), kernel=(2, 2), strides=(2, 2), padding=((0, 0), (0, 0))).shape
  (1, 2, 2, 2)
"""

from __future__ import annotations

import ctypes
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import mlir

from pdx.kernels._dispatch import Unsupported
from pdx.kernels.onednn._build import _STATE
from pdx.kernels.onednn._build import load as _load
from pdx.kernels.onednn._conv_matmul import _forward_shape, _geometry_attrs, _sized, conv2d_nhwc_reference
from pdx.kernels.onednn._conv_matmul import float_dtypes

__all__ = ["forget_weights", "kept_conv", "kept_matmul", "max_pool_nhwc", "max_pool_nhwc_reference",
           "new_weights_token"]

# ---------------------------------------------------------------------------- inference with kept weights

_inference_p = Primitive("pdx_onednn_conv_inference")
_inference_p.def_impl(lambda *args, **p: jax.jit(functools.partial(_inference_p.bind, **p))(*args))
_inference_p.def_abstract_eval(lambda x, w, *_, site, residual, relu, relu_max, **g: jax.core.ShapedArray(
    _forward_shape(x.shape, w.shape, **g), x.dtype))


def _inference_reference(x, w, scale, shift, residual, token, *, site, residual_used, relu, relu_max=np.inf, **g):
    del token, site
    scaled = (w.astype(jnp.float32) * scale[:, None, None, None]).astype(x.dtype)
    y = conv2d_nhwc_reference(x, scaled, **g).astype(jnp.float32) + shift
    if residual_used:
        y = y + residual.astype(jnp.float32)
    return (jnp.clip(y, 0, relu_max) if relu else y).astype(x.dtype)


def _lower_inference(ctx, *args, strides, padding, dilation, groups, site, residual, relu, relu_max):
    (out,) = ctx.avals_out
    call = jax.ffi.ffi_call("pdx_onednn_conv_inference", jax.ShapeDtypeStruct(out.shape, out.dtype))
    attrs = dict(_geometry_attrs(strides, padding, dilation, groups), site=np.int64(site),
                 residual=np.int64(residual), relu=np.int64(relu), relu_max=np.float32(relu_max))
    return mlir.lower_fun(lambda *a: call(*a, **attrs), multiple_results=False)(ctx, *args)


def _lower_inference_reference(ctx, *args, residual, **p):
    return mlir.lower_fun(lambda *a: _inference_reference(*a, residual_used=residual, **p),
                          multiple_results=False)(ctx, *args)


mlir.register_lowering(_inference_p, _lower_inference, platform="cpu")
mlir.register_lowering(_inference_p, _lower_inference_reference)


def kept_conv(x, w, token, *, site: int, strides, padding, dilation, groups, scale=None, shift=None, residual=None,
              relu: bool = False, relu_max: float = float("inf")):
    """Inference convolution whose weight keeps its oneDNN layout between calls with the same `token`:
    `act(conv2d_nhwc(x, w * scale) + shift + residual)`, act = `clip(., 0, relu_max)` if `relu`
    (ReLU, or ReLU6 with relu_max=6).

    For inference programs whose weights are constant per token: the first
    call with a token scales `w` per output channel (a folded BatchNorm),
    reorders it into the kernel's layout and keeps it under (token, `site`),
    the call site's number in the program (unique per program); later calls
    skip both. `shift` is the kernel's bias, `residual` and ReLU its post-ops.
    An exported artifact's CPU program takes an int32 token beside its
    parameters and a loaded artifact passes one of its own
    (`new_weights_token`), freed with `forget_weights`. Token 0 keeps nothing.
    A weight or scale that changes under the same token gives wrong results:
    only pass ones computed from constants. bfloat16 `x` (and `residual`) may
    take a float32 `w`, kept as bfloat16 (scaled in float32 first).
    """
    reason = _load()
    if reason is not None:
        raise Unsupported(f"oneDNN convolutions are unavailable: {reason}", "use the portable program")
    out_channels = w.shape[0]
    scale = jnp.ones((out_channels,), jnp.float32) if scale is None else jnp.asarray(scale, jnp.float32)
    shift = jnp.zeros((out_channels,), jnp.float32) if shift is None else jnp.asarray(shift, jnp.float32)
    used = residual is not None
    residual = jnp.zeros((0,), x.dtype) if residual is None else residual
    return _inference_p.bind(x, w, scale, shift, residual, token, strides=strides, padding=padding,
                             dilation=dilation, groups=groups, site=int(site), residual=used, relu=bool(relu),
                             relu_max=float(relu_max))


_TOKENS = itertools.count(1)


def new_weights_token() -> np.ndarray:
    """A token no other caller in this process has (int32 scalar), for `kept_conv`."""
    return np.int32(next(_TOKENS))


def forget_weights(token) -> None:
    """Free the weights kept for `token`; no call with it may be running."""
    lib = _STATE.get("library")
    if lib is not None:
        lib.PdxForgetWeights(ctypes.c_int64(int(token)))


# ---------------------------------------------------------------------------- max pool

def max_pool_nhwc_reference(x, *, kernel, strides, padding):
    """What `max_pool_nhwc` computes, in plain `lax` (padding is -inf)."""
    lowest = jnp.array(-jnp.inf, x.dtype)
    return jax.lax.reduce_window(x, lowest, jax.lax.max, (1, *kernel, 1), (1, *strides, 1), ((0, 0), *padding, (0, 0)))


def _max_pool_shape(shape, kernel, strides, padding):
    n, h, w, c = shape
    size = [(d + lo + hi - k) // s + 1 for d, k, s, (lo, hi) in zip((h, w), kernel, strides, padding)]
    return (n, *size, c)


_max_pool_p = Primitive("pdx_onednn_max_pool")
_max_pool_p.def_impl(lambda x, **p: jax.jit(functools.partial(_max_pool_p.bind, **p))(x))
_max_pool_p.def_abstract_eval(lambda x, *, kernel, strides, padding: jax.core.ShapedArray(
    _max_pool_shape(x.shape, kernel, strides, padding), x.dtype))


def _lower_max_pool(ctx, x, *, kernel, strides, padding):
    (out,) = ctx.avals_out
    call = jax.ffi.ffi_call("pdx_onednn_max_pool", jax.ShapeDtypeStruct(out.shape, out.dtype))
    attrs = {"kernel": np.asarray(kernel, np.int64), "strides": np.asarray(strides, np.int64),
             "padding_lo": np.asarray([lo for lo, _ in padding], np.int64),
             "padding_hi": np.asarray([hi for _, hi in padding], np.int64)}
    return mlir.lower_fun(lambda x: call(x, **attrs), multiple_results=False)(ctx, x)


mlir.register_lowering(_max_pool_p, _lower_max_pool, platform="cpu")
mlir.register_lowering(_max_pool_p, mlir.lower_fun(max_pool_nhwc_reference, multiple_results=False))


def max_pool_nhwc(x, *, kernel, strides, padding):
    """Max pool of channels-last x [N, H, W, C] (float32 / bfloat16) over H and W, on oneDNN.

    For inference programs (no derivative rule): windows `kernel`, `strides`,
    `padding` ((lo, hi) per spatial dim; padding never wins, as -inf in
    `max_pool_nhwc_reference`). Whole images split over XLA's threads. Raises
    `Unsupported` where oneDNN cannot run or the arguments do not fit.

    >>> max_pool_nhwc(jnp.ones((1, 4, 4, 2)), kernel=(2, 2), strides=(2, 2), padding=((0, 0), (0, 0))).shape
    (1, 2, 2, 2)
    """
    reason = _load()
    if reason is not None:
        raise Unsupported(f"oneDNN max pooling is unavailable: {reason}", "use max_pool_nhwc_reference")
    kernel, strides = tuple(int(k) for k in kernel), tuple(int(s) for s in strides)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    if (x.ndim != 4 or x.dtype not in float_dtypes() or len(kernel) != 2 or len(strides) != 2
            or len(padding) != 2 or min(kernel + strides) < 1 or min(p for lh in padding for p in lh) < 0
            or any(lo >= k or hi >= k for (lo, hi), k in zip(padding, kernel))
            or not _sized(*x.shape[1:]) or min(_max_pool_shape(x.shape, kernel, strides, padding)[1:3]) < 1):
        raise Unsupported(f"oneDNN max pooling takes float32 (and bfloat16 on AVX-512 CPUs) x [N, H, W, C] with 2-D windows, padding "
                          f"smaller than the window and a nonempty output; got x {x.dtype}{tuple(x.shape)}, "
                          f"kernel {kernel}, strides {strides}, padding {padding}")
    return _max_pool_p.bind(x, kernel=kernel, strides=strides, padding=padding)


# ---------------------------------------------------------------------------- matmul with a kept weight

def _kept_matmul_reference(a, b, token, *, transpose_b, site):
    del token, site
    b = (b.T if transpose_b else b).astype(a.dtype)  # a bfloat16 `a` takes the weight rounded to bfloat16
    return jnp.matmul(a, b, preferred_element_type=jnp.float32)


_kept_matmul_p = Primitive("pdx_onednn_matmul_inference")
_kept_matmul_p.def_impl(lambda *args, **p: jax.jit(functools.partial(_kept_matmul_p.bind, **p))(*args))
_kept_matmul_p.def_abstract_eval(lambda a, b, token, *, transpose_b, site: jax.core.ShapedArray(
    (a.shape[0], b.shape[0] if transpose_b else b.shape[1]), jnp.float32))


def _lower_kept_matmul(ctx, a, b, token, *, transpose_b, site):
    (out,) = ctx.avals_out
    call = jax.ffi.ffi_call("pdx_onednn_matmul_inference", jax.ShapeDtypeStruct(out.shape, out.dtype))
    return mlir.lower_fun(lambda *args: call(*args, transpose_b=np.int64(transpose_b), site=np.int64(site)),
                          multiple_results=False)(ctx, a, b, token)


mlir.register_lowering(_kept_matmul_p, _lower_kept_matmul, platform="cpu")
mlir.register_lowering(_kept_matmul_p, mlir.lower_fun(_kept_matmul_reference, multiple_results=False))


def kept_matmul(a, b, token, *, site: int, transpose_b: bool = False):
    """Inference matmul whose weight keeps its oneDNN layout between calls with the same `token`:
    float32 `a @ op(b)`, op(b) = b or b.T (`transpose_b`), for a [M, K] float32 or bfloat16 and a
    float32 weight b (kept as bfloat16 for a bfloat16 `a`, with float32 accumulation).

    As `kept_conv`: the first call with a token reorders b (each thread's block of columns)
    and keeps it under (token, `site`); token 0 keeps nothing; a weight that changes under
    the same token gives wrong results. No derivative rule.

    >>> kept_matmul(jnp.ones((2, 3)), jnp.ones((3, 4)), np.int32(0), site=1).shape
    (2, 4)
    """
    reason = _load()
    if reason is not None:
        raise Unsupported(f"oneDNN matmuls are unavailable: {reason}", "use the portable program")
    k = b.shape[1] if transpose_b else b.shape[0]
    if (a.ndim != 2 or b.ndim != 2 or a.dtype not in (jnp.float32, jnp.bfloat16) or b.dtype != jnp.float32
            or not _sized(*b.shape) or a.shape[1] != k):
        raise Unsupported(f"kept oneDNN matmuls take a float32/bfloat16 a [M, K] and a float32 b [K, N] (or [N, K] "
                          f"with transpose_b); got a {a.dtype}{tuple(a.shape)}, b {b.dtype}{tuple(b.shape)}, "
                          f"transpose_b={transpose_b}")
    return _kept_matmul_p.bind(a, b, jnp.asarray(token, jnp.int32), transpose_b=bool(transpose_b), site=int(site))
