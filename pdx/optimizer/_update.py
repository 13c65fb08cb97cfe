"""The one optimizer update: what `Optimizer.step`, `TrainState.apply_gradients`
and therefore `make_step`, `pdx.Model`, `DistModel`, fleet and every recipe run.

An optimizer's math is an optax transformation over a dict name -> array
(`Optimizer.transformation()`). Two rules hold for every caller:

- updates are computed in at least float32: parameters and gradients are
  promoted before `tx.update`, so optimizer state (Adam's moments) is float32
  for bfloat16/float16 parameters too, and the new value is cast back to the
  parameter's dtype;
- float32 master weights, where kept (`multi_precision=True`,
  `pdx.amp.decorate(master_weight=True)`), are a `master_weights` wrapper in
  the transformation itself: its state holds the copies, so they live in
  `opt_state` (and in every checkpoint of it) and each engine gets them by
  running the same transformation.

Example:
  >>> import jax.numpy as jnp, pdx
  >>> net = pdx.nn.Linear(2, 1)
  >>> opt = pdx.optimizer.SGD(0.5, parameters=net)
  >>> tx = opt.transformation()
  >>> params = {"weight": jnp.ones((2, 1), jnp.bfloat16), "bias": jnp.zeros((1,), jnp.bfloat16)}
  >>> state = init_opt_state(tx, params)
  >>> new, state = apply_update(tx, params, {k: jnp.ones_like(v) for k, v in params.items()}, state, 0.5)
  >>> str(new["weight"].dtype), float(new["weight"][0, 0])
  ('bfloat16', 0.5)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import jax.numpy as jnp
import optax

__all__ = ["MasterWeightsState", "apply_update", "compute_dtype", "init_opt_state", "master_weights"]


def compute_dtype(dtype):
    """The dtype a parameter of `dtype` is updated in: at least float32."""
    return jnp.promote_types(dtype, jnp.float32)


def _promoted(tree: Mapping) -> dict:
    return {n: jnp.asarray(v).astype(compute_dtype(jnp.asarray(v).dtype)) for n, v in tree.items()}


class MasterWeightsState(NamedTuple):
    """State of `master_weights`: the float32 copies by parameter name and the wrapped state."""

    masters: dict
    inner: Any


def master_weights(inner: optax.GradientTransformation, dtypes: Mapping[str, Any]) -> optax.GradientTransformationExtraArgs:
    """Keep float32 master copies of the parameters named in `dtypes` (name -> their low-precision dtype).

    `inner` runs on the masters (its state, e.g. Adam's moments, is float32),
    the masters advance by its updates, and the update returned for such a
    parameter (in float32) takes it exactly to its master rounded to its own
    dtype, so `optax.apply_updates` on the low-precision parameter gives the
    rounded master. Updates smaller than bfloat16's spacing then accumulate in
    the master instead of being rounded away.

    Args:
      inner: the transformation over dicts name -> array (all parameters).
      dtypes: name -> dtype of each parameter that keeps a master copy.

    Returns:
      An `optax.GradientTransformationExtraArgs` with `MasterWeightsState`.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> tx = master_weights(optax.sgd(1e-3), {"w": jnp.bfloat16})
      >>> p = {"w": jnp.ones(2, jnp.bfloat16)}
      >>> s = tx.init(p)
      >>> for _ in range(10):
      ...     u, s = tx.update({"w": jnp.ones(2)}, s, p)
      ...     p = optax.apply_updates(p, u)
      >>> float(p["w"][0]), round(float(s.masters["w"][0]), 4)   # bfloat16 alone would stay at 1.0
      (0.98828125, 0.99)
    """
    inner = optax.with_extra_args_support(inner)
    dtypes = {n: jnp.dtype(d) for n, d in dtypes.items()}

    def init_fn(params):
        masters = {n: jnp.asarray(params[n]).astype(jnp.float32) for n in dtypes}
        return MasterWeightsState(masters, inner.init({**_promoted(params), **masters}))

    def update_fn(updates, state, params=None, **extra):
        if params is None:
            raise ValueError("master_weights needs params: call tx.update(grads, state, params)")
        full = {**_promoted(params), **state.masters}
        grads = {n: jnp.asarray(g).astype(full[n].dtype) for n, g in updates.items()}
        out, inner_state = inner.update(grads, state.inner, full, **extra)
        out = dict(out)
        masters = {}
        for n, dtype in dtypes.items():
            masters[n] = state.masters[n] + out[n].astype(jnp.float32)
            # the step from the parameter as it is to its rounded master; both are
            # `dtype` values, so their difference is exact in float32
            out[n] = masters[n].astype(dtype).astype(jnp.float32) - jnp.asarray(params[n]).astype(jnp.float32)
        return {n: out[n] for n in updates}, MasterWeightsState(masters, inner_state)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def init_opt_state(tx: optax.GradientTransformation, params: Mapping):
    """`tx.init` on the parameters in their update precision (float32 state for low-precision ones)."""
    return tx.init(_promoted(params))


def apply_update(tx: optax.GradientTransformation, params: Mapping, grads: Mapping, opt_state,
                 learning_rate) -> tuple[dict, Any]:
    """One optimizer update: `(params, grads, opt_state, lr) -> (new params, new opt_state)`.

    Pure (runs eagerly, under `jax.jit` and inside a traced step alike); the
    new parameters keep their dtypes.

    Args:
      tx: the optimizer's transformation (`Optimizer.transformation()`).
      params: name -> array; grads: the same keys.
      opt_state: the transformation's state (from `init_opt_state`).
      learning_rate: passed to the transformation as its `learning_rate` extra argument.
    """
    compute = _promoted(params)
    g = {n: jnp.asarray(grads[n]).astype(compute[n].dtype) for n in compute}
    updates, opt_state = optax.with_extra_args_support(tx).update(g, opt_state, compute, learning_rate=learning_rate)
    new = {n: (compute[n] + updates[n].astype(compute[n].dtype)).astype(jnp.asarray(params[n]).dtype) for n in compute}
    return new, opt_state
