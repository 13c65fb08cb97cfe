"""pdx.nn.functional pooling vs paddle.nn.functional."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F

POOL2D = [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0]},
    {"kernel_size": 3, "stride": 2, "padding": [1, 0, 2, 1]},
    {"kernel_size": 3, "stride": 2, "padding": "SAME"}, {"kernel_size": 2, "padding": "VALID"},
    {"kernel_size": 2, "padding": [[0, 0], [0, 0], [1, 0], [0, 1]]},
]


@pytest.mark.parametrize("kwargs", POOL2D, ids=str)
def test_pool2d_forward(oracle, rng, kwargs):
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    for exclusive in (True, False):
        oracle.close(F.avg_pool2d(jnp.asarray(x), exclusive=exclusive, **kwargs),
                     oracle.F.avg_pool2d(oracle.t(x), exclusive=exclusive, **kwargs), atol=1e-6)
    oracle.close(F.max_pool2d(jnp.asarray(x), **kwargs), oracle.F.max_pool2d(oracle.t(x), **kwargs))


@pytest.mark.parametrize("kwargs", [k for k in POOL2D if not isinstance(k.get("padding"), (str, list))
                                    or (isinstance(k["padding"], list) and len(k["padding"]) == 2)], ids=str)
def test_max_pool2d_return_mask(oracle, rng, kwargs):
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    out, mask = F.max_pool2d(jnp.asarray(x), return_mask=True, **kwargs)
    ref_out, ref_mask = oracle.F.max_pool2d(oracle.t(x), return_mask=True, **kwargs)
    oracle.close(out, ref_out)
    np.testing.assert_array_equal(mask, ref_mask.numpy())


def test_avg_pool2d_divisor_override_nhwc_and_padding_only_windows(oracle, rng):
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    for exclusive in (True, False):
        oracle.close(F.avg_pool2d(jnp.asarray(x), 3, 2, 1, exclusive=exclusive, divisor_override=4),
                     oracle.F.avg_pool2d(oracle.t(x), 3, 2, 1, exclusive=exclusive, divisor_override=4), atol=1e-6)
    xt = x.transpose(0, 2, 3, 1)
    oracle.close(F.avg_pool2d(jnp.asarray(xt), 3, 2, 1, data_format="NHWC"),
                 oracle.F.avg_pool2d(oracle.t(xt), 3, 2, 1, data_format="NHWC"), atol=1e-6)
    oracle.close(F.max_pool2d(jnp.asarray(xt), 3, 2, 1, data_format="NHWC"),
                 oracle.F.max_pool2d(oracle.t(xt), 3, 2, 1, data_format="NHWC"))
    # ceil_mode can create a window lying wholly in the padding: Paddle gives lowest/NaN there.
    kw = {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True}
    oracle.close(F.max_pool2d(jnp.asarray(x), **kw), oracle.F.max_pool2d(oracle.t(x), **kw))
    ours, ref = np.asarray(F.avg_pool2d(jnp.asarray(x), **kw)), oracle.F.avg_pool2d(oracle.t(x), **kw).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    np.testing.assert_allclose(ours, ref, atol=1e-6)


@pytest.mark.parametrize("output_size", [1, 3, [2, 3], [4, None], [9, 7], [5, 4]], ids=str)
def test_adaptive_pool2d(oracle, rng, output_size):
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    oracle.close(F.adaptive_avg_pool2d(jnp.asarray(x), output_size),
                 oracle.F.adaptive_avg_pool2d(oracle.t(x), output_size), atol=1e-6)
    out, mask = F.adaptive_max_pool2d(jnp.asarray(x), output_size, return_mask=True)
    ref_out, ref_mask = oracle.F.adaptive_max_pool2d(oracle.t(x), output_size, return_mask=True)
    oracle.close(out, ref_out)
    np.testing.assert_array_equal(mask, ref_mask.numpy())


def test_pool1d_and_pool3d(oracle, rng):
    x1 = rng.standard_normal((2, 3, 11)).astype(np.float32)
    out, mask = F.max_pool1d(jnp.asarray(x1), 3, 2, 1, return_mask=True)
    ref_out, ref_mask = oracle.F.max_pool1d(oracle.t(x1), 3, 2, 1, return_mask=True)
    oracle.close(out, ref_out)
    np.testing.assert_array_equal(mask, ref_mask.numpy())
    oracle.close(F.avg_pool1d(jnp.asarray(x1), 3, 2, 1, False, True),
                 oracle.F.avg_pool1d(oracle.t(x1), 3, 2, 1, False, True), atol=1e-6)
    oracle.close(F.adaptive_avg_pool1d(jnp.asarray(x1), 4), oracle.F.adaptive_avg_pool1d(oracle.t(x1), 4), atol=1e-6)
    oracle.close(F.adaptive_max_pool1d(jnp.asarray(x1), 4), oracle.F.adaptive_max_pool1d(oracle.t(x1), 4))
    x3 = rng.standard_normal((1, 2, 5, 6, 7)).astype(np.float32)
    out, mask = F.max_pool3d(jnp.asarray(x3), 2, 2, 1, return_mask=True)
    ref_out, ref_mask = oracle.F.max_pool3d(oracle.t(x3), 2, 2, 1, return_mask=True)
    oracle.close(out, ref_out)
    np.testing.assert_array_equal(mask, ref_mask.numpy())
    oracle.close(F.avg_pool3d(jnp.asarray(x3), 3, 2, 1, ceil_mode=True),
                 oracle.F.avg_pool3d(oracle.t(x3), 3, 2, 1, ceil_mode=True), atol=1e-6)
    oracle.close(F.adaptive_avg_pool3d(jnp.asarray(x3), [2, 3, 4]),
                 oracle.F.adaptive_avg_pool3d(oracle.t(x3), [2, 3, 4]), atol=1e-6)
    out, mask = F.adaptive_max_pool3d(jnp.asarray(x3), [2, 3, 4], return_mask=True)
    ref_out, ref_mask = oracle.F.adaptive_max_pool3d(oracle.t(x3), [2, 3, 4], return_mask=True)
    oracle.close(out, ref_out)
    np.testing.assert_array_equal(mask, ref_mask.numpy())


def test_pool_gradients(oracle, rng):
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    oracle.grads(lambda v: F.avg_pool2d(v, 3, 2, 1, ceil_mode=True),
                 lambda v: oracle.F.avg_pool2d(v, 3, 2, 1, ceil_mode=True), [x], [0], rng)
    # kernel 2 over H=7 leaves a trailing row unused (floor mode)
    oracle.grads(lambda v: F.max_pool2d(v, 2), lambda v: oracle.F.max_pool2d(v, 2), [x], [0], rng)
    oracle.grads(lambda v: F.adaptive_avg_pool2d(v, [3, 4]), lambda v: oracle.F.adaptive_avg_pool2d(v, [3, 4]),
                 [x], [0], rng)


def test_pool_errors():
    x = jnp.ones((1, 3, 4, 4))
    with pytest.raises(ValueError, match="max_pool2d: data_format='CHWN'"):
        F.max_pool2d(x, 2, data_format="CHWN")
    with pytest.raises(ValueError, match="avg_pool2d: kernel_size=.*larger than the padded input"):
        F.avg_pool2d(x, 5)
    with pytest.raises(ValueError, match="'VALID' cannot be combined with ceil_mode"):
        F.max_pool2d(x, 2, padding="VALID", ceil_mode=True)
    with pytest.raises(ValueError, match="max_pool2d: expects a 4-D `x`"):
        F.max_pool2d(jnp.ones((3, 4, 4)), 2)
    with pytest.raises(ValueError, match="adaptive_avg_pool2d: output_size"):
        F.adaptive_avg_pool2d(x, [1, 2, 3])
