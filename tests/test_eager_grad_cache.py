"""pdx.value_and_grad called eagerly: compiled once per signature, equal to the op-by-op path.

The op-by-op path is what `pdx.jit.enable_to_static(False)` gives; every test
compares the compiled path against it (or against plain JAX), and checks when
a function traces again and when it runs op by op.
"""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn as nn
import pdx.nn.functional as F


@contextlib.contextmanager
def op_by_op():
    pdx.jit.enable_to_static(False)
    try:
        yield
    finally:
        pdx.jit.enable_to_static(True)


class Net(nn.Layer):
    """BatchNorm (running statistics), a Dropout layer (its own key), a frozen parameter."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.bn = nn.BatchNorm1D(8)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(8, 3)
        self.fc2.bias.trainable = False

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.bn(self.fc1(x)))))


def twins():
    pdx.seed(11)
    a = Net()
    b = Net()
    b.set_state_dict(a.state_dict())
    b.drop.rng.set_value(a.drop.rng.get_value())
    return a, b


def batch(i=0, n=5):
    rng = np.random.default_rng(i)
    return (jnp.asarray(rng.normal(size=(n, 6)), jnp.float32),
            jnp.asarray(rng.integers(0, 3, size=(n,)), jnp.int32))


def loss_fn(model, x, y):
    # F.dropout without key= draws from the global generator (pdx.seed)
    return F.cross_entropy(F.dropout(model(x), 0.2), y)


def buffers(model):
    return {k: np.asarray(v) for k, v in model.state_dict().items()}


def plain(tree):
    """Gradients as plain dicts: two models' gradients differ in their owner only."""
    return jax.tree.map(lambda g: dict(g) if isinstance(g, pdx.Gradients) else g, tree,
                        is_leaf=lambda x: isinstance(x, pdx.Gradients))


def assert_trees_close(a, b, rtol=1e-5, atol=1e-6):
    a, b = plain(a), plain(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def test_compiled_equals_op_by_op_with_batchnorm_dropout_and_frozen_parameter():
    compiled, eager = twins()
    vg = pdx.value_and_grad(loss_fn)
    for i in range(3):
        x, y = batch(i)
        pdx.seed(100 + i)
        loss_c, grads_c = vg(compiled, x, y)
        key_c = jax.random.key_data(pdx.get_rng_state())
        pdx.seed(100 + i)
        with op_by_op():
            loss_e, grads_e = vg(eager, x, y)
        key_e = jax.random.key_data(pdx.get_rng_state())
        np.testing.assert_allclose(loss_c, loss_e, rtol=1e-6)
        assert list(grads_c) == list(grads_e) and "fc2.bias" not in grads_c
        assert grads_c.owner is compiled and grads_e.owner is eager
        assert_trees_close(dict(grads_c), dict(grads_e))
        assert_trees_close(buffers(compiled), buffers(eager))  # BatchNorm statistics
        np.testing.assert_array_equal(jax.random.key_data(compiled.drop.rng.get_value()),
                                      jax.random.key_data(eager.drop.rng.get_value()))
        np.testing.assert_array_equal(key_c, key_e)  # the global generator advanced the same
    assert vg.cache_size() == 1, "one trace for three calls with one signature"
    assert not np.allclose(np.asarray(compiled.bn._mean), 0), "running statistics were written back"


def test_no_retrace_on_the_same_signature_and_retrace_on_new_shapes():
    net, _ = twins()

    def mse(model, x):
        return (model(x) ** 2).mean()

    for _ in range(3):
        pdx.value_and_grad(mse)(net, batch(0)[0])  # a new wrapper each step, as loops write it
    assert pdx.value_and_grad(mse).cache_size() == 1
    pdx.value_and_grad(mse)(net, batch(0, n=7)[0])
    assert pdx.value_and_grad(mse).cache_size() == 2
    pdx.value_and_grad(mse)(net, batch(1, n=7)[0])
    assert pdx.value_and_grad(mse).cache_size() == 2
    net.eval()  # a structure change: a trace of its own
    pdx.value_and_grad(mse)(net, batch(0)[0])
    assert pdx.value_and_grad(mse).cache_size() == 3


def test_python_scalar_arguments_are_part_of_the_signature():
    net, _ = twins()
    net.eval()

    def scaled(model, x, scale, square):
        out = model(x) * scale
        return (out ** 2).mean() if square else out.mean()

    x = batch(0)[0]
    got = [float(pdx.value_and_grad(scaled)(net, x, s, sq)[0]) for s, sq in ((1.0, True), (2.0, True), (2.0, False))]
    with op_by_op():
        want = [float(pdx.value_and_grad(scaled)(net, x, s, sq)[0]) for s, sq in ((1.0, True), (2.0, True),
                                                                                  (2.0, False))]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert pdx.value_and_grad(scaled).cache_size() == 3


def test_values_read_in_python_fall_back_to_op_by_op():
    net, ref = twins()
    net.eval(), ref.eval()
    seen = []

    def branchy(model, x):
        out = model(x).mean()
        seen.append(out.item())  # a Python value of the traced function
        if out > 0:
            return out * 2.0
        return -out

    x = batch(0)[0]
    first = pdx.value_and_grad(branchy)(net, x)
    second = pdx.value_and_grad(branchy)(net, x)
    with op_by_op():
        want = pdx.value_and_grad(branchy)(ref, x)
    assert_trees_close(first, want)
    assert_trees_close(second, want)
    assert len(seen) == 3, "Python ran on every call (op by op), with values"
    assert pdx.value_and_grad(branchy).cache_size() == 1, "one aborted trace, then op by op"


def test_numpy_inside_the_function(paddle):
    """x.numpy() / x.item() / float(x) inside the differentiated function give the value, detached, as in
    Paddle (the function runs op by op); np.asarray(x) raises an error naming the pdx way; a shape-[1]
    loss is taken as Paddle's backward takes it."""
    rng = np.random.default_rng(3)
    w, b = rng.normal(size=(6, 3)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32)
    x = rng.normal(size=(5, 6)).astype(np.float32)
    net, pnet = nn.Linear(6, 3), paddle.nn.Linear(6, 3)
    net.set_state_dict({"weight": w, "bias": b})
    pnet.set_state_dict({"weight": paddle.to_tensor(w), "bias": paddle.to_tensor(b)})

    def uses_numpy(model, x):
        out = (model(x) ** 2).mean()
        return out * float(out.numpy()) + out * out.item()

    def shape_one(model, x):
        return (model(x) ** 2).mean().reshape([1]) * 3.0

    def uses_float(model, x):
        out = model(x).mean()
        return out * float(out)

    px = paddle.to_tensor(x)
    for f, want_grads in ((uses_numpy, None), (shape_one, None), (uses_float, None)):
        pnet.clear_gradients()
        ploss = f(pnet, px)
        ploss.backward()
        want_grads = {"weight": pnet.weight.grad.numpy(), "bias": pnet.bias.grad.numpy()}
        for _ in range(2):  # the first call falls back to op by op, the second runs op by op
            loss, grads = pdx.value_and_grad(f)(net, jnp.asarray(x))
            assert loss.shape == tuple(ploss.shape)
            np.testing.assert_allclose(np.asarray(loss), ploss.numpy(), rtol=1e-5)
            for k, g in want_grads.items():
                np.testing.assert_allclose(np.asarray(grads[k]), g, rtol=1e-4, atol=1e-6)

    for conversion in (lambda m, x: m(x).mean() * np.asarray(m(x).mean()),):
        with pytest.raises(TypeError, match=r"return the value as aux .*has_aux=True"):
            pdx.value_and_grad(conversion)(net, jnp.asarray(x))
    # under a compiling trace there is no value: JAX's class, with pdx's way as a note
    with pytest.raises(jax.errors.TracerArrayConversionError) as e:
        pdx.jit(lambda m, x: pdx.value_and_grad(uses_numpy)(m, x))(net, jnp.asarray(x))
    assert any("has_aux=True" in note for note in e.value.__notes__)
    with pytest.raises(TypeError, match=r"shape \[\] or \[1\]"):
        pdx.value_and_grad(lambda m, x: m(x).sum(0))(net, jnp.asarray(x))
    # Tensor.numpy() is a writable copy, as Paddle's
    arr = jnp.ones(3).numpy()
    arr[0] = 5.0
    assert arr.flags.writeable and paddle.ones([3]).numpy().flags.writeable
    # Paddle's eager numpy takes one positional flag (Paddle's API tests call x.numpy(False))
    np.testing.assert_array_equal(jnp.arange(3.0).numpy(False), paddle.arange(3.0).numpy(False))


def test_print_runs_op_by_op_every_call(capsys):
    net, _ = twins()
    net.eval()

    def noisy(model, x):
        loss = model(x).mean()
        print("loss", loss)
        return loss

    for _ in range(2):
        pdx.value_and_grad(noisy)(net, batch(0)[0])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("loss")]
    assert len(lines) == 2, lines


def test_a_python_counter_on_a_layer_runs_op_by_op():
    class Counting(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 1)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return self.fc(x)

    net = Counting()

    def counted(model, x):
        return model(x).mean()

    for _ in range(3):
        pdx.value_and_grad(counted)(net, batch(0)[0])
    assert net.calls == 3
    assert pdx.value_and_grad(counted).cache_size() == 1


def test_closures_and_globals_are_inputs_not_constants():
    net, _ = twins()
    net.eval()
    results, wanted = [], []
    for i in range(3):
        x, y = batch(i)
        # a new lambda each step, reading this step's x and y
        vg = pdx.value_and_grad(lambda m: F.cross_entropy(m(x), y))
        results.append(vg(net)[0])
        with op_by_op():
            wanted.append(vg(net)[0])
    np.testing.assert_allclose(results, wanted, rtol=1e-6)
    assert len({float(r) for r in results}) == 3
    assert vg.cache_size() == 1

    global SCALE, BATCH  # noqa: PLW0603
    losses = []
    for i, scale in enumerate((1.0, 1.0, 3.0)):
        SCALE, BATCH = scale, batch(i)[0]
        losses.append(float(pdx.value_and_grad(global_loss)(net)[0]))
    with op_by_op():
        want = []
        for i, scale in enumerate((1.0, 1.0, 3.0)):
            SCALE, BATCH = scale, batch(i)[0]
            want.append(float(pdx.value_and_grad(global_loss)(net)[0]))
    np.testing.assert_allclose(losses, want, rtol=1e-6)
    assert pdx.value_and_grad(global_loss).cache_size() == 2, "a new Python value traces again, a new array does not"


SCALE, BATCH = 1.0, None
DATA = {}


def global_loss(model):
    return (model(BATCH) ** 2).mean() * SCALE


def dict_loss(model):
    return (model(DATA["x"]) ** 2).mean()


def test_an_array_reached_through_a_container_is_not_baked_in():
    net, _ = twins()
    net.eval()
    losses = []
    for i in range(3):
        DATA["x"] = batch(i)[0]
        losses.append(float(pdx.value_and_grad(dict_loss)(net)[0]))
    with op_by_op():
        want = []
        for i in range(3):
            DATA["x"] = batch(i)[0]
            want.append(float(pdx.value_and_grad(dict_loss)(net)[0]))
    np.testing.assert_allclose(losses, want, rtol=1e-6)


def test_auto_cast_gives_bf16_as_op_by_op_and_traces_again():
    pdx.seed(0)
    net = nn.Linear(6, 4)

    def out_sum(model, x):
        out = model(x)
        return out.sum(), out

    x = batch(0)[0]
    with pdx.amp.auto_cast(dtype="bfloat16"):
        (loss, out), grads = pdx.value_and_grad(out_sum, has_aux=True)(net, x)
        with op_by_op():
            (loss_e, out_e), grads_e = pdx.value_and_grad(out_sum, has_aux=True)(net, x)
    assert out.dtype == out_e.dtype == jnp.bfloat16
    assert loss.dtype == loss_e.dtype
    assert_trees_close((loss.astype(jnp.float32), dict(grads)), (loss_e.astype(jnp.float32), dict(grads_e)),
                       rtol=1e-2, atol=1e-2)
    (loss32, out32), _ = pdx.value_and_grad(out_sum, has_aux=True)(net, x)
    assert out32.dtype == jnp.float32
    assert pdx.value_and_grad(out_sum, has_aux=True).cache_size() == 2


def test_argnums_has_aux_and_pdx_grad_on_the_compiled_path():
    net, _ = twins()
    net.eval()
    x, y = batch(0)

    def with_aux(model, x, y):
        out = model(x)
        return F.cross_entropy(out, y), out

    (loss, out), (g_net, g_x) = pdx.value_and_grad(with_aux, argnums=(0, 1), has_aux=True)(net, x, y)
    with op_by_op():
        (loss_e, out_e), (g_net_e, g_x_e) = pdx.value_and_grad(with_aux, argnums=(0, 1), has_aux=True)(net, x, y)
    assert isinstance(g_net, pdx.Gradients) and g_net.owner is net
    assert_trees_close((loss, out, dict(g_net), g_x), (loss_e, out_e, dict(g_net_e), g_x_e))
    grads, aux = pdx.grad(with_aux, has_aux=True)(net, x, y)
    assert_trees_close(dict(grads), dict(g_net))
    g_x_only = pdx.grad(lambda x: (x ** 3).sum())(x)
    np.testing.assert_allclose(g_x_only, 3 * x ** 2, rtol=1e-6)


def test_inside_pdx_jit_the_gradient_is_part_of_that_trace():
    net, ref = twins()
    net.eval(), ref.eval()
    opt = pdx.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    x, y = batch(0)

    @pdx.jit
    def step(model, opt, x, y):
        loss, grads = pdx.value_and_grad(lambda m, x, y: F.cross_entropy(m(x), y))(model, x, y)
        opt.step(grads)
        return loss

    loss = step(net, opt, x, y)
    with op_by_op():
        want, _ = pdx.value_and_grad(lambda m, x, y: F.cross_entropy(m(x), y))(ref, x, y)
    np.testing.assert_allclose(loss, want, rtol=1e-6)


def test_a_numpy_generator_argument_runs_op_by_op():
    net, _ = twins()
    net.eval()

    def noisy_input(model, x, rng):
        return (model(x + rng.normal(size=x.shape).astype("float32")) ** 2).mean()

    x = batch(0)[0]
    a = pdx.value_and_grad(noisy_input)(net, x, np.random.default_rng(0))[0]
    b = pdx.value_and_grad(noisy_input)(net, x, np.random.default_rng(1))[0]
    assert float(a) != float(b), "each call draws its own noise"
    assert pdx.value_and_grad(noisy_input).cache_size() == 0


CALLS = []


def counting_loss(model, x):
    CALLS.append(1)  # Python that must run on every call
    return (model(x) ** 2).mean()


def test_a_list_changed_by_the_function_runs_op_by_op():
    net, _ = twins()
    net.eval()
    del CALLS[:]
    for _ in range(3):
        pdx.value_and_grad(counting_loss)(net, batch(0)[0])
    assert CALLS == [1, 1, 1], "the aborted trace's append was undone; each op-by-op call appended once"
    assert pdx.value_and_grad(counting_loss).cache_size() == 1


def test_a_layer_method_threads_its_layer():
    class WithLoss(Net):
        def loss(self, x, y):
            return F.cross_entropy(self(x), y)

    pdx.seed(3)
    compiled, eager = WithLoss(), WithLoss()
    eager.set_state_dict(compiled.state_dict())
    eager.drop.rng.set_value(compiled.drop.rng.get_value())
    x, y = batch(0)
    loss_c, g_c = pdx.value_and_grad(compiled.loss, argnums=0)(x, y)
    with op_by_op():
        loss_e, g_e = pdx.value_and_grad(eager.loss, argnums=0)(x, y)
    assert_trees_close((loss_c, g_c), (loss_e, g_e))
    assert_trees_close(buffers(compiled), buffers(eager))
    pdx.value_and_grad(compiled.loss, argnums=0)(x, y)
    assert pdx.value_and_grad(compiled.loss, argnums=0).cache_size() == 1


def test_numpy_random_draws_inside_run_op_by_op():
    net, _ = twins()
    net.eval()

    def jittered(model, x):
        return (model(x + np.random.normal(size=x.shape).astype("float32")) ** 2).mean()

    x = batch(0)[0]
    np.random.seed(5)
    got = [float(pdx.value_and_grad(jittered)(net, x)[0]) for _ in range(3)]
    np.random.seed(5)
    with op_by_op():
        want = [float(pdx.value_and_grad(jittered)(net, x)[0]) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(set(got)) == 3, "a fresh draw on every call"


def test_two_models_of_one_structure_share_the_program():
    a, b = twins()
    a.eval(), b.eval()
    b.fc1.weight.set_value(b.fc1.weight.get_value() * 2)

    def mse(model, x):
        return (model(x) ** 2).mean()

    x = batch(0)[0]
    got = [float(pdx.value_and_grad(mse)(m, x)[0]) for m in (a, b, a, b)]
    with op_by_op():
        want = [float(pdx.value_and_grad(mse)(m, x)[0]) for m in (a, b)]
    np.testing.assert_allclose(got, want * 2, rtol=1e-6)
    assert pdx.value_and_grad(mse).cache_size() == 1


class Holder:
    def __init__(self, x):
        self.x = x


def test_pytree_and_object_arguments():
    net, _ = twins()
    net.eval()
    x, y = batch(0)

    def from_batch(model, batch):
        return F.cross_entropy(model(batch["x"]), batch["y"])

    def from_holder(model, holder):
        return (model(holder.x) ** 2).mean()

    for i in range(2):
        x, y = batch(i)
        loss, _ = pdx.value_and_grad(from_batch)(net, {"x": x, "y": y})
        with op_by_op():
            want, _ = pdx.value_and_grad(from_batch)(net, {"x": x, "y": y})
        np.testing.assert_allclose(loss, want, rtol=1e-6)
        loss, _ = pdx.value_and_grad(from_holder)(net, Holder(x))
        np.testing.assert_allclose(loss, (net(x) ** 2).mean(), rtol=1e-5)
    assert pdx.value_and_grad(from_batch).cache_size() == 1
    assert pdx.value_and_grad(from_holder).cache_size() == 0, "arrays inside a plain object: op by op"


def test_an_objects_option_dict_in_a_closure_is_keyed_by_value():
    """A closure over an object whose dict/list attribute changes (a new lambda or the same one) is retraced."""
    class Options:
        pass

    x = pdx.to_tensor(np.random.default_rng(0).normal(size=(5, 4, 6)).astype("float32"))

    def reference(k, axis):
        return jax.grad(lambda a: jnp.mean(jnp.take(jnp.sort(a, axis=axis), k - 1, axis=axis)))(jnp.asarray(x))

    def make(o):
        return pdx.grad(lambda xs: pdx.mean(pdx.kthvalue(**{**o.kw, **xs})[0]))

    o = Options()
    o.kw = dict(k=3, axis=0)
    fn = make(o)
    np.testing.assert_allclose(np.asarray(fn({"x": x})["x"]), reference(3, 0), atol=1e-6)
    o.kw = dict(k=4, axis=2, keepdim=False)           # a new dict on the same object
    np.testing.assert_allclose(np.asarray(make(o)({"x": x})["x"]), reference(4, 2), atol=1e-6)
    np.testing.assert_allclose(np.asarray(fn({"x": x})["x"]), reference(4, 2), atol=1e-6)
    o.kw["k"] = 2                                       # an item changed in place
    np.testing.assert_allclose(np.asarray(fn({"x": x})["x"]), reference(2, 2), atol=1e-6)
    o.sizes = [jnp.ones(2)]                             # an array inside a container attribute: read op by op
    np.testing.assert_allclose(np.asarray(fn({"x": x})["x"]), reference(2, 2), atol=1e-6)
