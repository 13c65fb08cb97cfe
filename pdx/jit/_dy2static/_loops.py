"""Converted `while` / `for`: Python loops for Python conditions, `lax.while_loop`
or `lax.scan` when the condition or the iterable is traced.

The loop carry is the tuple of loop variables; lists appended in the body are
collected as scan outputs; a variable whose type changes in the body gets one
retry with weakly typed initial values promoted (`s = 0` then `s = s + x`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from flax import errors as nnx_errors

from pdx.jit._dy2static._context import _current_max, compiled_loop_locations, traced_while_locations
from pdx.jit._dy2static._values import (_PY_SCALARS, Undefined, UndefinedReturn, _AppendOnly, _describe,
                                        _is_array, _join, _split, _Static, _traced, _TracedRange,
                                        _value_str)

__all__ = ["LoopRuntime"]


class LoopRuntime:
    """The loop half of `FunctionRuntime`, which supplies `error`, `where`,
    `and_`, `_pred` and `_cond` (a traced `break`/`return` guards the rest of
    the body with a converted `if`)."""

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
