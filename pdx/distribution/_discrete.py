"""Discrete distributions: Bernoulli, Binomial, Categorical, Geometric, Multinomial, Poisson.

Samples are returned in the parameters' floating dtype, as in Paddle, except
Categorical, whose indices are int32 (Paddle: int64; pdx runs JAX without
x64). Entropy and KL of Binomial and Poisson sum over a support whose size
depends on parameter values, so they run eagerly only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from pdx.distribution._base import (
    Distribution,
    ExponentialFamily,
    broadcast_params,
    concrete_int,
    param,
    sample_shape,
    value_arg,
)
from pdx.distribution._kl import register_kl

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial", "Poisson"]


def _eps(dtype) -> float:
    return float(jnp.finfo(dtype).eps)


class Bernoulli(ExponentialFamily):
    """Bernoulli distribution: 1 with probability `probs`, else 0.

    `probs` is clipped to [eps, 1 - eps]; `logits` = log(p / (1 - p)).

    Args:
      probs: probability of 1 (number, list, numpy array or tensor).
      name: ignored label.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> d = D.Bernoulli(0.3)
      >>> round(float(d.prob(jnp.asarray(1.0))), 4)
      0.3
    """

    def __init__(self, probs, name=None) -> None:
        probs = param(probs, "probs", "Bernoulli")
        eps = _eps(probs.dtype)
        self.probs = jnp.clip(probs, eps, 1 - eps)
        self.logits = jnp.log(self.probs) - jnp.log1p(-self.probs)
        self.name = name or "Bernoulli"
        super().__init__(self.probs.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.probs.dtype

    @property
    def mean(self):
        """probs."""
        return self.probs

    @property
    def variance(self):
        """probs * (1 - probs)."""
        return self.probs * (1 - self.probs)

    def sample(self, shape=(), *, key=None):
        """0/1 draws of shape `shape + batch_shape`, in the parameters' dtype."""
        shape = self._extend_shape(sample_shape(shape, "Bernoulli.sample"))
        p = jax.lax.stop_gradient(self.probs)
        return jax.random.bernoulli(self._key(key, "sample"), p, shape).astype(self.dtype)

    def rsample(self, shape=(), temperature=1.0, *, key=None):
        """Relaxed (logistic) draws in logit space: (logit(u) + logits) / temperature.

        Apply a sigmoid to get values in (0, 1), as with Paddle's rsample.
        """
        shape = self._extend_shape(sample_shape(shape, "Bernoulli.rsample"))
        u = jax.random.uniform(self._key(key, "rsample"), shape, self.dtype)
        return ((jnp.log(u) - jnp.log1p(-u)) + (jnp.log(self.probs) - jnp.log1p(-self.probs))) / temperature

    def cdf(self, value):
        """0 below 0, 1 - probs on [0, 1), 1 from 1 on."""
        value = value_arg(value, self.dtype, owner="Bernoulli.cdf")
        probs, value = jnp.broadcast_arrays(self.probs, value)
        return jnp.where(value < 0, 0.0, jnp.where(value < 1, 1.0 - probs, 1.0)).astype(self.dtype)

    def log_prob(self, value):
        """value * logits - softplus(logits) (minus binary cross-entropy with logits)."""
        value = value_arg(value, self.dtype, owner="Bernoulli.log_prob")
        logits, value = jnp.broadcast_arrays(self.logits, value)
        return value * logits - jax.nn.softplus(logits)

    def entropy(self):
        """Binary cross-entropy of probs with itself."""
        return jax.nn.softplus(self.logits) - self.probs * self.logits

    @property
    def _natural_parameters(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return jax.nn.softplus(x)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    a, b = p.logits, q.logits
    pa, qa = jax.nn.sigmoid(a), jax.nn.sigmoid(-a)
    return (-jax.nn.softplus(-a) + jax.nn.softplus(-b)) * pa + (-jax.nn.softplus(a) + jax.nn.softplus(b)) * qa


class Binomial(Distribution):
    """Binomial distribution: successes in `total_count` trials with success probability `probs`.

    `total_count` is stored in the dtype of `probs` (float), as in Paddle.

    Args:
      total_count: number of trials (int or tensor), >= 0.
      probs: success probability (float or tensor).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.Binomial(10, 0.5).mean)
      5.0
    """

    def __init__(self, total_count, probs) -> None:
        probs = param(probs, "probs", "Binomial")
        total = param(total_count, "total_count", "Binomial", dtype=probs.dtype)
        self.total_count, self.probs = broadcast_params("Binomial", total_count=total, probs=probs)
        super().__init__(self.total_count.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.probs.dtype

    @property
    def mean(self):
        """total_count * probs."""
        return self.total_count * self.probs

    @property
    def variance(self):
        """total_count * probs * (1 - probs)."""
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, shape=(), *, key=None):
        """Counts of shape `shape + batch_shape`, in the parameters' dtype."""
        shape = self._extend_shape(sample_shape(shape, "Binomial.sample"))
        n = jax.lax.stop_gradient(jnp.broadcast_to(self.total_count, shape))
        p = jax.lax.stop_gradient(jnp.broadcast_to(self.probs, shape))
        return jax.random.binomial(self._key(key, "sample"), n, p, shape, dtype=self.dtype)

    def _support(self):
        upper = concrete_int(jnp.max(self.total_count), "the support size (max total_count)", "Binomial")
        return jnp.arange(upper + 1, dtype=self.dtype).reshape((-1,) + (1,) * len(self.batch_shape))

    def log_prob(self, value):
        """Log probability mass (out-of-support values give -eps, as in Paddle)."""
        value = value_arg(value, self.dtype, owner="Binomial.log_prob")
        n = self.total_count
        log_comb = gammaln(n + 1.0) - gammaln(n - value + 1.0) - gammaln(value + 1.0)
        eps = _eps(self.dtype)
        p = jnp.clip(self.probs, eps, 1 - eps)
        return jnp.nan_to_num(log_comb + value * jnp.log(p) + (n - value) * jnp.log(1 - p), neginf=-eps)

    def entropy(self):
        """Entropy by summing over the support (eager only)."""
        lp = self.log_prob(self._support())
        return -(jnp.exp(lp) * lp).sum(0)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    support = p._support()
    lp, lq = p.log_prob(support), q.log_prob(support)
    return (jnp.exp(lp) * (lp - lq)).sum(0)


class Categorical(Distribution):
    """Categorical distribution over the last axis of `logits`.

    As in Paddle, `sample`, `entropy` and `kl_divergence` read `logits` as
    unnormalized log-probabilities (softmax), while `probs(value)` and
    `log_prob(value)` read them as unnormalized probabilities
    (`logits / logits.sum(-1)`).

    Args:
      logits: tensor of shape batch_shape + [num_categories].
      name: ignored label.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> d = D.Categorical(jnp.asarray([1.0, 3.0]))
      >>> float(d.probs(jnp.asarray(1)))
      0.75
    """

    def __init__(self, logits, name=None) -> None:
        self.logits = param(logits, "logits", "Categorical")
        if self.logits.ndim < 1:
            raise ValueError(f"Categorical: `logits` needs at least 1 dim (the categories); got shape "
                             f"{self.logits.shape}")
        self.name = name if name is not None else "Categorical"
        super().__init__(self.logits.shape[:-1])

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.logits.dtype

    @property
    def _prob(self):
        return self.logits / self.logits.sum(-1, keepdims=True)

    def sample(self, shape=(), *, key=None):
        """Category indices (int32) of shape `shape + batch_shape`."""
        shape = self._extend_shape(sample_shape(shape, "Categorical.sample"))
        logits = jax.lax.stop_gradient(self.logits)
        return jax.random.categorical(self._key(key, "sample"), logits, axis=-1, shape=shape).astype(jnp.int32)

    def _log_softmax(self):
        return jax.nn.log_softmax(self.logits, axis=-1)

    def entropy(self):
        """Entropy of softmax(logits)."""
        logp = self._log_softmax()
        return -(jnp.exp(logp) * logp).sum(-1)

    def probs(self, value):
        """Probability of category `value` under logits / logits.sum(-1) (Paddle's convention).

        With 1-D logits the result has `value`'s shape; with batched logits a
        1-D `value` is looked up in every batch row, otherwise `value` is
        matched along the last axis (take_along_axis).
        """
        value = jnp.asarray(value)
        if not jnp.issubdtype(value.dtype, jnp.integer):
            value = value.astype(jnp.int32)
        prob = self._prob
        if prob.ndim == 1:
            return prob[value]
        if value.ndim == 1:
            value = value.reshape((1,) * (prob.ndim - 1) + (-1,))
        shape = jnp.broadcast_shapes(prob.shape[:-1], value.shape[:-1])
        prob = jnp.broadcast_to(prob, shape + prob.shape[-1:])
        value = jnp.broadcast_to(value, shape + value.shape[-1:])
        return jnp.take_along_axis(prob, value, axis=-1)

    def prob(self, value):
        """Same as `probs`."""
        return self.probs(value)

    def log_prob(self, value):
        """log(probs(value))."""
        return jnp.log(self.probs(value))


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    lp, lq = p._log_softmax(), q._log_softmax()
    return (jnp.exp(lp) * (lp - lq)).sum(-1, keepdims=True)


class Geometric(Distribution):
    """Geometric distribution: failures before the first success, P(k) = (1 - p)^k p, k = 0, 1, ...

    Args:
      probs: success probability in (0, 1].

    Example:
      >>> import pdx.distribution as D
      >>> float(D.Geometric(0.5).mean)
      1.0
    """

    def __init__(self, probs) -> None:
        self.probs = param(probs, "probs", "Geometric")
        super().__init__(self.probs.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.probs.dtype

    @property
    def mean(self):
        """1 / p - 1."""
        return 1.0 / self.probs - 1.0

    @property
    def variance(self):
        """(1 / p - 1) / p."""
        return (1.0 / self.probs - 1.0) / self.probs

    def pmf(self, k):
        """(1 - p)^k p."""
        k = value_arg(k, self.dtype, name="k", owner="Geometric.pmf")
        return (1.0 - self.probs) ** k * self.probs

    def log_pmf(self, k):
        """log(pmf(k))."""
        return jnp.log(self.pmf(k))

    def prob(self, value):
        """Same as `pmf`."""
        return self.pmf(value)

    def log_prob(self, value):
        """Same as `log_pmf`."""
        return self.log_pmf(value)

    def rsample(self, shape=(), *, key=None):
        """floor(log(u) / log1p(-p)) (piecewise constant: zero gradient almost everywhere)."""
        shape = self._extend_shape(sample_shape(shape, "Geometric.rsample"))
        u = jax.random.uniform(self._key(key, "rsample"), shape, self.dtype,
                               minval=float(np.finfo(np.float32).tiny), maxval=1.0)
        return jnp.floor(jnp.log(u) / jnp.log1p(-self.probs))

    def entropy(self):
        """Entropy."""
        p = self.probs
        return -((1.0 - p) * jnp.log(1.0 - p) + p * jnp.log(p)) / p

    def cdf(self, k):
        """1 - (1 - p)^(k + 1)."""
        k = value_arg(k, self.dtype, name="k", owner="Geometric.cdf")
        return 1.0 - (1.0 - self.probs) ** (k + 1)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    a, b = p.probs, q.probs
    return a * jnp.log(a / b) + (1.0 - a) * jnp.log((1.0 - a) / (1.0 - b))


class Multinomial(Distribution):
    """Multinomial distribution: counts of `total_count` draws from categories with `probs`.

    Args:
      total_count: number of draws, a positive Python int.
      probs: tensor of shape batch_shape + [num_categories] (normalized over the last axis).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> D.Multinomial(10, jnp.asarray([0.2, 0.8])).mean.tolist()
      [2.0, 8.0]
    """

    def __init__(self, total_count: int, probs) -> None:
        if not isinstance(total_count, (int, np.integer)) or isinstance(total_count, bool) or total_count < 1:
            raise ValueError(f"Multinomial: `total_count` must be a positive int; got {total_count!r}")
        probs = param(probs, "probs", "Multinomial")
        if probs.ndim < 1:
            raise ValueError(f"Multinomial: `probs` needs at least 1 dim (the categories); got shape {probs.shape}")
        self.total_count = int(total_count)
        self.probs = probs / probs.sum(-1, keepdims=True)
        self._categorical = Categorical(jnp.log(probs))
        super().__init__(probs.shape[:-1], probs.shape[-1:])

    @property
    def mean(self):
        """total_count * probs."""
        return self.probs * self.total_count

    @property
    def variance(self):
        """total_count * probs * (1 - probs)."""
        return self.total_count * self.probs * (1 - self.probs)

    def log_prob(self, value):
        """Log probability mass of a count vector."""
        value = value_arg(value, self.probs.dtype, owner="Multinomial.log_prob")
        logits, value = jnp.broadcast_arrays(jnp.log(self.probs), value)
        logits = jnp.where((value == 0) & jnp.isinf(logits), 0.0, logits)
        return gammaln(value.sum(-1) + 1) - gammaln(value + 1).sum(-1) + (value * logits).sum(-1)

    def prob(self, value):
        """Probability mass."""
        return jnp.exp(self.log_prob(value))

    def sample(self, shape=(), *, key=None):
        """Count vectors of shape `shape + batch_shape + [num_categories]`."""
        shape = sample_shape(shape, "Multinomial.sample")
        draws = self._categorical.sample((self.total_count, *shape), key=self._key(key, "sample"))
        k = self.probs.shape[-1]
        return jax.nn.one_hot(draws, k, dtype=self.probs.dtype).sum(0)

    def entropy(self):
        """Entropy (exact sum over the binomial marginals)."""
        n = jnp.asarray(self.total_count, self.probs.dtype)
        support = jnp.arange(1, self.total_count + 1, dtype=self.probs.dtype)
        support = support.reshape((-1,) + (1,) * self.probs.ndim)
        logits = jnp.log(self.probs) - jnp.log1p(-self.probs)
        log_pmf = (support * logits - gammaln(support + 1) - gammaln(n - support + 1)
                   - (n * jax.nn.softplus(logits) - gammaln(n + 1)))
        return (n * self._categorical.entropy() - gammaln(n + 1)
                + (jnp.exp(log_pmf) * gammaln(support + 1)).sum(axis=(0, -1)))


class Poisson(Distribution):
    """Poisson distribution with rate `rate`.

    A Python number `rate` gives batch_shape (1,), as in Paddle.

    Args:
      rate: rate, >= 0.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> round(float(D.Poisson(jnp.asarray(2.0)).prob(jnp.asarray(0.0))), 4)
      0.1353
    """

    def __init__(self, rate) -> None:
        if isinstance(rate, (int, float)) and not isinstance(rate, bool):
            rate = [rate]
        self.rate = param(rate, "rate", "Poisson")
        super().__init__(self.rate.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.rate.dtype

    @property
    def mean(self):
        """rate."""
        return self.rate

    @property
    def variance(self):
        """rate."""
        return self.rate

    def sample(self, shape=(), *, key=None):
        """Counts of shape `shape + batch_shape`, in the parameters' dtype."""
        shape = self._extend_shape(sample_shape(shape, "Poisson.sample"))
        lam = jax.lax.stop_gradient(jnp.broadcast_to(self.rate, shape))
        return jax.random.poisson(self._key(key, "sample"), lam, shape).astype(self.dtype)

    def _support_upper(self, rate) -> int:
        rmax = jnp.max(rate)
        spread = jnp.where(rmax >= 1.0, jnp.sqrt(rmax), 1.0)
        return concrete_int(jnp.max((rate + 30 * spread).astype(jnp.int32)), "the support size", "Poisson")

    def log_prob(self, value):
        """Log probability mass (out-of-support values give -eps, as in Paddle)."""
        value = value_arg(value, self.dtype, owner="Poisson.log_prob")
        eps = _eps(self.dtype)
        return jnp.nan_to_num(-self.rate + value * jnp.log(self.rate) - gammaln(value + 1), neginf=-eps)

    def prob(self, value):
        """Probability mass."""
        return jnp.exp(self.log_prob(value))

    def entropy(self):
        """Entropy by summing over a bounded support, rate + 30 sqrt(rate) (eager only)."""
        values = jnp.arange(self._support_upper(self.rate), dtype=self.dtype)
        lp = self.log_prob(values.reshape((-1,) + (1,) * len(self.batch_shape)))
        return jnp.where(self.rate != 0.0, -(jnp.exp(lp) * lp).sum(0), 0.0)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    if p.batch_shape != q.batch_shape:
        raise ValueError(f"kl_divergence: Poisson batch shapes must match; got {p.batch_shape} and {q.batch_shape}")
    upper = p._support_upper(jnp.max(jnp.maximum(p.rate, q.rate)))
    support = jnp.arange(max(upper - 1, 0), dtype=p.dtype).reshape((-1,) + (1,) * len(p.batch_shape))
    lp, lq = p.log_prob(support), q.log_prob(support)
    return (jnp.exp(lp) * (lp - lq)).sum(0)
