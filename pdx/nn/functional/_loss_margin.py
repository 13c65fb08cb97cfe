"""Margin and metric-learning losses: multi-class margins, triplets with any distance, ArcFace-style
margin softmax and N-pair loss."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx.nn.functional._args import array, check_reduction, compiled, error, float_array, reduce
from pdx.nn.functional._loss import pairwise_distance

__all__ = ["margin_cross_entropy", "multi_label_margin_loss", "multi_margin_loss", "npair_loss",
           "triplet_margin_with_distance_loss"]


def _int_labels(label, *, op, name="label"):
    label = array(label, op=op, name=name)
    if not jnp.issubdtype(label.dtype, jnp.integer):
        raise TypeError(f"pdx.nn.functional.{op}: `{name}` must be an integer tensor; got {name}.dtype={label.dtype}")
    return label


def _class_labels(input, label, *, op):
    """[N] or [N, 1] int class labels for a [N, C] input -> [N] int32."""
    label = _int_labels(label, op=op)
    if label.shape not in ((input.shape[0],), (input.shape[0], 1)):
        raise error(op, f"label must be [N] or [N, 1] with N=input.shape[0]={input.shape[0]}; got "
                        f"label.shape={tuple(label.shape)}")
    return label.reshape(-1).astype(jnp.int32)


@compiled("input", "label", "weight")
def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", name=None):
    """Multi-class hinge loss: mean over classes i != y of w[y] * relu(margin - x[y] + x[i]) ** p.

    Args:
      input: [N, C] scores.
      label: [N] (or [N, 1]) int target classes.
      p: the exponent (1 or 2 in practice).
      margin: the required score gap.
      weight: optional [C] per-class weight, applied by target class.
      reduction: 'mean', 'sum' or 'none' ([N]).
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> round(float(F.multi_margin_loss(jnp.array([[0.1, 0.2, 0.4]]), jnp.array([2]))), 4)
      0.5
    """
    op = "multi_margin_loss"
    check_reduction(reduction, op=op)
    x = float_array(input, op=op, name="input")
    if x.ndim != 2:
        raise error(op, f"input must be [N, C]; got input.shape={tuple(x.shape)}")
    y = _class_labels(x, label, op=op)
    target = jnp.take_along_axis(x, y[:, None], axis=1)
    terms = jnp.maximum(margin - target + x, 0.0) ** p
    # The i == y term equals margin ** p; Paddle subtracts it after averaging over all C classes.
    own = margin ** p
    if weight is not None:
        w = array(weight, op=op, name="weight").astype(x.dtype).reshape(-1)
        if w.shape[0] != x.shape[1]:
            raise error(op, f"weight must have one entry per class ({x.shape[1]}); got weight.shape={tuple(w.shape)}")
        wy = w[y]
        loss = jnp.mean(wy[:, None] * terms, axis=1) - wy * own / x.shape[1]
    else:
        loss = jnp.mean(terms, axis=1) - own / x.shape[1]
    return reduce(loss, reduction)


def multi_label_margin_loss(input, label, reduction="mean", name=None):
    """Multi-label hinge loss: sum over targets j and non-targets i of relu(1 - x[j] + x[i]) / C.

    A sample's targets are the entries of its label row up to the first -1.

    Args:
      input: [N, C] scores.
      label: [N, C] int target ids, each row padded with -1.
      reduction: 'mean', 'sum' or 'none' ([N]).
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> round(float(F.multi_label_margin_loss(jnp.array([[0.1, 0.2, 0.4, 0.8]]),
      ...                                       jnp.array([[3, 0, -1, 1]]))), 4)
      0.85
    """
    op = "multi_label_margin_loss"
    if not isinstance(label, jax.core.Tracer):
        values = np.asarray(label)
        size = np.shape(input)[-1] if np.ndim(input) else 0
        if values.size and jnp.issubdtype(values.dtype, jnp.integer) and (values.min() < -1 or values.max() >= size):
            raise error(op, f"label values must be in [-1, C - 1 = {size - 1}]; got values in "
                            f"[{values.min()}, {values.max()}]")
    return _multi_label_margin_loss(input, label, reduction)


@compiled("input", "label")
def _multi_label_margin_loss(input, label, reduction):
    op = "multi_label_margin_loss"
    check_reduction(reduction, op=op)
    x = float_array(input, op=op, name="input")
    y = _int_labels(label, op=op)
    if x.ndim != 2:
        raise error(op, f"input must be 2-D [N, C]; got input.shape={tuple(x.shape)}")
    if y.ndim != 2 or y.shape != x.shape:
        raise error(op, f"label must be [N, C] = {list(x.shape)} like input; got label.shape={tuple(y.shape)}")
    classes = x.shape[1]
    valid = jnp.cumprod((y != -1).astype(jnp.int32), axis=1).astype(bool)  # (N, K): targets before the first -1
    safe = jnp.where(valid, y, 0).astype(jnp.int32)
    onehot = jax.nn.one_hot(safe, classes, dtype=jnp.int32) * valid[..., None]  # (N, K, C)
    is_target = jnp.sum(onehot, axis=1) > 0  # (N, C)
    target_score = jnp.take_along_axis(x, safe, axis=1)  # (N, K)
    hinge = jnp.maximum(1.0 - target_score[:, :, None] + x[:, None, :], 0.0)  # (N, K, C)
    hinge = jnp.where(valid[:, :, None] & ~is_target[:, None, :], hinge, 0.0)
    return reduce(jnp.sum(hinge, axis=(1, 2)) / classes, reduction)


def triplet_margin_with_distance_loss(input, positive, negative, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean", name=None):
    """relu(d(anchor, positive) - d(anchor, negative) + margin) for any distance function d.

    Args:
      input: anchors [N, D].
      positive: positives, same shape.
      negative: negatives, same shape.
      distance_function: callable (x, y) -> [N] non-negative distances; default
        the Euclidean `pairwise_distance` (epsilon 1e-6). pdx.nn layers such as
        `PairwiseDistance` work too.
      margin: required gap (>= 0).
      swap: also use d(positive, negative) when it is smaller.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> F.triplet_margin_with_distance_loss(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.ones((2, 3))).shape
      ()
    """
    op = "triplet_margin_with_distance_loss"
    check_reduction(reduction, op=op)
    if margin < 0:
        raise error(op, f"margin must be >= 0; got margin={margin}")
    a = float_array(input, op=op, name="input")
    pos = float_array(positive, op=op, name="positive")
    neg = float_array(negative, op=op, name="negative")
    if not a.shape == pos.shape == neg.shape:
        raise error(op, f"input, positive and negative must have one shape; got {tuple(a.shape)}, "
                        f"{tuple(pos.shape)}, {tuple(neg.shape)}")
    if distance_function is None:
        distance_function = pairwise_distance
    elif not callable(distance_function):
        raise TypeError(f"pdx.nn.functional.{op}: distance_function must be callable (x, y) -> distances; got "
                        f"{distance_function!r}")
    d_pos = jnp.asarray(distance_function(a, pos))
    d_neg = jnp.asarray(distance_function(a, neg))
    if swap:
        d_neg = jnp.minimum(d_neg, jnp.asarray(distance_function(pos, neg)))
    concrete = not isinstance(d_pos, jax.core.Tracer) and not isinstance(d_neg, jax.core.Tracer)
    if concrete and (bool(jnp.any(d_pos < 0)) or bool(jnp.any(d_neg < 0))):
        raise error(op, "distance_function returned negative distances; it must return values >= 0")
    return reduce(jnp.maximum(d_pos - d_neg + margin, 0.0), reduction)


@compiled("logits", "label")
def margin_cross_entropy(logits, label, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0, group=None,
                         return_softmax=False, reduction="mean"):
    """Combined angular-margin softmax loss (ArcFace / CosFace / SphereFace), single device.

    The target logit cos(theta) becomes cos(margin1 * theta + margin2) - margin3,
    all logits are multiplied by `scale`, then softmax cross entropy. pdx runs
    the single-device case (Paddle's `nranks == 1`); for a model-parallel class
    split use pdx.parallel instead of `group`.

    Args:
      logits: [N, C] cosine similarities in [-1, 1].
      label: [N] (or [N, 1]) int classes.
      margin1, margin2, margin3: the angular, additive-angle and additive-cosine margins.
      scale: the logit scale s.
      group: must be None or False (single device).
      return_softmax: also return the softmax of the margin logits.
      reduction: 'mean', 'sum' or None/'none' ([N, 1]).

    Returns:
      The loss (and the [N, C] softmax if requested).

    Example:
      >>> F.margin_cross_entropy(jnp.full((2, 4), 0.3), jnp.array([0, 2]), reduction=None).shape
      (2, 1)
    """
    op = "margin_cross_entropy"
    if reduction is None:
        reduction = "none"
    check_reduction(reduction, op=op)
    if group not in (None, False):
        raise error(op, f"group={group!r} is not supported: pdx runs margin_cross_entropy on one device "
                        "(shard the classes with pdx.parallel instead)")
    x = float_array(logits, op=op, name="logits")
    if x.ndim < 1 or x.shape[-1] == 0:
        raise error(op, f"logits must be [N, C] with C > 0; got logits.shape={tuple(x.shape)}")
    if x.ndim != 2:
        raise error(op, f"logits must be [N, C]; got logits.shape={tuple(x.shape)}")
    y = _class_labels(x, label, op=op)
    onehot = jax.nn.one_hot(y, x.shape[1], dtype=bool)
    theta = jnp.arccos(jnp.clip(x, -1.0, 1.0))
    with_margin = jnp.cos(margin1 * theta + margin2) - margin3
    z = scale * jnp.where(onehot, with_margin, x)
    logp = jax.nn.log_softmax(z, axis=1)
    loss = -jnp.sum(jnp.where(onehot, logp, 0.0), axis=1, keepdims=True)
    loss = reduce(loss, reduction)
    return (loss, jnp.exp(logp)) if return_softmax else loss


@compiled("anchor", "positive", "labels")
def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """N-pair loss: softmax cross entropy over anchor-positive similarities plus an L2 penalty.

    Rows with equal labels are all positives of each other (the soft target is
    spread evenly over them); the L2 term is 0.25 * l2_reg * (mean |a|^2 + mean |p|^2).

    Args:
      anchor: [N, D] anchor embeddings.
      positive: [N, D] positive embeddings.
      labels: [N] (or [N, 1]) class labels (int or float).
      l2_reg: weight of the L2 penalty.

    Returns:
      The scalar loss.

    Example:
      >>> F.npair_loss(jnp.ones((3, 2)), jnp.ones((3, 2)), jnp.array([0, 1, 2])).shape
      ()
    """
    op = "npair_loss"
    a = float_array(anchor, op=op, name="anchor")
    p = float_array(positive, op=op, name="positive")
    y = array(labels, op=op, name="labels")
    if a.size == 0 or p.size == 0:
        raise error(op, f"anchor and positive must be non-empty; got {tuple(a.shape)}, {tuple(p.shape)}")
    if a.ndim != 2 or p.shape != a.shape:
        raise error(op, f"anchor and positive must both be [N, D]; got {tuple(a.shape)}, {tuple(p.shape)}")
    if y.size != a.shape[0]:
        raise error(op, f"labels must hold N={a.shape[0]} values; got labels.shape={tuple(y.shape)}")
    y = y.reshape(-1)
    same = (y[:, None] == y[None, :]).astype(a.dtype)
    target = same / jnp.sum(same, axis=1, keepdims=True)
    l2 = (jnp.mean(jnp.sum(a * a, 1)) + jnp.mean(jnp.sum(p * p, 1))) * 0.25 * l2_reg
    logp = jax.nn.log_softmax(a @ p.T, axis=1)
    row_ce = -jnp.sum(target * logp, axis=1, keepdims=True)  # (N, 1)
    # Paddle weights each row's soft cross entropy by the target matrix and sums over rows.
    return l2 + jnp.mean(jnp.sum(target * row_ce, axis=0))
