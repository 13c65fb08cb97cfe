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

This module holds expressions and `if`; loops are in `_loops` (a base class
of `FunctionRuntime`), the value plumbing in `_values`, the per-trace state in
`_context`.
"""

from __future__ import annotations

import builtins
import linecache

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from pdx import _nnx
from pdx._graph import run_with_values, same_leaves
# The trace state StaticFunction sets and reads is re-exported from here.
from pdx.jit._dy2static._context import (Dy2StaticError, _local, compiled_loop_locations, max_iterations,
                                         traced_while_locations, tracing_graph)
from pdx.jit._dy2static._loops import LoopRuntime
from pdx.jit._dy2static._values import (_RETVAL, Undefined, UndefinedReturn, _copy_list, _describe,
                                        _join, _scalar_diff, _split, _traced, _TracedRange, _value_str)

__all__ = ["Dy2StaticError", "FunctionRuntime", "Undefined", "UndefinedReturn", "compiled_loop_locations",
           "max_iterations", "traced_while_locations", "tracing_graph"]


class FunctionRuntime(LoopRuntime):
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
                    _nnx.store_value(graph.variables[i], value)
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
