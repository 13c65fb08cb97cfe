"""Differential-test helpers for pdx.ops: run the same call through pdx and paddle, compare.

A case is written once as `fn(lib, *tensors)` where `lib` is either the pdx or
the paddle module, because pdx mirrors Paddle's names and arguments.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import pdx


def to_numpy(value) -> np.ndarray:
    """A pdx/JAX array, numpy array, number or paddle Tensor -> numpy."""
    if isinstance(value, (jax.Array, np.ndarray, np.generic, int, float, bool)):
        return np.asarray(value)
    return np.asarray(value.numpy())


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def assert_matches(ours, theirs, rtol=1e-5, atol=1e-5, check_dtype=True):
    """Compare pdx output(s) with paddle's: shapes, canonical dtypes and values.

    Paddle's int64/float64 results are compared against pdx's int32/float32
    (the documented narrowing without x64); integers and bools must be equal.
    """
    if isinstance(ours, (list, tuple)):
        theirs = _as_list(theirs)
        assert len(ours) == len(theirs), f"{len(ours)} outputs vs paddle's {len(theirs)}"
        for a, b in zip(ours, theirs):
            assert_matches(a, b, rtol, atol, check_dtype)
        return
    a, b = np.asarray(ours), to_numpy(theirs)
    assert a.shape == b.shape, f"shape {a.shape} vs paddle {b.shape}"
    if check_dtype:
        expected = jax.dtypes.canonicalize_dtype(b.dtype)
        assert a.dtype == expected, f"dtype {a.dtype} vs paddle {b.dtype} (canonical {expected})"
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.inexact):
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b.astype(a.dtype), rtol=rtol, atol=atol, equal_nan=True)


def run_both(paddle, fn, arrays, pd_fn=None, rtol=1e-5, atol=1e-5, check_dtype=True):
    """Call `fn(pdx, ...)` and `(pd_fn or fn)(paddle, ...)` on the same numpy inputs and compare."""
    ours = fn(pdx, *[jnp.asarray(a) for a in arrays])
    theirs = (pd_fn or fn)(paddle, *[paddle.to_tensor(a) for a in arrays])
    assert_matches(ours, theirs, rtol, atol, check_dtype)
    return ours


def grads_match(paddle, fn, arrays, wrt, rng, pd_fn=None, rtol=1e-4, atol=1e-5):
    """Compare d/d(inputs in `wrt`) of sum(outputs * random cotangents) with paddle's backward()."""
    wrt = tuple(wrt)
    jarrs = [jnp.asarray(a) for a in arrays]
    cots = [rng.standard_normal(np.shape(o)).astype(np.float32) for o in _as_list(fn(pdx, *jarrs))]

    def loss(*ws):
        args = list(jarrs)
        for i, w in zip(wrt, ws):
            args[i] = w
        return sum(jnp.sum(o * c) for o, c in zip(_as_list(fn(pdx, *args)), cots))

    # One compiled program per case is several times faster than eager op-by-op autodiff,
    # and it also checks that the op traces under jit.
    ours = jax.jit(jax.grad(loss, argnums=tuple(range(len(wrt)))))(*[jarrs[i] for i in wrt])
    tensors = [paddle.to_tensor(a, stop_gradient=i not in wrt) for i, a in enumerate(arrays)]
    outs = _as_list((pd_fn or fn)(paddle, *tensors))
    total = sum((o * paddle.to_tensor(c)).sum() for o, c in zip(outs, cots))
    total.backward()
    for g, i in zip(ours, wrt):
        assert tensors[i].grad is not None, f"paddle produced no gradient for input {i}"
        np.testing.assert_allclose(np.asarray(g), tensors[i].grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")


def traces_like_eager(cases, rng, skip=()):
    """Trace every `(id, fn, input_makers, ...)` case abstractly (`jax.eval_shape`, as jit does,
    without compiling) and check the traced output shapes/dtypes equal the eager results.

    This catches Python control flow on traced values and host syncs, the usual ways an op
    breaks under jit, for every case at the cost of tracing only.
    """
    for case in cases:
        if case[0] in skip:
            continue
        fn, arrays = case[1], [jnp.asarray(make(rng)) for make in case[2]]
        eager = _as_list(fn(pdx, *arrays))
        traced = _as_list(jax.eval_shape(lambda *a, fn=fn: fn(pdx, *a), *arrays))
        assert [(t.shape, t.dtype) for t in traced] == [(e.shape, e.dtype) for e in eager], case[0]
