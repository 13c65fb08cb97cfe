"""Control-flow conversion: gradients, export, max_iterations, print/assert,
get_code, not_to_static, enable_to_static, caching."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import nn
from pdx.jit import _dy2static


def branchy_loss(x):
    if x.sum() > 0:
        y = jnp.sin(x) * x
    else:
        y = jnp.cos(x) * 3
    total = 0.0
    for row in y[None]:
        total = total + (row ** 2).sum()
    return total if total > 1 else total * 10


def rnn_loss(xs):
    h = jnp.zeros(xs.shape[1:])
    outs = []
    for x_t in xs:
        h = jnp.tanh(x_t + 0.5 * h)
        outs.append(h)
    return jnp.stack(outs).sum()


def loop_until(x):
    i = 0
    while x.sum() < 10:
        x = x * 1.5
        i += 1
    return x.sum() + i


def test_grad_through_if_and_scan_equals_eager():
    for x in (jnp.asarray([0.3, -0.2, 0.9]), jnp.asarray([-0.3, -0.2, -0.9])):
        want = jax.grad(branchy_loss)(x)  # eager Python: plain `if` on concrete values
        got_inside = pdx.jit(lambda v: pdx.grad(branchy_loss)(v))(x)
        got_outside = jax.grad(pdx.jit(branchy_loss))(x)
        np.testing.assert_allclose(got_inside, want, rtol=1e-5)
        np.testing.assert_allclose(got_outside, want, rtol=1e-5)
    xs = jnp.asarray(np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32))
    np.testing.assert_allclose(jax.grad(pdx.jit(rnn_loss))(xs), jax.grad(rnn_loss)(xs), rtol=1e-5)


def test_max_iterations_makes_while_differentiable():
    def bounded(x):
        with pdx.jit.max_iterations(16):
            return loop_until(x)

    for x in (jnp.asarray([1.0, 2.0]), jnp.asarray([0.1, 0.2]), jnp.asarray([20.0, 1.0])):
        np.testing.assert_allclose(pdx.jit(bounded)(x), loop_until(x), rtol=1e-5)
        np.testing.assert_allclose(pdx.jit(lambda v: pdx.grad(bounded)(v))(x), jax.grad(loop_until)(x),
                                   rtol=1e-5)


def test_max_iterations_preallocates_lists():
    def collect(x):
        outs = []
        with pdx.jit.max_iterations(6):
            while x.sum() < 10:
                x = x * 2
                outs.append(x)
        return pdx.stack(outs)

    x = jnp.asarray([1.0, 1.0])
    eager = np.asarray(collect(x))  # 3 iterations: [2,2], [4,4], [8,8]
    got = np.asarray(pdx.jit(collect)(x))
    assert got.shape == (6, 2)
    np.testing.assert_allclose(got[:3], eager)
    np.testing.assert_allclose(got[3:], 0)
    with pytest.raises(ValueError, match="positive int"):
        pdx.jit.max_iterations(0).__enter__()


def test_traced_while_without_bound_runs_forward():
    x = jnp.asarray([1.0, 2.0])
    np.testing.assert_allclose(pdx.jit(loop_until)(x), loop_until(x), rtol=1e-5)


def test_export_converted_function_to_stablehlo():
    sf = pdx.jit(branchy_loss)
    spec = jax.ShapeDtypeStruct((3,), jnp.float32)
    exported = jax.export.export(jax.jit(lambda v: sf(v)))(spec)
    text = exported.mlir_module()
    assert "stablehlo.case" in text or "stablehlo.if" in text or "scf.if" in text
    restored = jax.export.deserialize(exported.serialize())
    for x in (jnp.asarray([0.3, -0.2, 0.9]), jnp.asarray([-0.3, -0.2, -0.9])):
        np.testing.assert_allclose(restored.call(x), branchy_loss(x), rtol=1e-5)
    # StaticFunction.lower gives the same control flow
    assert "while" in pdx.jit(loop_until).lower(jnp.ones(2)).as_text()


def test_print_of_traced_value(capfd):
    @pdx.jit
    def f(x):
        print("value:", x.sum())
        return x

    f(jnp.asarray([1.0, 2.0]))
    f(jnp.asarray([3.0, 4.0]))  # printed on every call, as eager code does
    out = capfd.readouterr().out
    assert "value: 3.0" in out and "value: 7.0" in out


def test_assert_on_traced_value():
    @pdx.jit
    def f(x):
        assert x.sum() > 0, "x must have a positive sum"
        return x * 2

    np.testing.assert_allclose(f(jnp.asarray([1.0])), [2.0])
    with pytest.raises(Exception, match="x must have a positive sum"):
        jax.block_until_ready(f(jnp.asarray([-1.0])))


def test_get_code_shows_converted_source():
    code = pdx.jit.get_code(branchy_loss)
    assert code.startswith("def branchy_loss(x):")
    assert "_pdx_rt.if_stmt(" in code and "_pdx_rt.for_stmt(" in code and "_pdx_rt.ifexp(" in code
    assert pdx.jit.get_code(pdx.jit(branchy_loss)) == code
    with pytest.raises(TypeError, match="get_code"):
        pdx.jit.get_code(3)


def test_not_to_static_leaves_helper_unconverted():
    @pdx.jit.not_to_static
    def raw(v):
        if v.sum() > 0:
            return v
        return -v

    def converted(v):
        if v.sum() > 0:
            return v
        return -v

    with pytest.raises(jax.errors.TracerBoolConversionError):
        pdx.jit(lambda v: raw(v))(jnp.ones(2))
    np.testing.assert_allclose(pdx.jit(lambda v: converted(v))(-jnp.ones(2)), [1.0, 1.0])


def test_enable_to_static_false_runs_python():
    calls = []

    def f(x):
        calls.append(type(x))
        return -x if x.sum() > 0 else x

    sf = pdx.jit(f)
    pdx.jit.enable_to_static(False)
    try:
        np.testing.assert_allclose(sf(jnp.ones(2)), [-1.0, -1.0])
    finally:
        pdx.jit.enable_to_static(True)
    assert sf.cache_size() == 0 and not issubclass(calls[0], jax.core.Tracer)


def test_converted_once_and_not_per_call(monkeypatch):
    def f(x):
        return x + 1 if x.sum() > 0 else x - 1

    count = []
    real = _dy2static.converted_call
    monkeypatch.setattr(_dy2static, "converted_call", lambda g: count.append(g) or real(g))
    sf = pdx.jit(f)
    sf(jnp.ones(2))
    assert count == [f]  # converted on the first call
    for _ in range(3):
        sf(jnp.ones(2))
    sf(-jnp.ones(2))  # the other branch: same executable
    assert count == [f] and sf.cache_size() == 1


def test_python_conditions_keep_python_semantics():
    def f(x, mode):
        out = []
        for i in range(3):  # Python range: plain Python loop
            if mode == "double":
                out.append(x * 2)
            elif mode is None:
                out.append(x)
        assert len(out) == 3
        return sum(out[1:], out[0])

    sf = pdx.jit(f, static_argnames=("mode",))
    np.testing.assert_allclose(sf(jnp.ones(2), "double"), [6.0, 6.0])
    np.testing.assert_allclose(sf(jnp.ones(2), None), [3.0, 3.0])


class _BranchBN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.bn = nn.BatchNorm1D(3)

    def forward(self, x):
        y = self.fc(x)
        if y.mean() > 0:
            y = self.bn(y) * 2  # running statistics change on this path only
        return y


def test_layer_state_changed_inside_traced_branch():
    pdx.seed(1)
    net = _BranchBN()
    pdx.seed(1)
    ref = _BranchBN()
    step = pdx.jit(net)
    rng = np.random.default_rng(1)
    taken = set()
    for shift in (3.0, -3.0, 3.0):
        x = jnp.asarray(rng.normal(size=(4, 3)).astype(np.float32) + shift)
        taken.add(bool(ref.fc(x).mean() > 0))
        want = ref(x)
        got = step(x)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(net.bn._mean[...], ref.bn._mean[...], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(net.bn._variance[...], ref.bn._variance[...], rtol=1e-5, atol=1e-6)
    assert taken == {True, False}


def test_falls_back_to_unconverted_when_only_conversion_fails(monkeypatch):
    def f(x):
        return x * 3

    real = _dy2static.converted_call

    def broken(fn):
        if fn is f:
            return lambda *a: (_ for _ in ()).throw(RuntimeError("converted code failed"))
        return real(fn)

    monkeypatch.setattr(_dy2static, "converted_call", broken)
    np.testing.assert_allclose(pdx.jit(f)(jnp.ones(2)), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="converted code failed"):
        pdx.jit(f, full_graph=True)(jnp.ones(2))
