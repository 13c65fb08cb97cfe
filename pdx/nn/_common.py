"""Private helpers shared by the pdx.nn layers: errors, argument normalization,
dtypes and each layer's own PRNG state."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from pdx import _random
from pdx._dtype import convert_dtype, default_float
from pdx.nn._layer import ParamAttr

__all__ = ["RngState", "attr_list", "float_dtype", "init_rng_state", "layer_error", "next_rng", "reprlist",
           "value_of"]


def layer_error(layer: str, message: str) -> ValueError:
    """A ValueError that names the layer, e.g. `pdx.nn.Conv2D: ...`."""
    return ValueError(f"pdx.nn.{layer}: {message}")


def reprlist(value):
    """Tuples print as lists in extra_repr, as Paddle (which stores lists) prints them."""
    return list(value) if isinstance(value, tuple) else value


def float_dtype(dtype):
    """A layer's parameter dtype: the given floating dtype or the default float."""
    dt = convert_dtype(dtype) if dtype is not None else default_float()
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"layer dtype must be floating ('float32', 'bfloat16', ...); got dtype={dtype!r}")
    return dt


def attr_list(attr, n: int, *, layer: str, name: str) -> list:
    """Paddle's per-sublayer attribute list for Transformer layers.

    A list/tuple gives one attr per sublayer (its length must be `n`); a bool
    gives n defaults (True) or n Falses; anything else is repeated, with a
    ParamAttr's name suffixed `_i` so the copies stay distinct.
    """
    if isinstance(attr, (list, tuple)):
        if len(attr) != n:
            raise layer_error(layer, f"`{name}` as a list must have {n} entries (one per sublayer group); "
                                     f"got {len(attr)}")
        return [None if a is True else a for a in attr]
    if isinstance(attr, bool):
        return [None if attr else False] * n
    if isinstance(attr, ParamAttr) and attr.name:
        return [dataclasses.replace(attr, name=f"{attr.name}_{i}") for i in range(n)]
    return [attr] * n


class RngState(nnx.Variable):
    """A layer's own PRNG key (Dropout, attention dropout).

    It lives in the layer's nnx state, so a compiled step that threads the
    layer as state advances it exactly as eager calls do.
    """


def init_rng_state(rngs: nnx.Rngs | None, *, op: str) -> RngState:
    """A fresh RngState from `rngs` (its 'dropout' stream) or the global generator."""
    key = rngs.dropout() if rngs is not None else _random.next_key(None, op=op)
    return RngState(key)


def next_rng(state: RngState) -> jax.Array:
    """Split the layer's key: keep one half as the new state, return the other."""
    key, sub = jax.random.split(state.get_value())
    state.set_value(key)
    return sub


def value_of(var):
    """The array held by a parameter/buffer (None stays None, for optional biases)."""
    return None if var is None else var.get_value()
