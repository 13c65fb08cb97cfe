"""Cross-entropy: the fused Pallas kernel (interpret mode on CPU) and the chunked projection-fused
variant against their references, the reference against optax, F.cross_entropy through the
dispatch, and the chunked version's peak memory from XLA's memory analysis."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import pdx.kernels as K
import pdx.nn.functional as F

TOL = {jnp.float32: 1e-5, jnp.bfloat16: 1e-2}
SMALL = K.CrossEntropyBlockSizes(block_t=8, block_v=128)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def labels_for(rng, t, vocab):
    y = rng.integers(0, vocab, t)
    y[[1, t - 2]] = -100  # ignored tokens
    return jnp.asarray(y, jnp.int32)


def value_and_grads(fn, args, cot):
    def loss(*args):
        out = fn(*args)
        return jnp.sum(out * cot), out
    (_, out), grads = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(len(args))), has_aux=True))(*args)
    return out, grads


class TestSoftmaxCrossEntropy:
    """Kernel vs reference. On CPU impl="pallas" runs the kernel in interpret mode; on a GPU compiled."""

    IMPL = "pallas"

    @pytest.mark.parametrize("dtype,z_loss", [(jnp.float32, 0.0), (jnp.bfloat16, 1e-3)])
    def test_matches_reference(self, rng, dtype, z_loss):
        t, vocab = 21, 300  # rows past the last 8-row block, vocab past the last 128-wide tile
        x = jnp.asarray(rng.standard_normal((t, vocab)) * 3, dtype)
        y = labels_for(rng, t, vocab)
        cot = jnp.asarray(rng.standard_normal(t), jnp.float32)
        out, (dx,) = value_and_grads(
            lambda x: K.softmax_cross_entropy(x, y, z_loss=z_loss, impl=self.IMPL, block_sizes=SMALL), (x,), cot)
        ref, (dx_ref,) = value_and_grads(lambda x: K.softmax_cross_entropy(x, y, z_loss=z_loss, impl="xla"), (x,), cot)
        assert out.dtype == jnp.float32 and dx.dtype == dtype
        assert float(out[1]) == 0.0 and not np.asarray(dx[1], np.float32).any()
        assert rel(out, ref) < TOL[dtype]
        assert rel(dx.astype(jnp.float32), dx_ref.astype(jnp.float32)) < TOL[dtype]

    def test_functional_cross_entropy_through_the_kernel(self, rng):
        """F.cross_entropy keeps Paddle's reductions (and ignore_index rules) with the kernel inside."""
        x = jnp.asarray(rng.standard_normal((2, 5, 40)), jnp.float32)
        y = jnp.asarray(rng.integers(0, 40, (2, 5)), jnp.int32).at[0, 0].set(3)

        def losses(x):
            return [F.cross_entropy(x, y), F.cross_entropy(x, y, ignore_index=3),
                    F.cross_entropy(x, y[..., None], reduction="none"), F.cross_entropy(x, y, reduction="sum")]

        def run():
            return jax.jit(lambda x: (losses(x), jax.grad(lambda x: losses(x)[1])(x)))(x)

        want = run()
        with K.use_impl(self.IMPL):
            got = run()
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            assert g.shape == w.shape and rel(g, w) < 1e-5


def test_reference_matches_optax(rng):
    x = jnp.asarray(rng.standard_normal((6, 50)), jnp.float32)
    y = jnp.asarray(rng.integers(0, 50, 6), jnp.int32)
    ours = K.softmax_cross_entropy_reference(x, y)
    assert rel(ours, optax.softmax_cross_entropy_with_integer_labels(x, y)) < 1e-6
    ours = K.softmax_cross_entropy_reference(x, y, z_loss=1e-2)
    lse = jax.nn.logsumexp(x, axis=-1)
    assert rel(ours, optax.softmax_cross_entropy_with_integer_labels(x, y) + 1e-2 * lse ** 2) < 1e-6


def test_linear_chunked_matches_unfused_reference(rng):
    t, hid, vocab = 12, 16, 300  # 300 = two full 128-column chunks and a 44-column tail
    h = jnp.asarray(rng.standard_normal((t, hid)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((hid, vocab)) * 0.3, jnp.float32)
    y = labels_for(rng, t, vocab)
    cot = jnp.asarray(rng.standard_normal(t), jnp.float32)
    out, grads = value_and_grads(
        lambda h, w: K.linear_softmax_cross_entropy(h, w, y, z_loss=1e-3, chunk_size=128), (h, w), cot)
    ref, grads_ref = value_and_grads(
        lambda h, w: K.linear_softmax_cross_entropy_reference(h, w, y, z_loss=1e-3), (h, w), cot)
    assert rel(out, ref) < 1e-5
    for g, g_ref in zip(grads, grads_ref):
        assert rel(g, g_ref) < 1e-5


def test_chunked_peak_memory_scales_with_chunk_not_vocab():
    """XLA's memory analysis of the compiled loss+gradient step at a 128k vocabulary."""
    t, hid, vocab = 256, 64, 131072
    shapes = (jax.ShapeDtypeStruct((t, hid), jnp.float32), jax.ShapeDtypeStruct((hid, vocab), jnp.float32),
              jax.ShapeDtypeStruct((t,), jnp.int32))

    def temp_bytes(fn):
        step = jax.jit(jax.grad(lambda h, w, y: jnp.sum(fn(h, w, y)), argnums=(0, 1)))
        return step.lower(*shapes).compile().memory_analysis().temp_size_in_bytes

    logits_bytes = t * vocab * 4
    unfused = temp_bytes(K.linear_softmax_cross_entropy_reference)
    assert unfused >= logits_bytes
    temps = {c: temp_bytes(lambda h, w, y, c=c: K.linear_softmax_cross_entropy(h, w, y, chunk_size=c))
             for c in (1024, 4096)}
    for c, temp in temps.items():
        assert temp <= 3 * t * c * 4, (c, temp)  # a few (tokens, chunk) float32 buffers
    assert temps[4096] > 2 * temps[1024]           # grows with the chunk ...
    assert temps[4096] * 20 < unfused               # ... and stays far below (tokens, vocab)


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match=r"labels.shape=\(3,\) must equal the leading dims \(2,\)"):
        K.softmax_cross_entropy(jnp.zeros((2, 5)), jnp.zeros(3, jnp.int32))
    with pytest.raises(ValueError, match="labels must be integer"):
        K.softmax_cross_entropy(jnp.zeros((2, 5)), jnp.zeros(2))
    with pytest.raises(ValueError, match=r"weight \(H, vocab\)"):
        K.linear_softmax_cross_entropy(jnp.zeros((2, 4)), jnp.zeros((5, 10)), jnp.zeros(2, jnp.int32))
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        K.linear_softmax_cross_entropy(jnp.zeros((2, 4)), jnp.zeros((4, 10)), jnp.zeros(2, jnp.int32), chunk_size=0)
