"""Input-layer ops: embedding lookup and one-hot encoding."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._random import in_trace
from pdx.nn.functional._args import array, compiled, error, is_int

__all__ = ["embedding", "one_hot"]


def _check_ids(x, op):
    if not jnp.issubdtype(x.dtype, jnp.integer):
        raise TypeError(f"pdx.nn.functional.{op}: ids `x` must be an integer tensor; got dtype {x.dtype}")


@compiled("x", "weight")
def embedding(x, weight, padding_idx=None, max_norm=None, norm_type=2.0, sparse=False, scale_grad_by_freq=False,
              name=None):
    """Look up rows of `weight` for the integer ids in `x`.

    Rows looked up with `padding_idx` come out as zeros and pass no gradient
    to that row of `weight`. With `max_norm`, looked-up rows whose `norm_type`
    norm exceeds it are rescaled to max_norm / (norm + 1e-7) in the output;
    Paddle also rewrites those rows of `weight` in place, which an immutable
    JAX array cannot do (the gradient is Paddle's: unscaled). `sparse` is
    ignored (gradients are dense). `scale_grad_by_freq` divides each row's
    gradient by the number of times its id occurs in `x`. Paddle raises on ids
    outside [0, num_embeddings); compiled code cannot check values, so such ids
    give NaN rows here (negative ids count from the end).

    Args:
      x: integer ids of any shape, in [0, weight.shape[0]).
      weight: [num_embeddings, embedding_dim].
      padding_idx: optional id (negative counts from the end) that maps to zeros.
      max_norm: optional max row norm.
      norm_type: the p of the max_norm norm.
      sparse: ignored.
      scale_grad_by_freq: scale gradients by inverse id frequency.
      name: ignored.

    Returns:
      [*x.shape, embedding_dim].

    Example:
      >>> F.embedding(jnp.array([[0, 2]]), jnp.eye(3)).tolist()
      [[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]
    """
    op = "embedding"
    x = array(x, op=op)
    _check_ids(x, op)
    weight = array(weight, op=op, name="weight")
    if weight.ndim != 2:
        raise error(op, f"weight must be 2-D [num_embeddings, embedding_dim]; got weight.shape={tuple(weight.shape)}")
    vocab = weight.shape[0]
    if padding_idx is not None:
        if not is_int(padding_idx) or not -vocab <= padding_idx < vocab:
            raise error(op, f"padding_idx={padding_idx!r} must be an int in [-{vocab}, {vocab})")
        padding_idx = int(padding_idx) % vocab
    rows = jnp.take(weight, x, axis=0)
    if max_norm:
        norms = jnp.linalg.norm(rows, ord=norm_type, axis=-1, keepdims=True)
        scale = jnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(rows.dtype)
        rows = rows + jax.lax.stop_gradient(rows * scale - rows)
    if scale_grad_by_freq:
        counts = jnp.zeros((vocab,), rows.dtype).at[x.reshape(-1)].add(1)
        inv = (1.0 / jnp.maximum(counts[x], 1))[..., None]
        rows = jax.lax.stop_gradient(rows) + (rows - jax.lax.stop_gradient(rows)) * inv
    if padding_idx is not None:
        rows = jnp.where((x == padding_idx)[..., None], jnp.zeros((), rows.dtype), rows)
    return rows


def one_hot(x, num_classes=-1, name=None):
    """One-hot encode integer ids into a new trailing dim of size `num_classes` (float32).

    num_classes=-1 infers max(x) + 1, which reads values: eager only; under a
    trace pass num_classes explicitly.

    Args:
      x: integer ids.
      num_classes: size of the new dim, or -1 to infer.
      name: ignored.

    Returns:
      float32 tensor [*x.shape, num_classes].

    Example:
      >>> F.one_hot(jnp.array([1, 0]), 3).tolist()
      [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    op = "one_hot"
    x = array(x, op=op)
    _check_ids(x, op)
    if num_classes == -1 or num_classes is None:
        if in_trace() or isinstance(x, jax.core.Tracer):
            raise error(op, "num_classes=-1 infers the class count from the values of x, which is not possible "
                            "under a trace (jit/grad/vmap); pass num_classes explicitly")
        num_classes = int(np.asarray(x).max()) + 1 if x.size else 0
    if not is_int(num_classes) or num_classes < 1:
        raise error(op, f"num_classes must be a positive int (or -1 to infer); got {num_classes!r}")
    return jax.nn.one_hot(x, int(num_classes), dtype=jnp.float32)
