"""Private argument checks shared by the pdx.ops modules.

Each helper validates static (trace-time) information only: shapes, axes and
Python arguments. None of them looks at array values, so all of them are safe
under `jax.jit`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype
# The core helpers, re-exported for the ops modules.
from pdx._args import AxisError, argument_error, as_array, int_list, normalize_axis, op_error, static_int


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
    try:
        dt = convert_dtype(dtype)
    except TypeError:
        dt = None
    # Paddle takes exactly these two (argmax's dtype=None or 'int16' is its InvalidArgument ValueError);
    # without x64 'int64' has already narrowed to int32.
    if dt is None or jnp.dtype(dt) not in (jnp.dtype(jnp.int32), jnp.dtype(jnp.int64)):
        raise argument_error(op, f"`{name}` must be 'int32' or 'int64'; got {name}={dtype!r}")
    return dt


def index_array(index, *, op: str, name: str = "index") -> jax.Array:
    """An integer index tensor, or a TypeError naming the op and argument."""
    index = as_array(index, name=name, op=op)
    if not jnp.issubdtype(index.dtype, jnp.integer):
        raise argument_error(op, f"`{name}` must be an integer tensor (int32/int64); got dtype {index.dtype}")
    return index


class _OutOfRangeAxisError(AxisError):
    """An axis out of range where Paddle raises IndexError with category OutOfRange (gather, cumsum, ...)."""

    category = "OutOfRange"


# The ops whose bad axis Paddle reports as IndexError (OutOfRange); the rest say ValueError (InvalidArgument).
_OUT_OF_RANGE_AXIS_OPS = frozenset({"cumsum", "gather", "index_add", "index_select", "repeat_interleave"})


def op_axis(axis, ndim: int, *, op: str, name: str = "axis") -> int:
    """An int axis attribute (an int or a 1-element tensor) mapped into [0, ndim), with Paddle's category
    for that op when it is out of range."""
    axis = static_int(axis, op=op, name=name)
    try:
        return normalize_axis(axis, ndim, op=op, name=name)
    except AxisError as e:
        if op not in _OUT_OF_RANGE_AXIS_OPS:
            raise
        raise _OutOfRangeAxisError(*e.args) from None


def index_range(index, n: int, *, op: str, where: str, name: str = "index") -> None:
    """Raise when a concrete integer index has values outside [-n, n) (Paddle's eager check).

    A traced index is not checked (its values are unknown until run). The values are read on the host
    with numpy, so a concrete index closed over by a jitted function is checked without tracing.
    """
    if isinstance(index, jax.core.Tracer) or not index.size:
        return
    values = np.asarray(index)
    lo, hi = int(values.min()), int(values.max())
    if lo < -n or hi >= n:
        raise op_error(op, f"`{name}` values must lie in [{-n}, {n}) for {where}; got values in [{lo}, {hi}]")


def check_rank(x, *, op: str, name: str = "x", at_least: int = 0, exactly: int | None = None):
    """Raise naming the op when a tensor has the wrong rank."""
    if exactly is not None and x.ndim != exactly:
        raise op_error(op, f"`{name}` must be {exactly}-D; got {name}.shape={tuple(x.shape)}")
    if x.ndim < at_least:
        raise op_error(op, f"`{name}` must have rank >= {at_least}; got {name}.shape={tuple(x.shape)}")


def prod_int(values) -> int:
    """The product of dims: an int, or a symbolic dim where one is (export with `None` dims)."""
    out = 1
    for v in values:
        out *= v if jax.export.is_symbolic_dim(v) else int(v)
    return out
