"""Sequence loss layers: CTCLoss and RNNTLoss (Paddle's names, options and defaults)."""

from __future__ import annotations

import pdx.nn.functional as F
from pdx.nn._layer import Layer
from pdx.nn._loss import _reduction

__all__ = ["CTCLoss", "RNNTLoss"]


class CTCLoss(Layer):
    """Connectionist temporal classification loss (Paddle's `nn.CTCLoss`).

    `forward(log_probs [T, B, C], labels [B, L], input_lengths [B], label_lengths [B],
    norm_by_times=False)`; softmax is applied inside, as in Paddle (see `F.ctc_loss`).

    Args:
      blank: the blank class id.
      reduction: 'mean' (mean of loss / label_length), 'sum' or 'none'.
      zero_infinity: set infinite losses to zero.
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> ctc = pdx.nn.CTCLoss(reduction="sum")
      >>> round(float(ctc(jnp.zeros((4, 1, 3)), jnp.array([[1, 2]]), jnp.array([4]), jnp.array([2]))), 4)
      1.6864
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("CTCLoss", reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, labels, input_lengths, label_lengths, norm_by_times=False):
        return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, self.blank, self.reduction,
                          norm_by_times=norm_by_times, zero_infinity=self.zero_infinity)


class RNNTLoss(Layer):
    """RNN transducer loss (Paddle's `nn.RNNTLoss`).

    `forward(input [B, T, U + 1, C] log-probabilities, label [B, U], input_lengths [B],
    label_lengths [B])` (see `F.rnnt_loss`).

    Args:
      blank: the blank class id.
      fastemit_lambda: FastEmit gradient scale for label emissions.
      reduction: 'mean' (sum / batch size), 'sum' or 'none'.
      name: ignored (Paddle compatibility).
      rngs: keyword-only, unused.

    Example:
      >>> import pdx, jax, jax.numpy as jnp
      >>> lp = jax.nn.log_softmax(jnp.zeros((1, 2, 2, 3)), -1)
      >>> round(float(pdx.nn.RNNTLoss()(lp, jnp.array([[1]]), jnp.array([2]), jnp.array([1]))), 4)
      2.6027
    """

    def __init__(self, blank=0, fastemit_lambda=0.001, reduction="mean", name=None, *, rngs=None):
        super().__init__()
        self.reduction = _reduction("RNNTLoss", reduction)
        self.blank = blank
        self.fastemit_lambda = fastemit_lambda
        self.name = name

    def forward(self, input, label, input_lengths, label_lengths):  # noqa: A002
        return F.rnnt_loss(input, label, input_lengths, label_lengths, blank=self.blank,
                           fastemit_lambda=self.fastemit_lambda, reduction=self.reduction)
