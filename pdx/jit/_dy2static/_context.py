"""State of the current trace shared by every converted function: the
`max_iterations` hint and `full_graph` (trace-context settings, so a function
compiled outside a `max_iterations` block and called inside it traces again),
the Layers/optimizers of the tracing StaticFunction, and the locations of the
loops it compiled (named by later errors)."""

from __future__ import annotations

import contextlib
import threading

from pdx import _trace_context

__all__ = ["Dy2StaticError", "compiled_loop_locations", "full_graph", "max_iterations", "traced_while_locations",
           "tracing_graph", "use_full_graph"]

_MAX_ITERATIONS = _trace_context.MAX_ITERATIONS
_FULL_GRAPH = _trace_context.FULL_GRAPH

# The graph of the StaticFunction tracing now (set by it for the length of its own trace).
_local = threading.local()

# Locations of traced-trip-count loops built by the current trace, for the
# reverse-mode error that JAX raises later while differentiating them.
traced_while_locations: list[str] = []
# Every converted loop compiled in the current trace (to name it when a value escapes one).
compiled_loop_locations: list[str] = []


class Dy2StaticError(TypeError):
    """Converted control flow that cannot compile as written (the message
    points at the user's line and says what to change)."""


@contextlib.contextmanager
def max_iterations(n: int):
    """Declare the most iterations a loop with a traced trip count runs (Paddle-style hint).

    Inside pdx.jit, `while` loops and `for i in range(traced_n)` entered in this
    block compile to a `lax.scan` of `n` steps that stop doing work once the
    condition is false: they can be differentiated (`lax.while_loop` cannot),
    and lists appended in them are preallocated with `n` entries (entries past
    the real trip count are zeros). Like TensorFlow's `maximum_iterations`, a
    loop that would run longer stops after `n` iterations. Eager code ignores it.

    Args:
      n: a positive Python int.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> @pdx.jit
      ... def count(x):
      ...     i = 0
      ...     with pdx.jit.max_iterations(8):
      ...         while x > 1:
      ...             x = x / 2
      ...             i += 1
      ...     return i
      >>> int(count(jnp.float32(20.0)))
      5
    """
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"pdx.jit.max_iterations(n) needs a positive int; got {n!r}")
    with _MAX_ITERATIONS.set(n):
        yield n


def full_graph() -> bool:
    """Whether conversion errors raise in the trace running now (`pdx.jit(full_graph=True)`)."""
    return _FULL_GRAPH.get()


def use_full_graph(strict: bool):
    """`full_graph()` is `strict` inside the block (the tracing StaticFunction enters it)."""
    return _FULL_GRAPH.set(bool(strict))


@contextlib.contextmanager
def tracing_graph(graph):
    """Make the Layers/optimizers of the tracing StaticFunction known to
    converted branches, which thread the Variables they change through lax.cond."""
    saved = getattr(_local, "graph", None)
    _local.graph = graph
    try:
        yield
    finally:
        _local.graph = saved


def _current_max():
    return _MAX_ITERATIONS.get()
