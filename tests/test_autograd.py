"""pdx.grad / value_and_grad against pure-JAX gradients of the same math."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.nn import Layer


class TwoLayer(Layer):
    def __init__(self):
        super().__init__()
        self.w1 = self.create_parameter([3, 4])
        self.w2 = self.create_parameter([4, 1])
        self.frozen = self.create_parameter([1], attr=pdx.ParamAttr(trainable=False), is_bias=True)
        self.register_buffer("seen", jnp.zeros(()))

    def forward(self, x):
        self.seen.set_value(self.seen[...] + x.shape[0])
        return jnp.tanh(x @ self.w1[...]) @ self.w2[...] + self.frozen[...]


def reference_loss(w1, w2, x):
    return jnp.mean((jnp.tanh(x @ w1) @ w2) ** 2)


def test_layer_gradients_match_pure_jax():
    pdx.seed(3)
    net = TwoLayer()
    x = jnp.asarray(np.random.default_rng(0).normal(size=(5, 3)), jnp.float32)
    loss, grads = pdx.value_and_grad(lambda m, x: jnp.mean(m(x) ** 2))(net, x)
    ref_loss, (g1, g2) = jax.value_and_grad(reference_loss, argnums=(0, 1))(net.w1[...], net.w2[...], x)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-6)
    assert isinstance(grads, pdx.Gradients) and grads.owner is net
    assert list(grads) == ["w1", "w2"], "frozen parameters get no gradient"
    np.testing.assert_allclose(grads["w1"], g1, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grads["w2"], g2, rtol=1e-5, atol=1e-7)
    assert float(net.seen[...]) == 5.0, "buffers updated by the forward pass keep their values"
    halved = jax.tree.map(lambda g: g / 2, grads)
    assert isinstance(halved, pdx.Gradients) and halved.owner is net


def test_argnums_tuple_and_has_aux():
    net = TwoLayer()
    x = jnp.ones((2, 3))

    def loss_fn(model, x):
        out = model(x)
        return (out ** 2).sum(), out

    (loss, out), (g_net, g_x) = pdx.value_and_grad(loss_fn, argnums=(0, 1), has_aux=True)(net, x)
    ref = jax.grad(lambda x: (((jnp.tanh(x @ net.w1[...]) @ net.w2[...]) + net.frozen[...]) ** 2).sum())(x)
    np.testing.assert_allclose(g_x, ref, rtol=1e-5, atol=1e-6)
    assert out.shape == (2, 1) and set(g_net) == {"w1", "w2"}
    grads, aux = pdx.grad(loss_fn, has_aux=True)(net, x)
    np.testing.assert_allclose(grads["w1"], g_net["w1"], rtol=1e-6)


def test_non_scalar_loss_is_a_clear_error():
    net = TwoLayer()
    with pytest.raises(TypeError, match="scalar loss"):
        pdx.grad(lambda m, x: m(x))(net, jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="argnums"):
        pdx.grad(lambda m: m(jnp.ones((1, 3))).sum(), argnums=3)(net)


def test_paddle_tape_form_names_the_pdx_way():
    import jax.numpy as jnp
    import pytest

    import pdx

    x = jnp.ones(2)
    for fn in (pdx.grad, pdx.value_and_grad):
        with pytest.raises(TypeError, match=r"no tape(.|\n)*value_and_grad"):
            fn(x * 2, x)
