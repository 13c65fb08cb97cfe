"""pdx.train: make_step against numpy and pure-JAX references, shardings from logical names,
and the public optimizer surface TrainState is built from."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import pdx
from pdx import nn


def _mse(model, batch):
    x, y = batch
    return jnp.mean((model(x) - y) ** 2)


def _data(rng, n=8):
    return rng.normal(size=(n, 4)).astype(np.float32), rng.normal(size=(n, 2)).astype(np.float32)


def test_make_step_is_sgd_guarded_accumulated_and_returns_aux(rng):
    pdx.seed(0)
    net = nn.Linear(4, 2)
    w0, b0 = np.asarray(net.weight[...]).copy(), np.asarray(net.bias[...]).copy()
    state = pdx.TrainState.create(net, pdx.optimizer.SGD(0.5, parameters=net))
    x, y = _data(rng)
    step = jax.jit(pdx.train.make_step(_mse))
    new, metrics = step(state, (x, y))
    r = x @ w0 + b0 - y  # numpy reference: d/dW mean((xW+b-y)^2)
    gw, gb = 2 * x.T @ r / r.size, 2 * r.sum(0) / r.size
    np.testing.assert_allclose(np.asarray(new.params["weight"]), w0 - 0.5 * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(new.params["bias"]), b0 - 0.5 * gb, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(metrics["loss"]), np.mean(r ** 2), rtol=1e-5)
    np.testing.assert_allclose(float(metrics["grad_norm"]), np.sqrt((gw ** 2).sum() + (gb ** 2).sum()), rtol=1e-5)
    assert int(new.step) == 1 and bool(metrics["finite"])

    # a NaN batch: skipped, every array bitwise the old one, the counter counts
    bad, m_bad = step(new, (np.full_like(x, np.nan), y))
    assert not bool(m_bad["finite"]) and int(bad.nonfinite_steps) == 1 and int(bad.step) == 1
    assert all(np.asarray(a).tobytes() == np.asarray(b).tobytes()
               for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(bad.params)))

    # accumulation over 4 micro-batches equals one step on the whole batch; aux comes back stacked
    def with_aux(model, batch):
        out = model(batch[0])
        return jnp.mean((out - batch[1]) ** 2), out.sum()

    acc = jax.jit(pdx.train.make_step(with_aux, has_aux=True, accumulate=True))
    stacked = (x.reshape(4, 2, 4), y.reshape(4, 2, 2))
    new_acc, m_acc = acc(state, stacked)
    for k in state.params:
        np.testing.assert_allclose(np.asarray(new_acc.params[k]), np.asarray(new.params[k]), atol=1e-6)
    assert m_acc["aux"].shape == (4,)
    np.testing.assert_allclose(np.asarray(m_acc["aux"]).sum(), (x @ w0 + b0).sum(), rtol=1e-5)


def test_state_from_the_public_optimizer_surface_only(rng):
    """TrainState.create needs only trainable_parameters / transformation / init_state / get_lr."""
    pdx.seed(1)
    net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    net[0].weight.trainable = False

    class Minimal:  # a stand-in that has nothing but the public methods
        def __init__(self, params):
            self._params = params

        def trainable_parameters(self):
            return self._params

        def transformation(self):
            return optax.with_extra_args_support(optax.sgd(0.1))

        def init_state(self, params):
            return self.transformation().init(params)

        def get_lr(self):
            return 0.1

    real = pdx.optimizer.SGD(0.1, parameters=net)
    names = [n for n, _ in real.trainable_parameters()]
    assert names == ["0.bias", "1.weight", "1.bias"]  # the frozen weight is not updated
    assert [n for n, _ in real.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    state = pdx.TrainState.create(net, Minimal(real.trainable_parameters()))
    assert sorted(state.params) == sorted(names) and "0.weight" in state.buffers
    x, y = _data(rng)
    new, _ = jax.jit(pdx.train.make_step(_mse))(state, (x, y))
    ref, _ = jax.jit(pdx.train.make_step(_mse))(pdx.TrainState.create(net, real), (x, y))
    for k in names:  # optax.sgd and pdx's SGD agree
        np.testing.assert_allclose(np.asarray(new.params[k]), np.asarray(ref.params[k]), rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match="no trainable_parameters"):
        pdx.TrainState.create(net, object())


def test_optimizer_views_init_state_and_current_lr(rng):
    pdx.seed(2)
    net = nn.Linear(4, 2)
    opt = pdx.optimizer.Adam(1e-2, parameters=net)
    params = {n: v[...] for n, v in opt.trainable_parameters()}
    fresh = opt.init_state(params)
    assert all(float(jnp.abs(a).sum()) == 0 for a in jax.tree.leaves(fresh[0]["update"]["adam"].mu))
    x, y = _data(rng)
    _, grads = pdx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(net)
    opt.step(grads)
    view = opt.opt_state
    np.testing.assert_array_equal(np.asarray(view[0]["update"]["adam"].mu["weight"]),
                                  np.asarray(opt.state_dict()["0/update/adam/mu/weight"]))
    carried = opt.init_state(params)  # the eager step's moments carry over
    np.testing.assert_array_equal(np.asarray(carried[0]["update"]["adam"].mu["weight"]),
                                  np.asarray(view[0]["update"]["adam"].mu["weight"]))
    assert float(opt.current_lr()) == pytest.approx(opt.get_lr()) and opt.get_lr() == pytest.approx(1e-2)
    opt.set_lr(5e-3)
    assert float(opt.current_lr()) == pytest.approx(5e-3)
    sched = pdx.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    scheduled = pdx.optimizer.Adam(sched, parameters=net)
    scheduled_state = scheduled.init_state(params)  # a schedule counts updates: a fresh state of that layout
    assert jax.tree.structure(scheduled_state) == jax.tree.structure(scheduled.transformation().init(params))
    sched.step()
    assert float(scheduled.current_lr()) == pytest.approx(0.05)


def test_state_shardings_follow_logical_names_like_parallel_shard(rng):
    cfg = pdx.parallel.HybridConfig(dp_degree=2, mp_degree=2, sharding_degree=2, sharding_stage=1)
    mesh = cfg.mesh(jax.devices()[:8])
    pdx.seed(3)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    state = pdx.TrainState.create(net, pdx.optimizer.Adam(1e-2, parameters=net))
    shardings = pdx.train.state_shardings(state, cfg, mesh)

    placed = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))  # the Variable path, as a reference
    placed_opt = pdx.optimizer.Adam(1e-2, parameters=placed)
    pdx.parallel.shard([placed, placed_opt], cfg, mesh=mesh)
    for name, var in placed.named_parameters():
        assert shardings.params[name].spec == var.get_value().sharding.spec, name
    mu = shardings.opt_state[0]["update"]["adam"].mu
    for name, var in placed_opt.opt_state[0]["update"]["adam"].mu.items():
        assert mu[name].spec == var.sharding.spec, name  # ZeRO stage 1: moments carry the "sharding" axis
    assert any("sharding" in str(s.spec) for s in jax.tree.leaves(mu))
    assert shardings.step.spec == jax.sharding.PartitionSpec()

    x, y = rng.normal(size=(8, 8)).astype(np.float32), rng.normal(size=(8, 8)).astype(np.float32)
    batch = pdx.parallel.named_sharding(("batch", None), x.shape, cfg, mesh)
    step = pdx.train.jit_step(pdx.train.make_step(_mse), shardings, batch=(batch, batch))
    local, local_metrics = jax.jit(pdx.train.make_step(_mse))(state, (x, y))
    sharded, metrics = step(pdx.train.place_state(state, shardings), (x, y))
    assert sharded.params["0.weight"].sharding == shardings.params["0.weight"]
    assert sharded.opt_state[0]["update"]["adam"].nu["0.weight"].sharding == mu["0.weight"]
    np.testing.assert_allclose(float(metrics["loss"]), float(local_metrics["loss"]), rtol=1e-6)
    for k in state.params:
        np.testing.assert_allclose(np.asarray(sharded.params[k]), np.asarray(local.params[k]), atol=1e-6)


def test_model_writes_the_network_from_the_state_only_when_it_is_read(rng):
    import pdx.nn.functional as F

    pdx.seed(4)
    net = nn.Linear(4, 2)
    before = np.asarray(net.weight[...]).copy()
    model = pdx.Model(net)
    model.prepare(pdx.optimizer.SGD(0.1, parameters=net), F.mse_loss)
    x, y = _data(rng)
    model.train_batch([x], [y])
    np.testing.assert_array_equal(np.asarray(net.weight[...]), before)  # training never touched the Layer
    trained = np.asarray(model.train_state.params["weight"])
    assert not np.array_equal(trained, before)
    np.testing.assert_array_equal(np.asarray(model.network.weight[...]), trained)  # the view, on read
    model.fit((x, y), batch_size=4, verbose=0)
    np.testing.assert_array_equal(np.asarray(net.weight[...]), np.asarray(model.train_state.params["weight"]))
