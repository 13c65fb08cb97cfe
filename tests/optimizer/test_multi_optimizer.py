"""Several optimizers, each over part of one model: a GAN's generator and
discriminator with one Adam each, and a frozen backbone with a head optimizer.

Each optimizer takes the gradients `pdx.value_and_grad` returns for the whole
model (matched by identity) or a plain dict keyed by the model's state_dict
names (matched by name under the sublayer's prefix), and names its state by
the parameters' state_dict names. The GAN trains against paddle 3.3.1 from the
same weights on the same data: the per-step losses agree.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import nn
from pdx.nn import functional as F

STEPS = 20
BATCH, NOISE, HIDDEN = 16, 2, 16


def _data():
    rng = np.random.default_rng(7)
    real = (rng.normal(size=(STEPS, BATCH, 2)) * [0.5, 0.2] + [1.0, -1.0]).astype("float32")
    noise = rng.normal(size=(STEPS, BATCH, NOISE)).astype("float32")
    return real, noise


def _pdx_gan():
    class MLP(nn.Layer):
        def __init__(self, i, o):
            super().__init__()
            self.fc1 = nn.Linear(i, HIDDEN)
            self.fc2 = nn.Linear(HIDDEN, o)

        def forward(self, x):
            return self.fc2(F.tanh(self.fc1(x)))

    gen, dis = MLP(NOISE, 2), MLP(2, 1)
    return gen, dis, nn.Sequential(gen, dis)


def _bce(logits, label):
    return F.binary_cross_entropy_with_logits(logits, jnp.full(logits.shape, label, jnp.float32))


def d_loss_fn(model, real, z):
    gen, dis = model[0], model[1]
    return _bce(dis(real), 1.0) + _bce(dis(gen(z)), 0.0)


def g_loss_fn(model, z):
    return _bce(model[1](model[0](z)), 1.0)


def _paddle_losses(paddle, init):
    pnn, PF = paddle.nn, paddle.nn.functional

    class MLP(pnn.Layer):
        def __init__(self, i, o):
            super().__init__()
            self.fc1 = pnn.Linear(i, HIDDEN)
            self.fc2 = pnn.Linear(HIDDEN, o)

        def forward(self, x):
            return self.fc2(PF.tanh(self.fc1(x)))

    gen, dis = MLP(NOISE, 2), MLP(2, 1)
    model = pnn.Sequential(gen, dis)
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in init.items()})
    opt_g = paddle.optimizer.Adam(0.01, parameters=gen.parameters())
    opt_d = paddle.optimizer.Adam(0.01, parameters=dis.parameters())

    def bce(logits, label):
        return PF.binary_cross_entropy_with_logits(logits, paddle.full(logits.shape, label, "float32"))

    real, noise = _data()
    out = []
    for r, z in zip(real, noise):
        r, z = paddle.to_tensor(r), paddle.to_tensor(z)
        d_loss = bce(dis(r), 1.0) + bce(dis(gen(z)), 0.0)
        d_loss.backward()
        opt_d.step()
        opt_d.clear_grad()
        opt_g.clear_grad()  # d_loss also reached the generator; only opt_d steps on it
        g_loss = bce(dis(gen(z)), 1.0)
        g_loss.backward()
        opt_g.step()
        opt_g.clear_grad()
        opt_d.clear_grad()
        out.append((float(d_loss), float(g_loss)))
    return np.array(out)


def _pdx_losses(init, mode):
    gen, dis, model = _pdx_gan()
    model.set_state_dict(init)
    opt_g = pdx.optimizer.Adam(0.01, parameters=gen.parameters())
    opt_d = pdx.optimizer.Adam(0.01, parameters=dis.parameters())

    def train_step(model, opt_g, opt_d, r, z):
        d_loss, grads = pdx.value_and_grad(d_loss_fn)(model, r, z)  # the whole model's gradients
        opt_d.step(grads if mode != "plain" else dict(grads))
        g_loss, grads = pdx.value_and_grad(g_loss_fn)(model, z)
        opt_g.step(grads if mode != "plain" else {k: g for k, g in grads.items()})
        return d_loss, g_loss

    step = pdx.jit(train_step) if mode == "jit" else train_step
    real, noise = _data()
    out = [tuple(map(float, step(model, opt_g, opt_d, jnp.asarray(r), jnp.asarray(z)))) for r, z in zip(real, noise)]
    return np.array(out), opt_g, opt_d


@pytest.fixture(scope="module")
def gan_init():
    pdx.seed(3)
    _, _, model = _pdx_gan()
    return {k: np.asarray(v) for k, v in model.state_dict().items()}


@pytest.mark.parametrize("mode", ["grads", "plain", "jit"])
def test_gan_two_optimizers_match_paddle(paddle, gan_init, mode):
    want = _paddle_losses(paddle, gan_init)
    got, opt_g, opt_d = _pdx_losses(gan_init, mode)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert not np.allclose(want[0], want[-1])  # it trained
    # state is named by the parameters' state_dict names in the Layer they were listed from
    assert [n for n, _ in opt_d.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert "0/update/adam/mu/fc2.weight" in opt_g.state_dict()


def test_state_names_and_checkpoint_round_trip(tmp_path):
    pdx.seed(0)
    gen, dis, model = _pdx_gan()
    opt = pdx.optimizer.Adam(0.01, parameters=dis.parameters())
    z = jnp.ones((4, NOISE))
    opt.step(pdx.grad(g_loss_fn)(model, z))
    saved = opt.state_dict()
    assert sorted(k for k in saved if "/mu/" in k) == [f"0/update/adam/mu/{n}" for n in
                                                        ("fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight")]
    pdx.save(saved, str(tmp_path / "opt.pdopt"))
    opt2 = pdx.optimizer.Adam(0.01, parameters=dis.parameters())
    opt2.set_state_dict(pdx.load(str(tmp_path / "opt.pdopt")))
    for k, v in opt2.state_dict().items():
        np.testing.assert_array_equal(v, saved[k])


def test_names_from_filtered_and_concatenated_lists():
    gen, dis, model = _pdx_gan()
    both = pdx.optimizer.SGD(0.1, parameters=model.parameters())
    assert [n for n, _ in both.named_parameters()][:2] == ["0.fc1.weight", "0.fc1.bias"]
    weights = pdx.optimizer.SGD(0.1, parameters=[p for p in model.parameters() if p.ndim == 2])
    assert [n for n, _ in weights.named_parameters()] == ["0.fc1.weight", "0.fc2.weight", "1.fc1.weight", "1.fc2.weight"]


def test_frozen_backbone_head_optimizer():
    pdx.seed(1)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    head = net[2]
    opt = pdx.optimizer.Momentum(0.1, parameters=head.parameters())
    backbone = {k: np.asarray(v) for k, v in net.state_dict().items() if k.startswith("0.")}
    head_before = np.asarray(head.weight[...])
    x = jnp.ones((5, 3))
    for _ in range(3):
        loss, grads = pdx.value_and_grad(lambda m, x: (m(x) ** 2).mean())(net, x)
        opt.step(grads)
    for k, v in backbone.items():
        np.testing.assert_array_equal(net.state_dict()[k], v)
    assert not np.allclose(net.state_dict()["2.weight"], head_before)
    assert [n for n, _ in opt.named_parameters()] == ["weight", "bias"]


def test_missing_own_gradient_is_named():
    gen, dis, model = _pdx_gan()
    opt = pdx.optimizer.Adam(0.01, parameters=dis.parameters())
    grads = pdx.grad(lambda g, z: g(z).sum())(gen, jnp.ones((2, NOISE)))  # the generator's only
    with pytest.raises(ValueError, match=r"no gradient for parameter\(s\) \['fc1.weight'"):
        opt.step(grads)
    with pytest.raises(ValueError, match=r"no gradient for parameter\(s\) \['fc2.weight', 'fc2.bias'\]"):
        opt.step({"1.fc1.weight": jnp.zeros((2, HIDDEN)), "1.fc1.bias": jnp.zeros(HIDDEN)})


def test_gradients_of_another_copy_match_by_name():
    # A Gradients whose owner is another copy of the model (what nnx.jit's
    # re-created objects give) holds none of the optimizer's parameters: names decide.
    gen, dis, model = _pdx_gan()
    copy = _pdx_gan()[2]
    copy.set_state_dict(model.state_dict())
    opt = pdx.optimizer.SGD(1.0, parameters=dis.parameters())
    grads = pdx.grad(g_loss_fn)(copy, jnp.ones((2, NOISE)))
    assert grads.owner is copy
    opt.step(grads)
    np.testing.assert_allclose(dis.fc2.bias[...], copy[1].fc2.bias[...] - grads["1.fc2.bias"], rtol=1e-6)


def test_fit_checkpoint_shows_optimizer_state_by_parameter_name(tmp_path, capsys):
    import json

    from pdx.cli import main

    pdx.seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model = pdx.Model(net)
    model.prepare(pdx.optimizer.Adam(0.01, parameters=net.parameters()), nn.CrossEntropyLoss())
    rng = np.random.default_rng(0)
    data = pdx.io.TensorDataset([rng.random((8, 3), dtype=np.float32), rng.integers(0, 2, (8, 1))])
    model.fit(data, batch_size=4, epochs=1, save_dir=str(tmp_path), verbose=0)
    assert main(["ckpt", "inspect", str(tmp_path / "final.pdopt.safetensors"), "--json"]) == 0
    names = [row["name"] for row in json.loads(capsys.readouterr().out)["arrays"]]
    assert [n for n in names if "/mu/" in n] == [f"opt/0/update/adam/mu/{p}" for p in ("0.bias", "0.weight", "2.bias", "2.weight")]
