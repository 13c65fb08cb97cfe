"""The CPU LayerNorm (pdx/kernels/onednn/csrc/norm.cc, oneDNN's layer normalization) against the reference.

impl="onednn" is named here (the suite's 8 devices keep "auto" on XLA); the
one-device training and export check is in test_onednn_attention.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pdx import kernels as K

# (shape, with weight and bias): rows split over the threads, odd widths, one row, width 1.
CASES = [((1024, 256), True), ((3, 7, 33), True), ((5, 40), False), ((1, 8), True), ((300, 1), True)]


def test_onednn_layer_norm_matches_the_reference_forward_and_backward(rng):
    for shape, affine in CASES:
        x = jnp.asarray(rng.standard_normal(shape) * 3 + 1, jnp.float32)
        n = shape[-1]
        w = jnp.asarray(rng.standard_normal(n), jnp.float32) if affine else None
        b = jnp.asarray(rng.standard_normal(n), jnp.float32) if affine else None
        g = jnp.asarray(rng.standard_normal(shape), jnp.float32)
        argnums = (0, 1, 2) if affine else (0,)

        def loss(impl):
            def f(x, w, b):
                y = K.layer_norm(x, w, b, eps=1e-5, impl=impl) if impl else K.layer_norm_reference(x, w, b, eps=1e-5)
                return jnp.sum(y * g)
            return f

        step = jax.jit(jax.value_and_grad(loss("onednn"), argnums=argnums))
        hlo = step.lower(x, w, b).as_text()
        assert "pdx_onednn_layer_norm_forward" in hlo and "pdx_onednn_layer_norm_backward" in hlo
        y = jax.jit(lambda x, w, b: K.layer_norm(x, w, b, impl="onednn"))(x, w, b)
        np.testing.assert_allclose(y, K.layer_norm_reference(x, w, b), rtol=1e-5, atol=5e-6)
        got, want = step(x, w, b), jax.value_and_grad(loss(None), argnums=argnums)(x, w, b)
        for a, c in zip(got[1], want[1]):
            scale = max(1.0, float(jnp.abs(c).max()))
            assert float(jnp.abs(a - c).max()) / scale < 2e-6, (shape, affine)


def test_onednn_layer_norm_declines_other_dtypes_by_name():
    x = jnp.ones((4, 8), jnp.bfloat16)
    with pytest.raises(ValueError, match=r"layer_norm: the oneDNN layer norm takes float32; got bfloat16; "
                                         r"use impl='auto' or impl='xla'"):
        K.layer_norm(x, impl="onednn")
    assert K.layer_norm(x).dtype == jnp.bfloat16  # "auto": XLA
    assert "pdx_onednn" not in jax.jit(lambda x: K.layer_norm(x)).lower(x.astype(jnp.float32)).as_text()


def test_functional_layers_under_use_impl_onednn_fall_back_where_the_kernels_do_not_take_them():
    import pdx.nn.functional as F

    x = jnp.linspace(-2.0, 3.0, 48).reshape(2, 4, 6)
    mask = jnp.zeros((4, 4))
    with K.use_impl("onednn"):
        ln_bf16 = F.layer_norm(x.astype(jnp.bfloat16), 6)
        ln = jax.jit(lambda x: F.layer_norm(x, 6)).lower(x).as_text()
        q = x.reshape(2, 4, 2, 3)
        masked = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        plain = jax.jit(lambda q: F.scaled_dot_product_attention(q, q, q)).lower(q).as_text()
    assert "pdx_onednn_layer_norm_forward" in ln and "pdx_onednn_attention_forward" in plain
    assert ln_bf16.dtype == jnp.bfloat16
    np.testing.assert_array_equal(ln_bf16, F.layer_norm(x.astype(jnp.bfloat16), 6))  # XLA's, as without the override
    np.testing.assert_allclose(masked, F.scaled_dot_product_attention(q, q, q), atol=1e-6)
