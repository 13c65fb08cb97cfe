"""Loss functions with Paddle 3.x semantics, including its reduction quirks.

Notable Paddle behaviours kept on purpose (each verified against paddle):
* `cross_entropy(reduction='mean')` with hard labels divides by the number of
  non-ignored labels (or their summed class weights) only when
  `ignore_index >= 0` or `weight` is given; with the default ignore_index=-100
  and no weight it is the plain mean over all positions, ignored ones
  counting as zero loss.
* `reduction='none'` keeps a size-1 class axis when the label had one (and for
  soft labels / label smoothing); a label without the class axis gives a loss
  without it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from pdx import kernels as K
from pdx._args import normalize_axis
from pdx.nn.functional._args import array, check_reduction, compiled, error, float_array, reduce

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
    "hinge_embedding_loss", "kl_div", "l1_loss", "log_loss", "margin_ranking_loss", "mse_loss",
    "multi_label_soft_margin_loss", "nll_loss", "pairwise_distance", "poisson_nll_loss", "sigmoid_focal_loss",
    "smooth_l1_loss", "soft_margin_loss", "softmax_with_cross_entropy", "square_error_cost",
    "triplet_margin_loss",
]


def _pair(input, label, op, names=("input", "label")):
    a = float_array(input, op=op, name=names[0])
    b = array(label, op=op, name=names[1]).astype(a.dtype)
    try:
        jnp.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise error(op, f"{names[0]}.shape={tuple(a.shape)} and {names[1]}.shape={tuple(b.shape)} "
                        "do not broadcast") from None
    return a, b


# ----------------------------------------------------------------------------- cross entropy

def _class_labels(input, label, ax, op):
    """Validate hard labels -> (labels with a size-1 class axis, whether the axis was added)."""
    if not jnp.issubdtype(label.dtype, jnp.integer):
        raise TypeError(f"pdx.nn.functional.{op}: hard labels must be integers; got label.dtype={label.dtype} "
                        "(pass soft_label=True for probability labels)")
    if label.ndim == input.ndim - 1:
        expected = input.shape[:ax] + input.shape[ax + 1:]
        if tuple(label.shape) != expected:
            raise error(op, f"label.shape={tuple(label.shape)} must equal input.shape={tuple(input.shape)} without "
                            f"the class axis {ax}, i.e. {expected}")
        return jnp.expand_dims(label, ax), True
    expected = input.shape[:ax] + (1,) + input.shape[ax + 1:]
    if label.ndim != input.ndim or tuple(label.shape) != expected:
        raise error(op, f"label.shape={tuple(label.shape)} does not fit input.shape={tuple(input.shape)}: hard labels "
                        f"need shape {input.shape[:ax] + input.shape[ax + 1:]} or {expected} "
                        f"(class axis {ax}); soft labels need soft_label=True and shape {tuple(input.shape)}")
    return label, False


def _log_probs(input, ax, use_softmax):
    return jax.nn.log_softmax(input, axis=ax) if use_softmax else jnp.log(input)


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  use_softmax=True, label_smoothing=0.0, name=None):
    """Softmax cross entropy (Paddle's `F.cross_entropy`), hard or soft labels.

    Args:
      input: logits (or probabilities if use_softmax=False), classes on `axis`.
      label: hard int labels shaped like input without the class axis (or with
        size 1 there), or soft labels shaped like input (soft_label=True).
      weight: optional [C] class weights.
      ignore_index: hard-label value that contributes no loss.
      reduction: 'mean', 'sum' or 'none' (see the module notes for Paddle's mean).
      soft_label: labels are distributions.
      axis: the class axis.
      use_softmax: apply log_softmax to input (False: input holds probabilities).
      label_smoothing: mix hard labels with the uniform distribution (implies soft labels).
      name: ignored.

    Returns:
      The reduced loss, or per-position losses for reduction='none'.

    Example:
      >>> loss = F.cross_entropy(jnp.zeros((2, 4)), jnp.array([1, 3]))
      >>> round(float(loss), 4)
      1.3863
    """
    return _cross_entropy(input, label, weight, ignore_index, reduction, soft_label, axis, use_softmax,
                          label_smoothing, K.get_impl() or "auto")


@compiled("input", "label", "weight")
def _cross_entropy(input, label, weight, ignore_index, reduction, soft_label, axis, use_softmax, label_smoothing,
                   impl):
    """Validation and math of `cross_entropy`; hard-label softmax calls without class weights use the
    fused pdx.kernels.softmax_cross_entropy where the dispatch picks it."""
    op = "cross_entropy"
    check_reduction(reduction, op=op)
    if ignore_index > 0 and soft_label:
        raise error(op, f"ignore_index={ignore_index} is not supported with soft_label=True; leave it at -100")
    input = float_array(input, op=op, name="input")
    label = array(label, op=op, name="label")
    if input.ndim == 0:
        raise error(op, "input must have at least one dim (the classes)")
    ax = normalize_axis(axis, input.ndim, op=f"nn.functional.{op}")
    classes = input.shape[ax]
    if weight is not None:
        weight = array(weight, op=op, name="weight").astype(input.dtype).reshape(-1)
        if weight.shape[0] != classes:
            raise error(op, f"weight.shape={tuple(weight.shape)} must have one entry per class ({classes})")
    if not 0.0 <= label_smoothing <= 1.0:
        raise error(op, f"label_smoothing must be in [0, 1]; got {label_smoothing}")
    if label_smoothing > 0 and not soft_label:
        hard, _ = _class_labels(input, label, ax, op)
        onehot = jax.nn.one_hot(jnp.squeeze(hard, ax), classes, dtype=input.dtype, axis=ax)
        label = (1 - label_smoothing) * onehot + label_smoothing / classes
        label = jnp.where(jnp.expand_dims(jnp.squeeze(hard, ax) == ignore_index, ax), 0, label)
        soft_label = True
    if soft_label:
        logp = _log_probs(input, ax, use_softmax)
        label = label.astype(input.dtype)
        if label.shape != input.shape:
            raise error(op, f"soft labels need label.shape == input.shape; got label.shape={tuple(label.shape)}, "
                            f"input.shape={tuple(input.shape)}")
        loss = -jnp.sum(label * logp, axis=ax, keepdims=True)
        w = None
        if weight is not None:
            w = jnp.sum(label * jnp.reshape(weight, [-1 if i == ax else 1 for i in range(input.ndim)]),
                        axis=ax, keepdims=True)
            loss = loss * w
        if reduction != "mean":
            return reduce(loss, reduction)
        if ignore_index >= 0:
            # Paddle compares the soft label values themselves with ignore_index here.
            mask = (label != ignore_index).astype(loss.dtype)
            denom = jnp.sum(mask if w is None else mask * w)
            return jnp.sum(loss) / jnp.where(denom == 0, 1, denom)
        if w is not None:
            denom = jnp.sum(w)
            return jnp.sum(loss) / jnp.where(denom == 0, 1, denom)
        return jnp.mean(loss)
    hard, squeeze = _class_labels(input, label, ax, op)
    valid = hard != ignore_index
    safe = jnp.where(valid, hard, 0).astype(jnp.int32)
    fused = use_softmax and weight is None and input.dtype in (jnp.float32, jnp.bfloat16, jnp.float16) \
        and input.size > 0
    logp = None if use_softmax else _log_probs(input, ax, use_softmax)  # None: softmax inside the loss
    args = (input, hard, ax, logp, safe, valid, ignore_index, impl)
    loss = _HARD_LABEL_LOSS(impl, *args) if fused else _hard_label_loss(*args)
    w = None
    if weight is not None:
        w = jnp.where(valid, weight[safe], 0)
        loss = loss * w
    if reduction == "sum":
        return jnp.sum(loss)
    if reduction == "mean":
        if ignore_index >= 0:
            denom = jnp.sum(valid.astype(loss.dtype)) if w is None else jnp.sum(w)
            return jnp.sum(loss) / jnp.where(denom == 0, 1, denom)
        if w is not None:
            denom = jnp.sum(w)
            return jnp.sum(loss) / jnp.where(denom == 0, 1, denom)
        return jnp.mean(loss)
    return jnp.squeeze(loss, ax) if squeeze else loss


def _hard_label_loss_kernel(input, hard, ax, logp, safe, valid, ignore_index, impl):  # noqa: A002
    per_token = K.softmax_cross_entropy(jnp.moveaxis(input, ax, -1), jnp.squeeze(hard, ax),
                                        ignore_index=ignore_index, impl=impl)
    return jnp.expand_dims(per_token, ax).astype(input.dtype)


def _hard_label_loss(input, hard, ax, logp, safe, valid, ignore_index, impl):  # noqa: A002
    nll = _softmax_nll(input, safe, ax) if logp is None else -jnp.take_along_axis(logp, safe, axis=ax)
    return jnp.where(valid, nll, 0)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _softmax_nll(logits, label, ax):
    """-log_softmax(logits)[label] along `ax` (keepdims), at least float32 inside.

    Its derivative is (softmax - onehot(label)) . dlogits: reverse mode turns
    that into one elementwise pass instead of log_softmax's backward plus a
    scatter into zeros (GPT-mini's step: one fused loop instead of four passes
    over the [tokens, vocab] logits). Higher-order derivatives still work.

    >>> float(_softmax_nll(jnp.zeros((1, 4)), jnp.array([[2]]), 1)[0, 0]) == float(jnp.log(4.0))
    True
    """
    return _softmax_nll_parts(logits, label, ax)[0]


def _softmax_nll_parts(logits, label, ax):
    z = logits.astype(jnp.promote_types(logits.dtype, jnp.float32))
    top = jnp.max(z, axis=ax, keepdims=True)
    lse = top + jnp.log(jnp.sum(jnp.exp(z - top), axis=ax, keepdims=True))
    loss = lse - jnp.take_along_axis(z, label, axis=ax)
    return loss.astype(logits.dtype), z, lse


@_softmax_nll.defjvp
def _softmax_nll_jvp(ax, primals, tangents):
    logits, label = primals
    loss, z, lse = _softmax_nll_parts(logits, label, ax)
    classes = jax.lax.broadcasted_iota(label.dtype, z.shape, ax % z.ndim)
    slope = (jnp.exp(z - lse) - (classes == label).astype(z.dtype)).astype(logits.dtype)
    return loss, jnp.sum(slope * tangents[0], axis=ax, keepdims=True)


# Per-position loss of hard labels: the fused kernel where the dispatch picks it.
_HARD_LABEL_LOSS = K.Op("softmax_cross_entropy", {"pallas": _hard_label_loss_kernel, "xla": _hard_label_loss})


@compiled("logits", "label")
def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):
    """Legacy softmax cross entropy: per-position loss with a size-1 class axis.

    Args:
      logits: classes on `axis`.
      label: hard labels with size 1 on `axis` (same rank as logits), or soft labels.
      soft_label: labels are distributions.
      ignore_index: hard-label value with zero loss.
      numeric_stable_mode: ignored (always stable).
      return_softmax: also return softmax(logits).
      axis: the class axis.

    Returns:
      loss (same rank as logits, size 1 on axis), and the softmax if requested.

    Example:
      >>> F.softmax_with_cross_entropy(jnp.zeros((2, 4)), jnp.array([[1], [3]])).shape
      (2, 1)
    """
    op = "softmax_with_cross_entropy"
    logits = float_array(logits, op=op, name="logits")
    label = array(label, op=op, name="label")
    ax = normalize_axis(axis, logits.ndim, op=f"nn.functional.{op}")
    if label.ndim != logits.ndim:
        raise error(op, f"label must have the rank of logits (size 1 on axis {ax} for hard labels); got "
                        f"label.shape={tuple(label.shape)}, logits.shape={tuple(logits.shape)}")
    loss = cross_entropy(logits, label, ignore_index=ignore_index, reduction="none", soft_label=soft_label, axis=ax)
    if return_softmax:
        return loss, jax.nn.softmax(logits, axis=ax)
    return loss


@compiled("input", "label", "weight")
def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):
    """Negative log likelihood of log-probabilities `input` [N, C, *] at int `label` [N, *].

    'mean' divides by the summed weights of non-ignored labels.

    Args:
      input: log-probabilities [N, C, *].
      label: int labels [N, *].
      weight: optional [C] class weights.
      ignore_index: label value with no loss.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> round(float(F.nll_loss(jnp.log(jnp.full((2, 4), 0.25)), jnp.array([1, 3]))), 4)
      1.3863
    """
    op = "nll_loss"
    check_reduction(reduction, op=op)
    input = float_array(input, op=op, name="input")
    label = array(label, op=op, name="label")
    if input.ndim < 2:
        raise error(op, f"input must be [N, C, *]; got input.shape={tuple(input.shape)}")
    expected = input.shape[:1] + input.shape[2:]
    if label.ndim == input.ndim and label.shape[1] == 1 and label.shape[:1] + label.shape[2:] == expected:
        label = jnp.squeeze(label, 1)  # Paddle also takes [N, 1, *] labels
    if tuple(label.shape) != expected:
        raise error(op, f"label.shape={tuple(label.shape)} must be input.shape without the class dim 1, "
                        f"i.e. {expected} (or with size 1 there)")
    if not jnp.issubdtype(label.dtype, jnp.integer):
        raise TypeError(f"pdx.nn.functional.{op}: label must be integer; got dtype {label.dtype}")
    valid = label != ignore_index
    safe = jnp.where(valid, label, 0).astype(jnp.int32)
    picked = jnp.squeeze(jnp.take_along_axis(input, jnp.expand_dims(safe, 1), axis=1), 1)
    if weight is not None:
        weight = array(weight, op=op, name="weight").astype(input.dtype).reshape(-1)
        if weight.shape[0] != input.shape[1]:
            raise error(op, f"weight.shape={tuple(weight.shape)} must have one entry per class ({input.shape[1]})")
        w = jnp.where(valid, weight[safe], 0)
    else:
        w = valid.astype(input.dtype)
    loss = -picked * w
    if reduction == "mean":
        return jnp.sum(loss) / jnp.sum(w)
    return reduce(loss, reduction)


# ----------------------------------------------------------------------------- regression / binary

@compiled("input", "label")
def mse_loss(input, label, reduction="mean", name=None):
    """(input - label) ** 2, reduced.

    Args:
      input: predictions.
      label: targets, broadcastable to input.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(F.mse_loss(jnp.array([1.0, 3.0]), jnp.array([0.0, 0.0])))
      5.0
    """
    check_reduction(reduction, op="mse_loss")
    a, b = _pair(input, label, "mse_loss")
    return reduce(jnp.square(a - b), reduction)


@compiled("input", "label")
def square_error_cost(input, label):
    """Elementwise (input - label) ** 2.

    Args:
      input: predictions.
      label: targets, broadcastable to input.

    Returns:
      The elementwise loss, shaped like the broadcast inputs.

    Example:
      >>> F.square_error_cost(jnp.array([2.0]), jnp.array([0.0])).tolist()
      [4.0]
    """
    a, b = _pair(input, label, "square_error_cost")
    return jnp.square(a - b)


@compiled("input", "label")
def l1_loss(input, label, reduction="mean", name=None):
    """|input - label|, reduced.

    Args:
      input: predictions.
      label: targets, broadcastable to input.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(F.l1_loss(jnp.array([1.0, -3.0]), jnp.array([0.0, 0.0])))
      2.0
    """
    check_reduction(reduction, op="l1_loss")
    a, b = _pair(input, label, "l1_loss")
    return reduce(jnp.abs(a - b), reduction)


@compiled("input", "label")
def smooth_l1_loss(input, label, reduction="mean", delta=1.0, is_huber=True, name=None):
    """Huber loss: 0.5 r^2 for |r| <= delta, else delta (|r| - delta / 2); divided by delta if not is_huber.

    Args:
      input: predictions.
      label: targets, broadcastable to input.
      reduction: 'mean', 'sum' or 'none'.
      delta: the quadratic-to-linear switch point.
      is_huber: False divides the Huber loss by delta.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(F.smooth_l1_loss(jnp.array([0.5, 3.0]), jnp.array([0.0, 0.0])))
      1.3125
    """
    check_reduction(reduction, op="smooth_l1_loss")
    a, b = _pair(input, label, "smooth_l1_loss")
    r = jnp.abs(a - b)
    loss = jnp.where(r <= delta, 0.5 * r * r, delta * (r - 0.5 * delta))
    if not is_huber:
        loss = loss / delta
    return reduce(loss, reduction)


@compiled("input", "label", "weight")
def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):
    """-(y log p + (1 - y) log(1 - p)) on probabilities, logs clamped at -100 like Paddle.

    Args:
      input: probabilities in [0, 1].
      label: targets, same shape.
      weight: optional elementwise weight, broadcast against the loss.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> round(float(F.binary_cross_entropy(jnp.array([0.5]), jnp.array([1.0]))), 4)
      0.6931
    """
    op = "binary_cross_entropy"
    check_reduction(reduction, op=op)
    p, y = _pair(input, label, op)
    loss = -(y * jnp.maximum(jnp.log(p), -100.0) + (1 - y) * jnp.maximum(jnp.log1p(-p), -100.0))
    if weight is not None:
        loss = loss * array(weight, op=op, name="weight").astype(loss.dtype)
    return reduce(loss, reduction)


@compiled("logit", "label", "weight", "pos_weight")
def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None, name=None):
    """Sigmoid + binary cross entropy, computed stably from logits.

    Args:
      logit: logits.
      label: targets in [0, 1], same shape.
      weight: optional elementwise weight (broadcast).
      reduction: 'mean', 'sum' or 'none'.
      pos_weight: optional weight of the positive term, per class (broadcast on the last dim).
      name: ignored.

    Returns:
      The reduced loss.

    Example:
      >>> round(float(F.binary_cross_entropy_with_logits(jnp.array([0.0]), jnp.array([1.0]))), 4)
      0.6931
    """
    op = "binary_cross_entropy_with_logits"
    check_reduction(reduction, op=op)
    x, y = _pair(logit, label, op, names=("logit", "label"))
    pw = 1.0
    if pos_weight is not None:
        pw = 1 + (array(pos_weight, op=op, name="pos_weight").astype(x.dtype) - 1) * y
    loss = (1 - y) * x - pw * jax.nn.log_sigmoid(x)
    # Paddle's kernel gives zero loss where label == -100 (its fixed ignore value).
    loss = jnp.where(y == -100, 0, loss)
    if weight is not None:
        loss = loss * array(weight, op=op, name="weight").astype(loss.dtype)
    return reduce(loss, reduction)


@compiled("logit", "label", "normalizer")
def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum", name=None):
    """Focal loss on logits: alpha_t (1 - p_t)^gamma BCE, optionally divided by `normalizer`.

    Args:
      logit: logits.
      label: 0/1 targets.
      normalizer: optional divisor (e.g. number of positives).
      alpha: positive-class weight.
      gamma: focusing exponent.
      reduction: 'sum' (default), 'mean' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> F.sigmoid_focal_loss(jnp.zeros(2), jnp.array([0.0, 1.0])).shape
      ()
    """
    op = "sigmoid_focal_loss"
    check_reduction(reduction, op=op)
    x, y = _pair(logit, label, op, names=("logit", "label"))
    bce = (1 - y) * x - jax.nn.log_sigmoid(x)
    p = jax.nn.sigmoid(x)
    p_t = p * y + (1 - p) * (1 - y)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    loss = alpha_t * bce * (1 - p_t) ** gamma
    if normalizer is not None:
        loss = loss / array(normalizer, op=op, name="normalizer").astype(loss.dtype).reshape(-1)
    return reduce(loss, reduction)


@compiled("input", "label")
def log_loss(input, label, epsilon=0.0001, name=None):
    """-y log(p + eps) - (1 - y) log(1 - p + eps), elementwise.

    Args:
      input: probabilities.
      label: 0/1 targets, same shape.
      epsilon: added inside the logs.
      name: ignored (Paddle compatibility).

    Returns:
      The elementwise loss, shaped like the broadcast inputs.

    Example:
      >>> F.log_loss(jnp.array([[0.5]]), jnp.array([[1.0]])).shape
      (1, 1)
    """
    p, y = _pair(input, label, "log_loss")
    return -y * jnp.log(p + epsilon) - (1 - y) * jnp.log(1 - p + epsilon)


@compiled("input", "label")
def kl_div(input, label, reduction="mean", log_target=False, name=None):
    """KL divergence with `input` as log-probabilities: label * (log(label) - input).

    Args:
      input: log-probabilities.
      label: probabilities (or log-probabilities if log_target).
      reduction: 'mean' (over all elements), 'batchmean' (sum / batch), 'sum' or 'none'.
      log_target: label is given in log space.
      name: ignored.

    Returns:
      The reduced divergence.

    Example:
      >>> float(F.kl_div(jnp.log(jnp.array([0.5, 0.5])), jnp.array([0.5, 0.5])))
      0.0
    """
    op = "kl_div"
    if reduction not in ("mean", "batchmean", "sum", "none"):
        raise error(op, f"reduction={reduction!r} is not supported; use 'mean', 'batchmean', 'sum' or 'none'")
    x, t = _pair(input, label, op)
    if log_target:
        loss = jnp.exp(t) * (t - x)
    else:
        safe = jnp.where(t > 0, t, 1)
        loss = jnp.where(t > 0, t * (jnp.log(safe) - x), 0)
    if reduction == "batchmean":
        return jnp.sum(loss) / (x.shape[0] if x.ndim else 1)
    return reduce(loss, reduction)


@compiled("input", "other", "label")
def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None):
    """relu(-label * (input - other) + margin), reduced.

    Args:
      input: scores.
      other: scores to rank against.
      label: 1 / -1: which should rank higher.
      margin: required score gap.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(F.margin_ranking_loss(jnp.array([1.0]), jnp.array([2.0]), jnp.array([1.0])))
      1.0
    """
    op = "margin_ranking_loss"
    check_reduction(reduction, op=op)
    a, b = _pair(input, other, op, names=("input", "other"))
    y = array(label, op=op, name="label").astype(a.dtype)
    return reduce(jax.nn.relu((b - a) * y + margin), reduction)


@compiled("input", "label")
def soft_margin_loss(input, label, reduction="mean", name=None):
    """log(1 + exp(-label * input)), reduced.

    Args:
      input: scores.
      label: 1 / -1 targets.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> round(float(F.soft_margin_loss(jnp.array([0.0]), jnp.array([1.0]))), 4)
      0.6931
    """
    check_reduction(reduction, op="soft_margin_loss")
    x, y = _pair(input, label, "soft_margin_loss")
    return reduce(jnp.logaddexp(0.0, -y * x), reduction)


@compiled("input", "label")
def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None):
    """input where label == 1, relu(margin - input) where label == -1, reduced.

    Args:
      input: distances.
      label: 1 / -1 targets.
      margin: margin for label -1.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(F.hinge_embedding_loss(jnp.array([0.3, 0.2]), jnp.array([1.0, -1.0])))
      0.550000011920929
    """
    check_reduction(reduction, op="hinge_embedding_loss")
    x, y = _pair(input, label, "hinge_embedding_loss")
    loss = jnp.where(y == 1, x, 0) + jnp.where(y == -1, jax.nn.relu(margin - x), 0)
    return reduce(loss, reduction)


@compiled("input1", "input2", "label")
def cosine_embedding_loss(input1, input2, label, margin=0, reduction="mean", name=None):
    """1 - cos(x1, x2) for label 1, relu(cos - margin) for label -1, reduced.

    Args:
      input1: [N, D] or [D].
      input2: same shape as input1.
      label: [N] of 1 / -1.
      margin: margin for label -1.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(F.cosine_embedding_loss(jnp.ones((1, 2)), jnp.ones((1, 2)), jnp.array([1])))
      0.0
    """
    op = "cosine_embedding_loss"
    check_reduction(reduction, op=op)
    a = float_array(input1, op=op, name="input1")
    b = float_array(input2, op=op, name="input2")
    y = array(label, op=op, name="label")
    if a.shape != b.shape or a.ndim > 2 or y.ndim != 1:
        raise error(op, f"need input1/input2 of equal 1-D or 2-D shape and a 1-D label; got "
                        f"{tuple(a.shape)}, {tuple(b.shape)}, label {tuple(y.shape)}")
    cos = jnp.sum(a * b, -1) / jnp.sqrt((jnp.sum(a * a, -1) + 10e-12) * (jnp.sum(b * b, -1) + 10e-12))
    loss = jnp.where(y == 1, 1 - cos, 0) + jnp.where(y == -1, jnp.maximum(cos - margin, 0), 0)
    return reduce(loss, reduction)


@compiled("x", "y")
def pairwise_distance(x, y, p=2.0, epsilon=1e-06, keepdim=False, name=None):
    """p-norm of (x - y + epsilon) over the last axis.

    Args:
      x: [N, D] (or [D]).
      y: same shape as x.
      p: norm order.
      epsilon: added to x - y.
      keepdim: keep the reduced last dim.
      name: ignored (Paddle compatibility).

    Returns:
      The distances [N] (or [N, 1] with keepdim).

    Example:
      >>> round(float(F.pairwise_distance(jnp.array([3.0, 0.0]), jnp.array([0.0, 4.0]), epsilon=0.0)), 4)
      5.0
    """
    a, b = _pair(x, y, "pairwise_distance", names=("x", "y"))
    d = jnp.abs(a - b + epsilon)
    if p == float("inf"):
        out = jnp.max(d, axis=-1, keepdims=keepdim)
    elif p == float("-inf"):
        out = jnp.min(d, axis=-1, keepdims=keepdim)
    elif p == 0:
        out = jnp.sum((d != 0).astype(d.dtype), axis=-1, keepdims=keepdim)
    else:
        out = jnp.sum(d ** p, axis=-1, keepdims=keepdim) ** (1.0 / p)
    return out


@compiled("input", "positive", "negative")
def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-06, swap=False, reduction="mean",
                        name=None):
    """relu(d(a, p) - d(a, n) + margin) with pairwise_distance d, reduced.

    Args:
      input: anchors [N, D].
      positive: positives [N, D].
      negative: negatives [N, D].
      margin: required distance gap (>= 0).
      p: norm order.
      epsilon: added to differences.
      swap: also use the positive-negative distance.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> F.triplet_margin_loss(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.ones((2, 3))).shape
      ()
    """
    op = "triplet_margin_loss"
    check_reduction(reduction, op=op)
    if margin < 0:
        raise error(op, f"margin must be >= 0; got margin={margin}")
    a = float_array(input, op=op, name="input")
    pos = float_array(positive, op=op, name="positive")
    neg = float_array(negative, op=op, name="negative")
    if not a.shape == pos.shape == neg.shape:
        raise error(op, f"input, positive and negative must have one shape; got {tuple(a.shape)}, "
                        f"{tuple(pos.shape)}, {tuple(neg.shape)}")
    d_pos = pairwise_distance(a, pos, p, epsilon)
    d_neg = pairwise_distance(a, neg, p, epsilon)
    if swap:
        d_neg = jnp.minimum(d_neg, pairwise_distance(pos, neg, p, epsilon))
    return reduce(jnp.maximum(d_pos - d_neg + margin, 0.0), reduction)


@compiled("input", "label")
def poisson_nll_loss(input, label, log_input=True, full=False, epsilon=1e-08, reduction="mean", name=None):
    """Poisson negative log likelihood (optionally with the Stirling term).

    Args:
      input: rates (log-rates if log_input).
      label: counts.
      log_input: input is log-rate.
      full: add the Stirling term.
      epsilon: added inside log when not log_input.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> F.poisson_nll_loss(jnp.zeros(3), jnp.ones(3)).shape
      ()
    """
    op = "poisson_nll_loss"
    check_reduction(reduction, op=op)
    if epsilon <= 0:
        raise error(op, f"epsilon must be > 0; got epsilon={epsilon}")
    x, y = _pair(input, label, op)
    loss = jnp.exp(x) - y * x if log_input else x - y * jnp.log(x + epsilon)
    if full:
        safe = jnp.where(y > 1, y, 1)
        stirling = safe * jnp.log(safe) - safe + 0.5 * jnp.log(2 * jnp.pi * safe)
        loss = loss + jnp.where(y > 1, stirling, 0)
    return reduce(loss, reduction)


@compiled("input", "label", "weight")
def multi_label_soft_margin_loss(input, label, weight=None, reduction="mean", name=None):
    """Per-sample mean over classes of the binary logistic loss, reduced over samples.

    Args:
      input: [N, C] logits.
      label: [N, C] 0/1 targets.
      weight: optional elementwise weight, broadcast against the loss.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).

    Returns:
      The loss ([N] for reduction='none').

    Example:
      >>> F.multi_label_soft_margin_loss(jnp.zeros((2, 3)), jnp.ones((2, 3)), reduction="none").shape
      (2,)
    """
    op = "multi_label_soft_margin_loss"
    check_reduction(reduction, op=op)
    x, y = _pair(input, label, op)
    loss = -(y * jax.nn.log_sigmoid(x) + (1 - y) * jax.nn.log_sigmoid(-x))
    if weight is not None:
        loss = loss * array(weight, op=op, name="weight").astype(loss.dtype)
    return reduce(jnp.mean(loss, axis=-1), reduction)
