"""`pdx.grad` / `pdx.value_and_grad`: gradients of functions of Layers.

Paddle computes gradients by `loss.backward()` and stores them on
parameters; pdx returns them. For an argument that is a Layer, the gradient
is a `Gradients` dict {dotted parameter name: grad} over its trainable
parameters (the same names as `state_dict()`), which `optimizer.step(grads)`
consumes. Other arguments get ordinary JAX gradients. Buffers the function
updates (BatchNorm statistics, dropout RNG) keep their new values, as in an
eager Paddle forward pass.

Called eagerly (outside `pdx.jit`), the gradient of a function is traced once
per signature and runs as one compiled XLA call, threading Layers as `pdx.jit`
does; a function whose Python needs the values (`.item()`, `if x > 0`),
prints, or changes state the program cannot carry (a list it appends to, a
counter on a Layer) runs op by op instead. `value_and_grad` states the rule.

Example:
    >>> import pdx, jax.numpy as jnp
    >>> net = pdx.nn.Linear(3, 1)
    >>> def loss_fn(model, x):
    ...     return model(x).mean()
    >>> loss, grads = pdx.value_and_grad(loss_fn)(net, jnp.ones((2, 3)))
    >>> sorted(grads)
    ['bias', 'weight']
"""

from __future__ import annotations

import collections
import contextlib
import functools
import random
import sys
import threading
import types
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import numpy as np
from flax import errors as nnx_errors
from flax import nnx

from pdx import _nnx, _random, _trace_context
from pdx._shape import Shape
from pdx._graph import Graph, free_refs, is_graph_node, run_with_values, same_leaves
from pdx._static_layers import to_static_switch

__all__ = ["Gradients", "grad", "no_grad", "value_and_grad"]


@jax.tree_util.register_pytree_with_keys_class
class Gradients(dict):
    """Gradients of a Layer's trainable parameters by dotted name.

    A plain dict for reading (`grads["fc.weight"]`), a pytree for JAX
    (`jax.tree.map(lambda g: g * 0.5, grads)` keeps the type), and it
    remembers `owner`, the Layer its names refer to, so an optimizer bound to
    any subset of that Layer's parameters finds its gradients by identity.
    """

    owner = None

    def tree_flatten_with_keys(self):
        keys = tuple(self.keys())
        return [(jax.tree_util.DictKey(k), self[k]) for k in keys], (keys, self.owner)

    def tree_flatten(self):
        keys = tuple(self.keys())
        return [self[k] for k in keys], (keys, self.owner)

    @classmethod
    def tree_unflatten(cls, aux, children):
        keys, owner = aux
        out = cls(zip(keys, children))
        out.owner = owner
        return out

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k!r}: {getattr(v, 'shape', v)}" for k, v in self.items())
        return f"Gradients({{{shapes}}})"


def _trainable_params(obj) -> list[tuple[str, nnx.Param]]:
    if hasattr(obj, "named_parameters"):
        named = obj.named_parameters()
    else:  # a plain nnx.Module: names from nnx paths
        named = ((".".join(map(str, path)), v) for path, v in nnx.iter_graph(obj)
                 if isinstance(v, nnx.Param))
    trainable = []
    for n, p in named:
        meta = p.get_metadata()
        if meta.get("trainable", True) and not meta.get("stop_gradient", False):
            trainable.append((n, p))
    return trainable


def _normalize_argnums(argnums, nargs: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not isinstance(i, int) or not -nargs <= i < nargs:
            raise ValueError(f"{fname}: argnums={argnums!r} is out of range for {nargs} positional arguments")
    return tuple(i % nargs for i in nums)


# -- the gradient itself, shared by the op-by-op and the compiled path -----------------------------
_LAYER, _ARRAY = "layer", "array"


def _diff_slots(graph: Graph | None, args: Sequence, nums: tuple[int, ...]) -> tuple:
    """Per argnum: (LAYER, parameter names, variable indices) or (ARRAY, None, None)."""
    index = {id(v): i for i, v in enumerate(graph.variables)} if graph is not None else {}
    slots = []
    for i in nums:
        if is_graph_node(args[i]):
            named = _trainable_params(args[i])
            slots.append((_LAYER, [n for n, _ in named], [index[id(p)] for _, p in named]))
        else:
            slots.append((_ARRAY, None, None))
    return tuple(slots)


def _differentiate(func, fname: str, has_aux: bool, nums, slots, graph: Graph | None, values: list,
                   args: Sequence, kwargs: dict):
    """`jax.value_and_grad` of `func(*args, **kwargs)` over the argnums, with the
    graph's Variables holding `values`.

    Returns:
      (loss, aux, raw gradients per argnum, {variable index: new value} of the
      Variables the call changed).
    """

    def inner(diff_values, values):
        values = list(values)
        call_args = list(args)
        for (kind, _, idx), dv, i in zip(slots, diff_values, nums):
            if kind is _LAYER:
                for j, v in zip(idx, dv):
                    values[j] = v
            else:
                call_args[i] = dv
        if graph is None:
            out, new_values = func(*call_args, **kwargs), []
        else:
            out, new_values = run_with_values(graph, values, func, *call_args, **kwargs)
        loss, aux = out if has_aux else (out, None)
        if not (hasattr(loss, "shape") and loss.shape in ((), (1,))):
            raise TypeError(f"{fname}: the function must return a scalar loss (shape [] or [1], as "
                            f"Paddle's backward takes){' as the first element of (loss, aux)' if has_aux else ''}; "
                            f"got {type(loss).__name__} with shape {getattr(loss, 'shape', None)}")
        loss_shape.append(loss.shape)
        updates = {j: jax.lax.stop_gradient(new) for j, (new, old) in enumerate(zip(new_values, values))
                   if not same_leaves(new, old)}
        return loss.reshape(()), (aux, updates)

    loss_shape: list = []  # the loss as the function returned it: [] or Paddle's [1]
    diff_values = [[values[j] for j in idx] if kind is _LAYER else args[i]
                   for (kind, _, idx), i in zip(slots, nums)]
    (loss, (aux, updates)), raw_grads = jax.value_and_grad(inner, has_aux=True)(diff_values, values)
    return loss.reshape(loss_shape[-1]), aux, raw_grads, updates


def _result(slots, raw_grads, args, nums, argnums, has_aux, loss, aux):
    """What value_and_grad returns: Gradients (with their owner) for Layers, JAX's gradients otherwise."""
    grads = []
    for (kind, names, _), g, i in zip(slots, raw_grads, nums):
        if kind is _LAYER:
            out = Gradients(zip(names, g))
            out.owner = args[i]
            grads.append(out)
        else:
            grads.append(g)
    grads = grads[0] if isinstance(argnums, int) else tuple(grads)
    return ((loss, aux) if has_aux else loss), grads


# -- when a compiled gradient would not do what the eager one does ----------------------------------
class _NeedsEager(Exception):  # noqa: N818 - a signal, caught in this module
    """Raised while tracing when the function does something only an eager run does right."""


# Python needs a value of the traced function: the eager (op-by-op) run has it.
_VALUE_NEEDED = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                 jax.errors.TracerIntegerConversionError, jax.errors.TracerBoolConversionError,
                 # a Layer that is not an argument nor named by the function was written
                 nnx_errors.TraceContextError, _NeedsEager)


_JAX_VALUE_ERRORS = _VALUE_NEEDED[:4]

_VALUE_IN_GRADIENT = (
    "{fname}: the function reads a value in Python (float(x), np.asarray(x), x.tolist(), ...) of a "
    "tensor that the gradient depends on, and JAX's differentiation tracer refuses that conversion.{where} "
    "The pdx way: x.numpy(), x.item() and float(x) work inside the function when it runs op by op (they detach, "
    "as in Paddle); for logging, return the value as aux (`pdx.value_and_grad(f, has_aux=True)` gives "
    "`(loss, aux), grads`) and call float() on it after the step; keep metric updates outside the "
    "differentiated function."
)
_UNDER_TRACE = (" Here value_and_grad runs inside a compiled function (pdx.jit / jax.jit), where no "
                "tensor has a value: return what you need from the compiled function instead.")


class _StdoutProbe:
    """Stands in for sys.stdout while one thread traces: a write from that thread means
    the function prints; other threads write through."""

    def __init__(self, stdout, thread: int):
        self.stdout, self.thread = stdout, thread

    def write(self, text):
        if threading.get_ident() == self.thread:
            raise _NeedsEager("the function prints")
        return self.stdout.write(text)

    def __getattr__(self, name):
        return getattr(self.stdout, name)


@contextlib.contextmanager
def _prints_detected():
    """Within the block (one trace), a write to stdout from this thread raises
    `_NeedsEager`: a function that prints runs op by op, where it prints on every
    call, values included, as the Paddle code it was ported from does."""
    stdout = sys.stdout
    sys.stdout = _StdoutProbe(stdout, threading.get_ident())
    try:
        yield
    finally:
        sys.stdout = stdout


@contextlib.contextmanager
def _global_generator(key):
    """The global generator (`pdx.seed`) advances from `key` inside the block;
    `box[0]` is its key at the end."""
    box = [key]
    with _random.traced_generator(key):
        try:
            yield box
        finally:
            box[0] = _random.get_rng_state()


# -- the compiled path --------------------------------------------------------------------------------
_NODE, _SCALAR, _DYNAMIC, _STATIC, _EAGER = "node", "scalar", "dynamic", "static", "eager"
_PY_SCALARS = (bool, int, float, complex, str, type(None))
_ARRAYS = (jax.Array, np.ndarray, np.generic)
_KINDS: dict[type, str] = {}
# Traces kept per function before it runs op by op: one per distinct Python
# value of a scalar argument or free variable at the same shapes, and in all
# (shapes that never repeat, a counter read by the function).
_MAX_VALUE_TRACES = 4
_MAX_TRACES = 64
_MAX_GRAPHS = 8  # sets of Layers kept per function
_MAX_FUNCTIONS = 64  # functions kept (with their Layers and programs), least recently used dropped first


def _classify(cls: type) -> str:
    if issubclass(cls, nnx.Pytree):
        kind = _NODE
    elif cls in _PY_SCALARS:
        kind = _SCALAR
    elif issubclass(cls, _ARRAYS) or issubclass(cls, (list, tuple, dict)):
        kind = _DYNAMIC  # containers: checked for Layers inside (see _kind)
    elif issubclass(cls, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
                          type, functools.partial)):
        kind = _STATIC  # by identity: functions, classes, modules
    elif issubclass(cls, _STATEFUL):
        kind = _EAGER  # each call draws anew: a trace would freeze the draws
    else:
        kind = _OBJECT  # a config, a trainer: by identity and its Python-valued attributes
    _KINDS[cls] = kind
    return kind


_OBJECT = "object"
_STATEFUL = (np.random.Generator, np.random.RandomState, random.Random)


def _object_key(obj) -> tuple:
    """An object by identity and the Python values among its attributes (a config's
    fields, a trainer's step counter): a trace that reads one is redone when it changes."""
    try:
        items = vars(obj).items()
    except TypeError:  # __slots__
        items = ((n, getattr(obj, n, None)) for c in type(obj).__mro__ for n in getattr(c, "__slots__", ()))
    key = []
    for n, v in items:
        if type(v) in _PY_SCALARS or (type(v) in (tuple, Shape) and _hashable(v)):
            key.append((n, type(v), v))
        elif isinstance(v, (list, tuple, dict)):  # a dict of options, a list of sizes: by value
            leaves, treedef = jax.tree.flatten(v, is_leaf=is_graph_node)
            if all(type(x) in _PY_SCALARS for x in leaves):
                key.append((n, treedef, tuple((type(x), x) for x in leaves)))
    return _Identity(obj), tuple(key)


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _kind(value, free: bool = False) -> str:
    """How a value enters the key: `free` for a variable the function reads from a
    closure or global (a list/dict there is read as it is and watched for changes)."""
    kind = _KINDS.get(type(value)) or _classify(type(value))
    if kind is _DYNAMIC and isinstance(value, (list, tuple, dict)):
        return _tree_kind(jax.tree.leaves(value, is_leaf=is_graph_node), free, not isinstance(value, tuple))
    if kind is _OBJECT:
        leaves = jax.tree.leaves(value, is_leaf=is_graph_node)
        if len(leaves) != 1 or leaves[0] is not value:  # a registered pytree (a flax struct, a chex dataclass)
            return _tree_kind(leaves, free, False)
        if any(isinstance(v, _ARRAYS) or (isinstance(v, (list, tuple, dict)) and any(
                isinstance(x, _ARRAYS) for x in jax.tree.leaves(v, is_leaf=is_graph_node)))
               for v in _attribute_values(value)):
            return _EAGER  # arrays the trace would bake in, with no way to see them change
    return kind


def _tree_kind(leaves: list, free: bool, mutable: bool) -> str:
    if not all(isinstance(x, _ARRAYS) or type(x) in _PY_SCALARS for x in leaves):
        return _EAGER  # a Layer or another object inside: only the eager path reads it as it is
    if leaves and all(type(x) in _PY_SCALARS for x in leaves):
        return _FREE_CONTAINER if free and mutable else _STATIC_TREE
    if free and (mutable or not all(isinstance(x, _ARRAYS) for x in leaves)):
        return _FREE_CONTAINER
    return _DYNAMIC


def _attribute_values(obj):
    try:
        return vars(obj).values()
    except TypeError:  # __slots__
        return [getattr(obj, n, None) for c in type(obj).__mro__ for n in getattr(c, "__slots__", ())]


_STATIC_TREE = "static tree"  # a list/tuple/dict of Python scalars: static by value
_FREE_CONTAINER = "free container"  # a list/dict the function names: by its items, watched for changes


def _leaf_key(x):
    return (type(x), x) if type(x) in _PY_SCALARS else _Identity(x)


class _Identity:
    """A dict key comparing an object by identity (and holding it, so its id stays unique)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _function_key(func) -> tuple | None:
    """What one compiled gradient is kept under: a function's code and globals
    (a lambda written inside a loop is a new object with the same code each
    time), a method's function and object; None for other callables."""
    if isinstance(func, types.MethodType):
        inner = _function_key(func.__func__)
        return None if inner is None else (inner, _Identity(func.__self__))
    if isinstance(func, types.FunctionType):
        return (func.__code__, _Identity(func.__globals__), func.__defaults__,
                _Identity(func.__kwdefaults__) if func.__kwdefaults__ else None)
    return None


def _is_free_value(value) -> bool:
    """What a function's free variables are followed for (None is also what a missing global reads as)."""
    return value is not None and (is_graph_node(value) or isinstance(value, (*_ARRAYS, list, tuple, dict, *_STATEFUL))
                                  or type(value) in _PY_SCALARS)


class _Entry(NamedTuple):
    """How one argument or free variable enters a layout (hashable: layouts are dict keys)."""

    where: int | str | tuple  # a position, a keyword, ("cell", i), ("free", id(holder), name), ("self",)
    kind: str  # _NODE, _SCALAR, _STATIC_TREE, _STATIC or _DYNAMIC
    key: object = None  # the object's index in Graph.objs, the scalar's type, a treedef, an _Identity
    value: object = None  # the scalar, the tree's (type, leaf) pairs, an object's Python attributes


class _KeptGraph(NamedTuple):
    graph: Graph
    slots: tuple  # per argnum, see _diff_slots
    nums: tuple[int, ...]


class _Signature:
    """One call sorted out: the objects to thread, the static key, the dynamic inputs."""

    __slots__ = ("objs", "static", "n_args", "dynamic", "hoisted", "containers", "eager")

    def __init__(self):
        self.objs: list = []
        self.static: list = []  # the arguments' entries, then the free variables'
        self.n_args = 0
        self.dynamic: list = []  # array arguments, in order
        self.hoisted: list = []  # arrays the function reads from closures/globals
        self.containers: list = []  # lists/dicts the function reads from closures/globals
        self.eager = False

    def add(self, value, where, free: bool = False) -> bool:
        """Sort one value (an argument or a free variable) into the key; True when it is an input."""
        kind = _kind(value, free)
        if kind is _NODE:
            for i, obj in enumerate(self.objs):
                if obj is value:
                    break
            else:
                i = len(self.objs)
                self.objs.append(value)
            self.static.append(_Entry(where, _NODE, i))
        elif kind is _SCALAR:
            self.static.append(_Entry(where, _SCALAR, type(value), value))  # the type too: 1 == True
        elif kind is _STATIC_TREE or kind is _FREE_CONTAINER:
            leaves, treedef = jax.tree.flatten(value)
            self.static.append(_Entry(where, _STATIC_TREE, treedef, tuple(map(_leaf_key, leaves))))
            if kind is _FREE_CONTAINER and isinstance(value, (list, dict)):
                self.containers.append(value)
        elif kind is _STATIC:
            self.static.append(_Entry(where, _STATIC, _Identity(value)))
        elif kind is _OBJECT:
            self.static.append(_Entry(where, _STATIC, *_object_key(value)))
        elif kind is _DYNAMIC:
            self.static.append(_Entry(where, _DYNAMIC))
            return True
        else:
            self.eager = True
        return False


class _CompiledGrad:
    """The compiled gradients of one function (one `value_and_grad(func, argnums, has_aux)` setting).

    Keeps the Graph of the objects it threads (re-read when their structure
    changes, `Graph.is_current`), one `jax.jit` function per static layout
    (graph structure, argument kinds, Python values; JAX's own cache keys on
    shapes, dtypes and the trace context), and which layouts must run op by op.
    """

    def __init__(self, func, argnums, has_aux: bool, fname: str):
        self.argnums, self.has_aux, self.fname = argnums, has_aux, fname
        self.free = free_refs(func, _is_free_value, closure=False)  # globals and helpers' cells
        self.graph_ids: dict = {}
        self.graphs: dict = {}  # ids of the objects -> (Graph, parameter slots, argnums)
        self.graph: Graph | None = None
        self.slots: tuple | None = None
        self.programs: dict = {}
        self.eager_layouts: set = set()
        self.eager = False  # every call op by op (see _MAX_TRACES, structure changes)
        self.traces = 0
        self.value_traces: collections.Counter = collections.Counter()
        self.traced_now = False
        # read by `_traced` while tracing (set before each call)
        self.func = func
        self.containers: list = []
        self.nums: tuple[int, ...] = ()

    # -- sorting a call -------------------------------------------------------------
    def signature(self, func, args, kwargs) -> _Signature:
        sig = _Signature()
        for i, a in enumerate(args):
            if sig.add(a, i):
                sig.dynamic.append(a)
        for k, v in kwargs.items():
            if sig.add(v, k):
                sig.dynamic.append(v)
        sig.n_args = len(sig.static)
        if isinstance(func, types.MethodType):  # a Layer's method: its Layer is threaded; another object's: keyed
            sig.eager |= sig.add(func.__self__, ("self",), free=True)  # (an array's method: op by op)
        cells = getattr(func, "__closure__", None) or ()
        for i, cell in enumerate(cells):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if sig.add(value, ("cell", i), free=True):
                sig.hoisted.append(value)
        for holder, name in self.free:
            try:
                value = holder.get(name) if name is not None else holder.cell_contents
            except ValueError:  # a helper's cell emptied
                continue
            if value is None:
                continue
            if sig.add(value, ("free", id(holder), name), free=True):
                sig.hoisted.append(value)
        return sig

    def current_graph(self, objs: list, args, nums) -> Graph:
        """The Graph of `objs` (kept per set of objects: one function may train several
        models), with the argnums' parameter slots; also made current for `_traced`."""
        key = tuple(map(id, objs))  # (a kept Graph holds its objects: their ids stay theirs)
        kept = self.graphs.get(key)
        if kept is None or kept.nums != nums or not kept.graph.is_current():
            graph = kept.graph if kept is not None and kept.graph.is_current() else Graph(objs, self.graph_ids)
            kept = self.graphs[key] = _KeptGraph(graph, _diff_slots(graph, args, nums), nums)
            if len(self.graphs) > _MAX_GRAPHS:
                del self.graphs[next(iter(self.graphs))]
        self.graph, self.slots, self.nums = kept
        return kept.graph

    # -- a call -----------------------------------------------------------------------
    def __call__(self, func, args, kwargs):
        """The compiled gradient, or None where this call must run op by op."""
        if self.eager:
            return None
        nums = _normalize_argnums(self.argnums, len(args), self.fname)
        sig = self.signature(func, args, kwargs)
        if sig.eager or any(not is_graph_node(args[i]) and _kind(args[i]) is not _DYNAMIC for i in nums):
            return None
        graph = self.current_graph(sig.objs, args, nums)
        # The layout: the arguments' part, then the free variables'. (The trace context, with
        # the AMP policy and lowering switches, is part of jax.jit's own key.) An op-by-op
        # decision holds for the arguments' part: free lists/dicts may change every call.
        layout = (graph.graph_id, nums, tuple(sig.static[:sig.n_args]), tuple(sig.static[sig.n_args:]))
        if layout[:3] in self.eager_layouts:
            return None
        jitted = self.programs.get(layout)
        if jitted is None:
            if len(self.programs) >= _MAX_TRACES:
                del self.programs[next(iter(self.programs))]
            jitted = self.programs[layout] = jax.jit(functools.partial(self._traced, layout))
        self.func, self.containers = func, sig.containers
        key = _random.get_rng_state()
        values = _nnx.stored_values(graph.variables)
        try:
            loss, aux, raw_grads, updates, new_key = jitted(values, key, sig.dynamic, sig.hoisted)
        except _VALUE_NEEDED:
            self.traced_now = False
            self.eager_layouts.add(layout[:3])
            return None
        if self.traced_now:
            self.traced_now = False
            self._check_trace(jitted, graph, layout, (values, key, sig.dynamic, sig.hoisted))
        if updates:
            graph.write(updates)
        if new_key is not None:
            _random.set_rng_state(new_key)
        return _result(self.slots, raw_grads, args, nums, self.argnums, self.has_aux, loss, aux)

    def _traced(self, layout, values, key, dynamic, hoisted):
        """The traced body: the user's function on the real objects holding tracers."""
        self.traces += 1
        self.traced_now = True
        _, nums, arg_static, free_static = layout
        graph, func = self.graph, self.func
        args, kwargs, dyn = [], {}, iter(dynamic)
        for e in arg_static:
            kind = e.kind
            value = (next(dyn) if kind is _DYNAMIC else graph.objs[e.key] if kind is _NODE
                     else e.value if kind is _SCALAR else e.key.obj if kind is _STATIC
                     else jax.tree.unflatten(e.key, [x for _, x in e.value]))
            if isinstance(e.where, int):
                args.append(value)
            else:
                kwargs[e.where] = value
        shapes = tuple((x.shape, x.dtype) for x in jax.tree.leaves((dynamic, hoisted)))
        kinds = tuple((e.where, e.kind) for e in arg_static + free_static)
        self.value_traces[(layout[0], nums, shapes, kinds, _trace_context.current())] += 1
        with _hoisted(func, self._hoisted_slots(func, free_static), hoisted), _global_generator(key) as rng, \
                _prints_detected(), _unchanged(self.containers):
            loss, aux, raw_grads, updates = _differentiate(func, self.fname, self.has_aux, nums, self.slots,
                                                           graph, values, args, kwargs)
        return loss, aux, raw_grads, updates, (None if rng[0] is key else rng[0])

    def _hoisted_slots(self, func, free_static) -> list:
        """(holder, name) of each hoisted array, in the order of `hoisted`."""
        cells = getattr(func, "__closure__", None) or ()
        holders = {("free", id(h), n): (h, n) for h, n in self.free}
        return [(cells[where[1]], None) if where[0] == "cell" else holders[where]
                for where, kind, *_ in free_static if kind is _DYNAMIC]

    def _check_trace(self, jitted, graph: Graph, layout, inputs) -> None:
        """After a call that traced: remember what makes later calls run op by op."""
        if self.traces > _MAX_TRACES or max(self.value_traces.values()) > _MAX_VALUE_TRACES:
            self.eager = True  # retracing per call would cost more than running op by op
            return
        if graph.objs and not graph.is_current():
            self.eager = True  # the function changed a Layer's attributes: Python that must run each call
            return
        allowed = _attribute_arrays(graph)
        consts = jitted.trace(*inputs).jaxpr.consts
        if any(isinstance(c, jax.Array) and id(c) not in allowed for c in consts):
            # an array reached through a container or object attribute became a constant
            # of the program: a later call could not see it change
            self.eager_layouts.add(layout[:3])


def _attribute_arrays(graph: Graph) -> set[int]:
    """Arrays kept as plain attributes of the graph's objects (a change of one is a
    structure change, which `Graph.is_current` sees)."""
    ids = set()
    for node in graph.nodes:
        for _, v in _nnx.user_attributes(node):
            if isinstance(v, jax.Array):
                ids.add(id(v))
    for c in graph.containers:
        for v in (c.values() if isinstance(c, dict) else c):
            if isinstance(v, jax.Array):
                ids.add(id(v))
    return ids


@contextlib.contextmanager
def _unchanged(containers: list):
    """Raise `_NeedsEager` if the block changes one of the lists/dicts (a loss appended
    to a history list, a counter in a dict) or draws from numpy's or Python's global
    random generator: Python that must run on every call. All of them are put back
    as they were, so the op-by-op run that follows starts from the same state."""
    saved = [(c, list(c) if isinstance(c, list) else dict(c)) for c in containers]
    np_state, py_state = np.random.get_state(), random.getstate()

    def changed():
        out = []
        for c, before in saved:
            items, old = (c, before) if isinstance(c, list) else (list(c.items()), list(before.items()))
            if len(items) != len(old) or any(a is not b for a, b in zip(_flat(items), _flat(old))):
                out.append((c, before))
        now = np.random.get_state()
        drew = now[2] != np_state[2] or not np.array_equal(now[1], np_state[1]) or random.getstate() != py_state
        return out, drew

    def restore(undo, drew):
        _restore(undo)
        if drew:
            np.random.set_state(np_state)
            random.setstate(py_state)

    try:
        yield
    except BaseException:
        restore(*changed())
        raise
    undo, drew = changed()
    if undo or drew:
        restore(undo, drew)
        raise _NeedsEager("the function changes a list or dict it reads from outside, or draws random numbers")


def _flat(items):
    for x in items:
        yield from (x if type(x) in (tuple, Shape) else (x,))


def _restore(undo) -> None:
    for c, before in undo:
        if isinstance(c, list):
            c[:] = before
        else:
            c.clear()
            c.update(before)


@contextlib.contextmanager
def _hoisted(func, slots: list, tracers: list):
    """Closure cells and globals the function reads hold `tracers` inside the block."""
    saved = []
    try:
        for (holder, name), t in zip(slots, tracers):
            if name is None:
                saved.append((holder, name, holder.cell_contents))
                holder.cell_contents = t
            else:
                saved.append((holder, name, holder[name]))
                holder[name] = t
        yield
    finally:
        for holder, name, value in reversed(saved):
            if name is None:
                holder.cell_contents = value
            else:
                holder[name] = value


_COMPILED: collections.OrderedDict = collections.OrderedDict()  # (function key, argnums, has_aux) -> _CompiledGrad


def _entry_key(func, argnums, has_aux: bool) -> tuple | None:
    fkey = _function_key(func)
    return None if fkey is None else (fkey, argnums if isinstance(argnums, int) else tuple(argnums), has_aux)


def _compiled_for(func, argnums, has_aux: bool, fname: str) -> _CompiledGrad | None:
    key = _entry_key(func, argnums, has_aux)
    if key is None:
        return None
    entry = _COMPILED.get(key)
    if entry is None:
        if len(_COMPILED) >= _MAX_FUNCTIONS:
            _COMPILED.popitem(last=False)
        entry = _COMPILED[key] = _CompiledGrad(func, argnums, has_aux, fname)
    else:
        _COMPILED.move_to_end(key)
    return entry


# -- pdx.jit's switch -------------------------------------------------------------------------------
def _compiling() -> bool:
    """Whether `pdx.jit` compiles now (`pdx.jit.enable_to_static`; off: gradients run eagerly too)."""
    return to_static_switch["enabled"]


# -- the public functions -------------------------------------------------------------------------------
def value_and_grad(func: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Return a function computing `(func(*args), gradients)`.

    Called eagerly, the gradient is compiled: the first call with a signature
    traces `func` and XLA compiles value and gradient into one program, which
    later calls with the same signature run without running `func`'s Python.
    The signature is what a trace depends on: the shapes and dtypes of array
    arguments, Python values among the arguments and among the globals and
    closure variables the function names (a config object's Python-valued
    attributes too), the structure of the Layers it uses (`train()` /
    `eval()`, added sublayers) and the trace context (`pdx.amp.auto_cast`,
    lowering switches). Arrays the function names in a closure or global are
    inputs of the program, so a `lambda m: loss(m(x), y)` written inside the
    loop sees each step's `x`. Layers that are arguments, the `self` of a
    method or named by the function are threaded as in `pdx.jit`: buffers they
    change (BatchNorm statistics, dropout keys) keep their new values, and
    random ops on the global generator (`pdx.seed`) advance it as they do op
    by op.

    A function runs op by op instead (as it ran before compilation), for that
    signature from then on, when its trace
      - needs a value in Python: `x.item()`, `int(x)`, `if x > 0:` (JAX's
        concretization errors);
      - prints (eagerly it prints on every call, values included);
      - changes a list or dict it reads from a global or closure, draws from
        numpy's or Python's global random generator, or changes a Layer's
        Python attributes (a counter on `self`);
      - writes a Layer it reaches only through a list, a dict or another object;
      - bakes in an array it reached through a container or an object's
        attribute (a later call could not see it change);
    and for every signature once the function needed many traces (more than
    4 Python values at the same shapes, or 64 in all). A function whose
    arguments or free variables include a numpy Generator or a plain object
    holding arrays (not a registered pytree), and a callable that is not a
    plain function or method (functools.partial, a callable object), run op
    by op from the start. The first call of a function that falls back runs part of
    its Python twice (the aborted trace, then the op-by-op run); the lists,
    dicts and random states above are put back in between. Other Python
    effects (reading the clock or a file, changing an object's attribute)
    happen only when a trace runs: keep them out of the differentiated
    function, or call `pdx.jit.enable_to_static(False)`, after which every
    `value_and_grad` call runs op by op (for pdb, too). Under a trace
    (`pdx.jit`, `jax.jit`, `jax.vmap`) the gradient is part of that trace.
    `cache_size()` of the returned function counts the traces.

    Args:
      func: returns a scalar loss (or `(loss, aux)` with has_aux=True).
      argnums: which positional argument(s) to differentiate. For a Layer the
        gradient is a `Gradients` dict over its trainable parameters.
      has_aux: func returns `(loss, aux)`; the result is then `((loss, aux), grads)`.

    Returns:
      A function with func's signature returning `(value, grads)`; grads is a
      single gradient for an int argnums and a tuple for a sequence.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> net = pdx.nn.Linear(2, 1)
      >>> def loss_fn(model, x):
      ...     return (model(x) ** 2).mean()
      >>> for _ in range(3):  # traced and compiled once
      ...     loss, grads = pdx.value_and_grad(loss_fn)(net, jnp.ones((4, 2)))
      >>> grads["weight"].shape, pdx.value_and_grad(loss_fn).cache_size()
      ((2, 1), 1)
    """
    _check_function(func, "value_and_grad")
    fname = f"pdx.value_and_grad({getattr(func, '__name__', func)})"

    def wrapper(*args, **kwargs):
        if _random.in_trace():
            return _eager(func, argnums, has_aux, fname, args, kwargs, None, top=False)
        entry = _compiled_for(func, argnums, has_aux, fname)
        if entry is not None and _compiling():
            out = entry(func, args, kwargs)
            if out is not None:
                return out
        return _eager(func, argnums, has_aux, fname, args, kwargs, entry, top=True)

    def cache_size() -> int:
        """How many times the gradient of `func` was traced for compilation (as
        `StaticFunction.cache_size`; shared by every `value_and_grad(func)` with
        these argnums and has_aux)."""
        entry = _COMPILED.get(_entry_key(func, argnums, has_aux))
        return 0 if entry is None else entry.traces

    wrapper.cache_size = cache_size
    return wrapper


def _eager(func, argnums, has_aux: bool, fname: str, args, kwargs, entry: _CompiledGrad | None, *, top: bool):
    """The op-by-op gradient; `top`: called outside any trace, where random ops
    advance the global generator (inside another trace they need `key=`)."""
    nums = _normalize_argnums(argnums, len(args), fname)
    if entry is not None:  # the entry's graph: Layers the function names are threaded too
        sig = entry.signature(func, args, kwargs)
        graph = entry.current_graph(sig.objs, args, nums) if sig.objs else None
        slots = entry.slots if graph is not None else _diff_slots(None, args, nums)
    else:
        graph_objs = [a for a in args if is_graph_node(a)]
        graph = Graph(graph_objs) if graph_objs else None
        slots = _diff_slots(graph, args, nums)
    generator = _global_generator(_random.get_rng_state()) if top else contextlib.nullcontext()
    values = graph.values() if graph is not None else []
    with generator as rng:
        try:
            loss, aux, raw_grads, updates = _differentiate(func, fname, has_aux, nums, slots, graph, values,
                                                           args, kwargs)
        except _JAX_VALUE_ERRORS as e:
            teach = _VALUE_IN_GRADIENT.format(fname=fname, where="" if top else _UNDER_TRACE)
            if not top:  # inside pdx.jit / jax.jit: JAX's class stays for whoever handles it
                e.add_note(teach)
                raise
            raise TypeError(f"{teach}\n\nJAX's error: {str(e).splitlines()[0]}") from e
    if graph is not None and updates:
        # Buffers changed by the forward pass (BatchNorm stats, RNG) keep
        # their new values; parameters only change through the optimizer.
        graph.write(updates)
    if rng is not None:
        _random.set_rng_state(rng[0])
    return _result(slots, raw_grads, args, nums, argnums, has_aux, loss, aux)


_TAPE_FORM = (
    "pdx.{op}(func, ...) differentiates a function: pdx has no tape, so Paddle's "
    "paddle.grad(outputs, inputs) form cannot work; got {what} as `func`. Write the computation "
    "as a function of the inputs and call pdx.{op}(func)(inputs), e.g. "
    "`loss, grads = pdx.value_and_grad(lambda m, x: loss_fn(m(x)))(model, x)`."
)


def _check_function(func, op: str) -> None:
    if not callable(func) or hasattr(func, "shape"):
        raise TypeError(_TAPE_FORM.format(op=op, what=f"a {type(func).__name__}"))


def grad(func: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Like `value_and_grad` but returns only the gradients (and aux if has_aux).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> net = pdx.nn.Linear(2, 1)
        >>> g = pdx.grad(lambda m, x: m(x).sum())(net, jnp.ones((1, 2)))
        >>> g["weight"].shape
        (2, 1)
    """
    _check_function(func, "grad")
    vg = value_and_grad(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    wrapper.cache_size = vg.cache_size
    return wrapper


class no_grad(contextlib.ContextDecorator):
    """Paddle's `paddle.no_grad`, kept so ported code runs unchanged.

    pdx records nothing for autodiff outside `pdx.grad` (gradients are
    computed only by the function transformation), so this context/decorator
    has nothing to switch off; wrap values in `jax.lax.stop_gradient` to block
    gradients inside a differentiated function.

    Example:
        >>> import pdx
        >>> with pdx.no_grad():
        ...     y = pdx.ones([2]) * 2
    """

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
