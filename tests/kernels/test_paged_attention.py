"""paged_attention against dense numpy attention built from the same tokens, and write_kv_pages
against a numpy slot-by-slot write."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.kernels as K

BS, NUM_BLOCKS, HK, D = 4, 24, 2, 16


def dense_numpy(q, keys, values, lens, *, scale, window=None):
    """q [B, T, Hq, D]; keys/values: per row a [len, Hk, D] array of that row's tokens in order."""
    b, t, hq, d = q.shape
    out = np.zeros((b, t, hq, d), np.float64)
    for r in range(b):
        g = hq // keys[r].shape[1]
        for i in range(t):
            pos = lens[r] - t + i
            lo = 0 if window is None else max(0, pos - window + 1)
            if pos < 0:
                continue
            for h in range(hq):
                k = keys[r][lo:pos + 1, h // g].astype(np.float64)
                v = values[r][lo:pos + 1, h // g].astype(np.float64)
                s = k @ q[r, i, h].astype(np.float64) * scale
                w = np.exp(s - s.max())
                out[r, i, h] = (w / w.sum()) @ v
    return out


def paged_batch(rng, lens, t, hq, dtype=np.float32, max_blocks=6):
    """Random tokens per row, scattered into shuffled pages with write_kv_pages."""
    b = len(lens)
    perm = rng.permutation(NUM_BLOCKS)
    tables = np.zeros((b, max_blocks), np.int32)
    keys, values, used = [], [], 0
    for r, n in enumerate(lens):
        nb = -(-n // BS)
        tables[r, :nb] = perm[used:used + nb]
        used += nb
        keys.append(rng.standard_normal((n, HK, D)).astype(dtype))
        values.append(rng.standard_normal((n, HK, D)).astype(dtype))
    width = max(lens)
    k_new = np.zeros((b, width, HK, D), dtype)
    v_new = np.zeros((b, width, HK, D), dtype)
    slots = np.full((b, width), -1, np.int32)
    for r, n in enumerate(lens):
        k_new[r, :n], v_new[r, :n] = keys[r], values[r]
        pos = np.arange(n)
        slots[r, :n] = tables[r, pos // BS] * BS + pos % BS
    pages = jnp.full((NUM_BLOCKS, BS, HK, D), 7.0, dtype)  # stale garbage that must stay unseen
    kp, vp = K.write_kv_pages(pages, pages, k_new, v_new, slots)
    q = rng.standard_normal((b, t, hq, D)).astype(dtype)
    return q, kp, vp, tables, np.asarray(lens, np.int32), keys, values


def test_write_kv_pages_matches_numpy_and_skips_padding():
    rng = np.random.default_rng(0)
    kp = rng.standard_normal((NUM_BLOCKS, BS, HK, D)).astype(np.float32)
    k = rng.standard_normal((2, 3, HK, D)).astype(np.float32)
    slots = np.array([[5, 17, -1], [90, -1, 0]], np.int32)
    got_k, got_v = K.write_kv_pages(kp, kp * 2, k, -k, slots)
    want = kp.reshape(-1, HK, D).copy()
    for (r, i), s in np.ndenumerate(slots):
        if s >= 0:
            want[s] = k[r, i]
    np.testing.assert_array_equal(np.asarray(got_k), want.reshape(kp.shape))
    assert np.asarray(got_v).reshape(-1, HK, D)[89].tolist() == (kp * 2).reshape(-1, HK, D)[89].tolist()
    np.testing.assert_array_equal(np.asarray(got_v).reshape(-1, HK, D)[90], -k[1, 0])


@pytest.mark.parametrize("t,window", [(1, None), (5, None), (1, 6), (5, 3)])
def test_reference_matches_dense_numpy(t, window):
    rng = np.random.default_rng(t * 10 + (window or 0))
    lens = [13, 1 + t, 22, 7]
    q, kp, vp, tables, lens, keys, values = paged_batch(rng, lens, t, hq=6)
    got = jax.jit(lambda *a: K.paged_attention(*a, sliding_window=window, impl="reference"))(
        q, kp, vp, tables, lens)
    want = dense_numpy(q, keys, values, lens, scale=D ** -0.5, window=window)
    np.testing.assert_allclose(np.asarray(got), want, atol=2e-5, rtol=2e-5)


def test_padded_queries_are_zero_and_default_impl_agrees():
    rng = np.random.default_rng(3)
    q, kp, vp, tables, lens, keys, values = paged_batch(rng, [2, 9], t=4, hq=4)
    got = np.asarray(K.paged_attention(q, kp, vp, tables, lens, scale=0.3))
    assert np.all(got[0, :2] == 0) and np.all(np.isfinite(got))
    np.testing.assert_allclose(got, dense_numpy(q, keys, values, lens, scale=0.3), atol=2e-5, rtol=2e-5)


def test_bad_arguments_name_the_fix():
    q = jnp.zeros((2, 1, 3, D))
    pages = jnp.zeros((NUM_BLOCKS, BS, HK, D))
    with pytest.raises(ValueError, match="multiple of the pages' num_kv_heads=2"):
        K.paged_attention(q, pages, pages, jnp.zeros((2, 3), jnp.int32), jnp.ones((2,), jnp.int32))
    q = jnp.zeros((2, 1, 4, D))
    with pytest.raises(ValueError, match="context_lens must be an integer"):
        K.paged_attention(q, pages, pages, jnp.zeros((2, 3), jnp.int32), jnp.ones((3,), jnp.int32))
    with pytest.raises(ValueError, match="sliding_window must be None or a positive int"):
        K.paged_attention(q, pages, pages, jnp.zeros((2, 3), jnp.int32), jnp.ones((2,), jnp.int32),
                          sliding_window=0)
    with pytest.raises(ValueError, match="slot_mapping must be an integer"):
        K.write_kv_pages(pages, pages, jnp.zeros((2, 1, HK, D)), jnp.zeros((2, 1, HK, D)), jnp.zeros((2, 2)))
