"""What converted code calls: Python semantics for Python values, XLA control
flow for traced ones.

Each converted function gets a `FunctionRuntime` (the `_pdx_rt` name in the
generated code) that knows the function's file and the line of every converted
construct, so errors point at the user's source. All of this runs only while
pdx.jit traces; compiled calls never come here.

State flows through branches and loops as tuples of variable values, in the
order of the names the transform passed. Values are split into array leaves
(carried by `lax.cond` / `lax.while_loop` / `lax.scan`) and static leaves
(Python objects that must be the same on every path).
"""

from __future__ import annotations

import builtins
import contextlib
import linecache
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from flax import errors as nnx_errors

from pdx._graph import _set_raw, run_with_values, same_leaves

__all__ = ["Dy2StaticError", "FunctionRuntime", "Undefined", "UndefinedReturn", "max_iterations"]

_ARRAY_TYPES = (jax.Array, np.ndarray, np.generic)
_PY_SCALARS = (bool, int, float, complex)
_RETVAL = "_pdx_retval"
_local = threading.local()

# Locations of traced-trip-count loops built by the current trace, for the
# reverse-mode error that JAX raises later while differentiating them.
traced_while_locations: list[str] = []
# Every converted loop compiled in the current trace (to name it when a value escapes one).
compiled_loop_locations: list[str] = []


class Dy2StaticError(TypeError):
    """Converted control flow that cannot compile as written (the message
    points at the user's line and says what to change)."""


class Undefined:
    """Value of a local that has no value yet on this path."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"<pdx.jit: {self.name!r} is not defined on this path>"

    def _fail(self, *args, **kwargs):
        raise NameError(f"local variable {self.name!r} is used before it is assigned on this path")

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __add__ = __radd__ = __mul__ = _fail
    __rmul__ = __sub__ = __rsub__ = __truediv__ = __matmul__ = __neg__ = __lt__ = __gt__ = _fail

    def __getattr__(self, item):
        self._fail()


class UndefinedReturn(Undefined):
    """The return value before any `return` ran."""

    def __init__(self):
        super().__init__(_RETVAL)


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
    stack = _local.__dict__.setdefault("max_iterations", [])
    stack.append(n)
    try:
        yield n
    finally:
        stack.pop()


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
    stack = getattr(_local, "max_iterations", None)
    return stack[-1] if stack else None


def _traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _aval_str(x) -> str:
    if isinstance(x, Undefined):
        return "undefined"
    if isinstance(x, _ARRAY_TYPES) or _traced(x):
        return f"{jnp.dtype(x.dtype).name}{list(x.shape)}"
    if isinstance(x, _PY_SCALARS):
        return f"Python {type(x).__name__} {x!r}"
    return f"{type(x).__name__}"


def _value_str(v) -> str:
    if isinstance(v, Undefined):
        return "undefined"
    leaves, treedef = jax.tree.flatten(v)
    if treedef.num_leaves == 1 and treedef.num_nodes == 1:
        return _aval_str(v)
    return f"{type(v).__name__} of [{', '.join(_aval_str(x) for x in leaves)}]"


def _describe(name: str) -> str:
    if name == _RETVAL:
        return "the return value"
    if name.startswith("_pdx_"):
        return "a loop/return flag"
    return f"variable {name!r}"


class FunctionRuntime:
    """The runtime seen by one converted function (`_pdx_rt`)."""

    def __init__(self, filename: str, qualname: str, lines: list[int], call):
        self.filename = filename
        self.qualname = qualname
        self.lines = lines
        self.call = call
        self.Undefined = Undefined
        self.UndefinedReturn = UndefinedReturn

    # -- errors --------------------------------------------------------------------
    def where(self, loc: int) -> str:
        line = self.lines[loc]
        src = linecache.getline(self.filename, line).strip()
        return f'  File "{self.filename}", line {line}, in {self.qualname}\n    {src}'

    def error(self, loc: int, what: str, fix: str) -> Dy2StaticError:
        return Dy2StaticError(f"pdx.jit: {what}\n{self.where(loc)}\n{fix}")

    # -- expressions ---------------------------------------------------------------
    # `a and b` / `a or b`: Python's rules while the left value is a Python value;
    # a traced left value meets a Python right value the way Paddle's converter
    # does (`b and a` / `b or a`, so `mask and None` is None); two traced values
    # give the elementwise logical op.
    @staticmethod
    def and_(*thunks):
        value = thunks[0]()
        for thunk in thunks[1:]:
            if not _traced(value):
                if not value:
                    return value
                value = thunk()
                continue
            right = thunk()
            if _traced(right):
                value = jnp.logical_and(value, right)
            elif not right:
                return right
        return value

    @staticmethod
    def or_(*thunks):
        value = thunks[0]()
        for thunk in thunks[1:]:
            if not _traced(value):
                if value:
                    return value
                value = thunk()
                continue
            right = thunk()
            if _traced(right):
                value = jnp.logical_or(value, right)
            elif right:
                return right
        return value

    @staticmethod
    def not_(x):
        return jnp.logical_not(x) if _traced(x) else not x

    def ifexp(self, pred, true_thunk, false_thunk, loc):
        if not _traced(pred):
            return true_thunk() if pred else false_thunk()
        pred = self._pred(pred, loc, "condition of this `... if ... else ...`")
        (out,) = self._cond(pred, lambda: (true_thunk(),), lambda: (false_thunk(),), ("value",), loc,
                            construct="`... if ... else ...`")
        return out

    def range_(self, *args):
        if any(_traced(a) for a in args):
            return _TracedRange(*args)
        return range(*args)

    @staticmethod
    def print_(*args, sep=" ", end="\n", file=None, flush=False):
        if file is None and any(_traced(a) for a in jax.tree.leaves(args)):
            fmt = sep.join("{}" for _ in args) + ("" if end == "\n" else end)
            jax.debug.print(fmt, *args)
            return
        builtins.print(*args, sep=sep, end=end, file=file, flush=flush)

    def assert_(self, test, msg_thunk, loc):
        if not _traced(test):
            if not test:
                raise AssertionError(msg_thunk()) if msg_thunk is not None else AssertionError()
            return
        message = str(msg_thunk()) if msg_thunk is not None else "assertion failed"
        where = self.where(loc)

        def check(ok):
            if not np.all(ok):
                raise AssertionError(f"{message}\n{where}")

        jax.debug.callback(check, test)

    def ret(self, value, done, loc):
        if _traced(done):
            raise self.error(loc, "the function returns a value on some paths and reaches its end "
                             "(returning None) on others, depending on a traced condition.",
                             "Add a `return` at the end of the function so every path returns the "
                             "same kind of value.")
        return None if isinstance(value, Undefined) else value

    # -- if ------------------------------------------------------------------------
    def if_stmt(self, pred, true_fn, false_fn, args, out_names, param_names, loc, mutated=()):
        if not _traced(pred):
            return true_fn(*args) if pred else false_fn(*args)
        pred = self._pred(pred, loc, "condition of this `if`")
        foreign = [n for n in mutated if n not in param_names]
        if foreign:
            raise self.error(loc, f"list {foreign[0]!r} belongs to an enclosing function and is changed "
                             "(.append/.extend/...) inside an `if` whose condition is a traced value.",
                             "Build the list in this function and return it, or append unconditionally "
                             "and select values with pdx.where(condition, a, b).")
        if mutated:
            # Each branch appends to its own copy; the merged list replaces the variable.
            lists = [i for i, (n, v) in enumerate(zip(param_names, args)) if n in mutated and isinstance(v, list)]

            def fresh():
                out = list(args)
                for i in lists:
                    out[i] = _copy_list(args[i])
                return out
            return self._cond(pred, lambda: true_fn(*fresh()), lambda: false_fn(*fresh()), out_names, loc)
        return self._cond(pred, lambda: true_fn(*args), lambda: false_fn(*args), out_names, loc)

    def _pred(self, pred, loc, what):
        if pred.shape != ():
            if pred.size != 1:
                raise self.error(loc, f"the {what} is a tensor of shape {tuple(pred.shape)}; its "
                                 "truth value is ambiguous.",
                                 "Reduce it to one value, e.g. `(x > 0).all()` or `(x > 0).any()`.")
            pred = pred.reshape(())
        if pred.dtype != jnp.bool_:
            pred = pred != 0
        return pred

    def _cond(self, pred, true_thunk, false_thunk, names, loc, fillable=frozenset(),
              construct="`if`"):
        """lax.cond over two thunks returning values for `names`; Python
        scalars equal on both paths stay Python values (flags, constants)."""
        dynamic: dict[int, list] = {}  # positions of scalars that must become arrays
        fill: dict[int, object] = {}  # undefined positions to fill with zeros of the other side
        graph = getattr(_local, "graph", None)
        threaded: list[int] = []  # Layer/optimizer Variables a branch changes (BatchNorm stats, ...)
        for _ in range(5):
            records: list = [None, None]
            changed: set[int] = set()

            def branch(k, thunk):
                def run():
                    if graph is not None:
                        base = graph.values()
                        values, new = run_with_values(graph, base, thunk)
                        changed.update(i for i, (a, b) in enumerate(zip(new, base)) if not same_leaves(a, b))
                    else:
                        values = thunk()
                    values = list(values)
                    for i, proto in fill.items():
                        if isinstance(values[i], Undefined):
                            values[i] = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), proto)
                    leaves, specs = _split(values, dynamic)
                    records[k] = (values, specs)
                    return leaves, [new[i] for i in threaded] if graph is not None else []
                return run

            try:
                leaves, var_values = lax.cond(pred, branch(0, true_thunk), branch(1, false_thunk))
                error = None
            except (TypeError, ValueError) as e:
                if records[0] is None or records[1] is None:
                    raise
                error = e
            if not changed <= set(threaded):
                threaded = sorted(changed | set(threaded))
                continue
            (vt, st), (vf, sf) = records
            retry = False
            for i, name in enumerate(names):
                a, b = vt[i], vf[i]
                ua, ub = isinstance(a, Undefined), isinstance(b, Undefined)
                if ua and ub:
                    continue
                if ua or ub:
                    if name == _RETVAL or name in fillable:
                        fill[i] = jax.eval_shape(lambda v=(b if ua else a): v)
                        retry = True
                        continue
                    side = "true" if ub else "false"
                    raise self.error(loc, f"{_describe(name)} is assigned only in the {side} branch of "
                                     f"this {construct} (the condition is a traced value), but it is "
                                     "used after it.",
                                     f"Assign {name!r} in both branches, or give it a value before the "
                                     f"{construct}.") from None
                if st[i] != sf[i]:
                    if _scalar_diff(st[i], sf[i]) and i not in dynamic:
                        dynamic[i] = [jnp.result_type(x, y) for x, y in
                                      zip(jax.tree.leaves(a), jax.tree.leaves(b))]
                        retry = True
                        continue
                    raise self._mismatch(loc, name, a, b, construct)
            if not retry:
                if error is not None:
                    bad = next((n for i, n in enumerate(names) if _value_str(vt[i]) != _value_str(vf[i])), None)
                    if bad is not None:
                        i = names.index(bad)
                        raise self._mismatch(loc, bad, vt[i], vf[i], construct) from None
                    raise error
                for i, value in zip(threaded, var_values):
                    _set_raw(graph.variables[i], value)
                return _join(leaves, st)
        raise self.error(loc, f"could not reconcile the branches of this {construct}.",
                         "Give every variable the same shape and dtype on both paths.")

    def _mismatch(self, loc, name, a, b, construct):
        return self.error(
            loc, f"{_describe(name)} differs between the branches of this {construct} (the condition "
            f"is a traced value):\n    true branch:  {_value_str(a)}\n    false branch: {_value_str(b)}",
            "XLA compiles both branches into one program, so each variable needs the same structure, "
            "shape and dtype on both paths: pad/reshape/cast one side (e.g. .astype(...)), or compute "
            "it outside the branch.")

    # -- loops ---------------------------------------------------------------------
    def while_stmt(self, cond_fn, body_fn, state, names, live_out, loc):
        state = tuple(state)
        while True:
            c = cond_fn(*state)
            if _traced(c):
                break
            if not c:
                return state
            state = tuple(body_fn(*state))
        return self._loop(loc, names, live_out, state, cond=lambda s: cond_fn(*s),
                          body=lambda s: tuple(body_fn(*s)), trip=None)

    def for_stmt(self, iterable, extra_fn, body_fn, state, names, live_out, loc):
        state = tuple(state)
        if isinstance(iterable, _TracedRange):
            r = iterable
            if _traced(r.step) or r.step == 0:
                raise self.error(loc, f"range step must be a nonzero Python int inside pdx.jit; got {r.step!r}.",
                                 "Use a constant step; only start/stop may be traced.")
            names2 = ("_pdx_index",) + tuple(names)
            lt = (lambda i: i < r.stop) if r.step > 0 else (lambda i: i > r.stop)

            def cond(s):
                c = lt(s[0])
                return self.and_(lambda: c, lambda: extra_fn(*s[1:])) if extra_fn else c

            def body(s):
                return (s[0] + r.step,) + tuple(body_fn(s[0], *s[1:]))

            start = jnp.asarray(r.start, dtype=jnp.result_type(r.start, r.stop))
            out = self._loop(loc, names2, live_out, (start,) + state, cond=cond, body=body, trip=None)
            return out[1:]
        if _traced(iterable) and getattr(iterable, "ndim", 0) >= 1:
            if extra_fn is not None:
                first = extra_fn(*state)
                if not _traced(first) and not first:
                    return state
            xs = iterable

            def body(s, x):
                if extra_fn is not None:
                    t = extra_fn(*s)
                    if _traced(t):
                        return self._guard(t, lambda: tuple(body_fn(x, *s)), s, names, live_out, loc)
                    if not t:
                        return s
                return tuple(body_fn(x, *s))

            return self._loop(loc, names, live_out, state, cond=None, body=body, trip=xs)
        for item in iterable:
            if extra_fn is not None:
                t = extra_fn(*state)
                if _traced(t):
                    state = self._guard(t, lambda: tuple(body_fn(item, *state)), state, names, live_out, loc)
                    continue
                if not t:
                    break
            state = tuple(body_fn(item, *state))
        return state

    def _guard(self, pred, run, state, names, live_out, loc):
        pred = self._pred(pred, loc, "loop condition")
        fillable = frozenset(n for n in names if n not in live_out)
        return tuple(self._cond(pred, run, lambda: tuple(state), names, loc, fillable=fillable,
                                construct="loop body (after a traced `break`/`return`)"))

    def _loop(self, loc, names, live_out, state, *, cond, body, trip):
        """Compile a loop whose condition or iterable is traced.

        cond/body take and return the state tuple (body also gets the scanned
        slice when `trip` is an array). Lists in the state collect appended
        values (stacked by scan); undefined variables stay out of the carry.
        """
        bound = _current_max() if trip is None else None
        compiled_loop_locations.append(self.where(loc))
        del compiled_loop_locations[:-8]
        state = list(state)
        lists = {}
        for i, (name, value) in enumerate(zip(names, state)):
            if isinstance(value, UndefinedReturn) or (isinstance(value, Undefined) and name not in live_out):
                continue
            if isinstance(value, Undefined):
                raise self.error(loc, f"{_describe(name)} is first assigned inside this loop, whose trip "
                                 "count depends on a traced value, and is used after the loop.",
                                 f"Give {name!r} a value of its final shape and dtype before the loop "
                                 f"(e.g. {name} = pdx.zeros(...)).")
            if isinstance(value, list):
                if trip is None and bound is None:
                    raise self.error(loc, f"list {name!r} is appended in a loop whose trip count depends on a "
                                     "traced value; XLA needs a static size.",
                                     "Wrap the loop in `with pdx.jit.max_iterations(N):` to preallocate N "
                                     "entries, or loop over a Python range / the rows of an array.")
                lists[i] = list(value)
        # An undefined return value gets the structure the body gives it.
        ret_pos = [i for i, v in enumerate(state) if isinstance(v, UndefinedReturn)]
        if ret_pos:
            probe = self._probe(body, state, lists, trip)
            for i in ret_pos:
                if not isinstance(probe[i], Undefined):
                    state[i] = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), probe[i])

        carried = [i for i, v in enumerate(state) if not isinstance(v, Undefined) and i not in lists]
        for i in carried:  # Python numbers in a compiled loop become (weakly typed) arrays
            state[i] = jax.tree.map(lambda x: jnp.asarray(x) if isinstance(x, _PY_SCALARS) else x, state[i])
        for _ in range(2):
            try:
                final, ys, init_specs = self._compile_loop(loc, names, state, carried, lists, cond, body,
                                                           trip, bound)
                break
            except _Promote as p:
                for i, v in zip(carried, p.values):
                    state[i] = v
            except nnx_errors.TraceContextError:
                raise self.error(loc, "a Layer/optimizer's state (e.g. BatchNorm running statistics) is "
                                 "changed inside this loop, which is compiled because its condition or "
                                 "iterable is traced; pdx.jit threads such state through converted `if`s "
                                 "but not through compiled loops.",
                                 "Move the stateful call out of the loop, put the layer in eval() mode, "
                                 "or loop over a Python range (unrolled).") from None
        else:
            raise self.error(loc, "could not find stable types for the loop variables.",
                             "Give every loop variable its final shape and dtype before the loop.")
        out = list(state)
        for i, v in zip(carried, _join(final, init_specs)):
            out[i] = v
        for (i, prefix), stacked in zip(lists.items(), ys):
            items = list(prefix)
            n = len(stacked[0]) if stacked else 0
            for t in range(n):
                items.extend(y[t] for y in stacked)
            out[i] = items
        return tuple(out)

    def _compile_loop(self, loc, names, state, carried, lists, cond, body, trip, bound):
        every = set(range(len(state)))
        init_leaves, init_specs = _split([state[i] for i in carried], every)

        def unpack(leaves):
            values = list(state)
            for i, v in zip(carried, _join(leaves, init_specs)):
                values[i] = v
            for i in lists:
                values[i] = _AppendOnly(names[i], self, loc)
            return values

        def run_body(leaves, x=None):
            values = unpack(leaves)
            out = list(body(tuple(values), x) if trip is not None else body(tuple(values)))
            ys = []
            for i in lists:
                if not isinstance(out[i], list):
                    raise self.error(loc, f"list {names[i]!r} is replaced by a {type(out[i]).__name__} "
                                     "inside this loop.",
                                     "Inside a compiled loop, lists may only grow with .append/.extend.")
                ys.append(tuple(list.__iter__(out[i])))
            new = [out[i] for i in carried]
            new_leaves, specs = _split(new, every)
            if specs != init_specs:
                self._reconcile(loc, [names[i] for i in carried], [state[i] for i in carried], new)
            return new_leaves, tuple(ys)

        if trip is not None:
            final, ys = lax.scan(lambda leaves, x: run_body(leaves, x), init_leaves, trip)
        elif bound is not None:
            ys_shape = jax.eval_shape(lambda: run_body(init_leaves)[1])

            def step(carry, _):
                done, leaves = carry
                c = cond(tuple(unpack(leaves)))
                c = self._pred(jnp.asarray(c), loc, "loop condition")
                active = jnp.logical_and(jnp.logical_not(done), c)
                new, ys = lax.cond(active, lambda: run_body(leaves),
                                   lambda: (leaves, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype),
                                                                 ys_shape)))
                return (jnp.logical_not(active), new), ys
            (_, final), ys = lax.scan(step, (jnp.asarray(False), init_leaves), None, length=bound)
        else:
            traced_while_locations.append(self.where(loc))
            del traced_while_locations[:-8]

            def cond_leaves(leaves):
                c = cond(tuple(unpack(leaves)))
                return self._pred(jnp.asarray(c), loc, "loop condition")

            final = lax.while_loop(cond_leaves, lambda leaves: run_body(leaves)[0], init_leaves)
            ys = ()
        return final, ys, init_specs

    def _reconcile(self, loc, names, before, after):
        """Raise _Promote when only weakly typed initial values need a wider
        dtype (`s = 0` then `s = s + x`); else a clear error."""
        promoted = []
        for name, a, b in zip(names, before, after):
            la, ta = jax.tree.flatten(a)
            lb, tb = jax.tree.flatten(b)
            ok = ta == tb and len(la) == len(lb)
            new = []
            for x, y in zip(la, lb) if ok else ():
                if not (_is_array(x) and _is_array(y)):
                    ok = ok and _Static(x) == _Static(y)
                    new.append(x)
                elif x.shape != y.shape:
                    ok = False
                elif x.dtype != y.dtype:
                    if not getattr(x, "weak_type", False):
                        ok = False
                    new.append(jnp.asarray(x, dtype=y.dtype))
                else:
                    new.append(x)
            if not ok:
                raise self.error(
                    loc, f"{_describe(name)} changes type inside this loop (the loop is compiled "
                    f"because its condition or iterable is traced):\n    before the loop: {_value_str(a)}\n"
                    f"    after one iteration: {_value_str(b)}",
                    f"Give {name!r} its final shape and dtype before the loop (e.g. "
                    f"{name} = pdx.zeros(shape, dtype)), and keep it that way in the loop body.") from None
            promoted.append(jax.tree.unflatten(ta, new))
        raise _Promote(promoted)

    def _probe(self, body, state, lists, trip):
        def run():
            values = list(state)
            for i in lists:
                values[i] = _AppendOnly("", self, 0)
            x = trip[0] if trip is not None else None
            out = body(tuple(values), x) if trip is not None else body(tuple(values))
            return [None if isinstance(v, (Undefined, _AppendOnly)) else v for v in out]
        shapes = jax.eval_shape(run)
        return [UndefinedReturn() if s is None else s for s in shapes]


class _Promote(Exception):
    def __init__(self, values):
        super().__init__("retry with promoted loop variables")
        self.values = values


def _copy_list(value: list) -> list:
    if isinstance(value, _AppendOnly):
        new = _AppendOnly(value._name, value._rt, value._loc)
        list.extend(new, list.__iter__(value))
        return new
    return list(value)


class _TracedRange:
    def __init__(self, *args):
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        self.start, self.stop, self.step = start, stop, step


class _AppendOnly(list):
    """The list a compiled loop body sees: it may grow, but earlier entries
    live in other iterations and cannot be read here."""

    def __init__(self, name, runtime, loc):
        super().__init__()
        self._name, self._rt, self._loc = name, runtime, loc

    def _fail(self, *args):
        raise self._rt.error(self._loc, f"list {self._name!r} is read inside a compiled loop; its entries "
                             "from other iterations are not available there.",
                             "Carry the value you need in a variable (e.g. `prev = h`) instead of "
                             "reading the list.")

    __getitem__ = __iter__ = __len__ = __contains__ = _fail


def _is_array(x) -> bool:
    return isinstance(x, _ARRAY_TYPES) or _traced(x)


def _split(values, dynamic):
    """(array leaves, hashable spec) for a list of variable values. Python
    scalars stay static unless `dynamic` names their position: a set (any
    dtype) or a dict {position: [dtype per leaf]} (cast to those dtypes)."""
    leaves, specs = [], []
    for i, v in enumerate(values):
        if isinstance(v, Undefined):
            specs.append(("undefined",))
            continue
        flat, treedef = jax.tree.flatten(v)
        dtypes = dynamic.get(i) if isinstance(dynamic, dict) else None
        kinds = []
        for k, x in enumerate(flat):
            if isinstance(x, _PY_SCALARS) and i in dynamic:
                x = jnp.asarray(x, dtype=dtypes[k] if dtypes else None)
            if _is_array(x):
                if dtypes and dtypes[k] is not None and x.dtype != dtypes[k]:
                    x = x.astype(dtypes[k])
                leaves.append(x)
                kinds.append(("array", tuple(x.shape), jnp.dtype(x.dtype).name))
            else:
                kinds.append(("static", _Static(x)))
        specs.append((treedef, tuple(kinds)))
    return leaves, specs


class _Static:
    """A static leaf compared by identity, or by value for plain Python data."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        a, b = self.value, other.value
        if a is b:
            return True
        if type(a) is not type(b):
            return False
        try:
            return bool(a == b)
        except Exception:  # noqa: BLE001 - objects without a usable ==
            return False

    def __hash__(self):
        return 0


def _scalar_diff(a, b) -> bool:
    """Both specs differ only where a Python scalar meets a scalar (an array
    of shape () or another Python scalar): those can become arrays."""
    if a[0] == "undefined" or b[0] == "undefined" or a[0] != b[0] or len(a[1]) != len(b[1]):
        return False
    for ka, kb in zip(a[1], b[1]):
        if ka == kb:
            continue
        sa = ka[0] == "static" and isinstance(ka[1].value, _PY_SCALARS)
        sb = kb[0] == "static" and isinstance(kb[1].value, _PY_SCALARS)
        aa = ka[0] == "array" and ka[1] == ()
        ab = kb[0] == "array" and kb[1] == ()
        if not ((sa or aa) and (sb or ab)) or (aa and ab):
            return False
    return True


def _join(leaves, specs):
    it = iter(leaves)
    values = []
    for spec in specs:
        if spec[0] == "undefined":
            values.append(Undefined("?"))
            continue
        treedef, kinds = spec
        flat = [next(it) if k[0] == "array" else k[1].value for k in kinds]
        values.append(jax.tree.unflatten(treedef, flat))
    return values

