"""pdx.jit: compiled == eager, state mutations persist, no silent recompiles,
and clear errors. Reference results come from running the same code eagerly
(`enable_to_static(False)`) and from hand-written pure-JAX functions."""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import monitoring

import pdx
from pdx.nn import Layer


class Affine(Layer):
    """y = x @ w + b, counting training-mode calls in a buffer."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = self.create_parameter([n_in, n_out])
        self.bias = self.create_parameter([n_out], is_bias=True)
        self.register_buffer("calls", jnp.zeros((), jnp.int32))

    def forward(self, x):
        if self.training:
            self.calls.set_value(self.calls[...] + 1)
        return x @ self.weight[...] + self.bias[...]


@contextlib.contextmanager
def count_compiles():
    """Counts XLA backend compilations (independent of pdx's own bookkeeping)."""
    events = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(event)

    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        monitoring.unregister_event_duration_listener(listener)


@contextlib.contextmanager
def eager():
    pdx.jit.enable_to_static(False)
    try:
        yield
    finally:
        pdx.jit.enable_to_static(True)


def test_jit_matches_eager_and_pure_jax():
    pdx.seed(0)
    net = Affine(3, 2)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(4, 3)), jnp.float32)
    f = pdx.jit(lambda x: jnp.tanh(net(x)))
    expected = np.tanh(np.asarray(x) @ np.asarray(net.weight[...]) + np.asarray(net.bias[...]))
    np.testing.assert_allclose(f(x), expected, rtol=1e-6, atol=1e-6)
    with eager():
        np.testing.assert_allclose(f(x), expected, rtol=1e-6, atol=1e-6)


def test_buffer_mutation_persists_and_no_recompile():
    net = Affine(3, 2)

    @pdx.jit
    def step(model, x):
        return model(x).sum()

    x = jnp.ones((2, 3))
    step(net, x)
    with count_compiles() as compiles:
        for _ in range(3):
            step(net, x)
    assert int(net.calls[...]) == 4
    assert compiles == [], "second and later calls with the same shapes must not recompile"
    assert step.cache_size() == 1
    step(net, jnp.ones((5, 3)))  # a new shape compiles once more
    assert step.cache_size() == 2


def test_train_eval_switch_changes_trace():
    net = Affine(3, 2)
    f = pdx.jit(lambda m, x: m(x))
    x = jnp.ones((1, 3))
    f(net, x)
    net.eval()
    f(net, x)
    f(net, x)
    assert int(net.calls[...]) == 1
    net.train()
    f(net, x)
    assert int(net.calls[...]) == 2


def test_closure_and_global_layers_are_threaded():
    net = Affine(2, 2)

    def helper(x):
        return net(x)

    @pdx.jit
    def step(x):
        return helper(x) * 2.0

    step(jnp.ones((1, 2)))
    step(jnp.ones((1, 2)))
    assert int(net.calls[...]) == 2


def test_training_step_updates_parameters_like_eager():
    def make():
        pdx.seed(1)
        return Affine(3, 1)

    def train_step(model, x, y):
        loss, grads = pdx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
        for name, p in model.named_parameters():
            p.set_value(p[...] - 0.1 * grads[name])
        return loss

    x = jnp.asarray(np.random.default_rng(1).normal(size=(8, 3)), jnp.float32)
    y = x.sum(axis=1, keepdims=True)
    compiled, eager_net = make(), make()
    step = pdx.jit(train_step)
    losses_jit = [float(step(compiled, x, y)) for _ in range(5)]
    losses_eager = [float(train_step(eager_net, x, y)) for _ in range(5)]
    np.testing.assert_allclose(losses_jit, losses_eager, rtol=1e-5)
    np.testing.assert_allclose(compiled.weight[...], eager_net.weight[...], rtol=1e-5, atol=1e-6)
    assert losses_jit[-1] < losses_jit[0]


def test_decorated_method_and_jitted_layer():
    class Net(Layer):
        def __init__(self):
            super().__init__()
            self.fc = Affine(2, 2)

        @pdx.jit
        def forward(self, x):
            return self.fc(x)

    net = Net()
    x = jnp.ones((3, 2))
    np.testing.assert_allclose(net(x), x @ net.fc.weight[...] + net.fc.bias[...], rtol=1e-6)
    assert int(net.fc.calls[...]) == 1

    plain = Affine(2, 2)
    assert pdx.jit(plain) is plain
    plain(x)
    plain(x)
    assert int(plain.calls[...]) == 2


def test_to_static_is_the_same_decorator_and_eager_switch():
    seen = []

    @pdx.jit.to_static
    def f(x):
        seen.append(type(x))
        return x + 1

    f(jnp.ones(2))
    f(jnp.ones(2))
    assert len(seen) == 1  # traced once, then compiled
    with eager():
        f(jnp.ones(2))
    assert len(seen) == 2 and issubclass(seen[-1], jax.Array) and not isinstance(jnp.ones(1), jax.core.Tracer)


def test_static_argnames():
    @pdx.jit(static_argnames=("power",))
    def f(x, power):
        return x ** power

    np.testing.assert_allclose(f(jnp.full(2, 3.0), power=2), [9.0, 9.0])
    np.testing.assert_allclose(f(jnp.full(2, 3.0), 3), [27.0, 27.0])
    with pytest.raises(ValueError, match="static_argnames"):
        pdx.jit(lambda x: x, static_argnames=("nope",))


def test_input_spec_validation():
    spec = [pdx.static.InputSpec([None, 3], "float32", "image")]
    f = pdx.jit(lambda x: x * 2, input_spec=spec)
    assert f(jnp.ones((5, 3))).shape == (5, 3)
    with pytest.raises(ValueError, match="image.*shape"):
        f(jnp.ones((5, 4)))
    with pytest.raises(ValueError, match="rank"):
        f(jnp.ones(3))
    with pytest.raises(ValueError, match="dtype"):
        f(jnp.ones((2, 3), jnp.int32))


def test_random_op_without_key_under_jit_names_the_fix():
    @jax.jit
    def f(x):
        return x + jax.random.normal(pdx._random.next_key(None, op="randn"), x.shape)

    with pytest.raises(RuntimeError, match="key="):
        f(jnp.ones(2))


def test_hidden_layer_mutation_gives_pdx_error():
    holder = {"net": Affine(2, 2)}

    @pdx.jit
    def f(box, x):
        return box["net"](x)

    with pytest.raises(TypeError, match="its own argument"):
        f(holder, jnp.ones((1, 2)))

    class Hidden:
        net = Affine(2, 2)

    hidden = Hidden()
    g = pdx.jit(lambda x: hidden.net(x))
    with pytest.raises(RuntimeError, match="as an argument"):
        g(jnp.ones((1, 2)))


def test_donate_state_keeps_results():
    net = Affine(2, 2)
    step = pdx.jit(lambda m, x: m(x).sum(), donate_state=True)
    a = step(net, jnp.ones((1, 2)))
    b = step(net, jnp.ones((1, 2)))
    np.testing.assert_allclose(a, b)
    assert int(net.calls[...]) == 2
    np.testing.assert_allclose(net.weight[...].shape, (2, 2))


def test_call_plan_follows_rebound_globals_and_new_objects():
    global _REBOUND
    first, second = Affine(2, 2), Affine(2, 2)
    second.weight.set_value(first.weight[...] * 3.0)
    _REBOUND = first
    f = pdx.jit(lambda x: _REBOUND(x))
    g = pdx.jit(lambda m, x: m(x))
    x = jnp.ones((1, 2))
    np.testing.assert_allclose(f(x), first(x))
    _REBOUND = second  # same type, different object: must not reuse the old plan's state
    np.testing.assert_allclose(f(x), second(x), rtol=1e-6)
    np.testing.assert_allclose(g(first, x), first(x), rtol=1e-6)
    np.testing.assert_allclose(g(second, x), second(x), rtol=1e-6)
    np.testing.assert_allclose(g(first, x), first(x), rtol=1e-6)
    calls_before = int(second.calls[...])
    g(second, x)
    assert int(second.calls[...]) == calls_before + 1
    with pytest.raises(TypeError, match="its own argument"):
        g([first], x)  # a container argument never takes the cached fast path


_REBOUND = None
