"""The oneDNN backend's fusions for `pdx.kernels.rewrite_program` (registered when this package is imported).

An inference program traced with pdx's oneDNN kernels and rewritten with a
weights token: each oneDNN convolution whose weight comes from the weights
and constants only becomes `kept_conv` (its weight reordered into oneDNN's
layout on the first call with the token, then reused), a BatchNorm's scale
folds into that weight, its shift, a residual add and a ReLU / ReLU6 that
follow become the kernel's bias and post-ops, a max pool of such a
convolution runs on oneDNN's pooling, and a oneDNN matmul with such a
weight (a Linear) becomes `kept_matmul`. With the bfloat16 option the
convolutions take bfloat16 activations and keep a bfloat16 weight.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from pdx.kernels._dispatch import Unsupported
from pdx.kernels._rewrite import (
    RewriteRule,
    _channel_vector,
    _combined,
    _is_f32,
    _max_of_slices,
    _per_channel,
    _Transposed,
    is_pending,
)
from pdx.kernels.onednn._conv_matmul import FORWARD, MATMUL_PRIMITIVE, matmul
from pdx.kernels.onednn._inference import kept_conv, kept_matmul, max_pool_nhwc

__all__ = ["RULE"]


@dataclasses.dataclass(frozen=True)
class _PendingKept:
    """One of pdx's oneDNN convolutions with constant weights (channels-last output), still
    collecting what follows it: a per-channel scale and shift (folded into the kept weight
    and the kernel's bias), then a residual add and a ReLU (the kernel's post-ops). `perm`
    is a transpose of the output still to apply (an NCHW model moves its channels there and
    back around each op)."""

    x: object
    w: object
    params: dict
    options: object  # the rewrite's options (its token, bfloat16, call-site numbers)
    scale: object = None
    shift: object = None
    residual: object = None
    relu: bool = False
    relu_max: float = float("inf")
    perm: tuple | None = None

    def channel_axis(self) -> int:
        return 3 if self.perm is None else self.perm.index(3)

    def materialize(self, cast: bool = True):
        """The convolution's output; with `cast=False` in the kernel's dtype (bfloat16 under the
        bfloat16 option) rather than the model's."""
        x, residual, dtype = self.x, self.residual, self.x.dtype
        if self.options.bf16 and dtype == jnp.float32:  # bfloat16 activations, float32 bias and accumulation
            x = x.astype(jnp.bfloat16)
            residual = None if residual is None else residual.astype(jnp.bfloat16)
        out = kept_conv(x, self.w, self.options.token, site=next(self.options.sites), scale=self.scale,
                        shift=self.shift, residual=residual, relu=self.relu, relu_max=self.relu_max, **self.params)
        out = out.astype(dtype) if cast else out
        return out if self.perm is None else jnp.transpose(out, self.perm)


def _start(eqn, invals, in_dynamic, options):
    """A oneDNN convolution (pending: what follows may join it) or matmul whose weight is constant."""
    name = eqn.primitive.name
    if name == FORWARD and in_dynamic[0] and not in_dynamic[1]:
        return _PendingKept(invals[0], invals[1], dict(eqn.params), options)
    if name == MATMUL_PRIMITIVE and in_dynamic[0] and not in_dynamic[1] and not eqn.params["transpose_a"] \
            and _is_f32(invals):
        return _kept_matmul(*invals, eqn.params["transpose_b"], options)
    return None


def _fold_kept(eqn, invals, in_dynamic, uses, read):
    """A new _PendingKept for what can join a kept oneDNN convolution `pending` as its only
    use: `pending * c` / `pending + c` with c constant per output channel, then
    `pending + residual` (the output's shape and dtype), then `max(pending, 0)` (ReLU), then
    `min(pending, c)` with c a positive constant (ReLU6), and transposes in between; else None."""
    name = eqn.primitive.name
    if name == "transpose" and isinstance(invals[0], _PendingKept) and uses[eqn.invars[0]] == 1:
        pending, perm = invals[0], tuple(eqn.params["permutation"])
        perm = perm if pending.perm is None else tuple(pending.perm[p] for p in perm)
        return dataclasses.replace(pending, perm=None if perm == tuple(range(len(perm))) else perm)
    if name not in ("mul", "add", "max", "min") or len(invals) != 2:
        return None
    for i in (0, 1):
        pending, other = invals[i], invals[1 - i]
        if not isinstance(pending, _PendingKept) or uses[eqn.invars[i]] != 1 or (pending.relu and name != "min"):
            continue
        out = eqn.outvars[0].aval
        if jnp.dtype(getattr(other, "dtype", out.dtype)) != jnp.dtype(out.dtype):
            return None
        if name in ("max", "min"):  # ReLU (a constant 0), then its upper bound (a positive constant)
            if in_dynamic[1 - i] or isinstance(other, jax.core.Tracer) or np.shape(other) not in ((), out.shape):
                return None
            bound = np.unique(np.asarray(other, np.float32))
            if name == "max" and bound.tolist() == [0.0]:
                return dataclasses.replace(pending, relu=True)
            if name == "min" and pending.relu and np.isinf(pending.relu_max) and len(bound) == 1 and bound[0] > 0:
                return dataclasses.replace(pending, relu_max=float(bound[0]))
            return None
        if in_dynamic[1 - i]:  # a residual: a value of the output's shape
            if name != "add" or pending.residual is not None or tuple(eqn.invars[1 - i].aval.shape) != tuple(out.shape):
                return None
            residual = read(eqn.invars[1 - i])
            if pending.perm is not None:  # back to the kernel's channels-last layout
                residual = jnp.transpose(residual, np.argsort(pending.perm))
            return dataclasses.replace(pending, residual=residual)
        if pending.residual is not None or is_pending(other):
            return None
        channels = pending.w.shape[0]
        if not _per_channel(np.shape(other), len(out.shape), pending.channel_axis(), channels):
            return None
        vector = _channel_vector(other, channels).astype(jnp.float32)
        scale, shift = _combined(name, vector, pending.scale, pending.shift)
        return dataclasses.replace(pending, scale=scale, shift=shift)
    return None


def _kept_max_pool(x, params):
    """A max pool of a kept convolution `x` (else None): on oneDNN (`max_pool_nhwc`) in the kernel's
    dtype (rounding to bfloat16 keeps order, so that is the rounded max), channels-last; for
    an NCHW model the result is a `_Transposed` view, so the transposes around it cancel."""
    if not isinstance(x, _PendingKept):
        return None
    perm = x.perm or (0, 1, 2, 3)
    order = np.argsort(perm)  # the kernel's axis j is the model's axis order[j]
    moved = {k: tuple(params[k][order[j]] for j in range(len(perm)))
             for k in ("window_dimensions", "window_strides", "padding")}
    base = dataclasses.replace(x, perm=None).materialize(cast=False)
    window, strides, padding = moved["window_dimensions"], moved["window_strides"], moved["padding"]
    pooled = None
    if all(window[a] == 1 and strides[a] == 1 and tuple(padding[a]) == (0, 0) for a in (0, 3)):  # spatial only
        try:
            pooled = max_pool_nhwc(base, kernel=window[1:3], strides=strides[1:3], padding=padding[1:3])
        except Unsupported:  # arguments oneDNN's pooling does not take
            pass
    if pooled is None:
        pooled = _max_of_slices(base, **moved)
    pooled = pooled.astype(x.x.dtype)
    return pooled if x.perm is None else _Transposed(pooled, perm)


def _kept_matmul(a, b, transpose_b: bool, options):
    """One of pdx's oneDNN matmuls with a constant weight (a Linear) as `onednn.kept_matmul`: its
    weight reordered once per token (as bfloat16 under the bfloat16 option)."""
    lhs = a.astype(jnp.bfloat16) if options.bf16 else a
    try:
        return kept_matmul(lhs, b, options.token, site=next(options.sites), transpose_b=transpose_b)
    except Unsupported:
        return matmul(a, b, transpose_b=transpose_b)


RULE = RewriteRule(start=_start, fold=_fold_kept, pool=_kept_max_pool, lazy=(_PendingKept,))
