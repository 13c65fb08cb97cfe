"""Activation and pooling layers against paddle (one parametrized table each)."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn as nn
from layer_testutil import assert_close, load_from_paddle, pd_forward

ACTIVATIONS = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("CELU", (1.3,)), ("SELU", ()),
    ("GELU", ()), ("GELU", (True,)), ("Silu", ()), ("Swish", ()), ("Sigmoid", ()), ("Tanh", ()),
    ("Hardswish", ()), ("Hardsigmoid", ()), ("Hardtanh", (-0.5, 2.0)), ("Hardshrink", (0.3,)),
    ("Softshrink", (0.3,)), ("ThresholdedReLU", (0.5,)), ("Softsign", ()), ("Tanhshrink", ()),
    ("LogSigmoid", ()), ("Mish", ()), ("Softplus", (2, 5)), ("Softmax", ()), ("Softmax", (1,)),
    ("LogSoftmax", (0,)), ("Softmax2D", ()), ("GLU", (1,)), ("Maxout", (2,)),
]


@pytest.mark.parametrize("name,args", ACTIVATIONS, ids=[f"{n}{a}" for n, a in ACTIVATIONS])
def test_activation_layers_match_paddle(paddle, rng, name, args):
    x = (rng.standard_normal((2, 4, 3, 5)) * 3).astype(np.float32)
    ours = getattr(nn, name)(*args)
    theirs = getattr(paddle.nn, name)(*args)
    assert_close(ours(jnp.asarray(x)), pd_forward(paddle, theirs, x))
    assert repr(ours) == repr(theirs)


def test_prelu_and_rrelu(paddle, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for args in [(), (3, 0.1)]:
        pd_layer = paddle.nn.PReLU(*args)
        layer = load_from_paddle(nn.PReLU(*args), pd_layer)
        assert list(layer.state_dict()) == ["_weight"]
        assert_close(layer(jnp.asarray(x)), pd_forward(paddle, pd_layer, x))
    rrelu = nn.RReLU(0.1, 0.3)
    y = np.asarray(rrelu(jnp.asarray(x)))
    slope = y[x < 0] / x[x < 0]
    assert np.all((slope >= 0.1 - 1e-6) & (slope <= 0.3 + 1e-6))
    assert_close(rrelu.eval()(jnp.asarray(x)), paddle.nn.RReLU(0.1, 0.3).eval()(paddle.to_tensor(x)))


POOLS = [
    ("MaxPool2D", (2,), {}, (2, 3, 6, 7)),
    ("MaxPool2D", (3, 2, 1), dict(ceil_mode=True), (2, 3, 7, 8)),
    ("MaxPool2D", (2,), dict(data_format="NHWC"), (2, 6, 7, 3)),
    ("AvgPool2D", (3, 2, 1), {}, (2, 3, 7, 8)),
    ("AvgPool2D", (3, 2, 1), dict(exclusive=False, ceil_mode=True), (2, 3, 7, 8)),
    ("AvgPool2D", (2,), dict(divisor_override=3), (1, 2, 4, 4)),
    ("AdaptiveAvgPool2D", (3,), {}, (2, 3, 7, 8)),
    ("AdaptiveAvgPool2D", ([2, None],), {}, (2, 3, 7, 8)),
    ("AdaptiveAvgPool2D", (1,), dict(data_format="NHWC"), (2, 5, 4, 3)),
    ("AdaptiveMaxPool2D", (3,), {}, (2, 3, 7, 8)),
    ("MaxPool1D", (3, 2), {}, (2, 3, 9)),
    ("AvgPool1D", (3, 2, 1), {}, (2, 3, 9)),
    ("AdaptiveAvgPool1D", (4,), {}, (2, 3, 9)),
    ("AdaptiveMaxPool1D", (4,), {}, (2, 3, 9)),
    ("MaxPool3D", (2,), {}, (1, 2, 4, 5, 4)),
    ("AvgPool3D", (2, 2), {}, (1, 2, 4, 5, 4)),
    ("AdaptiveAvgPool3D", (2,), {}, (1, 2, 4, 5, 4)),
    ("AdaptiveMaxPool3D", (2,), {}, (1, 2, 4, 5, 4)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", POOLS, ids=[f"{p[0]}-{i}" for i, p in enumerate(POOLS)])
def test_pooling_layers_match_paddle(paddle, rng, name, args, kwargs, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(paddle.nn, name)(*args, **kwargs)
    assert_close(ours(jnp.asarray(x)), pd_forward(paddle, theirs, x))
    assert repr(ours) == repr(theirs)


def test_max_pool_return_mask(paddle, rng):
    x = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    out, mask = nn.MaxPool2D(2, return_mask=True)(jnp.asarray(x))
    pd_out, pd_mask = paddle.nn.MaxPool2D(2, return_mask=True)(paddle.to_tensor(x))
    assert_close(out, pd_out)
    np.testing.assert_array_equal(np.asarray(mask), pd_mask.numpy())
