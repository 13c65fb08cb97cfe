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

import inspect
import types
from collections.abc import Callable, Sequence

import jax
from flax import nnx

from pdx import _nnx

__all__ = ["Graph", "check_identical", "free_graph_refs", "free_refs", "is_graph_node", "run_with_values",
           "same_leaves"]


def is_graph_node(x) -> bool:
    """Layers, optimizers, schedulers: anything whose state lives in nnx Variables."""
    return isinstance(x, nnx.Pytree)


class Graph:
    """The Variables and graph nodes reachable from a tuple of objects, each once,
    in a deterministic order.

    Built with `graph_ids` (a dict shared by the Graphs of one compiled
    function), it also remembers the structure it was read from, and
    `is_current()` says whether that structure still holds: nnx's structure
    version has not moved (any attribute of any nnx object set or deleted,
    any Variable's metadata changed), or it moved but this graph's own
    fingerprint is unchanged.

    Plain lists/dicts inside the graph (`self.blocks = []` on a Layer, an
    optimizer's state dicts) change in place without moving the version; each
    check compares their lengths (an item appended, inserted or removed), and
    the full fingerprint compares their items whenever the version moves. An
    item replaced in place (`self.blocks[0] = other`) with no other change
    anywhere is not seen: use `nnx.List`/`pdx.nn.LayerList` or assign the
    attribute anew.
    """

    __slots__ = ("objs", "variables", "nodes", "containers", "graph_id", "version",
                 "_fingerprint", "_sizes")

    def __init__(self, objs: Sequence, graph_ids: dict | None = None):
        self.objs = list(objs)
        self.variables: list[nnx.Variable] = []
        self.nodes: list[nnx.Pytree] = []
        self.containers: list = []
        version = _nnx.structure_version()
        seen: set[int] = set()
        for obj in objs:
            for _, node in nnx.iter_graph(obj):
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, nnx.Variable):
                    self.variables.append(node)
                elif isinstance(node, nnx.Pytree):
                    self.nodes.append(node)
                elif isinstance(node, (list, dict)):
                    self.containers.append(node)
        self.graph_id = None
        self.version = version
        self._fingerprint = self._sizes = None
        if graph_ids is not None:
            # Static structure (layer configs, train/eval flags) decides a trace:
            # equal structures share compiled code, different ones never do.
            graphdef = nnx.graphdef(tuple(objs)) if objs else None
            self.graph_id = graph_ids.setdefault(graphdef, len(graph_ids))
            self._fingerprint = _nnx.structure_fingerprint(self.nodes, self.variables, self.containers)
            self._sizes = tuple(map(len, self.containers))

    def is_current(self) -> bool:
        """True while the objects keep the structure this Graph was read from
        (only for a Graph built with `graph_ids`)."""
        version = _nnx.structure_version()
        if version == self.version:
            return not self.containers or tuple(map(len, self.containers)) == self._sizes
        if _nnx.structure_fingerprint(self.nodes, self.variables, self.containers) != self._fingerprint:
            return False
        self.version = version
        return True

    def values(self) -> list:
        return _nnx.stored_values(self.variables)

    def write(self, updates: dict) -> None:
        """Store new values {variable index: value} (outside any trace)."""
        _nnx.store_values(self.variables, updates)


def run_with_values(graph: Graph, values: Sequence, fn: Callable, *args, **kwargs):
    """Call `fn(*args, **kwargs)` with graph.variables holding `values`.

    The Variables and nodes accept writes in the current trace during the
    call; their original values are back afterwards, whatever happens.

    Returns:
      (fn's output, the variables' values after the call).
    """
    with _nnx.mutable_in_trace(graph.variables, graph.nodes, values):
        out = fn(*args, **kwargs)
        return out, _nnx.stored_values(graph.variables)


def same_leaves(a, b) -> bool:
    """True when two values are the very same arrays (nothing was written)."""
    if a is b:
        return True
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(x is y for x, y in zip(la, lb))


def _is_library(func) -> bool:
    """Functions of pdx and the libraries it builds on, whose globals hold no user graph objects."""
    module = getattr(func, "__module__", None) or ""
    return module.split(".")[0] in ("pdx", "jax", "flax", "optax", "numpy")


def free_graph_refs(fn) -> list[tuple[dict | types.CellType, str | None]]:
    """Where `fn` (and the global helper functions it calls) can reach graph
    objects by name: (globals dict, name) or (closure cell, None) pairs."""
    return free_refs(fn, is_graph_node)


def free_refs(fn, wanted: Callable[[object], bool], *, closure: bool = True
              ) -> list[tuple[dict | types.CellType, str | None]]:
    """Where `fn` (and the global helper functions it calls) can reach, by name,
    values for which `wanted(value)` holds: (globals dict, name) or (closure
    cell, None) pairs, each once.

    With closure=False the cells of `fn` itself, and what they lead to, are
    left out: for a caller that reads them from each new function object made
    from the same code (a lambda written inside a loop).
    """
    refs: list = []
    seen_code: set[int] = set()

    def visit(func, top=False):
        code = getattr(func, "__code__", None)
        if code is None or id(code) in seen_code:
            return
        seen_code.add(id(code))
        for cell in (getattr(func, "__closure__", None) or ()) if closure or not top else ():
            try:
                value = cell.cell_contents
            except ValueError:  # empty cell
                continue
            if wanted(value):
                refs.append((cell, None))
            elif isinstance(value, types.FunctionType):
                visit(value)
        g = getattr(func, "__globals__", {})
        codes = [code]
        while codes:  # names used by nested functions/lambdas/comprehensions too
            c = codes.pop()
            for name in c.co_names:
                value = g.get(name)
                if wanted(value):
                    refs.append((g, name))
                elif isinstance(value, types.FunctionType) and not _is_library(value):
                    visit(value)
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))

    visit(inspect.unwrap(fn), top=True)
    unique, keys = [], set()
    for ref in refs:
        key = (id(ref[0]), ref[1])
        if key not in keys:
            keys.add(key)
            unique.append(ref)
    return unique


def check_identical(layers: Sequence, who: str) -> None:
    """Raise unless `layers` share one structure (classes, settings, shapes and dtypes)."""
    first = nnx.graphdef(layers[0])
    shapes = [(v.shape, v.dtype) for v in Graph([layers[0]]).values()]
    for i, layer in enumerate(layers[1:], 1):
        if nnx.graphdef(layer) != first or [(v.shape, v.dtype) for v in Graph([layer]).values()] != shapes:
            raise ValueError(f"{who}: layer {i} ({type(layer).__name__}) differs in structure from layer 0 "
                             f"({type(layers[0]).__name__}); stacking needs identical layers (same classes, "
                             "settings, shapes and dtypes) — keep them in a pdx.nn.LayerList and run a loop")
