"""`weight_norm(layer)`: reparameterize a weight as `g * v / ||v||` (Paddle's `nn.utils.weight_norm`).

As in Paddle, the weight parameter is replaced by two parameters, `<name>_v`
(the direction, initialized to the weight) and `<name>_g` (the norm over every
dim but `dim`), and a forward pre-hook recomputes `<name>` from them before
each call. `<name>` is a non-persistable buffer here, so `state_dict()` holds
exactly Paddle's entries and gradients reach `g` and `v` through it.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from pdx.nn._layer import Buffer, Layer

__all__ = ["remove_weight_norm", "weight_norm"]


def _norm_except_dim(w, dim: int):
    """||w|| over every dim but `dim` (all dims for -1), with Paddle's 1e-12 inside the root."""
    if dim == -1:
        return jnp.sqrt(jnp.sum(jnp.square(w)) + 1e-12)
    mat = jnp.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    return jnp.sqrt(jnp.sum(jnp.square(mat), axis=1) + 1e-12)


def _weight(v, g, dim: int):
    if dim == -1:
        return v / (jnp.sqrt(jnp.sum(jnp.square(v))) + 1e-12) * g
    mat = jnp.moveaxis(v, dim, 0).reshape(v.shape[dim], -1)
    # F.normalize's rule: v / max(||v||, 1e-12), one row per index of `dim`
    mat = mat / jnp.maximum(jnp.sqrt(jnp.sum(mat * mat, axis=1, keepdims=True)), 1e-12)
    normalized = jnp.moveaxis(mat.reshape((v.shape[dim], *jnp.moveaxis(v, dim, 0).shape[1:])), 0, dim)
    shape = [1] * v.ndim
    shape[dim] = v.shape[dim]
    return normalized * g.reshape(shape)


@dataclasses.dataclass(frozen=True)
class WeightNorm:
    """The forward pre-hook `weight_norm` registers: writes `g * v / ||v||` into `layer.<name>`."""

    name: str
    dim: int

    def compute_weight(self, layer: Layer):
        v = getattr(layer, self.name + "_v").get_value()
        g = getattr(layer, self.name + "_g").get_value()
        return _weight(v, g, self.dim)

    def __call__(self, layer: Layer, inputs) -> None:
        getattr(layer, self.name).set_value(self.compute_weight(layer))


def _hooks(layer: Layer):
    return [h for h in layer._forward_pre_hooks if isinstance(h.fn, WeightNorm)]


def weight_norm(layer: Layer, name: str = "weight", dim: int | None = 0) -> Layer:
    """Reparameterize `layer.<name>` as `<name>_g * <name>_v / ||<name>_v||`.

    Args:
      layer: a Layer with a parameter `name`.
      name: the parameter's attribute name.
      dim: the dim whose entries each get their own norm (a negative dim counts
        from the end, except -1, which as in Paddle means None); None
        normalizes the whole tensor (one 0-d `g`).

    Returns:
      `layer`, changed in place.

    Example:
      >>> import pdx
      >>> fc = pdx.nn.utils.weight_norm(pdx.nn.Linear(4, 3))
      >>> [(k, tuple(v.shape)) for k, v in fc.state_dict().items()]
      [('bias', (3,)), ('weight_v', (4, 3)), ('weight_g', (4,))]
    """
    if not isinstance(layer, Layer):
        raise TypeError(f"weight_norm: layer must be a pdx.nn.Layer; got {type(layer).__name__}")
    if any(h.fn.name == name for h in _hooks(layer)):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    param = getattr(layer, name, None) if isinstance(name, str) else None
    if param is None or not hasattr(param, "get_value") or isinstance(param, Buffer):
        raise ValueError(f"weight_norm: {type(layer).__name__} has no parameter named {name!r}")
    w = param.get_value()
    if dim is None:
        dim = -1
    if not isinstance(dim, int) or isinstance(dim, bool) or not -w.ndim <= dim < w.ndim:
        raise ValueError(f"weight_norm: dim={dim!r} must be in [-{w.ndim}, {w.ndim}) for {name}.shape={tuple(w.shape)}, or None")
    if dim != -1:
        dim = dim % w.ndim
    hook = WeightNorm(name, dim)
    delattr(layer, name)
    layer.add_parameter(name + "_v", layer.create_parameter(w.shape, dtype=w.dtype))
    getattr(layer, name + "_v").set_value(w)
    g = _norm_except_dim(w, dim)
    layer.add_parameter(name + "_g", layer.create_parameter(g.shape, dtype=w.dtype))
    getattr(layer, name + "_g").set_value(g)
    setattr(layer, name, Buffer(hook.compute_weight(layer), persistable=False))
    layer.register_forward_pre_hook(hook)
    return layer


def remove_weight_norm(layer: Layer, name: str = "weight") -> Layer:
    """Undo `weight_norm`: `<name>` becomes one parameter again (its current `g * v / ||v||`).

    Example:
      >>> import pdx
      >>> fc = pdx.nn.utils.remove_weight_norm(pdx.nn.utils.weight_norm(pdx.nn.Linear(4, 3)))
      >>> sorted(fc.state_dict())
      ['bias', 'weight']
    """
    for h in _hooks(layer):
        if h.fn.name == name:
            w = h.fn.compute_weight(layer)
            layer._forward_pre_hooks = tuple(x for x in layer._forward_pre_hooks if x.hook_id != h.hook_id)
            delattr(layer, name)
            delattr(layer, name + "_g")
            delattr(layer, name + "_v")
            layer.add_parameter(name, layer.create_parameter(w.shape, dtype=w.dtype))
            getattr(layer, name).set_value(w)
            return layer
    raise ValueError(f"weight_norm of '{name}' not found in {layer}")
