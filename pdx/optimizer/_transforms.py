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
import numpy as np
import optax

__all__ = [
    "ScaleByPaddleAdadeltaState",
    "ScaleByPaddleAdagradState",
    "ScaleByPaddleAdamaxState",
    "ScaleByPaddleAmsgradState",
    "ScaleByPaddleAsgdState",
    "ScaleByPaddleNadamState",
    "ScaleByPaddleRadamState",
    "ScaleByPaddleRpropState",
    "add_regularization",
    "partition_by_name",
    "scale_by_paddle_adadelta",
    "scale_by_paddle_adagrad",
    "scale_by_paddle_adamax",
    "scale_by_paddle_amsgrad",
    "scale_by_paddle_asgd",
    "scale_by_paddle_lr",
    "scale_by_paddle_nadam",
    "scale_by_paddle_radam",
    "scale_by_paddle_rprop",
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


class ScaleByPaddleAsgdState(NamedTuple):
    """ASGD state: steps taken, the running gradient sum `d`, the last gradient of each of the `batch_num` slots."""

    count: jax.Array
    d: Any
    ys: Any


def scale_by_paddle_asgd(batch_num: int = 1) -> optax.GradientTransformation:
    """Paddle's ASGD direction (stochastic average gradient).

    Step `m` (from 0) replaces slot `i = m % batch_num`:
    `d = d - y_i + g`, `y_i = g`, direction `d / min(m + 1, batch_num)`.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_asgd(batch_num=2)
      >>> s = tx.init({"w": jnp.zeros(1)})
      >>> u, s = tx.update({"w": jnp.array([2.0])}, s)
      >>> u, s = tx.update({"w": jnp.array([4.0])}, s)
      >>> u["w"].tolist()
      [3.0]
    """
    n = int(batch_num)

    def init_fn(params):
        return ScaleByPaddleAsgdState(jnp.zeros([], jnp.int32), _zeros_like(params),
                                      jax.tree.map(lambda p: jnp.zeros((n, *jnp.shape(p)), jnp.asarray(p).dtype), params))

    def update_fn(updates, state, params=None):
        del params
        index = state.count % n
        d = jax.tree.map(lambda g, d, ys: d - ys[index] + g, updates, state.d, state.ys)
        ys = jax.tree.map(lambda g, ys: ys.at[index].set(g), updates, state.ys)
        count = optax.safe_increment(state.count)
        seen = jnp.minimum(count, n)
        out = jax.tree.map(lambda d: d / seen.astype(d.dtype), d)
        return out, ScaleByPaddleAsgdState(count, d, ys)

    return optax.GradientTransformation(init_fn, update_fn)


class ScaleByPaddleAdadeltaState(NamedTuple):
    """Adadelta state: running averages of squared gradients and squared updates."""

    avg_squared_grad: Any
    avg_squared_update: Any


def scale_by_paddle_adadelta(rho: float = 0.95, epsilon: float = 1e-6) -> optax.GradientTransformation:
    """Paddle's Adadelta direction `sqrt((E[dx^2] + eps) / (E[g^2] + eps)) * g`
    (Paddle then steps by `lr` times it; `E[dx^2]` averages the unscaled step).

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_adadelta(rho=0.0, epsilon=1.0)
      >>> g = {"w": jnp.array([0.0])}
      >>> tx.update(g, tx.init(g))[0]["w"].tolist()
      [0.0]
    """

    def init_fn(params):
        zeros = _zeros_like(params)
        return ScaleByPaddleAdadeltaState(zeros, zeros)

    def update_fn(updates, state, params=None):
        del params
        eg = jax.tree.map(lambda g, a: rho * a + (1 - rho) * g * g, updates, state.avg_squared_grad)
        step = jax.tree.map(lambda g, a, u: jnp.sqrt((u + epsilon) / (a + epsilon)) * g, updates, eg, state.avg_squared_update)
        edx = jax.tree.map(lambda s, u: rho * u + (1 - rho) * s * s, step, state.avg_squared_update)
        return step, ScaleByPaddleAdadeltaState(eg, edx)

    return optax.GradientTransformation(init_fn, update_fn)


class ScaleByPaddleNadamState(NamedTuple):
    """NAdam state: 0.96^t, beta2^t, the product of the momentum coefficients mu_1..mu_t, moments."""

    momentum_decay_pow: jax.Array
    beta2_pow: jax.Array
    mu_product: jax.Array
    moment1: Any
    moment2: Any


def scale_by_paddle_nadam(beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                          momentum_decay: float = 0.004) -> optax.GradientTransformation:
    """Paddle's NAdam direction: Adam with Nesterov momentum whose coefficient
    `mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))` warms up over steps.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_nadam()
      >>> g = {"w": jnp.array([0.5])}
      >>> round(float(tx.update(g, tx.init(g))[0]["w"][0]), 3)
      1.0
    """

    def init_fn(params):
        zeros = _zeros_like(params)
        one = jnp.ones([], jnp.float32)
        return ScaleByPaddleNadamState(one, one, one, zeros, zeros)

    def update_fn(updates, state, params=None):
        del params
        decay_pow = state.momentum_decay_pow * 0.96
        beta2_pow = state.beta2_pow * beta2
        warm = decay_pow ** momentum_decay
        mu_t = beta1 * (1 - 0.5 * warm)
        mu_next = beta1 * (1 - 0.5 * warm * 0.96 ** momentum_decay)
        mu_product = state.mu_product * mu_t
        mu_product_next = mu_product * mu_next
        m1 = jax.tree.map(lambda g, m: beta1 * m + (1 - beta1) * g, updates, state.moment1)
        m2 = jax.tree.map(lambda g, v: beta2 * v + (1 - beta2) * g * g, updates, state.moment2)

        def one(g, m, v):
            dt = m.dtype
            m_hat = mu_next.astype(dt) * m / (1 - mu_product_next).astype(dt) + (1 - mu_t).astype(dt) * g / (1 - mu_product).astype(dt)
            v_hat = v / (1 - beta2_pow).astype(dt)
            return m_hat / (jnp.sqrt(v_hat) + epsilon)

        out = jax.tree.map(one, updates, m1, m2)
        return out, ScaleByPaddleNadamState(decay_pow, beta2_pow, mu_product, m1, m2)

    return optax.GradientTransformation(init_fn, update_fn)


class ScaleByPaddleRadamState(NamedTuple):
    """RAdam state: beta1^t, beta2^t, `t * beta2^t / (1 - beta2^t)` (by Paddle's recurrence), moments."""

    beta1_pow: jax.Array
    beta2_pow: jax.Array
    rho: jax.Array
    moment1: Any
    moment2: Any


def scale_by_paddle_radam(beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8) -> optax.GradientTransformation:
    """Paddle's RAdam direction: the bias-corrected first moment, times the
    variance rectification `r_t * sqrt(1 - beta2^t) / (sqrt(v) + eps)` once
    the length of the approximated SMA `rho_t` exceeds 5.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_radam()
      >>> g = {"w": jnp.array([0.5])}
      >>> round(float(tx.update(g, tx.init(g))[0]["w"][0]), 4)   # rho_1 <= 5: plain momentum
      0.5
    """
    # float32 as in Paddle's kernel: beta2's rounding moves rho_inf by ~0.03, which rho_t feels
    rho_inf = float(np.float32(2.0) / (np.float32(1.0) - np.float32(beta2)) - np.float32(1.0))

    def init_fn(params):
        zeros = _zeros_like(params)
        one = jnp.ones([], jnp.float32)
        return ScaleByPaddleRadamState(one, one, one, zeros, zeros)

    def update_fn(updates, state, params=None):
        del params
        beta1_pow = state.beta1_pow * beta1
        beta2_pow = state.beta2_pow * beta2
        # the recurrence Paddle's kernel uses for t * beta2^t / (1 - beta2^t) (same float32 rounding)
        rho = (state.rho * (beta2 - beta2_pow) + beta2_pow) / (1.0 - beta2_pow)
        rho_t = rho_inf - 2.0 * rho
        rect = jnp.sqrt(jnp.maximum((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.0))
        m1 = jax.tree.map(lambda g, m: beta1 * m + (1 - beta1) * g, updates, state.moment1)
        m2 = jax.tree.map(lambda g, v: beta2 * v + (1 - beta2) * g * g, updates, state.moment2)

        def one(m, v):
            dt = m.dtype
            m_hat = m / (1 - beta1_pow).astype(dt)
            adaptive = jnp.sqrt(1 - beta2_pow).astype(dt) / (jnp.sqrt(v) + epsilon)
            return jnp.where(rho_t > 5, m_hat * rect.astype(dt) * adaptive, m_hat)

        out = jax.tree.map(one, m1, m2)
        return out, ScaleByPaddleRadamState(beta1_pow, beta2_pow, rho, m1, m2)

    return optax.GradientTransformation(init_fn, update_fn)


class ScaleByPaddleRpropState(NamedTuple):
    """Rprop state: the previous (masked) gradient and each element's step size."""

    prev: Any
    learning_rates: Any


def scale_by_paddle_rprop(learning_rate: float, learning_rate_range=(1e-5, 50.0),
                          etas=(0.5, 1.2)) -> optax.GradientTransformation:
    """Paddle's Rprop: the whole update (each element's own step size, no global lr).

    Where the gradient keeps its sign the step grows by `etas[1]` (at most
    `learning_rate_range[1]`); where it flips the step shrinks by `etas[0]`
    (at least `learning_rate_range[0]`) and the element holds still, its
    gradient counted as 0 for the next comparison. The update is
    `-sign(g) * step`.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = scale_by_paddle_rprop(0.1)
      >>> s = tx.init({"w": jnp.zeros(2)})
      >>> u, s = tx.update({"w": jnp.array([1.0, -1.0])}, s)
      >>> u, s = tx.update({"w": jnp.array([1.0, 1.0])}, s)
      >>> [round(v, 3) for v in u["w"].tolist()]
      [-0.12, 0.0]
    """
    lo, hi = (float(v) for v in learning_rate_range)
    eta_minus, eta_plus = (float(v) for v in etas)

    def init_fn(params):
        return ScaleByPaddleRpropState(_zeros_like(params), jax.tree.map(lambda p: jnp.full_like(p, learning_rate), params))

    def update_fn(updates, state, params=None):
        del params

        def one(g, prev, lr):
            product = g * prev
            lr = jnp.where(product > 0, jnp.minimum(lr * eta_plus, hi), jnp.where(product < 0, jnp.maximum(lr * eta_minus, lo), lr))
            g = jnp.where(product < 0, jnp.zeros_like(g), g)
            return -jnp.sign(g) * lr, g, lr

        out = jax.tree.map(one, updates, state.prev, state.learning_rates)
        pick = lambda i: jax.tree.map(lambda _, o: o[i], updates, out)  # noqa: E731
        return pick(0), ScaleByPaddleRpropState(pick(1), pick(2))

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
