"""Argument conversion and Paddle-style errors shared by every pdx package.

`as_array` turns an argument into a jax.Array (an `ArgumentError` naming the op
and argument for anything that is not array-like), `op_error` is the ValueError
that names the op, and `normalize_axis` / `static_int` / `int_list` read
static (trace-time) arguments. They look only at Python values, shapes and
dtypes, never at array values, so they are safe under `jax.jit`. This is part
of the framework core (like `pdx._dtype`), which every package may import.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype

__all__ = ["ArgumentError", "AttrTypeError", "AxisError", "OpError", "ShapeError", "argument_error", "as_array", "attr_error",
           "concrete_ints", "int_list", "is_int", "normalize_axis", "ntuple", "number", "op_error", "static_int"]


class _PaddleCategory:
    """Shows Paddle's error category after the message: `pdx.argmax: ... (InvalidArgument)`.

    Paddle's errors carry their category in the text (`(InvalidArgument) ...`,
    `(InvalidType) ...`), and ported code and Paddle's own tests look for it there;
    pdx's teaching message comes first, the category last.
    """

    category = ""

    def __str__(self):
        text = super().__str__()
        tag = f"({self.category})"
        return text if tag in text else f"{text} {tag}"


class ArgumentError(_PaddleCategory, TypeError, ValueError):
    """An argument of the wrong type or dtype (a string where a tensor goes, a float index).

    A TypeError by Python's convention and a ValueError as Paddle's eager ops raise for it,
    so `except TypeError` and Paddle's `assertRaises(ValueError)` both catch it.
    A tensor argument of the wrong kind is Paddle's InvalidArgument.
    """

    category = "InvalidArgument"


class AttrTypeError(ArgumentError):
    """A scalar or list attribute of the wrong type (`axis="1"`, `threshold="0.5"`, `offset=2.5`):
    Paddle's category for those is InvalidType."""

    category = "InvalidType"


class OpError(_PaddleCategory, ValueError):
    """A value an op cannot take (`op_error`): Paddle's ValueError with category InvalidArgument."""

    category = "InvalidArgument"


class AxisError(_PaddleCategory, ValueError, IndexError):
    """An axis out of range: Paddle raises ValueError for most ops and IndexError for some
    (`gather`, `cumsum`); numpy's AxisError is both as well."""

    category = "InvalidArgument"


class ShapeError(_PaddleCategory, ValueError, TypeError):
    """A shape that does not fit (`x.reshape([4, 2])` of 6 elements): Paddle's ValueError,
    and JAX's TypeError for its own reshape method."""

    category = "InvalidArgument"


def is_int(v) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def concrete_ints(value):
    """A concrete (not traced) integer tensor as Python ints (`Tensor([3, 3])` -> `[3, 3]`), else `value`.

    Paddle takes sizes as tensors (`output_size=paddle.to_tensor([3, 3])`); eagerly their values are known.

    Example:
      >>> import numpy as np
      >>> concrete_ints(np.array([3, 4])), concrete_ints(5)
      ([3, 4], 5)
    """
    if isinstance(value, (jax.Array, np.ndarray)) and not isinstance(value, jax.core.Tracer) \
            and np.issubdtype(value.dtype, np.integer):
        return np.asarray(value).tolist()
    return value


def ntuple(value, n: int, *, op: str, name: str, minimum: int | None = None) -> tuple[int, ...]:
    """An int or a list of `n` ints (or a concrete integer tensor) -> a tuple of `n` ints (Paddle's
    `convert_to_list`).

    Example:
      >>> ntuple(3, 2, op="nn.Conv2D", name="kernel_size")
      (3, 3)
    """
    value = concrete_ints(value)
    if is_int(value):
        out = (int(value),) * n
    elif isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, str) and len(value) == n \
            and all(is_int(v) for v in value):
        out = tuple(int(v) for v in value)
    else:
        raise op_error(op, f"`{name}` must be an int or a list/tuple of {n} ints; got {name}={value!r}")
    if minimum is not None and any(v < minimum for v in out):
        raise op_error(op, f"every entry of `{name}` must be >= {minimum}; got {name}={value!r}")
    return out


def op_error(op: str, message: str) -> OpError:
    """A ValueError that names the op, e.g. `pdx.matmul: x.shape=(2, 3) ... (InvalidArgument)`."""
    return OpError(f"pdx.{op}: {message}")


def argument_error(op: str, message: str) -> ArgumentError:
    """An ArgumentError that names the op, e.g. `pdx.gather: `index` must be an integer tensor`."""
    return ArgumentError(f"pdx.{op}: {message}")


def attr_error(op: str, message: str) -> AttrTypeError:
    """An AttrTypeError that names the op, e.g. `pdx.zeros: `shape` entries must be ints ...`."""
    return AttrTypeError(f"pdx.{op}: {message}")


def as_array(x, *, name: str = "x", op: str = "op", dtype=None) -> jax.Array:
    """Convert `x` (array, numpy, scalar, nested list) to a jax.Array.

    Raises a TypeError naming the op and argument for objects that are not
    array-like (for example a Layer passed where a tensor was expected).
    """
    if isinstance(x, jax.Array) and dtype is None:
        return x
    error = ArgumentError(f"pdx.{op}: argument `{name}` must be a tensor (jax.Array, numpy array, "
                          f"number or nested list); got {type(x).__name__}")
    if isinstance(x, (str, bytes)):  # jnp.asarray would read a string as a dtype name
        raise error
    try:
        return jnp.asarray(x, dtype=convert_dtype(dtype))
    except (TypeError, ValueError) as e:
        raise error from e


def normalize_axis(axis: int, ndim: int, *, op: str, name: str = "axis") -> int:
    """Map a possibly negative axis into [0, ndim) or raise naming the op."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise AttrTypeError(f"pdx.{op}: `{name}` must be an int; got {axis!r}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise AxisError(f"pdx.{op}: `{name}`={axis} is out of range for a tensor of rank {ndim} "
                        f"(valid: {-max(ndim, 1)} .. {max(ndim, 1) - 1})")
    return int(axis) % max(ndim, 1)


def static_int(value, *, op: str, name: str) -> int:
    """A Python int from an int, numpy integer or concrete 0-D/1-element tensor.

    Paddle accepts small tensors for integer attributes (axis, k, num); under a
    trace such a tensor is abstract, so we say to pass a Python int instead.
    """
    if isinstance(value, bool):
        raise AttrTypeError(f"pdx.{op}: `{name}` must be an int; got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (jax.Array, np.ndarray)):
        if value.size != 1 or not jnp.issubdtype(value.dtype, jnp.integer):
            raise AttrTypeError(f"pdx.{op}: `{name}` must be an int or a 1-element integer tensor; "
                            f"got a tensor of shape {tuple(value.shape)} and dtype {value.dtype}")
        try:
            return int(np.asarray(value).reshape(()))
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as e:
            raise AttrTypeError(f"pdx.{op}: `{name}` must be known at trace time; pass a Python int "
                            "instead of a traced tensor under jit") from e
    raise AttrTypeError(f"pdx.{op}: `{name}` must be an int; got {value!r}")


def number(value, *, op: str, name: str):
    """A scalar attribute (a slope, a threshold): a Python/numpy number, or a tensor passed through.

    Example:
      >>> number(0.5, op="nn.functional.hardshrink", name="threshold")
      0.5
    """
    if isinstance(value, (int, float, np.number, jax.Array, np.ndarray)) and not isinstance(value, bool):
        return value
    raise AttrTypeError(f"pdx.{op}: `{name}` must be a number; got {type(value).__name__} {value!r:.60}")


def int_list(values, *, op: str, name: str) -> list[int]:
    """A list of Python ints from an int, a sequence of ints/1-element tensors or a 1-D tensor."""
    if isinstance(values, (jax.Array, np.ndarray)):
        if values.ndim > 1:
            raise AttrTypeError(f"pdx.{op}: `{name}` must be a 1-D integer tensor; got shape {tuple(values.shape)}")
        try:
            return [int(v) for v in np.asarray(values).reshape(-1)]
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as e:
            raise AttrTypeError(f"pdx.{op}: `{name}` must be known at trace time; pass a list of Python "
                            "ints instead of a traced tensor under jit") from e
    if isinstance(values, Sequence) and not isinstance(values, str):
        return [static_int(v, op=op, name=name) for v in values]
    return [static_int(values, op=op, name=name)]
