"""Paddle's `Parameter.trainable`: read on every parameter, set to False to freeze."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn


def test_trainable_reads_sets_and_freezes(paddle):
    net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2, weight_attr=pdx.ParamAttr(trainable=False)))
    ref = paddle.nn.Sequential(paddle.nn.Linear(4, 3), paddle.nn.Linear(3, 2, weight_attr=paddle.ParamAttr(trainable=False)))
    assert [p.trainable for p in net.parameters()] == [p.trainable for p in ref.parameters()] == [True, True, False, True]
    for p in net[0].parameters():
        p.trainable = False
    assert [p.trainable for p in net.parameters()] == [False, False, False, True]
    x, y = jnp.ones((5, 4)), jnp.zeros((5,), jnp.int32)
    before = {k: np.asarray(v) for k, v in net.state_dict().items()}
    opt = pdx.optimizer.SGD(0.5, parameters=net.parameters())
    loss, grads = pdx.value_and_grad(lambda m: F.cross_entropy(m(x), y))(net)
    assert sorted(grads) == ["1.bias"]
    opt.step(grads)
    after = net.state_dict()
    for k in ("0.weight", "0.bias", "1.weight"):
        np.testing.assert_array_equal(np.asarray(after[k]), before[k])
    assert not np.array_equal(np.asarray(after["1.bias"]), before["1.bias"])
    net[0].weight.trainable = True
    assert net[0].weight.trainable and net[0].weight.get_metadata()["trainable"] is True
    with pytest.raises(TypeError, match="trainable must be True or False"):
        net[0].weight.trainable = "no"


def test_stop_gradient_is_the_opposite_of_trainable(paddle):
    net = nn.Linear(2, 2, weight_attr=pdx.ParamAttr(trainable=False))
    ref = paddle.nn.Linear(2, 2, weight_attr=paddle.ParamAttr(trainable=False))
    assert [p.stop_gradient for p in net.parameters()] == [p.stop_gradient for p in ref.parameters()] == [True, False]
    net.bias.stop_gradient = True
    ref.bias.stop_gradient = True
    assert net.bias.trainable is ref.bias.trainable is False
    net.weight.stop_gradient = False
    assert net.weight.trainable and not net.weight.stop_gradient
    assert list(pdx.grad(lambda m: m(jnp.ones((1, 2))).sum())(net)) == ["weight"]
    with pytest.raises(TypeError, match="stop_gradient must be True or False"):
        net.bias.stop_gradient = 1


def test_buffer_reads_as_its_tensor():
    layer = nn.Layer()
    buf = layer.register_buffer("mask", jnp.array([1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(buf > 0, [True, False, True])
    np.testing.assert_array_equal(0 < buf, [True, False, True])
    np.testing.assert_array_equal(buf != 0, [True, False, True])
    np.testing.assert_array_equal(buf <= 1, [True, True, False])
    assert bool(layer.register_buffer("flag", jnp.array(True)))
