"""Bijective (and a few non-bijective) transforms of random variables, Paddle's `paddle.distribution.*Transform`.

A transform maps x -> y = forward(x) with `inverse`, `forward_log_det_jacobian`
(log |det dy/dx|, summed over the transform's event dims), `inverse_log_det_jacobian`
and shape maps. `domain_event_rank` / `codomain_event_rank` say how many trailing
dims form one event on each side (0 for elementwise transforms, 1 for
softmax/stick-breaking). Transforms are pytrees, like distributions.
"""

from __future__ import annotations

import enum
import math

import jax
import jax.numpy as jnp

from pdx.distribution._base import register_pytree_class, sum_rightmost

__all__ = [
    "Transform", "AbsTransform", "AffineTransform", "ChainTransform", "ExpTransform",
    "IndependentTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
]


class _Kind(enum.Enum):
    BIJECTION = "bijection"
    INJECTION = "injection"
    SURJECTION = "surjection"
    OTHER = "other"


def _tensor(x, name: str, owner: str):
    if isinstance(x, (str, bytes, dict, set)) or x is None or isinstance(x, bool):
        raise TypeError(f"{owner}: `{name}` must be a tensor or number; got {x!r}")
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.float32)


class Transform:
    """Base class of transforms: `y = t(x)`, `x = t.inverse(y)` and their log-det-Jacobians.

    Calling a transform on a tensor applies `forward`; on a Distribution it
    builds a `TransformedDistribution`; on another Transform it builds a
    `ChainTransform` (this one applied last).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> t = D.ExpTransform()
      >>> round(float(t.inverse(t(jnp.asarray(0.5)))), 4)
      0.5
    """

    _kind = _Kind.INJECTION
    domain_event_rank = 0
    codomain_event_rank = 0

    def __init__(self) -> None:
        pass

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_pytree_class(cls)

    def _is_injective(self) -> bool:
        return self._kind in (_Kind.BIJECTION, _Kind.INJECTION)

    def __call__(self, input):
        """Apply to a tensor, a Distribution (-> TransformedDistribution) or a Transform (-> chain)."""
        from pdx.distribution._base import Distribution
        from pdx.distribution._transformed import TransformedDistribution

        if isinstance(input, Distribution):
            return TransformedDistribution(input, [self])
        if isinstance(input, Transform):
            return ChainTransform([self, input])
        return self.forward(input)

    def _check_rank(self, v, name: str, rank: int):
        v = _tensor(v, name, type(self).__name__)
        if v.ndim < rank:
            raise ValueError(f"{type(self).__name__}: `{name}` needs at least {rank} dims (the event "
                             f"rank); got shape {v.shape}")
        return v

    def forward(self, x) -> jax.Array:
        """y = f(x)."""
        return self._forward(self._check_rank(x, "x", self.domain_event_rank))

    def inverse(self, y) -> jax.Array:
        """x = f^-1(y)."""
        return self._inverse(self._check_rank(y, "y", self.codomain_event_rank))

    def forward_log_det_jacobian(self, x) -> jax.Array:
        """log |det df/dx| at x, summed over the domain event dims."""
        x = self._check_rank(x, "x", self.domain_event_rank)
        if not self._is_injective():
            raise NotImplementedError(f"{type(self).__name__} is not injective: forward_log_det_jacobian "
                                      f"is undefined")
        if type(self)._forward_log_det_jacobian is not Transform._forward_log_det_jacobian:
            return self._forward_log_det_jacobian(x)
        return -self._inverse_log_det_jacobian(self._forward(x))

    def inverse_log_det_jacobian(self, y) -> jax.Array:
        """log |det df^-1/dy| at y."""
        y = self._check_rank(y, "y", self.codomain_event_rank)
        if type(self)._inverse_log_det_jacobian is not Transform._inverse_log_det_jacobian:
            return self._inverse_log_det_jacobian(y)
        return -self._forward_log_det_jacobian(self._inverse(y))

    def forward_shape(self, shape) -> tuple[int, ...]:
        """The output shape for an input of `shape`."""
        return tuple(self._forward_shape(self._shape_arg(shape)))

    def inverse_shape(self, shape) -> tuple[int, ...]:
        """The input shape for an output of `shape`."""
        return tuple(self._inverse_shape(self._shape_arg(shape)))

    def _shape_arg(self, shape):
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"{type(self).__name__}: `shape` must be a list/tuple of ints; got {shape!r}")
        return tuple(shape)

    def _forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def _forward_log_det_jacobian(self, x):
        raise NotImplementedError(f"{type(self).__name__} has no log-det-Jacobian")

    def _inverse_log_det_jacobian(self, y):
        raise NotImplementedError(f"{type(self).__name__} has no log-det-Jacobian")

    def _forward_shape(self, shape):
        return shape

    def _inverse_shape(self, shape):
        return shape


register_pytree_class(Transform)


class AbsTransform(Transform):
    """y = |x|. Not injective: `inverse(y)` returns the pair (-y, y).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> D.AbsTransform().forward(jnp.asarray([-1.0, 2.0])).tolist()
      [1.0, 2.0]
    """

    _kind = _Kind.SURJECTION

    def _forward(self, x):
        return jnp.abs(x)

    def _inverse(self, y):
        return -y, y

    def _inverse_log_det_jacobian(self, y):
        zero = jnp.zeros((), y.dtype)
        return zero, zero


class AffineTransform(Transform):
    """y = loc + scale * x.

    The log-det-Jacobian log|scale| is broadcast to the input's shape (Paddle
    returns it with scale's shape).

    Args:
      loc: shift (tensor or number).
      scale: scale (tensor or number).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.AffineTransform(1.0, 2.0).forward(jnp.asarray(3.0)))
      7.0
    """

    _kind = _Kind.BIJECTION

    def __init__(self, loc, scale) -> None:
        self._loc = _tensor(loc, "loc", "AffineTransform")
        self._scale = _tensor(scale, "scale", "AffineTransform")

    @property
    def loc(self):
        """The shift."""
        return self._loc

    @property
    def scale(self):
        """The scale."""
        return self._scale

    def _forward(self, x):
        return self._loc + self._scale * x

    def _inverse(self, y):
        return (y - self._loc) / self._scale

    def _forward_log_det_jacobian(self, x):
        shape = jnp.broadcast_shapes(x.shape, self._loc.shape, self._scale.shape)
        return jnp.broadcast_to(jnp.log(jnp.abs(self._scale)), shape)

    def _forward_shape(self, shape):
        return jnp.broadcast_shapes(tuple(shape), self._loc.shape, self._scale.shape)

    _inverse_shape = _forward_shape


class ChainTransform(Transform):
    """Compose transforms: forward applies `transforms[0]` first.

    Args:
      transforms: a list/tuple of Transforms.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> t = D.ChainTransform([D.AffineTransform(0.0, 2.0), D.ExpTransform()])
      >>> round(float(t.forward(jnp.asarray(0.5))), 4)
      2.7183
    """

    def __init__(self, transforms) -> None:
        if not isinstance(transforms, (list, tuple)):
            raise TypeError(f"ChainTransform: `transforms` must be a list/tuple of Transforms; got "
                            f"{type(transforms).__name__}")
        if not all(isinstance(t, Transform) for t in transforms):
            raise TypeError("ChainTransform: every element of `transforms` must be a Transform; got "
                            f"{[type(t).__name__ for t in transforms]}")
        self.transforms = list(transforms)

    def _is_injective(self) -> bool:
        return all(t._is_injective() for t in self.transforms)

    @property
    def domain_event_rank(self) -> int:
        if not self.transforms:
            return 0
        rank = self.transforms[-1].codomain_event_rank
        for t in reversed(self.transforms):
            rank = max(rank - (t.codomain_event_rank - t.domain_event_rank), t.domain_event_rank)
        return rank

    @property
    def codomain_event_rank(self) -> int:
        if not self.transforms:
            return 0
        rank = self.transforms[0].domain_event_rank
        for t in self.transforms:
            rank = max(rank + t.codomain_event_rank - t.domain_event_rank, t.codomain_event_rank)
        return rank

    def _forward(self, x):
        for t in self.transforms:
            x = t.forward(x)
        return x

    def _inverse(self, y):
        for t in reversed(self.transforms):
            y = t.inverse(y)
        return y

    def _forward_log_det_jacobian(self, x):
        value = 0.0
        rank = self.domain_event_rank
        for t in self.transforms:
            value = value + sum_rightmost(t.forward_log_det_jacobian(x), rank - t.domain_event_rank)
            x = t.forward(x)
            rank += t.codomain_event_rank - t.domain_event_rank
        return value

    def _forward_shape(self, shape):
        for t in self.transforms:
            shape = t.forward_shape(shape)
        return shape

    def _inverse_shape(self, shape):
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        return shape


class ExpTransform(Transform):
    """y = exp(x).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.ExpTransform().inverse(jnp.asarray(1.0)))
      0.0
    """

    _kind = _Kind.BIJECTION

    def _forward(self, x):
        return jnp.exp(x)

    def _inverse(self, y):
        return jnp.log(y)

    def _forward_log_det_jacobian(self, x):
        return x


class IndependentTransform(Transform):
    """Treat the rightmost `reinterpreted_batch_rank` batch dims of `base` as event dims.

    The log-det-Jacobian is summed over those dims.

    Args:
      base: a Transform.
      reinterpreted_batch_rank: a positive int.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> t = D.IndependentTransform(D.ExpTransform(), 1)
      >>> t.forward_log_det_jacobian(jnp.ones((2, 3))).shape
      (2,)
    """

    def __init__(self, base, reinterpreted_batch_rank: int) -> None:
        if not isinstance(base, Transform):
            raise TypeError(f"IndependentTransform: `base` must be a Transform; got {type(base).__name__}")
        if not isinstance(reinterpreted_batch_rank, int) or reinterpreted_batch_rank <= 0:
            raise ValueError(f"IndependentTransform: `reinterpreted_batch_rank` must be a positive int; "
                             f"got {reinterpreted_batch_rank!r}")
        self._base = base
        self._reinterpreted_batch_rank = reinterpreted_batch_rank

    def _is_injective(self) -> bool:
        return self._base._is_injective()

    @property
    def domain_event_rank(self) -> int:
        return self._base.domain_event_rank + self._reinterpreted_batch_rank

    @property
    def codomain_event_rank(self) -> int:
        return self._base.codomain_event_rank + self._reinterpreted_batch_rank

    def _forward(self, x):
        return self._base.forward(x)

    def _inverse(self, y):
        return self._base.inverse(y)

    def _forward_log_det_jacobian(self, x):
        return sum_rightmost(self._base.forward_log_det_jacobian(x), self._reinterpreted_batch_rank)

    def _forward_shape(self, shape):
        return self._base.forward_shape(shape)

    def _inverse_shape(self, shape):
        return self._base.inverse_shape(shape)


class PowerTransform(Transform):
    """y = x ** power (on x > 0).

    Args:
      power: the exponent (tensor or number).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.PowerTransform(2.0).forward(jnp.asarray(3.0)))
      9.0
    """

    _kind = _Kind.BIJECTION

    def __init__(self, power) -> None:
        self._power = _tensor(power, "power", "PowerTransform")

    @property
    def power(self):
        """The exponent."""
        return self._power

    def _forward(self, x):
        return jnp.power(x, self._power)

    def _inverse(self, y):
        return jnp.power(y, 1 / self._power)

    def _forward_log_det_jacobian(self, x):
        return jnp.log(jnp.abs(self._power * jnp.power(x, self._power - 1)))

    def _forward_shape(self, shape):
        return jnp.broadcast_shapes(tuple(shape), self._power.shape)

    _inverse_shape = _forward_shape


class ReshapeTransform(Transform):
    """Reshape the event part of a tensor from `in_event_shape` to `out_event_shape`.

    Args:
      in_event_shape: list/tuple of ints.
      out_event_shape: list/tuple of ints with the same number of elements.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> D.ReshapeTransform((2, 3), (3, 2)).forward(jnp.ones((4, 2, 3))).shape
      (4, 3, 2)
    """

    _kind = _Kind.BIJECTION

    def __init__(self, in_event_shape, out_event_shape) -> None:
        for name, s in (("in_event_shape", in_event_shape), ("out_event_shape", out_event_shape)):
            if not isinstance(s, (list, tuple)) or not all(isinstance(d, int) for d in s):
                raise TypeError(f"ReshapeTransform: `{name}` must be a list/tuple of ints; got {s!r}")
        if math.prod(in_event_shape) != math.prod(out_event_shape):
            raise ValueError(f"ReshapeTransform: `in_event_shape`={tuple(in_event_shape)} and "
                             f"`out_event_shape`={tuple(out_event_shape)} must hold the same number of "
                             f"elements ({math.prod(in_event_shape)} vs {math.prod(out_event_shape)})")
        self._in_event_shape = tuple(in_event_shape)
        self._out_event_shape = tuple(out_event_shape)

    @property
    def in_event_shape(self):
        """The input event shape."""
        return self._in_event_shape

    @property
    def out_event_shape(self):
        """The output event shape."""
        return self._out_event_shape

    @property
    def domain_event_rank(self) -> int:
        return len(self._in_event_shape)

    @property
    def codomain_event_rank(self) -> int:
        return len(self._out_event_shape)

    def _forward(self, x):
        return x.reshape(x.shape[:x.ndim - len(self._in_event_shape)] + self._out_event_shape)

    def _inverse(self, y):
        return y.reshape(y.shape[:y.ndim - len(self._out_event_shape)] + self._in_event_shape)

    def _map_shape(self, shape, src, dst):
        n = len(src)
        if len(shape) < n or tuple(shape[len(shape) - n:]) != src:
            raise ValueError(f"ReshapeTransform: `shape`={tuple(shape)} must end with the event shape {src}")
        return tuple(shape[:len(shape) - n]) + dst

    def _forward_shape(self, shape):
        return self._map_shape(shape, self._in_event_shape, self._out_event_shape)

    def _inverse_shape(self, shape):
        return self._map_shape(shape, self._out_event_shape, self._in_event_shape)

    def _forward_log_det_jacobian(self, x):
        return jnp.zeros(x.shape[:x.ndim - len(self._in_event_shape)], x.dtype)


class SigmoidTransform(Transform):
    """y = sigmoid(x) = 1 / (1 + exp(-x)).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.SigmoidTransform().forward(jnp.asarray(0.0)))
      0.5
    """

    def _forward(self, x):
        return jax.nn.sigmoid(x)

    def _inverse(self, y):
        return jnp.log(y) - jnp.log1p(-y)

    def _forward_log_det_jacobian(self, x):
        return -jax.nn.softplus(-x) - jax.nn.softplus(x)


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last axis. Not injective; `inverse(y)` is log(y).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> D.SoftmaxTransform().forward(jnp.zeros(4)).tolist()
      [0.25, 0.25, 0.25, 0.25]
    """

    _kind = _Kind.OTHER
    domain_event_rank = 1
    codomain_event_rank = 1

    def _forward(self, x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def _inverse(self, y):
        return jnp.log(y)

    def _forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError(f"SoftmaxTransform: `shape` needs at least 1 dim; got {tuple(shape)}")
        return shape

    _inverse_shape = _forward_shape


class StackTransform(Transform):
    """Apply `transforms[i]` to slice i of `axis`.

    Args:
      transforms: a non-empty list/tuple of Transforms, one per slice.
      axis: the axis that is split and re-stacked.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> t = D.StackTransform([D.ExpTransform(), D.AffineTransform(0.0, 2.0)], axis=1)
      >>> t.forward(jnp.zeros((3, 2))).tolist()[0]
      [1.0, 0.0]
    """

    def __init__(self, transforms, axis: int = 0) -> None:
        if not transforms or not isinstance(transforms, (list, tuple)):
            raise TypeError(f"StackTransform: `transforms` must be a non-empty list/tuple of Transforms; "
                            f"got {transforms!r}")
        if not all(isinstance(t, Transform) for t in transforms):
            raise TypeError("StackTransform: every element of `transforms` must be a Transform")
        if not isinstance(axis, int):
            raise TypeError(f"StackTransform: `axis` must be an int; got {axis!r}")
        self._transforms = list(transforms)
        self._axis = axis

    def _is_injective(self) -> bool:
        return all(t._is_injective() for t in self._transforms)

    @property
    def transforms(self):
        """The per-slice transforms."""
        return self._transforms

    @property
    def axis(self) -> int:
        """The stacking axis."""
        return self._axis

    def _check_size(self, v, name):
        if not -v.ndim <= self._axis < v.ndim:
            raise ValueError(f"StackTransform: `axis`={self._axis} is out of range for `{name}` of shape {v.shape}")
        if v.shape[self._axis] != len(self._transforms):
            raise ValueError(f"StackTransform: `{name}`.shape[{self._axis}]={v.shape[self._axis]} must equal "
                             f"the number of transforms ({len(self._transforms)})")

    def _map(self, v, name, method):
        self._check_size(v, name)
        parts = [getattr(t, method)(jnp.take(v, i, axis=self._axis)) for i, t in enumerate(self._transforms)]
        return jnp.stack(parts, self._axis)

    def _forward(self, x):
        return self._map(x, "x", "forward")

    def _inverse(self, y):
        return self._map(y, "y", "inverse")

    def _forward_log_det_jacobian(self, x):
        return self._map(x, "x", "forward_log_det_jacobian")


class StickBreakingTransform(Transform):
    """Map R^K to the (K+1)-simplex by stick breaking.

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> y = D.StickBreakingTransform().forward(jnp.zeros(3))
      >>> y.shape, round(float(y.sum()), 5)
      ((4,), 1.0)
    """

    _kind = _Kind.BIJECTION
    domain_event_rank = 1
    codomain_event_rank = 1

    @staticmethod
    def _offset(k, dtype):
        return jnp.log(jnp.arange(k, 0, -1, dtype=dtype))

    def _forward(self, x):
        z = jax.nn.sigmoid(x - self._offset(x.shape[-1], x.dtype))
        rest = jnp.cumprod(1 - z, axis=-1)
        pad = [(0, 0)] * (x.ndim - 1)
        return jnp.pad(z, pad + [(0, 1)], constant_values=1) * jnp.pad(rest, pad + [(1, 0)], constant_values=1)

    def _inverse(self, y):
        crop = y[..., :-1]
        remaining = 1 - jnp.cumsum(crop, axis=-1)
        return jnp.log(crop) - jnp.log(remaining) + self._offset(crop.shape[-1], y.dtype)

    def _forward_log_det_jacobian(self, x):
        y = self._forward(x)
        x = x - self._offset(x.shape[-1], x.dtype)
        return (-x + jax.nn.log_sigmoid(x) + jnp.log(y[..., :-1])).sum(-1)

    def _forward_shape(self, shape):
        if not shape:
            raise ValueError("StickBreakingTransform: `shape` must have at least 1 dim")
        return (*shape[:-1], shape[-1] + 1)

    def _inverse_shape(self, shape):
        if not shape:
            raise ValueError("StickBreakingTransform: `shape` must have at least 1 dim")
        return (*shape[:-1], shape[-1] - 1)


class TanhTransform(Transform):
    """y = tanh(x).

    Example:
      >>> import jax.numpy as jnp
      >>> import pdx.distribution as D
      >>> float(D.TanhTransform().forward(jnp.asarray(0.0)))
      0.0
    """

    _kind = _Kind.BIJECTION

    def _forward(self, x):
        return jnp.tanh(x)

    def _inverse(self, y):
        return jnp.arctanh(y)

    def _forward_log_det_jacobian(self, x):
        return 2.0 * (math.log(2.0) - x - jax.nn.softplus(-2.0 * x))
