"""`spectral_norm(layer)`: reparameterize a layer's weight as weight_orig / sigma(weight_orig).

As in Paddle, a forward pre-hook writes the normalized weight, before each
call, into a non-persistable buffer named like the old parameter, which the
layer's own forward reads as before. In training mode each call runs
`n_power_iterations` of power iteration and stores the new `weight_u` /
`weight_v` (as BatchNorm stores its statistics: eagerly in place, under
`pdx.jit` / `nnx.jit` as returned state); no gradient flows through u and v,
as in Paddle.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from pdx._args import is_int
from pdx.nn._conv import Conv1DTranspose, Conv2DTranspose, Conv3DTranspose
from pdx.nn._layer import Buffer, Layer
from pdx.nn._linear import Linear
from pdx.nn.initializer import Normal

__all__ = ["spectral_norm"]


def _normalize(v, eps):
    # F.normalize's rule: v / max(||v||, eps)
    return v / jnp.maximum(jnp.sqrt(jnp.sum(v * v)), eps)


def _normalize_weights(layer) -> None:
    """Write each normalized weight into its buffer (and, in training, the new u, v)."""
    for name, iters, dim, eps in layer._spectral_norms:
        weight = getattr(layer, name + "_orig").get_value()
        mat = jnp.moveaxis(weight, dim, 0).reshape(weight.shape[dim], -1)
        u_var, v_var = getattr(layer, name + "_u"), getattr(layer, name + "_v")
        u, v = u_var.get_value(), v_var.get_value()
        if layer.training:
            frozen = jax.lax.stop_gradient(mat)
            for _ in range(iters):
                v = _normalize(frozen.T @ u, eps)
                u = _normalize(frozen @ v, eps)
            u_var.set_value(u)
            v_var.set_value(v)
        u, v = jax.lax.stop_gradient(u), jax.lax.stop_gradient(v)
        getattr(layer, name).set_value(weight / (u @ mat @ v))


@dataclasses.dataclass(frozen=True)
class SpectralNorm:
    """The forward pre-hook `spectral_norm` registers: normalizes every weight listed in `layer._spectral_norms`."""

    def __call__(self, layer, inputs) -> None:
        _normalize_weights(layer)


def spectral_norm(layer, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectrally normalize `layer.<name>`: the layer then uses weight_orig / sigma.

    sigma, the largest singular value of the weight viewed as a matrix with
    `dim` as rows, is estimated by power iteration from `<name>_u` /
    `<name>_v` (buffers, updated in training mode). `<name>_orig` becomes the
    trained parameter; `<name>` holds the normalized weight (not saved), as
    in Paddle's `nn.utils.spectral_norm`.

    Args:
      layer: a Layer with a parameter `name`.
      name: the parameter's attribute name.
      n_power_iterations: power-iteration steps per training call (> 0).
      eps: floor on vector norms.
      dim: the rows dim; None means 1 for Linear and transposed convolutions, else 0.

    Returns:
      `layer`, changed in place.

    Example:
      >>> import pdx
      >>> fc = pdx.nn.spectral_norm(pdx.nn.Linear(4, 3))
      >>> list(fc.state_dict())
      ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if not isinstance(layer, Layer):
        raise TypeError(f"pdx.nn.spectral_norm: layer must be a pdx.nn.Layer; got {type(layer).__name__}")
    if any(entry[0] == name for entry in getattr(layer, "_spectral_norms", ())):
        raise ValueError(f"pdx.nn.spectral_norm: {name!r} of this {type(layer).__name__} is already normalized")
    param = getattr(layer, name, None) if isinstance(name, str) else None
    if param is None or not hasattr(param, "get_value") or isinstance(param, Buffer):
        raise ValueError(f"pdx.nn.spectral_norm: {type(layer).__name__} has no parameter named {name!r}")
    if not is_int(n_power_iterations) or n_power_iterations <= 0:
        raise ValueError(f"pdx.nn.spectral_norm: n_power_iterations must be a positive int; "
                         f"got n_power_iterations={n_power_iterations!r}")
    if dim is None:
        dim = 1 if isinstance(layer, (Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, Linear)) else 0
    weight = param.get_value()
    if not is_int(dim) or not 0 <= dim < weight.ndim:
        raise ValueError(f"pdx.nn.spectral_norm: dim={dim!r} must be in [0, {weight.ndim}) for "
                         f"{name}.shape={tuple(weight.shape)}")
    h = weight.shape[dim]
    w = weight.size // h
    init = Normal(0.0, 1.0)
    u = _normalize(layer.create_parameter((h,), attr=init, dtype=weight.dtype).get_value(), eps)
    v = _normalize(layer.create_parameter((w,), attr=init, dtype=weight.dtype).get_value(), eps)
    delattr(layer, name)
    setattr(layer, name + "_orig", param)
    setattr(layer, name, Buffer(weight * 1.0, persistable=False))
    layer.register_buffer(name + "_u", u)
    layer.register_buffer(name + "_v", v)
    if not any(isinstance(h.fn, SpectralNorm) for h in layer._forward_pre_hooks):
        layer.register_forward_pre_hook(SpectralNorm())
    layer._spectral_norms = tuple(getattr(layer, "_spectral_norms", ())) + ((name, int(n_power_iterations),
                                                                            int(dim), eps),)
    return layer
