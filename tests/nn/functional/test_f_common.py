"""pdx.nn.functional common ops (linear, dropout, pad, interpolate, unfold, ...) vs paddle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F


def test_linear_forward_and_gradients(oracle, rng):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    w = rng.standard_normal((7, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    oracle.close(F.linear(jnp.asarray(x), jnp.asarray(w), jnp.asarray(b)),
                 oracle.F.linear(oracle.t(x), oracle.t(w), oracle.t(b)), atol=1e-5)
    oracle.close(F.linear(jnp.asarray(x), jnp.asarray(w)), oracle.F.linear(oracle.t(x), oracle.t(w)), atol=1e-5)
    oracle.grads(F.linear, oracle.F.linear, [x, w, b], [0, 1, 2], rng)


def test_bilinear(oracle, rng):
    x1 = rng.standard_normal((4, 3)).astype(np.float32)
    x2 = rng.standard_normal((4, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 5)).astype(np.float32)
    b = rng.standard_normal((1, 2)).astype(np.float32)
    oracle.close(F.bilinear(*map(jnp.asarray, (x1, x2, w, b))), oracle.F.bilinear(*map(oracle.t, (x1, x2, w, b))),
                 atol=1e-5)


# ----------------------------------------------------------------------------- dropout

def test_dropout_statistics_and_scaling():
    x = jnp.ones((200, 200))
    y = np.asarray(F.dropout(x, p=0.3, key=jax.random.key(0)))
    assert abs((y == 0).mean() - 0.3) < 0.01
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.7], rtol=1e-6)
    y = np.asarray(F.dropout(x, p=0.3, mode="downscale_in_infer", key=jax.random.key(1)))
    assert abs((y == 0).mean() - 0.3) < 0.01 and set(np.unique(y)) == {0.0, 1.0}


def test_dropout_eval_modes_and_edge_probabilities():
    x = jnp.arange(6.0)
    np.testing.assert_array_equal(F.dropout(x, 0.4, training=False), x)
    np.testing.assert_allclose(F.dropout(x, 0.4, training=False, mode="downscale_in_infer"), x * 0.6, rtol=1e-6)
    np.testing.assert_array_equal(F.dropout(x, 0.0), x)
    np.testing.assert_array_equal(F.dropout(x, 1.0, key=jax.random.key(0)), jnp.zeros(6))
    # Paddle also takes p as a one-element tensor.
    np.testing.assert_array_equal(F.dropout(x, jnp.array([0.0])), x)
    np.testing.assert_array_equal(F.dropout3d(jnp.ones((1, 2, 2, 2, 2)), jnp.array(1.0), key=jax.random.key(0)),
                                  jnp.zeros((1, 2, 2, 2, 2)))
    # No key is needed (even under jit) when nothing random happens.
    np.testing.assert_array_equal(jax.jit(lambda v: F.dropout(v, 0.5, training=False))(x), x)


def test_dropout_reproducible_under_seed_and_key():
    x = jnp.ones((50,))
    pdx.seed(7)
    a = F.dropout(x, 0.5)
    pdx.seed(7)
    b = F.dropout(x, 0.5)
    np.testing.assert_array_equal(a, b)
    c = F.dropout(x, 0.5)
    assert not np.array_equal(b, c)
    k = jax.random.key(3)
    np.testing.assert_array_equal(F.dropout(x, 0.5, key=k), F.dropout(x, 0.5, key=k))
    np.testing.assert_array_equal(jax.jit(lambda v, k: F.dropout(v, 0.5, key=k))(x, k), F.dropout(x, 0.5, key=k))


def test_dropout_needs_explicit_key_under_jit():
    with pytest.raises(RuntimeError, match=r"dropout\(\) needs an explicit `key=`"):
        jax.jit(lambda v: F.dropout(v, 0.5))(jnp.ones(3))


def test_dropout_axis_and_channel_variants():
    x = jnp.ones((8, 16, 5, 5))
    y = np.asarray(F.dropout(x, 0.5, axis=[0, 1], key=jax.random.key(0)))
    per_map = y.reshape(8, 16, -1)
    assert np.all((per_map == per_map[..., :1]))  # one decision per (N, C)
    y2 = np.asarray(F.dropout2d(x, 0.5, key=jax.random.key(1)))
    assert np.all(y2.reshape(8, 16, -1) == y2.reshape(8, 16, -1)[..., :1])
    y3 = np.asarray(F.dropout2d(x.transpose(0, 2, 3, 1), 0.5, data_format="NHWC", key=jax.random.key(1)))
    assert np.all(y3 == y3[:, :1, :1, :])
    y4 = np.asarray(F.dropout3d(jnp.ones((4, 6, 2, 2, 2)), 0.5, key=jax.random.key(2)))
    assert np.all(y4.reshape(4, 6, -1) == y4.reshape(4, 6, -1)[..., :1])
    y5 = np.asarray(F.dropout1d(jnp.ones((4, 6, 3)), 0.5, key=jax.random.key(2)))
    assert np.all(y5 == y5[..., :1])


def test_alpha_dropout_keeps_moments(rng):
    x = jnp.asarray(rng.standard_normal((400, 400)).astype(np.float32))
    y = F.alpha_dropout(x, 0.2, key=jax.random.key(1))
    assert abs(float(y.mean())) < 0.02 and abs(float(y.std()) - 1) < 0.03
    np.testing.assert_array_equal(F.alpha_dropout(x, 0.2, training=False), x)
    z = np.asarray(F.feature_alpha_dropout(jnp.ones((4, 8, 3)), 0.5, key=jax.random.key(2)))
    assert np.all(z == z[..., :1])


def test_dropout_errors():
    with pytest.raises(ValueError, match="dropout: p must be in"):
        F.dropout(jnp.ones(2), 1.5)
    with pytest.raises(ValueError, match="dropout: mode="):
        F.dropout(jnp.ones(2), 0.5, mode="scale")
    with pytest.raises(ValueError, match="dropout: axis=5"):
        F.dropout(jnp.ones((2, 2)), 0.5, axis=5, key=jax.random.key(0))
    with pytest.raises(ValueError, match="dropout2d: data_format='NCL'"):
        F.dropout2d(jnp.ones((2, 2, 2, 2)), data_format="NCL")


# ----------------------------------------------------------------------------- pad

PAD = [
    ((2, 3, 4, 5), [1, 2], "constant", None, True),
    ((2, 3, 4, 5), [1, 2, 0, 3], "constant", None, True),
    ((2, 3, 4, 5), [0, 0, 1, 1, 2, 0, 1, 2], "constant", None, True),
    ((2, 3, 4, 5), [0, 0, 1, 1, 2, 0, 1, 2], "constant", None, False),
    ((3, 5, 7), [1, 2, 0, 1], "constant", None, True),
    ((3, 5, 7), [2, 1], "constant", "NLC", True),
    ((2, 3, 4, 5), [2, 1, 1, 3], "reflect", None, True),
    ((2, 3, 4, 5), [2, 1, 1, 3], "replicate", "NHWC", True),
    ((2, 3, 4, 5), [2, 4, 1, 3], "circular", None, True),
    ((3, 5, 7), [3, 2], "reflect", None, True),
    ((1, 2, 3, 4, 5), [1, 0, 2, 1, 0, 2], "replicate", None, True),
    ((1, 2, 3, 4, 5), [1, 1, 1, 1, 1, 1], "constant", "NDHWC", True),
    ((2, 3), [1, 1, 2, 0], "constant", None, True),
]


@pytest.mark.parametrize("shape,pad,mode,fmt,left", PAD, ids=[f"{p[0]}-{p[1]}-{p[2]}-{p[3]}-{p[4]}" for p in PAD])
def test_pad(oracle, rng, shape, pad, mode, fmt, left):
    x = rng.standard_normal(shape).astype(np.float32)
    kw = {"mode": mode, "data_format": fmt, "pad_from_left_axis": left}
    if mode == "constant":
        kw["value"] = 1.5
    oracle.close(F.pad(jnp.asarray(x), pad, **kw), oracle.F.pad(oracle.t(x), pad, **kw))


def test_pad_tensor_and_zeropad2d(oracle, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    pad = np.array([1, 0, 2, 1], np.int32)
    oracle.close(F.pad(jnp.asarray(x), jnp.asarray(pad)), oracle.F.pad(oracle.t(x), oracle.t(pad)))
    oracle.close(F.zeropad2d(jnp.asarray(x), [1, 2, 0, 1]), oracle.F.zeropad2d(oracle.t(x), [1, 2, 0, 1]))
    oracle.grads(lambda v: F.pad(v, [1, 2, 2, 1], mode="reflect"),
                 lambda v: oracle.F.pad(v, [1, 2, 2, 1], mode="reflect"), [x], [0], rng)


def test_pad_errors():
    with pytest.raises(ValueError, match="pad: mode='edge'"):
        F.pad(jnp.ones((1, 1, 3, 3)), [1, 1], mode="edge")
    with pytest.raises(ValueError, match=r"pad: pad=\[1, 1\] must have 4 values"):
        F.pad(jnp.ones((1, 1, 3, 3)), [1, 1], mode="reflect")
    with pytest.raises(ValueError, match="reflect padding .* smaller than the padded dim"):
        F.pad(jnp.ones((1, 1, 3, 3)), [3, 0, 0, 0], mode="reflect")
    with pytest.raises(ValueError, match="even length"):
        F.pad(jnp.ones((2, 2)), [1, 1, 1])


# ----------------------------------------------------------------------------- interpolate

INTERP = [
    ((2, 3, 5, 7), {"size": [8, 11], "mode": "nearest"}),
    ((2, 3, 5, 7), {"size": [3, 4], "mode": "nearest"}),
    ((2, 3, 5, 7), {"scale_factor": 2, "mode": "nearest"}),
    ((2, 3, 5, 7), {"scale_factor": [1.7, 0.6], "mode": "nearest"}),
    ((2, 3, 5, 7), {"size": [8, 11], "mode": "bilinear"}),
    ((2, 3, 5, 7), {"size": [8, 11], "mode": "bilinear", "align_corners": True}),
    ((2, 3, 5, 7), {"size": [8, 11], "mode": "bilinear", "align_mode": 1}),
    ((2, 3, 5, 7), {"size": [3, 4], "mode": "bilinear"}),
    ((2, 3, 5, 7), {"scale_factor": 1.5, "mode": "bilinear"}),
    ((2, 3, 5, 7), {"scale_factor": [1.7, 0.6], "mode": "bilinear", "align_corners": True}),
    ((2, 3, 5, 7), {"scale_factor": 2.3, "mode": "bilinear", "recompute_scale_factor": True}),
    ((2, 5, 7, 3), {"size": [8, 11], "mode": "bilinear", "data_format": "NHWC"}),
    ((2, 3, 5, 7), {"size": [9, 6], "mode": "bicubic"}),
    ((2, 3, 5, 7), {"size": [9, 6], "mode": "bicubic", "align_corners": True}),
    ((2, 3, 7), {"size": [12], "mode": "linear"}),
    ((2, 3, 7), {"scale_factor": 0.5, "mode": "linear", "align_corners": True}),
    ((1, 2, 3, 4, 5), {"size": [5, 6, 3], "mode": "trilinear"}),
    ((1, 2, 3, 4, 5), {"scale_factor": 2, "mode": "nearest"}),
    ((2, 3, 9, 7), {"size": [4, 3], "mode": "area"}),
    ((2, 3, 5, 7), {"size": [5, 7], "mode": "bilinear"}),
]


@pytest.mark.parametrize("shape,kwargs", INTERP, ids=[f"{s}-{k}" for s, k in INTERP])
def test_interpolate(oracle, rng, shape, kwargs):
    x = rng.standard_normal(shape).astype(np.float32)
    oracle.close(F.interpolate(jnp.asarray(x), **kwargs), oracle.F.interpolate(oracle.t(x), **kwargs),
                 rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bilinear_gradients_and_upsample(oracle, rng, align_corners):
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    kw = {"size": [7, 9], "mode": "bilinear", "align_corners": align_corners}
    oracle.grads(lambda v: F.interpolate(v, **kw), lambda v: oracle.F.interpolate(v, **kw), [x], [0], rng)
    oracle.close(F.upsample(jnp.asarray(x), **kw), oracle.F.upsample(oracle.t(x), **kw), atol=2e-6)


def test_interpolate_errors():
    x = jnp.ones((1, 1, 4, 4))
    with pytest.raises(ValueError, match="interpolate: mode='linear' supports"):
        F.interpolate(x, size=[2, 2], mode="linear")
    with pytest.raises(ValueError, match="align_corners=True only applies"):
        F.interpolate(x, size=[2, 2], align_corners=True)
    with pytest.raises(ValueError, match="one of `size` and `scale_factor`"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="data_format='NCW' is not valid for a 4-D x"):
        F.interpolate(x, size=[2, 2], data_format="NCW")
    with pytest.raises(ValueError, match="size=.* must have 2 entries"):
        F.interpolate(x, size=[2, 2, 2])


# ----------------------------------------------------------------------------- unfold / fold / similarity

@pytest.mark.parametrize("kwargs", [{"kernel_sizes": 2}, {"kernel_sizes": [3, 2], "strides": 2, "paddings": 1},
                                    {"kernel_sizes": 2, "paddings": [1, 0, 2, 1], "dilations": 2},
                                    {"kernel_sizes": 3, "paddings": [1, 2]}], ids=str)
def test_unfold_and_fold(oracle, rng, kwargs):
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    cols = F.unfold(jnp.asarray(x), **kwargs)
    oracle.close(cols, oracle.F.unfold(oracle.t(x), **kwargs))
    if len(np.atleast_1d(kwargs.get("paddings", 0))) == 4:
        return  # paddle's fold rejects 4-value paddings
    c = rng.standard_normal(cols.shape).astype(np.float32)
    oracle.close(F.fold(jnp.asarray(c), [6, 7], **kwargs), oracle.F.fold(oracle.t(c), [6, 7], **kwargs), atol=1e-5)


def test_cosine_similarity_and_label_smooth(oracle, rng):
    a = rng.standard_normal((3, 5, 7)).astype(np.float32)
    b = rng.standard_normal((3, 1, 7)).astype(np.float32)
    for axis in (1, -1):
        oracle.close(F.cosine_similarity(jnp.asarray(a), jnp.asarray(b), axis=axis),
                     oracle.F.cosine_similarity(oracle.t(a), oracle.t(b), axis=axis))
    lab = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 6)]
    oracle.close(F.label_smooth(jnp.asarray(lab), epsilon=0.2), oracle.F.label_smooth(oracle.t(lab), epsilon=0.2))
    prior = rng.random((1, 5)).astype(np.float32)
    oracle.close(F.label_smooth(jnp.asarray(lab), jnp.asarray(prior)),
                 oracle.F.label_smooth(oracle.t(lab), oracle.t(prior)))


def test_common_errors():
    with pytest.raises(ValueError, match=r"linear: x.shape=\(2, 3\) and weight.shape=\(4, 5\) do not agree"):
        F.linear(jnp.ones((2, 3)), jnp.ones((4, 5)))
    with pytest.raises(ValueError, match="unfold: expects a 4-D"):
        F.unfold(jnp.ones((2, 3, 4)), 2)
    with pytest.raises(ValueError, match="cosine_similarity: .* do not broadcast"):
        F.cosine_similarity(jnp.ones((2, 3)), jnp.ones((4, 3)))
