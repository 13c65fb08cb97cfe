"""Values that flow through converted control flow.

`Undefined` marks a local with no value yet on a path. `_split` / `_join` turn
a list of variable values into array leaves (carried by `lax.cond` /
`lax.while_loop` / `lax.scan`) plus a hashable spec of the static leaves
(Python objects that must be equal on every path), and back.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Undefined", "UndefinedReturn"]

_ARRAY_TYPES = (jax.Array, np.ndarray, np.generic)
_PY_SCALARS = (bool, int, float, complex)
_RETVAL = "_pdx_retval"


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
