"""Every Pallas kernel lowers through Pallas' Triton (GPU) lowering, on any machine.

`jax.jit(...).trace(...).lower(lowering_platforms=("cuda",))` runs the same
Pallas-to-Triton lowering a GPU run does, without a GPU, so shapes, dtypes or
ops the Triton backend rejects fail here rather than on the first GPU run.
(The Triton-to-PTX compile itself still needs a GPU.)
"""

import jax
import jax.numpy as jnp
import pytest

import pdx.kernels as K
from pdx.kernels import _dispatch

S = jax.ShapeDtypeStruct


@pytest.fixture(autouse=True)
def compiled_kernels(monkeypatch):
    monkeypatch.setattr(_dispatch, "interpret", lambda: False)


def triton_calls(fn, *args):
    text = jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
    return text.count("__gpu$xla.gpu.triton")


def attention_grads(causal, segments, with_bias):
    def fn(q, k, v, bias):
        segs = None
        if segments:
            segs = (jnp.zeros(q.shape[:2], jnp.int32), jnp.zeros(k.shape[:2], jnp.int32))

        def loss(q, k, v, bias):
            out = K.flash_attention(q, k, v, causal=causal, segment_ids=segs, bias=bias, impl="pallas")
            return jnp.sum(out.astype(jnp.float32))
        return jax.grad(loss, argnums=(0, 1, 2, 3) if with_bias else (0, 1, 2))(q, k, v, bias)
    return fn


@pytest.mark.parametrize("dtype,d,causal,segments,with_bias", [
    (jnp.float32, 64, False, False, False),
    (jnp.bfloat16, 128, True, True, True),
    (jnp.float16, 64, True, False, False),
])
def test_flash_attention_lowers_for_gpu(dtype, d, causal, segments, with_bias):
    b, sq, sk, hq, hk = 2, 200, 77, 6, 2  # odd lengths, GQA with groups of 3
    bias = S((1, hq, sq, sk), dtype) if with_bias else None
    calls = triton_calls(attention_grads(causal, segments, with_bias), S((b, sq, hq, d), dtype),
                         S((b, sk, hk, d), dtype), S((b, sk, hk, d), dtype), bias)
    assert calls == 3  # forward, dK/dV, dQ


@pytest.mark.parametrize("n", [100, 4096])
def test_norms_lower_for_gpu(n):
    x, p = S((37, n), jnp.bfloat16), S((n,), jnp.float32)
    for fn, params in ((K.rms_norm, (p,)), (K.layer_norm, (p, p))):
        def grads(x, *params, fn=fn):
            loss = lambda x, *params: jnp.sum(fn(x, *params, impl="pallas").astype(jnp.float32))  # noqa: E731
            return jax.grad(loss, argnums=tuple(range(1 + len(params))))(x, *params)
        assert triton_calls(grads, x, *params) == 2  # forward, backward


def test_cross_entropy_lowers_for_gpu():
    def grads(x, y):
        return jax.grad(lambda x: jnp.sum(K.softmax_cross_entropy(x, y, z_loss=1e-4, impl="pallas")))(x)
    assert triton_calls(grads, S((100, 32000), jnp.bfloat16), S((100,), jnp.int32)) == 2
