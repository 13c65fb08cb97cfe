"""`kl_divergence` and `register_kl`: a registry of KL functions keyed by (type(p), type(q)).

Dispatch picks the most specific registered pair: among the registered
(P, Q) with `issubclass(type(p), P)` and `issubclass(type(q), Q)`, the one
whose P is nearest in type(p)'s MRO, ties broken by Q's nearness. When
ranking Q first would choose a different function the match is ambiguous
and a RuntimeWarning says which pair to register, as in Paddle.
"""

from __future__ import annotations

import functools
import warnings

import jax

from pdx.distribution._base import Distribution, ExponentialFamily, sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_REGISTRY: dict = {}


def register_kl(cls_p, cls_q):
    """Decorator registering a function `f(p, q) -> KL(p || q)` for a pair of distribution classes.

    Args:
      cls_p: a subclass of `Distribution` (the type of `p`).
      cls_q: a subclass of `Distribution` (the type of `q`).

    Returns:
      A decorator that registers and returns the function unchanged.

    Example:
      >>> import pdx.distribution as D
      >>> class MyNormal(D.Normal):
      ...     pass
      >>> @D.register_kl(MyNormal, MyNormal)
      ... def _kl(p, q):
      ...     return p.loc * 0.0
      >>> float(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0)))
      0.0
    """
    for name, cls in (("cls_p", cls_p), ("cls_q", cls_q)):
        if not (isinstance(cls, type) and issubclass(cls, Distribution)):
            raise TypeError(f"register_kl: `{name}` must be a subclass of pdx.distribution.Distribution; "
                            f"got {cls!r}")

    def decorator(f):
        _REGISTRY[cls_p, cls_q] = f
        _dispatch.cache_clear()
        return f

    return decorator


def _rank(cls, base) -> int:
    return cls.__mro__.index(base)


@functools.lru_cache(maxsize=None)
def _dispatch(cls_p, cls_q):
    matches = [(p, q) for p, q in _REGISTRY if issubclass(cls_p, p) and issubclass(cls_q, q)]
    if not matches:
        raise NotImplementedError(
            f"kl_divergence: no KL registered for ({cls_p.__name__}, {cls_q.__name__}); register one with "
            f"@pdx.distribution.register_kl({cls_p.__name__}, {cls_q.__name__})")
    p_first = min(matches, key=lambda m: (_rank(cls_p, m[0]), _rank(cls_q, m[1])))
    q_first = min(matches, key=lambda m: (_rank(cls_q, m[1]), _rank(cls_p, m[0])))
    if _REGISTRY[p_first] is not _REGISTRY[q_first]:
        warnings.warn(f"Ambiguous kl_divergence({cls_p.__name__}, {cls_q.__name__}): register "
                      f"register_kl({p_first[0].__name__}, {q_first[1].__name__}) to resolve it",
                      RuntimeWarning, stacklevel=3)
    return _REGISTRY[p_first]


def kl_divergence(p, q) -> jax.Array:
    """KL(p || q) for two distributions, via the function registered for their types.

    Args:
      p: a Distribution.
      q: a Distribution.

    Returns:
      The divergence, one value per batch element (Categorical keeps a trailing
      size-1 axis, as in Paddle).

    Example:
      >>> import pdx.distribution as D
      >>> float(D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(0.0, 1.0)))
      0.0
    """
    for name, d in (("p", p), ("q", q)):
        if not isinstance(d, Distribution):
            raise TypeError(f"kl_divergence: `{name}` must be a Distribution; got {type(d).__name__}")
    return _dispatch(type(p), type(q))(p, q)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """Bregman divergence of the log normalizer, for two members of the same family."""
    if type(p) is not type(q):
        raise NotImplementedError(f"kl_divergence: no KL registered for ({type(p).__name__}, "
                                  f"{type(q).__name__}); register one with register_kl")
    p_params, p_log_norm, p_grads = p._log_normalizer_and_grads()
    q_params = q._natural_parameters
    kl = q._log_normalizer(*q_params) - p_log_norm
    for pp, qp, g in zip(p_params, q_params, p_grads):
        kl = kl - sum_rightmost((qp - pp) * g, len(q.event_shape))
    return kl
