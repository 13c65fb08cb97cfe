"""pdx.nn.functional normalization ops vs paddle.nn.functional."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F


def _stats(rng, c):
    return rng.standard_normal(c).astype(np.float32), (rng.random(c) + 0.5).astype(np.float32)


@pytest.mark.parametrize("shape,fmt", [((4, 3, 5, 6), "NCHW"), ((4, 5, 6, 3), "NHWC"), ((6, 3), "NC"),
                                       ((4, 3, 7), "NCL"), ((2, 3, 4, 2, 3), "NCDHW")])
@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_forward_and_running_stats(oracle, rng, shape, fmt, training):
    x = rng.standard_normal(shape).astype(np.float32)
    c = shape[-1] if fmt[-1] == "C" and len(fmt) > 2 else shape[1]
    mean, var = _stats(rng, c)
    w, b = _stats(rng, c)
    out, new_mean, new_var = F.batch_norm_with_stats(
        jnp.asarray(x), jnp.asarray(mean), jnp.asarray(var), jnp.asarray(w), jnp.asarray(b),
        training=training, momentum=0.8, epsilon=1e-4, data_format=fmt)
    rm, rv = oracle.t(mean), oracle.t(var)  # paddle updates these in place
    ref = oracle.F.batch_norm(oracle.t(x), rm, rv, oracle.t(w), oracle.t(b), training=training, momentum=0.8,
                              epsilon=1e-4, data_format=fmt)
    oracle.close(out, ref, atol=1e-5)
    oracle.close(new_mean, rm, atol=1e-6)
    oracle.close(new_var, rv, atol=1e-6)
    np.testing.assert_allclose(F.batch_norm(jnp.asarray(x), jnp.asarray(mean), jnp.asarray(var), jnp.asarray(w),
                                            jnp.asarray(b), training=training, momentum=0.8, epsilon=1e-4,
                                            data_format=fmt), out)


@pytest.mark.parametrize("use_global_stats", [True, False])
def test_batch_norm_use_global_stats(oracle, rng, use_global_stats):
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    mean, var = _stats(rng, 3)
    out, m, v = F.batch_norm_with_stats(jnp.asarray(x), jnp.asarray(mean), jnp.asarray(var), training=True,
                                        data_format="NCL", use_global_stats=use_global_stats)
    rm, rv = oracle.t(mean), oracle.t(var)
    ref = oracle.F.batch_norm(oracle.t(x), rm, rv, training=True, data_format="NCL", use_global_stats=use_global_stats)
    oracle.close(out, ref, atol=1e-5)
    oracle.close(m, rm, atol=1e-6)
    oracle.close(v, rv, atol=1e-6)


def test_batch_norm_training_gradients(oracle, rng):
    x = rng.standard_normal((4, 3, 5, 2)).astype(np.float32)
    mean, var = _stats(rng, 3)
    w, b = _stats(rng, 3)

    def ours(x, w, b):
        return F.batch_norm(x, jnp.asarray(mean), jnp.asarray(var), w, b, training=True)

    def ref(x, w, b):
        return oracle.F.batch_norm(x, oracle.t(mean), oracle.t(var), w, b, training=True)

    oracle.grads(ours, ref, [x, w, b], [0, 1, 2], rng, rtol=1e-4, atol=1e-4)


def test_batch_norm_statistics_when_the_mean_dwarfs_the_spread(rng):
    # One-pass statistics over raw x would cancel catastrophically here (E[x^2] ~ 1e6, var ~ 1e-4).
    x = (1000.0 + 0.01 * rng.standard_normal((8, 3, 5, 5))).astype(np.float32)
    x64 = x.astype(np.float64)
    _, mean, var = F.batch_norm_with_stats(jnp.asarray(x), jnp.zeros(3), jnp.ones(3), training=True, momentum=0.0)
    np.testing.assert_allclose(np.asarray(mean), x64.mean(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(var), x64.var(axis=(0, 2, 3)), rtol=1e-4)


@pytest.mark.parametrize("normalized_shape", [7, [5, 7]], ids=str)
def test_layer_norm_forward_and_gradients(oracle, rng, normalized_shape):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    nshape = [normalized_shape] if isinstance(normalized_shape, int) else normalized_shape
    w = rng.standard_normal(nshape).astype(np.float32)
    b = rng.standard_normal(nshape).astype(np.float32)
    oracle.close(F.layer_norm(jnp.asarray(x), normalized_shape), oracle.F.layer_norm(oracle.t(x), normalized_shape),
                 atol=1e-5)
    oracle.grads(lambda x, w, b: F.layer_norm(x, normalized_shape, w, b, epsilon=1e-3),
                 lambda x, w, b: oracle.F.layer_norm(x, normalized_shape, w.flatten(), b.flatten(), epsilon=1e-3),
                 [x, w, b], [0, 1, 2], rng, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,groups,fmt", [((2, 6, 3, 5), 3, "NCHW"), ((2, 3, 5, 6), 2, "NHWC"),
                                              ((2, 4, 7), 4, "NCL"), ((2, 4, 3, 2, 3), 2, "NCDHW")])
def test_group_norm(oracle, rng, shape, groups, fmt):
    x = rng.standard_normal(shape).astype(np.float32)
    c = shape[-1] if fmt[-1] == "C" else shape[1]
    w, b = _stats(rng, c)
    oracle.close(F.group_norm(jnp.asarray(x), groups, 1e-4, jnp.asarray(w), jnp.asarray(b), fmt),
                 oracle.F.group_norm(oracle.t(x), groups, 1e-4, oracle.t(w), oracle.t(b), fmt), atol=1e-5)


def test_group_norm_gradients(oracle, rng):
    x = rng.standard_normal((2, 6, 3, 5)).astype(np.float32)
    w, b = _stats(rng, 6)
    oracle.grads(lambda x, w, b: F.group_norm(x, 3, weight=w, bias=b),
                 lambda x, w, b: oracle.F.group_norm(x, 3, weight=w, bias=b), [x, w, b], [0, 1, 2], rng,
                 rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,fmt", [((2, 3, 4, 5), "NCHW"), ((2, 3, 7), "NCL"), ((2, 3, 2, 3, 4), "NCDHW")])
def test_instance_norm(oracle, rng, shape, fmt):
    x = rng.standard_normal(shape).astype(np.float32)
    w, b = _stats(rng, 3)
    oracle.close(F.instance_norm(jnp.asarray(x), weight=jnp.asarray(w), bias=jnp.asarray(b), eps=1e-3, data_format=fmt),
                 oracle.F.instance_norm(oracle.t(x), weight=oracle.t(w), bias=oracle.t(b), eps=1e-3, data_format=fmt),
                 atol=1e-5)
    oracle.close(F.instance_norm(jnp.asarray(x), data_format=fmt), oracle.F.instance_norm(oracle.t(x), data_format=fmt),
                 atol=1e-5)


@pytest.mark.parametrize("p,axis", [(2, 1), (1, -1), (3, 0), (float("inf"), 1)], ids=str)
def test_normalize(oracle, rng, p, axis):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    oracle.close(F.normalize(jnp.asarray(x), p=p, axis=axis), oracle.F.normalize(oracle.t(x), p=p, axis=axis))


def test_rms_norm_against_numpy_reference(rng):
    # paddle's F.rms_norm has no CPU kernel, so this checks the documented formula.
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    w = rng.standard_normal((5, 7)).astype(np.float32)
    out, invvar = F.rms_norm(jnp.asarray(x), [5, 7], jnp.asarray(w), eps=1e-5)
    inv = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=(1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, x * inv * w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(invvar, inv.reshape(-1), rtol=1e-5)
    out2, _ = F.rms_norm(jnp.asarray(x), 7)
    np.testing.assert_allclose(out2, x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5), rtol=1e-5, atol=1e-6)
    g = jax.jit(jax.grad(lambda v: F.rms_norm(v, [7])[0].sum()))(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("shape,fmt", [((2, 6, 3, 4), "NCHW"), ((2, 3, 4, 6), "NHWC"), ((2, 6, 5), "NCL")])
def test_local_response_norm(oracle, rng, shape, fmt):
    x = rng.standard_normal(shape).astype(np.float32)
    kw = {"size": 3, "alpha": 0.1, "beta": 0.75, "k": 1.5, "data_format": fmt}
    oracle.close(F.local_response_norm(jnp.asarray(x), **kw), oracle.F.local_response_norm(oracle.t(x), **kw))


def test_norm_errors():
    x = jnp.ones((2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"batch_norm: running_mean.shape=\(4,\) must have 3 entries"):
        F.batch_norm(x, jnp.zeros(4), jnp.ones(4))
    with pytest.raises(ValueError, match="batch_norm: data_format='NCWH'"):
        F.batch_norm(x, jnp.zeros(3), jnp.ones(3), data_format="NCWH")
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape=\[3\] must match the trailing dims"):
        F.layer_norm(x, 3)
    with pytest.raises(ValueError, match="group_norm: num_groups=2 must be a positive divisor of the 3 channels"):
        F.group_norm(x, 2)
    with pytest.raises(ValueError, match="instance_norm: data_format='NHWC'"):
        F.instance_norm(x, data_format="NHWC")
