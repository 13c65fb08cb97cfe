"""The one module that touches flax.nnx internals.

pdx runs user code on the real Layers/optimizers while JAX traces it (see
`pdx._graph`), which needs things nnx has no public API for:

- reading and writing a Variable's stored value without nnx's trace-level
  check (`Variable._raw_value`, read through a slot getter because the
  compiled call path reads every threaded Variable on every call);
- making Variables and graph nodes writable inside a trace that pdx opened
  (their `TraceState`s: `Variable._trace_state`, `Pytree._pytree__state`);
- the attribute names nnx reserves for its own bookkeeping (`_pytree__*`);
- flax's layer-norm helpers (`normalization._compute_stats`/`_normalize`),
  whose formulation XLA:CPU compiles best;
- knowing when the structure of any nnx object changed (an attribute set or
  deleted on any `nnx.Pytree` — Modules, optimizers, `nnx.List`/`nnx.Dict`,
  a user's plain `nnx.Module` — or a Variable's metadata changed), so that
  `pdx.jit` re-reads a graph only when it must: `structure_version()` is a
  counter that hooks on nnx's own mutation points advance. It is a cheap
  "maybe changed" signal; `structure_fingerprint` then says whether a
  particular graph really changed.

Everything else in pdx uses public nnx APIs. `tests/test_nnx_adapter.py`
names each flax feature relied on here and checks it behaves as assumed, so
a flax upgrade that changes one fails there first.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from flax import nnx
from flax.nnx import tracers as nnx_tracers
from flax.nnx.nn import normalization as _flax_normalization

__all__ = [
    "STRUCTURE",
    "Fingerprint",
    "layer_norm",
    "mutable_in_trace",
    "store_value",
    "store_values",
    "stored_value",
    "stored_values",
    "structure_fingerprint",
    "structure_version",
    "user_attributes",
]

_raw = operator.attrgetter("_raw_value")
_metadata = operator.attrgetter("_var_metadata")
_chain = itertools.chain.from_iterable


# -- values ---------------------------------------------------------------------------------------
# stored_value(variable): the value a Variable stores (no copy, no hooks). A slot
# getter rather than a function: pdx.jit maps it over every threaded Variable per call.
stored_value = _raw


def stored_values(variables: Iterable[nnx.Variable]) -> list:
    """`stored_value` of each Variable, in order (the per-call read of pdx.jit)."""
    return list(map(_raw, variables))


def store_value(variable: nnx.Variable, value) -> None:
    """Store `value` in `variable`, whatever trace is current.

    nnx refuses writes from a trace other than the Variable's own; pdx manages
    trace levels itself (a value computed in a compiled call is written back
    after it, a converted `if` writes branch results inside a `lax.cond`).
    """
    object.__setattr__(variable, "_raw_value", value)


def store_values(variables: Sequence[nnx.Variable], updates: dict) -> None:
    """`store_value(variables[i], value)` for each `{i: value}` of `updates` (pdx.jit's write-back)."""
    setattr_ = object.__setattr__
    for i, value in updates.items():
        setattr_(variables[i], "_raw_value", value)


@contextlib.contextmanager
def mutable_in_trace(variables: Sequence[nnx.Variable], nodes: Sequence[nnx.Pytree], values: Sequence):
    """Within the block, `variables` hold `values` and they and `nodes` accept writes
    in the current trace; their values and trace states are restored on exit,
    whatever happens.
    """
    saved_vars = [(_raw(v), v._trace_state) for v in variables]
    saved_nodes = [n._pytree__state._trace_state for n in nodes]
    try:
        for v, value in zip(variables, values):
            object.__setattr__(v, "_raw_value", value)
            object.__setattr__(v, "_trace_state", nnx_tracers.TraceState())
        for n in nodes:
            object.__setattr__(n._pytree__state, "_trace_state", nnx_tracers.TraceState())
        yield
    finally:
        for v, (value, trace_state) in zip(variables, saved_vars):
            object.__setattr__(v, "_raw_value", value)
            object.__setattr__(v, "_trace_state", trace_state)
        for n, trace_state in zip(nodes, saved_nodes):
            object.__setattr__(n._pytree__state, "_trace_state", trace_state)


# -- attributes -------------------------------------------------------------------------------------
_BOOKKEEPING = ("_pytree__", "_object__")  # nnx's own per-object slots (node/data flags, trace state)


def user_attributes(node) -> Iterator[tuple[str, Any]]:
    """(name, value) of an nnx object's own attributes, in definition order,
    without nnx's bookkeeping entries."""
    for name, value in vars(node).items():
        if not name.startswith(_BOOKKEEPING):
            yield name, value


# -- normalization ----------------------------------------------------------------------------------
def layer_norm(x, axes, scale, bias, epsilon: float):
    """flax's layer normalization: float32 statistics with the one-pass variance.

    XLA:CPU fuses the backward pass of this formulation markedly better than
    other formulations of the same math (benchmarks/HISTORY.md, LayerNorm).
    `scale`/`bias` are None or broadcast against the normalized `axes` of `x`.
    """
    mean, var = _flax_normalization._compute_stats(x, axes, None, use_fast_variance=True)
    return _flax_normalization._normalize(x, mean, var, scale, bias, axes, axes, x.dtype, epsilon)


# -- structure --------------------------------------------------------------------------------------
class _Version:
    """`.value`: see `structure_version` (read directly on per-call paths)."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


STRUCTURE = _Version()


def structure_version() -> int:
    """A counter that moves whenever an attribute of any nnx object is set or deleted
    or any Variable's metadata changes (it may also move for unrelated objects)."""
    return STRUCTURE.value


def _counting(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        STRUCTURE.value += 1
        return method(self, *args, **kwargs)

    wrapper.__pdx_counts_structure__ = True
    return wrapper


# nnx's mutation points: every attribute write of every Pytree goes through
# Pytree.__setattr__/__delattr__ (subclasses override `_setattr`, not these);
# Variable metadata changes through these four methods.
_HOOKED = (
    (nnx.Pytree, "__setattr__"),
    (nnx.Pytree, "__delattr__"),
    (nnx.Variable, "set_metadata"),
    (nnx.Variable, "del_metadata"),
    (nnx.Variable, "update_from_state"),
    (nnx.Variable, "copy_from"),
)


def _install_hooks() -> None:
    for cls, name in _HOOKED:
        method = cls.__dict__[name]
        if not getattr(method, "__pdx_counts_structure__", False):
            setattr(cls, name, _counting(method))


_install_hooks()


class Fingerprint:
    """The identity of everything a graph definition depends on (see `structure_fingerprint`).

    Compared by object identity; it holds the objects themselves, so none can be
    freed and its address reused by a new object while the fingerprint lives.
    """

    __slots__ = ("_ids", "_objects")

    def __init__(self, objects: list):
        self._objects = objects
        self._ids = tuple(map(id, objects))

    def __eq__(self, other) -> bool:
        return isinstance(other, Fingerprint) and self._ids == other._ids

    __hash__ = None


def structure_fingerprint(nodes: Sequence[nnx.Pytree], variables: Sequence[nnx.Variable],
                          containers: Sequence = ()) -> Fingerprint:
    """What nnx's graph definition depends on: each node's type and attributes,
    each Variable's type and metadata, the items of each plain list/dict.

    Two fingerprints are equal when no attribute was replaced, added or
    removed, no metadata entry changed and no container changed (an equal
    value that is a different object counts as a change: a false alarm only
    costs a graph re-read).
    """
    attrs = list(map(vars, nodes))
    metadata = list(map(_metadata, variables))
    objects = [*map(type, nodes), *_chain(_chain(map(dict.items, attrs))),
               *map(type, variables), *_chain(_chain(map(dict.items, metadata)))]
    for c in containers:  # plain lists/dicts change in place, which no nnx hook sees
        objects.append(c)  # (separates one container's items from the next one's)
        objects.extend(_chain(c.items()) if isinstance(c, dict) else c)
    return Fingerprint(objects)
