"""Distributions built from other distributions: Independent and TransformedDistribution."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx.distribution._base import Distribution, sum_rightmost
from pdx.distribution._transform import ChainTransform, Transform

__all__ = ["Independent", "TransformedDistribution"]


class Independent(Distribution):
    """Reinterpret the rightmost `reinterpreted_batch_rank` batch dims of `base` as event dims.

    `log_prob` and `entropy` sum over those dims.

    Args:
      base: a Distribution.
      reinterpreted_batch_rank: int in [1, len(base.batch_shape)].

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> d = D.Independent(D.Normal(jnp.zeros(3), jnp.ones(3)), 1)
      >>> d.batch_shape, d.event_shape
      ((), (3,))
    """

    def __init__(self, base, reinterpreted_batch_rank: int) -> None:
        if not isinstance(base, Distribution):
            raise TypeError(f"Independent: `base` must be a Distribution; got {type(base).__name__}")
        n = len(base.batch_shape)
        if not isinstance(reinterpreted_batch_rank, int) or not 0 < reinterpreted_batch_rank <= n:
            raise ValueError(f"Independent: `reinterpreted_batch_rank` must be an int in [1, {n}] "
                             f"(len(base.batch_shape)); got {reinterpreted_batch_rank!r}")
        self._base = base
        self._reinterpreted_batch_rank = reinterpreted_batch_rank
        shape = base.batch_shape + base.event_shape
        split = n - reinterpreted_batch_rank
        super().__init__(shape[:split], shape[split:])

    @property
    def base(self):
        """The wrapped distribution."""
        return self._base

    @property
    def mean(self):
        """The base distribution's mean."""
        return self._base.mean

    @property
    def variance(self):
        """The base distribution's variance."""
        return self._base.variance

    def sample(self, shape=(), *, key=None):
        """Samples of the base distribution."""
        return self._base.sample(shape, key=key)

    def rsample(self, shape=(), *, key=None):
        """Reparameterized samples of the base distribution."""
        return self._base.rsample(shape, key=key)

    def log_prob(self, value):
        """Base log_prob summed over the reinterpreted dims."""
        return sum_rightmost(self._base.log_prob(value), self._reinterpreted_batch_rank)

    def entropy(self):
        """Base entropy summed over the reinterpreted dims."""
        return sum_rightmost(self._base.entropy(), self._reinterpreted_batch_rank)


class TransformedDistribution(Distribution):
    """The distribution of `y = transforms[-1](...transforms[0](x))` for `x ~ base`.

    Args:
      base: a Distribution.
      transforms: a list/tuple of Transforms, applied first to last.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> d = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()])
      >>> round(float(d.log_prob(jnp.asarray(1.0))), 4)  # log-normal density at 1
      -0.9189
    """

    def __init__(self, base, transforms) -> None:
        if not isinstance(base, Distribution):
            raise TypeError(f"TransformedDistribution: `base` must be a Distribution; got {type(base).__name__}")
        if not isinstance(transforms, (list, tuple)):
            raise TypeError(f"TransformedDistribution: `transforms` must be a list/tuple of Transforms; "
                            f"got {type(transforms).__name__}")
        if not all(isinstance(t, Transform) for t in transforms):
            raise TypeError("TransformedDistribution: every element of `transforms` must be a Transform")
        self._base = base
        self._transforms = list(transforms)
        if not transforms:
            super().__init__(base.batch_shape, base.event_shape)
            return
        chain = ChainTransform(transforms)
        base_shape = base.batch_shape + base.event_shape
        if len(base_shape) < chain.domain_event_rank:
            raise ValueError(f"TransformedDistribution: `base` needs at least {chain.domain_event_rank} dims "
                             f"(batch + event); got shape {base_shape}")
        if chain.domain_event_rank > len(base.event_shape):
            base = Independent(base, chain.domain_event_rank - len(base.event_shape))
            self._base = base
        shape = tuple(chain.forward_shape(base.batch_shape + base.event_shape))
        event_rank = chain.codomain_event_rank + max(len(base.event_shape) - chain.domain_event_rank, 0)
        super().__init__(shape[:len(shape) - event_rank], shape[len(shape) - event_rank:])

    @property
    def base(self):
        """The base distribution."""
        return self._base

    @property
    def transforms(self):
        """The transforms, applied first to last."""
        return self._transforms

    def sample(self, shape=(), *, key=None):
        """Transform samples of the base distribution (no gradient)."""
        return jax.lax.stop_gradient(self._forward(self._base.sample(shape, key=key)))

    def rsample(self, shape=(), *, key=None):
        """Transform reparameterized samples of the base distribution."""
        return self._forward(self._base.rsample(shape, key=key))

    def _forward(self, x):
        for t in self._transforms:
            x = t.forward(x)
        return x

    def log_prob(self, value):
        """Change of variables: base log_prob of the inverse minus the log-det-Jacobians."""
        y = jnp.asarray(value)
        log_prob = 0.0
        event_rank = len(self.event_shape)
        for t in reversed(self._transforms):
            x = t.inverse(y)
            event_rank += t.domain_event_rank - t.codomain_event_rank
            log_prob = log_prob - sum_rightmost(t.forward_log_det_jacobian(x), event_rank - t.domain_event_rank)
            y = x
        return log_prob + sum_rightmost(self._base.log_prob(y), event_rank - len(self._base.event_shape))
