"""Univariate continuous distributions: Normal, Uniform, Cauchy, Laplace, Gumbel, LogNormal,
StudentT, Exponential, Gamma, Chi2, Beta, ContinuousBernoulli."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln

from pdx.distribution._base import (
    Distribution,
    ExponentialFamily,
    broadcast_params,
    check_positive,
    param,
    sample_shape,
    seed_key,
    value_arg,
)
from pdx.distribution._kl import register_kl
from pdx.distribution._transform import ExpTransform
from pdx.distribution._transformed import TransformedDistribution

__all__ = ["Normal", "Uniform", "Cauchy", "Laplace", "Gumbel", "LogNormal", "StudentT", "Exponential",
           "Gamma", "Chi2", "Beta", "ContinuousBernoulli"]

_EULER_GAMMA = float(np.euler_gamma)
_F32 = np.finfo(np.float32)


def _uniform(key, shape, dtype, minval=0.0, maxval=1.0):
    return jax.random.uniform(key, shape, dtype, minval=minval, maxval=maxval)


class _LocScale(Distribution):
    """Shared constructor for two-parameter location/scale families."""

    _names = ("loc", "scale")

    def __init__(self, loc, scale, name=None) -> None:
        owner = type(self).__name__
        a, b = self._names
        self.loc, self.scale = broadcast_params(owner, **{a: param(loc, a, owner), b: param(scale, b, owner)})
        self.name = name if name is not None else owner
        super().__init__(self.loc.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.loc.dtype


def _is_complex(x) -> bool:
    if isinstance(x, complex):
        return True
    if isinstance(x, (list, tuple)):
        return any(_is_complex(v) for v in x)
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.complexfloating)


class Normal(_LocScale):
    """Normal (Gaussian) distribution N(loc, scale**2); a complex `loc` gives the circular complex normal.

    For complex `loc` (as in Paddle) draws are loc + scale * z with z standard
    complex normal (E|z|^2 = 1), the density is exp(-|x - loc|^2 / scale^2) /
    (pi scale^2), and log_prob/probs/KL come back with a complex dtype (zero
    imaginary part), as Paddle's do.

    Args:
      loc: mean (number, list, numpy array or tensor; real or complex).
      scale: standard deviation, > 0 (real).
      name: ignored label, kept for Paddle compatibility.

    Example:
      >>> import pdx.distribution as D
      >>> d = D.Normal(0.0, 2.0)
      >>> round(float(d.entropy()), 4)
      2.1121
      >>> d.sample([3], key=__import__("jax").random.key(0)).shape
      (3,)
    """

    def __init__(self, loc, scale, name=None) -> None:
        self._complex_gaussian = _is_complex(loc)
        if not self._complex_gaussian:
            super().__init__(loc, scale, name)
            return
        loc = jnp.asarray(loc)
        scale = param(scale, "scale", "Normal")
        try:
            shape = jnp.broadcast_shapes(loc.shape, scale.shape)
        except ValueError:
            raise ValueError(f"Normal: parameter shapes do not broadcast: loc.shape={loc.shape}, "
                             f"scale.shape={scale.shape}") from None
        self.loc = jnp.broadcast_to(loc, shape)
        self.scale = jnp.broadcast_to(scale, shape).astype(jnp.finfo(loc.dtype).dtype)
        self.name = name if name is not None else "Normal"
        Distribution.__init__(self, shape)

    @property
    def mean(self):
        """loc."""
        return self.loc

    @property
    def variance(self):
        """scale ** 2."""
        return self.scale ** 2

    def sample(self, shape=(), seed=0, *, key=None):
        """Samples of shape `shape + batch_shape`; a non-zero `seed` fixes the stream (Paddle's per-call seed)."""
        return jax.lax.stop_gradient(self.rsample(shape, key=seed_key(seed, key)))

    def rsample(self, shape=(), *, key=None):
        """loc + scale * eps with eps ~ N(0, 1) (complex: E|eps|^2 = 1): differentiable in loc and scale."""
        shape = self._extend_shape(sample_shape(shape, "Normal.rsample"))
        eps = jax.random.normal(self._key(key, "rsample"), shape, self.dtype)
        return self.loc + eps * self.scale

    def entropy(self):
        """0.5 + 0.5 * log(2 pi) + log(scale) (complex: 1 + log(pi) + 2 log(scale))."""
        if self._complex_gaussian:
            return 1.0 + math.log(math.pi) + 2.0 * jnp.log(self.scale)
        return 0.5 + 0.5 * math.log(2 * math.pi) + jnp.log(self.scale)

    def _sq_dist(self, value):
        d = value - self.loc
        return jnp.conj(d) * d

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="Normal.log_prob")
        var = self.scale * self.scale
        if self._complex_gaussian:
            return -self._sq_dist(value) / var - (2.0 * jnp.log(self.scale) + math.log(math.pi))
        return -self._sq_dist(value) / (2.0 * var) - (jnp.log(self.scale) + 0.5 * math.log(2 * math.pi))

    def probs(self, value):
        """Density (Paddle's name)."""
        value = value_arg(value, self.dtype, owner="Normal.probs")
        var = self.scale * self.scale
        if self._complex_gaussian:
            return jnp.exp(-self._sq_dist(value) / var) / (math.pi * var)
        return jnp.exp(-self._sq_dist(value) / (2.0 * var)) / (math.sqrt(2 * math.pi) * self.scale)

    def _real_only(self, method):
        if self._complex_gaussian:
            raise ValueError(f"Normal.{method}: defined for a real `loc` only; this Normal has complex loc")

    def cdf(self, value):
        """Cumulative distribution function (real loc only)."""
        self._real_only("cdf")
        value = value_arg(value, self.dtype, owner="Normal.cdf")
        return jax.scipy.special.ndtr((value - self.loc) / self.scale)

    def icdf(self, value):
        """Inverse cdf (quantile function; real loc only)."""
        self._real_only("icdf")
        value = value_arg(value, self.dtype, owner="Normal.icdf")
        return self.loc + self.scale * jax.scipy.special.ndtri(value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    if p._complex_gaussian != q._complex_gaussian:
        raise ValueError("kl_divergence: both Normals must be real or both complex (`loc` dtype)")
    var_ratio = (p.scale / q.scale) ** 2
    t1 = (p.loc - q.loc) / q.scale
    t1 = jnp.conj(t1) * t1
    if p._complex_gaussian:
        return var_ratio + t1 - 1.0 - jnp.log(var_ratio)
    return 0.5 * var_ratio + 0.5 * (t1 - 1.0 - jnp.log(var_ratio))


class Uniform(_LocScale):
    """Uniform distribution on [low, high).

    Args:
      low: lower bound.
      high: upper bound.
      name: ignored label, kept for Paddle compatibility.

    Example:
      >>> import pdx.distribution as D
      >>> round(float(D.Uniform(0.0, 4.0).entropy()), 4)
      1.3863
    """

    _names = ("low", "high")

    def __init__(self, low, high, name=None) -> None:
        super().__init__(low, high, name)
        self.low, self.high = self.__dict__.pop("loc"), self.__dict__.pop("scale")

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.low.dtype

    @property
    def mean(self):
        """(low + high) / 2."""
        return (self.low + self.high) / 2

    @property
    def variance(self):
        """(high - low) ** 2 / 12."""
        return (self.high - self.low) ** 2 / 12

    def sample(self, shape=(), seed=0, *, key=None):
        """Samples of shape `shape + batch_shape`; a non-zero `seed` fixes the stream."""
        return jax.lax.stop_gradient(self.rsample(shape, key=seed_key(seed, key)))

    def rsample(self, shape=(), *, key=None):
        """low + u * (high - low), u ~ U[0, 1): differentiable in low and high."""
        shape = self._extend_shape(sample_shape(shape, "Uniform.rsample"))
        u = _uniform(self._key(key, "rsample"), shape, self.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        """-log(high - low) inside (low, high), -inf outside (Paddle's open interval)."""
        value = value_arg(value, self.dtype, owner="Uniform.log_prob")
        inside = (self.low < value) & (value < self.high)
        return jnp.log(inside.astype(value.dtype)) - jnp.log(self.high - self.low)

    def probs(self, value):
        """Density (Paddle's name)."""
        value = value_arg(value, self.dtype, owner="Uniform.probs")
        inside = (self.low < value) & (value < self.high)
        return inside.astype(value.dtype) / (self.high - self.low)

    prob = probs

    def entropy(self):
        """log(high - low)."""
        return jnp.log(self.high - self.low)

    def cdf(self, value):
        """Cumulative distribution function."""
        value = value_arg(value, self.dtype, owner="Uniform.cdf")
        return jnp.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    inside = (q.low <= p.low) & (p.high <= q.high)
    kl = jnp.log((q.high - q.low) / (p.high - p.low))
    return jnp.where(inside, kl, jnp.inf)


class Cauchy(_LocScale):
    """Cauchy distribution with location `loc` and scale `scale`.

    `mean`, `variance` and `stddev` raise ValueError (they do not exist), as in Paddle.

    Args:
      loc: location.
      scale: scale, > 0.
      name: ignored label.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.Cauchy(0.0, 1.0).cdf(jnp.asarray(0.0)))
      0.5
    """

    @property
    def mean(self):
        """Undefined: raises ValueError."""
        raise ValueError("Cauchy distribution has no mean.")

    @property
    def variance(self):
        """Undefined: raises ValueError."""
        raise ValueError("Cauchy distribution has no variance.")

    @property
    def stddev(self):
        """Undefined: raises ValueError."""
        raise ValueError("Cauchy distribution has no stddev.")

    def sample(self, shape=(), name=None, *, key=None):
        """Samples of shape `shape + batch_shape`."""
        return jax.lax.stop_gradient(self.rsample(shape, key=key))

    def rsample(self, shape=(), name=None, *, key=None):
        """loc + scale * tan(pi * (u - 0.5))."""
        shape = self._extend_shape(sample_shape(shape, "Cauchy.rsample"))
        u = _uniform(self._key(key, "rsample"), shape, self.dtype)
        return self.loc + self.scale * jnp.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="Cauchy.log_prob")
        return -jnp.log1p(((value - self.loc) / self.scale) ** 2) - (math.log(math.pi) + jnp.log(self.scale))

    def cdf(self, value):
        """atan((value - loc) / scale) / pi + 0.5."""
        value = value_arg(value, self.dtype, owner="Cauchy.cdf")
        return jnp.arctan((value - self.loc) / self.scale) / math.pi + 0.5

    def entropy(self):
        """log(4 pi) + log(scale)."""
        return math.log(4 * math.pi) + jnp.log(self.scale)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return jnp.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2) - jnp.log(4 * p.scale * q.scale)


class Laplace(_LocScale):
    """Laplace distribution with density exp(-|x - loc| / scale) / (2 scale).

    Args:
      loc: location.
      scale: scale, > 0.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.Laplace(0.0, 1.0).icdf(jnp.asarray(0.5)))
      0.0
    """

    def __init__(self, loc, scale) -> None:
        super().__init__(loc, scale)
        del self.name

    @property
    def mean(self):
        """loc."""
        return self.loc

    @property
    def stddev(self):
        """sqrt(2) * scale."""
        return math.sqrt(2) * self.scale

    @property
    def variance(self):
        """2 * scale ** 2."""
        return self.stddev ** 2

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="Laplace.log_prob")
        return -jnp.log(2 * self.scale) - jnp.abs(value - self.loc) / self.scale

    def entropy(self):
        """1 + log(2 scale)."""
        return 1 + jnp.log(2 * self.scale)

    def cdf(self, value):
        """Cumulative distribution function."""
        value = value_arg(value, self.dtype, owner="Laplace.cdf")
        d = value - self.loc
        return 0.5 - 0.5 * jnp.sign(d) * jnp.expm1(-jnp.abs(d) / self.scale)

    def icdf(self, value):
        """Inverse cdf."""
        value = value_arg(value, self.dtype, owner="Laplace.icdf")
        t = value - 0.5
        return self.loc - self.scale * jnp.sign(t) * jnp.log1p(-2 * jnp.abs(t))

    def rsample(self, shape=(), *, key=None):
        """loc - scale * sign(u) * log1p(-|u|), u ~ U(-1, 1)."""
        shape = self._extend_shape(sample_shape(shape, "Laplace.rsample"))
        eps = float(jnp.finfo(self.dtype).eps)
        u = _uniform(self._key(key, "rsample"), shape, self.dtype, -1.0 + eps / 2, 1.0 - eps / 2)
        return self.loc - self.scale * jnp.sign(u) * jnp.log1p(-jnp.abs(u))


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    t = jnp.abs(p.loc - q.loc)
    return (p.scale * jnp.exp(-t / p.scale) + t) / q.scale + jnp.log(q.scale / p.scale) - 1


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) distribution.

    Args:
      loc: location.
      scale: scale, > 0.

    Example:
      >>> import pdx.distribution as D
      >>> round(float(D.Gumbel(0.0, 1.0).mean), 4)
      0.5772
    """

    def __init__(self, loc, scale) -> None:
        self.loc, self.scale = broadcast_params("Gumbel", loc=param(loc, "loc", "Gumbel"),
                                                scale=param(scale, "scale", "Gumbel"))
        base = Uniform(jnp.full_like(self.loc, float(_F32.tiny)), jnp.full_like(self.loc, float(1 - _F32.eps)))
        super().__init__(base, [])

    @property
    def base_dist(self):
        """The Uniform(tiny, 1 - eps) base distribution (Paddle's attribute)."""
        return self._base

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.loc.dtype

    @property
    def mean(self):
        """loc + scale * Euler's gamma."""
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def variance(self):
        """scale ** 2 * pi ** 2 / 6."""
        return self.scale ** 2 * (math.pi ** 2 / 6)

    def prob(self, value):
        """Density."""
        return jnp.exp(self.log_prob(value))

    def log_prob(self, value):
        """Log density: y - exp(y) - log(scale), y = (loc - value) / scale."""
        value = value_arg(value, self.dtype, owner="Gumbel.log_prob")
        y = (self.loc - value) / self.scale
        return y - jnp.exp(y) - jnp.log(self.scale)

    def cdf(self, value):
        """exp(-exp(-(value - loc) / scale))."""
        value = value_arg(value, self.dtype, owner="Gumbel.cdf")
        return jnp.exp(-jnp.exp(-(value - self.loc) / self.scale))

    def entropy(self):
        """log(scale) + 1 + Euler's gamma."""
        return jnp.log(self.scale) + 1 + _EULER_GAMMA

    def sample(self, shape=(), *, key=None):
        """Samples of shape `shape + batch_shape`."""
        return jax.lax.stop_gradient(self.rsample(shape, key=key))

    def rsample(self, shape=(), *, key=None):
        """loc - scale * log(-log(u)), u ~ U(tiny, 1 - eps)."""
        shape = self._extend_shape(sample_shape(shape, "Gumbel.rsample"))
        u = _uniform(self._key(key, "rsample"), shape, self.dtype, float(_F32.tiny), float(1 - _F32.eps))
        return self.loc - self.scale * jnp.log(-jnp.log(u))


class LogNormal(TransformedDistribution):
    """Log-normal distribution: exp(X) for X ~ Normal(loc, scale).

    Args:
      loc: mean of log(X).
      scale: standard deviation of log(X), > 0.

    Example:
      >>> import pdx.distribution as D
      >>> round(float(D.LogNormal(0.0, 1.0).mean), 4)
      1.6487
    """

    def __init__(self, loc, scale) -> None:
        base = Normal(loc, scale)
        self.loc, self.scale = base.loc, base.scale
        super().__init__(base, [ExpTransform()])

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.loc.dtype

    @property
    def mean(self):
        """exp(loc + scale**2 / 2)."""
        return jnp.exp(self.loc + self.scale ** 2 / 2)

    @property
    def variance(self):
        """expm1(scale**2) * exp(2 loc + scale**2)."""
        return jnp.expm1(self.scale ** 2) * jnp.exp(2 * self.loc + self.scale ** 2)

    def entropy(self):
        """Normal entropy + loc."""
        return self._base.entropy() + self.loc

    def probs(self, value):
        """Density (Paddle's name)."""
        return jnp.exp(self.log_prob(value))


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p._base, q._base)


class Exponential(ExponentialFamily):
    """Exponential distribution with rate `rate` (density rate * exp(-rate x)).

    Args:
      rate: rate, > 0.

    Example:
      >>> import pdx.distribution as D
      >>> float(D.Exponential(2.0).mean)
      0.5
    """

    def __init__(self, rate) -> None:
        self.rate = param(rate, "rate", "Exponential")
        super().__init__(self.rate.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.rate.dtype

    @property
    def mean(self):
        """1 / rate."""
        return 1 / self.rate

    @property
    def variance(self):
        """rate ** -2."""
        return self.rate ** -2

    def rsample(self, shape=(), *, key=None):
        """-log(u) / rate: differentiable in rate."""
        shape = self._extend_shape(sample_shape(shape, "Exponential.rsample"))
        u = _uniform(self._key(key, "rsample"), shape, self.dtype, float(_F32.tiny), 1.0)
        return -jnp.log(u) / self.rate

    def prob(self, value):
        """rate * exp(-rate * value)."""
        value = value_arg(value, self.dtype, owner="Exponential.prob")
        return self.rate * jnp.exp(-self.rate * value)

    def log_prob(self, value):
        """log(rate) - rate * value."""
        value = value_arg(value, self.dtype, owner="Exponential.log_prob")
        return jnp.log(self.rate) - self.rate * value

    def entropy(self):
        """1 - log(rate)."""
        return 1.0 - jnp.log(self.rate)

    def cdf(self, value):
        """1 - exp(-rate * value)."""
        value = value_arg(value, self.dtype, owner="Exponential.cdf")
        return 1.0 - jnp.exp(-self.rate * value)

    def icdf(self, value):
        """-log1p(-value) / rate."""
        value = value_arg(value, self.dtype, owner="Exponential.icdf")
        return -jnp.log1p(-value) / self.rate

    @property
    def _natural_parameters(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -jnp.log(-x)

    @property
    def _mean_carrier_measure(self):
        return 0.0


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return -jnp.log(ratio) + ratio - 1


class Gamma(ExponentialFamily):
    """Gamma distribution with shape `concentration` and rate `rate`.

    `rsample` is differentiable in both parameters (implicit reparameterization
    of `jax.random.gamma`).

    Args:
      concentration: shape parameter, > 0.
      rate: rate (inverse scale), > 0.

    Example:
      >>> import pdx.distribution as D
      >>> float(D.Gamma(2.0, 4.0).mean)
      0.5
    """

    def __init__(self, concentration, rate) -> None:
        self.concentration, self.rate = broadcast_params(
            "Gamma", concentration=param(concentration, "concentration", "Gamma"), rate=param(rate, "rate", "Gamma"))
        super().__init__(self.concentration.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.concentration.dtype

    @property
    def mean(self):
        """concentration / rate."""
        return self.concentration / self.rate

    @property
    def variance(self):
        """concentration / rate ** 2."""
        return self.concentration / self.rate ** 2

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner=f"{type(self).__name__}.log_prob")
        c, r = self.concentration, self.rate
        return c * jnp.log(r) + (c - 1) * jnp.log(value) - r * value - gammaln(c)

    def entropy(self):
        """Entropy."""
        c = self.concentration
        return c - jnp.log(self.rate) + gammaln(c) + (1.0 - c) * digamma(c)

    def rsample(self, shape=(), *, key=None):
        """Gamma draws divided by rate: differentiable in concentration and rate."""
        shape = self._extend_shape(sample_shape(shape, f"{type(self).__name__}.rsample"))
        g = jax.random.gamma(self._key(key, "rsample"), jnp.broadcast_to(self.concentration, shape),
                             dtype=self.dtype)
        return g / self.rate

    @property
    def _natural_parameters(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return gammaln(x + 1) + (x + 1) * jnp.log(-1 / y)

    @property
    def _mean_carrier_measure(self):
        return 0.0


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * jnp.log(p.rate / q.rate)
    t2 = gammaln(q.concentration) - gammaln(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


class Chi2(Gamma):
    """Chi-squared distribution with `df` degrees of freedom (Gamma(df / 2, 1 / 2)).

    Args:
      df: degrees of freedom, > 0 (checked on concrete values).

    Example:
      >>> import pdx.distribution as D
      >>> float(D.Chi2(3.0).mean)
      3.0
    """

    def __init__(self, df) -> None:
        self.df = param(df, "df", "Chi2")
        check_positive(self.df, "df", "Chi2")
        super().__init__(self.df * 0.5, jnp.full_like(self.df, 0.5))


class Beta(ExponentialFamily):
    """Beta distribution on (0, 1) with concentrations `alpha` and `beta`.

    Args:
      alpha: first concentration, > 0.
      beta: second concentration, > 0.

    Example:
      >>> import pdx.distribution as D
      >>> float(D.Beta(2.0, 2.0).mean)
      0.5
    """

    def __init__(self, alpha, beta) -> None:
        self.alpha, self.beta = broadcast_params("Beta", alpha=param(alpha, "alpha", "Beta"),
                                                 beta=param(beta, "beta", "Beta"))
        super().__init__(self.alpha.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.alpha.dtype

    @property
    def mean(self):
        """alpha / (alpha + beta)."""
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self):
        """alpha beta / ((alpha + beta)^2 (alpha + beta + 1))."""
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s ** 2 * (s + 1))

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="Beta.log_prob")
        a, b = self.alpha, self.beta
        return ((a - 1) * jnp.log(value) + (b - 1) * jnp.log(1.0 - value)
                + gammaln(a + b) - gammaln(a) - gammaln(b))

    def prob(self, value):
        """Density."""
        return jnp.exp(self.log_prob(value))

    def rsample(self, shape=(), *, key=None):
        """g1 / (g1 + g2) with gamma draws: differentiable in alpha and beta."""
        shape = self._extend_shape(sample_shape(shape, "Beta.rsample"))
        k1, k2 = jax.random.split(self._key(key, "rsample"))
        g1 = jax.random.gamma(k1, jnp.broadcast_to(self.alpha, shape), dtype=self.dtype)
        g2 = jax.random.gamma(k2, jnp.broadcast_to(self.beta, shape), dtype=self.dtype)
        return g1 / (g1 + g2)

    def entropy(self):
        """Entropy."""
        a, b = self.alpha, self.beta
        s = a + b
        return (gammaln(a) + gammaln(b) - gammaln(s) - (2.0 - s) * digamma(s)
                - (a - 1.0) * digamma(a) - (b - 1.0) * digamma(b))

    @property
    def _natural_parameters(self):
        return (self.alpha, self.beta)

    def _log_normalizer(self, x, y):
        return gammaln(x) + gammaln(y) - gammaln(x + y)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sp, sq = p.alpha + p.beta, q.alpha + q.beta
    return (gammaln(q.alpha) + gammaln(q.beta) + gammaln(sp)
            - (gammaln(p.alpha) + gammaln(p.beta) + gammaln(sq))
            + (p.alpha - q.alpha) * digamma(p.alpha) + (p.beta - q.beta) * digamma(p.beta)
            + (sq - sp) * digamma(sp))


class ContinuousBernoulli(Distribution):
    """Continuous Bernoulli distribution on [0, 1] with parameter `probs`.

    Near probs = 0.5 (inside `lims`) the normalizing constant, mean and
    variance use Taylor expansions for stability, as in Paddle. A Python
    number `probs` gives batch_shape (1,), as in Paddle.

    Args:
      probs: parameter in (0, 1), clipped to [eps, 1 - eps].
      lims: (low, high) interval around 0.5 that uses the Taylor expansions.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> d = D.ContinuousBernoulli(jnp.asarray([0.2, 0.8]))
      >>> d.cdf(jnp.asarray([0.0, 1.0])).tolist()
      [0.0, 1.0]
    """

    def __init__(self, probs, lims=(0.499, 0.501)) -> None:
        if isinstance(probs, (int, float)) and not isinstance(probs, bool):
            probs = [probs]
        probs = param(probs, "probs", "ContinuousBernoulli")
        eps = float(jnp.finfo(probs.dtype).eps)
        self.probs = jnp.clip(probs, eps, 1 - eps)
        if len(lims) != 2:
            raise ValueError(f"ContinuousBernoulli: `lims` must be a pair (low, high); got {lims!r}")
        self.lims = (float(lims[0]), float(lims[1]))
        super().__init__(self.probs.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.probs.dtype

    def _outside(self):
        return (self.probs <= self.lims[0]) | (self.probs > self.lims[1])

    def _cut_probs(self):
        return jnp.where(self._outside(), self.probs, self.lims[0])

    @staticmethod
    def _atanh(v):
        return 0.5 * (jnp.log1p(v) - jnp.log1p(-v))

    def _log_constant(self):
        p = self._cut_probs()
        below = jnp.where(p <= 0.5, p, 0.0)
        above = jnp.where(p >= 0.5, p, 1.0)
        exact = jnp.log(2.0 * jnp.abs(self._atanh(1.0 - 2.0 * p))) - jnp.where(
            p <= 0.5, jnp.log1p(-2.0 * below), jnp.log(2.0 * above - 1.0))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return jnp.where(self._outside(), exact, taylor)

    @property
    def mean(self):
        """Mean."""
        p = self._cut_probs()
        exact = p / (2.0 * p - 1.0) + 1.0 / (2.0 * self._atanh(1.0 - 2.0 * p))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return jnp.where(self._outside(), exact, taylor)

    @property
    def variance(self):
        """Variance."""
        p = self._cut_probs()
        exact = p * (p - 1.0) / (1.0 - 2.0 * p) ** 2 + 1.0 / (jnp.log1p(-p) - jnp.log(p)) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return jnp.where(self._outside(), exact, taylor)

    def rsample(self, shape=(), *, key=None):
        """icdf(u), u ~ U[0, 1): differentiable in probs."""
        shape = self._extend_shape(sample_shape(shape, "ContinuousBernoulli.rsample"))
        return self.icdf(_uniform(self._key(key, "rsample"), shape, self.dtype))

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="ContinuousBernoulli.log_prob")
        eps = float(jnp.finfo(self.dtype).eps)
        ce = jnp.nan_to_num(value * jnp.log(self.probs) + (1.0 - value) * jnp.log(1 - self.probs), neginf=-eps)
        return self._log_constant() + ce

    def prob(self, value):
        """Density."""
        return jnp.exp(self.log_prob(value))

    def entropy(self):
        """Entropy."""
        log_p, log_1mp = jnp.log(self.probs), jnp.log1p(-self.probs)
        h = -self._log_constant() + self.mean * (log_1mp - log_p) - log_1mp
        return jnp.where(self.probs == 0.5, 0.0, h)

    def cdf(self, value):
        """Cumulative distribution function."""
        value = value_arg(value, self.dtype, owner="ContinuousBernoulli.cdf")
        p = self._cut_probs()
        cdfs = (p ** value * (1.0 - p) ** (1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inner = jnp.where(self._outside(), cdfs, value)
        return jnp.where(value <= 0.0, 0.0, jnp.where(value >= 1.0, 1.0, inner))

    def icdf(self, value):
        """Inverse cdf."""
        value = value_arg(value, self.dtype, owner="ContinuousBernoulli.icdf")
        p = self._cut_probs()
        exact = (jnp.log1p(-p + value * (2.0 * p - 1.0)) - jnp.log1p(-p)) / (jnp.log(p) - jnp.log1p(-p))
        return jnp.where(self._outside(), exact, value)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    if p.batch_shape != q.batch_shape:
        raise ValueError(f"kl_divergence: ContinuousBernoulli batch shapes must match; got "
                         f"{p.batch_shape} and {q.batch_shape}")
    log_q, log_1mq = jnp.log(q.probs), jnp.log1p(-q.probs)
    return -p.entropy() - (q._log_constant() + p.mean * (log_q - log_1mq) + log_1mq)


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, location `loc` and scale `scale`.

    Args:
      df: degrees of freedom, >= 0 (checked on concrete values, as in Paddle).
      loc: location.
      scale: scale, >= 0 (checked on concrete values).
      name: ignored label.

    Example:
      >>> import pdx.distribution as D
      >>> float(D.StudentT(5.0, 1.0, 2.0).mean)
      1.0
    """

    def __init__(self, df, loc, scale, name=None) -> None:
        self.df, self.loc, self.scale = broadcast_params(
            "StudentT", df=param(df, "df", "StudentT"), loc=param(loc, "loc", "StudentT"),
            scale=param(scale, "scale", "StudentT"))
        check_positive(self.df, "df", "StudentT", allow_zero=True)
        check_positive(self.scale, "scale", "StudentT", allow_zero=True)
        self.name = name if name is not None else "StudentT"
        super().__init__(self.df.shape)

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.df.dtype

    @property
    def mean(self):
        """loc where df > 1, else nan."""
        return jnp.where(self.df > 1.0, self.loc, jnp.nan)

    @property
    def variance(self):
        """scale^2 df / (df - 2) for df > 2, inf for 1 < df <= 2, else nan."""
        df = jax.lax.stop_gradient(self.df)
        var = jnp.where(df > 2.0, self.scale ** 2 * df / (df - 2), jnp.nan)
        return jnp.where((df <= 2.0) & (df > 1.0), jnp.inf, var)

    def rsample(self, shape=(), *, key=None):
        """loc + scale * z / sqrt(chi2 / df): differentiable in all parameters."""
        shape = self._extend_shape(sample_shape(shape, "StudentT.rsample"))
        kz, kg = jax.random.split(self._key(key, "rsample"))
        z = jax.random.normal(kz, shape, self.dtype)
        chi2 = 2.0 * jax.random.gamma(kg, jnp.broadcast_to(0.5 * self.df, shape), dtype=self.dtype)
        return self.loc + self.scale * z * jax.lax.rsqrt(chi2 / self.df)

    def entropy(self):
        """Entropy."""
        df = self.df
        lbeta = gammaln(0.5 * df) + math.lgamma(0.5) - gammaln(0.5 * (df + 1))
        return (jnp.log(self.scale) + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
                + 0.5 * jnp.log(df) + lbeta)

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="StudentT.log_prob")
        df = self.df
        y = (value - self.loc) / self.scale
        z = (jnp.log(self.scale) + 0.5 * jnp.log(df) + 0.5 * math.log(math.pi)
             + gammaln(0.5 * df) - gammaln(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * jnp.log1p(y ** 2 / df) - z

    def prob(self, value):
        """Density."""
        return jnp.exp(self.log_prob(value))
