"""Shared argument handling for pdx ops: array conversion and Paddle-style errors."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype

__all__ = ["as_array", "normalize_axis", "shape_list", "op_error"]


def op_error(op: str, message: str) -> ValueError:
    """A ValueError that names the op, e.g. `matmul: x.shape=(2, 3) ...`."""
    return ValueError(f"pdx.{op}: {message}")


def as_array(x, *, name: str = "x", op: str = "op", dtype=None) -> jax.Array:
    """Convert `x` (array, numpy, scalar, nested list) to a jax.Array.

    Raises a TypeError naming the op and argument for objects that are not
    array-like (for example a Layer passed where a tensor was expected).
    """
    if isinstance(x, jax.Array) and dtype is None:
        return x
    try:
        return jnp.asarray(x, dtype=convert_dtype(dtype))
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"pdx.{op}: argument `{name}` must be a tensor (jax.Array, numpy array, "
            f"number or nested list); got {type(x).__name__}"
        ) from e


def normalize_axis(axis: int, ndim: int, *, op: str, name: str = "axis") -> int:
    """Map a possibly negative axis into [0, ndim) or raise naming the op."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"pdx.{op}: `{name}` must be an int; got {axis!r}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise op_error(op, f"`{name}`={axis} is out of range for a tensor of rank {ndim} "
                           f"(valid: {-max(ndim, 1)} .. {max(ndim, 1) - 1})")
    return int(axis) % max(ndim, 1)


def _dim(s):
    """An int, or a symbolic dimension (export with `None` dims) kept as it is."""
    if isinstance(s, (int, np.integer)) or not jax.export.is_symbolic_dim(s):
        return int(s)
    return s


def shape_list(shape, *, op: str, name: str = "shape") -> tuple[int, ...]:
    """Paddle accepts an int, list/tuple of ints, or a 1-D integer tensor as a shape."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    if isinstance(shape, (jax.Array, np.ndarray)):
        return tuple(int(s) for s in np.asarray(shape).reshape(-1))
    if isinstance(shape, Sequence):
        return tuple(_dim(s) for s in shape)
    raise TypeError(f"pdx.{op}: `{name}` must be an int, a list/tuple of ints or a 1-D tensor; got {shape!r}")
