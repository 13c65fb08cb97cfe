"""Paddle-exact optax transformations.

Each is a plain `optax.GradientTransformation` (init/update with a NamedTuple
state) reproducing one of Paddle's optimizer kernels where optax's own
transform puts a constant elsewhere (epsilon outside the square root in
Adagrad, inside the max in Adamax, AMSGrad's running max taken before bias
correction), plus the per-parameter pieces Paddle applies around every update:
L1/L2 gradient regularization and per-parameter learning-rate multipliers.

Per-parameter settings are pytrees of Python numbers with the parameters'
structure (e.g. a dict name -> float), so they stay static under `jax.jit`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

__all__ = [
    "ScaleByPaddleAdagradState",
    "ScaleByPaddleAdamaxState",
    "ScaleByPaddleAmsgradState",
    "add_regularization",
    "partition_by_name",
    "scale_by_paddle_adagrad",
    "scale_by_paddle_adamax",
    "scale_by_paddle_amsgrad",
    "scale_by_paddle_lr",
]


def _zeros_like(params, dtype=None):
    return jax.tree.map(lambda p: jnp.zeros_like(p, dtype=dtype), params)


def add_regularization(l1=None, l2=None) -> optax.GradientTransformation:
    """Add Paddle's weight-decay gradient terms: `g + l2 * p + l1 * sign(p)`.

    Args:
      l1: None or a pytree of floats (params' structure): L1Decay coefficients.
      l2: None or a pytree of floats (params' structure): L2Decay coefficients.

    Returns:
      A stateless `optax.GradientTransformation` (needs `params` in update).

    Example:
      >>> import jax.numpy as jnp
      >>> tx = add_regularization(l2={"w": 0.5})
      >>> p = {"w": jnp.array([2.0])}
      >>> tx.update({"w": jnp.array([1.0])}, tx.init(p), p)[0]["w"].tolist()
      [2.0]
    """

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("add_regularization needs params: call tx.update(grads, state, params)")

        def one(g, p, c1, c2):
            p = p.astype(g.dtype)
            if c2:
                g = g + c2 * p
            if c1:
                g = g + c1 * jnp.sign(p)
            return g

        zeros = jax.tree.map(lambda _: 0.0, updates)
        return jax.tree.map(one, updates, params, zeros if l1 is None else l1, zeros if l2 is None else l2), state

    return optax.GradientTransformation(optax.init_empty_state, update_fn)


def scale_by_paddle_lr(learning_rate, multipliers=None, *, flip_sign: bool = True,
                       decoupled_decay=None) -> optax.GradientTransformationExtraArgs:
    """Scale updates by the learning rate times a per-parameter multiplier.

    Paddle's per-parameter learning rate is `global_lr * ParamAttr.learning_rate`
    (or the param group's `learning_rate`); this is that product.

    Args:
      learning_rate: a float, a schedule (step count -> lr, e.g.
        `scheduler.as_schedule()`), or None to require `learning_rate=` at
        every `update` call.
      multipliers: None or a pytree of floats with the params' structure.
      flip_sign: multiply by `-lr` (a descent step) when True, by `+lr` otherwise.
      decoupled_decay: None or a pytree of floats (params' structure): AdamW's
        decoupled weight decay, applied in Paddle's order — the parameter is
        first decayed, `p1 = p - (lr * multiplier * coeff) * p` in float32, then
        stepped, `p1 + update` — and returned as one update from `p` (so the
        rounding matches Paddle's kernel step for step; needs `params`).

    Returns:
      An `optax.GradientTransformationExtraArgs`; `update(..., learning_rate=x)`
      overrides the schedule for that call (how a stateful optimizer feeds
      its scheduler's current value).

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_lr(0.1, {"w": 2.0, "b": 1.0})
      >>> g = {"w": jnp.array([1.0]), "b": jnp.array([1.0])}
      >>> out, _ = tx.update(g, tx.init(g))
      >>> [round(float(out[k][0]), 3) for k in ("b", "w")]
      [-0.1, -0.2]
    """
    scheduled = callable(learning_rate)
    schedule = learning_rate if scheduled else None
    static_lr = None if scheduled else learning_rate

    def init_fn(params):
        del params
        if scheduled:
            return optax.ScaleByScheduleState(count=jnp.zeros([], jnp.int32))
        return optax.EmptyState()

    def update_fn(updates, state, params=None, *, learning_rate=None, **extra):
        del extra
        if decoupled_decay is not None and params is None:
            raise ValueError("scale_by_paddle_lr with decoupled_decay needs params: call tx.update(grads, state, params)")
        lr = learning_rate
        if lr is None:
            if scheduled:
                lr = schedule(state.count)
            elif static_lr is None:
                raise ValueError("scale_by_paddle_lr was built with learning_rate=None: pass update(..., learning_rate=value)")
            else:
                lr = static_lr
        if scheduled:
            state = optax.ScaleByScheduleState(count=optax.safe_increment(state.count))
        sign = -1.0 if flip_sign else 1.0
        mults = jax.tree.map(lambda _: 1.0, updates) if multipliers is None else multipliers

        def one(u, m):
            scale = lr if m == 1.0 else lr * m
            return u * jnp.asarray(sign * scale, u.dtype)

        out = jax.tree.map(one, updates, mults)
        if decoupled_decay is not None:
            def decayed(u, p, m, c):
                if not c:
                    return u
                p = p.astype(u.dtype)
                rate = jnp.asarray(lr, u.dtype) * jnp.asarray(m, u.dtype) * jnp.asarray(c, u.dtype)
                return (p - rate * p + u) - p

            out = jax.tree.map(decayed, out, params, mults, decoupled_decay)
        return out, state

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


class ScaleByPaddleAmsgradState(NamedTuple):
    """Adam-with-AMSGrad state: step count, moments, running max of moment2."""

    count: jax.Array
    moment1: Any
    moment2: Any
    moment2_max: Any


def scale_by_paddle_amsgrad(beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8) -> optax.GradientTransformation:
    """Paddle's Adam with `amsgrad=True`.

    Paddle keeps the running max of the raw second moment and bias-corrects
    after the max (optax's `scale_by_amsgrad` takes the max of the corrected
    moment): `m_hat / (sqrt(max(v)) / sqrt(1 - beta2^t) + eps)`.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_amsgrad()
      >>> g = {"w": jnp.array([0.5])}
      >>> round(float(tx.update(g, tx.init(g))[0]["w"][0]), 4)
      1.0
    """

    def init_fn(params):
        zeros = _zeros_like(params)
        return ScaleByPaddleAmsgradState(jnp.zeros([], jnp.int32), zeros, zeros, zeros)

    def update_fn(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        m1 = jax.tree.map(lambda g, m: beta1 * m + (1 - beta1) * g, updates, state.moment1)
        m2 = jax.tree.map(lambda g, v: beta2 * v + (1 - beta2) * g * g, updates, state.moment2)
        m2_max = jax.tree.map(jnp.maximum, m2, state.moment2_max)
        c1 = 1 - beta1 ** count.astype(jnp.float32)
        c2 = jnp.sqrt(1 - beta2 ** count.astype(jnp.float32))
        out = jax.tree.map(lambda m, v: (m / c1.astype(m.dtype)) / (jnp.sqrt(v) / c2.astype(v.dtype) + epsilon), m1, m2_max)
        return out, ScaleByPaddleAmsgradState(count, m1, m2, m2_max)

    return optax.GradientTransformation(init_fn, update_fn)


class ScaleByPaddleAdagradState(NamedTuple):
    """Adagrad state: the running sum of squared gradients."""

    moment: Any


def scale_by_paddle_adagrad(epsilon: float = 1e-6, initial_accumulator_value: float = 0.0) -> optax.GradientTransformation:
    """Paddle's Adagrad direction `g / (sqrt(sum g^2) + eps)` (epsilon outside the root).

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_adagrad(epsilon=0.0)
      >>> g = {"w": jnp.array([-2.0])}
      >>> tx.update(g, tx.init(g))[0]["w"].tolist()
      [-1.0]
    """

    def init_fn(params):
        return ScaleByPaddleAdagradState(jax.tree.map(lambda p: jnp.full_like(p, initial_accumulator_value), params))

    def update_fn(updates, state, params=None):
        del params
        moment = jax.tree.map(lambda g, m: m + g * g, updates, state.moment)
        out = jax.tree.map(lambda g, m: g / (jnp.sqrt(m) + epsilon), updates, moment)
        return out, ScaleByPaddleAdagradState(moment)

    return optax.GradientTransformation(init_fn, update_fn)


class ScaleByPaddleAdamaxState(NamedTuple):
    """Adamax state: step count, first moment, infinity norm."""

    count: jax.Array
    moment: Any
    inf_norm: Any


def scale_by_paddle_adamax(beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8) -> optax.GradientTransformation:
    """Paddle's Adamax: `inf = max(beta2 * inf + eps, |g|)`, direction
    `m / inf / (1 - beta1^t)` (optax adds epsilon to |g| instead).

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_adamax(epsilon=0.0)
      >>> g = {"w": jnp.array([0.5])}
      >>> round(float(tx.update(g, tx.init(g))[0]["w"][0]), 4)
      1.0
    """

    def init_fn(params):
        zeros = _zeros_like(params)
        return ScaleByPaddleAdamaxState(jnp.zeros([], jnp.int32), zeros, zeros)

    def update_fn(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        moment = jax.tree.map(lambda g, m: beta1 * m + (1 - beta1) * g, updates, state.moment)
        inf_norm = jax.tree.map(lambda g, n: jnp.maximum(beta2 * n + epsilon, jnp.abs(g)), updates, state.inf_norm)
        correction = 1 - beta1 ** count.astype(jnp.float32)
        out = jax.tree.map(lambda m, n: (m / n) / correction.astype(m.dtype), moment, inf_norm)
        return out, ScaleByPaddleAdamaxState(count, moment, inf_norm)

    return optax.GradientTransformation(init_fn, update_fn)


def partition_by_name(groups: Sequence[tuple[Sequence[str], optax.GradientTransformation]]) -> optax.GradientTransformationExtraArgs:
    """Apply a different transformation to each group of entries of a dict.

    Paddle's parameter groups: each group's transformation sees only the
    sub-dict of its names. The state is a tuple with one state per group.

    Args:
      groups: (names, transformation) pairs; every key of the params dict
        must belong to exactly one group.

    Returns:
      An `optax.GradientTransformationExtraArgs` over dicts name -> array.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> tx = partition_by_name([(["a"], optax.sgd(1.0)), (["b"], optax.sgd(0.5))])
      >>> g = {"a": jnp.array(1.0), "b": jnp.array(1.0)}
      >>> out, _ = tx.update(g, tx.init(g), g)
      >>> float(out["a"]), float(out["b"])
      (-1.0, -0.5)
    """
    groups = [(tuple(names), optax.with_extra_args_support(tx)) for names, tx in groups]
    expected = [n for names, _ in groups for n in names]
    if len(set(expected)) != len(expected):
        raise ValueError(f"partition_by_name: a name appears in more than one group: {expected}")

    def check(tree, what):
        if not isinstance(tree, Mapping):
            raise TypeError(f"partition_by_name: {what} must be a dict name -> array; got {type(tree).__name__}")
        if set(tree) != set(expected):
            missing = [n for n in expected if n not in tree]
            extra = [n for n in tree if n not in set(expected)]
            raise ValueError(f"partition_by_name: {what} keys do not match the optimizer's parameters; missing={missing}, unexpected={extra}")

    def sub(tree, names):
        return None if tree is None else {n: tree[n] for n in names}

    def init_fn(params):
        check(params, "params")
        return tuple(tx.init(sub(params, names)) for names, tx in groups)

    def update_fn(updates, state, params=None, **extra):
        check(updates, "grads")
        out, new_state = {}, []
        for (names, tx), s in zip(groups, state):
            u, s = tx.update(sub(updates, names), s, sub(params, names), **extra)
            out.update(u)
            new_state.append(s)
        return {k: out[k] for k in updates}, tuple(new_state)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)
