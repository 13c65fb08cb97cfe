"""Parameter containers: ParameterList and ParameterDict (Paddle's names and naming).

Each parameter is an attribute of the container named '0', '1', ... (or its
key), so state_dict keys read `0`, `params.1`, `weights.w1`, as in Paddle, and
nnx sees ordinary `nnx.Param`s. Their order is a static tuple of names, kept
across nnx's split/merge (which sorts attributes).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pdx._args import is_int
from pdx.nn._common import layer_error
from pdx.nn._layer import Layer

__all__ = ["Parameter", "ParameterDict", "ParameterList"]


def _as_param(value, kind: str) -> nnx.Param:
    if isinstance(value, nnx.Param):
        return value
    if isinstance(value, nnx.Variable):
        raise TypeError(f"pdx.nn.{kind}: got a {type(value).__name__}; only parameters (nnx.Param) can be held")
    if isinstance(value, (jax.Array, np.ndarray)):
        return nnx.Param(jnp.asarray(value))
    raise TypeError(f"pdx.nn.{kind}: expected a parameter (pdx.nn.Parameter / create_parameter) or an array; "
                    f"got {type(value).__name__}")


class _ParamContainer(Layer):
    _order: tuple[str, ...] = ()

    def __init__(self):
        super().__init__()
        self._order = ()

    def _put(self, name: str, value) -> None:
        kind = type(self).__name__
        name = str(name)
        if not name or "." in name:
            raise layer_error(kind, f"parameter name {name!r} must be non-empty and contain no '.'")
        if hasattr(type(self), name):
            raise layer_error(kind, f"parameter name {name!r} would shadow {kind}.{name}; choose another name")
        setattr(self, name, _as_param(value, kind))
        if name not in self._order:
            self._order = self._order + (name,)

    def __len__(self) -> int:
        return len(self._order)


class ParameterList(_ParamContainer):
    """A list of parameters named '0', '1', ... (Paddle's `nn.ParameterList`).

    Holds `nnx.Param`s (`pdx.nn.Parameter`; arrays are wrapped) so a layer's
    list of weights is registered, trained, saved and sharded.

    Args:
      parameters: an iterable of parameters (or arrays).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> ps = pdx.nn.ParameterList([pdx.nn.Parameter(jnp.ones(2)) for _ in range(3)])
      >>> len(ps), list(ps.state_dict())
      (3, ['0', '1', '2'])
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            for p in parameters:
                self.append(p)

    def _name(self, idx) -> str:
        if not is_int(idx):
            raise TypeError(f"pdx.nn.ParameterList: index must be an int; got {idx!r}")
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"pdx.nn.ParameterList: index {idx} is out of range for {n} parameters")
        return self._order[idx]

    def __getitem__(self, idx) -> nnx.Param:
        return getattr(self, self._name(idx))

    def __setitem__(self, idx, param) -> None:
        """Assign `param`'s value to the parameter at `idx` (Paddle assigns in place)."""
        target = self[idx]
        value = param.get_value() if isinstance(param, nnx.Variable) else jnp.asarray(param)
        if tuple(value.shape) != tuple(target.shape):
            raise layer_error("ParameterList", f"cannot assign shape {tuple(value.shape)} to parameter {idx} of "
                                               f"shape {tuple(target.shape)}")
        target.set_value(value.astype(target.get_value().dtype))

    def __iter__(self):
        return iter([getattr(self, name) for name in self._order])

    def append(self, parameter) -> "ParameterList":
        """Add `parameter` at the end."""
        self._put(str(len(self)), parameter)
        return self

    def extend(self, parameters) -> "ParameterList":
        """Append each of `parameters`."""
        for p in parameters:
            self.append(p)
        return self


class ParameterDict(_ParamContainer):
    """An ordered mapping name -> parameter (Paddle's `nn.ParameterDict`).

    Args:
      parameters: a mapping, a ParameterDict or an iterable of (name, parameter) pairs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pd = pdx.nn.ParameterDict({"w": pdx.nn.Parameter(jnp.ones((2, 2)))})
      >>> list(pd), pd["w"].shape
      (['w'], (2, 2))
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> nnx.Param:
        if key not in self._order:
            raise KeyError(f"pdx.nn.ParameterDict: no parameter named {key!r}; have {list(self._order)}")
        return getattr(self, key)

    def __setitem__(self, key: str, param) -> None:
        self._put(key, param)

    def __delitem__(self, key: str) -> None:
        if key not in self._order:
            raise KeyError(f"pdx.nn.ParameterDict: no parameter named {key!r}")
        delattr(self, key)
        self._order = tuple(k for k in self._order if k != key)

    def __contains__(self, key) -> bool:
        return key in self._order

    def __iter__(self):
        return iter(self._order)

    def keys(self):
        return list(self._order)

    def values(self):
        return [getattr(self, k) for k in self._order]

    def items(self):
        return [(k, getattr(self, k)) for k in self._order]

    def update(self, parameters) -> None:
        """Add or replace parameters from a mapping or (name, parameter) pairs."""
        if isinstance(parameters, (Mapping, ParameterDict)):
            pairs = list(parameters.items())
        else:
            pairs = list(parameters)
            for i, kv in enumerate(pairs):
                if not isinstance(kv, (list, tuple)) or len(kv) != 2:
                    raise layer_error("ParameterDict", f"entry {i} of parameters must be a (name, parameter) "
                                                       f"pair; got {kv!r}")
        for key, value in pairs:
            self._put(key, value)


# Paddle's `nn.Parameter` is its parameter type; pdx's is flax's nnx.Param (metadata such as
# trainable=False rides along as keywords): `pdx.nn.Parameter(jnp.ones(3))`.
Parameter = nnx.Param


def _get_trainable(self) -> bool:
    return bool(self.get_metadata().get("trainable", True))


def _set_trainable(self, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Parameter.trainable must be True or False; got {value!r}")
    self.set_metadata(trainable=bool(value))


# Paddle's `param.trainable`: read it, or set it to False to freeze a parameter (pdx.value_and_grad
# and the optimizers skip it), e.g. `for p in backbone.parameters(): p.trainable = False`.
nnx.Param.trainable = property(_get_trainable, _set_trainable,
                               doc="Whether gradients and optimizer updates reach this parameter (Paddle's "
                                   "`Parameter.trainable`); stored as the Variable's `trainable` metadata.")


def _get_stop_gradient(self) -> bool:
    meta = self.get_metadata()
    return not meta.get("trainable", True) or bool(meta.get("stop_gradient", False))


def _set_stop_gradient(self, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Parameter.stop_gradient must be True or False; got {value!r}")
    updates = {"trainable": not bool(value)}
    if self.has_metadata("stop_gradient"):
        updates["stop_gradient"] = bool(value)
    self.set_metadata(**updates)


# Paddle's `param.stop_gradient`, the other face of `trainable` (Paddle keeps the two opposite):
# `p.stop_gradient = True` freezes the parameter, as `p.trainable = False` does.
nnx.Param.stop_gradient = property(_get_stop_gradient, _set_stop_gradient,
                                   doc="Whether gradients and optimizer updates skip this parameter (Paddle's "
                                       "`Parameter.stop_gradient`, always `not trainable`).")
