"""The trace context: every setting that changes what a trace produces, in one registry.

The AMP policy of `pdx.amp.auto_cast`, the mesh of `pdx.parallel.use_mesh`,
the kernel override of `pdx.kernels.use_impl`, the lowering switches, the
default dtype, the dy2static hints and grad mode are each registered here
once (the constants at the end of this module; the modules that own them
read and set them). Ops read a setting while they run, so under a compiled
function they read it while it is traced.

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
  >>> switch = registered()["pdx.lowering.pointwise_as_matmul"]
  >>> switch.get()
  True
  >>> with switch.set(False):
  ...     switch.get()
  False
  >>> ("pdx.lowering.pointwise_as_matmul", True) in current()
  True

Every setting exists from `import pdx` on, before anything is compiled:
adding one changes the key of every cached trace, so a function compiled
before a `register` call traces once more on its next call.

This module is the floor: it imports nothing from pdx.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

__all__ = ["AMP_POLICY", "DEFAULT_DTYPE", "DISTRIBUTED_MESH", "FULL_GRAPH", "GRAD_ENABLED", "KERNEL_IMPL",
           "MAX_ITERATIONS", "NATIVE_KERNELS", "PARALLEL_MESH", "POINTWISE_AS_MATMUL", "SAVED_TENSORS_HOOKS",
           "Setting", "current", "register", "registered"]


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
          >>> registered()["pdx.lowering.native_kernels"].get()
          'single-device'
        """
        return self._state.value

    def set(self, value: Any) -> "_Scope":
        """A context manager (also a decorator) making `value` current on this thread inside it.

        The previous value comes back on exit, exception or not.

        Example:
          >>> switch = registered()["pdx.lowering.native_kernels"]
          >>> with switch.set("never"):
          ...     switch.get()
          'never'
        """
        return _Scope(self._state, _hashable(self.name, value))

    def set_global(self, value: Any) -> None:
        """Make `value` the process-wide value (a `set` block still overrides it on its thread).

        Example:
          >>> switch = registered()["pdx.lowering.native_kernels"]
          >>> switch.set_global("always"); switch.get()
          'always'
          >>> switch.set_global(switch.default)
        """
        self._state.set_global(_hashable(self.name, value))

    def get_global(self) -> Any:
        """The process-wide value, ignoring any `set` block.

        Example:
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
    """Register a setting that changes what a trace produces; once per name, at import.

    pdx's own settings are registered below, when `import pdx` loads this module.
    A setting registered later works the same, but every function compiled before
    it traces once more on its next call (the key of every cached trace grew).

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
      >>> scale = register("mylib.scale", 1.0, doc="the factor mylib's op multiplies by")  # doctest: +SKIP
      >>> with scale.set(2.0):  # doctest: +SKIP
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
      >>> "pdx.amp.policy" in registered()
      True
    """
    return types.MappingProxyType(_REGISTRY)


def current() -> tuple:
    """The whole context now: `(name, value)` of every registered setting, hashable.

    A cache of traced programs that JAX does not keep keys on it.

    Example:
      >>> dict(current())["pdx.lowering.pointwise_as_matmul"]
      True
    """
    return tuple((name, setting.get()) for name, setting in _REGISTRY.items())


# --- pdx's settings. -------------------------------------------------------------------------------
# Each is read and set by the module named in its doc; the values are hashable.

DEFAULT_DTYPE = register("pdx.default_dtype", np.dtype(np.float32),
                         doc="the floating dtype of creation ops and new parameters (pdx/_dtype.py)")
AMP_POLICY = register("pdx.amp.policy", None,
                      doc="the AmpPolicy ops cast their inputs by; None: no auto_cast (pdx/_amp_policy.py)")
POINTWISE_AS_MATMUL = register("pdx.lowering.pointwise_as_matmul", True,
                               doc="1x1 convolutions (groups 1) trace as one matmul (pdx/_lowering.py)")
NATIVE_KERNELS = register("pdx.lowering.native_kernels", "single-device",
                          doc="where ops may call native kernels (custom calls): 'single-device', 'never' "
                              "or 'always' (pdx/_lowering.py)")
KERNEL_IMPL = register("pdx.kernels.impl", None,
                       doc="the implementation every kernel op runs; None: each call's own impl= "
                           "(pdx/kernels/_dispatch.py)")
PARALLEL_MESH = register("pdx.parallel.mesh", None,
                         doc="the ActiveMesh of use_mesh: constrain, context attention and pipelines lay "
                             "activations out on it (pdx/parallel/_shard.py)")
DISTRIBUTED_MESH = register("pdx.distributed.mesh", None,
                            doc="the ProcessMesh placement APIs default to: set_mesh, `with mesh:` "
                                "(pdx/distributed/_mesh.py)")
MAX_ITERATIONS = register("pdx.jit.max_iterations", None,
                          doc="the bound that compiles loops with a traced trip count to a differentiable "
                              "lax.scan (pdx/jit/_dy2static/_context.py)")
FULL_GRAPH = register("pdx.jit.full_graph", False,
                      doc="whether control flow that cannot be converted raises (True) or runs unconverted "
                          "(pdx/jit/_dy2static/_context.py)")
GRAD_ENABLED = register("pdx.autograd.grad_enabled", True,
                        doc="what is_grad_enabled() reports; ported code branches on it "
                            "(pdx/autograd/_grad_mode.py)")
SAVED_TENSORS_HOOKS = register("pdx.autograd.saved_tensors_hooks", None,
                               doc="the (pack, unpack) hooks PyLayer.save_for_backward applies "
                                   "(pdx/autograd/_py_layer.py)")
