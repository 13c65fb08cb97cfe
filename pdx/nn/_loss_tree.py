"""Loss layers with parameters: HSigmoidLoss and AdaptiveLogSoftmaxWithLoss (Paddle's names and shapes)."""

from __future__ import annotations

import jax.numpy as jnp

import pdx.nn.functional as F
from pdx.nn import axes
from pdx._args import is_int
from pdx.nn._common import float_dtype, layer_error, value_of
from pdx.nn._container import LayerList
from pdx.nn._layer import Layer, as_rngs
from pdx.nn.functional._loss_tree import adaptive_full_log_prob

__all__ = ["AdaptiveLogSoftmaxWithLoss", "HSigmoidLoss"]


class HSigmoidLoss(Layer):
    """Hierarchical sigmoid loss with its node weights (Paddle's `nn.HSigmoidLoss`).

    Parameters: `weight` [num_classes - 1, feature_size] (XavierUniform) and
    `bias` [num_classes - 1, 1] (zeros); with `is_custom=True` both have
    num_classes rows and `forward` takes the path_table / path_code of a
    custom tree.

    Args:
      feature_size: the input feature size D.
      num_classes: number of classes (>= 2 for the default tree).
      weight_attr: None, a ParamAttr or an initializer for `weight`.
      bias_attr: as weight_attr for `bias`; False means no bias.
      is_custom: use a custom tree given to `forward`.
      is_sparse: accepted for compatibility (gradients are dense in JAX).
      name: ignored (Paddle compatibility).
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (else the global generator).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> loss = pdx.nn.HSigmoidLoss(3, 5)
      >>> loss(jnp.ones((2, 3)), jnp.array([0, 4])).shape, loss.weight.shape
      ((2, 1), (4, 3))
    """

    def __init__(self, feature_size, num_classes, weight_attr=None, bias_attr=None, is_custom=False,
                 is_sparse=False, name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        if not is_int(feature_size) or feature_size <= 0:
            raise layer_error("HSigmoidLoss", f"feature_size must be a positive int; got {feature_size!r}")
        if not is_int(num_classes) or (num_classes < 2 and not is_custom):
            raise layer_error("HSigmoidLoss", f"num_classes must be an int >= 2 with the default tree; got "
                                              f"num_classes={num_classes!r}")
        rows = num_classes if is_custom else num_classes - 1
        rngs = as_rngs(rngs)
        self.weight = self.create_parameter((rows, feature_size), attr=weight_attr, axis_names=(axes.VOCAB, axes.EMBED),
                                            rngs=rngs)
        self.bias = self.create_parameter((rows, 1), attr=bias_attr, is_bias=True, axis_names=(axes.VOCAB, None),
                                          rngs=rngs)
        self._feature_size = int(feature_size)
        self._num_classes = int(num_classes)
        self._is_custom = bool(is_custom)
        self._is_sparse = bool(is_sparse) and bool(is_custom)
        self._name = name

    def forward(self, input, label, path_table=None, path_code=None):  # noqa: A002
        if self._is_custom and (path_table is None or path_code is None):
            raise layer_error("HSigmoidLoss", "is_custom=True needs path_table and path_code in forward")
        return F.hsigmoid_loss(input, label, self._num_classes, value_of(self.weight), value_of(self.bias),
                               path_table=path_table, path_code=path_code)



class _TailProjection(Layer):
    """One cluster's two weights, indexable like Paddle's `[proj, out]` list (state names `0`, `1`)."""

    def __init__(self, proj, out):
        super().__init__()
        setattr(self, "0", proj)
        setattr(self, "1", out)

    def __getitem__(self, index):
        return getattr(self, str(index % 2 if isinstance(index, int) and -2 <= index < 2 else index))

    def __len__(self):
        return 2

    def __iter__(self):
        return iter((getattr(self, "0"), getattr(self, "1")))


class AdaptiveLogSoftmaxWithLoss(Layer):
    """Adaptive softmax for large vocabularies (Paddle's `nn.AdaptiveLogSoftmaxWithLoss`).

    Parameters, with Paddle's names and shapes: `head_weight` [in_features,
    cutoffs[0] + n_clusters], optional `head_bias` [cutoffs[0] + n_clusters]
    and per cluster i `tail_weights[i]` = [proj [in_features, in_features //
    div_value ** (i + 1)], out [hidden, cluster_size]]. Differs from Paddle
    3.3.1, which keeps tail_weights in a plain list so they are neither in its
    `state_dict` nor in `parameters()` (never trained): pdx registers them, as
    `tail_weights.<i>.0` / `tail_weights.<i>.1`.

    Args:
      in_features: input feature size.
      n_classes: number of classes.
      cutoffs: increasing cluster boundaries in [1, n_classes - 1].
      weight_attr: ParamAttr / initializer of every weight.
      bias_attr: ParamAttr / initializer of head_bias.
      div_value: each cluster's projection shrinks by this factor.
      head_bias: give the head a bias.
      name: ignored (Paddle compatibility).
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> asm = pdx.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7])
      >>> out, loss = asm(jnp.ones((3, 8)), jnp.array([0, 5, 9]))
      >>> out.shape, asm.log_prob(jnp.ones((3, 8))).shape
      ((3,), (3, 10))
    """

    def __init__(self, in_features, n_classes, cutoffs, weight_attr=None, bias_attr=None, div_value=4.0,
                 head_bias=False, name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        cutoffs = list(cutoffs)
        if (not cutoffs or any(not is_int(c) for c in cutoffs) or cutoffs != sorted(set(cutoffs))
                or cutoffs[0] <= 0 or cutoffs[-1] > n_classes - 1):
            raise layer_error("AdaptiveLogSoftmaxWithLoss", f"cutoffs must be unique increasing ints in "
                                                            f"[1, n_classes - 1 = {n_classes - 1}]; got {cutoffs!r}")
        rngs = as_rngs(rngs)
        self.in_features = int(in_features)
        self.n_classes = int(n_classes)
        self.cutoffs = [*(int(c) for c in cutoffs), self.n_classes]
        self.div_value = div_value
        self.is_head_bias = bool(head_bias)
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head_weight = self.create_parameter((self.in_features, self.head_size), attr=weight_attr,
                                                 axis_names=(axes.EMBED, axes.VOCAB), rngs=rngs)
        self.head_bias = self.create_parameter((self.head_size,), attr=bias_attr, is_bias=True,
                                               axis_names=(axes.VOCAB,), rngs=rngs) if head_bias else None
        tails = []
        for i in range(self.n_clusters):
            hidden = int(self.in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            proj = self.create_parameter((self.in_features, hidden), attr=weight_attr,
                                         axis_names=(axes.EMBED, None), rngs=rngs)
            out = self.create_parameter((hidden, size), attr=weight_attr, axis_names=(None, axes.VOCAB), rngs=rngs)
            tails.append(_TailProjection(proj, out))
        self.tail_weights = LayerList(tails)
        self.name = name

    def _tails(self):
        return [(value_of(p), value_of(o)) for p, o in self.tail_weights]

    def forward(self, input, label):  # noqa: A002
        """(output [N] = log p(label), loss = mean(-output))."""
        return F.adaptive_log_softmax_with_loss(input, label, value_of(self.head_weight), self._tails(), self.cutoffs,
                                                value_of(self.head_bias))

    def log_prob(self, input):  # noqa: A002
        """log p(class | input) for every class: [N, n_classes]."""
        return adaptive_full_log_prob(jnp.asarray(input), value_of(self.head_weight), self._tails(), self.cutoffs,
                                      value_of(self.head_bias))

    def predict(self, input):  # noqa: A002
        """The most likely class of each row, [N].

        Paddle returns float32 class ids from its shortlist shortcut and int64
        from the full path; pdx always returns int32 ids.
        """
        return jnp.argmax(self.log_prob(input), axis=1).astype(jnp.int32)
