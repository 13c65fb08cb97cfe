"""Shapes as Paddle code writes them: lists holding 1-element tensors, and `pdx.shape(x)`.

`paddle.reshape(x, [t, 2])` with `t = paddle.to_tensor([3])`, `paddle.full([t, 3], v)`,
and `paddle.shape(x)` as a shape or repeat argument, eagerly and under `pdx.jit` (where
`pdx.shape` is a static numpy array, so its values are there while tracing). JAX's
`x.shape` stays a tuple (benchmarks/RESULTS.md, "x.shape"); the idioms that need a list
are written with `list(x.shape)`.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_one_element_tensors_in_shape_lists(paddle):
    x, px = jnp.asarray(X), paddle.to_tensor(X)
    three, pthree = jnp.asarray([3]), paddle.to_tensor([3])
    cases = [
        (pdx.reshape(x, [three, -1]), paddle.reshape(px, [pthree, -1])),
        (x.reshape([three, 8]), px.reshape([pthree, 8])),
        (pdx.full([jnp.asarray([2]), three], 1.5), paddle.full([paddle.to_tensor([2]), pthree], 1.5)),
        (pdx.zeros([three, jnp.asarray(2)]), paddle.zeros([pthree, paddle.to_tensor(2)])),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
    # paddle 3.3.1 rejects these two (tile reads the tensor as -1, expand raises SystemError)
    np.testing.assert_array_equal(np.asarray(pdx.expand(x[:, :1], [2, three, 4])),
                                  np.broadcast_to(X[:, :1], (2, 3, 4)))
    np.testing.assert_array_equal(np.asarray(pdx.tile(x, [jnp.asarray([2]), 1, 1])), np.tile(X, (2, 1, 1)))
    with pytest.raises(TypeError, match=r"1-element integer tensor"):
        pdx.reshape(x, [jnp.asarray([3, 1]), -1])


def test_pdx_shape_as_an_argument_under_jit(paddle):
    x, px = jnp.asarray(X), paddle.to_tensor(X)

    @pdx.jit
    def f(a):
        s = pdx.shape(a)
        return (pdx.reshape(a, [s[0], -1]), pdx.zeros(s), pdx.tile(a[:1], [s[0], 1, 1]),
                pdx.reshape(a, s[::-1]), pdx.expand(a[:, :1], s), a.reshape([s[2], -1]))

    # the same calls with paddle's static shape (a list; paddle.shape(px)[::-1] reads garbage
    # in paddle 3.3.1), so paddle checks the values
    s = list(px.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = (paddle.reshape(px, [s[0], -1]), paddle.zeros(s), paddle.tile(px[:1], [s[0], 1, 1]),
                paddle.reshape(px, s[::-1]), paddle.expand(px[:, :1], s), px.reshape([s[2], -1]))
    for i, (g, w) in enumerate(zip(f(x), want)):
        np.testing.assert_array_equal(np.asarray(g), w.numpy(), err_msg=f"output {i}")
    # eager: a Tensor, as Paddle's
    assert isinstance(pdx.shape(x), jax.Array) and pdx.shape(x).tolist() == list(px.shape)
    # x.shape is a tuple to JAX that also takes Paddle's list idioms; list(x.shape) is Paddle's list
    assert isinstance(x.shape, tuple) and x.shape == (2, 3, 4) and x.shape == px.shape
    s = list(x.shape)
    s[0] = -1
    assert s[:-1] + [2, 2] == [-1, 3, 2, 2] and list(x.shape) == [2, 3, 4] == px.shape
