"""LookAhead and ModelAverage (paddle.incubate's optimizer wrappers) over pdx.optimizer's public API.

Both keep their math in pure optax transformations (`lookahead`,
`model_average`), so the eager object (`step()`) and a `pdx.train.TrainState`
built from it (`TrainState.create(model, LookAhead(inner))`) run the same
update.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

__all__ = ["LookAhead", "LookAheadState", "ModelAverage", "ModelAverageState", "average_params", "lookahead",
           "model_average"]


class LookAheadState(NamedTuple):
    """`lookahead`'s state: the inner optimizer's state, the slow weights and the step count."""

    inner: Any
    slow: dict
    count: jax.Array


def _lookahead_sync(fast: dict, slow: dict, count, alpha: float, k: int):
    """Paddle's rule after the inner step `count` (1-based): slow starts as the first fast
    weights; every k steps both become slow + alpha * (fast - slow)."""
    first, sync = count == 1, count % k == 0
    slow = {n: jnp.where(first, fast[n], slow[n]) for n in fast}
    mixed = {n: alpha * fast[n] + (1.0 - alpha) * slow[n] for n in fast}
    new_fast = {n: jnp.where(sync, mixed[n], fast[n]) for n in fast}
    new_slow = {n: jnp.where(sync, mixed[n], slow[n]) for n in fast}
    return new_fast, new_slow


def _check_alpha_k(cls: str, alpha, k) -> tuple[float, int]:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"pdx.incubate.{cls}: alpha must be a float in [0, 1]; got alpha={alpha!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"pdx.incubate.{cls}: k must be a positive int; got k={k!r}")
    return float(alpha), int(k)


def lookahead(inner: optax.GradientTransformation, alpha: float = 0.5, k: int = 5) -> optax.GradientTransformationExtraArgs:
    """Lookahead (Zhang et al. 2019) around `inner`, with Paddle's schedule, over dicts name -> array.

    The update returned takes the parameters to the fast weights `params + inner update`, or, every
    `k`-th step, to `slow + alpha * (fast - slow)` (which becomes the new slow weights too).

    Example:
      >>> import jax.numpy as jnp, optax
      >>> tx = lookahead(optax.sgd(1.0), alpha=0.5, k=2)
      >>> p = {"w": jnp.zeros(())}; s = tx.init(p)
      >>> for _ in range(2):
      ...     u, s = tx.update({"w": -jnp.ones(())}, s, p); p = optax.apply_updates(p, u)
      >>> float(p["w"])    # fast went 1 -> 2, synced halfway to the slow 1
      1.5
    """
    alpha, k = _check_alpha_k("lookahead", alpha, k)
    inner = optax.with_extra_args_support(inner)

    def init_fn(params):
        return LookAheadState(inner.init(params), {n: jnp.asarray(v) for n, v in params.items()},
                              jnp.zeros((), jnp.int32))

    def update_fn(updates, state, params=None, **extra):
        if params is None:
            raise ValueError("lookahead needs params: call tx.update(grads, state, params)")
        out, inner_state = inner.update(updates, state.inner, params, **extra)
        fast = {n: params[n] + out[n].astype(params[n].dtype) for n in out}
        count = state.count + 1
        new_fast, slow = _lookahead_sync(fast, state.slow, count, alpha, k)
        return {n: new_fast[n] - params[n] for n in out}, LookAheadState(inner_state, slow, count)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def _values(state):
    return jax.tree.map(lambda v: v.get_value(), state, is_leaf=lambda x: isinstance(x, nnx.Variable))


class LookAhead(nnx.Pytree):
    """Lookahead wrapper of a pdx optimizer (Paddle's `paddle.incubate.LookAhead`).

    `step(grads)` runs the inner optimizer's step, then every `k` steps moves the
    parameters (and the slow weights) to `slow + alpha * (fast - slow)`; the slow
    weights start as the parameters after the first step, as in Paddle. For a
    compiled step, `pdx.train.TrainState.create(model, LookAhead(...))` uses
    `transformation()` (the pure `lookahead` transform around the inner one).

    Args:
      inner_optimizer: a `pdx.optimizer` optimizer bound to the parameters.
      alpha: slow-weight step size in [0, 1].
      k: synchronize every k steps.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Linear(2, 1)
      >>> opt = pdx.incubate.LookAhead(pdx.optimizer.SGD(0.1, parameters=net), alpha=0.5, k=2)
      >>> loss, grads = pdx.value_and_grad(lambda m: m(jnp.ones((3, 2))).sum())(net)
      >>> opt.step(grads)
      >>> opt.get_lr()
      0.1
    """

    def __init__(self, inner_optimizer, alpha=0.5, k=5, name=None):
        for attr in ("step", "trainable_parameters", "transformation", "init_state", "get_lr"):
            if not callable(getattr(inner_optimizer, attr, None)):
                raise TypeError(f"pdx.incubate.LookAhead: inner_optimizer must be a pdx.optimizer optimizer (it has no "
                                f"{attr}()); got {type(inner_optimizer).__name__}")
        self.alpha, self.k = _check_alpha_k("LookAhead", alpha, k)
        self.inner_optimizer = inner_optimizer
        self._slow = nnx.data({n: nnx.OptArray(jnp.asarray(v.get_value()))
                               for n, v in inner_optimizer.trainable_parameters()})
        self._count = nnx.OptState(jnp.zeros((), jnp.int32))
        self._sync = jax.jit(functools.partial(_lookahead_sync, alpha=self.alpha, k=self.k))

    # -- the protocol pdx.train.TrainState and pdx.Model read --------------------------------------
    def trainable_parameters(self):
        """The inner optimizer's (name, parameter) pairs."""
        return self.inner_optimizer.trainable_parameters()

    def named_parameters(self):
        return self.inner_optimizer.named_parameters()

    def transformation(self) -> optax.GradientTransformationExtraArgs:
        """`lookahead(inner_optimizer.transformation(), alpha, k)`."""
        return lookahead(self.inner_optimizer.transformation(), self.alpha, self.k)

    def init_state(self, params):
        """A `LookAheadState` continuing from this object's slow weights and step count."""
        return LookAheadState(self.inner_optimizer.init_state(params),
                              {n: v.get_value() for n, v in self._slow.items()}, self._count.get_value())

    @property
    def opt_state(self) -> LookAheadState:
        return LookAheadState(self.inner_optimizer.opt_state, {n: v.get_value() for n, v in self._slow.items()},
                              self._count.get_value())

    def get_lr(self):
        return self.inner_optimizer.get_lr()

    def current_lr(self):
        return self.inner_optimizer.current_lr()

    def set_lr(self, value) -> None:
        self.inner_optimizer.set_lr(value)

    # -- eager stepping --------------------------------------------------------------------------------
    def step(self, grads=None) -> None:
        """The inner step from `grads`, then the lookahead synchronization."""
        self.inner_optimizer.step(grads)
        params = dict(self.inner_optimizer.trainable_parameters())
        count = self._count.get_value() + 1
        fast = {n: params[n].get_value() for n in self._slow}
        slow = {n: v.get_value() for n, v in self._slow.items()}
        new_fast, new_slow = self._sync(fast, slow, count)
        for n, var in self._slow.items():
            var.set_value(new_slow[n])
            params[n].set_value(new_fast[n].astype(fast[n].dtype))
        self._count.set_value(count)

    def minimize(self, loss=None, startup_program=None, parameters=None, no_grad_set=None):
        return self.inner_optimizer.minimize(loss, startup_program, parameters, no_grad_set)

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """No-op kept for ported Paddle loops (pdx keeps no gradients)."""

    clear_gradients = clear_grad

    def state_dict(self) -> dict:
        """The inner optimizer's state_dict plus `lookahead/slow/<name>` and `lookahead/step`."""
        out = dict(self.inner_optimizer.state_dict())
        out.update({f"lookahead/slow/{n}": v.get_value() for n, v in self._slow.items()})
        out["lookahead/step"] = self._count.get_value()
        return out

    def set_state_dict(self, state_dict) -> None:
        own = {k: v for k, v in state_dict.items() if not k.startswith("lookahead/")}
        self.inner_optimizer.set_state_dict(own)
        for n, var in self._slow.items():
            key = f"lookahead/slow/{n}"
            if key not in state_dict:
                raise KeyError(f"LookAhead.set_state_dict: the state_dict lacks {key!r}")
            var.set_value(jnp.asarray(state_dict[key], var.get_value().dtype))
        if "lookahead/step" in state_dict:
            self._count.set_value(jnp.asarray(state_dict["lookahead/step"], jnp.int32))

    set_dict = set_state_dict

    def __repr__(self) -> str:
        return f"LookAhead({self.inner_optimizer!r}, alpha={self.alpha}, k={self.k})"


# Paddle's average_accumulates kernel moves sum_1 into sum_2 every this many updates (precision).
_MAX_NUM_ACCUMULATES = 16384


class ModelAverageState(NamedTuple):
    """The running sums of `model_average` (Paddle's average_accumulates accumulators, per parameter
    for the sums, shared for the counters: every parameter is accumulated each step)."""

    sum_1: dict
    sum_2: dict
    sum_3: dict
    num_accumulates: jax.Array
    old_num_accumulates: jax.Array
    num_updates: jax.Array


def _accumulate(params: dict, state: ModelAverageState, rate: float, min_window: int, max_window: int):
    num_updates = state.num_updates + 1
    num_acc = state.num_accumulates + 1
    sum_1 = {n: state.sum_1[n] + params[n] for n in params}
    spill = num_updates % _MAX_NUM_ACCUMULATES == 0
    sum_2 = {n: jnp.where(spill, state.sum_2[n] + sum_1[n], state.sum_2[n]) for n in params}
    sum_1 = {n: jnp.where(spill, 0.0, sum_1[n]) for n in params}
    window = jnp.minimum(jnp.asarray(max_window, jnp.float32), num_updates.astype(jnp.float32) * rate)
    restart = (num_acc >= min_window) & (num_acc.astype(jnp.float32) >= window)
    sum_3 = {n: jnp.where(restart, sum_1[n] + sum_2[n], state.sum_3[n]) for n in params}
    sum_1 = {n: jnp.where(restart, 0.0, sum_1[n]) for n in params}
    sum_2 = {n: jnp.where(restart, 0.0, sum_2[n]) for n in params}
    old = jnp.where(restart, num_acc, state.old_num_accumulates)
    num_acc = jnp.where(restart, 0, num_acc)
    return ModelAverageState(sum_1, sum_2, sum_3, num_acc, old, num_updates)


def _average(state: ModelAverageState) -> dict:
    total = (state.num_accumulates + state.old_num_accumulates).astype(jnp.float32)
    return {n: (state.sum_1[n] + state.sum_2[n] + state.sum_3[n]) / total for n in state.sum_1}


def _check_window(rate, min_window, max_window):
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
        raise ValueError(f"pdx.incubate.ModelAverage: average_window_rate must be a positive float; got {rate!r}")
    for name, v in (("min_average_window", min_window), ("max_average_window", max_window)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"pdx.incubate.ModelAverage: {name} must be a positive int; got {name}={v!r}")
    return float(rate), int(min_window), int(max_window)


def _zero_state(params: dict) -> ModelAverageState:
    zeros = lambda: {n: jnp.zeros(jnp.shape(v), jnp.float32) for n, v in params.items()}
    z = jnp.zeros((), jnp.int32)
    return ModelAverageState(zeros(), zeros(), zeros(), z, z, z)


def model_average(average_window_rate: float, min_average_window: int = 10000,
                  max_average_window: int = 10000) -> optax.GradientTransformation:
    """Paddle's ModelAverage accumulation as an optax transform: updates pass through unchanged,
    the state accumulates the parameters after the update (params + updates).

    Chain it after an optimizer (`optax.chain(opt.transformation(), model_average(0.15))`) and read
    the averaged weights with `average_params(state)`.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> tx = model_average(1.0, min_average_window=1, max_average_window=10)
      >>> p = {"w": jnp.zeros(())}; s = tx.init(p)
      >>> u, s = tx.update({"w": jnp.ones(())}, s, p)
      >>> float(average_params(s)["w"])
      1.0
    """
    rate, lo, hi = _check_window(average_window_rate, min_average_window, max_average_window)

    def init_fn(params):
        return _zero_state(params)

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("model_average needs params: call tx.update(updates, state, params)")
        after = {n: (params[n] + updates[n]).astype(jnp.float32) for n in updates}
        return updates, _accumulate(after, state, rate, lo, hi)

    return optax.GradientTransformation(init_fn, update_fn)


def average_params(state: ModelAverageState) -> dict:
    """The averaged parameters (float32) held by a `model_average` / `ModelAverage` state."""
    return _average(state)


class ModelAverage(nnx.Pytree):
    """Sliding-window average of parameters (Paddle's `paddle.incubate.ModelAverage`).

    Call `step()` after each optimizer step to accumulate the current parameters;
    `with model_average.apply(): ...` evaluates with the averaged weights and
    restores the trained ones afterwards (`need_restore=False` keeps the average;
    `restore()` brings the trained ones back). The window follows Paddle:
    the average restarts once `num_accumulates >= min_average_window` and
    `>= min(max_average_window, num_updates * average_window_rate)`.

    Args:
      average_window_rate: the window as a fraction of the updates so far.
      parameters: a Layer, `layer.parameters()` or a list of parameters.
      min_average_window, max_average_window: the window's bounds in steps.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Linear(2, 1)
      >>> avg = pdx.incubate.ModelAverage(0.15, parameters=net.parameters(), min_average_window=2,
      ...                                 max_average_window=10)
      >>> avg.step()
      >>> with avg.apply():
      ...     y = net(jnp.ones((1, 2)))
    """

    def __init__(self, average_window_rate, parameters=None, min_average_window=10000, max_average_window=10000,
                 name=None):
        self.average_window, self.min_average_window, self.max_average_window = _check_window(
            average_window_rate, min_average_window, max_average_window)
        if parameters is None:
            raise ValueError("pdx.incubate.ModelAverage: parameters= is required (a Layer or layer.parameters())")
        if isinstance(parameters, nnx.Module):
            named = [(n, v) for n, v in parameters.named_parameters()]
        else:
            named = [(f"param_{i}", v) for i, v in enumerate(parameters)]
        bad = [n for n, v in named if not isinstance(v, nnx.Variable)]
        if bad:
            raise TypeError(f"pdx.incubate.ModelAverage: parameters must be nnx.Param variables; {bad} are not")
        named = [(n, v) for n, v in named if getattr(v, "trainable", True) is not False]
        self._names = tuple(n for n, _ in named)
        self._params = nnx.List([v for _, v in named])
        state = _zero_state({n: v.get_value() for n, v in named})
        self._state = nnx.data(jax.tree.map(nnx.OptArray, state))
        self._restore = nnx.data({n: nnx.OptArray(jnp.asarray(v.get_value())) for n, v in named})
        self._accumulate = jax.jit(functools.partial(_accumulate, rate=self.average_window,
                                                     min_window=self.min_average_window,
                                                     max_window=self.max_average_window))

    def _current(self) -> dict:
        return {n: v.get_value() for n, v in zip(self._names, self._params)}

    def transformation(self) -> optax.GradientTransformation:
        """`model_average(average_window_rate, min_average_window, max_average_window)`."""
        return model_average(self.average_window, self.min_average_window, self.max_average_window)

    @property
    def opt_state(self) -> ModelAverageState:
        return _values(self._state)

    def step(self, grads=None) -> None:
        """Accumulate the parameters' current values (`grads` is accepted and unused)."""
        params = {n: v.astype(jnp.float32) for n, v in self._current().items()}
        new = self._accumulate(params, _values(self._state))
        jax.tree.map(lambda var, x: var.set_value(x), self._state, new, is_leaf=lambda x: isinstance(x, nnx.Variable))

    def minimize(self, loss=None, startup_program=None, parameters=None, no_grad_set=None) -> None:
        self.step()

    @contextlib.contextmanager
    def apply(self, executor=None, need_restore=True):
        """Put the averaged weights into the parameters for the `with` block."""
        state = _values(self._state)
        if int(state.num_accumulates + state.old_num_accumulates) == 0:
            raise RuntimeError("pdx.incubate.ModelAverage.apply: nothing accumulated yet; call step() after each "
                               "optimizer step first")
        averaged = _average(state)
        for n, var in zip(self._names, self._params):
            value = var.get_value()
            self._restore[n].set_value(value)
            var.set_value(averaged[n].astype(value.dtype))
        try:
            yield
        finally:
            if need_restore:
                self.restore()

    def restore(self, executor=None) -> None:
        """Put back the weights saved by the last `apply()`."""
        for n, var in zip(self._names, self._params):
            var.set_value(self._restore[n].get_value())

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """No-op kept for ported Paddle loops (pdx keeps no gradients)."""

    clear_gradients = clear_grad

    def state_dict(self) -> dict:
        """The accumulators: `<field>/<name>` for the sums, `<field>` for the counters."""
        state = _values(self._state)
        out = {}
        for field in ("sum_1", "sum_2", "sum_3"):
            out.update({f"{field}/{n}": v for n, v in getattr(state, field).items()})
        for field in ("num_accumulates", "old_num_accumulates", "num_updates"):
            out[field] = getattr(state, field)
        return out

    def set_state_dict(self, state_dict) -> None:
        flat = self.state_dict()
        missing = [k for k in flat if k not in state_dict]
        if missing:
            raise KeyError(f"ModelAverage.set_state_dict: the state_dict lacks {missing}")
        for field in ("sum_1", "sum_2", "sum_3"):
            for n, var in getattr(self._state, field).items():
                var.set_value(jnp.asarray(state_dict[f"{field}/{n}"], jnp.float32))
        for field in ("num_accumulates", "old_num_accumulates", "num_updates"):
            getattr(self._state, field).set_value(jnp.asarray(state_dict[field], jnp.int32))

    set_dict = set_state_dict
