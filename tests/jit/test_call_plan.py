"""pdx.jit's per-call fast path reuses a resolved call only while it still holds.

A compiled function remembers how its last positional call resolved (which
arguments are Layers, which are Python values baked into the trace, which
objects it reaches by name) and skips that work while nothing changed. Each
case here changes one of those things between calls and checks the result
against the same code run eagerly (numpy or the uncompiled function), and
that an unchanged call neither retraces nor resolves again.
"""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import nn

_MODEL_A = None  # a module global the function below reaches by name


def _scaled_by_global(x):
    return _MODEL_A(x) * 2.0


def _linear_np(layer, x):
    return np.asarray(x) @ np.asarray(layer.weight) + np.asarray(layer.bias)


def test_argument_kinds_change_between_calls():
    pdx.seed(0)
    fc = nn.Linear(3, 2)
    traces = []

    @pdx.jit
    def f(a, b, scale):
        traces.append(1)
        layer, x = (a, b) if isinstance(a, nn.Layer) else (b, a)
        return layer(x) * scale

    x = jnp.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(fc, x, 2), 2 * _linear_np(fc, x), rtol=1e-6)
    np.testing.assert_allclose(f(fc, x + 1, 2), 2 * _linear_np(fc, x + 1), rtol=1e-6)
    assert len(traces) == 1                                   # same plan: new array, no retrace
    np.testing.assert_allclose(f(fc, x, 3), 3 * _linear_np(fc, x), rtol=1e-6)  # scalar value baked in
    np.testing.assert_allclose(f(fc, x, 3.0), 3 * _linear_np(fc, x), rtol=1e-6)  # 3 == 3.0, another type
    assert len(traces) == 3
    np.testing.assert_allclose(f(x, fc, 2), 2 * _linear_np(fc, x), rtol=1e-6)  # Layer moved position
    other = nn.Linear(3, 2)
    np.testing.assert_allclose(f(other, x, 2), 2 * _linear_np(other, x), rtol=1e-6)  # another Layer object
    with pytest.raises(TypeError, match="inside a list"):   # an array argument becomes a container
        f(fc, [fc], 2)
    np.testing.assert_allclose(f(fc, x, 2), 2 * _linear_np(fc, x), rtol=1e-6)


def test_dynamic_arguments_around_layers_keep_their_order():
    pdx.seed(1)
    fc = nn.Linear(2, 2)

    @pdx.jit
    def f(x, layer, y, flag, z):
        out = layer(x) - y * z
        return -out if flag else out

    x, y, z = jnp.ones((1, 2)), jnp.full((1, 2), 2.0), jnp.full((1, 2), 5.0)
    expected = _linear_np(fc, x) - 10.0
    for _ in range(2):                                        # the second call takes the fast path
        np.testing.assert_allclose(f(x, fc, y, False, z), expected, rtol=1e-6)
        np.testing.assert_allclose(f(x, fc, y, True, z), -expected, rtol=1e-6)


def test_rebound_closure_and_global_are_seen():
    global _MODEL_A
    pdx.seed(2)
    first, second = nn.Linear(2, 2), nn.Linear(2, 2)
    x = jnp.ones((1, 2))

    _MODEL_A = first
    f = pdx.jit(_scaled_by_global)
    np.testing.assert_allclose(f(x), 2 * _linear_np(first, x), rtol=1e-6)
    _MODEL_A = second                                         # the global now names another Layer
    np.testing.assert_allclose(f(x), 2 * _linear_np(second, x), rtol=1e-6)

    model = first

    @pdx.jit
    def g(x):
        return model(x)

    np.testing.assert_allclose(g(x), _linear_np(first, x), rtol=1e-6)
    model = second                                            # the closure cell is rebound
    np.testing.assert_allclose(g(x), _linear_np(second, x), rtol=1e-6)


def test_unchanged_calls_do_not_resolve_again(monkeypatch):
    pdx.seed(3)
    fc = nn.Linear(2, 2)
    f = pdx.jit(lambda layer, x: layer(x))
    x = jnp.ones((1, 2))
    f(fc, x)
    resolved = []
    original = type(f)._prepare
    monkeypatch.setattr(type(f), "_prepare", lambda self, *a: resolved.append(1) or original(self, *a))
    for _ in range(3):
        f(fc, x)
    assert resolved == []
    fc.extra = nn.Linear(2, 2)                                # a structure change
    f(fc, x)
    assert resolved == [1]
    f(fc, x)
    assert resolved == [1]


def test_compiled_layouts_are_bounded(monkeypatch):
    from pdx.jit import _static_function

    monkeypatch.setattr(_static_function, "_MAX_LAYOUTS", 2)
    traces = []

    @pdx.jit
    def scale(x, factor):
        traces.append(factor)
        return x * factor

    x = jnp.arange(3.0)
    for factor in (1.5, 2.5, 3.5):                            # each value is a compile-time constant
        np.testing.assert_allclose(scale(x, factor), np.arange(3.0) * factor)
    assert scale.cache_size() == 2                            # the oldest layout (1.5) was dropped
    np.testing.assert_allclose(scale(x, 3.5), np.arange(3.0) * 3.5)
    assert traces == [1.5, 2.5, 3.5]                          # a kept layout does not retrace
    np.testing.assert_allclose(scale(x, 1.5), np.arange(3.0) * 1.5)
    assert traces == [1.5, 2.5, 3.5, 1.5]
