"""Bilinear, Dirac and set_global_initializer against paddle 3.3.1."""

import jax
import numpy as np
import pytest

import pdx
from pdx.nn import initializer as init


def test_bilinear_dirac_match_paddle(paddle):
    key = jax.random.key(0)
    for shape in ((2, 3, 4, 4), (1, 1, 5, 5), (3, 2, 1, 1)):
        ref = paddle.create_parameter(list(shape), "float32", default_initializer=paddle.nn.initializer.Bilinear())
        np.testing.assert_array_equal(np.asarray(init.Bilinear()(key, shape)), ref.numpy())
    for shape, groups in (((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((4, 4, 3, 3, 3), 4), ((2, 5, 2, 2), 1)):
        ref = paddle.create_parameter(list(shape), "float32", default_initializer=paddle.nn.initializer.Dirac(groups))
        np.testing.assert_array_equal(np.asarray(init.Dirac(groups)(key, shape)), ref.numpy())
    conv = pdx.nn.Conv2D(3, 3, 3, padding=1, weight_attr=pdx.ParamAttr(initializer=init.Dirac()), bias_attr=False)
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(conv(x)), x, atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        init.Bilinear()(key, (2, 2, 3, 4))
    with pytest.raises(ValueError, match="groups"):
        init.Dirac(0)


def test_global_initializer_precedence(paddle):
    try:
        for nn, ini, attr in ((paddle.nn, paddle.nn.initializer, paddle.ParamAttr), (pdx.nn, init, pdx.ParamAttr)):
            ini.set_global_initializer(ini.Constant(0.25), ini.Constant(-1.0))
            fc = nn.Linear(2, 2)
            own = nn.Linear(2, 2, weight_attr=attr(initializer=ini.Constant(3.0)))
            assert np.asarray(fc.weight.numpy()).tolist() == [[0.25, 0.25]] * 2
            assert np.asarray(fc.bias.numpy()).tolist() == [-1.0, -1.0]
            assert np.asarray(own.weight.numpy()).tolist() == [[3.0, 3.0]] * 2
            ini.set_global_initializer(None)
            assert np.asarray(nn.Linear(2, 2).bias.numpy()).tolist() == [0.0, 0.0]
        with pytest.raises(TypeError, match="weight_init"):
            init.set_global_initializer("uniform")
    finally:
        paddle.nn.initializer.set_global_initializer(None)
        init.set_global_initializer(None)
