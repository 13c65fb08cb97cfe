"""Paddle dtype names and defaults mapped onto JAX dtypes.

JAX runs with 32-bit defaults unless `jax_enable_x64` is set, so Paddle's
int64 default integer becomes int32 and a request for 'int64' / 'float64' is
canonicalized to the widest enabled type (documented in README, "Coming from
Paddle").

The default floating dtype is a trace-context setting ("pdx.default_dtype",
`pdx/_trace_context.py`): creation ops traced after `set_default_dtype` make
arrays of the new dtype, and compiled functions trace once more for it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx import _trace_context

__all__ = ["convert_dtype", "get_default_dtype", "set_default_dtype", "default_int"]

_DEFAULT_FLOAT = _trace_context.DEFAULT_DTYPE

_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "int": "int32",
    "long": "int64", "bool_": "bool", "uint16": "bfloat16",
}


def convert_dtype(dtype):
    """A Paddle dtype name, numpy/jax dtype or Python type -> canonical numpy dtype.

    `None` stays `None`. 64-bit types narrow to 32 bits unless x64 is enabled.

    Example:
        >>> convert_dtype("float32")
        dtype('float32')
    """
    if dtype is None:
        return None
    if isinstance(dtype, str):
        dtype = _ALIASES.get(dtype, dtype)
    try:
        dt = jnp.dtype(dtype)
    except TypeError as e:
        raise TypeError(
            f"unknown dtype {dtype!r}; use a name like 'float32', 'bfloat16', 'int32', 'bool' "
            "or a numpy/jax dtype"
        ) from e
    return jax.dtypes.canonicalize_dtype(dt)


def get_default_dtype() -> str:
    """The default floating dtype for creation ops and new parameters ('float32')."""
    return _DEFAULT_FLOAT.get().name


def set_default_dtype(dtype) -> None:
    """Set the default floating dtype ('float32', 'float16', 'bfloat16', 'float64'), process-wide."""
    dt = convert_dtype(dtype)
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"set_default_dtype(dtype) needs a floating dtype; got {dtype!r}.")
    _DEFAULT_FLOAT.set_global(np.dtype(dt))


def default_float():
    """The default floating dtype as a numpy dtype (`get_default_dtype` gives its name)."""
    return _DEFAULT_FLOAT.get()


def default_int():
    """Paddle's default integer (int64), narrowed to int32 without x64."""
    return jax.dtypes.canonicalize_dtype(jnp.int64)
