"""rms_norm / layer_norm: the fused Pallas kernels (interpret mode on CPU) against their references,
the references against paddle / numpy, and the nn layers through the dispatch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.kernels as K
import pdx.nn.functional as F
from pdx import nn

TOL = {jnp.float32: 1e-5, jnp.bfloat16: 1e-2}
# Small tiles and few programs so the tests cover several tiles per program,
# rows past the end of the array and a feature count that is not a power of two.
SMALL = K.NormBlockSizes(tile_elements=256, max_programs=3)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def run(fn, x, params, cot):
    """fn's output and the gradients of <fn(x, *params), cot> w.r.t. x and every param."""
    def loss(x, *params):
        y = fn(x, *params)
        return jnp.sum(y.astype(jnp.float32) * cot), y
    (_, y), grads = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(1 + len(params))), has_aux=True))(x, *params)
    return y, grads


class TestNorms:
    """Kernel vs reference. On CPU impl="pallas" runs the kernel in interpret mode; on a GPU compiled."""

    IMPL = "pallas"

    def check(self, kernel, rng, shape, dtype, nparams):
        n = shape[-1]
        x = jnp.asarray(rng.standard_normal(shape) * 2 + 0.5, dtype)
        params = [jnp.asarray(rng.standard_normal(n), dtype) for _ in range(nparams)]
        cot = jnp.asarray(rng.standard_normal(shape), jnp.float32)
        y, grads = run(lambda x, *p: kernel(x, *p, impl=self.IMPL, block_sizes=SMALL), x, params, cot)
        y_ref, grads_ref = run(lambda x, *p: kernel(x, *p, impl="xla"), x, params, cot)
        assert y.dtype == x.dtype and y.shape == x.shape
        assert rel(y.astype(jnp.float32), y_ref.astype(jnp.float32)) < TOL[dtype]
        for g, g_ref in zip(grads, grads_ref):
            assert g.dtype == g_ref.dtype and not np.isnan(np.asarray(g, np.float32)).any()
            assert rel(g.astype(jnp.float32), g_ref.astype(jnp.float32)) < TOL[dtype]

    def test_rms_norm_fp32(self, rng):
        self.check(K.rms_norm, rng, (3, 5, 40), jnp.float32, 1)

    def test_layer_norm_fp32(self, rng):
        self.check(K.layer_norm, rng, (3, 5, 40), jnp.float32, 2)

    def test_layer_norm_bf16(self, rng):
        self.check(K.layer_norm, rng, (37, 100), jnp.bfloat16, 2)

    def test_rms_norm_rstd_output_is_differentiable(self, rng):
        x = jnp.asarray(rng.standard_normal((7, 24)), jnp.float32)
        w = jnp.asarray(rng.standard_normal(24), jnp.float32)

        def loss(impl):
            def f(x, w):
                y, rstd = K.rms_norm_with_rstd(x, w, eps=1e-5, impl=impl, block_sizes=SMALL)
                return jnp.sum(jnp.sin(y)) + jnp.sum(rstd ** 2)
            return jax.jit(jax.value_and_grad(f, argnums=(0, 1)))(x, w)

        (v, g), (v_ref, g_ref) = loss(self.IMPL), loss("xla")
        assert abs(float(v - v_ref)) < 1e-5 * abs(float(v_ref))
        assert rel(g[0], g_ref[0]) < 1e-5 and rel(g[1], g_ref[1]) < 1e-5


def test_references_match_paddle_and_numpy(paddle, rng):
    x = rng.standard_normal((4, 6, 10)).astype(np.float32)
    w, b = rng.standard_normal(10).astype(np.float32), rng.standard_normal(10).astype(np.float32)
    ours = K.layer_norm_reference(jnp.asarray(x), jnp.asarray(w), jnp.asarray(b), eps=1e-5)
    theirs = paddle.nn.functional.layer_norm(paddle.to_tensor(x), [10], paddle.to_tensor(w), paddle.to_tensor(b),
                                             epsilon=1e-5).numpy()
    assert rel(ours, theirs) < 1e-5
    expect = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-6) * w
    assert rel(K.rms_norm_reference(jnp.asarray(x), jnp.asarray(w)), expect) < 1e-6


def test_layers_use_the_kernel_through_the_dispatch(rng):
    """nn.LayerNorm / nn.RMSNorm over two trailing dims: same output with the kernel forced on."""
    x = jnp.asarray(rng.standard_normal((3, 4, 5)), jnp.float32)
    ln, rms = nn.LayerNorm([4, 5]), nn.RMSNorm([4, 5])
    want = ln(x), rms(x), F.rms_norm(x, [5], eps=1e-5)[1]
    assert "pallas_call" not in str(jax.make_jaxpr(lambda x: F.layer_norm(x, [4, 5]))(x))
    with K.use_impl("pallas"):
        assert "pallas_call" in str(jax.make_jaxpr(lambda x: F.layer_norm(x, [4, 5]))(x))
        got = ln(x), rms(x), F.rms_norm(x, [5], eps=1e-5)[1]
    for g, w in zip(got, want):
        assert g.shape == w.shape and rel(g, w) < 1e-5


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match=r"weight.shape=\(4,\) must be \(n,\) = \(5,\)"):
        K.rms_norm(jnp.ones((2, 5)), jnp.ones(4))
    with pytest.raises(ValueError, match="floating array"):
        K.layer_norm(jnp.ones((2, 5), jnp.int32))
    with pytest.raises(ValueError, match="impl='triton' is not one of"):
        K.layer_norm(jnp.ones((2, 5)), impl="triton")
