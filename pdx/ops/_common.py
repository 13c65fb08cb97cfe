"""Shared argument handling for pdx ops: array conversion and Paddle-style errors."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

# The core helpers, re-exported for the ops modules.
from pdx._args import as_array, attr_error, normalize_axis, op_error, static_int

__all__ = ["as_array", "normalize_axis", "shape_list", "op_error"]


def _dim(s, shape, op: str, name: str):
    """An int (also from a 1-element integer tensor, Paddle's `[t, 3]`), or a symbolic
    dimension (export with `None` dims) kept as it is."""
    if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
        return int(s)
    if isinstance(s, (jax.Array, np.ndarray)):
        return static_int(s, op=op, name=name)
    if jax.export.is_symbolic_dim(s):
        return s
    raise attr_error(op, f"`{name}` entries must be ints or 1-element integer tensors; got {s!r} "
                             f"in {name}={shape!r}")


def shape_list(shape, *, op: str, name: str = "shape") -> tuple[int, ...]:
    """Paddle accepts an int, list/tuple of ints, or a 1-D integer tensor as a shape."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    if isinstance(shape, (jax.Array, np.ndarray)):
        if not jnp.issubdtype(shape.dtype, jnp.integer):
            raise attr_error(op, f"`{name}` must be an integer tensor; got dtype {shape.dtype}")
        try:
            return tuple(int(s) for s in np.asarray(shape).reshape(-1))
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as e:
            raise attr_error(op, f"`{name}` must be known at trace time; under pdx.jit pass a list of "
                                     "Python ints (x.shape, or pdx.shape(x), which is static)") from e
    if isinstance(shape, Sequence) and not isinstance(shape, str):
        return tuple(_dim(s, shape, op, name) for s in shape)
    raise attr_error(op, f"`{name}` must be an int, a list/tuple of ints or a 1-D tensor; got {shape!r}")
