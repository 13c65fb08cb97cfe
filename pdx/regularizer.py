"""Weight-decay regularizers (Paddle's `paddle.regularizer`).

A regularizer adds the gradient of a penalty to a parameter's gradient before
the optimizer update: `L2Decay(c)` adds `c * param` (penalty `0.5 * c * ||p||^2`),
`L1Decay(c)` adds `c * sign(param)` (penalty `c * ||p||_1`). Pass one as an
optimizer's `weight_decay=` (all parameters) or as a parameter's
`ParamAttr(regularizer=...)`, which takes precedence for that parameter.

Example:
    >>> import pdx
    >>> net = pdx.nn.Layer()
    >>> w = net.create_parameter([2, 2])
    >>> net.w = w
    >>> opt = pdx.optimizer.SGD(0.1, parameters=net, weight_decay=pdx.regularizer.L2Decay(1e-4))
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]


class WeightDecayRegularizer:
    """Base class of the weight-decay regularizers."""

    def __init__(self, coeff: float = 0.0) -> None:
        if isinstance(coeff, bool) or not isinstance(coeff, (int, float)):
            raise TypeError(f"{type(self).__name__}: coeff must be a float; got {coeff!r}")
        self._coeff = float(coeff)

    @property
    def coeff(self) -> float:
        return self._coeff

    def grad_term(self, param):
        """The term this regularizer adds to `param`'s gradient."""
        raise NotImplementedError

    def __call__(self, param, grad=None, block=None):
        """Paddle's calling convention: returns the gradient term for `param`
        (`grad` and `block` are accepted and ignored)."""
        return self.grad_term(jnp.asarray(param[...] if hasattr(param, "get_value") else param))

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._coeff == other._coeff

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._coeff))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(coeff={self._coeff})"


class L1Decay(WeightDecayRegularizer):
    """L1 weight decay: adds `coeff * sign(param)` to the gradient.

    Args:
      coeff: the regularization coefficient.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.regularizer import L1Decay
      >>> L1Decay(0.5).grad_term(jnp.array([-2.0, 0.0, 3.0])).tolist()
      [-0.5, 0.0, 0.5]
    """

    def grad_term(self, param):
        return self._coeff * jnp.sign(param)

    def __str__(self) -> str:
        return f"L1Decay, coeff={self._coeff:f}"


class L2Decay(WeightDecayRegularizer):
    """L2 weight decay: adds `coeff * param` to the gradient.

    Args:
      coeff: the regularization coefficient.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.regularizer import L2Decay
      >>> L2Decay(0.5).grad_term(jnp.array([-2.0, 0.0, 3.0])).tolist()
      [-1.0, 0.0, 1.5]
    """

    def grad_term(self, param):
        return self._coeff * param

    def __str__(self) -> str:
        return f"L2Decay, coeff={self._coeff:f}"
