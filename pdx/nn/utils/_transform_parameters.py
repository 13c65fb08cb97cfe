"""`parameters_to_vector` / `vector_to_parameters`: parameters as one flat vector and back."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _value(p):
    return p.get_value() if isinstance(p, nnx.Variable) else jnp.asarray(p)


def parameters_to_vector(parameters, name: str | None = None) -> jax.Array:
    """Concatenate the flattened parameters into one 1-D array (in the first one's dtype).

    Example:
      >>> import pdx
      >>> fc = pdx.nn.Linear(2, 3)
      >>> pdx.nn.utils.parameters_to_vector(fc.parameters()).shape
      (9,)
    """
    values = [_value(p) for p in parameters]
    if not values:
        raise ValueError("parameters_to_vector: parameters is empty")
    dtype = values[0].dtype
    return jnp.concatenate([v.reshape(-1).astype(dtype) for v in values])


def vector_to_parameters(vec, parameters, name: str | None = None) -> None:
    """Write consecutive slices of the 1-D `vec` into the parameters (in place, as in Paddle).

    `vec` may be longer than the parameters need (the rest is ignored), not shorter.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> fc = pdx.nn.Linear(2, 3)
      >>> pdx.nn.utils.vector_to_parameters(jnp.arange(9.0), fc.parameters())
      >>> fc.bias[...].tolist()
      [6.0, 7.0, 8.0]
    """
    vec = _value(vec)
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters: vec must be 1-D; got vec.shape={tuple(vec.shape)}")
    parameters = list(parameters)
    for p in parameters:
        if not isinstance(p, nnx.Variable):
            raise TypeError(f"vector_to_parameters: parameters must be nnx.Param (layer.parameters()); got {type(p).__name__}")
    total = sum(math.prod(p.get_value().shape) for p in parameters)
    if total > vec.shape[0]:
        raise ValueError(f"vector_to_parameters: the parameters hold {total} elements but vec.shape={tuple(vec.shape)}")
    offset = 0
    for p in parameters:
        value = p.get_value()
        size = math.prod(value.shape)
        p.set_value(vec[offset:offset + size].reshape(value.shape).astype(value.dtype))
        offset += size
