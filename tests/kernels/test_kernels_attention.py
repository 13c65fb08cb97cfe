"""flash_attention: the Pallas kernel (interpret mode on CPU, compiled on GPU) against its reference,
and the reference against jax.nn.dot_product_attention; forward and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.kernels as K
import pdx.nn.functional as F

TOL = {jnp.float32: 1e-5, jnp.bfloat16: 1e-2}


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def inputs(rng, b, sq, sk, hq, hk, d, dtype):
    def draw(*shape):
        return jnp.asarray(rng.standard_normal(shape), dtype)
    return draw(b, sq, hq, d), draw(b, sk, hk, d), draw(b, sk, hk, d)


# 16-wide blocks: the small test shapes still span several query and key blocks, so the
# online softmax across blocks, causal block skipping and the unmasked fast path all run.
SMALL = K.AttentionBlockSizes(block_q=16, block_k=16, block_q_dkv=16, block_k_dkv=16, block_q_dq=16, block_k_dq=16)


def out_and_grads(impl, q, k, v, bias=None, **kw):
    """Output and gradients of a nonlinear scalar of the output, w.r.t. q, k, v (and bias)."""
    def f(q, k, v, bias):
        o = K.flash_attention(q, k, v, bias=bias, impl=impl, block_sizes=SMALL, **kw)
        return jnp.sum(jnp.sin(o.astype(jnp.float32))), o
    argnums = (0, 1, 2) if bias is None else (0, 1, 2, 3)
    (_, o), grads = jax.jit(jax.value_and_grad(f, argnums=argnums, has_aux=True))(q, k, v, bias)
    return o, grads


class TestFlashAttention:
    """Kernel vs reference. On CPU impl="pallas" runs the kernel in interpret mode; on a GPU compiled."""

    IMPL = "pallas"

    def check(self, rng, b, sq, sk, hq, hk, d, dtype=jnp.float32, bias_shape=None, **kw):
        q, k, v = inputs(rng, b, sq, sk, hq, hk, d, dtype)
        bias = None if bias_shape is None else jnp.asarray(rng.standard_normal(bias_shape), dtype)
        o, grads = out_and_grads(self.IMPL, q, k, v, bias, **kw)
        o_ref, grads_ref = out_and_grads("xla", q, k, v, bias, **kw)
        tol = TOL[dtype]
        assert o.dtype == q.dtype and o.shape == q.shape
        assert not np.isnan(np.asarray(o, np.float32)).any()
        assert rel(o.astype(jnp.float32), o_ref.astype(jnp.float32)) < tol
        for name, g, g_ref in zip("q k v bias".split(), grads, grads_ref):
            assert g.shape == g_ref.shape and g.dtype == g_ref.dtype, name
            assert not np.isnan(np.asarray(g, np.float32)).any(), name
            assert rel(g.astype(jnp.float32), g_ref.astype(jnp.float32)) < tol, name
        return o

    def test_mha_odd_lengths(self, rng):
        # 20 queries, 33 keys: neither a multiple of the 16-wide blocks.
        self.check(rng, 2, 20, 33, 2, 2, 16)

    def test_gqa_causal_head_dim_64(self, rng):
        self.check(rng, 1, 40, 40, 4, 2, 64, causal=True)

    def test_mqa_causal_packed_segments_and_bias(self, rng):
        seg = jnp.asarray(np.sort(rng.integers(0, 3, (2, 19)), axis=1))
        self.check(rng, 2, 19, 19, 2, 1, 16, causal=True, segment_ids=seg, bias_shape=(1, 2, 19, 19))

    def test_bf16_causal(self, rng):
        self.check(rng, 1, 32, 32, 2, 2, 32, dtype=jnp.bfloat16, causal=True)

    def test_query_with_no_visible_key_gives_zeros_not_nan(self, rng):
        # Cross attention where query segment 9 has no keys at all.
        q_seg = jnp.asarray([[0] * 8 + [9] * 8])
        kv_seg = jnp.asarray([[0] * 24])
        o = self.check(rng, 1, 16, 24, 2, 2, 16, segment_ids=(q_seg, kv_seg))
        np.testing.assert_array_equal(np.asarray(o[0, 8:]), 0.0)


def test_reference_matches_jax_dot_product_attention(rng):
    """The reference itself against an independent implementation (causal, GQA, additive bias)."""
    q, k, v = inputs(rng, 2, 12, 12, 4, 2, 8, jnp.float32)
    bias = jnp.asarray(rng.standard_normal((1, 4, 12, 12)), jnp.float32)
    ours = K.flash_attention_reference(q, k, v, causal=True, bias=bias)
    theirs = jax.nn.dot_product_attention(q, k, v, bias=bias, is_causal=True, implementation="xla")
    assert rel(ours, theirs) < 1e-5
    seg = jnp.asarray([[0] * 5 + [1] * 7, [0] * 12])
    mask = (seg[:, None, :, None] == seg[:, None, None, :])
    ours = K.flash_attention_reference(q, k, v, segment_ids=seg)
    theirs = jax.nn.dot_product_attention(q, k, v, mask=mask, implementation="xla")
    assert rel(ours, theirs) < 1e-5


def _has_pallas_call(fn, *args):
    return "pallas_call" in str(jax.make_jaxpr(fn)(*args))


def test_dispatch_auto_is_reference_on_cpu_and_override_selects_the_kernel(rng):
    q, k, v = inputs(rng, 1, 16, 16, 2, 2, 16, jnp.float32)
    assert not _has_pallas_call(lambda q: K.flash_attention(q, k, v), q)
    assert _has_pallas_call(lambda q: K.flash_attention(q, k, v, impl="pallas"), q)
    with K.use_impl("pallas"):
        assert K.get_impl() == "pallas"
        assert _has_pallas_call(lambda q: K.flash_attention(q, k, v), q)
        assert _has_pallas_call(lambda q: F.scaled_dot_product_attention(q, k, v, is_causal=True), q)
        with K.use_impl("xla"):
            assert not _has_pallas_call(lambda q: K.flash_attention(q, k, v, impl="pallas"), q)
    assert K.get_impl() is None
    K.set_impl("pallas")
    try:
        assert _has_pallas_call(lambda q: K.flash_attention(q, k, v), q)
    finally:
        K.set_impl(None)
    assert not _has_pallas_call(lambda q: F.scaled_dot_product_attention(q, k, v), q)


def test_functional_sdpa_through_the_kernel_matches_its_reference(rng):
    q, k, v = inputs(rng, 2, 17, 17, 4, 2, 16, jnp.float32)
    mask = jnp.asarray(rng.standard_normal((2, 1, 17, 17)), jnp.float32)

    def loss(q, k, v):
        return jnp.sum(jnp.tanh(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)))

    ref = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))(q, k, v)
    with K.use_impl("pallas"):  # read at trace time: a fresh jit traces with the override
        got = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))(q, k, v)
    assert rel(got[0], ref[0]) < 1e-5
    for g, g_ref in zip(got[1], ref[1]):
        assert rel(g, g_ref) < 1e-5


def test_bad_arguments_name_the_problem(rng):
    q, k, v = inputs(rng, 1, 8, 8, 4, 3, 16, jnp.float32)
    with pytest.raises(ValueError, match="multiple of k/v's num_heads=3"):
        K.flash_attention(q, k, v)
    q, k, v = inputs(rng, 1, 8, 8, 2, 2, 16, jnp.float32)
    with pytest.raises(ValueError, match="share head_dim"):
        K.flash_attention(q, k, v[..., :8])
    with pytest.raises(ValueError, match="impl='fast' is not one of"):
        K.flash_attention(q, k, v, impl="fast")
    with pytest.raises(ValueError, match="needs a GPU"):
        K.flash_attention(q, k, v, impl="cudnn")
    with pytest.raises(ValueError, match="head_dim=12 is not one of"):
        K.flash_attention(q[..., :12], k[..., :12], v[..., :12], impl="pallas")
    with pytest.raises(ValueError, match=r"segment ids must be shaped \(batch, seq_len\)"):
        K.flash_attention(q, k, v, segment_ids=jnp.zeros((1, 7), jnp.int32))
    with pytest.raises(ValueError, match="bias must broadcast"):
        K.flash_attention(q, k, v, bias=jnp.zeros((1, 3, 8, 8)))
    with pytest.raises(ValueError, match="set_impl: impl='gpu'"):
        K.set_impl("gpu")


def test_constant_bias_gets_no_gradient_buffer(rng):
    """A bias that is not differentiated (a padding mask) skips the (B, H, Sq, Sk) dbias output.

    (Its values are still used: test_functional_sdpa_through_the_kernel_matches_its_reference
    checks the gradients with a constant mask.)
    """
    q, k, v = inputs(rng, 1, 16, 16, 2, 2, 16, jnp.float32)
    bias = jnp.zeros((1, 1, 16, 16), jnp.float32)

    def grad_jaxpr(argnums):
        loss = lambda q, k, v, b: jnp.sum(K.flash_attention(q, k, v, bias=b, impl="pallas"))  # noqa: E731
        return str(jax.make_jaxpr(jax.grad(loss, argnums=argnums))(q, k, v, bias))

    assert "f32[1,2,16,16]" in grad_jaxpr((0, 1, 2, 3))
    assert "f32[1,2,16,16]" not in grad_jaxpr((0, 1, 2))
