"""`pdx.jit` / `pdx.jit.to_static`: compile eager code with XLA.

A `StaticFunction` wraps a Python function. On a call it finds the stateful
graph objects the function touches — Layers and optimizers passed as
arguments, the `self` of a method, and Layers/optimizers the function reaches
through closures or module globals (Paddle scripts are written that way) —
and threads their nnx Variables through one `jax.jit`-compiled call:

    values = [v.raw for v in variables]          # flat, cached variable list
    out, updates = jitted(values, dynamic args)  # one XLA executable per signature
    for i, new in updates: variables[i].raw = new   # mutations persist

While tracing, each Variable temporarily holds its tracer (and a trace state
valid for this trace), so user code runs unchanged on the real objects:
reading `self.weight`, updating BatchNorm statistics, stepping an optimizer.
Only the Variables the function actually changed come back as outputs.

The variable list is computed once per set of objects and re-read only when
the structure of an object in it changed (`pdx._graph.Graph.is_current`: any
nnx object, a pdx Layer or not), so a compiled call costs about what a
hand-written `jax.jit` call does.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
from collections.abc import Callable, Sequence
from typing import Any

import jax
from flax import errors as nnx_errors
from flax import nnx

from pdx import _nnx
from pdx._graph import Graph, free_graph_refs, is_graph_node, run_with_values, same_leaves
from pdx.jit import _dy2static
from pdx.jit._dy2static import _runtime as _dy2static_runtime
from pdx.jit._input_spec import InputSpec, check_inputs
from pdx._static_layers import static_layers, to_static_switch
from pdx.nn import Layer

__all__ = ["StaticFunction", "enable_to_static", "not_to_static", "to_static"]

_settings = to_static_switch  # read by the eager gradient too (pdx/_autograd.py)

_WHILE_GRAD = (
    "pdx.jit: cannot differentiate (reverse mode) through a loop whose trip count depends on a "
    "traced value: XLA's while loop keeps no history for the backward pass. Converted loops of "
    "that kind in this trace:\n{locations}\n"
    "Wrap the loop in `with pdx.jit.max_iterations(N):` (it then compiles to a differentiable "
    "lax.scan of N steps), or loop over a Python range / the rows of an array."
)

_UNTHREADED_STATE = (
    "pdx.jit: {fn} mutated a Layer/optimizer that pdx.jit could not see ({cause}). "
    "pdx.jit threads Layers and optimizers that are passed as top-level arguments, "
    "are the `self` of a decorated method, or are referenced by name from the function "
    "(closure variables or module globals, including helper functions it calls). Pass "
    "the object as an argument instead of hiding it inside a list/dict/attribute."
)


_ESCAPED_FROM_LOOP = (
    "pdx.jit: a value computed inside a compiled loop escaped it (it was stored outside the "
    "loop's variables, e.g. `obj.attr = ...`, `self.attr = ...` or a global). A loop whose "
    "condition or iterable is traced runs as one XLA loop, and only its local variables are "
    "carried out. Loops compiled in this trace:\n{locations}\n"
    "Keep the value in a local variable (`total = total + x`) and assign the attribute after "
    "the loop, or loop over a Python range (unrolled)."
)


_NESTED_STATE = (
    "pdx.jit: {fn} got a Layer/optimizer inside a list/tuple/dict ({where}). Its "
    "changes (parameters, BatchNorm statistics, optimizer state) could not be carried "
    "out of the compiled call. Pass each Layer/optimizer as its own argument."
)


def enable_to_static(enable: bool) -> None:
    """Globally turn compilation on or off (Paddle's `paddle.jit.enable_to_static`).

    With `False`, every `pdx.jit` function runs eagerly — print, pdb and
    numpy work inside — which is the first thing to try when debugging.
    """
    if not isinstance(enable, bool):
        raise TypeError(f"enable_to_static(enable) needs a bool; got {enable!r}")
    _settings["enabled"] = enable


def not_to_static(fn: Callable) -> Callable:
    """Mark `fn` to be left as written when `pdx.jit` converts the code that calls it.

    It is still traced (and compiled) as part of the caller; only source
    conversion of Python control flow skips it (Python `if` on a traced value
    inside it raises JAX's TracerBoolConversionError).

    Example:
      >>> import pdx
      >>> @pdx.jit.not_to_static
      ... def helper(x):
      ...     return x + 1
      >>> helper.__pdx_not_to_static__
      True
    """
    fn.__pdx_not_to_static__ = True
    return fn


_GraphNode = nnx.Pytree
_CONTAINERS = (list, tuple, dict)
# Python scalars are compile-time constants, as in Paddle's to_static: `if training:` and
# `range(n)` on them stay Python, and each distinct value compiles once.
_PY_SCALARS = (bool, int, float, str)
_NODE, _CONTAINER, _SCALAR, _OTHER = "node", "container", "scalar", "other"
# Compiled functions kept per StaticFunction, oldest dropped first (JAX bounds its own
# per-function cache the same way; each distinct Python scalar value is a layout).
_MAX_LAYOUTS = 512
_KINDS: dict[type, str] = {}


def _classify(cls: type) -> str:
    """Cache what an argument type is: isinstance on nnx's ABC-based classes
    costs more than a dict lookup on every call."""
    kind = (_NODE if issubclass(cls, _GraphNode) else _CONTAINER if issubclass(cls, _CONTAINERS)
            else _SCALAR if cls in _PY_SCALARS else _OTHER)
    _KINDS[cls] = kind
    return kind


_STRUCTURE, _stored_value = _nnx.STRUCTURE, _nnx.stored_value


def _reject_nested_state(container, where: str, fn: str) -> None:
    items = container.values() if isinstance(container, dict) else container
    if any(is_graph_node(x) for x in items):
        raise TypeError(_NESTED_STATE.format(fn=fn, where=where))


@dataclasses.dataclass(frozen=True, slots=True)
class _CallPlan:
    """What a call with only positional arguments resolved to, reused while it holds.

    It holds while there are as many arguments of the same types, the
    Layer/optimizer arguments and every free reference are the same objects,
    the Python scalar arguments are equal, and the graph is current
    (`Graph.is_current`). `holds(args)` tests exactly that; `pick(args)` is the
    tuple of array (dynamic) arguments `jitted` takes.
    """

    holds: Callable[[tuple], bool]
    pick: Callable[[tuple], tuple]
    graph: Graph
    jitted: Callable                        # the compiled function for this call's static layout


def _picker(positions: tuple[int, ...]) -> Callable[[tuple], tuple]:
    """`args -> tuple(args[i] for i in positions)` as one C-level call (a slice when contiguous)."""
    if not positions:
        return operator.itemgetter(slice(0, 0))
    first, last = positions[0], positions[-1]
    if positions == tuple(range(first, last + 1)):
        return operator.itemgetter(slice(first, last + 1))
    return operator.itemgetter(*positions)  # two or more positions: itemgetter returns a tuple


def _plan_check(arg_types: tuple[type, ...], nodes: dict[int, Any], scalars: dict[int, Any],
                free: Sequence[tuple[Any, str | None, Any]], graph: Graph) -> Callable[[tuple], bool]:
    """`holds(args)` of a `_CallPlan`, generated as one boolean expression.

    This test runs before every compiled call; a generic loop over the
    conditions costs a few hundred nanoseconds more than the unrolled
    expression, which is a measurable part of calling a small model.
    """
    env: dict[str, Any] = {"_S": _STRUCTURE, "_G": graph}
    terms = [f"len(args) == {len(arg_types)}"]
    for i, t in enumerate(arg_types):
        if i in nodes:
            env[f"_o{i}"] = nodes[i]
            terms.append(f"args[{i}] is _o{i}")  # (identity implies the type)
        else:
            env[f"_t{i}"] = t
            terms.append(f"type(args[{i}]) is _t{i}")
            if i in scalars:
                env[f"_v{i}"] = scalars[i]
                terms.append(f"args[{i}] == _v{i}")
    for k, (holder, name, obj) in enumerate(free):
        env[f"_h{k}"], env[f"_f{k}"] = holder, obj
        if name is None:
            terms.append(f"_h{k}.cell_contents is _f{k}")
        else:
            env[f"_n{k}"] = name
            terms.append(f"_h{k}.get(_n{k}) is _f{k}")
    # the graph: nnx's mutation counter has not moved (then plain lists/dicts in
    # the graph, which no nnx hook sees, are compared by length), else a fingerprint
    terms.append("_G.is_current()" if graph.containers else "(_G.version == _S.value or _G.is_current())")
    namespace: dict[str, Any] = {}
    exec(f"def holds(args):\n    return {' and '.join(terms)}\n", env, namespace)  # noqa: S102
    return namespace["holds"]


class StaticFunction:
    """A function compiled by `pdx.jit`; call it like the original.

    Attributes:
      dygraph_function: the original Python function.
    """

    def __init__(self, function: Callable, *, input_spec: Sequence[InputSpec] | None = None,
                 static_argnames: Sequence[str] = (), donate_state: bool = False,
                 full_graph: bool = False, backend: str | None = None):
        if not callable(function):
            raise TypeError(f"pdx.jit needs a function, method or Layer; got {type(function).__name__}")
        functools.update_wrapper(self, function)
        self.dygraph_function = function
        self._input_spec = list(input_spec) if input_spec is not None else None
        self._donate_state = donate_state
        self._static_argnames = tuple(static_argnames)
        try:
            params = list(inspect.signature(function).parameters)
        except (TypeError, ValueError):
            params = []
        unknown = [n for n in self._static_argnames if n not in params]
        if unknown and not any(p for p in params if p == "kwargs"):
            raise ValueError(f"pdx.jit: static_argnames {unknown} are not parameters of "
                             f"{getattr(function, '__qualname__', function)}; its parameters are {params}")
        self._static_pos = {params.index(n): n for n in self._static_argnames if n in params}
        self._full_graph = full_graph
        self._converted: Callable | None = None
        self._free_refs: list | None = None
        self._graph: Graph | None = None
        self._graph_ids: dict = {}
        self._current: Graph | None = None
        self._plan: _CallPlan | None = None
        self._last_args: tuple | None = None
        self._jit_options = {"donate_argnums": (0,) if donate_state else (), "backend": backend}
        # one jax.jit function per static layout (graph structure, Layer/scalar positions):
        # the per-call path then hands JAX only arrays, with no static argument to hash
        self._compiled: dict[tuple, Callable] = {}

    # Decorating a method in a class body: bind like a function would.
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return functools.partial(self, instance)

    def __repr__(self) -> str:
        return f"StaticFunction({getattr(self.dygraph_function, '__qualname__', self.dygraph_function)})"

    # -- the call path (kept lean: this is per-step overhead) ---------------------
    def _jitted(self, static) -> Callable:
        """The compiled function `(values, dyn_args, dyn_kwargs) -> (out, updates)` for a static layout.

        One `jax.jit` function per layout: it keys its own cache on the trace context
        (`pdx/_trace_context.py`: AMP, mesh, kernel and lowering settings), so a call under
        other settings traces once more and the call plan that holds it stays valid.
        """
        jitted = self._compiled.get(static)
        if jitted is None:
            if len(self._compiled) >= _MAX_LAYOUTS:  # e.g. a Python float argument that changes every call
                del self._compiled[next(iter(self._compiled))]
            jitted = self._compiled[static] = jax.jit(functools.partial(self._traced, static), **self._jit_options)
        return jitted

    def _prepare(self, args, kwargs):
        objs: list = []
        layout = None
        static_pos = self._static_pos
        for i, a in enumerate(args):
            kind = _KINDS.get(type(a)) or _classify(type(a))
            if kind is _NODE:
                layout = layout or [None] * len(args)
                layout[i] = ("g", len(objs))
                objs.append(a)
            elif i in static_pos or kind is _SCALAR:
                layout = layout or [None] * len(args)
                layout[i] = ("s", a, type(a))  # the type too: 1 == True must not share a trace
            elif kind is _CONTAINER:
                _reject_nested_state(a, f"argument {i}", self.__name__)
        dyn_kwargs = kwargs
        kw_layout = ()
        if kwargs:
            dyn_kwargs, kw_layout = {}, []
            for k, v in kwargs.items():
                if isinstance(v, _GraphNode):
                    kw_layout.append((k, "g", len(objs)))
                    objs.append(v)
                elif k in self._static_argnames or type(v) in _PY_SCALARS:
                    kw_layout.append((k, "s", v, type(v)))
                else:
                    if isinstance(v, _CONTAINERS):
                        _reject_nested_state(v, f"argument {k!r}", self.__name__)
                    dyn_kwargs[k] = v
            kw_layout = tuple(kw_layout)
        free = self._free_refs
        if free is None:
            free = self._free_refs = free_graph_refs(self.dygraph_function)
        for holder, name in free:
            obj = holder[name] if name is not None else holder.cell_contents
            if (_KINDS.get(type(obj)) or _classify(type(obj))) is _NODE and obj not in objs:
                objs.append(obj)  # (nnx objects compare by identity)
        graph = self._graph
        if graph is None or graph.objs != objs or not graph.is_current():
            graph = self._graph = Graph(objs, self._graph_ids)
        # the compiled function takes the array arguments only, in order; `layout` puts
        # the Layers/optimizers and Python values back around them while tracing
        dyn_args = args if layout is None else tuple(a for a, slot in zip(args, layout) if slot is None)
        static = (graph.graph_id, None if layout is None else tuple(layout), kw_layout)
        return graph, static, dyn_args, dyn_kwargs

    def __call__(self, *args, **kwargs):
        if not _settings["enabled"]:
            return self.dygraph_function(*args, **kwargs)
        if self._input_spec is not None:
            check_inputs(self._input_spec, args, fn=self.__name__)
        self._last_args = args  # pdx.jit.save without input_spec exports this signature, as Paddle does
        plan = self._plan
        if plan is not None and not kwargs and plan.holds(args):
            graph, jitted, dyn_args, dyn_kwargs = plan.graph, plan.jitted, plan.pick(args), kwargs
        else:
            graph, static, dyn_args, dyn_kwargs = self._prepare(args, kwargs)
            jitted = self._jitted(static)
            self._plan = self._make_plan(args, kwargs, graph, jitted)
        # Read by _traced when this call traces; left in place afterwards (the
        # graph holds the same objects) because resetting costs per-call time.
        self._current = graph
        try:
            out, updates = jitted(list(map(_stored_value, graph.variables)), dyn_args, dyn_kwargs)
        except jax.errors.UnexpectedTracerError as e:
            if not _dy2static_runtime.compiled_loop_locations:
                raise
            raise _dy2static.Dy2StaticError(_ESCAPED_FROM_LOOP.format(
                locations="\n".join(_dy2static_runtime.compiled_loop_locations))) from e
        if updates:
            graph.write(updates)
        return out

    def _make_plan(self, args, kwargs, graph: Graph, jitted: Callable) -> _CallPlan | None:
        """A call plan for the fast path (see `_CallPlan`). Calls with keyword
        arguments, static arguments or containers always take the full path."""
        arg_types = tuple(map(type, args))
        if kwargs or self._static_pos or any(_KINDS.get(t) is _CONTAINER for t in arg_types):
            return None
        nodes = {i: a for i, a in enumerate(args) if _KINDS.get(type(a)) is _NODE}
        scalars = {i: a for i, a in enumerate(args) if _KINDS.get(type(a)) is _SCALAR}
        free = [(holder, name, holder[name] if name is not None else holder.cell_contents)
                for holder, name in self._free_refs]
        dynamic = tuple(i for i in range(len(args)) if i not in nodes and i not in scalars)
        return _CallPlan(holds=_plan_check(arg_types, nodes, scalars, free, graph), pick=_picker(dynamic),
                         graph=graph, jitted=jitted)

    def lower(self, *args, **kwargs):
        """`jax.stages.Lowered` for these inputs (StableHLO via `.as_text()`)."""
        graph, static, dyn_args, dyn_kwargs = self._prepare(args, kwargs)
        self._current = graph
        return self._jitted(static).lower(graph.values(), dyn_args, dyn_kwargs)

    def last_input_spec(self) -> list[InputSpec] | None:
        """InputSpecs of the array arguments of the most recent call (None before any call).

        Layers/optimizers are skipped; the specs stop at the first argument that is
        not an array (Python values are constants of the program).
        """
        if self._last_args is None:
            return None
        specs = []
        for a in self._last_args:
            if is_graph_node(a):
                continue
            if not hasattr(a, "shape") or not hasattr(a, "dtype"):
                break
            specs.append(InputSpec(list(a.shape), str(a.dtype)))
        return specs

    def cache_size(self) -> int:
        """How many times the function was traced: one per input signature and trace context
        (`pdx.amp.auto_cast`, `pdx.parallel.use_mesh`, `pdx.kernels.use_impl`, ...)."""
        return sum(jitted._cache_size() for jitted in self._compiled.values())

    def _run(self, graph, values, args, kwargs):
        code = self._static_code()
        try:
            with _dy2static_runtime.tracing_graph(graph):
                return run_with_values(graph, values, code, *args, **kwargs)
        except (_dy2static.Dy2StaticError, nnx_errors.TraceContextError):
            raise
        except Exception as first:  # noqa: BLE001 - re-raised below unless the original runs
            if code is self.dygraph_function or self._full_graph:
                raise
            # Conversion must never break code that runs as written: try the
            # unconverted function before reporting the converted one's error.
            try:
                return run_with_values(graph, values, self.dygraph_function, *args, **kwargs)
            except Exception:  # noqa: BLE001
                raise first from None

    def _static_code(self) -> Callable:
        """The function with Python control flow converted (once per StaticFunction)."""
        if self._converted is None:
            fn = self.dygraph_function
            converted = _dy2static.converted_call(fn)
            # pdx/JAX functions come back wrapped for their function arguments; the
            # entry point itself gets its arguments from pdx.jit, so use it as is.
            library = isinstance(converted, functools.partial) and converted.args and converted.args[0] is fn
            self._converted = fn if library else converted
        return self._converted

    # -- the traced body ----------------------------------------------------------------
    def _traced(self, static, values, dyn_args, dyn_kwargs):
        _, layout, kw_layout = static
        graph = self._current
        objs = graph.objs
        if layout is None:
            args = list(dyn_args)
        else:
            dynamic = iter(dyn_args)
            args = [next(dynamic) if slot is None else objs[slot[1]] if slot[0] == "g" else slot[1]
                    for slot in layout]
        kwargs = dict(dyn_kwargs)
        for k, kind, v, *_ in kw_layout:
            kwargs[k] = objs[v] if kind == "g" else v

        del _dy2static_runtime.traced_while_locations[:]
        del _dy2static_runtime.compiled_loop_locations[:]
        try:
            with _dy2static.use_full_graph(self._full_graph):
                out, new_values = self._run(graph, values, args, kwargs)
        except nnx_errors.TraceContextError as e:
            raise RuntimeError(_UNTHREADED_STATE.format(fn=self.__name__, cause=e)) from e
        except ValueError as e:
            if "Reverse-mode differentiation does not work for lax.while_loop" not in str(e):
                raise
            raise _dy2static.Dy2StaticError(_WHILE_GRAD.format(
                locations="\n".join(_dy2static_runtime.traced_while_locations) or "  (none recorded)")) from None
        if self._donate_state:
            updates = dict(enumerate(new_values))
        else:
            updates = {i: new for i, (new, old) in enumerate(zip(new_values, values))
                       if not same_leaves(new, old)}
        return out, updates


def to_static(function=None, input_spec=None, build_strategy=None, backend=None,
              full_graph: bool = False, *, static_argnames: Sequence[str] = (),
              donate_state: bool = False):
    """Compile a function, method or Layer with XLA (Paddle's `paddle.jit.to_static`).

    Usable as `@pdx.jit`, `@pdx.jit(...)`, `@pdx.jit.to_static` or
    `pdx.jit(layer)` (compiles the layer's forward in place and returns the layer).

    Args:
      function: the function, bound method or Layer.
      input_spec: optional list of `pdx.static.InputSpec`; inputs are checked
        against it (rank, static dims, dtype) with a clear error.
      build_strategy: accepted for Paddle compatibility; XLA decides fusion.
      backend: an XLA backend name ('cpu', 'gpu', 'tpu'); default: JAX's default.
      full_graph: with True, a function (or a helper it calls) whose control flow
        cannot be converted raises an error naming the construct and line; with
        False (default) such a function runs unconverted inside the trace.
      static_argnames: arguments that are Python values baked into the trace
        (one compilation per distinct value).
      donate_state: let XLA reuse the buffers of threaded parameters and
        optimizer state for their new values (saves memory in training steps;
        old arrays read before the call become invalid).

    Returns:
      A `StaticFunction` (or the Layer, for a Layer).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> net = pdx.nn.Linear(3, 2)
      >>> @pdx.jit
      ... def f(x):
      ...     return pdx.nn.functional.relu(net(x))
      >>> f(jnp.ones((4, 3))).shape
      (4, 2)
    """
    options = dict(input_spec=input_spec, static_argnames=static_argnames,
                   donate_state=donate_state, full_graph=full_graph, backend=backend)
    if function is None:
        return lambda fn: to_static(fn, **{k: v for k, v in options.items() if k != "backend"},
                                    backend=backend)
    if isinstance(function, StaticFunction):
        return function
    if isinstance(function, Layer):
        static_layers[function] = StaticFunction(type(function).forward, **options)
        return function
    return StaticFunction(function, **options)
