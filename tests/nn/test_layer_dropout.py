"""Dropout layers: masks, modes, reproducibility under pdx.seed and under nnx.jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import pdx
import pdx.nn as nn

X = jnp.ones((64, 32))


def test_dropout_masks_and_modes(paddle):
    d = nn.Dropout(0.25)
    y = np.asarray(d(X))
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < (y == 0).mean() < 0.35
    assert nn.Dropout(0.0)(X) is X or np.array_equal(nn.Dropout(0.0)(X), X)
    np.testing.assert_array_equal(d.eval()(X), X)
    down = nn.Dropout(0.3, mode="downscale_in_infer")
    assert set(np.unique(np.asarray(down(X)))) <= {0.0, 1.0}
    pd_down = paddle.nn.Dropout(0.3, mode="downscale_in_infer")
    pd_down.eval()
    np.testing.assert_allclose(down.eval()(X), pd_down(paddle.to_tensor(np.asarray(X))).numpy(), rtol=1e-6)
    rows = np.asarray(nn.Dropout(0.5, axis=0)(X))
    assert all(len(set(r)) == 1 for r in rows)  # one mask value per index of axis 0
    assert repr(nn.Dropout(0.5, axis=1)) == repr(paddle.nn.Dropout(0.5, axis=1))
    maps = np.asarray(nn.Dropout2D(0.5)(jnp.ones((4, 8, 3, 3))))
    assert all(len(set(m.ravel())) == 1 for m in maps.reshape(32, 9))
    np.testing.assert_array_equal(nn.Dropout3D(0.5).eval()(jnp.ones((1, 2, 2, 2, 2))), 1.0)
    assert np.asarray(nn.AlphaDropout(0.2).eval()(X)).min() == 1.0
    with pytest.raises(ValueError, match="Dropout.*p="):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="mode"):
        nn.Dropout(0.1, mode="scale")


def test_dropout_reproducible_under_seed_and_rngs():
    pdx.seed(3)
    d = nn.Dropout(0.5)
    a1, a2 = d(X), d(X)
    assert not np.array_equal(a1, a2)  # the layer's key advances per call
    pdx.seed(3)
    d2 = nn.Dropout(0.5)
    np.testing.assert_array_equal(d2(X), a1)
    np.testing.assert_array_equal(d2(X), a2)
    np.testing.assert_array_equal(nn.Dropout(0.5, rngs=7)(X), nn.Dropout(0.5, rngs=jax.random.key(7))(X))
    state = d.rng[...]
    d.eval()(X)
    assert d.rng[...] is state  # eval does not consume randomness


def test_dropout_under_nnx_jit_advances_like_eager():
    eager = nn.Dropout(0.5, rngs=0)
    traced = nn.Dropout(0.5, rngs=0)
    step = nnx.jit(lambda layer, x: layer(x))
    j1, j2 = step(traced, X), step(traced, X)
    assert not np.array_equal(j1, j2)
    np.testing.assert_array_equal(j1, eager(X))
    np.testing.assert_array_equal(j2, eager(X))
    np.testing.assert_array_equal(jax.random.key_data(traced.rng[...]), jax.random.key_data(eager.rng[...]))


def test_dropout_inside_pdx_jit():
    net = nn.Sequential(nn.Dropout(0.5, rngs=1))

    @pdx.jit
    def step(x):
        return net(x)

    y1, y2 = step(X), step(X)
    assert not np.array_equal(y1, y2)
    assert set(np.unique(np.asarray(y1))) <= {0.0, 2.0}
