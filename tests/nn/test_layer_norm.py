"""Normalization layers against paddle, including batch-norm running statistics."""

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import pdx.nn as nn
from layer_testutil import (assert_close, assert_grads_match, axis_names, load_from_paddle, load_into_paddle,
                            pd_forward, perturb)

pytestmark = pytest.mark.filterwarnings("ignore:When training, we now always track")


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("BatchNorm2D", (3,), {}, (4, 3, 5, 6)),
    ("BatchNorm2D", (3,), dict(data_format="NHWC", momentum=0.8, epsilon=1e-3), (4, 5, 6, 3)),
    ("BatchNorm1D", (5,), {}, (6, 5)),
    ("BatchNorm1D", (5,), {}, (3, 5, 7)),
    ("BatchNorm1D", (5,), dict(data_format="NLC"), (3, 7, 5)),
    ("BatchNorm3D", (2,), {}, (2, 2, 3, 4, 3)),
])
def test_batch_norm_train_and_eval_match_paddle(paddle, rng, name, args, kwargs, shape):
    pd_layer = getattr(paddle.nn, name)(*args, **kwargs)
    layer = getattr(nn, name)(*args, **kwargs)
    perturb(layer, rng)
    load_into_paddle(paddle, pd_layer, layer)
    for _ in range(2):  # two steps: the second normalizes with batch stats again and compounds the update
        x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
        assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x), atol=1e-4)
        ours, theirs = layer.state_dict(), pd_layer.state_dict()
        for key in ("_mean", "_variance"):
            assert_close(ours[key], theirs[key], atol=1e-5)
    layer.eval()
    pd_layer.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    before = np.asarray(layer._mean[...])
    assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x), atol=1e-4)
    np.testing.assert_array_equal(layer._mean[...], before)


@pytest.mark.parametrize("use_global_stats,training", [(True, True), (False, False)])
def test_batch_norm_use_global_stats(paddle, rng, use_global_stats, training):
    pd_layer = paddle.nn.BatchNorm2D(3, use_global_stats=use_global_stats)
    layer = nn.BatchNorm2D(3, use_global_stats=use_global_stats)
    perturb(layer, rng)
    load_into_paddle(paddle, pd_layer, layer)
    if not training:
        layer.eval()
        pd_layer.eval()
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x), atol=1e-4)
    assert_close(layer._variance[...], pd_layer._variance, atol=1e-5)


def test_batch_norm_structure_and_legacy_api(paddle, rng):
    layer = nn.BatchNorm2D(4)
    assert list(layer.state_dict()) == list(paddle.nn.BatchNorm2D(4).state_dict())
    assert isinstance(layer._mean, nn.Buffer) and isinstance(layer.weight, nnx.Param)
    assert axis_names(layer._mean) == (nn.axes.NORM,) and axis_names(layer.weight) == (nn.axes.NORM,)
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    assert repr(layer) == repr(paddle.nn.BatchNorm2D(4))
    no_affine = nn.BatchNorm2D(4, weight_attr=False, bias_attr=False)
    assert list(no_affine.state_dict()) == ["_mean", "_variance"]
    # the old nn.BatchNorm API with a fused activation
    pd_old = paddle.nn.BatchNorm(3, act="relu")
    old = load_from_paddle(nn.BatchNorm(3, act="relu"), pd_old)
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    assert_close(old(jnp.asarray(x)), pd_forward(paddle, pd_old, x), atol=1e-4)
    assert_close(old._mean[...], pd_old._mean)
    with pytest.raises(ValueError, match="BatchNorm2D.*4-D"):
        layer(jnp.ones((2, 4)))
    with pytest.raises(ValueError, match="data_format"):
        nn.BatchNorm2D(4, data_format="NCL")


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("LayerNorm", (7,), {}, (3, 5, 7)),
    ("LayerNorm", ([5, 7],), dict(epsilon=1e-3), (3, 5, 7)),
    ("LayerNorm", (7,), dict(bias_attr=False), (2, 7)),
    ("GroupNorm", (2, 6), {}, (3, 6, 4, 5)),
    ("GroupNorm", (3, 6), dict(data_format="NHWC"), (2, 4, 5, 6)),
    ("GroupNorm", (2, 4), {"data_format": "NCL"}, (3, 4, 5)),
    ("InstanceNorm2D", (3,), {}, (2, 3, 5, 4)),
    ("InstanceNorm1D", (3,), {}, (2, 3, 7)),
    ("InstanceNorm3D", (2,), {}, (2, 2, 3, 4, 3)),
])
def test_norm_layers_match_paddle(paddle, rng, name, args, kwargs, shape):
    pd_layer = getattr(paddle.nn, name)(*args, **kwargs)
    layer = getattr(nn, name)(*args, **kwargs)
    perturb(layer, rng)
    load_into_paddle(paddle, pd_layer, layer)
    x = rng.standard_normal(shape).astype(np.float32)
    assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x), atol=1e-4)
    assert {k: tuple(v.shape) for k, v in layer.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in pd_layer.state_dict().items()}


def test_layer_norm_grads_match_paddle(paddle, rng):
    pd_layer = paddle.nn.LayerNorm([4, 6])
    layer = nn.LayerNorm([4, 6])
    perturb(layer, rng)
    load_into_paddle(paddle, pd_layer, layer)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    assert_grads_match(paddle, layer, pd_layer, [x], rng)


def test_norm_reprs_and_rms_norm(paddle, rng):
    for ours, theirs in [(nn.LayerNorm([2, 3]), paddle.nn.LayerNorm([2, 3])),
                         (nn.GroupNorm(2, 4), paddle.nn.GroupNorm(2, 4)),
                         (nn.InstanceNorm2D(3), paddle.nn.InstanceNorm2D(3))]:
        assert repr(ours) == repr(theirs)
    assert nn.LayerNorm([2, 3]).weight.shape == (6,)  # flat, as Paddle
    rms = nn.RMSNorm(6, epsilon=1e-5)
    perturb(rms, rng)
    x = rng.standard_normal((2, 3, 6)).astype(np.float32)
    w = np.asarray(rms.weight[...])
    expect = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5) * w
    assert_close(rms(jnp.asarray(x)), expect)
    assert list(rms.state_dict()) == ["weight"] and axis_names(rms.weight) == (nn.axes.NORM,)
    with pytest.raises(ValueError, match="num_channels"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ValueError, match="normalized_shape"):
        nn.LayerNorm([])
    with pytest.raises(ValueError, match="layer_norm"):
        nn.LayerNorm(5)(jnp.ones((2, 4)))
