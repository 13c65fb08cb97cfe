"""How pdx lowers some ops, switchable while tracing.

- 1x1 convolutions (groups 1) are traced as one matmul over the strided pixels
  (pdx/nn/functional/_conv.py: faster forward and backward on XLA:CPU).
  Program rewrites that work on convolutions, such as folding an eval-mode
  BatchNorm into the weights at export (pdx/kernels/_rewrite.py), trace under
  `convolutions_kept()` to see them as convolutions.
- Native CPU kernels (oneDNN convolutions and matmuls, pdx/kernels/onednn/)
  are XLA custom calls that only a process with pdx's kernels can run; exports
  trace their portable program under `portable()`, where `native_kernels()`
  is False and every op lowers to plain StableHLO, and their CPU program under
  `native()`.
- `materialized(v)` keeps XLA:CPU from fusing the ops that produce a
  convolution's input, weight or output gradient into the layout changes its
  backward needs (see its docstring).

Example:
  >>> pointwise_as_matmul()
  True
  >>> with convolutions_kept():
  ...     pointwise_as_matmul()
  False
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx import _trace_context

__all__ = ["convolutions_kept", "materialized", "native", "native_kernels", "pointwise_as_matmul", "portable"]

# Both are trace-context settings, so a compiled function keys on them: an export's
# portable trace never reuses a program traced with custom calls.
_POINTWISE_AS_MATMUL = _trace_context.POINTWISE_AS_MATMUL
_NATIVE_KERNELS = _trace_context.NATIVE_KERNELS


def pointwise_as_matmul() -> bool:
    """Whether a 1x1 convolution traced now becomes a matmul."""
    return _POINTWISE_AS_MATMUL.get()


def convolutions_kept():
    """Trace 1x1 convolutions as convolutions, not as matmuls, inside the block (also a decorator)."""
    return _POINTWISE_AS_MATMUL.set(False)


def native_kernels() -> bool:
    """Whether ops traced now may call kernels compiled into this process (custom calls).

    By default only in a process with one device: a custom call is opaque to
    XLA's SPMD partitioner, which would gather a sharded batch onto every
    device. `portable()` turns them off, `native()` on regardless.
    """
    mode = _NATIVE_KERNELS.get()
    return mode == "always" or (mode == "single-device" and jax.device_count() == 1)


def portable():
    """Trace with plain StableHLO only (no custom calls) inside the block: for exports.

    >>> with portable():
    ...     native_kernels()
    False
    """
    return _NATIVE_KERNELS.set("never")


def native():
    """Trace with the native kernels wherever they fit inside the block (an export's CPU program).

    >>> with native():
    ...     native_kernels()
    True
    """
    return _NATIVE_KERNELS.set("always")


def materialized(v):
    """`v` itself; when differentiated on XLA:CPU, written out whole before anything reads it.

    The weight gradient of a convolution on XLA:CPU reads its input as [C, H, W, N]
    and the optimizer reads the weight gradient in the weight's own layout. XLA fuses
    the elementwise ops that produce those values (BatchNorm, ReLU, a residual add,
    the optimizer update) into the layout-changing copies, and that fused strided loop
    runs 4-8x slower than the same copy alone. A `lax.cond` on a value XLA cannot fold
    (`v[0] == v[0]`, false only for NaN, where the other branch gives back `-(-v)`, the
    same bits) is a boundary no fusion crosses, so each copy becomes a plain transpose.
    On a convolution's input, weight and output, ResNet-18's training step takes
    0.83x the time (benchmarks/RESULTS.md).

    The boundary lives in the derivative rule only: a forward-only trace (inference,
    export) holds the identity. Other backends get `v` unchanged.

    >>> import jax.numpy as jnp
    >>> x = jnp.arange(3.0)
    >>> bool((jax.grad(lambda x: (materialized(x) ** 2).sum())(x) == 2 * x).all())
    True
    """
    if v.size == 0 or not jnp.issubdtype(v.dtype, jnp.floating) or jax.default_backend() != "cpu":
        return v
    return _boundary(v)


@jax.custom_jvp
def _boundary(v):
    return v


@_boundary.defjvp
def _boundary_jvp(primals, tangents):
    (v,), (t,) = primals, tangents
    first = v[(0,) * v.ndim]  # a static slice: on a sharded v only its first shard is read
    keep = first == first
    return _unfused(keep, v), _unfused(keep, t)


def _unfused(keep, v):
    return jax.lax.cond(keep, lambda v: v, lambda v: -(-v), v)
