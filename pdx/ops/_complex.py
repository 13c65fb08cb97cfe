"""Complex numbers and dtype/shape queries: real/imag/conj/angle, as_complex, finfo, rank, ...

Queries that Paddle answers with a Python value (`is_complex`, `is_floating_point`)
do so here too; `rank` and `is_empty` return 0-D tensors like Paddle.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx._dtype import default_float
from pdx.ops._checks import broadcast_shapes, dtype_arg
from pdx.ops._common import as_array, op_error


def real(x, name=None):
    """Real part (a real tensor is returned unchanged).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A real tensor.

    Example:
      >>> import pdx
      >>> pdx.real(pdx.to_tensor([1 + 2j])).tolist()
      [1.0]
    """
    return jnp.real(as_array(x, op="real"))


def imag(x, name=None):
    """Imaginary part (zeros for a real tensor).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A real tensor.

    Example:
      >>> import pdx
      >>> pdx.imag(pdx.to_tensor([1 + 2j])).tolist()
      [2.0]
    """
    return jnp.imag(as_array(x, op="imag"))


def conj(x, name=None):
    """Complex conjugate (a real tensor is returned unchanged).

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.conj(pdx.to_tensor([1 + 2j])).tolist()
      [(1-2j)]
    """
    return jnp.conj(as_array(x, op="conj"))


def angle(x, name=None):
    """Elementwise argument (phase) in radians; 0 or pi for real input.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A real floating tensor.

    Example:
      >>> import pdx
      >>> pdx.angle(pdx.to_tensor([1.0, -1.0])).tolist()
      [0.0, 3.1415927410125732]
    """
    x = as_array(x, op="angle")
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(default_float())
    return jnp.angle(x)


def _complex_dtype(real_dtype):
    return jnp.complex128 if real_dtype == jnp.float64 else jnp.complex64


def complex(real, imag, name=None):  # noqa: A001 (Paddle's name)
    """Build a complex tensor from real and imaginary parts (broadcast).

    Args:
      real: a floating tensor.
      imag: a floating tensor broadcastable with `real`.
      name: ignored.

    Returns:
      A complex64 (or complex128) tensor.

    Example:
      >>> import pdx
      >>> pdx.complex(pdx.to_tensor([1.0]), pdx.to_tensor([2.0])).tolist()
      [(1+2j)]
    """
    re = as_array(real, name="real", op="complex")
    im = as_array(imag, name="imag", op="complex")
    broadcast_shapes("complex", real=re, imag=im)
    for n, v in (("real", re), ("imag", im)):
        if not jnp.issubdtype(v.dtype, jnp.floating):
            raise TypeError(f"pdx.complex: `{n}` must be a floating tensor; got dtype {v.dtype}")
    dt = jnp.result_type(re, im)
    return jax.lax.complex(*jnp.broadcast_arrays(re.astype(dt), im.astype(dt)))


def polar(abs, angle, name=None):  # noqa: A002 (Paddle's names)
    """Complex tensor from magnitude and phase: `abs * (cos(angle) + i sin(angle))`.

    Args:
      abs: a floating tensor of magnitudes.
      angle: a floating tensor of phases, broadcastable with `abs`.
      name: ignored.

    Returns:
      A complex tensor.

    Example:
      >>> import pdx
      >>> pdx.polar(pdx.to_tensor([2.0]), pdx.to_tensor([0.0])).tolist()
      [(2+0j)]
    """
    r = as_array(abs, name="abs", op="polar")
    t = as_array(angle, name="angle", op="polar")
    return complex(r * jnp.cos(t), r * jnp.sin(t))


def as_complex(x, name=None):
    """View a real `[..., 2]` tensor as complex `[...]` (last dim = real, imaginary).

    Args:
      x: a floating tensor whose last dim is 2.
      name: ignored.

    Returns:
      A complex tensor.

    Example:
      >>> import pdx
      >>> pdx.as_complex(pdx.to_tensor([[1.0, 2.0]])).tolist()
      [(1+2j)]
    """
    x = as_array(x, op="as_complex")
    if x.ndim == 0 or x.shape[-1] != 2 or not jnp.issubdtype(x.dtype, jnp.floating):
        raise op_error("as_complex", f"`x` must be a floating tensor with last dim 2; got x.shape="
                                     f"{tuple(x.shape)}, dtype {x.dtype}")
    return jax.lax.complex(x[..., 0], x[..., 1])


def as_real(x, name=None):
    """View a complex tensor as real `[..., 2]` (real, imaginary).

    Args:
      x: a complex tensor.
      name: ignored.

    Returns:
      A floating tensor with a new last dim of 2.

    Example:
      >>> import pdx
      >>> pdx.as_real(pdx.to_tensor([1 + 2j])).tolist()
      [[1.0, 2.0]]
    """
    x = as_array(x, op="as_real")
    if not jnp.iscomplexobj(x):
        raise TypeError(f"pdx.as_real: `x` must be a complex tensor; got dtype {x.dtype}")
    return jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1)


def view_as_complex(input):  # noqa: A002 (Paddle's name)
    """Alias of `as_complex`.

    Args:
      input: a floating tensor whose last dim is 2.

    Returns:
      A complex tensor.

    Example:
      >>> import pdx
      >>> pdx.view_as_complex(pdx.to_tensor([[1.0, 2.0]])).tolist()
      [(1+2j)]
    """
    return as_complex(input)


def view_as_real(input):  # noqa: A002 (Paddle's name)
    """Alias of `as_real`.

    Args:
      input: a complex tensor.

    Returns:
      A floating tensor with a new last dim of 2.

    Example:
      >>> import pdx
      >>> pdx.view_as_real(pdx.to_tensor([1 + 2j])).tolist()
      [[1.0, 2.0]]
    """
    return as_real(input)


def is_complex(x):
    """Whether `x` has a complex dtype.

    Args:
      x: a tensor.

    Returns:
      A Python bool.

    Example:
      >>> import pdx
      >>> pdx.is_complex(pdx.to_tensor([1 + 2j]))
      True
    """
    return bool(jnp.iscomplexobj(as_array(x, op="is_complex")))


def is_floating_point(x):
    """Whether `x` has a real floating dtype (float16/bfloat16/float32/float64).

    Args:
      x: a tensor.

    Returns:
      A Python bool.

    Example:
      >>> import pdx
      >>> pdx.is_floating_point(pdx.ones([1]))
      True
    """
    return bool(jnp.issubdtype(as_array(x, op="is_floating_point").dtype, jnp.floating))


def is_integer(x):
    """Whether `x` has an integer dtype (bool is not an integer).

    Args:
      x: a tensor.

    Returns:
      A Python bool.

    Example:
      >>> import pdx
      >>> pdx.is_integer(pdx.to_tensor([1]))
      True
    """
    return bool(jnp.issubdtype(as_array(x, op="is_integer").dtype, jnp.integer))


def is_empty(x, name=None):
    """Whether `x` has no elements.

    Args:
      x: a tensor.
      name: ignored.

    Returns:
      A 0-D bool tensor.

    Example:
      >>> import pdx
      >>> pdx.is_empty(pdx.zeros([0, 3])).tolist()
      True
    """
    return jnp.asarray(as_array(x, op="is_empty").size == 0)


def rank(input):  # noqa: A002 (Paddle's name)
    """Number of dims of `input`.

    Args:
      input: a tensor.

    Returns:
      A 0-D int32 tensor.

    Example:
      >>> import pdx
      >>> pdx.rank(pdx.zeros([2, 3])).tolist()
      2
    """
    return jnp.asarray(as_array(input, name="input", op="rank").ndim, jnp.int32)


def tolist(x):
    """The tensor as nested Python lists (a number for 0-D).

    Args:
      x: a tensor.

    Returns:
      Nested lists of Python numbers.

    Example:
      >>> import pdx
      >>> pdx.tolist(pdx.to_tensor([[1, 2]]))
      [[1, 2]]
    """
    return as_array(x, op="tolist").tolist()


_NAMES = {"float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64",
          "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}


def _raw_dtype(dtype, op):
    """The dtype as asked for, without narrowing 64-bit types (limits of float64 are float64's)."""
    try:
        return jnp.dtype(_NAMES.get(dtype, dtype) if isinstance(dtype, str) else dtype)
    except TypeError:
        return dtype_arg(dtype, op=op)


def finfo(dtype):
    """Machine limits of a floating dtype (`bits`, `eps`, `min`, `max`, `tiny`, `resolution`, ...).

    Args:
      dtype: a floating dtype name or object ('float32', pdx.bfloat16, ...).

    Returns:
      A `jnp.finfo` object.

    Example:
      >>> import pdx
      >>> pdx.finfo("float32").bits
      32
    """
    dt = _raw_dtype(dtype, "finfo")
    if not jnp.issubdtype(dt, jnp.inexact):
        raise TypeError(f"pdx.finfo: `dtype` must be a floating or complex dtype; got {dtype!r} (use pdx.iinfo)")
    return jnp.finfo(dt)


def iinfo(dtype):
    """Machine limits of an integer dtype (`bits`, `min`, `max`).

    Args:
      dtype: an integer dtype name or object.

    Returns:
      A `jnp.iinfo` object.

    Example:
      >>> import pdx
      >>> pdx.iinfo("int8").max
      127
    """
    dt = _raw_dtype(dtype, "iinfo")
    if not jnp.issubdtype(dt, jnp.integer):
        raise TypeError(f"pdx.iinfo: `dtype` must be an integer dtype; got {dtype!r} (use pdx.finfo)")
    return jnp.iinfo(dt)
