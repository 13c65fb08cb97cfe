"""The compiled train step: gradient accumulation, the NaN/Inf guard, float16
loss scaling and gradient clipping, each checked against an independent
numpy computation or against bitwise equality."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn


@jax.custom_vjp
def _poison(x, flag):
    """Identity forward; backward adds `flag` (0, nan or inf) to the gradient."""
    return x


def _poison_fwd(x, flag):
    return x, flag


def _poison_bwd(flag, g):
    return g + flag.reshape(()).astype(g.dtype), jnp.zeros_like(flag)


_poison.defvjp(_poison_fwd, _poison_bwd)


def poisoned_mse(out, label, flag):
    """MSE whose gradient gets `flag` added: finite loss, chosen non-finite gradient."""
    return jnp.mean((_poison(out, flag[0]) - label) ** 2)


def _net(seed=0):
    pdx.seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def _model(net, opt, loss=poisoned_mse, **prepare):
    model = pdx.Model(net)
    model.prepare(opt, loss, **prepare)
    return model


def _batch(rng, n=8):
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = rng.normal(size=(n, 1)).astype(np.float32)
    return x, y


def _host(tree):
    return jax.tree.map(lambda a: np.asarray(a).copy(), tree)


def _bitwise_equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(la, lb))


def test_accumulation_k_microbatches_equals_one_big_batch(rng):
    x, y = _batch(rng, 16)
    flag = np.zeros((16,), np.float32)
    big = _model((n := _net()), pdx.optimizer.Adam(1e-2, parameters=n))
    big.train_batch([x], [y, flag])
    small = _model((n2 := _net()), pdx.optimizer.Adam(1e-2, parameters=n2))
    k = 4
    for i in range(k):
        sl = slice(i * 4, (i + 1) * 4)
        small.train_batch([x[sl]], [y[sl], flag[sl]], update=i == k - 1)
    for name, v in big.train_state.params.items():
        np.testing.assert_allclose(np.asarray(small.train_state.params[name]), np.asarray(v), atol=1e-6, rtol=0)
    assert int(small.train_state.step) == int(big.train_state.step) == 1


def test_fit_accumulate_grad_batches_matches_big_batches(rng):
    x, y = _batch(rng, 32)
    flag = np.zeros((32,), np.float32)
    a = _model((n := _net()), pdx.optimizer.SGD(0.1, parameters=n))
    a.fit((x, y, flag), batch_size=16, epochs=1, shuffle=False, verbose=0)
    b = _model((n2 := _net()), pdx.optimizer.SGD(0.1, parameters=n2))
    b.fit((x, y, flag), batch_size=4, epochs=1, shuffle=False, verbose=0, accumulate_grad_batches=4)
    assert int(a.train_state.step) == int(b.train_state.step) == 2
    for name, v in a.train_state.params.items():
        np.testing.assert_allclose(np.asarray(b.train_state.params[name]), np.asarray(v), atol=1e-6, rtol=0)


def test_nan_gradient_skips_update_bitwise(rng):
    x, y = _batch(rng)
    net = _net()
    model = _model(net, pdx.optimizer.Adam(1e-2, parameters=net))
    model.train_batch([x], [y, np.zeros(8, np.float32)])  # a clean step: Adam moments are non-zero now
    before = _host((model.train_state.params, model.train_state.opt_state, model.train_state.buffers))
    step = int(model.train_state.step)
    loss = model.train_batch([x], [y, np.full(8, np.nan, np.float32)])
    assert np.isfinite(loss[0])  # the loss was fine; only the gradient went NaN
    after = _host((model.train_state.params, model.train_state.opt_state, model.train_state.buffers))
    assert _bitwise_equal(before, after)
    assert int(model.train_state.nonfinite_steps) == 1
    assert int(model.train_state.step) == step
    model.train_batch([x], [y, np.zeros(8, np.float32)])  # a clean step resets the counter and updates
    assert int(model.train_state.nonfinite_steps) == 0
    assert not _bitwise_equal(before[0], _host(model.train_state.params))


def test_n_consecutive_nonfinite_steps_raise_naming_step_and_statistic(rng):
    x, y = _batch(rng)
    net = _net()
    model = _model(net, pdx.optimizer.SGD(0.1, parameters=net), max_nonfinite_steps=3)
    model.train_batch([x], [y, np.zeros(8, np.float32)])
    bad = [y, np.full(8, np.inf, np.float32)]
    model.train_batch([x], bad)
    model.train_batch([x], bad)
    with pytest.raises(FloatingPointError, match=r"at step 2 .*3 consecutive.*gradient global norm=(nan|inf)"):
        model.train_batch([x], bad)


def test_nan_loss_in_fit_is_reported_in_logs(rng):
    x, y = _batch(rng, 16)
    x[8:] = np.nan  # the second batch has a NaN input: NaN loss
    net = _net()
    model = _model(net, pdx.optimizer.SGD(0.1, parameters=net))
    seen = []

    class Grab(pdx.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            seen.append(dict(logs))

    model.fit((x, y, np.zeros(16, np.float32)), batch_size=8, shuffle=False, verbose=0, callbacks=[Grab()])
    assert "skipped" not in seen[0] and seen[1]["skipped"] == 1
    assert int(model.train_state.step) == 1
    assert np.isfinite(np.asarray(model.network[0].weight[...])).all()  # the network never saw the NaN update


def test_float16_grad_scaler_skips_halves_and_regrows(rng):
    x, y = _batch(rng)
    net = _net()
    model = _model(net, pdx.optimizer.SGD(0.01, parameters=net),
                   amp_configs={"level": "O1", "dtype": "float16", "init_loss_scaling": 1024.0,
                                "incr_every_n_steps": 2, "decr_every_n_nan_or_inf": 1})
    clean, inf = [y, np.zeros(8, np.float32)], [y, np.full(8, np.inf, np.float32)]
    model.train_batch([x], clean)
    assert float(model.train_state.loss_scale.scale) == 1024.0
    params = _host(model.train_state.params)
    model.train_batch([x], inf)
    assert float(model.train_state.loss_scale.scale) == 512.0  # halved
    assert _bitwise_equal(params, _host(model.train_state.params))  # skipped
    model.train_batch([x], clean)
    assert float(model.train_state.loss_scale.scale) == 512.0
    model.train_batch([x], clean)
    assert float(model.train_state.loss_scale.scale) == 1024.0  # grown back after incr_every_n_steps=2


def test_float16_training_matches_float32_step(rng):
    """With loss scaling, one float16 O1 step lands near the float32 step."""
    x, y = _batch(rng)
    clean = [y, np.zeros(8, np.float32)]
    ref = _model((n := _net()), pdx.optimizer.SGD(0.1, parameters=n))
    ref.train_batch([x], clean)
    half = _model((n2 := _net()), pdx.optimizer.SGD(0.1, parameters=n2),
                  amp_configs={"dtype": "float16", "init_loss_scaling": 1024.0})  # 65536 overflows float16 here
    half.train_batch([x], clean)
    for name, v in ref.train_state.params.items():
        np.testing.assert_allclose(np.asarray(half.train_state.params[name]), np.asarray(v), atol=2e-3)


def test_clipping_goes_through_the_optimizer(rng):
    """One SGD step with ClipGradByGlobalNorm against a numpy computation."""
    x, y = _batch(rng)
    pdx.seed(3)
    net = nn.Linear(4, 1)
    w0, b0 = np.asarray(net.weight[...]).copy(), np.asarray(net.bias[...]).copy()
    opt = pdx.optimizer.SGD(0.5, parameters=net, grad_clip=pdx.nn.ClipGradByGlobalNorm(0.1))
    model = pdx.Model(net)
    model.prepare(opt, F.mse_loss)
    model.train_batch([x], [y])
    r = x @ w0 + b0 - y                        # (8, 1)
    gw, gb = 2 * x.T @ r / len(x), 2 * r.mean(0)
    norm = np.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    scale = 0.1 / max(norm, 0.1)
    assert norm > 0.1  # the clip is active
    np.testing.assert_allclose(np.asarray(model.train_state.params["weight"]), w0 - 0.5 * scale * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(model.train_state.params["bias"]), b0 - 0.5 * scale * gb, rtol=1e-5, atol=1e-6)


def test_train_state_is_one_pytree_of_arrays():
    net = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.BatchNorm1D(4))
    state = pdx.TrainState.create(net, pdx.optimizer.AdamW(1e-3, parameters=net.parameters()))
    assert sorted(state.params) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert sorted(state.buffers) == ["1.rng", "2._mean", "2._variance"]
    leaves = jax.tree.leaves(state)
    assert all(isinstance(a, jax.Array) and not jnp.issubdtype(a.dtype, jax.dtypes.prng_key) for a in leaves)

    @jax.jit
    def forward(state, x):  # the state rebuilds the model inside a trace
        model = state.merge()
        y = model(x)
        return state.replace(buffers=state.read_buffers(model)), y

    x = jnp.asarray(np.random.default_rng(0).normal(size=(5, 3)), jnp.float32)
    new, y = forward(state, x)
    eager = net(x)  # the same call on the live layer: same dropout key, same statistics
    np.testing.assert_allclose(np.asarray(y), np.asarray(eager), rtol=1e-6, atol=1e-6)
    new.update_model(net)  # after the eager call the layer's buffers equal the traced ones
    np.testing.assert_allclose(np.asarray(net[2]._mean[...]), np.asarray(new.buffers["2._mean"]), rtol=1e-6)


def test_apply_gradients_is_sgd(rng):
    net = nn.Linear(3, 2)
    state = pdx.TrainState.create(net, pdx.optimizer.SGD(0.25, parameters=net))
    g = {"weight": jnp.asarray(rng.normal(size=(3, 2)), jnp.float32), "bias": jnp.ones((2,), jnp.float32)}
    new = state.apply_gradients(g)
    np.testing.assert_allclose(np.asarray(new.params["weight"]), np.asarray(state.params["weight"]) - 0.25 * np.asarray(g["weight"]), rtol=1e-6)
    assert int(new.step) == 1
    with pytest.raises(KeyError, match="differ in keys"):
        state.apply_gradients({"weight": g["weight"]})


def test_train_state_of_a_layer_whose_parameters_have_two_names():
    # nn.LSTM reaches each weight as `weight_ih_l0` and as `0.cell.weight_ih`
    net = nn.Sequential(nn.Embedding(5, 3), nn.LSTM(3, 4))
    state = pdx.TrainState.create(net, pdx.optimizer.SGD(0.1, parameters=net.parameters()))
    assert len(state.params) == 1 + 4 and "0.weight" in state.params
    g = {k: jnp.ones_like(v) for k, v in state.params.items()}
    new = state.apply_gradients(g)
    for k in g:
        np.testing.assert_allclose(np.asarray(new.params[k]), np.asarray(state.params[k]) - 0.1, rtol=1e-6)
