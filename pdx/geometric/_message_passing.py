"""Graph message passing: send_u_recv, send_ue_recv, send_uv (Paddle/PGL semantics).

A message is gathered along each edge `src -> dst` (`x[src]`, optionally
combined with an edge feature `y` or with `y[dst]`), then reduced onto the
destination nodes with `segment_*` (sum / mean / max / min; nodes that
receive nothing are 0). Feature dimensions (all but the first) broadcast
numpy-style between `x` and `y`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx.geometric._segment import segment_reduce, static_size
from pdx._args import as_array, op_error

__all__ = ["send_u_recv", "send_ue_recv", "send_uv"]

_REDUCE_OPS = ("sum", "mean", "max", "min")
_MESSAGE_OPS = ("add", "sub", "mul", "div")


def _index(index, name: str, op: str):
    index = as_array(index, name=name, op=op)
    if not jnp.issubdtype(index.dtype, jnp.integer):
        raise TypeError(f"pdx.{op}: `{name}` must be an int32/int64 tensor; got dtype {index.dtype}")
    if index.ndim == 2 and index.shape[1] == 1:
        index = index[:, 0]
    if index.ndim != 1:
        raise op_error(op, f"`{name}` must be a 1-D index tensor; got shape {index.shape}")
    return index


def _edges(src_index, dst_index, op: str):
    src = _index(src_index, "src_index", op)
    dst = _index(dst_index, "dst_index", op)
    if src.shape != dst.shape:
        raise op_error(op, f"`src_index` and `dst_index` must have the same length; got {src.shape} and {dst.shape}")
    return src, dst


def _choice(value, allowed, name: str, op: str) -> str:
    if not isinstance(value, str) or value.lower() not in allowed:
        raise op_error(op, f"`{name}` must be one of {allowed}; got {value!r}")
    return value.lower()


def _out_rows(out_size, x, dst, op: str) -> int:
    n = static_size(out_size, op=op, name="out_size")
    if n is None or n <= 0:
        n = x.shape[0]
    elif not isinstance(dst, jax.core.Tracer) and dst.shape[0] and int(np.asarray(dst).max()) >= n:
        raise op_error(op, f"`out_size`={n} is smaller than max(dst_index) + 1 = {int(np.asarray(dst).max()) + 1}")
    return n


def _feature_broadcast(a, b, op: str):
    """Broadcast the feature dims (all but the first) of two edge-aligned tensors."""
    try:
        feat = np.broadcast_shapes(a.shape[1:], b.shape[1:])
    except ValueError:
        raise op_error(op, f"the feature shapes of x and y must broadcast; got x {a.shape[1:]} "
                           f"and y {b.shape[1:]} (the first dim is the node/edge dim)") from None
    k = len(feat)

    def lift(t):
        return t.reshape(t.shape[:1] + (1,) * (k - (t.ndim - 1)) + t.shape[1:])

    return lift(a), lift(b)


def _message(a, b, message_op: str):
    if message_op == "add":
        return a + b
    if message_op == "sub":
        return a - b
    if message_op == "mul":
        return a * b
    return a / b


def send_u_recv(x, src_index, dst_index, reduce_op="sum", out_size=None, name=None):
    """Gather `x[src_index]` along edges and reduce it onto `dst_index`.

    Args:
      x: node features `[N, ...]`.
      src_index, dst_index: int tensors `[E]` (edge `src -> dst`).
      reduce_op: "sum" | "mean" | "max" | "min".
      out_size: number of output rows; None or <= 0 means `x.shape[0]`. Under
        jit it must be a Python int (it fixes the output shape).

    Returns:
      `[out_size, ...]`; nodes that receive no message are 0.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = jnp.array([[0., 2., 3.], [1., 4., 5.], [2., 6., 7.]])
        >>> pdx.geometric.send_u_recv(x, jnp.array([0, 1, 2, 0]), jnp.array([1, 2, 1, 0]), "sum")
        Array([[ 0.,  2.,  3.],
               [ 2.,  8., 10.],
               [ 1.,  4.,  5.]], dtype=float32)
    """
    op = "geometric.send_u_recv"
    x = as_array(x, name="x", op=op)
    reduce_op = _choice(reduce_op, _REDUCE_OPS, "reduce_op", op)
    src, dst = _edges(src_index, dst_index, op)
    n = _out_rows(out_size, x, dst, op)
    return segment_reduce(x[src], dst, reduce_op=reduce_op, num_segments=n)


def send_ue_recv(x, y, src_index, dst_index, message_op="add", reduce_op="sum", out_size=None, name=None):
    """Combine `x[src_index]` with edge features `y`, then reduce onto `dst_index`.

    Args:
      x: node features `[N, ...]`.
      y: edge features `[E, ...]`; feature dims broadcast with x's.
      src_index, dst_index: int tensors `[E]`.
      message_op: "add" | "sub" | "mul" | "div".
      reduce_op: "sum" | "mean" | "max" | "min".
      out_size: as in `send_u_recv`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = jnp.ones((3, 2)); y = jnp.array([1., 2., 3.])
        >>> pdx.geometric.send_ue_recv(x, y, jnp.array([0, 1, 2]), jnp.array([1, 1, 0]), "mul", "sum")
        Array([[3., 3.],
               [3., 3.],
               [0., 0.]], dtype=float32)
    """
    op = "geometric.send_ue_recv"
    x = as_array(x, name="x", op=op)
    y = as_array(y, name="y", op=op)
    message_op = _choice(message_op, _MESSAGE_OPS, "message_op", op)
    reduce_op = _choice(reduce_op, _REDUCE_OPS, "reduce_op", op)
    src, dst = _edges(src_index, dst_index, op)
    if y.ndim == 0 or y.shape[0] != src.shape[0]:
        raise op_error(op, f"`y` holds one feature row per edge: y.shape[0] must be {src.shape[0]}; got y.shape={y.shape}")
    n = _out_rows(out_size, x, dst, op)
    a, b = _feature_broadcast(x[src], y, op)
    return segment_reduce(_message(a, b, message_op), dst, reduce_op=reduce_op, num_segments=n)


def send_uv(x, y, src_index, dst_index, message_op="add", name=None):
    """Per-edge message from source features `x[src]` and destination features `y[dst]`.

    Args:
      x, y: node features `[N, ...]` (feature dims broadcast).
      src_index, dst_index: int tensors `[E]`.
      message_op: "add" | "sub" | "mul" | "div".

    Returns:
      `[E, ...]`, one message per edge.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = jnp.array([[1.], [2.], [3.]])
        >>> pdx.geometric.send_uv(x, x, jnp.array([0, 1]), jnp.array([2, 2]), "mul")
        Array([[3.],
               [6.]], dtype=float32)
    """
    op = "geometric.send_uv"
    x = as_array(x, name="x", op=op)
    y = as_array(y, name="y", op=op)
    message_op = _choice(message_op, _MESSAGE_OPS, "message_op", op)
    src, dst = _edges(src_index, dst_index, op)
    a, b = _feature_broadcast(x[src], y[dst], op)
    return _message(a, b, message_op)
