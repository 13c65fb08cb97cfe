"""2-D convolutions and matmuls on oneDNN for XLA:CPU: JAX primitives and dispatch ops.

XLA:CPU's own convolutions and transposed matmuls run well below oneDNN's
speed on AVX-512 machines (benchmarks/RESULTS.md); PyTorch and Paddle use
oneDNN. This module puts oneDNN into compiled pdx programs as XLA FFI custom
calls into the library `_build.py` builds (`csrc/conv_matmul.cc`: convolution
forward, backward-data, backward-weights; a matmul with either operand
transposed):

1. A JAX primitive per handler. Each is bilinear in its two operands and
   transposes into the others, so reverse mode, forward mode and higher
   derivatives all stay on oneDNN. vmap and non-CPU lowerings use the
   pure-JAX references (`conv2d_nhwc_reference`, `matmul_reference`).
2. `CONV2D_NHWC` / `MATMUL`: the dispatch ops, their "xla" references and
   the "onednn" implementations registered into them; oneDNN is preferred
   where `pdx._lowering.native_kernels()` and the operands fit, for the
   kernel calls and for the layers delegating to them (`F.conv2d`, `F.linear`).

Layouts: activations channels-last ([N, H, W, C]), the weight as Paddle
stores it ([out, in / groups, kh, kw]); float32 and bfloat16; any groups.

Example:
  >>> x, w = jnp.ones((1, 8, 8, 3)), jnp.ones((4, 3, 3, 3))
  >>> conv2d_nhwc(x, w, strides=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1)).shape
  (1, 8, 8, 4)
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from pdx._lowering import native_kernels
from pdx.kernels._dispatch import Impl, Op, Unsupported, register_impl
from pdx.kernels.onednn._build import available, float_dtypes
from pdx.kernels.onednn._build import load as _load

__all__ = ["CONV2D_NHWC", "FORWARD", "MATMUL", "MATMUL_PRIMITIVE", "conv2d_nhwc", "conv2d_nhwc_reference", "fits",
           "matmul", "matmul_reference"]

# ---------------------------------------------------------------------------- references

def conv2d_nhwc_reference(x, w, *, strides, padding, dilation, groups=1):
    """What `conv2d_nhwc` computes, in plain `lax`: channels-last x, [out, in / groups, kh, kw] w."""
    return jax.lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=dilation,
                                        dimension_numbers=("NHWC", "OIHW", "NHWC"), feature_group_count=groups)


def _backward_data_reference(dy, w, *, input_shape, **geometry):
    zeros = jnp.zeros(input_shape, dy.dtype)
    return jax.vjp(lambda x: conv2d_nhwc_reference(x, w, **geometry), zeros)[1](dy)[0]


def _backward_weights_reference(x, dy, *, weight_shape, **geometry):
    zeros = jnp.zeros(weight_shape, x.dtype)
    return jax.vjp(lambda w: conv2d_nhwc_reference(x, w, **geometry), zeros)[1](dy)[0]


# ---------------------------------------------------------------------------- primitives

def _geometry(params):
    return {k: params[k] for k in ("strides", "padding", "dilation", "groups")}


def _out_size(size, k, s, d, lo, hi):
    return (size + lo + hi - (d * (k - 1) + 1)) // s + 1


def _forward_shape(x_shape, w_shape, strides, padding, dilation, groups):
    n, h, wd, _ = x_shape
    o, _, kh, kw = w_shape
    return (n, *(_out_size(size, k, s, d, lo, hi) for size, k, s, d, (lo, hi)
                 in zip((h, wd), (kh, kw), strides, dilation, padding)), o)


def _geometry_attrs(strides, padding, dilation, groups) -> dict:
    """The attributes every convolution handler takes (`WithGeometry` in csrc/conv_matmul.cc)."""
    return {"strides": np.asarray(strides, np.int64), "dilation": np.asarray(dilation, np.int64),
            "padding_lo": np.asarray([lo for lo, _ in padding], np.int64),
            "padding_hi": np.asarray([hi for _, hi in padding], np.int64), "groups": np.int64(groups)}


def _primitive(name, shape_of, reference):
    p = Primitive(f"pdx_onednn_conv_{name}")
    p.def_impl(lambda a, b, **params: jax.jit(functools.partial(p.bind, **params))(a, b))
    p.def_abstract_eval(lambda a, b, **params: jax.core.ShapedArray(shape_of(a, b, **params), a.dtype))
    target = f"pdx_onednn_conv_{name}"

    def lower_cpu(ctx, a, b, *, strides, padding, dilation, groups, **_):
        (out,) = ctx.avals_out
        call = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(out.shape, out.dtype))
        attrs = _geometry_attrs(strides, padding, dilation, groups)
        return mlir.lower_fun(lambda a, b: call(a, b, **attrs), multiple_results=False)(ctx, a, b)

    mlir.register_lowering(p, lower_cpu, platform="cpu")
    mlir.register_lowering(p, mlir.lower_fun(lambda a, b, **params: reference(a, b, **params),
                                             multiple_results=False))

    def batch(args, dims, **params):
        return jax.vmap(functools.partial(reference, **params), in_axes=dims)(*args), 0

    batching.primitive_batchers[p] = batch
    return p


_forward_p = _primitive("forward", lambda x, w, **g: _forward_shape(x.shape, w.shape, **_geometry(g)),
                        lambda x, w, **g: conv2d_nhwc_reference(x, w, **g))
FORWARD = _forward_p.name  # the forward convolution's primitive, as program rewrites see it
_backward_data_p = _primitive("backward_data", lambda dy, w, *, input_shape, **_: input_shape,
                              _backward_data_reference)
_backward_weights_p = _primitive("backward_weights", lambda x, dy, *, weight_shape, **_: weight_shape,
                                 _backward_weights_reference)


def _forward(x, w, **g):
    return _forward_p.bind(x, w, **g)


def _backward_data(dy, w, input_shape, **g):
    return _backward_data_p.bind(dy, w, input_shape=tuple(input_shape), **g)


def _backward_weights(x, dy, weight_shape, **g):
    return _backward_weights_p.bind(x, dy, weight_shape=tuple(weight_shape), **g)


# Each op is bilinear; the transpose with respect to one operand is another of the three.
ad.defbilinear(_forward_p,
               lambda ct, x, w, **p: _backward_data(ct, w, x.aval.shape, **_geometry(p)),
               lambda ct, x, w, **p: _backward_weights(x, ct, w.aval.shape, **_geometry(p)))
ad.defbilinear(_backward_data_p,
               lambda ct, dy, w, **p: _forward(ct, w, **_geometry(p)),
               lambda ct, dy, w, **p: _backward_weights(ct, dy, w.aval.shape, **_geometry(p)))
ad.defbilinear(_backward_weights_p,
               lambda ct, x, dy, **p: _backward_data(dy, ct, x.aval.shape, **_geometry(p)),
               lambda ct, x, dy, **p: _forward(x, ct, **_geometry(p)))


def _onednn(x, w, *, strides, padding, dilation, groups):
    reason = _load()
    if reason is not None:
        raise Unsupported(f"oneDNN convolutions are unavailable: {reason}", "use impl='auto' or impl='xla'")
    if not fits(x, w, padding, groups):
        raise Unsupported(f"oneDNN convolutions take float32 (and bfloat16 on AVX-512 CPUs) x [N, H, W, C] and w [out, C / groups, kh, kw] of "
                          f"one dtype with non-negative padding; got x {x.dtype}{tuple(x.shape)}, "
                          f"w {w.dtype}{tuple(w.shape)}, padding {padding}")
    return _forward(x, w, strides=strides, padding=padding, dilation=dilation, groups=groups)


def _sized(*dims) -> bool:
    return all(isinstance(d, int) and d > 0 for d in dims)


def fits(x, w, padding, groups=1) -> bool:
    """Whether oneDNN's convolution takes these operands (shapes, dtypes, padding); the batch may be symbolic."""
    return (x.ndim == 4 and w.ndim == 4 and x.dtype == w.dtype and x.dtype in float_dtypes()
            and x.shape[-1] == w.shape[1] * groups and w.shape[0] % groups == 0 and all(isinstance(p, int) and p >= 0 for pair in padding for p in pair)
            and _sized(*x.shape[1:], *w.shape) and (_sized(x.shape[0]) or jax.export.is_symbolic_dim(x.shape[0])))


def _prefer_onednn(x, w, *, strides, padding, dilation, groups) -> bool:
    return native_kernels() and fits(x, w, padding, groups) and available()


CONV2D_NHWC = Op("conv2d_nhwc", {"xla": conv2d_nhwc_reference})
register_impl(CONV2D_NHWC, "onednn", _onednn, prefer_if=_prefer_onednn)  # a layer's conv: the same rule


def conv2d_nhwc(x, w, *, strides, padding, dilation, groups: int = 1, impl: Impl = "auto"):
    """2-D convolution, x [N, H, W, C] and w [out, C / groups, kh, kw] -> [N, OH, OW, out]; oneDNN on CPU.

    "auto" runs oneDNN where `pdx._lowering.native_kernels()` (a single CPU
    device, or inside `native()`) when the operands fit (float32 or bfloat16,
    any groups, depthwise included) and XLA's convolution otherwise (and in
    portable exports). Reverse mode, forward mode, higher derivatives and vmap all work.

    Args:
      x: channels-last input.
      w: the weight, same dtype.
      strides, dilation: 2 ints each.
      padding: 2 (low, high) pairs of non-negative ints.
      groups: channel groups (in and out channels divisible by it).
      impl: "auto", "onednn" or "xla" (see the module docstring).

    >>> x, w = jnp.ones((2, 5, 5, 2)), jnp.ones((3, 2, 3, 3))
    >>> conv2d_nhwc(x, w, strides=(2, 2), padding=((0, 0), (0, 0)), dilation=(1, 1)).shape
    (2, 2, 2, 3)
    """
    geometry = {"strides": tuple(int(s) for s in strides), "dilation": tuple(int(d) for d in dilation),
                "padding": tuple((int(lo), int(hi)) for lo, hi in padding), "groups": int(groups)}
    return CONV2D_NHWC(impl, x, w, **geometry)


# ---------------------------------------------------------------------------- matmul

def matmul_reference(a, b, *, transpose_a=False, transpose_b=False):
    """What `matmul` computes: op(a) @ op(b) for 2-D a and b, op a transpose where asked."""
    return jnp.matmul(a.T if transpose_a else a, b.T if transpose_b else b)


def _matmul_shape(a, b, *, transpose_a, transpose_b):
    return (a.shape[1] if transpose_a else a.shape[0], b.shape[0] if transpose_b else b.shape[1])


_matmul_p = Primitive("pdx_onednn_matmul")
_matmul_p.def_impl(lambda a, b, **params: jax.jit(functools.partial(_matmul_p.bind, **params))(a, b))
_matmul_p.def_abstract_eval(lambda a, b, **p: jax.core.ShapedArray(_matmul_shape(a, b, **p), a.dtype))


def _lower_matmul(ctx, a, b, *, transpose_a, transpose_b):
    (out,) = ctx.avals_out
    call = jax.ffi.ffi_call("pdx_onednn_matmul", jax.ShapeDtypeStruct(out.shape, out.dtype))
    return mlir.lower_fun(lambda a, b: call(a, b, transpose_a=np.int64(transpose_a),
                                            transpose_b=np.int64(transpose_b)), multiple_results=False)(ctx, a, b)


mlir.register_lowering(_matmul_p, _lower_matmul, platform="cpu")
mlir.register_lowering(_matmul_p, mlir.lower_fun(matmul_reference, multiple_results=False))
batching.primitive_batchers[_matmul_p] = lambda args, dims, **p: (
    jax.vmap(functools.partial(matmul_reference, **p), in_axes=dims)(*args), 0)


def _mm(a, b, ta, tb):
    return _matmul_p.bind(a, b, transpose_a=bool(ta), transpose_b=bool(tb))


def _matmul_ct_a(ct, a, b, *, transpose_a, transpose_b):  # c = A @ B: dA = ct @ B^T, a = A or A^T
    return _mm(b, ct, transpose_b, True) if transpose_a else _mm(ct, b, False, not transpose_b)


def _matmul_ct_b(ct, a, b, *, transpose_a, transpose_b):  # dB = A^T @ ct, b = B or B^T
    return _mm(ct, a, True, transpose_a) if transpose_b else _mm(a, ct, not transpose_a, False)


ad.defbilinear(_matmul_p, _matmul_ct_a, _matmul_ct_b)


def _onednn_matmul(a, b, *, transpose_a, transpose_b):
    reason = _load()
    if reason is not None:
        raise Unsupported(f"oneDNN matmuls are unavailable: {reason}", "use impl='auto' or impl='xla'")
    if not _matmul_fits(a, b, transpose_a, transpose_b):
        raise Unsupported(f"oneDNN matmuls take 2-D float32 (and bfloat16 on AVX-512 CPUs) a and b of one dtype that agree on the "
                          f"contracted size; got a {a.dtype}{tuple(a.shape)}, b {b.dtype}{tuple(b.shape)}")
    return _mm(a, b, transpose_a, transpose_b)


def _matmul_fits(a, b, transpose_a, transpose_b) -> bool:
    # a's rows (the flattened batch of a Linear) may be symbolic; b, a weight, is sized.
    rows = a.shape[1 if transpose_a else 0]
    return (a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype and a.dtype in float_dtypes()
            and _sized(a.shape[0 if transpose_a else 1], *b.shape)
            and (_sized(rows) or jax.export.is_symbolic_dim(rows))
            and a.shape[0 if transpose_a else 1] == b.shape[1 if transpose_b else 0])


def _prefer_onednn_matmul(a, b, *, transpose_a, transpose_b) -> bool:
    return native_kernels() and _matmul_fits(a, b, transpose_a, transpose_b) and available()


MATMUL = Op("matmul", {"xla": matmul_reference})
register_impl(MATMUL, "onednn", _onednn_matmul, prefer_if=_prefer_onednn_matmul)  # F.linear: the same rule
MATMUL_PRIMITIVE = _matmul_p.name  # as program rewrites see it


def matmul(a, b, *, transpose_a: bool = False, transpose_b: bool = False, impl: Impl = "auto"):
    """op(a) @ op(b) for 2-D a and b (op: a transpose where asked); oneDNN on CPU.

    "auto" runs oneDNN on a single CPU device for float32/bfloat16 operands and
    XLA's dot otherwise (and in exports). All differentiation modes and vmap work.

    >>> matmul(jnp.ones((4, 3)), jnp.ones((5, 3)), transpose_b=True).shape
    (4, 5)
    """
    return MATMUL(impl, a, b, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))
