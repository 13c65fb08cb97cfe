"""Multivariate distributions: Dirichlet, MultivariateNormal, LKJCholesky."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import digamma, gammaln

from pdx.distribution._base import ExponentialFamily, Distribution, check_positive, param, value_arg
from pdx.distribution._base import sample_shape as _shape_arg
from pdx.distribution._continuous import Beta
from pdx.distribution._kl import register_kl

__all__ = ["Dirichlet", "MultivariateNormal", "LKJCholesky"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution on the simplex over the last axis of `concentration`.

    Args:
      concentration: tensor of shape batch_shape + [k], entries > 0.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> D.Dirichlet(jnp.asarray([1.0, 3.0])).mean.tolist()
      [0.25, 0.75]
    """

    def __init__(self, concentration) -> None:
        c = param(concentration, "concentration", "Dirichlet")
        if c.ndim < 1 or c.size == 0:
            raise ValueError(f"Dirichlet: `concentration` must be at least 1-D and non-empty; got shape {c.shape}")
        self.concentration = c
        super().__init__(c.shape[:-1], c.shape[-1:])

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.concentration.dtype

    @property
    def mean(self):
        """concentration / concentration.sum(-1)."""
        return self.concentration / self.concentration.sum(-1, keepdims=True)

    @property
    def variance(self):
        """Per-component variance."""
        c = self.concentration
        c0 = c.sum(-1, keepdims=True)
        return c * (c0 - c) / (c0 ** 2 * (c0 + 1))

    def rsample(self, shape=(), *, key=None):
        """Simplex draws of shape `shape + batch_shape + [k]`, differentiable in concentration."""
        shape = _shape_arg(shape, "Dirichlet.rsample")
        return jax.random.dirichlet(self._key(key, "rsample"), self.concentration,
                                    shape=shape + self.batch_shape, dtype=self.dtype)

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="Dirichlet.log_prob")
        c = self.concentration
        return (jnp.log(value) * (c - 1.0)).sum(-1) + gammaln(c.sum(-1)) - gammaln(c).sum(-1)

    def entropy(self):
        """Entropy."""
        c = self.concentration
        c0 = c.sum(-1)
        k = c.shape[-1]
        return gammaln(c).sum(-1) - gammaln(c0) - (k - c0) * digamma(c0) - ((c - 1.0) * digamma(c)).sum(-1)

    @property
    def _natural_parameters(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return gammaln(x).sum(-1) - gammaln(x.sum(-1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    cp, cq = p.concentration, q.concentration
    sp = cp.sum(-1)
    return (gammaln(sp) - gammaln(cq.sum(-1)) - (gammaln(cp) - gammaln(cq)).sum(-1)
            + ((cp - cq) * (digamma(cp) - digamma(sp)[..., None])).sum(-1))


def _matrix_arg(x, name, dtype):
    m = param(x, name, "MultivariateNormal", dtype=dtype)
    if m.ndim < 2 or m.shape[-1] != m.shape[-2]:
        raise ValueError(f"MultivariateNormal: `{name}` must be a square matrix with optional leading batch "
                         f"dims, shape [..., n, n]; got shape {m.shape}")
    return m


def _precision_to_scale_tril(p):
    lf = jnp.linalg.cholesky(jnp.flip(p, (-2, -1)))
    l_inv = jnp.swapaxes(jnp.flip(lf, (-2, -1)), -1, -2)
    eye = jnp.broadcast_to(jnp.eye(p.shape[-1], dtype=p.dtype), p.shape)
    return solve_triangular(l_inv, eye, lower=True)


def _mahalanobis(tril, x):
    """x^T (L L^T)^-1 x over the last axis, broadcasting batch dims."""
    shape = jnp.broadcast_shapes(tril.shape[:-2], x.shape[:-1])
    tril = jnp.broadcast_to(tril, shape + tril.shape[-2:])
    x = jnp.broadcast_to(x, shape + x.shape[-1:])
    return (solve_triangular(tril, x[..., None], lower=True)[..., 0] ** 2).sum(-1)


def _half_log_det(tril):
    return jnp.log(jnp.diagonal(tril, axis1=-2, axis2=-1)).sum(-1)


class MultivariateNormal(Distribution):
    """Multivariate normal distribution with mean `loc` and one of covariance, precision or scale_tril.

    Args:
      loc: mean, shape batch_shape + [n] (a number becomes shape [1], as in Paddle).
      covariance_matrix: positive-definite covariance, [..., n, n].
      precision_matrix: positive-definite inverse covariance, [..., n, n].
      scale_tril: lower-triangular Cholesky factor of the covariance with positive diagonal.

    Exactly one of the three matrix arguments must be given.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> d = D.MultivariateNormal(jnp.zeros(2), covariance_matrix=jnp.eye(2))
      >>> round(float(d.log_prob(jnp.zeros(2))), 4)
      -1.8379
    """

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None) -> None:
        if isinstance(loc, (int, float)) and not isinstance(loc, bool):
            loc = [loc]
        loc = param(loc, "loc", "MultivariateNormal")
        if loc.ndim < 1:
            loc = loc.reshape((1,))
        given = [n for n, v in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                ("scale_tril", scale_tril)) if v is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: give exactly one of `covariance_matrix`, `precision_matrix` "
                             f"or `scale_tril`; got {given or 'none'}")
        name = given[0]
        m = _matrix_arg({"covariance_matrix": covariance_matrix, "precision_matrix": precision_matrix,
                         "scale_tril": scale_tril}[name], name, loc.dtype)
        if m.shape[-1] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: `loc`.shape={loc.shape} and `{name}`.shape={m.shape} must "
                             f"agree on the event size n (loc [..., n], matrix [..., n, n])")
        try:
            batch_shape = jnp.broadcast_shapes(m.shape[:-2], loc.shape[:-1])
        except ValueError:
            raise ValueError(f"MultivariateNormal: batch dims of `loc`.shape={loc.shape} and `{name}`.shape="
                             f"{m.shape} do not broadcast") from None
        n = loc.shape[-1]
        self.covariance_matrix = self.precision_matrix = self.scale_tril = None
        setattr(self, name, jnp.broadcast_to(m, batch_shape + (n, n)))
        self.loc = jnp.broadcast_to(loc, batch_shape + (n,))
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = m
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = jnp.linalg.cholesky(m)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(m)
        super().__init__(batch_shape, (n,))

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.loc.dtype

    @property
    def mean(self):
        """loc."""
        return self.loc

    @property
    def variance(self):
        """Diagonal of the covariance."""
        return jnp.broadcast_to((self._unbroadcasted_scale_tril ** 2).sum(-1), self.batch_shape + self.event_shape)

    def rsample(self, shape=(), *, key=None):
        """loc + L eps: differentiable in loc and the matrix."""
        shape = self._extend_shape(_shape_arg(shape, "MultivariateNormal.rsample"))
        eps = jax.random.normal(self._key(key, "rsample"), shape, self.dtype)
        return self.loc + jnp.einsum("...ij,...j->...i", self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        """Log density."""
        value = value_arg(value, self.dtype, owner="MultivariateNormal.log_prob")
        m = _mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self.event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - _half_log_det(self._unbroadcasted_scale_tril)

    def prob(self, value):
        """Density."""
        return jnp.exp(self.log_prob(value))

    def entropy(self):
        """Entropy."""
        n = self.event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + _half_log_det(self._unbroadcasted_scale_tril)
        return jnp.broadcast_to(h, self.batch_shape)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(f"kl_divergence: MultivariateNormal event shapes must match; got {p.event_shape} "
                         f"and {q.event_shape}")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = jnp.broadcast_shapes(lp.shape, lq.shape)
    lp_b, lq_b = jnp.broadcast_to(lp, shape), jnp.broadcast_to(lq, shape)
    # tr(Sq^-1 Sp) = ||Lq^-1 Lp||_F^2
    trace = (solve_triangular(lq_b, lp_b, lower=True) ** 2).sum((-2, -1))
    m = _mahalanobis(lq, p.loc - q.loc)
    return _half_log_det(lq) - _half_log_det(lp) + 0.5 * (trace + m - p.event_shape[0])


class LKJCholesky(Distribution):
    """LKJ distribution over Cholesky factors of `dim` x `dim` correlation matrices.

    log p(L) = sum_i (dim - i - 1 + 2 (concentration - 1)) log L_ii - log Z.

    Args:
      dim: matrix size, an int >= 2.
      concentration: shape parameter eta > 0 (1 = uniform over correlation matrices).
      sample_method: 'onion' or 'cvine'.

    Example:
      >>> import jax
      >>> import pdx.distribution as D
      >>> D.LKJCholesky(3, 2.0).sample([5], key=jax.random.key(0)).shape
      (5, 3, 3)
    """

    def __init__(self, dim: int = 2, concentration=1.0, sample_method: str = "onion") -> None:
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"LKJCholesky: `dim` must be an int; got {dim!r}")
        if dim < 2:
            raise ValueError(f"LKJCholesky: `dim` must be >= 2; got dim={dim}")
        if sample_method not in ("onion", "cvine"):
            raise ValueError(f"LKJCholesky: `sample_method` must be 'onion' or 'cvine'; got {sample_method!r}")
        self.concentration = param(concentration, "concentration", "LKJCholesky")
        check_positive(self.concentration, "concentration", "LKJCholesky")
        self.dim = dim
        self.sample_method = sample_method
        super().__init__(self.concentration.shape, (dim, dim))

    @property
    def dtype(self):
        """The parameters' dtype."""
        return self.concentration.dtype

    def _onion(self, shape, key):
        kb, kn = jax.random.split(key)
        c = self.concentration
        marginal = c + 0.5 * (self.dim - 2)
        # Row i (i >= 1) draws its squared length y ~ Beta(i / 2, marginal - (i - 1) / 2) (Lewandowski,
        # Kurowicka and Joe 2009, section 3.2); row 0 is unused (its direction is zero).
        row = jnp.arange(self.dim, dtype=c.dtype)
        conc1 = jnp.maximum(row / 2, 0.5)
        conc0 = marginal[..., None] - 0.5 * jnp.maximum(row - 1, 0)
        y = Beta(conc1, conc0).sample(shape, key=kb)[..., None]
        u = jnp.tril(jax.random.normal(kn, self._extend_shape(shape), c.dtype), -1)
        norm = jnp.linalg.norm(u, axis=-1, keepdims=True)
        u = jnp.where(norm > 0, u / jnp.where(norm > 0, norm, 1.0), 0.0)
        w = jnp.sqrt(y) * u
        diag = jnp.sqrt(jnp.clip(1 - (w ** 2).sum(-1), jnp.finfo(c.dtype).tiny))
        return w + diag[..., None] * jnp.eye(self.dim, dtype=c.dtype)

    def _cvine(self, shape, key):
        c = self.concentration
        marginal = c + 0.5 * (self.dim - 2)
        col = jnp.arange(self.dim, dtype=c.dtype)
        conc = jnp.broadcast_to(marginal[..., None, None] - 0.5 * col, c.shape + (self.dim, self.dim))
        r = 2 * Beta(conc, conc).sample(shape, key=key) - 1
        r = jnp.tril(r, -1)
        eps = jnp.finfo(c.dtype).tiny
        r = jnp.clip(r, -1 + eps, 1 - eps)
        rest = jnp.cumprod(jnp.sqrt(1 - r ** 2), axis=-1)
        pad = [(0, 0)] * (rest.ndim - 1) + [(1, 0)]
        shifted = jnp.pad(rest[..., :-1], pad, constant_values=1.0)
        return (r + jnp.eye(self.dim, dtype=c.dtype)) * shifted

    def sample(self, sample_shape=(), *, key=None):
        """Cholesky factors of shape `sample_shape + batch_shape + [dim, dim]`."""
        shape = _shape_arg(sample_shape, "LKJCholesky.sample", name="sample_shape")
        key = self._key(key, "sample")
        out = self._onion(shape, key) if self.sample_method == "onion" else self._cvine(shape, key)
        return jax.lax.stop_gradient(out)

    def log_prob(self, value):
        """Log density of a Cholesky factor `value` of shape [..., dim, dim]."""
        value = value_arg(value, self.dtype, owner="LKJCholesky.log_prob")
        c = self.concentration
        diag = jnp.diagonal(value, axis1=-2, axis2=-1)[..., 1:]
        order = 2 * (c - 1)[..., None] + self.dim - jnp.arange(2, self.dim + 1, dtype=c.dtype)
        unnormalized = (order * jnp.log(diag)).sum(-1)
        dm1 = self.dim - 1
        alpha = c + 0.5 * dm1
        j = jnp.arange(1, dm1 + 1, dtype=c.dtype)
        mvlgamma = dm1 * (dm1 - 1) / 4 * math.log(math.pi) + gammaln((alpha - 0.5)[..., None] + (1 - j) / 2).sum(-1)
        log_norm = 0.5 * dm1 * math.log(math.pi) + mvlgamma - gammaln(alpha) * dm1
        return unnormalized - log_norm
