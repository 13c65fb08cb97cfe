"""Linear, Embedding, Flatten, Identity against paddle."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn as nn
from layer_testutil import (assert_close, axis_names, assert_grads_match, load_from_paddle, load_into_paddle, pd_forward,
                            perturb)


def test_linear_matches_paddle_forward_grad_and_roundtrip(paddle, rng):
    pd_layer = paddle.nn.Linear(5, 7)
    layer = load_from_paddle(nn.Linear(5, 7), pd_layer)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x))
    assert_grads_match(paddle, layer, pd_layer, [x], rng)
    perturb(layer, rng)
    load_into_paddle(paddle, pd_layer, layer)
    assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x))


def test_linear_structure_init_and_repr(paddle):
    pdx.seed(0)
    layer = nn.Linear(3, 4, bias_attr=False)
    assert layer.bias is None and list(layer.state_dict()) == ["weight"]
    full = nn.Linear(300, 200)
    w = np.asarray(full.weight[...])
    limit = np.sqrt(6.0 / 500)  # XavierUniform, Paddle's default
    assert w.shape == (300, 200) and np.abs(w).max() <= limit and np.abs(w).max() > 0.9 * limit
    assert np.all(np.asarray(full.bias[...]) == 0)
    assert repr(nn.Linear(3, 4)) == repr(paddle.nn.Linear(3, 4)) == "Linear(in_features=3, out_features=4, dtype=float32)"
    assert axis_names(full.weight) == (nn.axes.EMBED, nn.axes.MLP)
    assert axis_names(full.bias) == (nn.axes.MLP,)
    custom = nn.Linear(2, 2, axis_names=("mlp", "embed"))
    assert axis_names(custom.weight) == ("mlp", "embed")
    attr = pdx.nn.ParamAttr(initializer=pdx.nn.initializer.Constant(0.5))
    assert float(nn.Linear(2, 2, weight_attr=attr).weight[...][0, 0]) == 0.5


def test_linear_rngs_and_errors():
    a, b = nn.Linear(3, 4, rngs=1), nn.Linear(3, 4, rngs=1)
    np.testing.assert_array_equal(a.weight[...], b.weight[...])
    assert nn.Linear(2, 2, dtype="bfloat16").weight[...].dtype == jnp.bfloat16
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(0, 3)
    with pytest.raises(ValueError, match="axis_names"):
        nn.Linear(2, 3, axis_names=("embed",))
    with pytest.raises(ValueError, match="linear"):
        nn.Linear(3, 4)(jnp.ones((2, 5)))


def test_embedding_padding_idx_matches_paddle(paddle, rng):
    pd_layer = paddle.nn.Embedding(11, 6, padding_idx=-2)
    layer = nn.Embedding(11, 6, padding_idx=-2)
    assert np.all(np.asarray(layer.weight[...][9]) == 0)  # Paddle zeroes the padding row at init
    load_from_paddle(layer, pd_layer)
    ids = rng.integers(0, 11, (3, 5))
    ids[0, :2] = 9
    assert_close(layer(jnp.asarray(ids)), pd_layer(paddle.to_tensor(ids)))
    assert axis_names(layer.weight) == (nn.axes.VOCAB, nn.axes.EMBED)
    assert repr(layer) == repr(pd_layer) == "Embedding(11, 6, padding_idx=-2, sparse=False, scale_grad_by_freq=False)"
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(4, 2, padding_idx=4)


def test_flatten_and_identity(paddle, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for start, stop in [(1, -1), (0, 1), (2, 3), (1, 2)]:
        ours = nn.Flatten(start, stop)(jnp.asarray(x))
        np.testing.assert_array_equal(ours, paddle.nn.Flatten(start, stop)(paddle.to_tensor(x)).numpy())
    assert nn.Identity(3, foo=1)(x) is x
    assert repr(nn.Flatten()) == repr(paddle.nn.Flatten()) == "Flatten()"
    with pytest.raises(ValueError, match="start_axis"):
        nn.Flatten(3, 1)(jnp.asarray(x))
