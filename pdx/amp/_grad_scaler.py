"""`GradScaler`: dynamic loss scaling as pure functional state.

float16 has a narrow range: small gradients underflow to zero. Loss scaling
multiplies the loss by a large factor before differentiation and divides the
gradients by it afterwards. Dynamic scaling adapts the factor: a step whose
scaled gradients overflow (inf/nan) is skipped and, after
`decr_every_n_nan_or_inf` such steps in a row, the scale is multiplied by
`decr_ratio`; after `incr_every_n_steps` clean steps in a row it is
multiplied by `incr_ratio` (Paddle's `update_loss_scaling` rule).

The scaler object holds only configuration. The changing numbers live in a
`LossScaleState` pytree inside `pdx.TrainState` (`state.loss_scale`), so a
compiled train step updates them purely and checkpoints save them.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["GradScaler", "LossScaleState", "AmpScaler"]


class LossScaleState(NamedTuple):
    """The changing part of loss scaling: the scale and the two streak counters."""

    scale: jax.Array       # float32 scalar
    good_steps: jax.Array  # int32: finite steps in a row
    bad_steps: jax.Array   # int32: non-finite steps in a row


def _positive(name: str, value, *, integer: bool = False):
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value <= 0:
        kind = "a positive int" if integer else "a positive number"
        raise ValueError(f"GradScaler: {name} must be {kind}; got {name}={value!r}")
    return value


class _EagerState(NamedTuple):
    """Paddle's eager form: the scaler's own state and what the last step found."""

    state: LossScaleState
    found_inf: bool | None  # None: no step since the last update
    unscaled: int | None = None  # id() of the optimizer whose gradients `unscale_` already unscaled


_NEEDS_GRADS = (
    "GradScaler: {call} finds the gradients on a tape in Paddle; pdx has none. Take the "
    "gradients of the scaled loss and pass them: `loss, grads = pdx.value_and_grad(lambda m, x: "
    "scaler.scale(loss_fn(m, x)))(model, x)`, then `scaler.step(optimizer, grads)` and "
    "`scaler.update()` (or `scaler.minimize(optimizer, grads)`)."
)


def _is_loss(value) -> bool:
    """Paddle passes the scaled loss (shape [] or [1]) where pdx takes the gradients."""
    return isinstance(value, jax.Array) and value.shape in ((), (1,))


@dataclasses.dataclass(frozen=True, init=False)
class GradScaler:
    """Dynamic loss scaling (Paddle's `paddle.amp.GradScaler`), pure-functional.

    Args:
      enable: False makes `scale`/`unscale` identities and never skips a step.
      init_loss_scaling: the starting scale.
      incr_ratio: multiply the scale by this after `incr_every_n_steps` clean steps.
      decr_ratio: multiply the scale by this after `decr_every_n_nan_or_inf` bad steps.
      incr_every_n_steps: clean steps in a row before growing.
      decr_every_n_nan_or_inf: non-finite steps in a row before shrinking.
      use_dynamic_loss_scaling: False keeps the scale fixed (steps with
        non-finite gradients are still skipped).

    Two forms. Paddle's eager form keeps the state in the scaler, and takes
    the gradients as an argument (pdx has no tape, so `scaled.backward()` /
    `scaler.step(opt)` alone cannot find them):

      >>> import pdx, jax.numpy as jnp
      >>> net = pdx.nn.Linear(2, 1)
      >>> opt = pdx.optimizer.SGD(0.1, parameters=net.parameters())
      >>> scaler = pdx.amp.GradScaler(init_loss_scaling=1024.0)
      >>> loss, grads = pdx.value_and_grad(lambda m, x: scaler.scale(m(x).mean()))(net, jnp.ones((4, 2)))
      >>> scaler.step(opt, grads)  # unscales, skips the step if a gradient is inf/nan
      >>> scaler.update()          # or scaler.minimize(opt, grads) for both
      >>> float(scaler.get_loss_scaling())
      1024.0

    The pure form passes the state explicitly (what compiled train steps use):

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> scaler = pdx.amp.GradScaler(init_loss_scaling=1024.0)
      >>> state = scaler.init()
      >>> grads = scaler.unscale({"w": jnp.array([jnp.inf])}, state)
      >>> state = scaler.update(state, finite=scaler.all_finite(grads))
      >>> float(state.scale)
      512.0

    `pdx.Model.prepare(amp_configs={"dtype": "float16", ...})` or passing a
    scaler to `pdx.TrainState.create(..., grad_scaler=scaler)` wires it into
    the compiled train step.
    """

    enable: bool
    init_loss_scaling: float
    incr_ratio: float
    decr_ratio: float
    incr_every_n_steps: int
    decr_every_n_nan_or_inf: int
    use_dynamic_loss_scaling: bool

    def __init__(self, enable: bool = True, init_loss_scaling: float = 65536.0, incr_ratio: float = 2.0,
                 decr_ratio: float = 0.5, incr_every_n_steps: int = 2000, decr_every_n_nan_or_inf: int = 1,
                 use_dynamic_loss_scaling: bool = True):
        _positive("init_loss_scaling", init_loss_scaling)
        if not isinstance(incr_ratio, (int, float)) or incr_ratio <= 1.0:
            raise ValueError(f"GradScaler: incr_ratio must be > 1.0; got incr_ratio={incr_ratio!r}")
        if not isinstance(decr_ratio, (int, float)) or not 0.0 < decr_ratio < 1.0:
            raise ValueError(f"GradScaler: decr_ratio must be in (0, 1); got decr_ratio={decr_ratio!r}")
        _positive("incr_every_n_steps", incr_every_n_steps, integer=True)
        _positive("decr_every_n_nan_or_inf", decr_every_n_nan_or_inf, integer=True)
        for name, value in (("enable", bool(enable)), ("init_loss_scaling", float(init_loss_scaling)),
                            ("incr_ratio", float(incr_ratio)), ("decr_ratio", float(decr_ratio)),
                            ("incr_every_n_steps", int(incr_every_n_steps)),
                            ("decr_every_n_nan_or_inf", int(decr_every_n_nan_or_inf)),
                            ("use_dynamic_loss_scaling", bool(use_dynamic_loss_scaling))):
            object.__setattr__(self, name, value)

    def init(self) -> LossScaleState:
        """The starting `LossScaleState` (scale 1 when disabled)."""
        scale = self.init_loss_scaling if self.enable else 1.0
        return LossScaleState(jnp.asarray(scale, jnp.float32), jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def scale(self, loss, state: LossScaleState | None = None):
        """loss * scale (in float32), the value to differentiate; without `state`, the
        scaler's own (Paddle's `scaler.scale(loss)`)."""
        if not self.enable:
            return loss
        state = self._state() if state is None else state
        return loss.astype(jnp.float32) * state.scale

    def unscale(self, grads, state: LossScaleState | None = None):
        """grads / scale, in float32; without `state`, the scaler's own."""
        if not self.enable:
            return grads
        state = self._state() if state is None else state
        inv = 1.0 / state.scale
        return jax.tree.map(lambda g: g.astype(jnp.float32) * inv, grads)

    # -- Paddle's eager form: the state lives in the scaler -----------------------------------
    def _eager_state(self) -> _EagerState:
        eager = self.__dict__.get("_eager")
        if eager is None:
            eager = _EagerState(self.init(), None)
            object.__setattr__(self, "_eager", eager)
        return eager

    def _state(self) -> LossScaleState:
        return self._eager_state().state

    def _set(self, state: LossScaleState, found_inf) -> None:
        object.__setattr__(self, "_eager", _EagerState(state, found_inf))

    def unscale_(self, optimizer, grads=None):
        """Paddle's `scaler.unscale_(optimizer)` (unscale before clipping): returns `grads`
        unscaled, and the next `step(optimizer, grads)` of this optimizer takes them as they
        are (no second unscale) until `update()`. Eager only.

        Example:
          >>> import pdx, jax.numpy as jnp
          >>> scaler = pdx.amp.GradScaler(init_loss_scaling=8.0)
          >>> float(scaler.unscale_(None, {"w": jnp.array(16.0)})["w"])
          2.0
        """
        if grads is None or _is_loss(grads):
            raise TypeError(_NEEDS_GRADS.format(call="scaler.unscale_(optimizer)"))
        eager = self._eager_state()
        if eager.unscaled == id(optimizer):
            raise RuntimeError("GradScaler.unscale_: already called for this optimizer since the last "
                               "update(); call scaler.update() after scaler.step(optimizer, grads)")
        unscaled = self.unscale(grads)
        object.__setattr__(self, "_eager", eager._replace(unscaled=id(optimizer)))
        return unscaled

    def step(self, optimizer, grads=None) -> None:
        """Paddle's `scaler.step(optimizer)`: unscale `grads` (the gradients of the scaled
        loss; as they are after `unscale_(optimizer, grads)`) and call
        `optimizer.step(unscaled)` unless one of them is inf/nan. Eager only."""
        if grads is None or _is_loss(grads):
            raise TypeError(_NEEDS_GRADS.format(call="scaler.step(optimizer)"))
        done = self._eager_state().unscaled == id(optimizer)
        unscaled = grads if done else self.unscale(grads)
        finite = self.all_finite(unscaled)
        if isinstance(finite, jax.core.Tracer):
            raise TypeError("GradScaler.step: under a trace use the pure form: `grads = "
                            "scaler.unscale(grads, state)`, `state = scaler.update(state, "
                            "scaler.all_finite(grads))` (pdx.TrainState does this for you)")
        found_inf = not bool(finite)
        if not found_inf or not self.enable:
            optimizer.step(unscaled)
        self._set(self._state(), found_inf)

    def minimize(self, optimizer, grads=None) -> None:
        """Paddle's `scaler.minimize(optimizer, scaled_loss)` as `scaler.minimize(optimizer,
        grads)`: `step(optimizer, grads)` then `update()`."""
        if grads is None or _is_loss(grads):
            raise TypeError(_NEEDS_GRADS.format(call="scaler.minimize(optimizer, scaled_loss)"))
        self.step(optimizer, grads)
        self.update()

    def get_loss_scaling(self) -> jax.Array:
        """The scaler's current scale (Paddle's `scaler._scale`)."""
        return self._state().scale

    def get_init_loss_scaling(self) -> float:
        """Paddle's name: the starting scale."""
        return self.init_loss_scaling

    def state_dict(self) -> dict:
        """The eager state with Paddle's keys (`scale`, `incr_count`, `decr_count`, ...)."""
        st = self._state()
        return {"scale": st.scale, "incr_ratio": self.incr_ratio, "decr_ratio": self.decr_ratio,
                "incr_every_n_steps": self.incr_every_n_steps,
                "decr_every_n_nan_or_inf": self.decr_every_n_nan_or_inf,
                "incr_count": int(st.good_steps), "decr_count": int(st.bad_steps),
                "use_dynamic_loss_scaling": self.use_dynamic_loss_scaling}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the eager state from `state_dict()` (the configuration stays as constructed)."""
        scale = jnp.asarray(state_dict["scale"], jnp.float32).reshape(())
        self._set(LossScaleState(scale, jnp.asarray(state_dict.get("incr_count", 0), jnp.int32),
                                 jnp.asarray(state_dict.get("decr_count", 0), jnp.int32)), None)

    @staticmethod
    def all_finite(tree) -> jax.Array:
        """A boolean scalar: every element of every leaf is finite."""
        leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]
        return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)

    def update(self, state: LossScaleState | None = None, finite=None) -> LossScaleState | None:
        """The next state after a step whose unscaled gradients were `finite`.

        `scaler.update()` without arguments is Paddle's: it moves the scaler's own state on
        from the last `step` (returns None)."""
        if state is None and finite is None:
            eager = self.__dict__.get("_eager")
            if eager is None or eager.found_inf is None:
                raise RuntimeError("GradScaler.update(): call scaler.step(optimizer, grads) first; "
                                   "update() moves the scale on from that step's gradients")
            self._set(self.update(eager.state, not eager.found_inf), None)
            return None
        if state is None or finite is None:
            raise TypeError("GradScaler.update: pass both `state` and `finite` (the pure form), or "
                            "neither (Paddle's form, after scaler.step(optimizer, grads))")
        if not self.enable or not self.use_dynamic_loss_scaling:
            return state
        finite = jnp.asarray(finite)
        good = jnp.where(finite, state.good_steps + 1, 0)
        bad = jnp.where(finite, 0, state.bad_steps + 1)
        grow = good >= self.incr_every_n_steps
        shrink = bad >= self.decr_every_n_nan_or_inf
        grown = state.scale * self.incr_ratio
        # Paddle keeps the old scale when growing would overflow float32.
        scale = jnp.where(grow & jnp.isfinite(grown), grown, state.scale)
        scale = jnp.where(shrink, jnp.maximum(state.scale * self.decr_ratio, 1.0), scale)
        return LossScaleState(scale.astype(jnp.float32), jnp.where(grow, 0, good).astype(jnp.int32),
                              jnp.where(shrink, 0, bad).astype(jnp.int32))

    def is_enable(self) -> bool:
        """Paddle's name: whether loss scaling is on."""
        return self.enable

    # -- Paddle's getters and setters (eager configuration; a TrainState keeps the scaler it got) --
    def _configure(self, name: str, value) -> None:
        fields = {f: getattr(self, f) for f in ("enable", "init_loss_scaling", "incr_ratio", "decr_ratio",
                                                 "incr_every_n_steps", "decr_every_n_nan_or_inf",
                                                 "use_dynamic_loss_scaling")}
        checked = GradScaler(**{**fields, name: value})  # the constructor's checks and conversions
        object.__setattr__(self, name, getattr(checked, name))

    def set_init_loss_scaling(self, new_init_loss_scaling) -> None:
        """Paddle's setter: a new starting scale, which also becomes the current scale."""
        self._configure("init_loss_scaling", new_init_loss_scaling)
        st = self._state()
        self._set(st._replace(scale=jnp.asarray(self.init_loss_scaling if self.enable else 1.0, jnp.float32)),
                  None)

    def get_incr_ratio(self) -> float:
        return self.incr_ratio

    def set_incr_ratio(self, new_incr_ratio) -> None:
        self._configure("incr_ratio", new_incr_ratio)

    def get_decr_ratio(self) -> float:
        return self.decr_ratio

    def set_decr_ratio(self, new_decr_ratio) -> None:
        self._configure("decr_ratio", new_decr_ratio)

    def get_incr_every_n_steps(self) -> int:
        return self.incr_every_n_steps

    def set_incr_every_n_steps(self, new_incr_every_n_steps) -> None:
        self._configure("incr_every_n_steps", new_incr_every_n_steps)

    def get_decr_every_n_nan_or_inf(self) -> int:
        return self.decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, new_decr_every_n_nan_or_inf) -> None:
        self._configure("decr_every_n_nan_or_inf", new_decr_every_n_nan_or_inf)

    def is_use_dynamic_loss_scaling(self) -> bool:
        """Paddle's name: whether the scale adapts."""
        return self.use_dynamic_loss_scaling


AmpScaler = GradScaler  # Paddle's older name
