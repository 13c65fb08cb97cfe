"""Elementwise binary ops: arithmetic aliases, float helpers, integer and bitwise ops.

Operands broadcast as in every pdx elementwise op; Python scalars stay weakly
typed (`int32_tensor + 1` stays int32). Float-only ops (atan2, hypot,
logaddexp, ldexp) give the default float for integer input, as Paddle does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx._dtype import default_float
from pdx.ops._checks import binary_args, broadcast_shapes
from pdx.ops._common import as_array, op_error
from pdx.ops._logic import (
    equal,
    greater_equal,
    greater_than,
    less_equal,
    less_than,
    not_equal,
)
from pdx.ops._math import clip, remainder

# Paddle's short comparison names are the same functions.
eq, ne, lt, le, gt, ge = equal, not_equal, less_than, less_equal, greater_than, greater_equal
less, greater = less_than, greater_than
clamp = clip
floor_mod = remainder


def _float(v):
    if isinstance(v, (int, float)):
        return float(v)
    return v if jnp.issubdtype(v.dtype, jnp.inexact) else v.astype(default_float())


def _binary(op, fn, summary, example, example_out, *, float_only=False, returns=None,
            int_only=False):
    """Build `op(x, y, name=None)` with broadcasting checks and a docstring."""
    def apply(x, y, name=None):
        x, y = binary_args(x, y, op=op)
        if int_only:
            for argname, v in (("x", x), ("y", y)):
                dt = jnp.result_type(v)
                if not (jnp.issubdtype(dt, jnp.integer) or dt == jnp.bool_):
                    raise TypeError(f"pdx.{op}: `{argname}` must be an integer tensor; got dtype {dt}")
        if float_only:
            x, y = _float(x), _float(y)
        return fn(x, y)

    apply.__name__ = apply.__qualname__ = op
    apply.__module__ = __name__
    apply.__doc__ = f"""{summary}

    Args:
      x: a tensor.
      y: a tensor or number, broadcastable with `x`.
      name: ignored.

    Returns:
      {returns or "The broadcast result."}

    Example:
      >>> import pdx
      >>> pdx.{op}({example}).tolist()
      {example_out}
    """
    return apply


_T = "pdx.to_tensor"
mul = _binary("mul", jnp.multiply, "Elementwise `x * y` (alias of `multiply`).",
              f"{_T}([1, 2]), {_T}([3, 4])", "[3, 8]")
atan2 = _binary("atan2", jnp.arctan2, "Elementwise arc tangent of `x / y` with the quadrant taken from both signs.",
                f"{_T}([0.0]), {_T}([1.0])", "[0.0]", float_only=True)
hypot = _binary("hypot", jnp.hypot, "Elementwise `sqrt(x**2 + y**2)` without overflow.",
                f"{_T}([3.0]), {_T}([4.0])", "[5.0]", float_only=True)
logaddexp = _binary("logaddexp", jnp.logaddexp, "Elementwise `log(exp(x) + exp(y))`, computed stably.",
                    f"{_T}([0.0]), {_T}([0.0])", "[0.6931471824645996]", float_only=True)
fmax = _binary("fmax", jnp.fmax, "Elementwise maximum that ignores NaN (NaN only where both are NaN).",
               f"{_T}([1.0, float('nan')]), {_T}([2.0, 3.0])", "[2.0, 3.0]")
fmin = _binary("fmin", jnp.fmin, "Elementwise minimum that ignores NaN (NaN only where both are NaN).",
               f"{_T}([1.0, float('nan')]), {_T}([2.0, 3.0])", "[1.0, 3.0]")
copysign = _binary("copysign", jnp.copysign, "Magnitude of `x` with the sign of `y`.",
                   f"{_T}([1.0, 2.0]), {_T}([-1.0, 1.0])", "[-1.0, 2.0]", float_only=True)
nextafter = _binary("nextafter", jnp.nextafter, "The next representable float after `x` toward `y`.",
                    f"{_T}([1.0]), {_T}([1.0])", "[1.0]", float_only=True)
heaviside = _binary("heaviside", lambda x, y: jnp.where(x == 0, y, jnp.where(x > 0, 1, 0)).astype(
                        jnp.result_type(x, y)),
                    "Heaviside step: 0 where `x < 0`, `y` where `x == 0`, 1 where `x > 0`.",
                    f"{_T}([-1.0, 0.0, 2.0]), {_T}([0.5])", "[0.0, 0.5, 1.0]")
gcd = _binary("gcd", jnp.gcd, "Elementwise greatest common divisor of integers (non-negative).",
              f"{_T}([12, 7]), {_T}([18, 0])", "[6, 7]", int_only=True)
lcm = _binary("lcm", jnp.lcm, "Elementwise least common multiple of integers (non-negative).",
              f"{_T}([4, 3]), {_T}([6, 0])", "[12, 0]", int_only=True)
bitwise_and = _binary("bitwise_and", jnp.bitwise_and, "Elementwise bitwise AND of integer or bool tensors.",
                      f"{_T}([12]), {_T}([10])", "[8]", int_only=True)
bitwise_or = _binary("bitwise_or", jnp.bitwise_or, "Elementwise bitwise OR of integer or bool tensors.",
                     f"{_T}([12]), {_T}([10])", "[14]", int_only=True)
bitwise_xor = _binary("bitwise_xor", jnp.bitwise_xor, "Elementwise bitwise XOR of integer or bool tensors.",
                      f"{_T}([12]), {_T}([10])", "[6]", int_only=True)


def _int_tensor(x, op, name="x"):
    x = as_array(x, name=name, op=op)
    if not (jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_):
        raise TypeError(f"pdx.{op}: `{name}` must be an integer or bool tensor; got dtype {x.dtype}")
    return x


def bitwise_not(x, name=None):
    """Elementwise bitwise NOT (`~x`; logical NOT for bool).

    Args:
      x: an integer or bool tensor.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.bitwise_not(pdx.to_tensor([0, 5])).tolist()
      [-1, -6]
    """
    return jnp.invert(_int_tensor(x, "bitwise_not"))


def bitwise_invert(x, name=None):
    """Elementwise bitwise NOT (alias of `bitwise_not`).

    Args:
      x: an integer or bool tensor.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.bitwise_invert(pdx.to_tensor([0])).tolist()
      [-1]
    """
    return jnp.invert(_int_tensor(x, "bitwise_invert"))


def _shift_args(x, y, op):
    x = _int_tensor(x, op)
    y = y if isinstance(y, int) else _int_tensor(y, op, "y")
    broadcast_shapes(op, x=x, y=y)
    return x, jnp.asarray(y, x.dtype)


def bitwise_left_shift(x, y, is_arithmetic=True, name=None):
    """Elementwise `x << y`.

    Args:
      x: an integer tensor.
      y: an integer tensor or int, broadcastable with `x`.
      is_arithmetic: accepted for Paddle; a left shift is the same either way.
      name: ignored.

    Returns:
      A tensor with the dtype of `x`.

    Example:
      >>> import pdx
      >>> pdx.bitwise_left_shift(pdx.to_tensor([1, 3]), pdx.to_tensor([2, 1])).tolist()
      [4, 6]
    """
    x, y = _shift_args(x, y, "bitwise_left_shift")
    return jax.lax.shift_left(*jnp.broadcast_arrays(x, y))


def bitwise_right_shift(x, y, is_arithmetic=True, name=None):
    """Elementwise `x >> y`: sign-filling (arithmetic) or zero-filling (logical).

    Args:
      x: an integer tensor.
      y: an integer tensor or int, broadcastable with `x`.
      is_arithmetic: True shifts in copies of the sign bit, False shifts in zeros.
      name: ignored.

    Returns:
      A tensor with the dtype of `x`.

    Example:
      >>> import pdx
      >>> pdx.bitwise_right_shift(pdx.to_tensor([-8, 8]), 2).tolist()
      [-2, 2]
    """
    x, y = _shift_args(x, y, "bitwise_right_shift")
    x, y = jnp.broadcast_arrays(x, y)
    if is_arithmetic:
        return jax.lax.shift_right_arithmetic(x, y)
    return jax.lax.shift_right_logical(x, y)


def sub(x, y, name=None, *, alpha=1):
    """Elementwise `x - alpha * y` (Paddle's `sub`).

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.
      alpha: multiplier of `y`.

    Returns:
      The broadcast difference.

    Example:
      >>> import pdx
      >>> pdx.sub(pdx.to_tensor([5, 2]), pdx.to_tensor([3, 4])).tolist()
      [2, -2]
    """
    x, y = binary_args(x, y, op="sub")
    return jnp.subtract(x, y if alpha == 1 else y * alpha)


def div(x, y, name=None, *, rounding_mode=None):
    """Elementwise division; `rounding_mode` None (true division), 'trunc' or 'floor'.

    Args:
      x: a tensor.
      y: a tensor or number.
      name: ignored.
      rounding_mode: None gives the exact quotient (floating for integer input),
        'trunc' rounds toward zero, 'floor' toward -inf (keeping integer dtypes).

    Returns:
      The broadcast quotient.

    Example:
      >>> import pdx
      >>> pdx.div(pdx.to_tensor([-7.0, 7.0]), pdx.to_tensor([2.0, 2.0]), rounding_mode="trunc").tolist()
      [-3.0, 3.0]
    """
    x, y = binary_args(x, y, op="div")
    if rounding_mode is None:
        return jnp.true_divide(x, y)
    if rounding_mode == "floor":
        return jnp.floor_divide(x, y)
    if rounding_mode == "trunc":
        if jnp.issubdtype(jnp.result_type(x, y), jnp.integer):
            q = jnp.floor_divide(x, y)
            return jnp.where((q < 0) & (q * y != x), q + 1, q)
        return jnp.trunc(jnp.true_divide(x, y))
    raise op_error("div", f"`rounding_mode`={rounding_mode!r} must be None, 'trunc' or 'floor'")


def true_divide(input, other):  # noqa: A002 (Paddle's name)
    """Elementwise true division `input / other` (floating for integer input).

    Args:
      input: a tensor.
      other: a tensor or number.

    Returns:
      The broadcast quotient.

    Example:
      >>> import pdx
      >>> pdx.true_divide(pdx.to_tensor([7]), pdx.to_tensor([2])).tolist()
      [3.5]
    """
    x, y = binary_args(input, other, op="true_divide", xname="input", yname="other")
    return jnp.true_divide(x, y)


def ldexp(x, y, name=None):
    """Elementwise `x * 2 ** y`.

    Args:
      x: a tensor.
      y: an integer tensor, broadcastable with `x`.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.ldexp(pdx.to_tensor([1.0]), pdx.to_tensor([3])).tolist()
      [8.0]
    """
    x = as_array(x, op="ldexp")
    y = _int_tensor(y, "ldexp", "y")
    broadcast_shapes("ldexp", x=x, y=y)
    x = _float(x)
    return x * jnp.exp2(y.astype(x.dtype))


def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """Elementwise `|x - y| <= atol + rtol * |y|`.

    Args:
      x: a tensor.
      y: a tensor broadcastable with `x`.
      rtol: relative tolerance.
      atol: absolute tolerance.
      equal_nan: treat two NaNs as equal.
      name: ignored.

    Returns:
      A bool tensor.

    Example:
      >>> import pdx
      >>> pdx.isclose(pdx.to_tensor([1.0, 2.0]), pdx.to_tensor([1.0, 2.1])).tolist()
      [True, False]
    """
    x, y = binary_args(x, y, op="isclose")
    return jnp.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)


def equal_all(x, y, name=None):
    """True when `x` and `y` have the same shape and equal elements.

    Args:
      x: a tensor.
      y: a tensor.
      name: ignored.

    Returns:
      A 0-D bool tensor.

    Example:
      >>> import pdx
      >>> pdx.equal_all(pdx.to_tensor([1, 2]), pdx.to_tensor([1, 2])).tolist()
      True
    """
    x = as_array(x, op="equal_all")
    y = as_array(y, name="y", op="equal_all")
    if x.shape != y.shape:
        return jnp.asarray(False)
    return jnp.all(x == y)


def isin(x, test_x, assume_unique=False, invert=False, name=None):
    """True where an element of `x` occurs in `test_x` (False with `invert=True`).

    Args:
      x: a tensor.
      test_x: the values to look for (any shape).
      assume_unique: accepted for Paddle (a speed hint).
      invert: return the negation.
      name: ignored.

    Returns:
      A bool tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.isin(pdx.to_tensor([1, 2, 3]), pdx.to_tensor([2, 5])).tolist()
      [False, True, False]
    """
    x = as_array(x, op="isin")
    test_x = as_array(test_x, name="test_x", op="isin")
    return jnp.isin(x, test_x, invert=invert)
