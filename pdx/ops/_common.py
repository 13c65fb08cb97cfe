"""Shared argument handling for pdx ops: array conversion and Paddle-style errors."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

# The core helpers, re-exported for the ops modules.
from pdx._args import as_array, normalize_axis, op_error

__all__ = ["as_array", "normalize_axis", "shape_list", "op_error"]


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
