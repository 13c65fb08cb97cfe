"""pdx.nn.functional convolutions vs paddle.nn.functional."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F

CONV2D = [
    {}, {"stride": 2}, {"stride": [2, 1]}, {"padding": 1}, {"padding": [1, 2]}, {"padding": [1, 0, 2, 1]},
    {"padding": [[0, 0], [0, 0], [1, 2], [0, 1]]}, {"padding": "SAME"}, {"padding": "same", "stride": 2},
    {"padding": "VALID"}, {"padding": "SAME", "dilation": 2}, {"dilation": 2, "padding": 2},
    {"dilation": [1, 2], "stride": 2}, {"groups": 2}, {"groups": 4, "padding": 1},
    {"groups": 2, "stride": 2, "dilation": 2},
]


def _nhwc_kwargs(kwargs):
    pad = kwargs.get("padding")
    if isinstance(pad, list) and isinstance(pad[0], list):
        kwargs = dict(kwargs, padding=[pad[0], pad[2], pad[3], pad[1]])
    return kwargs


CONV2D_CASES = [(k, "NCHW") for k in CONV2D] + [(CONV2D[i], "NHWC") for i in (1, 5, 6, 8, 11, 15)]


@pytest.mark.parametrize("kwargs,data_format", CONV2D_CASES, ids=[f"{f}-{k}" for k, f in CONV2D_CASES])
def test_conv2d_forward(oracle, rng, kwargs, data_format):
    groups = kwargs.get("groups", 1)
    x = rng.standard_normal((2, 4, 9, 7)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    if data_format == "NHWC":
        x, kwargs = x.transpose(0, 2, 3, 1), _nhwc_kwargs(kwargs)
    ours = F.conv2d(jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), data_format=data_format, **kwargs)
    ref = oracle.F.conv2d(oracle.t(x), oracle.t(w), oracle.t(b), data_format=data_format, **kwargs)
    oracle.close(ours, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kwargs", [{"groups": 2, "stride": 2, "padding": 1}, {"dilation": 2, "padding": [1, 0, 2, 1]},
                                    {"padding": "SAME", "stride": 2}], ids=str)
def test_conv2d_gradients(oracle, rng, kwargs):
    groups = kwargs.get("groups", 1)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    oracle.grads(lambda x, w, b: F.conv2d(x, w, b, **kwargs), lambda x, w, b: oracle.F.conv2d(x, w, b, **kwargs),
                 [x, w, b], [0, 1, 2], rng, rtol=1e-4, atol=1e-4)


CONV2D_T = [
    {}, {"stride": 2}, {"stride": 2, "padding": 1}, {"stride": 2, "output_padding": 1},
    {"stride": [2, 3], "padding": [1, 0, 2, 1]}, {"padding": "SAME", "stride": 2}, {"padding": "VALID", "stride": 2},
    {"dilation": 2, "padding": 1}, {"groups": 2, "stride": 2}, {"stride": 2, "output_size": [20, 16]},
    {"stride": 3, "dilation": 2, "padding": 2, "output_padding": 2},
]


@pytest.mark.parametrize("kwargs", CONV2D_T, ids=str)
def test_conv2d_transpose_forward(oracle, rng, kwargs):
    groups = kwargs.get("groups", 1)
    x = rng.standard_normal((2, 4, 9, 7)).astype(np.float32)
    w = rng.standard_normal((4, 6 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    ours = F.conv2d_transpose(jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), **kwargs)
    oracle.close(ours, oracle.F.conv2d_transpose(oracle.t(x), oracle.t(w), oracle.t(b), **kwargs),
                 rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_nhwc_and_gradients(oracle, rng):
    x = rng.standard_normal((2, 5, 4, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    kw = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}
    oracle.close(F.conv2d_transpose(jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), data_format="NHWC", **kw),
                 oracle.F.conv2d_transpose(oracle.t(x), oracle.t(w), oracle.t(b), data_format="NHWC", **kw),
                 rtol=1e-4, atol=1e-4)
    xc = x.transpose(0, 3, 1, 2)
    oracle.grads(lambda x, w, b: F.conv2d_transpose(x, w, b, **kw),
                 lambda x, w, b: oracle.F.conv2d_transpose(x, w, b, **kw), [xc, w, b], [0, 1, 2], rng,
                 rtol=1e-4, atol=1e-4)


def test_conv1d_and_conv3d(oracle, rng):
    x1 = rng.standard_normal((2, 4, 11)).astype(np.float32)
    w1 = rng.standard_normal((6, 2, 3)).astype(np.float32)
    kw = {"stride": 2, "padding": 1, "groups": 2}
    oracle.close(F.conv1d(jnp.asarray(x1), jnp.asarray(w1), **kw), oracle.F.conv1d(oracle.t(x1), oracle.t(w1), **kw),
                 rtol=1e-4, atol=1e-4)
    x1t = x1.transpose(0, 2, 1)
    oracle.close(F.conv1d(jnp.asarray(x1t), jnp.asarray(w1), data_format="NLC", **kw),
                 oracle.F.conv1d(oracle.t(x1t), oracle.t(w1), data_format="NLC", **kw), rtol=1e-4, atol=1e-4)
    wt = rng.standard_normal((4, 3, 3)).astype(np.float32)
    oracle.close(F.conv1d_transpose(jnp.asarray(x1), jnp.asarray(wt), **kw),
                 oracle.F.conv1d_transpose(oracle.t(x1), oracle.t(wt), **kw), rtol=1e-4, atol=1e-4)
    one = np.array([0.5], np.float32)  # a one-element bias broadcasts over the output channels, as in Paddle
    oracle.close(F.conv1d_transpose(jnp.asarray(x1), jnp.asarray(wt), bias=one, **kw),
                 oracle.F.conv1d_transpose(oracle.t(x1), oracle.t(wt), bias=oracle.t(one), **kw), rtol=1e-4, atol=1e-4)
    oracle.close(F.conv1d(jnp.asarray(x1), jnp.asarray(w1), bias=one, **kw),
                 oracle.F.conv1d(oracle.t(x1), oracle.t(w1), bias=oracle.t(one), **kw), rtol=1e-4, atol=1e-4)
    x3 = rng.standard_normal((1, 2, 5, 6, 4)).astype(np.float32)
    w3 = rng.standard_normal((3, 2, 2, 3, 2)).astype(np.float32)
    oracle.close(F.conv3d(jnp.asarray(x3), jnp.asarray(w3), padding=1, stride=2),
                 oracle.F.conv3d(oracle.t(x3), oracle.t(w3), padding=1, stride=2), rtol=1e-4, atol=1e-4)
    w3t = rng.standard_normal((2, 3, 2, 3, 2)).astype(np.float32)
    x3t = x3.transpose(0, 2, 3, 4, 1)
    oracle.close(F.conv3d_transpose(jnp.asarray(x3t), jnp.asarray(w3t), stride=2, data_format="NDHWC"),
                 oracle.F.conv3d_transpose(oracle.t(x3t), oracle.t(w3t), stride=2, data_format="NDHWC"),
                 rtol=1e-4, atol=1e-4)


def test_pointwise_conv_matches_paddle(oracle, rng):
    """1x1 convolutions run as a matmul over the strided pixels: same values and gradients."""
    x = rng.standard_normal((2, 6, 9, 7)).astype(np.float32)
    w = rng.standard_normal((5, 6, 1, 1)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    for kw in ({}, {"stride": 2}, {"stride": [3, 2], "padding": 1}, {"padding": [0, 1, 2, 0]}, {"dilation": 2}):
        oracle.close(F.conv2d(jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), **kw),
                     oracle.F.conv2d(oracle.t(x), oracle.t(w), oracle.t(b), **kw), rtol=1e-4, atol=1e-4)
    xt = x.transpose(0, 2, 3, 1)
    oracle.close(F.conv2d(jnp.asarray(xt), jnp.asarray(w), stride=2, data_format="NHWC"),
                 oracle.F.conv2d(oracle.t(xt), oracle.t(w), stride=2, data_format="NHWC"), rtol=1e-4, atol=1e-4)
    oracle.grads(lambda x, w, b: F.conv2d(x, w, b, stride=2), lambda x, w, b: oracle.F.conv2d(x, w, b, stride=2),
                 [x, w, b], [0, 1, 2], rng, rtol=1e-4, atol=1e-4)
    x1, w1 = x[:, :, 0], w[:, :, :, 0]
    oracle.close(F.conv1d(jnp.asarray(x1), jnp.asarray(w1), stride=2),
                 oracle.F.conv1d(oracle.t(x1), oracle.t(w1), stride=2), rtol=1e-4, atol=1e-4)
    x3, w3 = x[..., None].repeat(3, -1), w[..., None]
    oracle.close(F.conv3d(jnp.asarray(x3), jnp.asarray(w3), stride=[1, 2, 2], padding=1),
                 oracle.F.conv3d(oracle.t(x3), oracle.t(w3), stride=[1, 2, 2], padding=1), rtol=1e-4, atol=1e-4)


def test_conv_fusion_boundary_keeps_every_derivative(rng):
    """The backward's fusion boundary (pdx/_lowering.materialized) changes no value: gradients,
    forward mode, Hessian-vector products and NaNs match plain lax.conv; inference traces hold no cond."""
    x = jnp.asarray(rng.standard_normal((2, 9, 9, 3)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))

    def ours(x, w):
        return jnp.tanh(F.conv2d(jnp.maximum(x, 0.1), w, stride=2, padding=1, data_format="NHWC")).sum()

    def ref(x, w):
        y = jax.lax.conv_general_dilated(jnp.maximum(x, 0.1), w, (2, 2), [(1, 1), (1, 1)],
                                         dimension_numbers=("NHWC", "OIHW", "NHWC"))
        return jnp.tanh(y).sum()

    for a, b in zip(jax.jit(jax.grad(ours, (0, 1)))(x, w), jax.grad(ref, (0, 1))(x, w)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    v = jnp.ones_like(w)
    np.testing.assert_allclose(jax.jvp(lambda w: ours(x, w), (w,), (v,))[1],
                               jax.jvp(lambda w: ref(x, w), (w,), (v,))[1], rtol=1e-4)
    hvp = lambda f: jax.jvp(jax.grad(lambda w: f(x, w)), (w,), (v,))[1]  # noqa: E731
    np.testing.assert_allclose(hvp(ours), hvp(ref), rtol=1e-4, atol=1e-4)
    nan_x = x.at[0, 0, 0, 0].set(jnp.nan)  # the boundary's other branch: same bits, NaN included
    for a, b in zip(jax.grad(ours, (0, 1))(nan_x, w), jax.grad(ref, (0, 1))(nan_x, w)):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    assert "cond" not in str(jax.make_jaxpr(ours)(x, w))
    assert "cond" in str(jax.make_jaxpr(jax.grad(ours))(x, w))


def test_conv2d_under_jit_matches_eager(rng):
    x = jnp.asarray(rng.standard_normal((1, 2, 6, 6)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((4, 1, 3, 3)).astype(np.float32))
    f = jax.jit(lambda x, w: F.conv2d(x, w, padding="SAME", groups=2))
    np.testing.assert_allclose(f(x, w), F.conv2d(x, w, padding="SAME", groups=2), rtol=1e-6)


def test_conv_errors():
    x = jnp.ones((1, 4, 8, 8))
    with pytest.raises(ValueError, match=r"conv2d: x has in_channels=4 .*groups=1 expects in_channels"):
        F.conv2d(x, jnp.ones((6, 3, 3, 3)))
    with pytest.raises(ValueError, match=r"conv2d: .*groups=2 expects in_channels = weight.shape\[1\] \* groups = 6"):
        F.conv2d(x, jnp.ones((6, 3, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="out_channels=5.*divisible by groups=2"):
        F.conv2d(x, jnp.ones((5, 2, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="data_format='NCWH' is not supported"):
        F.conv2d(x, jnp.ones((6, 4, 3, 3)), data_format="NCWH")
    with pytest.raises(ValueError, match="expects a 4-D `x` in NCHW"):
        F.conv2d(jnp.ones((4, 8, 8)), jnp.ones((6, 4, 3, 3)))
    with pytest.raises(ValueError, match="padding='FULL'"):
        F.conv2d(x, jnp.ones((6, 4, 3, 3)), padding="FULL")
    with pytest.raises(ValueError, match="pads the batch or channel dim"):
        F.conv2d(x, jnp.ones((6, 4, 3, 3)), padding=[[0, 0], [1, 1], [1, 1], [1, 1]])
    with pytest.raises(ValueError, match="conv2d_transpose: x has in_channels=4 .*weight.shape\\[0\\]=3"):
        F.conv2d_transpose(x, jnp.ones((3, 2, 3, 3)))
    with pytest.raises(ValueError, match="output_padding=.*smaller than max"):
        F.conv2d_transpose(x, jnp.ones((4, 2, 3, 3)), stride=2, output_padding=2)
    with pytest.raises(ValueError, match="output_size=.*must lie in"):
        F.conv2d_transpose(x, jnp.ones((4, 2, 3, 3)), stride=2, output_size=[5, 5])
