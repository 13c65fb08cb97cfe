"""Similarity and distance layers: CosineSimilarity and PairwiseDistance."""

from __future__ import annotations

import pdx.nn.functional as F
from pdx._args import is_int
from pdx.nn._common import layer_error
from pdx.nn._layer import Layer

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Layer):
    """Cosine similarity of two inputs along `axis` (Paddle's `nn.CosineSimilarity`).

    Args:
      axis: the reduced axis.
      eps: floor on the product of the norms.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.CosineSimilarity()(jnp.array([[1.0, 0.0]]), jnp.array([[1.0, 1.0]])).round(4).tolist()
      [0.7071]
    """

    def __init__(self, axis=1, eps=1e-8, *, rngs=None):
        super().__init__()
        if not is_int(axis):
            raise layer_error("CosineSimilarity", f"axis must be an int; got axis={axis!r}")
        self._axis = int(axis)
        self._eps = eps

    @property
    def dim(self) -> int:
        """Paddle 3.3's alias of `axis`."""
        return self._axis

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, axis=self._axis, eps=self._eps)

    def extra_repr(self) -> str:
        return f"axis={self._axis}, eps={self._eps}"


class PairwiseDistance(Layer):
    """p-norm distance between matching rows of two inputs (Paddle's `nn.PairwiseDistance`).

    Computes ||x - y + epsilon||_p over the last axis.

    Args:
      p: the norm order.
      epsilon: added to the difference for numerical stability.
      keepdim: keep the reduced axis.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.PairwiseDistance(epsilon=0.0)(jnp.array([[3.0, 0.0]]), jnp.array([[0.0, 4.0]])).tolist()
      [5.0]
    """

    def __init__(self, p=2.0, epsilon=1e-6, keepdim=False, name=None, *, rngs=None):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)):  # any order, as in Paddle (-inf: the min)
            raise layer_error("PairwiseDistance", f"p must be a number; got p={p!r}")
        self.p = p
        self.epsilon = epsilon
        self.keepdim = keepdim
        self.name = name

    def forward(self, x, y):
        return F.pairwise_distance(x, y, self.p, self.epsilon, self.keepdim)

    def extra_repr(self) -> str:
        main = f"p={self.p}"
        if self.epsilon != 1e-6:
            main += f", epsilon={self.epsilon}"
        if self.keepdim:
            main += ", keepdim=True"
        if self.name:
            main += f", name={self.name}"
        return main
