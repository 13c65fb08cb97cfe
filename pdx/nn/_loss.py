"""Loss layers (Paddle's `paddle.nn.*Loss`): stateless wrappers over `pdx.nn.functional`.

Each layer validates its options at construction (an unknown `reduction`
fails there, naming the layer), stores them under Paddle's attribute names and
calls the functional op in `forward`; like Paddle's, their repr shows no
options. Tensor options (`weight`, `pos_weight`) are kept as plain arrays:
like Paddle, they are not parameters and do not appear in `state_dict`. The layers with parameters (HSigmoidLoss,
AdaptiveLogSoftmaxWithLoss) live in `_loss_tree.py`, CTCLoss and RNNTLoss in
`_loss_sequence.py`.
"""

from __future__ import annotations

import pdx.nn.functional as F
from pdx.nn._common import layer_error
from pdx.nn._layer import Layer
from pdx._args import as_array

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "GaussianNLLLoss",
           "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss",
           "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss"]

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(layer: str, reduction, allowed=_REDUCTIONS) -> str:
    if reduction not in allowed:
        raise layer_error(layer, f"reduction={reduction!r} is not supported; use one of {list(allowed)}")
    return reduction


def _optional_tensor(value, layer: str, name: str):
    return None if value is None else as_array(value, name=name, op=f"nn.{layer}")


class CrossEntropyLoss(Layer):
    """Softmax cross entropy with hard or soft labels (Paddle's `nn.CrossEntropyLoss`).

    Args:
      weight: optional [C] class weights.
      ignore_index: hard-label value that contributes no loss.
      reduction: 'mean', 'sum' or 'none' (Paddle's mean rule, see `F.cross_entropy`).
      soft_label: labels are distributions over the classes.
      axis: the class axis.
      use_softmax: apply softmax to the input (False: input holds probabilities).
      label_smoothing: mix hard labels with the uniform distribution.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused (no parameters).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(float(pdx.nn.CrossEntropyLoss()(jnp.zeros((2, 4)), jnp.array([1, 3]))), 4)
      1.3863
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                 use_softmax=True, label_smoothing=0.0, name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("CrossEntropyLoss", reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise layer_error("CrossEntropyLoss", f"label_smoothing must be in [0, 1]; got {label_smoothing}")
        self.weight = _optional_tensor(weight, "CrossEntropyLoss", "weight")
        self.ignore_index = ignore_index
        self.soft_label = soft_label
        self.axis = axis
        self.use_softmax = use_softmax
        self.label_smoothing = label_smoothing
        self.name = name

    def forward(self, input, label):  # noqa: A002  (Paddle's argument name)
        return F.cross_entropy(input, label, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, soft_label=self.soft_label, axis=self.axis,
                               use_softmax=self.use_softmax, label_smoothing=self.label_smoothing)


class NLLLoss(Layer):
    """Negative log likelihood of log-probabilities [N, C, *] (Paddle's `nn.NLLLoss`).

    Args:
      weight: optional [C] class weights.
      ignore_index: label value with no loss.
      reduction: 'mean' (divides by the summed weights of kept labels), 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(float(pdx.nn.NLLLoss()(jnp.log(jnp.full((2, 4), 0.25)), jnp.array([1, 3]))), 4)
      1.3863
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("NLLLoss", reduction)
        self.weight = _optional_tensor(weight, "NLLLoss", "weight")
        self.ignore_index = ignore_index
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.nll_loss(input, label, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(Layer):
    """Mean squared error (Paddle's `nn.MSELoss`).

    Args:
      reduction: 'mean', 'sum' or 'none'.
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.MSELoss()(jnp.array([1.0, 3.0]), jnp.zeros(2)))
      5.0
    """

    def __init__(self, reduction="mean", *, rngs=None):
        super().__init__()
        self.reduction = _reduction("MSELoss", reduction)

    def forward(self, input, label):  # noqa: A002
        return F.mse_loss(input, label, reduction=self.reduction)


class L1Loss(Layer):
    """Mean absolute error (Paddle's `nn.L1Loss`).

    Args:
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.L1Loss()(jnp.array([1.0, -3.0]), jnp.zeros(2)))
      2.0
    """

    def __init__(self, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("L1Loss", reduction)
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.l1_loss(input, label, reduction=self.reduction)


class SmoothL1Loss(Layer):
    """Huber loss: quadratic below `delta`, linear above (Paddle's `nn.SmoothL1Loss`; `HuberLoss` is the same class).

    Args:
      reduction: 'mean', 'sum' or 'none'.
      delta: the switch point.
      is_huber: False divides the loss by delta.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.SmoothL1Loss()(jnp.array([0.5, 3.0]), jnp.zeros(2)))
      1.3125
    """

    def __init__(self, reduction="mean", delta=1.0, is_huber=True, name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("SmoothL1Loss", reduction)
        self.delta = delta
        self.is_huber = is_huber
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.smooth_l1_loss(input, label, reduction=self.reduction, delta=self.delta, is_huber=self.is_huber)


HuberLoss = SmoothL1Loss


class BCELoss(Layer):
    """Binary cross entropy on probabilities (Paddle's `nn.BCELoss`).

    Args:
      weight: optional elementwise weight (broadcast against the loss).
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(float(pdx.nn.BCELoss()(jnp.array([0.5]), jnp.array([1.0]))), 4)
      0.6931
    """

    def __init__(self, weight=None, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("BCELoss", reduction)
        self.weight = _optional_tensor(weight, "BCELoss", "weight")
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.binary_cross_entropy(input, label, self.weight, self.reduction)


class BCEWithLogitsLoss(Layer):
    """Sigmoid + binary cross entropy from logits (Paddle's `nn.BCEWithLogitsLoss`).

    Args:
      weight: optional elementwise weight.
      reduction: 'mean', 'sum' or 'none'.
      pos_weight: optional weight of the positive term, per class (last dim).
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(float(pdx.nn.BCEWithLogitsLoss()(jnp.array([0.0]), jnp.array([1.0]))), 4)
      0.6931
    """

    def __init__(self, weight=None, reduction="mean", pos_weight=None, name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("BCEWithLogitsLoss", reduction)
        self.weight = _optional_tensor(weight, "BCEWithLogitsLoss", "weight")
        self.pos_weight = _optional_tensor(pos_weight, "BCEWithLogitsLoss", "pos_weight")
        self.name = name

    def forward(self, logit, label):
        return F.binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction, self.pos_weight)


class KLDivLoss(Layer):
    """Kullback-Leibler divergence with log-probability inputs (Paddle's `nn.KLDivLoss`).

    Args:
      reduction: 'mean', 'batchmean', 'sum' or 'none'.
      log_target: the label is given as log-probabilities.
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.KLDivLoss()(jnp.log(jnp.array([0.5, 0.5])), jnp.array([0.5, 0.5])))
      0.0
    """

    def __init__(self, reduction="mean", log_target=False, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("KLDivLoss", reduction, ("mean", "batchmean", "sum", "none"))
        self.log_target = log_target

    def forward(self, input, label):  # noqa: A002
        return F.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(Layer):
    """relu(-label * (input - other) + margin) (Paddle's `nn.MarginRankingLoss`).

    Args:
      margin: required score gap.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.MarginRankingLoss()(jnp.array([1.0]), jnp.array([2.0]), jnp.array([1.0])))
      1.0
    """

    def __init__(self, margin=0.0, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("MarginRankingLoss", reduction)
        self.margin = margin
        self.name = name

    def forward(self, input, other, label):  # noqa: A002
        return F.margin_ranking_loss(input, other, label, self.margin, self.reduction)


class CosineEmbeddingLoss(Layer):
    """1 - cos for similar pairs, relu(cos - margin) for dissimilar ones (Paddle's `nn.CosineEmbeddingLoss`).

    Args:
      margin: in [-1, 1].
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.CosineEmbeddingLoss()(jnp.ones((1, 2)), jnp.ones((1, 2)), jnp.array([1])))
      0.0
    """

    def __init__(self, margin=0, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        if not -1 <= margin <= 1:
            raise layer_error("CosineEmbeddingLoss", f"margin must be in [-1, 1]; got margin={margin}")
        self.reduction = _reduction("CosineEmbeddingLoss", reduction)
        self.margin = margin
        self.name = name

    def forward(self, input1, input2, label):
        return F.cosine_embedding_loss(input1, input2, label, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(Layer):
    """input for label 1, relu(margin - input) for label -1 (Paddle's `nn.HingeEmbeddingLoss`).

    Args:
      margin: margin for label -1.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(float(pdx.nn.HingeEmbeddingLoss()(jnp.array([0.3, 0.2]), jnp.array([1.0, -1.0]))), 2)
      0.55
    """

    def __init__(self, margin=1.0, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("HingeEmbeddingLoss", reduction)
        self.margin = margin
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.hinge_embedding_loss(input, label, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(Layer):
    """relu(d(a, p) - d(a, n) + margin) with the p-norm distance (Paddle's `nn.TripletMarginLoss`).

    Args:
      margin: required gap (>= 0).
      p: norm order.
      epsilon: added to differences.
      swap: also use d(p, n) when it is smaller.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.TripletMarginLoss()(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.ones((2, 3))).shape
      ()
    """

    def __init__(self, margin=1.0, p=2.0, epsilon=1e-06, swap=False, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        if margin < 0:
            raise layer_error("TripletMarginLoss", f"margin must be >= 0; got margin={margin}")
        self.reduction = _reduction("TripletMarginLoss", reduction)
        self.margin = margin
        self.p = p
        self.epsilon = epsilon
        self.swap = swap
        self.name = name

    def forward(self, input, positive, negative):  # noqa: A002
        return F.triplet_margin_loss(input, positive, negative, margin=self.margin, p=self.p, epsilon=self.epsilon,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(Layer):
    """Triplet margin loss with any distance function (Paddle's `nn.TripletMarginWithDistanceLoss`).

    Differs from Paddle 3.3.1, whose layer never passes `distance_function` on
    (it always uses the Euclidean distance): pdx uses the function given.

    Args:
      distance_function: callable (x, y) -> [N] distances; default Euclidean.
      margin: required gap (>= 0).
      swap: also use d(p, n) when it is smaller.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.TripletMarginWithDistanceLoss()(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.ones((2, 3))).shape
      ()
    """

    def __init__(self, distance_function=None, margin=1.0, swap=False, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        if margin < 0:
            raise layer_error("TripletMarginWithDistanceLoss", f"margin must be >= 0; got margin={margin}")
        if distance_function is not None and not callable(distance_function):
            raise TypeError(f"pdx.nn.TripletMarginWithDistanceLoss: distance_function must be callable; got "
                            f"{distance_function!r}")
        self.reduction = _reduction("TripletMarginWithDistanceLoss", reduction)
        self.distance_function = distance_function
        self.margin = margin
        self.swap = swap
        self.name = name

    def forward(self, input, positive, negative):  # noqa: A002
        return F.triplet_margin_with_distance_loss(input, positive, negative, self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)


class MultiLabelSoftMarginLoss(Layer):
    """Per-sample mean of binary logistic losses over classes (Paddle's `nn.MultiLabelSoftMarginLoss`).

    Args:
      weight: optional elementwise weight.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.MultiLabelSoftMarginLoss(reduction="none")(jnp.zeros((2, 3)), jnp.ones((2, 3))).shape
      (2,)
    """

    def __init__(self, weight=None, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("MultiLabelSoftMarginLoss", reduction)
        self.weight = _optional_tensor(weight, "MultiLabelSoftMarginLoss", "weight")
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.multi_label_soft_margin_loss(input, label, weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(Layer):
    """Multi-label hinge loss with -1-padded target lists (Paddle's `nn.MultiLabelMarginLoss`).

    Args:
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> loss = pdx.nn.MultiLabelMarginLoss()(jnp.array([[0.1, 0.2, 0.4, 0.8]]), jnp.array([[3, 0, -1, 1]]))
      >>> round(float(loss), 4)
      0.85
    """

    def __init__(self, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("MultiLabelMarginLoss", reduction)
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.multi_label_margin_loss(input, label, reduction=self.reduction)


class MultiMarginLoss(Layer):
    """Multi-class hinge loss (Paddle's `nn.MultiMarginLoss`).

    Args:
      p: the exponent.
      margin: the required score gap.
      weight: optional [C] per-class weight.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(float(pdx.nn.MultiMarginLoss()(jnp.array([[0.1, 0.2, 0.4]]), jnp.array([2]))), 4)
      0.5
    """

    def __init__(self, p=1, margin=1.0, weight=None, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("MultiMarginLoss", reduction)
        self.p = p
        self.margin = margin
        self.weight = _optional_tensor(weight, "MultiMarginLoss", "weight")
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.multi_margin_loss(input, label, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class SoftMarginLoss(Layer):
    """log(1 + exp(-label * input)) (Paddle's `nn.SoftMarginLoss`).

    Args:
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(float(pdx.nn.SoftMarginLoss()(jnp.array([0.0]), jnp.array([1.0]))), 4)
      0.6931
    """

    def __init__(self, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("SoftMarginLoss", reduction)
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.soft_margin_loss(input, label, self.reduction)


class PoissonNLLLoss(Layer):
    """Poisson negative log likelihood (Paddle's `nn.PoissonNLLLoss`).

    Args:
      log_input: the input is a log-rate.
      full: add the Stirling term.
      epsilon: added inside the log when not log_input (> 0).
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.PoissonNLLLoss()(jnp.zeros(3), jnp.ones(3)))
      1.0
    """

    def __init__(self, log_input=True, full=False, epsilon=1e-08, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        if epsilon <= 0:
            raise layer_error("PoissonNLLLoss", f"epsilon must be > 0; got epsilon={epsilon}")
        self.reduction = _reduction("PoissonNLLLoss", reduction)
        self.log_input = log_input
        self.full = full
        self.epsilon = epsilon
        self.name = name

    def forward(self, input, label):  # noqa: A002
        return F.poisson_nll_loss(input, label, log_input=self.log_input, full=self.full, epsilon=self.epsilon,
                                  reduction=self.reduction)


class GaussianNLLLoss(Layer):
    """Gaussian negative log likelihood with predicted variances (Paddle's `nn.GaussianNLLLoss`).

    Unlike Paddle 3.3.1, the variance receives a gradient (see `F.gaussian_nll_loss`).

    Args:
      full: add the constant 0.5 * log(2 pi).
      epsilon: the variance floor.
      reduction: 'mean', 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> float(pdx.nn.GaussianNLLLoss()(jnp.zeros(2), jnp.zeros(2), jnp.ones(2)))
      0.0
    """

    def __init__(self, full=False, epsilon=1e-06, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("GaussianNLLLoss", reduction)
        self.full = full
        self.epsilon = epsilon
        self.name = name

    def forward(self, input, label, variance):  # noqa: A002
        return F.gaussian_nll_loss(input, label, variance, self.full, self.epsilon, self.reduction)
