"""pdx.nn.functional embedding, one_hot, vision rearrangements and attention vs paddle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_forward_and_gradients(oracle, rng, padding_idx):
    ids = rng.integers(0, 6, (3, 5)).astype(np.int64)
    ids[0, :2] = 2
    ids[1, 0] = 5
    w = rng.standard_normal((6, 4)).astype(np.float32)
    oracle.close(F.embedding(jnp.asarray(ids), jnp.asarray(w), padding_idx=padding_idx),
                 oracle.F.embedding(oracle.t(ids), oracle.t(w), padding_idx=padding_idx))
    oracle.grads(lambda w: F.embedding(jnp.asarray(ids), w, padding_idx=padding_idx),
                 lambda w: oracle.F.embedding(oracle.t(ids), w, padding_idx=padding_idx), [w], [0], rng)


def test_embedding_max_norm_and_scale_grad_by_freq(oracle, rng):
    ids = np.array([[0, 2, 2], [1, 2, 3]], np.int64)
    w = (rng.standard_normal((4, 3)) * 3).astype(np.float32)
    oracle.close(F.embedding(jnp.asarray(ids), jnp.asarray(w), max_norm=1.0),
                 oracle.F.embedding(oracle.t(ids), oracle.t(w), max_norm=1.0), atol=1e-6)
    oracle.grads(lambda w: F.embedding(jnp.asarray(ids), w, scale_grad_by_freq=True),
                 lambda w: oracle.F.embedding(oracle.t(ids), w, scale_grad_by_freq=True), [w], [0], rng)


def test_one_hot(oracle, rng):
    ids = rng.integers(0, 5, (3, 4)).astype(np.int64)
    oracle.close(F.one_hot(jnp.asarray(ids), 6), oracle.F.one_hot(oracle.t(ids), 6))
    oracle.close(F.one_hot(jnp.asarray(ids)), oracle.F.one_hot(oracle.t(ids)))
    assert F.one_hot(jnp.asarray(ids), 6).dtype == jnp.float32
    with pytest.raises(ValueError, match="one_hot: num_classes=-1 .* under a trace"):
        jax.jit(lambda v: F.one_hot(v))(jnp.asarray(ids))


def test_input_errors():
    with pytest.raises(TypeError, match="embedding: ids `x` must be an integer tensor"):
        F.embedding(jnp.ones((2,)), jnp.ones((3, 2)))
    with pytest.raises(ValueError, match=r"padding_idx=5 must be an int in \[-3, 3\)"):
        F.embedding(jnp.zeros((2,), jnp.int32), jnp.ones((3, 2)), padding_idx=5)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_pixel_and_channel_shuffle(oracle, rng, fmt):
    x = rng.standard_normal((2, 8, 3, 4) if fmt == "NCHW" else (2, 3, 4, 8)).astype(np.float32)
    oracle.close(F.pixel_shuffle(jnp.asarray(x), 2, fmt), oracle.F.pixel_shuffle(oracle.t(x), 2, fmt))
    oracle.close(F.channel_shuffle(jnp.asarray(x), 4, fmt), oracle.F.channel_shuffle(oracle.t(x), 4, fmt))
    y = rng.standard_normal((2, 3, 4, 6) if fmt == "NCHW" else (2, 4, 6, 3)).astype(np.float32)
    oracle.close(F.pixel_unshuffle(jnp.asarray(y), 2, fmt), oracle.F.pixel_unshuffle(oracle.t(y), 2, fmt))


# ----------------------------------------------------------------------------- attention

def _qkv(rng, b=2, sq=5, sk=5, hq=4, hk=4, d=8):
    q = rng.standard_normal((b, sq, hq, d)).astype(np.float32)
    k = rng.standard_normal((b, sk, hk, d)).astype(np.float32)
    v = rng.standard_normal((b, sk, hk, d)).astype(np.float32)
    return q, k, v


@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "gqa", "scale", "cross_len", "mask_2d"])
def test_sdpa_forward(oracle, rng, case):
    q, k, v = _qkv(rng, sk=7 if case == "cross_len" else 5, hk=2 if case == "gqa" else 4)
    kw = {}
    if case == "causal":
        kw["is_causal"] = True
    if case == "bool_mask":
        m = rng.random((2, 1, 5, 5)) > 0.3
        m[..., 0] = True  # keep every row partly visible
        kw["attn_mask"] = m
    if case == "float_mask":
        kw["attn_mask"] = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    if case == "mask_2d":
        kw["attn_mask"] = rng.standard_normal((5, 5)).astype(np.float32)
    if case == "scale":
        kw["scale"] = 0.3
    ours_kw = {k_: (jnp.asarray(v_) if isinstance(v_, np.ndarray) else v_) for k_, v_ in kw.items()}
    ref_kw = {k_: (oracle.t(v_) if isinstance(v_, np.ndarray) else v_) for k_, v_ in kw.items()}
    oracle.close(F.scaled_dot_product_attention(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v), **ours_kw),
                 oracle.F.scaled_dot_product_attention(oracle.t(q), oracle.t(k), oracle.t(v), **ref_kw),
                 rtol=1e-5, atol=2e-6)


def test_sdpa_causal_gradients_and_unbatched(oracle, rng):
    q, k, v = _qkv(rng, hk=2)
    oracle.grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 lambda q, k, v: oracle.F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 [q, k, v], [0, 1, 2], rng, rtol=1e-4, atol=1e-5)
    oracle.close(F.scaled_dot_product_attention(jnp.asarray(q[0]), jnp.asarray(k[0]), jnp.asarray(v[0])),
                 oracle.F.scaled_dot_product_attention(oracle.t(q[0]), oracle.t(k[0]), oracle.t(v[0])), atol=2e-6)


def test_sdpa_dropout_and_keys(rng):
    q = jnp.ones((1, 4, 2, 8))
    v = jnp.asarray(rng.standard_normal((1, 4, 2, 8)).astype(np.float32))
    base = F.scaled_dot_product_attention(q, q, v)
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, q, v, dropout_p=0.5, training=False), base)
    a = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5, key_rng=jax.random.key(1))
    np.testing.assert_array_equal(a, F.scaled_dot_product_attention(q, q, v, dropout_p=0.5, key_rng=jax.random.key(1)))
    assert not np.allclose(a, base)
    pdx.seed(0)
    b1 = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5)
    pdx.seed(0)
    np.testing.assert_array_equal(b1, F.scaled_dot_product_attention(q, q, v, dropout_p=0.5))
    with pytest.raises(RuntimeError, match="needs an explicit `key=`"):
        jax.jit(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.1))(q)


def test_sdpa_errors():
    q = jnp.ones((2, 5, 4, 8))
    with pytest.raises(ValueError, match="num_heads=4 must be a multiple of key/value's num_heads=3"):
        F.scaled_dot_product_attention(q, jnp.ones((2, 5, 3, 8)), jnp.ones((2, 5, 3, 8)))
    with pytest.raises(ValueError, match="must agree on head_dim"):
        F.scaled_dot_product_attention(q, jnp.ones((2, 5, 4, 6)), jnp.ones((2, 5, 4, 6)))
    with pytest.raises(ValueError, match=r"attn_mask.shape=\(3, 5, 5\) does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=jnp.ones((3, 5, 5)))
    with pytest.raises(ValueError, match="enable_gqa=True"):
        F.scaled_dot_product_attention(q, jnp.ones((2, 5, 2, 8)), jnp.ones((2, 5, 2, 8)), enable_gqa=False)
