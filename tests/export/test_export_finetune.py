"""A TranslatedLayer loaded from an artifact fine-tunes like any Layer:
20 Adam steps on scikit-learn digits lower the loss, and the tuned layer
exports again."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn
from pdx.jit import InputSpec


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    return (images / 16.0).astype(np.float32), labels.astype(np.int32)


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


@pdx.jit
def train_step(model, opt, x, y):
    loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
    opt.step(grads)
    return loss


def test_translated_layer_fine_tunes_on_digits(tmp_path, digits):
    images, labels = digits
    pdx.seed(0)
    net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    path = pdx.jit.save(net, tmp_path / "mlp", [InputSpec([None, 64], "float32", "image")])

    layer = pdx.jit.load(path)
    before = {k: np.asarray(v) for k, v in layer.state_dict().items()}
    opt = pdx.optimizer.Adam(learning_rate=1e-2, parameters=layer.parameters())
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(20):
        idx = rng.choice(len(images), 128, replace=False)
        losses.append(float(train_step(layer, opt, jnp.asarray(images[idx]), jnp.asarray(labels[idx]))))
    x_all, y_all = jnp.asarray(images), jnp.asarray(labels)
    print(f"fine-tune losses: first {losses[0]:.3f}, last {losses[-1]:.3f}")
    assert losses[-1] < 0.6 * losses[0]
    assert float(loss_fn(layer, x_all, y_all)) < 0.6 * float(loss_fn(net, x_all, y_all))
    assert all(not np.array_equal(before[k], np.asarray(v)) for k, v in layer.state_dict().items())

    # The tuned layer is a Layer like any other: it exports again, weights included.
    again = pdx.jit.save(layer, tmp_path / "tuned", [InputSpec([None, 64], "float32", "image")])
    np.testing.assert_allclose(pdx.export.load(again)(images[:5]), np.asarray(layer(x_all[:5])), rtol=1e-5, atol=1e-5)
    # and the tuned weights load into the original architecture
    net.set_state_dict(layer.state_dict())
    np.testing.assert_allclose(np.asarray(net(x_all[:5])), np.asarray(layer(x_all[:5])), rtol=1e-5, atol=1e-5)


def test_non_differentiable_export_says_so(tmp_path):
    net = nn.Linear(4, 2)
    layer = pdx.jit.load(pdx.jit.save(net, tmp_path / "lin", [InputSpec([None, 4])], differentiable=False))
    np.testing.assert_allclose(np.asarray(layer(jnp.ones((1, 4)))), np.asarray(net(jnp.ones((1, 4)))), rtol=1e-6)
    with pytest.raises(TypeError, match="exported with differentiable=False"):
        pdx.grad(lambda m: m(jnp.ones((1, 4))).sum())(layer)
