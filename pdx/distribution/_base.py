"""Distribution and ExponentialFamily base classes, pytree registration and shared argument checks.

Every Distribution (and every Transform, see `_transform.py`) is a JAX
pytree: its array attributes (and nested distributions/transforms) are the
children, everything else (shapes, names, options) is static auxiliary data.
So a distribution can be passed into `jax.jit` / `pdx.jit` / `jax.grad` /
`jax.vmap` like any array pytree, and `jax.grad` of a function of a
distribution returns a distribution-shaped gradient.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import get_default_dtype
from pdx._random import in_trace, next_key

__all__ = ["Distribution", "ExponentialFamily"]


def _is_child(value) -> bool:
    """True for attributes that are pytree children (arrays and nested distributions/transforms)."""
    if isinstance(value, (jax.Array, np.ndarray, Distribution)) or _is_transform(value):
        return True
    if isinstance(value, (list, tuple)):  # an empty list (no transforms) is a leafless child, not unhashable aux
        return not value or any(_is_child(v) for v in value)
    return False


def _is_transform(value) -> bool:
    from pdx.distribution._transform import Transform

    return isinstance(value, Transform)


def _flatten(obj):
    items = sorted(obj.__dict__.items())
    child_names = tuple(k for k, v in items if _is_child(v))
    static = tuple((k, v) for k, v in items if not _is_child(v))
    return tuple(obj.__dict__[k] for k in child_names), (child_names, static)


def _unflatten(cls, aux, children):
    child_names, static = aux
    obj = object.__new__(cls)
    obj.__dict__.update(static)
    obj.__dict__.update(zip(child_names, children))
    return obj


def register_pytree_class(cls) -> None:
    """Register `cls` with jax.tree_util: array attributes are children, the rest is static."""
    jax.tree_util.register_pytree_node(cls, _flatten, lambda aux, ch: _unflatten(cls, aux, ch))


# ---------------------------------------------------------------------------
# argument handling shared by every distribution


def _default_float():
    return jnp.dtype(get_default_dtype())


def param(x, name: str, owner: str, *, dtype=None) -> jax.Array:
    """Convert a distribution parameter to a floating jax.Array, naming it on bad input."""
    if isinstance(x, (str, bytes, dict, set)) or x is None or isinstance(x, bool):
        raise TypeError(f"{owner}: `{name}` must be a number, list, numpy array or tensor; got {x!r}")
    try:
        arr = jnp.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{owner}: `{name}` must be a number, list, numpy array or tensor; "
                        f"got {type(x).__name__}") from e
    if dtype is not None:
        return arr.astype(dtype)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(_default_float())
    return arr


def broadcast_params(owner: str, **params) -> list[jax.Array]:
    """Broadcast named parameters to one shape and one floating dtype; ValueError names them on mismatch."""
    shapes = {n: tuple(jnp.shape(v)) for n, v in params.items()}
    try:
        shape = jnp.broadcast_shapes(*shapes.values())
    except ValueError:
        desc = ", ".join(f"{n}.shape={s}" for n, s in shapes.items())
        raise ValueError(f"{owner}: parameter shapes do not broadcast: {desc}; give them equal "
                         f"shapes or shapes that broadcast (size-1 dims)") from None
    dtype = jnp.result_type(*[v.dtype for v in params.values()])
    return [jnp.broadcast_to(v, shape).astype(dtype) for v in params.values()]


def value_arg(value, dtype, name: str = "value", owner: str = "") -> jax.Array:
    """Convert a value passed to log_prob/cdf/... to the parameters' dtype."""
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise TypeError(f"{owner}: `{name}` must be a tensor or number; got {value!r}")
    return jnp.asarray(value).astype(dtype)


def check_positive(x, name: str, owner: str, *, allow_zero: bool = False) -> None:
    """Raise ValueError when a concrete parameter has a non-positive entry (skipped under a trace)."""
    if in_trace() or isinstance(x, jax.core.Tracer):
        return
    ok = jnp.all(x >= 0) if allow_zero else jnp.all(x > 0)
    if not bool(ok):
        bad = np.asarray(x).reshape(-1)
        bad = bad[(bad < 0) if allow_zero else (bad <= 0)][:4]
        need = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{owner}: every entry of `{name}` must be {need}; got {bad.tolist()} "
                         f"among the values")


def sample_shape(shape, owner: str, name: str = "shape") -> tuple[int, ...]:
    """Paddle's sample shape: a list/tuple (or 1-D array) of ints; an int is taken as [int]."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    if isinstance(shape, (jax.Array, np.ndarray)):
        return tuple(int(s) for s in np.asarray(shape).reshape(-1))
    if isinstance(shape, Iterable) and not isinstance(shape, (str, bytes)):
        dims = tuple(shape)
        if all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims):
            return tuple(int(d) for d in dims)
    raise TypeError(f"{owner}: `{name}` must be a list/tuple of non-negative ints, e.g. [1000]; got {shape!r}")


def concrete_int(x, what: str, owner: str) -> int:
    """Read a data-dependent size; a clear error under a trace, where sizes must be static."""
    if isinstance(x, jax.core.Tracer):
        raise ValueError(f"{owner}: {what} depends on parameter values, which are not known "
                         f"inside jit/grad; call it eagerly (outside the traced function)")
    return int(x)


def sum_rightmost(value, n: int):
    """Sum the last `n` axes (none when n <= 0)."""
    return value.sum(axis=tuple(range(-n, 0))) if n > 0 else value


def seed_key(seed, key):
    """Paddle's per-call `seed` (non-zero fixes the stream) unless a key is given."""
    if key is None and seed:
        if not isinstance(seed, numbers.Integral):
            raise TypeError(f"`seed` must be an int; got {seed!r}")
        return jax.random.key(int(seed))
    return key


# ---------------------------------------------------------------------------


class Distribution:
    """Base class of every probability distribution (Paddle's `paddle.distribution.Distribution`).

    Subclasses set `batch_shape` (independent, non-identical draws) and
    `event_shape` (the shape of one draw) and implement `log_prob`, `entropy`,
    `rsample`/`sample`, `mean`, `variance` where defined. Every subclass is a
    JAX pytree, so distributions go into jitted functions as arguments.

    Randomness: `sample`/`rsample` take a keyword-only `key=`. Eagerly the key
    defaults to one split off pdx's global generator (`pdx.seed`); under
    `jit`/`grad` a key is required (a global generator cannot advance inside
    a compiled program).

    Args:
      batch_shape: the batch shape.
      event_shape: the event shape.

    Example:
      >>> import pdx.distribution as D
      >>> d = D.Normal(0.0, 1.0)
      >>> d.batch_shape, d.event_shape
      ((), ())
    """

    def __init__(self, batch_shape=(), event_shape=()) -> None:
        self._batch_shape = tuple(int(s) for s in batch_shape)
        self._event_shape = tuple(int(s) for s in event_shape)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_pytree_class(cls)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Shape of the batch of independent distributions."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        """Shape of one event (one draw of one distribution)."""
        return self._event_shape

    @property
    def mean(self) -> jax.Array:
        """Mean of the distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def variance(self) -> jax.Array:
        """Variance of the distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> jax.Array:
        """Standard deviation: sqrt(variance)."""
        return jnp.sqrt(self.variance)

    def _key(self, key, method: str):
        return next_key(key, op=f"{type(self).__name__}.{method}")

    def _extend_shape(self, shape) -> tuple[int, ...]:
        return tuple(shape) + self._batch_shape + self._event_shape

    def sample(self, shape=(), *, key=None) -> jax.Array:
        """Draw samples of shape `shape + batch_shape + event_shape` (no gradient).

        Args:
          shape: sample shape, a list/tuple of ints.
          key: a `jax.random` key; required under jit.
        """
        return jax.lax.stop_gradient(self.rsample(shape, key=key))

    def rsample(self, shape=(), *, key=None) -> jax.Array:
        """Reparameterized samples: differentiable w.r.t. the parameters."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (rsample)")

    def entropy(self) -> jax.Array:
        """Entropy, one value per batch element."""
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def log_prob(self, value) -> jax.Array:
        """Log probability (density or mass) of `value`."""
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def prob(self, value) -> jax.Array:
        """Probability (density or mass) of `value`: exp(log_prob(value))."""
        return jnp.exp(self.log_prob(value))

    def probs(self, value) -> jax.Array:
        """Paddle's older name for `prob`."""
        return self.prob(value)

    def kl_divergence(self, other) -> jax.Array:
        """KL(self || other), dispatched through `pdx.distribution.kl_divergence`."""
        from pdx.distribution._kl import kl_divergence

        return kl_divergence(self, other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_shape={self.batch_shape}, event_shape={self.event_shape})"


register_pytree_class(Distribution)


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions p(x) = h(x) exp(<eta, T(x)> - A(eta)).

    Subclasses provide `_natural_parameters` (a tuple of arrays), `_log_normalizer(*eta)`
    and, for the generic `entropy`, `_mean_carrier_measure`. The generic entropy and the
    generic KL divergence between two members of the same family (a Bregman divergence of
    A) use `jax.grad` of the log normalizer.

    Example:
      >>> import pdx.distribution as D
      >>> isinstance(D.Beta(2.0, 3.0), D.ExponentialFamily)
      True
    """

    @property
    def _natural_parameters(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def _log_normalizer_and_grads(self):
        params = tuple(jax.lax.stop_gradient(p) for p in self._natural_parameters)
        log_norm, vjp = jax.vjp(self._log_normalizer, *params)
        grads = vjp(jnp.ones_like(log_norm))
        return params, log_norm, grads

    def entropy(self) -> jax.Array:
        """Entropy from the natural parameters: A(eta) - <eta, grad A(eta)> - E[log h(x)]."""
        params, log_norm, grads = self._log_normalizer_and_grads()
        result = -self._mean_carrier_measure + log_norm
        for p, g in zip(params, grads):
            result = result - sum_rightmost(p * g, len(self.event_shape))
        return result
