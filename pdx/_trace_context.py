"""The trace context: every setting that changes what a trace produces, in one registry.

The AMP policy of `pdx.amp.auto_cast`, the mesh of `pdx.parallel.use_mesh`,
the kernel override of `pdx.kernels.use_impl`, the lowering switches, the
default dtype and the dy2static hints are each registered here once, by the
module that owns them (`register`). Ops read a setting while they run, so
under a compiled function they read it while it is traced.

Each setting is held in JAX's own trace context (`jax.make_user_context`), so
every cache of traced programs that JAX keeps keys on it: `jax.jit`'s (and so
`pdx.jit`'s and `pdx.Model`'s compiled steps), and the jaxprs of the bodies
of `lax.cond` / `lax.scan`. A function traced outside `auto_cast` and called
inside it traces once more, then hits its cache; it never silently runs the
program traced for the other setting.

A setting's value is hashable (it is part of every cache key). `set(value)`
makes it current for a `with` block (or a decorated function) on this
thread; `set_global(value)` makes it the process-wide value, which a `with`
block on any thread overrides, as for JAX's own options.

Example:
  >>> import pdx._lowering
  >>> switch = registered()["pdx.lowering.pointwise_as_matmul"]
  >>> switch.get()
  True
  >>> with switch.set(False):
  ...     switch.get()
  False
  >>> ("pdx.lowering.pointwise_as_matmul", True) in current()
  True

This module is the floor: it imports nothing from pdx.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from typing import Any

import jax

__all__ = ["Setting", "current", "register", "registered"]


# --- The JAX adapter: the only code here that knows how JAX keeps its trace context. -------------
# Relied on (tests/test_trace_context.py::test_jax_adapter names each point):
#   jax.make_user_context(default) -> a state with `.value`, `.get_global()`,
#   `.set_global(v)`, and `state(v)`: a context manager setting a thread-local
#   value; jax.jit's cache (C++ fast path included) and the caches of inner
#   jaxprs (lax.cond / lax.scan bodies) key on the value, compared by hash and ==.

def _jax_state(default):
    return jax.make_user_context(default)


# --- The registry. -----------------------------------------------------------------------------

_REGISTRY: dict[str, "Setting"] = {}

_UNHASHABLE = ("trace-context setting {name!r}: its value must be hashable (it is part of every "
               "compiled-function cache key); got {value!r} of type {kind}. Use a tuple, frozenset or "
               "frozen dataclass instead of a list, set or dict.")


class Setting:
    """One registered setting: `get()` its value, `set(value)` for a block, `set_global(value)`.

    Made by `register`; see the module notes.

    Attributes:
      name: the registry name ("pdx.amp.policy").
      default: the value when nothing was set.
      doc: what the setting changes in a trace.
    """

    __slots__ = ("name", "default", "doc", "_state")

    def __init__(self, name: str, default: Any, doc: str):
        self.name, self.default, self.doc = name, default, doc
        self._state = _jax_state(_hashable(name, default))

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, value={self.get()!r})"

    def get(self) -> Any:
        """The value in effect on this thread (a `set` block's, else the global one).

        Example:
          >>> import pdx._lowering
          >>> registered()["pdx.lowering.native_kernels"].get()
          'single-device'
        """
        return self._state.value

    def set(self, value: Any) -> "_Scope":
        """A context manager (also a decorator) making `value` current on this thread inside it.

        The previous value comes back on exit, exception or not.

        Example:
          >>> import pdx._lowering
          >>> switch = registered()["pdx.lowering.native_kernels"]
          >>> with switch.set("never"):
          ...     switch.get()
          'never'
        """
        return _Scope(self._state, _hashable(self.name, value))

    def set_global(self, value: Any) -> None:
        """Make `value` the process-wide value (a `set` block still overrides it on its thread).

        Example:
          >>> import pdx._lowering
          >>> switch = registered()["pdx.lowering.native_kernels"]
          >>> switch.set_global("always"); switch.get()
          'always'
          >>> switch.set_global(switch.default)
        """
        self._state.set_global(_hashable(self.name, value))

    def get_global(self) -> Any:
        """The process-wide value, ignoring any `set` block.

        Example:
          >>> import pdx._lowering
          >>> registered()["pdx.lowering.native_kernels"].get_global()
          'single-device'
        """
        return self._state.get_global()


class _Scope:
    """What `Setting.set` returns: enters JAX's context for the value; reusable and re-entrant
    (one `with` object belongs to one thread; a decorated function may run on any)."""

    __slots__ = ("_state", "_value", "_entered")

    def __init__(self, state, value):
        self._state, self._value, self._entered = state, value, []

    def __enter__(self):
        context = self._state(self._value)
        context.__enter__()
        self._entered.append(context)
        return self._value

    def __exit__(self, *exc) -> bool:
        self._entered.pop().__exit__(*exc)
        return False

    def __call__(self, fn: Callable) -> Callable:
        state, value = self._state, self._value

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with state(value):  # a context per call: threads calling `fn` at once share no record
                return fn(*args, **kwargs)

        return wrapper


def _hashable(name: str, value):
    try:
        hash(value)
    except TypeError:
        raise TypeError(_UNHASHABLE.format(name=name, value=value, kind=type(value).__name__)) from None
    return value


def register(name: str, default: Any, *, doc: str) -> Setting:
    """Register a setting that changes what a trace produces; call once, at import of its owner.

    Args:
      name: a unique dotted name, "pdx.<package>.<what>".
      default: its value when nothing was set (hashable).
      doc: one line: what the setting changes in a trace.

    Returns:
      The `Setting`.

    Raises:
      ValueError: the name is registered already.
      TypeError: the default is not hashable.

    Example:
      >>> scale = register("pdx.example.scale", 1.0, doc="a factor the example op multiplies by")
      >>> with scale.set(2.0):
      ...     scale.get()
      2.0
    """
    if name in _REGISTRY:
        raise ValueError(f"trace-context setting {name!r} is registered already (by its owning module); "
                         "read it from pdx._trace_context.registered() instead of registering it again")
    setting = _REGISTRY[name] = Setting(name, default, doc)
    return setting


def registered() -> Mapping[str, Setting]:
    """Every registered setting by name, read-only, in registration order.

    Example:
      >>> import pdx.amp
      >>> "pdx.amp.policy" in registered()
      True
    """
    return types.MappingProxyType(_REGISTRY)


def current() -> tuple:
    """The whole context now: `(name, value)` of every registered setting, hashable.

    A cache of traced programs that JAX does not keep keys on it.

    Example:
      >>> import pdx._lowering
      >>> dict(current())["pdx.lowering.pointwise_as_matmul"]
      True
    """
    return tuple((name, setting.get()) for name, setting in _REGISTRY.items())
