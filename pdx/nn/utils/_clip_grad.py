"""`clip_grad_norm_` / `clip_grad_value_`: Paddle's gradient clipping utilities, functional.

Paddle clips `param.grad` in place. pdx keeps no gradients on parameters
(they are returned by `pdx.grad` / `pdx.value_and_grad`), so these take the
gradients and return the clipped ones, keeping the container (a `Gradients`
dict stays one, owner included, so `opt.step` matches it as before):

    loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
    grads, total_norm = pdx.nn.utils.clip_grad_norm_(grads, max_norm=1.0)
    opt.step(grads)

(or clip inside the optimizer: `grad_clip=pdx.nn.ClipGradByGlobalNorm(1.0)`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

__all__ = ["clip_grad_norm_", "clip_grad_value_"]

_PARAMETERS_GIVEN = (
    "{fn}: got parameters ({what}); pdx keeps no .grad on parameters, so there is nothing to clip in "
    "place. Pass the gradients and use the result:\n"
    "    loss, grads = pdx.value_and_grad(loss_fn)(model, *batch)\n"
    "    {example}\n"
    "    opt.step(grads)\n"
    "or let the optimizer clip: grad_clip=pdx.nn.{clip}."
)

_SUPPORTED_NORMS = (float("inf"), 0.0, 1.0, 2.0)


def _check_grads(fn: str, grads, example: str, clip: str):
    leaves = jax.tree.leaves(grads, is_leaf=lambda x: isinstance(x, nnx.Variable))
    params = [x for x in leaves if isinstance(x, nnx.Variable)]
    if params:
        raise TypeError(_PARAMETERS_GIVEN.format(fn=fn, what=f"{len(params)} nnx.Param", example=example, clip=clip))
    return leaves


def _norm(x, p: float):
    x = jnp.abs(x.astype(jnp.float32) if x.dtype != jnp.float64 else x)
    if p == 0.0:
        return jnp.sum(x != 0).astype(x.dtype)
    if p == 1.0:
        return jnp.sum(x)
    return jnp.sqrt(jnp.sum(x * x))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False):
    """Scale gradients so that their total `norm_type` norm is at most `max_norm`.

    Paddle's rule: `total = norm([norm(g) for g in grads])` (max |g| for inf),
    every gradient times `min(max_norm / (total + 1e-6), 1)`.

    Args:
      parameters: the gradients: a `Gradients` / dict name -> array (from
        `pdx.grad`), a list of arrays, or one array (Paddle takes parameters
        here and reads their `.grad`; see the module docs).
      max_norm: the largest total norm kept.
      norm_type: 2, 1, 0 (count of nonzeros) or inf.
      error_if_nonfinite: raise when the total norm is nan or inf (eager only).

    Returns:
      `(clipped gradients, total_norm)`: the gradients in the container given,
      and the total norm before clipping (a 0-d array).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> grads, total = pdx.nn.utils.clip_grad_norm_({"w": jnp.array([3.0, 4.0])}, max_norm=1.0)
      >>> float(total), [round(v, 3) for v in grads["w"].tolist()]
      (5.0, [0.6, 0.8])
    """
    leaves = _check_grads("clip_grad_norm_", parameters, "grads, total_norm = pdx.nn.utils.clip_grad_norm_(grads, max_norm)",
                          "ClipGradByGlobalNorm(max_norm)")
    try:
        norm_type = float(norm_type)
    except (TypeError, ValueError):
        raise ValueError(f"clip_grad_norm_: norm_type={norm_type!r}; norm_type only support {list(_SUPPORTED_NORMS)}") from None
    if norm_type not in _SUPPORTED_NORMS:
        raise ValueError(f"clip_grad_norm_: norm_type={norm_type!r}; norm_type only support {list(_SUPPORTED_NORMS)}")
    max_norm = float(max_norm)
    if not leaves:
        return parameters, jnp.asarray(0.0)
    if norm_type == float("inf"):
        total = jnp.max(jnp.stack([jnp.max(jnp.abs(g)).astype(jnp.float32) for g in leaves]))
    else:
        total = _norm(jnp.stack([_norm(jnp.asarray(g), norm_type) for g in leaves]), norm_type)
    if error_if_nonfinite and not isinstance(total, jax.core.Tracer) and not bool(jnp.isfinite(total)):
        raise RuntimeError(f"The total norm of {norm_type} order of the gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. In any case, disable this error and scale the gradient by non-finite norm, "
                           "set `error_if_nonfinite=False`")
    coef = jnp.minimum(max_norm / (total + 1e-6), 1.0)
    clipped = jax.tree.map(lambda g: (g * coef.astype(g.dtype)).astype(g.dtype), parameters)
    return clipped, total


def clip_grad_value_(parameters, clip_value: float):
    """Clamp every gradient entry into `[-clip_value, clip_value]`.

    Args:
      parameters: the gradients (as in `clip_grad_norm_`).
      clip_value: the bound.

    Returns:
      The clipped gradients, in the container given (Paddle clips `.grad` in place and returns None).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> pdx.nn.utils.clip_grad_value_({"w": jnp.array([-3.0, 0.5])}, 1.0)["w"].tolist()
      [-1.0, 0.5]
    """
    _check_grads("clip_grad_value_", parameters, "grads = pdx.nn.utils.clip_grad_value_(grads, clip_value)",
                 "ClipGradByValue(clip_value)")
    clip_value = float(clip_value)
    return jax.tree.map(lambda g: jnp.clip(g, -clip_value, clip_value), parameters)
