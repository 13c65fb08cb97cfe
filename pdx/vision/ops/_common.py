"""Argument checks shared by the vision operators."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def pair(value, op: str, name: str) -> tuple[int, int]:
    """An int or a pair of ints as (h, w)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, (int, np.integer)) for v in value):
        return int(value[0]), int(value[1])
    raise ValueError(f"{op}: {name}={value!r} must be an int or a pair of ints (h, w)")


def float_array(x, op: str, name: str, ndim: int | None = None, last: int | None = None) -> jax.Array:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.float32)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{op}: {name} must be {ndim}-D; got shape {tuple(x.shape)}")
    if last is not None and x.shape[-1] != last:
        raise ValueError(f"{op}: {name} must have last dimension {last}; got shape {tuple(x.shape)}")
    return x


def is_concrete(*xs) -> bool:
    """True when every array has a value now (not a tracer under jit/grad tracing of a jit)."""
    return not any(isinstance(x, jax.core.Tracer) for x in xs)


def roi_batch_index(boxes_num, num_boxes: int, batch: int, op: str) -> jax.Array:
    """Image index of each RoI from `boxes_num` ([N] counts per image)."""
    boxes_num = jnp.asarray(boxes_num)
    if boxes_num.ndim != 1 or boxes_num.shape[0] != batch:
        raise ValueError(f"{op}: boxes_num must be 1-D with one count per image ({batch}); "
                         f"got shape {tuple(boxes_num.shape)}")
    if is_concrete(boxes_num) and int(boxes_num.sum()) != num_boxes:
        raise ValueError(f"{op}: boxes_num={np.asarray(boxes_num).tolist()} sums to {int(boxes_num.sum())}, "
                         f"but boxes has {num_boxes} rows; the counts must add up to the number of boxes")
    return jnp.repeat(jnp.arange(batch), boxes_num.astype(jnp.int32), total_repeat_length=num_boxes)
