"""Elementwise unary math: trigonometric, hyperbolic, rounding parts, sign tests.

Float-only ops (trig, exp/log families, sigmoid, reciprocal) turn integer or
bool input into the default float first, as Paddle's kernels do ("run type
autocast"); dtype-keeping ops (square, neg, trunc, frac, positive) keep
integer input integer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx._dtype import default_float
from pdx.ops._checks import dtype_arg, static_int
from pdx.ops._common import as_array, normalize_axis, op_error

_DOC = """{summary}

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      {returns}

    Example:
      >>> import pdx
      >>> pdx.{op}(pdx.to_tensor({example_in})).tolist()
      {example_out}
    """


def _to_float(x):
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(default_float())


def _unary(op, fn, summary, example_in, example_out, *, float_only=True, returns=None):
    """Build a Paddle-named unary op `op(x, name=None)` with its docstring."""
    def apply(x, name=None):
        x = as_array(x, op=op)
        return fn(_to_float(x) if float_only else x)

    apply.__name__ = apply.__qualname__ = op
    apply.__module__ = __name__
    apply.__doc__ = _DOC.format(
        summary=summary, op=op, example_in=example_in, example_out=example_out,
        returns=returns or ("A floating tensor (integer input gives the default float)." if float_only
                            else "A tensor with the dtype of `x`."))
    return apply


acos = _unary("acos", jnp.arccos, "Elementwise inverse cosine (nan outside [-1, 1]).", "[1.0]", "[0.0]")
asin = _unary("asin", jnp.arcsin, "Elementwise inverse sine (nan outside [-1, 1]).", "[0.0]", "[0.0]")
atan = _unary("atan", jnp.arctan, "Elementwise inverse tangent.", "[0.0]", "[0.0]")
acosh = _unary("acosh", jnp.arccosh, "Elementwise inverse hyperbolic cosine (nan below 1).", "[1.0]", "[0.0]")
asinh = _unary("asinh", jnp.arcsinh, "Elementwise inverse hyperbolic sine.", "[0.0]", "[0.0]")
atanh = _unary("atanh", jnp.arctanh, "Elementwise inverse hyperbolic tangent (nan outside [-1, 1]).",
               "[0.0]", "[0.0]")
tan = _unary("tan", jnp.tan, "Elementwise tangent.", "[0.0]", "[0.0]")
sinh = _unary("sinh", jnp.sinh, "Elementwise hyperbolic sine.", "[0.0]", "[0.0]")
cosh = _unary("cosh", jnp.cosh, "Elementwise hyperbolic cosine.", "[0.0]", "[1.0]")
expm1 = _unary("expm1", jnp.expm1, "Elementwise `exp(x) - 1`, accurate for small `x`.", "[0.0]", "[0.0]")
log10 = _unary("log10", jnp.log10, "Elementwise base-10 logarithm.", "[100.0]", "[2.0]")
reciprocal = _unary("reciprocal", jnp.reciprocal, "Elementwise `1 / x`.", "[4.0]", "[0.25]")
sigmoid = _unary("sigmoid", jax.nn.sigmoid, "Elementwise logistic sigmoid `1 / (1 + exp(-x))`.",
                 "[0.0]", "[0.5]")
deg2rad = _unary("deg2rad", jnp.deg2rad, "Degrees to radians.", "[180.0]", "[3.1415927410125732]")
rad2deg = _unary("rad2deg", jnp.rad2deg, "Radians to degrees.", "[0.0]", "[0.0]")
sinc = _unary("sinc", jnp.sinc, "Normalized sinc `sin(pi x) / (pi x)` (1 at 0).", "[0.0]", "[1.0]")
square = _unary("square", jnp.square, "Elementwise `x * x`.", "[3]", "[9]", float_only=False)
neg = _unary("neg", jnp.negative, "Elementwise `-x`.", "[1, -2]", "[-1, 2]", float_only=False)
negative = _unary("negative", jnp.negative, "Elementwise `-x` (alias of `neg`).", "[1, -2]", "[-1, 2]",
                  float_only=False)
positive = _unary("positive", lambda v: v, "Elementwise `+x` (returns `x`).", "[1, -2]", "[1, -2]",
                  float_only=False)
frac = _unary("frac", lambda v: v - jnp.trunc(v), "Fractional part `x - trunc(x)` (0 for integers).",
              "[-1.5, 2.25]", "[-0.5, 0.25]", float_only=False)
signbit = _unary("signbit", jnp.signbit, "True where the sign bit is set (negative numbers and -0.0).",
                 "[-1.0, 0.0, 2.0]", "[True, False, False]", float_only=False, returns="A bool tensor.")
isneginf = _unary("isneginf", jnp.isneginf, "True where `x` is -inf.", "[float('-inf'), 1.0]",
                  "[True, False]", float_only=False, returns="A bool tensor.")
isposinf = _unary("isposinf", jnp.isposinf, "True where `x` is +inf.", "[float('inf'), 1.0]",
                  "[True, False]", float_only=False, returns="A bool tensor.")
isreal = _unary("isreal", lambda v: jnp.imag(v) == 0 if jnp.iscomplexobj(v) else jnp.ones(v.shape, bool),
                "True where `x` has no imaginary part (always True for real dtypes).", "[1.0, 2.0]",
                "[True, True]", float_only=False, returns="A bool tensor.")


def trunc(input, name=None):  # noqa: A002 (Paddle's name)
    """Round toward zero (integer input is returned unchanged).

    Args:
      input: a tensor.
      name: ignored.

    Returns:
      A tensor with the dtype of `input`.

    Example:
      >>> import pdx
      >>> pdx.trunc(pdx.to_tensor([-1.5, 2.7])).tolist()
      [-1.0, 2.0]
    """
    return jnp.trunc(as_array(input, name="input", op="trunc"))


def sgn(x, name=None):
    """Sign of a real tensor, or `x / |x|` (0 at 0) of a complex tensor.

    Args:
      x: a floating or complex tensor (Paddle rejects integer input; pdx keeps its dtype).
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.sgn(pdx.to_tensor([-2.0, 0.0, 3.0])).tolist()
      [-1.0, 0.0, 1.0]
    """
    x = as_array(x, op="sgn")
    if jnp.iscomplexobj(x):
        mag = jnp.abs(x)
        return jnp.where(mag == 0, jnp.zeros_like(x), x / jnp.where(mag == 0, 1, mag).astype(x.dtype))
    return jnp.sign(x)


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """Scaled tanh `scale_b * tanh(scale_a * x)`.

    Args:
      x: a tensor.
      scale_a: input scale.
      scale_b: output scale.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.stanh(pdx.zeros([2])).tolist()
      [0.0, 0.0]
    """
    x = _to_float(as_array(x, op="stanh"))
    return (scale_b * jnp.tanh(scale_a * x)).astype(x.dtype)


def logit(x, eps=None, name=None):
    """Log-odds `log(x / (1 - x))`; with `eps`, `x` is first clipped to [eps, 1 - eps].

    Args:
      x: a tensor of probabilities.
      eps: optional clipping margin in [0, 1); None or 0 means no clipping.
      name: ignored.

    Returns:
      A floating tensor (nan outside [0, 1] without `eps`).

    Example:
      >>> import pdx
      >>> pdx.logit(pdx.to_tensor([0.5])).tolist()
      [0.0]
    """
    x = _to_float(as_array(x, op="logit"))
    if eps:
        if not 0 <= eps < 0.5:
            raise op_error("logit", f"`eps`={eps!r} must lie in [0, 0.5)")
        x = jnp.clip(x, eps, 1 - eps)
    return jnp.log(x / (1 - x))


def frexp(x, name=None):
    """Split `x` into a mantissa in [0.5, 1) (by magnitude) and an integer power of two.

    Args:
      x: a floating tensor.
      name: ignored.

    Returns:
      `(mantissa, exponent)`, both with the dtype of `x` (as Paddle), with
      `x == mantissa * 2 ** exponent`.

    Example:
      >>> import pdx
      >>> [t.tolist() for t in pdx.frexp(pdx.to_tensor([8.0]))]
      [[0.5], [4.0]]
    """
    x = _to_float(as_array(x, op="frexp"))
    mantissa, exponent = jnp.frexp(x)
    return mantissa, exponent.astype(x.dtype)


def softmax(input, dim=None, dtype=None):  # noqa: A002 (Paddle's name)
    """Softmax along `dim` (torch-style top-level form; `pdx.nn.functional.softmax` takes `axis`).

    With `dim=None` the axis is 0 for 0-D, 1-D and 3-D input and 1 otherwise, as Paddle.

    Args:
      input: a tensor.
      dim: the axis, or None (see above).
      dtype: optional dtype to cast to first.

    Returns:
      A floating tensor like `input`.

    Example:
      >>> import pdx
      >>> pdx.softmax(pdx.zeros([2]), dim=0).tolist()
      [0.5, 0.5]
    """
    x = as_array(input, name="input", op="softmax")
    dt = dtype_arg(dtype, op="softmax")
    x = _to_float(x if dt is None else x.astype(dt))
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1
    ax = normalize_axis(static_int(dim, op="softmax", name="dim"), x.ndim, op="softmax", name="dim")
    return jax.nn.softmax(x, axis=ax) if x.ndim else jnp.ones_like(x)
