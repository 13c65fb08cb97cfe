"""GradScaler in Paddle's eager form (`scale(loss)`, `step`, `update`, `minimize`) against paddle's rule.

Paddle: `scaled = scaler.scale(loss); scaled.backward(); scaler.step(opt); scaler.update()`.
pdx: the gradients of the scaled loss are passed (`scaler.step(opt, grads)`), the rest is the
same. Both train the same Linear for a few steps (paddle's autograd and SGD, paddle's scaler
rule), one of them with an inf gradient (skipped), and must agree on the weights and the scale.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx


def _batches():
    rng = np.random.default_rng(0)
    out = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(5)]
    out[2][0, 0] = np.inf  # this step's gradients are not finite: skipped, the scale shrinks
    return out


class _PaddleRule:
    """Paddle's AmpScaler (`_unscale`, `step`, `_update`, from paddle/amp/grad_scaler.py) over
    paddle tensors: installed paddle disables GradScaler on a CPU-only machine, so its loop
    is written out here with paddle's autograd and optimizer."""

    def __init__(self, init_loss_scaling, incr_ratio, decr_ratio, incr_every_n_steps, decr_every_n_nan_or_inf):
        self.scale, self.incr_ratio, self.decr_ratio = init_loss_scaling, incr_ratio, decr_ratio
        self.incr_every, self.decr_every = incr_every_n_steps, decr_every_n_nan_or_inf
        self.incr_count = self.decr_count = 0
        self.found_inf = False

    def step(self, opt, params):
        for p in params:
            p.grad.set_value(p.grad / self.scale)
        self.found_inf = not all(np.isfinite(p.grad.numpy()).all() for p in params)
        if not self.found_inf:
            opt.step()

    def update(self):
        if self.found_inf:
            self.incr_count, self.decr_count = 0, self.decr_count + 1
            if self.decr_count == self.decr_every:
                self.scale, self.decr_count = self.scale * self.decr_ratio, 0
        else:
            self.decr_count, self.incr_count = 0, self.incr_count + 1
            if self.incr_count == self.incr_every:
                self.scale, self.incr_count = self.scale * self.incr_ratio, 0


def test_eager_form_matches_paddle(paddle):
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(2,)).astype(np.float32)
    kw = dict(init_loss_scaling=1024.0, incr_ratio=2.0, decr_ratio=0.5, incr_every_n_steps=2,
              decr_every_n_nan_or_inf=1)

    pnet = paddle.nn.Linear(3, 2)
    pnet.set_state_dict({"weight": paddle.to_tensor(w), "bias": paddle.to_tensor(b)})
    popt = paddle.optimizer.SGD(0.1, parameters=pnet.parameters())
    rule = _PaddleRule(**kw)
    net = pdx.nn.Linear(3, 2)
    net.set_state_dict({"weight": w, "bias": b})
    opt = pdx.optimizer.SGD(0.1, parameters=net.parameters())
    scaler = pdx.amp.GradScaler(**kw)

    def loss_fn(m, x):
        return scaler.scale((m(x) ** 2).mean())

    scales = []
    for i, x in enumerate(_batches()):
        scaled = (pnet(paddle.to_tensor(x)) ** 2).mean() * rule.scale
        scaled.backward()
        rule.step(popt, pnet.parameters())
        rule.update()
        popt.clear_grad()
        _, grads = pdx.value_and_grad(loss_fn)(net, jnp.asarray(x))
        if i % 2:
            scaler.minimize(opt, grads)
        else:
            scaler.step(opt, grads)
            scaler.update()
        scales.append(float(scaler.get_loss_scaling()))
        assert scales[-1] == rule.scale, (i, scales, rule.scale)
        np.testing.assert_allclose(np.asarray(net.weight), pnet.weight.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(net.bias), pnet.bias.numpy(), rtol=1e-5, atol=1e-6)
    assert scales == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0]  # grew, shrank at the inf step, grew
    state = scaler.state_dict()
    assert (state["incr_count"], state["decr_count"]) == (rule.incr_count, rule.decr_count)
    again = pdx.amp.GradScaler(**kw)
    again.load_state_dict(state)
    assert float(again.get_loss_scaling()) == float(scaler.get_loss_scaling())


def test_paddle_calls_without_gradients_name_the_pdx_form():
    net = pdx.nn.Linear(3, 1)
    opt = pdx.optimizer.SGD(0.1, parameters=net.parameters())
    scaler = pdx.amp.GradScaler()
    loss = scaler.scale(net(jnp.ones((2, 3))).mean())
    with pytest.raises(TypeError, match=r"scaler\.step\(optimizer, grads\)"):
        scaler.step(opt)
    with pytest.raises(TypeError, match=r"scaler\.minimize\(optimizer, grads\)"):
        scaler.minimize(opt, loss)
    with pytest.raises(RuntimeError, match=r"call scaler\.step"):
        scaler.update()
    # the pure form is unchanged
    state = scaler.init()
    assert float(scaler.scale(jnp.ones(()), state)) == 65536.0
    assert float(scaler.update(state, jnp.asarray(False)).scale) == 32768.0


def test_unscale_then_clip_then_step_and_paddle_setters():
    """`unscale_(opt, grads)` returns unscaled gradients for clipping; `step` then takes them as they are."""
    net = pdx.nn.Linear(3, 2)
    opt = pdx.optimizer.SGD(0.5, parameters=net.parameters())
    scaler = pdx.amp.GradScaler(init_loss_scaling=64.0)
    w0 = np.asarray(net.weight)
    x = jnp.asarray(_batches()[0])
    _, grads = pdx.value_and_grad(lambda m, x: scaler.scale(m(x).sum()))(net, x)
    unscaled = scaler.unscale_(opt, grads)
    g_w = np.tile(np.asarray(x).sum(0)[:, None], (1, 2))  # d(sum(x @ W + b))/dW, independent of W
    np.testing.assert_allclose(np.asarray(unscaled["weight"]), g_w, rtol=1e-6)
    clipped = jax.tree.map(lambda v: jnp.clip(v, -1.0, 1.0), unscaled)
    with pytest.raises(RuntimeError, match="already called"):
        scaler.unscale_(opt, grads)
    scaler.step(opt, clipped)
    scaler.update()
    np.testing.assert_allclose(np.asarray(net.weight), w0 - 0.5 * np.clip(g_w, -1.0, 1.0), rtol=1e-6, atol=1e-6)
    # after update() the next step unscales again
    _, grads = pdx.value_and_grad(lambda m, x: scaler.scale(m(x).sum()))(net, x)
    w1 = np.asarray(net.weight)
    scaler.step(opt, grads)
    scaler.update()
    np.testing.assert_allclose(np.asarray(net.weight), w1 - 0.5 * g_w, rtol=1e-5, atol=1e-5)
    # Paddle's getters and setters, checked like the constructor
    scaler.set_init_loss_scaling(1024.0)
    assert scaler.get_init_loss_scaling() == 1024.0 and float(scaler.get_loss_scaling()) == 1024.0
    scaler.set_incr_ratio(3.0), scaler.set_decr_ratio(0.25)
    scaler.set_incr_every_n_steps(7), scaler.set_decr_every_n_nan_or_inf(2)
    assert (scaler.get_incr_ratio(), scaler.get_decr_ratio(), scaler.get_incr_every_n_steps(),
            scaler.get_decr_every_n_nan_or_inf()) == (3.0, 0.25, 7, 2)
    with pytest.raises(ValueError, match="decr_ratio"):
        scaler.set_decr_ratio(2.0)
    assert scaler.get_decr_ratio() == 0.25
