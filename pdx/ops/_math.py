"""Math ops: elementwise arithmetic, reductions, scans and products.

Semantics follow the installed Paddle 3.x: `floor_divide` and `remainder`
round toward -inf (Python's convention), `round` rounds halves to even,
`divide` of two integer tensors is a true (floating) division, and the
gradient of `max`/`min`/`amax`/`amin` is shared evenly between tied maxima.
Integer sums and cumulative sums give Paddle's int64 (int32 without x64).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float, default_int
from pdx.ops._checks import binary_args, broadcast_shapes, dtype_arg, op_axis, reduce_axes, static_int
from pdx.ops._common import as_array, normalize_axis, op_error


def _to_float(x):
    """Integer/bool tensors become the default float, as Paddle's float-only kernels do."""
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return x
    return x.astype(default_float())


def _unary(op, fn, *, float_only=False):
    def apply(x):
        x = as_array(x, op=op)
        return fn(_to_float(x) if float_only else x)
    return apply


# ---------------------------------------------------------------- elementwise binary

def add(x, y, name=None):
    """Elementwise `x + y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number, broadcastable with `x`.
      name: ignored.

    Returns:
      The elementwise sum.

    Example:
      >>> import pdx
      >>> pdx.add(pdx.to_tensor([1, 2]), pdx.to_tensor([3, 4])).tolist()
      [4, 6]
    """
    x, y = binary_args(x, y, op="add")
    return jnp.add(x, y)


def subtract(x, y, name=None):
    """Elementwise `x - y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      The elementwise difference.

    Example:
      >>> import pdx
      >>> pdx.subtract(pdx.to_tensor([5, 2]), pdx.to_tensor([3, 4])).tolist()
      [2, -2]
    """
    x, y = binary_args(x, y, op="subtract")
    return jnp.subtract(x, y)


def multiply(x, y, name=None):
    """Elementwise `x * y` with broadcasting.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      The elementwise product.

    Example:
      >>> import pdx
      >>> pdx.multiply(pdx.to_tensor([1, 2]), pdx.to_tensor([3, 4])).tolist()
      [3, 8]
    """
    x, y = binary_args(x, y, op="multiply")
    return jnp.multiply(x, y)


def divide(x, y, name=None):
    """Elementwise true division `x / y`; integer inputs give a floating result.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      The elementwise quotient.

    Example:
      >>> import pdx
      >>> pdx.divide(pdx.to_tensor([7, 2]), pdx.to_tensor([2, 4])).tolist()
      [3.5, 0.5]
    """
    x, y = binary_args(x, y, op="divide")
    return jnp.true_divide(x, y)


def floor_divide(x, y, name=None):
    """Elementwise `x // y`, rounding toward -inf (Python's convention, as Paddle 3).

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      The floored quotient, in the promoted dtype of `x` and `y`.

    Example:
      >>> import pdx
      >>> pdx.floor_divide(pdx.to_tensor([-7, 7]), pdx.to_tensor([2, 2])).tolist()
      [-4, 3]
    """
    x, y = binary_args(x, y, op="floor_divide")
    return jnp.floor_divide(x, y)


def remainder(x, y, name=None):
    """Elementwise remainder with the sign of the divisor (Python's `%`, as Paddle).

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      `x - floor_divide(x, y) * y`.

    Example:
      >>> import pdx
      >>> pdx.remainder(pdx.to_tensor([-7, 7]), pdx.to_tensor([2, -2])).tolist()
      [1, -1]
    """
    x, y = binary_args(x, y, op="remainder")
    return jnp.remainder(x, y)


def mod(x, y, name=None):
    """Alias of `remainder` (Paddle's `paddle.mod`).

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      The remainder with the sign of `y`.

    Example:
      >>> import pdx
      >>> pdx.mod(pdx.to_tensor([5]), pdx.to_tensor([3])).tolist()
      [2]
    """
    x, y = binary_args(x, y, op="mod")
    return jnp.remainder(x, y)


def pow(x, y, name=None):  # noqa: A001 (Paddle's name)
    """Elementwise `x ** y`.

    An integer tensor raised to a Python number stays integer, as in Paddle.

    Args:
      x: a tensor.
      y: a number or tensor.
      name: ignored.

    Returns:
      The elementwise power.

    Example:
      >>> import pdx
      >>> pdx.pow(pdx.to_tensor([2.0, 3.0]), 2).tolist()
      [4.0, 9.0]
    """
    x, y = binary_args(as_array(x, op="pow"), y, op="pow")
    if isinstance(y, (int, float)) and jnp.issubdtype(x.dtype, jnp.integer):
        if float(y).is_integer() and y >= 0:
            return jax.lax.integer_pow(x, int(y))
        return jnp.power(x.astype(default_float()), y).astype(x.dtype)
    if isinstance(y, int) and y >= 0:
        return jax.lax.integer_pow(x, y)
    return jnp.power(x, y)


def maximum(x, y, name=None):
    """Elementwise maximum of two tensors (ties split the gradient evenly, as Paddle).

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      The elementwise maximum.

    Example:
      >>> import pdx
      >>> pdx.maximum(pdx.to_tensor([1, 5]), pdx.to_tensor([3, 2])).tolist()
      [3, 5]
    """
    x, y = binary_args(x, y, op="maximum")
    return jnp.maximum(x, y)


def minimum(x, y, name=None):
    """Elementwise minimum of two tensors.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.

    Returns:
      The elementwise minimum.

    Example:
      >>> import pdx
      >>> pdx.minimum(pdx.to_tensor([1, 5]), pdx.to_tensor([3, 2])).tolist()
      [1, 2]
    """
    x, y = binary_args(x, y, op="minimum")
    return jnp.minimum(x, y)


# ---------------------------------------------------------------- elementwise unary

def exp(x, name=None):
    """Elementwise `e ** x` (integer input gives the default float).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.exp(pdx.zeros([1])).tolist()
      [1.0]
    """
    return _unary("exp", jnp.exp, float_only=True)(x)


def log(x, name=None):
    """Elementwise natural logarithm.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor (nan for negative input, -inf for 0).

    Example:
      >>> import pdx
      >>> pdx.log(pdx.ones([1])).tolist()
      [0.0]
    """
    return _unary("log", jnp.log, float_only=True)(x)


def log1p(x, name=None):
    """Elementwise `log(1 + x)`, accurate for small `x`.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.log1p(pdx.zeros([1])).tolist()
      [0.0]
    """
    return _unary("log1p", jnp.log1p, float_only=True)(x)


def log2(x, name=None):
    """Elementwise base-2 logarithm.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.log2(pdx.to_tensor([8.0])).tolist()
      [3.0]
    """
    return _unary("log2", jnp.log2, float_only=True)(x)


def sqrt(x, name=None):
    """Elementwise square root.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.sqrt(pdx.to_tensor([4.0])).tolist()
      [2.0]
    """
    return _unary("sqrt", jnp.sqrt, float_only=True)(x)


def rsqrt(x, name=None):
    """Elementwise `1 / sqrt(x)`.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.rsqrt(pdx.to_tensor([4.0])).tolist()
      [0.5]
    """
    return _unary("rsqrt", jax.lax.rsqrt, float_only=True)(x)


def abs(x, name=None):  # noqa: A001 (Paddle's name)
    """Elementwise absolute value (keeps the dtype).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.abs(pdx.to_tensor([-2, 3])).tolist()
      [2, 3]
    """
    return _unary("abs", jnp.abs)(x)


def sign(x, name=None):
    """Elementwise sign: -1, 0 or 1 (keeps the dtype).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.sign(pdx.to_tensor([-2.0, 0.0, 3.0])).tolist()
      [-1.0, 0.0, 1.0]
    """
    return _unary("sign", jnp.sign)(x)


def floor(x, name=None):
    """Elementwise floor (integer input is returned unchanged).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.floor(pdx.to_tensor([-1.5, 1.5])).tolist()
      [-2.0, 1.0]
    """
    return _unary("floor", jnp.floor)(x)


def ceil(x, name=None):
    """Elementwise ceiling (integer input is returned unchanged).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.ceil(pdx.to_tensor([-1.5, 1.5])).tolist()
      [-1.0, 2.0]
    """
    return _unary("ceil", jnp.ceil)(x)


def round(x, decimals=0, name=None):  # noqa: A001 (Paddle's name)
    """Round to `decimals` places; exact halves go to the even neighbour (as Paddle 3).

    Args:
      x: a tensor.
      decimals: number of decimal places (may be negative).
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.round(pdx.to_tensor([0.5, 1.5, 2.5])).tolist()
      [0.0, 2.0, 2.0]
    """
    x = as_array(x, op="round")
    return jnp.round(x, static_int(decimals, op="round", name="decimals"))


def sin(x, name=None):
    """Elementwise sine.

    Args:
      x: a tensor (radians).
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.sin(pdx.zeros([1])).tolist()
      [0.0]
    """
    return _unary("sin", jnp.sin, float_only=True)(x)


def cos(x, name=None):
    """Elementwise cosine.

    Args:
      x: a tensor (radians).
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.cos(pdx.zeros([1])).tolist()
      [1.0]
    """
    return _unary("cos", jnp.cos, float_only=True)(x)


def tanh(x, name=None):
    """Elementwise hyperbolic tangent.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor in (-1, 1).

    Example:
      >>> import pdx
      >>> pdx.tanh(pdx.zeros([1])).tolist()
      [0.0]
    """
    return _unary("tanh", jnp.tanh, float_only=True)(x)


def erf(x, name=None):
    """Elementwise Gauss error function.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A floating tensor in (-1, 1).

    Example:
      >>> import pdx
      >>> pdx.erf(pdx.zeros([1])).tolist()
      [0.0]
    """
    return _unary("erf", jax.lax.erf, float_only=True)(x)


def isnan(x, name=None):
    """Elementwise test for NaN.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.isnan(pdx.to_tensor([1.0, float("nan")])).tolist()
      [False, True]
    """
    return _unary("isnan", jnp.isnan)(x)


def isinf(x, name=None):
    """Elementwise test for +inf or -inf.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.isinf(pdx.to_tensor([1.0, float("inf")])).tolist()
      [False, True]
    """
    return _unary("isinf", jnp.isinf)(x)


def isfinite(x, name=None):
    """Elementwise test for finite values (not inf, not NaN).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.isfinite(pdx.to_tensor([1.0, float("inf")])).tolist()
      [True, False]
    """
    return _unary("isfinite", jnp.isfinite)(x)


def clip(x, min=None, max=None, name=None):  # noqa: A002 (Paddle's names)
    """Clamp every element into [min, max]; a None bound is not applied.

    Args:
      x: a tensor.
      min: lower bound (number or 0-D tensor) or None.
      max: upper bound (number or 0-D tensor) or None.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.clip(pdx.to_tensor([-2.0, 0.5, 3.0]), min=0.0, max=1.0).tolist()
      [0.0, 0.5, 1.0]
    """
    x = as_array(x, op="clip")
    out = x
    if min is not None:
        out = jnp.maximum(out, jnp.asarray(min, x.dtype))
    if max is not None:
        out = jnp.minimum(out, jnp.asarray(max, x.dtype))
    return out


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None):
    """Replace NaN, +inf and -inf with finite numbers.

    Args:
      x: a tensor.
      nan: value for NaN.
      posinf: value for +inf; default the dtype's largest finite value.
      neginf: value for -inf; default the dtype's smallest finite value.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.nan_to_num(pdx.to_tensor([float("nan"), 1.0])).tolist()
      [0.0, 1.0]
    """
    x = as_array(x, op="nan_to_num")
    return jnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def lerp(x, y, weight, name=None):
    """Linear interpolation `x + weight * (y - x)`.

    Args:
      x: start tensor.
      y: end tensor.
      weight: a number or tensor, broadcastable with `x` and `y`.
      name: ignored.

    Returns:
      The broadcast interpolation.

    Example:
      >>> import pdx
      >>> pdx.lerp(pdx.zeros([2]), pdx.ones([2]), 0.25).tolist()
      [0.25, 0.25]
    """
    x, y = binary_args(x, y, op="lerp")
    if not isinstance(weight, (int, float)):
        weight = as_array(weight, name="weight", op="lerp")
        broadcast_shapes("lerp", x=x, y=y, weight=weight)
    return x + weight * (y - x)


_SCALE_ACTS = {
    "relu": jax.nn.relu, "sigmoid": jax.nn.sigmoid, "tanh": jnp.tanh, "softplus": jax.nn.softplus,
    "silu": jax.nn.silu, "swish": jax.nn.silu, "relu6": jax.nn.relu6,
    "gelu": lambda v: jax.nn.gelu(v, approximate=False),
}


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """`scale * x + bias` (or `scale * (x + bias)`), optionally followed by an activation.

    Args:
      x: a tensor.
      scale: a number or 0-D tensor.
      bias: a number.
      bias_after_scale: add `bias` after scaling (True) or before (False).
      act: optional activation name: 'relu', 'sigmoid', 'tanh', 'softplus', 'silu',
        'swish', 'relu6' or 'gelu'.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.scale(pdx.to_tensor([1.0, 2.0]), scale=2.0, bias=1.0).tolist()
      [3.0, 5.0]
    """
    x = as_array(x, op="scale")
    if act is not None and act not in _SCALE_ACTS:
        raise op_error("scale", f"`act`={act!r} is not supported; use one of {sorted(_SCALE_ACTS)} or None")
    s = scale if isinstance(scale, (int, float)) else as_array(scale, name="scale", op="scale").astype(x.dtype)
    out = x * s + bias if bias_after_scale else (x + bias) * s
    out = out.astype(x.dtype)
    return _SCALE_ACTS[act](out) if act is not None else out


# ---------------------------------------------------------------- reductions

def _reduce_input(x, axis, op):
    x = as_array(x, op=op)
    return x, reduce_axes(axis, x.ndim, op=op)


def _int_accumulator(x, dtype, op):
    """Paddle accumulates bool/int sums in int64 (int32 here) unless a dtype is given."""
    dt = dtype_arg(dtype, op=op)
    if dt is None and (jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_):
        dt = default_int()
    return dt


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001 (Paddle's name)
    """Sum over `axis` (all axes when None).

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      dtype: accumulation/output dtype; bool and integer input default to int64
        (int32 without x64).
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.sum(pdx.to_tensor([[1, 2], [3, 4]]), axis=1).tolist()
      [3, 7]
    """
    x, axes = _reduce_input(x, axis, "sum")
    return jnp.sum(x, axis=axes, dtype=_int_accumulator(x, dtype, "sum"), keepdims=keepdim)


def mean(x, axis=None, keepdim=False, name=None):
    """Arithmetic mean over `axis` (all axes when None).

    Integer input gives a floating mean (Paddle truncates to the integer dtype;
    pdx keeps the exact value).

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.mean(pdx.to_tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).tolist()
      [2.0, 3.0]
    """
    x, axes = _reduce_input(x, axis, "mean")
    return jnp.mean(_to_float(x), axis=axes, keepdims=keepdim)


def _check_nonempty(x, axes, op):
    reduced = range(x.ndim) if axes is None else axes
    if any(x.shape[a] == 0 for a in reduced):
        raise op_error(op, f"cannot reduce over an empty axis; x.shape={tuple(x.shape)}, axis={axes}")


def max(x, axis=None, keepdim=False, name=None):  # noqa: A001 (Paddle's name)
    """Maximum over `axis`; the gradient is shared evenly between tied maxima (as Paddle).

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.max(pdx.to_tensor([[1, 5], [7, 2]]), axis=1).tolist()
      [5, 7]
    """
    x, axes = _reduce_input(x, axis, "max")
    _check_nonempty(x, axes, "max")
    return jnp.max(x, axis=axes, keepdims=keepdim)


def min(x, axis=None, keepdim=False, name=None):  # noqa: A001 (Paddle's name)
    """Minimum over `axis`; the gradient is shared evenly between tied minima.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.min(pdx.to_tensor([[1, 5], [7, 2]]), axis=1).tolist()
      [1, 2]
    """
    x, axes = _reduce_input(x, axis, "min")
    _check_nonempty(x, axes, "min")
    return jnp.min(x, axis=axes, keepdims=keepdim)


def amax(x, axis=None, keepdim=False, name=None):
    """Maximum over `axis`; the gradient is shared evenly between tied maxima.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.amax(pdx.to_tensor([[1.0, 3.0], [3.0, 2.0]])).tolist()
      3.0
    """
    x, axes = _reduce_input(x, axis, "amax")
    _check_nonempty(x, axes, "amax")
    return jnp.max(x, axis=axes, keepdims=keepdim)


def amin(x, axis=None, keepdim=False, name=None):
    """Minimum over `axis`; the gradient is shared evenly between tied minima.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.amin(pdx.to_tensor([[1.0, 3.0], [3.0, 2.0]])).tolist()
      1.0
    """
    x, axes = _reduce_input(x, axis, "amin")
    _check_nonempty(x, axes, "amin")
    return jnp.min(x, axis=axes, keepdims=keepdim)


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    """Product over `axis` (all axes when None).

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      dtype: output dtype; default `x.dtype`.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> pdx.prod(pdx.to_tensor([[1, 2], [3, 4]])).tolist()
      24
    """
    x, axes = _reduce_input(x, axis, "prod")
    dt = dtype_arg(dtype, op="prod")
    return jnp.prod(x if dt is None else x.astype(dt), axis=axes, keepdims=keepdim)


# Multi-primitive reductions run as one jitted kernel so an eager call compiles one program.
@functools.partial(jax.jit, static_argnames=("axes", "ddof", "keepdim", "root"))
def _variance(x, axes, ddof, keepdim, root=False):
    v = jnp.var(_to_float(x), axis=axes, ddof=ddof, keepdims=keepdim)
    return jnp.sqrt(v) if root else v


@functools.partial(jax.jit, static_argnames=("axes", "keepdim"))
def _logsumexp(x, axes, keepdim):
    return jax.nn.logsumexp(_to_float(x), axis=axes, keepdims=keepdim)


def var(x, axis=None, unbiased=None, keepdim=False, name=None, *, correction=1):
    """Variance over `axis`.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      unbiased: True divides by N - 1, False by N; None uses `correction`.
      keepdim: keep reduced axes as size 1.
      name: ignored.
      correction: the divisor is N - correction when `unbiased` is None (default 1).

    Returns:
      The reduced tensor (nan where N - correction <= 0).

    Example:
      >>> import pdx
      >>> pdx.var(pdx.to_tensor([1.0, 2.0, 3.0])).tolist()
      1.0
    """
    x, axes = _reduce_input(x, axis, "var")
    ddof = correction if unbiased is None else int(bool(unbiased))
    return _variance(x, axes, ddof, bool(keepdim))


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    """Standard deviation over `axis`.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      unbiased: divide by N - 1 (True) or N (False).
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor (nan for a single element when unbiased).

    Example:
      >>> import pdx
      >>> pdx.std(pdx.to_tensor([1.0, 2.0, 3.0])).tolist()
      1.0
    """
    x, axes = _reduce_input(x, axis, "std")
    return _variance(x, axes, int(bool(unbiased)), bool(keepdim), root=True)


def logsumexp(x, axis=None, keepdim=False, name=None):
    """`log(sum(exp(x)))` over `axis`, computed stably.

    Args:
      x: a tensor.
      axis: int, list/tuple of ints, or None.
      keepdim: keep reduced axes as size 1.
      name: ignored.

    Returns:
      The reduced tensor.

    Example:
      >>> import pdx
      >>> f"{float(pdx.logsumexp(pdx.zeros([2]))):.4f}"
      '0.6931'
    """
    x, axes = _reduce_input(x, axis, "logsumexp")
    return _logsumexp(x, axes, bool(keepdim))


def _scan_input(x, axis, op, name):
    x = as_array(x, op=op)
    if axis is None:
        return x.reshape(-1), 0
    return x, op_axis(axis, x.ndim, op=op, name=name)


def cumsum(x, axis=None, dtype=None, name=None):
    """Cumulative sum along `axis`; `axis=None` flattens first.

    Args:
      x: a tensor.
      axis: int or None.
      dtype: output dtype; integer input defaults to int64 (int32 without x64).
      name: ignored.

    Returns:
      A tensor like `x` (1-D when `axis` is None).

    Example:
      >>> import pdx
      >>> pdx.cumsum(pdx.to_tensor([[1, 2], [3, 4]])).tolist()
      [1, 3, 6, 10]
    """
    x, ax = _scan_input(x, axis, "cumsum", "axis")
    dt = _int_accumulator(x, dtype, "cumsum")
    if x.ndim == 0:
        return x.astype(dt or x.dtype)
    return jnp.cumsum(x if dt is None else x.astype(dt), axis=ax)


def cumprod(x, dim=None, *, dtype=None, name=None):
    """Cumulative product along `dim`; `dim=None` flattens first.

    Args:
      x: a tensor.
      dim: int or None.
      dtype: output dtype; default `x.dtype`.
      name: ignored.

    Returns:
      A tensor like `x` (1-D when `dim` is None).

    Example:
      >>> import pdx
      >>> pdx.cumprod(pdx.to_tensor([1, 2, 3]), dim=0).tolist()
      [1, 2, 6]
    """
    x, ax = _scan_input(x, dim, "cumprod", "dim")
    dt = dtype_arg(dtype, op="cumprod")
    if dt is not None:
        x = x.astype(dt)
    if x.ndim == 0:
        return x
    return jnp.cumprod(x, axis=ax)


# ---------------------------------------------------------------- products

def _matmul_shapes(xs, ys, op):
    """Check Paddle's matmul contract on shapes already transposed per the flags."""
    if len(xs) == 0 or len(ys) == 0:
        raise op_error(op, f"operands must be at least 1-D; got x.shape={xs} and y.shape={ys}")
    kx = xs[-1]
    ky = ys[0] if len(ys) == 1 else ys[-2]
    if kx != ky:
        raise op_error(op, f"x.shape={xs} and y.shape={ys} (after transpose flags) do not agree "
                           f"on the contracted dim ({kx} vs {ky})")
    bx, by = xs[:-2], ys[:-2]
    try:
        jnp.broadcast_shapes(bx, by)
    except ValueError:
        raise op_error(op, f"batch dims {bx} of x.shape={xs} and {by} of y.shape={ys} cannot be "
                           "broadcast together") from None


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    """Matrix product with Paddle's rules for 1-D operands and batch broadcasting.

    The transpose flags swap the last two dims of a rank >= 2 operand and are
    ignored for 1-D operands. A 1-D `x` acts as a row vector and a 1-D `y` as a
    column vector; the added dim is dropped from the result. Leading (batch)
    dims broadcast.

    Args:
      x: a tensor of rank >= 1.
      y: a tensor of rank >= 1.
      transpose_x: transpose the last two dims of `x` first.
      transpose_y: transpose the last two dims of `y` first.
      name: ignored.

    Returns:
      The product.

    Example:
      >>> import pdx
      >>> pdx.matmul(pdx.ones([2, 3]), pdx.ones([4, 3]), transpose_y=True).shape
      (2, 4)
    """
    x = as_array(x, op="matmul")
    y = as_array(y, name="y", op="matmul")
    if transpose_x and x.ndim >= 2:
        x = jnp.swapaxes(x, -1, -2)
    if transpose_y and y.ndim >= 2:
        y = jnp.swapaxes(y, -1, -2)
    _matmul_shapes(tuple(x.shape), tuple(y.shape), "matmul")
    return jnp.matmul(x, y)


def mm(input, mat2, name=None):  # noqa: A002 (Paddle's name)
    """Matrix product `input @ mat2` (same rules as `matmul` without transpose flags).

    Args:
      input: a tensor of rank >= 1.
      mat2: a tensor of rank >= 1.
      name: ignored.

    Returns:
      The product.

    Example:
      >>> import pdx
      >>> pdx.mm(pdx.ones([2, 3]), pdx.ones([3, 4])).shape
      (2, 4)
    """
    input = as_array(input, name="input", op="mm")
    mat2 = as_array(mat2, name="mat2", op="mm")
    _matmul_shapes(tuple(input.shape), tuple(mat2.shape), "mm")
    return jnp.matmul(input, mat2)


def bmm(x, y, name=None):
    """Batched matrix product of two 3-D tensors with equal batch sizes.

    Args:
      x: a `[B, M, K]` tensor.
      y: a `[B, K, N]` tensor.
      name: ignored.

    Returns:
      A `[B, M, N]` tensor.

    Example:
      >>> import pdx
      >>> pdx.bmm(pdx.ones([2, 3, 4]), pdx.ones([2, 4, 5])).shape
      (2, 3, 5)
    """
    x = as_array(x, op="bmm")
    y = as_array(y, name="y", op="bmm")
    if x.ndim != 3 or y.ndim != 3:
        raise op_error("bmm", f"x and y must be 3-D; got x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)}")
    if x.shape[0] != y.shape[0]:
        raise op_error("bmm", f"batch sizes differ: x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} "
                              f"({x.shape[0]} vs {y.shape[0]}); use matmul to broadcast batches")
    _matmul_shapes(tuple(x.shape), tuple(y.shape), "bmm")
    return jnp.matmul(x, y)


def dot(x, y, name=None):
    """Inner product of 1-D tensors, or row-wise inner products of 2-D tensors.

    Args:
      x: a `[N]` or `[B, N]` tensor.
      y: a tensor of the same shape.
      name: ignored.

    Returns:
      A 0-D tensor for 1-D input, a `[B]` tensor for 2-D input.

    Example:
      >>> import pdx
      >>> pdx.dot(pdx.to_tensor([1.0, 2.0]), pdx.to_tensor([3.0, 4.0])).tolist()
      11.0
    """
    x = as_array(x, op="dot")
    y = as_array(y, name="y", op="dot")
    if x.ndim not in (1, 2) or x.shape != y.shape:
        raise op_error("dot", f"x and y must be 1-D or 2-D with equal shapes; got x.shape={tuple(x.shape)} "
                              f"and y.shape={tuple(y.shape)}")
    return jnp.sum(x * y, axis=-1)


def einsum(equation, *operands):
    """Einstein summation (`jnp.einsum` semantics, which match Paddle's).

    Args:
      equation: the subscripts, e.g. 'ij,jk->ik'; '...' broadcasting is allowed.
      *operands: the tensors.

    Returns:
      The contracted tensor.

    Example:
      >>> import pdx
      >>> pdx.einsum("ij,jk->ik", pdx.ones([2, 3]), pdx.ones([3, 4])).shape
      (2, 4)
    """
    if not isinstance(equation, str):
        raise TypeError(f"pdx.einsum: `equation` must be a string like 'ij,jk->ik'; got {equation!r}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    arrays = [as_array(o, name=f"operands[{i}]", op="einsum") for i, o in enumerate(operands)]
    inputs = equation.split("->")[0].split(",")
    if len(inputs) != len(arrays):
        raise op_error("einsum", f"equation {equation!r} names {len(inputs)} operands but {len(arrays)} were given")
    try:
        return jnp.einsum(equation, *arrays)
    except ValueError as e:
        shapes = [tuple(a.shape) for a in arrays]
        raise op_error("einsum", f"equation {equation!r} does not fit operand shapes {shapes}: {e}") from None


def outer(x, y, name=None):
    """Outer product of two tensors (each flattened to 1-D first).

    Args:
      x: a tensor with M elements.
      y: a tensor with N elements.
      name: ignored.

    Returns:
      A `[M, N]` tensor.

    Example:
      >>> import pdx
      >>> pdx.outer(pdx.to_tensor([1, 2]), pdx.to_tensor([3, 4])).tolist()
      [[3, 4], [6, 8]]
    """
    x = as_array(x, op="outer")
    y = as_array(y, name="y", op="outer")
    return jnp.outer(x.reshape(-1), y.reshape(-1))


def kron(x, y, name=None):
    """Kronecker product.

    Args:
      x: a tensor.
      y: a tensor.
      name: ignored.

    Returns:
      The Kronecker product; its rank is the larger of the two ranks.

    Example:
      >>> import pdx
      >>> pdx.kron(pdx.eye(2), pdx.ones([2, 2])).shape
      (4, 4)
    """
    x = as_array(x, op="kron")
    y = as_array(y, name="y", op="kron")
    return jnp.kron(x, y)

