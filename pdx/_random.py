"""The global random generator behind `pdx.seed` and eager random ops.

Eager code (Paddle's dynamic graph) draws keys from one global generator, so
`pdx.seed(0); pdx.rand([2])` is reproducible without passing keys around.
Under a trace (`pdx.jit`, `jax.jit`, `jax.grad`) a hidden global cannot advance
inside the compiled program: random ops then need an explicit `key=`, and
layers that need randomness (Dropout) carry their own RNG state, which
`pdx.jit` threads through the compiled call.

Example:
    >>> import pdx
    >>> pdx.seed(0)
    >>> a = pdx.rand([2]); pdx.seed(0); b = pdx.rand([2])
    >>> bool((a == b).all())
    True
"""

from __future__ import annotations

import contextlib

import jax
import numpy as np
from flax import nnx
from jax._src import core as _jax_core

__all__ = ["seed", "seed_lazily", "get_rng_state", "set_rng_state", "next_key", "in_trace", "as_rngs", "traced_generator"]

_DEFAULT_SEED = 0
_state: dict = {"key": None, "first_seed": _DEFAULT_SEED}

_KEY_UNDER_TRACE = (
    "{op}() needs an explicit `key=` when called under a trace (pdx.jit, "
    "jax.jit, jax.grad, ...): a global generator cannot advance inside a compiled "
    "program. Pass key=jax.random.key(n) (or split one from your TrainState), or "
    "use a Layer (e.g. pdx.nn.Dropout) whose RNG state pdx.jit threads for you."
)


def in_trace() -> bool:
    """True while JAX is tracing (inside jit/grad/vmap), False in eager code."""
    return not _jax_core.trace_state_clean()


def seed(value: int) -> jax.Array:
    """Seed the global generator (Paddle's `paddle.seed`).

    Args:
      value: a non-negative Python int.

    Returns:
      The new global key.

    Example:
      >>> import pdx
      >>> _ = pdx.seed(42)
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"pdx.seed(value) needs a non-negative int; got value={value!r}.")
    _state["key"] = jax.random.key(value)
    return _state["key"]


def seed_lazily(value: int) -> None:
    """Make the global generator start from `pdx.seed(value)` at its next use, building no key now.

    DataLoader workers seed pdx this way: a key is a device array, and
    building one would start a JAX backend in every worker process.

    Example:
      >>> import pdx
      >>> seed_lazily(7); a = pdx.rand([2]); _ = pdx.seed(7); b = pdx.rand([2])
      >>> bool((a == b).all())
      True
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"seed_lazily(value) needs a non-negative int; got value={value!r}.")
    _state["key"], _state["first_seed"] = None, value


def get_rng_state() -> jax.Array:
    """The current global key (Paddle's `paddle.get_rng_state`)."""
    if _state["key"] is None:
        seed(_state["first_seed"])
    return _state["key"]


def set_rng_state(key: jax.Array) -> None:
    """Restore a key returned by `get_rng_state`."""
    if not (isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise TypeError(f"set_rng_state(key) needs a typed key from pdx.get_rng_state(); got {type(key).__name__}.")
    _state["key"] = key


def next_key(key=None, *, op: str = "random op") -> jax.Array:
    """Return `key` if given, else split a fresh key off the global generator.

    Raw uint32 keys (`jax.random.PRNGKey`) are accepted and wrapped.
    """
    if key is not None:
        if isinstance(key, jax.Array) and not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.wrap_key_data(key)
        return key
    if in_trace() and not _state.get("traced"):
        raise RuntimeError(_KEY_UNDER_TRACE.format(op=op))
    current = get_rng_state()
    new_state, sub = jax.random.split(current)
    _state["key"] = new_state
    return sub


@contextlib.contextmanager
def traced_generator(key: jax.Array):
    """Let the global generator advance from `key` inside one trace, then restore it.

    For shape-only model building (`nnx.eval_shape(lambda: Model())`): layers
    that draw their initial weights from the global generator work under the
    trace without touching the real generator.
    """
    saved = dict(_state)
    _state["key"], _state["traced"] = key, True
    try:
        yield
    finally:
        _state.clear()
        _state.update(saved)


def as_rngs(rngs) -> nnx.Rngs | None:
    """Normalize a layer's `rngs=` keyword: None, an int seed, a key or nnx.Rngs."""
    if rngs is None or isinstance(rngs, nnx.Rngs):
        return rngs
    if isinstance(rngs, (int, np.integer)) or isinstance(rngs, jax.Array):
        return nnx.Rngs(rngs)
    raise TypeError(f"rngs= must be None, an int seed, a jax key or flax.nnx.Rngs; got {type(rngs).__name__}")
