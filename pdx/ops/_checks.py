"""Private argument checks shared by the pdx.ops modules.

Each helper validates static (trace-time) information only: shapes, axes and
Python arguments. None of them looks at array values, so all of them are safe
under `jax.jit`.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype
from pdx.ops._common import as_array, normalize_axis, op_error


def static_int(value, *, op: str, name: str) -> int:
    """A Python int from an int, numpy integer or concrete 0-D/1-element tensor.

    Paddle accepts small tensors for integer attributes (axis, k, num); under a
    trace such a tensor is abstract, so we say to pass a Python int instead.
    """
    if isinstance(value, bool):
        raise TypeError(f"pdx.{op}: `{name}` must be an int; got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (jax.Array, np.ndarray)):
        if value.size != 1 or not jnp.issubdtype(value.dtype, jnp.integer):
            raise TypeError(f"pdx.{op}: `{name}` must be an int or a 1-element integer tensor; "
                            f"got a tensor of shape {tuple(value.shape)} and dtype {value.dtype}")
        try:
            return int(np.asarray(value).reshape(()))
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as e:
            raise TypeError(f"pdx.{op}: `{name}` must be known at trace time; pass a Python int "
                            "instead of a traced tensor under jit") from e
    raise TypeError(f"pdx.{op}: `{name}` must be an int; got {value!r}")


def int_list(values, *, op: str, name: str) -> list[int]:
    """A list of Python ints from an int, a sequence of ints/1-element tensors or a 1-D tensor."""
    if isinstance(values, (jax.Array, np.ndarray)):
        if values.ndim > 1:
            raise TypeError(f"pdx.{op}: `{name}` must be a 1-D integer tensor; got shape {tuple(values.shape)}")
        try:
            return [int(v) for v in np.asarray(values).reshape(-1)]
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as e:
            raise TypeError(f"pdx.{op}: `{name}` must be known at trace time; pass a list of Python "
                            "ints instead of a traced tensor under jit") from e
    if isinstance(values, Sequence) and not isinstance(values, str):
        return [static_int(v, op=op, name=name) for v in values]
    return [static_int(values, op=op, name=name)]


def reduce_axes(axis, ndim: int, *, op: str) -> tuple[int, ...] | None:
    """Paddle reduction axes (None, int, list/tuple; [] means all) -> sorted tuple or None."""
    if axis is None:
        return None
    axes = int_list(axis, op=op, name="axis")
    if not axes:
        return None
    normalized = [normalize_axis(a, ndim, op=op) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise op_error(op, f"`axis`={list(axes)} repeats an axis (rank {ndim})")
    if ndim == 0:
        return None
    return tuple(sorted(normalized))


def broadcast_shapes(op: str, **arrays) -> tuple[int, ...]:
    """The broadcast shape of named arrays, or an error that prints every shape."""
    shapes = {name: tuple(jnp.shape(a)) for name, a in arrays.items()}
    try:
        return tuple(jnp.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed = " and ".join(f"{name}.shape={shape}" for name, shape in shapes.items())
        raise op_error(op, f"{listed} cannot be broadcast together; dims must be equal or 1 "
                           "when aligned from the right") from None


def binary_args(x, y, *, op: str, xname: str = "x", yname: str = "y"):
    """Convert the two operands of an elementwise op and check they broadcast.

    Python scalars stay weakly typed so `int32_tensor + 1` stays int32, as in Paddle.
    """
    x = x if isinstance(x, (int, float, complex)) and not isinstance(x, bool) else as_array(x, name=xname, op=op)
    y = y if isinstance(y, (int, float, complex)) and not isinstance(y, bool) else as_array(y, name=yname, op=op)
    broadcast_shapes(op, **{xname: x, yname: y})
    return x, y


def dtype_arg(dtype, *, op: str, name: str = "dtype"):
    """convert_dtype with an error that names the op."""
    try:
        return convert_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"pdx.{op}: {e}") from None


def int_dtype_arg(dtype, *, op: str, name: str = "dtype"):
    """An index dtype argument ('int32'/'int64'), narrowed like every pdx integer."""
    dt = dtype_arg(dtype, op=op, name=name)
    if dt is None or not jnp.issubdtype(dt, jnp.integer):
        raise TypeError(f"pdx.{op}: `{name}` must be 'int32' or 'int64'; got {dtype!r}")
    return dt


def index_array(index, *, op: str, name: str = "index") -> jax.Array:
    """An integer index tensor, or a TypeError naming the op and argument."""
    index = as_array(index, name=name, op=op)
    if not jnp.issubdtype(index.dtype, jnp.integer):
        raise TypeError(f"pdx.{op}: `{name}` must be an integer tensor (int32/int64); got dtype {index.dtype}")
    return index


def check_rank(x, *, op: str, name: str = "x", at_least: int = 0, exactly: int | None = None):
    """Raise naming the op when a tensor has the wrong rank."""
    if exactly is not None and x.ndim != exactly:
        raise op_error(op, f"`{name}` must be {exactly}-D; got {name}.shape={tuple(x.shape)}")
    if x.ndim < at_least:
        raise op_error(op, f"`{name}` must have rank >= {at_least}; got {name}.shape={tuple(x.shape)}")


def prod_int(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out
