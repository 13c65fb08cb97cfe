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

    Difference from Paddle: there is no `scaler.scale(loss).backward()` /
    `scaler.step(opt)` on hidden state. The state is explicit:

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

    def scale(self, loss, state: LossScaleState):
        """loss * scale (in float32), the value to differentiate."""
        if not self.enable:
            return loss
        return loss.astype(jnp.float32) * state.scale

    def unscale(self, grads, state: LossScaleState):
        """grads / scale, in float32."""
        if not self.enable:
            return grads
        inv = 1.0 / state.scale
        return jax.tree.map(lambda g: g.astype(jnp.float32) * inv, grads)

    @staticmethod
    def all_finite(tree) -> jax.Array:
        """A boolean scalar: every element of every leaf is finite."""
        leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]
        return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)

    def update(self, state: LossScaleState, finite) -> LossScaleState:
        """The next state after a step whose unscaled gradients were `finite`."""
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

    def is_use_dynamic_loss_scaling(self) -> bool:
        """Paddle's name: whether the scale adapts."""
        return self.use_dynamic_loss_scaling


AmpScaler = GradScaler  # Paddle's older name
