"""Gradient clipping (Paddle's `paddle.nn.ClipGradBy*`).

Each clip is usable three ways:
  * as an optimizer's `grad_clip=` (the usual Paddle way); clipping runs first
    in the update, before regularization;
  * as an optax transformation over any gradient pytree: `clip.transformation()`;
  * Paddle-style on a list of (param, grad) pairs: `clip(params_grads)`.

Parameters whose `ParamAttr(need_clip=False)` are left untouched, and
`ClipGradByGlobalNorm` leaves them out of the global norm, as Paddle does.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import optax

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GradientClipBase"]


def _need_clip(param) -> bool:
    """Whether `param` takes part in clipping (`ParamAttr(need_clip=...)`)."""
    get_metadata = getattr(param, "get_metadata", None)
    if get_metadata is not None:
        return bool(get_metadata().get("need_clip", True))
    return bool(getattr(param, "need_clip", True))


class _BoundError(ValueError, AssertionError):
    """A clip bound Paddle refuses with an assertion (pdx's message; a ValueError too)."""


class _DtypeError(TypeError, RuntimeError):
    """A gradient dtype Paddle has no clip kernel for (Paddle's RuntimeError; a TypeError too)."""


def _check_number(op: str, arg: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{op}: {arg} must be a float; got {value!r}")
    return float(value)


class GradientClipBase:
    """Base class of the gradient clips: subclasses implement `_clip(grads, need_clip)`
    over a flat list of gradients."""

    def _clip(self, grads: list, need_clip: Sequence[bool]) -> list:
        raise NotImplementedError

    def transformation(self, need_clip=None) -> optax.GradientTransformation:
        """This clip as a stateless optax transformation.

        Args:
          need_clip: None (clip every leaf) or a pytree of bools with the
            gradients' structure; False leaves are passed through unclipped.

        Returns:
          An `optax.GradientTransformation`.
        """

        def update_fn(updates, state, params=None):
            del params
            leaves, treedef = jax.tree.flatten(updates)
            if need_clip is None:
                mask = [True] * len(leaves)
            else:
                mask = treedef.flatten_up_to(need_clip)
            return jax.tree.unflatten(treedef, self._clip(leaves, mask)), state

        return optax.GradientTransformation(optax.init_empty_state, update_fn)

    def __call__(self, params_grads):
        """Clip a list of (param, grad) pairs (Paddle's calling convention).

        Pairs whose grad is None are dropped, as Paddle does.
        """
        pairs = [(p, g) for p, g in params_grads if g is not None]
        clipped = self._clip([jnp.asarray(g) for _, g in pairs], [_need_clip(p) for p, _ in pairs])
        return [(p, g) for (p, _), g in zip(pairs, clipped)]


class ClipGradByValue(GradientClipBase):
    """Clip every gradient element into [min, max].

    Args:
      max: the upper bound.
      min: the lower bound; defaults to `-max` (then `max` must be positive).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.nn._clip import ClipGradByValue
      >>> tx = ClipGradByValue(1.0).transformation()
      >>> tx.update({"w": jnp.array([-3.0, 0.5, 2.0])}, tx.init(None))[0]["w"].tolist()
      [-1.0, 0.5, 1.0]
    """

    def __init__(self, max: float, min: float | None = None) -> None:  # noqa: A002 (Paddle's names)
        max_ = _check_number("ClipGradByValue", "max", max)
        if min is None:
            if max_ <= 0.0:
                raise _BoundError(f"ClipGradByValue: max must be positive when min is None (min defaults to -max); got max={max_}")
            min_ = -max_
        else:
            min_ = _check_number("ClipGradByValue", "min", min)
        if min_ > max_:
            raise ValueError(f"ClipGradByValue: min={min_} must not exceed max={max_}")
        self.max = max_
        self.min = min_

    def _clip(self, grads, need_clip):
        return [jnp.clip(g, self.min, self.max) if m else g for g, m in zip(grads, need_clip)]

    def __repr__(self) -> str:
        return f"ClipGradByValue(max={self.max}, min={self.min})"


class ClipGradByNorm(GradientClipBase):
    """Rescale each gradient tensor whose L2 norm exceeds `clip_norm` to norm `clip_norm`.

    Args:
      clip_norm: the largest L2 norm each gradient may keep.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.nn._clip import ClipGradByNorm
      >>> tx = ClipGradByNorm(1.0).transformation()
      >>> tx.update({"w": jnp.array([3.0, 4.0])}, tx.init(None))[0]["w"].tolist()
      [0.6000000238418579, 0.800000011920929]
    """

    def __init__(self, clip_norm: float) -> None:
        self.clip_norm = _check_number("ClipGradByNorm", "clip_norm", clip_norm)
        if self.clip_norm <= 0.0:
            raise ValueError(f"ClipGradByNorm: clip_norm must be greater than 0; got clip_norm={self.clip_norm}")

    def _clip(self, grads, need_clip):
        out = []
        for g, m in zip(grads, need_clip):
            if not m:
                out.append(g)
                continue
            if not jnp.issubdtype(g.dtype, jnp.floating):  # Paddle: RuntimeError (no kernel for the dtype)
                raise _DtypeError(f"ClipGradByNorm: gradients must be floating point; got a {g.dtype} gradient "
                                  f"of shape {tuple(g.shape)}")
            norm = jnp.sqrt(jnp.sum(jnp.square(g.astype(jnp.promote_types(g.dtype, jnp.float32)))))
            scale = jnp.where(norm <= self.clip_norm, 1.0, self.clip_norm / norm)
            out.append(g * scale.astype(g.dtype))
        return out

    def __repr__(self) -> str:
        return f"ClipGradByNorm(clip_norm={self.clip_norm})"


class ClipGradByGlobalNorm(GradientClipBase):
    """Rescale all gradients together so their global L2 norm is at most `clip_norm`.

    The global norm is `sqrt(sum_i ||g_i||^2)` over the clipped gradients; each
    one is multiplied by `clip_norm / max(global_norm, clip_norm)`.

    Args:
      clip_norm: the largest global norm.
      group_name: kept for Paddle compatibility (hybrid-parallel grouping).
      auto_skip_clip: if True, gradients are left untouched (not multiplied)
        when the global norm is within `clip_norm`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.nn._clip import ClipGradByGlobalNorm
      >>> tx = ClipGradByGlobalNorm(1.0).transformation()
      >>> g = {"a": jnp.array([3.0]), "b": jnp.array([4.0])}
      >>> out = tx.update(g, tx.init(None))[0]
      >>> round(float(out["a"][0]), 4), round(float(out["b"][0]), 4)
      (0.6, 0.8)
    """

    def __init__(self, clip_norm: float, group_name: str = "default_group", auto_skip_clip: bool = False) -> None:
        self.clip_norm = _check_number("ClipGradByGlobalNorm", "clip_norm", clip_norm)
        if not isinstance(auto_skip_clip, bool):
            raise TypeError(f"ClipGradByGlobalNorm: auto_skip_clip must be a bool; got {auto_skip_clip!r}")
        self.group_name = group_name
        self.auto_skip_clip = auto_skip_clip

    def _clip(self, grads, need_clip):
        clipped = [g for g, m in zip(grads, need_clip) if m]
        if not clipped:
            return list(grads)
        acc = jnp.result_type(jnp.float32, *[g.dtype for g in clipped])
        global_norm = jnp.sqrt(sum(jnp.sum(jnp.square(g.astype(acc))) for g in clipped))
        max_norm = jnp.asarray(self.clip_norm, acc)
        if self.auto_skip_clip:
            scale = jnp.where(global_norm > max_norm, max_norm / global_norm, 1.0)
        else:
            scale = max_norm / jnp.maximum(global_norm, max_norm)
        return [g * scale.astype(g.dtype) if m else g for g, m in zip(grads, need_clip)]

    def __repr__(self) -> str:
        return f"ClipGradByGlobalNorm(clip_norm={self.clip_norm}, group_name={self.group_name!r}, auto_skip_clip={self.auto_skip_clip})"
