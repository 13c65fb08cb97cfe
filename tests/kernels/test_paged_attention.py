"""paged_attention against dense numpy attention built from the same tokens, write_kv_pages
against a numpy slot-by-slot write, and the Pallas kernel (interpret mode here) against the
reference, its dispatch, and its Triton lowering."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.kernels as K
from pdx.kernels import _dispatch
from pdx.kernels import _paged_attention as P

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


def paged_batch(rng, lens, t, hq, dtype=np.float32, max_blocks=6, bs=BS, hk=HK, d=D):
    """Random tokens per row, scattered into shuffled pages with write_kv_pages."""
    BS, HK, D = bs, hk, d  # noqa: N806 (the module's defaults, overridable per call)
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


# ----------------------------------------------------------------------------- the Pallas kernel

KBS = 16  # the kernel's smallest page size


def reference_and_kernel(q, kp, vp, tables, lens, **kw):
    ref = K.paged_attention(q, kp, vp, tables, lens, impl="xla", **kw)
    got = K.paged_attention(q, kp, vp, tables, lens, impl="pallas", **kw)
    return np.asarray(ref), np.asarray(got)


@pytest.mark.parametrize("lens,t,hq,hk,window,block_rows", [
    ([37, 5, 16, 17], 1, 4, 2, None, 64),    # decode, GQA 2, rows ending on and just past a block edge
    ([37, 5, 16, 17], 1, 4, 1, 20, 64),      # decode, MQA, window across a block edge
    ([50, 3, 33], 5, 6, 2, None, 64),        # chunked prefill, GQA 3 (15 rows in a 16-row tile), padded row
    ([64, 41, 9], 12, 4, 2, 7, 16),          # prefill over several row tiles, window shorter than a block
    ([1, 30], 4, 2, 2, 3, 16),               # MHA, padded queries at negative positions
])
def test_kernel_matches_reference(lens, t, hq, hk, window, block_rows):
    rng = np.random.default_rng(sum(lens) + t)
    q, kp, vp, tables, lens, keys, values = paged_batch(rng, lens, t, hq, max_blocks=4, bs=KBS, hk=hk)
    ref, got = reference_and_kernel(q, kp, vp, tables, lens, sliding_window=window,
                                    block_sizes=P.PagedAttentionBlockSizes(block_rows=block_rows))
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(got, dense_numpy(q, keys, values, lens, scale=D ** -0.5, window=window),
                               atol=2e-5, rtol=2e-5)
    padded = np.asarray(lens)[:, None] - t + np.arange(t)[None, :] < 0
    assert np.all(got[padded] == 0) and np.all(np.isfinite(got))


def test_kernel_skips_blocks_past_context_and_window():
    # NaN in every block a row must not read: a kernel that loads them returns NaN.
    rng = np.random.default_rng(5)
    q, kp, vp, tables, lens, _, _ = paged_batch(rng, [40, 17], 2, 4, max_blocks=4, bs=KBS)
    used = {int(tables[0, 1]), int(tables[0, 2]), int(tables[1, 0]), int(tables[1, 1])}
    poison = np.array([i not in used for i in range(NUM_BLOCKS)])[:, None, None, None]
    kp, vp = (jnp.where(poison, jnp.nan, p) for p in (kp, vp))
    got = np.asarray(K.paged_attention(q, kp, vp, tables, lens, sliding_window=20, scale=0.2, impl="pallas"))
    assert np.all(np.isfinite(got))
    ref = np.asarray(P.paged_attention_reference(q, jnp.nan_to_num(kp), jnp.nan_to_num(vp), tables, lens,
                                                 scale=0.2, sliding_window=20))
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-5)


def test_kernel_bfloat16_close_to_float32_reference():
    rng = np.random.default_rng(6)
    q, kp, vp, tables, lens, _, _ = paged_batch(rng, [37, 20], 3, 4, max_blocks=4, bs=KBS)
    got = K.paged_attention(q.astype(jnp.bfloat16), kp.astype(jnp.bfloat16), vp.astype(jnp.bfloat16),
                            tables, lens, impl="pallas")
    assert got.dtype == jnp.bfloat16
    ref = K.paged_attention(q, kp, vp, tables, lens, impl="xla")
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(ref), atol=3e-2, rtol=3e-2)


@pytest.fixture
def on(monkeypatch):
    def set_platform(name):
        monkeypatch.setattr(_dispatch, "platform", lambda: name)
    return set_platform


def test_dispatch_picks_the_kernel_on_gpu_only(on):
    q, pages = jnp.ones((1, 1, 4, D)), jnp.ones((4, KBS, HK, D))
    args = (q, pages, pages, jnp.zeros((1, 2), jnp.int32), jnp.ones((1,), jnp.int32))
    kw = dict(scale=0.25, sliding_window=None, block_sizes=None)
    assert K.PAGED_ATTENTION.candidates("auto", *args, **kw) == ("xla",)  # CPU
    on("tpu")
    assert K.PAGED_ATTENTION.candidates("auto", *args, **kw) == ("xla",)
    on("gpu")
    assert K.PAGED_ATTENTION.candidates("auto", *args, **kw) == ("pallas", "xla")


def test_unfit_shapes_fall_back_or_name_the_reason(on, monkeypatch):
    rng = np.random.default_rng(7)
    q, kp, vp, tables, lens, keys, values = paged_batch(rng, [9, 3], 1, 4)  # block_size 4: too small
    with pytest.raises(ValueError, match=r"block_size=4 is not one of \(16, 32"):
        K.paged_attention(q, kp, vp, tables, lens, impl="pallas")
    assert P.paged_attention_unfit(jnp.ones((1, 1, 2, 96)), jnp.ones((2, 16, 1, 96))).startswith("head_dim=96")
    on("gpu")
    monkeypatch.setattr(_dispatch, "_NOTED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = K.paged_attention(q, kp, vp, tables, lens)
    assert any("block_size=4" in str(w.message) for w in caught)
    np.testing.assert_allclose(np.asarray(got), dense_numpy(q, keys, values, lens, scale=D ** -0.5),
                               atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("dtype,d,bs,t,hq,window", [
    (jnp.float32, 64, 16, 1, 8, None),     # decode, GQA 4
    (jnp.bfloat16, 128, 32, 7, 6, 9),      # chunked prefill, GQA 3, sliding window
])
def test_kernel_lowers_for_gpu(monkeypatch, dtype, d, bs, t, hq, window):
    # As tests/kernels/test_kernels_lowering.py: Pallas' Triton lowering for "cuda" runs without a GPU.
    monkeypatch.setattr(_dispatch, "interpret", lambda: False)
    S = jax.ShapeDtypeStruct
    pages = S((10, bs, 2, d), dtype)

    def fn(q, kp, vp, tables, lens):
        return K.paged_attention(q, kp, vp, tables, lens, sliding_window=window, impl="pallas")
    text = jax.jit(fn).trace(S((3, t, hq, d), dtype), pages, pages, S((3, 5), jnp.int32),
                             S((3,), jnp.int32)).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count("__gpu$xla.gpu.triton") == 1


# ----------------------------------------------------------------------------- new tokens beside read-only pages

# (lens, T, hq, hk, window, new tokens per row): decode; a chunk with a padded row; rows whose
# first T - m tokens are padding at positions the pages hold (a prefix-cache hit), with a window.
WITH_NEW = [
    ([37, 5, 16, 17], 1, 4, 2, None, [1, 1, 1, 1]),
    ([50, 3, 33], 5, 6, 2, None, [5, 3, 5]),
    ([40, 21, 9], 6, 4, 1, 7, [2, 6, 4]),
]


@pytest.mark.parametrize("impl", ["xla", "onednn", "pallas"])
def test_with_new_tokens_equals_dense_attention_over_all_tokens(impl):
    """The new tokens come from k/v (their slots in the pages hold garbage), padding's keys are
    never seen (the pages' are), and every implementation equals dense numpy attention."""
    if impl == "onednn":
        assert K.onednn.unavailable_reason() is None, K.onednn.unavailable_reason()
    for lens, t, hq, hk, window, fresh in WITH_NEW:
        rng = np.random.default_rng(sum(lens) + t)
        q, kp, vp, tables, lens_a, keys, values = paged_batch(rng, lens, t, hq, max_blocks=4, bs=KBS, hk=hk)
        b = len(lens)
        k_new = np.full((b, t, hk, D), 9.0, np.float32)  # padding's keys: garbage that must stay unseen
        v_new = np.full((b, t, hk, D), -9.0, np.float32)
        valid = np.zeros((b, t), bool)
        erase = np.full((b, t), -1, np.int32)
        for r, (n, m) in enumerate(zip(lens, fresh)):
            m = min(m, n)
            k_new[r, t - m:], v_new[r, t - m:] = keys[r][n - m:], values[r][n - m:]
            valid[r, t - m:] = True
            pos = np.arange(n - m, n)
            erase[r, t - m:] = tables[r, pos // KBS] * KBS + pos % KBS
        junk = np.full((b, t, hk, D), 5.0, np.float32)
        kp, vp = K.write_kv_pages(kp, vp, junk, junk, erase)  # the pages no longer hold the new tokens
        got = K.paged_attention_with_new(q, k_new, v_new, kp, vp, tables, lens_a, valid, scale=0.3,
                                         sliding_window=window, impl=impl)
        want = dense_numpy(q, keys, values, lens_a, scale=0.3, window=window)
        np.testing.assert_allclose(np.asarray(got), want, atol=2e-5, rtol=2e-5, err_msg=f"{impl} {lens} t={t}")


def test_with_new_bad_arguments_name_the_fix():
    q = jnp.zeros((2, 3, 4, D))
    pages = jnp.zeros((NUM_BLOCKS, BS, HK, D))
    k = jnp.zeros((2, 3, HK, D))
    args = (pages, pages, jnp.zeros((2, 3), jnp.int32), jnp.ones((2,), jnp.int32))
    with pytest.raises(ValueError, match=r"valid must be a bool \[B, T\] = \(2, 3\)"):
        K.paged_attention_with_new(q, k, k, *args, jnp.ones((2, 3), jnp.int32))
    with pytest.raises(ValueError, match="k and v must be"):
        K.paged_attention_with_new(q, k[:, :1], k[:, :1], *args, jnp.ones((2, 3), bool))


def test_with_new_bfloat16_pool_on_the_cpu_kernel_matches_the_reference():
    """A bf16 pool is read in place by the CPU kernel; the new tokens are rounded to bf16 as writing them
    would; it equals the XLA reference to bf16 rounding and the float32 numpy attention to bf16 precision."""
    assert K.onednn.unavailable_reason() is None, K.onednn.unavailable_reason()
    lens, t, hq, hk = [37, 5, 16, 17], 2, 4, 2
    rng = np.random.default_rng(11)
    q, kp, vp, tables, lens_a, keys, values = paged_batch(rng, lens, t, hq, max_blocks=4, bs=KBS, hk=hk)
    k_new = np.stack([keys[r][n - t:] for r, n in enumerate(lens)])
    v_new = np.stack([values[r][n - t:] for r, n in enumerate(lens)])
    bf = [jnp.asarray(a, jnp.bfloat16) for a in (q, k_new, v_new, kp, vp)]
    valid = np.ones((len(lens), t), bool)
    got = {impl: np.asarray(K.paged_attention_with_new(*bf, tables, lens_a, valid, scale=0.3, impl=impl),
                            np.float32) for impl in ("onednn", "xla")}
    assert got["onednn"].dtype == np.float32 and np.isfinite(got["onednn"]).all()
    np.testing.assert_allclose(got["onednn"], got["xla"], atol=2e-2, rtol=2e-2)
    want = dense_numpy(q, keys, values, lens_a, scale=0.3)
    np.testing.assert_allclose(got["onednn"], want, atol=6e-2, rtol=6e-2)
