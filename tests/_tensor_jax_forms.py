"""JAX's own call forms for every jax.Array method pdx extends, run with and without pdx.

tests/test_tensor_methods.py runs `python tests/_tensor_jax_forms.py OUT` in a subprocess
that never imports pdx, runs `run_forms()` in-process with pdx imported, and requires
identical results (values, dtypes, shapes, and the exception type where JAX raises), eager
and under jax.jit. The forms follow JAX's documentation of each jax.Array method
(positional and keyword variants).
"""

from __future__ import annotations

import pickle
import sys

import jax
import jax.numpy as jnp
import numpy as np

# name -> list of (input, args, kwargs). Inputs: "f" float (2, 3, 4), "m" float (2, 3),
# "b" bool (2, 3), "s" float (1, 3, 1), "v" float (6,).
FORMS: dict[str, list[tuple[str, tuple, dict]]] = {
    "sum": [("f", (), {}), ("f", (1,), {}), ("f", ((0, 2),), {}), ("f", (1, jnp.float32), {}),
            ("f", (), {"axis": 1, "keepdims": True}), ("f", (1, None, None, True), {}),
            ("f", (), {"axis": [0, 1]}), ("f", (), {"where": None, "initial": 1.0}),
            ("m", (), {"promote_integers": False})],
    "mean": [("f", (), {}), ("f", (1,), {}), ("f", (1, jnp.float32), {}),
             ("f", (), {"axis": (0, 1), "keepdims": True}), ("f", (0, None, None, True), {})],
    "prod": [("m", (), {}), ("m", (1,), {}), ("m", (0, None, None, True), {}),
             ("m", (), {"axis": 1, "keepdims": True, "initial": 2.0})],
    "max": [("f", (), {}), ("f", (1,), {}), ("f", (1, None, True), {}),
            ("f", (), {"axis": 2, "keepdims": True}), ("f", (), {"axis": 0, "initial": 0.5})],
    "min": [("f", (), {}), ("f", (2,), {}), ("f", (1, None, True), {}),
            ("f", (), {"axis": (0, 2), "keepdims": True})],
    "all": [("b", (), {}), ("b", (1,), {}), ("b", (0, None, True), {}), ("b", (), {"axis": 1, "keepdims": True})],
    "any": [("b", (), {}), ("b", (1,), {}), ("b", (0, None, True), {}), ("b", (), {"axis": 1, "keepdims": True})],
    "argmax": [("f", (), {}), ("f", (1,), {}), ("f", (1, None, True), {}), ("f", (), {"axis": 2, "keepdims": True})],
    "argmin": [("f", (), {}), ("f", (1,), {}), ("f", (1, None, True), {}), ("f", (), {"axis": 0, "keepdims": True})],
    "std": [("f", (), {}), ("f", (1,), {}), ("f", (1, None, None, 1), {}), ("f", (), {"axis": 1, "ddof": 1}),
            ("f", (), {"axis": 0, "keepdims": True}), ("f", (), {"correction": 1})],
    "var": [("f", (), {}), ("f", (2,), {}), ("f", (1, None, None, 1, True), {}), ("f", (), {"axis": 1, "ddof": 1}),
            ("f", (), {"correction": 0.5})],
    "cumsum": [("f", (), {}), ("f", (1,), {}), ("f", (1, jnp.float32), {}), ("f", (), {"axis": 2})],
    "cumprod": [("m", (), {}), ("m", (1,), {}), ("m", (), {"axis": 0, "dtype": jnp.float32})],
    "clip": [("m", (0.2, 0.7), {}), ("m", (), {"min": 0.3}), ("m", (), {"max": 0.6}), ("m", (None, 0.5), {})],
    "transpose": [("f", (), {}), ("f", (2, 0, 1), {}), ("f", ((1, 0, 2),), {}), ("f", ([2, 1, 0],), {})],
    "flatten": [("f", (), {}), ("f", ("C",), {}), ("f", ("F",), {}), ("f", (), {"order": "F"})],
    "reshape": [("f", (6, 4), {}), ("f", ((4, 6),), {}), ("f", ([2, -1],), {}), ("f", (-1,), {}),
                ("f", ((3, 8),), {"order": "F"}), ("m", ([3, 2],), {})],
    "squeeze": [("s", (), {}), ("s", (0,), {}), ("s", ((0, 2),), {}), ("s", (), {"axis": 2}), ("f", (), {})],
    "argsort": [("f", (), {}), ("f", (1,), {}), ("f", (), {"axis": 0, "descending": True}),
                ("f", (), {"axis": None}), ("f", (), {"stable": False})],
    "sort": [("f", (), {}), ("f", (0,), {}), ("f", (), {"axis": 1, "descending": True}), ("f", (), {"axis": None})],
    "take": [("f", (jnp.array([0, 5, 23]),), {}), ("f", (jnp.array([1, 0]), 1), {}),
             ("f", (jnp.array([0, 7]),), {"axis": 0, "mode": "clip"}), ("f", (jnp.array([0, 30]),), {"mode": "fill"}),
             ("f", (jnp.array([-1, 2]),), {"axis": 2, "mode": "wrap"}), ("f", (jnp.array([0, 3]), None, None, "clip"), {})],
    "nonzero": [("b", (), {}), ("b", (), {"size": 4}), ("b", (), {"size": 8, "fill_value": -1})],
    "view": [("f", (), {}), ("f", (jnp.int32,), {}), ("f", (), {"dtype": jnp.uint8}), ("f", (jnp.float32,), {})],
    "swapaxes": [("f", (0, 1), {}), ("f", (2, 0), {}), ("f", (-1, -2), {})],
}

# Forms that need concrete values (JAX raises under jit the same way with and without pdx:
# the exception type is compared there too).


def make_inputs() -> dict[str, jax.Array]:
    rng = np.random.default_rng(0)
    f = rng.random((2, 3, 4), dtype=np.float32) + 0.1
    return {
        "f": jnp.asarray(f),
        "m": jnp.asarray(f[:, :, 0]),
        "b": jnp.asarray(f[:, :, 0] > 0.5),
        "s": jnp.asarray(f[:1, :, :1]),
        "v": jnp.asarray(f.reshape(-1)[:6]),
    }


def _to_numpy(out):
    if isinstance(out, (tuple, list)):
        return type(out).__name__, [_to_numpy(o) for o in out]
    arr = np.asarray(out)
    return "array", (str(arr.dtype), arr.shape, arr.tobytes())  # bitwise: NaN equals NaN


def _call(x, name, args, kwargs):
    try:
        return _to_numpy(getattr(x, name)(*args, **kwargs))
    except Exception as e:  # the exception type is part of the behaviour compared
        return "error", type(e).__name__


def _jit_group(x, name, forms):
    """All forms of one name in one jitted function (one compile); None if any raises."""
    arrays = [a for _, args, _ in forms for a in args if isinstance(a, jax.Array)]

    def f(x, *arrays):
        it = iter(arrays)
        outs = []
        for _, args, kwargs in forms:
            full = [next(it) if isinstance(a, jax.Array) else a for a in args]
            outs.append(getattr(x, name)(*full, **kwargs))
        return outs
    try:
        return [_to_numpy(o) for o in jax.jit(f)(x, *arrays)]
    except Exception:
        return None


def run_forms() -> dict[tuple[str, int, str], object]:
    """(name, form index, 'eager' | 'jit') -> result, for every form in FORMS."""
    inputs = make_inputs()
    results = {}
    for name, forms in FORMS.items():
        for i, (inp, args, kwargs) in enumerate(forms):
            results[(name, i, "eager")] = _call(inputs[inp], name, args, kwargs)
        by_input: dict[str, list[int]] = {}
        for i, (inp, _, _) in enumerate(forms):
            by_input.setdefault(inp, []).append(i)
        for inp, idx in by_input.items():
            group = _jit_group(inputs[inp], name, [forms[i] for i in idx])
            for j, i in enumerate(idx):
                results[(name, i, "jit")] = (group[j] if group is not None
                                             else _call(inputs[inp], name, *forms[i][1:]) and
                                             _jit_one(inputs[inp], name, *forms[i][1:]))
    return results


def _jit_one(x, name, args, kwargs):
    try:
        group = _jit_group(x, name, [("", args, kwargs)])
        if group is None:
            jax.jit(lambda x: getattr(x, name)(*args, **kwargs))(x)
        return group[0]
    except Exception as e:  # the exception type is part of the behaviour compared
        return "error", type(e).__name__


if __name__ == "__main__":
    assert "pdx" not in sys.modules
    with open(sys.argv[1], "wb") as fh:
        pickle.dump(run_forms(), fh)
