"""bf16 parameters with float32 master weights train the same in every engine.

The loss `sum(w * c)` has the gradient `c` whatever `w` is (integers, exact in
bfloat16), so a float32 AdamW run from the same starting values is the exact
reference for the master copies: eager `Optimizer.step`, `TrainState` +
`make_step` and `pdx.Model.fit` must all land on it, and so must Paddle's own
AdamW (Paddle keeps its master copy in float32 with the float32 kernel; its CPU
build has no bfloat16 AdamW, so the oracle runs the float32 kernel its master
weights run). Without masters, every 1e-5 update is below bfloat16's spacing
and is rounded away: that run drifts, which shows the comparison can fail.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import nn

STEPS, LR, WD = 300, 1e-5, 0.01
C = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0
W0 = np.asarray(jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (4, 3)), jnp.bfloat16).astype(jnp.float32))


class Weights(nn.Layer):
    def __init__(self, dtype):
        super().__init__()
        self.w = self.create_parameter([4, 3], dtype=dtype,
                                       default_initializer=nn.initializer.Assign(W0.astype(np.float32)))

    def forward(self, c):  # per-sample sum(w * c): the loss is its mean
        return (self.w.astype(jnp.float32)[None] * c).sum(axis=(1, 2))


def _loss(model, c):
    return model(c).mean()


def _adamw(net, multi_precision):
    return pdx.optimizer.AdamW(LR, parameters=net, weight_decay=WD, multi_precision=multi_precision)


@pytest.fixture(scope="module")
def reference():
    net = Weights("float32")
    opt = _adamw(net, False)
    c = jnp.asarray(C)[None]
    step = pdx.jit(lambda m, o, c: o.step(pdx.grad(_loss)(m, c)))
    for _ in range(STEPS):
        step(net, opt, c)
    return np.asarray(net.w[...])


def _eager(multi_precision):
    net = Weights("bfloat16")
    opt = _adamw(net, multi_precision)
    c = jnp.asarray(C)[None]
    for _ in range(STEPS):
        opt.step(pdx.grad(_loss)(net, c))
    return net, opt


def test_eager_masters_equal_float32_reference(reference):
    net, opt = _eager(True)
    master = np.asarray(opt.state_dict()["master_weights/w"])
    assert master.dtype == np.float32
    np.testing.assert_allclose(master, reference, atol=1e-6, rtol=0)
    # the bf16 parameter is its master rounded
    np.testing.assert_array_equal(np.asarray(net.w[...]), np.asarray(jnp.asarray(master).astype(jnp.bfloat16)))
    mu = opt.state_dict()["0/update/0/adam/mu/w"] if "0/update/0/adam/mu/w" in opt.state_dict() else None
    moments = [v for k, v in opt.state_dict().items() if "/mu/" in k or "/nu/" in k]
    assert moments and all(np.asarray(v).dtype == np.float32 for v in moments), (mu, moments)


def test_without_masters_bf16_drifts(reference):
    net, opt = _eager(False)
    assert not any(k.startswith("master_weights/") for k in opt.state_dict())
    drift = np.abs(np.asarray(net.w[...]).astype(np.float32) - reference).max()
    assert drift > 1e-4, drift  # updates below bf16's spacing were rounded away


def test_train_state_make_step_keeps_masters(reference):
    net = Weights("bfloat16")
    state = pdx.TrainState.create(net, _adamw(net, True))
    leaves = jax.tree.leaves(state.opt_state)
    assert all(x.dtype != jnp.bfloat16 for x in leaves), [x.dtype for x in leaves]
    step = jax.jit(pdx.train.make_step(lambda m, c: _loss(m, c)))
    c = jnp.asarray(C)[None]
    for _ in range(STEPS):
        state, _ = step(state, c)
    assert state.params["w"].dtype == jnp.bfloat16
    master = np.asarray(state.opt_state.masters["w"])
    np.testing.assert_allclose(master, reference, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(np.asarray(state.params["w"]), np.asarray(jnp.asarray(master).astype(jnp.bfloat16)))


def test_model_fit_keeps_masters(reference):
    net = Weights("bfloat16")
    model = pdx.Model(net)
    model.prepare(_adamw(net, True), loss=lambda out: out.mean())
    data = pdx.io.TensorDataset([np.repeat(C[None], STEPS, axis=0)])
    model.fit(data, batch_size=1, epochs=1, shuffle=False, verbose=0)
    state = model.train_state
    assert int(state.step) == STEPS
    np.testing.assert_allclose(np.asarray(state.opt_state.masters["w"]), reference, atol=1e-6, rtol=0)


def test_reference_is_paddles_adamw(reference):
    paddle = pytest.importorskip("paddle")
    paddle.set_device("cpu")

    class PWeights(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([4, 3], dtype="float32",
                                           default_initializer=paddle.nn.initializer.Assign(W0))

    net = PWeights()
    opt = paddle.optimizer.AdamW(learning_rate=LR, parameters=net.parameters(), weight_decay=WD)
    c = paddle.to_tensor(C)
    for _ in range(STEPS):
        (net.w * c).sum().backward()
        opt.step()
        opt.clear_grad()
    np.testing.assert_allclose(net.w.numpy(), reference, atol=1e-6, rtol=0)
