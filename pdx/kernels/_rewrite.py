"""Inference rewrites of a traced program: for IREE BatchNorm folding, convs as patches + matmul,
bf16; for pdx's oneDNN kernels weights whose layout is kept between calls.

IREE's llvm-cpu backend runs a matmul far better than a direct convolution
(its own im2col helps regular convolutions but not at every size, see
`_iree.FLAGS_BY_PROGRAM`). `rewrite_program` re-traces a function through
a small jaxpr interpreter that replaces

  - every 2-D-or-more `conv_general_dilated` with one group (not depthwise)
    by `conv_general_dilated_patches` and one `dot_general` over the
    patches (exact up to float rounding), and
  - with `precision="bfloat16"`: the operands of those matmuls and of every
    float32 `dot_general` by bfloat16, accumulated in float32 (the output
    dtype is unchanged; the error is the bfloat16 rounding of activations
    and weights, measured by the caller).

and with `fold_scale=True`, a per-output-channel multiply and add that
follow a convolution with constant weights (an eval-mode BatchNorm, which
pdx lowers to `y * scale + shift`) become the convolution's weights times
`scale` and a bias (exact up to float rounding; the weight product is a
constant for IREE when the weights are inlined).

With `weights_token`, the fusions that backends register (`register_rewrite`,
a `RewriteRule`) apply to the calls of their kernels whose weights come from
the weights and constants only, and dense max pools become maxima of strided
slices. The oneDNN backend registers one (`pdx/kernels/onednn/_rewrite_rules.py`):
each oneDNN convolution becomes `kept_conv`, which reorders the weight into
oneDNN's layout on the first call with a token and reuses it; a BatchNorm's
scale folds into that weight, its shift, a residual add and a ReLU / ReLU6
that follow become the kernel's bias and post-ops, and a max pool of such a
convolution runs on oneDNN too; a oneDNN matmul with such a weight (a
Linear) becomes `kept_matmul`. With `precision="bfloat16"` those
convolutions take bfloat16 activations and keep a bfloat16 weight.

Everything else is bound as traced; calls (`jit`, custom derivatives) are
inlined so convolutions inside them are reached. Inference only: the
rewritten program has no custom derivative rules.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
from collections.abc import Callable

import jax
import numpy as np
import jax.numpy as jnp
from jax import lax
from jax.extend import core as jex_core

from pdx import _lowering

__all__ = ["REWRITE_CONV_MODES", "REWRITE_PRECISIONS", "RewriteRule", "register_rewrite", "rewrite_program"]

REWRITE_CONV_MODES = ("native", "patches")
REWRITE_PRECISIONS = ("float32", "bfloat16")

# Call-like primitives whose body is inlined: name -> the param holding the (closed) jaxpr.
_CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
          "remat": "jaxpr", "checkpoint": "jaxpr"}


def rewrite_program(fn: Callable, *, conv: str = "patches", precision: str = "float32",
                    fold_scale: bool = False, weights_argnum: int | None = None, weights_token=None) -> Callable:
    """`fn` with its convolutions and matmuls rewritten for IREE (see the module docstring).

    Args:
      fn: a function of arrays (traced once per call signature).
      conv: "patches" (convolutions as patches + matmul) or "native" (left as they are).
      precision: "float32" or "bfloat16" (matmul operands rounded to bfloat16, float32 accumulation).
      fold_scale: fold a per-output-channel multiply and add that follow a
        convolution (an eval-mode BatchNorm) into its weights and a bias.
        Only values computed from the weights (argument `weights_argnum`)
        and constants count as per-channel constants.
      weights_argnum: the positional argument of `fn` holding the weights.
      weights_token: an int32 scalar (traced): pdx's oneDNN convolutions whose
        weight is computed from the weights and constants only keep its oneDNN
        layout between calls with the same token (the backends' registered fusions: oneDNN's `kept_conv`).

    Example:
      >>> import jax.numpy as jnp, numpy as np
      >>> f = lambda x, w: jax.lax.conv(x, w, (1, 1), "SAME")
      >>> x, w = np.ones((1, 2, 4, 4), np.float32), np.ones((3, 2, 3, 3), np.float32)
      >>> bool(jnp.allclose(rewrite_program(f)(x, w), f(x, w)))
      True
    """
    if conv not in REWRITE_CONV_MODES:
        raise ValueError(f"rewrite_program: conv={conv!r} must be one of {REWRITE_CONV_MODES}")
    if precision not in REWRITE_PRECISIONS:
        raise ValueError(f"rewrite_program: precision={precision!r} must be one of {REWRITE_PRECISIONS}")
    options = _Options(conv=conv, bf16=precision == "bfloat16", fold=fold_scale, token=weights_token,
                       sites=itertools.count(1))

    def rewritten(*args):
        # folding and kept weights work on convolutions: keep 1x1 ones as convolutions (pdx traces them as matmuls)
        with _lowering.convolutions_kept() if fold_scale or weights_token is not None else contextlib.nullcontext():
            closed = jax.make_jaxpr(fn)(*args)
        dynamic = [i != weights_argnum for i, a in enumerate(args) for _ in jax.tree.leaves(a)]
        out, _ = _eval(closed.jaxpr, closed.consts, jax.tree.leaves(args), dynamic, options)
        return jax.tree.unflatten(jax.tree.structure(jax.eval_shape(fn, *args)), [_value(o) for o in out])

    return rewritten


@dataclasses.dataclass(frozen=True)
class _Options:
    conv: str
    bf16: bool
    fold: bool
    token: object = None  # the weights token of kept oneDNN convolutions, or None
    sites: object = None  # numbers their call sites


@dataclasses.dataclass(frozen=True)
class _PendingConv:
    """A convolution whose output is still to be scaled and shifted per output channel."""

    x: object
    w: object
    params: dict
    scale: object = None  # (O,) or None
    shift: object = None  # (O,) or None
    options: _Options | None = None

    def materialize(self):
        w, rhs_out = self.w, self.params["dimension_numbers"].rhs_spec[0]
        if self.scale is not None:
            w = _constant_eval(lambda w, s: w * _along(s, w.ndim, rhs_out), w, self.scale)
        out = _conv(self.x, w, self.params, self.options)
        if self.shift is not None:
            out = out + _along(self.shift, out.ndim, self.params["dimension_numbers"].out_spec[1]).astype(out.dtype)
        return out


@dataclasses.dataclass(frozen=True)
class _Transposed:
    """`jnp.transpose(base, perm)`, not yet applied: an NCHW model's view of a channels-last
    value. Elementwise ops apply to `base` (their other operands transposed back, which XLA
    folds into a broadcast of a scalar), so the transposes around them cancel instead of
    making XLA write and read each intermediate in the other layout."""

    base: object
    perm: tuple

    def materialize(self):
        return jnp.transpose(self.base, self.perm)


@dataclasses.dataclass(frozen=True)
class RewriteRule:
    """A backend's fusions for programs traced with its kernels, used when `rewrite_program` gets a weights token
    (`register_rewrite`; the oneDNN backend registers one when it is imported).

    start(eqn, invals, in_dynamic, options): for one of the backend's calls whose weight comes from the weights
      and constants only, its value, possibly pending (an instance of one of `lazy`); else None.
    fold(eqn, invals, in_dynamic, uses, read): for an op that is a pending value's only use, the pending value
      with the op joined; else None. `read(var)` materializes an operand.
    pool(x, params): a dense max pool of `x` where `x` is pending, else None.
    lazy: the pending value types; each has `materialize()`, called where a value is read as it is.
    """

    start: Callable
    fold: Callable
    pool: Callable
    lazy: tuple = ()


_RULES: list[RewriteRule] = []
_LAZY: list[type] = [_PendingConv, _Transposed]   # grows with each registered rule's `lazy` types


def register_rewrite(rule: RewriteRule) -> None:
    """Add a backend's fusions (once, when the backend's module is imported)."""
    if rule not in _RULES:
        _RULES.append(rule)
        _LAZY.extend(t for t in rule.lazy if t not in _LAZY)


def is_pending(v) -> bool:
    """Whether `v` is a value the rewrite has not materialized yet (a fused chain still collecting ops)."""
    return isinstance(v, tuple(_LAZY))


# Primitives that map equal-shape operands elementwise (scalars broadcast).
_ELEMENTWISE = frozenset({"abs", "add", "and", "clamp", "convert_element_type", "div", "eq", "exp", "ge", "gt",
                          "integer_pow", "le", "log", "logistic", "lt", "max", "min", "mul", "ne", "neg", "not",
                          "or", "pow", "rsqrt", "select_n", "sign", "sqrt", "sub", "tanh"})


def _constant_eval(fn, *values):
    """fn(*values), computed now when no value is traced (inline weights: the folded weights
    are written as constants, not as operations for IREE to evaluate)."""
    if any(isinstance(v, jax.core.Tracer) for v in values):
        return fn(*values)
    with jax.ensure_compile_time_eval():
        return fn(*values)


def _along(vector, ndim: int, axis: int):
    shape = [1] * ndim
    shape[axis] = -1
    return jnp.reshape(vector, shape)


def _value(v):
    return v.materialize() if is_pending(v) else v


def _conv(x, w, params, options: _Options):
    if _conv_as_matmul(params, (x, w), options.conv):
        return _patches_conv(x, w, bf16=options.bf16, **params)
    return lax.conv_general_dilated_p.bind(x, w, **params)


def _eval(jaxpr, consts, args, dynamic, options: _Options) -> tuple[list, list[bool]]:
    """Evaluate `jaxpr` with the rewrites; returns (outputs, which outputs depend on dynamic inputs)."""
    env, moving = {}, set()
    uses = collections.Counter(v for eqn in jaxpr.eqns for v in eqn.invars if not isinstance(v, jex_core.Literal))
    uses.update(v for v in jaxpr.outvars if not isinstance(v, jex_core.Literal))

    def raw(v):
        return v.val if isinstance(v, jex_core.Literal) else env[v]

    def read(v):
        value = raw(v)
        if is_pending(value):
            value = env[v] = value.materialize()
        return value

    for v, value in zip(jaxpr.constvars, consts):
        env[v] = value
    for v, value, dyn in zip(jaxpr.invars, args, dynamic):
        env[v] = value
        if dyn:
            moving.add(v)
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        in_dynamic = [not isinstance(v, jex_core.Literal) and v in moving for v in eqn.invars]
        dynamic = any(in_dynamic) or _symbolic(eqn)  # a value of the batch size varies like an input
        out_dynamic = [dynamic] * len(eqn.outvars)
        raws = [raw(v) for v in eqn.invars]
        folded = _fold(eqn, raws, in_dynamic, uses, options)
        for rule in _RULES if options.token is not None else ():
            if folded is None:
                folded = rule.fold(eqn, raws, in_dynamic, uses, read)
        if folded is None:
            folded = _fold_transposed(eqn, raws, read)
        if folded is not None:
            outvals = [folded]
        elif name in _CALLS and _CALLS[name] in eqn.params:
            body = eqn.params[_CALLS[name]]
            inner, inner_consts = (body.jaxpr, body.consts) if hasattr(body, "consts") else (body, ())
            n_in = len(inner.invars)
            # Pending convolutions flow into the call (a BatchNorm in its own jit folds too).
            invals = raws[len(eqn.invars) - n_in:]
            outvals, out_dynamic = _eval(inner, inner_consts, invals, in_dynamic[len(eqn.invars) - n_in:], options)
        else:
            pool = name == "reduce_window_max" and options.token is not None and _dense_window(eqn.params)
            # a pending convolution read only by a max pool is pooled in its own layout
            invals = raws if pool and uses[eqn.invars[0]] == 1 else [read(v) for v in eqn.invars]
            if name == "conv_general_dilated" and options.fold and not in_dynamic[1] and in_dynamic[0] \
                    and uses[eqn.outvars[0]] == 1 and _is_f32(invals):
                outvals = [_PendingConv(invals[0], invals[1], dict(eqn.params), options=options)]
            elif name == "conv_general_dilated" and _conv_as_matmul(eqn.params, invals, options.conv):
                outvals = [_patches_conv(*invals, bf16=options.bf16, **eqn.params)]
            elif options.token is not None and (started := _start(eqn, invals, in_dynamic, options)) is not None:
                outvals = [started]
            elif pool:
                outvals = [_max_pool(invals[0], eqn.params)]
            elif name == "dot_general" and options.bf16 and _is_f32(invals):
                lhs, rhs = (a.astype(jnp.bfloat16) for a in invals)
                out = lax.dot_general(lhs, rhs, eqn.params["dimension_numbers"], preferred_element_type=jnp.float32)
                outvals = [out.astype(eqn.outvars[0].aval.dtype)]
            else:
                def bind(*args, eqn=eqn):
                    with eqn.ctx.manager:
                        out = eqn.primitive.bind(*args, **eqn.primitive.get_bind_params(eqn.params))
                    return out if eqn.primitive.multiple_results else [out]

                outvals = bind(*invals) if dynamic else _constant_eval(bind, *invals)
        for v, value, dyn in zip(eqn.outvars, outvals, out_dynamic):
            env[v] = value
            if dyn:
                moving.add(v)
    outs = [raw(v) for v in jaxpr.outvars]
    return outs, [not isinstance(v, jex_core.Literal) and v in moving for v in jaxpr.outvars]


def _start(eqn, invals, in_dynamic, options):
    """A registered backend's value for one of its calls with constant weights, else None."""
    for rule in _RULES:
        out = rule.start(eqn, invals, in_dynamic, options)
        if out is not None:
            return out
    return None


def _max_pool(x, params):
    """A dense max pool: a backend's where `x` is its pending value, else the maxima of strided slices."""
    for rule in _RULES:
        out = rule.pool(x, params)
        if out is not None:
            return out
    return _max_of_slices(_value(x), **params)


def _symbolic(eqn) -> bool:
    """Whether an equation's outputs or parameters hold a symbolic dim."""
    def has(value):
        if isinstance(value, (tuple, list)):
            return any(has(v) for v in value)
        return jax.export.is_symbolic_dim(value)
    return any(has(getattr(v.aval, "shape", ())) for v in eqn.outvars) or any(
        has(v) for v in eqn.params.values())


def _fold(eqn, invals, in_dynamic, uses, options: _Options):
    """A new _PendingConv for `pending * c` / `pending + c` with c constant per output channel, or a
    transpose of `pending`; else None."""
    if not options.fold:
        return None
    if eqn.primitive.name == "transpose" and isinstance(invals[0], _PendingConv) and uses[eqn.invars[0]] == 1:
        # A layout change of the output is the same convolution with another output spec.
        perm, dn = tuple(eqn.params["permutation"]), invals[0].params["dimension_numbers"]
        out_spec = tuple(perm.index(d) for d in dn.out_spec)
        return dataclasses.replace(invals[0], params=dict(invals[0].params, dimension_numbers=dn._replace(
            out_spec=out_spec)))
    if eqn.primitive.name not in ("mul", "add") or len(invals) != 2:
        return None
    for i in (0, 1):
        pending, other = invals[i], invals[1 - i]
        if not isinstance(pending, _PendingConv) or in_dynamic[1 - i]:
            continue
        if uses[eqn.invars[i]] != 1:
            return None
        axis = pending.params["dimension_numbers"].out_spec[1]
        channels = pending.w.shape[pending.params["dimension_numbers"].rhs_spec[0]]
        if not _per_channel(np.shape(other), len(eqn.outvars[0].aval.shape), axis, channels):
            return None
        if jnp.dtype(other.dtype) != jnp.dtype(eqn.outvars[0].aval.dtype):
            return None

        def combine(other, scale, shift):
            return _combined(eqn.primitive.name, _channel_vector(other, channels), scale, shift)

        scale, shift = _constant_eval(combine, other, pending.scale, pending.shift)
        return dataclasses.replace(pending, scale=scale, shift=shift)
    return None


def _fold_transposed(eqn, invals, read):
    """A transpose of a `_Transposed` value (composed, or its base when they cancel), or an
    elementwise op over `_Transposed` values of one perm, applied to their bases; else None."""
    lazy = [v for v in invals if isinstance(v, _Transposed)]
    if not lazy:
        return None
    name, perm = eqn.primitive.name, lazy[0].perm
    if name == "transpose":
        composed = tuple(perm[q] for q in eqn.params["permutation"])
        return lazy[0].base if composed == tuple(range(len(composed))) else _Transposed(lazy[0].base, composed)
    if name not in _ELEMENTWISE or any(v.perm != perm for v in lazy) or len(eqn.outvars) != 1:
        return None
    inverse = tuple(int(a) for a in np.argsort(perm))
    args = []
    for var, value in zip(eqn.invars, invals):
        if isinstance(value, _Transposed):
            args.append(value.base)
        else:
            value = value if isinstance(var, jex_core.Literal) else read(var)
            args.append(value if np.ndim(value) == 0 else jnp.transpose(value, inverse))
    with eqn.ctx.manager:
        out = eqn.primitive.bind(*args, **eqn.primitive.get_bind_params(eqn.params))
    return _Transposed(out, perm)


def _per_channel(shape, ndim: int, axis: int, channels: int) -> bool:
    """Whether a value of `shape` is a scalar or constant along every axis but `axis` of an ndim-array."""
    return len(shape) in (0, ndim) and all(d == 1 for a, d in enumerate(shape) if a != axis) and (
        not shape or shape[axis] in (1, channels))


def _channel_vector(value, channels: int):
    """A per-channel value (`_per_channel`) as a (channels,) vector."""
    return jnp.broadcast_to(jnp.reshape(value, (-1,)) if np.ndim(value) else value, (channels,))


def _combined(op: str, vector, scale, shift):
    """(scale, shift) of `y * scale + shift` after one more `* vector` (op "mul") or `+ vector` ("add")."""
    if op == "mul":
        return (vector if scale is None else scale * vector), (None if shift is None else shift * vector)
    return scale, (vector if shift is None else shift + vector)


def _dense_window(p) -> bool:
    return all(d == 1 for d in p["base_dilation"]) and all(d == 1 for d in p["window_dilation"])


def _max_of_slices(x, *, window_dimensions, window_strides, padding, **_):
    """A max pool as the elementwise max of its window's strided slices: XLA:CPU fuses that into
    one loop, 4-5x faster than its reduce_window (ResNet-18's stem pool: 0.8 ms at batch 1)."""
    lowest = jnp.array(-jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min, x.dtype)
    x = lax.pad(x, lowest, [(lo, hi, 0) for lo, hi in padding])
    out = None
    for offset in np.ndindex(*window_dimensions):
        limit = [o + (size - k) // s * s + 1 for o, size, k, s in zip(offset, x.shape, window_dimensions,
                                                                       window_strides)]
        part = lax.slice(x, offset, limit, window_strides)
        out = part if out is None else lax.max(out, part)
    return out


def _is_f32(arrays) -> bool:
    return all(jnp.dtype(a.dtype) == jnp.float32 for a in arrays)


def _conv_as_matmul(p, invals, conv: str) -> bool:
    return (conv == "patches" and p["feature_group_count"] == 1 and p["batch_group_count"] == 1
            and all(d == 1 for d in p["lhs_dilation"]) and _is_f32(invals) and len(invals[0].shape) >= 4)


def _patches_conv(x, w, *, window_strides, padding, rhs_dilation, dimension_numbers, preferred_element_type,
                  bf16: bool, **_):
    """conv_general_dilated (one group) as patches [.., C*prod(k), ..] contracted with w [O, C*prod(k)]."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    kernel = tuple(w.shape[d] for d in rhs_spec[2:])
    w2 = jnp.transpose(w, rhs_spec).reshape(w.shape[rhs_spec[0]], -1)  # [O, C * prod(kernel)], C major
    if bf16:
        x, w2 = x.astype(jnp.bfloat16), w2.astype(jnp.bfloat16)
    pointwise = (all(k == 1 for k in kernel) and all(s == 1 for s in window_strides)
                 and all(tuple(p) == (0, 0) for p in padding) and tuple(lhs_spec) == tuple(out_spec))
    if pointwise:  # a 1x1 convolution is already a matmul over the channels
        patches = x
    else:
        patches = lax.conv_general_dilated_patches(x, kernel, window_strides, padding, rhs_dilation=rhs_dilation,
                                                   dimension_numbers=dimension_numbers)
    feature = out_spec[1]
    out = lax.dot_general(patches, w2, (((feature,), (1,)), ((), ())), preferred_element_type=jnp.float32)
    out = jnp.moveaxis(out, -1, feature)  # dot_general puts O last
    return out.astype(preferred_element_type or jnp.float32)
