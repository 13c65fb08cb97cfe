"""Segment reductions (`segment_sum` / `mean` / `max` / `min`) with Paddle's semantics.

Paddle's output has `max(segment_ids) + 1` rows, a value that lives in the
data: eagerly pdx reads it from the ids; under a trace pass the keyword-only
`num_segments=` (a pdx extension) so the shape is static. Empty segments are
0 for every reduction, as in Paddle.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from pdx._random import in_trace
from pdx._args import as_array, op_error

__all__ = ["segment_max", "segment_mean", "segment_min", "segment_sum", "segment_reduce", "static_size"]


@partial(jax.jit, static_argnames=("reduce_op", "num_segments"))
def segment_reduce(data, ids, *, reduce_op: str, num_segments: int):
    """Reduce rows of `data` by `ids` into `num_segments` rows; empty segments are 0."""
    if reduce_op in ("sum", "mean"):
        out = jax.ops.segment_sum(data, ids, num_segments)
        if reduce_op == "sum":
            return out
        count = jax.ops.segment_sum(jnp.ones(ids.shape, data.dtype), ids, num_segments)
        count = count.reshape(count.shape + (1,) * (data.ndim - 1))
        if jnp.issubdtype(data.dtype, jnp.integer):
            return jnp.where(count > 0, out // jnp.maximum(count, 1), 0).astype(data.dtype)
        return out / jnp.maximum(count, 1)
    fn = jax.ops.segment_max if reduce_op == "max" else jax.ops.segment_min
    out = fn(data, ids, num_segments)
    present = jax.ops.segment_sum(jnp.ones(ids.shape, jnp.int32), ids, num_segments) > 0
    present = present.reshape(present.shape + (1,) * (data.ndim - 1))
    return jnp.where(present, out, jnp.zeros((), data.dtype))


def static_size(value, *, op: str, name: str) -> int | None:
    """An int (or a concrete 0-d/1-element tensor) as a Python int; None for None."""
    if value is None:
        return None
    if isinstance(value, jax.core.Tracer):
        raise op_error(op, f"`{name}` must be a Python int under jit (it fixes the output shape); "
                           f"got a traced tensor. Pass an int such as {name}=num_nodes.")
    try:
        arr = np.asarray(value)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError
        return int(arr.reshape(()))
    except TypeError:
        raise op_error(op, f"`{name}` must be an int or a 1-element integer tensor; got {value!r}") from None


def _segment(data, segment_ids, reduce_op: str, num_segments, op: str):
    data = as_array(data, name="data", op=op)
    ids = as_array(segment_ids, name="segment_ids", op=op)
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise TypeError(f"pdx.{op}: `segment_ids` must be an int32/int64 tensor; got dtype {ids.dtype}")
    if ids.ndim != 1 or data.ndim < 1 or ids.shape[0] != data.shape[0]:
        raise op_error(op, f"`segment_ids` must be 1-D with one id per row of `data`; "
                           f"got segment_ids.shape={ids.shape}, data.shape={data.shape}")
    n = static_size(num_segments, op=op, name="num_segments")
    if n is None:
        if in_trace() or isinstance(ids, jax.core.Tracer):
            raise op_error(op, "the number of segments is max(segment_ids) + 1, a data-dependent shape; "
                               "under jit pass num_segments=<int> (a pdx extension)")
        n = int(np.asarray(ids).max()) + 1 if ids.shape[0] else 0
    return segment_reduce(data, ids, reduce_op=reduce_op, num_segments=n)


def segment_sum(data, segment_ids, name=None, *, num_segments=None):
    """Sum the rows of `data` that share a segment id.

    Args:
      data: tensor `[N, ...]`.
      segment_ids: sorted int tensor `[N]`.
      num_segments: keyword-only pdx extension; the number of output rows.
        Default `max(segment_ids) + 1` (eager only; required under jit).

    Returns:
      `[num_segments, ...]`; segments with no rows are 0.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.geometric.segment_sum(jnp.array([[1., 2.], [3., 4.], [5., 6.]]), jnp.array([0, 0, 1]))
        Array([[4., 6.],
               [5., 6.]], dtype=float32)
    """
    return _segment(data, segment_ids, "sum", num_segments, "geometric.segment_sum")


def segment_mean(data, segment_ids, name=None, *, num_segments=None):
    """Mean of the rows of `data` that share a segment id (empty segments are 0).

    See `segment_sum` for the arguments.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.geometric.segment_mean(jnp.array([1., 3., 5.]), jnp.array([0, 0, 2]))
        Array([2., 0., 5.], dtype=float32)
    """
    return _segment(data, segment_ids, "mean", num_segments, "geometric.segment_mean")


def segment_max(data, segment_ids, name=None, *, num_segments=None):
    """Elementwise max of the rows of `data` per segment (empty segments are 0).

    See `segment_sum` for the arguments.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.geometric.segment_max(jnp.array([1., 3., -5.]), jnp.array([0, 0, 1]))
        Array([ 3., -5.], dtype=float32)
    """
    return _segment(data, segment_ids, "max", num_segments, "geometric.segment_max")


def segment_min(data, segment_ids, name=None, *, num_segments=None):
    """Elementwise min of the rows of `data` per segment (empty segments are 0).

    See `segment_sum` for the arguments.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.geometric.segment_min(jnp.array([1., 3., 5.]), jnp.array([0, 0, 1]))
        Array([1., 5.], dtype=float32)
    """
    return _segment(data, segment_ids, "min", num_segments, "geometric.segment_min")
