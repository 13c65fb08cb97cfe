"""Running user code on real Layers/optimizers with traced values.

`pdx.jit` and `pdx.grad` both need to run a user's function on the objects it
was written against while JAX traces it. Instead of rebuilding the objects
(nnx.merge) on every trace, a `Graph` lists the nnx Variables and graph nodes
reachable from the objects once; `run_with_values` swaps traced values into
those Variables for the duration of the call (with a trace state that makes
them mutable inside this trace), runs the function, reads the new values and
puts the originals back, whatever happens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
from flax import nnx
from flax.nnx import tracers as nnx_tracers

__all__ = ["Graph", "is_graph_node", "run_with_values", "same_leaves"]


def is_graph_node(x) -> bool:
    """Layers, optimizers, schedulers: anything whose state lives in nnx Variables."""
    return isinstance(x, nnx.Pytree)


class Graph:
    """The Variables and graph nodes reachable from a tuple of objects, each once,
    in a deterministic order."""

    __slots__ = ("objs", "epoch", "variables", "nodes", "graph_id")

    def __init__(self, objs: Sequence, epoch: int = 0, graph_ids: dict | None = None):
        self.objs = list(objs)
        self.epoch = epoch
        self.variables: list[nnx.Variable] = []
        self.nodes: list[nnx.Pytree] = []
        seen: set[int] = set()
        for obj in objs:
            for _, node in nnx.graph.iter_graph(obj):
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, nnx.Variable):
                    self.variables.append(node)
                elif isinstance(node, nnx.Pytree):
                    self.nodes.append(node)
        self.graph_id = None
        if graph_ids is not None:
            # Static structure (layer configs, train/eval flags) decides a trace:
            # equal structures share compiled code, different ones never do.
            graphdef = nnx.graphdef(tuple(objs)) if objs else None
            self.graph_id = graph_ids.setdefault(graphdef, len(graph_ids))

    def values(self) -> list:
        return [v.get_raw_value() for v in self.variables]

    def write(self, updates: dict) -> None:
        """Store new values {variable index: value} (outside any trace)."""
        variables = self.variables
        for i, value in updates.items():
            _set_raw(variables[i], value)


def _set_raw(variable: nnx.Variable, value) -> None:
    # Bypasses nnx's trace-level check: we are the ones managing trace levels.
    object.__setattr__(variable, "_raw_value", value)


def run_with_values(graph: Graph, values: Sequence, fn: Callable, *args, **kwargs):
    """Call `fn(*args, **kwargs)` with graph.variables holding `values`.

    Returns:
      (fn's output, the variables' values after the call).
    """
    saved_vars = [(v.get_raw_value(), v._trace_state) for v in graph.variables]
    saved_nodes = [n._pytree__state._trace_state for n in graph.nodes]
    try:
        for v, value in zip(graph.variables, values):
            _set_raw(v, value)
            object.__setattr__(v, "_trace_state", nnx_tracers.TraceState())
        for n in graph.nodes:
            object.__setattr__(n._pytree__state, "_trace_state", nnx_tracers.TraceState())
        out = fn(*args, **kwargs)
        return out, [v.get_raw_value() for v in graph.variables]
    finally:
        for v, (value, trace_state) in zip(graph.variables, saved_vars):
            _set_raw(v, value)
            object.__setattr__(v, "_trace_state", trace_state)
        for n, trace_state in zip(graph.nodes, saved_nodes):
            object.__setattr__(n._pytree__state, "_trace_state", trace_state)


def same_leaves(a, b) -> bool:
    """True when two values are the very same arrays (nothing was written)."""
    if a is b:
        return True
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(x is y for x, y in zip(la, lb))
