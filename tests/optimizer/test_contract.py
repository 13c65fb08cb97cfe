"""Contracts every pdx optimizer keeps: the traced step equals the eager one
and compiles once (also while a scheduler moves the learning rate), dtypes
and state structure are stable (bfloat16 parameters included), the pure
`transformation()` agrees with `step`, state dicts round-trip, and bad input
fails with a message that names the problem."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import pdx
from pdx import optimizer
from pdx.nn import ClipGradByGlobalNorm, ParamAttr
from pdx.regularizer import L1Decay, L2Decay

OPTIMIZERS = {
    "SGD": dict(learning_rate=0.1),
    "Momentum": dict(learning_rate=0.1, use_nesterov=True, weight_decay=0.01),
    "Adam": dict(learning_rate=0.01, amsgrad=True),
    "AdamW": dict(learning_rate=0.01, apply_decay_param_fun=lambda n: n == "fc.w"),
    "Adagrad": dict(learning_rate=0.1, initial_accumulator_value=0.1),
    "RMSProp": dict(learning_rate=0.01, momentum=0.9, centered=True),
    "Adamax": dict(learning_rate=0.01),
    "Lamb": dict(learning_rate=0.01, lamb_weight_decay=0.01),
}


class Net(pdx.nn.Layer):
    def __init__(self, dtype="float32"):
        super().__init__(dtype=dtype)
        self.fc = pdx.nn.Layer(dtype=dtype)
        self.fc.w = self.fc.create_parameter([3, 5])
        self.fc.b = self.fc.create_parameter([5], is_bias=True, attr=ParamAttr(regularizer=L1Decay(0.01)))
        self.scale = self.create_parameter([5], default_initializer=pdx.nn.initializer.Constant(1.0))
        self.frozen = self.create_parameter([2], attr=ParamAttr(trainable=False))

    def forward(self, x):
        return jnp.tanh(x @ self.fc.w + self.fc.b) * self.scale


def loss_fn(model, x):
    return jnp.mean(model(x) ** 2)


def batch(i):
    return jax.random.normal(jax.random.key(i), (4, 3))


def make(name, dtype="float32", **overrides):
    pdx.seed(0)
    net = Net(dtype)
    kwargs = {**OPTIMIZERS[name], **overrides}
    return net, getattr(optimizer, name)(parameters=net, **kwargs)


def eager_step(net, opt, x):
    _, grads = pdx.value_and_grad(loss_fn)(net, x)
    opt.step(grads)


def _fixed_grads(net, i):
    return {n: jax.random.normal(jax.random.key(i), p.shape) for n, p in net.named_parameters() if n != "frozen"}


def _state_signature(opt):
    state = nnx.state(opt, nnx.OptState)
    return jax.tree.structure(state), [(x.shape, x.dtype) for x in jax.tree.leaves(state)]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_eager_traced_and_functional_steps_agree(name):
    """Eager `step`, the same step under nnx.jit (compiled once while the
    scheduler moves the lr) and the pure `transformation()` give one result."""
    def build():
        sched = optimizer.lr.StepDecay(learning_rate=OPTIMIZERS[name]["learning_rate"], step_size=2, gamma=0.5)
        return make(name, learning_rate=sched, grad_clip=ClipGradByGlobalNorm(2.0))

    net_e, opt_e = build()
    net_t, opt_t = build()
    tx = opt_e.transformation()
    params = {n: p[...] for n, p in net_e.named_parameters() if n != "frozen"}
    state = tx.init(params)
    signature = _state_signature(opt_e)
    traces = []

    @nnx.jit
    def train_step(model, opt, grads):  # opt holds model's Params: updates reach the model
        traces.append(1)
        opt.step(grads)
        opt._lr_scheduler.step()

    @jax.jit
    def functional_step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    for i in range(4):
        train_step(net_t, opt_t, _fixed_grads(net_t, i))
        opt_e.step(_fixed_grads(net_e, i))
        opt_e._lr_scheduler.step()
        params, state = functional_step(params, state, _fixed_grads(net_e, i))
    assert len(traces) == 1
    assert _state_signature(opt_e) == signature
    eager = dict(net_e.named_parameters())
    for n, p in net_t.named_parameters():
        assert p[...].dtype == jnp.float32
        np.testing.assert_allclose(p[...], eager[n][...], rtol=2e-5, atol=2e-6, err_msg=n)
        if n in params:
            np.testing.assert_allclose(params[n], eager[n][...], rtol=2e-5, atol=2e-6, err_msg=n)
    assert opt_t.get_lr() == opt_e.get_lr() == OPTIMIZERS[name]["learning_rate"] * 0.25


def test_traced_train_step_with_grad_equals_eager():
    net_e, opt_e = make("Adam")
    net_t, opt_t = make("Adam")
    traces = []

    @nnx.jit
    def train_step(model, opt, x):
        traces.append(1)
        loss, grads = pdx.value_and_grad(loss_fn)(model, x)
        opt.step(grads)
        return loss

    for i in range(3):
        train_step(net_t, opt_t, batch(i))
        eager_step(net_e, opt_e, batch(i))
    assert len(traces) == 1
    np.testing.assert_allclose(net_t.fc.w[...], net_e.fc.w[...], rtol=2e-5, atol=2e-6)
    assert float(net_t.frozen[...][0]) == float(net_e.frozen[...][0])


def test_pdx_jit_set_lr_without_recompiling():
    net, opt = make("Momentum")
    ref_net, ref_opt = make("Momentum")

    @pdx.jit
    def train_step(x):
        loss, grads = pdx.value_and_grad(loss_fn)(net, x)
        opt.step(grads)
        return loss

    for i, lr in enumerate([0.01, 0.005, 0.001]):
        opt.set_lr(lr)
        ref_opt.set_lr(lr)
        train_step(batch(i))
        eager_step(ref_net, ref_opt, batch(i))
    assert train_step.cache_size() == 1
    np.testing.assert_allclose(net.fc.w[...], ref_net.fc.w[...], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_dtype_and_state_structure_stable(name, dtype):
    net, opt = make(name, dtype=dtype)
    before = _state_signature(opt)
    dtypes = {n: p[...].dtype for n, p in net.named_parameters()}
    for i in range(2):
        eager_step(net, opt, batch(i).astype(dtype))
    assert _state_signature(opt) == before
    assert {n: p[...].dtype for n, p in net.named_parameters()} == dtypes
    assert all(d == jnp.dtype(dtype) for d in dtypes.values())
    assert np.isfinite(np.asarray(net.fc.w[...], np.float32)).all()


@pytest.mark.parametrize("name", ["SGD", "Adam", "Lamb"])
def test_multi_precision_keeps_float32_masters(name):
    net, opt = make(name, dtype="bfloat16", multi_precision=True)
    ref_net, ref_opt = make(name)  # float32 throughout
    for n, p in ref_net.named_parameters():
        p.set_value(dict(net.named_parameters())[n][...].astype(jnp.float32))
    for i in range(3):
        eager_step(net, opt, batch(i).astype("bfloat16"))
    assert net.fc.w[...].dtype == jnp.bfloat16
    master = opt.state_dict()["master_weights/fc.w"]
    assert master.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(net.fc.w[...], np.float32), master, rtol=1e-2, atol=1e-2)
    assert not np.array_equal(np.asarray(master), np.asarray(master.astype(jnp.bfloat16), np.float32))


def test_transformation_follows_scheduler_by_count():
    net, opt = make("SGD", learning_rate=optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5))
    tx = opt.transformation()
    params = {n: p[...] for n, p in net.named_parameters() if n != "frozen"}
    ones = jax.tree.map(jnp.ones_like, params)
    state = tx.init(params)
    steps = []
    for _ in range(3):
        updates, state = tx.update(ones, state, params)
        steps.append(float(-updates["scale"][0]))
    np.testing.assert_allclose(steps, [0.1, 0.05, 0.025], rtol=1e-6)


@pytest.mark.parametrize("name", ["Adam", "RMSProp", "Lamb"])
def test_state_dict_round_trip(name):
    sched = optimizer.lr.ExponentialDecay(0.01, gamma=0.9)
    net, opt = make(name, learning_rate=sched)
    for i in range(2):
        eager_step(net, opt, batch(i))
        sched.step()
    saved = opt.state_dict()
    assert saved["LR_Scheduler"]["last_epoch"] == 2
    net2, opt2 = make(name, learning_rate=optimizer.lr.ExponentialDecay(0.01, gamma=0.9))
    net2.set_state_dict(net.state_dict())
    opt2.set_state_dict(saved)
    assert opt2.get_lr() == opt.get_lr()
    eager_step(net, opt, batch(5))
    eager_step(net2, opt2, batch(5))
    np.testing.assert_array_equal(net.fc.w[...], net2.fc.w[...])


def test_grads_by_position_and_subset_binding():
    pdx.seed(0)
    net = Net()
    opt = optimizer.SGD(0.5, parameters=net.fc.parameters())  # binds fc.w, fc.b only
    w0, s0 = net.fc.w[...], net.scale[...]
    opt.step(pdx.grad(loss_fn)(net, batch(0)))  # full-model grads: matched by identity
    assert not np.array_equal(net.fc.w[...], w0) and np.array_equal(net.scale[...], s0)
    opt.step([jnp.zeros((3, 5)), jnp.zeros(5)])  # a list in binding order
    # named by their state_dict names in the Layer that listed them (net.fc)
    assert [n for n, _ in opt.named_parameters()] == ["w", "b"]


def test_regularizer_objects_and_clear_grad():
    assert L2Decay(0.5) == L2Decay(0.5) and str(L1Decay(0.25)) == "L1Decay, coeff=0.250000"
    net, opt = make("SGD", weight_decay=1)
    assert isinstance(opt.regularization, L2Decay) and opt.regularization.coeff == 1.0
    opt.clear_grad()
    opt.clear_gradients()
    opt.zero_grad()
    assert "SGD" in repr(opt)


def _bad_step(grads):
    def run():
        net, opt = make("Adam")
        opt.step(grads(net))
    return run


@pytest.mark.parametrize("make_bad,exc,match", [
    (lambda: make("SGD", learning_rate="0.1"), TypeError, "learning_rate must be a float or a pdx.optimizer.lr.LRScheduler"),
    (lambda: make("SGD", learning_rate=None), TypeError, "learning_rate"),
    (lambda: make("Adam", learning_rate=-1.0), ValueError, "learning_rate"),
    (lambda: optimizer.Adam(0.1), ValueError, "parameters= is required"),
    (lambda: optimizer.Adam(0.1, parameters=Net().fc.w), TypeError, "wrap it in a list"),
    (lambda: optimizer.Adam(0.1, parameters={"w": Net().fc.w}), TypeError, "list of dicts"),
    (lambda: optimizer.Adam(0.1, parameters=[jnp.ones(3)]), TypeError, "expected nnx.Param"),
    (lambda: make("Adam", grad_clip=optax.clip(1.0)), TypeError, "grad_clip"),
    (lambda: make("SGD", weight_decay="0.1"), TypeError, "weight_decay"),
    (lambda: make("AdamW", weight_decay=L2Decay(0.1)), TypeError, "decoupled"),
    (lambda: make("Adam", beta1=1.5), ValueError, "beta1"),
    (lambda: make("RMSProp", rho=-0.1), ValueError, "rho"),
    (lambda: (lambda net: optimizer.Adam(0.1, parameters=[{"params": [net.fc.w]}, {"params": [net.fc.w]}]))(Net()),
     ValueError, "more than one parameter group"),
    (lambda: (lambda net: optimizer.Adam(0.1, parameters=[{"params": [net.fc.w], "lr": 0.1}]))(Net()),
     ValueError, "unknown keys \\['lr'\\]"),
    (_bad_step(lambda net: {"fc.w": jnp.zeros((3, 5))}), ValueError, r"no gradient for parameter\(s\) \['scale', 'fc.b'\]"),
    (_bad_step(lambda net: {f"{p}.{n}": jnp.zeros(v.shape) for p in ("a", "b") for n, v in net.state_dict().items()}),
     ValueError, r"under each of the prefixes \['a.', 'b.'\]"),
    (_bad_step(lambda net: {"fc.w": jnp.zeros((5, 3)), "fc.b": jnp.zeros(5), "scale": jnp.zeros(5)}),
     ValueError, r"gradient of 'fc.w' has shape \(5, 3\) but the parameter has shape \(3, 5\)"),
    (_bad_step(lambda net: [jnp.zeros(1)]), ValueError, "got 1 gradients for 3 trainable"),
    (_bad_step(lambda net: jnp.zeros(3)), TypeError, "grads must be a dict"),
    (_bad_step(lambda net: None), TypeError, "value_and_grad"),
])
def test_bad_input_errors(make_bad, exc, match):
    with pytest.raises(exc, match=match):
        make_bad()


def test_minimize_and_set_lr_errors():
    net, opt = make("Adam", learning_rate=optimizer.lr.StepDecay(0.1, step_size=2))
    with pytest.raises(RuntimeError, match=r"pdx.value_and_grad\(loss_fn\)"):
        opt.minimize(jnp.float32(1.0))
    with pytest.raises(RuntimeError, match="driven by StepDecay"):
        opt.set_lr(0.1)
    with pytest.raises(TypeError, match="LRScheduler"):
        opt.set_lr_scheduler(0.1)
    opt._learning_rate = 0.05  # Paddle's attribute: replacing the scheduler by a float
    assert opt.get_lr() == 0.05 and opt._lr_scheduler is None
    with pytest.raises(KeyError, match="LR_Scheduler"):
        make("Adam", learning_rate=optimizer.lr.StepDecay(0.1, step_size=2))[1].set_state_dict(
            {k: v for k, v in opt.state_dict().items()})
    with pytest.raises(ValueError, match="has shape"):
        bad = {k: jnp.zeros(7) if k.endswith("fc.w") else v for k, v in opt.state_dict().items()}
        opt.set_state_dict(bad)


def test_state_inherits_logical_axis_names():
    net = pdx.nn.Layer()
    net.w = net.create_parameter([3, 5], axis_names=("embed", "mlp"), dtype="bfloat16")
    net.b = net.create_parameter([5], is_bias=True)
    opt = optimizer.Adam(0.1, parameters=net, multi_precision=True)
    names = {jax.tree_util.keystr(p, simple=True, separator="/"): v.get_metadata().get("out_sharding")
             for p, v in jax.tree_util.tree_flatten_with_path(nnx.state(opt, nnx.OptArray), is_leaf=lambda x: isinstance(x, nnx.Variable))[0]}
    # the float32 master copy is part of the optimizer state: the inner state beside it
    assert names["_opt_state/inner/0/update/adam/mu/w"] == ("embed", "mlp")
    assert names["_opt_state/inner/0/update/adam/mu/b"] is None and names["_opt_state/inner/0/update/adam/count"] is None
    assert names["_opt_state/masters/w"] == ("embed", "mlp")


def _signature(fn):
    import inspect

    return [(k, p.default) for k, p in inspect.signature(fn).parameters.items()]


def test_signatures_match_paddle(paddle):
    pairs = [(getattr(optimizer, n), getattr(paddle.optimizer, n)) for n in OPTIMIZERS]
    pairs += [(getattr(optimizer.lr, n), getattr(paddle.optimizer.lr, n)) for n in paddle.optimizer.lr.__all__]
    pairs += [(getattr(pdx.nn, n), getattr(paddle.nn, n)) for n in ("ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue")]
    pairs += [(getattr(pdx.regularizer, n), getattr(paddle.regularizer, n)) for n in ("L1Decay", "L2Decay")]
    for ours, theirs in pairs:
        assert _signature(ours.__init__) == _signature(theirs.__init__), ours.__name__
