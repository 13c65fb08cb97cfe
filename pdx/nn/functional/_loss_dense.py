"""Losses over dense predictions: Gaussian negative log likelihood and the Dice overlap loss."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from pdx.nn.functional._args import array, check_reduction, compiled, error, float_array, reduce

__all__ = ["dice_loss", "gaussian_nll_loss"]


def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-06, reduction="mean", name=None):
    """Gaussian negative log likelihood 0.5 * (log(var) + (input - label)^2 / var), reduced.

    `variance` may match input's shape, or lack / have size 1 in the last dim
    (one variance per row). Variances below `epsilon` are clamped to it.
    Differs from Paddle 3.3.1: pdx passes the gradient to `variance` (straight
    through the clamp, as PyTorch does); Paddle's clamp cuts the graph, so its
    variance gets no gradient at all.

    Args:
      input: predicted means.
      label: targets, same shape as input.
      variance: predicted variances (>= 0).
      full: add the constant 0.5 * log(2 pi).
      epsilon: the variance floor.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(F.gaussian_nll_loss(jnp.zeros(2), jnp.zeros(2), jnp.ones(2)))
      0.0
    """
    op = "gaussian_nll_loss"
    if not isinstance(variance, jax.core.Tracer) and variance is not None:
        values = np.asarray(variance)
        if values.size and np.issubdtype(values.dtype, np.number) and (values < 0).any():
            raise error(op, "variance has negative entries; variances must be >= 0")
    return _gaussian_nll_loss(input, label, variance, full, epsilon, reduction)


@compiled("input", "label", "variance")
def _gaussian_nll_loss(input, label, variance, full, epsilon, reduction):
    op = "gaussian_nll_loss"
    check_reduction(reduction, op=op)
    x = float_array(input, op=op, name="input")
    y = float_array(label, op=op, name="label").astype(x.dtype)
    var = float_array(variance, op=op, name="variance").astype(x.dtype)
    if var.shape != x.shape:
        if var.shape == x.shape[:-1]:
            var = var[..., None]
        elif not (var.shape[:-1] == x.shape[:-1] and var.ndim == x.ndim and var.shape[-1] == 1):
            raise error(op, f"variance.shape={tuple(var.shape)} must equal input.shape={tuple(x.shape)}, or it "
                            f"without the last dim, or with size 1 there")
    try:
        jnp.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise error(op, f"input.shape={tuple(x.shape)} and label.shape={tuple(y.shape)} do not broadcast") from None
    var = var + lax.stop_gradient(jnp.maximum(var, epsilon) - var)
    loss = 0.5 * (jnp.log(var) + jnp.square(x - y) / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce(loss, reduction)


@compiled("input", "label")
def dice_loss(input, label, epsilon=1e-05, name=None):
    """Dice loss 1 - 2 |X & Y| / (|X| + |Y|), averaged over the batch.

    Args:
      input: [N, ..., C] class probabilities (e.g. a softmax over the last dim).
      label: [N, ..., 1] int classes (the same shape with size 1 last).
      epsilon: added to the denominator.
      name: ignored (Paddle compatibility).

    Returns:
      The scalar loss.

    Example:
      >>> round(float(F.dice_loss(jnp.array([[0.0, 1.0]]), jnp.array([[1]]))), 4)
      0.0
    """
    op = "dice_loss"
    x = float_array(input, op=op, name="input")
    y = array(label, op=op, name="label")
    if not jnp.issubdtype(y.dtype, jnp.integer):
        raise TypeError(f"pdx.nn.functional.{op}: label must be an integer tensor; got label.dtype={y.dtype}")
    if x.ndim < 2:
        raise error(op, f"input must have rank >= 2 ([N, ..., C]); got input.shape={tuple(x.shape)}")
    if y.ndim != x.ndim or y.shape[-1] != 1 or y.shape[:-1] != x.shape[:-1]:
        raise error(op, f"label must be input.shape with size 1 last, i.e. {list(x.shape[:-1]) + [1]}; got "
                        f"label.shape={tuple(y.shape)}")
    onehot = jax.nn.one_hot(y[..., 0], x.shape[-1], dtype=x.dtype)
    dims = tuple(range(1, x.ndim))
    inter = jnp.sum(x * onehot, axis=dims)
    denom = jnp.sum(x, axis=dims) + jnp.sum(onehot, axis=dims)
    return jnp.mean(1 - inter * 2 / (denom + epsilon))
