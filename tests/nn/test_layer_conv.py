"""Convolution layers against paddle: forward, state_dict layout, round trip, gradients."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn as nn
from layer_testutil import (assert_close, assert_grads_match, axis_names, load_from_paddle, load_into_paddle,
                            pd_forward, perturb)

# Weights come from paddle, so skip compiling a random initializer for every shape.
ZERO = nn.initializer.Constant(0.0)

# (class name, args, kwargs, input shape)
CASES = [
    ("Conv2D", (3, 4, 3), {}, (2, 3, 7, 6)),
    ("Conv2D", (4, 6, (3, 2)), dict(stride=2, padding=1, groups=2), (2, 4, 7, 9)),
    ("Conv2D", (3, 5, 3), dict(dilation=2, padding=[1, 2]), (1, 3, 9, 8)),
    ("Conv2D", (3, 4, 3), dict(stride=2, padding="SAME"), (2, 3, 7, 6)),
    ("Conv2D", (3, 4, 3), dict(padding="VALID", data_format="NHWC"), (2, 7, 6, 3)),
    ("Conv2D", (3, 4, 3), dict(padding=[1, 0, 2, 1], bias_attr=False), (1, 3, 5, 5)),
    ("Conv2D", (3, 4, 3), dict(padding=1, padding_mode="reflect"), (1, 3, 6, 5)),
    # windows that never read the trailing padding / last input row (trimmed before lowering)
    ("Conv2D", (2, 3, 3), dict(stride=3, padding=1), (1, 2, 6, 8)),
    ("Conv2D", (2, 3, 3), dict(stride=2, padding=1), (1, 2, 2, 2)),
    ("Conv2D", (3, 4, 3), dict(padding=2, padding_mode="circular"), (1, 3, 6, 5)),
    ("Conv2D", (3, 4, 3), dict(padding=1, padding_mode="replicate", data_format="NHWC"), (1, 6, 5, 3)),
    ("Conv1D", (3, 4, 3), dict(padding=1, stride=2), (2, 3, 9)),
    ("Conv1D", (4, 4, 3), dict(groups=4, data_format="NLC"), (2, 9, 4)),
    ("Conv3D", (2, 3, 3), dict(padding=1), (1, 2, 4, 5, 3)),
    ("Conv2DTranspose", (3, 4, 3), dict(stride=2, padding=1, output_padding=1), (2, 3, 4, 5)),
    ("Conv2DTranspose", (4, 6, 2), dict(stride=2, groups=2, data_format="NHWC"), (1, 3, 4, 4)),
    ("Conv1DTranspose", (3, 2, 3), dict(stride=2), (1, 3, 5)),
    ("Conv3DTranspose", (2, 2, 2), dict(stride=2), (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_conv_matches_paddle(paddle, rng, name, args, kwargs, shape):
    pd_layer = getattr(paddle.nn, name)(*args, **kwargs)
    layer = load_from_paddle(getattr(nn, name)(*args, **kwargs, weight_attr=ZERO), pd_layer)
    x = rng.standard_normal(shape).astype(np.float32)
    assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x), atol=1e-4)
    perturb(layer, rng)
    load_into_paddle(paddle, pd_layer, layer)
    assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x), atol=1e-4)


def test_conv2d_transpose_output_size(paddle, rng):
    pd_layer = paddle.nn.Conv2DTranspose(3, 2, 3, stride=2, padding=1)
    layer = load_from_paddle(nn.Conv2DTranspose(3, 2, 3, stride=2, padding=1, weight_attr=ZERO), pd_layer)
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    out = layer(jnp.asarray(x), output_size=[8, 8])
    assert out.shape == (1, 2, 8, 8)
    assert_close(out, pd_layer(paddle.to_tensor(x), output_size=[8, 8]), atol=1e-4)


def test_conv2d_grads_match_paddle(paddle, rng):
    pd_layer = paddle.nn.Conv2D(4, 6, 3, stride=2, padding=1, groups=2)
    layer = load_from_paddle(nn.Conv2D(4, 6, 3, stride=2, padding=1, groups=2, weight_attr=ZERO), pd_layer)
    x = rng.standard_normal((2, 4, 5, 7)).astype(np.float32)
    assert_grads_match(paddle, layer, pd_layer, [x], rng, atol=1e-4)
    # trimmed padding and a cut last row: the unread row still gets its (zero) input gradient
    pd_layer = paddle.nn.Conv2D(2, 3, 3, stride=3, padding=1)
    layer = load_from_paddle(nn.Conv2D(2, 3, 3, stride=3, padding=1, weight_attr=ZERO), pd_layer)
    x = rng.standard_normal((1, 2, 6, 8)).astype(np.float32)
    assert_grads_match(paddle, layer, pd_layer, [x], rng, atol=1e-4)


def test_conv_init_axes_and_repr(paddle):
    pdx.seed(0)
    conv = nn.Conv2D(16, 32, 3)
    w = np.asarray(conv.weight[...])
    std = np.sqrt(2.0 / (16 * 9))  # Paddle's default Normal(0, sqrt(2 / fan_in))
    assert abs(w.std() / std - 1) < 0.05 and abs(w.mean()) < 0.01
    assert axis_names(conv.weight) == (nn.axes.CONV_OUT, nn.axes.CONV_IN, None, None)
    assert axis_names(conv.bias) == (nn.axes.CONV_OUT,)
    convt = nn.Conv2DTranspose(4, 6, 3, groups=2, weight_attr=ZERO)
    assert convt.weight.shape == (4, 3, 3, 3)
    assert axis_names(convt.weight) == (nn.axes.CONV_IN, nn.axes.CONV_OUT, None, None)
    for args, kwargs in [((3, 4, 3), dict(stride=2, padding=1, groups=1)),
                         ((4, 4, (3, 2)), dict(dilation=2, groups=2, padding_mode="reflect", padding=1)),
                         ((3, 4, 3), dict(data_format="NHWC", padding=[1, 2]))]:
        assert repr(nn.Conv2D(*args, **kwargs, weight_attr=ZERO)) == repr(paddle.nn.Conv2D(*args, **kwargs))


def test_conv_errors():
    with pytest.raises(ValueError, match="Conv2D.*groups"):
        nn.Conv2D(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="data_format"):
        nn.Conv2D(3, 4, 3, data_format="NCL")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2D(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="int padding"):
        nn.Conv2D(3, 4, 3, padding=[1, 1], padding_mode="reflect")
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv3D(3, 4, (3, 3))
    with pytest.raises(ValueError, match="conv2d"):
        nn.Conv2D(3, 4, 3, weight_attr=ZERO)(jnp.ones((1, 5, 8, 8)))
