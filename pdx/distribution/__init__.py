"""Probability distributions and transforms with Paddle's `paddle.distribution` API, on JAX.

Distributions hold `jax.Array` parameters and are JAX pytrees, so they pass
into `jax.jit` / `pdx.jit` / `jax.grad` / `jax.vmap` as arguments. `rsample`
is reparameterized (differentiable w.r.t. the parameters through `jax.grad`);
`sample` is the same draw without gradient (or a discrete draw).

Randomness: `sample`/`rsample` take a keyword-only `key=`. Eagerly it
defaults to a key split off pdx's global generator (`pdx.seed`); under a
trace (jit/grad/vmap) an explicit key is required.

Example:
  >>> import jax
  >>> import pdx.distribution as D
  >>> p, q = D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)
  >>> round(float(D.kl_divergence(p, q)), 4)
  0.4431
  >>> p.sample([2, 3], key=jax.random.key(0)).shape
  (2, 3)
"""

from pdx.distribution._base import Distribution, ExponentialFamily
from pdx.distribution._continuous import (
    Beta,
    Cauchy,
    Chi2,
    ContinuousBernoulli,
    Exponential,
    Gamma,
    Gumbel,
    Laplace,
    LogNormal,
    Normal,
    StudentT,
    Uniform,
)
from pdx.distribution._discrete import Bernoulli, Binomial, Categorical, Geometric, Multinomial, Poisson
from pdx.distribution._kl import kl_divergence, register_kl
from pdx.distribution._multivariate import Dirichlet, LKJCholesky, MultivariateNormal
from pdx.distribution._transform import (
    AbsTransform,
    AffineTransform,
    ChainTransform,
    ExpTransform,
    IndependentTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
)
from pdx.distribution._transformed import Independent, TransformedDistribution

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "ChainTransform",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "ExponentialFamily",
    "Gamma",
    "Geometric",
    "Gumbel",
    "Independent",
    "IndependentTransform",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "Multinomial",
    "MultivariateNormal",
    "Normal",
    "Poisson",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "StackTransform",
    "StickBreakingTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "kl_divergence",
    "register_kl",
]
