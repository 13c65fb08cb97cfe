"""The public surface of pdx.nn.functional: names, docstrings and Paddle-identical signatures."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F

# Deliberate differences from paddle.nn.functional, each documented in the op's docstring.
EXTRA_KEYWORD_ONLY = {
    "alpha_dropout": ["key"], "dropout": ["key"], "dropout1d": ["key"], "dropout2d": ["key"], "dropout3d": ["key"],
    "feature_alpha_dropout": ["key"], "rrelu": ["key"], "scaled_dot_product_attention": ["key_rng"],
    "class_center_sample": ["key"], "fractional_max_pool2d": ["key"], "fractional_max_pool3d": ["key"],
    "gumbel_softmax": ["key"], "flash_attn_qkvpacked": ["key"], "flashmask_attention": ["key_rng"],
}
NOT_IN_PADDLE = {"batch_norm_with_stats"}


def test_all_is_sorted_and_every_name_is_a_documented_function():
    assert F.__all__ == sorted(F.__all__)
    assert len(F.__all__) == len(set(F.__all__))
    for name in F.__all__:
        fn = getattr(F, name)
        assert callable(fn), name
        doc = inspect.getdoc(fn)
        assert doc and "Example" in doc, f"{name} needs a docstring with an example"


@pytest.mark.parametrize("name", [n for n in F.__all__ if n not in NOT_IN_PADDLE])
def test_signature_matches_paddle(paddle, name):
    ours = inspect.signature(getattr(F, name)).parameters.values()
    ref = inspect.signature(getattr(paddle.nn.functional, name)).parameters.values()
    positional = lambda ps: [(p.name, p.default) for p in ps if p.kind != p.KEYWORD_ONLY]  # noqa: E731
    keyword = lambda ps: [p.name for p in ps if p.kind == p.KEYWORD_ONLY]  # noqa: E731
    assert positional(ours) == positional(ref)
    assert keyword(ours) == keyword(ref) + EXTRA_KEYWORD_ONLY.get(name, [])


def test_ops_compose_under_jit_grad_and_vmap(rng):
    x = jnp.asarray(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    labels = jnp.array([1, 3])

    def loss(w, x):
        h = F.relu(F.conv2d(x, w, padding=1))
        h = F.adaptive_avg_pool2d(F.max_pool2d(h, 2), 1).reshape(2, 4)
        return F.cross_entropy(F.layer_norm(h, 4), labels)

    eager = loss(w, x)
    value, grad = jax.jit(jax.value_and_grad(loss))(w, x)
    np.testing.assert_allclose(value, eager, rtol=1e-5)
    assert grad.shape == w.shape and np.all(np.isfinite(np.asarray(grad)))
    per_example = jax.vmap(lambda xi: F.softmax(F.linear(xi, jnp.ones((8, 2)))))(x.reshape(6, 8, 8))
    assert per_example.shape == (6, 8, 2)


def test_list_inputs_and_non_tensor_errors():
    np.testing.assert_allclose(F.relu([-1.0, 2.0]), [0.0, 2.0])
    with pytest.raises(TypeError, match="relu: argument `x` must be a tensor"):
        F.relu(object())
    with pytest.raises(ValueError, match="softmax: out= is not supported"):
        F.softmax(jnp.ones(2), out=jnp.ones(2))
