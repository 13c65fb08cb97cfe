"""Special functions: gamma family, Bessel I0/I1, inverse erf, incomplete gamma.

All are float-only (integer input gives the default float) and differentiable
through `jax.scipy.special`.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.special as jss

from pdx.ops._checks import broadcast_shapes, static_int
from pdx.ops._common import as_array, op_error
from pdx.ops._elementwise import _to_float, _unary

lgamma = _unary("lgamma", jss.gammaln, "Elementwise `log|Gamma(x)|`.", "[1.0, 3.0]",
                "[0.0, 0.6931471824645996]")
gammaln = _unary("gammaln", jss.gammaln, "Elementwise `log|Gamma(x)|` (alias of `lgamma`).", "[1.0]", "[0.0]")
digamma = _unary("digamma", jss.digamma, "Elementwise digamma `d/dx log Gamma(x)`.", "[1.0]",
                 "[-0.5772156715393066]")
erfinv = _unary("erfinv", jss.erfinv, "Elementwise inverse error function on (-1, 1).", "[0.0]", "[0.0]")
i0 = _unary("i0", jss.i0, "Modified Bessel function of the first kind, order 0.", "[0.0]", "[1.0]")
i0e = _unary("i0e", jss.i0e, "Exponentially scaled `i0`: `exp(-|x|) * i0(x)`.", "[0.0]", "[1.0]")
i1 = _unary("i1", jss.i1, "Modified Bessel function of the first kind, order 1.", "[0.0]", "[0.0]")
i1e = _unary("i1e", jss.i1e, "Exponentially scaled `i1`: `exp(-|x|) * i1(x)`.", "[0.0]", "[0.0]")


def polygamma(x, n, name=None):
    """The n-th derivative of the digamma function.

    Args:
      x: a tensor.
      n: a non-negative int (0 gives digamma).
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> round(pdx.polygamma(pdx.to_tensor([1.0]), 1).tolist()[0], 4)
      1.6449
    """
    x = _to_float(as_array(x, op="polygamma"))
    n = static_int(n, op="polygamma", name="n")
    if n < 0:
        raise op_error("polygamma", f"`n`={n} must be a non-negative int")
    if n == 0:
        return jss.digamma(x)
    return jss.polygamma(n, x).astype(x.dtype)


def _incomplete_gamma(op, fn, x, y):
    x = _to_float(as_array(x, op=op))
    y = _to_float(as_array(y, name="y", op=op))
    broadcast_shapes(op, x=x, y=y)
    return fn(x, y)


def gammainc(x, y, name=None):
    """Regularized lower incomplete gamma `P(x, y)`, with `x` the shape parameter.

    Args:
      x: the positive shape parameter `a`.
      y: the non-negative integration bound, broadcastable with `x`.
      name: ignored.

    Returns:
      A floating tensor in [0, 1].

    Example:
      >>> import pdx
      >>> round(pdx.gammainc(pdx.to_tensor([1.0]), pdx.to_tensor([1.0])).tolist()[0], 4)
      0.6321
    """
    return _incomplete_gamma("gammainc", jss.gammainc, x, y)


def gammaincc(x, y, name=None):
    """Regularized upper incomplete gamma `Q(x, y) = 1 - P(x, y)`.

    Args:
      x: the positive shape parameter `a`.
      y: the non-negative integration bound, broadcastable with `x`.
      name: ignored.

    Returns:
      A floating tensor in [0, 1].

    Example:
      >>> import pdx
      >>> round(pdx.gammaincc(pdx.to_tensor([1.0]), pdx.to_tensor([1.0])).tolist()[0], 4)
      0.3679
    """
    return _incomplete_gamma("gammaincc", jss.gammaincc, x, y)


def multigammaln(x, p, name=None):
    """Log of the multivariate gamma function of dimension `p`.

    Args:
      x: a tensor with every element > (p - 1) / 2.
      p: a positive int.
      name: ignored.

    Returns:
      A floating tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.multigammaln(pdx.to_tensor([1.0]), 1).tolist()
      [0.0]
    """
    x = _to_float(as_array(x, op="multigammaln"))
    p = static_int(p, op="multigammaln", name="p")
    if p < 1:
        raise op_error("multigammaln", f"`p`={p} must be a positive int")
    j = jnp.arange(p, dtype=x.dtype)
    terms = jss.gammaln(x[..., None] - j / 2)
    return (p * (p - 1) / 4 * jnp.log(jnp.pi) + jnp.sum(terms, axis=-1)).astype(x.dtype)
