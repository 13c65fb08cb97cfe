"""LayerNorm on CPU: the "onednn" implementation of `layer_norm`.

XLA:CPU runs a LayerNorm as several reduction and elementwise fusions (a
GPT-mini LayerNorm over [1024, 256]: 0.36 ms forward, 1.0 ms with its backward,
against PyTorch's 0.08 / 0.47 ms). `csrc/norm.cc` calls oneDNN's layer
normalization primitives instead, rows split over XLA's threads.

Data flow: `layer_norm(x, w, b)` flattens x to [rows, n] float32 and calls the
forward handler (-> y, mean, variance) under a `jax.custom_vjp` whose backward
calls the backward handler (-> dx, dw, db; oneDNN's primitive reads b too). A missing weight is ones, a missing
bias zeros (their gradients are dropped). The semantics are
`layer_norm_reference`'s; forward-mode differentiation is not defined.

Importing the module registers it as `pdx.kernels.layer_norm`'s "onednn"
(`OPS["layer_norm"]`): "auto" prefers it where `preferred`; a layer's LayerNorm
(`F.layer_norm`, `nn.LayerNorm`) hands float32 calls to that op where native
kernels are allowed and keeps its own XLA math for other dtypes, also under
`use_impl("onednn")`.

Example:
  >>> layer_norm(jnp.ones((4, 8)), None, None, eps=1e-5).shape
  (4, 8)
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx._lowering import native_kernels
from pdx.kernels import _dispatch, _norms
from pdx.kernels.onednn import _build

__all__ = ["layer_norm", "layer_norm_unfit", "preferred"]


def layer_norm_unfit(x) -> str | None:
    """None if the CPU kernel takes x (float32, a known nonzero last dim), else why not."""
    if _dispatch.platform() != "cpu":
        return f"the oneDNN layer norm runs on CPU; the default backend is {_dispatch.platform()!r}"
    if x.dtype != jnp.float32:
        return f"the oneDNN layer norm takes float32; got {x.dtype}"
    if x.ndim < 1 or not isinstance(x.shape[-1], int) or x.shape[-1] == 0:
        return f"the oneDNN layer norm needs a known, nonzero last dim; got x{x.shape}"
    return _build.unavailable_reason()


def preferred(x) -> bool:
    """Whether "auto" should pick the CPU kernel: native kernels allowed here, and it fits."""
    return native_kernels() and layer_norm_unfit(x) is None


def _forward(x, w, b, eps):
    rows, n = x.shape
    call = jax.ffi.ffi_call("pdx_onednn_layer_norm_forward",
                            (jax.ShapeDtypeStruct((rows, n), jnp.float32), jax.ShapeDtypeStruct((rows,), jnp.float32),
                             jax.ShapeDtypeStruct((rows,), jnp.float32)), vmap_method="sequential")
    return call(x, w, b, eps=np.float32(eps))


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _layer_norm(x, w, b, eps):
    return _forward(x, w, b, eps)[0]


def _layer_norm_fwd(x, w, b, eps):
    y, mean, variance = _forward(x, w, b, eps)
    return y, (x, w, b, mean, variance)


def _layer_norm_bwd(eps, residuals, dy):
    x, w, b, mean, variance = residuals
    call = jax.ffi.ffi_call("pdx_onednn_layer_norm_backward",
                            (jax.ShapeDtypeStruct(x.shape, jnp.float32), jax.ShapeDtypeStruct(w.shape, jnp.float32),
                             jax.ShapeDtypeStruct(w.shape, jnp.float32)), vmap_method="sequential")
    return call(x, w, b, mean, variance, dy.astype(jnp.float32), eps=np.float32(eps))


_layer_norm.defvjp(_layer_norm_fwd, _layer_norm_bwd)


def layer_norm(x, weight, bias, *, eps: float):
    """(x - mean) / sqrt(var + eps) * weight + bias over x's last axis, on oneDNN (float32)."""
    n = x.shape[-1]
    w = jnp.ones((n,), jnp.float32) if weight is None else weight.astype(jnp.float32)
    b = jnp.zeros((n,), jnp.float32) if bias is None else bias.astype(jnp.float32)
    y = _layer_norm(x.reshape(-1, n), w, b, float(eps))
    return y.reshape(x.shape)


def _layer_norm_impl(x, weight, bias, *, eps, block_sizes):
    del block_sizes
    reason = layer_norm_unfit(x)
    if reason is not None:
        raise _dispatch.Unsupported(reason)
    return layer_norm(x, weight, bias, eps=eps)


def _float32(x, *_, **__) -> bool:
    return x.dtype == jnp.float32


_dispatch.register_impl(_norms.LAYER_NORM, "onednn", _layer_norm_impl,
                        prefer_if=lambda x, *_, **__: preferred(x),
                        layer_prefer_if=lambda x, *_, **__: _float32(x) and native_kernels(),
                        layer_takes=_float32)
