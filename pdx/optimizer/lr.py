"""Learning-rate schedulers (Paddle's `paddle.optimizer.lr`).

Same classes, arguments and stepping rules as Paddle: `last_epoch` starts at
-1 and the constructor steps once (so a fresh scheduler is at epoch 0),
`step()` advances one epoch, `step(epoch)` jumps, `scheduler()` / `last_lr`
is the current value, and an optimizer built with `learning_rate=scheduler`
reads it at every update.

The epoch counter and the current value live in nnx Variables, and each
scheduler computes its value in closed form from the epoch. So `step()` works
eagerly (numpy float64 math, matching Paddle's Python floats) and inside a
traced train step (jnp math on the traced counter): changing the learning
rate never recompiles. `as_schedule()` gives the same curve as an optax
schedule (step count -> lr).

Example:
    >>> from pdx.optimizer import lr
    >>> sched = lr.StepDecay(learning_rate=0.5, step_size=2, gamma=0.1)
    >>> values = []
    >>> for _ in range(5):
    ...     values.append(sched())
    ...     sched.step()
    >>> values
    [0.5, 0.5, 0.05, 0.05, 0.005]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

__all__ = [
    "CosineAnnealingDecay",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialDecay",
    "InverseTimeDecay",
    "LRScheduler",
    "LambdaDecay",
    "LinearLR",
    "LinearWarmup",
    "MultiStepDecay",
    "MultiplicativeDecay",
    "NaturalExpDecay",
    "NoamDecay",
    "OneCycleLR",
    "PiecewiseDecay",
    "PolynomialDecay",
    "ReduceOnPlateau",
    "StepDecay",
]

_UNTRACEABLE_FN = (
    "{cls}: {arg} could not be evaluated on a traced epoch inside a compiled step "
    "({err}). Write it with arithmetic / jnp (e.g. `lambda e: 0.95 ** e`, "
    "`jnp.where(e < 10, 1.0, 0.1)`) instead of Python `if`, or step this scheduler "
    "eagerly, outside the compiled function."
)


def _traced(*values) -> bool:
    return any(isinstance(v, jax.core.Tracer) for v in values)


def _as_float(value):
    """A Python float for a concrete scalar; the traced value itself under a trace.

    The value is stored as float32: report the shortest decimal that rounds to
    it (0.1, not 0.10000000149011612), which is within float32 precision of
    Paddle's float64 value.
    """
    if _traced(value):
        return value
    return float(str(np.float32(value)))


def _fp(epoch, xp):
    return np.float64(epoch) if xp is np else jnp.asarray(epoch, jnp.float32)


def _check_float(cls: str, arg: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{cls}: {arg} must be a float; got {type(value).__name__} ({value!r})")
    return float(value)


class _CountError(ValueError, AssertionError):
    """A step count Paddle refuses with an assertion (pdx's message; a ValueError too)."""


def _check_positive_int(cls: str, arg: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise _CountError(f"{cls}: '{arg}' must be a positive integer; got {value!r}")
    return int(value)


class LRScheduler(nnx.Pytree):
    """Base class of the learning-rate schedulers (Paddle's `LRScheduler`).

    Subclasses implement `_lr_at(epoch, xp)`: the learning rate at `epoch`
    with `xp` = numpy (eager, float64) or jax.numpy (traced). A Paddle-style
    subclass that only overrides `get_lr()` (reading `self.last_epoch`) works
    eagerly, and under a trace when its arithmetic is traceable.

    Args:
      learning_rate: the initial (base) learning rate.
      last_epoch: the epoch to resume from; -1 starts fresh.
      verbose: print the new value at every step (eager steps only).

    Example:
      >>> from pdx.optimizer import lr
      >>> class Halving(lr.LRScheduler):
      ...     def _lr_at(self, epoch, xp):
      ...         return self.base_lr * 0.5 ** epoch
      >>> sched = Halving(learning_rate=1.0)
      >>> sched.step(); sched.step(); sched()
      0.25
    """

    def __init__(self, learning_rate: float = 0.1, last_epoch: int = -1, verbose: bool = False) -> None:
        self._init_state(learning_rate, last_epoch, verbose)
        self.step()

    def _init_state(self, learning_rate, last_epoch, verbose) -> None:
        cls = type(self).__name__
        lr = _check_float(cls, "learning_rate", learning_rate)
        if lr < 0:
            raise ValueError(f"{cls}: learning_rate must be >= 0; got {lr}")
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, (int, np.integer)):
            raise TypeError(f"{cls}: last_epoch must be an int; got {last_epoch!r}")
        self.base_lr = lr
        self.verbose = bool(verbose)
        self._last_epoch = nnx.OptState(jnp.asarray(last_epoch, jnp.int32))
        self._last_lr = nnx.OptState(jnp.asarray(lr, jnp.float32))

    # -- Paddle's attributes -------------------------------------------------------
    @property
    def last_epoch(self):
        """The current epoch (an int eagerly, a traced int32 under a trace)."""
        value = self._last_epoch.get_value()
        return value if _traced(value) else int(value)

    @last_epoch.setter
    def last_epoch(self, value) -> None:
        self._last_epoch.set_value(jnp.asarray(value, jnp.int32))

    @property
    def last_lr(self):
        """The current learning rate (a float eagerly)."""
        return _as_float(self._last_lr.get_value())

    @last_lr.setter
    def last_lr(self, value) -> None:
        self._last_lr.set_value(jnp.asarray(value, jnp.float32))

    def __call__(self):
        """The current learning rate."""
        return self.last_lr

    # -- stepping -------------------------------------------------------------------
    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch, or jump to `epoch`, and update the learning rate."""
        if epoch is None:
            epoch = self._last_epoch.get_value() + 1
        self._last_epoch.set_value(jnp.asarray(epoch, jnp.int32))
        self._last_lr.set_value(jnp.asarray(self.get_lr(), jnp.float32))
        self._log()

    def get_lr(self):
        """The learning rate at `last_epoch` (a float eagerly)."""
        epoch = self._last_epoch.get_value()
        if _traced(epoch):
            return self._lr_at(epoch, jnp)
        return float(self._lr_at(int(epoch), np))

    def _lr_at(self, epoch, xp):
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr() (or _lr_at(epoch, xp))")

    def _has_closed_form(self) -> bool:
        return type(self)._lr_at is not LRScheduler._lr_at

    def as_schedule(self) -> Callable:
        """This scheduler as an optax schedule: step count -> learning rate.

        Count 0 is the current epoch, and each count is one `step()` later
        (one scheduler step per optimizer update).

        Example:
          >>> from pdx.optimizer import lr
          >>> sched = lr.ExponentialDecay(learning_rate=1.0, gamma=0.5).as_schedule()
          >>> float(sched(2))
          0.25
        """
        if not self._has_closed_form():
            raise TypeError(f"{type(self).__name__} has no closed form in the step count; step it explicitly instead of as_schedule()")
        start = self.last_epoch
        if _traced(start):
            raise TypeError(f"{type(self).__name__}.as_schedule() must be called outside a traced function")

        def schedule(count):
            return jnp.asarray(self._lr_at(jnp.asarray(count, jnp.int32) + start, jnp), jnp.float32)

        return schedule

    def _log(self) -> None:
        if self.verbose and not _traced(self._last_epoch.get_value()):
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    # -- state --------------------------------------------------------------------------
    def _state_keys(self) -> tuple[str, ...]:
        return ("last_epoch", "last_lr")

    def state_dict(self) -> dict:
        """The scheduler's state as Python numbers (Paddle's keys)."""
        return {key: getattr(self, key) for key in self._state_keys()}

    def set_state_dict(self, state_dict: dict) -> None:
        """Load a `state_dict()` (from pdx or Paddle)."""
        for key in self._state_keys():
            if key not in state_dict:
                raise RuntimeError(f"{type(self).__name__}.set_state_dict: the state_dict has no {key!r}; it holds {sorted(state_dict)}")
        for key in self._state_keys():
            setattr(self, key, state_dict[key])

    set_dict = set_state_dict

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self.last_lr})"


class NoamDecay(LRScheduler):
    """Noam decay (the Transformer schedule):
    `lr * d_model^-0.5 * min(epoch^-0.5, epoch * warmup_steps^-1.5)` (epoch 0 uses 1 for the first term).

    Example:
      >>> from pdx.optimizer import lr
      >>> round(lr.NoamDecay(d_model=64, warmup_steps=100).last_lr, 8)
      0.0
    """

    def __init__(self, d_model: int, warmup_steps: int, learning_rate: float = 1.0, last_epoch: int = -1, verbose: bool = False) -> None:
        if d_model <= 0:
            raise ValueError(f"NoamDecay: d_model must be > 0; got {d_model}")
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        e = _fp(epoch, xp)
        a = xp.where(e == 0, 1.0, xp.maximum(e, 1.0) ** -0.5)
        b = self.warmup_steps ** -1.5 * e
        return self.base_lr * (self.d_model ** -0.5) * xp.minimum(a, b)


class PiecewiseDecay(LRScheduler):
    """Piecewise constant: `values[i]` while `epoch < boundaries[i]`, then `values[-1]`.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.PiecewiseDecay(boundaries=[2], values=[1.0, 0.5])
      >>> sched.step(); sched.step(); sched()
      0.5
    """

    def __init__(self, boundaries: Sequence[int], values: Sequence[float], last_epoch: int = -1, verbose: bool = False) -> None:
        if len(boundaries) == 0:
            raise ValueError("PiecewiseDecay: boundaries cannot be empty")
        if len(values) <= len(boundaries):
            raise ValueError(f"PiecewiseDecay: values needs one more element than boundaries; got len(values)={len(values)}, len(boundaries)={len(boundaries)}")
        self.boundaries = tuple(boundaries)
        self.values = tuple(float(v) for v in values)
        super().__init__(last_epoch=last_epoch, verbose=verbose)

    def _lr_at(self, epoch, xp):
        table = xp.asarray(self.values[: len(self.boundaries)] + (self.values[-1],))
        index = sum(xp.asarray(epoch >= b, dtype=xp.int32) for b in self.boundaries)
        return table[index]


class NaturalExpDecay(LRScheduler):
    """Natural exponential decay: `lr * exp(-gamma * epoch)`.

    Example:
      >>> from pdx.optimizer import lr
      >>> lr.NaturalExpDecay(learning_rate=0.5, gamma=0.1).last_lr
      0.5
    """

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        if not gamma > 0.0:
            raise ValueError(f"NaturalExpDecay: gamma must be > 0 so the learning rate decays; got {gamma}")
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        return self.base_lr * xp.exp(-1 * self.gamma * _fp(epoch, xp))


class InverseTimeDecay(LRScheduler):
    """Inverse time decay: `lr / (1 + gamma * epoch)`.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.InverseTimeDecay(learning_rate=1.0, gamma=1.0)
      >>> sched.step(); sched()
      0.5
    """

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        return self.base_lr / (1 + self.gamma * _fp(epoch, xp))


class PolynomialDecay(LRScheduler):
    """Polynomial decay from `learning_rate` to `end_lr` over `decay_steps`
    (with `cycle=True` the horizon grows to the next multiple of `decay_steps`).

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.PolynomialDecay(learning_rate=1.0, decay_steps=4, end_lr=0.0)
      >>> sched.step(2); sched()
      0.5
    """

    def __init__(self, learning_rate: float, decay_steps: int, end_lr: float = 0.0001, power: float = 1.0,
                 cycle: bool = False, last_epoch: int = -1, verbose: bool = False):
        self.decay_steps = _check_positive_int("PolynomialDecay", "decay_steps", decay_steps)
        if not power > 0.0:
            raise ValueError(f"PolynomialDecay: power must be > 0 so the learning rate decays; got {power}")
        self.end_lr = float(end_lr)
        self.power = float(power)
        self.cycle = bool(cycle)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        e = _fp(epoch, xp)
        if self.cycle:
            div = xp.where(e == 0, 1.0, xp.ceil(e / self.decay_steps))
            steps, num = self.decay_steps * div, e
        else:
            steps, num = float(self.decay_steps), xp.minimum(e, float(self.decay_steps))
        return (self.base_lr - self.end_lr) * ((1 - num / steps) ** self.power) + self.end_lr


class LinearWarmup(LRScheduler):
    """Linear warmup from `start_lr` to `end_lr` over `warmup_steps`, then
    `learning_rate` (a float, or a scheduler stepped to `epoch - warmup_steps`).

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.LinearWarmup(learning_rate=0.5, warmup_steps=2, start_lr=0.0, end_lr=0.5)
      >>> values = []
      >>> for _ in range(4):
      ...     values.append(sched()); sched.step()
      >>> values
      [0.0, 0.25, 0.5, 0.5]
    """

    def __init__(self, learning_rate, warmup_steps: int, start_lr: float, end_lr: float, last_epoch: int = -1, verbose: bool = False):
        if isinstance(learning_rate, LRScheduler):
            if not learning_rate._has_closed_form():
                raise TypeError(f"LinearWarmup: the wrapped {type(learning_rate).__name__} has no closed form in the epoch; wrap a decay scheduler (StepDecay, CosineAnnealingDecay, ...)")
        elif isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"LinearWarmup: learning_rate must be a float or an LRScheduler; got {type(learning_rate).__name__}")
        else:
            learning_rate = float(learning_rate)
        self.learning_rate = learning_rate
        self.warmup_steps = _check_positive_int("LinearWarmup", "warmup_steps", warmup_steps)
        if not end_lr > start_lr:
            raise ValueError(f"LinearWarmup: end_lr={end_lr} must be greater than start_lr={start_lr}")
        self.start_lr = float(start_lr)
        self.end_lr = float(end_lr)
        super().__init__(start_lr, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        e = _fp(epoch, xp)
        warm = (self.end_lr - self.start_lr) * e / float(self.warmup_steps) + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            after = self.learning_rate._lr_at(xp.maximum(epoch - self.warmup_steps, 0), xp)
        else:
            after = self.learning_rate
        return xp.where(e < self.warmup_steps, warm, after)

    def step(self, epoch: int | None = None) -> None:
        super().step(epoch)
        inner = self.learning_rate
        if not isinstance(inner, LRScheduler):
            return
        # Paddle steps the wrapped scheduler to epoch - warmup_steps once warm.
        epoch = self._last_epoch.get_value()
        if _traced(epoch):
            warm = epoch >= self.warmup_steps
            inner_epoch = jnp.maximum(epoch - self.warmup_steps, 0)
            inner._last_epoch.set_value(jnp.where(warm, inner_epoch, inner._last_epoch.get_value()))
            inner._last_lr.set_value(jnp.where(warm, inner._lr_at(inner_epoch, jnp), inner._last_lr.get_value()).astype(jnp.float32))
        elif int(epoch) >= self.warmup_steps:
            inner.step(int(epoch) - self.warmup_steps)

    def state_dict(self) -> dict:
        state = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            state["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict: dict) -> None:
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.set_state_dict(state_dict["LinearWarmup_LR"])

    set_dict = set_state_dict


class ExponentialDecay(LRScheduler):
    """Exponential decay: `lr * gamma ** epoch`.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.ExponentialDecay(learning_rate=1.0, gamma=0.5)
      >>> sched.step(); sched()
      0.5
    """

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        if not 0.0 < gamma < 1.0:
            raise ValueError(f"ExponentialDecay: gamma must be in (0, 1) so the learning rate decays; got {gamma}")
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        return self.base_lr * (self.gamma ** _fp(epoch, xp))


class MultiStepDecay(LRScheduler):
    """Multiply the learning rate by `gamma` at each epoch in `milestones`.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.MultiStepDecay(learning_rate=1.0, milestones=[1, 3], gamma=0.5)
      >>> sched.step(3); sched()
      0.25
    """

    def __init__(self, learning_rate: float, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1, verbose: bool = False):
        if not isinstance(milestones, (tuple, list)):
            raise TypeError(f"MultiStepDecay: milestones must be a tuple or list; got {type(milestones).__name__}")
        if not all(milestones[i] < milestones[i + 1] for i in range(len(milestones) - 1)):
            raise ValueError(f"MultiStepDecay: milestones must be increasing; got {list(milestones)}")
        if gamma >= 1.0:
            raise ValueError(f"MultiStepDecay: gamma must be < 1.0; got {gamma}")
        self.milestones = tuple(milestones)
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        passed = sum(xp.asarray(epoch >= m, dtype=xp.int32) for m in self.milestones)
        return self.base_lr * (self.gamma ** _fp(passed, xp))


class StepDecay(LRScheduler):
    """Multiply the learning rate by `gamma` every `step_size` epochs.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.StepDecay(learning_rate=1.0, step_size=2, gamma=0.5)
      >>> sched.step(5); sched()
      0.25
    """

    def __init__(self, learning_rate: float, step_size: int, gamma: float = 0.1, last_epoch: int = -1, verbose: bool = False) -> None:
        if isinstance(step_size, bool) or not isinstance(step_size, (int, np.integer)):
            raise TypeError(f"StepDecay: step_size must be an int; got {type(step_size).__name__}")
        if gamma >= 1.0:
            raise ValueError(f"StepDecay: gamma must be < 1.0; got {gamma}")
        self.step_size = _check_positive_int("StepDecay", "step_size", step_size)
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        return self.base_lr * (self.gamma ** _fp(xp.floor_divide(epoch, self.step_size), xp))


class LambdaDecay(LRScheduler):
    """`lr * lr_lambda(epoch)`; under a trace `lr_lambda` receives a traced
    int32 epoch, so write it with arithmetic or jnp.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.LambdaDecay(learning_rate=1.0, lr_lambda=lambda e: 0.5 ** e)
      >>> sched.step(); sched()
      0.5
    """

    def __init__(self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1, verbose: bool = False):
        if not callable(lr_lambda):
            raise TypeError(f"LambdaDecay: lr_lambda must be a function of the epoch; got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        return self.base_lr * _call_user_fn(self, "lr_lambda", self.lr_lambda, epoch)


def _call_user_fn(scheduler, arg: str, fn, value):
    try:
        return fn(value)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError) as e:
        raise TypeError(_UNTRACEABLE_FN.format(cls=type(scheduler).__name__, arg=arg, err=type(e).__name__)) from e


class MultiplicativeDecay(LRScheduler):
    """`lr * prod_{i=1..epoch} lr_lambda(i)`. Under a trace only `step()` (one
    epoch at a time) is supported; the product is then kept incrementally.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.MultiplicativeDecay(learning_rate=1.0, lr_lambda=lambda e: 0.5)
      >>> sched.step(); sched.step(); sched()
      0.25
    """

    def __init__(self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1, verbose: bool = False) -> None:
        if not callable(lr_lambda):
            raise TypeError(f"MultiplicativeDecay: lr_lambda must be a function of the epoch; got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch = self._last_epoch.get_value()
        if _traced(epoch):
            factor = _call_user_fn(self, "lr_lambda", self.lr_lambda, epoch)
            return jnp.where(epoch > 0, self._last_lr.get_value() * factor, self.base_lr)
        lr = self.base_lr
        for e in range(1, int(epoch) + 1):
            lr = lr * self.lr_lambda(e)
        return lr

    def step(self, epoch: int | None = None) -> None:
        if epoch is not None and (_traced(epoch) or _traced(self._last_epoch.get_value())):
            raise TypeError("MultiplicativeDecay.step(epoch) cannot jump epochs inside a traced function; call step() once per epoch")
        super().step(epoch)


class ReduceOnPlateau(LRScheduler):
    """Multiply the learning rate by `factor` when a metric stops improving
    for more than `patience` steps (`step(metrics)`).

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.ReduceOnPlateau(learning_rate=1.0, patience=1, factor=0.5)
      >>> for loss in [1.0, 1.0, 1.0]:
      ...     sched.step(loss)
      >>> sched()
      0.5
    """

    def __init__(self, learning_rate: float, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr: float = 0,
                 epsilon: float = 1e-8, verbose: bool = False) -> None:
        mode = mode.lower()
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceOnPlateau: mode must be 'min' or 'max'; got {mode!r}")
        if factor >= 1.0:
            raise ValueError(f"ReduceOnPlateau: factor must be < 1.0 (new_lr = lr * factor); got {factor}")
        threshold_mode = threshold_mode.lower()
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceOnPlateau: threshold_mode must be 'rel' or 'abs'; got {threshold_mode!r}")
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"ReduceOnPlateau: learning_rate must be a float; got {type(learning_rate).__name__}")
        self.mode = mode
        self.factor = float(factor)
        self.threshold_mode = threshold_mode
        self.patience = patience
        self.threshold = float(threshold)
        self.cooldown = cooldown
        self.min_lr = float(min_lr)
        self.epsilon = float(epsilon)
        self._init_state(learning_rate, 0, verbose)
        self._cooldown_counter = nnx.OptState(jnp.asarray(0, jnp.int32))
        self._num_bad_epochs = nnx.OptState(jnp.asarray(0, jnp.int32))
        self._best = nnx.OptState(jnp.asarray(0.0, jnp.float32))
        self._has_best = nnx.OptState(jnp.asarray(False))

    def _state_keys(self) -> tuple[str, ...]:
        return ("cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr")

    @property
    def cooldown_counter(self):
        value = self._cooldown_counter.get_value()
        return value if _traced(value) else int(value)

    @cooldown_counter.setter
    def cooldown_counter(self, value) -> None:
        self._cooldown_counter.set_value(jnp.asarray(value, jnp.int32))

    @property
    def num_bad_epochs(self):
        value = self._num_bad_epochs.get_value()
        return value if _traced(value) else int(value)

    @num_bad_epochs.setter
    def num_bad_epochs(self, value) -> None:
        self._num_bad_epochs.set_value(jnp.asarray(value, jnp.int32))

    @property
    def best(self):
        """The best metric so far (None before the first step)."""
        has, value = self._has_best.get_value(), self._best.get_value()
        if _traced(has, value):
            return value
        return float(value) if bool(has) else None

    @best.setter
    def best(self, value) -> None:
        self._has_best.set_value(jnp.asarray(value is not None))
        self._best.set_value(jnp.asarray(0.0 if value is None else value, jnp.float32))

    def get_lr(self):
        return self.last_lr

    def _has_closed_form(self) -> bool:
        return False

    def step(self, metrics, epoch: int | None = None) -> None:
        """Record `metrics` (a scalar, e.g. the validation loss) and reduce the
        learning rate after more than `patience` steps without improvement."""
        metric = _scalar_metric(metrics)
        state = [v.get_value() for v in (self._last_epoch, self._last_lr, self._cooldown_counter,
                                          self._num_bad_epochs, self._best, self._has_best)]
        xp = jnp if _traced(metric, epoch, *state) else np
        last_epoch, lr, cooldown_counter, bad, best, has_best = (
            state if xp is jnp else [np.asarray(v, np.float64 if v.dtype == jnp.float32 else v.dtype) for v in state])
        metric = jnp.asarray(metric, jnp.float32) if xp is jnp else np.float64(metric)
        last_epoch = last_epoch + 1 if epoch is None else epoch

        cooling = cooldown_counter > 0
        better = xp.logical_or(xp.logical_not(has_best), self._is_better(metric, best))
        new_best = xp.where(cooling | ~better, best, metric)
        bad = xp.where(cooling, bad, xp.where(better, 0, bad + 1))
        trigger = ~cooling & (bad > self.patience)
        cooldown_counter = xp.where(trigger, self.cooldown, xp.where(cooling, cooldown_counter - 1, cooldown_counter))
        bad = xp.where(trigger, 0, bad)
        candidate = xp.maximum(lr * self.factor, self.min_lr)
        new_lr = xp.where(trigger & (lr - candidate > self.epsilon), candidate, lr)

        self._last_epoch.set_value(jnp.asarray(last_epoch, jnp.int32))
        self._cooldown_counter.set_value(jnp.asarray(cooldown_counter, jnp.int32))
        self._num_bad_epochs.set_value(jnp.asarray(bad, jnp.int32))
        self._best.set_value(jnp.asarray(new_best, jnp.float32))
        self._has_best.set_value(jnp.asarray(has_best | ~cooling))
        changed = xp is np and bool(new_lr != lr)
        self._last_lr.set_value(jnp.asarray(new_lr, jnp.float32))
        if changed:
            self._log()

    def _is_better(self, current, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return current < best - best * self.threshold
        if self.mode == "min":
            return current < best - self.threshold
        if self.threshold_mode == "rel":
            return current > best + best * self.threshold
        return current > best + self.threshold


def _scalar_metric(metrics):
    if isinstance(metrics, bool):
        raise TypeError("ReduceOnPlateau.step: metrics must be a number or a 1-element array; got a bool")
    if isinstance(metrics, (int, float, np.integer, np.floating)):
        return metrics
    if not isinstance(metrics, (jax.Array, np.ndarray)) and hasattr(metrics, "numpy"):
        metrics = metrics.numpy()  # a paddle / torch tensor
    if isinstance(metrics, (jax.Array, np.ndarray)):
        if metrics.size != 1:
            raise ValueError(f"ReduceOnPlateau.step: metrics must have exactly 1 element; got shape {tuple(metrics.shape)} (take the mean first)")
        return metrics.reshape(())
    raise TypeError(f"ReduceOnPlateau.step: metrics must be a number or a 1-element array; got {type(metrics).__name__}")


class CosineAnnealingDecay(LRScheduler):
    """Cosine annealing: `eta_min + (lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2`.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.CosineAnnealingDecay(learning_rate=1.0, T_max=2)
      >>> sched.step(); sched()
      0.5
    """

    def __init__(self, learning_rate: float, T_max: int, eta_min: float = 0, last_epoch: int = -1, verbose: bool = False) -> None:  # noqa: N803 (Paddle's names)
        if isinstance(T_max, bool) or not isinstance(T_max, (int, np.integer)):
            raise TypeError(f"CosineAnnealingDecay: T_max must be an int; got {type(T_max).__name__}")
        self.T_max = _check_positive_int("CosineAnnealingDecay", "T_max", T_max)
        self.eta_min = _check_float("CosineAnnealingDecay", "eta_min", eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + xp.cos(math.pi * _fp(epoch, xp) / self.T_max)) / 2


class OneCycleLR(LRScheduler):
    """The one-cycle policy: warm up from `max_learning_rate / divide_factor`
    to `max_learning_rate`, then anneal to `end_learning_rate` (optionally in
    three phases). Eagerly, stepping past `total_steps` raises as in Paddle;
    inside a trace the last value is held.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.OneCycleLR(max_learning_rate=1.0, total_steps=10)
      >>> sched()
      0.04
    """

    def __init__(self, max_learning_rate: float, total_steps: int, divide_factor: float = 25.0,
                 end_learning_rate: float = 0.0001, phase_pct: float = 0.3, anneal_strategy: str = "cos",
                 three_phase: bool = False, last_epoch: int = -1, verbose: bool = False) -> None:
        max_lr = _check_float("OneCycleLR", "max_learning_rate", max_learning_rate)
        if max_lr < 0:
            raise ValueError(f"OneCycleLR: max_learning_rate must be >= 0; got {max_lr}")
        end_lr = _check_float("OneCycleLR", "end_learning_rate", end_learning_rate)
        if end_lr < 0:
            raise ValueError(f"OneCycleLR: end_learning_rate must be >= 0; got {end_lr}")
        if isinstance(total_steps, bool) or not isinstance(total_steps, (int, np.integer)):
            raise TypeError(f"OneCycleLR: total_steps must be an int; got {type(total_steps).__name__}")
        self.total_steps = _check_positive_int("OneCycleLR", "total_steps", total_steps)
        if not isinstance(phase_pct, float):
            raise TypeError(f"OneCycleLR: phase_pct must be a float; got {type(phase_pct).__name__}")
        if not 0 <= phase_pct <= 1:
            raise ValueError(f"OneCycleLR: phase_pct must be in [0, 1]; got {phase_pct}")
        divide_factor = _check_float("OneCycleLR", "divide_factor", divide_factor)
        initial_lr = max_lr / divide_factor
        total = self.total_steps
        if three_phase:
            if phase_pct >= 0.5:
                raise ValueError(f"OneCycleLR: phase_pct must be < 0.5 when three_phase=True; got {phase_pct}")
            bounds = [0, phase_pct * total - 1, 2 * phase_pct * total - 2, total - 1]
            lrs = [initial_lr, max_lr, initial_lr, end_lr]
        else:
            bounds = [0, phase_pct * total - 1, total - 1]
            lrs = [initial_lr, max_lr, end_lr]
        # (start, end, size, lr from, lr to) per phase, as in Paddle's tables.
        self._phases = tuple((bounds[i], bounds[i + 1], bounds[i + 1] - bounds[i], lrs[i], lrs[i + 1]) for i in range(len(lrs) - 1))
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear'; got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        super().__init__(initial_lr, last_epoch, verbose)

    def _anneal(self, start, end, pct, xp):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (xp.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _lr_at(self, epoch, xp):
        if xp is np and epoch > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {epoch} times, but total_steps={self.total_steps}")
        e = _fp(epoch, xp)
        out = None
        for i in reversed(range(len(self._phases))):
            start, end, size, lr_from, lr_to = self._phases[i]
            value = self._anneal(lr_from, lr_to, (e - start) / (size or 1.0), xp)
            out = value if out is None else xp.where(e <= end, value, out)
        return out


class CyclicLR(LRScheduler):
    """Cyclical learning rate between `base_learning_rate` and
    `max_learning_rate` (modes 'triangular', 'triangular2', 'exp_range', or
    a custom `scale_fn`).

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.CyclicLR(base_learning_rate=0.0, max_learning_rate=1.0, step_size_up=2)
      >>> sched.step(); sched()
      0.5
    """

    def __init__(self, base_learning_rate: float, max_learning_rate: float, step_size_up: int,
                 step_size_down: int | None = None, mode: str = "triangular", exp_gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 last_epoch: int = -1, verbose: bool = False) -> None:
        max_lr = _check_float("CyclicLR", "max_learning_rate", max_learning_rate)
        if max_lr < 0:
            raise ValueError(f"CyclicLR: max_learning_rate must be >= 0; got {max_lr}")
        up = _check_positive_int("CyclicLR", "step_size_up", step_size_up)
        down = up if step_size_down is None else _check_positive_int("CyclicLR", "step_size_down", step_size_down)
        if not isinstance(exp_gamma, float):
            raise TypeError(f"CyclicLR: exp_gamma must be a float; got {type(exp_gamma).__name__}")
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or pass scale_fn); got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations'; got {scale_mode!r}")
        self.cycle_size = float(up + down)
        self.step_up_pct = up / self.cycle_size
        self.max_lr = max_lr
        self.amplitude = max_lr - _check_float("CyclicLR", "base_learning_rate", base_learning_rate)
        self.mode = mode
        self.gamma = exp_gamma
        if scale_fn is None:
            self.scale_fn = {"triangular": lambda x: 1.0, "triangular2": lambda x: 1 / (2.0 ** (x - 1)),
                             "exp_range": lambda x: self.gamma ** x}[mode]
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        else:
            self.scale_fn = scale_fn
            self.scale_mode = scale_mode
        super().__init__(base_learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        iterations = _fp(epoch, xp)
        cycle = 1 + xp.floor(iterations / self.cycle_size)
        pct = 1.0 + iterations / self.cycle_size - cycle
        scale = xp.where(pct <= self.step_up_pct, pct / self.step_up_pct, (1 - pct) / (1 - self.step_up_pct))
        x = cycle if self.scale_mode == "cycle" else iterations
        return self.base_lr + self.amplitude * scale * _call_user_fn(self, "scale_fn", self.scale_fn, x)


class LinearLR(LRScheduler):
    """Scale the learning rate linearly from `start_factor` to `end_factor`
    over `total_steps` epochs, then hold it.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.LinearLR(learning_rate=1.0, total_steps=2, start_factor=0.5)
      >>> sched.step(); sched()
      0.75
    """

    def __init__(self, learning_rate: float, total_steps: int, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        if not 0 < start_factor <= 1.0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1]; got {start_factor}")
        if not 0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1]; got {end_factor}")
        if total_steps <= 0:
            raise ValueError(f"LinearLR: total_steps must be > 0; got {total_steps}")
        self.start_factor = float(start_factor)
        self.end_factor = float(end_factor)
        self.total_steps = int(total_steps)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        progress = xp.minimum(_fp(epoch, xp), float(self.total_steps)) / self.total_steps
        return self.base_lr * (self.start_factor + (self.end_factor - self.start_factor) * progress)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing with warm restarts: the cosine restarts every `T_i`
    epochs, with `T_0` first and each period `T_mult` times longer.

    Example:
      >>> from pdx.optimizer import lr
      >>> sched = lr.CosineAnnealingWarmRestarts(learning_rate=1.0, T_0=2)
      >>> sched.step(2); sched()
      1.0
    """

    def __init__(self, learning_rate: float, T_0: int, T_mult: int = 1, eta_min: float = 0,  # noqa: N803
                 last_epoch: int = -1, verbose: bool = False):
        if isinstance(T_0, bool) or not isinstance(T_0, (int, np.integer)) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_0 must be a positive int; got {T_0!r}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, (int, np.integer)) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_mult must be an int >= 1; got {T_mult!r}")
        self.T_0 = int(T_0)
        self.T_mult = int(T_mult)
        self.eta_min = float(eta_min)
        # Restart epochs T_0 * (T_mult^n - 1) / (T_mult - 1), exact in integers
        # (Paddle's float log can land one period off).
        starts, periods = [0], [self.T_0]
        while self.T_mult > 1 and starts[-1] + periods[-1] < 2**31 - 1:
            starts.append(starts[-1] + periods[-1])
            periods.append(periods[-1] * self.T_mult)
        self._starts, self._periods = tuple(starts), tuple(periods)
        super().__init__(learning_rate, last_epoch, verbose)

    def _lr_at(self, epoch, xp):
        if self.T_mult == 1:
            t_cur, t_i = _fp(xp.mod(epoch, self.T_0), xp), float(self.T_0)
        else:
            index = sum(xp.asarray(epoch >= s, dtype=xp.int32) for s in self._starts[1:])
            t_cur = _fp(epoch - xp.asarray(self._starts)[index], xp)
            t_i = _fp(xp.asarray(self._periods)[index], xp)
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + xp.cos(math.pi * t_cur / t_i)) / 2
