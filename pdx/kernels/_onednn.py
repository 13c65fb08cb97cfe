"""2-D convolutions and matmuls on oneDNN for XLA:CPU: build, registration, JAX primitives.

XLA:CPU's own convolutions and transposed matmuls run well below oneDNN's
speed on AVX-512 machines (benchmarks/RESULTS.md); PyTorch and Paddle use
oneDNN. This module puts oneDNN into compiled pdx programs as XLA FFI custom
calls:

1. `_onednn.cc` (FFI handlers: convolution forward, backward-data,
   backward-weights; a matmul with either operand transposed), with
   `_onednn_attention.cc` and `_onednn_norm.cc` (attention and LayerNorm,
   wrapped by `_onednn_attention.py` / `_onednn_norm.py`) and their shared
   header `_onednn.h`, is compiled on first use with the C++ compiler,
   against the headers and library of the `onednn-cpu-gomp` /
   `onednn-devel-cpu-gomp` wheels, into one library in a cache directory
   keyed by the sources and the versions, linked to a private copy
   of the library (Paddle bundles another oneDNN under the same soname).
   Without a compiler or the wheels (or with `PDX_ONEDNN=0`), `available()`
   is False and everything stays on XLA.
2. A JAX primitive per handler. Each is bilinear in its two operands and
   transposes into the others, so reverse mode, forward mode and higher
   derivatives all stay on oneDNN. vmap and non-CPU lowerings use the
   pure-JAX references (`conv2d_nhwc_reference`, `matmul_reference`).
3. `CONV2D_NHWC` / `MATMUL`: the dispatch ops ("onednn", "xla"); oneDNN is
   preferred where `pdx._lowering.native_kernels()` and the operands fit.

The inference-only handlers of exported programs (kept weights, max pool)
are wrapped in `_onednn_inference.py`.

Layouts: activations channels-last ([N, H, W, C]), the weight as Paddle
stores it ([out, in / groups, kh, kw]); float32 and bfloat16; any groups.

Example:
  >>> x, w = jnp.ones((1, 8, 8, 3)), jnp.ones((4, 3, 3, 3))
  >>> conv2d_nhwc(x, w, strides=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1)).shape
  (1, 8, 8, 4)
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from pdx import _cpu
from pdx._lowering import native_kernels
from pdx.kernels._dispatch import Impl, Op, Unsupported

__all__ = ["ABI", "CONV2D_NHWC", "FORWARD", "MATMUL", "MATMUL_PRIMITIVE", "TARGETS", "available", "conv2d_nhwc",
           "conv2d_nhwc_reference", "fits", "matmul", "matmul_reference", "unavailable_reason"]

_HERE = Path(__file__).parent
_SOURCES = (_HERE / "_onednn.cc", _HERE / "_onednn_attention.cc", _HERE / "_onednn_norm.cc")  # one library; each
# includes _onednn.h
_HEADER = _HERE / "_onednn.h"
_TARGETS = {"pdx_onednn_conv_forward": "PdxConvForward", "pdx_onednn_conv_backward_data": "PdxConvBackwardData",
            "pdx_onednn_conv_backward_weights": "PdxConvBackwardWeights", "pdx_onednn_conv_inference": "PdxConvInference",
            "pdx_onednn_matmul": "PdxMatmul", "pdx_onednn_max_pool": "PdxMaxPool",
            "pdx_onednn_matmul_inference": "PdxMatmulInference", "pdx_onednn_attention_forward": "PdxAttentionForward",
            "pdx_onednn_attention_backward": "PdxAttentionBackward", "pdx_onednn_layer_norm_forward": "PdxLayerNormForward",
            "pdx_onednn_layer_norm_backward": "PdxLayerNormBackward"}
TARGETS = tuple(_TARGETS)  # the custom-call targets a program traced with these kernels may hold
# The handlers' operands and attributes, as a serialized program calls them: an artifact
# records it, and a program written for another ABI runs its portable twin instead.
ABI = 4
_LOCK = threading.Lock()
_STATE: dict[str, object] = {}


# ---------------------------------------------------------------------------- build and load

def _prefixes():
    seen = []
    for p in (sysconfig.get_path("data"), sys.prefix, sys.base_prefix):
        if p and p not in seen:
            seen.append(p)
    return [Path(p) for p in seen]


def _find_onednn():
    """(include dir, library path) of the oneDNN wheels, or a reason string."""
    for prefix in _prefixes():
        include, lib = prefix / "include", prefix / "lib" / "libdnnl.so.3"
        if (include / "dnnl.hpp").is_file() and lib.is_file():
            return include, lib
    return ("oneDNN was not found (install the `onednn-cpu-gomp` and `onednn-devel-cpu-gomp` wheels, "
            "which `pip install pdx` does on x86-64 Linux)")


def _cache_dir() -> Path:
    root = os.environ.get("PDX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pdx")
    return Path(root) / "onednn"


# Paddle ships its own libdnnl.so.3 (another oneDNN version), and the dynamic loader
# shares one library per soname: the handlers link a private copy whose soname is
# renamed (same length, in place), so either can load first and each keeps its own.
_PRIVATE_SONAME = b"libpdxdnn.so"
_SONAME = b"libdnnl.so.3"


def _private_onednn(lib: Path, where: Path) -> Path:
    """A copy of oneDNN's library under a soname no other package uses."""
    out = where / _PRIVATE_SONAME.decode()  # the name the loader looks for (rpath = where)
    if out.is_file():
        return out
    data = bytearray(lib.read_bytes())
    at = data.find(_SONAME + b"\0")
    if at < 0 or data.find(_SONAME + b"\0", at + 1) >= 0:
        raise OSError(f"{lib}: expected its soname {_SONAME.decode()!r} exactly once")
    data[at:at + len(_SONAME)] = _PRIVATE_SONAME
    fd, tmp = tempfile.mkstemp(dir=where)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, out)
    return out


def _build() -> Path | str:
    """Compile the handlers (once per source/version), returning the library or a reason."""
    found = _find_onednn()
    if isinstance(found, str):
        return found
    include, lib = found
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not compiler:
        return "no C++ compiler found (set CXX or install g++)"
    sources = [path.read_bytes() for path in (*_SOURCES, _HEADER)]
    key = hashlib.sha256(b"\0".join([*sources, jax.__version__.encode(), str(lib.resolve()).encode(),
                                     str(lib.stat().st_size).encode(), compiler.encode()])).hexdigest()[:16]
    where = _cache_dir() / key
    out = where / "pdx_onednn.so"
    if out.is_file():
        return out
    where.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=where)
    os.close(fd)
    try:
        private = _private_onednn(lib, where)
        cmd = [compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-fopenmp", "-w", f"-I{jax.ffi.include_dir()}",
               f"-I{include}", *map(str, _SOURCES), "-o", tmp, str(private),
               f"-Wl,-rpath,{where}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode:
            return f"compiling {' and '.join(p.name for p in _SOURCES)} failed: {done.stderr.strip()[-2000:]}"
        os.replace(tmp, out)  # atomic: concurrent builders each write their own temp file
    except (OSError, subprocess.SubprocessError) as e:
        return f"building {' and '.join(p.name for p in _SOURCES)} failed: {e}"
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def _load() -> str | None:
    """Build, load and register the handlers once; None when ready, else why not."""
    with _LOCK:
        if "reason" not in _STATE:
            _STATE["reason"] = _register()
        return _STATE["reason"]


def _register() -> str | None:
    if os.environ.get("PDX_ONEDNN", "1") == "0":
        return "disabled by PDX_ONEDNN=0"
    if sys.platform != "linux":
        return f"oneDNN convolutions are built for Linux only (this is {sys.platform})"
    built = _build()
    if isinstance(built, str):
        return built
    try:
        # Its own scope first: never bind to another package's oneDNN symbols.
        lib = ctypes.CDLL(str(built), mode=os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_DEEPBIND)
        for name, symbol in _TARGETS.items():
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)),
                                        platform="cpu")
    except (OSError, AttributeError) as e:
        return f"loading {built} failed: {e}"
    _STATE["library"] = lib
    return None


def unavailable_reason() -> str | None:
    """Why oneDNN convolutions cannot run here (None when they can). Builds on first call."""
    return _load()


@functools.cache
def bf16_capable() -> bool:
    """Whether this CPU runs oneDNN's bfloat16 primitives: AVX-512 (core) or newer.

    oneDNN has no bfloat16 convolution or matmul for AVX2-only CPUs (it fails
    creating the primitive), so there bfloat16 operands run on XLA.

    >>> isinstance(bf16_capable(), bool)
    True
    """
    return _cpu.bf16_native()


def float_dtypes() -> tuple:
    """The floating dtypes oneDNN's primitives take on this CPU."""
    return (jnp.float32, jnp.bfloat16) if bf16_capable() else (jnp.float32,)


def available() -> bool:
    """Whether oneDNN convolutions can run in this process (builds the handlers on first call).

    >>> isinstance(available(), bool)
    True
    """
    return _load() is None


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
    """The attributes every convolution handler takes (`WithGeometry` in _onednn.cc)."""
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


CONV2D_NHWC = Op("conv2d_nhwc", {"onednn": _onednn, "xla": conv2d_nhwc_reference},
                 prefer_if={"onednn": _prefer_onednn})


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


MATMUL = Op("matmul", {"onednn": _onednn_matmul, "xla": matmul_reference}, prefer_if={"onednn": _prefer_onednn_matmul})
MATMUL_PRIMITIVE = _matmul_p.name  # as program rewrites see it


def matmul(a, b, *, transpose_a: bool = False, transpose_b: bool = False, impl: Impl = "auto"):
    """op(a) @ op(b) for 2-D a and b (op: a transpose where asked); oneDNN on CPU.

    "auto" runs oneDNN on a single CPU device for float32/bfloat16 operands and
    XLA's dot otherwise (and in exports). All differentiation modes and vmap work.

    >>> matmul(jnp.ones((4, 3)), jnp.ones((5, 3)), transpose_b=True).shape
    (4, 5)
    """
    return MATMUL(impl, a, b, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))
