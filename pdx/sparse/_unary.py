"""Elementwise ops on the stored values of a sparse tensor (the pattern and format are kept).

As in Paddle, the function is applied to every stored value, explicit zeros
included; entries that are not stored stay implicit zeros (every op here maps
0 to 0, except isnan which maps it to False and cast).
"""

from __future__ import annotations

import jax.numpy as jnp

from pdx._dtype import convert_dtype
from pdx.sparse._core import BCOO, BCSR, fmt, require_sparse

__all__ = [
    "abs", "asin", "asinh", "atan", "atanh", "cast", "deg2rad", "expm1", "isnan", "log1p", "map_values", "neg",
    "pow", "rad2deg", "sin", "sinh", "sqrt", "square", "tan", "tanh",
]


def map_values(x, fn, op: str):
    """Apply `fn` to the stored values of `x`, keeping its indices and format."""
    require_sparse(x, op)
    if fmt(x) == "coo":
        return BCOO((fn(x.data), x.indices), shape=x.shape)
    return BCSR((fn(x.data), x.indices, x.indptr), shape=x.shape)


def _unary(op_name: str, fn, formula: str):
    def op(x, name=None):
        return map_values(x, fn, op_name)

    name = op_name
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"""Sparse `{formula}` on the stored values (pattern and COO/CSR format kept).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([[0., 0.5], [0.25, 0.]]), 2)
        >>> pdx.sparse.to_dense(pdx.sparse.{name}(x)).shape
        (2, 2)
    """
    return op


sin = _unary("sin", jnp.sin, "sin(x)")
tan = _unary("tan", jnp.tan, "tan(x)")
asin = _unary("asin", jnp.arcsin, "asin(x)")
atan = _unary("atan", jnp.arctan, "atan(x)")
sinh = _unary("sinh", jnp.sinh, "sinh(x)")
tanh = _unary("tanh", jnp.tanh, "tanh(x)")
asinh = _unary("asinh", jnp.arcsinh, "asinh(x)")
atanh = _unary("atanh", jnp.arctanh, "atanh(x)")
sqrt = _unary("sqrt", jnp.sqrt, "sqrt(x)")
square = _unary("square", jnp.square, "x ** 2")
log1p = _unary("log1p", jnp.log1p, "log(1 + x)")
expm1 = _unary("expm1", jnp.expm1, "exp(x) - 1")
abs = _unary("abs", jnp.abs, "|x|")  # noqa: A001  (Paddle's name)
neg = _unary("neg", jnp.negative, "-x")
deg2rad = _unary("deg2rad", jnp.deg2rad, "x * pi / 180")
rad2deg = _unary("rad2deg", jnp.rad2deg, "x * 180 / pi")
isnan = _unary("isnan", jnp.isnan, "isnan(x)")


def pow(x, factor, name=None):  # noqa: A001  (Paddle's name)
    """Sparse `x ** factor` on the stored values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([0., 2., 3.]), 1)
        >>> pdx.sparse.values(pdx.sparse.pow(x, 2)).tolist()
        [4.0, 9.0]
    """
    if not isinstance(factor, (int, float)) or isinstance(factor, bool):
        raise TypeError(f"pdx.sparse.pow: `factor` must be a Python int or float; got {factor!r}")
    return map_values(x, lambda v: v ** factor, "pow")


def cast(x, index_dtype=None, value_dtype=None, name=None):
    """Cast a sparse tensor's indices and/or values.

    Args:
      index_dtype: dtype of indices / crows / cols (pdx keeps 32-bit ints
        unless x64 is enabled, so "int64" becomes int32).
      value_dtype: dtype of the values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.cast(pdx.sparse.to_sparse_coo(jnp.array([0., 2.]), 1), value_dtype="int32")
        >>> pdx.sparse.values(x).dtype
        dtype('int32')
    """
    require_sparse(x, "cast")
    idt = convert_dtype(index_dtype)
    vdt = convert_dtype(value_dtype)
    if idt is not None and not jnp.issubdtype(idt, jnp.integer):
        raise TypeError(f"pdx.sparse.cast: `index_dtype` must be an integer dtype; got {index_dtype!r}")
    data = x.data if vdt is None else x.data.astype(vdt)
    if fmt(x) == "coo":
        idx = x.indices if idt is None else x.indices.astype(idt)
        return BCOO((data, idx), shape=x.shape)
    ind = x.indices if idt is None else x.indices.astype(idt)
    ptr = x.indptr if idt is None else x.indptr.astype(idt)
    return BCSR((data, ind, ptr), shape=x.shape)
